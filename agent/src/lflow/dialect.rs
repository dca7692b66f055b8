//! The logical-flow language of each OVN release the agent speaks, as data: which symbols
//! exist in it and which it defines anew. One row per release; the compiler reads the row
//! of the release it compiles for (carried by its [`super::layout::TableLayout`]) and never
//! tests a version number.

use super::symtab::{symtab, Symbol};

#[derive(Debug, PartialEq, Eq)]
pub struct Dialect {
    /// `YY.MM`: symbols introduced by a later release do not exist in this one.
    pub release: &'static str,
    /// Symbols this release defines differently from the base: the name as written, and
    /// the table's name of this release's definition.
    pub redefined: &'static [(&'static str, &'static str)],
    /// Controller opcodes of nested actions (`arp { }`, ...) whose packet is paused (sent
    /// back to the pipeline after the controller's answer).
    pub paused_nested_opcodes: &'static [u32],
    /// The xxreg `get_nd` and `lookup_nd_ip` pass the IPv6 address in to the MAC-binding
    /// tables.
    pub nd_lookup_xxreg: u8,
    /// Match prerequisites of nested actions that differ from the base's, by controller
    /// opcode.
    pub nested_prereqs: &'static [(u32, &'static str)],
    /// `commit_lb_aff`'s learned flows carry the lflow's cookie.
    pub lb_aff_learn_cookie: bool,
    /// `a != v/m` is one term per mask bit that differs there from `v` and equals it on
    /// the mask's bits above (disjoint terms); else the term matches that bit alone.
    pub ne_as_prefixes: bool,
    /// Port security's ND checks are strict: an NS is denied unless allowed, and the
    /// allowed NS and NA match the port's MAC as source and hop limit 255 (else NS are
    /// allowed by default, and the MAC and hop limit are matched as 23.03 did).
    pub port_sec_nd_strict: bool,
    /// `ct_nw_dst()`, `ct_ip6_dst()`, `ct_tp_dst()` and `ct_proto()` load their result
    /// into the low bits of xxreg1, kept on the stack around the action unless it is the
    /// destination; else into reg1, xxreg1 and reg2 as they are.
    pub ct_orig_in_result_reg: bool,
    /// Load-balancer hairpin flows always read the original destination from registers
    /// (26.03 dropped `Load_Balancer` `options:hairpin_orig_tuple`; before, its absence
    /// means conntrack's original tuple).
    pub lb_orig_tuple_always: bool,
    /// How this release's physical stage differs from the base's.
    pub physical: PhysicalForms,
    /// `Chassis:other_config` features beyond the base's that this build implements for
    /// the release (northd turns on the encodings they name).
    pub chassis_features: &'static [&'static str],
    /// How the release's pinctrl answers `dns_lookup`.
    pub dns: DnsForms,
    /// The internal version of the release's ovn-controller (`<OVN version>-<Southbound
    /// schema>-<internal numbers>`): what `ovn-match-northd-version` compares with northd's.
    pub internal_version: &'static str,
    /// The control socket ends a reply without a final newline with one, as the OVS
    /// library the release's ovn-controller is built with does (3.1 for 23.03; 3.5, 25.03's,
    /// does not).
    pub appctl_reply_newline: bool,
    /// `inc-engine/show-stats` of the release: engine nodes its ovn-controller no longer
    /// has (25.03 folded `flow_output` into its inputs), and the name of the third
    /// statistic (`abort` in 23.03, `cancel` since).
    pub engine_nodes_gone: &'static [&'static str],
    pub engine_third_stat: &'static str,
    /// Prefix delegation: the REQUEST answering an ADVERTISE goes to all DHCP servers
    /// (ff02::1:2, as RFC 8415 has it); else (23.03) to the advertising server itself.
    pub prefixd_request_to_all_servers: bool,
}

/// `dns_lookup` answers of a release.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DnsForms {
    /// A query with additional records (EDNS) is answered; the reply keeps the header and
    /// question only, then the answers. Else such a query gets no answer, and the reply
    /// keeps everything after the header.
    pub answer_with_additional: bool,
    /// A `DNS` row without `external_ids:dns_id` counts (known by its row uuid); else it is
    /// ignored.
    pub rows_without_dns_id: bool,
    /// The addresses of a record are answered in a random order, a new one for every
    /// answer (round-robin DNS); else in the record's order.
    pub shuffle_addresses: bool,
}

/// The physical stage of a release: what its `physical.c` builds differently, as data.
#[derive(Debug, PartialEq, Eq)]
pub struct PhysicalForms {
    /// Tables beyond table 0, the output stage, 64 and 65 that it fills.
    pub tables: &'static [u8],
    /// A port's conntrack zone takes the low 16 bits of reg13 (the high 16 carry the id of
    /// the local encap IP a packet entered by, matched when it leaves by a tunnel); else
    /// all 32.
    pub encap_id_in_reg13: bool,
    /// A datapath's NAT zones are named after its `external_ids:name` (`sw0_dnat`); else
    /// after its uuid.
    pub nat_zones_by_name: bool,
    /// Multicast group flows start by clearing reg6 (the index of a group split over
    /// several flows).
    pub mc_group_reg6: bool,
    /// The flags bit that lets a local-only packet out of a localnet port.
    pub override_local_only_bit: Option<u32>,
    /// The flags bit marking a packet received from a tunnel (ICMP "too big" errors
    /// re-enter the ingress pipeline through the conntrack zone lookup table, `tables[0]`).
    pub rx_from_tunnel_bit: Option<u32>,
    /// The chassis-MAC conjunction's VLAN clause matches the localnet port.
    pub chassis_mac_vlan_in_port: bool,
    /// The hairpin flow of a container's parent port carries the parent's cookie (else 0).
    pub nested_hairpin_parent_cookie: bool,
    /// A packet received on a Geneve tunnel carries the tunnel's OpenFlow port in
    /// reg5[16..31] (kept for the egress pipeline).
    pub tunnel_ofport_in_reg5: bool,
    /// A multicast group loads a member's conntrack zone with that member's local
    /// delivery only; else every member's zone is loaded in the local flow.
    pub mc_zone_with_delivery: bool,
    /// A multicast group's remote flow leaves packets from a VTEP alone (flags bit 1
    /// clear), and a second flow (priority 120) delivers such packets that may loop back
    /// to the group's patch ports; both end in the remote VTEP output table.
    pub mc_ramp_flows: bool,
    /// The lookup tables get their own default flows: `get_fdb`'s (table 71) clears the
    /// outport, `get_remote_fdb`'s the remote outport, and `ct_state_save`'s table loads
    /// the conntrack state (reg4[0..7], cleared when untracked); the `ct_*()` loads also
    /// answer for new connections.
    pub lookup_defaults: bool,
}

/// Action forms, by the release that introduced them: a keyword, or `keyword(` for a
/// parameter form an existing action gained.
const ACTION_FORMS: [(&str, &str); 12] = [
    ("ct_next(", "25.03"),
    ("ct_commit_nat(", "25.03"),
    ("ct_commit_to_zone", "25.03"),
    ("ct_nw_dst", "25.03"),
    ("ct_ip6_dst", "25.03"),
    ("ct_tp_dst", "25.03"),
    ("mac_cache_use", "25.03"),
    ("ct_lb_mark_local", "26.03"),
    ("get_remote_fdb", "26.03"),
    ("ct_proto", "26.03"),
    ("ct_state_save", "26.03"),
    ("mirror", "26.03"),
];

/// OVN 23.03 (Debian 12), the base.
pub static OVN_23_03: Dialect = Dialect {
    release: "23.03",
    redefined: &[],
    paused_nested_opcodes: &[],
    nd_lookup_xxreg: 0,
    nested_prereqs: &[],
    lb_aff_learn_cookie: false,
    ne_as_prefixes: false,
    port_sec_nd_strict: false,
    ct_orig_in_result_reg: false,
    lb_orig_tuple_always: false,
    physical: PhysicalForms {
        tables: &[],
        encap_id_in_reg13: false,
        nat_zones_by_name: false,
        mc_group_reg6: false,
        override_local_only_bit: None,
        rx_from_tunnel_bit: None,
        chassis_mac_vlan_in_port: false,
        nested_hairpin_parent_cookie: false,
        tunnel_ofport_in_reg5: false,
        mc_zone_with_delivery: false,
        mc_ramp_flows: false,
        lookup_defaults: false,
    },
    chassis_features: &[],
    dns: DnsForms {
        answer_with_additional: false,
        rows_without_dns_id: false,
        shuffle_addresses: false,
    },
    internal_version: "23.03.1-20.27.0-70.6",
    appctl_reply_newline: true,
    engine_nodes_gone: &[],
    engine_third_stat: "abort",
    prefixd_request_to_all_servers: false,
};

/// OVN 25.03 (Debian 13).
pub static OVN_25_03: Dialect = Dialect {
    release: "25.03",
    redefined: &[
        ("igmp", "igmp@25.03"),
        ("mldv1", "mldv1@25.03"),
        ("mldv2", "mldv2@25.03"),
    ],
    // ARP and NS requests (actions.c is_paused_nested_action).
    paused_nested_opcodes: &[0, 9],
    nd_lookup_xxreg: 1,
    // `arp { }` and `nd_ns { }` on IPv4 and IPv6 alike.
    nested_prereqs: &[(0, "ip"), (9, "ip")],
    lb_aff_learn_cookie: true,
    ne_as_prefixes: false,
    port_sec_nd_strict: false,
    ct_orig_in_result_reg: false,
    lb_orig_tuple_always: false,
    physical: PhysicalForms {
        // Conntrack zone lookup, the original-destination loads, the remote-chassis flood.
        tables: &[80, 81, 82, 83, 84],
        encap_id_in_reg13: true,
        nat_zones_by_name: true,
        mc_group_reg6: true,
        override_local_only_bit: Some(18),
        rx_from_tunnel_bit: Some(16),
        chassis_mac_vlan_in_port: true,
        nested_hairpin_parent_cookie: true,
        tunnel_ofport_in_reg5: false,
        mc_zone_with_delivery: false,
        mc_ramp_flows: false,
        lookup_defaults: false,
    },
    // Not yet: fdb-timestamp (FDB aging refreshes), ovn-sample-with-registers,
    // ct-label-flush.
    chassis_features: &[
        "ct-commit-nat-v2",
        "ct-commit-to-zone",
        "ct-next-zone",
        "ls-dpg-column",
    ],
    dns: DnsForms {
        answer_with_additional: true,
        rows_without_dns_id: true,
        shuffle_addresses: false,
    },
    // Debian 13's 25.03.0.
    internal_version: "25.03.0-20.41.0-77.6",
    appctl_reply_newline: false,
    engine_nodes_gone: &["flow_output"],
    engine_third_stat: "cancel",
    prefixd_request_to_all_servers: true,
};

/// OVN 26.03 (Debian sid): what differs from 25.03.
pub static OVN_26_03: Dialect = Dialect {
    release: "26.03",
    redefined: &[
        ("igmp", "igmp@25.03"),
        ("mldv1", "mldv1@25.03"),
        ("mldv2", "mldv2@25.03"),
        ("ip6.mcast_rsvd", "ip6.mcast_rsvd@26.03"),
    ],
    ne_as_prefixes: true,
    port_sec_nd_strict: true,
    ct_orig_in_result_reg: true,
    lb_orig_tuple_always: true,
    physical: PhysicalForms {
        // get_fdb's default; 25.03's; the conntrack state save, the original-protocol
        // load, the remote FDB.
        tables: &[71, 80, 81, 82, 83, 84, 85, 86, 87, 88],
        mc_group_reg6: false,
        tunnel_ofport_in_reg5: true,
        mc_zone_with_delivery: true,
        mc_ramp_flows: true,
        lookup_defaults: true,
        ..OVN_25_03.physical
    },
    // Not yet: fdb-timestamp, ovn-sample-with-registers, ct-label-flush.
    chassis_features: &[
        "ct-commit-nat-v2",
        "ct-commit-to-zone",
        "ct-next-zone",
        "ls-dpg-column",
        "ct-state-save",
    ],
    dns: DnsForms {
        shuffle_addresses: true,
        ..OVN_25_03.dns
    },
    // Debian sid's 26.03.1.
    internal_version: "26.03.1-21.8.0-82.14",
    // The rest as 25.03.
    ..OVN_25_03
};

impl Dialect {
    /// The match prerequisite of the nested action of controller opcode `opcode`, when
    /// this release changed it.
    pub fn nested_prereq(&self, opcode: u32) -> Option<&'static str> {
        self.nested_prereqs
            .iter()
            .find(|(o, _)| *o == opcode)
            .map(|(_, p)| *p)
    }

    /// Whether this release has action form `form` (see [`ACTION_FORMS`]; forms not listed
    /// are the base's).
    pub fn has_action(&self, form: &str) -> bool {
        ACTION_FORMS
            .iter()
            .find(|(f, _)| *f == form)
            .is_none_or(|(_, since)| *since <= self.release)
    }

    /// The symbol `name` (as a match or action writes it) means in this release.
    pub fn symbol(&self, name: &str) -> Option<&'static Symbol> {
        let table_name = self
            .redefined
            .iter()
            .find(|(written, _)| *written == name)
            .map_or(name, |(_, t)| t);
        // Release names compare as text: YY.MM, zero-padded.
        symtab()
            .get(table_name)
            .filter(|s| s.since <= self.release && !(table_name == name && name.contains('@')))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_release_sees_its_own_symbols() {
        assert!(OVN_23_03.symbol("flags.tunnel_rx").is_none(), "25.03's");
        assert!(OVN_25_03.symbol("flags.tunnel_rx").is_some());
        let igmp = |d: &Dialect| match &d.symbol("igmp").unwrap().kind {
            super::super::symtab::SymKind::Predicate(text) => text.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(igmp(&OVN_23_03), "ip4 && ip.proto == 2");
        assert_eq!(igmp(&OVN_25_03), "ip4.mcast && ip.proto == 2");
        assert!(
            OVN_25_03.symbol("igmp@25.03").is_none(),
            "not a name to write"
        );
        assert!(OVN_23_03.symbol("reg0").is_some());
        assert!(!OVN_23_03.has_action("mac_cache_use"));
        assert!(OVN_25_03.has_action("mac_cache_use"));
        assert!(OVN_23_03.has_action("ct_lb_mark"), "a base action");
    }
}
