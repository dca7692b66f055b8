//! MAC binding tables 66/67 (from SB `MAC_Binding` and `Static_MAC_Binding`) and FDB tables
//! 71/72 (from SB `FDB`), which answer `get_arp`/`get_nd`, `lookup_arp`/`lookup_nd` and
//! `get_fdb`/`lookup_fdb`. Pure. Shapes follow ovn-controller's lflow module (code reading;
//! the reference dump has no MAC_Binding or FDB rows to compare with).

use std::net::IpAddr;
use std::sync::Arc;

use crate::lflow::layout::TableLayout;
use crate::lflow::of::{set_field, FieldId, Flow as OfFlow, FlowMatch as OfMatch, OfAction};

fn parse_mac(s: &str) -> Option<u64> {
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() != 6 {
        return None;
    }
    parts.iter().try_fold(0u64, |acc, p| {
        Some((acc << 8) | u64::from(u8::from_str_radix(p, 16).ok()?))
    })
}

fn lookup_mac() -> OfAction {
    set_field(FieldId::reg(10), 0x40, 0x40)
}

/// Flows of one MAC binding: `priority` is 100 for learnt bindings, 150/50 for static ones
/// (with/without `override_dynamic_mac`). `None` when the IP or MAC does not parse.
pub fn mac_binding_flows(
    cookie: u64,
    dp_key: u32,
    port_key: u32,
    ip: &str,
    mac: &str,
    priority: u16,
    l: &TableLayout,
) -> Option<Vec<OfFlow>> {
    let mac = u128::from(parse_mac(mac)?);
    let ip: IpAddr = ip.parse().ok()?;
    let mut get = OfMatch::new();
    let mut lookup = OfMatch::new();
    match ip {
        IpAddr::V4(a) => {
            get.add(FieldId::reg(0), u128::from(u32::from(a)), 0xffff_ffff);
            lookup.add(FieldId::reg(0), u128::from(u32::from(a)), 0xffff_ffff);
            lookup.add(FieldId::ETH_TYPE, 0x806, 0xffff);
        }
        IpAddr::V6(a) => {
            get.add(FieldId::xxreg(0), u128::from(a), u128::MAX);
            lookup.add(FieldId::xxreg(0), u128::from(a), u128::MAX);
            lookup.add(FieldId::ETH_TYPE, 0x86dd, 0xffff);
            lookup.add(FieldId::NW_PROTO, 58, 0xff);
            lookup.add(FieldId::ICMPV6_CODE, 0, 0xff);
        }
    }
    let meta = u128::from(u64::MAX);
    get.add(FieldId::METADATA, u128::from(dp_key), meta);
    get.add(FieldId::reg(15), u128::from(port_key), 0xffff_ffff);
    lookup.add(FieldId::METADATA, u128::from(dp_key), meta);
    lookup.add(FieldId::reg(14), u128::from(port_key), 0xffff_ffff);
    lookup.add(FieldId::ETH_SRC, mac, 0xffff_ffff_ffff);
    let set_dst = set_field(FieldId::ETH_DST, mac, 0xffff_ffff_ffff);
    Some(vec![
        OfFlow {
            table: l.mac_binding,
            priority,
            cookie,
            m: get,
            actions: Arc::new(vec![set_dst, lookup_mac()]),
        },
        OfFlow {
            table: l.mac_lookup,
            priority,
            cookie,
            m: lookup,
            actions: Arc::new(vec![lookup_mac()]),
        },
    ])
}

/// Flows of one FDB entry (tables 71 and 72, priority 100).
pub fn fdb_flows(
    cookie: u64,
    dp_key: u32,
    port_key: u32,
    mac: &str,
    l: &TableLayout,
) -> Option<Vec<OfFlow>> {
    let mac = u128::from(parse_mac(mac)?);
    let mut get = OfMatch::new();
    get.add(FieldId::METADATA, u128::from(dp_key), u128::from(u64::MAX));
    get.add(FieldId::ETH_DST, mac, 0xffff_ffff_ffff);
    let mut lookup = OfMatch::new();
    lookup.add(FieldId::METADATA, u128::from(dp_key), u128::from(u64::MAX));
    lookup.add(FieldId::ETH_SRC, mac, 0xffff_ffff_ffff);
    lookup.add(FieldId::reg(14), u128::from(port_key), 0xffff_ffff);
    let load_port = set_field(FieldId::reg(15), u128::from(port_key), 0xffff_ffff);
    let found = set_field(FieldId::reg(10), 0x100, 0x100);
    Some(vec![
        OfFlow {
            table: l.get_fdb,
            priority: 100,
            cookie,
            m: get,
            actions: Arc::new(vec![load_port]),
        },
        OfFlow {
            table: l.lookup_fdb,
            priority: 100,
            cookie,
            m: lookup,
            actions: Arc::new(vec![found]),
        },
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(v: &[OfFlow]) -> Vec<String> {
        v.iter().map(|f| f.to_string().trim().to_string()).collect()
    }

    #[test]
    fn mac_binding_and_fdb_shapes() {
        let l = TableLayout::OVN_23_03;
        let f = mac_binding_flows(0xa0b0c0d, 3, 2, "172.168.0.1", "00:00:00:00:00:aa", 100, &l)
            .unwrap();
        assert_eq!(
            text(&f),
            [
                "cookie=0xa0b0c0d, table=66, priority=100,reg0=0xaca80001,reg15=0x2,metadata=0x3 actions=set_field:00:00:00:00:00:aa->eth_dst,set_field:0x40/0x40->reg10",
                "cookie=0xa0b0c0d, table=67, priority=100,arp,reg0=0xaca80001,reg14=0x2,metadata=0x3,dl_src=00:00:00:00:00:aa actions=set_field:0x40/0x40->reg10",
            ]
        );
        let f = mac_binding_flows(0xa0b0c0d, 3, 2, "3000::1", "00:00:00:00:00:aa", 50, &l).unwrap();
        assert!(text(&f)[1].starts_with("cookie=0xa0b0c0d, table=67, priority=50,icmp6,reg0=0x30000000,reg1=0,reg2=0,reg3=0x1,reg14=0x2,metadata=0x3,dl_src=00:00:00:00:00:aa,icmp_code=0 "), "{:?}", text(&f));
        assert!(mac_binding_flows(0, 1, 1, "not-an-ip", "00:00:00:00:00:aa", 100, &l).is_none());
        let f = fdb_flows(1, 1, 4, "50:54:00:00:00:03", &l).unwrap();
        assert_eq!(
            text(&f),
            [
                "cookie=0x1, table=71, priority=100,metadata=0x1,dl_dst=50:54:00:00:00:03 actions=set_field:0x4->reg15",
                "cookie=0x1, table=72, priority=100,reg14=0x4,metadata=0x1,dl_src=50:54:00:00:00:03 actions=set_field:0x100/0x100->reg10",
            ]
        );
    }
}
