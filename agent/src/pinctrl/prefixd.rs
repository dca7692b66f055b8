//! IPv6 prefix delegation (RFC 8415) on a gateway router port with
//! `options:ipv6_prefix_delegation=true`: this chassis, where the port lives, acts as the
//! DHCPv6 client for each router port of that router with `options:ipv6_prefix=true` (the
//! downstream networks), one IA_PD each, its DUID-LL made of that port's MAC. SOLICITs go
//! out of the gateway port every few seconds until a server's ADVERTISE is answered with a
//! REQUEST and its REPLY delegates a prefix (`handle_dhcpv6_reply()` brings both here); the
//! prefix is written to the downstream port's `options:ipv6_ra_pd_list` as `aid:prefix/len`,
//! then renewed after T1, rebound after T2 and solicited again once its lifetime is over.

use std::collections::BTreeMap;
use std::net::Ipv6Addr;
use std::time::{Duration, Instant};

use openflow::wire::PacketOut;
use sbclient::ovn_sb::PortBinding;
use sbclient::{Replica, Uuid};

use super::packet::{self, Headers, Mac, L3};
use super::packet_in::{Entry, Skip};

const CLIENT_PORT: u16 = 546;
const SERVER_PORT: u16 = 547;
const MSG_SOLICIT: u8 = 1;
const MSG_ADVERTISE: u8 = 2;
const MSG_REQUEST: u8 = 3;
const MSG_RENEW: u8 = 5;
const MSG_REBIND: u8 = 6;
const MSG_REPLY: u8 = 7;
const OPT_CLIENT_ID: u16 = 1;
const OPT_SERVER_ID: u16 = 2;
const OPT_STATUS_CODE: u16 = 13;
const OPT_IA_PD: u16 = 25;
const OPT_IA_PREFIX: u16 = 26;
const DUID_LL: u16 = 3;
const HW_ETHERNET: u16 = 1;
const MAX_DUID: usize = 130;
/// Solicitations go out at random within this period.
const RESEND_MS: u64 = 3000;
/// A state whose port went stays this long (the port may come back).
const STALE: Duration = Duration::from_mins(3);
const ALL_SERVERS: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 1, 2);
const ALL_SERVERS_MAC: Mac = [0x33, 0x33, 0, 1, 0, 2];

/// One downstream router port to get a prefix for, through its router's gateway port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PdPort {
    /// The downstream port (its `options:ipv6_ra_pd_list` gets the prefix).
    pub name: String,
    pub uuid: Uuid,
    /// The gateway port's MAC and IPv6 address (the packets' source).
    pub mac: Mac,
    pub ip: Ipv6Addr,
    /// The downstream port's MAC (the client's DUID).
    pub client_mac: Mac,
    /// The switch side of the gateway port: where solicitations enter.
    pub datapath: u32,
    pub port_key: u32,
    /// `options:ipv6_ra_pd_list` as the row has it.
    pub pd_list: Option<String>,
}

/// `options:key` is `true`.
fn option_true(pb: &PortBinding, key: &str) -> bool {
    pb.options
        .get(key)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// The ports to get prefixes for: for each gateway port with prefix delegation on, on a
/// local router, whose router port lives here (`resident`), the router's ports with
/// `ipv6_prefix=true`.
pub fn ports(
    sb: &Replica,
    local_router: impl Fn(&Uuid) -> bool,
    resident: impl Fn(&PortBinding) -> bool,
    dp_keys: impl Fn(Uuid) -> Option<u32>,
) -> Vec<PdPort> {
    let Some(pbs) = sb.table::<PortBinding>() else {
        return Vec::new();
    };
    let by_name = |name: &str| crate::southbound::port_binding_named(sb, name);
    let mut out = Vec::new();
    for (_, gw) in pbs.iter() {
        if !option_true(gw, "ipv6_prefix_delegation") || !local_router(&gw.datapath) {
            continue;
        }
        let Some((_, peer)) = gw.options.get("peer").and_then(|p| by_name(p)) else {
            continue;
        };
        if !resident(gw) {
            continue;
        }
        let Some((mac, ip)) = router_address(gw) else {
            continue;
        };
        let (Some(datapath), Ok(port_key)) =
            (dp_keys(peer.datapath), u32::try_from(peer.tunnel_key))
        else {
            continue;
        };
        for (uuid, down) in pbs.iter() {
            let on_router = down.datapath == gw.datapath && down.options.contains_key("peer");
            if !on_router || !option_true(down, "ipv6_prefix") {
                continue;
            }
            let Some(client_mac) = down
                .mac
                .iter()
                .find_map(|m| m.split_whitespace().next().and_then(packet::parse_mac))
            else {
                continue;
            };
            out.push(PdPort {
                name: down.logical_port.clone(),
                uuid: *uuid,
                mac,
                ip,
                client_mac,
                datapath,
                port_key,
                pd_list: down.options.get("ipv6_ra_pd_list").cloned(),
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out.dedup_by(|a, b| a.name == b.name);
    out
}

/// The gateway port's MAC and first IPv6 address (its link-local one if it has none).
fn router_address(pb: &PortBinding) -> Option<(Mac, Ipv6Addr)> {
    let mut last = None;
    for entry in &pb.mac {
        let mut words = entry.split_whitespace();
        let Some(mac) = words.next().and_then(packet::parse_mac) else {
            continue;
        };
        last = Some(mac);
        if let Some(ip) = words.find_map(|w| w.split('/').next()?.parse::<Ipv6Addr>().ok()) {
            return Some((mac, ip));
        }
    }
    last.map(|mac| (mac, packet::link_local(mac)))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Solicit,
    Request,
    /// A prefix came; waiting to be written.
    Pending,
    Done,
    Renew,
    Rebind,
}

#[derive(Debug, Clone)]
struct Client {
    port: PdPort,
    phase: Phase,
    next_send: Instant,
    last_complete: Instant,
    last_used: Instant,
    server_ip: Ipv6Addr,
    server_mac: Mac,
    server_duid: Vec<u8>,
    aid: u32,
    prefix: Option<(Ipv6Addr, u8)>,
    /// Milliseconds.
    t1: u64,
    t2: u64,
    valid: u64,
}

/// A DHCPv6 message for a client, as `handle_dhcpv6_reply()` brings it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    pub eth_src: Mac,
    pub eth_dst: Mac,
    pub vlan_tci: Option<u16>,
    pub src: Ipv6Addr,
    pub dst: Ipv6Addr,
    /// The DHCPv6 message (after the UDP header).
    pub message: Vec<u8>,
    /// Where it came in: the router datapath and port.
    pub datapath: u32,
    pub inport: u32,
}

/// The message of a `handle_dhcpv6_reply` packet-in.
pub fn parse(frame: &[u8], h: &Headers, datapath: u32, inport: u32) -> Result<Received, Skip> {
    let L3::Ipv6 {
        src,
        dst,
        next_header,
        ..
    } = h.l3
    else {
        return Err(Skip::WrongPacket("DHCPv6 reply on a non-IPv6 packet"));
    };
    if next_header != packet::PROTO_UDP {
        return Err(Skip::WrongPacket("DHCPv6 reply on a non-UDP packet"));
    }
    let l4 = h.l4(frame).unwrap_or_default();
    let udp_len = l4
        .get(4..6)
        .map_or(0, |b| usize::from(u16::from_be_bytes([b[0], b[1]])));
    let message = l4
        .get(8..udp_len.min(l4.len()).max(8))
        .ok_or(Skip::WrongPacket("DHCPv6 reply: truncated UDP header"))?;
    Ok(Received {
        eth_src: h.eth_src,
        eth_dst: h.eth_dst,
        vlan_tci: h.vlan_tci,
        src,
        dst,
        message: message.to_vec(),
        datapath,
        inport,
    })
}

/// The options of a message (after its 4-byte header), as (code, body).
fn options(body: &[u8]) -> Vec<(u16, &[u8])> {
    let mut out = Vec::new();
    let mut rest = body;
    while rest.len() >= 4 {
        let code = u16::from_be_bytes([rest[0], rest[1]]);
        let len = usize::from(u16::from_be_bytes([rest[2], rest[3]]));
        let Some(opt) = rest.get(4..4 + len) else {
            break;
        };
        out.push((code, opt));
        rest = &rest[4 + len..];
    }
    out
}

fn be32(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// A delegation a REPLY carries.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Delegation {
    aid: u32,
    t1: u32,
    t2: u32,
    preferred: u32,
    valid: u32,
    prefix: Ipv6Addr,
    len: u8,
    server_duid: Vec<u8>,
}

fn reply_delegation(message: &[u8]) -> Option<Delegation> {
    let mut d = None;
    let mut duid = Vec::new();
    for (code, opt) in options(message.get(4..)?) {
        match code {
            OPT_IA_PD if opt.len() >= 12 => {
                let (aid, t1, t2) = (be32(opt, 0), be32(opt, 4), be32(opt, 8));
                if t1 > t2 && t2 > 0 {
                    continue;
                }
                let mut ok = None;
                for (sub, body) in options(&opt[12..]) {
                    if sub == OPT_IA_PREFIX && body.len() >= 25 {
                        let (preferred, valid) = (be32(body, 0), be32(body, 4));
                        if preferred > valid {
                            break;
                        }
                        let mut a = [0u8; 16];
                        a.copy_from_slice(&body[9..25]);
                        ok = Some((preferred, valid, body[8], Ipv6Addr::from(a)));
                    }
                    if sub == OPT_STATUS_CODE && body.len() >= 2 && body[..2] != [0, 0] {
                        ok = None;
                    }
                }
                if let Some((preferred, valid, len, prefix)) = ok {
                    d = Some((aid, t1, t2, preferred, valid, prefix, len));
                }
            }
            OPT_SERVER_ID => duid = opt[..opt.len().min(MAX_DUID)].to_vec(),
            _ => {}
        }
    }
    let (aid, t1, t2, preferred, valid, prefix, len) = d?;
    Some(Delegation {
        aid,
        t1,
        t2,
        preferred,
        valid,
        prefix,
        len,
        server_duid: duid,
    })
}

/// The clients of this chassis, by downstream port name.
#[derive(Debug)]
pub struct Clients {
    clients: BTreeMap<String, Client>,
    seed: u64,
}

impl Clients {
    pub fn new(seed: u64) -> Self {
        Self {
            clients: BTreeMap::new(),
            seed: seed | 1,
        }
    }

    fn random(&mut self) -> u64 {
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        self.seed
    }

    pub fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }

    /// Follows the ports: a new one starts soliciting (for the prefix its row already
    /// names, if any); one gone is forgotten after a while; one whose delegation came is
    /// marked written when its row shows it.
    pub fn sync(&mut self, ports: &[PdPort], now: Instant) {
        for p in ports {
            if let Some(c) = self.clients.get_mut(&p.name) {
                c.port = p.clone();
                c.last_used = now;
                continue;
            }
            let (aid, prefix) = p
                .pd_list
                .as_deref()
                .and_then(parse_pd_list)
                .map_or((0, None), |(aid, prefix, len)| (aid, Some((prefix, len))));
            let delay = self.random() % RESEND_MS;
            self.clients.insert(
                p.name.clone(),
                Client {
                    port: p.clone(),
                    phase: Phase::Solicit,
                    next_send: now + Duration::from_millis(delay),
                    last_complete: now,
                    last_used: now,
                    server_ip: Ipv6Addr::UNSPECIFIED,
                    server_mac: [0; 6],
                    server_duid: Vec::new(),
                    aid,
                    prefix,
                    t1: 0,
                    t2: 0,
                    valid: 0,
                },
            );
        }
        self.clients
            .retain(|name, c| ports.iter().any(|p| &p.name == name) || now < c.last_used + STALE);
    }

    /// An ADVERTISE (answered with a REQUEST, returned) or a REPLY (the delegation).
    /// `to_all`: the REQUEST goes to all DHCP servers (the release's choice), else to the
    /// advertising one.
    pub fn on_message(
        &mut self,
        r: &Received,
        output_entry: u8,
        to_all: bool,
    ) -> Option<PacketOut> {
        match r.message.first().copied()? {
            MSG_ADVERTISE => self.on_advertise(r, output_entry, to_all),
            MSG_REPLY => {
                let d = reply_delegation(&r.message)?;
                let c = self.client_for(r, d.aid)?;
                c.phase = Phase::Pending;
                c.server_ip = r.src;
                c.server_mac = r.eth_src;
                c.server_duid = d.server_duid;
                c.t1 = u64::from(d.t1) * 1000;
                c.t2 = u64::from(d.t2) * 1000;
                c.valid = u64::from(d.valid) * 1000;
                let _ = d.preferred;
                c.prefix = Some((d.prefix, d.len));
                None
            }
            _ => None,
        }
    }

    fn client_for(&mut self, r: &Received, aid: u32) -> Option<&mut Client> {
        self.clients
            .values_mut()
            .find(|c| c.port.ip == r.dst && c.port.mac == r.eth_dst && c.aid == aid)
    }

    fn on_advertise(&mut self, r: &Received, output_entry: u8, to_all: bool) -> Option<PacketOut> {
        let mut body = Vec::new();
        let mut aid = 0;
        for (code, opt) in options(r.message.get(4..)?) {
            match code {
                OPT_IA_PD => {
                    let head = opt.get(..12)?;
                    let (t1, t2) = (be32(head, 4), be32(head, 8));
                    if t1 > t2 && t2 > 0 {
                        return None;
                    }
                    aid = be32(head, 0);
                    let mut prefixes = Vec::new();
                    for (sub, sbody) in options(&opt[12..]) {
                        if sub == OPT_IA_PREFIX {
                            if sbody.len() >= 8 && be32(sbody, 0) > be32(sbody, 4) {
                                return None;
                            }
                            put_option(&mut prefixes, sub, sbody);
                        }
                        if sub == OPT_STATUS_CODE && sbody.len() >= 2 && sbody[..2] != [0, 0] {
                            return None;
                        }
                    }
                    let mut ia = head.to_vec();
                    ia.extend_from_slice(&prefixes);
                    put_option(&mut body, OPT_IA_PD, &ia);
                }
                OPT_SERVER_ID | OPT_CLIENT_ID => put_option(&mut body, code, opt),
                _ => {}
            }
        }
        let c = self.client_for(r, aid)?;
        c.phase = Phase::Request;
        let mut msg = vec![MSG_REQUEST, 0, 0, 0];
        msg.extend_from_slice(&body);
        let (dst_mac, dst) = if to_all {
            (ALL_SERVERS_MAC, ALL_SERVERS)
        } else {
            (r.eth_src, r.src)
        };
        let mut frame = udp6_frame(r.eth_dst, dst_mac, r.dst, dst, &msg);
        if let Some(tci) = r.vlan_tci.filter(|t| t & 0x1000 != 0) {
            let mut tag = vec![0x81, 0x00];
            tag.extend_from_slice(&tci.to_be_bytes());
            frame.splice(12..12, tag);
        }
        Some(super::packet_in::into_pipeline(
            Entry {
                datapath: r.datapath,
                inport: None,
                outport: Some(r.inport),
                local_only: false,
                table: output_entry,
            },
            frame,
        ))
    }

    /// The messages due at `now`: solicitations, renewals and rebinds into the switch of
    /// each gateway port (ingress pipeline `ingress`).
    pub fn run(&mut self, now: Instant, ingress: u8) -> Vec<PacketOut> {
        let mut out = Vec::new();
        let names: Vec<String> = self.clients.keys().cloned().collect();
        for name in names {
            let delay = self.random() % RESEND_MS;
            let fresh_aid = (self.random() & 0xffff) as u32;
            let Some(c) = self.clients.get_mut(&name) else {
                continue;
            };
            let since = now.saturating_duration_since(c.last_complete);
            let ms = |v: u64| Duration::from_millis(v);
            match c.phase {
                Phase::Done if since > ms(c.t1) => c.phase = Phase::Renew,
                Phase::Renew if since > ms(c.t2) => {
                    c.phase = Phase::Rebind;
                    c.server_duid.clear();
                }
                Phase::Rebind if since > ms(c.valid) => c.phase = Phase::Solicit,
                _ => {}
            }
            if now < c.next_send {
                continue;
            }
            c.next_send = now + Duration::from_millis(delay);
            if c.phase == Phase::Done {
                continue;
            }
            if c.prefix.is_none() {
                c.aid = fresh_aid;
            }
            out.push(client_message(c, ingress));
        }
        out
    }

    /// Delegations to write, as (port, `aid:prefix/len`); each then counts as done.
    pub fn delegations(&mut self, now: Instant) -> Vec<(Uuid, String)> {
        let mut out = Vec::new();
        for c in self.clients.values_mut() {
            if c.phase != Phase::Pending {
                continue;
            }
            let Some((prefix, len)) = c.prefix else {
                continue;
            };
            c.phase = Phase::Done;
            c.last_complete = now;
            c.next_send = now + Duration::from_millis(c.t1);
            out.push((c.port.uuid, format!("{}:{prefix}/{len}", c.aid)));
        }
        out
    }
}

/// `aid:prefix/len`.
fn parse_pd_list(s: &str) -> Option<(u32, Ipv6Addr, u8)> {
    let (aid, rest) = s.split_once(':')?;
    let (prefix, len) = rest.rsplit_once('/')?;
    Some((aid.parse().ok()?, prefix.parse().ok()?, len.parse().ok()?))
}

fn put_option(out: &mut Vec<u8>, code: u16, body: &[u8]) {
    out.extend_from_slice(&code.to_be_bytes());
    out.extend_from_slice(&(body.len() as u16).to_be_bytes());
    out.extend_from_slice(body);
}

/// A SOLICIT, RENEW or REBIND of `c`: to its server once known, else to all servers.
fn client_message(c: &Client, ingress: u8) -> PacketOut {
    let msg_type = match c.phase {
        Phase::Renew => MSG_RENEW,
        Phase::Rebind => MSG_REBIND,
        _ => MSG_SOLICIT,
    };
    let mut msg = vec![msg_type, 0, 0, 0];
    let mut duid = Vec::with_capacity(10);
    duid.extend_from_slice(&DUID_LL.to_be_bytes());
    duid.extend_from_slice(&HW_ETHERNET.to_be_bytes());
    duid.extend_from_slice(&c.port.client_mac);
    put_option(&mut msg, OPT_CLIENT_ID, &duid);
    let (dst_ip, dst_mac) = if c.server_duid.is_empty() {
        (ALL_SERVERS, ALL_SERVERS_MAC)
    } else {
        put_option(&mut msg, OPT_SERVER_ID, &c.server_duid);
        (c.server_ip, c.server_mac)
    };
    let mut ia = Vec::with_capacity(12 + 29);
    ia.extend_from_slice(&c.aid.to_be_bytes());
    ia.extend_from_slice(&u32::MAX.to_be_bytes());
    ia.extend_from_slice(&u32::MAX.to_be_bytes());
    if let Some((prefix, len)) = c.prefix {
        let mut p = Vec::with_capacity(25);
        p.extend_from_slice(&u32::MAX.to_be_bytes());
        p.extend_from_slice(&u32::MAX.to_be_bytes());
        p.push(len);
        p.extend_from_slice(&prefix.octets());
        put_option(&mut ia, OPT_IA_PREFIX, &p);
    }
    put_option(&mut msg, OPT_IA_PD, &ia);
    let frame = udp6_frame(c.port.mac, dst_mac, c.port.ip, dst_ip, &msg);
    super::packet_in::into_pipeline(
        Entry {
            datapath: c.port.datapath,
            inport: Some(c.port.port_key),
            outport: None,
            local_only: false,
            table: ingress,
        },
        frame,
    )
}

/// Ethernet, IPv6 (hop limit 255) and UDP (client to server port) around `msg`.
fn udp6_frame(src_mac: Mac, dst_mac: Mac, src: Ipv6Addr, dst: Ipv6Addr, msg: &[u8]) -> Vec<u8> {
    packet::udp_datagram(
        (src_mac, dst_mac),
        (src.into(), dst.into()),
        255,
        (CLIENT_PORT, SERVER_PORT),
        msg,
    )
}

/// Writes the delegations to the ports' `options:ipv6_ra_pd_list`.
pub fn write(sb: &Replica, delegations: &[(Uuid, String)], txn: &mut sbclient::Transaction) {
    use sbclient::transaction::by_uuid;
    let Some(pbs) = sb.table::<PortBinding>() else {
        return;
    };
    for (uuid, value) in delegations {
        let key = "ipv6_ra_pd_list";
        if pbs
            .get(uuid)
            .is_none_or(|pb| pb.options.get(key) == Some(value))
        {
            continue;
        }
        txn.set_map_keys("Port_Binding", &by_uuid(*uuid), "options", &[(key, value)]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTER_MAC: Mac = [0, 0, 0, 0, 0xff, 3];
    const SERVER_MAC: Mac = [0xf0, 0, 0, 0, 0, 0x64];

    fn port() -> PdPort {
        PdPort {
            name: "lr0-sw0".into(),
            uuid: "00000000-0000-0000-0000-0000000000a1".parse().unwrap(),
            mac: ROUTER_MAC,
            ip: packet::link_local(ROUTER_MAC),
            client_mac: [0, 0, 0, 0, 0xff, 1],
            datapath: 4,
            port_key: 2,
            pd_list: None,
        }
    }

    fn server_ip() -> Ipv6Addr {
        "fe80::f200:ff:fe00:64".parse().unwrap()
    }

    /// The DHCPv6 message of a packet-out, and its frame's headers.
    fn message(po: &PacketOut) -> (Headers, Vec<u8>) {
        let h = packet::parse(&po.data).unwrap();
        let msg = h.l4(&po.data).unwrap()[8..].to_vec();
        (h, msg)
    }

    fn ia_pd(aid: u32, prefix: Option<(&str, u8)>) -> Vec<u8> {
        let mut ia = aid.to_be_bytes().to_vec();
        ia.extend_from_slice(&300u32.to_be_bytes());
        ia.extend_from_slice(&500u32.to_be_bytes());
        if let Some((p, len)) = prefix {
            let mut body = 600u32.to_be_bytes().to_vec();
            body.extend_from_slice(&900u32.to_be_bytes());
            body.push(len);
            body.extend_from_slice(&p.parse::<Ipv6Addr>().unwrap().octets());
            put_option(&mut ia, OPT_IA_PREFIX, &body);
        }
        ia
    }

    fn from_server(msg_type: u8, aid: u32) -> Received {
        let mut msg = vec![msg_type, 0, 0, 1];
        put_option(
            &mut msg,
            OPT_SERVER_ID,
            &[0, 3, 0, 1, 0xf0, 0, 0, 0, 0, 0x64],
        );
        put_option(&mut msg, OPT_IA_PD, &ia_pd(aid, Some(("2001:db8:1::", 48))));
        Received {
            eth_src: SERVER_MAC,
            eth_dst: ROUTER_MAC,
            vlan_tci: None,
            src: server_ip(),
            dst: packet::link_local(ROUTER_MAC),
            message: msg,
            datapath: 3,
            inport: 5,
        }
    }

    #[test]
    fn a_prefix_is_solicited_requested_and_delegated() {
        let t0 = Instant::now();
        let mut c = Clients::new(42);
        c.sync(&[port()], t0);
        let sent = c.run(t0 + Duration::from_secs(3), 8);
        assert_eq!(sent.len(), 1);
        let (h, msg) = message(&sent[0]);
        assert_eq!(h.eth_dst, ALL_SERVERS_MAC);
        assert_eq!(msg[0], MSG_SOLICIT);
        let opts = options(&msg[4..]);
        assert_eq!(
            opts[0],
            (OPT_CLIENT_ID, &[0, 3, 0, 1, 0, 0, 0, 0, 0xff, 1][..])
        );
        assert_eq!(opts[1].0, OPT_IA_PD);
        let aid = be32(opts[1].1, 0);

        // The server's advertisement: a request back, out of the port it came in.
        assert!(
            c.on_message(&from_server(MSG_ADVERTISE, aid + 1), 37, false)
                .is_none(),
            "another IA"
        );
        let request = c
            .on_message(&from_server(MSG_ADVERTISE, aid), 37, false)
            .expect("request");
        let (h, msg) = message(&request);
        assert_eq!((h.eth_src, h.eth_dst), (ROUTER_MAC, SERVER_MAC));
        assert_eq!(msg[0], MSG_REQUEST);
        let opts = options(&msg[4..]);
        assert_eq!(
            opts.iter().map(|o| o.0).collect::<Vec<_>>(),
            [OPT_SERVER_ID, OPT_IA_PD]
        );
        assert!(c.delegations(t0).is_empty());
        // Where the release sends requests to all servers (25.03 on):
        let mut c2 = Clients::new(42);
        c2.sync(&[port()], t0);
        let sent = c2.run(t0 + Duration::from_secs(3), 8);
        let aid2 = be32(options(&message(&sent[0]).1[4..])[1].1, 0);
        let to_all = c2
            .on_message(&from_server(MSG_ADVERTISE, aid2), 37, true)
            .expect("request");
        assert_eq!(message(&to_all).0.eth_dst, ALL_SERVERS_MAC);

        // The reply delegates 2001:db8:1::/48; written once.
        assert!(c
            .on_message(&from_server(MSG_REPLY, aid), 37, false)
            .is_none());
        let done = c.delegations(t0 + Duration::from_secs(4));
        assert_eq!(done, vec![(port().uuid, format!("{aid}:2001:db8:1::/48"))]);
        assert!(c.delegations(t0 + Duration::from_secs(4)).is_empty());
        // Nothing more until T1 (300 s), then a renewal to the server itself.
        assert!(c.run(t0 + Duration::from_secs(200), 8).is_empty());
        let renew = c.run(t0 + Duration::from_secs(305), 8);
        let (h, msg) = message(&renew[0]);
        assert_eq!((msg[0], h.eth_dst), (MSG_RENEW, SERVER_MAC));
    }

    #[test]
    fn a_known_prefix_is_asked_for_again_and_a_failed_reply_ignored() {
        let t0 = Instant::now();
        let mut c = Clients::new(1);
        let mut p = port();
        p.pd_list = Some("77:2001:db8:9::/56".into());
        c.sync(&[p], t0);
        let sent = c.run(t0 + Duration::from_secs(3), 8);
        let (_, msg) = message(&sent[0]);
        let ia = options(&msg[4..])[1].1.to_vec();
        assert_eq!(be32(&ia, 0), 77, "the aid of the row");
        assert_eq!(options(&ia[12..])[0].0, OPT_IA_PREFIX);
        // A reply with a failure status delegates nothing.
        let mut r = from_server(MSG_REPLY, 77);
        let mut ia = ia_pd(77, Some(("2001:db8:9::", 56)));
        put_option(&mut ia, OPT_STATUS_CODE, &[0, 6]);
        let mut msg = vec![MSG_REPLY, 0, 0, 1];
        put_option(&mut msg, OPT_IA_PD, &ia);
        r.message = msg;
        c.on_message(&r, 37, false);
        assert!(c.delegations(t0).is_empty());
    }
}
