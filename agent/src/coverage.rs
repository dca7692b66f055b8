//! Coverage counters, as OVS's `coverage/show` and `coverage/read-counter` present them:
//! named event totals, with the average rates over the last 5 seconds, minute and hour.
//!
//! The names are ovn-controller's where the agent does the same work (`lflow_run`,
//! `consider_logical_flow`, ...), so scripts reading them keep working. Counters the agent
//! registers but has no event for yet stay at zero ("events never hit").

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

/// One event counter.
#[derive(Debug)]
pub struct Counter {
    name: &'static str,
    total: AtomicU64,
}

impl Counter {
    pub const fn new(name: &'static str) -> Self {
        Self {
            name,
            total: AtomicU64::new(0),
        }
    }

    pub fn inc(&self) {
        self.add(1);
    }

    pub fn add(&self, n: u64) {
        self.total.fetch_add(n, Ordering::Relaxed);
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }
}

macro_rules! counters {
    ($($ident:ident = $name:literal;)*) => {
        $(pub static $ident: Counter = Counter::new($name);)*
        /// Every counter, in the order `coverage/show` lists them.
        pub static ALL: &[&Counter] = &[$(&$ident),*];
    };
}

counters! {
    LFLOW_CACHE_FLUSH = "lflow_cache_flush";
    LFLOW_CONJ_ALLOC = "lflow_conj_alloc";
    LFLOW_CONJ_FREE = "lflow_conj_free";
    LFLOW_CONJ_FREE_UNEXPECTED = "lflow_conj_free_unexpected";
    LFLOW_CONJ_CONFLICT = "lflow_conj_conflict";
    LFLOW_RUN = "lflow_run";
    CONSIDER_LOGICAL_FLOW = "consider_logical_flow";
    PHYSICAL_RUN = "physical_run";
    PINCTRL_TOTAL_PIN_PKTS = "pinctrl_total_pin_pkts";
    PINCTRL_DROP_PUT_MAC_BINDING = "pinctrl_drop_put_mac_binding";
    PINCTRL_DROP_BUFFERED_PACKETS_MAP = "pinctrl_drop_buffered_packets_map";
    PINCTRL_DROP_RATE_LIMITED = "pinctrl_drop_rate_limited";
    PINCTRL_DROP_CONTROLLER_EVENT = "pinctrl_drop_controller_event";
    PINCTRL_DROP_PUT_VPORT_BINDING = "pinctrl_drop_put_vport_binding";
    PINCTRL_DROP_ACTIVATED_PORT = "pinctrl_drop_activated_port";
    PINCTRL_HANDLER_PANIC = "pinctrl_handler_panic";
    OFCTRL_PUT = "ofctrl_put";
    OFCTRL_FLOW_MOD = "ofctrl_flow_mod";
    BINDING_CLAIM = "binding_claim";
    BINDING_RELEASE = "binding_release";
    SB_TXN = "sb_txn";
    OVS_TXN = "ovs_txn";
    UNIXCTL_RECEIVED = "unixctl_received";
    UNIXCTL_REPLIED = "unixctl_replied";
    SB_TXN_REFUSED = "sb_txn_refused";
    SB_TXN_HELD = "sb_txn_held";
    SB_SSL_FAILURES = "sb_ssl_failures";
}

/// The counter named `name`.
pub fn find(name: &str) -> Option<&'static Counter> {
    ALL.iter().copied().find(|c| c.name == name)
}

/// `coverage/read-counter NAME`.
pub fn read_counter(name: &str) -> Result<String, String> {
    find(name)
        .map(|c| format!("{}\n", c.total()))
        .ok_or_else(|| "No such counter".to_owned())
}

/// Seconds between samples (OVS's coverage run interval).
pub const SAMPLE_SECONDS: u64 = 5;
/// Samples per minute and minutes per hour kept for the rates.
const PER_MINUTE: usize = 12;
const PER_HOUR: usize = 60;

/// The per-counter history the rates are computed from: the increments of the last 12
/// five-second samples, and of the last 60 minutes.
#[derive(Clone, Debug, Default)]
pub struct History {
    last_totals: Vec<u64>,
    /// `minute[i][c]`: counter c's increment in sample i (ring of [`PER_MINUTE`]).
    minute: Vec<Vec<u64>>,
    /// `hour[i][c]`: counter c's increment in minute i (ring of [`PER_HOUR`]).
    hour: Vec<Vec<u64>>,
    samples: usize,
}

impl History {
    /// Takes one sample of `totals` (one per counter, in [`ALL`] order); called every
    /// [`SAMPLE_SECONDS`].
    pub fn sample(&mut self, totals: &[u64]) {
        let n = totals.len();
        if self.minute.is_empty() {
            self.minute = vec![vec![0; n]; PER_MINUTE];
            self.hour = vec![vec![0; n]; PER_HOUR];
            self.last_totals = vec![0; n];
        }
        let slot = self.samples % PER_MINUTE;
        for (c, total) in totals.iter().enumerate() {
            self.minute[slot][c] = total.saturating_sub(self.last_totals[c]);
        }
        self.last_totals = totals.to_vec();
        self.samples += 1;
        if self.samples.is_multiple_of(PER_MINUTE) {
            let minute = (self.samples / PER_MINUTE - 1) % PER_HOUR;
            for c in 0..n {
                self.hour[minute][c] = self.minute.iter().map(|s| s[c]).sum();
            }
        }
    }

    /// The average rates per second of counter `c` over the last sample, minute and hour.
    fn rates(&self, c: usize) -> (f64, f64, f64) {
        if self.samples == 0 {
            return (0.0, 0.0, 0.0);
        }
        let last = self.minute[(self.samples - 1) % PER_MINUTE][c];
        let minute: u64 = self.minute.iter().map(|s| s[c]).sum();
        let hour: u64 = self.hour.iter().map(|s| s[c]).sum();
        #[allow(clippy::cast_precision_loss)]
        (
            last as f64 / SAMPLE_SECONDS as f64,
            minute as f64 / 60.0,
            hour as f64 / 3600.0,
        )
    }

    /// `coverage/show`, for the counters `counters` with `totals` now.
    pub fn show(&self, counters: &[&Counter], totals: &[u64]) -> String {
        let mut out = format!(
            "Event coverage, avg rate over last: {SAMPLE_SECONDS} seconds, last minute, last hour,  hash={:08x}:\n",
            groups_hash(counters, totals)
        );
        let mut never = 0;
        for (c, (counter, total)) in counters.iter().zip(totals).enumerate() {
            if *total == 0 {
                never += 1;
                continue;
            }
            let (second, minute, hour) = if c < self.last_totals.len() {
                self.rates(c)
            } else {
                (0.0, 0.0, 0.0)
            };
            let _ = writeln!(
                out,
                "{:<24} {second:5.1}/sec {minute:9.3}/sec {hour:13.4}/sec   total: {total}",
                counter.name
            );
        }
        let _ = writeln!(out, "{never} events never hit");
        out
    }
}

/// The totals of every counter, in [`ALL`] order.
pub fn totals() -> Vec<u64> {
    ALL.iter().map(|c| c.total()).collect()
}

/// A hash of which counters share a total (OVS prints one so that two reports can be told
/// apart at a glance; its value is ours, only its form is OVS's).
fn groups_hash(counters: &[&Counter], totals: &[u64]) -> u32 {
    let mut hit: Vec<(u64, &str)> = counters
        .iter()
        .zip(totals)
        .filter(|(_, t)| **t > 0)
        .map(|(c, t)| (*t, c.name))
        .collect();
    hit.sort_unstable_by(|a, b| b.cmp(a));
    let mut h = crate::stable_hash::Fnv::default();
    for (total, name) in hit {
        std::hash::Hasher::write_u64(&mut h, total);
        std::hash::Hasher::write(&mut h, name.as_bytes());
    }
    #[allow(clippy::cast_possible_truncation)]
    let v = std::hash::Hasher::finish(&h) as u32;
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    static A: Counter = Counter::new("test_a");
    static B: Counter = Counter::new("test_b");

    #[test]
    fn show_has_ovs_shape_and_rates() {
        let counters = [&A, &B];
        let mut h = History::default();
        h.sample(&[0, 0]);
        // 10 events in the last 5 s.
        h.sample(&[10, 0]);
        let text = h.show(&counters, &[10, 0]);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with(
            "Event coverage, avg rate over last: 5 seconds, last minute, last hour,  hash="
        ));
        assert!(lines[0].ends_with(':'));
        assert_eq!(
            lines[1],
            "test_a                     2.0/sec     0.167/sec        0.0000/sec   total: 10"
        );
        assert_eq!(lines[2], "1 events never hit");
        assert_eq!(lines.len(), 3);
    }

    #[test]
    fn hour_rate_follows_full_minutes() {
        let mut h = History::default();
        for i in 0..=12 {
            h.sample(&[i * 6]);
        }
        let (second, minute, hour) = h.rates(0);
        assert!((second - 1.2).abs() < 1e-9);
        assert!((minute - 72.0 / 60.0).abs() < 1e-9);
        // The first full minute: 66 events counted (samples 1..=11 plus sample 0's 0).
        assert!((hour - 66.0 / 3600.0).abs() < 1e-9, "{hour}");
    }

    #[test]
    fn read_counter_answers_as_ovs() {
        assert_eq!(
            read_counter("no_such_counter"),
            Err("No such counter".into())
        );
        LFLOW_RUN.add(0);
        assert!(read_counter("lflow_run").unwrap().ends_with('\n'));
    }
}
