//! Service_Monitor health checks (load balancer backends), as ovn-controller 23.03.1's
//! `svc_monitors_run` and `pinctrl_handle_svc_check` do them: for every Service_Monitor
//! row whose logical port is bound to this chassis, a TCP SYN (or a UDP datagram) is sent
//! to the backend from the row's `src_mac`/`src_ip` every `interval` seconds; a SYN-ACK
//! is answered with a RST and counts as a success, a RST as a failure; an ICMP port
//! unreachable for the UDP probe is a failure; no answer within `timeout` is a failure
//! for TCP and a success for UDP. `success_count` successes make the status `online`,
//! `failure_count` failures `offline`, and the main loop writes it to the row.
//!
//! Sans-IO: [`Monitors`] is told the rows ([`Monitors::sync`]), the time
//! ([`Monitors::run`]) and the replies ([`Monitors::on_reply`]), and returns the
//! packet-outs to send; the driver owns the clock and the connection.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv6Addr};
use std::time::{Duration, Instant};

use openflow::wire::PacketOut;
use sbclient::ovn_sb::{PortBinding, ServiceMonitor};
use sbclient::transaction::by_uuid;
use sbclient::{Atom, Columns, Replica, Transaction, Uuid};

use super::packet::parse_mac;
use super::packet::{self, Headers, Mac, L3};
use super::packet_in::{PacketIn, Skip};

const TCP_SYN: u16 = 0x02;
const TCP_RST: u16 = 0x04;
const TCP_ACK: u16 = 0x10;
const TCP_WINDOW: u16 = 65160;
const PROBE_TTL: u8 = 63;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Protocol {
    Tcp,
    Udp,
}

/// A Service_Monitor row of a port bound here, as the probes need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorRow {
    pub uuid: Uuid,
    pub datapath: u32,
    pub port_key: u32,
    pub ip: IpAddr,
    pub service_port: u16,
    pub protocol: Protocol,
    /// The backend's MAC (from its Port_Binding addresses).
    pub dst_mac: Mac,
    pub src_mac: Mac,
    pub src_ip: IpAddr,
    pub interval: Duration,
    pub timeout: Duration,
    pub success_count: u32,
    pub failure_count: u32,
    /// The row's `status` now.
    pub status: Option<String>,
}

type Key = (u32, u32, IpAddr, u16, Protocol);

impl MonitorRow {
    fn key(&self) -> Key {
        (
            self.datapath,
            self.port_key,
            self.ip,
            self.service_port,
            self.protocol,
        )
    }
}

/// `smap_get_int`: the integer, or `default` when absent or not a number.
fn option(row: &ServiceMonitor, name: &str, default: i64) -> i64 {
    row.options
        .get(name)
        .and_then(|v| v.trim().parse::<i64>().ok())
        .unwrap_or(default)
}

/// The MAC of `pb` that goes with `ip`: the address entry listing `ip`, else the first
/// entry that lists no IP at all (`extract_lsp_addresses` order).
fn backend_mac(pb: &PortBinding, ip: IpAddr) -> Option<Mac> {
    for entry in &pb.mac {
        let mut words = entry.split_whitespace();
        let Some(mac) = words.next().and_then(parse_mac) else {
            continue;
        };
        let ips: Vec<IpAddr> = words
            .filter_map(|w| w.split('/').next()?.parse().ok())
            .collect();
        if ips.contains(&ip) || ips.is_empty() {
            return Some(mac);
        }
    }
    None
}

/// The Service_Monitor rows whose logical port is bound to `chassis`, in uuid order.
pub fn rows(
    sb: &Replica,
    chassis: Option<Uuid>,
    dp_keys: impl Fn(Uuid) -> Option<u32>,
) -> Vec<MonitorRow> {
    let (Some(chassis), Some(svcs), Some(pbs)) = (
        chassis,
        sb.table::<ServiceMonitor>(),
        sb.table::<PortBinding>(),
    ) else {
        return Vec::new();
    };
    let by_name: HashMap<&str, &PortBinding> = pbs
        .iter()
        .map(|(_, pb)| (pb.logical_port.as_str(), pb))
        .collect();
    let mut out = Vec::new();
    for (uuid, svc) in svcs.iter() {
        let Some(pb) = by_name.get(svc.logical_port.as_str()) else {
            continue;
        };
        if pb.chassis != Some(chassis) {
            continue;
        }
        let (Ok(ip), Ok(src_ip), Some(src_mac)) = (
            svc.ip.parse::<IpAddr>(),
            svc.src_ip.parse::<IpAddr>(),
            parse_mac(&svc.src_mac),
        ) else {
            continue;
        };
        let (Some(dst_mac), Some(datapath), Ok(port_key), Ok(service_port)) = (
            backend_mac(pb, ip),
            dp_keys(pb.datapath),
            u32::try_from(pb.tunnel_key),
            u16::try_from(svc.port),
        ) else {
            continue;
        };
        let secs = |name, default| Duration::from_secs(option(svc, name, default).max(0) as u64);
        let count = |name| u32::try_from(option(svc, name, 1)).unwrap_or(0);
        out.push(MonitorRow {
            uuid: *uuid,
            datapath,
            port_key,
            ip,
            service_port,
            protocol: if svc.protocol.as_deref() == Some("udp") {
                Protocol::Udp
            } else {
                Protocol::Tcp
            },
            dst_mac,
            src_mac,
            src_ip,
            interval: secs("interval", 5),
            timeout: secs("timeout", 3),
            success_count: count("success_count"),
            failure_count: count("failure_count"),
            status: svc.status.clone(),
        });
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Init,
    Waiting,
    Online,
    Offline,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    Online,
    Offline,
}

impl Status {
    pub fn text(self) -> &'static str {
        match self {
            Status::Online => "online",
            Status::Offline => "offline",
        }
    }
}

#[derive(Debug)]
struct Monitor {
    row: MonitorRow,
    state: State,
    status: Option<Status>,
    /// What was last handed to the main loop for the row.
    reported: Option<Status>,
    wait_until: Instant,
    next_send: Instant,
    n_success: u32,
    n_failures: u32,
    seq: u32,
    src_port: u16,
}

/// A status the main loop writes to a Service_Monitor row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StatusWrite {
    pub uuid: Uuid,
    pub status: Status,
}

/// A reply to a probe, as the `handle_svc_check` packet-in brings it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    Tcp {
        datapath: u32,
        port_key: u32,
        ip: IpAddr,
        src_port: u16,
        dst_port: u16,
        seq: u32,
        ack: u32,
        flags: u16,
    },
    /// An ICMP port unreachable quoting a UDP probe.
    Unreachable {
        datapath: u32,
        port_key: u32,
        ip: IpAddr,
        udp_src: u16,
        udp_dst: u16,
    },
}

/// Reads a `handle_svc_check` packet-in (the backend's port is the logical inport).
/// `Ok(None)`: an ICMP message that is not the port unreachable a probe can cause.
pub fn parse_reply(p: &PacketIn<'_>, h: &Headers) -> Result<Option<Reply>, Skip> {
    let (datapath, port_key) = (p.regs.datapath(), p.regs.reg(14));
    let (ip, proto) = match h.l3 {
        L3::Ipv4 {
            src,
            proto,
            total_len,
            ..
        } => {
            if total_len < 20 {
                return Err(Skip::WrongPacket("IP packet with invalid length"));
            }
            (IpAddr::V4(src), proto)
        }
        L3::Ipv6 {
            src, next_header, ..
        } => (IpAddr::V6(src), next_header),
        L3::Other => return Err(Skip::WrongPacket("handle service check: not an IP packet")),
    };
    let l4 = h.l4(p.packet).unwrap_or_default();
    match proto {
        packet::PROTO_TCP => {
            let t = l4.get(..20).ok_or(Skip::WrongPacket(
                "handle service check: truncated TCP header",
            ))?;
            let be16 = |i: usize| u16::from_be_bytes([t[i], t[i + 1]]);
            let be32 = |i: usize| u32::from_be_bytes([t[i], t[i + 1], t[i + 2], t[i + 3]]);
            Ok(Some(Reply::Tcp {
                datapath,
                port_key,
                ip,
                src_port: be16(0),
                dst_port: be16(2),
                seq: be32(4),
                ack: be32(8),
                flags: be16(12) & 0x0fff,
            }))
        }
        packet::PROTO_ICMP | packet::PROTO_ICMPV6 => {
            let (Some(icmp), Some(quoted)) = (l4.get(..8), l4.get(8..)) else {
                return Err(Skip::WrongPacket("ICMP packet with invalid header"));
            };
            let udp = match h.l3 {
                L3::Ipv4 { .. } if proto == packet::PROTO_ICMP => {
                    if icmp[0] != 3 || icmp[1] != 3 {
                        return Ok(None);
                    }
                    let total = quoted.get(2..4).map(|b| u16::from_be_bytes([b[0], b[1]]));
                    if total != Some(20 + 8 + 8) {
                        return Err(Skip::WrongPacket(
                            "Invalid original IP datagram length present in ICMP packet",
                        ));
                    }
                    quoted.get(20..24)
                }
                L3::Ipv6 { .. } if proto == packet::PROTO_ICMPV6 => {
                    if icmp[0] != 1 || icmp[1] != 4 {
                        return Ok(None);
                    }
                    quoted.get(40..44)
                }
                _ => return Ok(None),
            };
            let Some(u) = udp else {
                return Err(Skip::WrongPacket(
                    "Invalid UDP header in the original IP datagram",
                ));
            };
            Ok(Some(Reply::Unreachable {
                datapath,
                port_key,
                ip,
                udp_src: u16::from_be_bytes([u[0], u[1]]),
                udp_dst: u16::from_be_bytes([u[2], u[3]]),
            }))
        }
        _ => Err(Skip::WrongPacket(
            "handle service check: Unsupported protocol",
        )),
    }
}

/// The health checks of this chassis.
#[derive(Debug)]
pub struct Monitors {
    monitors: BTreeMap<Key, Monitor>,
    rng: u64,
}

impl Monitors {
    /// `seed` drives the probes' sequence numbers and source ports.
    pub fn new(seed: u64) -> Self {
        Self {
            monitors: BTreeMap::new(),
            rng: seed | 1,
        }
    }

    pub fn len(&self) -> usize {
        self.monitors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.monitors.is_empty()
    }

    fn random(&mut self) -> u32 {
        // xorshift64*: probes need unpredictable-enough numbers, not cryptographic ones.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        (self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32
    }

    fn random_port(&mut self) -> u16 {
        loop {
            let p = self.random() as u16;
            if p >= 1024 {
                return p;
            }
        }
    }

    /// Follows the rows: new ones start checking, gone ones stop, options change in
    /// place (the state is kept, as ovn-controller keeps it).
    pub fn sync(&mut self, rows: &[MonitorRow], now: Instant) {
        let mut keep = BTreeMap::new();
        for row in rows {
            let key = row.key();
            let mut m = self.monitors.remove(&key).unwrap_or(Monitor {
                row: row.clone(),
                state: State::Init,
                status: None,
                reported: None,
                wait_until: now,
                next_send: now,
                n_success: 0,
                n_failures: 0,
                seq: 0,
                src_port: 0,
            });
            // The row lost the status we wrote (or is a new row): write it again.
            if m.row.uuid != row.uuid || row.status.as_deref() != m.status.map(Status::text) {
                m.reported = None;
            }
            m.row = row.clone();
            keep.insert(key, m);
        }
        self.monitors = keep;
    }

    /// Sends the probes that are due and moves timed-out checks on.
    pub fn run(&mut self, now: Instant, local_output: u8) -> Vec<PacketOut> {
        let mut out = Vec::new();
        let keys: Vec<Key> = self.monitors.keys().copied().collect();
        for key in keys {
            let Some(m) = self.monitors.get_mut(&key) else {
                continue;
            };
            let send = match m.state {
                State::Init => true,
                State::Waiting => {
                    if now > m.wait_until {
                        if m.row.protocol == Protocol::Tcp {
                            m.n_failures += 1;
                            m.state = State::Offline;
                        } else {
                            m.n_success += 1;
                            m.state = State::Online;
                        }
                        m.next_send = now + m.row.interval;
                    }
                    false
                }
                State::Online => {
                    if m.n_success >= m.row.success_count {
                        m.status = Some(Status::Online);
                        m.n_success = 0;
                    }
                    now >= m.next_send
                }
                State::Offline => {
                    if m.n_failures >= m.row.failure_count {
                        m.status = Some(Status::Offline);
                        m.n_failures = 0;
                    }
                    now >= m.next_send
                }
            };
            if send {
                out.push(self.probe(key, now, local_output));
            }
        }
        out
    }

    fn probe(&mut self, key: Key, now: Instant, local_output: u8) -> PacketOut {
        let tcp = key.4 == Protocol::Tcp;
        let (seq, fresh_port) = (self.random(), self.random_port());
        let m = self.monitors.get_mut(&key).expect("key from the map");
        let data = if tcp {
            m.seq = seq;
            m.src_port = fresh_port;
            tcp_segment(&m.row, TCP_SYN, m.src_port, seq, 0)
        } else {
            if m.src_port == 0 {
                m.src_port = fresh_port;
            }
            udp_datagram(&m.row, m.src_port)
        };
        m.wait_until = now + m.row.timeout;
        m.state = State::Waiting;
        packet_out(&m.row, data, local_output)
    }

    /// A reply to a probe: the RST to send for a SYN-ACK, or nothing.
    pub fn on_reply(
        &mut self,
        reply: &Reply,
        now: Instant,
        local_output: u8,
    ) -> Result<Vec<PacketOut>, &'static str> {
        match *reply {
            Reply::Tcp {
                datapath,
                port_key,
                ip,
                src_port,
                dst_port,
                seq,
                ack,
                flags,
            } => {
                let m = self
                    .monitors
                    .get_mut(&(datapath, port_key, ip, src_port, Protocol::Tcp))
                    .ok_or("handle service check: Service monitor not found")?;
                if dst_port != m.src_port || ack != m.seq.wrapping_add(1) {
                    return Ok(Vec::new());
                }
                if flags & (TCP_SYN | TCP_ACK) == TCP_SYN | TCP_ACK {
                    m.n_success += 1;
                    m.state = State::Online;
                    m.next_send = now + m.row.interval;
                    // The sequence number is the acknowledged one plus one, as
                    // ovn-controller sends it.
                    let rst = tcp_segment(
                        &m.row,
                        TCP_RST | TCP_ACK,
                        dst_port,
                        ack.wrapping_add(1),
                        seq.wrapping_add(1),
                    );
                    return Ok(vec![packet_out(&m.row, rst, local_output)]);
                }
                if flags & TCP_RST != 0 {
                    m.n_failures += 1;
                    m.state = State::Offline;
                    m.next_send = now + m.row.interval;
                }
                Ok(Vec::new())
            }
            Reply::Unreachable {
                datapath,
                port_key,
                ip,
                udp_src,
                udp_dst,
            } => {
                let m = self
                    .monitors
                    .get_mut(&(datapath, port_key, ip, udp_dst, Protocol::Udp))
                    .ok_or("handle service check: Service monitor not found for ICMP packet")?;
                if udp_src != m.src_port {
                    return Err("handle service check: UDP src port doesn't match in the Original IP datagram of ICMP packet");
                }
                m.n_failures += 1;
                m.state = State::Offline;
                m.next_send = now + m.row.interval;
                Ok(Vec::new())
            }
        }
    }

    /// The statuses known and not yet handed to the main loop (marked handed).
    pub fn statuses(&mut self) -> Vec<StatusWrite> {
        let mut out = Vec::new();
        for m in self.monitors.values_mut() {
            if let Some(s) = m.status.filter(|s| m.reported != Some(*s)) {
                m.reported = Some(s);
                out.push(StatusWrite {
                    uuid: m.row.uuid,
                    status: s,
                });
            }
        }
        out
    }
}

fn packet_out(row: &MonitorRow, data: Vec<u8>, local_output: u8) -> PacketOut {
    let at = super::packet_in::Entry {
        datapath: row.datapath,
        outport: Some(row.port_key),
        local_only: true,
        table: local_output,
        ..Default::default()
    };
    super::packet_in::into_pipeline(at, data)
}

use super::csum::{fold, sum16};

/// Ethernet and IP headers of a probe carrying `l4_len` transport bytes, and the
/// pseudo-header sum for the transport checksum.
fn headers(row: &MonitorRow, proto: u8, l4_len: usize) -> (Vec<u8>, u32) {
    let mut out = Vec::with_capacity(14 + 40 + l4_len);
    out.extend_from_slice(&row.dst_mac);
    out.extend_from_slice(&row.src_mac);
    let len = l4_len as u32;
    match (row.src_ip, row.ip) {
        (IpAddr::V4(src), IpAddr::V4(dst)) => {
            out.extend_from_slice(&packet::ETH_TYPE_IPV4.to_be_bytes());
            let mut ip = [0u8; 20];
            ip[0] = 0x45;
            // TOS 0: `pinctrl_compose_ipv4` sets CS6, then `packet_set_ipv4` clears it.
            ip[2..4].copy_from_slice(&((20 + l4_len) as u16).to_be_bytes());
            // Identification 0, don't fragment.
            ip[6] = 0x40;
            ip[8] = PROBE_TTL;
            ip[9] = proto;
            ip[12..16].copy_from_slice(&src.octets());
            ip[16..20].copy_from_slice(&dst.octets());
            let c = fold(sum16(&ip, 0));
            ip[10..12].copy_from_slice(&c.to_be_bytes());
            out.extend_from_slice(&ip);
            let pseudo = sum16(&src.octets(), 0) + sum16(&dst.octets(), 0) + u32::from(proto) + len;
            (out, pseudo)
        }
        (src, dst) => {
            let v6 = |a: IpAddr| match a {
                IpAddr::V6(a) => a,
                IpAddr::V4(a) => a.to_ipv6_mapped(),
            };
            let (src, dst): (Ipv6Addr, Ipv6Addr) = (v6(src), v6(dst));
            out.extend_from_slice(&packet::ETH_TYPE_IPV6.to_be_bytes());
            out.extend_from_slice(&[0x60, 0, 0, 0]);
            out.extend_from_slice(&(l4_len as u16).to_be_bytes());
            out.push(proto);
            out.push(PROBE_TTL);
            out.extend_from_slice(&src.octets());
            out.extend_from_slice(&dst.octets());
            let pseudo = sum16(&src.octets(), 0)
                + sum16(&dst.octets(), 0)
                + u32::from(proto)
                + (len >> 16)
                + (len & 0xffff);
            (out, pseudo)
        }
    }
}

fn tcp_segment(row: &MonitorRow, flags: u16, src_port: u16, seq: u32, ack: u32) -> Vec<u8> {
    let (mut out, pseudo) = headers(row, packet::PROTO_TCP, 20);
    let mut t = [0u8; 20];
    t[0..2].copy_from_slice(&src_port.to_be_bytes());
    t[2..4].copy_from_slice(&row.service_port.to_be_bytes());
    t[4..8].copy_from_slice(&seq.to_be_bytes());
    t[8..12].copy_from_slice(&ack.to_be_bytes());
    t[12..14].copy_from_slice(&((5u16 << 12) | flags).to_be_bytes());
    t[14..16].copy_from_slice(&TCP_WINDOW.to_be_bytes());
    let c = fold(sum16(&t, pseudo));
    t[16..18].copy_from_slice(&c.to_be_bytes());
    out.extend_from_slice(&t);
    out
}

/// The UDP probe: 8 zero bytes; IPv4 without a checksum, IPv6 with one.
fn udp_datagram(row: &MonitorRow, src_port: u16) -> Vec<u8> {
    packet::udp_datagram(
        (row.src_mac, row.dst_mac),
        (row.src_ip, row.ip),
        PROBE_TTL,
        (src_port, row.service_port),
        &[0; 8],
    )
}

/// Writes `statuses` to the rows that do not have them.
pub fn write(sb: &Replica, statuses: &[StatusWrite], txn: &mut Transaction) {
    let Some(t) = sb.table::<ServiceMonitor>() else {
        return;
    };
    let mut last: BTreeMap<Uuid, Status> = BTreeMap::new();
    for s in statuses {
        last.insert(s.uuid, s.status);
    }
    for (uuid, status) in last {
        let Some(row) = t.get(&uuid) else { continue };
        if row.status.as_deref() == Some(status.text()) {
            continue;
        }
        txn.update(
            "Service_Monitor",
            &by_uuid(uuid),
            Columns::new().set("status", Atom::from(status.text())),
        );
    }
}

#[cfg(test)]
#[path = "svc_monitor_tests.rs"]
mod tests;
