//! Rate limiting of repeated log messages, as OVS's `VLOG_RATE_LIMIT_INIT(RATE, BURST)`:
//! a token bucket that allows `burst` messages at once and then `rate` per minute, and that
//! counts what it suppressed so the next allowed message can be preceded by
//! "Dropped N log messages in last S seconds (most recently, T seconds ago) due to
//! excessive rate".
//!
//! ```
//! static BAD_ROW: agent::vlog::RateLimit = agent::vlog::RateLimit::new(5, 20);
//! agent::vlog_rl!(WARN, &BAD_ROW, "malformed Port_Binding row {}", "x");
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// Tokens one message costs; `rate` tokens come in per millisecond, so `rate` messages
/// per minute.
const TOKENS_PER_MESSAGE: u64 = 60_000;

#[derive(Debug)]
struct Bucket {
    tokens: u64,
    /// `None` until first use, so that the bucket starts full.
    last_fill_ms: Option<i64>,
    dropped: u32,
    first_dropped_ms: i64,
    last_dropped_ms: i64,
}

/// A rate limit for one kind of message. Usable as a `static`.
#[derive(Debug)]
pub struct RateLimit {
    rate_per_minute: u32,
    burst: u32,
    bucket: Mutex<Bucket>,
    suppressed_total: AtomicU64,
}

/// What the bucket says about one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Log it; `dropped` says what was suppressed since the last allowed message.
    Allow {
        dropped: Option<DropReport>,
    },
    Suppress,
}

/// Messages suppressed since the last allowed one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DropReport {
    pub count: u32,
    /// Seconds since the first and since the last suppressed message.
    pub first_seconds_ago: u64,
    pub last_seconds_ago: u64,
}

impl std::fmt::Display for DropReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Dropped {} log messages in last {} seconds (most recently, {} seconds ago) due to excessive rate",
            self.count, self.first_seconds_ago, self.last_seconds_ago
        )
    }
}

impl RateLimit {
    /// `rate_per_minute` messages per minute after a burst of `burst`.
    pub const fn new(rate_per_minute: u32, burst: u32) -> RateLimit {
        RateLimit {
            rate_per_minute,
            burst,
            bucket: Mutex::new(Bucket {
                tokens: 0,
                last_fill_ms: None,
                dropped: 0,
                first_dropped_ms: 0,
                last_dropped_ms: 0,
            }),
            suppressed_total: AtomicU64::new(0),
        }
    }

    /// True if a message may be logged now. Prefer [`crate::vlog_rl!`], which also logs
    /// the "Dropped ..." line that [`RateLimit::check`] reports.
    pub fn allow(&self) -> bool {
        matches!(self.check(), Admission::Allow { .. })
    }

    /// Decides about one message now (monotonic clock).
    pub fn check(&self) -> Admission {
        self.check_at(monotonic_ms())
    }

    /// Decides about one message at `now_ms` (any monotonic millisecond clock; tests pass
    /// virtual time).
    pub fn check_at(&self, now_ms: i64) -> Admission {
        let mut bucket = match self.bucket.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let capacity = u64::from(self.burst).saturating_mul(TOKENS_PER_MESSAGE);
        if bucket.tokens < TOKENS_PER_MESSAGE {
            let elapsed = match bucket.last_fill_ms {
                None => u64::MAX,
                Some(last) if now_ms > last => (now_ms - last) as u64,
                Some(_) => 0,
            };
            if elapsed > 0 {
                let added = u64::from(self.rate_per_minute).saturating_mul(elapsed);
                bucket.tokens = bucket.tokens.saturating_add(added).min(capacity);
                bucket.last_fill_ms = Some(now_ms);
            }
        }
        if bucket.tokens < TOKENS_PER_MESSAGE {
            if bucket.dropped == 0 {
                bucket.first_dropped_ms = now_ms;
            }
            bucket.last_dropped_ms = now_ms;
            bucket.dropped = bucket.dropped.saturating_add(1);
            self.suppressed_total.fetch_add(1, Ordering::Relaxed);
            return Admission::Suppress;
        }
        bucket.tokens -= TOKENS_PER_MESSAGE;
        let dropped = (bucket.dropped > 0).then(|| DropReport {
            count: bucket.dropped,
            first_seconds_ago: seconds_between(bucket.first_dropped_ms, now_ms),
            last_seconds_ago: seconds_between(bucket.last_dropped_ms, now_ms),
        });
        bucket.dropped = 0;
        Admission::Allow { dropped }
    }

    /// Messages this limit has suppressed since it was created.
    pub fn suppressed_total(&self) -> u64 {
        self.suppressed_total.load(Ordering::Relaxed)
    }
}

fn seconds_between(earlier_ms: i64, now_ms: i64) -> u64 {
    // Whole seconds of each instant, as OVS subtracts time_now() values.
    (now_ms.div_euclid(1000) - earlier_ms.div_euclid(1000)).max(0) as u64
}

fn monotonic_ms() -> i64 {
    static START: OnceLock<Instant> = OnceLock::new();
    let start = START.get_or_init(Instant::now);
    i64::try_from(start.elapsed().as_millis()).unwrap_or(i64::MAX)
}

/// Logs through `tracing` at `$level` (`ERROR`, `WARN`, `INFO`, `DEBUG`) unless `$limit`
/// (a [`RateLimit`]) suppresses it; the first message after suppressed ones is preceded
/// by OVS's "Dropped N log messages ..." line. Disabled levels consume no tokens, and
/// `vlog/disable-rate-limit` on the caller's module lets everything through.
/// `target: "binding"` after the limit names the module as in `tracing` (it then decides
/// whether `vlog/disable-rate-limit` applies).
#[macro_export]
macro_rules! vlog_rl {
    ($level:ident, $limit:expr, target: $target:expr, $($arg:tt)+) => {{
        if ::tracing::enabled!(target: $target, ::tracing::Level::$level) {
            if !$crate::vlog::rate_limits_honored($target) {
                ::tracing::event!(target: $target, ::tracing::Level::$level, $($arg)+);
            } else if let $crate::vlog::Admission::Allow { dropped } = ($limit).check() {
                if let Some(report) = dropped {
                    ::tracing::event!(target: $target, ::tracing::Level::$level, "{}", report);
                }
                ::tracing::event!(target: $target, ::tracing::Level::$level, $($arg)+);
            }
        }
    }};
    ($level:ident, $limit:expr, $($arg:tt)+) => {{
        if ::tracing::enabled!(::tracing::Level::$level) {
            if !$crate::vlog::rate_limits_honored(module_path!()) {
                ::tracing::event!(::tracing::Level::$level, $($arg)+);
            } else if let $crate::vlog::Admission::Allow { dropped } = ($limit).check() {
                if let Some(report) = dropped {
                    ::tracing::event!(::tracing::Level::$level, "{}", report);
                }
                ::tracing::event!(::tracing::Level::$level, $($arg)+);
            }
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(limit: &RateLimit, now_ms: i64) -> bool {
        matches!(limit.check_at(now_ms), Admission::Allow { .. })
    }

    #[test]
    fn burst_then_rate_per_minute() {
        let limit = RateLimit::new(5, 20);
        let now = 1_000_000;
        for n in 0..20 {
            assert!(allowed(&limit, now), "message {n} of the burst");
        }
        assert!(!allowed(&limit, now));
        assert!(!allowed(&limit, now + 11_999), "5/min: one every 12 s");
        assert_eq!(
            limit.check_at(now + 12_000),
            Admission::Allow {
                dropped: Some(DropReport {
                    count: 2,
                    first_seconds_ago: 12,
                    last_seconds_ago: 1
                })
            }
        );
        assert!(!allowed(&limit, now + 12_001));
        assert_eq!(limit.suppressed_total(), 3);
        // After a long quiet time the bucket is full again, but never above the burst.
        let later = now + 3_600_000;
        for _ in 0..20 {
            assert!(allowed(&limit, later));
        }
        assert!(!allowed(&limit, later));
    }

    #[test]
    fn clock_going_backwards_adds_nothing() {
        let limit = RateLimit::new(60, 1);
        assert!(allowed(&limit, 10_000));
        assert!(!allowed(&limit, 5_000));
        assert!(allowed(&limit, 11_000), "one per second");
    }

    #[test]
    fn report_text_is_ovs() {
        let report = DropReport {
            count: 86,
            first_seconds_ago: 18,
            last_seconds_ago: 8,
        };
        assert_eq!(
            report.to_string(),
            "Dropped 86 log messages in last 18 seconds (most recently, 8 seconds ago) due to excessive rate"
        );
    }

    #[test]
    fn usable_as_a_static() {
        static LIMIT: RateLimit = RateLimit::new(1, 1);
        assert!(LIMIT.allow());
        assert!(!LIMIT.allow());
    }
}
