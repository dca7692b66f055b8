//! Reading `igmp;` packets: IGMP (v1-v3) in IPv4 and MLD (v1, v2) in IPv6, into what
//! they mean to snooping.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::csum::{fold, sum16};
use super::packet::{Headers, L3};

/// `OVN_MCAST_MROUTER_FLOOD_TUNNEL_KEY`: ports toward multicast routers.
pub const MROUTER_FLOOD_KEY: u32 = 32770;
/// `OVN_MCAST_FLOOD_L2_TUNNEL_KEY`: the switch's L2 domain, router ports excluded.
pub const FLOOD_L2_KEY: u32 = 32772;

const IGMP_QUERY: u8 = 0x11;
const IGMPV1_REPORT: u8 = 0x12;
const IGMPV2_REPORT: u8 = 0x16;
const IGMP_LEAVE: u8 = 0x17;
const IGMPV3_REPORT: u8 = 0x22;
const MLD_QUERY: u8 = 130;
const MLD_REPORT: u8 = 131;
const MLD_DONE: u8 = 132;
const MLD2_REPORT: u8 = 143;
/// IGMPv3 / MLDv2 record types `MODE_IS_INCLUDE` .. `BLOCK_OLD_SOURCES`.
const MODE_IS_INCLUDE: u8 = 1;
const CHANGE_TO_INCLUDE: u8 = 3;
const BLOCK_OLD_SOURCES: u8 = 6;

const PROTO_IGMP: u8 = 2;
const PROTO_ICMPV6: u8 = 58;

/// One membership change a report carries (a group address, IPv4 ones as IPv4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record {
    Join(IpAddr),
    Leave(IpAddr),
}

/// What an IGMP or MLD message means to snooping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// A general or group query: the port leads to a multicast router (an MLD query from
    /// `::` teaches nothing, yet it is flooded).
    Query { learn_mrouter: bool },
    /// Joins and leaves, in order (IGMPv1/v2/v3 reports and leaves, MLDv1/v2 reports
    /// and dones).
    Report(Vec<Record>),
    /// A type snooping ignores.
    Other,
}

impl Message {
    /// Where ovn-controller forwards the packet after learning from it.
    pub fn forward_to(&self) -> Option<u32> {
        match self {
            Message::Query { .. } => Some(FLOOD_L2_KEY),
            Message::Report(_) => Some(MROUTER_FLOOD_KEY),
            Message::Other => None,
        }
    }
}

/// An `igmp;` packet-in: the logical datapath and inport, what the packet says, and the
/// packet itself (forwarded on as it came).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    pub datapath: u32,
    pub port: u32,
    pub message: Message,
    pub packet: Vec<u8>,
}

/// Why an `igmp;` packet was not learnt from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IgmpError {
    #[error("IGMP action on non-IP packet")]
    NotIp,
    #[error("multicast snooping received bad IGMP checksum")]
    BadIgmp,
    #[error("multicast snooping received bad MLD checksum")]
    BadMld,
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

fn v6_at(b: &[u8], at: usize) -> Option<Ipv6Addr> {
    let raw: [u8; 16] = b.get(at..at + 16)?.try_into().ok()?;
    Some(Ipv6Addr::from(raw))
}

/// The transport bytes of an IPv6 packet after its extension headers (hop-by-hop,
/// routing, destination options, AH, first fragment), as OVS's flow extraction walks
/// them; `None` when the next header is not ICMPv6.
fn icmpv6_payload(ip6: &[u8]) -> Option<&[u8]> {
    let plen = usize::from(be16(ip6, 4)?);
    let end = (40 + plen).min(ip6.len());
    let mut next = *ip6.get(6)?;
    let mut at = 40;
    loop {
        match next {
            PROTO_ICMPV6 => return ip6.get(at..end.max(at)),
            // Hop-by-hop, routing, destination options.
            0 | 43 | 60 => {
                let h = ip6.get(at..at + 8)?;
                next = h[0];
                at += (usize::from(h[1]) + 1) * 8;
            }
            // AH.
            51 => {
                let h = ip6.get(at..at + 8)?;
                next = h[0];
                at += (usize::from(h[1]) + 2) * 4;
            }
            // Fragment: only the first one carries the message.
            44 => {
                let h = ip6.get(at..at + 8)?;
                if u16::from_be_bytes([h[2], h[3]]) & 0xfff8 != 0 {
                    return None;
                }
                next = h[0];
                at += 8;
            }
            _ => return None,
        }
    }
}

/// Reads an `igmp;` packet: an IGMP message in IPv4 or an MLD message in IPv6, its
/// checksum checked (a bad one teaches nothing and is not forwarded).
pub fn parse(frame: &[u8], h: &Headers) -> Result<Message, IgmpError> {
    let l3 = frame.get(h.l3_offset..).unwrap_or_default();
    match h.l3 {
        L3::Ipv4 {
            proto, total_len, ..
        } => {
            let l4_at = h
                .l4_offset
                .unwrap_or(frame.len())
                .saturating_sub(h.l3_offset);
            let end = usize::from(total_len).min(l3.len());
            if proto != PROTO_IGMP {
                return Ok(Message::Other);
            }
            let igmp = l3.get(l4_at..end.max(l4_at)).unwrap_or_default();
            if igmp.len() < 8 || fold(sum16(igmp, 0)) != 0 {
                return Err(IgmpError::BadIgmp);
            }
            Ok(parse_igmp(igmp))
        }
        L3::Ipv6 { src, dst, .. } => {
            let Some(icmp) = icmpv6_payload(l3) else {
                return Ok(Message::Other);
            };
            let len = icmp.len() as u32;
            let pseudo = sum16(&src.octets(), 0)
                + sum16(&dst.octets(), 0)
                + (len >> 16)
                + (len & 0xffff)
                + u32::from(PROTO_ICMPV6);
            if icmp.len() < 8 || fold(sum16(icmp, pseudo)) != 0 {
                return Err(IgmpError::BadMld);
            }
            Ok(parse_mld(icmp, src))
        }
        L3::Other => Err(IgmpError::NotIp),
    }
}

/// An IGMP message whose checksum is right (shorter than its 8-byte header: `Other`).
pub fn parse_igmp(igmp: &[u8]) -> Message {
    let Some(&[kind, _, _, _, a, b, c, d]) = igmp.get(..8) else {
        return Message::Other;
    };
    let group = Ipv4Addr::new(a, b, c, d);
    match kind {
        IGMP_QUERY => Message::Query {
            learn_mrouter: true,
        },
        IGMPV1_REPORT | IGMPV2_REPORT => Message::Report(vec![Record::Join(group.into())]),
        IGMP_LEAVE => Message::Report(vec![Record::Leave(group.into())]),
        IGMPV3_REPORT => {
            let n = be16(igmp, 6).unwrap_or(0);
            let mut out = Vec::new();
            let mut at = 8;
            for _ in 0..n {
                let Some(r) = igmp.get(at..at + 8) else { break };
                // OVS re-reads an unknown record instead of skipping it: nothing after
                // it counts.
                if !(MODE_IS_INCLUDE..=BLOCK_OLD_SOURCES).contains(&r[0]) {
                    break;
                }
                let nsrcs = u16::from_be_bytes([r[2], r[3]]);
                let group = IpAddr::V4(Ipv4Addr::new(r[4], r[5], r[6], r[7]));
                out.push(record(r[0], nsrcs, group));
                at += 8 + usize::from(nsrcs) * 4 + usize::from(r[1]);
            }
            Message::Report(out)
        }
        _ => Message::Other,
    }
}

fn record(kind: u8, nsrcs: u16, group: IpAddr) -> Record {
    // INCLUDE with no sources is a leave.
    if nsrcs == 0 && (kind == MODE_IS_INCLUDE || kind == CHANGE_TO_INCLUDE) {
        Record::Leave(group)
    } else {
        Record::Join(group)
    }
}

/// An MLD message whose checksum is right (shorter than its 8-byte header: `Other`).
pub fn parse_mld(mld: &[u8], src: Ipv6Addr) -> Message {
    if mld.len() < 8 {
        return Message::Other;
    }
    let addr = v6_at(mld, 8).map(IpAddr::V6);
    match mld[0] {
        MLD_QUERY => Message::Query {
            learn_mrouter: !src.is_unspecified(),
        },
        MLD_REPORT => Message::Report(addr.map(Record::Join).into_iter().collect()),
        MLD_DONE => Message::Report(addr.map(Record::Leave).into_iter().collect()),
        MLD2_REPORT => {
            let n = be16(mld, 6).unwrap_or(0);
            let mut out = Vec::new();
            let mut at = 8;
            for _ in 0..n {
                let (Some(r), Some(group)) = (mld.get(at..at + 4), v6_at(mld, at + 4)) else {
                    break;
                };
                let nsrcs = u16::from_be_bytes([r[2], r[3]]);
                if (MODE_IS_INCLUDE..=BLOCK_OLD_SOURCES).contains(&r[0]) {
                    out.push(record(r[0], nsrcs, IpAddr::V6(group)));
                }
                at += 20 + usize::from(nsrcs) * 16 + usize::from(r[1]);
            }
            Message::Report(out)
        }
        _ => Message::Other,
    }
}

/// The `IGMP_Group` address text of a group (`ipv6_string_mapped`: IPv4 dotted).
pub fn address_text(a: Ipv6Addr) -> String {
    match a.to_ipv4_mapped() {
        Some(v4) => v4.to_string(),
        None => a.to_string(),
    }
}

pub(super) fn mapped(a: IpAddr) -> Ipv6Addr {
    match a {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    }
}
