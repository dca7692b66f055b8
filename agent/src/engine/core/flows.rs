//! The flows stage of a run: the logical flows compiled again where their inputs moved,
//! and the physical and other owners' flows, into the desired table. Part of the core's
//! `impl Engine`, in a file of its own.

use super::*;
use crate::engine::lflow_index::FWD_GROUP_ACTION;

impl Engine {
    pub(super) fn recompute_flows(&mut self, cfg: &ChassisConfig) {
        let mut full = self.lflow_changes.need_full.take().or_else(|| {
            self.runtime_work
                .changed
                .then(|| "local state changed".to_owned())
        });
        self.runtime_work.changed = false;
        let deps_dirty = std::mem::take(&mut self.lflow_changes.deps_dirty);
        let others_dirty = std::mem::take(&mut self.lflow_changes.others_dirty) || deps_dirty;
        let mut lb_dirty = std::mem::take(&mut self.lflow_changes.lb_dirty);
        // Most runs (a transaction reply, a put confirmed, an OVS echo) change no flow: no
        // view to build then.
        if full.is_none()
            && !others_dirty
            && self.lflow_changes.dirty_lflows.is_empty()
            && self.lflow_changes.deleted_lflows.is_empty()
            && self.lflow_changes.set_changes.is_empty()
        {
            return;
        }
        let layout = cfg.layout;
        let facts = LocalFacts {
            chassis: self.runtime.chassis,
            bound: self
                .runtime
                .bound
                .keys()
                .chain(&self.runtime.virtual_held)
                .copied()
                .collect(),
            localports: self.runtime.localports.keys().copied().collect(),
            active_ha: self.runtime.active_ha.iter().copied().collect(),
            ha_members: self.runtime.ha_members.iter().copied().collect(),
            local_datapaths: self.runtime.local_datapaths.keys().copied().collect(),
            collector_ids: self.runtime.collector_ids.clone(),
            tunnel_ofports: self
                .runtime
                .tunnels
                .iter()
                .filter_map(|(c, t)| Some((c.clone(), t.first()?.ofport)))
                .collect(),
            no_meters: self.meter_support == Some(false),
        };
        if self.view.parts.tunnel_ofports() != &facts.tunnel_ofports {
            // fwd_group(liveness=true) buckets watch the tunnels.
            let lflows = self.lflow_index.using_action(FWD_GROUP_ACTION);
            self.lflow_changes.dirty_lflows.extend(lflows);
        }
        if full.is_some() {
            // A full recompute rebuilds every part (the rows may have been replaced).
            self.view.parts = ViewParts::default();
        }
        let view_started = std::time::Instant::now();
        let stale = std::mem::take(&mut self.view.stale);
        let touched = std::mem::take(&mut self.view.touched);
        self.view.parts.refresh(
            &self.inputs.sb,
            &cfg.system_id,
            &facts,
            &stale,
            Some(&touched),
        );
        let changed = self.view.parts.take_changes();
        let view = SbView::from_parts(&self.inputs.sb, &self.ids, &self.view.parts);
        if full.is_none() && changed.rebuilt {
            full = Some("first view".to_owned());
        } else if full.is_none() && !changed.is_empty() {
            let lflows = affected_lflows(&view, &changed, &self.lflow_index);
            lb_dirty |= !changed.datapaths.is_empty();
            self.stats.dependency_runs += 1;
            self.stats.dependency_lflows += lflows.len() as u64;
            self.lflow_changes.dirty_lflows.extend(lflows);
        }
        if lb_dirty || full.is_some() {
            self.lb_flushes.update(&view);
        }
        self.stats.last_phases.view = view_started.elapsed();
        let compile_started = std::time::Instant::now();
        // Parsed matches depend on address sets, port groups and port keys; a change to
        // any of them recomputes, so the cache lives for one run only (and its memory is
        // not kept between runs).
        let cache = MatchCache::default();
        let cx = Context {
            view: &view,
            layout: &layout,
            cache: &cache,
            only_dp: None,
            limit: crate::lflow::DEFAULT_FLOW_LIMIT,
        };
        let threads = if self.opts.threads == 0 {
            std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
        } else {
            self.opts.threads
        };
        let mut results: Vec<(Owner, Compiled)>;
        let mut gone: Vec<Owner> = Vec::new();
        let mut physical_computed = false;
        let mut stream_lflows = false;
        let nodes = &mut self.stats.nodes;
        if full.is_some() {
            nodes.runtime_data.recompute += 1;
            nodes.logical_flow_output.recompute += 1;
            nodes.physical_flow_output.recompute += 1;
            nodes.flow_output.recompute += 1;
            crate::coverage::LFLOW_RUN.inc();
            crate::coverage::PHYSICAL_RUN.inc();
        } else {
            if deps_dirty {
                nodes.runtime_data.compute += 1;
            }
            if others_dirty {
                nodes.physical_flow_output.recompute += 1;
                crate::coverage::PHYSICAL_RUN.inc();
            }
            nodes.logical_flow_output.compute += 1;
            nodes.flow_output.compute += 1;
        }
        if let Some(reason) = full {
            self.stats.full_recomputes += 1;
            *self.stats.recompute_reasons.entry(reason).or_default() += 1;
            self.lflow_changes.dirty_lflows.clear();
            self.lflow_changes.deleted_lflows.clear();
            self.lflow_changes.set_changes.clear();
            // The logical flows in batches, each put in the table as soon as it is compiled:
            // the compiled form of the whole table never exists at once beside the table.
            let mut keep: HashSet<Owner, FxBuild> = HashSet::default();
            let lflows = lflows_in_order(&self.inputs.sb.replica);
            // With a switch to send to and no put in flight, the put this run makes carries
            // the logical flows as they are compiled (the switch installs while we compile);
            // otherwise they are compiled at the end of this function, batch by batch alike.
            stream_lflows = self.install.of_session.is_some() && self.install.in_flight.is_none();
            keep.extend(lflows.iter().map(|(u, _)| Owner::Lflow(**u)));
            self.install.streamed = Some(StreamedCompile {
                lflows: lflows.iter().map(|(u, _)| **u).collect(),
                next: 0,
                layout,
                threads,
                cache: MatchCache::default(),
                spent: Duration::ZERO,
            });
            results = Vec::new();
            compile_other_owners(&cx, &mut results, true);
            compile_port_security(&cx, &mut results, None);
            results.extend(physical_owners(
                &self.inputs.sb.replica,
                &self.runtime,
                &layout,
                None,
            ));
            physical_computed = true;
            // Every owner not produced again is gone.
            keep.extend(results.iter().map(|(o, _)| *o));
            gone.extend(
                self.flows
                    .owners_all()
                    .copied()
                    .filter(|o| !keep.contains(o)),
            );
        } else {
            for (u, change) in std::mem::take(&mut self.lflow_changes.set_changes) {
                let owner = Owner::Lflow(u);
                if self.lflow_changes.dirty_lflows.contains(&u)
                    || self.lflow_changes.deleted_lflows.contains(&u)
                {
                    continue;
                }
                let Some(lf) = self
                    .inputs
                    .sb
                    .replica
                    .table::<LogicalFlow>()
                    .and_then(|t| t.get(&u))
                else {
                    continue;
                };
                let done = !self.failures.contains_key(&owner)
                    && apply_set_change(&cx, &mut self.flows, &self.ids, owner, lf, &change);
                if done {
                    self.stats.set_deltas += 1;
                } else {
                    self.stats.set_delta_fallbacks += 1;
                    self.lflow_changes.dirty_lflows.insert(u);
                }
            }
            let dirty = std::mem::take(&mut self.lflow_changes.dirty_lflows);
            let lflows: Vec<(&Uuid, &LogicalFlow)> = self
                .inputs
                .sb
                .replica
                .table::<LogicalFlow>()
                .map(|t| dirty.iter().filter_map(|u| Some((u, t.get(u)?))).collect())
                .unwrap_or_default();
            self.stats.incremental_lflows += lflows.len() as u64;
            // A huge change (northd's table anew, an address set that every ACL names) is
            // compiled and put in the table a batch at a time, as the first compile is: its
            // compiled form never exists all at once beside the table.
            let batch = self.opts.compile_batch_lflows();
            let batched = lflows.len() > batch;
            for chunk in lflows.chunks(batch) {
                let compiled = compile_lflow_list(&cx, chunk, threads);
                self.stats.bad_rows += apply_compiled(
                    &mut self.flows,
                    &mut self.uses,
                    &mut self.failures,
                    &self.ids,
                    compiled,
                );
                if batched {
                    cache.forget_parsed();
                }
            }
            self.stats.batched_lflow_runs += u64::from(batched);
            results = Vec::new();
            gone.extend(
                std::mem::take(&mut self.lflow_changes.deleted_lflows)
                    .into_iter()
                    .map(Owner::Lflow),
            );
            if others_dirty {
                // The MAC binding, FDB and hairpin owners are few: all of them again. Port
                // and physical owners only when ports or the runtime changed: all of them,
                // or when the change is limited to some ports, theirs. Owners recomputed and
                // not produced again are gone.
                let first = results.len();
                compile_other_owners(&cx, &mut results, lb_dirty);
                // Uuid sets of the port and multicast-group owners recomputed (`None`: all).
                let mut scope: Option<(HashSet<Uuid, FxBuild>, HashSet<Uuid, FxBuild>)> = None;
                let mut ports_recomputed = false;
                if deps_dirty {
                    ports_recomputed = true;
                    let limited = self.physical_scope();
                    let (pbs, mcs) = match &limited {
                        Some((p, m)) => (Some(p.as_slice()), Some((p.as_slice(), m.as_slice()))),
                        None => (None, None),
                    };
                    compile_port_security(&cx, &mut results, pbs);
                    results.extend(physical_owners(
                        &self.inputs.sb.replica,
                        &self.runtime,
                        &layout,
                        mcs,
                    ));
                    if limited.is_some() {
                        self.stats.scoped_physical_runs += 1;
                    }
                    scope =
                        limited.map(|(p, m)| (p.into_iter().collect(), m.into_iter().collect()));
                    physical_computed = true;
                }
                let keep: HashSet<Owner, FxBuild> =
                    results[first..].iter().map(|(o, _)| *o).collect();
                let recomputed = |o: &Owner| match o {
                    Owner::Lflow(_) => false,
                    Owner::LbHairpin(_) => lb_dirty,
                    Owner::MacBinding(_) | Owner::StaticMacBinding(_) | Owner::Fdb(_) => true,
                    Owner::PortSecurity(u) | Owner::PhysicalPort(u) => {
                        ports_recomputed && scope.as_ref().is_none_or(|(p, _)| p.contains(u))
                    }
                    Owner::PhysicalMcGroup(u) => {
                        ports_recomputed && scope.as_ref().is_none_or(|(_, m)| m.contains(u))
                    }
                    Owner::TunnelIn(_) | Owner::ChassisMac(_) | Owner::PhysicalDefaults => {
                        ports_recomputed
                    }
                };
                gone.extend(
                    self.flows
                        .owners_all()
                        .copied()
                        .filter(|o| recomputed(o) && !keep.contains(o)),
                );
            }
        }
        drop(view);
        // Parsed matches and actions are not needed once compiled.
        drop(cache);
        self.stats.last_phases.compile = compile_started.elapsed();
        let apply_started = std::time::Instant::now();
        if physical_computed {
            self.physical_done();
        }
        for o in gone {
            self.flows.remove(o);
            if let Some(u) = self.uses.remove(&o) {
                self.ids.release(&u);
            }
            self.failures.remove(&o);
        }
        self.stats.bad_rows += apply_compiled(
            &mut self.flows,
            &mut self.uses,
            &mut self.failures,
            &self.ids,
            results,
        );
        self.stats.last_phases.apply = apply_started.elapsed();
        if !stream_lflows {
            self.finish_streamed_compile();
        }
    }
}

/// Changes `owner`'s flows for an address-set change in place; false when that cannot be
/// done (nothing changed then): a removed address's flow that the lflow does not have, or
/// that carries another lflow's conjunctions too (merged flows cannot be taken apart).
fn apply_set_change(
    cx: &Context<'_>,
    flows: &mut FlowTable,
    ids: &Ids,
    owner: Owner,
    lf: &LogicalFlow,
    change: &crate::compile::SetChange,
) -> bool {
    let Owner::Lflow(uuid) = owner else {
        return false;
    };
    let delta = crate::compile::logical_flow_set_delta(&uuid, lf, cx, change);
    ids.release(&delta.uses);
    let Some((added, removed)) = delta.flows else {
        return false;
    };
    let separable = removed.iter().all(|f| {
        let owners = flows.owners(f.table, f.priority, &f.m);
        owners.contains(&owner) && (owners.len() == 1 || !is_conjunction(f))
    });
    if !separable {
        return false;
    }
    flows.remove_some(owner, &removed);
    flows.add(owner, added);
    true
}

fn is_conjunction(f: &crate::lflow::flows::OfFlow) -> bool {
    f.actions
        .iter()
        .any(|a| matches!(a, openflow::action::Action::Conjunction { .. }))
}

/// The physical flows of every owner, or (`some`: port bindings, multicast groups) of the
/// chassis-wide owners and those.
fn physical_owners(
    sb: &Replica,
    rt: &Runtime,
    layout: &crate::lflow::layout::TableLayout,
    some: Option<(&[Uuid], &[Uuid])>,
) -> Vec<(Owner, Compiled)> {
    let p = match some {
        None => crate::physical::all(sb, rt, layout),
        Some((pbs, mcs)) => crate::physical::some(sb, rt, layout, pbs, mcs),
    };
    for e in &p.errors {
        if e.problem.is_transient() {
            tracing::debug!(target: "physical", "{e}");
        } else {
            crate::vlog_rl!(WARN, &crate::vlog::limits::BAD_ROW, target: "physical", "{e}");
        }
    }
    p.per_owner
        .into_iter()
        .map(|(o, flows)| {
            (
                o,
                Compiled {
                    flows,
                    ..Compiled::default()
                },
            )
        })
        .collect()
}

/// Since the physical and port-security flows were last computed: the Port_Bindings
/// changed (uuids, and the names and datapaths they had), the datapaths whose multicast
/// groups changed, and whether something chassis-wide did (then all again).
pub struct PhysicalChanges {
    /// Port_Bindings changed (uuids), and the names and datapaths they had.
    pub(in crate::engine) pbs: BTreeSet<Uuid>,
    pub(in crate::engine) names: BTreeSet<String>,
    pub(in crate::engine) dps: BTreeSet<Uuid>,
    /// Multicast groups changed (deleted ones too: their flows must go).
    pub(in crate::engine) mcs: BTreeSet<Uuid>,
    pub(in crate::engine) all: bool,
    /// The runtime they were computed with.
    pub(in crate::engine) runtime: Option<Runtime>,
}

impl PhysicalChanges {
    pub(crate) fn new() -> Self {
        Self {
            pbs: BTreeSet::new(),
            names: BTreeSet::new(),
            dps: BTreeSet::new(),
            mcs: BTreeSet::new(),
            all: true,
            runtime: None,
        }
    }
}

/// The flows stage's pending work: what changed since the flows were last computed.
pub struct LflowChanges {
    pub(in crate::engine) need_full: Option<String>,
    pub(in crate::engine) dirty_lflows: BTreeSet<Uuid>,
    /// Lflows naming an address set that changed by a few addresses: their flows are
    /// changed in place when the next run can (else the lflow is compiled again).
    pub(in crate::engine) set_changes: Vec<(Uuid, std::sync::Arc<crate::compile::SetChange>)>,
    pub(in crate::engine) deleted_lflows: BTreeSet<Uuid>,
    /// Ports, multicast groups or local state changed: recompile the logical flows that
    /// depend on what changed ([`crate::view::ViewChanges`]), and every other and physical owner.
    pub(in crate::engine) deps_dirty: bool,
    /// Rows of the non-lflow logical owners changed (MAC bindings, FDB, load balancers).
    pub(in crate::engine) others_dirty: bool,
    /// What load-balancer hairpin flows depend on changed (load balancers, datapath groups,
    /// datapaths, which datapaths are local).
    pub(in crate::engine) lb_dirty: bool,
}
impl LflowChanges {
    pub(crate) fn new() -> Self {
        Self {
            need_full: Some("start".into()),
            dirty_lflows: BTreeSet::new(),
            set_changes: Vec::new(),
            deleted_lflows: BTreeSet::new(),
            deps_dirty: false,
            others_dirty: false,
            lb_dirty: false,
        }
    }
}

/// The view's parts, kept between runs, and what changed since they were refreshed.
pub struct ViewState {
    /// The view's parts, kept between runs, and the Southbound tables changed since they
    /// were refreshed.
    pub(in crate::engine) parts: ViewParts,
    pub(in crate::engine) stale: BTreeSet<&'static str>,
    /// The Port_Binding and Multicast_Group rows changed since the view was refreshed.
    pub(in crate::engine) touched: TouchedRows,
}
impl ViewState {
    pub(crate) fn new() -> Self {
        Self {
            parts: ViewParts::default(),
            stale: BTreeSet::new(),
            touched: TouchedRows::default(),
        }
    }
}
