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
use openflow::wire::{Message, PacketOut, SetPacketInFormat, SwitchConfig};
use tokio::sync::{mpsc, watch};

use std::collections::HashMap;

use super::buffer::{Buffers, PendingBindings, SbWrite, MAX_MULTICAST_DELAY_MS, MAX_PENDING_FDB};
use super::handlers::{self, Context, Effect, Skip};
use super::ra_schedule::{Jitter, RaSchedule};
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
    /// `inject-pkt` packets to send.
    pub inject: mpsc::Sender<PacketOut>,
}

/// Starts the task on `target` (`unix:<rundir>/<bridge>.mgmt`) on its own thread, named
/// in log lines `ovn_pinctrl0` as ovn-controller's pinctrl thread: a flood of packet-ins
/// costs that thread's time, not the main loop's.
pub fn spawn(target: &str, view: Arc<View>, stats: Arc<Stats>) -> Result<Pinctrl, ConnError> {
    let (view_tx, view_rx) = watch::channel(view);
    let (writes_tx, writes_rx) = mpsc::channel(64);
    let (inject_tx, inject_rx) = mpsc::channel(16);
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
        events: super::events::Pending::default(),
        vports: super::vport::Pending::default(),
        activations: super::activation::Pending::default(),
        monitors: super::svc_monitor::Monitors::new(seed()),
        garps: super::garp::Schedule::default(),
        epoch: Instant::now(),
        inject: inject_rx,
        ras: RaSchedule::default(),
        ra_jitter: Jitter::from_clock(),
        snooping: super::igmp::Snooping::new(),
        bfd: super::bfd::Sessions::new(seed()),
        prefixd: super::prefixd::Clients::new(seed()),
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
        inject: inject_tx,
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
    /// Gratuitous ARPs due, on a clock of milliseconds since `epoch`.
    garps: super::garp::Schedule,
    epoch: Instant,
    inject: mpsc::Receiver<PacketOut>,
    /// When the periodic router advertisements are due, on the `epoch` clock.
    ras: RaSchedule,
    ra_jitter: Jitter,
    /// Controller events and virtual port claims waiting for the main loop.
    events: super::events::Pending,
    vports: super::vport::Pending,
    activations: super::activation::Pending,
    /// The health checks of the Service_Monitor rows bound here.
    monitors: super::svc_monitor::Monitors,
    /// IGMP / MLD snooping tables and the querier, on the `epoch` clock.
    snooping: super::igmp::Snooping,
    /// BFD sessions of the router ports here.
    bfd: super::bfd::Sessions,
    /// IPv6 prefix delegation clients of the gateway ports here.
    prefixd: super::prefixd::Clients,
}

/// A seed for the health checks' sequence numbers and source ports.
fn seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 32)
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
        let first = self.view.borrow().clone();
        self.garps
            .sync(&first.announce, self.clock_ms(Instant::now()));
        let mut state = self.handle.state();
        let mut tick = tokio::time::interval(FLUSH_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let rows = self.view.borrow().service_monitors.clone();
        self.monitors.sync(&rows, Instant::now());
        self.follow_ras();
        let now = self.now_ms();
        self.snooping.configure(&first.ip_multicast, now);
        self.bfd.sync(&first.bfd, Instant::now());
        self.prefixd.sync(&first.prefixd, Instant::now());
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
            let ra_due = self
                .ras
                .next_due()
                .map(|ms| self.epoch + Duration::from_millis(ms));
            let ra_timer = async move {
                match ra_due {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = ra_timer => self.send_ras().await,
                msg = self.asyncs.recv() => {
                    let Some(msg) = msg else { return };
                    if let Message::PacketIn2(pi) = msg.body {
                        tracing::debug!(target: "vconn", "{target}: received: {}", packet_in_text(msg.xid, &pi));
                        self.packet_in(&pi).await;
                    }
                }
                changed = self.view.changed() => {
                    if changed.is_err() { return; }
                    self.release().await;
                    self.follow_ras();
                }
                po = self.inject.recv() => {
                    let Some(po) = po else { return };
                    self.send(&[Message::PacketOut(po)]).await;
                }
                _ = tick.tick() => {
                    let now = Instant::now();
                    self.health_checks(now).await;
                    self.multicast(now).await;
                    self.flush(now);
                    self.announce(now).await;
                }
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
        let view = self.view.borrow().clone();
        match handlers::guarded(|| handlers::handle_with(pi, &cx, &view)) {
            Ok(effects) => {
                let rejected = effects.iter().find_map(|e| match e {
                    Effect::Rejected(why) => Some(why.to_string()),
                    _ => None,
                });
                if let Ok(op) = op {
                    let table = if rejected.is_some() {
                        &self.stats.skipped
                    } else {
                        &self.stats.handled
                    };
                    self.stats.count(table, op);
                }
                if let Some(why) = rejected {
                    crate::vlog_rl!(INFO, &SKIPPED, target: "pinctrl", "{why}");
                }
                self.apply(effects, now).await;
            }
            Err(Skip::NotAction(_)) => bump(&self.stats.not_action, 1),
            Err(e @ Skip::Panicked(_)) => {
                bump(&self.stats.panics, 1);
                coverage::PINCTRL_HANDLER_PANIC.inc();
                if let Ok(op) = op {
                    self.stats.count(&self.stats.skipped, op);
                }
                crate::vlog_rl!(ERROR, &SKIPPED, target: "pinctrl", "{e}; packet-in: {}", super::packet::hex(pi.packet().unwrap_or_default()));
            }
            Err(e) => {
                if let Ok(op) = op {
                    self.stats.count(&self.stats.skipped, op);
                }
                crate::vlog_rl!(INFO, &SKIPPED, target: "pinctrl", "{e}");
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
                Effect::ControllerEvent(e) => {
                    if !self.events.push(e) {
                        coverage::PINCTRL_DROP_CONTROLLER_EVENT.inc();
                    }
                }
                Effect::BindVport(c) => {
                    if !self.vports.push(c) {
                        coverage::PINCTRL_DROP_PUT_VPORT_BINDING.inc();
                    }
                }
                Effect::Activate(a) => {
                    if !self.activations.push(a) {
                        coverage::PINCTRL_DROP_ACTIVATED_PORT.inc();
                    }
                }
                Effect::Prefixd(r) => {
                    let (entry, to_all) = {
                        let v = self.view.borrow();
                        (v.output_entry_table, v.prefixd_request_to_all)
                    };
                    out.extend(
                        self.prefixd
                            .on_message(&r, entry, to_all)
                            .map(Message::PacketOut),
                    );
                }
                Effect::Bfd(r) => {
                    let ingress = self.view.borrow().ingress_table;
                    match self.bfd.on_message(&r, now, ingress) {
                        Ok(reply) => out.extend(reply.map(Message::PacketOut)),
                        Err(why) => {
                            self.stats
                                .count(&self.stats.skipped, handlers::opcode::BFD_MSG);
                            crate::vlog_rl!(DEBUG, &SKIPPED, target: "pinctrl", "BFD: {why}");
                        }
                    }
                }
                Effect::SvcReply(r) => {
                    let table = self.view.borrow().local_output_table;
                    match self.monitors.on_reply(&r, now, table) {
                        Ok(pkts) => out.extend(pkts.into_iter().map(Message::PacketOut)),
                        Err(e) => {
                            self.stats
                                .count(&self.stats.skipped, handlers::opcode::HANDLE_SVC_CHECK);
                            crate::vlog_rl!(WARN, &SKIPPED, target: "pinctrl", "{e}");
                        }
                    }
                    // The new state shows in the status at once, as ovn-controller's
                    // pinctrl thread runs its monitors after every packet-in.
                    out.extend(
                        self.monitors
                            .run(now, table)
                            .into_iter()
                            .map(Message::PacketOut),
                    );
                }
                Effect::Igmp(r) => {
                    let now_ms = self.clock_ms(now);
                    if self
                        .snooping
                        .on_message(r.datapath, r.port, &r.message, now_ms)
                    {
                        if let Some(key) = r.message.forward_to() {
                            let table = self.view.borrow().output_entry_table;
                            out.push(Message::PacketOut(super::igmp::forward(
                                r.datapath, r.port, key, r.packet, table,
                            )));
                        }
                    }
                }
                Effect::Rejected(_) => {}
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
        // Southbound writes go to the main loop at once (as ovn-controller's pinctrl
        // thread wakes its main thread), not at the next tick.
        if !self.pending.is_empty()
            || !self.fdb.is_empty()
            || !self.events.is_empty()
            || !self.vports.is_empty()
            || !self.activations.is_empty()
        {
            self.flush(now);
        }
    }

    fn now_ms(&self) -> u64 {
        self.clock_ms(Instant::now())
    }

    /// Follows the snapshot's router ports that send periodic RAs.
    fn follow_ras(&mut self) {
        let view = self.view.borrow().clone();
        let now = self.now_ms();
        self.ras.update(
            view.periodic_ras.iter().map(|(port, ra)| {
                (
                    port.as_str(),
                    (ra.config.min_interval, ra.config.max_interval),
                )
            }),
            now,
            &mut self.ra_jitter,
        );
    }

    /// Sends the periodic RAs that are due.
    async fn send_ras(&mut self) {
        let now = self.now_ms();
        let due = self.ras.take_due(now, &mut self.ra_jitter);
        let view = self.view.borrow().clone();
        let out: Vec<Message> = due
            .iter()
            .filter_map(|port| view.periodic_ras.get(port))
            .map(|ra| Message::PacketOut(ra.packet_out(view.ingress_table)))
            .collect();
        bump(&self.stats.ras_sent, out.len() as u64);
        if !out.is_empty() {
            self.send(&out).await;
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
            _ => (0, [0; 6]),
        });
        due.extend(fdb);
        // Without our chassis row, events and claims wait (they name it).
        if let Some(chassis) = self.view.borrow().chassis {
            due.extend(
                self.events
                    .take()
                    .into_iter()
                    .map(|e| SbWrite::Event(e, chassis)),
            );
            due.extend(
                self.vports
                    .take()
                    .into_iter()
                    .map(|c| SbWrite::Vport(c, chassis)),
            );
            due.extend(
                self.activations
                    .take()
                    .into_iter()
                    .map(|a| SbWrite::Activated(a, chassis)),
            );
        }
        due.extend(self.monitors.statuses().into_iter().map(SbWrite::SvcStatus));
        due.extend(
            self.prefixd
                .delegations(now)
                .into_iter()
                .map(|(u, v)| SbWrite::PrefixDelegated(u, v)),
        );
        due.extend(
            self.bfd
                .statuses()
                .into_iter()
                .map(|(u, s)| SbWrite::BfdStatus(u, s)),
        );
        due.extend(self.snooping.changed().map(SbWrite::Igmp));
        if !due.is_empty() {
            let n = due.len() as u64;
            if self.writes.try_send(due).is_err() {
                // The snooping state goes again with the next batch.
                self.snooping.resend();
                bump(&self.stats.binding_drops, n);
                coverage::PINCTRL_DROP_PUT_MAC_BINDING.add(n);
            }
        }
        let expired = self.buffers.expire(now);
        bump(&self.stats.buffer_expired, expired as u64);
    }

    /// Sends the health check probes that are due.
    async fn health_checks(&mut self, now: Instant) {
        // As ovn-controller, the checks pause while the switch connection is down.
        if self.session.is_none() {
            return;
        }
        if !self.bfd.is_empty() || !self.prefixd.is_empty() {
            let ingress = self.view.borrow().ingress_table;
            let mut out: Vec<Message> = self
                .bfd
                .run(now, ingress)
                .into_iter()
                .map(Message::PacketOut)
                .collect();
            out.extend(
                self.prefixd
                    .run(now, ingress)
                    .into_iter()
                    .map(Message::PacketOut),
            );
            if !out.is_empty() {
                self.send(&out).await;
            }
        }
        if self.monitors.is_empty() {
            return;
        }
        let table = self.view.borrow().local_output_table;
        let out: Vec<Message> = self
            .monitors
            .run(now, table)
            .into_iter()
            .map(Message::PacketOut)
            .collect();
        if !out.is_empty() {
            self.send(&out).await;
        }
    }

    /// Ages the snooping tables and sends the IGMP / MLD queries that are due (none
    /// while disconnected: they wait).
    async fn multicast(&mut self, now: Instant) {
        let now_ms = self.clock_ms(now);
        self.snooping.run(now_ms);
        self.stats.igmp_groups.store(
            self.snooping.group_count() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
        if self.session.is_none() || self.snooping.next_query().is_none_or(|t| t > now_ms) {
            return;
        }
        let table = self.view.borrow().local_output_table;
        let out: Vec<Message> = self
            .snooping
            .queries(now_ms, table)
            .into_iter()
            .map(Message::PacketOut)
            .collect();
        bump(&self.stats.igmp_queries_sent, out.len() as u64);
        if !out.is_empty() {
            self.send(&out).await;
        }
    }

    fn clock_ms(&self, now: Instant) -> u64 {
        u64::try_from(now.saturating_duration_since(self.epoch).as_millis()).unwrap_or(u64::MAX)
    }

    /// Sends the gratuitous ARPs that are due (none while disconnected: they wait).
    async fn announce(&mut self, now: Instant) {
        if self.session.is_none() || self.garps.next_due().is_none_or(|d| d > self.clock_ms(now)) {
            return;
        }
        let table = self.view.borrow().ingress_table;
        let out: Vec<Message> = self
            .garps
            .due(self.clock_ms(now))
            .iter()
            .map(|a| Message::PacketOut(super::garp::packet_out(a, table)))
            .collect();
        bump(&self.stats.announcements_sent, out.len() as u64);
        self.send(&out).await;
    }

    /// Sends the buffered packets whose next hop the snapshot resolves, with the learnt MAC
    /// as their destination; takes the snapshot's announcements.
    async fn release(&mut self) {
        let view = self.view.borrow_and_update().clone();
        self.monitors.sync(&view.service_monitors, Instant::now());
        self.bfd.sync(&view.bfd, Instant::now());
        self.prefixd.sync(&view.prefixd, Instant::now());
        let now = self.clock_ms(Instant::now());
        self.garps.sync(&view.announce, now);
        self.snooping.configure(&view.ip_multicast, now);
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
                out.push(Message::PacketOut(handlers::from_controller(
                    std::mem::take(&mut p.actions),
                    p.packet,
                )));
            }
        }
        bump(&self.stats.buffer_sent, out.len() as u64);
        if !out.is_empty() {
            self.send(&out).await;
        }
    }
}

/// A packet-in as `ovs-ofctl` prints it ("NXT_PACKET_IN2 (xid=0x0): table_id=10
/// cookie=0x... total_len=60 reg14=0x1,metadata=0x2,in_port=1 (via action) data_len=60
/// (unbuffered)"): the OpenFlow debug log's line, which operators and OVN's tests read.
fn packet_in_text(xid: u32, pi: &openflow::wire::PacketIn2) -> String {
    use openflow::wire::PacketInProp;
    use std::fmt::Write as _;
    let mut out = format!("NXT_PACKET_IN2 (xid={xid:#x}):");
    let (mut table, mut cookie, mut total) = (0u8, 0u64, None);
    for p in &pi.props {
        match p {
            PacketInProp::TableId(t) => table = *t,
            PacketInProp::Cookie(c) => cookie = *c,
            PacketInProp::FullLen(n) => total = Some(*n),
            _ => {}
        }
    }
    let data_len = pi.packet().map_or(0, <[u8]>::len);
    if table != 0 {
        let _ = write!(out, " table_id={table}");
    }
    let total = total.map_or(data_len, |n| n as usize);
    let _ = write!(out, " cookie={cookie:#x} total_len={total}");
    if let Some(m) = pi.metadata() {
        let _ = write!(out, " {}", openflow::text::format_match(m, None));
    }
    let _ = write!(out, " (via action) data_len={data_len} (unbuffered)");
    out
}
