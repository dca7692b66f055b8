//! Generator of large, realistic Northbound topologies for benchmarks: many switches joined by
//! one router, VM ports with addresses, a port group and per-switch address sets, and stateful
//! ACLs over them. `ovn-northd` turns it into the Southbound content that controllers compile,
//! so the logical flows are exactly what a real deployment of that shape produces.
//!
//! [`k8s`] generates an ovn-kubernetes shaped cluster instead (nodes with gateway routers,
//! pods, services in a load balancer group, network policies).

use crate::central::Central;
use crate::error::{HarnessError, Result};

pub mod k8s;

pub use k8s::{build_k8s, K8sBuild, K8sSpec};

/// The size of a generated topology.
#[derive(Debug, Clone, Copy)]
pub struct ScaleSpec {
    pub switches: usize,
    pub ports_per_switch: usize,
    pub acls_per_switch: usize,
}

impl ScaleSpec {
    pub fn total_ports(&self) -> usize {
        self.switches * self.ports_per_switch
    }
}

/// Name, MAC and IPv4 address of generated VM port `port` of switch `switch`.
pub fn vm_port(switch: usize, port: usize) -> (String, String, String) {
    let (s_hi, s_lo) = (switch / 256, switch % 256);
    (
        format!("s{switch}p{port}"),
        format!(
            "0a:00:{s_hi:02x}:{s_lo:02x}:{:02x}:{:02x}",
            port / 256,
            port % 256
        ),
        format!("10.{}.{}.{}", 100 + s_hi, s_lo, port + 1),
    )
}

/// One `ovn-nbctl` invocation per switch keeps command lines short and the build fast.
pub fn build(central: &Central, spec: ScaleSpec) -> Result<()> {
    check_limits(spec)?;
    central.nbctl(&["lr-add", "lr0", "--", "pg-add", "pg_vms"])?;
    let mut all_ports = Vec::with_capacity(spec.total_ports());
    for s in 0..spec.switches {
        let mut cmd: Vec<String> = Vec::new();
        let mut push = |args: &[&str]| {
            cmd.push("--".into());
            cmd.extend(args.iter().map(|a| (*a).to_owned()));
        };
        let sw = format!("sw{s}");
        let (s_hi, s_lo) = (s / 256, s % 256);
        let lrp = format!("lr0-{sw}");
        let lsp = format!("{sw}-lr0");
        let router_mac = format!("0a:ff:00:00:{s_hi:02x}:{s_lo:02x}");
        let router_ip = format!("10.{}.{}.254/24", 100 + s_hi, s_lo);
        push(&["ls-add", &sw]);
        push(&["lrp-add", "lr0", &lrp, &router_mac, &router_ip]);
        push(&["lsp-add", &sw, &lsp]);
        push(&["lsp-set-type", &lsp, "router"]);
        push(&["lsp-set-addresses", &lsp, "router"]);
        push(&["lsp-set-options", &lsp, &format!("router-port={lrp}")]);
        let mut ips = Vec::new();
        let mut names = Vec::with_capacity(spec.ports_per_switch);
        for p in 0..spec.ports_per_switch {
            let (name, mac, ip) = vm_port(s, p);
            push(&["lsp-add", &sw, &name]);
            push(&["lsp-set-addresses", &name, &format!("{mac} {ip}")]);
            // One quoted string per element: `"a,b"` would be a single address "a,b".
            ips.push(format!("\"{ip}\""));
            names.push(name);
        }
        let set = format!("as_{sw}");
        push(&[
            "create",
            "Address_Set",
            &format!("name={set}"),
            &format!("addresses={}", ips.join(",")),
        ]);
        for a in 0..spec.acls_per_switch {
            let port = 1000 + a;
            let mtch = format!("inport == @pg_vms && ip4.dst == ${set} && tcp.dst == {port}");
            push(&[
                "acl-add",
                &sw,
                "from-lport",
                &(1000 + a).to_string(),
                &mtch,
                "allow-related",
            ]);
        }
        push(&[
            "acl-add",
            &sw,
            "to-lport",
            "900",
            "ip4.src == 10.0.0.0/8 && icmp4",
            "allow-related",
        ]);
        central.nbctl(&cmd)?;
        all_ports.extend(names);
    }
    let mut members = vec!["pg-set-ports".to_owned(), "pg_vms".to_owned()];
    members.extend(all_ports);
    central.nbctl(&members)?;
    Ok(())
}

fn check_limits(spec: ScaleSpec) -> Result<()> {
    // Addresses are 10.(100+s/256).(s%256).(p+1): ports must fit in one /24 below .254.
    if spec.ports_per_switch > 250 || spec.switches > 256 * 100 {
        return Err(HarnessError::Config(format!(
            "{spec:?}: at most 250 ports per switch and 25600 switches"
        )));
    }
    Ok(())
}
