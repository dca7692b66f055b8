//! Counters of the pinctrl task (`pinctrl/show-stats`) and the per-opcode rate limit that
//! keeps a flood of packet-ins from taking the task's time and memory.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::handlers::opcode;

const SLOTS: usize = opcode::COUNT + 1;

fn slot(op: u32) -> usize {
    usize::try_from(op).map_or(opcode::COUNT, |i| i.min(opcode::COUNT))
}

fn zeros() -> [AtomicU64; SLOTS] {
    std::array::from_fn(|_| AtomicU64::new(0))
}

/// Shared between the task (writer) and the control socket (reader).
#[derive(Debug)]
pub struct Stats {
    pub received: [AtomicU64; SLOTS],
    pub handled: [AtomicU64; SLOTS],
    pub skipped: [AtomicU64; SLOTS],
    pub rate_dropped: [AtomicU64; SLOTS],
    pub not_action: AtomicU64,
    /// Packet-ins whose handler panicked (each skipped, the task went on).
    pub panics: AtomicU64,
    pub buffered: AtomicU64,
    pub buffer_drops: AtomicU64,
    pub buffer_expired: AtomicU64,
    pub buffer_sent: AtomicU64,
    pub binding_drops: AtomicU64,
    pub bindings_requested: AtomicU64,
    pub sessions: AtomicU64,
    /// Gratuitous ARPs / RARPs sent.
    pub announcements_sent: AtomicU64,
    /// Periodic router advertisements sent.
    pub ras_sent: AtomicU64,
    /// IGMP / MLD queries sent by the querier.
    pub igmp_queries_sent: AtomicU64,
    /// Multicast groups in the snooping tables (a gauge).
    pub igmp_groups: AtomicU64,
}

impl Default for Stats {
    fn default() -> Self {
        Self {
            received: zeros(),
            handled: zeros(),
            skipped: zeros(),
            rate_dropped: zeros(),
            not_action: AtomicU64::new(0),
            panics: AtomicU64::new(0),
            buffered: AtomicU64::new(0),
            buffer_drops: AtomicU64::new(0),
            buffer_expired: AtomicU64::new(0),
            buffer_sent: AtomicU64::new(0),
            binding_drops: AtomicU64::new(0),
            bindings_requested: AtomicU64::new(0),
            sessions: AtomicU64::new(0),
            announcements_sent: AtomicU64::new(0),
            ras_sent: AtomicU64::new(0),
            igmp_queries_sent: AtomicU64::new(0),
            igmp_groups: AtomicU64::new(0),
        }
    }
}

pub fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

fn get(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

impl Stats {
    pub fn count(&self, table: &[AtomicU64; SLOTS], op: u32) {
        bump(&table[slot(op)], 1);
    }

    /// `pinctrl/show-stats`.
    pub fn show(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "sessions {}, packet-ins not from an action {}",
            get(&self.sessions),
            get(&self.not_action)
        );
        if get(&self.panics) > 0 {
            let _ = writeln!(out, "handler panics {}", get(&self.panics));
        }
        let _ = writeln!(
            out,
            "buffered packets {} (dropped {}, expired {}, sent {}), MAC bindings requested {} (dropped {})",
            get(&self.buffered),
            get(&self.buffer_drops),
            get(&self.buffer_expired),
            get(&self.buffer_sent),
            get(&self.bindings_requested),
            get(&self.binding_drops)
        );
        let _ = writeln!(
            out,
            "gratuitous ARPs sent {}",
            get(&self.announcements_sent)
        );
        if get(&self.ras_sent) > 0 {
            let _ = writeln!(
                out,
                "periodic router advertisements sent {}",
                get(&self.ras_sent)
            );
        }
        if get(&self.igmp_queries_sent) > 0 || get(&self.igmp_groups) > 0 {
            let _ = writeln!(
                out,
                "multicast groups snooped {}, IGMP/MLD queries sent {}",
                get(&self.igmp_groups),
                get(&self.igmp_queries_sent)
            );
        }
        for i in 0..SLOTS {
            let received = get(&self.received[i]);
            if received == 0 {
                continue;
            }
            let name = if i == opcode::COUNT {
                "unknown"
            } else {
                opcode::name(i as u32)
            };
            let _ = writeln!(
                out,
                "{name}: received {received}, handled {}, skipped {}, rate-limited {}",
                get(&self.handled[i]),
                get(&self.skipped[i]),
                get(&self.rate_dropped[i])
            );
        }
        out
    }
}

/// A token bucket per opcode: `rate` packet-ins a second, bursts of `burst`.
#[derive(Debug)]
pub struct OpcodeLimits {
    rate: f64,
    burst: f64,
    buckets: [(f64, Option<Instant>); SLOTS],
}

impl OpcodeLimits {
    pub fn new(rate: u32, burst: u32) -> Self {
        Self {
            rate: f64::from(rate),
            burst: f64::from(burst),
            buckets: [(f64::from(burst), None); SLOTS],
        }
    }

    /// Whether one more packet-in of `op` may be handled at `now`.
    pub fn admit(&mut self, op: u32, now: Instant) -> bool {
        let (tokens, last) = &mut self.buckets[slot(op)];
        if let Some(l) = *last {
            *tokens = (*tokens + now.saturating_duration_since(l).as_secs_f64() * self.rate)
                .min(self.burst);
        }
        *last = Some(now);
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn each_opcode_has_its_own_bucket() {
        let t0 = Instant::now();
        let mut l = OpcodeLimits::new(10, 3);
        assert_eq!((0..5).filter(|_| l.admit(0, t0)).count(), 3);
        assert!(l.admit(1, t0), "another opcode is not limited by the first");
        assert!(!l.admit(0, t0 + Duration::from_millis(50)));
        assert!(l.admit(0, t0 + Duration::from_millis(150)));
        assert!(l.admit(u32::MAX, t0), "unknown opcodes share one bucket");
    }

    #[test]
    fn show_lists_the_opcodes_seen() {
        let s = Stats::default();
        s.count(&s.received, opcode::ARP);
        s.count(&s.handled, opcode::ARP);
        let text = s.show();
        assert!(
            text.contains("arp: received 1, handled 1, skipped 0, rate-limited 0"),
            "{text}"
        );
        assert!(!text.contains("put_arp"), "{text}");
    }
}
