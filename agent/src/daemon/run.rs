//! The daemon's main loop: one task owns the [`Engine`](crate::engine::core::Engine); the
//! database clients, the OpenFlow connection, pinctrl and the control socket talk to it over
//! channels. Each turn takes one input and hands it to its source's handler
//! (`main_loop.rs`), then runs the engine once and starts what it asks for (`turn.rs`).

use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::main_loop::{Input, MainLoop, Step};

pub use super::loop_config::{DaemonError, Exit, LoopConfig, Request};

/// The longest queued input holds back an engine run (see the loop).
const MAX_RUN_DEFERRAL: Duration = Duration::from_millis(20);

/// Runs until `exit` or `shutdown`; `ready` is called once the agent serves requests and
/// has started connecting (for `--detach`).
pub async fn run(
    cfg: LoopConfig,
    mut requests: mpsc::Receiver<Request>,
    mut shutdown: mpsc::Receiver<()>,
    ready: impl FnOnce(),
) -> Result<Exit, DaemonError> {
    let mut m = MainLoop::new(cfg)?;
    // The tick also keeps the loop turning for the service manager's watchdog (notify.rs).
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    ready();
    loop {
        let input = tokio::select! {
            ev = m.ovs_events.recv() => Input::Ovs(ev),
            ev = async { match m.sb.as_mut() { Some(s) => s.events.recv().await, None => std::future::pending().await } } => Input::Sb(ev),
            ev = async { match m.of.as_mut() { Some((_, c)) => c.events.recv().await, None => std::future::pending().await } } => Input::OpenFlow(ev),
            batch = async { match m.pinctrl.task.as_mut() { Some(p) => p.writes.recv().await, None => std::future::pending().await } } => Input::PinctrlWrites(batch),
            d = m.done_rx.recv() => Input::Done(d),
            req = requests.recv() => Input::Request(req),
            _ = shutdown.recv() => Input::Shutdown,
            _ = tick.tick() => Input::Tick,
            supported = async {
                let Some((_, p)) = m.features.as_mut() else {
                    return std::future::pending().await;
                };
                if p.meter_support.changed().await.is_err() {
                    // The probe ended: nothing more will come from it.
                    return std::future::pending().await;
                }
                *p.meter_support.borrow_and_update()
            } => Input::MeterSupport(supported),
        };
        let changed = match m.on_input(input) {
            Step::Go(changed) => changed,
            Step::Skip => continue,
            Step::Stop => break,
        };
        m.service_manager.after_turn(&m.engine);
        if let Some(r) = &m.cfg.appctl_replies {
            r.set_release(m.engine.layout().dialect);
        }
        // debug/pause: nothing but the control socket until debug/resume (updates still
        // reach the replicas, and are processed on resume).
        // (A run held back below is still due.)
        if m.exit.is_some() || !(changed || m.run_deferred_since.is_some()) || m.control.paused {
            continue;
        }
        // Input already queued (a transaction's reply right behind its update, a burst of
        // updates) is taken before the engine runs: one run answers all of it. Bounded, so
        // that a steady stream of input cannot hold the engine off.
        let deferred_since = *m.run_deferred_since.get_or_insert_with(Instant::now);
        if m.input_queued() && deferred_since.elapsed() < MAX_RUN_DEFERRAL {
            continue;
        }
        m.run_deferred_since = None;
        m.follow_config().await;
        let now = Instant::now();
        let put_sent = m.run_engine().await;
        // pinctrl's snapshot and plans wait while more input is queued: the engine answers
        // that input first (a port waiting to go up waits for nothing else).
        let pin_due = !m.input_queued();
        let pin_sent = m.pinctrl.after_run(
            &m.engine,
            pin_due,
            m.sb.as_ref(),
            &mut m.sb_busy,
            &m.done_tx,
        );
        if pin_sent {
            m.engine.stats.nodes.sb_writes.compute += 1;
        }
        if let Some(metrics) = m.metrics.as_mut() {
            metrics.after_run(&m.engine, put_sent, now, &m.control.stopwatches);
        }
    }
    m.service_manager.stopping();
    if let Some(s) = m.sb.take() {
        s.client.shutdown().await;
    }
    m.ovs_client.shutdown().await;
    Ok(m.exit.unwrap_or(Exit::Restart))
}
