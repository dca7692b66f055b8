//! `Match` in ovs-ofctl syntax: printed in `match_format()` order, parsed from
//! `key=value` items and shorthands such as `tcp6`.

use std::fmt::Write as _;

use super::value::{fmt_value, parse_value, to_u128, Ctx};
use super::ParseError;
use crate::oxm::{FieldId, FieldRef, Kind, Match, MatchField};

const ETH_IP: u128 = 0x0800;
const ETH_IPV6: u128 = 0x86dd;
const ETH_ARP: u128 = 0x0806;
const ETH_RARP: u128 = 0x8035;

struct View<'a> {
    m: &'a Match,
    used: Vec<bool>,
}

impl<'a> View<'a> {
    /// The position of a known field by its name. Printing asks for about 150 names per
    /// flow and a match has a handful of fields, so comparing against the fields present is
    /// far cheaper than a name lookup each time.
    fn position(&self, name: &str) -> Option<usize> {
        self.m
            .fields
            .iter()
            .position(|f| f.field.known().is_some_and(|id| id.def().name == name))
    }
    fn position_of(&self, id: FieldId) -> Option<usize> {
        self.m
            .fields
            .iter()
            .position(|f| f.field == FieldRef::Known(id))
    }
    fn take_at(&mut self, i: Option<usize>) -> Option<&'a MatchField> {
        let i = i?;
        self.used[i] = true;
        Some(&self.m.fields[i])
    }
    fn take(&mut self, name: &str) -> Option<&'a MatchField> {
        self.take_at(self.position(name))
    }
    fn take_id(&mut self, id: FieldId) -> Option<&'a MatchField> {
        self.take_at(self.position_of(id))
    }
    fn peek_exact(&self, name: &str) -> Option<u128> {
        let f = &self.m.fields[self.position(name)?];
        f.mask.is_none().then(|| to_u128(&f.value))
    }
}

fn item(s: &mut String, label: &str, f: &MatchField, kind: Kind) {
    s.push_str(label);
    s.push('=');
    fmt_value(s, kind, Ctx::Match, &f.value, effective_mask(f));
    s.push(',');
}

/// The mask, or `None` when it covers every meaningful bit of the field (OVS then prints
/// the value alone, e.g. `ipv6_label=0x00005` for mask 0xfffff).
pub(crate) fn effective_mask(f: &MatchField) -> Option<&[u8]> {
    let m = f.mask.as_deref()?;
    if let Some(id) = f.field.known() {
        let bits = usize::from(id.def().n_bits);
        if bits < m.len() * 8 && bits < 128 {
            let full = super::value::from_u128((1u128 << bits) - 1, m.len());
            if m == full.as_slice() {
                return None;
            }
        }
    }
    Some(m)
}

fn put(s: &mut String, v: &mut View<'_>, name: &str, label: &str) {
    if let Some(f) = v.take(name) {
        let kind = f.field.known().map_or(Kind::Hex, |id| id.def().kind);
        item(s, label, f, kind);
    }
}

/// Registers, merging `xreg`/`xxreg` into 32-bit halves as OVS prints them.
fn put_regs(s: &mut String, v: &mut View<'_>) {
    let mut val = [0u32; 16];
    let mut mask = [0u32; 16];
    let mut any = [false; 16];
    let mut load = |first: usize, n: usize, f: &MatchField| {
        let value = to_u128(&f.value);
        let m = f.mask.as_deref().map_or(u128::MAX, to_u128);
        for k in 0..n {
            let shift = 32 * (n - 1 - k);
            let r = first + k;
            if r < 16 {
                val[r] = (value >> shift) as u32;
                mask[r] = (m >> shift) as u32;
                any[r] = mask[r] != 0;
            }
        }
    };
    for i in 0..16u8 {
        if let Some(f) = v.take_id(FieldId::reg(i)) {
            load(usize::from(i), 1, f);
        }
    }
    for i in 0..8u8 {
        if let Some(f) = v.take_id(FieldId::xreg(i)) {
            load(2 * usize::from(i), 2, f);
        }
    }
    for i in 0..4u8 {
        if let Some(f) = v.take_id(FieldId::xxreg(i)) {
            load(4 * usize::from(i), 4, f);
        }
    }
    for i in 0..16 {
        if any[i] {
            let vb = val[i].to_be_bytes();
            let mb = mask[i].to_be_bytes();
            let _ = write!(s, "reg{i}=");
            fmt_value(
                s,
                Kind::Hex,
                Ctx::Match,
                &vb,
                (mask[i] != u32::MAX).then_some(&mb[..]),
            );
            s.push(',');
        }
    }
}

fn put_vlan(s: &mut String, v: &mut View<'_>) {
    let (mut tci, mut mask) = (0u16, 0u16);
    if let Some(f) = v.take("vlan_tci") {
        tci = to_u128(&f.value) as u16;
        mask = f.mask.as_deref().map_or(0xffff, |m| to_u128(m) as u16);
    }
    if let Some(f) = v.take("vlan_vid") {
        tci |= to_u128(&f.value) as u16 & 0x1fff;
        mask |= f.mask.as_deref().map_or(0x1fff, |m| to_u128(m) as u16) & 0x1fff;
    }
    if let Some(f) = v.take("vlan_pcp") {
        tci |= ((to_u128(&f.value) as u16) << 13) | 0x1000;
        mask |= 0xf000;
    }
    if mask == 0 {
        return;
    }
    let vid_mask = mask & 0x0fff;
    let pcp_mask = mask & 0xe000;
    if mask & 0x1000 != 0
        && tci & 0x1000 != 0
        && (vid_mask == 0 || vid_mask == 0x0fff)
        && (pcp_mask == 0 || pcp_mask == 0xe000)
        && (vid_mask != 0 || pcp_mask != 0)
    {
        if vid_mask != 0 {
            let _ = write!(s, "dl_vlan={},", tci & 0x0fff);
        }
        if pcp_mask != 0 {
            let _ = write!(s, "dl_vlan_pcp={},", tci >> 13);
        }
    } else if mask == 0xffff {
        let _ = write!(s, "vlan_tci=0x{tci:04x},");
    } else {
        let _ = write!(s, "vlan_tci=0x{tci:04x}/0x{mask:04x},");
    }
}

/// Print a match as `match_format()` does; `priority` is printed first unless it is the
/// default (32768) or `None`.
pub fn format_match(m: &Match, priority: Option<u16>) -> String {
    let mut s = String::new();
    let mut v = View {
        m,
        used: vec![false; m.fields.len()],
    };
    if let Some(p) = priority.filter(|p| *p != 0x8000) {
        let _ = write!(s, "priority={p},");
    }
    for n in [
        "pkt_mark",
        "recirc_id",
        "dp_hash",
        "conj_id",
        "ct_state",
        "ct_zone",
    ] {
        put(&mut s, &mut v, n, n);
    }
    for n in [
        "ct_mark",
        "ct_label",
        "ct_nw_src",
        "ct_ipv6_src",
        "ct_nw_dst",
        "ct_ipv6_dst",
        "ct_nw_proto",
        "ct_tp_src",
        "ct_tp_dst",
    ] {
        put(&mut s, &mut v, n, n);
    }
    let dl_type = v.peek_exact("eth_type");
    let proto = v.peek_exact("nw_proto");
    let mut skip_type = true;
    let mut skip_proto = false;
    let short = match (dl_type, proto) {
        (Some(ETH_IP), Some(1)) => Some("icmp"),
        (Some(ETH_IP), Some(6)) => Some("tcp"),
        (Some(ETH_IP), Some(17)) => Some("udp"),
        (Some(ETH_IP), Some(132)) => Some("sctp"),
        (Some(ETH_IPV6), Some(58)) => Some("icmp6"),
        (Some(ETH_IPV6), Some(6)) => Some("tcp6"),
        (Some(ETH_IPV6), Some(17)) => Some("udp6"),
        (Some(ETH_IPV6), Some(132)) => Some("sctp6"),
        _ => None,
    };
    if let Some(sh) = short {
        skip_proto = true;
        s.push_str(sh);
        s.push(',');
    } else {
        match dl_type {
            Some(ETH_IP) => s.push_str("ip,"),
            Some(ETH_IPV6) => s.push_str("ipv6,"),
            Some(ETH_RARP) => s.push_str("rarp,"),
            Some(ETH_ARP) => s.push_str("arp,"),
            _ => skip_type = false,
        }
    }
    put_regs(&mut s, &mut v);
    for n in [
        "tun_id",
        "tun_src",
        "tun_dst",
        "tun_ipv6_src",
        "tun_ipv6_dst",
        "tun_gbp_id",
        "tun_gbp_flags",
        "tun_flags",
    ] {
        put(&mut s, &mut v, n, n);
    }
    for i in 0..64u8 {
        if let Some(f) = v.take_id(FieldId::tun_metadata(i)) {
            let def = FieldId::tun_metadata(i).def();
            item(&mut s, def.name, f, def.kind);
        }
    }
    put(&mut s, &mut v, "metadata", "metadata");
    put(&mut s, &mut v, "in_port", "in_port");
    put(&mut s, &mut v, "in_port_oxm", "in_port");
    put_vlan(&mut s, &mut v);
    put(&mut s, &mut v, "eth_src", "dl_src");
    put(&mut s, &mut v, "eth_dst", "dl_dst");
    if skip_type {
        v.take("eth_type");
    } else if let Some(f) = v.take("eth_type") {
        let _ = write!(s, "dl_type=0x{:04x},", to_u128(&f.value));
    }
    let is_arp = matches!(dl_type, Some(ETH_ARP | ETH_RARP));
    if dl_type == Some(ETH_IPV6) {
        put(&mut s, &mut v, "ipv6_src", "ipv6_src");
        put(&mut s, &mut v, "ipv6_dst", "ipv6_dst");
        put(&mut s, &mut v, "ipv6_label", "ipv6_label");
    } else if is_arp {
        put(&mut s, &mut v, "arp_spa", "arp_spa");
        put(&mut s, &mut v, "arp_tpa", "arp_tpa");
    } else {
        put(&mut s, &mut v, "ip_src", "nw_src");
        put(&mut s, &mut v, "ip_dst", "nw_dst");
    }
    if is_arp {
        put(&mut s, &mut v, "arp_op", "arp_op");
    } else if skip_proto {
        v.take("nw_proto");
    } else {
        put(&mut s, &mut v, "nw_proto", "nw_proto");
    }
    if is_arp {
        put(&mut s, &mut v, "arp_sha", "arp_sha");
        put(&mut s, &mut v, "arp_tha", "arp_tha");
    }
    if let Some(f) = v.take("ip_dscp") {
        let _ = write!(s, "nw_tos={},", to_u128(&f.value) << 2);
    }
    put(&mut s, &mut v, "nw_tos", "nw_tos");
    put(&mut s, &mut v, "nw_ecn", "nw_ecn");
    put(&mut s, &mut v, "nw_ttl", "nw_ttl");
    put(&mut s, &mut v, "nw_frag", "nw_frag");
    match (dl_type, proto) {
        (Some(ETH_IP), Some(1)) => {
            put(&mut s, &mut v, "icmp_type", "icmp_type");
            put(&mut s, &mut v, "icmp_code", "icmp_code");
        }
        (Some(ETH_IPV6), Some(58)) => {
            put(&mut s, &mut v, "icmpv6_type", "icmp_type");
            put(&mut s, &mut v, "icmpv6_code", "icmp_code");
            put(&mut s, &mut v, "nd_target", "nd_target");
            put(&mut s, &mut v, "nd_sll", "nd_sll");
            put(&mut s, &mut v, "nd_tll", "nd_tll");
        }
        _ => {
            for (src, dst) in [
                ("tcp_src", "tcp_dst"),
                ("udp_src", "udp_dst"),
                ("sctp_src", "sctp_dst"),
            ] {
                put(&mut s, &mut v, src, "tp_src");
                put(&mut s, &mut v, dst, "tp_dst");
            }
        }
    }
    put(&mut s, &mut v, "tcp_flags", "tcp_flags");
    // Anything left (fields outside their usual context, unknown fields).
    for (i, f) in m.fields.iter().enumerate() {
        if v.used[i] {
            continue;
        }
        match f.field {
            FieldRef::Known(id) => item(&mut s, id.def().name, f, id.def().kind),
            FieldRef::Unknown { class, field, .. } => {
                item(&mut s, &format!("oxm(0x{class:04x}:{field})"), f, Kind::Hex);
            }
        }
    }
    if s.ends_with(',') {
        s.pop();
    }
    s
}

fn push(
    m: &mut Match,
    name: &str,
    value: Vec<u8>,
    mask: Option<Vec<u8>>,
) -> Result<(), ParseError> {
    let id = FieldId::by_name(name).ok_or_else(|| ParseError::UnknownField(name.to_owned()))?;
    m.fields.push(MatchField::new(id, value, mask));
    Ok(())
}

fn shorthand(t: &str) -> Option<(u16, Option<u8>)> {
    Some(match t {
        "ip" => (0x0800, None),
        "ipv6" => (0x86dd, None),
        "arp" => (0x0806, None),
        "rarp" => (0x8035, None),
        "icmp" => (0x0800, Some(1)),
        "igmp" => (0x0800, Some(2)),
        "tcp" => (0x0800, Some(6)),
        "udp" => (0x0800, Some(17)),
        "sctp" => (0x0800, Some(132)),
        "icmp6" => (0x86dd, Some(58)),
        "tcp6" => (0x86dd, Some(6)),
        "udp6" => (0x86dd, Some(17)),
        "sctp6" => (0x86dd, Some(132)),
        _ => return None,
    })
}

/// Add one match item (`key=value` or shorthand) to `m`.
pub fn parse_match_item(m: &mut Match, item: &str) -> Result<(), ParseError> {
    let item = item.trim();
    if item.is_empty() {
        return Ok(());
    }
    if let Some((ty, proto)) = shorthand(item) {
        push(m, "eth_type", ty.to_be_bytes().to_vec(), None)?;
        if let Some(p) = proto {
            push(m, "nw_proto", vec![p], None)?;
        }
        return Ok(());
    }
    let (key, val) = item
        .split_once('=')
        .ok_or_else(|| ParseError::UnknownField(item.to_owned()))?;
    let dl_type = m.exact_u64("eth_type").map(u128::from);
    let proto = m.exact_u64("nw_proto");
    let is_arp = matches!(dl_type, Some(ETH_ARP | ETH_RARP));
    let name: String = match key {
        "in_port" => {
            let p = super::value::parse_port(val)?;
            let p = if p >= 0xff00 { p | 0xffff_0000 } else { p };
            return push(m, "in_port_oxm", p.to_be_bytes().to_vec(), None);
        }
        "vlan_tci" => {
            let (v, mk) = parse_value(Kind::Hex, 2, val)?;
            let (tci, mask) = (
                to_u128(&v) as u16,
                mk.as_deref().map_or(0xffff, |x| to_u128(x) as u16),
            );
            let vm = mask & 0x1fff;
            if vm != 0 {
                let mv = (vm != 0x1fff).then(|| vm.to_be_bytes().to_vec());
                push(m, "vlan_vid", (tci & 0x1fff).to_be_bytes().to_vec(), mv)?;
            }
            if mask & 0xe000 == 0xe000 && tci & 0x1000 != 0 {
                push(m, "vlan_pcp", vec![(tci >> 13) as u8], None)?;
            }
            return Ok(());
        }
        "dl_vlan" => {
            // ovs-ofctl keeps the low 12 bits of a larger value; we refuse it.
            let vid = super::value::parse_bits("dl_vlan", val, 12)? as u16;
            return push(m, "vlan_vid", (vid | 0x1000).to_be_bytes().to_vec(), None);
        }
        "dl_vlan_pcp" | "vlan_pcp" => {
            let pcp = super::value::parse_bits("dl_vlan_pcp", val, 3)? as u8;
            if m.get(FieldId::by_name("vlan_vid").unwrap_or(FieldId(0)))
                .is_none()
            {
                push(m, "vlan_vid", vec![0x10, 0], Some(vec![0x10, 0]))?;
            }
            return push(m, "vlan_pcp", vec![pcp], None);
        }
        "nw_tos" => {
            let tos: u8 = super::value::parse_uint("nw_tos", val)?;
            // ovs-ofctl drops the two ECN bits; we refuse them (they are `nw_ecn`).
            if tos & 3 != 0 {
                return Err(ParseError::BadValue(format!(
                    "nw_tos={val}: the 2 low (ECN) bits are not part of nw_tos (use nw_ecn)"
                )));
            }
            return push(m, "ip_dscp", vec![tos >> 2], None);
        }
        "nw_proto" | "ip_proto" if is_arp => "arp_op".into(),
        "nw_src" if is_arp => "arp_spa".into(),
        "nw_dst" if is_arp => "arp_tpa".into(),
        "tp_src" | "tp_dst" => {
            let dir = &key[3..];
            match proto {
                Some(6) => format!("tcp_{dir}"),
                Some(17) => format!("udp_{dir}"),
                Some(132) => format!("sctp_{dir}"),
                _ => return Err(ParseError::Syntax(format!("{key} needs tcp/udp/sctp"))),
            }
        }
        "icmp_type" | "icmp_code" | "icmpv6_type" | "icmpv6_code" => {
            let which = if key.ends_with("type") {
                "type"
            } else {
                "code"
            };
            if dl_type == Some(ETH_IPV6) {
                format!("icmpv6_{which}")
            } else {
                format!("icmp_{which}")
            }
        }
        k if k.starts_with("tun_metadata") => {
            let (v, mk) = parse_value(Kind::Hex, 4, val)?;
            return push(m, k, v, mk);
        }
        k => k.to_owned(),
    };
    let id = FieldId::by_name(&name).ok_or_else(|| ParseError::UnknownField(key.to_owned()))?;
    let d = id.def();
    let (v, mk) = parse_value(d.kind, d.width, val)?;
    if mk.is_some() && !d.maskable {
        return Err(ParseError::BadValue(format!("{key} is not maskable")));
    }
    m.fields.push(MatchField::new(id, v, mk));
    Ok(())
}

/// Parse a comma-separated match (no priority, no actions).
pub fn parse_match(s: &str) -> Result<Match, ParseError> {
    let mut m = Match::new();
    for it in s.split(',') {
        parse_match_item(&mut m, it)?;
    }
    Ok(m)
}
