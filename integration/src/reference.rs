//! Reference topologies for differential tests: each exercises one family of logical flows
//! (ACLs over address sets and port groups, router NAT with a distributed gateway port, load
//! balancers, DHCP, reroute policies with `pkt_mark`). VM ports listed in `local_ports` are
//! bound on the chassis under test; `remote_ports` on a second chassis.

use crate::central::Central;
use crate::error::Result;
use crate::scenario::{add_localnet_port, attach_router_port};

#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    pub name: &'static str,
    pub build: fn(&Central) -> Result<()>,
    pub local_ports: &'static [&'static str],
    pub remote_ports: &'static [&'static str],
}

pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "acl",
        build: acl,
        local_ports: &["sw0-p1", "sw0-p2", "sw0-p3"],
        remote_ports: &["sw0-p4"],
    },
    Scenario {
        name: "router-nat-dgp",
        build: router_nat_dgp,
        local_ports: &["sw0-p1", "sw1-p1"],
        remote_ports: &["sw0-p2"],
    },
    Scenario {
        name: "load-balancers",
        build: load_balancers,
        local_ports: &["sw0-p1", "sw0-p2"],
        remote_ports: &["sw1-p1"],
    },
    Scenario {
        name: "dhcp",
        build: dhcp,
        local_ports: &["sw0-p1", "sw0-p2"],
        remote_ports: &[],
    },
    Scenario {
        name: "reroute-pkt-mark",
        build: reroute_pkt_mark,
        local_ports: &["sw0-p1", "sw0-p2"],
        remote_ports: &["sw1-p1"],
    },
];

/// Runs one `ovn-nbctl` command given as words (`--` separates commands as usual).
fn nb(central: &Central, words: &[&str]) -> Result<String> {
    central.nbctl(words)
}

fn vm(central: &Central, switch: &str, port: &str, addresses: &str) -> Result<()> {
    nb(
        central,
        &[
            "lsp-add",
            switch,
            port,
            "--",
            "lsp-set-addresses",
            port,
            addresses,
        ],
    )
    .map(drop)
}

/// Two switches `sw0` (10.0.0.0/24) and `sw1` (20.0.0.0/24) joined by router `lr0`.
fn two_subnets(central: &Central) -> Result<()> {
    nb(
        central,
        &[
            "ls-add", "sw0", "--", "ls-add", "sw1", "--", "lr-add", "lr0",
        ],
    )?;
    for (sw, mac, net) in [
        ("sw0", "00:00:00:00:ff:01", "10.0.0.1/24"),
        ("sw1", "00:00:00:00:ff:02", "20.0.0.1/24"),
    ] {
        attach_router_port(central, "lr0", sw, mac, net)?;
    }
    vm(central, "sw0", "sw0-p1", "50:54:00:00:00:01 10.0.0.11")?;
    vm(central, "sw0", "sw0-p2", "50:54:00:00:00:02 10.0.0.12")?;
    vm(central, "sw1", "sw1-p1", "40:54:00:00:00:01 20.0.0.11")
}

fn acl(central: &Central) -> Result<()> {
    nb(central, &["ls-add", "sw0"])?;
    vm(
        central,
        "sw0",
        "sw0-p1",
        "50:54:00:00:00:01 10.0.0.11 aef0::11",
    )?;
    vm(
        central,
        "sw0",
        "sw0-p2",
        "50:54:00:00:00:02 10.0.0.12 aef0::12",
    )?;
    vm(central, "sw0", "sw0-p3", "50:54:00:00:00:03 10.0.0.13")?;
    vm(central, "sw0", "sw0-p4", "50:54:00:00:00:04 10.0.0.14")?;
    nb(
        central,
        &[
            "lsp-set-port-security",
            "sw0-p1",
            "50:54:00:00:00:01 10.0.0.11 aef0::11",
        ],
    )?;
    nb(
        central,
        &[
            "create",
            "Address_Set",
            "name=as_web",
            "addresses=\"10.0.0.11\",\"10.0.0.12\",\"10.0.0.13\"",
        ],
    )?;
    nb(
        central,
        &[
            "create",
            "Address_Set",
            "name=as_v6",
            "addresses=\"aef0::11\",\"aef0::12\"",
        ],
    )?;
    nb(
        central,
        &[
            "pg-add", "pg_web", "sw0-p1", "sw0-p2", "sw0-p4", "--", "pg-add", "pg_deny", "sw0-p3",
        ],
    )?;
    nb(
        central,
        &[
            "acl-add",
            "pg_web",
            "to-lport",
            "1002",
            "outport == @pg_web && ip4.src == $as_web && tcp.dst >= 80 && tcp.dst <= 90",
            "allow-related",
        ],
    )?;
    nb(
        central,
        &[
            "acl-add",
            "pg_web",
            "to-lport",
            "1001",
            "outport == @pg_web && ip4 && icmp4",
            "allow",
        ],
    )?;
    nb(
        central,
        &[
            "acl-add",
            "pg_web",
            "from-lport",
            "1001",
            "inport == @pg_web && ip6.dst == $as_v6 && udp.dst == {53, 5353}",
            "allow-related",
        ],
    )?;
    nb(
        central,
        &[
            "acl-add",
            "pg_web",
            "to-lport",
            "1000",
            "outport == @pg_web && ip",
            "drop",
        ],
    )?;
    nb(
        central,
        &[
            "acl-add",
            "pg_deny",
            "from-lport",
            "1000",
            "inport == @pg_deny && tcp",
            "reject",
        ],
    )?;
    nb(
        central,
        &[
            "acl-add",
            "sw0",
            "from-lport",
            "900",
            "ip4.dst == 10.0.0.0/24 && tcp.flags == 0x2/0x2",
            "allow-stateless",
        ],
    )?;
    nb(
        central,
        &[
            "--label=1234",
            "acl-add",
            "sw0",
            "to-lport",
            "900",
            "ip4.src != 10.0.0.0/24 && udp.src < 1024",
            "allow-related",
        ],
    )?;
    Ok(())
}

fn router_nat_dgp(central: &Central) -> Result<()> {
    two_subnets(central)?;
    nb(central, &["ls-add", "public"])?;
    attach_router_port(
        central,
        "lr0",
        "public",
        "00:00:20:20:12:13",
        "172.168.0.100/24",
    )?;
    add_localnet_port(central, "public", "ln-public", "physnet1")?;
    nb(
        central,
        &["lrp-set-gateway-chassis", "lr0-public", "hv1", "20"],
    )?;
    nb(
        central,
        &["lr-nat-add", "lr0", "snat", "172.168.0.100", "10.0.0.0/24"],
    )?;
    nb(
        central,
        &[
            "lr-nat-add",
            "lr0",
            "dnat_and_snat",
            "172.168.0.110",
            "10.0.0.11",
            "sw0-p1",
            "30:54:00:00:00:03",
        ],
    )?;
    nb(
        central,
        &[
            "lr-nat-add",
            "lr0",
            "dnat_and_snat",
            "172.168.0.120",
            "20.0.0.11",
        ],
    )?;
    nb(
        central,
        &["lr-nat-add", "lr0", "dnat", "172.168.0.130", "10.0.0.12"],
    )?;
    nb(
        central,
        &["lr-route-add", "lr0", "0.0.0.0/0", "172.168.0.1"],
    )?;
    Ok(())
}

fn load_balancers(central: &Central) -> Result<()> {
    two_subnets(central)?;
    nb(
        central,
        &[
            "lb-add",
            "lb0",
            "10.0.0.100:80",
            "10.0.0.11:8080,10.0.0.12:8080",
            "tcp",
        ],
    )?;
    nb(
        central,
        &["lb-add", "lb1", "172.168.0.200", "10.0.0.12,20.0.0.11"],
    )?;
    nb(
        central,
        &["lb-add", "lb2", "10.0.0.101:53", "10.0.0.11:53", "udp"],
    )?;
    nb(
        central,
        &[
            "set",
            "load_balancer",
            "lb2",
            "selection_fields=ip_src,tp_src",
        ],
    )?;
    nb(
        central,
        &[
            "lb-add",
            "lb4",
            "10.0.0.103:443",
            "10.0.0.11:443,10.0.0.12:443",
            "tcp",
        ],
    )?;
    nb(
        central,
        &["set", "load_balancer", "lb4", "options:affinity_timeout=60"],
    )?;
    for lb in ["lb0", "lb2", "lb4"] {
        nb(central, &["ls-lb-add", "sw0", lb])?;
    }
    for lb in ["lb0", "lb1"] {
        nb(central, &["lr-lb-add", "lr0", lb])?;
    }
    Ok(())
}

/// DHCPv4 and DHCPv6 options. `domain_search_list` is left out: ovn-controller 23.03.1 cannot
/// parse the unquoted list that northd writes for it and drops the whole logical flow.
fn dhcp(central: &Central) -> Result<()> {
    nb(central, &["ls-add", "sw0"])?;
    vm(
        central,
        "sw0",
        "sw0-p1",
        "50:54:00:00:00:01 10.0.0.11 aef0::11",
    )?;
    vm(central, "sw0", "sw0-p2", "50:54:00:00:00:02 10.0.0.12")?;
    let v4 = nb(central, &[
        "create", "DHCP_Options", "cidr=10.0.0.0/24",
        "options=\"lease_time\"=\"3600\" \"router\"=\"10.0.0.1\" \"server_id\"=\"10.0.0.1\" \"server_mac\"=\"00:00:00:00:ff:01\" \"dns_server\"=\"{8.8.8.8,1.1.1.1}\" \"mtu\"=\"1400\"",
    ])?;
    let v6 = nb(central, &[
        "create", "DHCP_Options", "cidr=\"aef0::/64\"",
        "options=\"server_id\"=\"00:00:00:00:ff:01\" \"dns_server\"=\"{aef0::1}\" \"domain_search\"=\"ovn.org\"",
    ])?;
    nb(central, &["lsp-set-dhcpv4-options", "sw0-p1", v4.trim()])?;
    nb(central, &["lsp-set-dhcpv4-options", "sw0-p2", v4.trim()])?;
    nb(central, &["lsp-set-dhcpv6-options", "sw0-p1", v6.trim()])?;
    Ok(())
}

fn reroute_pkt_mark(central: &Central) -> Result<()> {
    two_subnets(central)?;
    nb(
        central,
        &[
            "lr-policy-add",
            "lr0",
            "1000",
            "ip4.src == 10.0.0.12 && ip4.dst == 8.8.8.8",
            "reroute",
            "20.0.0.11",
            "pkt_mark=100",
        ],
    )?;
    nb(
        central,
        &[
            "lr-policy-add",
            "lr0",
            "950",
            "ip4.src == 10.0.0.16",
            "reroute",
            "20.0.0.11,20.0.0.12",
            "pkt_mark=300",
        ],
    )?;
    nb(
        central,
        &[
            "lr-policy-add",
            "lr0",
            "900",
            "ip4.src == 10.0.0.13",
            "reroute",
            "20.0.0.11,20.0.0.12",
        ],
    )?;
    nb(
        central,
        &[
            "lr-policy-add",
            "lr0",
            "800",
            "ip4.src == 10.0.0.14",
            "drop",
        ],
    )?;
    nb(
        central,
        &[
            "lr-policy-add",
            "lr0",
            "700",
            "ip4.src == 10.0.0.15",
            "allow",
            "pkt_mark=200",
        ],
    )?;
    Ok(())
}
