//! Load-balancer hairpin tables 68 and 70, built from SB `Load_Balancer` rows that apply to
//! a local logical switch, as ovn-controller 23.03.1 does with northd's
//! `hairpin_orig_tuple` (original destination in reg1/xxreg1 and reg2[0..15]) and ct_mark
//! (`ct.natted`). They answer `chk_lb_hairpin()` and `ct_snat_to_vip`. Pure.

use std::net::IpAddr;
use std::sync::Arc;

use crate::lflow::controller::l4_fields;
use crate::lflow::layout::TableLayout;
use crate::lflow::of::{
    ct, set_field, sub, CtSpec, FieldId, Flow as OfFlow, FlowMatch as OfMatch, LearnBuilder,
    NatSpec, OfAction,
};

/// A VIP or backend address with an optional L4 port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub ip: IpAddr,
    pub port: Option<u16>,
}

/// Parses `IP`, `IP:PORT` or `[IPv6]:PORT`.
pub fn parse_endpoint(s: &str) -> Option<Endpoint> {
    let s = s.trim();
    if let Some(rest) = s.strip_prefix('[') {
        let (a, p) = rest.split_once("]:")?;
        return Some(Endpoint {
            ip: IpAddr::V6(a.parse().ok()?),
            port: Some(p.parse().ok()?),
        });
    }
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some(Endpoint { ip, port: None });
    }
    let (a, p) = s.rsplit_once(':')?;
    Some(Endpoint {
        ip: IpAddr::V4(a.parse().ok()?),
        port: Some(p.parse().ok()?),
    })
}

/// One load balancer as the hairpin tables need it.
#[derive(Clone, Debug)]
pub struct HairpinLb {
    /// First 32 bits of the Load_Balancer uuid (the flows' cookie).
    pub cookie: u64,
    /// IP protocol number (6, 17 or 132).
    pub proto: u8,
    pub vips: Vec<(Endpoint, Vec<Endpoint>)>,
    /// `options:hairpin_snat_ip` (first IPv4 and first IPv6), with the local datapath keys
    /// of the LB (those SNAT flows are per datapath).
    pub snat_v4: Option<std::net::Ipv4Addr>,
    pub snat_v6: Option<std::net::Ipv6Addr>,
    pub local_dp_keys: Vec<u32>,
    /// Northd's `lb_hairpin_use_ct_mark`: `ct.natted` is in ct_mark (else, from a northd
    /// of before the move, in ct_label).
    pub use_ct_mark: bool,
    /// Northd's `register_consolidation` (24.09 on): the original IPv4 destination is in
    /// reg4 (else reg1).
    pub orig_dip_in_reg4: bool,
    /// `options:hairpin_orig_tuple=true`: northd saves the original destination in
    /// registers; without it the flows match conntrack's original tuple (`ct_nw_dst`, ...).
    pub orig_tuple: bool,
}

fn ip_bits(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    }
}

/// The original-destination match: reg1 or reg4 (IPv4) or xxreg1 (IPv6), and reg2[0..15]
/// for the port; without `hairpin_orig_tuple`, conntrack's original destination.
fn orig_dst(m: &mut OfMatch, vip: &Endpoint, lb: &HairpinLb) {
    let proto = lb.proto;
    if !lb.orig_tuple {
        // Conntrack's original tuple, which needs ct_state +trk+dnat matched first.
        const TRACKED_DNAT: u128 = 0x20 | 0x80;
        m.add(FieldId::CT_STATE, TRACKED_DNAT, TRACKED_DNAT);
        match vip.ip {
            IpAddr::V4(_) => {
                m.add(FieldId::ETH_TYPE, 0x800, 0xffff);
                m.add(FieldId::CT_NW_DST, ip_bits(vip.ip), 0xffff_ffff);
            }
            IpAddr::V6(_) => {
                m.add(FieldId::ETH_TYPE, 0x86dd, 0xffff);
                m.add(FieldId::CT_IPV6_DST, ip_bits(vip.ip), u128::MAX);
            }
        }
        if let Some(p) = vip.port {
            m.add(FieldId::NW_PROTO, u128::from(proto), 0xff);
            m.add(FieldId::CT_NW_PROTO, u128::from(proto), 0xff);
            m.add(FieldId::CT_TP_DST, u128::from(p), 0xffff);
        }
        return;
    }
    match vip.ip {
        IpAddr::V4(_) => {
            m.add(FieldId::ETH_TYPE, 0x800, 0xffff);
            let reg = if lb.orig_dip_in_reg4 { 4 } else { 1 };
            m.add(FieldId::reg(reg), ip_bits(vip.ip), 0xffff_ffff);
        }
        IpAddr::V6(_) => {
            m.add(FieldId::ETH_TYPE, 0x86dd, 0xffff);
            m.add(FieldId::xxreg(1), ip_bits(vip.ip), u128::MAX);
        }
    }
    if let Some(p) = vip.port {
        m.add(FieldId::NW_PROTO, u128::from(proto), 0xff);
        m.add(FieldId::reg(2), u128::from(p), 0xffff);
    }
}

/// Tables 68 (hairpin detection, learning the reply flow into 69) and 70 (SNAT to the VIP).
pub fn hairpin_flows(lb: &HairpinLb, l: &TableLayout) -> Vec<OfFlow> {
    let mut out = Vec::new();
    // Action lists are shared: the learn actions of a VIP's backends are the same, and the SNAT action is the same on every local datapath (thousands of
    // flows per load balancer group otherwise each hold a copy).
    let flow = |table: u8, priority: u16, m: OfMatch, actions: &Arc<Vec<OfAction>>| OfFlow {
        table,
        priority,
        cookie: lb.cookie,
        m,
        actions: Arc::clone(actions),
    };
    for (vip, backends) in &lb.vips {
        let snat = match vip.ip {
            IpAddr::V4(_) => lb.snat_v4.map(IpAddr::V4),
            IpAddr::V6(_) => lb.snat_v6.map(IpAddr::V6),
        };
        let reply_dst = snat.unwrap_or(vip.ip);
        // The learn action depends on whether the backend has a port, not on which.
        let mut learn_by_port: Vec<(bool, Arc<Vec<OfAction>>)> = Vec::new();
        for be in backends
            .iter()
            .filter(|b| b.ip.is_ipv4() == vip.ip.is_ipv4())
        {
            let mut m = OfMatch::new();
            if lb.use_ct_mark {
                m.add(FieldId::CT_MARK, 2, 2);
            } else {
                m.add(FieldId::CT_LABEL, 2, 2);
            }
            orig_dst(&mut m, vip, lb);
            let (src_f, dst_f) = if be.ip.is_ipv4() {
                (FieldId::IP_SRC, FieldId::IP_DST)
            } else {
                (FieldId::IPV6_SRC, FieldId::IPV6_DST)
            };
            let full = if be.ip.is_ipv4() {
                0xffff_ffff
            } else {
                u128::MAX
            };
            m.add(src_f, ip_bits(be.ip), full);
            m.add(dst_f, ip_bits(be.ip), full);
            let (ty, ip_src, ip_dst) = match reply_dst {
                IpAddr::V4(_) => (0x800, FieldId::IP_SRC, FieldId::IP_DST),
                IpAddr::V6(_) => (0x86dd, FieldId::IPV6_SRC, FieldId::IPV6_DST),
            };
            let mut learn = LearnBuilder::new(l.chk_lb_hairpin_reply)
                .delete_learned()
                .cookie(lb.cookie)
                .match_same(FieldId::METADATA)
                .match_value(FieldId::ETH_TYPE, ty)
                .match_same(ip_src)
                .match_value(ip_dst, ip_bits(reply_dst));
            if let Some(p) = be.port {
                m.add(FieldId::NW_PROTO, u128::from(lb.proto), 0xff);
                let name = match lb.proto {
                    17 => "udp",
                    132 => "sctp",
                    _ => "tcp",
                };
                let (_, sf, df) =
                    l4_fields(name).unwrap_or((6, FieldId::TCP_SRC, FieldId::TCP_DST));
                m.add(df, u128::from(p), 0xffff);
                learn = learn
                    .match_value(FieldId::NW_PROTO, u128::from(lb.proto))
                    .match_from(sf, df);
            } else {
                // Without a port the reply only has to carry the same protocol.
                learn = learn.match_same(FieldId::NW_PROTO);
            }
            let has_port = be.port.is_some();
            let shared = learn_by_port.iter().find(|(p, _)| *p == has_port);
            let actions = if let Some((_, a)) = shared {
                Arc::clone(a)
            } else {
                let learn = learn.load_value(sub(FieldId::reg(10), 7, 1), 1).build();
                let set_flag = set_field(FieldId::reg(10), 0x80, 0x80);
                let a = Arc::new(vec![set_flag, learn]);
                learn_by_port.push((has_port, Arc::clone(&a)));
                a
            };
            out.push(flow(l.chk_lb_hairpin, 100, m, &actions));
        }
        let ct = |src: IpAddr| {
            ct(CtSpec {
                commit: true,
                table: None,
                zone: sub(FieldId::reg(12), 0, 16),
                nat: Some(NatSpec::Typed {
                    src: true,
                    addr: Some(src),
                    ports: None,
                }),
                exec: vec![],
            })
        };
        let base = if vip.port.is_some() { 100 } else { 90 };
        let mut m = OfMatch::new();
        orig_dst(&mut m, vip, lb);
        match snat {
            None => out.push(flow(
                l.ct_snat_hairpin,
                base,
                m,
                &Arc::new(vec![ct(vip.ip)]),
            )),
            Some(ip) => {
                let actions = Arc::new(vec![ct(ip)]);
                for dp in &lb.local_dp_keys {
                    let mut dm = m.clone();
                    dm.add(FieldId::METADATA, u128::from(*dp), u128::from(u64::MAX));
                    out.push(flow(l.ct_snat_hairpin, base + 100, dm, &actions));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        assert_eq!(
            parse_endpoint("10.0.0.1:80"),
            Some(Endpoint {
                ip: "10.0.0.1".parse().unwrap(),
                port: Some(80)
            })
        );
        assert_eq!(
            parse_endpoint("[aef0::1]:80"),
            Some(Endpoint {
                ip: "aef0::1".parse().unwrap(),
                port: Some(80)
            })
        );
        assert_eq!(
            parse_endpoint("172.168.0.200"),
            Some(Endpoint {
                ip: "172.168.0.200".parse().unwrap(),
                port: None
            })
        );
        assert_eq!(parse_endpoint("x:y"), None);
    }

    #[test]
    fn natted_bit_in_ct_mark_or_in_ct_label_as_northd_says() {
        let vip = parse_endpoint("10.0.0.10:80").unwrap();
        let backend = parse_endpoint("10.0.0.2:8080").unwrap();
        let lb = |use_ct_mark| HairpinLb {
            cookie: 1,
            proto: 6,
            vips: vec![(vip, vec![backend])],
            snat_v4: None,
            snat_v6: None,
            local_dp_keys: vec![1],
            use_ct_mark,
            orig_dip_in_reg4: false,
            orig_tuple: true,
        };
        let first = |use_ct_mark| {
            hairpin_flows(&lb(use_ct_mark), &TableLayout::OVN_23_03)[0]
                .m
                .to_string()
        };
        assert!(first(true).contains("ct_mark=0x2/0x2"), "{}", first(true));
        let old = first(false);
        assert!(old.contains("ct_label=0x2/0x2"), "{old}");
        assert!(!old.contains("ct_mark"), "{old}");
    }

    #[test]
    fn original_ipv4_destination_in_reg4_once_northd_consolidates_registers() {
        let lb = |orig_dip_in_reg4| HairpinLb {
            cookie: 1,
            proto: 6,
            vips: vec![(
                parse_endpoint("10.0.0.10:80").unwrap(),
                vec![parse_endpoint("10.0.0.2:8080").unwrap()],
            )],
            snat_v4: None,
            snat_v6: None,
            local_dp_keys: vec![1],
            use_ct_mark: true,
            orig_dip_in_reg4,
            orig_tuple: true,
        };
        let matches = |reg4| -> Vec<String> {
            hairpin_flows(&lb(reg4), &TableLayout::OVN_25_03)
                .iter()
                .map(|f| f.m.to_string())
                .collect()
        };
        assert!(
            matches(true).iter().all(|m| m.contains("reg4=0xa00000a")),
            "{:?}",
            matches(true)
        );
        assert!(
            matches(false).iter().all(|m| m.contains("reg1=0xa00000a")),
            "{:?}",
            matches(false)
        );
    }

    /// Without `hairpin_orig_tuple`, both tables match conntrack's original destination,
    /// as ovn-controller 23.03.1 prints them (OVN's "Load Balancer LS hairpin OF flows").
    #[test]
    fn without_the_original_tuple_in_registers_conntrack_s_is_matched() {
        let lb = HairpinLb {
            cookie: 1,
            proto: 17,
            vips: vec![(
                parse_endpoint("88.88.88.88:4040").unwrap(),
                vec![parse_endpoint("42.42.42.1:2021").unwrap()],
            )],
            snat_v4: None,
            snat_v6: None,
            local_dp_keys: vec![1],
            use_ct_mark: true,
            orig_dip_in_reg4: false,
            orig_tuple: false,
        };
        let flows = hairpin_flows(&lb, &TableLayout::OVN_23_03);
        let texts: Vec<String> = flows.iter().map(|f| f.m.to_string()).collect();
        assert_eq!(
            texts[0],
            "ct_state=+trk+dnat,ct_mark=0x2/0x2,ct_nw_dst=88.88.88.88,ct_nw_proto=17,ct_tp_dst=4040,udp,nw_src=42.42.42.1,nw_dst=42.42.42.1,tp_dst=2021"
        );
        assert!(texts.iter().all(|t| !t.contains("reg")), "{texts:?}");
    }
}
