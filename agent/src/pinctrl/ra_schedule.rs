//! When periodic router advertisements are due, without I/O: times are milliseconds on a
//! clock the caller keeps (the driver's, or a test's virtual one), randomness comes from
//! the caller. The schedule is ovn-controller's: a port's next RA is `min_interval` plus
//! a uniform random part of `max_interval - min_interval` after the previous one (or
//! after the port appeared, or after its intervals changed).

use std::collections::BTreeMap;

/// A source of `0..n` (the caller's random numbers); `n` is never 0.
pub trait Below {
    fn below(&mut self, n: u32) -> u32;
}

/// A small seeded generator (SplitMix64): the schedule only needs chassis to differ.
#[derive(Debug, Clone)]
pub struct Jitter(u64);

impl Jitter {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// Seeded from the clock.
    pub fn from_clock() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Self(nanos ^ (u64::from(std::process::id()) << 32))
    }
}

impl Below for Jitter {
    fn below(&mut self, n: u32) -> u32 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z % u64::from(n)) as u32
    }
}

/// The time of the next RA after `now_ms` for intervals of `min_s`..`max_s` seconds.
pub fn next_announce(now_ms: u64, min_s: i64, max_s: i64, rng: &mut impl Below) -> u64 {
    let min_ms = min_s.saturating_mul(1000);
    let span = max_s.saturating_mul(1000).saturating_sub(min_ms);
    // ovn-controller takes the span as a 32-bit unsigned number; an empty one adds nothing.
    let span = u32::try_from(span.max(0)).unwrap_or(u32::MAX);
    let random = if span == 0 { 0 } else { rng.below(span) };
    now_ms
        .saturating_add_signed(min_ms)
        .saturating_add(u64::from(random))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    at_ms: u64,
    intervals: (i64, i64),
}

/// The next RA time of every port that sends them.
#[derive(Debug, Clone, Default)]
pub struct RaSchedule {
    next: BTreeMap<String, Entry>,
}

impl RaSchedule {
    /// Follows the ports that send RAs now, with their (min, max) intervals in seconds: a
    /// new port's first RA comes one interval from `now_ms`, a port whose intervals
    /// changed is rescheduled, a port that is gone is forgotten, others keep their time.
    pub fn update<'a>(
        &mut self,
        ports: impl IntoIterator<Item = (&'a str, (i64, i64))>,
        now_ms: u64,
        rng: &mut impl Below,
    ) {
        let mut next = BTreeMap::new();
        for (port, intervals) in ports {
            let entry = match self.next.remove(port) {
                Some(e) if e.intervals == intervals => e,
                _ => Entry {
                    at_ms: next_announce(now_ms, intervals.0, intervals.1, rng),
                    intervals,
                },
            };
            next.insert(port.to_owned(), entry);
        }
        self.next = next;
    }

    /// When the next RA of any port is due.
    pub fn next_due(&self) -> Option<u64> {
        self.next.values().map(|e| e.at_ms).min()
    }

    /// The ports whose RA is due at `now_ms`, each rescheduled one interval from now.
    pub fn take_due(&mut self, now_ms: u64, rng: &mut impl Below) -> Vec<String> {
        let mut due = Vec::new();
        for (port, e) in &mut self.next {
            if e.at_ms <= now_ms {
                e.at_ms = next_announce(now_ms, e.intervals.0, e.intervals.1, rng);
                due.push(port.clone());
            }
        }
        due
    }

    pub fn is_empty(&self) -> bool {
        self.next.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Always the same fraction of the span.
    struct Fixed(f64);
    impl Below for Fixed {
        fn below(&mut self, n: u32) -> u32 {
            ((f64::from(n) * self.0) as u32).min(n - 1)
        }
    }

    #[test]
    fn a_new_port_announces_after_one_interval_then_every_interval() {
        let mut s = RaSchedule::default();
        let mut rng = Fixed(0.5);
        s.update([("lrp", (3, 4))], 1_000, &mut rng);
        assert_eq!(s.next_due(), Some(1_000 + 3_000 + 500));
        assert!(s.take_due(4_499, &mut rng).is_empty());
        assert_eq!(s.take_due(4_500, &mut rng), ["lrp"]);
        assert_eq!(s.next_due(), Some(4_500 + 3_500));
        // Late by 200 ms: the next one counts from when it was sent.
        assert_eq!(s.take_due(8_200, &mut rng), ["lrp"]);
        assert_eq!(s.next_due(), Some(8_200 + 3_500));
    }

    #[test]
    fn unchanged_ports_keep_their_time_changed_intervals_reschedule() {
        let mut s = RaSchedule::default();
        let mut rng = Fixed(0.0);
        s.update([("a", (3, 4)), ("b", (200, 600))], 0, &mut rng);
        assert_eq!(s.next_due(), Some(3_000));
        s.update([("a", (3, 4)), ("b", (200, 600))], 2_000, &mut rng);
        assert_eq!(s.next_due(), Some(3_000), "a keeps its time");
        s.update([("a", (10, 30)), ("b", (200, 600))], 2_000, &mut rng);
        assert_eq!(s.next_due(), Some(12_000), "a rescheduled");
        s.update([("b", (200, 600))], 2_000, &mut rng);
        assert_eq!(s.next_due(), Some(200_000), "a forgotten");
        s.update(std::iter::empty(), 2_000, &mut rng);
        assert!(s.is_empty());
        assert_eq!(s.next_due(), None);
    }

    #[test]
    fn intervals_stay_within_min_and_max_with_real_randomness() {
        let mut rng = Jitter::new(7);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..1000 {
            let t = next_announce(10, 3, 4, &mut rng);
            assert!((3_010..4_010).contains(&t), "{t}");
            seen.insert(t / 100);
        }
        assert!(seen.len() >= 8, "spread over the span: {seen:?}");
        // Degenerate intervals do not panic.
        assert_eq!(next_announce(10, 5, 5, &mut rng), 5_010);
        assert_eq!(next_announce(10, 5, 1, &mut rng), 5_010);
        let _ = next_announce(u64::MAX, i64::MAX, i64::MIN, &mut rng);
    }
}
