//! The OVS fields that OVN symbols live on: widths, names as `ovs-ofctl` prints them, and
//! their NXM/OXM headers for OpenFlow 1.5 wire encoding (nested controller actions).

/// An OVS (meta-flow) field used by OVN.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum MfField {
    InPort,
    Metadata,
    Reg(u8),
    Xreg(u8),
    Xxreg(u8),
    PktMark,
    CtState,
    CtMark,
    CtLabel,
    EthSrc,
    EthDst,
    EthType,
    VlanTci,
    IpProto,
    IpDscp,
    IpEcn,
    IpTtl,
    IpFrag,
    Ipv4Src,
    Ipv4Dst,
    Ipv6Src,
    Ipv6Dst,
    Ipv6Label,
    ArpOp,
    ArpSpa,
    ArpTpa,
    ArpSha,
    ArpTha,
    NdTarget,
    NdSll,
    NdTll,
    TcpSrc,
    TcpDst,
    TcpFlags,
    UdpSrc,
    UdpDst,
    SctpSrc,
    SctpDst,
    Icmpv4Type,
    Icmpv4Code,
    Icmpv6Type,
    Icmpv6Code,
}

/// How `ovs-ofctl` prints a value of a field in `set_field`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueFormat {
    Hex,
    Decimal,
    Ipv4,
    Ipv6,
    Ethernet,
}

use MfField::*;

impl MfField {
    pub fn width(self) -> u32 {
        match self {
            InPort | EthType | VlanTci | ArpOp | TcpSrc | TcpDst | UdpSrc | UdpDst | SctpSrc
            | SctpDst => 16,
            Metadata | Xreg(_) => 64,
            Reg(_) | PktMark | CtState | CtMark | Ipv4Src | Ipv4Dst | ArpSpa | ArpTpa => 32,
            Xxreg(_) | CtLabel | Ipv6Src | Ipv6Dst | NdTarget => 128,
            EthSrc | EthDst | ArpSha | ArpTha | NdSll | NdTll => 48,
            IpProto | IpTtl | Icmpv4Type | Icmpv4Code | Icmpv6Type | Icmpv6Code => 8,
            IpDscp => 6,
            IpEcn | IpFrag => 2,
            Ipv6Label => 20,
            TcpFlags => 12,
        }
    }

    /// OVS allows arbitrary masks on the field (OVN "ordinal" level).
    pub fn maskable(self) -> bool {
        !matches!(
            self,
            InPort
                | EthType
                | IpProto
                | IpDscp
                | IpEcn
                | IpTtl
                | ArpOp
                | Icmpv4Type
                | Icmpv4Code
                | Icmpv6Type
                | Icmpv6Code
        )
    }

    pub fn writable(self) -> bool {
        !matches!(self, EthType | IpProto | IpFrag | TcpFlags | CtState)
    }

    /// The name `set_field` uses.
    pub fn name(self) -> String {
        let s = match self {
            InPort => "in_port",
            Metadata => "metadata",
            Reg(n) => return format!("reg{n}"),
            Xreg(n) => return format!("xreg{n}"),
            Xxreg(n) => return format!("xxreg{n}"),
            PktMark => "pkt_mark",
            CtState => "ct_state",
            CtMark => "ct_mark",
            CtLabel => "ct_label",
            EthSrc => "eth_src",
            EthDst => "eth_dst",
            EthType => "eth_type",
            VlanTci => "vlan_tci",
            IpProto => "nw_proto",
            IpDscp => "ip_dscp",
            IpEcn => "nw_ecn",
            IpTtl => "nw_ttl",
            IpFrag => "ip_frag",
            Ipv4Src => "ip_src",
            Ipv4Dst => "ip_dst",
            Ipv6Src => "ipv6_src",
            Ipv6Dst => "ipv6_dst",
            Ipv6Label => "ipv6_label",
            ArpOp => "arp_op",
            ArpSpa => "arp_spa",
            ArpTpa => "arp_tpa",
            ArpSha => "arp_sha",
            ArpTha => "arp_tha",
            NdTarget => "nd_target",
            NdSll => "nd_sll",
            NdTll => "nd_tll",
            TcpSrc => "tcp_src",
            TcpDst => "tcp_dst",
            TcpFlags => "tcp_flags",
            UdpSrc => "udp_src",
            UdpDst => "udp_dst",
            SctpSrc => "sctp_src",
            SctpDst => "sctp_dst",
            Icmpv4Type => "icmp_type",
            Icmpv4Code => "icmp_code",
            Icmpv6Type => "icmpv6_type",
            Icmpv6Code => "icmpv6_code",
        };
        s.to_string()
    }

    /// The NXM (or OXM, when the field has no NXM header) name used by `move`, `push`, `pop`.
    pub fn nxm_name(self) -> String {
        let s = match self {
            InPort => "NXM_OF_IN_PORT",
            Metadata => "OXM_OF_METADATA",
            Reg(n) => return format!("NXM_NX_REG{n}"),
            Xreg(n) => return format!("OXM_OF_PKT_REG{n}"),
            Xxreg(n) => return format!("NXM_NX_XXREG{n}"),
            PktMark => "NXM_NX_PKT_MARK",
            CtState => "NXM_NX_CT_STATE",
            CtMark => "NXM_NX_CT_MARK",
            CtLabel => "NXM_NX_CT_LABEL",
            EthSrc => "NXM_OF_ETH_SRC",
            EthDst => "NXM_OF_ETH_DST",
            EthType => "NXM_OF_ETH_TYPE",
            VlanTci => "NXM_OF_VLAN_TCI",
            IpProto => "NXM_OF_IP_PROTO",
            IpDscp => "OXM_OF_IP_DSCP",
            IpEcn => "NXM_NX_IP_ECN",
            IpTtl => "NXM_NX_IP_TTL",
            IpFrag => "NXM_NX_IP_FRAG",
            Ipv4Src => "NXM_OF_IP_SRC",
            Ipv4Dst => "NXM_OF_IP_DST",
            Ipv6Src => "NXM_NX_IPV6_SRC",
            Ipv6Dst => "NXM_NX_IPV6_DST",
            Ipv6Label => "NXM_NX_IPV6_LABEL",
            ArpOp => "NXM_OF_ARP_OP",
            ArpSpa => "NXM_OF_ARP_SPA",
            ArpTpa => "NXM_OF_ARP_TPA",
            ArpSha => "NXM_NX_ARP_SHA",
            ArpTha => "NXM_NX_ARP_THA",
            NdTarget => "NXM_NX_ND_TARGET",
            NdSll => "NXM_NX_ND_SLL",
            NdTll => "NXM_NX_ND_TLL",
            TcpSrc => "NXM_OF_TCP_SRC",
            TcpDst => "NXM_OF_TCP_DST",
            TcpFlags => "NXM_NX_TCP_FLAGS",
            UdpSrc => "NXM_OF_UDP_SRC",
            UdpDst => "NXM_OF_UDP_DST",
            SctpSrc => "OXM_OF_SCTP_SRC",
            SctpDst => "OXM_OF_SCTP_DST",
            Icmpv4Type => "NXM_OF_ICMP_TYPE",
            Icmpv4Code => "NXM_OF_ICMP_CODE",
            Icmpv6Type => "NXM_NX_ICMPV6_TYPE",
            Icmpv6Code => "NXM_NX_ICMPV6_CODE",
        };
        s.to_string()
    }

    pub fn value_format(self) -> ValueFormat {
        match self {
            EthSrc | EthDst | ArpSha | ArpTha | NdSll | NdTll => ValueFormat::Ethernet,
            Ipv4Src | Ipv4Dst | ArpSpa | ArpTpa => ValueFormat::Ipv4,
            Ipv6Src | Ipv6Dst | NdTarget => ValueFormat::Ipv6,
            InPort | IpProto | IpDscp | IpEcn | IpTtl | ArpOp | TcpSrc | TcpDst | UdpSrc
            | UdpDst | SctpSrc | SctpDst | Icmpv4Type | Icmpv4Code | Icmpv6Type | Icmpv6Code => {
                ValueFormat::Decimal
            }
            _ => ValueFormat::Hex,
        }
    }

    /// (class, field) of the NXM/OXM header in the old NXM namespace preferred by NX actions
    /// such as stack push/pop.
    pub fn nxm_header(self) -> (u16, u8) {
        match self {
            InPort => (0, 0),
            EthDst => (0, 1),
            EthSrc => (0, 2),
            EthType => (0, 3),
            VlanTci => (0, 4),
            IpProto => (0, 6),
            Ipv4Src => (0, 7),
            Ipv4Dst => (0, 8),
            TcpSrc => (0, 9),
            TcpDst => (0, 10),
            UdpSrc => (0, 11),
            UdpDst => (0, 12),
            Icmpv4Type => (0, 13),
            Icmpv4Code => (0, 14),
            ArpOp => (0, 15),
            ArpSpa => (0, 16),
            ArpTpa => (0, 17),
            Reg(n) => (1, n),
            ArpSha => (1, 17),
            ArpTha => (1, 18),
            Ipv6Src => (1, 19),
            Ipv6Dst => (1, 20),
            Icmpv6Type => (1, 21),
            Icmpv6Code => (1, 22),
            NdTarget => (1, 23),
            NdSll => (1, 24),
            NdTll => (1, 25),
            IpFrag => (1, 26),
            Ipv6Label => (1, 27),
            IpEcn => (1, 28),
            IpTtl => (1, 29),
            PktMark => (1, 33),
            TcpFlags => (1, 34),
            CtState => (1, 105),
            CtMark => (1, 107),
            CtLabel => (1, 108),
            Xxreg(n) => (1, 111 + n),
            Metadata => (0x8000, 2),
            IpDscp => (0x8000, 8),
            SctpSrc => (0x8000, 17),
            SctpDst => (0x8000, 18),
            Xreg(n) => (0x8001, n),
        }
    }

    /// (class, field) that OVS picks for OpenFlow 1.5 `set_field`/`copy_field`.
    pub fn oxm15_header(self) -> (u16, u8) {
        match self {
            InPort => (0x8000, 0),
            Metadata => (0x8000, 2),
            EthDst => (0x8000, 3),
            EthSrc => (0x8000, 4),
            EthType => (0x8000, 5),
            IpDscp => (0x8000, 8),
            IpEcn => (0x8000, 9),
            IpProto => (0x8000, 10),
            Ipv4Src => (0x8000, 11),
            Ipv4Dst => (0x8000, 12),
            TcpSrc => (0x8000, 13),
            TcpDst => (0x8000, 14),
            UdpSrc => (0x8000, 15),
            UdpDst => (0x8000, 16),
            SctpSrc => (0x8000, 17),
            SctpDst => (0x8000, 18),
            Icmpv4Type => (0x8000, 19),
            Icmpv4Code => (0x8000, 20),
            ArpOp => (0x8000, 21),
            ArpSpa => (0x8000, 22),
            ArpTpa => (0x8000, 23),
            ArpSha => (0x8000, 24),
            ArpTha => (0x8000, 25),
            Ipv6Src => (0x8000, 26),
            Ipv6Dst => (0x8000, 27),
            Ipv6Label => (0x8000, 28),
            Icmpv6Type => (0x8000, 29),
            Icmpv6Code => (0x8000, 30),
            NdTarget => (0x8000, 31),
            NdSll => (0x8000, 32),
            NdTll => (0x8000, 33),
            TcpFlags => (0x8000, 42),
            other => other.nxm_header(),
        }
    }

    /// Bytes that a value of this field takes on the wire.
    pub fn n_bytes(self) -> usize {
        match self {
            IpDscp | IpEcn | IpFrag | IpProto | IpTtl | Icmpv4Type | Icmpv4Code | Icmpv6Type
            | Icmpv6Code => 1,
            TcpFlags | InPort | EthType | VlanTci | ArpOp | TcpSrc | TcpDst | UdpSrc | UdpDst
            | SctpSrc | SctpDst => 2,
            Ipv6Label => 4,
            other => other.width().div_ceil(8) as usize,
        }
    }
}
