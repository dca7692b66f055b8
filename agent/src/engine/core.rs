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
use super::conditions::{conditions, Interest, MonitorConditions};
use super::config::{ChassisConfig, ConfigError};
use super::deps::affected_lflows;
use flows::{LflowChanges, PhysicalChanges, ViewState};
use install::SwitchState;
use ovs_writes::OvsSync;
use runtime::RuntimeWork;
use sb_writes::SbWriteState;
mod flows;
mod input_changes;
mod install;
mod ovs_writes;
mod runtime;
mod sb_writes;

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
    /// The VIF plug providers enabled (`--enable-dummy-vif-plug`).
    pub vif_plug: super::vif_plug::Providers,
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
    /// Address-set changes made in place in a logical flow's flows (no recompile), and
    /// those that could not be (the lflow was compiled again).
    pub set_deltas: u64,
    pub set_delta_fallbacks: u64,
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

/// The agent's stages as engine nodes: under the names of ovn-controller's nodes that do
/// the same work (`runtime_data`: bindings, local datapaths; `logical_flow_output`,
/// `physical_flow_output`; `flow_output`: everything that reaches the switch), and the
/// stages ovn-controller keeps outside its engine under the agent's own names: `inputs`
/// (changes applied to the replicas; Southbound connections that start from scratch as
/// recomputes), `install` (puts to the switch;
/// those after a (re)connection, which compare with the switch's dump, as recomputes;
/// failed puts as aborts), `sb_writes` and `ovs_writes` (transactions sent; those that
/// failed as aborts).
#[derive(Clone, Debug, Default)]
pub struct NodeStats {
    pub inputs: NodeCounts,
    pub runtime_data: NodeCounts,
    pub logical_flow_output: NodeCounts,
    pub physical_flow_output: NodeCounts,
    pub flow_output: NodeCounts,
    pub install: NodeCounts,
    pub sb_writes: NodeCounts,
    pub ovs_writes: NodeCounts,
}

impl NodeStats {
    /// `(name, counts)` in the order data flows (ovn-controller lists its nodes in that
    /// order too: inputs first).
    pub fn all(&self) -> [(&'static str, NodeCounts); 8] {
        [
            ("inputs", self.inputs),
            ("runtime_data", self.runtime_data),
            ("physical_flow_output", self.physical_flow_output),
            ("logical_flow_output", self.logical_flow_output),
            ("flow_output", self.flow_output),
            ("install", self.install),
            ("sb_writes", self.sb_writes),
            ("ovs_writes", self.ovs_writes),
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
    /// Whether the datapath has meters, as the feature probe last said (`None`: not yet).
    pub(super) meter_support: Option<bool>,
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
    pub zones: Zones,
    /// Local interfaces by iface-id (from the last run).
    pub ifaces: LocalIfaces,
    /// Counts changes to the replicas and runtime recomputations: what is derived from
    /// them outside the engine (pinctrl's announcements) is derived again only when it moved.
    pub(super) input_generation: u64,
    pub initial_sync_done: bool,
    pub(super) sb_connected_at: Option<Instant>,
    /// When the engine started, and `debug/ignore-startup-delay` (see
    /// [`Engine::started_recently`]).
    pub(super) started_at: Instant,
    pub ignore_startup_delay: bool,
    /// The configuration [`Engine::run_bindings`] got through with: [`Engine::run_flows`]
    /// has work, with it.
    pub(super) flows_due: Option<ChassisConfig>,
    /// ovn-northd's internal version differed from ours at the last run (with
    /// `ovn-match-northd-version`).
    pub(super) version_mismatch: bool,
    /// SB_Global's options the flows were compiled with ([`crate::northd_options::northd_flow_options`]).
    pub(super) northd_flow_options: (bool, bool),
    /// BFD timers of SB_Global that were left out (reported once each).
    pub(super) bfd_problems: Vec<super::bfd::BadParameter>,
    /// What each lflow names (ports, address sets, port groups) and where it sits.
    pub(super) lflow_index: LflowIndex,
    /// `sb_busy` and `ovs_busy` at the last run: a transaction that finished (failed ones
    /// too) means planning again.
    pub(super) busy_before: (bool, bool),
    /// The monitor conditions asked of the Southbound and how far the server has them.
    pub(super) conditions: MonitorConditions,
    /// What the switch has and what is on its way to it (the install stage's state).
    pub install: SwitchState,
    /// What changed since the physical and port-security flows were last computed.
    pub(super) physical_changes: PhysicalChanges,
    /// Claims and `up` writes in flight, ports going up, `nb_cfg` (the Southbound writes' state).
    pub sb_writes: SbWriteState,
    /// Whether the local OVS needs comparing with what it should be (the OVS writes stage).
    pub(super) ovs_sync: OvsSync,
    /// What the flows stage has to compute again (logical flows, owners, a full recompute).
    pub(super) lflow_changes: LflowChanges,
    /// When the runtime (bindings, local datapaths, tunnels, zones) is computed again.
    pub(super) runtime_work: RuntimeWork,
    /// The flows stage's view of the Southbound, kept between runs.
    pub(super) view: ViewState,
    /// Load balancer backends whose connections the next put flushes.
    pub(super) lb_flushes: super::ct_flush::LbFlushes,
}

impl Engine {
    pub fn new(opts: EngineOptions) -> Self {
        let mut ovs = Replica::new(sbclient::vswitch::DATABASE);
        sbclient::vswitch::register_all(&mut ovs);
        Self {
            opts,
            view: ViewState::new(),
            lb_flushes: super::ct_flush::LbFlushes::default(),
            runtime_work: RuntimeWork::new(),
            lflow_changes: LflowChanges::new(),
            sb_writes: SbWriteState::new(),
            ovs_sync: OvsSync::new(),
            physical_changes: PhysicalChanges::new(),
            install: SwitchState::new(),
            conditions: MonitorConditions::new(),
            cfg: None,
            // Until the first OVS update there is no Open_vSwitch row.
            cfg_error: Some(ConfigError::NoRow),
            inputs: Inputs {
                sb: Southbound::default(),
                ovs,
            },
            sb_connected: false,
            meter_support: None,
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
            zones: Zones::default(),
            ifaces: LocalIfaces::default(),
            input_generation: 0,
            initial_sync_done: false,
            sb_connected_at: None,
            started_at: Instant::now(),
            ignore_startup_delay: false,
            flows_due: None,
            version_mismatch: false,
            northd_flow_options: (true, false),
            bfd_problems: Vec::new(),
            lflow_index: LflowIndex::default(),
            busy_before: (false, false),
        }
    }

    /// The layout in use.
    /// The ports related to this chassis, sorted (`debug/dump-related-ports`).
    pub fn related_port_names(&self) -> Vec<&str> {
        self.view.parts.related_port_names()
    }

    pub fn layout(&self) -> crate::lflow::layout::TableLayout {
        self.cfg
            .as_ref()
            .map_or(crate::lflow::layout::TableLayout::CLASSIC, |c| c.layout)
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
        self.runtime_work.due_plan = None;
        // With no transaction in flight, claims sent have shown (or failed) in the replica.
        if !self.sb_busy {
            self.sb_writes.claims_in_flight.clear();
        }
        if !self.sb_up_busy {
            self.sb_writes.up_in_flight.clear();
        }
        self.stats.runs += 1;
        self.stats.last_phases = RunPhases::default();
        // A put cut short leaves its compile unfinished: the table is made whole first.
        self.finish_streamed_compile();
        let (sb_was_busy, ovs_was_busy) = self.busy_before;
        self.busy_before = (self.sb_busy, self.ovs_busy);
        self.runtime_work.inputs_dirty |= sb_was_busy && !self.sb_busy;
        self.ovs_sync.dirty |= ovs_was_busy && !self.ovs_busy;
        let mut actions = Actions::default();
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
                self.stats.nodes.ovs_writes.compute += 1;
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
            self.runtime_work.changed = true;
        }
        self.runtime.chassis_name.clone_from(&cfg.system_id);
        // Bindings, local datapaths, tunnels, zones and conditions: only when what they are
        // computed from changed (most runs follow a flow change, a put or a reply).
        let runtime_due = self.runtime_work.due.is_some_and(|t| now >= t);
        if self.runtime_work.inputs_dirty
            || runtime_due
            || self.runtime_work.changed
            || self.lflow_changes.need_full.is_some()
        {
            let t = std::time::Instant::now();
            self.input_generation += 1;
            let (dirty, plan) = self.update_bindings(&cfg, chassis_uuid, now, &mut sb_txn);
            sb_dirty |= dirty;
            self.runtime_work.due_plan = Some(plan);
            self.stats.last_phases.runtime = t.elapsed();
            self.ovs_sync.dirty = true;
        }
        // nb_cfg and ports whose flows are in.
        if let Some((n, due)) = self.sb_writes.nb_cfg_due {
            if now >= due {
                self.sb_writes.nb_cfg_acked = Some((n, super::now_ms()));
                self.sb_writes.nb_cfg_due = None;
            }
        }
        if !self.sb_busy {
            sb_dirty |= self.write_port_up(&mut sb_txn);
        } else if !self.sb_up_busy {
            let mut up_txn = Transaction::new(ovn_sb::DATABASE);
            if self.write_port_up_behind_claims(&mut up_txn) {
                actions.sb_up_txn = Some(up_txn);
                self.stats.nodes.sb_writes.compute += 1;
            }
        }
        if sb_dirty && !sb_txn.is_empty() && !self.sb_busy {
            actions.sb_txn = Some(sb_txn);
            self.stats.nodes.sb_writes.compute += 1;
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
        if let Some((plan, active_tunnels)) = self.runtime_work.due_plan.take() {
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
        self.sync_local_ovs(&cfg, chassis_uuid, actions);
        // The switch.
        let t = std::time::Instant::now();
        actions.put = self.build_put(now, actions.conditions.is_empty());
        if actions.put.is_none() && self.install.streamed.is_some() {
            // No put to carry the compile's flows: they go in at once.
            self.finish_streamed_compile();
            actions.put = self.build_put(now, actions.conditions.is_empty());
        }
        self.stats.last_phases.put = t.elapsed();
        if actions.put.is_some() {
            self.stats.nodes.install.compute += 1;
        }
    }

    // ---- flows -----------------------------------------------------------------------

    // ---- the switch ------------------------------------------------------------------

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
        let northd = crate::northd_options::northd_internal_version(&self.inputs.sb.replica);
        // The version of the release the flows are compiled for: the classic and
        // ovn-23.03 layouts speak 23.03.1, ovn-25.03 speaks 25.03.0, ovn-26.03 26.03.1.
        let ours = cfg.layout.dialect.internal_version;
        if northd == Some(ours) {
            if std::mem::take(&mut self.version_mismatch) {
                self.lflow_changes.need_full = Some("ovn-northd's version matches again".into());
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
            &self.conditions.requested,
            self.conditions.requested_seq,
            self.conditions.acked_seq,
        )
    }

    /// The feature probe's word on meters; a change compiles everything again (controller
    /// actions carry their meters only where there are meters). Returns whether it changed.
    pub fn set_meter_support(&mut self, supported: Option<bool>) -> bool {
        let before = self.meter_support == Some(false);
        self.meter_support = supported;
        let changed = before != (supported == Some(false));
        if changed {
            self.force_recompute("meter support changed");
        }
        changed
    }

    /// `recompute`: everything is compiled again on the next run.
    pub fn force_recompute(&mut self, why: &str) {
        self.lflow_changes.need_full = Some(why.to_owned());
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

/// Unused OVS types kept for documentation of what the engine reads.
#[allow(dead_code)]
type _Reads = (Bridge, Interface, Port);
