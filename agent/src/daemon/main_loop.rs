//! What the main loop holds between turns, and one handler per source of input: the local
//! OVS database, the Southbound, the OpenFlow connection, pinctrl, the results of the tasks
//! the loop started, the control socket, and the timer.

use std::time::{Duration, Instant};

use sbclient::{spawn as spawn_db, Client, ClientConfig, Event, Remote};
use tokio::sync::mpsc;

use super::commands;
use super::db_events::{drain_events, on_ovs_event, on_sb_event};
use super::loop_config::{DaemonError, Exit, LoopConfig, Request, OVS_COLUMNS};
use super::pinctrl_link::PinctrlLink;
use super::refused::{self, Refusals};
use super::tasks::{start_cleanup, Done, Sb};
use crate::engine::core::Engine;
use crate::ofctrl::conn::{OfControl, OfEvent};

/// One input the loop took, by source (`None`: that source's channel closed).
pub(super) enum Input {
    Ovs(Option<Event>),
    Sb(Option<Event>),
    OpenFlow(Option<OfEvent>),
    PinctrlWrites(Option<Vec<crate::pinctrl::buffer::SbWrite>>),
    Done(Option<Done>),
    Request(Option<Request>),
    Shutdown,
    Tick,
    /// The feature probe learnt whether the datapath has meters.
    MeterSupport(Option<bool>),
}

/// What an input leaves the turn to do.
pub(super) enum Step {
    /// Go on with the turn; `true`: the engine has something new to run on.
    Go(bool),
    /// Nothing more this turn (an `exit` cleaning up waits for its transactions).
    Skip,
    /// The loop ends.
    Stop,
}

pub(super) struct MainLoop {
    pub(super) cfg: LoopConfig,
    pub(super) engine: Engine,
    pub(super) ovs_client: Client,
    pub(super) ovs_events: mpsc::Receiver<Event>,
    pub(super) sb: Option<Sb>,
    /// The OpenFlow connection and the bridge management socket it is on.
    pub(super) of: Option<(String, OfControl)>,
    /// The feature probe connection, on the same bridge socket.
    pub(super) features: Option<(String, crate::ofctrl::features::FeatureProbe)>,
    pub(super) pinctrl: PinctrlLink,
    pub(super) done_tx: mpsc::UnboundedSender<Done>,
    pub(super) done_rx: mpsc::UnboundedReceiver<Done>,
    /// A transaction of that kind is in flight (at most one each).
    pub(super) sb_busy: bool,
    pub(super) sb_up_busy: bool,
    pub(super) ovs_busy: bool,
    pub(super) exit: Option<Exit>,
    pub(super) control: commands::Control,
    next_coverage_sample: Instant,
    pub(super) put_sent_at: Option<Instant>,
    pub(super) metrics: Option<crate::metrics::Observer>,
    pub(super) service_manager: super::notify::SystemdNotify,
    /// Since when queued input has held the engine run back.
    pub(super) run_deferred_since: Option<Instant>,
    /// Transactions the Southbound refused wait for new input (the engine's, the `up` one).
    pub(super) refused: Refusals,
    pub(super) refused_up: Refusals,
}

impl MainLoop {
    pub(super) fn new(cfg: LoopConfig) -> Result<Self, DaemonError> {
        let engine = Engine::new(cfg.engine.clone());
        let remotes = Remote::parse_list(&cfg.ovs_remote)
            .map_err(|e| DaemonError::OvsRemote(cfg.ovs_remote.clone(), e.to_string()))?;
        let mut ovs_cfg = ClientConfig::new(remotes, sbclient::vswitch::DATABASE);
        ovs_cfg.probe_interval = None;
        ovs_cfg.tls.clone_from(&cfg.tls);
        for (t, cols) in OVS_COLUMNS {
            ovs_cfg = ovs_cfg.monitor_columns(t, cols);
        }
        let (ovs_client, ovs_events) = spawn_db(ovs_cfg);
        let pinctrl = PinctrlLink::new();
        let (done_tx, done_rx) = mpsc::unbounded_channel::<Done>();
        let control = commands::Control {
            pinctrl: Some(pinctrl.stats.clone()),
            ..commands::Control::default()
        };
        let metrics = cfg.metrics.clone().map(crate::metrics::Observer::new);
        let service_manager = super::notify::SystemdNotify::from_env(&cfg.ovs_remote);
        Ok(Self {
            cfg,
            engine,
            ovs_client,
            ovs_events,
            sb: None,
            of: None,
            features: None,
            pinctrl,
            done_tx,
            done_rx,
            sb_busy: false,
            sb_up_busy: false,
            ovs_busy: false,
            exit: None,
            control,
            next_coverage_sample: Instant::now(),
            put_sent_at: None,
            metrics,
            service_manager,
            run_deferred_since: None,
            refused: Refusals::default(),
            refused_up: Refusals::default(),
        })
    }

    /// Whether an event waits on any of the inputs that feed the engine.
    pub(super) fn input_queued(&self) -> bool {
        super::tasks::input_queued(
            &self.ovs_events,
            &self.done_rx,
            self.sb.as_ref(),
            self.of.as_ref(),
        )
    }

    pub(super) fn on_input(&mut self, input: Input) -> Step {
        match input {
            Input::Ovs(None) | Input::Request(None) | Input::Shutdown => {
                if matches!(input, Input::Shutdown) {
                    self.exit = Some(Exit::Restart);
                }
                Step::Stop
            }
            Input::Ovs(Some(ev)) => Step::Go(on_ovs_event(&mut self.engine, &ev)),
            Input::Sb(ev) => Step::Go(self.on_sb(ev)),
            Input::OpenFlow(ev) => {
                self.on_openflow(ev);
                Step::Go(true)
            }
            Input::PinctrlWrites(batch) => {
                self.pinctrl.on_writes(batch);
                Step::Go(true)
            }
            Input::Done(d) => self.on_done(d),
            Input::Request(Some(req)) => self.on_request(req),
            Input::MeterSupport(supported) => Step::Go(self.engine.set_meter_support(supported)),
            Input::Tick => {
                let now = Instant::now();
                if now >= self.next_coverage_sample {
                    self.control.coverage.sample(&crate::coverage::totals());
                    self.next_coverage_sample =
                        now + Duration::from_secs(crate::coverage::SAMPLE_SECONDS);
                }
                Step::Go(true)
            }
        }
    }

    fn on_sb(&mut self, ev: Option<Event>) -> bool {
        let Some(ev) = ev else {
            self.sb = None;
            self.engine.sb_disconnected();
            return true;
        };
        if let (Event::Disconnected { .. }, Some(s)) = (&ev, self.sb.as_mut()) {
            s.count_ssl_failures();
        }
        // A new connection may carry another identity (certificate): what was refused on
        // the old one is tried again.
        if matches!(ev, Event::Connected { .. }) {
            self.refused = Refusals::default();
            self.refused_up = Refusals::default();
        }
        on_sb_event(&mut self.engine, &ev, &mut self.pinctrl.view_dirty)
    }

    fn on_openflow(&mut self, ev: Option<OfEvent>) {
        match ev {
            Some(OfEvent::Connected {
                session,
                fields,
                dump,
            }) => self.engine.of_connected(session, fields, dump),
            Some(OfEvent::Disconnected) => self.engine.of_disconnected(),
            Some(OfEvent::PutDone { seq, result }) => {
                if let Some(at) = self.put_sent_at.take() {
                    tracing::debug!(target: "ofctrl", "put {seq} done in {} us", at.elapsed().as_micros());
                    self.control
                        .stopwatches
                        .add("flow-installation", at.elapsed());
                }
                if let Err(e) = &result {
                    tracing::warn!(target: "ofctrl", "put {seq}: {e}");
                }
                let ok = result.is_ok();
                self.engine.put_done(seq, result);
                if let Some(m) = self.metrics.as_mut() {
                    m.after_put(&self.engine, seq, ok);
                }
            }
            None => {
                self.of = None;
                self.engine.of_disconnected();
            }
        }
    }

    /// Applies the Southbound updates queued behind a transaction's reply.
    fn drain_sb(&mut self) {
        let Some(s) = self.sb.as_mut() else { return };
        let (engine, dirty) = (&mut self.engine, &mut self.pinctrl.view_dirty);
        if drain_events(&mut s.events, |ev| on_sb_event(engine, ev, dirty)) {
            self.sb = None;
            self.engine.sb_disconnected();
        }
    }

    fn on_done(&mut self, d: Option<Done>) -> Step {
        // A failed condition change is asked again by the next run, not at once (the client
        // may stay gone until the loop replaces it).
        let changed = !matches!(d, Some(Done::ConditionFailed(_)));
        match d {
            Some(Done::SbTxn(r) | Done::PinTxn(r)) => {
                // The transaction's own updates came before its reply: apply them before
                // the engine plans again (it would plan from a replica without them:
                // duplicate rows, claims made twice).
                self.drain_sb();
                self.sb_busy = false;
                tracing::debug!(target: "main", "southbound transaction done");
                self.pinctrl.igmp_dirty = true;
                if r.is_err() {
                    self.engine.stats.nodes.sb_writes.abort += 1;
                }
                self.refused.on_result(&r, refused::inputs(&self.engine));
            }
            Some(Done::SbUpTxn(r)) => {
                self.drain_sb();
                self.sb_up_busy = false;
                if r.is_err() {
                    self.engine.stats.nodes.sb_writes.abort += 1;
                }
                // It fails when its claim did (the wait): the port goes up the usual way
                // once the claim is made again.
                match &r {
                    Err(e) if !refused::is_refusal(e) => {
                        tracing::debug!(target: "main", "southbound up transaction: {e}");
                    }
                    _ => self.refused_up.on_result(&r, refused::inputs(&self.engine)),
                }
            }
            Some(Done::OvsTxn(r)) => {
                let engine = &mut self.engine;
                if drain_events(&mut self.ovs_events, |ev| on_ovs_event(engine, ev)) {
                    return Step::Stop;
                }
                self.ovs_busy = false;
                if let Err(e) = r {
                    self.engine.stats.nodes.ovs_writes.abort += 1;
                    tracing::info!(target: "main", "OVS transaction: {e}");
                }
            }
            Some(Done::ConditionSeq(n)) => self.engine.conditions_requested(n),
            Some(Done::ConditionFailed(table)) => self.engine.condition_failed(table),
            Some(Done::Cleanup) | None => return Step::Stop,
        }
        Step::Go(changed)
    }

    fn on_request(&mut self, req: Request) -> Step {
        match commands::handle(&mut self.engine, &mut self.control, &req.command, &req.args) {
            commands::Outcome::Reply(r) => {
                let _ = req.reply.send(r);
            }
            commands::Outcome::ResetClusterState => {
                let _ = req.reply.send(Ok(String::new()));
                if let Some(s) = self.sb.as_ref() {
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
                    self.exit = Some(Exit::Restart);
                    return Step::Stop;
                }
                self.exit = Some(Exit::Cleaned);
                start_cleanup(
                    &self.engine,
                    self.sb.as_ref().map(|s| s.client.clone()),
                    self.ovs_client.clone(),
                    self.done_tx.clone(),
                );
                return Step::Skip;
            }
            commands::Outcome::Inject(po) => {
                let sent = self
                    .pinctrl
                    .task
                    .as_ref()
                    .is_some_and(|p| p.inject.try_send(po).is_ok());
                let _ = req.reply.send(if sent {
                    Ok(String::new())
                } else {
                    Err("OpenFlow channel not ready.".to_owned())
                });
            }
            commands::Outcome::RunNow(text) => {
                let _ = req.reply.send(Ok(text));
                return Step::Go(true);
            }
        }
        Step::Go(false)
    }
}
