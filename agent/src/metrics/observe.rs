//! Fills the metrics from the engine: the main loop calls [`Observer::after_run`] after each
//! engine run and [`Observer::after_put`] when the switch confirms a put.
//!
//! The engine's counters only grow, so the Prometheus counters advance by what they grew
//! since the last look. Every look is cheap: fixed-size reads, the per-table flow counts the
//! flow table keeps (no walk over the flows), the bound ports, and the OVS interfaces only
//! when the local OVS database changed.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use prometheus_client::metrics::counter::Counter;
use sbclient::vswitch::Interface;
use sbclient::Uuid;

use super::{
    ConnectionMethodLabels, IpAddressLabels, MappingLabels, Metrics, ModeLabels, ReasonLabels,
    TableLabels, TypeLabels,
};
use crate::engine::core::Engine;
use crate::ofctrl::conn::Put;
use crate::owner::Owner;
use crate::stopwatch::Stopwatches;

/// What the loop sent to the switch after a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PutSent {
    pub seq: u64,
    /// Messages in the bundle.
    pub messages: usize,
    /// The bundle's encoded size.
    pub bytes: usize,
}

impl From<&Put> for PutSent {
    fn from(put: &Put) -> Self {
        Self {
            seq: put.seq,
            messages: put.bundle.len(),
            bytes: put.bundle.encoded_len(),
        }
    }
}

/// The put the switch has not confirmed yet.
#[derive(Debug)]
struct InFlight {
    seq: u64,
    sent: Instant,
    /// The oldest Southbound change whose flows it carries.
    oldest_change: Option<Instant>,
}

/// The configuration behind the `ovn_controller_*` configuration gauges.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Config {
    encap_ip: String,
    encap_type: String,
    remote: String,
    bridge_mappings: String,
    remote_probe_ms: u64,
    openflow_probe_s: u64,
    monitor_all: bool,
}

/// The engine's counters at the last look.
#[derive(Debug, Default)]
struct Seen {
    runs: u64,
    full_recomputes: u64,
    incremental_lflows: u64,
    dependency_runs: u64,
    flow_mods: u64,
    put_failures: u64,
    rejected_flows: u64,
    bad_rows: u64,
    recompute_reasons: BTreeMap<String, u64>,
    flows_by_table: Vec<usize>,
    /// Tables that had flows at some look (their gauge exists).
    tables_shown: Vec<bool>,
    bound: HashSet<Uuid>,
    sb_rows: u64,
    /// OVS rows applied and the bridge name when the port gauges were last counted.
    ovs: Option<(u64, String)>,
    config: Option<Config>,
}

/// The main loop's writer of the metrics (it keeps what it saw last).
#[derive(Debug)]
pub struct Observer {
    metrics: Arc<Metrics>,
    seen: Seen,
    /// The oldest Southbound change not yet in a put.
    unsent_change: Option<Instant>,
    in_flight: Option<InFlight>,
}

/// Advances `counter` by how much `now` grew past `last`.
fn advance(counter: &Counter, last: &mut u64, now: u64) {
    if now > *last {
        counter.inc_by(now - *last);
    }
    *last = now;
}

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn gauge_value(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Observer {
    pub fn new(metrics: Arc<Metrics>) -> Self {
        Self {
            metrics,
            seen: Seen::default(),
            unsent_change: None,
            in_flight: None,
        }
    }

    /// After an engine run that started at `started`; `put` is what it asked the switch to
    /// apply, if anything; `stopwatches` are the loop's.
    pub fn after_run(
        &mut self,
        engine: &Engine,
        put: Option<PutSent>,
        started: Instant,
        stopwatches: &Stopwatches,
    ) {
        let took = started.elapsed();
        self.stopwatches(stopwatches);
        self.counters(engine, took.as_secs_f64());
        self.flows(engine);
        self.bindings(engine);
        self.ovs_ports(engine);
        self.config(engine);
        let m = &self.metrics;
        m.ovn
            .southbound_database_connected
            .set(i64::from(engine.sb_connected));
        m.agent
            .openflow_connected
            .set(i64::from(engine.install.of_session.is_some()));
        let rejected = engine
            .failures
            .keys()
            .filter(|o| matches!(o, Owner::Lflow(_)))
            .count();
        m.agent.rejected_lflows.set(gauge_value(rejected));
        self.track_lag(engine, put, started);
    }

    /// After the switch answered put `seq` (`ok`: it took the bundle).
    pub fn after_put(&mut self, engine: &Engine, seq: u64, ok: bool) {
        let now = Instant::now();
        if let Some(f) = self.in_flight.take_if(|f| f.seq == seq) {
            let agent = &self.metrics.agent;
            agent
                .bundle_duration_seconds
                .observe(now.duration_since(f.sent).as_secs_f64());
            match (ok, f.oldest_change) {
                (true, Some(change)) => agent
                    .sb_lag_seconds
                    .observe(now.duration_since(change).as_secs_f64()),
                // The flows go again with the next put.
                (false, change) => self.unsent_change = earliest(self.unsent_change, change),
                (true, None) => {}
            }
        }
        let s = &engine.stats;
        advance(
            &self.metrics.agent.bundle_failures,
            &mut self.seen.put_failures,
            s.put_failures,
        );
        advance(
            &self.metrics.agent.rejected_flows,
            &mut self.seen.rejected_flows,
            s.rejected_flows,
        );
        self.flows(engine);
    }

    fn counters(&mut self, engine: &Engine, took: f64) {
        let s = &engine.stats;
        let (m, seen) = (&self.metrics, &mut self.seen);
        let full = s.full_recomputes > seen.full_recomputes;
        let incremental = s.incremental_lflows > seen.incremental_lflows
            || s.dependency_runs > seen.dependency_runs;
        if full || incremental {
            let mode = if full { "full" } else { "incremental" };
            m.agent
                .compile_duration_seconds
                .get_or_create(&ModeLabels { mode })
                .observe(took);
        }
        seen.dependency_runs = s.dependency_runs;
        seen.full_recomputes = s.full_recomputes;
        m.ovn
            .lflow_run
            .set(i64::try_from(crate::coverage::LFLOW_RUN.total()).unwrap_or(i64::MAX));
        advance(&m.agent.engine_runs, &mut seen.runs, s.runs);
        advance(
            &m.agent.incremental_lflows,
            &mut seen.incremental_lflows,
            s.incremental_lflows,
        );
        advance(&m.agent.flow_mods, &mut seen.flow_mods, s.flow_mods);
        advance(
            &m.agent.bundle_failures,
            &mut seen.put_failures,
            s.put_failures,
        );
        advance(
            &m.agent.rejected_flows,
            &mut seen.rejected_flows,
            s.rejected_flows,
        );
        advance(&m.agent.bad_rows, &mut seen.bad_rows, s.bad_rows);
        if s.recompute_reasons != seen.recompute_reasons {
            for (reason, n) in &s.recompute_reasons {
                let last = seen.recompute_reasons.entry(reason.clone()).or_default();
                let counter = m.agent.full_recomputes.get_or_create(&ReasonLabels {
                    reason: reason.clone(),
                });
                advance(&counter, last, *n);
            }
        }
    }

    fn stopwatches(&mut self, watches: &Stopwatches) {
        for (name, g) in &self.metrics.ovn.stopwatches {
            let Some(w) = watches.get(name) else {
                continue;
            };
            let (short, long) = w.averages();
            g.total_samples
                .set(i64::try_from(w.samples()).unwrap_or(i64::MAX));
            g.maximum
                .set(i64::try_from(w.maximum()).unwrap_or(i64::MAX));
            g.minimum
                .set(i64::try_from(w.minimum()).unwrap_or(i64::MAX));
            g.percentile_95.set(w.percentile_95());
            g.short_term_avg.set(short);
            g.long_term_avg.set(long);
        }
    }

    fn flows(&mut self, engine: &Engine) {
        let m = &self.metrics;
        m.ovn
            .integration_bridge_openflow
            .inner()
            .store(engine.flows.len() as u64, Ordering::Relaxed);
        let by_table = engine.flows.len_by_table();
        if by_table == self.seen.flows_by_table.as_slice() {
            return;
        }
        // A table shows once it had flows, and then stays (at 0 when they go).
        let shown = &mut self.seen.tables_shown;
        if shown.len() < by_table.len() {
            shown.resize(by_table.len(), false);
        }
        for (table, n) in by_table.iter().enumerate() {
            if *n > 0 || shown[table] {
                shown[table] = true;
                m.agent
                    .flows
                    .get_or_create(&TableLabels { table: table as u8 })
                    .set(gauge_value(*n));
            }
        }
        self.seen.flows_by_table = by_table.to_vec();
    }

    fn bindings(&mut self, engine: &Engine) {
        let bound = &engine.runtime.bound;
        let agent = &self.metrics.agent;
        agent.bound_ports.set(gauge_value(bound.len()));
        let claims = bound
            .keys()
            .filter(|u| !self.seen.bound.contains(u))
            .count();
        let releases = self
            .seen
            .bound
            .iter()
            .filter(|u| !bound.contains_key(u))
            .count();
        if claims + releases > 0 {
            agent.port_claims.inc_by(claims as u64);
            agent.port_releases.inc_by(releases as u64);
            self.seen.bound = bound.keys().copied().collect();
        }
    }

    /// Patch and Geneve interfaces, counted as ovn-kubernetes counts them: patch interfaces
    /// whose name has the integration bridge's in it, and every Geneve interface.
    fn ovs_ports(&mut self, engine: &Engine) {
        let bridge = engine.cfg.as_ref().map_or("br-int", |c| c.bridge.as_str());
        let rows = engine.inputs.ovs.stats().rows_applied;
        if self
            .seen
            .ovs
            .as_ref()
            .is_some_and(|(r, b)| *r == rows && b == bridge)
        {
            return;
        }
        let (mut patch, mut geneve) = (0, 0);
        if let Some(ifaces) = engine.inputs.ovs.table::<Interface>() {
            for (_, i) in ifaces.iter() {
                match i.type_.as_str() {
                    "patch" if i.name.contains(bridge) => patch += 1,
                    "geneve" => geneve += 1,
                    _ => {}
                }
            }
        }
        let ovn = &self.metrics.ovn;
        ovn.integration_bridge_patch_ports.set(patch);
        ovn.integration_bridge_geneve_ports.set(geneve);
        self.seen.ovs = Some((rows, bridge.to_owned()));
    }

    fn config(&mut self, engine: &Engine) {
        let Some(c) = engine.cfg.as_ref() else {
            return;
        };
        let raw = |k: &str| c.get(k).unwrap_or_default().to_owned();
        let now = Config {
            encap_ip: raw("ovn-encap-ip"),
            encap_type: raw("ovn-encap-type"),
            remote: c.remote.clone(),
            bridge_mappings: raw("ovn-bridge-mappings"),
            remote_probe_ms: c.sb_probe_ms(),
            openflow_probe_s: c.openflow_probe_s,
            monitor_all: c.monitor_all,
        };
        if self.seen.config.as_ref() == Some(&now) {
            return;
        }
        let ovn = &self.metrics.ovn;
        ovn.remote_probe_interval_seconds
            .set(now.remote_probe_ms as f64 / 1000.0);
        ovn.openflow_probe_interval_seconds
            .set(i64::try_from(now.openflow_probe_s).unwrap_or(i64::MAX));
        ovn.monitor_all.set(i64::from(now.monitor_all));
        // One series each, labelled by the current value (the old value's series goes).
        ovn.encap_ip.clear();
        ovn.encap_ip
            .get_or_create(&IpAddressLabels {
                ipaddress: now.encap_ip.clone(),
            })
            .set(1);
        ovn.encap_type.clear();
        ovn.encap_type
            .get_or_create(&TypeLabels {
                r#type: now.encap_type.clone(),
            })
            .set(1);
        ovn.sb_connection_method.clear();
        ovn.sb_connection_method
            .get_or_create(&ConnectionMethodLabels {
                connection_method: now.remote.clone(),
            })
            .set(1);
        ovn.bridge_mappings.clear();
        ovn.bridge_mappings
            .get_or_create(&MappingLabels {
                mapping: now.bridge_mappings.clone(),
            })
            .set(1);
        self.seen.config = Some(now);
    }

    /// Southbound lag: a change is first seen by the run after it arrived (`started`); it is
    /// done when the put that carries its flows is confirmed.
    fn track_lag(&mut self, engine: &Engine, put: Option<PutSent>, started: Instant) {
        let rows = engine.inputs.sb.replica.stats().rows_applied;
        if rows != self.seen.sb_rows {
            self.seen.sb_rows = rows;
            self.unsent_change = earliest(self.unsent_change, Some(started));
        }
        if let Some(put) = put {
            let agent = &self.metrics.agent;
            agent.bundle_messages.observe(put.messages as f64);
            agent.bundle_bytes.observe(put.bytes as f64);
            // A put still unconfirmed was lost with its connection: its changes ride on this
            // one.
            let lost = self.in_flight.take().and_then(|f| f.oldest_change);
            self.in_flight = Some(InFlight {
                seq: put.seq,
                sent: Instant::now(),
                oldest_change: earliest(self.unsent_change.take(), lost),
            });
        } else if !engine.flows.has_pending() {
            // Nothing waits to go to the switch: the change altered no flow.
            self.unsent_change = None;
        }
    }
}
