//! IPv6 prefix delegation (`handle_dhcpv6_reply()`), with ovn-controller (the oracle) and
//! with ovn-agent on three chassis, in the same run: lr0's gateway port `lr0-public` (on
//! hv3) asks for a prefix for `lr0-sw0`, and the external host plays the DHCPv6 server:
//! the controller on hv3 must solicit (to all servers, its DUID made of lr0-sw0's MAC),
//! answer the advertisement with a request to the server, and write the replied prefix
//! to lr0-sw0's `options:ipv6_ra_pd_list`. Only facts are compared (the IA id is random).

mod common;

use std::net::Ipv6Addr;
use std::time::{Duration, Instant};

use common::{mac, Net, Setup, LR0_SW0_MAC};
use integration::observe::{Outcome, Probe};
use integration::scenario::SnatGateway;

const GATEWAY: SnatGateway = SnatGateway::LAB;
const PREFIX: &str = "2001:db8:1::";

/// A DHCPv6 message the host received: (message type, source IP, destination MAC, options).
type Message = (u8, Ipv6Addr, [u8; 6], Vec<(u16, Vec<u8>)>);

fn options(mut rest: &[u8]) -> Vec<(u16, Vec<u8>)> {
    let mut out = Vec::new();
    while rest.len() >= 4 {
        let code = u16::from_be_bytes([rest[0], rest[1]]);
        let len = usize::from(u16::from_be_bytes([rest[2], rest[3]]));
        let Some(body) = rest.get(4..4 + len) else {
            break;
        };
        out.push((code, body.to_vec()));
        rest = &rest[4 + len..];
    }
    out
}

fn client_messages(net: &Net) -> Vec<Message> {
    let Some((_, host)) = net.extra.first() else {
        return Vec::new();
    };
    host.transmitted()
        .unwrap_or_default()
        .iter()
        .filter_map(|f| {
            if f.get(12..14)? != [0x86, 0xdd] || f.get(20)? != &17 {
                return None;
            }
            let udp = f.get(54..)?;
            if udp[..4] != [0x02, 0x22, 0x02, 0x23] {
                return None;
            }
            let mut src = [0u8; 16];
            src.copy_from_slice(&f[22..38]);
            let mut dst_mac = [0u8; 6];
            dst_mac.copy_from_slice(&f[..6]);
            Some((
                udp[8],
                Ipv6Addr::from(src),
                dst_mac,
                options(udp.get(12..)?),
            ))
        })
        .collect()
}

fn wait_message(net: &Net, msg_type: u8, after: usize) -> Option<Message> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Some(m) = client_messages(net)
            .into_iter()
            .skip(after)
            .find(|m| m.0 == msg_type)
        {
            return Some(m);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

fn put(out: &mut Vec<u8>, code: u16, body: &[u8]) {
    out.extend_from_slice(&code.to_be_bytes());
    out.extend_from_slice(&(body.len() as u16).to_be_bytes());
    out.extend_from_slice(body);
}

/// The server's message of `msg_type` for IA `aid`, to the router at `router_ip`.
fn server_message(msg_type: u8, aid: u32, client_id: &[u8], router_ip: Ipv6Addr) -> Vec<u8> {
    let mut msg = vec![msg_type, 0, 0, 1];
    let mut duid = vec![0, 3, 0, 1];
    duid.extend_from_slice(&GATEWAY.host_mac.0);
    put(&mut msg, 2, &duid);
    put(&mut msg, 1, client_id);
    let mut ia = aid.to_be_bytes().to_vec();
    ia.extend_from_slice(&300u32.to_be_bytes());
    ia.extend_from_slice(&500u32.to_be_bytes());
    let mut prefix = 600u32.to_be_bytes().to_vec();
    prefix.extend_from_slice(&900u32.to_be_bytes());
    prefix.push(48);
    prefix.extend_from_slice(&PREFIX.parse::<Ipv6Addr>().unwrap().octets());
    put(&mut ia, 26, &prefix);
    put(&mut msg, 25, &ia);
    let host_ip: Ipv6Addr = "fe80::f200:ff:fe00:64".parse().unwrap();
    let builder = etherparse::PacketBuilder::ethernet2(GATEWAY.host_mac.0, GATEWAY.router_mac.0)
        .ipv6(host_ip.octets(), router_ip.octets(), 255)
        .udp(547, 546);
    let mut out = Vec::with_capacity(builder.size(msg.len()));
    builder.write(&mut out, &msg).expect("packet");
    out
}

fn pd_list(net: &Net) -> String {
    net.lab
        .central()
        .sbctl(&["get", "Port_Binding", "lr0-sw0", "options:ipv6_ra_pd_list"])
        .unwrap_or_default()
        .trim()
        .trim_matches('"')
        .to_owned()
}

fn delegation(net: &Net) -> Outcome {
    let mut p = Probe::start(&net.lab, &[]);
    p.nbctl(&[
        "set",
        "Logical_Router_Port",
        "lr0-public",
        "options:prefix_delegation=true",
    ]);
    p.nbctl(&[
        "set",
        "Logical_Router_Port",
        "lr0-sw0",
        "options:prefix=true",
    ]);
    p.wait_hv("prefix delegation on");
    let Some((_, router_ip, dst_mac, opts)) = wait_message(net, 1, 0) else {
        p.fail("no SOLICIT reached the server within 10 s");
        return p.finish(&[]);
    };
    p.fact(
        "solicit to all servers",
        (dst_mac == [0x33, 0x33, 0, 1, 0, 2]).to_string(),
    );
    let client_id = opts
        .iter()
        .find(|o| o.0 == 1)
        .map(|o| o.1.clone())
        .unwrap_or_default();
    let mut want_duid = vec![0, 3, 0, 1];
    want_duid.extend_from_slice(&mac(LR0_SW0_MAC).0);
    p.fact(
        "client DUID is lr0-sw0's MAC",
        (client_id == want_duid).to_string(),
    );
    let aid = opts
        .iter()
        .find(|o| o.0 == 25)
        .and_then(|o| o.1.get(..4))
        .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    let hv3 = net.lab.chassis("hv3");
    let host = net.extra.first().map(|(_, v)| v.clone());
    let seen = client_messages(net).len();
    if let (Ok(hv3), Some(h)) = (&hv3, &host) {
        let _ = hv3.inject(h, &server_message(2, aid, &client_id, router_ip));
    }
    match wait_message(net, 3, seen) {
        Some((_, _, dst_mac, opts)) => {
            p.fact(
                "request to the server",
                (dst_mac == GATEWAY.host_mac.0).to_string(),
            );
            let codes: Vec<u16> = opts.iter().map(|o| o.0).collect();
            p.fact("request options", format!("{codes:?}"));
        }
        None => p.fail("no REQUEST answered the advertisement within 10 s"),
    }
    if let (Ok(hv3), Some(h)) = (&hv3, &host) {
        let _ = hv3.inject(h, &server_message(7, aid, &client_id, router_ip));
    }
    let want = format!("{aid}:{PREFIX}/48");
    let deadline = Instant::now() + Duration::from_secs(10);
    while pd_list(net) != want && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let got = pd_list(net);
    p.fact(
        "ipv6_ra_pd_list is aid:prefix/len of the reply",
        (got == want).to_string(),
    );
    if got != want {
        p.fail(format!("ipv6_ra_pd_list {got:?}, not {want:?}"));
    }
    let outcome = p.finish(&[]);
    let c = net.lab.central();
    let _ = c.nbctl(&[
        "remove",
        "Logical_Router_Port",
        "lr0-public",
        "options",
        "prefix_delegation",
    ]);
    let _ = c.nbctl(&[
        "remove",
        "Logical_Router_Port",
        "lr0-sw0",
        "options",
        "prefix",
    ]);
    let _ = c.wait_hv_sync();
    outcome
}

#[test]
fn prefix_delegation_as_ovn_controller() {
    let setups = Setup::oracle_and_agent(&["hv1", "hv2", "hv3"]);
    let (nets, report) = common::run_all(
        &setups,
        common::gateway_lab,
        &[("prefix delegated to lr0-sw0", delegation)],
    );
    common::conclude_healthy(nets, &report);
}
