//! OpenFlow table numbers, chosen once (DESIGN.md "OpenFlow table layout").

use super::actions::Pipeline;
use super::dialect::{Dialect, OVN_23_03, OVN_25_03, OVN_26_03};

/// Every OpenFlow table number the lflow compiler uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableLayout {
    pub ingress: u8,
    pub ingress_len: u8,
    pub egress: u8,
    pub egress_len: u8,
    /// Where an ingress `output;` goes (the large-packet detection table: its default sends
    /// everything on to `remote_output`).
    pub output_entry: u8,
    /// Large-packet processing (ICMP "too big" replies for multichassis ports); its defaults
    /// send loopback traffic to `local_output` and the rest to `remote_output`.
    pub large_pkt_process: u8,
    pub remote_output: u8,
    /// Output to remote EVPN VTEPs (26.03; in earlier releases `remote_output` goes on to
    /// `local_output` directly, and this is 0).
    pub remote_vtep_output: u8,
    pub local_output: u8,
    pub check_loopback: u8,
    pub save_inport: u8,
    pub log_to_phy: u8,
    pub mac_binding: u8,
    pub mac_lookup: u8,
    pub chk_lb_hairpin: u8,
    pub chk_lb_hairpin_reply: u8,
    pub ct_snat_hairpin: u8,
    pub get_fdb: u8,
    pub lookup_fdb: u8,
    pub chk_in_port_sec: u8,
    pub chk_in_port_sec_nd: u8,
    pub chk_out_port_sec: u8,
    pub ecmp_nh_mac: u8,
    pub ecmp_nh: u8,
    pub chk_lb_affinity: u8,
    /// Tables 25.03 added: `mac_cache_use`, the conntrack zone lookup (80), and the loads of a connection's original
    /// destination (`ct_nw_dst()`, `ct_ip6_dst()`, `ct_tp_dst()`).
    pub mac_cache_use: u8,
    pub ct_orig_nw_dst_load: u8,
    pub ct_orig_ip6_dst_load: u8,
    pub ct_orig_tp_dst_load: u8,
    pub ct_zone_lookup: u8,
    pub flood_remote_chassis: u8,
    /// Tables 26.03 added: the loads of `ct_state_save()` and `ct_proto()`, and the FDB of
    /// remote (EVPN) MACs.
    pub ct_state_save: u8,
    pub ct_orig_proto_load: u8,
    pub get_remote_fdb: u8,
    pub learn_remote_fdb: u8,
    /// The release whose logical-flow language the flows are compiled from.
    pub dialect: &'static Dialect,
}

const TAIL: TableLayout = TableLayout {
    ingress: 0,
    ingress_len: 0,
    egress: 0,
    egress_len: 0,
    output_entry: 0,
    large_pkt_process: 0,
    remote_output: 0,
    remote_vtep_output: 0,
    local_output: 0,
    check_loopback: 0,
    save_inport: 64,
    log_to_phy: 65,
    mac_binding: 66,
    mac_lookup: 67,
    chk_lb_hairpin: 68,
    chk_lb_hairpin_reply: 69,
    ct_snat_hairpin: 70,
    get_fdb: 71,
    lookup_fdb: 72,
    chk_in_port_sec: 73,
    chk_in_port_sec_nd: 74,
    chk_out_port_sec: 75,
    ecmp_nh_mac: 76,
    ecmp_nh: 77,
    chk_lb_affinity: 78,
    mac_cache_use: 79,
    ct_orig_nw_dst_load: 81,
    ct_orig_ip6_dst_load: 82,
    ct_orig_tp_dst_load: 83,
    ct_zone_lookup: 80,
    flood_remote_chassis: 84,
    ct_state_save: 85,
    ct_orig_proto_load: 86,
    get_remote_fdb: 87,
    learn_remote_fdb: 88,
    dialect: &OVN_23_03,
};

impl TableLayout {
    /// The agent's default: ingress 1+N, output stage 32-34, egress 37+N.
    pub const CLASSIC: Self = Self {
        ingress: 1,
        ingress_len: 31,
        egress: 37,
        egress_len: 27,
        output_entry: 35,
        large_pkt_process: 36,
        remote_output: 32,
        local_output: 33,
        check_loopback: 34,
        ..TAIL
    };

    /// Exactly ovn-controller 23.03.1's numbers.
    pub const OVN_23_03: Self = Self {
        ingress: 8,
        ingress_len: 29,
        egress: 42,
        egress_len: 22,
        output_entry: 37,
        large_pkt_process: 38,
        remote_output: 39,
        local_output: 40,
        check_loopback: 41,
        ..TAIL
    };

    /// ovn-controller 25.03's numbers (ingress 8+N for 32 stages, output stage 40-44, egress
    /// 45+N) and its logical-flow language. The physical stage builds 25.03's forms
    /// (tables 80-83 included); not yet the remote-chassis flood (84) of OVN-IC, nor a
    /// multicast group split over several flows.
    pub const OVN_25_03: Self = Self {
        ingress: 8,
        ingress_len: 32,
        egress: 45,
        egress_len: 19,
        output_entry: 40,
        large_pkt_process: 41,
        remote_output: 42,
        local_output: 43,
        check_loopback: 44,
        dialect: &OVN_25_03,
        ..TAIL
    };

    /// ovn-controller 26.03's numbers (ingress 8+N for 34 stages, output stage 42-47 with
    /// the remote VTEP output at 45, egress 48+N) and its logical-flow language.
    pub const OVN_26_03: Self = Self {
        ingress: 8,
        ingress_len: 34,
        egress: 48,
        egress_len: 16,
        output_entry: 42,
        large_pkt_process: 43,
        remote_output: 44,
        remote_vtep_output: 45,
        local_output: 46,
        check_loopback: 47,
        dialect: &OVN_26_03,
        ..TAIL
    };

    /// Every layout by name, and whether the daemon runs with it (the physical stage and
    /// the engine follow its release), or only `ovn-agent compile` does.
    const NAMED: [(&'static str, Self, bool); 4] = [
        ("classic", Self::CLASSIC, true),
        ("ovn-23.03", Self::OVN_23_03, true),
        ("ovn-25.03", Self::OVN_25_03, true),
        ("ovn-26.03", Self::OVN_26_03, true),
    ];

    /// The name [`Self::by_name`] takes.
    pub fn name(&self) -> &'static str {
        Self::NAMED
            .iter()
            .find(|(_, l, _)| l == self)
            .map_or("classic", |(n, _, _)| n)
    }

    pub fn by_name(name: &str) -> Option<Self> {
        Self::NAMED
            .iter()
            .find(|(n, _, _)| *n == name)
            .map(|(_, l, _)| *l)
    }

    /// The OVN-numbered layout for a northd of release `release` (`YY.MM`, from
    /// `SB_Global`): the newest this build has that is not newer than northd (23.03's
    /// before the release is known).
    pub fn for_northd(release: Option<&str>) -> Self {
        let Some(release) = release else {
            return Self::OVN_23_03;
        };
        Self::NAMED
            .iter()
            .filter(|(n, l, daemon)| {
                *daemon && n.starts_with("ovn-") && l.dialect.release <= release
            })
            .max_by_key(|(_, l, _)| l.dialect.release)
            .map_or(Self::OVN_23_03, |(_, l, _)| *l)
    }

    /// [`Self::by_name`], for the layouts the daemon runs with.
    pub fn for_daemon(name: &str) -> Option<Self> {
        Self::NAMED
            .iter()
            .find(|(n, _, daemon)| *n == name && *daemon)
            .map(|(_, l, _)| *l)
    }

    /// The names `ovn-agent compile` takes, and those the daemon takes, for messages.
    pub fn names(daemon: bool) -> String {
        let names: Vec<&str> = Self::NAMED
            .iter()
            .filter(|(_, _, d)| *d || !daemon)
            .map(|(n, _, _)| *n)
            .collect();
        names.join(", ")
    }

    /// Tables beyond table 0, the output stage, 64 and 65 that this release's physical
    /// stage fills.
    pub fn physical_only_tables(&self) -> &'static [u8] {
        self.dialect.physical.tables
    }

    /// Where a packet goes on after the remote outputs: the remote VTEP output when the
    /// release has it, else local output.
    pub fn after_remote_output(&self) -> u8 {
        if self.remote_vtep_output != 0 {
            self.remote_vtep_output
        } else {
            self.local_output
        }
    }

    /// The most logical tables a pipeline has room for: what `next(table=N)` may name
    /// (a table beyond its own pipeline's room is refused when it is encoded).
    pub fn max_pipeline_len(&self) -> u32 {
        u32::from(self.ingress_len.max(self.egress_len))
    }

    /// OpenFlow table of logical table `t`, or `None` beyond the layout's capacity.
    pub fn logical_table(&self, pipeline: Pipeline, t: u32) -> Option<u8> {
        let (base, len) = match pipeline {
            Pipeline::Ingress => (self.ingress, self.ingress_len),
            Pipeline::Egress => (self.egress, self.egress_len),
        };
        (t < u32::from(len)).then(|| base + t as u8)
    }
}

#[cfg(test)]
mod tests {
    use super::TableLayout;

    #[test]
    fn auto_follows_northd_to_the_newest_layout_not_newer_than_it() {
        assert_eq!(
            TableLayout::for_northd(Some("25.03")),
            TableLayout::OVN_25_03
        );
        assert_eq!(
            TableLayout::for_northd(Some("23.03")),
            TableLayout::OVN_23_03
        );
        // 24.03 has no row of its own yet: 23.03's.
        assert_eq!(
            TableLayout::for_northd(Some("24.03")),
            TableLayout::OVN_23_03
        );
        assert_eq!(
            TableLayout::for_northd(Some("26.03")),
            TableLayout::OVN_26_03
        );
        assert_eq!(
            TableLayout::for_northd(Some("25.09")),
            TableLayout::OVN_25_03
        );
        assert_eq!(
            TableLayout::for_northd(Some("26.09")),
            TableLayout::OVN_26_03
        );
        assert_eq!(TableLayout::for_northd(None), TableLayout::OVN_23_03);
    }
}
