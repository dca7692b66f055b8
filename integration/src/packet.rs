//! Test packets: builders for what VMs send and a one-line summary of what they receive.

use std::fmt::Write as _;
use std::net::Ipv4Addr;

use etherparse::{NetSlice, PacketBuilder, SlicedPacket, TransportSlice};

/// A MAC address in its usual text form, as OVN's `addresses` columns hold it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mac(pub [u8; 6]);

impl std::fmt::Display for Mac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

impl std::str::FromStr for Mac {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut out = [0u8; 6];
        let mut parts = s.split(':');
        for byte in &mut out {
            let part = parts.next().ok_or_else(|| format!("short MAC {s:?}"))?;
            *byte = u8::from_str_radix(part, 16).map_err(|e| format!("bad MAC {s:?}: {e}"))?;
        }
        if parts.next().is_some() {
            return Err(format!("long MAC {s:?}"));
        }
        Ok(Self(out))
    }
}

/// An ICMPv4 echo request of `payload_len` bytes of payload.
pub fn icmp4_echo(
    src_mac: Mac,
    dst_mac: Mac,
    src_ip: Ipv4Addr,
    dst_ip: Ipv4Addr,
    ttl: u8,
    payload_len: usize,
) -> Vec<u8> {
    let payload: Vec<u8> = (0..payload_len).map(|i| i as u8).collect();
    let builder = PacketBuilder::ethernet2(src_mac.0, dst_mac.0)
        .ipv4(src_ip.octets(), dst_ip.octets(), ttl)
        .icmpv4_echo_request(0x1234, 1);
    let mut out = Vec::with_capacity(builder.size(payload.len()));
    // Writing into a Vec cannot fail for I/O reasons, and the builder's sizes are valid.
    builder
        .write(&mut out, &payload)
        .expect("ICMP echo request fits in memory");
    out
}

/// An ICMPv4 echo reply of `payload_len` bytes of payload (the answer to [`icmp4_echo`]).
pub fn icmp4_echo_reply(
    src_mac: Mac,
    dst_mac: Mac,
    src_ip: Ipv4Addr,
    dst_ip: Ipv4Addr,
    ttl: u8,
    payload_len: usize,
) -> Vec<u8> {
    let payload: Vec<u8> = (0..payload_len).map(|i| i as u8).collect();
    let builder = PacketBuilder::ethernet2(src_mac.0, dst_mac.0)
        .ipv4(src_ip.octets(), dst_ip.octets(), ttl)
        .icmpv4_echo_reply(0x1234, 1);
    let mut out = Vec::with_capacity(builder.size(payload.len()));
    builder
        .write(&mut out, &payload)
        .expect("ICMP echo reply fits in memory");
    out
}

/// A UDP datagram carrying `payload`.
#[allow(clippy::too_many_arguments)]
pub fn udp4(
    src_mac: Mac,
    dst_mac: Mac,
    src_ip: Ipv4Addr,
    dst_ip: Ipv4Addr,
    ttl: u8,
    src_port: u16,
    dst_port: u16,
    payload: &[u8],
) -> Vec<u8> {
    let builder = PacketBuilder::ethernet2(src_mac.0, dst_mac.0)
        .ipv4(src_ip.octets(), dst_ip.octets(), ttl)
        .udp(src_port, dst_port);
    let mut out = Vec::with_capacity(builder.size(payload.len()));
    builder
        .write(&mut out, payload)
        .expect("UDP datagram fits in memory");
    out
}

/// TCP flags of a test segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpFlags {
    Syn,
    /// SYN+ACK acknowledging the given sequence number.
    SynAck(u32),
}

/// A TCP segment without payload (a handshake step).
#[allow(clippy::too_many_arguments)]
pub fn tcp4(
    src_mac: Mac,
    dst_mac: Mac,
    src_ip: Ipv4Addr,
    dst_ip: Ipv4Addr,
    ttl: u8,
    src_port: u16,
    dst_port: u16,
    seq: u32,
    flags: TcpFlags,
) -> Vec<u8> {
    let builder = PacketBuilder::ethernet2(src_mac.0, dst_mac.0)
        .ipv4(src_ip.octets(), dst_ip.octets(), ttl)
        .tcp(src_port, dst_port, seq, 64240)
        .syn();
    let builder = match flags {
        TcpFlags::Syn => builder,
        TcpFlags::SynAck(ack) => builder.ack(ack),
    };
    let mut out = Vec::with_capacity(builder.size(0));
    builder
        .write(&mut out, &[])
        .expect("TCP segment fits in memory");
    out
}

pub const BROADCAST: Mac = Mac([0xff; 6]);
pub const ARP_REQUEST: u16 = 1;
pub const ARP_REPLY: u16 = 2;

/// An Ethernet/IPv4 ARP packet (`op` 1 request, 2 reply).
pub fn arp(
    eth_src: Mac,
    eth_dst: Mac,
    op: u16,
    (sha, spa): (Mac, Ipv4Addr),
    (tha, tpa): (Mac, Ipv4Addr),
) -> Vec<u8> {
    let mut out = Vec::with_capacity(42);
    out.extend(eth_dst.0);
    out.extend(eth_src.0);
    out.extend(0x0806u16.to_be_bytes());
    out.extend(1u16.to_be_bytes()); // Ethernet
    out.extend(0x0800u16.to_be_bytes()); // IPv4
    out.extend([6, 4]);
    out.extend(op.to_be_bytes());
    out.extend(sha.0);
    out.extend(spa.octets());
    out.extend(tha.0);
    out.extend(tpa.octets());
    out
}

/// A broadcast "who has `tpa`, tell `spa`".
pub fn arp_request(sha: Mac, spa: Ipv4Addr, tpa: Ipv4Addr) -> Vec<u8> {
    arp(sha, BROADCAST, ARP_REQUEST, (sha, spa), (Mac([0; 6]), tpa))
}

/// The unicast answer "`spa` is at `sha`" to `tha`/`tpa`.
pub fn arp_reply(sha: Mac, spa: Ipv4Addr, tha: Mac, tpa: Ipv4Addr) -> Vec<u8> {
    arp(sha, tha, ARP_REPLY, (sha, spa), (tha, tpa))
}

/// The fields of an ARP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArpSummary {
    pub eth_src: Mac,
    pub eth_dst: Mac,
    pub op: u16,
    pub sha: Mac,
    pub spa: Ipv4Addr,
    pub tha: Mac,
    pub tpa: Ipv4Addr,
}

impl ArpSummary {
    /// A gratuitous ARP (announcement): sender and target address are the same.
    pub fn is_gratuitous(&self) -> bool {
        self.spa == self.tpa
    }
}

/// The ARP fields of an untagged Ethernet/IPv4 ARP frame.
pub fn arp_summary(frame: &[u8]) -> Option<ArpSummary> {
    if frame.len() < 42 || frame[12..14] != [0x08, 0x06] || frame[14..20] != [0, 1, 8, 0, 6, 4] {
        return None;
    }
    let mac = |at: usize| {
        let mut m = [0u8; 6];
        m.copy_from_slice(&frame[at..at + 6]);
        Mac(m)
    };
    let ip = |at: usize| Ipv4Addr::new(frame[at], frame[at + 1], frame[at + 2], frame[at + 3]);
    Some(ArpSummary {
        eth_dst: mac(0),
        eth_src: mac(6),
        op: u16::from_be_bytes([frame[20], frame[21]]),
        sha: mac(22),
        spa: ip(28),
        tha: mac(32),
        tpa: ip(38),
    })
}

/// What rides on IPv4, in the fields the tests look at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum L4 {
    Icmp {
        icmp_type: u8,
        code: u8,
    },
    Udp {
        src: u16,
        dst: u16,
        payload: Vec<u8>,
    },
    Tcp {
        src: u16,
        dst: u16,
        syn: bool,
        ack: bool,
    },
    Other(u8),
}

/// Source MAC, destination MAC, IPv4 source, destination and TTL of an Ethernet/IPv4 frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv4Summary {
    pub src_mac: Mac,
    pub dst_mac: Mac,
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub ttl: u8,
    pub icmp_echo_request: bool,
    pub l4: L4,
}

impl Ipv4Summary {
    pub fn udp_dst(&self) -> Option<u16> {
        match &self.l4 {
            L4::Udp { dst, .. } => Some(*dst),
            _ => None,
        }
    }

    pub fn udp_payload(&self) -> Option<&[u8]> {
        match &self.l4 {
            L4::Udp { payload, .. } => Some(payload),
            _ => None,
        }
    }

    pub fn is_icmp_echo_reply(&self) -> bool {
        matches!(self.l4, L4::Icmp { icmp_type: 0, .. })
    }
}

pub fn ipv4_summary(frame: &[u8]) -> Option<Ipv4Summary> {
    let sliced = SlicedPacket::from_ethernet(frame).ok()?;
    let etherparse::LinkSlice::Ethernet2(eth) = sliced.link? else {
        return None;
    };
    let Some(NetSlice::Ipv4(ip)) = sliced.net else {
        return None;
    };
    let header = ip.header();
    let l4 = match &sliced.transport {
        Some(TransportSlice::Icmpv4(icmp)) => L4::Icmp {
            icmp_type: icmp.type_u8(),
            code: icmp.code_u8(),
        },
        Some(TransportSlice::Udp(udp)) => L4::Udp {
            src: udp.source_port(),
            dst: udp.destination_port(),
            payload: udp.payload().to_vec(),
        },
        Some(TransportSlice::Tcp(tcp)) => L4::Tcp {
            src: tcp.source_port(),
            dst: tcp.destination_port(),
            syn: tcp.syn(),
            ack: tcp.ack(),
        },
        _ => L4::Other(header.protocol().0),
    };
    Some(Ipv4Summary {
        src_mac: Mac(eth.source()),
        dst_mac: Mac(eth.destination()),
        src: header.source_addr(),
        dst: header.destination_addr(),
        ttl: header.ttl(),
        icmp_echo_request: matches!(l4, L4::Icmp { icmp_type: 8, .. }),
        l4,
    })
}

/// One line describing a frame, for logs and the lab's output.
pub fn describe(frame: &[u8]) -> String {
    if let Some(a) = arp_summary(frame) {
        let what = match a.op {
            ARP_REQUEST => format!("who has {} tell {} ({})", a.tpa, a.spa, a.sha),
            ARP_REPLY => format!("{} is at {} (to {} {})", a.spa, a.sha, a.tpa, a.tha),
            op => format!("op {op} {} {} -> {} {}", a.sha, a.spa, a.tha, a.tpa),
        };
        return format!("{} > {}, ARP {what}", a.eth_src, a.eth_dst);
    }
    match ipv4_summary(frame) {
        Some(s) => {
            let mut line = format!(
                "{} > {}, IPv4 {} > {} ttl {}",
                s.src_mac, s.dst_mac, s.src, s.dst, s.ttl
            );
            match &s.l4 {
                L4::Icmp { icmp_type: 8, .. } => line.push_str(", ICMP echo request"),
                L4::Icmp { icmp_type: 0, .. } => line.push_str(", ICMP echo reply"),
                L4::Icmp { icmp_type, code } => {
                    let _ = write!(line, ", ICMP type {icmp_type} code {code}");
                }
                L4::Udp { src, dst, .. } => {
                    let _ = write!(line, ", UDP {src} > {dst}");
                }
                L4::Tcp { src, dst, syn, ack } => {
                    let _ = write!(
                        line,
                        ", TCP {src} > {dst}{}{}",
                        if *syn { " SYN" } else { "" },
                        if *ack { " ACK" } else { "" }
                    );
                }
                L4::Other(p) => {
                    let _ = write!(line, ", protocol {p}");
                }
            }
            let _ = write!(line, ", {} bytes", frame.len());
            line
        }
        None => format!("{} bytes: {}", frame.len(), hex::encode(frame)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_request_round_trips_through_the_summary() {
        let src: Mac = "50:54:00:00:00:01".parse().unwrap();
        let dst: Mac = "50:54:00:00:00:02".parse().unwrap();
        let frame = icmp4_echo(
            src,
            dst,
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(10, 0, 0, 2),
            64,
            56,
        );
        assert_eq!(frame.len(), 14 + 20 + 8 + 56);
        let s = ipv4_summary(&frame).unwrap();
        assert_eq!((s.src_mac, s.dst_mac, s.ttl), (src, dst, 64));
        assert_eq!(
            (s.src, s.dst),
            (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2))
        );
        assert!(s.icmp_echo_request);
        assert_eq!(src.to_string(), "50:54:00:00:00:01");
        assert!("50:54:00:00:00".parse::<Mac>().is_err());
    }

    #[test]
    fn arp_and_udp_round_trip_through_their_summaries() {
        let a: Mac = "50:54:00:00:00:01".parse().unwrap();
        let b: Mac = "50:54:00:00:00:02".parse().unwrap();
        let (ia, ib) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let req = arp_request(a, ia, ib);
        assert_eq!(req.len(), 42);
        let s = arp_summary(&req).unwrap();
        assert_eq!(
            (s.eth_dst, s.op, s.spa, s.tpa),
            (BROADCAST, ARP_REQUEST, ia, ib)
        );
        assert!(!s.is_gratuitous());
        let rep = arp_reply(b, ib, a, ia);
        let s = arp_summary(&rep).unwrap();
        assert_eq!((s.eth_src, s.eth_dst, s.op, s.sha), (b, a, ARP_REPLY, b));
        assert!(describe(&rep).contains("10.0.0.2 is at 50:54:00:00:00:02"));
        let u = udp4(a, b, ia, ib, 64, 1000, 2000, b"seq");
        let s = ipv4_summary(&u).unwrap();
        assert_eq!(
            (s.udp_dst(), s.udp_payload()),
            (Some(2000), Some(&b"seq"[..]))
        );
        assert!(arp_summary(&u).is_none());
        let t = tcp4(a, b, ia, ib, 64, 1000, 80, 7, TcpFlags::SynAck(8));
        assert!(describe(&t).contains("TCP 1000 > 80 SYN ACK"));
        let r = icmp4_echo_reply(b, a, ib, ia, 255, 8);
        assert!(ipv4_summary(&r).unwrap().is_icmp_echo_reply());
    }
}
