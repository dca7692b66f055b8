//! The one declarative table of match fields (OVS `meta-flow.h` analogue).
//!
//! Each row: the name ovs-ofctl prints in `set_field`, the NXM/OXM name used in subfields
//! (`NXM_NX_REG0[..]`), the NXM and OXM headers (class, field), the value width in bytes,
//! the number of meaningful bits, maskability, value formatting and prerequisites.

use std::collections::HashMap;
use std::sync::LazyLock;

/// How a field's value prints and parses.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Kind {
    Dec,
    Hex,
    Eth,
    Ipv4,
    Ipv6,
    /// OpenFlow port number (names such as `LOCAL`, `ANY`).
    Port,
    CtState,
    TcpFlags,
    Frag,
    /// Fixed four hex digits (`vlan_tci=0x0000`).
    Tci,
    /// Fixed five hex digits (`ipv6_label=0x00000`).
    Label,
}

/// What must already be matched before this field may appear.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Prereq {
    None,
    Ip,
    Ipv4,
    Ipv6,
    Arp,
    Tcp,
    Udp,
    Sctp,
    Icmpv4,
    Icmpv6,
    /// ND (ICMPv6 type 135 or 136).
    Nd,
    NdSolicit,
    NdAdvert,
}

/// A row of the field table.
#[derive(Clone, Debug)]
pub struct FieldDef {
    pub name: String,
    pub nxm_name: String,
    /// `(class, field)` of the NXM header, if any.
    pub nxm: Option<(u16, u8)>,
    /// `(class, field)` of the OXM header, if any (preferred when encoding OF1.5).
    pub oxm: Option<(u16, u8)>,
    pub width: usize,
    pub n_bits: u16,
    pub maskable: bool,
    pub kind: Kind,
    pub prereq: Prereq,
}

impl FieldDef {
    /// The header used on the wire in OpenFlow 1.5.
    pub fn wire_header(&self) -> (u16, u8) {
        self.oxm.or(self.nxm).unwrap_or((0, 0))
    }
}

/// Index of a row of the field table.
#[derive(Clone, Copy, Debug, Eq, PartialEq, Hash, PartialOrd, Ord)]
pub struct FieldId(pub u16);

impl FieldId {
    pub fn def(self) -> &'static FieldDef {
        &REGISTRY.defs[self.0 as usize]
    }
    pub fn by_name(name: &str) -> Option<Self> {
        REGISTRY.by_name.get(name).copied()
    }
    /// Lookup by NXM/OXM name as printed in subfields (`NXM_NX_REG0`, `OXM_OF_METADATA`).
    pub fn by_nxm_name(name: &str) -> Option<Self> {
        REGISTRY.by_nxm_name.get(name).copied()
    }
    pub fn by_header(class: u16, field: u8) -> Option<Self> {
        REGISTRY.by_header.get(&(class, field)).copied()
    }
    /// All rows (for tests and property generators).
    pub fn all() -> impl Iterator<Item = FieldId> {
        (0..REGISTRY.defs.len() as u16).map(FieldId)
    }
}

const NXM0: u16 = 0x0000;
const NXM1: u16 = 0x0001;
const OXM: u16 = 0x8000;
const PKT_REGS: u16 = 0x8001;

/// `(name, nxm_name, nxm header, oxm header, width, bits, maskable, kind, prereq)`.
type Row = (
    &'static str,
    &'static str,
    Option<(u16, u8)>,
    Option<(u16, u8)>,
    usize,
    u16,
    bool,
    Kind,
    Prereq,
);

macro_rules! fields {
    ($( $name:literal $nxm_name:literal nxm($($nc:expr, $nf:expr)?) oxm($($oc:expr, $of:expr)?)
        $w:literal / $bits:literal $mask:ident $kind:ident $pre:ident ;)*) => {
        &[$( ($name, $nxm_name, fields!(@h $($nc, $nf)?), fields!(@h $($oc, $of)?), $w, $bits,
              fields!(@m $mask), Kind::$kind, Prereq::$pre) ),*]
    };
    (@h) => { None };
    (@h $c:expr, $f:expr) => { Some(($c, $f)) };
    (@m mask) => { true };
    (@m exact) => { false };
}

static BASE: &[Row] = fields! {
    "in_port" "NXM_OF_IN_PORT" nxm(NXM0, 0) oxm() 2/16 exact Port None;
    "in_port_oxm" "OXM_OF_IN_PORT" nxm() oxm(OXM, 0) 4/32 exact Port None;
    "metadata" "OXM_OF_METADATA" nxm() oxm(OXM, 2) 8/64 mask Hex None;
    "eth_dst" "NXM_OF_ETH_DST" nxm(NXM0, 1) oxm(OXM, 3) 6/48 mask Eth None;
    "eth_src" "NXM_OF_ETH_SRC" nxm(NXM0, 2) oxm(OXM, 4) 6/48 mask Eth None;
    "eth_type" "NXM_OF_ETH_TYPE" nxm(NXM0, 3) oxm(OXM, 5) 2/16 exact Hex None;
    "vlan_tci" "NXM_OF_VLAN_TCI" nxm(NXM0, 4) oxm() 2/16 mask Tci None;
    "vlan_vid" "OXM_OF_VLAN_VID" nxm() oxm(OXM, 6) 2/13 mask Dec None;
    "vlan_pcp" "OXM_OF_VLAN_PCP" nxm() oxm(OXM, 7) 1/3 exact Dec None;
    "nw_tos" "NXM_OF_IP_TOS" nxm(NXM0, 5) oxm() 1/8 exact Dec Ip;
    "ip_dscp" "OXM_OF_IP_DSCP" nxm() oxm(OXM, 8) 1/6 exact Dec Ip;
    "nw_ecn" "NXM_NX_IP_ECN" nxm(NXM1, 28) oxm(OXM, 9) 1/2 exact Dec Ip;
    "nw_proto" "NXM_OF_IP_PROTO" nxm(NXM0, 6) oxm(OXM, 10) 1/8 exact Dec Ip;
    "ip_src" "NXM_OF_IP_SRC" nxm(NXM0, 7) oxm(OXM, 11) 4/32 mask Ipv4 Ipv4;
    "ip_dst" "NXM_OF_IP_DST" nxm(NXM0, 8) oxm(OXM, 12) 4/32 mask Ipv4 Ipv4;
    "tcp_src" "NXM_OF_TCP_SRC" nxm(NXM0, 9) oxm(OXM, 13) 2/16 mask Dec Tcp;
    "tcp_dst" "NXM_OF_TCP_DST" nxm(NXM0, 10) oxm(OXM, 14) 2/16 mask Dec Tcp;
    "udp_src" "NXM_OF_UDP_SRC" nxm(NXM0, 11) oxm(OXM, 15) 2/16 mask Dec Udp;
    "udp_dst" "NXM_OF_UDP_DST" nxm(NXM0, 12) oxm(OXM, 16) 2/16 mask Dec Udp;
    "sctp_src" "OXM_OF_SCTP_SRC" nxm() oxm(OXM, 17) 2/16 mask Dec Sctp;
    "sctp_dst" "OXM_OF_SCTP_DST" nxm() oxm(OXM, 18) 2/16 mask Dec Sctp;
    "icmp_type" "NXM_OF_ICMP_TYPE" nxm(NXM0, 13) oxm(OXM, 19) 1/8 exact Dec Icmpv4;
    "icmp_code" "NXM_OF_ICMP_CODE" nxm(NXM0, 14) oxm(OXM, 20) 1/8 exact Dec Icmpv4;
    "arp_op" "NXM_OF_ARP_OP" nxm(NXM0, 15) oxm(OXM, 21) 2/16 exact Dec Arp;
    "arp_spa" "NXM_OF_ARP_SPA" nxm(NXM0, 16) oxm(OXM, 22) 4/32 mask Ipv4 Arp;
    "arp_tpa" "NXM_OF_ARP_TPA" nxm(NXM0, 17) oxm(OXM, 23) 4/32 mask Ipv4 Arp;
    "arp_sha" "NXM_NX_ARP_SHA" nxm(NXM1, 17) oxm(OXM, 24) 6/48 mask Eth Arp;
    "arp_tha" "NXM_NX_ARP_THA" nxm(NXM1, 18) oxm(OXM, 25) 6/48 mask Eth Arp;
    "ipv6_src" "NXM_NX_IPV6_SRC" nxm(NXM1, 19) oxm(OXM, 26) 16/128 mask Ipv6 Ipv6;
    "ipv6_dst" "NXM_NX_IPV6_DST" nxm(NXM1, 20) oxm(OXM, 27) 16/128 mask Ipv6 Ipv6;
    "ipv6_label" "NXM_NX_IPV6_LABEL" nxm(NXM1, 27) oxm(OXM, 28) 4/20 mask Label Ipv6;
    "icmpv6_type" "NXM_NX_ICMPV6_TYPE" nxm(NXM1, 21) oxm(OXM, 29) 1/8 exact Dec Icmpv6;
    "icmpv6_code" "NXM_NX_ICMPV6_CODE" nxm(NXM1, 22) oxm(OXM, 30) 1/8 exact Dec Icmpv6;
    "nd_target" "NXM_NX_ND_TARGET" nxm(NXM1, 23) oxm(OXM, 31) 16/128 mask Ipv6 Nd;
    "nd_sll" "NXM_NX_ND_SLL" nxm(NXM1, 24) oxm(OXM, 32) 6/48 mask Eth NdSolicit;
    "nd_tll" "NXM_NX_ND_TLL" nxm(NXM1, 25) oxm(OXM, 33) 6/48 mask Eth NdAdvert;
    "tun_id" "NXM_NX_TUN_ID" nxm(NXM1, 16) oxm(OXM, 38) 8/64 mask Hex None;
    "ipv6_exthdr" "OXM_OF_IPV6_EXTHDR" nxm() oxm(OXM, 39) 2/9 mask Hex Ipv6;
    "tcp_flags" "NXM_NX_TCP_FLAGS" nxm(NXM1, 34) oxm(OXM, 42) 2/12 mask TcpFlags Tcp;
    "nw_frag" "NXM_NX_IP_FRAG" nxm(NXM1, 26) oxm() 1/8 mask Frag Ip;
    "nw_ttl" "NXM_NX_IP_TTL" nxm(NXM1, 29) oxm() 1/8 exact Dec Ip;
    "tun_src" "NXM_NX_TUN_IPV4_SRC" nxm(NXM1, 31) oxm() 4/32 mask Ipv4 None;
    "tun_dst" "NXM_NX_TUN_IPV4_DST" nxm(NXM1, 32) oxm() 4/32 mask Ipv4 None;
    "pkt_mark" "NXM_NX_PKT_MARK" nxm(NXM1, 33) oxm() 4/32 mask Hex None;
    "dp_hash" "NXM_NX_DP_HASH" nxm(NXM1, 35) oxm() 4/32 mask Hex None;
    "recirc_id" "NXM_NX_RECIRC_ID" nxm(NXM1, 36) oxm() 4/32 exact Hex None;
    "conj_id" "NXM_NX_CONJ_ID" nxm(NXM1, 37) oxm() 4/32 exact Dec None;
    "tun_gbp_id" "NXM_NX_TUN_GBP_ID" nxm(NXM1, 38) oxm() 2/16 mask Dec None;
    "tun_gbp_flags" "NXM_NX_TUN_GBP_FLAGS" nxm(NXM1, 39) oxm() 1/8 mask Hex None;
    "tun_flags" "NXM_NX_TUN_FLAGS" nxm(NXM1, 104) oxm() 2/16 mask Hex None;
    "ct_state" "NXM_NX_CT_STATE" nxm(NXM1, 105) oxm() 4/32 mask CtState None;
    "ct_zone" "NXM_NX_CT_ZONE" nxm(NXM1, 106) oxm() 2/16 exact Dec None;
    "ct_mark" "NXM_NX_CT_MARK" nxm(NXM1, 107) oxm() 4/32 mask Hex None;
    "ct_label" "NXM_NX_CT_LABEL" nxm(NXM1, 108) oxm() 16/128 mask Hex None;
    "tun_ipv6_src" "NXM_NX_TUN_IPV6_SRC" nxm(NXM1, 109) oxm() 16/128 mask Ipv6 None;
    "tun_ipv6_dst" "NXM_NX_TUN_IPV6_DST" nxm(NXM1, 110) oxm() 16/128 mask Ipv6 None;
    "ct_nw_proto" "NXM_NX_CT_NW_PROTO" nxm(NXM1, 119) oxm() 1/8 exact Dec None;
    "ct_nw_src" "NXM_NX_CT_NW_SRC" nxm(NXM1, 120) oxm() 4/32 mask Ipv4 None;
    "ct_nw_dst" "NXM_NX_CT_NW_DST" nxm(NXM1, 121) oxm() 4/32 mask Ipv4 None;
    "ct_ipv6_src" "NXM_NX_CT_IPV6_SRC" nxm(NXM1, 122) oxm() 16/128 mask Ipv6 None;
    "ct_ipv6_dst" "NXM_NX_CT_IPV6_DST" nxm(NXM1, 123) oxm() 16/128 mask Ipv6 None;
    "ct_tp_src" "NXM_NX_CT_TP_SRC" nxm(NXM1, 124) oxm() 2/16 mask Dec None;
    "ct_tp_dst" "NXM_NX_CT_TP_DST" nxm(NXM1, 125) oxm() 2/16 mask Dec None;
};

struct Registry {
    defs: Vec<FieldDef>,
    by_name: HashMap<String, FieldId>,
    by_nxm_name: HashMap<String, FieldId>,
    by_header: HashMap<(u16, u8), FieldId>,
}

fn family(defs: &mut Vec<FieldDef>) {
    for i in 0..16u8 {
        defs.push(reg_def(
            format!("reg{i}"),
            format!("NXM_NX_REG{i}"),
            (NXM1, i),
            4,
        ));
    }
    for i in 0..8u8 {
        defs.push(FieldDef {
            oxm: Some((PKT_REGS, i)),
            nxm: None,
            ..reg_def(format!("xreg{i}"), format!("OXM_OF_PKT_REG{i}"), (0, 0), 8)
        });
    }
    for i in 0..4u8 {
        defs.push(reg_def(
            format!("xxreg{i}"),
            format!("NXM_NX_XXREG{i}"),
            (NXM1, 111 + i),
            16,
        ));
    }
    for i in 0..64u8 {
        defs.push(FieldDef {
            n_bits: 124 * 8,
            ..reg_def(
                format!("tun_metadata{i}"),
                format!("NXM_NX_TUN_METADATA{i}"),
                (NXM1, 40 + i),
                124,
            )
        });
    }
}

fn reg_def(name: String, nxm_name: String, nxm: (u16, u8), width: usize) -> FieldDef {
    FieldDef {
        name,
        nxm_name,
        nxm: Some(nxm),
        oxm: None,
        width,
        n_bits: (width * 8) as u16,
        maskable: true,
        kind: Kind::Hex,
        prereq: Prereq::None,
    }
}

static REGISTRY: LazyLock<Registry> = LazyLock::new(|| {
    let mut defs: Vec<FieldDef> = BASE
        .iter()
        .map(
            |&(name, nxm_name, nxm, oxm, width, n_bits, maskable, kind, prereq)| FieldDef {
                name: name.to_owned(),
                nxm_name: nxm_name.to_owned(),
                nxm,
                oxm,
                width,
                n_bits,
                maskable,
                kind,
                prereq,
            },
        )
        .collect();
    family(&mut defs);
    let mut by_name = HashMap::new();
    let mut by_nxm_name = HashMap::new();
    let mut by_header = HashMap::new();
    for (i, d) in defs.iter().enumerate() {
        let id = FieldId(i as u16);
        by_name.insert(d.name.clone(), id);
        by_nxm_name.insert(d.nxm_name.clone(), id);
        if let Some((c, f)) = d.oxm {
            by_nxm_name.insert(oxm_name(c, f, &d.nxm_name), id);
            by_header.insert((c, f), id);
        }
        if let Some(h) = d.nxm {
            by_header.insert(h, id);
        }
    }
    // Names accepted on input besides the canonical ones.
    for (alias, name) in ALIASES {
        if let Some(id) = by_name.get(*name).copied() {
            by_name.insert((*alias).to_owned(), id);
        }
    }
    Registry {
        defs,
        by_name,
        by_nxm_name,
        by_header,
    }
});

/// The `OXM_OF_*` spelling of a field that also has an NXM name, so both parse.
fn oxm_name(class: u16, _field: u8, nxm_name: &str) -> String {
    if class == OXM {
        nxm_name
            .replace("NXM_OF_", "OXM_OF_")
            .replace("NXM_NX_", "OXM_OF_")
    } else {
        nxm_name.to_owned()
    }
}

const ALIASES: &[(&str, &str)] = &[
    ("dl_src", "eth_src"),
    ("dl_dst", "eth_dst"),
    ("dl_type", "eth_type"),
    ("nw_src", "ip_src"),
    ("nw_dst", "ip_dst"),
    ("icmpv4_type", "icmp_type"),
    ("icmpv4_code", "icmp_code"),
    ("ip_ecn", "nw_ecn"),
    ("ip_proto", "nw_proto"),
    ("tun_ipv4_src", "tun_src"),
    ("tun_ipv4_dst", "tun_dst"),
    ("dl_vlan_pcp", "vlan_pcp"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_agree() {
        let r = FieldId::by_name("reg15").unwrap();
        assert_eq!(r.def().nxm_name, "NXM_NX_REG15");
        assert_eq!(FieldId::by_nxm_name("NXM_NX_REG15"), Some(r));
        assert_eq!(FieldId::by_header(1, 15), Some(r));
        let e = FieldId::by_name("eth_src").unwrap();
        assert_eq!(FieldId::by_header(0x8000, 4), Some(e));
        assert_eq!(FieldId::by_header(0, 2), Some(e));
        assert_eq!(
            FieldId::by_nxm_name("OXM_OF_PKT_REG4").unwrap().def().name,
            "xreg4"
        );
        assert_eq!(
            FieldId::by_name("tun_metadata63").unwrap().def().nxm,
            Some((1, 103))
        );
        // every header maps back to its own row
        for id in FieldId::all() {
            let (c, f) = id.def().wire_header();
            assert_eq!(FieldId::by_header(c, f), Some(id), "{}", id.def().name);
        }
    }
}
