//! The logical symbol table: fields, subfields, predicates, string fields, of OVN 23.03.1 and
//! of the later releases the agent speaks. One table holds every release's symbols; each
//! symbol knows the release that introduced it, and a symbol a release defines anew is kept
//! under `name@release` ([`super::dialect::Dialect`] reads the table for one release).

use std::collections::HashMap;
use std::sync::OnceLock;

use openflow::oxm::FieldId;

/// Which operators a symbol accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Ordinal,
    Nominal,
    Boolean,
}

/// Where a symbol may be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteScope {
    ReadOnly,
    Default,
    CtCommit,
}

/// OVN-internal fields that are assigned but compile to controller actions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OvnField {
    Icmp4FragMtu,
    Icmp6FragMtu,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SymKind {
    Field(FieldId),
    /// A port name field on a 32-bit register (inport/outport).
    String(FieldId),
    Subfield {
        parent: String,
        lo: u32,
    },
    Predicate(String),
    Ovn(OvnField),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    pub name: String,
    pub width: u32,
    pub kind: SymKind,
    pub prereqs: Option<String>,
    pub level: Level,
    pub must_crossproduct: bool,
    pub scope: WriteScope,
    /// The release that introduced it (`23.03` for the base).
    pub since: &'static str,
}

impl Symbol {
    pub fn is_string(&self) -> bool {
        matches!(self.kind, SymKind::String(_))
    }
}

/// All symbols by name.
pub struct SymbolTable {
    /// Looked up by name many times per match: a fast hasher (the keys are our own).
    map: HashMap<String, Symbol, super::hash::FxBuild>,
}

impl SymbolTable {
    pub fn get(&self, name: &str) -> Option<&Symbol> {
        self.map.get(name)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Resolves a (sub)field symbol down to its OVS field and the bit offset within it.
    pub fn resolve(&self, name: &str) -> Option<(FieldId, u32)> {
        let sym = self.get(name)?;
        match &sym.kind {
            SymKind::Field(f) | SymKind::String(f) => Some((*f, 0)),
            SymKind::Subfield { parent, lo } => {
                let (f, off) = self.resolve(parent)?;
                Some((f, off + lo))
            }
            _ => None,
        }
    }
}

/// The process-wide symbol table.
pub fn symtab() -> &'static SymbolTable {
    static TABLE: OnceLock<SymbolTable> = OnceLock::new();
    TABLE.get_or_init(build)
}

/// Fields OVN lets actions assign (the rest are matched only).
fn writable(f: FieldId) -> bool {
    !matches!(
        f,
        FieldId::ETH_TYPE
            | FieldId::NW_PROTO
            | FieldId::NW_FRAG
            | FieldId::TCP_FLAGS
            | FieldId::CT_STATE
    )
}

struct Builder(HashMap<String, Symbol, super::hash::FxBuild>, &'static str);

impl Builder {
    fn field(&mut self, name: &str, f: FieldId, prereqs: Option<&str>, xprod: bool) {
        self.field_scoped(
            name,
            f,
            prereqs,
            xprod,
            if writable(f) {
                WriteScope::Default
            } else {
                WriteScope::ReadOnly
            },
        );
    }

    fn field_scoped(
        &mut self,
        name: &str,
        f: FieldId,
        prereqs: Option<&str>,
        xprod: bool,
        scope: WriteScope,
    ) {
        let level = if f.def().maskable {
            Level::Ordinal
        } else {
            Level::Nominal
        };
        self.insert(
            name,
            f.bits(),
            SymKind::Field(f),
            prereqs,
            level,
            xprod,
            scope,
        );
    }

    fn string(&mut self, name: &str, f: FieldId) {
        self.insert(
            name,
            32,
            SymKind::String(f),
            None,
            Level::Nominal,
            false,
            WriteScope::Default,
        );
    }

    fn subfield(&mut self, name: &str, prereqs: Option<&str>, parent: &str, lo: u32, width: u32) {
        let p = &self.0[parent];
        let (scope, xprod) = (p.scope, p.must_crossproduct);
        self.insert(
            name,
            width,
            SymKind::Subfield {
                parent: parent.into(),
                lo,
            },
            prereqs,
            Level::Ordinal,
            xprod,
            scope,
        );
    }

    fn predicate(&mut self, name: &str, expansion: &str, level: Level) {
        self.insert(
            name,
            1,
            SymKind::Predicate(expansion.into()),
            None,
            level,
            false,
            WriteScope::ReadOnly,
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn insert(
        &mut self,
        name: &str,
        width: u32,
        kind: SymKind,
        prereqs: Option<&str>,
        level: Level,
        xprod: bool,
        scope: WriteScope,
    ) {
        let sym = Symbol {
            name: name.into(),
            width,
            kind,
            prereqs: prereqs.map(Into::into),
            level,
            must_crossproduct: xprod,
            scope,
            since: self.1,
        };
        self.0.insert(name.into(), sym);
    }
}

fn build() -> SymbolTable {
    use Level::{Boolean, Nominal};
    let mut b = Builder(HashMap::default(), "23.03");
    b.string("inport", FieldId::reg(14));
    b.string("outport", FieldId::reg(15));
    for xx in 0..2u8 {
        b.field(&format!("xxreg{xx}"), FieldId::xxreg(xx), None, false);
    }
    for x in 0..5u32 {
        if x < 4 {
            let lo = if x % 2 == 0 { 64 } else { 0 };
            b.subfield(
                &format!("xreg{x}"),
                None,
                &format!("xxreg{}", x / 2),
                lo,
                64,
            );
        } else {
            b.field("xreg4", FieldId::xreg(4), None, false);
        }
    }
    for r in 0..10u32 {
        if r < 8 {
            b.subfield(
                &format!("reg{r}"),
                None,
                &format!("xxreg{}", r / 4),
                32 * (3 - r % 4),
                32,
            );
        } else {
            b.subfield(&format!("reg{r}"), None, "xreg4", 32 * (1 - r % 2), 32);
        }
    }
    b.field("flags", FieldId::reg(10), None, false);
    for (n, bit) in [
        ("loopback", 0),
        ("force_snat_for_dnat", 2),
        ("force_snat_for_lb", 3),
        ("skip_snat_for_lb", 9),
        ("use_snat_zone", 11),
    ] {
        b.subfield(&format!("flags.{n}"), None, "flags", bit, 1);
    }
    b.field("pkt.mark", FieldId::PKT_MARK, None, false);

    b.field_scoped(
        "ct_mark",
        FieldId::CT_MARK,
        None,
        false,
        WriteScope::CtCommit,
    );
    for (n, lo, w) in [
        ("blocked", 0, 1),
        ("natted", 1, 1),
        ("skip_snat", 2, 1),
        ("force_snat", 3, 1),
        ("ecmp_reply_port", 16, 16),
    ] {
        b.subfield(&format!("ct_mark.{n}"), None, "ct_mark", lo, w);
    }
    b.field_scoped(
        "ct_label",
        FieldId::CT_LABEL,
        None,
        false,
        WriteScope::CtCommit,
    );
    for (n, lo, w) in [
        ("blocked", 0, 1),
        ("natted", 1, 1),
        ("skip_snat", 2, 1),
        ("force_snat", 3, 1),
        ("ecmp_reply_eth", 32, 48),
        ("ecmp_reply_port", 80, 16),
        ("label", 96, 32),
    ] {
        b.subfield(&format!("ct_label.{n}"), None, "ct_label", lo, w);
    }
    b.field("ct_state", FieldId::CT_STATE, None, false);
    for (n, bit) in [
        ("new", 0),
        ("est", 1),
        ("rel", 2),
        ("rpl", 3),
        ("inv", 4),
        ("trk", 5),
        ("snat", 6),
        ("dnat", 7),
    ] {
        let pre = if n == "trk" { None } else { Some("ct.trk") };
        b.subfield(&format!("ct.{n}"), pre, "ct_state", bit, 1);
    }

    b.field("eth.src", FieldId::ETH_SRC, None, false);
    b.field("eth.dst", FieldId::ETH_DST, None, false);
    b.field("eth.type", FieldId::ETH_TYPE, None, true);
    b.predicate("eth.bcast", "eth.dst == ff:ff:ff:ff:ff:ff", Boolean);
    b.subfield("eth.mcast", None, "eth.dst", 40, 1);
    b.predicate("eth.mcastv6", "eth.dst[32..47] == 0x3333", Boolean);
    b.field("vlan.tci", FieldId::VLAN_TCI, None, false);
    b.predicate("vlan.present", "vlan.tci[12]", Boolean);
    b.subfield("vlan.pcp", Some("vlan.present"), "vlan.tci", 13, 3);
    b.subfield("vlan.vid", Some("vlan.present"), "vlan.tci", 0, 12);

    b.predicate("ip4", "eth.type == 0x800", Nominal);
    b.predicate("ip6", "eth.type == 0x86dd", Nominal);
    b.predicate("ip", "ip4 || ip6", Nominal);
    b.field("ip.proto", FieldId::NW_PROTO, Some("ip"), true);
    b.field("ip.dscp", FieldId::IP_DSCP, Some("ip"), false);
    b.field("ip.ecn", FieldId::NW_ECN, Some("ip"), false);
    b.field("ip.ttl", FieldId::NW_TTL, Some("ip"), false);
    b.field("ip4.src", FieldId::IP_SRC, Some("ip4"), false);
    b.field("ip4.dst", FieldId::IP_DST, Some("ip4"), false);
    b.predicate("ip4.src_mcast", "ip4.src[28..31] == 0xe", Boolean);
    b.predicate("ip4.mcast", "eth.mcast && ip4.dst[28..31] == 0xe", Boolean);
    b.predicate("icmp4", "ip4 && ip.proto == 1", Nominal);
    b.field("icmp4.type", FieldId::ICMP_TYPE, Some("icmp4"), false);
    b.field("icmp4.code", FieldId::ICMP_CODE, Some("icmp4"), false);
    b.predicate("igmp", "ip4 && ip.proto == 2", Nominal);
    b.field("ip6.src", FieldId::IPV6_SRC, Some("ip6"), false);
    b.field("ip6.dst", FieldId::IPV6_DST, Some("ip6"), false);
    b.field("ip6.label", FieldId::IPV6_LABEL, Some("ip6"), false);
    b.predicate(
        "ip6.mcast_rsvd",
        "ip6.dst[116..127] == 0xff0 && ip6.dst[0..111] == 0x0",
        Boolean,
    );
    b.predicate(
        "ip6.mcast_all_nodes",
        "ip6.dst == ff01::1 || ip6.dst == ff02::1",
        Boolean,
    );
    b.predicate(
        "ip6.mcast_all_rtrs",
        "ip6.dst == ff01::2 || ip6.dst == ff02::2 || ip6.dst == ff05::2",
        Boolean,
    );
    b.predicate(
        "ip6.mcast_sol_node",
        "ip6.dst == ff02::1:ff00:0000/104",
        Boolean,
    );
    b.predicate(
        "ip6.mcast_flood",
        "eth.mcastv6 && (ip6.mcast_rsvd || ip6.mcast_all_nodes || ip6.mcast_all_rtrs || ip6.mcast_sol_node)",
        Boolean,
    );
    b.predicate(
        "ip6.mcast",
        "eth.mcastv6 && ip6.dst[120..127] == 0xff",
        Boolean,
    );
    b.predicate("icmp6", "ip6 && ip.proto == 58", Nominal);
    b.field("icmp6.type", FieldId::ICMPV6_TYPE, Some("icmp6"), true);
    b.field("icmp6.code", FieldId::ICMPV6_CODE, Some("icmp6"), true);
    b.predicate("icmp", "icmp4 || icmp6", Nominal);
    b.field("ip.frag", FieldId::NW_FRAG, Some("ip"), false);
    b.predicate("ip.is_frag", "ip.frag[0]", Boolean);
    b.predicate("ip.later_frag", "ip.frag[1]", Boolean);
    b.predicate("ip.first_frag", "ip.is_frag && !ip.later_frag", Boolean);

    for (proto, ty) in [("arp", "0x806"), ("rarp", "0x8035")] {
        b.predicate(proto, &format!("eth.type == {ty}"), Nominal);
        b.field(&format!("{proto}.op"), FieldId::ARP_OP, Some(proto), false);
        b.field(
            &format!("{proto}.spa"),
            FieldId::ARP_SPA,
            Some(proto),
            false,
        );
        b.field(
            &format!("{proto}.sha"),
            FieldId::ARP_SHA,
            Some(proto),
            false,
        );
        b.field(
            &format!("{proto}.tpa"),
            FieldId::ARP_TPA,
            Some(proto),
            false,
        );
        b.field(
            &format!("{proto}.tha"),
            FieldId::ARP_THA,
            Some(proto),
            false,
        );
    }

    b.predicate(
        "nd",
        "icmp6.type == {135, 136} && icmp6.code == 0 && ip.ttl == 255",
        Nominal,
    );
    for (n, t) in [
        ("nd_ns", 135),
        ("nd_na", 136),
        ("nd_rs", 133),
        ("nd_ra", 134),
    ] {
        b.predicate(
            n,
            &format!("icmp6.type == {t} && icmp6.code == 0 && ip.ttl == 255"),
            Nominal,
        );
    }
    b.field("nd.target", FieldId::ND_TARGET, Some("nd"), false);
    b.field("nd.sll", FieldId::ND_SLL, Some("nd_ns"), false);
    b.field("nd.tll", FieldId::ND_TLL, Some("nd_na"), false);
    b.predicate(
        "mldv1",
        "ip6.src == fe80::/10 && icmp6.type == {130, 131, 132}",
        Nominal,
    );
    b.predicate("mldv2", "ip6.dst == ff02::16 && icmp6.type == 143", Nominal);

    b.predicate("tcp", "ip.proto == 6", Nominal);
    b.field("tcp.src", FieldId::TCP_SRC, Some("tcp"), false);
    b.field("tcp.dst", FieldId::TCP_DST, Some("tcp"), false);
    b.field("tcp.flags", FieldId::TCP_FLAGS, Some("tcp"), false);
    b.predicate("udp", "ip.proto == 17", Nominal);
    b.field("udp.src", FieldId::UDP_SRC, Some("udp"), false);
    b.field("udp.dst", FieldId::UDP_DST, Some("udp"), false);
    b.predicate("sctp", "ip.proto == 132", Nominal);
    b.field("sctp.src", FieldId::SCTP_SRC, Some("sctp"), false);
    b.field("sctp.dst", FieldId::SCTP_DST, Some("sctp"), false);

    b.insert(
        "icmp4.frag_mtu",
        16,
        SymKind::Ovn(OvnField::Icmp4FragMtu),
        None,
        Level::Nominal,
        false,
        WriteScope::Default,
    );
    b.insert(
        "icmp6.frag_mtu",
        32,
        SymKind::Ovn(OvnField::Icmp6FragMtu),
        None,
        Level::Nominal,
        false,
        WriteScope::Default,
    );
    ovn_25_03(&mut b);
    ovn_26_03(&mut b);
    SymbolTable { map: b.0 }
}

/// What OVN 25.03's symbol table adds to 23.03's (lib/logical-fields.c): logical flags of
/// new features, conntrack mark and label bits of ACL sampling, the multicast NS predicate,
/// and three predicates defined anew (multicast destinations only).
fn ovn_25_03(b: &mut Builder) {
    use Level::Nominal;
    b.1 = "25.03";
    for (n, bit) in [
        ("localnet", 15),
        ("tunnel_rx", 16),
        ("icmp_snat", 17),
        ("from_ctrl", 19),
        ("unsnat_new", 20),
        ("unsnat_not_tracked", 21),
    ] {
        b.subfield(&format!("flags.{n}"), None, "flags", bit, 1);
    }
    for (n, lo, w) in [
        ("obs_stage", 4, 2),
        ("allow_established", 6, 1),
        ("obs_collector_id", 16, 8),
    ] {
        b.subfield(&format!("ct_mark.{n}"), None, "ct_mark", lo, w);
    }
    for (n, lo, w) in [
        ("obs_unused", 0, 96),
        ("acl_id", 80, 16),
        ("obs_point_id", 96, 32),
    ] {
        b.subfield(&format!("ct_label.{n}"), None, "ct_label", lo, w);
    }
    b.predicate(
        "nd_ns_mcast",
        "ip6.mcast && icmp6.type == 135 && icmp6.code == 0 && ip.ttl == 255",
        Nominal,
    );
    b.predicate("igmp@25.03", "ip4.mcast && ip.proto == 2", Nominal);
    b.predicate(
        "mldv1@25.03",
        "eth.mcastv6 && ip6.src == fe80::/10 && icmp6.type == {130, 131, 132}",
        Nominal,
    );
    b.predicate(
        "mldv2@25.03",
        "eth.mcastv6 && ip6.dst == ff02::16 && icmp6.type == 143",
        Nominal,
    );
    b.1 = "23.03";
}

/// What OVN 26.03's symbol table adds to 25.03's: the port registers as numbers (their
/// bit 31 marks an EVPN VTEP), the remote output port, flags of sampling, IGMP reinjection
/// and the SNAT network id, conntrack label bits of network functions and tunnel
/// interfaces, and the reserved IPv6 multicast groups as a list of addresses.
fn ovn_26_03(b: &mut Builder) {
    use Level::Nominal;
    b.1 = "26.03";
    b.field("__inport", FieldId::reg(14), None, false);
    b.field("__outport", FieldId::reg(15), None, false);
    b.predicate("from_evpn_vtep", "__inport[31]", Nominal);
    b.predicate("to_evpn_vtep", "__outport[31]", Nominal);
    b.string("remote_outport", FieldId::reg(1));
    b.subfield("flags.network_id", None, "flags", 28, 4);
    b.subfield("flags.igmp_loopback", None, "flags", 22, 1);
    b.subfield("flags.pkt_sampled", None, "flags", 23, 1);
    for (n, lo, w) in [
        ("nf", 7, 1),
        ("nf_id", 17, 8),
        ("tun_if", 8, 1),
        ("tun_if_id", 80, 16),
    ] {
        b.subfield(&format!("ct_label.{n}"), None, "ct_label", lo, w);
    }
    b.predicate(
        "ip6.mcast_rsvd@26.03",
        "ip6.dst == { ff00::0, ff01::0, ff02::0, ff03::0, ff04::0, ff05::0, ff06::0, \
         ff07::0, ff08::0, ff09::0, ff0a::0, ff0b::0, ff0c::0, ff0d::0, ff0e::0, ff0f::0 }",
        Nominal,
    );
    b.1 = "23.03";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_aliasing() {
        let t = symtab();
        assert_eq!(t.resolve("reg0"), Some((FieldId::xxreg(0), 96)));
        assert_eq!(t.resolve("reg3"), Some((FieldId::xxreg(0), 0)));
        assert_eq!(t.resolve("reg7"), Some((FieldId::xxreg(1), 0)));
        assert_eq!(t.resolve("reg8"), Some((FieldId::xreg(4), 32)));
        assert_eq!(t.resolve("reg9"), Some((FieldId::xreg(4), 0)));
        assert_eq!(t.resolve("xreg0"), Some((FieldId::xxreg(0), 64)));
        assert_eq!(t.resolve("xreg3"), Some((FieldId::xxreg(1), 0)));
        assert_eq!(t.resolve("ct.trk"), Some((FieldId::CT_STATE, 5)));
        assert_eq!(t.resolve("ct_label.label"), Some((FieldId::CT_LABEL, 96)));
        assert_eq!(t.resolve("vlan.pcp"), Some((FieldId::VLAN_TCI, 13)));
        assert!(t.get("outport").is_some_and(Symbol::is_string));
        assert_eq!(t.get("flags.localnet").map(|s| s.since), Some("25.03"));
        assert_eq!(
            t.len(),
            125 + 16 + 13,
            "23.03's symbols, 25.03's and 26.03's"
        );
    }
}
