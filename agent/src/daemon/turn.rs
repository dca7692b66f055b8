//! The engine's part of a turn: the connections follow the chassis configuration, the engine
//! runs once, and what it asks for is started (at most one transaction per database and one
//! put to the switch in flight).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::main_loop::MainLoop;
use super::refused;
use super::tasks::{spawn_condition, spawn_txn, start_sb, Done};
use crate::engine::core::Engine;
use crate::ofctrl::conn;

/// Runs slower than this are logged (as ovn-controller logs engine nodes over 500 ms).
const SLOW_RUN: Duration = Duration::from_millis(500);

impl MainLoop {
    /// The Southbound client follows external_ids:ovn-remote and the SSL settings, the
    /// OpenFlow connection and pinctrl the bridge name (the engine's configuration follows
    /// the OVS replica: an `exit` right behind a remote change is carried out on the new
    /// remote).
    pub(super) async fn follow_config(&mut self) {
        let Some(c) = self.engine.cfg.clone() else {
            return;
        };
        let want = c.remote.clone();
        let tls = super::ssl::effective(
            &self.engine.inputs.ovs,
            self.cfg.tls.as_ref(),
            self.sb.as_ref().and_then(|s| s.tls.as_ref()),
        );
        if self.sb.as_ref().is_none_or(|s| s.remote != want) {
            if let Some(old) = self.sb.take() {
                old.client.shutdown().await;
                self.engine.sb_disconnected();
            }
            self.sb = start_sb(&self.engine, &want, c.sb_probe_ms(), tls.clone());
        }
        // ... and the SSL settings (the SSL row, else the command line).
        if let Some(s) = self.sb.as_mut().filter(|s| s.tls != tls) {
            tracing::info!(target: "main", "SSL settings changed: {}", super::ssl::describe(tls.as_ref()));
            if s.client.set_tls(tls.clone()).await.is_ok() {
                s.tls = tls;
            }
        }
        let target = format!("unix:{}/{}.mgmt", self.cfg.ovs_rundir.display(), c.bridge);
        if crate::engine::binding::bridge(&self.engine.inputs.ovs, &c.bridge).is_none() {
            return;
        }
        if self.of.as_ref().is_none_or(|(t, _)| *t != target) {
            let probe =
                (c.openflow_probe_s > 0).then(|| Duration::from_secs(c.openflow_probe_s.max(5)));
            match conn::spawn(&target, probe) {
                Ok(c) => self.of = Some((target.clone(), c)),
                Err(e) => tracing::warn!(target: "ofctrl", "{target}: {e}"),
            }
        }
        if self.features.as_ref().is_none_or(|(t, _)| *t != target) {
            match crate::ofctrl::features::spawn(&target) {
                Ok(p) => self.features = Some((target.clone(), p)),
                Err(e) => tracing::warn!(target: "features", "{target}: {e}"),
            }
        }
        self.pinctrl.follow_bridge(&self.engine, &target);
    }

    /// Runs the engine and starts what it asks for; returns what the put sent (for the
    /// metrics).
    pub(super) async fn run_engine(&mut self) -> Option<crate::metrics::PutSent> {
        let now = Instant::now();
        let engine = &mut self.engine;
        engine.sb_busy = self.sb_busy;
        engine.sb_up_busy = self.sb_up_busy;
        engine.ovs_busy = self.ovs_busy;
        let reasons_before = engine.stats.recompute_reasons.clone();
        let mut actions = tokio::task::block_in_place(|| engine.run_bindings(now));
        // The Southbound transaction (claims above all) goes before the flows are made:
        // the server commits it meanwhile.
        let inputs = refused::inputs(engine);
        let sb_txn = actions
            .sb_txn
            .take()
            .filter(|_| self.refused.may_send(inputs));
        if let (Some(txn), false, Some(s)) = (sb_txn, self.sb_busy, self.sb.as_ref()) {
            tracing::debug!(target: "main", "southbound transaction sent ({} us into the run)", now.elapsed().as_micros());
            self.sb_busy = true;
            crate::coverage::SB_TXN.inc();
            spawn_txn(s.client.clone(), txn, self.done_tx.clone(), Done::SbTxn);
        }
        let up_txn = actions
            .sb_up_txn
            .take()
            .filter(|_| self.refused_up.may_send(inputs));
        if let (Some(txn), false, Some(s)) = (up_txn, self.sb_up_busy, self.sb.as_ref()) {
            tracing::debug!(target: "main", "southbound up transaction sent behind the claims");
            self.sb_up_busy = true;
            crate::coverage::SB_TXN.inc();
            spawn_txn(s.client.clone(), txn, self.done_tx.clone(), Done::SbUpTxn);
        }
        let engine = &mut self.engine;
        tokio::task::block_in_place(|| engine.run_flows(now, &mut actions));
        let took = now.elapsed();
        self.control.stopwatches.add("flow-generation", took);
        log_slow_run(
            &self.engine,
            took,
            self.control.compute_log_timeout.unwrap_or(SLOW_RUN),
            &reasons_before,
        );
        let mut put_sent: Option<crate::metrics::PutSent> = actions.put.as_ref().map(Into::into);
        // The switch and the local OVS first: pinctrl's part does not hold them up.
        if let (Some(txn), false) = (actions.ovs_txn, self.ovs_busy) {
            self.ovs_busy = true;
            crate::coverage::OVS_TXN.inc();
            spawn_txn(
                self.ovs_client.clone(),
                txn,
                self.done_tx.clone(),
                Done::OvsTxn,
            );
        }
        if let Some(s) = self.sb.as_ref() {
            for (table, cond) in actions.conditions {
                tracing::debug!(target: "main", "monitor condition of {table} sent");
                spawn_condition(s.client.clone(), table, cond, self.done_tx.clone());
            }
        }
        if let (Some(mut put), Some((_, c))) = (actions.put, self.of.as_ref()) {
            let seq = put.seq;
            let parts = (!put.complete).then(|| {
                let (tx, rx) = mpsc::channel(1);
                put.rest = Some(rx);
                tx
            });
            if c.puts.send(put).await.is_err() {
                self.engine.of_disconnected();
            } else {
                self.put_sent_at = Some(Instant::now());
                // A large put goes out part by part as it is encoded (the switch reads one
                // part while the next is made); nothing else runs until the last is sent.
                if let Some(tx) = parts {
                    let engine = &mut self.engine;
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
        put_sent
    }
}

/// Logs an engine run that took `threshold` ([`SLOW_RUN`] unless
/// `inc-engine/compute-log-timeout` says otherwise) or longer, saying whether it recomputed
/// every flow and why (`reasons_before`: the recompute counters before the run).
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
