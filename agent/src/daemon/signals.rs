//! SIGTERM, SIGINT and SIGHUP as a shutdown request the main loop can `select!` on.
//!
//! ovn-controller treats all three as fatal signals: it removes its pidfile and control
//! socket and exits at once, without the Southbound cleanup that `exit` does (so a
//! restart by systemd finds its Chassis record intact).

use tokio::signal::unix::{signal, Signal, SignalKind};

/// A signal that asks the daemon to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TerminatingSignal {
    Term,
    Int,
    Hup,
}

impl TerminatingSignal {
    pub fn number(self) -> i32 {
        match self {
            TerminatingSignal::Term => 15,
            TerminatingSignal::Int => 2,
            TerminatingSignal::Hup => 1,
        }
    }

    /// As `strsignal()` words it, for OVS's "terminating with signal 15 (Terminated)".
    pub fn description(self) -> &'static str {
        match self {
            TerminatingSignal::Term => "Terminated",
            TerminatingSignal::Int => "Interrupt",
            TerminatingSignal::Hup => "Hangup",
        }
    }

    /// The shell's status for a process killed by this signal. OVS re-raises the signal
    /// instead; without unsafe code we cannot restore the default disposition, so we exit
    /// with the number a shell would report.
    pub fn exit_code(self) -> u8 {
        128 + self.number() as u8
    }
}

/// Listens for the terminating signals. Create it inside the tokio runtime, early: from
/// then on these signals no longer kill the process by default.
#[derive(Debug)]
pub struct ShutdownSignals {
    term: Signal,
    int: Signal,
    hup: Signal,
}

impl ShutdownSignals {
    pub fn new() -> std::io::Result<ShutdownSignals> {
        Ok(ShutdownSignals {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    /// Waits for the next terminating signal.
    pub async fn recv(&mut self) -> TerminatingSignal {
        tokio::select! {
            Some(()) = self.term.recv() => TerminatingSignal::Term,
            Some(()) = self.int.recv() => TerminatingSignal::Int,
            Some(()) = self.hup.recv() => TerminatingSignal::Hup,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sighup_to_self_is_received() {
        let mut signals = ShutdownSignals::new().unwrap();
        nix::sys::signal::raise(nix::sys::signal::Signal::SIGHUP).unwrap();
        let received = tokio::time::timeout(std::time::Duration::from_secs(5), signals.recv())
            .await
            .unwrap();
        assert_eq!(received, TerminatingSignal::Hup);
        assert_eq!(received.exit_code(), 129);
        assert_eq!(TerminatingSignal::Term.description(), "Terminated");
    }
}
