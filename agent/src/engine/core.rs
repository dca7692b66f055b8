//! The engine proper: state, and one `run` that turns what changed into what to do.
//!
//! Inputs are the two replicas (Southbound, local OVS) with their change sets, and the
//! OpenFlow connection's reports; outputs are SB and OVS transactions, monitor-condition
//! changes and puts for the switch ([`Actions`]). Nothing here does I/O; the daemon's loop
//! applies events, calls [`Engine::run`] and carries the actions out, one transaction per
//! database and one put in flight at a time.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::{Duration, Instant};

use openflow::conn::{BundlePart, SessionId};
use openflow::wire::bundle::BundleBuilder;
use openflow::wire::group_mod::{OFPGC_ADD, OFPGC_DELETE};
use openflow::wire::meter_mod::OFPMF_STATS;
use openflow::wire::{Group, GroupMod, Message, MeterMod};
use sbclient::datum::{Atom, Datum};
use sbclient::ovn_sb::{self, LogicalFlow, PortBinding, SbGlobal};
use sbclient::transaction::{by_uuid, Columns, Mutator};
use sbclient::vswitch::{Bridge, Interface, Port};
use sbclient::{Condition, Replica, Transaction, Uuid};

use super::binding::{self, LocalIfaces, Me};
use super::conditions::{conditions, Interest};
use super::config::{ChassisConfig, ConfigError};
use super::deps::affected_lflows;
mod input_changes;

use super::inputs::{
    lflows_in_order, open_vswitch_row, patch_ofports, pkt_mark_peers, tunnels_of, wanted_zones,
    Inputs,
};
use super::lflow_index::LflowIndex;
use super::ovs_config::{self, BridgeKeys};
use super::zones::Zones;
use crate::compile::{
    compile_lflow_list, compile_other_owners, compile_port_security, Compiled, Context, Owner,
};
use crate::lflow::flows::{IdUse, MatchCache};
use crate::lflow::hash::FxBuild;
use crate::ofctrl::conn::{Dump, Put, PutError};
use crate::ofctrl::{FlowBatch, FlowTable, ForeignFlow};
use crate::runtime::{BindingKind, Runtime};
use crate::southbound::Southbound;
use crate::view::{Ids, LocalFacts, SbView, TouchedRows, ViewParts};

/// What the local OVS configuration is compared with besides the replicas: interfaces
/// whose flows are in, conntrack zones, and the installed nb_cfg.
type OvsSyncInputs = (BTreeSet<Uuid>, BTreeMap<String, u16>, Option<(i64, i64)>);

/// `OFPBF_ATOMIC | OFPBF_ORDERED`.
const BUNDLE_FLAGS: u16 = 0x3;
/// Flow mods per part of a put: a large put (the first one, a recompute) is encoded and
/// sent part by part, so that its encoded form never sits in memory whole (a full table is
/// some 150 MB of flow_mods). Up to three parts exist at once (one read by the switch, one
/// queued, one being encoded): at 16k flow mods a part they held 13 MiB more at the peak of
/// a 515k-flow first sync than at 4k, which streams as fast.
const PUT_PART_MESSAGES: usize = 4 * 1024;
/// How long the first put waits for the Southbound view to settle (conditions acked and
/// stable) before it goes anyway.
const INITIAL_SETTLE: Duration = Duration::from_secs(10);

/// What the engine was started with.
#[derive(Clone, Debug, Default)]
pub struct EngineOptions {
    /// `-n/--chassis`.
    pub chassis: Option<String>,
    /// `--table-layout`.
    pub table_layout: Option<String>,
    /// This host's name (Chassis.hostname unless external_ids:hostname says otherwise).
    pub hostname: String,
    /// Compile threads (0: one per core).
    pub threads: usize,
    /// Flow mods per part of a large put (0: [`PUT_PART_MESSAGES`]).
    pub put_part_flows: usize,
    /// Logical flows per batch of a full compile (0: [`FULL_COMPILE_BATCH`]).
    pub compile_batch_lflows: usize,
}

impl EngineOptions {
    fn put_part_flows(&self) -> usize {
        match self.put_part_flows {
            0 => PUT_PART_MESSAGES,
            n => n,
        }
    }

    fn compile_batch_lflows(&self) -> usize {
        match self.compile_batch_lflows {
            0 => FULL_COMPILE_BATCH,
            n => n,
        }
    }
}

/// Counters shown by the control socket.
/// The time of each step of one engine run.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunPhases {
    pub runtime: Duration,
    pub view: Duration,
    pub compile: Duration,
    pub apply: Duration,
    pub put: Duration,
}

impl std::fmt::Display for RunPhases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let us = |d: Duration| d.as_micros();
        write!(
            f,
            "runtime {} us, view {} us, compile {} us, flow table {} us, put {} us",
            us(self.runtime),
            us(self.view),
            us(self.compile),
            us(self.apply),
            us(self.put)
        )
    }
}

#[derive(Clone, Debug, Default)]
pub struct EngineStats {
    pub runs: u64,
    /// Where the last run's time went (debug logs of slow runs).
    pub last_phases: RunPhases,
    pub full_recomputes: u64,
    /// Incremental runs whose logical flows were too many for one compile batch.
    pub batched_lflow_runs: u64,
    /// Why full recomputes happened (the change not handled incrementally).
    pub recompute_reasons: BTreeMap<String, u64>,
    pub incremental_lflows: u64,
    /// Runs that recompiled only the logical flows naming a changed port, port group or
    /// datapath (a claim, a release, a new port), with the other and physical owners.
    pub dependency_runs: u64,
    /// Logical flows those runs recompiled.
    pub dependency_lflows: u64,
    /// Runs that recomputed the physical and port-security flows of some ports only (the
    /// ports a change touched, with their datapaths' neighbours).
    pub scoped_physical_runs: u64,
    pub puts: u64,
    pub put_failures: u64,
    pub rejected_flows: u64,
    pub bad_rows: u64,
    /// Flow_mods sent to the switch (a restart or reconnect that changes nothing sends none).
    pub flow_mods: u64,
    /// Condition changes that could not be handed to the Southbound client.
    pub condition_failures: u64,
    /// Monitored Southbound columns the server's schema lacks (of the current connection),
    /// and how many of them the agent needs.
    pub missing_columns: u64,
    pub missing_required_columns: u64,
    /// `inc-engine/show-stats` per node, under ovn-controller's node names for the same
    /// work (`inc-engine/clear-stats` resets them).
    pub nodes: NodeStats,
}

/// Recompute and compute counts of one engine node, as ovn-controller reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeCounts {
    pub recompute: u64,
    pub compute: u64,
    pub abort: u64,
}

/// The agent's stages under the names of ovn-controller's engine nodes that do that work:
/// `runtime_data` (bindings, local datapaths), `logical_flow_output`,
/// `physical_flow_output` and `flow_output` (everything that reaches the switch).
#[derive(Clone, Debug, Default)]
pub struct NodeStats {
    pub runtime_data: NodeCounts,
    pub logical_flow_output: NodeCounts,
    pub physical_flow_output: NodeCounts,
    pub flow_output: NodeCounts,
}

impl NodeStats {
    /// `(name, counts)` in the order ovn-controller lists its nodes (inputs first).
    pub fn all(&self) -> [(&'static str, NodeCounts); 4] {
        [
            ("runtime_data", self.runtime_data),
            ("physical_flow_output", self.physical_flow_output),
            ("logical_flow_output", self.logical_flow_output),
            ("flow_output", self.flow_output),
        ]
    }
}

/// What the daemon must do after a run.
#[derive(Debug, Default)]
pub struct Actions {
    pub sb_txn: Option<Transaction>,
    /// `up` writes that may go while `sb_txn`'s predecessor (the claims) is in flight: each
    /// waits, in the same transaction, for the claim to show, so it fails rather than
    /// marking up a port whose claim failed ([`Engine::sb_up_busy`]).
    pub sb_up_txn: Option<Transaction>,
    pub ovs_txn: Option<Transaction>,
    pub conditions: Vec<(&'static str, Condition)>,
    pub put: Option<Put>,
}

/// What a put in flight carries, to finish it when the switch confirms.
#[derive(Debug)]
pub(super) struct InFlight {
    seq: u64,
    batch: FlowBatch,
    nb_cfg: Option<i64>,
    /// Flow-table entries by bundle index (to name refused flows).
    entries: Vec<Option<u32>>,
    groups_added: Vec<(u32, crate::view::GroupKey)>,
    groups_deleted: Vec<u32>,
    /// Meters added or modified, as sent.
    meters_added: Vec<(u32, MeterMod)>,
    meters_deleted: Vec<u32>,
    /// Where the next part of the put resumes in `batch`.
    next_op: usize,
    /// Every part is encoded (the group deletes, which come last, included).
    encoded: bool,
}

/// What the local datapaths are computed from besides the Port_Binding and Datapath_Binding
/// rows.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct LocalDatapathsKey {
    seeds: Vec<Uuid>,
    ha_members: Vec<Uuid>,
    chassis: Option<Uuid>,
    mapped_networks: Vec<String>,
}

/// A full compile in progress: its logical flows in uuid order, compiled a batch at a time
/// into the flow table while the put that carries them is sent ([`Engine::next_put_part`]).
pub(super) struct StreamedCompile {
    lflows: Vec<Uuid>,
    next: usize,
    layout: crate::lflow::layout::TableLayout,
    threads: usize,
    /// Parsed matches, shared by the batches as in a compile at once.
    cache: MatchCache,
    spent: Duration,
}

/// The chassis state.
pub struct Engine {
    pub opts: EngineOptions,
    pub cfg: Option<ChassisConfig>,
    pub cfg_error: Option<ConfigError>,
    /// The Southbound and local OVS replicas.
    pub inputs: Inputs,
    pub sb_connected: bool,
    pub ovs_connected: bool,
    /// A transaction is in flight on that database: plan none (the replicas show its
    /// effect before the reply).
    pub sb_busy: bool,
    /// An [`Actions::sb_up_txn`] is in flight.
    pub sb_up_busy: bool,
    pub ovs_busy: bool,
    pub runtime: Runtime,
    pub ids: Ids,
    pub flows: FlowTable,
    pub(super) uses: HashMap<Owner, Vec<IdUse>, FxBuild>,
    /// The latest failure per owner (bad rows, refused flows).
    pub failures: BTreeMap<Owner, String>,
    /// Port_Bindings skipped as unusable, with why.
    pub bad_bindings: BTreeMap<Uuid, String>,
    pub stats: EngineStats,
    pub(super) last_claim: HashMap<Uuid, Instant>,
    pub zones: Zones,
    pub(super) zones_restored: bool,
    /// Local interfaces by iface-id (from the last run).
    pub ifaces: LocalIfaces,
    // OpenFlow.
    pub of_session: Option<SessionId>,
    /// Flows the switch has in a form the table cannot hold (deleted at the next put).
    pub(super) foreign: Vec<ForeignFlow>,
    pub(super) installed_groups: BTreeMap<u32, crate::view::GroupKey>,
    /// The switch's meters as last sent (or dumped): a Southbound `Meter` change modifies
    /// them in place.
    pub(super) installed_meters: BTreeMap<u32, MeterMod>,
    pub(super) put_seq: u64,
    pub(super) in_flight: Option<InFlight>,
    /// The logical flows of a full compile still to compile, each batch as the put in
    /// flight needs more flows to send (the switch installs one part while the next is
    /// compiled).
    pub(super) streamed: Option<StreamedCompile>,
    /// Counts changes to the replicas and runtime recomputations: what is derived from
    /// them outside the engine (pinctrl's announcements) is derived again only when it moved.
    pub(super) input_generation: u64,
    /// The local datapaths depend on Port_Binding and Datapath_Binding rows and on the
    /// inputs in `local_dps_key`: with neither changed, the last ones are kept (walking
    /// every port of every local datapath on each run was the largest cost of a run).
    pub(super) local_dps_stale: bool,
    pub(super) local_dps_key: Option<LocalDatapathsKey>,
    /// The group and meter id versions at which the switch had every wanted group and
    /// meter and nothing else (cleared whenever what the switch has may have moved).
    pub(super) ids_in_step: Option<(u64, u64)>,
    pub(super) acked_seq: u64,
    pub initial_sync_done: bool,
    pub(super) sb_connected_at: Option<Instant>,
    /// When the engine started, and `debug/ignore-startup-delay` (see
    /// [`Engine::started_recently`]).
    pub(super) started_at: Instant,
    pub ignore_startup_delay: bool,
    /// The local OVS was compared during the start-up grace period: compare it again
    /// once that is over (unwanted patch ports go then).
    pub(super) compare_after_startup: bool,
    /// Bound VIF ports (PB uuid) waiting for the put that carries their flows.
    pub(super) waiting_install: HashMap<Uuid, u64>,
    /// Bound ports whose flows are in.
    pub installed_ports: BTreeSet<Uuid>,
    pub nb_cfg_acked: Option<(i64, i64)>,
    /// `debug/delay-nb-cfg-report`: how long an installed nb_cfg waits before it is
    /// reported, and the one waiting (with when it is due).
    pub nb_cfg_delay: std::time::Duration,
    pub(super) nb_cfg_due: Option<(i64, Instant)>,
    /// The configuration [`Engine::run_bindings`] got through with: [`Engine::run_flows`]
    /// has work, with it.
    pub(super) flows_due: Option<ChassisConfig>,
    /// The binding plan the first half made; the second half derives the rest of the
    /// runtime from it (local datapaths, tunnels, zones, conditions), after the claims left.
    pub(super) runtime_due_plan: Option<(binding::BindingPlan, BTreeSet<String>)>,
    /// Ports claimed by the Southbound transaction in flight, and ports whose `up` went in
    /// an [`Actions::sb_up_txn`] still in flight.
    pub(super) claims_in_flight: HashSet<Uuid>,
    pub(super) up_in_flight: HashSet<Uuid>,
    /// ovn-northd's internal version differed from ours at the last run (with
    /// `ovn-match-northd-version`).
    pub(super) version_mismatch: bool,
    /// BFD timers of SB_Global that were left out (reported once each).
    pub(super) bfd_problems: Vec<super::bfd::BadParameter>,
    // Conditions.
    pub(super) cond_requested: BTreeMap<&'static str, Condition>,
    pub(super) cond_requested_seq: u64,
    pub(super) cond_acked_seq: u64,
    /// Condition changes handed to the daemon whose sequence numbers have not come back yet
    /// (until they do, `cond_requested_seq` does not show them).
    pub(super) cond_unnumbered: usize,
    // What needs doing.
    pub(super) need_full: Option<String>,
    pub(super) dirty_lflows: BTreeSet<Uuid>,
    /// What each lflow names (ports, address sets, port groups) and where it sits.
    pub(super) lflow_index: LflowIndex,
    pub(super) deleted_lflows: BTreeSet<Uuid>,
    /// A change the engine cannot yet attribute (first run, reconnect): recompute all.
    pub(super) runtime_changed: bool,
    /// Ports, multicast groups or local state changed: recompile the logical flows that
    /// depend on what changed ([`crate::view::ViewChanges`]), and every other and physical owner.
    pub(super) deps_dirty: bool,
    /// Rows of the non-lflow logical owners changed (MAC bindings, FDB, load balancers).
    pub(super) others_dirty: bool,
    /// What load-balancer hairpin flows depend on changed (load balancers, datapath groups,
    /// datapaths, which datapaths are local).
    pub(super) lb_dirty: bool,
    /// What the runtime is computed from (OVS, the Southbound tables that feed bindings,
    /// local datapaths, tunnels and zones) changed since it was last computed.
    pub(super) runtime_inputs_dirty: bool,
    /// When a throttled claim comes due (the runtime is computed again then).
    pub(super) runtime_due: Option<Instant>,
    /// The local OVS configuration needs comparing with what it should be.
    pub(super) ovs_sync_dirty: bool,
    /// What the last OVS comparison was made with (installed interfaces, zones, nb_cfg).
    pub(super) ovs_sync_inputs: Option<OvsSyncInputs>,
    /// `sb_busy` and `ovs_busy` at the last run: a transaction that finished (failed ones
    /// too) means planning again.
    pub(super) busy_before: (bool, bool),
    /// The view's parts, kept between runs, and the Southbound tables changed since they
    /// were refreshed.
    pub(super) view_parts: ViewParts,
    pub(super) view_stale: BTreeSet<&'static str>,
    /// The Port_Binding and Multicast_Group rows changed since the view was refreshed.
    pub(super) view_touched: TouchedRows,
    /// Since the physical and port-security flows were last computed: the Port_Bindings
    /// changed (uuids, and the names and datapaths they had), the datapaths whose
    /// multicast groups changed, and whether something chassis-wide did (then all again).
    pub(super) phys_pbs: BTreeSet<Uuid>,
    pub(super) phys_names: BTreeSet<String>,
    pub(super) phys_dps: BTreeSet<Uuid>,
    /// Multicast groups changed (deleted ones too: their flows must go).
    pub(super) phys_mcs: BTreeSet<Uuid>,
    pub(super) phys_all: bool,
    /// The runtime they were computed with.
    pub(super) phys_runtime: Option<Runtime>,
}

impl Engine {
    pub fn new(opts: EngineOptions) -> Self {
        let mut ovs = Replica::new(sbclient::vswitch::DATABASE);
        sbclient::vswitch::register_all(&mut ovs);
        Self {
            opts,
            cfg: None,
            cfg_error: None,
            inputs: Inputs {
                sb: Southbound::default(),
                ovs,
            },
            sb_connected: false,
            ovs_connected: false,
            sb_busy: false,
            sb_up_busy: false,
            ovs_busy: false,
            runtime: Runtime::default(),
            ids: Ids::default(),
            flows: FlowTable::new(),
            uses: HashMap::default(),
            failures: BTreeMap::new(),
            bad_bindings: BTreeMap::new(),
            stats: EngineStats::default(),
            last_claim: HashMap::new(),
            zones: Zones::default(),
            zones_restored: false,
            ifaces: LocalIfaces::default(),
            of_session: None,
            foreign: Vec::new(),
            installed_groups: BTreeMap::new(),
            installed_meters: BTreeMap::new(),
            put_seq: 0,
            in_flight: None,
            streamed: None,
            input_generation: 0,
            local_dps_stale: true,
            local_dps_key: None,
            ids_in_step: None,
            acked_seq: 0,
            initial_sync_done: false,
            sb_connected_at: None,
            started_at: Instant::now(),
            ignore_startup_delay: false,
            compare_after_startup: false,
            waiting_install: HashMap::new(),
            installed_ports: BTreeSet::new(),
            nb_cfg_acked: None,
            nb_cfg_delay: std::time::Duration::ZERO,
            nb_cfg_due: None,
            flows_due: None,
            runtime_due_plan: None,
            claims_in_flight: HashSet::new(),
            up_in_flight: HashSet::new(),
            version_mismatch: false,
            bfd_problems: Vec::new(),
            cond_requested: BTreeMap::new(),
            cond_requested_seq: 0,
            cond_acked_seq: 0,
            cond_unnumbered: 0,
            need_full: Some("start".into()),
            dirty_lflows: BTreeSet::new(),
            lflow_index: LflowIndex::default(),
            deleted_lflows: BTreeSet::new(),
            runtime_changed: true,
            deps_dirty: false,
            others_dirty: false,
            lb_dirty: false,
            runtime_inputs_dirty: true,
            runtime_due: None,
            ovs_sync_dirty: true,
            ovs_sync_inputs: None,
            busy_before: (false, false),
            view_parts: ViewParts::default(),
            view_stale: BTreeSet::new(),
            view_touched: TouchedRows::default(),
            phys_pbs: BTreeSet::new(),
            phys_names: BTreeSet::new(),
            phys_dps: BTreeSet::new(),
            phys_mcs: BTreeSet::new(),
            phys_all: true,
            phys_runtime: None,
        }
    }

    /// The layout in use.
    pub fn layout(&self) -> crate::lflow::layout::TableLayout {
        self.cfg
            .as_ref()
            .map_or(crate::lflow::layout::TableLayout::CLASSIC, |c| c.layout)
    }

    /// A new OpenFlow session with what the switch has.
    pub fn of_connected(
        &mut self,
        session: SessionId,
        fields: crate::ofctrl::conn::GeneveFields,
        dump: Dump,
    ) {
        self.finish_streamed_compile();
        self.ids_in_step = None;
        self.of_session = Some(session);
        self.in_flight = None;
        if self.runtime.geneve_field != fields.ovn || self.runtime.mark_field != fields.pkt_mark {
            self.runtime.geneve_field = fields.ovn;
            self.runtime.mark_field = fields.pkt_mark;
            self.runtime_changed = true;
            self.runtime_inputs_dirty = true;
        }
        self.flows.forget_installed();
        let foreign = self.flows.record_dump(dump.flows);
        if !foreign.is_empty() {
            tracing::info!(target: "ofctrl", "{} flows of unknown form will be replaced", foreign.len());
        }
        self.foreign = foreign;
        // The switch's groups keep their ids (a restart then changes no flow that uses one).
        if let Ok(mut t) = self.ids.groups.lock() {
            for g in &dump.groups {
                t.seed(crate::view::group_key_of(g), g.group_id, g.clone());
            }
        }
        self.installed_groups = dump
            .groups
            .iter()
            .map(|g| (g.group_id, crate::view::group_key_of(g)))
            .collect();
        self.installed_meters = dump
            .meters
            .iter()
            .map(|m| {
                let installed = MeterMod {
                    meter_id: m.meter_id,
                    flags: m.flags,
                    bands: m.bands.clone(),
                    ..MeterMod::default()
                };
                (m.meter_id, installed)
            })
            .collect();
        // Zones were flushed before; the switch's conntrack survives a reconnect.
    }

    pub fn of_disconnected(&mut self) {
        self.finish_streamed_compile();
        self.ids_in_step = None;
        self.of_session = None;
        self.in_flight = None;
    }

    // ---- the run ---------------------------------------------------------------------

    /// Computes what to do now.
    pub fn run(&mut self, now: Instant) -> Actions {
        let mut actions = self.run_bindings(now);
        self.run_flows(now, &mut actions);
        actions
    }

    /// The first half of a run: chassis, bindings (claims), the runtime and conditions,
    /// and everything else the Southbound transaction carries. Sent before
    /// [`Self::run_flows`] compiles, the server commits a claim while the port's flows
    /// are made, so that the port can go up as soon as they are in.
    pub fn run_bindings(&mut self, now: Instant) -> Actions {
        self.flows_due = None;
        self.runtime_due_plan = None;
        // With no transaction in flight, claims sent have shown (or failed) in the replica.
        if !self.sb_busy {
            self.claims_in_flight.clear();
        }
        if !self.sb_up_busy {
            self.up_in_flight.clear();
        }
        self.stats.runs += 1;
        self.stats.last_phases = RunPhases::default();
        // A put cut short leaves its compile unfinished: the table is made whole first.
        self.finish_streamed_compile();
        let (sb_was_busy, ovs_was_busy) = self.busy_before;
        self.busy_before = (self.sb_busy, self.ovs_busy);
        self.runtime_inputs_dirty |= sb_was_busy && !self.sb_busy;
        self.ovs_sync_dirty |= ovs_was_busy && !self.ovs_busy;
        let mut actions = Actions::default();
        let host = self.opts.hostname.clone();
        match ChassisConfig::from_ovs(
            open_vswitch_row(&self.inputs.ovs),
            self.opts.chassis.as_deref(),
            self.opts.table_layout.as_deref(),
            &host,
        ) {
            Ok(c) => {
                if self.cfg.as_ref().is_some_and(|old| old.layout != c.layout) {
                    self.need_full = Some("table layout changed".into());
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
                return actions;
            }
        }
        let Some(cfg) = self.cfg.clone() else {
            return actions;
        };
        if !self.ovs_connected {
            return actions;
        }
        self.restore_zones(&cfg);
        // The local OVS configuration (bridge first: nothing else works without it).
        let bridge = binding::bridge(&self.inputs.ovs, &cfg.bridge).map(|(_, b)| b);
        let datapath_type = ovs_config::wanted_datapath_type(&cfg, bridge);
        if !self.sb_connected {
            if bridge.is_none() {
                let mut txn = Transaction::new(sbclient::vswitch::DATABASE);
                ovs_config::create_bridge(&self.inputs.ovs, &cfg, &mut txn);
                actions.ovs_txn = Some(txn);
            }
            return actions;
        }
        if !self.northd_version_matches(&cfg) {
            return actions;
        }
        // Chassis registration.
        let mut sb_txn = Transaction::new(ovn_sb::DATABASE);
        let other =
            super::chassis::other_config(&cfg, open_vswitch_row(&self.inputs.ovs), &datapath_type);
        let mut sb_dirty = super::chassis::sync(&self.inputs.sb.replica, &cfg, &other, &mut sb_txn);
        let chassis_uuid =
            super::chassis::find_chassis(&self.inputs.sb.replica, &cfg.system_id).map(|(u, _)| *u);
        if self.runtime.chassis != chassis_uuid {
            self.runtime.chassis = chassis_uuid;
            self.runtime_changed = true;
        }
        self.runtime.chassis_name.clone_from(&cfg.system_id);
        // Bindings, local datapaths, tunnels, zones and conditions: only when what they are
        // computed from changed (most runs follow a flow change, a put or a reply).
        let runtime_due = self.runtime_due.is_some_and(|t| now >= t);
        if self.runtime_inputs_dirty
            || runtime_due
            || self.runtime_changed
            || self.need_full.is_some()
        {
            let t = std::time::Instant::now();
            self.input_generation += 1;
            let (dirty, plan) = self.update_bindings(&cfg, chassis_uuid, now, &mut sb_txn);
            sb_dirty |= dirty;
            self.runtime_due_plan = Some(plan);
            self.stats.last_phases.runtime = t.elapsed();
            self.ovs_sync_dirty = true;
        }
        // nb_cfg and ports whose flows are in.
        if let Some((n, due)) = self.nb_cfg_due {
            if now >= due {
                self.nb_cfg_acked = Some((n, super::now_ms()));
                self.nb_cfg_due = None;
            }
        }
        if !self.sb_busy {
            sb_dirty |= self.write_port_up(&mut sb_txn);
        } else if !self.sb_up_busy {
            let mut up_txn = Transaction::new(ovn_sb::DATABASE);
            if self.write_port_up_behind_claims(&mut up_txn) {
                actions.sb_up_txn = Some(up_txn);
            }
        }
        if sb_dirty && !sb_txn.is_empty() && !self.sb_busy {
            actions.sb_txn = Some(sb_txn);
        }
        self.flows_due = Some(cfg);
        actions
    }

    /// The second half of a run (after [`Self::run_bindings`], with its actions): flows,
    /// the local OVS configuration and the put.
    pub fn run_flows(&mut self, now: Instant, actions: &mut Actions) {
        let Some(cfg) = self.flows_due.take() else {
            return;
        };
        let chassis_uuid = self.runtime.chassis;
        if let Some((plan, active_tunnels)) = self.runtime_due_plan.take() {
            let t = std::time::Instant::now();
            self.finish_runtime(&cfg, chassis_uuid, &plan, active_tunnels, actions);
            self.stats.last_phases.runtime += t.elapsed();
        }
        // Flows. Before the first put, only once the view is complete: flows compiled from a
        // partial view (conditions still widening) would be compiled again at once.
        if self.initial_sync_done || self.initial_view_settled(now, actions.conditions.is_empty()) {
            self.recompute_flows(&cfg);
        }
        // Local OVS.
        let installed_ifaces: BTreeSet<Uuid> = self.installed_iface_uuids();
        let started_recently = self.started_recently(Instant::now());
        if !started_recently && std::mem::take(&mut self.compare_after_startup) {
            self.ovs_sync_dirty = true;
        }
        let keys = BridgeKeys {
            ct_zones: &self.zones.by_name,
            nb_cfg: self.nb_cfg_acked,
            keep_unwanted_patches: started_recently,
        };
        let mut ovs_txn = Transaction::new(sbclient::vswitch::DATABASE);
        // BFD only once the rest is in (the tunnels it configures must exist). The inputs
        // are compared in place and copied only when they changed (this runs every run).
        let inputs_changed = self.ovs_sync_inputs.as_ref().is_none_or(|(i, z, n)| {
            *i != installed_ifaces || z != keys.ct_zones || *n != keys.nb_cfg
        });
        self.ovs_sync_dirty |= inputs_changed;
        let compare = !self.ovs_busy && self.ovs_sync_dirty;
        if compare {
            self.ovs_sync_dirty = false;
            self.compare_after_startup |= started_recently;
            if inputs_changed {
                self.ovs_sync_inputs =
                    Some((installed_ifaces.clone(), keys.ct_zones.clone(), keys.nb_cfg));
            }
        }
        let ovs_dirty = compare
            && (ovs_config::sync(
                &self.inputs.ovs,
                &self.inputs.sb.replica,
                &cfg,
                &self.runtime,
                &installed_ifaces,
                &keys,
                &mut ovs_txn,
            ) || self.sync_bfd(&cfg, chassis_uuid, &mut ovs_txn));
        if ovs_dirty {
            actions.ovs_txn = Some(ovs_txn);
        }
        // The switch.
        let t = std::time::Instant::now();
        actions.put = self.build_put(now, actions.conditions.is_empty());
        if actions.put.is_none() && self.streamed.is_some() {
            // No put to carry the compile's flows: they go in at once.
            self.finish_streamed_compile();
            actions.put = self.build_put(now, actions.conditions.is_empty());
        }
        self.stats.last_phases.put = t.elapsed();
    }

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
        let ifaces = binding::local_ifaces(&self.inputs.ovs, &cfg.bridge);
        // Logged and counted once, not on every run.
        for (id, name) in &ifaces.duplicates {
            if !self.ifaces.duplicates.contains(&(id.clone(), name.clone())) {
                crate::vlog_rl!(WARN, &crate::vlog::limits::BAD_ROW, target: "binding", "interface {name} has iface-id {id} already used by another interface: ignored");
                self.stats.bad_rows += 1;
            }
        }
        self.ifaces = ifaces;
        let active_tunnels = super::bfd::active_tunnels(&self.inputs.ovs, &cfg.bridge);
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
            &self.last_claim,
            now,
        );
        for n in &plan.notes {
            tracing::debug!(target: "binding", "{n}");
        }
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
        self.runtime_inputs_dirty = self.sb_busy;
        // A throttled claim is due again later.
        self.runtime_due = plan.throttled.iter().map(|(_, t)| *t).min();
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
            drop_sampling: self.runtime.drop_sampling,
            ..Runtime::default()
        };
        rt.bound.clone_from(&plan.bound);
        rt.localports.clone_from(&plan.localports);
        rt.active_ha = plan.active_ha.iter().copied().collect();
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
        if !self.local_dps_stale && self.local_dps_key.as_ref() == Some(&key) {
            rt.local_datapaths.clone_from(&self.runtime.local_datapaths);
        } else {
            rt.local_datapaths = super::local::local_datapaths(
                &self.inputs.sb.replica,
                seeds,
                chassis_uuid,
                &|u| ha_members.contains(u),
                &|net| cfg.bridge_mappings.contains_key(net),
            );
            self.local_dps_stale = false;
            self.local_dps_key = Some(key);
        }
        rt.tunnels = tunnels_of(&self.inputs.ovs, &cfg.bridge);
        rt.active_tunnels = active_tunnels;
        rt.pkt_mark_peers = pkt_mark_peers(&self.inputs.sb.replica, cfg, rt.mark_field);
        rt.patch_ofports = patch_ofports(&self.inputs.ovs, &cfg.bridge, &self.inputs.sb.replica);
        let wanted_zones = wanted_zones(&self.inputs.sb.replica, &rt);
        // Zones are released only once the view is complete (after the first put).
        self.zones.update(&wanted_zones, self.initial_sync_done);
        let zones_same = self.runtime.ct_zones == self.zones.by_name;
        rt.ct_zones = if zones_same {
            std::mem::take(&mut self.runtime.ct_zones)
        } else {
            self.zones.by_name.clone()
        };
        if rt.chassis != self.runtime.chassis || rt.geneve_field != self.runtime.geneve_field {
            self.runtime_changed = true;
        } else if !zones_same || !same_runtime_but_zones(&rt, &self.runtime) {
            self.deps_dirty = true;
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
            if self.cond_requested.get(t) != Some(&c) {
                self.cond_requested.insert(t, c.clone());
                actions.conditions.push((t, c));
            }
        }
        self.cond_unnumbered += actions.conditions.len();
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
        if self.zones_restored {
            return;
        }
        if let Some((_, br)) = binding::bridge(&self.inputs.ovs, &cfg.bridge) {
            self.zones.restore(br.external_ids.iter());
            // Zones read back were in use before: no flush for them.
            self.zones.to_flush.clear();
            self.zones_restored = true;
        }
    }

    /// Claims, releases and encaps into `txn`; true if it wrote something.
    pub(super) fn write_claims(
        &mut self,
        plan: &binding::BindingPlan,
        me: Option<Uuid>,
        txn: &mut Transaction,
        now: Instant,
    ) -> bool {
        let Some(me) = me else { return false };
        let pbs = self.inputs.sb.replica.table::<PortBinding>();
        let name_of = |u: &Uuid| {
            pbs.and_then(|t| t.get(u))
                .map_or_else(|| u.to_string(), |p| p.logical_port.clone())
        };
        let mut wrote = false;
        for (u, encap) in &plan.claim {
            let pb = pbs.and_then(|t| t.get(u));
            if pb.is_some_and(|p| p.chassis != Some(me)) {
                tracing::info!(target: "binding", "Claiming lport {} for this chassis.", name_of(u));
                for mac in pb.map(|p| p.mac.iter()).into_iter().flatten() {
                    tracing::info!(target: "binding", "{}: Claiming {mac}", name_of(u));
                }
                crate::coverage::BINDING_CLAIM.inc();
                self.last_claim.insert(*u, now);
            }
            let mut cols = Columns::new()
                .set("chassis", Datum::Set(vec![Atom::Uuid(me)]))
                .set(
                    "encap",
                    Datum::Set(encap.iter().map(|e| Atom::Uuid(*e)).collect()),
                );
            if pb.is_some_and(|p| p.up.is_some() && p.chassis != Some(me)) {
                cols = cols.set("up", Datum::Set(vec![Atom::Boolean(false)]));
            }
            txn.update("Port_Binding", &by_uuid(*u), cols);
            self.claims_in_flight.insert(*u);
            // Gateway-type claims have no interface to install: up at once.
            if matches!(plan.bound.get(u), Some(BindingKind::Claimed))
                && pb.is_some_and(|p| p.up.is_some())
            {
                txn.update(
                    "Port_Binding",
                    &by_uuid(*u),
                    Columns::new().set("up", Datum::Set(vec![Atom::Boolean(true)])),
                );
            }
            self.installed_ports.remove(u);
            wrote = true;
        }
        for (u, encap) in &plan.claim_additional {
            txn.mutate(
                "Port_Binding",
                &by_uuid(*u),
                vec![(
                    "additional_chassis".into(),
                    Mutator::Insert,
                    Datum::Set(vec![Atom::Uuid(me)]),
                )],
            );
            if let Some(e) = encap {
                txn.mutate(
                    "Port_Binding",
                    &by_uuid(*u),
                    vec![(
                        "additional_encap".into(),
                        Mutator::Insert,
                        Datum::Set(vec![Atom::Uuid(*e)]),
                    )],
                );
            }
            wrote = true;
        }
        for u in &plan.release {
            tracing::info!(target: "binding", "Releasing lport {} from this chassis.", name_of(u));
            crate::coverage::BINDING_RELEASE.inc();
            let pb = pbs.and_then(|t| t.get(u));
            let mut cols = Columns::new()
                .set("chassis", Datum::Set(vec![]))
                .set("encap", Datum::Set(vec![]))
                .set("virtual_parent", Datum::Set(vec![]));
            if pb.is_some_and(|p| p.up.is_some()) {
                cols = cols.set("up", Datum::Set(vec![Atom::Boolean(false)]));
                if pb.is_some_and(|p| p.up == Some(true)) {
                    tracing::info!(target: "binding", "Setting lport {} down in Southbound", name_of(u));
                }
            }
            txn.update("Port_Binding", &by_uuid(*u), cols);
            self.installed_ports.remove(u);
            self.waiting_install.remove(u);
            wrote = true;
        }
        for u in &plan.release_additional {
            txn.mutate(
                "Port_Binding",
                &by_uuid(*u),
                vec![(
                    "additional_chassis".into(),
                    Mutator::Delete,
                    Datum::Set(vec![Atom::Uuid(me)]),
                )],
            );
            wrote = true;
        }
        // Ports bound here whose flows are not known to be in wait for the next put.
        let next = self.put_seq + 1;
        for u in plan.bound.keys() {
            if !self.installed_ports.contains(u) {
                self.waiting_install.entry(*u).or_insert(next);
            }
        }
        self.waiting_install
            .retain(|u, _| plan.bound.contains_key(u));
        self.installed_ports.retain(|u| plan.bound.contains_key(u));
        wrote
    }

    /// `up=true` for bound ports whose flows are in; true if it wrote something.
    pub(super) fn write_port_up(&self, txn: &mut Transaction) -> bool {
        let Some(pbs) = self.inputs.sb.replica.table::<PortBinding>() else {
            return false;
        };
        let mut wrote = false;
        for u in &self.installed_ports {
            let Some(pb) = pbs.get(u) else { continue };
            if pb.up == Some(false)
                && pb.chassis == self.runtime.chassis
                && !self.up_in_flight.contains(u)
            {
                tracing::info!(target: "binding", "Setting lport {} up in Southbound", pb.logical_port);
                txn.update(
                    "Port_Binding",
                    &by_uuid(*u),
                    Columns::new().set("up", Datum::Set(vec![Atom::Boolean(true)])),
                );
                wrote = true;
            }
        }
        if let (Some(cfg), Some((nb, ts))) = (&self.cfg, self.nb_cfg_acked) {
            wrote |=
                super::chassis::ack_nb_cfg(&self.inputs.sb.replica, &cfg.system_id, nb, ts, txn);
        }
        wrote
    }

    /// `up` for ports whose flows are in and whose claim is still in flight, each behind a
    /// `wait` for the claim (the server runs a connection's transactions in order: the
    /// port goes up right after its claim commits, not a round trip later). True if it
    /// wrote something.
    pub(super) fn write_port_up_behind_claims(&mut self, txn: &mut Transaction) -> bool {
        let (Some(pbs), Some(me)) = (
            self.inputs.sb.replica.table::<PortBinding>(),
            self.runtime.chassis,
        ) else {
            return false;
        };
        let mut wrote = false;
        for u in self
            .installed_ports
            .iter()
            .filter(|u| self.claims_in_flight.contains(u))
        {
            let Some(pb) = pbs.get(u) else { continue };
            if pb.up != Some(false) || pb.chassis == Some(me) || self.up_in_flight.contains(u) {
                continue;
            }
            tracing::info!(target: "binding", "Setting lport {} up in Southbound", pb.logical_port);
            let claimed = Columns::new().set("chassis", Datum::Set(vec![Atom::Uuid(me)]));
            txn.wait(
                "Port_Binding",
                &by_uuid(*u),
                &["chassis"],
                sbclient::transaction::WaitUntil::Equal,
                vec![claimed],
                Some(0),
            );
            txn.update(
                "Port_Binding",
                &by_uuid(*u),
                Columns::new().set("up", Datum::Set(vec![Atom::Boolean(true)])),
            );
            self.up_in_flight.insert(*u);
            wrote = true;
        }
        wrote
    }

    /// OVS interfaces of ports whose flows are in (they get `ovn-installed`).
    pub(super) fn installed_iface_uuids(&self) -> BTreeSet<Uuid> {
        let mut out = BTreeSet::new();
        let Some(pbs) = self.inputs.sb.replica.table::<PortBinding>() else {
            return out;
        };
        for u in &self.installed_ports {
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

    // ---- flows -----------------------------------------------------------------------

    pub(super) fn recompute_flows(&mut self, cfg: &ChassisConfig) {
        let mut full = self.need_full.take().or_else(|| {
            self.runtime_changed
                .then(|| "local state changed".to_owned())
        });
        self.runtime_changed = false;
        let deps_dirty = std::mem::take(&mut self.deps_dirty);
        let others_dirty = std::mem::take(&mut self.others_dirty) || deps_dirty;
        let mut lb_dirty = std::mem::take(&mut self.lb_dirty);
        // Most runs (a transaction reply, a put confirmed, an OVS echo) change no flow: no
        // view to build then.
        if full.is_none()
            && !others_dirty
            && self.dirty_lflows.is_empty()
            && self.deleted_lflows.is_empty()
        {
            return;
        }
        let layout = cfg.layout;
        let facts = LocalFacts {
            chassis: self.runtime.chassis,
            bound: self.runtime.bound.keys().copied().collect(),
            localports: self.runtime.localports.keys().copied().collect(),
            active_ha: self.runtime.active_ha.iter().copied().collect(),
            ha_members: self.runtime.ha_members.iter().copied().collect(),
            local_datapaths: self.runtime.local_datapaths.keys().copied().collect(),
        };
        if full.is_some() {
            // A full recompute rebuilds every part (the rows may have been replaced).
            self.view_parts = ViewParts::default();
        }
        let view_started = std::time::Instant::now();
        let stale = std::mem::take(&mut self.view_stale);
        let touched = std::mem::take(&mut self.view_touched);
        self.view_parts.refresh(
            &self.inputs.sb,
            &cfg.system_id,
            &facts,
            &stale,
            Some(&touched),
        );
        let changed = self.view_parts.take_changes();
        let view = SbView::from_parts(&self.inputs.sb, &self.ids, &self.view_parts);
        if full.is_none() && changed.rebuilt {
            full = Some("first view".to_owned());
        } else if full.is_none() && !changed.is_empty() {
            let lflows = affected_lflows(&view, &changed, &self.lflow_index);
            lb_dirty |= !changed.datapaths.is_empty();
            self.stats.dependency_runs += 1;
            self.stats.dependency_lflows += lflows.len() as u64;
            self.dirty_lflows.extend(lflows);
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
            self.dirty_lflows.clear();
            self.deleted_lflows.clear();
            // The logical flows in batches, each put in the table as soon as it is compiled:
            // the compiled form of the whole table never exists at once beside the table.
            let mut keep: HashSet<Owner, FxBuild> = HashSet::default();
            let lflows = lflows_in_order(&self.inputs.sb.replica);
            // With a switch to send to and no put in flight, the put this run makes carries
            // the logical flows as they are compiled (the switch installs while we compile);
            // otherwise they are compiled at the end of this function, batch by batch alike.
            stream_lflows = self.of_session.is_some() && self.in_flight.is_none();
            keep.extend(lflows.iter().map(|(u, _)| Owner::Lflow(**u)));
            self.streamed = Some(StreamedCompile {
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
            let dirty = std::mem::take(&mut self.dirty_lflows);
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
                std::mem::take(&mut self.deleted_lflows)
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

    // ---- the switch ------------------------------------------------------------------

    /// Whether the first put may go: the chassis is known and no condition change is
    /// pending (the replica holds every row the flows need), or the wait for that has gone
    /// on too long.
    pub(super) fn initial_view_settled(&self, now: Instant, conditions_stable: bool) -> bool {
        let settled =
            self.runtime.chassis.is_some() && conditions_stable && !self.conditions_pending();
        settled
            || self
                .sb_connected_at
                .is_some_and(|t| now.duration_since(t) >= INITIAL_SETTLE)
    }

    /// Whether the agent started too recently to delete what its view may not show yet
    /// (with conditional monitoring, the rows of datapaths several hops away arrive over
    /// several runs): as ovn-controller, for its first 20 runs and 10 seconds, unless
    /// `debug/ignore-startup-delay`.
    pub fn started_recently(&self, now: Instant) -> bool {
        const STARTUP_RUNS: u64 = 20;
        const STARTUP_TIME: std::time::Duration = std::time::Duration::from_secs(10);
        !self.ignore_startup_delay
            && (self.stats.runs < STARTUP_RUNS
                || now.duration_since(self.started_at) <= STARTUP_TIME)
    }

    pub(super) fn build_put(&mut self, now: Instant, conditions_stable: bool) -> Option<Put> {
        let session = self.of_session?;
        if self.in_flight.is_some() {
            return None;
        }
        if !self.initial_sync_done && !self.initial_view_settled(now, conditions_stable) {
            return None;
        }
        let sb_nb_cfg = self
            .inputs
            .sb
            .replica
            .table::<SbGlobal>()
            .and_then(|t| t.iter().next().map(|(_, g)| g.nb_cfg));
        // nb_cfg is acknowledged only by a put computed with no condition change pending (the
        // flows then reflect every row the configuration needs).
        let sb_nb_cfg = sb_nb_cfg.filter(|_| !self.conditions_pending());
        // A configuration installed but waiting out `debug/delay-nb-cfg-report` needs no
        // put of its own.
        let nb_cfg_pending = sb_nb_cfg.is_some_and(|n| {
            self.nb_cfg_acked.map(|a| a.0) != Some(n) && self.nb_cfg_due.map(|d| d.0) != Some(n)
        });
        // Only what differs from the switch is cloned (this runs on every engine run), and
        // nothing is compared while neither the ids nor the switch moved since a put found
        // them in step.
        let versions = (
            self.ids.groups.lock().map_or(u64::MAX, |t| t.version()),
            self.ids.meters.lock().map_or(u64::MAX, |t| t.version()),
        );
        let ids_in_step = self.ids_in_step == Some(versions) && self.streamed.is_none();
        let mut groups_add: Vec<(u32, crate::view::GroupKey, Group)> = Vec::new();
        let mut groups_wanted: HashSet<u32> = HashSet::new();
        if let (false, Ok(t)) = (ids_in_step, self.ids.groups.lock()) {
            for (id, k, g) in t.iter() {
                groups_wanted.insert(id);
                if self.installed_groups.get(&id) != Some(k) {
                    groups_add.push((id, k.clone(), g.clone()));
                }
            }
        }
        // While a compile is streamed, what it will want is not known yet: unwanted groups
        // and meters go in the next put.
        let streamed = self.streamed.is_some();
        let groups_del: Vec<u32> = self
            .installed_groups
            .keys()
            .filter(|id| !ids_in_step && !streamed && !groups_wanted.contains(id))
            .copied()
            .collect();
        let mut meters_add: Vec<(u32, MeterMod)> = Vec::new();
        let mut meters_wanted: HashSet<u32> = HashSet::new();
        if let (false, Ok(t)) = (ids_in_step, self.ids.meters.lock()) {
            for (id, _, m) in t.iter() {
                meters_wanted.insert(id);
                if let Some(sent) = meter_to_send(self.installed_meters.get(&id), id, m) {
                    meters_add.push((id, sent));
                }
            }
        }
        let meters_del: Vec<u32> = self
            .installed_meters
            .keys()
            .filter(|id| !ids_in_step && !streamed && !meters_wanted.contains(id))
            .copied()
            .collect();
        self.ids_in_step = (groups_add.is_empty()
            && groups_del.is_empty()
            && meters_add.is_empty()
            && meters_del.is_empty()
            && !streamed)
            .then_some(versions);
        let flush: Vec<u16> = self.zones.to_flush.iter().copied().collect();
        let work = self.flows.has_pending()
            || !groups_add.is_empty()
            || !groups_del.is_empty()
            || !meters_add.is_empty()
            || !meters_del.is_empty()
            || !flush.is_empty()
            || !self.foreign.is_empty()
            || !self.initial_sync_done
            || nb_cfg_pending
            || streamed
            || !self.waiting_install.is_empty();
        if !work {
            return None;
        }
        let mut bundle = BundleBuilder::new(BUNDLE_FLAGS);
        let mut entries: Vec<Option<u32>> = Vec::new();
        for (id, _, g) in &groups_add {
            let replace = self.installed_groups.contains_key(id);
            push_group_add(&mut bundle, &mut entries, *id, g, replace);
        }
        for f in std::mem::take(&mut self.foreign) {
            let fm = openflow::wire::FlowMod {
                table_id: f.table,
                priority: f.priority,
                command: openflow::wire::flow_mod::OFPFC_DELETE_STRICT,
                r#match: f.m,
                ..openflow::wire::FlowMod::default()
            };
            if bundle.push_message(&Message::FlowMod(fm)).is_ok() {
                entries.push(None);
            }
        }
        self.put_seq += 1;
        let seq = self.put_seq;
        self.stats.puts += 1;
        crate::coverage::OFCTRL_PUT.inc();
        self.zones.to_flush.clear();
        let mut batch = FlowBatch::default();
        self.flows.take_more(&mut batch, streamed);
        self.in_flight = Some(InFlight {
            seq,
            batch,
            nb_cfg: sb_nb_cfg,
            entries,
            groups_added: groups_add
                .iter()
                .map(|(id, k, _)| (*id, k.clone()))
                .collect(),
            groups_deleted: groups_del,
            meters_added: meters_add.clone(),
            meters_deleted: meters_del.clone(),
            next_op: 0,
            encoded: false,
        });
        let mut meter_mods: Vec<MeterMod> = meters_add.into_iter().map(|(_, m)| m).collect();
        let complete = self.encode_put_part(&mut bundle, &mut meter_mods);
        Some(Put {
            session,
            seq,
            flush_zones: flush,
            meters_add: meter_mods,
            bundle,
            complete,
            rest: None,
            meters_del: meters_del
                .into_iter()
                .map(|id| MeterMod {
                    command: openflow::wire::meter_mod::OFPMC_DELETE,
                    meter_id: id,
                    ..MeterMod::default()
                })
                .collect(),
        })
    }

    /// The next part of the put whose first part [`Actions::put`] carried (when it was not
    /// `complete`), and whether it is the last; `None` when no put is being encoded. Call
    /// it until the last part before the next [`Engine::run`]: the parts are computed from
    /// the flow table as it was when the put was made.
    pub fn next_put_part(&mut self) -> Option<BundlePart> {
        if self.in_flight.as_ref().is_none_or(|f| f.encoded) {
            return None;
        }
        let mut bundle = BundleBuilder::new(BUNDLE_FLAGS);
        let mut meters = Vec::new();
        let last = self.encode_put_part(&mut bundle, &mut meters);
        Some(BundlePart {
            before: meters.into_iter().map(Message::MeterMod).collect(),
            bundle,
            last,
        })
    }

    /// Encodes up to a part's worth of flow mods ([`PUT_PART_MESSAGES`] unless set) of the put in flight into `bundle`
    /// (compiling more of a streamed compile when they run out, with the meters its flows
    /// need added to `meters`), then, once no flow mod remains, its group deletes; true
    /// when nothing remains.
    pub(super) fn encode_put_part(
        &mut self,
        bundle: &mut BundleBuilder,
        meters: &mut Vec<MeterMod>,
    ) -> bool {
        let mut room = self.opts.put_part_flows();
        loop {
            if !self.encode_flow_mods(bundle, &mut room) {
                return false;
            }
            if self.streamed.is_none() {
                break;
            }
            self.compile_streamed_batch();
            self.take_streamed_changes(bundle, meters);
        }
        let Some(InFlight {
            entries,
            groups_deleted,
            encoded,
            ..
        }) = self.in_flight.as_mut()
        else {
            return true;
        };
        for id in groups_deleted.iter() {
            if bundle
                .push_message(&Message::GroupMod(GroupMod {
                    command: OFPGC_DELETE,
                    command_bucket_id: 0xffff_ffff,
                    group: Group {
                        group_id: *id,
                        ..Group::default()
                    },
                }))
                .is_ok()
            {
                entries.push(None);
            }
        }
        *encoded = true;
        true
    }

    /// Encodes the put's pending flow mods into `bundle`, at most `room` of them (less
    /// what it encodes); false when the room ran out first.
    pub(super) fn encode_flow_mods(
        &mut self,
        bundle: &mut BundleBuilder,
        room: &mut usize,
    ) -> bool {
        let Some(InFlight {
            batch,
            entries,
            next_op,
            ..
        }) = self.in_flight.as_mut()
        else {
            return true;
        };
        let mut more = false;
        for (after, op) in self.flows.batch_ops(batch, *next_op) {
            if *room == 0 {
                more = true;
                break;
            }
            *room -= 1;
            *next_op = after;
            let r = bundle.try_push_raw(14, |out| {
                openflow::flow::encode_flow_mod_body(
                    out,
                    op.command,
                    op.table,
                    op.priority,
                    op.cookie,
                    op.m,
                    op.actions,
                )
            });
            match r {
                Ok(_) => {
                    entries.push(Some(op.entry));
                    self.stats.flow_mods += 1;
                    crate::coverage::OFCTRL_FLOW_MOD.inc();
                }
                Err(e) => {
                    crate::vlog_rl!(WARN, &crate::vlog::limits::REFUSED_FLOW, target: "ofctrl", "flow not encodable ({e}): table={} priority={} {}", op.table, op.priority, op.m);
                    self.stats.rejected_flows += 1;
                }
            }
        }
        !more
    }

    /// Compiles the next batch of a streamed compile into the flow table.
    pub(super) fn compile_streamed_batch(&mut self) {
        let Some(mut sc) = self.streamed.take() else {
            return;
        };
        let started = Instant::now();
        // Parsed matches and actions serve the lflows of one batch (an lflow's match on
        // its other datapaths): kept longer they grow to a quarter of the peak memory.
        if sc.next > 0 {
            sc.cache.forget_parsed();
        }
        let end = (sc.next + self.opts.compile_batch_lflows()).min(sc.lflows.len());
        let table = self.inputs.sb.replica.table::<LogicalFlow>();
        let batch: Vec<(&Uuid, &LogicalFlow)> = sc.lflows[sc.next..end]
            .iter()
            .filter_map(|u| Some((u, table?.get(u)?)))
            .collect();
        let view = SbView::from_parts(&self.inputs.sb, &self.ids, &self.view_parts);
        let cx = Context {
            view: &view,
            layout: &sc.layout,
            cache: &sc.cache,
            only_dp: None,
            limit: crate::lflow::DEFAULT_FLOW_LIMIT,
        };
        let compiled = compile_lflow_list(&cx, &batch, sc.threads);
        self.stats.bad_rows += apply_compiled(
            &mut self.flows,
            &mut self.uses,
            &mut self.failures,
            &self.ids,
            compiled,
        );
        sc.next = end;
        sc.spent += started.elapsed();
        self.stats.last_phases.compile += started.elapsed();
        if sc.next < sc.lflows.len() {
            self.streamed = Some(sc);
        } else {
            tracing::debug!(target: "main", "streamed compile: {} logical flows compiled in {} us", sc.lflows.len(), sc.spent.as_micros());
        }
    }

    /// Compiles what is left of a streamed compile at once (its put will not carry it).
    pub(super) fn finish_streamed_compile(&mut self) {
        while self.streamed.is_some() {
            self.compile_streamed_batch();
        }
    }

    /// Adds what the last streamed batch changed to the put in flight, with the groups and
    /// meters its flows use that the switch does not have yet (groups go in the bundle
    /// before the flows; meters, which a bundle cannot hold, are sent ahead of the part).
    pub(super) fn take_streamed_changes(
        &mut self,
        bundle: &mut BundleBuilder,
        meters: &mut Vec<MeterMod>,
    ) {
        let Some(f) = self.in_flight.as_mut() else {
            return;
        };
        // Until the compile is complete only new flows go (see `FlowTable::take_more`).
        self.flows.take_more(&mut f.batch, self.streamed.is_some());
        let added: HashSet<u32> = f.groups_added.iter().map(|(id, _)| *id).collect();
        if let Ok(t) = self.ids.groups.lock() {
            for (id, k, g) in t.iter() {
                let installed = self.installed_groups.get(&id);
                if added.contains(&id) || installed == Some(k) {
                    continue;
                }
                push_group_add(bundle, &mut f.entries, id, g, installed.is_some());
                f.groups_added.push((id, k.clone()));
            }
        }
        if let Ok(t) = self.ids.meters.lock() {
            for (id, _, m) in t.iter() {
                if f.meters_added.iter().any(|(sent, _)| *sent == id) {
                    continue;
                }
                if let Some(sent) = meter_to_send(self.installed_meters.get(&id), id, m) {
                    meters.push(sent.clone());
                    f.meters_added.push((id, sent));
                }
            }
        }
    }

    /// A put finished.
    pub fn put_done(&mut self, seq: u64, result: Result<(), PutError>) {
        self.finish_streamed_compile();
        self.ids_in_step = None;
        let Some(f) = self.in_flight.take() else {
            return;
        };
        if f.seq != seq {
            return;
        }
        match result {
            Ok(()) => {
                tracing::debug!(target: "ofctrl", "put {seq} in: {} flow-table entries, {} groups added, {} deleted, {} meters added, {} deleted", f.batch.len(), f.groups_added.len(), f.groups_deleted.len(), f.meters_added.len(), f.meters_deleted.len());
                self.flows.commit_batch(f.batch);
                for (id, k) in f.groups_added {
                    self.installed_groups.insert(id, k);
                }
                for id in f.groups_deleted {
                    self.installed_groups.remove(&id);
                }
                self.installed_meters.extend(f.meters_added);
                for id in f.meters_deleted {
                    self.installed_meters.remove(&id);
                }
                self.acked_seq = seq;
                // Zones unused since the start can go once the first put is in.
                self.runtime_inputs_dirty |= !self.initial_sync_done;
                self.initial_sync_done = true;
                let done: Vec<Uuid> = self
                    .waiting_install
                    .iter()
                    .filter(|(_, s)| **s <= seq)
                    .map(|(u, _)| *u)
                    .collect();
                for u in done {
                    self.waiting_install.remove(&u);
                    self.installed_ports.insert(u);
                }
                if let Some(n) = f.nb_cfg {
                    // Exact only when no condition change was in flight (the flows then
                    // reflect every row the configuration needs).
                    if !self.conditions_pending() {
                        if self.nb_cfg_delay.is_zero() {
                            self.nb_cfg_acked = Some((n, super::now_ms()));
                        } else if self.nb_cfg_due.is_none_or(|d| d.0 != n) {
                            self.nb_cfg_due = Some((n, Instant::now() + self.nb_cfg_delay));
                        }
                    }
                }
            }
            Err(PutError::Rejected(rejected)) => {
                self.stats.put_failures += 1;
                self.flows.fail_batch(f.batch);
                // Nothing of the bundle was applied. Drop the owners of the refused flows
                // (counted, logged) and try the rest again.
                for (i, err) in rejected {
                    let Some(Some(entry)) = f.entries.get(i) else {
                        crate::vlog_rl!(WARN, &crate::vlog::limits::REFUSED_FLOW, target: "ofctrl", "switch refused bundle message {i}: {err}");
                        continue;
                    };
                    for o in self.flows.owners_of_entry(*entry) {
                        crate::vlog_rl!(WARN, &crate::vlog::limits::REFUSED_FLOW, target: "ofctrl", "switch refused a flow of {o}: {err}; its flows are left out");
                        self.flows.remove(o);
                        if let Some(u) = self.uses.remove(&o) {
                            self.ids.release(&u);
                        }
                        self.failures
                            .insert(o, format!("refused by the switch: {err}"));
                        self.stats.rejected_flows += 1;
                    }
                }
            }
            Err(PutError::Connection(e)) => {
                self.stats.put_failures += 1;
                self.flows.fail_batch(f.batch);
                tracing::info!(target: "ofctrl", "put {seq} lost with the connection: {e}");
            }
        }
    }

    /// BFD on the tunnels of HA groups this chassis is in or serves. Bad timers are
    /// reported once each.
    pub(super) fn sync_bfd(
        &mut self,
        cfg: &ChassisConfig,
        me: Option<Uuid>,
        txn: &mut Transaction,
    ) -> bool {
        let Some(me) = me else { return false };
        let peers = super::bfd::bfd_chassis(&self.inputs.sb.replica, me);
        let (settings, bad) = super::bfd::settings(&self.inputs.sb.replica);
        for b in &bad {
            if !self.bfd_problems.contains(b) {
                crate::vlog_rl!(WARN, &crate::vlog::limits::BAD_ROW, target: "bfd", "{b}");
                self.stats.bad_rows += 1;
            }
        }
        self.bfd_problems = bad;
        super::bfd::sync(&self.inputs.ovs, &cfg.bridge, &peers, &settings, txn)
    }

    /// `external_ids:ovn-match-northd-version=true`: nothing is processed while ovn-northd's
    /// internal version (SB_Global) differs from ours; all is recomputed once they match.
    pub(super) fn northd_version_matches(&mut self, cfg: &ChassisConfig) -> bool {
        if cfg.get("ovn-match-northd-version") != Some("true") {
            self.version_mismatch = false;
            return true;
        }
        let northd = self
            .inputs
            .sb
            .replica
            .table::<SbGlobal>()
            .and_then(|t| t.iter().next().map(|(_, g)| g))
            .map(|g| {
                g.options
                    .get("northd_internal_version")
                    .cloned()
                    .unwrap_or_default()
            });
        let ours = crate::appctl::internal_version();
        if northd.as_deref() == Some(ours.as_str()) {
            if std::mem::take(&mut self.version_mismatch) {
                self.need_full = Some("ovn-northd's version matches again".into());
            }
            return true;
        }
        crate::vlog_rl!(WARN, &crate::vlog::limits::NORTHD_VERSION, target: "main",
            "controller version - {ours} mismatch with northd version - {}", northd.unwrap_or_default());
        self.version_mismatch = true;
        false
    }

    /// The monitor conditions last asked for, by table, with the sequence numbers of the
    /// last condition change asked for and acknowledged.
    pub fn requested_conditions(&self) -> (&BTreeMap<&'static str, Condition>, u64, u64) {
        (
            &self.cond_requested,
            self.cond_requested_seq,
            self.cond_acked_seq,
        )
    }

    /// `recompute`: everything is compiled again on the next run.
    pub fn force_recompute(&mut self, why: &str) {
        self.need_full = Some(why.to_owned());
    }

    /// A short status line for `connection-status`-like commands.
    pub fn sb_status(&self) -> &'static str {
        if self.sb_connected {
            "connected"
        } else {
            "not connected"
        }
    }
}

/// Adds a group to a put's bundle (replacing the switch's group of that id when `replace`:
/// delete, then add).
fn push_group_add(
    bundle: &mut BundleBuilder,
    entries: &mut Vec<Option<u32>>,
    id: u32,
    g: &Group,
    replace: bool,
) {
    if replace {
        let _ = bundle.push_message(&Message::GroupMod(GroupMod {
            command: OFPGC_DELETE,
            command_bucket_id: 0xffff_ffff,
            group: Group {
                group_id: id,
                ..Group::default()
            },
        }));
        entries.push(None);
    }
    let mut g = g.clone();
    g.group_id = id;
    match bundle.push_message(&Message::GroupMod(GroupMod {
        command: OFPGC_ADD,
        command_bucket_id: 0xffff_ffff,
        group: g,
    })) {
        Ok(_) => entries.push(None),
        Err(e) => {
            crate::vlog_rl!(WARN, &crate::vlog::limits::REFUSED_FLOW, target: "ofctrl", "group {id} not encodable: {e}");
        }
    }
}

/// The meter mod that adds meter `id` (with statistics, as ovn-controller asks).
fn meter_add_mod(id: u32, m: &MeterMod) -> MeterMod {
    MeterMod {
        command: openflow::wire::meter_mod::OFPMC_ADD,
        meter_id: id,
        flags: m.flags | OFPMF_STATS,
        bands: m.bands.clone(),
    }
}

/// The meter mod that makes the switch's meter `id` (`installed`: as last sent or dumped)
/// what `wanted` says: an add, a modify when its flags or bands differ, none when it is
/// already so or has no bands to install (a `Meter` row not there yet).
fn meter_to_send(installed: Option<&MeterMod>, id: u32, wanted: &MeterMod) -> Option<MeterMod> {
    if wanted.bands.is_empty() {
        return None;
    }
    let add = meter_add_mod(id, wanted);
    match installed {
        None => Some(add),
        Some(i) if i.flags == add.flags && i.bands == add.bands => None,
        Some(_) => Some(MeterMod {
            command: openflow::wire::meter_mod::OFPMC_MODIFY,
            ..add
        }),
    }
}

/// Logical flows per batch of a full compile (a batch's compiled flows go into the table
/// before the next batch is compiled).
const FULL_COMPILE_BATCH: usize = 4096;

/// Puts compiled owners in the flow table: each owner's flows replace what it wanted, its
/// id uses replace its old ones (which are released), and its failure is kept (and logged
/// when it is new). Returns how many new failures were logged.
fn apply_compiled(
    flows: &mut FlowTable,
    uses: &mut HashMap<Owner, Vec<IdUse>, FxBuild>,
    failures: &mut BTreeMap<Owner, String>,
    ids: &Ids,
    compiled: Vec<(Owner, Compiled)>,
) -> u64 {
    let lflows = compiled
        .iter()
        .filter(|(o, _)| matches!(o, Owner::Lflow(_)))
        .count();
    crate::coverage::CONSIDER_LOGICAL_FLOW.add(lflows as u64);
    let mut logged = 0;
    for (o, mut c) in compiled {
        flows.replace(o, std::mem::take(&mut c.flows));
        if let Some(old) = uses.insert(o, std::mem::take(&mut c.uses)) {
            ids.release(&old);
        }
        match c.failure {
            Some(f) => {
                let text = f.to_string();
                if failures.get(&o) != Some(&text) {
                    crate::vlog_rl!(WARN, &crate::vlog::limits::BAD_ROW, target: "lflow", "{f}");
                    logged += 1;
                }
                failures.insert(o, text);
            }
            None => {
                failures.remove(&o);
            }
        }
    }
    logged
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
}

/// Unused OVS types kept for documentation of what the engine reads.
#[allow(dead_code)]
type _Reads = (Bridge, Interface, Port);

#[cfg(test)]
mod meter_tests {
    use super::meter_to_send;
    use openflow::wire::meter_mod::{OFPMC_ADD, OFPMC_MODIFY, OFPMF_PKTPS, OFPMF_STATS};
    use openflow::wire::{MeterBand, MeterMod};

    fn meter(rate: u32) -> MeterMod {
        MeterMod {
            flags: OFPMF_PKTPS,
            bands: vec![MeterBand {
                band_type: 1,
                rate,
                burst_size: 0,
                extra: [0; 4],
            }],
            ..MeterMod::default()
        }
    }

    #[test]
    fn a_meter_is_added_then_modified_when_its_bands_change_and_left_when_equal() {
        let added = meter_to_send(None, 7, &meter(100)).expect("an add");
        assert_eq!((added.command, added.meter_id), (OFPMC_ADD, 7));
        assert_eq!(added.flags, OFPMF_PKTPS | OFPMF_STATS);
        // As sent, or as the switch reports it: nothing to send.
        assert_eq!(meter_to_send(Some(&added), 7, &meter(100)), None);
        let modified = meter_to_send(Some(&added), 7, &meter(400)).expect("a modify");
        assert_eq!((modified.command, modified.meter_id), (OFPMC_MODIFY, 7));
        assert_eq!(modified.bands[0].rate, 400);
        // A name with no Meter row yet has no bands: nothing is installed.
        assert_eq!(meter_to_send(None, 7, &MeterMod::default()), None);
    }
}
