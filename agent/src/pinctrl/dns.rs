//! `R = dns_lookup();` (opcode 6, paused): answers A, AAAA, ANY and PTR queries from the
//! Southbound `DNS` rows of the packet's datapath, as ovn-controller 23.03.1's
//! `pinctrl_handle_dns_lookup` does, and resumes with R set; without an answer the
//! original packet is resumed with R = 0. The logical flow after it swaps the addresses
//! and ports and sends the reply back.
//!
//! The packet is built by hand, not with hickory-proto: the reply must be ovn-controller's
//! byte for byte, and that is the request's header and question copied verbatim (only QR,
//! ANCOUNT and ARCOUNT changed, everything after the header kept, trailing bytes included)
//! followed by answers that repeat the question's name uncompressed, TTL 3600. A DNS
//! library re-encodes the message (name compression, its own header flags) and
//! normalizes names (ovn-controller looks up the raw label bytes joined by dots), so
//! neither its encoder nor its decoder gives the same bytes or the same lookups. Measured
//! with hickory-proto 0.26.3 on the unit test's A query: parsing it, setting QR and adding
//! the answer gives 45 bytes, the answer's name a pointer (`c00c`); ovn-controller's reply
//! is 56 bytes, the name written out again.

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;
use std::net::{Ipv4Addr, Ipv6Addr};

use openflow::wire::PacketInProp;
use sbclient::ovn_sb::Dns;
use sbclient::{Replica, Uuid};

use super::effect::Effect;
use super::packet::{self, L3};
use super::packet_in::{PacketIn, Skip};
use super::result_bit::ResultBit;
pub use crate::lflow::dialect::DnsForms;

/// The TTL of every answer (`DNS_DEFAULT_RR_TTL`).
pub const ANSWER_TTL: u32 = 3600;
const TYPE_A: u16 = 1;
const TYPE_PTR: u16 = 12;
const TYPE_AAAA: u16 = 28;
const TYPE_ANY: u16 = 255;
const CLASS_IN: u16 = 1;
const UDP_HEADER: usize = 8;
const DNS_HEADER: usize = 12;
/// Where the question starts, from the UDP header.
const QUESTION: usize = UDP_HEADER + DNS_HEADER;

/// One Southbound `DNS` row as the lookup needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DnsRow {
    /// `external_ids:dns_id`, else the row's uuid (`has_dns_id` false).
    pub dns_id: String,
    pub has_dns_id: bool,
    /// Tunnel keys of the row's datapaths.
    pub datapaths: Vec<u64>,
    /// Name (lowercase, as northd writes it) -> addresses or, for PTR, a name.
    pub records: BTreeMap<String, String>,
}

/// The DNS rows, in `dns_id` order (ovn-controller's cache is keyed by `dns_id`; rows
/// without one are ignored, as it ignores them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DnsRecords {
    pub rows: Vec<DnsRow>,
    /// The release's way of answering.
    pub forms: DnsForms,
}

impl DnsRecords {
    pub fn from_replica<S: BuildHasher>(sb: &Replica, dp_keys: &HashMap<Uuid, u32, S>) -> Self {
        let mut rows: Vec<DnsRow> = sb
            .table::<Dns>()
            .map(|t| {
                t.iter()
                    .map(|(uuid, d)| {
                        let dns_id = d.external_ids.get("dns_id");
                        DnsRow {
                            dns_id: dns_id.map_or_else(|| uuid.to_string(), Clone::clone),
                            has_dns_id: dns_id.is_some(),
                            datapaths: d
                                .datapaths
                                .iter()
                                .filter_map(|u| dp_keys.get(u).map(|k| u64::from(*k)))
                                .collect(),
                            records: d
                                .records
                                .iter()
                                .map(|(k, v)| (k.clone(), v.clone()))
                                .collect(),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        rows.sort_by(|a, b| a.dns_id.cmp(&b.dns_id));
        Self {
            rows,
            forms: DnsForms::default(),
        }
    }

    /// The record for `name` (raw bytes, compared after ASCII lowercasing) in a row of
    /// datapath `datapath`.
    pub fn find(&self, datapath: u64, name: &[u8]) -> Option<&str> {
        // The name is a C string in ovn-controller: it ends at the first NUL.
        let name = name.split(|b| *b == 0).next().unwrap_or_default();
        let key = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
        self.rows
            .iter()
            .filter(|r| r.has_dns_id || self.forms.rows_without_dns_id)
            .filter(|r| r.datapaths.contains(&datapath))
            .find_map(|r| r.records.get(&key).map(String::as_str))
    }
}

/// Handles a `dns_lookup` packet-in: always resumes (bad input as well, as ovn-controller
/// does), with the reply and R = 1 when there is an answer.
pub fn lookup(p: &PacketIn<'_>, records: &DnsRecords) -> Result<Vec<Effect>, Skip> {
    let mut resume = p.raw.to_resume().ok_or(Skip::WrongPacket(
        "dns_lookup action without a paused pipeline",
    ))?;
    let bit = match ResultBit::parse(p.payload) {
        Ok((bit, _)) => bit,
        Err(e) => return Ok(vec![Effect::Resume(resume), Effect::Rejected(e.into())]),
    };
    let datapath = p.regs.metadata.unwrap_or(0);
    let (reply, rejected) = match reply(p.packet, datapath, records) {
        Ok(r) => (r, None),
        Err(e) => (None, Some(e)),
    };
    let answered = reply.is_some();
    if let Some(reply) = reply {
        for prop in &mut resume.props {
            if let PacketInProp::Packet(b) = prop {
                b.clone_from(&reply);
            }
        }
    }
    bit.write(&mut resume, answered);
    let mut out = vec![Effect::Resume(resume)];
    out.extend(rejected.map(Effect::Rejected));
    Ok(out)
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// The DNS reply to the query in `frame`, or `None` when ovn-controller gives none (not a
/// query, no question, additional records, an unsupported type, an unknown name);
/// `Err` for a packet too short to be a DNS query.
pub fn reply(frame: &[u8], datapath: u64, records: &DnsRecords) -> Result<Option<Vec<u8>>, Skip> {
    let h = packet::parse(frame)?;
    let (Some(packet::PROTO_UDP), Some(l4_at)) = (h.ip_proto(), h.l4_offset) else {
        return Err(Skip::WrongPacket("dns_lookup action on non-UDP packet"));
    };
    // The transport bytes as the IP header counts them (Ethernet padding left out).
    let available = frame.len().saturating_sub(l4_at);
    let l4_len = match h.l3 {
        L3::Ipv4 { total_len, .. } => (h.l3_offset + usize::from(total_len)).saturating_sub(l4_at),
        L3::Ipv6 { payload_len, .. } => usize::from(payload_len),
        L3::Other => 0,
    }
    .min(available);
    if l4_len < QUESTION {
        return Err(Skip::WrongPacket("truncated dns packet"));
    }
    let udp = &frame[l4_at..];
    let dns = &udp[UDP_HEADER..];
    let (is_response, questions, additional) = (dns[2] & 0x80 != 0, be16(dns, 4), be16(dns, 10));
    let forms = records.forms;
    if is_response || questions == 0 || (additional != 0 && !forms.answer_with_additional) {
        return Ok(None);
    }
    let end = usize::from(be16(udp, 4)).min(l4_len);
    let Some((name, name_len, qtype)) = question(udp, end) else {
        return Ok(None);
    };
    if !matches!(qtype, TYPE_A | TYPE_AAAA | TYPE_ANY | TYPE_PTR) {
        return Ok(None);
    }
    let Some(found) = records.find(datapath, &name) else {
        return Ok(None);
    };
    let qname = &udp[QUESTION..QUESTION + name_len];
    let (answers, count) = answers(qname, qtype, found, forms.shuffle_addresses);
    if count == 0 {
        return Ok(None);
    }
    // Everything after the header stays (the question, and whatever followed it), or,
    // where the release answers queries with additional records, the question alone.
    let kept_l4 = if forms.answer_with_additional {
        QUESTION + name_len + 4
    } else {
        usize::from(be16(udp, 4))
    };
    let kept = if forms.answer_with_additional {
        &frame[..l4_at + kept_l4]
    } else {
        frame
    };
    let mut out = Vec::with_capacity(kept.len() + answers.len());
    out.extend_from_slice(kept);
    out.extend_from_slice(&answers);
    let d = l4_at + UDP_HEADER;
    out[d + 2] |= 0x80;
    out[d + 6..d + 8].copy_from_slice(&count.to_be_bytes());
    out[d + 10..d + 12].fill(0);
    // Lengths are 16 bits on the wire (ovn-controller truncates them the same way).
    let new_l4 = (kept_l4 + answers.len()) as u16;
    out[l4_at + 4..l4_at + 6].copy_from_slice(&new_l4.to_be_bytes());
    out[l4_at + 6..l4_at + 8].fill(0);
    let l3 = h.l3_offset;
    match h.l3 {
        L3::Ipv4 { .. } => {
            let total = ((l4_at - l3) as u16).wrapping_add(new_l4);
            out[l3 + 2..l3 + 4].copy_from_slice(&total.to_be_bytes());
            out[l3 + 10..l3 + 12].fill(0);
            // Over the fixed 20-byte header only, as ovn-controller computes it.
            let c = checksum(&[&out[l3..l3 + 20]]);
            out[l3 + 10..l3 + 12].copy_from_slice(&c.to_be_bytes());
        }
        L3::Ipv6 { src, dst, .. } => {
            out[l3 + 4..l3 + 6].copy_from_slice(&new_l4.to_be_bytes());
            let pseudo = pseudo_header6(src, dst, out[l3 + 6], new_l4);
            let c = checksum(&[&pseudo, &out[l4_at..]]);
            let c = if c == 0 { 0xffff } else { c };
            out[l4_at + 6..l4_at + 8].copy_from_slice(&c.to_be_bytes());
        }
        L3::Other => {}
    }
    Ok(Some(out))
}

/// Walks the first question's name from [`QUESTION`] in `udp` (to `end`): the labels
/// joined by dots, the name's length on the wire (root label included) and the query type.
fn question(udp: &[u8], end: usize) -> Option<(Vec<u8>, usize, u16)> {
    let mut at = QUESTION;
    let mut name = Vec::new();
    while at < end && udp[at] != 0 {
        let len = usize::from(udp[at]);
        at += 1;
        if at + len > end {
            return None;
        }
        name.extend_from_slice(&udp[at..at + len]);
        name.push(b'.');
        at += len;
    }
    at += 1;
    if name.last() == Some(&b'.') {
        name.pop();
    }
    if at + 4 > end {
        return None;
    }
    Some((name, at - QUESTION, be16(udp, at)))
}

/// The answer records for a `qtype` query whose record is `found`, and how many; the
/// addresses of each family in a random order when `shuffle`.
fn answers(qname: &[u8], qtype: u16, found: &str, shuffle: bool) -> (Vec<u8>, u16) {
    let mut out = Vec::new();
    let mut count = 0u16;
    let mut record = |rtype: u16, rdata: &[u8]| {
        out.extend_from_slice(qname);
        out.extend_from_slice(&rtype.to_be_bytes());
        out.extend_from_slice(&CLASS_IN.to_be_bytes());
        out.extend_from_slice(&ANSWER_TTL.to_be_bytes());
        out.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
        out.extend_from_slice(rdata);
        count = count.wrapping_add(1);
    };
    if qtype == TYPE_PTR {
        if let Some(rdata) = ptr_name(found) {
            record(TYPE_PTR, &rdata);
        }
    } else {
        let (mut v4, mut v6) = scan_addresses(found);
        if shuffle {
            use rand::seq::SliceRandom;
            let mut rng = rand::thread_rng();
            v4.shuffle(&mut rng);
            v6.shuffle(&mut rng);
        }
        if matches!(qtype, TYPE_A | TYPE_ANY) {
            for a in &v4 {
                record(TYPE_A, &a.octets());
            }
        }
        if matches!(qtype, TYPE_AAAA | TYPE_ANY) {
            for a in &v6 {
                record(TYPE_AAAA, &a.octets());
            }
        }
    }
    (out, count)
}

/// A PTR record's name in labels, built as ovn-controller builds it: the text's bytes
/// shifted by one, each dot replaced by the length of the label before it, one more zero
/// byte at the end (its label index is 8 bits wide, which only matters past 255 bytes).
pub fn ptr_name(text: &str) -> Option<Vec<u8>> {
    let bytes = text
        .as_bytes()
        .split(|b| *b == 0)
        .next()
        .unwrap_or_default();
    let len = bytes.len() + 2;
    if len > usize::from(u16::MAX) {
        return None;
    }
    let mut out = vec![0u8; len];
    let (mut label_at, mut label_len) = (0u8, 0u16);
    for (i, c) in bytes.iter().enumerate() {
        if *c == b'.' {
            out[usize::from(label_at)] = label_len as u8;
            label_at = label_at.wrapping_add((label_len + 1) as u8);
            label_len = 0;
        } else {
            out[i + 1] = *c;
            label_len += 1;
        }
    }
    if label_len != 0 {
        out[usize::from(label_at)] = label_len as u8;
    }
    Some(out)
}

/// The IPv4 and IPv6 addresses of a record, read as ovn-controller's
/// `extract_ip_addresses` reads them (see [`scan_networks`]).
pub fn scan_addresses(s: &str) -> (Vec<Ipv4Addr>, Vec<Ipv6Addr>) {
    let (v4, v6) = scan_networks(s);
    (
        v4.into_iter().map(|(a, _)| a).collect(),
        v6.into_iter().map(|(a, _)| a).collect(),
    )
}

/// IPv4 and IPv6 (address, prefix length) lists.
pub type Networks = (Vec<(Ipv4Addr, u8)>, Vec<(Ipv6Addr, u8)>);

/// `ADDR[/PLEN]` items separated by white space, up to the first that is neither an IPv4
/// nor an IPv6 one (ovn-controller's `extract_ip_addresses`): (address, prefix length).
pub fn scan_networks(s: &str) -> Networks {
    let (mut v4, mut v6) = (Vec::new(), Vec::new());
    let mut rest = s;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        if let Some((a, plen, n)) = scan_v4(rest) {
            v4.push((a, plen));
            rest = &rest[n..];
        } else if let Some((a, plen, n)) = scan_v6(rest) {
            v6.push((a, plen));
            rest = &rest[n..];
        } else {
            break;
        }
    }
    (v4, v6)
}

/// Digits at the start of `s`: the value and how many.
fn digits(s: &str) -> Option<(u32, usize)> {
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    Some((s.get(..n)?.parse().ok()?, n))
}

/// `/N` with N <= `max` at the start of `s`: N and the length; (`max`, 0) when there is
/// none; `None` when N is too large (an error that ends the scan).
fn prefix_len(s: &str, max: u32) -> Option<(u8, usize)> {
    let Some(r) = s.strip_prefix('/') else {
        return Some((max as u8, 0));
    };
    match digits(r) {
        Some((n, k)) if n <= max => Some((n as u8, 1 + k)),
        Some(_) => None,
        None => Some((max as u8, 0)),
    }
}

fn scan_v4(s: &str) -> Option<(Ipv4Addr, u8, usize)> {
    let mut octets = [0u8; 4];
    let mut at = 0;
    for (i, o) in octets.iter_mut().enumerate() {
        if i > 0 {
            if s.as_bytes().get(at) != Some(&b'.') {
                return None;
            }
            at += 1;
        }
        let (v, n) = digits(&s[at..])?;
        *o = u8::try_from(v).ok()?;
        at += n;
    }
    let (plen, n) = prefix_len(&s[at..], 32)?;
    Some((Ipv4Addr::from(octets), plen, at + n))
}

fn scan_v6(s: &str) -> Option<(Ipv6Addr, u8, usize)> {
    let n = s
        .bytes()
        .take(46)
        .take_while(|b| b.is_ascii_hexdigit() || *b == b':' || *b == b'.')
        .count();
    let a: Ipv6Addr = s.get(..n)?.parse().ok()?;
    let (plen, k) = prefix_len(&s[n..], 128)?;
    Some((a, plen, n + k))
}

/// The IPv6 pseudo-header of an upper-layer checksum.
pub fn pseudo_header6(src: Ipv6Addr, dst: Ipv6Addr, next_header: u8, len: u16) -> [u8; 40] {
    let mut p = [0u8; 40];
    p[..16].copy_from_slice(&src.octets());
    p[16..32].copy_from_slice(&dst.octets());
    p[34..36].copy_from_slice(&len.to_be_bytes());
    p[39] = next_header;
    p
}

/// The Internet checksum of the concatenated `parts` (each but the last of even length).
pub fn checksum(parts: &[&[u8]]) -> u16 {
    super::csum::fold(
        parts
            .iter()
            .fold(0, |sum, part| super::csum::sum16(part, sum)),
    )
}
