//! Inactivity probe and reconnect backoff as small state machines that take
//! the current time as a parameter (sans-IO), so they are tested with
//! virtual time; the session only sleeps until [`Probe::deadline`].

use std::time::{Duration, Instant};

/// What the probe wants done now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeAction {
    /// Nothing yet.
    Wait,
    /// The peer was idle for an interval: send an `echo`.
    SendEcho,
    /// The peer stayed idle for another interval after the echo: disconnect.
    Timeout,
}

/// The inactivity probe of one connection (`ovn-remote-probe-interval`).
#[derive(Debug, Clone)]
pub struct Probe {
    interval: Option<Duration>,
    last_rx: Instant,
    echo_sent: bool,
}

impl Probe {
    /// A probe with `interval` (`None` disables it), starting idle at `now`.
    pub fn new(interval: Option<Duration>, now: Instant) -> Self {
        Self {
            interval,
            last_rx: now,
            echo_sent: false,
        }
    }

    /// Anything was received from the peer.
    pub fn on_receive(&mut self, now: Instant) {
        self.last_rx = now;
        self.echo_sent = false;
    }

    /// When [`Self::poll`] must be called next (`None`: never).
    pub fn deadline(&self) -> Option<Instant> {
        self.interval.map(|i| self.last_rx + i)
    }

    /// Decides what to do at `now`.
    pub fn poll(&mut self, now: Instant) -> ProbeAction {
        match self.deadline() {
            Some(deadline) if now >= deadline => {
                if self.echo_sent {
                    ProbeAction::Timeout
                } else {
                    self.echo_sent = true;
                    // The next deadline counts from the echo.
                    self.last_rx = now;
                    ProbeAction::SendEcho
                }
            }
            _ => ProbeAction::Wait,
        }
    }
}

/// Exponential reconnect backoff between `min` and `max`.
#[derive(Debug, Clone)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    /// Starts at `min`.
    pub fn new(min: Duration, max: Duration) -> Self {
        Self {
            min,
            max: max.max(min),
            next: min,
        }
    }

    /// The delay before the next attempt; doubles the one after, up to `max`.
    pub fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = (self.next * 2).min(self.max);
        delay
    }

    /// A session lasted `lived`: if longer than `max`, start again from `min`.
    pub fn on_session_end(&mut self, lived: Duration) {
        if lived > self.max {
            self.next = self.min;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_sends_echo_then_times_out() {
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        let mut p = Probe::new(Some(5 * s), t0);
        assert_eq!(p.deadline(), Some(t0 + 5 * s));
        assert_eq!(p.poll(t0 + 4 * s), ProbeAction::Wait);
        assert_eq!(p.poll(t0 + 5 * s), ProbeAction::SendEcho);
        assert_eq!(p.deadline(), Some(t0 + 10 * s));
        assert_eq!(p.poll(t0 + 9 * s), ProbeAction::Wait);
        assert_eq!(p.poll(t0 + 10 * s), ProbeAction::Timeout);
    }

    #[test]
    fn traffic_resets_the_probe() {
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        let mut p = Probe::new(Some(5 * s), t0);
        assert_eq!(p.poll(t0 + 5 * s), ProbeAction::SendEcho);
        p.on_receive(t0 + 6 * s);
        assert_eq!(p.poll(t0 + 10 * s), ProbeAction::Wait);
        assert_eq!(p.poll(t0 + 11 * s), ProbeAction::SendEcho);
    }

    #[test]
    fn disabled_probe_never_fires() {
        let t0 = Instant::now();
        let mut p = Probe::new(None, t0);
        assert_eq!(p.deadline(), None);
        assert_eq!(p.poll(t0 + Duration::from_secs(3599)), ProbeAction::Wait);
    }

    #[test]
    fn backoff_doubles_and_resets() {
        let ms = Duration::from_millis;
        let mut b = Backoff::new(ms(100), ms(800));
        let delays: Vec<_> = (0..6).map(|_| b.next_delay()).collect();
        assert_eq!(
            delays,
            [ms(100), ms(200), ms(400), ms(800), ms(800), ms(800)]
        );
        b.on_session_end(ms(500));
        assert_eq!(b.next_delay(), ms(800));
        b.on_session_end(ms(900));
        assert_eq!(b.next_delay(), ms(100));
    }
}
