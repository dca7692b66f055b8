//! DHCPv4 and DHCPv6 (`put_dhcp_opts`, `put_dhcpv6_opts`) against the real ovn-controller,
//! in the same run (issue 11): the same requests, built here with dhcproto (fixed
//! transaction ids and client identifiers), must get the same replies, byte for byte, on
//! the VM's port with both controllers; the harness compares every packet out of every
//! VIF, so a request the server must not answer (RELEASE, RENEW, a request without a
//! message type) is compared too: the pipeline resumes with the request and forwards it.

mod common;

use std::net::{Ipv4Addr, Ipv6Addr};

use dhcproto::{v4, v6, Decodable, Decoder, Encodable};
use etherparse::{PacketBuilder, SlicedPacket, TransportSlice};

use common::{mac, two_switches_one_router, Net, Scenario, Setup, LR0_SW0_MAC};
use integration::observe::Outcome;
use integration::packet::Mac;

const SERVER_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 254);
const CLIENT_XID: u32 = 0x1234_5678;
const RELEASE_XID: u32 = 0x0bad_0001;
const RENEW_XID: [u8; 3] = [0x5e, 0x4e, 0x77];

/// Runs `ovn-nbctl create DHCP_Options ...` and returns the row's UUID.
fn create_options(net: &Net, cidr: &str, options: &[&str]) -> integration::Result<String> {
    let c = net.lab.central();
    let uuid = c.nbctl(&["create", "DHCP_Options", &format!("cidr=\"{cidr}\"")])?;
    let uuid = uuid.trim().to_owned();
    let mut args = vec!["dhcp-options-set-options", uuid.as_str()];
    args.extend_from_slice(options);
    c.nbctl(&args)?;
    Ok(uuid)
}

fn drop_options(net: &Net) {
    let c = net.lab.central();
    for vm in ["vm1", "vm3"] {
        let _ = c.nbctl(&["lsp-set-dhcpv4-options", vm]);
        let _ = c.nbctl(&["lsp-set-dhcpv6-options", vm]);
    }
    let _ = c.nbctl(&["--all", "destroy", "DHCP_Options"]);
    let _ = c.nbctl(&["lsp-set-addresses", "vm1", "50:54:00:00:00:01 10.0.0.1"]);
    let _ = c.nbctl(&["lsp-set-addresses", "vm3", "50:54:00:00:00:03 10.0.0.3"]);
    let _ = c.wait_hv_sync();
}

// ---- DHCPv4 ------------------------------------------------------------------------------

/// A DHCP request of `msg_type` from `client` (no message type option when `None`), with
/// the requested address `requested` and client address `ciaddr`, in a UDP datagram from
/// `ip_src` to the broadcast address.
fn dhcp4_request(
    xid: u32,
    client: Mac,
    msg_type: Option<v4::MessageType>,
    requested: Option<Ipv4Addr>,
    ciaddr: Ipv4Addr,
    ip_src: Ipv4Addr,
) -> Vec<u8> {
    let mut m = v4::Message::new_with_id(
        xid,
        ciaddr,
        Ipv4Addr::UNSPECIFIED,
        Ipv4Addr::UNSPECIFIED,
        Ipv4Addr::UNSPECIFIED,
        &client.0,
    );
    let opts = m.opts_mut();
    if let Some(t) = msg_type {
        opts.insert(v4::DhcpOption::MessageType(t));
    }
    if let Some(r) = requested {
        opts.insert(v4::DhcpOption::RequestedIpAddress(r));
        opts.insert(v4::DhcpOption::ServerIdentifier(SERVER_IP));
    }
    opts.insert(v4::DhcpOption::ParameterRequestList(vec![
        v4::OptionCode::SubnetMask,
        v4::OptionCode::Router,
        v4::OptionCode::DomainNameServer,
        v4::OptionCode::DomainName,
        v4::OptionCode::ClasslessStaticRoute,
        v4::OptionCode::DomainSearch,
    ]));
    let dhcp = m.to_vec().expect("DHCP request encodes");
    let b = PacketBuilder::ethernet2(client.0, [0xff; 6])
        .ipv4(ip_src.octets(), Ipv4Addr::BROADCAST.octets(), 64)
        .udp(68, 67);
    let mut out = Vec::with_capacity(b.size(dhcp.len()));
    b.write(&mut out, &dhcp)
        .expect("DHCP request fits in memory");
    out
}

/// The UDP payload of `frame` from `sport` to `dport`.
fn udp_payload(frame: &[u8], sport: u16, dport: u16) -> Option<Vec<u8>> {
    let p = SlicedPacket::from_ethernet(frame).ok()?;
    let Some(TransportSlice::Udp(u)) = p.transport else {
        return None;
    };
    (u.source_port() == sport && u.destination_port() == dport).then(|| u.payload().to_vec())
}

/// A DHCPv4 reply's message type, yiaddr and transaction id.
fn dhcp4_reply(frame: &[u8]) -> Option<(v4::MessageType, Ipv4Addr, u32)> {
    let payload = udp_payload(frame, 67, 68)?;
    let m = v4::Message::decode(&mut Decoder::new(&payload)).ok()?;
    match m.opts().get(v4::OptionCode::MessageType)? {
        v4::DhcpOption::MessageType(t) => Some((*t, m.yiaddr(), m.xid())),
        _ => None,
    }
}

type Exchange4 = (
    &'static str,
    Option<v4::MessageType>,
    Option<Ipv4Addr>,
    Ipv4Addr,
    v4::MessageType,
);

/// vm1 on sw0 with DHCPv4 options (router, netmask, lease, DNS, domain, classless and MS
/// classless routes, domain search list, MTU): DISCOVER gets an OFFER of 10.0.0.1,
/// REQUEST for it an ACK, REQUEST for another address a NAK, INFORM an ACK without the
/// lease options; RELEASE and a request without a message type get no answer (and go on
/// through the pipeline).
fn dhcpv4_offer_ack_nak(net: &Net) -> Outcome {
    let mut p = net.probe();
    let vm1 = net.vm("vm1");
    let options = [
        "server_id=10.0.0.254",
        "server_mac=00:00:00:00:ff:01",
        "lease_time=3600",
        "router=10.0.0.254",
        "netmask=255.255.255.0",
        "dns_server={8.8.8.8,8.8.4.4}",
        "domain_name=\"ovn.org\"",
        "classless_static_route={30.0.0.0/24,10.0.0.10,0.0.0.0/0,10.0.0.254}",
        "ms_classless_static_route={30.0.0.0/24,10.0.0.10,0.0.0.0/0,10.0.0.254}",
        "domain_search_list=\"ovn.org,abc.ovn.org,test.com\"",
        "mtu=1442",
        "T1=1800",
        "T2=3150",
    ];
    if let Some(uuid) = p.check(
        "create DHCPv4 options",
        create_options(net, "10.0.0.0/24", &options),
    ) {
        p.nbctl(&["lsp-set-dhcpv4-options", "vm1", &uuid]);
    }
    p.wait_hv("DHCPv4 options on vm1");
    // (what, message type, requested address, client address (also the IP source),
    // expected reply)
    let exchanges: [Exchange4; 4] = [
        (
            "DISCOVER gets an OFFER",
            Some(v4::MessageType::Discover),
            None,
            Ipv4Addr::UNSPECIFIED,
            v4::MessageType::Offer,
        ),
        (
            "REQUEST for the offer gets an ACK",
            Some(v4::MessageType::Request),
            Some(vm1.port.ip),
            Ipv4Addr::UNSPECIFIED,
            v4::MessageType::Ack,
        ),
        (
            "REQUEST for another address gets a NAK",
            Some(v4::MessageType::Request),
            Some(Ipv4Addr::new(10, 0, 0, 77)),
            Ipv4Addr::UNSPECIFIED,
            v4::MessageType::Nak,
        ),
        (
            "INFORM gets an ACK",
            Some(v4::MessageType::Inform),
            None,
            vm1.port.ip,
            v4::MessageType::Ack,
        ),
    ];
    for (what, msg_type, requested, ciaddr, expected) in exchanges {
        let request = dhcp4_request(
            CLIENT_XID,
            vm1.port.mac,
            msg_type,
            requested,
            ciaddr,
            ciaddr,
        );
        p.send("vm1", &request);
        let reply = p.expect(what, "vm1", |f| {
            dhcp4_reply(f).is_some_and(|(t, _, xid)| t == expected && xid == CLIENT_XID)
        });
        if let Some(r) = reply {
            p.fact(what, hex::encode(&r));
            if expected == v4::MessageType::Offer {
                let yiaddr = dhcp4_reply(&r).map(|(_, a, _)| a);
                if yiaddr != Some(vm1.port.ip) {
                    p.fail(format!("the OFFER offers {yiaddr:?}, not {}", vm1.port.ip));
                }
            }
        }
    }
    // Unanswered: the request goes on through the pipeline (to sw0's other ports).
    let release = dhcp4_request(
        RELEASE_XID,
        vm1.port.mac,
        Some(v4::MessageType::Release),
        None,
        vm1.port.ip,
        vm1.port.ip,
    );
    p.send("vm1", &release);
    let untyped = dhcp4_request(
        CLIENT_XID,
        vm1.port.mac,
        None,
        None,
        Ipv4Addr::UNSPECIFIED,
        Ipv4Addr::UNSPECIFIED,
    );
    p.send("vm1", &untyped);
    p.expect(
        "a request without a message type is resumed and flooded to vm3",
        "vm3",
        |f| f == untyped.as_slice(),
    );
    p.expect("RELEASE is resumed and flooded to vm3", "vm3", |f| {
        f == release.as_slice()
    });
    p.refute_on("RELEASE gets no reply", "vm1", |f| {
        dhcp4_reply(f).is_some_and(|(.., xid)| xid == RELEASE_XID)
    });
    let outcome = p.finish(&net.ports());
    drop_options(net);
    outcome
}

// ---- DHCPv6 ------------------------------------------------------------------------------

const SERVER_MAC: &str = LR0_SW0_MAC;
const IAID: u32 = 0x0bad_f00d;
const ALL_DHCP: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 1, 2);

fn duid_ll(m: Mac) -> Vec<u8> {
    let mut d = vec![0, 3, 0, 1];
    d.extend_from_slice(&m.0);
    d
}

fn link_local(m: Mac) -> Ipv6Addr {
    let o = m.0;
    Ipv6Addr::from([
        0xfe,
        0x80,
        0,
        0,
        0,
        0,
        0,
        0,
        o[0] ^ 2,
        o[1],
        o[2],
        0xff,
        0xfe,
        o[3],
        o[4],
        o[5],
    ])
}

/// A DHCPv6 message of `msg_type` from `client` to all DHCP servers, with an IA_NA when
/// `ia_na` and the server's identifier when `to_server`.
fn dhcp6_request(
    client: Mac,
    (msg_type, xid): (v6::MessageType, [u8; 3]),
    ia_na: bool,
    to_server: bool,
) -> Vec<u8> {
    let mut m = v6::Message::new_with_id(msg_type, xid);
    let opts = m.opts_mut();
    opts.insert(v6::DhcpOption::ClientId(duid_ll(client)));
    opts.insert(v6::DhcpOption::ElapsedTime(0));
    opts.insert(v6::DhcpOption::ORO(v6::ORO {
        opts: vec![
            v6::OptionCode::DomainNameServers,
            v6::OptionCode::DomainSearchList,
        ],
    }));
    if ia_na {
        opts.insert(v6::DhcpOption::IANA(v6::IANA {
            id: IAID,
            t1: 0,
            t2: 0,
            opts: v6::DhcpOptions::new(),
        }));
    }
    if to_server {
        opts.insert(v6::DhcpOption::ServerId(duid_ll(mac(SERVER_MAC))));
    }
    let dhcp = m.to_vec().expect("DHCPv6 message encodes");
    let b = PacketBuilder::ethernet2(client.0, [0x33, 0x33, 0, 1, 0, 2])
        .ipv6(link_local(client).octets(), ALL_DHCP.octets(), 1)
        .udp(546, 547);
    let mut out = Vec::with_capacity(b.size(dhcp.len()));
    b.write(&mut out, &dhcp)
        .expect("DHCPv6 message fits in memory");
    out
}

/// A DHCPv6 reply's message type, whether it has an IA_NA, and its transaction id.
fn dhcp6_reply(frame: &[u8]) -> Option<(v6::MessageType, bool, [u8; 3])> {
    let payload = udp_payload(frame, 547, 546)?;
    let m = v6::Message::decode(&mut Decoder::new(&payload)).ok()?;
    Some((
        m.msg_type(),
        m.opts().get(v6::OptionCode::IANA).is_some(),
        m.xid(),
    ))
}

/// vm1 (stateful: an address, DNS, domain search) and vm3 (`dhcpv6_stateless`) on sw0:
/// SOLICIT gets an ADVERTISE, REQUEST a REPLY with the address in an IA_NA,
/// INFORMATION-REQUEST a REPLY without one, the stateless port's SOLICIT an ADVERTISE
/// without one; RENEW gets no answer (23.03.1 does not answer it) and goes on to the
/// other ports.
fn dhcpv6_advertise_reply(net: &Net) -> Outcome {
    let mut p = net.probe();
    let vm1 = net.vm("vm1");
    p.nbctl(&[
        "lsp-set-addresses",
        "vm1",
        "50:54:00:00:00:01 10.0.0.1 fd00::1",
    ]);
    p.nbctl(&[
        "lsp-set-addresses",
        "vm3",
        "50:54:00:00:00:03 10.0.0.3 fd00::3",
    ]);
    let server = format!("server_id={SERVER_MAC}");
    let stateful = [
        server.as_str(),
        "dns_server={fd00::53,fd00::54}",
        "domain_search=\"ovn.org\"",
    ];
    if let Some(uuid) = p.check(
        "create stateful DHCPv6 options",
        create_options(net, "fd00::/64", &stateful),
    ) {
        p.nbctl(&["lsp-set-dhcpv6-options", "vm1", &uuid]);
    }
    let stateless = [
        server.as_str(),
        "dns_server={fd00::53}",
        "dhcpv6_stateless=true",
    ];
    if let Some(uuid) = p.check(
        "create stateless DHCPv6 options",
        create_options(net, "fd00::/64", &stateless),
    ) {
        p.nbctl(&["lsp-set-dhcpv6-options", "vm3", &uuid]);
    }
    p.wait_hv("DHCPv6 options on vm1 and vm3");
    let exchanges = [
        (
            "SOLICIT gets an ADVERTISE with an IA_NA",
            "vm1",
            v6::MessageType::Solicit,
            true,
            false,
            (v6::MessageType::Advertise, true),
        ),
        (
            "REQUEST gets a REPLY with an IA_NA",
            "vm1",
            v6::MessageType::Request,
            true,
            true,
            (v6::MessageType::Reply, true),
        ),
        (
            "INFORMATION-REQUEST gets a REPLY without an IA_NA",
            "vm1",
            v6::MessageType::InformationRequest,
            false,
            false,
            (v6::MessageType::Reply, false),
        ),
        (
            "the stateless port's SOLICIT gets an ADVERTISE without an IA_NA",
            "vm3",
            v6::MessageType::Solicit,
            true,
            false,
            (v6::MessageType::Advertise, false),
        ),
    ];
    for (what, vm, msg_type, ia_na, to_server, expected) in exchanges {
        let client = net.vm(vm).port.mac;
        let xid = [0xab, 0xcd, 0xef];
        p.send(
            vm,
            &dhcp6_request(client, (msg_type, xid), ia_na, to_server),
        );
        let reply = p.expect(what, vm, |f| {
            dhcp6_reply(f) == Some((expected.0, expected.1, xid))
        });
        if let Some(r) = reply {
            p.fact(what, hex::encode(r));
        }
    }
    let renew = dhcp6_request(
        vm1.port.mac,
        (v6::MessageType::Renew, RENEW_XID),
        true,
        true,
    );
    p.send("vm1", &renew);
    p.expect("RENEW is resumed and flooded to vm3", "vm3", |f| {
        f == renew.as_slice()
    });
    p.refute_on("RENEW gets no reply", "vm1", |f| {
        dhcp6_reply(f).is_some_and(|(.., xid)| xid == RENEW_XID)
    });
    let outcome = p.finish(&net.ports());
    drop_options(net);
    outcome
}

const SCENARIOS: &[Scenario] = &[
    ("dhcpv4 offer, ack, nak, inform", dhcpv4_offer_ack_nak),
    ("dhcpv6 advertise and reply", dhcpv6_advertise_reply),
];

#[test]
fn dhcp_replies_match_ovn_controller() {
    let setups = Setup::oracle_and_agent(&["hv1", "hv2"]);
    let (nets, report) = common::run_all(
        &setups,
        |s| two_switches_one_router(s, &["hv1", "hv2"]),
        SCENARIOS,
    );
    for net in &nets {
        if net.setup.label != common::ORACLE {
            let stats = net
                .lab
                .chassis("hv1")
                .and_then(|c| c.controller_appctl(&["pinctrl/show-stats"]))
                .unwrap_or_default();
            eprintln!("[{}] hv1 pinctrl/show-stats:\n{stats}", net.setup.label);
        }
    }
    common::conclude_healthy(nets, &report);
}
