//! The runtime stage of a run: which bindings this chassis holds and claims, the local
//! datapaths, tunnels and conntrack zones, derived from the inputs. Part of the core's
//! `impl Engine`, in a file of its own.

use super::*;

impl Engine {
    /// Bindings (claims and releases into `sb_txn`), the runtime, zones and monitor
    /// conditions (into `actions`), from the replicas; true if it wrote to `sb_txn`.
    /// The runtime's first part: local interfaces, the binding plan, and the claims and
    /// releases it calls for (into `sb_txn`; true if it wrote something).
    pub(super) fn update_bindings(
        &mut self,
        cfg: &ChassisConfig,
        chassis_uuid: Option<Uuid>,
        now: Instant,
        sb_txn: &mut Transaction,
    ) -> (bool, (binding::BindingPlan, BTreeSet<String>)) {
        let mut sb_dirty = false;
        // Bindings.
        let ifaces = binding::local_ifaces(
            &self.inputs.ovs,
            &cfg.bridge,
            std::mem::take(&mut self.ifaces.order),
        );
        // Logged and counted once, not on every run.
        for (id, name) in &ifaces.duplicates {
            if !self.ifaces.duplicates.contains(&(id.clone(), name.clone())) {
                crate::vlog_rl!(WARN, &crate::vlog::limits::BAD_ROW, target: "binding", "interface {name} has iface-id {id} already used by another interface: ignored");
                self.stats.bad_rows += 1;
            }
        }
        self.ifaces = ifaces;
        // Without an OpenFlow connection ovs-vswitchd may be down and BFD's state in the
        // Interface rows stale: no tunnel counts as up then (as ovn-controller), so a
        // gateway whose switch is gone stops claiming.
        let active_tunnels = if self.install.of_session.is_some() {
            super::super::bfd::active_tunnels(&self.inputs.ovs, &cfg.bridge)
        } else {
            BTreeSet::new()
        };
        if active_tunnels != self.runtime.active_tunnels {
            tracing::debug!(target: "bfd", "BFD up to {active_tunnels:?}");
        }
        let me = Me {
            name: &cfg.system_id,
            hostname: &cfg.hostname,
            uuid: chassis_uuid,
            active_tunnels: Some(&active_tunnels),
        };
        let plan = binding::plan(
            &self.inputs.sb.replica,
            &self.ifaces,
            &me,
            &self.sb_writes.last_claim,
            now,
        );
        // A refusal is logged when it is new (a plan is made on every runtime change).
        for n in &plan.notes {
            if !self.runtime_work.notes.contains(n) {
                crate::vlog_rl!(INFO, &crate::vlog::limits::BINDING_NOTE, target: "binding", "{n}");
            }
        }
        self.runtime_work.notes = plan.notes.iter().cloned().collect();
        // Unusable Port_Bindings: logged and counted once per problem, then skipped.
        let bad: BTreeMap<Uuid, String> = plan.problems.iter().cloned().collect();
        for (u, p) in &bad {
            if self.bad_bindings.get(u) != Some(p) {
                crate::vlog_rl!(WARN, &crate::vlog::limits::BAD_ROW, target: "binding", "{p}");
                self.stats.bad_rows += 1;
            }
        }
        self.bad_bindings = bad;
        if !self.sb_busy {
            sb_dirty |= self.write_claims(&plan, chassis_uuid, sb_txn, now);
        }
        // A plan made while a transaction is in flight wrote no claim: plan again after it.
        self.runtime_work.inputs_dirty = self.sb_busy;
        // A throttled claim is due again later.
        self.runtime_work.due = plan.throttled.iter().map(|(_, t)| *t).min();
        (sb_dirty, (plan, active_tunnels))
    }

    /// The runtime's second part, from the binding plan: what is bound where, local
    /// datapaths, tunnels, patch ports, zones and the monitor conditions.
    pub(super) fn finish_runtime(
        &mut self,
        cfg: &ChassisConfig,
        chassis_uuid: Option<Uuid>,
        plan: &binding::BindingPlan,
        active_tunnels: BTreeSet<String>,
        actions: &mut Actions,
    ) {
        let ha_members = plan.ha_member.clone();
        // Runtime: what is bound where, local datapaths, tunnels, patch ports, zones.
        // Every part below is recomputed: only what is not is carried over (cloning the
        // whole runtime on every run cost more than some of the parts).
        let mut rt = Runtime {
            chassis_name: self.runtime.chassis_name.clone(),
            chassis: self.runtime.chassis,
            geneve_field: self.runtime.geneve_field,
            mark_field: self.runtime.mark_field,
            drop_sampling: super::super::sampling::drop_sampling(
                &self.inputs.sb.replica,
                &self.inputs.ovs,
                &cfg.bridge,
            ),
            collector_ids: super::super::sampling::collector_ids(&self.inputs.ovs),
            ..Runtime::default()
        };
        rt.bound.clone_from(&plan.bound);
        rt.localports.clone_from(&plan.localports);
        rt.active_ha = plan.active_ha.iter().copied().collect();
        rt.virtual_held = plan.virtual_held.iter().copied().collect();
        rt.ha_members = plan.ha_member.iter().copied().collect();
        let seeds: Vec<Uuid> = plan
            .bound
            .keys()
            .chain(ha_members.iter())
            .copied()
            .collect();
        let key = LocalDatapathsKey {
            seeds: {
                let mut v = seeds.clone();
                v.sort_unstable();
                v.dedup();
                v
            },
            ha_members: {
                let mut v: Vec<Uuid> = ha_members.iter().copied().collect();
                v.sort_unstable();
                v
            },
            chassis: chassis_uuid,
            mapped_networks: cfg.bridge_mappings.keys().cloned().collect(),
        };
        if !self.runtime_work.local_dps_stale
            && self.runtime_work.local_dps_key.as_ref() == Some(&key)
        {
            rt.local_datapaths.clone_from(&self.runtime.local_datapaths);
        } else {
            rt.local_datapaths = super::super::local::local_datapaths(
                &self.inputs.sb.replica,
                seeds,
                chassis_uuid,
                &|u| ha_members.contains(u),
                &|net| cfg.bridge_mappings.contains_key(net),
            );
            self.runtime_work.local_dps_stale = false;
            self.runtime_work.local_dps_key = Some(key);
        }
        rt.tunnels = tunnels_of(&self.inputs.ovs, &cfg.bridge);
        rt.active_tunnels = active_tunnels;
        rt.pkt_mark_peers = pkt_mark_peers(&self.inputs.sb.replica, cfg, rt.mark_field);
        rt.patch_ofports = patch_ofports(&self.inputs.ovs, &cfg.bridge, &self.inputs.sb.replica);
        let wanted_zones = wanted_zones(
            &self.inputs.sb.replica,
            &rt,
            self.layout().dialect.physical.nat_zones_by_name,
        );
        // Zones are released only once the view is complete (after the first put).
        self.zones.update(&wanted_zones, self.initial_sync_done);
        let zones_same = self.runtime.ct_zones == self.zones.by_name;
        rt.ct_zones = if zones_same {
            std::mem::take(&mut self.runtime.ct_zones)
        } else {
            self.zones.by_name.clone()
        };
        if rt.collector_ids != self.runtime.collector_ids {
            // As ovn-controller: the logical flows are computed again.
            self.lflow_changes
                .need_full
                .get_or_insert_with(|| "Flow_Sample_Collector_Set changed".into());
        }
        if rt.chassis != self.runtime.chassis || rt.geneve_field != self.runtime.geneve_field {
            self.runtime_work.changed = true;
        } else if !zones_same || !same_runtime_but_zones(&rt, &self.runtime) {
            self.lflow_changes.deps_dirty = true;
        }
        self.runtime = rt;
        // Conditions.
        let local_dps: Vec<Uuid> = self.runtime.local_datapaths.keys().copied().collect();
        let iface_ids: Vec<String> = self
            .ifaces
            .by_iface_id
            .keys()
            .filter(|id| !self.seen_and_unclaimed(id, chassis_uuid))
            .cloned()
            .collect();
        let wanted = conditions(&Interest {
            chassis_name: &cfg.system_id,
            chassis: chassis_uuid,
            local_datapaths: &local_dps,
            local_iface_ids: &iface_ids,
            monitor_all: cfg.monitor_all,
        });
        for (t, c) in wanted {
            if self.conditions.requested.get(t) != Some(&c) {
                self.conditions.requested.insert(t, c.clone());
                actions.conditions.push((t, c));
            }
        }
        self.conditions.unnumbered += actions.conditions.len();
    }

    /// Whether the Port_Binding named `iface_id` is already seen through its local
    /// datapath and not (yet) bound here. Its interface's clauses wait until it is: a
    /// condition change costs the server tens of milliseconds at scale (every Port_Binding
    /// row is matched again), and the claim sent behind it would wait that long. Once
    /// bound here, the clauses come (`parent_port` finds its nested ports).
    pub(super) fn seen_and_unclaimed(&self, iface_id: &str, me: Option<Uuid>) -> bool {
        let Some(pbs) = self.inputs.sb.replica.table::<PortBinding>() else {
            return false;
        };
        if !pbs.has_index("logical_port") {
            return false;
        }
        pbs.find("logical_port", &Atom::String(iface_id.to_owned()))
            .any(|(_, pb)| {
                me.is_some()
                    && pb.chassis != me
                    && self.runtime.local_datapaths.contains_key(&pb.datapath)
            })
    }

    pub(super) fn restore_zones(&mut self, cfg: &ChassisConfig) {
        if self.runtime_work.zones_restored {
            return;
        }
        if let Some((_, br)) = binding::bridge(&self.inputs.ovs, &cfg.bridge) {
            self.zones.restore(br.external_ids.iter());
            // Zones read back were in use before: no flush for them.
            self.zones.to_flush.clear();
            self.runtime_work.zones_restored = true;
        }
    }

    /// OVS interfaces of ports whose flows are in (they get `ovn-installed`).
    pub(super) fn installed_iface_uuids(&self) -> BTreeSet<Uuid> {
        let mut out = BTreeSet::new();
        let Some(pbs) = self.inputs.sb.replica.table::<PortBinding>() else {
            return out;
        };
        for u in &self.sb_writes.installed_ports {
            if let (Some(pb), Some(BindingKind::Vif { .. })) =
                (pbs.get(u), self.runtime.bound.get(u))
            {
                if let Some(i) = self.ifaces.by_iface_id.get(&pb.logical_port) {
                    out.insert(i.uuid);
                }
            }
        }
        out
    }
}

/// Whether two runtimes are the same, their conntrack zones left out (compared apart).
fn same_runtime_but_zones(a: &Runtime, b: &Runtime) -> bool {
    a.chassis == b.chassis
        && a.bound == b.bound
        && a.localports == b.localports
        && a.local_datapaths == b.local_datapaths
        && a.patch_ofports == b.patch_ofports
        && a.tunnels == b.tunnels
        && a.active_ha == b.active_ha
        && a.ha_members == b.ha_members
        && a.geneve_field == b.geneve_field
        && a.mark_field == b.mark_field
        && a.pkt_mark_peers == b.pkt_mark_peers
        && a.drop_sampling == b.drop_sampling
        && a.virtual_held == b.virtual_held
}

/// The runtime stage's bookkeeping: what it is computed from changed, a claim comes due,
/// the local datapaths are stale.
pub struct RuntimeWork {
    pub(in crate::engine) zones_restored: bool,
    /// The local datapaths depend on Port_Binding and Datapath_Binding rows and on the
    /// inputs in `local_dps_key`: with neither changed, the last ones are kept (walking
    /// every port of every local datapath on each run was the largest cost of a run).
    pub(in crate::engine) local_dps_stale: bool,
    pub(in crate::engine) local_dps_key: Option<LocalDatapathsKey>,
    /// The binding plan the first half made; the second half derives the rest of the
    /// runtime from it (local datapaths, tunnels, zones, conditions), after the claims left.
    pub(in crate::engine) due_plan: Option<(binding::BindingPlan, BTreeSet<String>)>,
    /// When a throttled claim comes due (the runtime is computed again then).
    pub(in crate::engine) due: Option<Instant>,
    /// What the runtime is computed from (OVS, the Southbound tables that feed bindings,
    /// local datapaths, tunnels and zones) changed since it was last computed.
    pub(in crate::engine) inputs_dirty: bool,
    /// A change the engine cannot yet attribute (first run, reconnect): recompute all.
    pub(in crate::engine) changed: bool,
    /// The last plan's refusals (logged when new).
    pub(in crate::engine) notes: BTreeSet<String>,
}
impl RuntimeWork {
    pub(crate) fn new() -> Self {
        Self {
            zones_restored: false,
            local_dps_stale: true,
            local_dps_key: None,
            due_plan: None,
            due: None,
            inputs_dirty: true,
            changed: true,
            notes: BTreeSet::new(),
        }
    }
}
