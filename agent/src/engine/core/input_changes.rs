//! The engine's handling of its inputs: what it notes when the Southbound or local OVS
//! replica changes (which flows, bindings and views a run must compute again), and the
//! condition bookkeeping of the Southbound connection. Part of the core's `impl Engine`,
//! in a file of its own; the replicas and what reads them are in `engine/inputs.rs`.

use std::collections::BTreeSet;
use std::time::Instant;

use sbclient::datum::Atom;
use sbclient::ovn_sb::*;
use sbclient::Uuid;

use super::Engine;
use crate::engine::config::{ChassisConfig, ConfigError};
use crate::engine::deps::{changed_names, changed_rows, lflows_on, port_group_names};
use crate::engine::inputs::{only_modified, open_vswitch_row, NOT_RUNTIME_INPUTS};
use crate::engine::lflow_index::{Named, TemplateRefs, DHCP_ACTIONS, FWD_GROUP_ACTION};

impl Engine {
    /// The chassis configuration follows the Open_vSwitch row (and the fixed options): read
    /// again when the OVS replica changes, so that the main loop's Southbound remote and
    /// bridge follow a change at once, before the next run.
    pub(super) fn refresh_config(&mut self) {
        match ChassisConfig::from_ovs(
            open_vswitch_row(&self.inputs.ovs),
            self.opts.chassis.as_deref(),
            self.opts.table_layout.as_deref(),
            &self.opts.hostname,
            crate::northd_options::northd_release(&self.inputs.sb.replica).as_deref(),
        ) {
            Ok(c) => {
                if self.cfg.as_ref().is_some_and(|old| old.layout != c.layout) {
                    self.lflow_changes.need_full = Some("table layout changed".into());
                }
                self.cfg = Some(c);
                self.cfg_error = None;
            }
            Err(e) => {
                if self.cfg_error.as_ref() != Some(&e) {
                    // Before the first OVS update arrives there is no row: not a problem.
                    if e == ConfigError::NoRow {
                        tracing::debug!(target: "main", "{e}");
                    } else {
                        tracing::warn!(target: "main", "{e}");
                    }
                }
                self.cfg_error = Some(e);
                self.cfg = None;
            }
        }
    }

    /// The SB client connected. `resumed`: its monitors took up where the last connection
    /// left them (`monitor_cond_since` found our last transaction id: a clustered server's
    /// leader changed, or the client moved to another server), so only the changes since
    /// follow, as updates like any other, and the flows follow them incrementally. Otherwise
    /// a snapshot follows and every flow is computed again (and compared with the switch).
    pub fn sb_connected(&mut self, now: Instant, resumed: bool) {
        self.runtime_work.local_dps_stale = true;
        self.sb_connected = true;
        self.sb_connected_at = Some(now);
        // Conditions start over on a new connection.
        self.conditions.requested.clear();
        self.conditions.requested_seq = 0;
        self.conditions.acked_seq = 0;
        self.conditions.unnumbered = 0;
        if !resumed || !self.initial_sync_done {
            self.lflow_changes.need_full = Some("southbound reconnected".into());
        }
        if !resumed {
            self.stats.nodes.inputs.recompute += 1;
        }
        self.runtime_work.inputs_dirty = true;
    }

    pub fn sb_disconnected(&mut self) {
        self.sb_connected = false;
    }

    /// The SB server applied conditions up to `seq`.
    pub fn conditions_acked(&mut self, seq: u64) {
        self.conditions.acked_seq = self.conditions.acked_seq.max(seq);
    }

    /// Our condition requests got these sequence numbers.
    pub fn conditions_requested(&mut self, seq: u64) {
        self.conditions.requested_seq = self.conditions.requested_seq.max(seq);
        self.conditions.unnumbered = self.conditions.unnumbered.saturating_sub(1);
    }

    /// The condition change for `table` never reached the client: not waited for any more,
    /// and requested again by the next run.
    pub fn condition_failed(&mut self, table: &str) {
        self.conditions.unnumbered = self.conditions.unnumbered.saturating_sub(1);
        self.conditions.requested.remove(table);
        self.stats.condition_failures += 1;
        self.runtime_work.inputs_dirty = true;
    }

    /// A condition change was requested and not yet acknowledged by the server, or not yet
    /// even numbered: the replica may still lack rows of datapaths that became local.
    pub(super) fn conditions_pending(&self) -> bool {
        self.conditions.unnumbered > 0 || self.conditions.acked_seq < self.conditions.requested_seq
    }

    /// The SB replica changed: note what needs recomputing, then forget the change sets.
    pub fn sb_changed(&mut self) {
        self.input_generation += 1;
        self.stats.nodes.inputs.compute += 1;
        let changed = self.inputs.sb.replica.changed_tables();
        self.view.stale.extend(changed.iter().copied());
        self.note_view_rows(&changed);
        // First, so that the lookups below see this change's lflows.
        if let Some(tab) = self.inputs.sb.replica.table::<LogicalFlow>() {
            if changed.contains(&"Logical_Flow") {
                self.lflow_index.apply(tab);
            }
        }
        for t in changed {
            let feeds_runtime = match t {
                "Port_Binding" => {
                    let only_up = self.only_up_changed();
                    self.runtime_work.local_dps_stale |= !only_up;
                    !only_up
                }
                "Datapath_Binding" => {
                    self.runtime_work.local_dps_stale = true;
                    true
                }
                "SB_Global" => !self.only_nb_cfg_changed(),
                t => !NOT_RUNTIME_INPUTS.contains(&t),
            };
            self.runtime_work.inputs_dirty |= feeds_runtime;
            match t {
                "Logical_Flow" => {
                    if let Some(tab) = self.inputs.sb.replica.table::<LogicalFlow>() {
                        let c = tab.changes();
                        self.lflow_changes
                            .dirty_lflows
                            .extend(c.inserted.iter().copied());
                        self.lflow_changes
                            .dirty_lflows
                            .extend(c.modified.keys().copied());
                        for u in c.deleted.keys() {
                            self.lflow_changes.dirty_lflows.remove(u);
                            self.lflow_changes.deleted_lflows.insert(*u);
                        }
                    }
                }
                // Rows whose changes only show up through the tables above, or that
                // nothing compiles: nothing to redo.
                "Chassis_Private" | "Controller_Event" | "Connection" | "SSL" | "RBAC_Role"
                | "RBAC_Permission" | "Service_Monitor" | "BFD" | "IGMP_Group"
                | "Gateway_Chassis" | "IP_Multicast" => {}
                // Mirrors are OVS rows: compared with the local OVS again.
                "Mirror" => self.ovs_sync.dirty = true,
                "SB_Global" => {
                    // As ovn-controller: the logical flows are computed again (a northd
                    // upgrade moves `ct.natted` or the registers, once).
                    let options =
                        crate::northd_options::northd_flow_options(&self.inputs.sb.replica);
                    if options != self.northd_flow_options {
                        let what = if options.0 == self.northd_flow_options.0 {
                            "register_consolidation changed"
                        } else {
                            "lb_hairpin_use_ct_mark changed"
                        };
                        self.northd_flow_options = options;
                        self.lflow_changes
                            .need_full
                            .get_or_insert_with(|| what.into());
                    }
                    // The `auto` layout follows northd's release (an upgraded northd).
                    if self.cfg.as_ref().is_some_and(|c| c.layout_auto) {
                        self.refresh_config();
                    }
                }
                // Nothing compiles `up` (claims and `write_port_up` read the replica on
                // every run): a change of `up` alone, our own port-up write included,
                // recomputes nothing.
                "Port_Binding" if self.only_up_changed() => {}
                "Port_Binding" | "Multicast_Group" | "Chassis" | "Encap" => {
                    self.note_physical_change(t);
                    self.lflow_changes.deps_dirty = true;
                    if t == "Port_Binding" {
                        // fwd_group(liveness=true) watches the tunnel to where its child
                        // ports are bound.
                        let lflows = self.lflow_index.using_action(FWD_GROUP_ACTION);
                        self.lflow_changes.dirty_lflows.extend(lflows);
                    }
                }
                "Address_Set" => {
                    if let Some(tab) = self.inputs.sb.replica.table::<AddressSet>() {
                        let (in_place, names) = address_set_changes(tab);
                        let refs = self.our_template_refs();
                        for n in names.iter().chain(in_place.iter().map(|c| &c.name)) {
                            // Through a template variable, the lflow is compiled again.
                            let through = self
                                .lflow_index
                                .naming_through_templates(&refs, Named::AddressSet(n));
                            self.lflow_changes.dirty_lflows.extend(through);
                        }
                        for n in names {
                            let lflows = self.lflow_index.naming_address_set(&n);
                            self.lflow_changes.dirty_lflows.extend(lflows);
                        }
                        for change in in_place {
                            let change = std::sync::Arc::new(change);
                            for u in self.lflow_index.naming_address_set(&change.name) {
                                self.lflow_changes.set_changes.push((*u, change.clone()));
                            }
                        }
                    }
                }
                "Port_Group" => {
                    if let Some(tab) = self.inputs.sb.replica.table::<PortGroup>() {
                        let refs = self.our_template_refs();
                        for n in changed_names(tab, |g| &g.name) {
                            for name in port_group_names(&n) {
                                let lflows = self.lflow_index.naming_port_group(name);
                                self.lflow_changes.dirty_lflows.extend(lflows);
                                let through = self
                                    .lflow_index
                                    .naming_through_templates(&refs, Named::PortGroup(name));
                                self.lflow_changes.dirty_lflows.extend(through);
                            }
                        }
                    }
                }
                "Logical_DP_Group" => {
                    if let Some(tab) = self.inputs.sb.replica.table::<LogicalDpGroup>() {
                        let groups = changed_rows(tab);
                        let lflows = lflows_on(
                            &self.inputs.sb.replica,
                            &self.lflow_index,
                            &BTreeSet::new(),
                            &groups,
                        );
                        self.lflow_changes.dirty_lflows.extend(lflows);
                    }
                    // Load balancers name datapath groups too.
                    self.lflow_changes.others_dirty = true;
                    self.lflow_changes.lb_dirty = true;
                }
                "Datapath_Binding" => {
                    if let Some(tab) = self.inputs.sb.replica.table::<DatapathBinding>() {
                        let dps = changed_rows(tab);
                        let lflows = lflows_on(
                            &self.inputs.sb.replica,
                            &self.lflow_index,
                            &dps,
                            &BTreeSet::new(),
                        );
                        self.lflow_changes.dirty_lflows.extend(lflows);
                    }
                    self.lflow_changes.deps_dirty = true;
                    self.lflow_changes.lb_dirty = true;
                    self.physical_changes.all = true;
                }
                "MAC_Binding" | "Static_MAC_Binding" | "FDB" => {
                    self.lflow_changes.others_dirty = true;
                }
                // pinctrl's `dns_lookup` reads the rows as they are; no flow uses them.
                "DNS" => {}
                // Flows name meters by id, which stays: the switch's meter is modified.
                "Meter" | "Meter_Band" => self.ids.refresh_named_meters(&self.inputs.sb.replica),
                "DHCP_Options" | "DHCPv6_Options" => {
                    let action = if t == "DHCP_Options" {
                        DHCP_ACTIONS[0]
                    } else {
                        DHCP_ACTIONS[1]
                    };
                    let lflows = self.lflow_index.using_action(action);
                    self.lflow_changes.dirty_lflows.extend(lflows);
                }
                "Chassis_Template_Var" => {
                    for name in self.changed_template_vars() {
                        let lflows = self.lflow_index.naming_template(&name);
                        self.lflow_changes.dirty_lflows.extend(lflows);
                    }
                    // Load balancers' VIPs and backends may be templates too.
                    self.lflow_changes.others_dirty = true;
                    self.lflow_changes.lb_dirty = true;
                }
                // Which chassis is active comes out of the runtime; the tunnels to the
                // gateways are physical flows.
                "HA_Chassis_Group" | "HA_Chassis" => {
                    self.note_physical_change(t);
                    self.lflow_changes.deps_dirty = true;
                }
                "Load_Balancer" => {
                    self.lflow_changes.others_dirty = true;
                    self.lflow_changes.lb_dirty = true;
                }
                other => {
                    self.lflow_changes
                        .need_full
                        .get_or_insert_with(|| format!("{other} changed"));
                }
            }
        }
        self.inputs.sb.replica.clear_changes();
    }

    /// What this chassis' template variables name.
    pub(super) fn our_template_refs(&self) -> TemplateRefs {
        TemplateRefs::new(
            self.inputs
                .sb
                .replica
                .table::<ChassisTemplateVar>()
                .into_iter()
                .flat_map(sbclient::Table::iter)
                .filter(|(_, v)| v.chassis == self.runtime.chassis_name)
                .flat_map(|(_, v)| v.variables.iter()),
        )
    }

    /// The template variables of this chassis that this change added, removed or changed.
    pub(super) fn changed_template_vars(&self) -> BTreeSet<String> {
        let Some(t) = self.inputs.sb.replica.table::<ChassisTemplateVar>() else {
            return BTreeSet::new();
        };
        let ours = |v: &ChassisTemplateVar| v.chassis == self.runtime.chassis_name;
        let c = t.changes();
        let now: Vec<&ChassisTemplateVar> = c
            .inserted
            .iter()
            .chain(c.modified.keys())
            .filter_map(|u| t.get(u))
            .filter(|v| ours(v))
            .collect();
        let before: Vec<&ChassisTemplateVar> = c
            .modified
            .values()
            .chain(c.deleted.values())
            .map(AsRef::as_ref)
            .filter(|v| ours(v))
            .collect();
        let value = |rows: &[&ChassisTemplateVar], k: &str| {
            rows.iter().find_map(|r| r.variables.get(k).cloned())
        };
        now.iter()
            .chain(before.iter())
            .flat_map(|r| r.variables.keys())
            .filter(|k| value(&now, k) != value(&before, k))
            .cloned()
            .collect()
    }

    /// Records the rows of this change the view follows row by row ([`TouchedRows`]).
    pub(super) fn note_view_rows(&mut self, changed: &[&str]) {
        fn touched<T: sbclient::Row>(table: Option<&sbclient::Table<T>>) -> BTreeSet<Uuid> {
            table.map(changed_rows).unwrap_or_default()
        }
        let replica = &self.inputs.sb.replica;
        if changed.contains(&"Port_Binding") {
            let rows = touched(replica.table::<PortBinding>());
            self.view.touched.port_bindings.extend(rows);
        }
        if changed.contains(&"Multicast_Group") {
            let rows = touched(replica.table::<MulticastGroup>());
            self.view.touched.multicast_groups.extend(rows);
        }
        if let (true, Some(t)) = (
            changed.contains(&"Address_Set"),
            replica.table::<AddressSet>(),
        ) {
            let names = changed_names(t, |a| &a.name);
            self.view.touched.address_sets.extend(names);
        }
        if let (true, Some(t)) = (
            changed.contains(&"Port_Group"),
            replica.table::<PortGroup>(),
        ) {
            let names = changed_names(t, |g| &g.name);
            self.view.touched.port_groups.extend(names);
        }
    }

    /// Records what a change to `table` means for the physical flows ([`Self::physical_scope`]).
    pub(super) fn note_physical_change(&mut self, table: &str) {
        match table {
            "Port_Binding" => {
                let Some(t) = self.inputs.sb.replica.table::<PortBinding>() else {
                    return;
                };
                let c = t.changes();
                self.physical_changes.pbs.extend(c.inserted.iter().copied());
                for (u, old) in c.modified.iter().chain(c.deleted.iter()) {
                    self.physical_changes.pbs.insert(*u);
                    self.physical_changes.names.insert(old.logical_port.clone());
                    self.physical_changes.dps.insert(old.datapath);
                    if let Some(peer) = old.options.get("peer") {
                        self.physical_changes.names.insert(peer.clone());
                    }
                }
            }
            "Multicast_Group" => {
                let Some(t) = self.inputs.sb.replica.table::<MulticastGroup>() else {
                    return;
                };
                let c = t.changes();
                self.physical_changes.mcs.extend(
                    c.inserted
                        .iter()
                        .chain(c.modified.keys())
                        .chain(c.deleted.keys())
                        .copied(),
                );
                let now = c
                    .inserted
                    .iter()
                    .chain(c.modified.keys())
                    .filter_map(|u| t.get(u))
                    .map(|m| m.datapath);
                let before = c
                    .modified
                    .values()
                    .chain(c.deleted.values())
                    .map(|m| m.datapath);
                self.physical_changes
                    .dps
                    .extend(now.chain(before).collect::<Vec<_>>());
            }
            _ => self.physical_changes.all = true,
        }
    }

    /// The port bindings and multicast groups (sorted uuids) whose physical and
    /// port-security flows may differ since they were last computed, when the change is
    /// limited to some ports: those changed, bound or released, or whose zone changed, with
    /// every port and multicast group of their datapaths and of the datapaths next to those
    /// (flows refer to peers, localnet and distributed ports there), and their containers.
    /// `None`: compute all of them.
    pub(super) fn physical_scope(&self) -> Option<(Vec<Uuid>, Vec<Uuid>)> {
        const MAX_DATAPATHS: usize = 64;
        if self.physical_changes.all {
            return None;
        }
        let (old, new) = (self.physical_changes.runtime.as_ref()?, &self.runtime);
        let same_globals = old.chassis == new.chassis
            && old.chassis_name == new.chassis_name
            && old.local_datapaths == new.local_datapaths
            && old.patch_ofports == new.patch_ofports
            && old.tunnels == new.tunnels
            && old.active_tunnels == new.active_tunnels
            && old.active_ha == new.active_ha
            && old.ha_members == new.ha_members
            && old.geneve_field == new.geneve_field
            && old.mark_field == new.mark_field
            && old.pkt_mark_peers == new.pkt_mark_peers
            && old.drop_sampling == new.drop_sampling;
        if !same_globals {
            return None;
        }
        let pbs = self.inputs.sb.replica.table::<PortBinding>()?;
        if !(pbs.has_index("logical_port")
            && pbs.has_index("datapath")
            && pbs.has_index("parent_port"))
        {
            return None;
        }
        let by_name = |n: &str| {
            pbs.find_one("logical_port", &Atom::String(n.to_owned()))
                .map(|(u, _)| *u)
        };
        let mut touched = self.physical_changes.pbs.clone();
        touched.extend(
            self.physical_changes
                .names
                .iter()
                .filter_map(|n| by_name(n)),
        );
        for (u, k) in &old.bound {
            if new.bound.get(u) != Some(k) {
                touched.insert(*u);
            }
        }
        touched.extend(new.bound.keys().filter(|u| !old.bound.contains_key(u)));
        for (u, k) in &old.localports {
            if new.localports.get(u) != Some(k) {
                touched.insert(*u);
            }
        }
        touched.extend(
            new.localports
                .keys()
                .filter(|u| !old.localports.contains_key(u)),
        );
        let zones_changed = old
            .ct_zones
            .iter()
            .filter(|(n, z)| new.ct_zones.get(*n) != Some(z))
            .map(|(n, _)| n)
            .chain(
                new.ct_zones
                    .keys()
                    .filter(|n| !old.ct_zones.contains_key(*n)),
            );
        for name in zones_changed {
            // A datapath's zone is used by every port of it and of its neighbours.
            if name.ends_with("_dnat") || name.ends_with("_snat") {
                return None;
            }
            touched.extend(by_name(name));
        }
        let mut names: BTreeSet<String> = self.physical_changes.names.clone();
        let mut dps = self.physical_changes.dps.clone();
        for u in &touched {
            if let Some(pb) = pbs.get(u) {
                names.insert(pb.logical_port.clone());
                dps.insert(pb.datapath);
                if let Some(peer) = pb.options.get("peer") {
                    names.insert(peer.clone());
                }
            }
        }
        touched.extend(names.iter().filter_map(|n| by_name(n)));
        for u in &touched {
            if let Some(pb) = pbs.get(u) {
                dps.insert(pb.datapath);
            }
        }
        let neighbours: Vec<Uuid> = dps
            .iter()
            .filter_map(|dp| new.local_datapaths.get(dp))
            .flat_map(|ld| ld.peers.iter())
            .filter_map(|(_, remote)| pbs.get(remote).map(|p| p.datapath))
            .collect();
        dps.extend(neighbours);
        if dps.len() > MAX_DATAPATHS {
            return None;
        }
        let mut scope = touched;
        for dp in &dps {
            scope.extend(pbs.find("datapath", &Atom::Uuid(*dp)).map(|(u, _)| *u));
        }
        for n in &names {
            scope.extend(
                pbs.find("parent_port", &Atom::String(n.clone()))
                    .map(|(u, _)| *u),
            );
        }
        let mut mcs: BTreeSet<Uuid> = self.physical_changes.mcs.clone();
        if let Some(t) = self.inputs.sb.replica.table::<MulticastGroup>() {
            mcs.extend(
                t.iter()
                    .filter(|(_, m)| dps.contains(&m.datapath))
                    .map(|(u, _)| *u),
            );
        }
        Some((scope.into_iter().collect(), mcs.into_iter().collect()))
    }

    /// The physical and port-security flows are computed from the current state.
    pub(super) fn physical_done(&mut self) {
        self.physical_changes.pbs.clear();
        self.physical_changes.names.clear();
        self.physical_changes.dps.clear();
        self.physical_changes.mcs.clear();
        self.physical_changes.all = false;
        self.physical_changes.runtime = Some(self.runtime.clone());
    }

    /// Whether the only change to SB_Global is its `nb_cfg` (every Northbound change).
    pub(super) fn only_nb_cfg_changed(&self) -> bool {
        only_modified::<SbGlobal>(&self.inputs.sb.replica, |old, new| old.nb_cfg = new.nb_cfg)
    }

    /// Whether every change to Port_Binding in the current change set is to `up` alone.
    pub(super) fn only_up_changed(&self) -> bool {
        only_modified::<PortBinding>(&self.inputs.sb.replica, |old, new| old.up = new.up)
    }

    /// The OVS replica changed. Flows depend on the local OVS only through the runtime,
    /// which every run derives from the replica again and compares (`same_runtime_but_zones`): an OVS
    /// change that leaves it the same (our own `ovn-installed`, `ovn-nb-cfg` and
    /// `ct-zone-*` writes, a new interface nobody has bound yet) recomputes nothing.
    pub fn ovs_changed(&mut self) {
        self.input_generation += 1;
        self.stats.nodes.inputs.compute += 1;
        self.inputs.ovs.clear_changes();
        self.runtime_work.inputs_dirty = true;
        self.ovs_sync.dirty = true;
        self.refresh_config();
    }

    /// See `input_generation`: equal values mean the same replicas and runtime.
    pub fn input_generation(&self) -> u64 {
        self.input_generation
    }
}

/// The address sets of `table`'s change set: those changed by a few addresses (their
/// lflows' flows can be changed in place), and the names of the others (added, removed,
/// renamed, or changed too much: their lflows are compiled again).
fn address_set_changes(
    table: &sbclient::Table<AddressSet>,
) -> (Vec<crate::compile::SetChange>, BTreeSet<String>) {
    let c = table.changes();
    let mut in_place = Vec::new();
    let mut names = BTreeSet::new();
    for (u, old) in &c.modified {
        let Some(new) = table.get(u) else { continue };
        let change = (old.name == new.name)
            .then(|| crate::compile::SetChange::between(&new.name, &old.addresses, &new.addresses))
            .flatten();
        if let Some(ch) = change {
            in_place.push(ch);
        } else {
            names.insert(old.name.clone());
            names.insert(new.name.clone());
        }
    }
    names.extend(
        c.inserted
            .iter()
            .filter_map(|u| table.get(u))
            .map(|a| a.name.clone()),
    );
    names.extend(c.deleted.values().map(|a| a.name.clone()));
    (in_place, names)
}
