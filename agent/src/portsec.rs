//! Port security flows (tables 73-75) for the ports bound to this chassis, built from
//! `Port_Binding.port_security` as ovn-controller's lflow module does. They give
//! `check_in_port_sec()` / `check_out_port_sec()` their answers. Pure.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use crate::lflow::layout::TableLayout;
use crate::lflow::of::{
    resubmit, set_field, FieldId, Flow as OfFlow, FlowMatch as OfMatch, OfAction,
};

/// One `port_security` entry: a MAC and its allowed addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortSecAddrs {
    pub mac: u64,
    /// (address, prefix length)
    pub ipv4: Vec<(Ipv4Addr, u32)>,
    pub ipv6: Vec<(Ipv6Addr, u32)>,
}

/// Parses "MAC [IP[/PLEN]]..." (`extract_lsp_addresses`); `None` without a leading MAC.
pub fn parse_port_security(entry: &str) -> Option<PortSecAddrs> {
    let mut words = entry.split_whitespace();
    let mac = parse_mac(words.next()?)?;
    let mut out = PortSecAddrs {
        mac,
        ipv4: Vec::new(),
        ipv6: Vec::new(),
    };
    for w in words {
        let (a, plen) = match w.split_once('/') {
            Some((a, p)) => (a, Some(p.parse::<u32>().ok()?)),
            None => (w, None),
        };
        if let Ok(v4) = a.parse::<Ipv4Addr>() {
            out.ipv4.push((v4, plen.unwrap_or(32).min(32)));
        } else if let Ok(v6) = a.parse::<Ipv6Addr>() {
            out.ipv6.push((v6, plen.unwrap_or(128).min(128)));
        } else {
            return None;
        }
    }
    Some(out)
}

fn parse_mac(s: &str) -> Option<u64> {
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() != 6 {
        return None;
    }
    parts.iter().try_fold(0u64, |acc, p| {
        Some((acc << 8) | u64::from(u8::from_str_radix(p, 16).ok()?))
    })
}

/// EUI-64 link-local address of a MAC (`in6_generate_lla`).
pub fn link_local(mac: u64) -> Ipv6Addr {
    let b = mac.to_be_bytes();
    let eui = [b[2] ^ 0x02, b[3], b[4], 0xff, 0xfe, b[5], b[6], b[7]];
    let mut a = [0u8; 16];
    a[0] = 0xfe;
    a[1] = 0x80;
    a[8..].copy_from_slice(&eui);
    Ipv6Addr::from(a)
}

fn v4_mask(plen: u32) -> u32 {
    if plen == 0 {
        0
    } else {
        u32::MAX << (32 - plen)
    }
}

fn v6_mask(plen: u32) -> u128 {
    if plen == 0 {
        0
    } else {
        u128::MAX << (128 - plen)
    }
}

struct Builder {
    cookie: u64,
    dp_key: u32,
    port_key: u32,
    flows: Vec<OfFlow>,
}

const ETH_IP: u128 = 0x800;
const ETH_IPV6: u128 = 0x86dd;
const ETH_ARP: u128 = 0x806;

impl Builder {
    /// A match on metadata and inport (`reg`=14) or outport (15).
    fn base(&self, reg: u8) -> OfMatch {
        let mut m = OfMatch::new();
        m.add(
            FieldId::METADATA,
            u128::from(self.dp_key),
            u128::from(u64::MAX),
        );
        m.add(FieldId::reg(reg), u128::from(self.port_key), 0xffff_ffff);
        m
    }

    fn add(&mut self, table: u8, priority: u16, m: OfMatch, action: OfAction) {
        self.flows.push(OfFlow {
            table,
            priority,
            cookie: self.cookie,
            m,
            actions: Arc::new(vec![action]),
        });
    }
}

fn set(m: &mut OfMatch, f: FieldId, v: u128) {
    let full = if f.bits() >= 128 {
        u128::MAX
    } else {
        (1u128 << f.bits()) - 1
    };
    m.add(f, v, full);
}

fn allow() -> OfAction {
    set_field(FieldId::reg(10), 0, 0x1000)
}

fn deny() -> OfAction {
    set_field(FieldId::reg(10), 0x1000, 0x1000)
}

/// Flows for one port with non-empty port security. `cookie` is the Port_Binding uuid prefix.
pub fn port_security_flows(
    cookie: u64,
    dp_key: u32,
    port_key: u32,
    entries: &[PortSecAddrs],
    l: &TableLayout,
) -> Vec<OfFlow> {
    if entries.is_empty() {
        return Vec::new();
    }
    let (t_in, t_nd, t_out) = (l.chk_in_port_sec, l.chk_in_port_sec_nd, l.chk_out_port_sec);
    let adv = resubmit(t_nd);
    let mut b = Builder {
        cookie,
        dp_key,
        port_key,
        flows: Vec::new(),
    };

    // Defaults: deny all from the port; ARP goes to the ND table, where it is denied unless
    // allowed; NA denied, NS allowed (as ovn-controller does; denied in strict releases).
    let strict = l.dialect.port_sec_nd_strict;
    let ns_default = if strict { deny() } else { allow() };
    b.add(t_in, 80, b.base(14), deny());
    let mut m = b.base(14);
    set(&mut m, FieldId::ETH_TYPE, ETH_ARP);
    b.add(t_in, 95, m.clone(), adv.clone());
    b.add(t_nd, 80, m, deny());
    for (ty, action) in [(136, deny()), (135, ns_default)] {
        let mut m = b.base(14);
        set(&mut m, FieldId::ETH_TYPE, ETH_IPV6);
        set(&mut m, FieldId::NW_PROTO, 58);
        set(&mut m, FieldId::NW_TTL, 255);
        set(&mut m, FieldId::ICMPV6_TYPE, ty);
        b.add(t_nd, 80, m, action);
    }

    for ps in entries {
        let mac = u128::from(ps.mac);
        let with_src = |b: &Builder, ty: Option<u128>| {
            let mut m = b.base(14);
            set(&mut m, FieldId::ETH_SRC, mac);
            if let Some(t) = ty {
                set(&mut m, FieldId::ETH_TYPE, t);
            }
            m
        };
        if ps.ipv4.is_empty() && ps.ipv6.is_empty() {
            let m = with_src(&b, None);
            b.add(t_in, 90, m, adv.clone());
        }
        // IPv4 sources, and DHCP discovery from 0.0.0.0.
        if !ps.ipv4.is_empty() {
            for (a, plen) in &ps.ipv4 {
                let mut m = with_src(&b, Some(ETH_IP));
                let (addr, mask) = (u32::from(*a), v4_mask(*plen));
                if *plen == 32 || addr & !mask != 0 {
                    set(&mut m, FieldId::IP_SRC, u128::from(addr));
                } else {
                    m.add(FieldId::IP_SRC, u128::from(addr & mask), u128::from(mask));
                }
                b.add(t_in, 90, m, allow());
            }
            let mut m = with_src(&b, Some(ETH_IP));
            set(&mut m, FieldId::IP_SRC, 0);
            set(&mut m, FieldId::IP_DST, 0xffff_ffff);
            set(&mut m, FieldId::NW_PROTO, 17);
            set(&mut m, FieldId::UDP_SRC, 68);
            set(&mut m, FieldId::UDP_DST, 67);
            b.add(t_in, 90, m, allow());
        }
        // ARP: sha must be the MAC, spa one of the addresses (any, when there are none).
        if !ps.ipv4.is_empty() || ps.ipv6.is_empty() {
            if ps.ipv4.is_empty() {
                let mut m = with_src(&b, Some(ETH_ARP));
                set(&mut m, FieldId::ARP_SHA, mac);
                b.add(t_nd, 90, m, allow());
            }
            for (a, plen) in &ps.ipv4 {
                let mut m = with_src(&b, Some(ETH_ARP));
                set(&mut m, FieldId::ARP_SHA, mac);
                let (addr, mask) = (u32::from(*a), v4_mask(*plen));
                if *plen == 32 || addr & !mask != 0 {
                    set(&mut m, FieldId::ARP_SPA, u128::from(addr));
                } else {
                    m.add(FieldId::ARP_SPA, u128::from(addr & mask), u128::from(mask));
                }
                b.add(t_nd, 90, m, allow());
            }
        }
        // IPv6 sources (and the link-local one) go on to the ND checks.
        let lla = u128::from(link_local(ps.mac));
        if !ps.ipv6.is_empty() {
            for (a, plen) in &ps.ipv6 {
                let mut m = with_src(&b, Some(ETH_IPV6));
                let (addr, mask) = (u128::from(*a), v6_mask(*plen));
                if *plen == 128 || addr & !mask != 0 {
                    set(&mut m, FieldId::IPV6_SRC, addr);
                } else {
                    m.add(FieldId::IPV6_SRC, addr & mask, mask);
                }
                b.add(t_in, 90, m, adv.clone());
            }
            let mut m = with_src(&b, Some(ETH_IPV6));
            set(&mut m, FieldId::IPV6_SRC, lla);
            b.add(t_in, 90, m, adv.clone());
            // MLD reports and DAD solicitations from the unspecified address.
            for (ty, action) in [(131, allow()), (143, allow()), (135, adv.clone())] {
                let mut m = with_src(&b, Some(ETH_IPV6));
                set(&mut m, FieldId::IPV6_SRC, 0);
                m.add(FieldId::IPV6_DST, 0xff02 << 112, 0xffff << 112);
                set(&mut m, FieldId::NW_PROTO, 58);
                set(&mut m, FieldId::ICMPV6_TYPE, ty);
                set(&mut m, FieldId::ICMPV6_CODE, 0);
                b.add(t_in, 90, m, action);
            }
        }
        // Neighbour discovery. 23.03.1 matches nw_ttl=225 here (a typo fixed later, which
        // makes valid NAs for the link-local target fail); we match 255.
        let nd = |b: &Builder, ty: u128| {
            let mut m = b.base(14);
            if strict {
                set(&mut m, FieldId::ETH_SRC, mac);
            }
            set(&mut m, FieldId::ETH_TYPE, ETH_IPV6);
            set(&mut m, FieldId::NW_PROTO, 58);
            set(&mut m, FieldId::NW_TTL, 255);
            set(&mut m, FieldId::ICMPV6_TYPE, ty);
            set(&mut m, FieldId::ICMPV6_CODE, 0);
            m
        };
        for sll in [0, mac] {
            let mut m = nd(&b, 135);
            set(&mut m, FieldId::ND_SLL, sll);
            b.add(t_nd, 90, m, allow());
        }
        if ps.ipv6.is_empty() {
            for tll in [0, mac] {
                let mut m = nd(&b, 136);
                set(&mut m, FieldId::ND_TLL, tll);
                b.add(t_nd, 90, m, allow());
            }
        } else {
            for tll in [0, mac] {
                let mut m = nd(&b, 136);
                set(&mut m, FieldId::ND_TLL, tll);
                set(&mut m, FieldId::ND_TARGET, lla);
                b.add(t_nd, 90, m, allow());
            }
            for (a, plen) in &ps.ipv6 {
                for tll in [0, mac] {
                    let mut m = with_src(&b, Some(ETH_IPV6));
                    set(&mut m, FieldId::NW_PROTO, 58);
                    if strict {
                        set(&mut m, FieldId::NW_TTL, 255);
                    }
                    set(&mut m, FieldId::ICMPV6_TYPE, 136);
                    set(&mut m, FieldId::ICMPV6_CODE, 0);
                    set(&mut m, FieldId::ND_TLL, tll);
                    let (addr, mask) = (u128::from(*a), v6_mask(*plen));
                    if *plen == 128 || addr & !mask != 0 {
                        set(&mut m, FieldId::ND_TARGET, addr);
                    } else {
                        m.add(FieldId::ND_TARGET, addr & mask, mask);
                    }
                    b.add(t_nd, 90, m, allow());
                }
            }
        }
    }

    // Out port security.
    b.add(t_out, 80, b.base(15), deny());
    for ps in entries {
        let mac = u128::from(ps.mac);
        let with_dst = |b: &Builder, ty: Option<u128>| {
            let mut m = b.base(15);
            set(&mut m, FieldId::ETH_DST, mac);
            if let Some(t) = ty {
                set(&mut m, FieldId::ETH_TYPE, t);
            }
            m
        };
        let m = with_dst(&b, None);
        b.add(t_out, 85, m, allow());
        if ps.ipv4.is_empty() && ps.ipv6.is_empty() {
            continue;
        }
        b.add(t_out, 90, with_dst(&b, Some(ETH_IP)), deny());
        if !ps.ipv4.is_empty() {
            for (a, plen) in &ps.ipv4 {
                let (addr, mask) = (u32::from(*a), v4_mask(*plen));
                let mut m = with_dst(&b, Some(ETH_IP));
                if *plen == 32 || addr & !mask != 0 {
                    if *plen != 32 {
                        let mut bc = m.clone();
                        set(&mut bc, FieldId::IP_DST, u128::from(addr | !mask));
                        b.add(t_out, 95, bc, allow());
                    }
                    set(&mut m, FieldId::IP_DST, u128::from(addr));
                } else {
                    m.add(FieldId::IP_DST, u128::from(addr & mask), u128::from(mask));
                }
                b.add(t_out, 95, m, allow());
            }
            let mut m = with_dst(&b, Some(ETH_IP));
            set(&mut m, FieldId::IP_DST, 0xffff_ffff);
            b.add(t_out, 95, m, allow());
            let mut m = with_dst(&b, Some(ETH_IP));
            m.add(FieldId::IP_DST, 0xe000_0000, 0xf000_0000);
            b.add(t_out, 95, m, allow());
        }
        b.add(t_out, 90, with_dst(&b, Some(ETH_IPV6)), deny());
        if !ps.ipv6.is_empty() {
            for (a, plen) in &ps.ipv6 {
                let (addr, mask) = (u128::from(*a), v6_mask(*plen));
                let mut m = with_dst(&b, Some(ETH_IPV6));
                if *plen == 128 || addr & !mask != 0 {
                    set(&mut m, FieldId::IPV6_DST, addr);
                } else {
                    m.add(FieldId::IPV6_DST, addr & mask, mask);
                }
                b.add(t_out, 95, m, allow());
            }
            let mut m = with_dst(&b, Some(ETH_IPV6));
            set(&mut m, FieldId::IPV6_DST, u128::from(link_local(ps.mac)));
            b.add(t_out, 95, m, allow());
            let mut m = with_dst(&b, Some(ETH_IPV6));
            m.add(FieldId::IPV6_DST, 0xff << 120, 0xff << 120);
            b.add(t_out, 95, m, allow());
        }
    }
    b.flows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_entries_and_link_local() {
        let p = parse_port_security("50:54:00:00:00:01 10.0.0.11 aef0::11/64").unwrap();
        assert_eq!(p.mac, 0x5054_0000_0001);
        assert_eq!(p.ipv4, vec![("10.0.0.11".parse().unwrap(), 32)]);
        assert_eq!(p.ipv6, vec![("aef0::11".parse().unwrap(), 64)]);
        assert_eq!(link_local(p.mac).to_string(), "fe80::5254:ff:fe00:1");
        assert!(parse_port_security("10.0.0.1").is_none());
        assert!(parse_port_security("").is_none());
    }

    /// 26.03 denies neighbour solicitations by default and matches the port's MAC and hop
    /// limit 255 on every allowed NS/NA (what 26.03.1 installed in table 74, seen in the
    /// lflow_differential run on that stack); 23.03 allows them by default.
    #[test]
    fn nd_checks_of_each_release() {
        let entry = parse_port_security("50:54:00:00:00:01 aef0::11").unwrap();
        let nd_flows = |l: &TableLayout| -> Vec<String> {
            port_security_flows(1, 1, 1, std::slice::from_ref(&entry), l)
                .into_iter()
                .filter(|f| f.table == l.chk_in_port_sec_nd && f.m.to_string().contains("icmp6"))
                .map(|f| {
                    let a = openflow::text::format_actions(&f.actions);
                    format!("priority={},{} actions={a}", f.priority, f.m)
                })
                .collect()
        };
        let new = nd_flows(&TableLayout::OVN_26_03);
        let ns_default = new
            .iter()
            .find(|f| f.starts_with("priority=80,") && f.contains("icmp_type=135"))
            .expect("an NS default");
        assert!(ns_default.contains("0x1000"), "denied: {ns_default}");
        for f in new.iter().filter(|f| f.starts_with("priority=90,")) {
            assert!(
                f.contains("dl_src=50:54:00:00:00:01") && f.contains("nw_ttl=255"),
                "{f}"
            );
        }
        let old = nd_flows(&TableLayout::OVN_23_03);
        assert!(old
            .iter()
            .filter(|f| f.contains("icmp_type=135"))
            .all(|f| !f.contains("dl_src=")));
    }
}
