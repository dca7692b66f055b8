//! The systemd notification protocol (`sd_notify(3)`, `Type=notify` units).
//!
//! [`Notifier`] is a state machine without I/O: after each turn of the main loop it is shown
//! where the agent is ([`Progress`]) and answers with the messages to send. [`SystemdNotify`]
//! is the thin sender around it that the main loop calls; without `NOTIFY_SOCKET` it does
//! nothing.
//!
//! - `READY=1` once, when the first flow table computed from a complete Southbound view is
//!   installed in ovs-vswitchd (the moment this chassis forwards as configured), not when the
//!   sockets open.
//! - `STATUS=` as the agent progresses (databases, bridge, switch, flow count).
//! - With `WATCHDOG_USEC` set, a liveness message every half period, sent by the loop itself,
//!   so a stuck loop stops them: `WATCHDOG=1` once ready; before that
//!   `EXTEND_TIMEOUT_USEC=` (systemd arms the watchdog only when start-up completes), so a
//!   start that waits for an unreachable Southbound database lasts as long as the loop
//!   turns, and fails if it stops turning.
//! - `STOPPING=1` when the loop ends.

use std::time::{Duration, Instant};

use crate::engine::core::Engine;

/// A flow count that changes while nothing else does is reported at most this often (a busy
/// chassis installs several times a second).
const COUNT_UPDATE_INTERVAL: Duration = Duration::from_secs(1);

/// What the service manager is told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    Ready,
    Status(String),
    Watchdog,
    /// The start-up may take this much longer from now.
    ExtendTimeout(Duration),
    Stopping,
}

/// Where the agent is, as the main loop sees it after a turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progress<'a> {
    pub ovs_connected: bool,
    /// Why the local OVS configuration is unusable (no `ovn-remote`, no system-id, ...).
    pub config_problem: Option<String>,
    /// The integration bridge's name (from the configuration) and whether it exists.
    pub bridge: Option<(&'a str, bool)>,
    pub sb_remote: Option<&'a str>,
    pub sb_connected: bool,
    /// The OpenFlow connection to the integration bridge is up.
    pub switch_connected: bool,
    /// A flow table computed from a complete Southbound view was installed.
    pub first_table_installed: bool,
    pub flows: usize,
}

impl<'a> Progress<'a> {
    /// The engine's state after a turn.
    pub fn of(engine: &'a Engine) -> Progress<'a> {
        let cfg = engine.cfg.as_ref();
        Progress {
            ovs_connected: engine.ovs_connected,
            config_problem: engine.cfg_error.as_ref().map(ToString::to_string),
            bridge: cfg.map(|c| {
                let exists =
                    crate::engine::binding::bridge(&engine.inputs.ovs, &c.bridge).is_some();
                (c.bridge.as_str(), exists)
            }),
            sb_remote: cfg.map(|c| c.remote.as_str()),
            sb_connected: engine.sb_connected,
            switch_connected: engine.install.of_session.is_some(),
            first_table_installed: engine.initial_sync_done,
            flows: engine.flows.len(),
        }
    }
}

/// What the agent waits for, first unmet condition first.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    OvsDatabase,
    Config(String),
    Bridge(String),
    Southbound(String),
    Switch(String),
    FirstTable,
    Running,
}

impl Phase {
    fn of(p: &Progress<'_>) -> Phase {
        let bridge = p.bridge.map_or("", |(name, _)| name).to_owned();
        if !p.ovs_connected {
            Phase::OvsDatabase
        } else if let Some(problem) = &p.config_problem {
            Phase::Config(problem.clone())
        } else if !p.bridge.is_some_and(|(_, exists)| exists) {
            Phase::Bridge(bridge)
        } else if !p.sb_connected {
            Phase::Southbound(p.sb_remote.unwrap_or_default().to_owned())
        } else if !p.switch_connected {
            Phase::Switch(bridge)
        } else if !p.first_table_installed {
            Phase::FirstTable
        } else {
            Phase::Running
        }
    }

    /// The `STATUS=` text; `ready`: a flow table is installed (a lost connection is then a
    /// reconnection, and the flows stay in the switch meanwhile).
    fn text(&self, ovs_remote: &str, ready: bool, flows: usize) -> String {
        let again = if ready { "reconnecting" } else { "connecting" };
        let waiting = match self {
            Phase::OvsDatabase => format!("{again} to the OVS database {ovs_remote}"),
            Phase::Config(problem) => format!("waiting for the OVS configuration: {problem}"),
            Phase::Bridge(name) => format!("waiting for the integration bridge {name}"),
            Phase::Southbound(remote) => format!("{again} to the southbound database {remote}"),
            Phase::Switch(name) => format!("{again} to the switch on {name}"),
            Phase::FirstTable => "installing the first flow table".to_owned(),
            Phase::Running => return format!("flows installed: {flows}"),
        };
        if ready {
            format!("{waiting} (flows installed: {flows})")
        } else {
            waiting
        }
    }
}

/// The notification state machine: [`Progress`] in, [`Message`]s out.
#[derive(Debug)]
pub struct Notifier {
    ovs_remote: String,
    /// `WATCHDOG_USEC`, when the service manager watches the agent.
    watchdog: Option<Duration>,
    ready: bool,
    stopping: bool,
    /// The status last sent, its phase and flow count, and when.
    status: Option<(Phase, usize, Instant)>,
    last_liveness: Option<Instant>,
}

impl Notifier {
    pub fn new(ovs_remote: &str, watchdog: Option<Duration>) -> Notifier {
        Notifier {
            ovs_remote: ovs_remote.to_owned(),
            watchdog: watchdog.filter(|w| !w.is_zero()),
            ready: false,
            stopping: false,
            status: None,
            last_liveness: None,
        }
    }

    /// How often the loop must turn for the liveness messages to arrive in time.
    pub fn liveness_interval(&self) -> Option<Duration> {
        self.watchdog.map(|w| w / 2)
    }

    /// The messages for the state after a turn of the main loop at `now`.
    pub fn after_turn(&mut self, progress: &Progress<'_>, now: Instant) -> Vec<Message> {
        let mut out = Vec::new();
        if self.stopping {
            return out;
        }
        let became_ready = !self.ready && progress.first_table_installed;
        if became_ready {
            self.ready = true;
            out.push(Message::Ready);
        }
        let phase = Phase::of(progress);
        let send_status = match &self.status {
            None => true,
            Some((last, count, at)) => {
                became_ready
                    || *last != phase
                    || (*count != progress.flows
                        && now.duration_since(*at) >= COUNT_UPDATE_INTERVAL)
            }
        };
        if send_status {
            out.push(Message::Status(phase.text(
                &self.ovs_remote,
                self.ready,
                progress.flows,
            )));
            self.status = Some((phase, progress.flows, now));
        }
        if let (Some(watchdog), Some(interval)) = (self.watchdog, self.liveness_interval()) {
            if self
                .last_liveness
                .is_none_or(|at| now.duration_since(at) >= interval)
            {
                self.last_liveness = Some(now);
                out.push(if self.ready {
                    Message::Watchdog
                } else {
                    Message::ExtendTimeout(watchdog)
                });
            }
        }
        out
    }

    /// The messages for the end of the loop (once).
    pub fn stopping(&mut self) -> Vec<Message> {
        if std::mem::replace(&mut self.stopping, true) {
            return Vec::new();
        }
        vec![Message::Stopping, Message::Status("stopping".to_owned())]
    }
}

/// The sender: a [`Notifier`] when `NOTIFY_SOCKET` is set, nothing otherwise.
#[derive(Debug)]
pub struct SystemdNotify {
    notifier: Option<Notifier>,
    send_failed: bool,
}

impl SystemdNotify {
    /// From the environment the service manager gave (`NOTIFY_SOCKET`, `WATCHDOG_USEC` and
    /// `WATCHDOG_PID`); `ovs_remote` is named in the status while it connects.
    pub fn from_env(ovs_remote: &str) -> SystemdNotify {
        let notifier = std::env::var_os("NOTIFY_SOCKET")
            .filter(|s| !s.is_empty())
            .map(|_| Notifier::new(ovs_remote, sd_notify::watchdog_enabled()));
        if let Some(interval) = notifier.as_ref().and_then(Notifier::liveness_interval) {
            tracing::debug!(target: "main", "service manager watchdog: a ping every {} ms", interval.as_millis());
        }
        SystemdNotify {
            notifier,
            send_failed: false,
        }
    }

    /// After each turn of the main loop.
    pub fn after_turn(&mut self, engine: &Engine) {
        if let Some(n) = self.notifier.as_mut() {
            let messages = n.after_turn(&Progress::of(engine), Instant::now());
            self.send(&messages);
        }
    }

    /// When the main loop ends.
    pub fn stopping(&mut self) {
        if let Some(n) = self.notifier.as_mut() {
            let messages = n.stopping();
            self.send(&messages);
        }
    }

    fn send(&mut self, messages: &[Message]) {
        if messages.is_empty() {
            return;
        }
        let states: Vec<sd_notify::NotifyState<'_>> = messages
            .iter()
            .map(|m| match m {
                Message::Ready => sd_notify::NotifyState::Ready,
                Message::Status(text) => sd_notify::NotifyState::Status(text),
                Message::Watchdog => sd_notify::NotifyState::Watchdog,
                Message::ExtendTimeout(d) => sd_notify::NotifyState::ExtendTimeoutUsec(
                    u32::try_from(d.as_micros()).unwrap_or(u32::MAX),
                ),
                Message::Stopping => sd_notify::NotifyState::Stopping,
            })
            .collect();
        match sd_notify::notify(&states) {
            Ok(()) => self.send_failed = false,
            // Said once per outage: the service manager may be restarting.
            Err(e) if !std::mem::replace(&mut self.send_failed, true) => {
                tracing::warn!(target: "main", "cannot notify the service manager: {e}");
            }
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connected<'a>() -> Progress<'a> {
        Progress {
            ovs_connected: true,
            config_problem: None,
            bridge: Some(("br-int", true)),
            sb_remote: Some("tcp:10.0.0.1:6642"),
            sb_connected: true,
            switch_connected: true,
            first_table_installed: false,
            flows: 0,
        }
    }

    fn statuses(messages: &[Message]) -> Vec<&str> {
        messages
            .iter()
            .filter_map(|m| match m {
                Message::Status(s) => Some(s.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn status_follows_what_the_agent_waits_for_and_ready_comes_with_the_first_table() {
        let mut n = Notifier::new("unix:/run/openvswitch/db.sock", None);
        let t = Instant::now();
        let mut p = connected();
        p.ovs_connected = false;
        assert_eq!(
            n.after_turn(&p, t),
            [Message::Status(
                "connecting to the OVS database unix:/run/openvswitch/db.sock".into()
            )]
        );
        assert!(n.after_turn(&p, t).is_empty(), "nothing new, nothing sent");
        p.ovs_connected = true;
        p.config_problem = Some("external_ids:ovn-remote is not set".into());
        p.bridge = None;
        assert_eq!(
            statuses(&n.after_turn(&p, t)),
            ["waiting for the OVS configuration: external_ids:ovn-remote is not set"]
        );
        p.config_problem = None;
        p.bridge = Some(("br-int", false));
        assert_eq!(
            statuses(&n.after_turn(&p, t)),
            ["waiting for the integration bridge br-int"]
        );
        p.bridge = Some(("br-int", true));
        p.sb_connected = false;
        assert_eq!(
            statuses(&n.after_turn(&p, t)),
            ["connecting to the southbound database tcp:10.0.0.1:6642"]
        );
        p.sb_connected = true;
        p.switch_connected = false;
        assert_eq!(
            statuses(&n.after_turn(&p, t)),
            ["connecting to the switch on br-int"]
        );
        p.switch_connected = true;
        p.flows = 120;
        let m = n.after_turn(&p, t);
        assert_eq!(statuses(&m), ["installing the first flow table"]);
        assert!(
            !m.contains(&Message::Ready),
            "flows computed are not flows installed"
        );
        p.first_table_installed = true;
        assert_eq!(
            n.after_turn(&p, t),
            [
                Message::Ready,
                Message::Status("flows installed: 120".into())
            ]
        );
        p.sb_connected = false;
        let m = n.after_turn(&p, t);
        assert_eq!(
            statuses(&m),
            ["reconnecting to the southbound database tcp:10.0.0.1:6642 (flows installed: 120)"]
        );
        assert!(!m.contains(&Message::Ready), "READY=1 is sent once");
        p.sb_connected = true;
        assert_eq!(statuses(&n.after_turn(&p, t)), ["flows installed: 120"]);
    }

    #[test]
    fn a_table_installed_while_a_connection_is_down_is_still_ready() {
        let mut n = Notifier::new("unix:db.sock", None);
        let mut p = connected();
        p.first_table_installed = true;
        p.switch_connected = false;
        p.flows = 7;
        assert_eq!(
            n.after_turn(&p, Instant::now()),
            [
                Message::Ready,
                Message::Status("reconnecting to the switch on br-int (flows installed: 7)".into())
            ]
        );
    }

    #[test]
    fn a_changing_flow_count_is_reported_at_most_once_a_second() {
        let mut n = Notifier::new("unix:db.sock", None);
        let t = Instant::now();
        let mut p = connected();
        p.first_table_installed = true;
        p.flows = 10;
        n.after_turn(&p, t);
        p.flows = 11;
        assert!(n.after_turn(&p, t + Duration::from_millis(300)).is_empty());
        p.flows = 12;
        assert!(n.after_turn(&p, t + Duration::from_millis(900)).is_empty());
        assert_eq!(
            n.after_turn(&p, t + Duration::from_secs(1)),
            [Message::Status("flows installed: 12".into())]
        );
        // A change of phase is not held back.
        p.ovs_connected = false;
        assert_eq!(
            statuses(&n.after_turn(&p, t + Duration::from_millis(1100))),
            ["reconnecting to the OVS database unix:db.sock (flows installed: 12)"]
        );
    }

    #[test]
    fn liveness_every_half_period_extends_the_start_then_feeds_the_watchdog() {
        let mut n = Notifier::new("unix:db.sock", Some(Duration::from_secs(4)));
        assert_eq!(n.liveness_interval(), Some(Duration::from_secs(2)));
        let t = Instant::now();
        let mut p = connected();
        p.sb_connected = false;
        let first = n.after_turn(&p, t);
        assert!(first.contains(&Message::ExtendTimeout(Duration::from_secs(4))));
        assert!(!first.contains(&Message::Watchdog));
        assert!(n.after_turn(&p, t + Duration::from_millis(1999)).is_empty());
        assert_eq!(
            n.after_turn(&p, t + Duration::from_secs(2)),
            [Message::ExtendTimeout(Duration::from_secs(4))]
        );
        p.sb_connected = true;
        p.first_table_installed = true;
        let ready = n.after_turn(&p, t + Duration::from_millis(2500));
        assert_eq!(ready[0], Message::Ready);
        assert!(
            !ready.contains(&Message::Watchdog),
            "the last ping is recent enough"
        );
        assert_eq!(
            n.after_turn(&p, t + Duration::from_secs(4)),
            [Message::Watchdog]
        );
        // No turn, no ping: the messages come from the loop, not from a clock.
        assert_eq!(
            n.after_turn(&p, t + Duration::from_mins(1)),
            [Message::Watchdog]
        );
    }

    #[test]
    fn without_a_watchdog_there_are_no_pings() {
        let mut n = Notifier::new("unix:db.sock", Some(Duration::ZERO));
        assert_eq!(n.liveness_interval(), None);
        let t = Instant::now();
        let mut p = connected();
        p.first_table_installed = true;
        n.after_turn(&p, t);
        assert!(n.after_turn(&p, t + Duration::from_secs(100)).is_empty());
    }

    #[test]
    fn stopping_is_said_once_and_ends_the_conversation() {
        let mut n = Notifier::new("unix:db.sock", Some(Duration::from_secs(2)));
        let p = connected();
        n.after_turn(&p, Instant::now());
        assert_eq!(
            n.stopping(),
            [Message::Stopping, Message::Status("stopping".into())]
        );
        assert!(n.stopping().is_empty());
        assert!(n
            .after_turn(&p, Instant::now() + Duration::from_secs(10))
            .is_empty());
    }
}
