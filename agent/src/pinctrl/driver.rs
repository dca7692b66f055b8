//! The pinctrl task: its own OpenFlow 1.5 connection to the integration bridge, set up as
//! ovn-controller's pinctrl sets up its own (miss_send_len 65535, `NXT_PACKET_IN2`); it
//! hands every packet-in to [`handle`](super::handlers::handle) and carries out the
//! effects: packet-outs and resumes on the same connection, buffered packets kept until
//! the main loop's snapshot shows their next hop's MAC binding, learnt MAC bindings sent
//! to the main loop in batches.

use std::sync::Arc;
use std::time::{Duration, Instant};

use openflow::conn::client::ClientConfig;
use openflow::conn::{connect, ConnError, Handle, SessionId};
use openflow::oxm::{FieldId, MatchField};
use openflow::wire::{Message, PacketOut, SetPacketInFormat, SwitchConfig};
use tokio::sync::{mpsc, watch};

use std::collections::HashMap;

use super::buffer::{Buffers, PendingBindings, SbWrite, MAX_MULTICAST_DELAY_MS, MAX_PENDING_FDB};
use super::handlers::{self, Context, Effect, Skip};
use super::stats::{bump, OpcodeLimits, Stats};
use super::view::View;
use crate::coverage;
use crate::vlog::RateLimit;

static SKIPPED: RateLimit = RateLimit::new(5, 20);
static NOTES: RateLimit = RateLimit::new(20, 40);

/// Packet-ins of one opcode handled per second at most (bursts of the same size); the
/// rest are dropped and counted. Well above what one chassis's resolutions and errors
/// need; CoPP meters in front of the controller actions are the finer control.
pub const RATE_PER_OPCODE: u32 = 2000;
const FLUSH_EVERY: Duration = Duration::from_millis(20);
const NXPIF_NXT_PACKET_IN2: u32 = 2;

/// The main loop's end of the pinctrl task.
pub struct Pinctrl {
    pub target: String,
    /// Snapshots for the task (the newest one wins).
    pub view: watch::Sender<Arc<View>>,
    /// Batches of learnt MAC bindings and FDB entries to write.
    pub writes: mpsc::Receiver<Vec<SbWrite>>,
    pub stats: Arc<Stats>,
}

/// Starts the task on `target` (`unix:<rundir>/<bridge>.mgmt`) on its own thread, named
/// in log lines `ovn_pinctrl0` as ovn-controller's pinctrl thread: a flood of packet-ins
/// costs that thread's time, not the main loop's.
pub fn spawn(target: &str, view: Arc<View>, stats: Arc<Stats>) -> Result<Pinctrl, ConnError> {
    let (view_tx, view_rx) = watch::channel(view);
    let (writes_tx, writes_rx) = mpsc::channel(64);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ConnError::Io(e.to_string()))?;
    let connected = {
        let _enter = runtime.enter();
        connect(target, ClientConfig::default())
    };
    let (conn, handle, asyncs) = match connected {
        Ok(c) => c,
        Err(e) => {
            // Dropping a runtime inside the main loop's async context is not allowed.
            runtime.shutdown_background();
            return Err(e);
        }
    };
    let task = Task {
        handle,
        asyncs,
        view: view_rx,
        writes: writes_tx,
        stats: stats.clone(),
        buffers: Buffers::default(),
        pending: PendingBindings::default(),
        fdb: HashMap::new(),
        limits: OpcodeLimits::new(RATE_PER_OPCODE, RATE_PER_OPCODE),
        session: None,
        jitter: 0,
    };
    let t = target.to_owned();
    std::thread::Builder::new()
        .name("ovn_pinctrl0".to_owned())
        .spawn(move || {
            crate::vlog::set_subprogram_name("ovn_pinctrl0");
            runtime.block_on(async move {
                let t2 = t.clone();
                tokio::spawn(async move {
                    if let Err(e) = conn.run().await {
                        tracing::warn!(target: "pinctrl", "{t2}: openflow connection task stopped: {e}");
                    }
                });
                // Ends when the main loop drops its end.
                task.run(t).await;
            });
        })
        .map_err(|e| ConnError::Io(e.to_string()))?;
    Ok(Pinctrl {
        target: target.to_owned(),
        view: view_tx,
        writes: writes_rx,
        stats,
    })
}

struct Task {
    handle: Handle,
    asyncs: mpsc::Receiver<openflow::wire::OfpMessage>,
    view: watch::Receiver<Arc<View>>,
    writes: mpsc::Sender<Vec<SbWrite>>,
    stats: Arc<Stats>,
    buffers: Buffers,
    pending: PendingBindings,
    /// Learnt FDB entries by (datapath, MAC): the port.
    fdb: HashMap<(u32, [u8; 6]), u32>,
    limits: OpcodeLimits,
    session: Option<SessionId>,
    jitter: u64,
}

async fn setup(h: &Handle, s: SessionId) -> Result<(), ConnError> {
    h.send(
        s,
        &[
            // Service connections such as br-int.mgmt get no packet-ins until
            // miss_send_len is set.
            Message::SetConfig(SwitchConfig {
                flags: 0,
                miss_send_len: u16::MAX,
            }),
            Message::SetPacketInFormat(SetPacketInFormat {
                format: NXPIF_NXT_PACKET_IN2,
            }),
        ],
    )
    .await?;
    h.barrier(s).await?;
    Ok(())
}

impl Task {
    async fn run(mut self, target: String) {
        let mut state = self.handle.state();
        let mut tick = tokio::time::interval(FLUSH_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            if self.session.is_none() {
                let Ok(s) = self.handle.wait_connected().await else {
                    return;
                };
                match setup(&self.handle, s).await {
                    Ok(()) => {
                        tracing::info!(target: "pinctrl", "{target}: connected");
                        bump(&self.stats.sessions, 1);
                        self.session = Some(s);
                    }
                    Err(e) => {
                        tracing::info!(target: "pinctrl", "{target}: set-up failed: {e}");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                }
            }
            tokio::select! {
                msg = self.asyncs.recv() => {
                    let Some(msg) = msg else { return };
                    if let Message::PacketIn2(pi) = msg.body {
                        self.packet_in(&pi).await;
                    }
                }
                changed = self.view.changed() => {
                    if changed.is_err() { return; }
                    self.release().await;
                }
                _ = tick.tick() => self.flush(Instant::now()),
                changed = state.changed() => {
                    if changed.is_err() { return; }
                    if *state.borrow() != self.session {
                        self.session = None;
                    }
                }
            }
        }
    }

    async fn send(&mut self, msgs: &[Message]) {
        let Some(s) = self.session else { return };
        if let Err(e) = self.handle.send(s, msgs).await {
            tracing::info!(target: "pinctrl", "send: {e}");
        }
    }

    async fn packet_in(&mut self, pi: &openflow::wire::PacketIn2) {
        coverage::PINCTRL_TOTAL_PIN_PKTS.inc();
        let now = Instant::now();
        let op = handlers::PacketIn::decode(pi).map(|p| p.opcode);
        if let Ok(op) = op {
            self.stats.count(&self.stats.received, op);
            if !self.limits.admit(op, now) {
                self.stats.count(&self.stats.rate_dropped, op);
                coverage::PINCTRL_DROP_RATE_LIMITED.inc();
                return;
            }
        }
        let cx = {
            let v = self.view.borrow();
            Context {
                output_entry_table: v.output_entry_table,
                egress_table: v.egress_table,
            }
        };
        match handlers::handle(pi, &cx) {
            Ok(effects) => {
                if let Ok(op) = op {
                    self.stats.count(&self.stats.handled, op);
                }
                self.apply(effects, now).await;
            }
            Err(Skip::NotAction(_)) => bump(&self.stats.not_action, 1),
            Err(e) => {
                if let Ok(op) = op {
                    self.stats.count(&self.stats.skipped, op);
                }
                crate::vlog_rl!(INFO, &SKIPPED, target: "pinctrl", "{e}");
                if let Skip::Resumed { resume, .. } = e {
                    self.send(&[Message::Resume(*resume)]).await;
                }
            }
        }
    }

    async fn apply(&mut self, effects: Vec<Effect>, now: Instant) {
        let mut out = Vec::new();
        for e in effects {
            match e {
                Effect::PacketOut(po) => out.push(Message::PacketOut(po)),
                Effect::Resume(r) => out.push(Message::Resume(r)),
                Effect::PutFdb(w) => {
                    let key = (w.datapath, w.mac);
                    if self.fdb.contains_key(&key) || self.fdb.len() < MAX_PENDING_FDB {
                        self.fdb.insert(key, w.port);
                        bump(&self.stats.bindings_requested, 1);
                    } else {
                        bump(&self.stats.binding_drops, 1);
                    }
                }
                Effect::Log(line) => tracing::info!(target: "acl_log", "{line}"),
                Effect::Info(line) => crate::vlog_rl!(INFO, &NOTES, target: "pinctrl", "{line}"),
                Effect::Buffer(key, p) => {
                    if self.buffers.push(key, p, now) {
                        bump(&self.stats.buffered, 1);
                    } else {
                        bump(&self.stats.buffer_drops, 1);
                        coverage::PINCTRL_DROP_BUFFERED_PACKETS_MAP.inc();
                    }
                }
                Effect::PutMacBinding { write, multicast } => {
                    let at = if multicast {
                        // A cheap spread of 1..=50 ms; it only has to differ between chassis.
                        self.jitter = self
                            .jitter
                            .wrapping_mul(6_364_136_223_846_793_005)
                            .wrapping_add(u64::from(now.elapsed().subsec_nanos()) | 1);
                        now + Duration::from_millis(
                            1 + (self.jitter >> 33) % MAX_MULTICAST_DELAY_MS,
                        )
                    } else {
                        now
                    };
                    if self.pending.put(write, at) {
                        bump(&self.stats.bindings_requested, 1);
                    } else {
                        bump(&self.stats.binding_drops, 1);
                        coverage::PINCTRL_DROP_PUT_MAC_BINDING.inc();
                    }
                }
            }
        }
        if !out.is_empty() {
            self.send(&out).await;
        }
        if !self.pending.is_empty() || !self.fdb.is_empty() {
            self.flush(now);
        }
    }

    /// Hands the due MAC bindings to the main loop and forgets buffered packets too old.
    fn flush(&mut self, now: Instant) {
        let mut due: Vec<SbWrite> = self
            .pending
            .due(now)
            .into_iter()
            .map(SbWrite::MacBinding)
            .collect();
        let mut fdb: Vec<SbWrite> = self
            .fdb
            .drain()
            .map(|((datapath, mac), port)| {
                SbWrite::Fdb(super::buffer::FdbWrite {
                    datapath,
                    port,
                    mac,
                })
            })
            .collect();
        fdb.sort_by_key(|w| match w {
            SbWrite::Fdb(f) => (f.datapath, f.mac),
            SbWrite::MacBinding(_) => (0, [0; 6]),
        });
        due.extend(fdb);
        if !due.is_empty() {
            let n = due.len() as u64;
            if self.writes.try_send(due).is_err() {
                bump(&self.stats.binding_drops, n);
                coverage::PINCTRL_DROP_PUT_MAC_BINDING.add(n);
            }
        }
        let expired = self.buffers.expire(now);
        bump(&self.stats.buffer_expired, expired as u64);
    }

    /// Sends the buffered packets whose next hop the snapshot resolves, with the learnt MAC
    /// as their destination.
    async fn release(&mut self) {
        let view = self.view.borrow_and_update().clone();
        let ready: Vec<_> = self
            .buffers
            .keys()
            .filter_map(|k| Some((*k, view.resolve(k.datapath, k.outport, k.next_hop)?)))
            .collect();
        let mut out = Vec::new();
        for (key, mac) in ready {
            for mut p in self.buffers.take(&key) {
                if p.packet.len() >= 6 {
                    p.packet[..6].copy_from_slice(&mac);
                }
                out.push(Message::PacketOut(PacketOut {
                    buffer_id: u32::MAX,
                    r#match: {
                        let mut m = openflow::oxm::Match::new();
                        m.fields.push(MatchField::new(
                            FieldId::IN_PORT_OXM,
                            0xffff_fffdu32.to_be_bytes().to_vec(),
                            None,
                        ));
                        m
                    },
                    actions: std::mem::take(&mut p.actions),
                    data: p.packet,
                }));
            }
        }
        bump(&self.stats.buffer_sent, out.len() as u64);
        if !out.is_empty() {
            self.send(&out).await;
        }
    }
}
