//! Stopwatches, as OVS's `stopwatch/show` and `stopwatch/reset` present them: per named
//! activity the number of samples, maximum, minimum, 95th percentile (exact over the first
//! samples, then the P² estimator of Jain and Chlamtac) and two moving averages.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

/// The stopwatches ovn-controller 23.03.1 keeps; the agent fills those it has an activity
/// for (flow generation and installation, ...), the others stay at zero samples.
pub const NAMES: &[&str] = &[
    "bfd-run",
    "ct-zone-commit",
    "flow-generation",
    "flow-installation",
    "if-status-mgr-run",
    "if-status-mgr-update",
    "ofctrl-seqno-run",
    "patch-run",
    "pinctrl-run",
    "vif-plug-run",
];

const PERCENTILE: f64 = 0.95;
/// Below this many samples the percentile is computed exactly from all of them.
const EXACT_UNTIL: usize = 50;
const SHORT_TERM_WEIGHT: f64 = 0.5;
const LONG_TERM_WEIGHT: f64 = 0.01;

/// One activity's statistics, in milliseconds.
#[derive(Clone, Debug, Default)]
pub struct Stopwatch {
    samples: u64,
    max: u64,
    min: u64,
    short_term: f64,
    long_term: f64,
    /// The first samples, for the exact percentile.
    first: Vec<u64>,
    estimator: PSquare,
    percentile: f64,
}

impl Stopwatch {
    pub fn add(&mut self, took: Duration) {
        let ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        #[allow(clippy::cast_precision_loss)]
        let x = ms as f64;
        self.max = self.max.max(ms);
        if self.samples == 0 || ms < self.min {
            self.min = ms;
        }
        self.samples += 1;
        self.estimator.add(x);
        if self.samples == 1 {
            self.short_term = x;
            self.long_term = x;
        } else {
            self.short_term = x * SHORT_TERM_WEIGHT + (1.0 - SHORT_TERM_WEIGHT) * self.short_term;
            self.long_term = x * LONG_TERM_WEIGHT + (1.0 - LONG_TERM_WEIGHT) * self.long_term;
        }
        if self.first.len() < EXACT_UNTIL {
            self.first.push(ms);
            let mut sorted = self.first.clone();
            sorted.sort_unstable();
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss
            )]
            let at = ((PERCENTILE * sorted.len() as f64) as usize).min(sorted.len() - 1);
            #[allow(clippy::cast_precision_loss)]
            {
                self.percentile = sorted[at] as f64;
            }
        } else {
            self.percentile = self.estimator.estimate();
        }
    }

    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Longest sample, in ms.
    pub fn maximum(&self) -> u64 {
        self.max
    }

    /// Shortest sample, in ms.
    pub fn minimum(&self) -> u64 {
        self.min
    }

    /// 95th percentile, in ms.
    pub fn percentile_95(&self) -> f64 {
        self.percentile
    }

    /// Short- and long-term moving averages, in ms.
    pub fn averages(&self) -> (f64, f64) {
        (self.short_term, self.long_term)
    }

    fn print(&self, name: &str, out: &mut String) {
        let _ = writeln!(out, "Statistics for '{name}'");
        let _ = writeln!(out, "  Total samples: {}", self.samples);
        let _ = writeln!(out, "  Maximum: {} msec", self.max);
        let _ = writeln!(out, "  Minimum: {} msec", self.min);
        let _ = writeln!(out, "  95th percentile: {:.6} msec", self.percentile);
        let _ = writeln!(out, "  Short term average: {:.6} msec", self.short_term);
        let _ = writeln!(out, "  Long term average: {:.6} msec", self.long_term);
    }
}

/// The P² estimate of one quantile: five markers whose heights follow the quantile without
/// keeping the samples.
#[derive(Clone, Debug, Default)]
struct PSquare {
    count: usize,
    heights: [f64; 5],
    positions: [f64; 5],
}

impl PSquare {
    fn desired(&self, i: usize) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let n = (self.count - 1) as f64;
        let p = PERCENTILE;
        let fraction = [0.0, p / 2.0, p, f64::midpoint(1.0, p), 1.0][i];
        fraction * n
    }

    fn add(&mut self, x: f64) {
        if self.count < 5 {
            self.heights[self.count] = x;
            self.count += 1;
            if self.count == 5 {
                self.heights.sort_unstable_by(f64::total_cmp);
                self.positions = [0.0, 1.0, 2.0, 3.0, 4.0];
            }
            return;
        }
        self.count += 1;
        // The cell x falls in; the outer markers follow the extremes.
        let cell = if x < self.heights[0] {
            self.heights[0] = x;
            0
        } else if x >= self.heights[4] {
            self.heights[4] = x;
            3
        } else {
            (0..4).find(|&i| x < self.heights[i + 1]).unwrap_or(3)
        };
        for p in &mut self.positions[cell + 1..] {
            *p += 1.0;
        }
        for i in 1..4 {
            let d = self.desired(i) - self.positions[i];
            let right = self.positions[i + 1] - self.positions[i];
            let left = self.positions[i - 1] - self.positions[i];
            if (d >= 1.0 && right > 1.0) || (d <= -1.0 && left < -1.0) {
                let step = d.signum();
                let parabolic = self.parabolic(i, step);
                self.heights[i] =
                    if self.heights[i - 1] < parabolic && parabolic < self.heights[i + 1] {
                        parabolic
                    } else {
                        self.linear(i, step)
                    };
                self.positions[i] += step;
            }
        }
    }

    fn parabolic(&self, i: usize, d: f64) -> f64 {
        let (q, n) = (&self.heights, &self.positions);
        q[i] + d / (n[i + 1] - n[i - 1])
            * ((n[i] - n[i - 1] + d) * (q[i + 1] - q[i]) / (n[i + 1] - n[i])
                + (n[i + 1] - n[i] - d) * (q[i] - q[i - 1]) / (n[i] - n[i - 1]))
    }

    fn linear(&self, i: usize, d: f64) -> f64 {
        let (q, n) = (&self.heights, &self.positions);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let j = (i as f64 + d) as usize;
        q[i] + d * (q[j] - q[i]) / (n[j] - n[i])
    }

    fn estimate(&self) -> f64 {
        if self.count < 5 {
            return self.heights[..self.count]
                .iter()
                .copied()
                .fold(0.0, f64::max);
        }
        self.heights[2]
    }
}

/// Every stopwatch by name.
#[derive(Clone, Debug)]
pub struct Stopwatches(BTreeMap<&'static str, Stopwatch>);

impl Default for Stopwatches {
    fn default() -> Self {
        Self(NAMES.iter().map(|n| (*n, Stopwatch::default())).collect())
    }
}

impl Stopwatches {
    /// Adds a sample to `name` (one of [`NAMES`]).
    pub fn add(&mut self, name: &'static str, took: Duration) {
        self.0.entry(name).or_default().add(took);
    }

    pub fn get(&self, name: &str) -> Option<&Stopwatch> {
        self.0.get(name)
    }

    /// `stopwatch/show [NAME]`.
    pub fn show(&self, name: Option<&str>) -> Result<String, String> {
        let mut out = String::new();
        match name {
            Some(n) => match self.0.get(n) {
                Some(sw) => sw.print(n, &mut out),
                None => return Err("No such stopwatch".into()),
            },
            None => {
                for (n, sw) in &self.0 {
                    sw.print(n, &mut out);
                }
            }
        }
        Ok(out)
    }

    /// `stopwatch/reset [NAME]` (an unknown name resets nothing, as OVS).
    pub fn reset(&mut self, name: Option<&str>) {
        for (n, sw) in &mut self.0 {
            if name.is_none_or(|want| want == *n) {
                *sw = Stopwatch::default();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn show_prints_ovs_lines() {
        let mut s = Stopwatches::default();
        s.add("flow-generation", ms(4));
        s.add("flow-generation", ms(2));
        let text = s.show(Some("flow-generation")).unwrap();
        assert_eq!(
            text,
            "Statistics for 'flow-generation'\n  Total samples: 2\n  Maximum: 4 msec\n  \
             Minimum: 2 msec\n  95th percentile: 4.000000 msec\n  Short term average: \
             3.000000 msec\n  Long term average: 3.980000 msec\n"
        );
        assert_eq!(s.show(Some("nope")), Err("No such stopwatch".into()));
        s.reset(Some("flow-generation"));
        assert_eq!(s.get("flow-generation").unwrap().samples(), 0);
    }

    #[test]
    fn percentile_of_many_samples_is_close() {
        let mut sw = Stopwatch::default();
        // 1..=1000 in a scrambled order: the 95th percentile is about 950.
        for i in 0..1000u64 {
            sw.add(ms((i * 7919) % 1000 + 1));
        }
        assert!(
            (sw.percentile - 950.0).abs() < 15.0,
            "estimate {}",
            sw.percentile
        );
        assert_eq!((sw.min, sw.max, sw.samples), (1, 1000, 1000));
    }
}
