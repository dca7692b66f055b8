//! The daemon's main loop: one task owns the [`Engine`]; the database clients, the OpenFlow
//! connection and the control socket talk to it over channels. Each turn applies whatever
//! arrived, runs the engine once, and starts what it asks for (at most one transaction per
//! database and one put to the switch in flight).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use sbclient::{
    spawn as spawn_db, Client, ClientConfig, Condition, Event, Remote, Transaction, TxnError,
};
use tokio::sync::mpsc;

use super::commands;
use super::db_events::{drain_events, on_ovs_event, on_sb_event};
use crate::engine::core::{Engine, EngineOptions};
use crate::ofctrl::conn::{self, OfControl, OfEvent};

/// The Open_vSwitch columns the agent reads (as ovn-controller's OVS IDL registers them):
/// statistics and other busy columns stay unmonitored.
const OVS_COLUMNS: [(&str, &[&str]); 6] = [
    (
        "Open_vSwitch",
        &[
            "external_ids",
            "other_config",
            "bridges",
            "datapaths",
            "iface_types",
            "ssl",
        ],
    ),
    (
        "SSL",
        &["private_key", "certificate", "ca_cert", "bootstrap_ca_cert"],
    ),
    (
        "Bridge",
        &[
            "name",
            "ports",
            "fail_mode",
            "other_config",
            "external_ids",
            "datapath_type",
        ],
    ),
    ("Port", &["name", "interfaces", "external_ids"]),
    (
        "Interface",
        &[
            "name",
            "type",
            "options",
            "ofport",
            "external_ids",
            "mtu",
            "mtu_request",
            "bfd",
            "bfd_status",
        ],
    ),
    ("Datapath", &["capabilities"]),
];

/// What the daemon was started with.
#[derive(Clone, Debug)]
pub struct LoopConfig {
    /// The local OVS database (`unix:/var/run/openvswitch/db.sock`).
    pub ovs_remote: String,
    /// `OVS_RUNDIR`, where `<bridge>.mgmt` is.
    pub ovs_rundir: PathBuf,
    pub engine: EngineOptions,
    /// Program name (`ovn-controller` or `ovn-agent`) for `version`.
    pub program: String,
    /// `--metrics`: the metrics the loop keeps up to date.
    pub metrics: Option<std::sync::Arc<crate::metrics::Metrics>>,
    /// The command line's SSL settings (`-p/-c/-C`, ...): for an `ssl:` OVS database,
    /// and for the Southbound when the OVS database has no `SSL` row.
    pub tls: Option<sbclient::client::TlsSettings>,
    /// The control socket's reply forms, set to those of the release the agent speaks.
    pub appctl_replies: Option<crate::appctl::ReplyForms>,
}

pub use crate::appctl::AppctlRequest as Request;

/// How the daemon ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// `exit`: the chassis was removed from the Southbound database.
    Cleaned,
    /// `exit --restart`, SIGTERM: everything left as it is for the next start.
    Restart,
}

/// Why the daemon could not run.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("bad OVS database remote {0:?}: {1}")]
    OvsRemote(String, String),
}

/// Results of the work the loop started.
#[derive(Debug)]
enum Done {
    /// The engine's Southbound transaction.
    SbTxn(Result<(), TxnError>),
    /// An `up` transaction sent behind the claims in flight ([`crate::engine::Actions::sb_up_txn`]).
    SbUpTxn(Result<(), TxnError>),
    /// pinctrl's Southbound writes (MAC bindings, IGMP groups, ...).
    PinTxn(Result<(), TxnError>),
    OvsTxn(Result<(), TxnError>),
    ConditionSeq(u64),
    /// The condition change for this table was never handed to the client (its task is
    /// gone): the engine no longer waits for it and asks again.
    ConditionFailed(&'static str),
    Cleanup,
}

struct Sb {
    client: Client,
    events: mpsc::Receiver<Event>,
    remote: String,
    /// The SSL settings the client was last given.
    tls: Option<sbclient::client::TlsSettings>,
    /// The client's SSL failures already counted in `sb_ssl_failures`.
    ssl_failures_counted: u64,
}

impl Sb {
    /// Adds the client's new SSL failures to the `sb_ssl_failures` counter.
    fn count_ssl_failures(&mut self) {
        let total = self.client.stats().tls_failures;
        crate::coverage::SB_SSL_FAILURES.add(total.saturating_sub(self.ssl_failures_counted));
        self.ssl_failures_counted = total;
    }
}

/// Runs until `exit` or `shutdown`; `ready` is called once the agent serves requests and
/// has started connecting (for `--detach`).
pub async fn run(
    cfg: LoopConfig,
    mut requests: mpsc::Receiver<Request>,
    mut shutdown: mpsc::Receiver<()>,
    ready: impl FnOnce(),
) -> Result<Exit, DaemonError> {
    let mut engine = Engine::new(cfg.engine.clone());
    let remotes = Remote::parse_list(&cfg.ovs_remote)
        .map_err(|e| DaemonError::OvsRemote(cfg.ovs_remote.clone(), e.to_string()))?;
    let mut ovs_cfg = ClientConfig::new(remotes, sbclient::vswitch::DATABASE);
    ovs_cfg.probe_interval = None;
    ovs_cfg.tls.clone_from(&cfg.tls);
    for (t, cols) in OVS_COLUMNS {
        ovs_cfg = ovs_cfg.monitor_columns(t, cols);
    }
    let (ovs_client, mut ovs_events) = spawn_db(ovs_cfg);
    let mut sb: Option<Sb> = None;
    let mut of: Option<(String, OfControl)> = None;
    // pinctrl: its own connection to the bridge, the MAC bindings it learnt and not yet
    // written, and whether its snapshot must be rebuilt.
    let mut pin: Option<crate::pinctrl::Pinctrl> = None;
    let pin_stats = std::sync::Arc::new(crate::pinctrl::Stats::default());
    let mut pin_writes: Vec<crate::pinctrl::buffer::SbWrite> = Vec::new();
    let mut pin_view_dirty = true;
    // The input generation the announcements were planned at (they follow only inputs).
    let mut announced_at: Option<u64> = None;
    // The snooping tables pinctrl reported last, and whether IGMP_Group may differ.
    let mut igmp_wanted: Option<crate::pinctrl::igmp::Snapshot> = None;
    let mut igmp_dirty = false;
    let mut announcements = crate::pinctrl::announce::Announcements::default();
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Done>();
    let (mut sb_busy, mut sb_up_busy, mut ovs_busy) = (false, false, false);
    let mut exit: Option<Exit> = None;
    // The tick also keeps the loop turning for the service manager's watchdog (notify.rs).
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    let mut control = commands::Control {
        pinctrl: Some(pin_stats.clone()),
        ..commands::Control::default()
    };
    let mut next_coverage_sample = Instant::now();
    let mut put_sent_at: Option<Instant> = None;
    let mut metrics = cfg.metrics.clone().map(crate::metrics::Observer::new);
    let mut service_manager = super::notify::SystemdNotify::from_env(&cfg.ovs_remote);
    // Since when queued input has held the engine run back.
    let mut run_deferred_since: Option<Instant> = None;
    // Transactions the Southbound refused wait for new input (the engine's, the `up` one).
    let mut refused = super::refused::Refusals::default();
    let mut refused_up = super::refused::Refusals::default();
    ready();
    loop {
        let mut changed = false;
        tokio::select! {
            ev = ovs_events.recv() => {
                let Some(ev) = ev else { break };
                changed |= on_ovs_event(&mut engine, &ev);
            }
            ev = async { match sb.as_mut() { Some(s) => s.events.recv().await, None => std::future::pending().await } } => {
                if let Some(ev) = ev {
                    if let (Event::Disconnected { .. }, Some(s)) = (&ev, sb.as_mut()) {
                        s.count_ssl_failures();
                    }
                    // A new connection may carry another identity (certificate): what was
                    // refused on the old one is tried again.
                    if matches!(ev, Event::Connected { .. }) {
                        refused = super::refused::Refusals::default();
                        refused_up = super::refused::Refusals::default();
                    }
                    changed |= on_sb_event(&mut engine, &ev, &mut pin_view_dirty);
                } else {
                    sb = None;
                    engine.sb_disconnected();
                    changed = true;
                }
            }
            ev = async { match of.as_mut() { Some((_, c)) => c.events.recv().await, None => std::future::pending().await } } => {
                match ev {
                    Some(OfEvent::Connected { session, fields, dump }) => engine.of_connected(session, fields, dump),
                    Some(OfEvent::Disconnected) => engine.of_disconnected(),
                    Some(OfEvent::PutDone { seq, result }) => {
                        if let Some(at) = put_sent_at.take() {
                            tracing::debug!(target: "ofctrl", "put {seq} done in {} us", at.elapsed().as_micros());
                            control.stopwatches.add("flow-installation", at.elapsed());
                        }
                        if let Err(e) = &result {
                            tracing::warn!(target: "ofctrl", "put {seq}: {e}");
                        }
                        let ok = result.is_ok();
                        engine.put_done(seq, result);
                        if let Some(m) = metrics.as_mut() { m.after_put(&engine, seq, ok); }
                    }
                    None => { of = None; engine.of_disconnected(); }
                }
                changed = true;
            }
            batch = async { match pin.as_mut() { Some(p) => p.writes.recv().await, None => std::future::pending().await } } => {
                match batch {
                    Some(b) => {
                        for w in b {
                            match w {
                                crate::pinctrl::buffer::SbWrite::Igmp(snap) => {
                                    igmp_wanted = Some(snap);
                                    igmp_dirty = true;
                                }
                                w => pin_writes.push(w),
                            }
                        }
                    }
                    None => pin = None,
                }
                changed = true;
            }
            d = done_rx.recv() => {
                // A failed condition change is asked again by the next run, not at once (the
                // client may stay gone until the loop replaces it).
                changed = !matches!(d, Some(Done::ConditionFailed(_)));
                match d {
                    Some(Done::SbTxn(r) | Done::PinTxn(r)) => {
                        // The transaction's own updates came before its reply: apply them
                        // before the engine plans again (it would plan from a replica
                        // without them: duplicate rows, claims made twice).
                        if let Some(s) = sb.as_mut() {
                            if drain_events(&mut s.events, |ev| on_sb_event(&mut engine, ev, &mut pin_view_dirty)) {
                                sb = None;
                                engine.sb_disconnected();
                            }
                        }
                        sb_busy = false;
                        tracing::debug!(target: "main", "southbound transaction done");
                        igmp_dirty = true;
                        refused.on_result(&r, super::refused::inputs(&engine));
                    }
                    Some(Done::SbUpTxn(r)) => {
                        if let Some(s) = sb.as_mut() {
                            if drain_events(&mut s.events, |ev| on_sb_event(&mut engine, ev, &mut pin_view_dirty)) {
                                sb = None;
                                engine.sb_disconnected();
                            }
                        }
                        sb_up_busy = false;
                        // It fails when its claim did (the wait): the port goes up the usual
                        // way once the claim is made again.
                        match &r {
                            Err(e) if !super::refused::is_refusal(e) => tracing::debug!(target: "main", "southbound up transaction: {e}"),
                            _ => refused_up.on_result(&r, super::refused::inputs(&engine)),
                        }
                    }
                    Some(Done::OvsTxn(r)) => {
                        if drain_events(&mut ovs_events, |ev| on_ovs_event(&mut engine, ev)) {
                            break;
                        }
                        ovs_busy = false;
                        if let Err(e) = r { tracing::info!(target: "main", "OVS transaction: {e}"); }
                    }
                    Some(Done::ConditionSeq(n)) => engine.conditions_requested(n),
                    Some(Done::ConditionFailed(table)) => engine.condition_failed(table),
                    Some(Done::Cleanup) | None => break,
                }
            }
            req = requests.recv() => {
                let Some(req) = req else { break };
                match commands::handle(&mut engine, &mut control, &req.command, &req.args) {
                    commands::Outcome::Reply(r) => { let _ = req.reply.send(r); }
                    commands::Outcome::ResetClusterState => {
                        let _ = req.reply.send(Ok(String::new()));
                        if let Some(s) = sb.as_ref() {
                            let client = s.client.clone();
                            tokio::spawn(async move {
                                if let Err(e) = client.reset_cluster_index().await {
                                    tracing::warn!(target: "main", "sb-cluster-state-reset: {e}");
                                }
                            });
                        }
                    }
                    commands::Outcome::Exit { restart } => {
                        let _ = req.reply.send(Ok(String::new()));
                        if restart {
                            exit = Some(Exit::Restart);
                            break;
                        }
                        exit = Some(Exit::Cleaned);
                        start_cleanup(&engine, sb.as_ref().map(|s| s.client.clone()), ovs_client.clone(), done_tx.clone());
                        continue;
                    }
                    commands::Outcome::Inject(po) => {
                        let sent = pin.as_ref().is_some_and(|p| p.inject.try_send(po).is_ok());
                        let _ = req.reply.send(if sent {
                            Ok(String::new())
                        } else {
                            Err("OpenFlow channel not ready.".to_owned())
                        });
                    }
                    commands::Outcome::RunNow(text) => {
                        let _ = req.reply.send(Ok(text));
                        changed = true;
                    }
                }
            }
            _ = shutdown.recv() => { exit = Some(Exit::Restart); break; }
            _ = tick.tick() => {
                changed = true;
                let now = Instant::now();
                if now >= next_coverage_sample {
                    control.coverage.sample(&crate::coverage::totals());
                    next_coverage_sample = now + Duration::from_secs(crate::coverage::SAMPLE_SECONDS);
                }
            }
        }
        service_manager.after_turn(&engine);
        if let Some(r) = &cfg.appctl_replies {
            r.set_release(engine.layout().dialect);
        }
        // debug/pause: nothing but the control socket until debug/resume (updates still
        // reach the replicas, and are processed on resume).
        // (A run held back below is still due.)
        if exit.is_some() || !(changed || run_deferred_since.is_some()) || control.paused {
            continue;
        }
        // Input already queued (a transaction's reply right behind its update, a burst of
        // updates) is taken before the engine runs: one run answers all of it. Bounded, so
        // that a steady stream of input cannot hold the engine off.
        let queued = input_queued(&ovs_events, &done_rx, sb.as_ref(), of.as_ref());
        let deferred_since = *run_deferred_since.get_or_insert_with(Instant::now);
        if queued && deferred_since.elapsed() < MAX_RUN_DEFERRAL {
            continue;
        }
        run_deferred_since = None;
        // The Southbound client follows external_ids:ovn-remote (the engine's configuration
        // follows the OVS replica: an `exit` right behind a remote change is carried out on
        // the new remote).
        if let Some(c) = engine.cfg.clone() {
            let want = c.remote.clone();
            let tls = super::ssl::effective(&engine.inputs.ovs, cfg.tls.as_ref());
            if sb.as_ref().is_none_or(|s| s.remote != want) {
                if let Some(old) = sb.take() {
                    old.client.shutdown().await;
                    engine.sb_disconnected();
                }
                sb = start_sb(&engine, &want, c.sb_probe_ms(), tls.clone());
            }
            // ... and the SSL settings (the SSL row, else the command line).
            if let Some(s) = sb.as_mut().filter(|s| s.tls != tls) {
                tracing::info!(target: "main", "SSL settings changed: {}", super::ssl::describe(tls.as_ref()));
                if s.client.set_tls(tls.clone()).await.is_ok() {
                    s.tls = tls;
                }
            }
            // The OpenFlow connection follows the bridge name.
            let target = format!("unix:{}/{}.mgmt", cfg.ovs_rundir.display(), c.bridge);
            let bridge_exists =
                crate::engine::binding::bridge(&engine.inputs.ovs, &c.bridge).is_some();
            if bridge_exists && of.as_ref().is_none_or(|(t, _)| *t != target) {
                let probe = (c.openflow_probe_s > 0)
                    .then(|| Duration::from_secs(c.openflow_probe_s.max(5)));
                match conn::spawn(&target, probe) {
                    Ok(c) => of = Some((target.clone(), c)),
                    Err(e) => tracing::warn!(target: "ofctrl", "{target}: {e}"),
                }
            }
            if bridge_exists && pin.as_ref().is_none_or(|p| p.target != target) {
                let view = pin_view(&engine, &announcements.current);
                match crate::pinctrl::spawn(&target, std::sync::Arc::new(view), pin_stats.clone()) {
                    Ok(p) => pin = Some(p),
                    Err(e) => tracing::warn!(target: "pinctrl", "{target}: {e}"),
                }
                pin_view_dirty = false;
            }
        }
        let now = Instant::now();
        engine.sb_busy = sb_busy;
        engine.sb_up_busy = sb_up_busy;
        engine.ovs_busy = ovs_busy;
        let reasons_before = engine.stats.recompute_reasons.clone();
        let mut actions = tokio::task::block_in_place(|| engine.run_bindings(now));
        // The Southbound transaction (claims above all) goes before the flows are made:
        // the server commits it meanwhile.
        let inputs = super::refused::inputs(&engine);
        let sb_txn = actions.sb_txn.take().filter(|_| refused.may_send(inputs));
        if let (Some(txn), false, Some(s)) = (sb_txn, sb_busy, sb.as_ref()) {
            tracing::debug!(target: "main", "southbound transaction sent ({} us into the run)", now.elapsed().as_micros());
            sb_busy = true;
            crate::coverage::SB_TXN.inc();
            spawn_txn(s.client.clone(), txn, done_tx.clone(), Done::SbTxn);
        }
        let up_txn = actions
            .sb_up_txn
            .take()
            .filter(|_| refused_up.may_send(inputs));
        if let (Some(txn), false, Some(s)) = (up_txn, sb_up_busy, sb.as_ref()) {
            tracing::debug!(target: "main", "southbound up transaction sent behind the claims");
            sb_up_busy = true;
            crate::coverage::SB_TXN.inc();
            spawn_txn(s.client.clone(), txn, done_tx.clone(), Done::SbUpTxn);
        }
        tokio::task::block_in_place(|| engine.run_flows(now, &mut actions));
        let took = now.elapsed();
        control.stopwatches.add("flow-generation", took);
        log_slow_run(
            &engine,
            took,
            control.compute_log_timeout.unwrap_or(SLOW_RUN),
            &reasons_before,
        );
        let mut put_sent: Option<crate::metrics::PutSent> = actions.put.as_ref().map(Into::into);
        // The switch and the local OVS first: pinctrl's part below does not hold them up.
        if let (Some(txn), false) = (actions.ovs_txn, ovs_busy) {
            ovs_busy = true;
            crate::coverage::OVS_TXN.inc();
            spawn_txn(ovs_client.clone(), txn, done_tx.clone(), Done::OvsTxn);
        }
        if let Some(s) = sb.as_ref() {
            for (table, cond) in actions.conditions {
                tracing::debug!(target: "main", "monitor condition of {table} sent");
                spawn_condition(s.client.clone(), table, cond, done_tx.clone());
            }
        }
        if let (Some(mut put), Some((_, c))) = (actions.put, of.as_ref()) {
            let seq = put.seq;
            let parts = (!put.complete).then(|| {
                let (tx, rx) = mpsc::channel(1);
                put.rest = Some(rx);
                tx
            });
            if c.puts.send(put).await.is_err() {
                engine.of_disconnected();
            } else {
                put_sent_at = Some(Instant::now());
                // A large put goes out part by part as it is encoded (the switch reads one
                // part while the next is made); nothing else runs until the last is sent.
                if let Some(tx) = parts {
                    while let Some(part) = tokio::task::block_in_place(|| engine.next_put_part()) {
                        if let Some(p) = put_sent.as_mut() {
                            p.messages += part.bundle.len();
                            p.bytes += part.bundle.encoded_len();
                        }
                        let last = part.last;
                        if tx.send(part).await.is_err() || last {
                            break;
                        }
                    }
                }
            }
            if let Some(p) = &put_sent {
                tracing::debug!(target: "ofctrl", "put {seq}: {} bundle messages, {} bytes, computed in {} us, sent in {} us", p.messages, p.bytes, took.as_micros(), now.elapsed().as_micros() - took.as_micros());
            }
        }
        // pinctrl's snapshot and plans are rebuilt from whole tables: while more input is
        // queued, they wait, and the engine answers that input first (a port waiting to go
        // up waits for nothing else).
        let pin_due = !input_queued(&ovs_events, &done_rx, sb.as_ref(), of.as_ref());
        // Gratuitous ARPs follow bindings, interfaces and HA activity: planned every run
        // (local ports and local switches only).
        if pin_due
            && pin.is_some()
            && engine.sb_connected
            && announced_at != Some(engine.input_generation())
        {
            announced_at = Some(engine.input_generation());
            let planned = crate::pinctrl::announce::plan(
                &engine.inputs.sb.replica,
                &engine.runtime,
                &engine.ifaces,
            );
            let (changed, learn) = announcements.update(planned);
            pin_view_dirty |= changed;
            pin_writes.extend(learn);
        }
        // pinctrl's MAC bindings and IGMP groups go in their own transaction, when the
        // engine's is done.
        igmp_dirty |= pin_view_dirty;
        let igmp_due = igmp_dirty && igmp_wanted.is_some() && engine.sb_connected;
        if let (true, false, Some(s)) = (!pin_writes.is_empty() || igmp_due, sb_busy, sb.as_ref()) {
            let writes = std::mem::take(&mut pin_writes);
            let mut txn = crate::pinctrl::sb_write::txn(
                &engine.inputs.sb.replica,
                &writes,
                crate::engine::now_ms(),
            );
            if let (true, Some(snap), Some(chassis)) =
                (igmp_due, igmp_wanted.as_ref(), engine.runtime.chassis)
            {
                igmp_dirty = false;
                let t = txn
                    .get_or_insert_with(|| sbclient::Transaction::new(sbclient::ovn_sb::DATABASE));
                let local = &engine.runtime.local_datapaths;
                crate::pinctrl::igmp::sync(
                    &engine.inputs.sb.replica,
                    chassis,
                    |dp| local.contains_key(&dp),
                    snap,
                    t,
                );
                if t.is_empty() {
                    txn = None;
                }
            }
            if let Some(txn) = txn {
                sb_busy = true;
                crate::coverage::SB_TXN.inc();
                spawn_txn(s.client.clone(), txn, done_tx.clone(), Done::PinTxn);
            }
        }
        // The snapshot also carries table numbers: a layout change rebuilds it too.
        if let Some(p) = pin.as_ref() {
            let l = engine.layout();
            let v = p.view.borrow();
            pin_view_dirty |= v.output_entry_table != l.output_entry
                || v.egress_table != l.egress
                || v.ingress_table != l.ingress
                || v.local_output_table != l.local_output
                || v.dns.forms != l.dialect.dns
                || v.chassis != engine.runtime.chassis;
        }
        if let (true, true, Some(p)) = (pin_due, pin_view_dirty, pin.as_ref()) {
            let view = pin_view(&engine, &announcements.current);
            p.view.send_if_modified(|v| {
                let new = **v != view;
                if new {
                    *v = std::sync::Arc::new(view);
                }
                new
            });
            pin_view_dirty = false;
        }
        if let Some(m) = metrics.as_mut() {
            m.after_run(&engine, put_sent.take(), now, &control.stopwatches);
        }
    }
    service_manager.stopping();
    if let Some(s) = sb.take() {
        s.client.shutdown().await;
    }
    ovs_client.shutdown().await;
    Ok(exit.unwrap_or(Exit::Restart))
}

/// The longest queued input holds back an engine run (see the loop).
const MAX_RUN_DEFERRAL: Duration = Duration::from_millis(20);

/// Runs slower than this are logged (as ovn-controller logs engine nodes over 500 ms).
const SLOW_RUN: Duration = Duration::from_millis(500);

/// Logs an engine run that took `threshold` ([`SLOW_RUN`] unless
/// `inc-engine/compute-log-timeout` says otherwise) or longer, saying whether it recomputed
/// every flow and why (`reasons_before`: the recompute counters before the run).
/// The pinctrl task's snapshot of the engine.
fn pin_view(engine: &Engine, announce: &[crate::pinctrl::garp::Announce]) -> crate::pinctrl::View {
    let l = engine.layout();
    let mut view =
        crate::pinctrl::View::from_replica(&engine.inputs.sb.replica, l.output_entry, l.egress);
    view.ingress_table = l.ingress;
    view.dns.forms = l.dialect.dns;
    view.announce = announce.to_vec();
    let local = &engine.runtime.local_datapaths;
    view.with_services(
        &engine.inputs.sb.replica,
        engine.runtime.chassis,
        l.local_output,
    )
    .with_multicast(&engine.inputs.sb.replica, |dp| local.contains_key(&dp))
}

fn log_slow_run(
    engine: &Engine,
    took: Duration,
    threshold: Duration,
    reasons_before: &BTreeMap<String, u64>,
) {
    if took >= Duration::from_millis(10) {
        tracing::debug!(target: "main", "engine run took {} us: {}", took.as_micros(), engine.stats.last_phases);
    }
    if took < threshold {
        return;
    }
    let ms = took.as_millis();
    let why = engine
        .stats
        .recompute_reasons
        .iter()
        .find(|(why, n)| reasons_before.get(*why) != Some(*n))
        .map(|(why, _)| why.as_str());
    if let Some(why) = why {
        tracing::info!(target: "main", "engine run took {ms} ms (full recompute: {why})");
    } else {
        tracing::info!(target: "main", "engine run took {ms} ms (incremental)");
    }
}

fn start_sb(
    engine: &Engine,
    remote: &str,
    probe_ms: u64,
    tls: Option<sbclient::client::TlsSettings>,
) -> Option<Sb> {
    let remotes = match Remote::parse_list(remote) {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(target: "main", "ovn-remote {remote:?}: {e}");
            return None;
        }
    };
    let mut c = ClientConfig::new(remotes, sbclient::ovn_sb::DATABASE)
        .monitor_replica(&engine.inputs.sb.replica);
    c.set_probe_interval_ms(probe_ms);
    c.tls.clone_from(&tls);
    // The first conditions go with the monitor request (before our chassis exists:
    // gateway ports and every Chassis_Private, so we never create a duplicate).
    let initial = crate::engine::conditions::conditions(&crate::engine::conditions::Interest {
        chassis_name: engine.cfg.as_ref().map_or("", |c| c.system_id.as_str()),
        chassis: None,
        local_datapaths: &[],
        local_iface_ids: &[],
        monitor_all: engine.cfg.as_ref().is_some_and(|c| c.monitor_all),
    });
    for (t, cond) in initial {
        c.conditions.insert(t.to_owned(), cond);
    }
    let (client, events) = spawn_db(c);
    tracing::info!(target: "reconnect", "{remote}: connecting...");
    Some(Sb {
        client,
        events,
        remote: remote.to_owned(),
        tls,
        ssl_failures_counted: 0,
    })
}

fn spawn_txn(
    client: Client,
    txn: Transaction,
    done: mpsc::UnboundedSender<Done>,
    wrap: fn(Result<(), TxnError>) -> Done,
) {
    tokio::spawn(async move {
        let r = client.transact(txn).await.map(|_| ());
        let _ = done.send(wrap(r));
    });
}

fn spawn_condition(
    client: Client,
    table: &'static str,
    cond: Condition,
    done: mpsc::UnboundedSender<Done>,
) {
    tokio::spawn(async move {
        match client.set_condition(table, cond).await {
            Ok(seq) => {
                let _ = done.send(Done::ConditionSeq(seq));
            }
            Err(e) => {
                crate::vlog_rl!(WARN, &crate::vlog::limits::CONDITION, target: "main", "condition for {table} not sent: {e}");
                let _ = done.send(Done::ConditionFailed(table));
            }
        }
    });
}

/// Whether an event waits on any of the loop's inputs that feed the engine.
fn input_queued(
    ovs: &mpsc::Receiver<Event>,
    done: &mpsc::UnboundedReceiver<Done>,
    sb: Option<&Sb>,
    of: Option<&(String, OfControl)>,
) -> bool {
    !ovs.is_empty()
        || !done.is_empty()
        || sb.is_some_and(|s| !s.events.is_empty())
        || of.is_some_and(|(_, c)| !c.events.is_empty())
}

/// `exit` without `--restart`: the chassis goes from the Southbound database, tunnels from
/// the bridge; then the loop ends.
fn start_cleanup(
    engine: &Engine,
    sb: Option<Client>,
    ovs: Client,
    done: mpsc::UnboundedSender<Done>,
) {
    let name = engine
        .cfg
        .as_ref()
        .map(|c| c.system_id.clone())
        .unwrap_or_default();
    let mut sb_txn = Transaction::new(sbclient::ovn_sb::DATABASE);
    crate::engine::chassis::cleanup(&engine.inputs.sb.replica, &name, &mut sb_txn);
    let mut ovs_txn = Transaction::new(sbclient::vswitch::DATABASE);
    if let Some(c) = &engine.cfg {
        crate::engine::ovs_config::remove_tunnels(&engine.inputs.ovs, c, &mut ovs_txn);
        crate::engine::ovs_config::remove_chassis_index(&engine.inputs.ovs, c, &mut ovs_txn);
    }
    tokio::spawn(async move {
        if let Some(sb) = sb {
            if !sb_txn.is_empty() {
                if let Err(e) = sb.transact(sb_txn).await {
                    tracing::warn!(target: "main", "cleanup of the southbound database: {e}");
                }
            }
        }
        if !ovs_txn.is_empty() {
            if let Err(e) = ovs.transact(ovs_txn).await {
                tracing::warn!(target: "main", "cleanup of the OVS database: {e}");
            }
        }
        let _ = done.send(Done::Cleanup);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client whose task has ended (no remotes to connect to).
    async fn stopped_client() -> Client {
        let (client, _events) = spawn_db(ClientConfig::new(Vec::new(), "OVN_Southbound"));
        for _ in 0..100 {
            if client.request("echo", serde_json::json!([])).await
                == Err(sbclient::ClientError::Stopped)
            {
                return client;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the client task did not stop");
    }

    #[tokio::test]
    async fn a_condition_change_that_cannot_be_sent_is_reported() {
        let client = stopped_client().await;
        let (tx, mut rx) = mpsc::unbounded_channel();
        spawn_condition(client, "Port_Binding", Condition::all(), tx);
        let done = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await;
        match done {
            Ok(Some(Done::ConditionFailed("Port_Binding"))) => {}
            other => panic!("expected ConditionFailed(Port_Binding), got {other:?}"),
        }
    }

    #[tokio::test]
    async fn draining_applies_what_is_queued_and_sees_a_closed_channel() {
        let (tx, mut rx) = mpsc::channel(4);
        for n in 1..=3 {
            tx.send(Event::ConditionsAcked(n)).await.unwrap();
        }
        let mut seen = Vec::new();
        let apply = |ev: &Event| {
            if let Event::ConditionsAcked(n) = ev {
                seen.push(*n);
            }
            true
        };
        assert!(!drain_events(&mut rx, apply));
        assert_eq!(seen, [1, 2, 3]);
        drop(tx);
        assert!(drain_events(&mut rx, |_| true));
    }
}
