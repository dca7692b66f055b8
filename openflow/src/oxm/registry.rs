//! The one declarative table of match fields (OVS `meta-flow.h` analogue).
//!
//! Each row: the constant naming it, the name ovs-ofctl prints in `set_field`, the NXM/OXM
//! name used in subfields (`NXM_NX_REG0[..]`), the NXM and OXM headers (class, field), the
//! value width in bytes, the number of meaningful bits, maskability, value formatting and
//! prerequisites. Rows are addressed by constants (`FieldId::REG14`, `FieldId::reg(n)`), so
//! code that builds flows never looks a field up by name; the name and header maps serve
//! text parsing and wire decoding only.

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
    pub name: &'static str,
    pub nxm_name: &'static str,
    /// `(class, field)` of the NXM header, if any.
    pub nxm: Option<(u16, u8)>,
    /// `(class, field)` of the OXM header, if any (preferred when encoding OF1.5).
    pub oxm: Option<(u16, u8)>,
    /// Bytes of a value on the wire.
    pub width: usize,
    /// Meaningful bits of a value.
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

    /// The header of the older NXM namespace when there is one (NX actions such as stack
    /// push/pop prefer it), else the OXM header.
    pub fn nxm_header(&self) -> (u16, u8) {
        self.nxm.or(self.oxm).unwrap_or((0, 0))
    }

    /// All ones over the meaningful bits.
    pub fn full_mask(&self) -> u128 {
        if self.n_bits >= 128 {
            u128::MAX
        } else {
            (1u128 << self.n_bits) - 1
        }
    }
}

/// Index of a row of the field table.
#[derive(Clone, Copy, Debug, Eq, PartialEq, Hash, PartialOrd, Ord)]
pub struct FieldId(pub u16);

const NXM0: u16 = 0x0000;
const NXM1: u16 = 0x0001;
const OXM: u16 = 0x8000;
const PKT_REGS: u16 = 0x8001;

macro_rules! fields {
    ($( $id:ident = $name:literal $nxm_name:literal nxm($($nc:expr, $nf:expr)?) oxm($($oc:expr, $of:expr)?)
        $w:literal / $bits:literal $mask:ident $kind:ident $pre:ident ;)*) => {
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        #[repr(u16)]
        enum Row { $($id,)* }

        #[allow(missing_docs)]
        impl FieldId {
            $( pub const $id: FieldId = FieldId(Row::$id as u16); )*
        }

        static DEFS: &[FieldDef] = &[$(
            FieldDef {
                name: $name,
                nxm_name: $nxm_name,
                nxm: fields!(@h $($nc, $nf)?),
                oxm: fields!(@h $($oc, $of)?),
                width: $w,
                n_bits: $bits,
                maskable: fields!(@m $mask),
                kind: Kind::$kind,
                prereq: Prereq::$pre,
            }
        ),*];
    };
    (@h) => { None };
    (@h $c:expr, $f:expr) => { Some(($c, $f)) };
    (@m mask) => { true };
    (@m exact) => { false };
}

fields! {
    IN_PORT = "in_port" "NXM_OF_IN_PORT" nxm(NXM0, 0) oxm() 2/16 exact Port None;
    IN_PORT_OXM = "in_port_oxm" "OXM_OF_IN_PORT" nxm() oxm(OXM, 0) 4/32 exact Port None;
    METADATA = "metadata" "OXM_OF_METADATA" nxm() oxm(OXM, 2) 8/64 mask Hex None;
    ETH_DST = "eth_dst" "NXM_OF_ETH_DST" nxm(NXM0, 1) oxm(OXM, 3) 6/48 mask Eth None;
    ETH_SRC = "eth_src" "NXM_OF_ETH_SRC" nxm(NXM0, 2) oxm(OXM, 4) 6/48 mask Eth None;
    ETH_TYPE = "eth_type" "NXM_OF_ETH_TYPE" nxm(NXM0, 3) oxm(OXM, 5) 2/16 exact Hex None;
    VLAN_TCI = "vlan_tci" "NXM_OF_VLAN_TCI" nxm(NXM0, 4) oxm() 2/16 mask Tci None;
    VLAN_VID = "vlan_vid" "OXM_OF_VLAN_VID" nxm() oxm(OXM, 6) 2/13 mask Dec None;
    VLAN_PCP = "vlan_pcp" "OXM_OF_VLAN_PCP" nxm() oxm(OXM, 7) 1/3 exact Dec None;
    NW_TOS = "nw_tos" "NXM_OF_IP_TOS" nxm(NXM0, 5) oxm() 1/8 exact Dec Ip;
    IP_DSCP = "ip_dscp" "OXM_OF_IP_DSCP" nxm() oxm(OXM, 8) 1/6 exact Dec Ip;
    NW_ECN = "nw_ecn" "NXM_NX_IP_ECN" nxm(NXM1, 28) oxm(OXM, 9) 1/2 exact Dec Ip;
    NW_PROTO = "nw_proto" "NXM_OF_IP_PROTO" nxm(NXM0, 6) oxm(OXM, 10) 1/8 exact Dec Ip;
    IP_SRC = "ip_src" "NXM_OF_IP_SRC" nxm(NXM0, 7) oxm(OXM, 11) 4/32 mask Ipv4 Ipv4;
    IP_DST = "ip_dst" "NXM_OF_IP_DST" nxm(NXM0, 8) oxm(OXM, 12) 4/32 mask Ipv4 Ipv4;
    TCP_SRC = "tcp_src" "NXM_OF_TCP_SRC" nxm(NXM0, 9) oxm(OXM, 13) 2/16 mask Dec Tcp;
    TCP_DST = "tcp_dst" "NXM_OF_TCP_DST" nxm(NXM0, 10) oxm(OXM, 14) 2/16 mask Dec Tcp;
    UDP_SRC = "udp_src" "NXM_OF_UDP_SRC" nxm(NXM0, 11) oxm(OXM, 15) 2/16 mask Dec Udp;
    UDP_DST = "udp_dst" "NXM_OF_UDP_DST" nxm(NXM0, 12) oxm(OXM, 16) 2/16 mask Dec Udp;
    SCTP_SRC = "sctp_src" "OXM_OF_SCTP_SRC" nxm() oxm(OXM, 17) 2/16 mask Dec Sctp;
    SCTP_DST = "sctp_dst" "OXM_OF_SCTP_DST" nxm() oxm(OXM, 18) 2/16 mask Dec Sctp;
    ICMP_TYPE = "icmp_type" "NXM_OF_ICMP_TYPE" nxm(NXM0, 13) oxm(OXM, 19) 1/8 exact Dec Icmpv4;
    ICMP_CODE = "icmp_code" "NXM_OF_ICMP_CODE" nxm(NXM0, 14) oxm(OXM, 20) 1/8 exact Dec Icmpv4;
    ARP_OP = "arp_op" "NXM_OF_ARP_OP" nxm(NXM0, 15) oxm(OXM, 21) 2/16 exact Dec Arp;
    ARP_SPA = "arp_spa" "NXM_OF_ARP_SPA" nxm(NXM0, 16) oxm(OXM, 22) 4/32 mask Ipv4 Arp;
    ARP_TPA = "arp_tpa" "NXM_OF_ARP_TPA" nxm(NXM0, 17) oxm(OXM, 23) 4/32 mask Ipv4 Arp;
    ARP_SHA = "arp_sha" "NXM_NX_ARP_SHA" nxm(NXM1, 17) oxm(OXM, 24) 6/48 mask Eth Arp;
    ARP_THA = "arp_tha" "NXM_NX_ARP_THA" nxm(NXM1, 18) oxm(OXM, 25) 6/48 mask Eth Arp;
    IPV6_SRC = "ipv6_src" "NXM_NX_IPV6_SRC" nxm(NXM1, 19) oxm(OXM, 26) 16/128 mask Ipv6 Ipv6;
    IPV6_DST = "ipv6_dst" "NXM_NX_IPV6_DST" nxm(NXM1, 20) oxm(OXM, 27) 16/128 mask Ipv6 Ipv6;
    IPV6_LABEL = "ipv6_label" "NXM_NX_IPV6_LABEL" nxm(NXM1, 27) oxm(OXM, 28) 4/20 mask Label Ipv6;
    ICMPV6_TYPE = "icmpv6_type" "NXM_NX_ICMPV6_TYPE" nxm(NXM1, 21) oxm(OXM, 29) 1/8 exact Dec Icmpv6;
    ICMPV6_CODE = "icmpv6_code" "NXM_NX_ICMPV6_CODE" nxm(NXM1, 22) oxm(OXM, 30) 1/8 exact Dec Icmpv6;
    ND_TARGET = "nd_target" "NXM_NX_ND_TARGET" nxm(NXM1, 23) oxm(OXM, 31) 16/128 mask Ipv6 Nd;
    ND_SLL = "nd_sll" "NXM_NX_ND_SLL" nxm(NXM1, 24) oxm(OXM, 32) 6/48 mask Eth NdSolicit;
    ND_TLL = "nd_tll" "NXM_NX_ND_TLL" nxm(NXM1, 25) oxm(OXM, 33) 6/48 mask Eth NdAdvert;
    TUN_ID = "tun_id" "NXM_NX_TUN_ID" nxm(NXM1, 16) oxm(OXM, 38) 8/64 mask Hex None;
    IPV6_EXTHDR = "ipv6_exthdr" "OXM_OF_IPV6_EXTHDR" nxm() oxm(OXM, 39) 2/9 mask Hex Ipv6;
    TCP_FLAGS = "tcp_flags" "NXM_NX_TCP_FLAGS" nxm(NXM1, 34) oxm(OXM, 42) 2/12 mask TcpFlags Tcp;
    NW_FRAG = "nw_frag" "NXM_NX_IP_FRAG" nxm(NXM1, 26) oxm() 1/2 mask Frag Ip;
    NW_TTL = "nw_ttl" "NXM_NX_IP_TTL" nxm(NXM1, 29) oxm() 1/8 exact Dec Ip;
    TUN_SRC = "tun_src" "NXM_NX_TUN_IPV4_SRC" nxm(NXM1, 31) oxm() 4/32 mask Ipv4 None;
    TUN_DST = "tun_dst" "NXM_NX_TUN_IPV4_DST" nxm(NXM1, 32) oxm() 4/32 mask Ipv4 None;
    PKT_MARK = "pkt_mark" "NXM_NX_PKT_MARK" nxm(NXM1, 33) oxm() 4/32 mask Hex None;
    DP_HASH = "dp_hash" "NXM_NX_DP_HASH" nxm(NXM1, 35) oxm() 4/32 mask Hex None;
    RECIRC_ID = "recirc_id" "NXM_NX_RECIRC_ID" nxm(NXM1, 36) oxm() 4/32 exact Hex None;
    CONJ_ID = "conj_id" "NXM_NX_CONJ_ID" nxm(NXM1, 37) oxm() 4/32 exact Dec None;
    TUN_GBP_ID = "tun_gbp_id" "NXM_NX_TUN_GBP_ID" nxm(NXM1, 38) oxm() 2/16 mask Dec None;
    TUN_GBP_FLAGS = "tun_gbp_flags" "NXM_NX_TUN_GBP_FLAGS" nxm(NXM1, 39) oxm() 1/8 mask Hex None;
    TUN_FLAGS = "tun_flags" "NXM_NX_TUN_FLAGS" nxm(NXM1, 104) oxm() 2/16 mask Hex None;
    CT_STATE = "ct_state" "NXM_NX_CT_STATE" nxm(NXM1, 105) oxm() 4/32 mask CtState None;
    CT_ZONE = "ct_zone" "NXM_NX_CT_ZONE" nxm(NXM1, 106) oxm() 2/16 exact Dec None;
    CT_MARK = "ct_mark" "NXM_NX_CT_MARK" nxm(NXM1, 107) oxm() 4/32 mask Hex None;
    CT_LABEL = "ct_label" "NXM_NX_CT_LABEL" nxm(NXM1, 108) oxm() 16/128 mask Hex None;
    TUN_IPV6_SRC = "tun_ipv6_src" "NXM_NX_TUN_IPV6_SRC" nxm(NXM1, 109) oxm() 16/128 mask Ipv6 None;
    TUN_IPV6_DST = "tun_ipv6_dst" "NXM_NX_TUN_IPV6_DST" nxm(NXM1, 110) oxm() 16/128 mask Ipv6 None;
    CT_NW_PROTO = "ct_nw_proto" "NXM_NX_CT_NW_PROTO" nxm(NXM1, 119) oxm() 1/8 exact Dec None;
    CT_NW_SRC = "ct_nw_src" "NXM_NX_CT_NW_SRC" nxm(NXM1, 120) oxm() 4/32 mask Ipv4 None;
    CT_NW_DST = "ct_nw_dst" "NXM_NX_CT_NW_DST" nxm(NXM1, 121) oxm() 4/32 mask Ipv4 None;
    CT_IPV6_SRC = "ct_ipv6_src" "NXM_NX_CT_IPV6_SRC" nxm(NXM1, 122) oxm() 16/128 mask Ipv6 None;
    CT_IPV6_DST = "ct_ipv6_dst" "NXM_NX_CT_IPV6_DST" nxm(NXM1, 123) oxm() 16/128 mask Ipv6 None;
    CT_TP_SRC = "ct_tp_src" "NXM_NX_CT_TP_SRC" nxm(NXM1, 124) oxm() 2/16 mask Dec None;
    CT_TP_DST = "ct_tp_dst" "NXM_NX_CT_TP_DST" nxm(NXM1, 125) oxm() 2/16 mask Dec None;
    REG0 = "reg0" "NXM_NX_REG0" nxm(NXM1, 0) oxm() 4/32 mask Hex None;
    REG1 = "reg1" "NXM_NX_REG1" nxm(NXM1, 1) oxm() 4/32 mask Hex None;
    REG2 = "reg2" "NXM_NX_REG2" nxm(NXM1, 2) oxm() 4/32 mask Hex None;
    REG3 = "reg3" "NXM_NX_REG3" nxm(NXM1, 3) oxm() 4/32 mask Hex None;
    REG4 = "reg4" "NXM_NX_REG4" nxm(NXM1, 4) oxm() 4/32 mask Hex None;
    REG5 = "reg5" "NXM_NX_REG5" nxm(NXM1, 5) oxm() 4/32 mask Hex None;
    REG6 = "reg6" "NXM_NX_REG6" nxm(NXM1, 6) oxm() 4/32 mask Hex None;
    REG7 = "reg7" "NXM_NX_REG7" nxm(NXM1, 7) oxm() 4/32 mask Hex None;
    REG8 = "reg8" "NXM_NX_REG8" nxm(NXM1, 8) oxm() 4/32 mask Hex None;
    REG9 = "reg9" "NXM_NX_REG9" nxm(NXM1, 9) oxm() 4/32 mask Hex None;
    REG10 = "reg10" "NXM_NX_REG10" nxm(NXM1, 10) oxm() 4/32 mask Hex None;
    REG11 = "reg11" "NXM_NX_REG11" nxm(NXM1, 11) oxm() 4/32 mask Hex None;
    REG12 = "reg12" "NXM_NX_REG12" nxm(NXM1, 12) oxm() 4/32 mask Hex None;
    REG13 = "reg13" "NXM_NX_REG13" nxm(NXM1, 13) oxm() 4/32 mask Hex None;
    REG14 = "reg14" "NXM_NX_REG14" nxm(NXM1, 14) oxm() 4/32 mask Hex None;
    REG15 = "reg15" "NXM_NX_REG15" nxm(NXM1, 15) oxm() 4/32 mask Hex None;
    XREG0 = "xreg0" "OXM_OF_PKT_REG0" nxm() oxm(PKT_REGS, 0) 8/64 mask Hex None;
    XREG1 = "xreg1" "OXM_OF_PKT_REG1" nxm() oxm(PKT_REGS, 1) 8/64 mask Hex None;
    XREG2 = "xreg2" "OXM_OF_PKT_REG2" nxm() oxm(PKT_REGS, 2) 8/64 mask Hex None;
    XREG3 = "xreg3" "OXM_OF_PKT_REG3" nxm() oxm(PKT_REGS, 3) 8/64 mask Hex None;
    XREG4 = "xreg4" "OXM_OF_PKT_REG4" nxm() oxm(PKT_REGS, 4) 8/64 mask Hex None;
    XREG5 = "xreg5" "OXM_OF_PKT_REG5" nxm() oxm(PKT_REGS, 5) 8/64 mask Hex None;
    XREG6 = "xreg6" "OXM_OF_PKT_REG6" nxm() oxm(PKT_REGS, 6) 8/64 mask Hex None;
    XREG7 = "xreg7" "OXM_OF_PKT_REG7" nxm() oxm(PKT_REGS, 7) 8/64 mask Hex None;
    XXREG0 = "xxreg0" "NXM_NX_XXREG0" nxm(NXM1, 111) oxm() 16/128 mask Hex None;
    XXREG1 = "xxreg1" "NXM_NX_XXREG1" nxm(NXM1, 112) oxm() 16/128 mask Hex None;
    XXREG2 = "xxreg2" "NXM_NX_XXREG2" nxm(NXM1, 113) oxm() 16/128 mask Hex None;
    XXREG3 = "xxreg3" "NXM_NX_XXREG3" nxm(NXM1, 114) oxm() 16/128 mask Hex None;
    TUN_METADATA0 = "tun_metadata0" "NXM_NX_TUN_METADATA0" nxm(NXM1, 40) oxm() 124/992 mask Hex None;
    TUN_METADATA1 = "tun_metadata1" "NXM_NX_TUN_METADATA1" nxm(NXM1, 41) oxm() 124/992 mask Hex None;
    TUN_METADATA2 = "tun_metadata2" "NXM_NX_TUN_METADATA2" nxm(NXM1, 42) oxm() 124/992 mask Hex None;
    TUN_METADATA3 = "tun_metadata3" "NXM_NX_TUN_METADATA3" nxm(NXM1, 43) oxm() 124/992 mask Hex None;
    TUN_METADATA4 = "tun_metadata4" "NXM_NX_TUN_METADATA4" nxm(NXM1, 44) oxm() 124/992 mask Hex None;
    TUN_METADATA5 = "tun_metadata5" "NXM_NX_TUN_METADATA5" nxm(NXM1, 45) oxm() 124/992 mask Hex None;
    TUN_METADATA6 = "tun_metadata6" "NXM_NX_TUN_METADATA6" nxm(NXM1, 46) oxm() 124/992 mask Hex None;
    TUN_METADATA7 = "tun_metadata7" "NXM_NX_TUN_METADATA7" nxm(NXM1, 47) oxm() 124/992 mask Hex None;
    TUN_METADATA8 = "tun_metadata8" "NXM_NX_TUN_METADATA8" nxm(NXM1, 48) oxm() 124/992 mask Hex None;
    TUN_METADATA9 = "tun_metadata9" "NXM_NX_TUN_METADATA9" nxm(NXM1, 49) oxm() 124/992 mask Hex None;
    TUN_METADATA10 = "tun_metadata10" "NXM_NX_TUN_METADATA10" nxm(NXM1, 50) oxm() 124/992 mask Hex None;
    TUN_METADATA11 = "tun_metadata11" "NXM_NX_TUN_METADATA11" nxm(NXM1, 51) oxm() 124/992 mask Hex None;
    TUN_METADATA12 = "tun_metadata12" "NXM_NX_TUN_METADATA12" nxm(NXM1, 52) oxm() 124/992 mask Hex None;
    TUN_METADATA13 = "tun_metadata13" "NXM_NX_TUN_METADATA13" nxm(NXM1, 53) oxm() 124/992 mask Hex None;
    TUN_METADATA14 = "tun_metadata14" "NXM_NX_TUN_METADATA14" nxm(NXM1, 54) oxm() 124/992 mask Hex None;
    TUN_METADATA15 = "tun_metadata15" "NXM_NX_TUN_METADATA15" nxm(NXM1, 55) oxm() 124/992 mask Hex None;
    TUN_METADATA16 = "tun_metadata16" "NXM_NX_TUN_METADATA16" nxm(NXM1, 56) oxm() 124/992 mask Hex None;
    TUN_METADATA17 = "tun_metadata17" "NXM_NX_TUN_METADATA17" nxm(NXM1, 57) oxm() 124/992 mask Hex None;
    TUN_METADATA18 = "tun_metadata18" "NXM_NX_TUN_METADATA18" nxm(NXM1, 58) oxm() 124/992 mask Hex None;
    TUN_METADATA19 = "tun_metadata19" "NXM_NX_TUN_METADATA19" nxm(NXM1, 59) oxm() 124/992 mask Hex None;
    TUN_METADATA20 = "tun_metadata20" "NXM_NX_TUN_METADATA20" nxm(NXM1, 60) oxm() 124/992 mask Hex None;
    TUN_METADATA21 = "tun_metadata21" "NXM_NX_TUN_METADATA21" nxm(NXM1, 61) oxm() 124/992 mask Hex None;
    TUN_METADATA22 = "tun_metadata22" "NXM_NX_TUN_METADATA22" nxm(NXM1, 62) oxm() 124/992 mask Hex None;
    TUN_METADATA23 = "tun_metadata23" "NXM_NX_TUN_METADATA23" nxm(NXM1, 63) oxm() 124/992 mask Hex None;
    TUN_METADATA24 = "tun_metadata24" "NXM_NX_TUN_METADATA24" nxm(NXM1, 64) oxm() 124/992 mask Hex None;
    TUN_METADATA25 = "tun_metadata25" "NXM_NX_TUN_METADATA25" nxm(NXM1, 65) oxm() 124/992 mask Hex None;
    TUN_METADATA26 = "tun_metadata26" "NXM_NX_TUN_METADATA26" nxm(NXM1, 66) oxm() 124/992 mask Hex None;
    TUN_METADATA27 = "tun_metadata27" "NXM_NX_TUN_METADATA27" nxm(NXM1, 67) oxm() 124/992 mask Hex None;
    TUN_METADATA28 = "tun_metadata28" "NXM_NX_TUN_METADATA28" nxm(NXM1, 68) oxm() 124/992 mask Hex None;
    TUN_METADATA29 = "tun_metadata29" "NXM_NX_TUN_METADATA29" nxm(NXM1, 69) oxm() 124/992 mask Hex None;
    TUN_METADATA30 = "tun_metadata30" "NXM_NX_TUN_METADATA30" nxm(NXM1, 70) oxm() 124/992 mask Hex None;
    TUN_METADATA31 = "tun_metadata31" "NXM_NX_TUN_METADATA31" nxm(NXM1, 71) oxm() 124/992 mask Hex None;
    TUN_METADATA32 = "tun_metadata32" "NXM_NX_TUN_METADATA32" nxm(NXM1, 72) oxm() 124/992 mask Hex None;
    TUN_METADATA33 = "tun_metadata33" "NXM_NX_TUN_METADATA33" nxm(NXM1, 73) oxm() 124/992 mask Hex None;
    TUN_METADATA34 = "tun_metadata34" "NXM_NX_TUN_METADATA34" nxm(NXM1, 74) oxm() 124/992 mask Hex None;
    TUN_METADATA35 = "tun_metadata35" "NXM_NX_TUN_METADATA35" nxm(NXM1, 75) oxm() 124/992 mask Hex None;
    TUN_METADATA36 = "tun_metadata36" "NXM_NX_TUN_METADATA36" nxm(NXM1, 76) oxm() 124/992 mask Hex None;
    TUN_METADATA37 = "tun_metadata37" "NXM_NX_TUN_METADATA37" nxm(NXM1, 77) oxm() 124/992 mask Hex None;
    TUN_METADATA38 = "tun_metadata38" "NXM_NX_TUN_METADATA38" nxm(NXM1, 78) oxm() 124/992 mask Hex None;
    TUN_METADATA39 = "tun_metadata39" "NXM_NX_TUN_METADATA39" nxm(NXM1, 79) oxm() 124/992 mask Hex None;
    TUN_METADATA40 = "tun_metadata40" "NXM_NX_TUN_METADATA40" nxm(NXM1, 80) oxm() 124/992 mask Hex None;
    TUN_METADATA41 = "tun_metadata41" "NXM_NX_TUN_METADATA41" nxm(NXM1, 81) oxm() 124/992 mask Hex None;
    TUN_METADATA42 = "tun_metadata42" "NXM_NX_TUN_METADATA42" nxm(NXM1, 82) oxm() 124/992 mask Hex None;
    TUN_METADATA43 = "tun_metadata43" "NXM_NX_TUN_METADATA43" nxm(NXM1, 83) oxm() 124/992 mask Hex None;
    TUN_METADATA44 = "tun_metadata44" "NXM_NX_TUN_METADATA44" nxm(NXM1, 84) oxm() 124/992 mask Hex None;
    TUN_METADATA45 = "tun_metadata45" "NXM_NX_TUN_METADATA45" nxm(NXM1, 85) oxm() 124/992 mask Hex None;
    TUN_METADATA46 = "tun_metadata46" "NXM_NX_TUN_METADATA46" nxm(NXM1, 86) oxm() 124/992 mask Hex None;
    TUN_METADATA47 = "tun_metadata47" "NXM_NX_TUN_METADATA47" nxm(NXM1, 87) oxm() 124/992 mask Hex None;
    TUN_METADATA48 = "tun_metadata48" "NXM_NX_TUN_METADATA48" nxm(NXM1, 88) oxm() 124/992 mask Hex None;
    TUN_METADATA49 = "tun_metadata49" "NXM_NX_TUN_METADATA49" nxm(NXM1, 89) oxm() 124/992 mask Hex None;
    TUN_METADATA50 = "tun_metadata50" "NXM_NX_TUN_METADATA50" nxm(NXM1, 90) oxm() 124/992 mask Hex None;
    TUN_METADATA51 = "tun_metadata51" "NXM_NX_TUN_METADATA51" nxm(NXM1, 91) oxm() 124/992 mask Hex None;
    TUN_METADATA52 = "tun_metadata52" "NXM_NX_TUN_METADATA52" nxm(NXM1, 92) oxm() 124/992 mask Hex None;
    TUN_METADATA53 = "tun_metadata53" "NXM_NX_TUN_METADATA53" nxm(NXM1, 93) oxm() 124/992 mask Hex None;
    TUN_METADATA54 = "tun_metadata54" "NXM_NX_TUN_METADATA54" nxm(NXM1, 94) oxm() 124/992 mask Hex None;
    TUN_METADATA55 = "tun_metadata55" "NXM_NX_TUN_METADATA55" nxm(NXM1, 95) oxm() 124/992 mask Hex None;
    TUN_METADATA56 = "tun_metadata56" "NXM_NX_TUN_METADATA56" nxm(NXM1, 96) oxm() 124/992 mask Hex None;
    TUN_METADATA57 = "tun_metadata57" "NXM_NX_TUN_METADATA57" nxm(NXM1, 97) oxm() 124/992 mask Hex None;
    TUN_METADATA58 = "tun_metadata58" "NXM_NX_TUN_METADATA58" nxm(NXM1, 98) oxm() 124/992 mask Hex None;
    TUN_METADATA59 = "tun_metadata59" "NXM_NX_TUN_METADATA59" nxm(NXM1, 99) oxm() 124/992 mask Hex None;
    TUN_METADATA60 = "tun_metadata60" "NXM_NX_TUN_METADATA60" nxm(NXM1, 100) oxm() 124/992 mask Hex None;
    TUN_METADATA61 = "tun_metadata61" "NXM_NX_TUN_METADATA61" nxm(NXM1, 101) oxm() 124/992 mask Hex None;
    TUN_METADATA62 = "tun_metadata62" "NXM_NX_TUN_METADATA62" nxm(NXM1, 102) oxm() 124/992 mask Hex None;
    TUN_METADATA63 = "tun_metadata63" "NXM_NX_TUN_METADATA63" nxm(NXM1, 103) oxm() 124/992 mask Hex None;
}

impl FieldId {
    pub fn def(self) -> &'static FieldDef {
        &DEFS[self.0 as usize]
    }
    /// Meaningful bits of a value.
    pub fn bits(self) -> u32 {
        u32::from(self.def().n_bits)
    }
    /// Bytes of a value on the wire.
    pub fn bytes(self) -> usize {
        self.def().width
    }
    /// `regN` (N < 16).
    pub const fn reg(n: u8) -> Self {
        Self(Self::REG0.0 + n as u16)
    }
    /// `xregN` (N < 8): `reg(2N)` in the high half, `reg(2N+1)` in the low half.
    pub const fn xreg(n: u8) -> Self {
        Self(Self::XREG0.0 + n as u16)
    }
    /// `xxregN` (N < 4): `reg(4N)`..`reg(4N+3)`, most significant first.
    pub const fn xxreg(n: u8) -> Self {
        Self(Self::XXREG0.0 + n as u16)
    }
    /// `tun_metadataN` (N < 64).
    pub const fn tun_metadata(n: u8) -> Self {
        Self(Self::TUN_METADATA0.0 + n as u16)
    }
    /// Which register family member this is: `(family, index)`.
    pub fn register(self) -> Option<(RegFamily, u8)> {
        let in_range = |first: FieldId, n: u16| {
            (self.0 >= first.0 && self.0 < first.0 + n).then(|| (self.0 - first.0) as u8)
        };
        in_range(Self::REG0, 16)
            .map(|i| (RegFamily::Reg, i))
            .or_else(|| in_range(Self::XREG0, 8).map(|i| (RegFamily::Xreg, i)))
            .or_else(|| in_range(Self::XXREG0, 4).map(|i| (RegFamily::Xxreg, i)))
    }
    pub fn by_name(name: &str) -> Option<Self> {
        LOOKUP.by_name.get(name).copied()
    }
    /// Lookup by NXM/OXM name as printed in subfields (`NXM_NX_REG0`, `OXM_OF_METADATA`).
    pub fn by_nxm_name(name: &str) -> Option<Self> {
        LOOKUP.by_nxm_name.get(name).copied()
    }
    pub fn by_header(class: u16, field: u8) -> Option<Self> {
        LOOKUP.by_header.get(&(class, field)).copied()
    }
    /// All rows (for tests and property generators).
    pub fn all() -> impl Iterator<Item = FieldId> {
        (0..DEFS.len() as u16).map(FieldId)
    }
}

/// The register families that overlap: `xreg` and `xxreg` are views of the 32-bit `reg`s.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum RegFamily {
    Reg,
    Xreg,
    Xxreg,
}

/// Name and header maps, for text parsing and wire decoding.
struct Lookup {
    by_name: HashMap<&'static str, FieldId>,
    by_nxm_name: HashMap<String, FieldId>,
    by_header: HashMap<(u16, u8), FieldId>,
}

static LOOKUP: LazyLock<Lookup> = LazyLock::new(|| {
    let mut by_name = HashMap::new();
    let mut by_nxm_name = HashMap::new();
    let mut by_header = HashMap::new();
    for id in FieldId::all() {
        let d = id.def();
        by_name.insert(d.name, id);
        by_nxm_name.insert(d.nxm_name.to_owned(), id);
        if let Some((c, f)) = d.oxm {
            by_nxm_name.insert(oxm_name(c, d.nxm_name), id);
            by_header.insert((c, f), id);
        }
        if let Some(h) = d.nxm {
            by_header.insert(h, id);
        }
    }
    // Names accepted on input besides the canonical ones.
    for (alias, name) in ALIASES {
        if let Some(id) = by_name.get(*name).copied() {
            by_name.insert(alias, id);
        }
    }
    Lookup {
        by_name,
        by_nxm_name,
        by_header,
    }
});

/// The `OXM_OF_*` spelling of a field that also has an NXM name, so both parse.
fn oxm_name(class: u16, nxm_name: &str) -> String {
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
        assert_eq!(r, FieldId::REG15);
        assert_eq!(r, FieldId::reg(15));
        assert_eq!(r.def().nxm_name, "NXM_NX_REG15");
        assert_eq!(FieldId::by_nxm_name("NXM_NX_REG15"), Some(r));
        assert_eq!(FieldId::by_header(1, 15), Some(r));
        let e = FieldId::by_name("eth_src").unwrap();
        assert_eq!(e, FieldId::ETH_SRC);
        assert_eq!(FieldId::by_header(0x8000, 4), Some(e));
        assert_eq!(FieldId::by_header(0, 2), Some(e));
        assert_eq!(
            FieldId::by_nxm_name("OXM_OF_PKT_REG4"),
            Some(FieldId::xreg(4))
        );
        assert_eq!(FieldId::xxreg(3).def().name, "xxreg3");
        assert_eq!(FieldId::tun_metadata(63).def().nxm, Some((1, 103)));
        assert_eq!(FieldId::xreg(2).register(), Some((RegFamily::Xreg, 2)));
        assert_eq!(FieldId::METADATA.register(), None);
        // every header maps back to its own row
        for id in FieldId::all() {
            let (c, f) = id.def().wire_header();
            assert_eq!(FieldId::by_header(c, f), Some(id), "{}", id.def().name);
        }
    }
}
