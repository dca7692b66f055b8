//! Running one scenario with several controllers and comparing what happened: the packets that
//! came out of each VIF, the Southbound bindings of the ports, and facts a scenario reads from a
//! chassis (an `ofproto/trace` result, say). The real `ovn-controller` is the oracle: a scenario
//! run with `ovn-agent` (or with a mix of both) must observe exactly what the oracle observed,
//! and every run must meet the scenario's own expectations, so a scenario that tests nothing
//! (the oracle failing it too) is caught as well.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

pub use crate::central::Binding;
use crate::chassis::Vif;
use crate::error::Result;
use crate::lab::Lab;
use crate::packet::{arp_summary, describe};

/// How long an expected packet may take to arrive.
pub const DELIVERY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the captures must stay unchanged before a scenario's packets are taken as final.
const QUIET: Duration = Duration::from_millis(300);

/// Packets a controller sends on its own, not in answer to the scenario's traffic, which the
/// comparison leaves out: both controllers announce NAT and VIF addresses with gratuitous
/// ARPs on localnet ports on a timer, so how many fall into a scenario's window depends on
/// timing. `tests/garp.rs` compares the announcements themselves. A scenario that cares
/// about ARP sends a request and checks the reply, which is not gratuitous.
/// The IGMP and MLD queries of a switch's multicast querier are timer-driven too
/// (`tests/pinctrl_igmp.rs` compares them).
pub fn is_unsolicited(frame: &[u8]) -> bool {
    arp_summary(frame).is_some_and(|a| a.is_gratuitous()) || is_multicast_query(frame)
}

/// An IGMP query (IPv4 protocol 2, type 0x11) or an MLD query (ICMPv6 type 130, directly
/// or behind one hop-by-hop header), untagged.
pub fn is_multicast_query(frame: &[u8]) -> bool {
    let Some(eth_type) = frame.get(12..14) else {
        return false;
    };
    match eth_type {
        [0x08, 0x00] => {
            let ihl = usize::from(frame.get(14).map_or(0, |b| b & 0x0f)) * 4;
            frame.get(23) == Some(&2) && ihl >= 20 && frame.get(14 + ihl) == Some(&0x11)
        }
        [0x86, 0xdd] => match frame.get(20) {
            Some(58) => frame.get(54) == Some(&130),
            Some(0) => {
                let len = (usize::from(frame.get(55).copied().unwrap_or(0)) + 1) * 8;
                frame.get(54) == Some(&58) && frame.get(54 + len) == Some(&130)
            }
            _ => false,
        },
        _ => false,
    }
}

/// What one run of a scenario observed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observation {
    /// Per VIF name: every packet it transmitted during the scenario (less unsolicited
    /// controller chatter), sorted so that arrival order across flows does not matter.
    pub packets: BTreeMap<String, Vec<Vec<u8>>>,
    pub bindings: BTreeMap<String, Binding>,
    /// Scenario-specific facts, by name.
    pub facts: BTreeMap<String, String>,
}

impl Observation {
    /// What differs between `self` (the oracle) and `other`, as readable lines; empty if equal.
    pub fn diff(&self, other: &Self) -> Vec<String> {
        let mut out = Vec::new();
        let vifs: BTreeSet<&String> = self.packets.keys().chain(other.packets.keys()).collect();
        let none = Vec::new();
        for vif in vifs {
            let a = self.packets.get(vif).unwrap_or(&none);
            let b = other.packets.get(vif).unwrap_or(&none);
            for (label, from, to) in [("only with the oracle", a, b), ("only here", b, a)] {
                let mut left: Vec<&Vec<u8>> = to.iter().collect();
                for p in from {
                    if let Some(i) = left.iter().position(|q| *q == p) {
                        left.swap_remove(i);
                    } else {
                        out.push(format!(
                            "{vif}: {label}: {} [{}]",
                            describe(p),
                            hex::encode(p)
                        ));
                    }
                }
            }
        }
        let ports: BTreeSet<&String> = self.bindings.keys().chain(other.bindings.keys()).collect();
        for port in ports {
            let (a, b) = (self.bindings.get(port), other.bindings.get(port));
            if a != b {
                out.push(format!("binding of {port}: oracle {a:?}, here {b:?}"));
            }
        }
        let facts: BTreeSet<&String> = self.facts.keys().chain(other.facts.keys()).collect();
        for f in facts {
            let (a, b) = (self.facts.get(f), other.facts.get(f));
            if a != b {
                out.push(format!("{f}: oracle {a:?}, here {b:?}"));
            }
        }
        out
    }
}

/// One run of one scenario.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub observation: Observation,
    /// The scenario's own expectations that this run did not meet.
    pub failures: Vec<String>,
    /// Unmet expectations that a chassis running the oracle (ovn-controller) was judged on in
    /// a mixed setup ([`Probe::judged_by_oracle`]): printed, not failed, like the oracle's own.
    pub oracle_misses: Vec<String>,
    /// How long the scenario took.
    pub elapsed: Duration,
}

/// The expectations and captures of one scenario run in a lab: packets are sent, expected and
/// refuted; unmet expectations are recorded (not panicked on) so that the remaining scenarios
/// of a shared lab still run and the comparison with the oracle is complete.
pub struct Probe<'a> {
    lab: &'a Lab,
    vifs: Vec<(String, Vif)>,
    /// Per VIF: packets transmitted before the scenario started.
    marks: BTreeMap<String, usize>,
    /// Per VIF: indexes of packets already matched by an expectation.
    consumed: BTreeMap<String, BTreeSet<usize>>,
    failures: Vec<String>,
    /// While set, unmet expectations are the oracle's ([`Probe::judged_by_oracle`]).
    oracle_judged: bool,
    oracle_misses: Vec<String>,
    facts: BTreeMap<String, String>,
    started: Instant,
    timeout: Duration,
}

impl<'a> Probe<'a> {
    /// Starts watching `vifs` (chassis name, VIF); only packets from now on count.
    pub fn start(lab: &'a Lab, vifs: &[(String, Vif)]) -> Self {
        let mut probe = Self {
            lab,
            vifs: vifs.to_vec(),
            marks: BTreeMap::new(),
            consumed: BTreeMap::new(),
            failures: Vec::new(),
            oracle_judged: false,
            oracle_misses: Vec::new(),
            facts: BTreeMap::new(),
            started: Instant::now(),
            timeout: DELIVERY_TIMEOUT,
        };
        for (_, vif) in vifs {
            let n = match vif.transmitted() {
                Ok(p) => p.len(),
                Err(e) => {
                    probe.fail(format!("read the capture of {}: {e}", vif.name));
                    0
                }
            };
            probe.marks.insert(vif.name.clone(), n);
        }
        probe
    }

    /// Starts watching one more VIF (plugged during the scenario): its packets from now on.
    pub fn watch(&mut self, chassis: &str, vif: &Vif) {
        let n = vif.transmitted().map_or(0, |p| p.len());
        self.marks.insert(vif.name.clone(), n);
        self.vifs.push((chassis.to_owned(), vif.clone()));
    }

    /// How long an expected packet may take (default [`DELIVERY_TIMEOUT`]).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub fn lab(&self) -> &'a Lab {
        self.lab
    }

    /// Records an unmet expectation.
    pub fn fail(&mut self, what: impl Into<String>) {
        if self.oracle_judged {
            self.oracle_misses.push(what.into());
        } else {
            self.failures.push(what.into());
        }
    }

    /// Runs `expectations` that only one chassis decides (the one enforcing an ACL, say). When
    /// `oracle_decides` (that chassis runs ovn-controller), what they miss is the oracle's miss:
    /// printed as such, not failed, and the run is then not compared packet for packet.
    pub fn judged_by_oracle<R>(
        &mut self,
        oracle_decides: bool,
        expectations: impl FnOnce(&mut Self) -> R,
    ) -> R {
        let before = std::mem::replace(&mut self.oracle_judged, oracle_decides);
        let r = expectations(self);
        self.oracle_judged = before;
        r
    }

    /// Records `Err` as an unmet expectation; gives the value back otherwise.
    pub fn check<T>(&mut self, what: &str, r: Result<T>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.fail(format!("{what}: {e}"));
                None
            }
        }
    }

    /// Records a fact, compared between runs.
    pub fn fact(&mut self, name: &str, value: impl Into<String>) {
        self.facts.insert(name.to_owned(), value.into());
    }

    fn vif(&self, name: &str) -> Option<(String, Vif)> {
        self.vifs.iter().find(|(_, v)| v.name == name).cloned()
    }

    /// Makes VIF `vif` send `frame`.
    pub fn send(&mut self, vif: &str, frame: &[u8]) {
        let Some((chassis, v)) = self.vif(vif) else {
            self.fail(format!("no watched VIF named {vif}"));
            return;
        };
        let r = self.lab.chassis(&chassis).and_then(|c| c.inject(&v, frame));
        self.check(&format!("send {} from {vif}", describe(frame)), r);
    }

    /// The packets `vif` transmitted since the scenario started, with their indexes.
    fn new_packets(&self, vif: &Vif) -> Result<Vec<(usize, Vec<u8>)>> {
        let mark = self.marks.get(&vif.name).copied().unwrap_or(0);
        Ok(vif
            .transmitted()?
            .into_iter()
            .enumerate()
            .skip(mark)
            .collect())
    }

    /// Waits until `vif` transmitted a packet satisfying `matches` that no earlier expectation
    /// took, and returns it; records `what` as unmet after the timeout.
    pub fn expect(
        &mut self,
        what: &str,
        vif: &str,
        matches: impl FnMut(&[u8]) -> bool,
    ) -> Option<Vec<u8>> {
        self.first_match(what, &[vif], matches, &format!("on {vif}"))
            .map(|(_, p)| p)
    }

    /// Like [`Probe::expect`] on several VIFs: the first of `vifs` on which a matching packet
    /// arrives, and the packet.
    pub fn expect_any(
        &mut self,
        what: &str,
        vifs: &[&str],
        matches: impl FnMut(&[u8]) -> bool,
    ) -> Option<(String, Vec<u8>)> {
        self.first_match(what, vifs, matches, &format!("on any of {vifs:?}"))
    }

    /// The wait behind [`Probe::expect`] and [`Probe::expect_any`]; `place` says where
    /// nothing arrived.
    fn first_match(
        &mut self,
        what: &str,
        vifs: &[&str],
        mut matches: impl FnMut(&[u8]) -> bool,
        place: &str,
    ) -> Option<(String, Vec<u8>)> {
        let deadline = Instant::now() + self.timeout;
        loop {
            for vif in vifs {
                let Some((_, v)) = self.vif(vif) else {
                    self.fail(format!("no watched VIF named {vif}"));
                    return None;
                };
                let taken = self.consumed.entry(v.name.clone()).or_default().clone();
                match self.new_packets(&v) {
                    Ok(packets) => {
                        if let Some((i, p)) = packets
                            .into_iter()
                            .find(|(i, p)| !taken.contains(i) && matches(p))
                        {
                            self.consumed.entry(v.name.clone()).or_default().insert(i);
                            return Some(((*vif).to_owned(), p));
                        }
                    }
                    Err(e) => {
                        self.fail(format!("{what}: {e}"));
                        return None;
                    }
                }
            }
            if Instant::now() >= deadline {
                self.fail(format!(
                    "{what}: nothing matching arrived {place} within {:?}",
                    self.timeout
                ));
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Expects exactly `frame` on `vif`.
    pub fn expect_exact(&mut self, what: &str, vif: &str, frame: &[u8]) {
        self.expect(what, vif, |p| p == frame);
    }

    /// Expects a packet on `vif` satisfying `matches`, which must then equal `frame` byte for
    /// byte (the difference is reported readably).
    pub fn expect_equal(
        &mut self,
        what: &str,
        vif: &str,
        matches: impl FnMut(&[u8]) -> bool,
        frame: &[u8],
    ) {
        if let Some(got) = self.expect(what, vif, matches) {
            if got != frame {
                self.fail(format!(
                    "{what}: got {} [{}], expected {} [{}]",
                    describe(&got),
                    hex::encode(&got),
                    describe(frame),
                    hex::encode(frame)
                ));
            }
        }
    }

    /// No watched VIF transmitted, since the scenario started, a packet satisfying `matches`.
    /// Call it after a marker sent behind the refuted packet on the same path has arrived.
    pub fn refute(&mut self, what: &str, mut matches: impl FnMut(&[u8]) -> bool) {
        for (_, v) in self.vifs.clone() {
            match self.new_packets(&v) {
                Ok(packets) => {
                    for (_, p) in packets.iter().filter(|(_, p)| matches(p)) {
                        self.fail(format!("{what}: {} arrived on {}", describe(p), v.name));
                    }
                }
                Err(e) => self.fail(format!("{what}: {e}")),
            }
        }
    }

    /// Like [`Probe::refute`], on VIF `vif` only.
    pub fn refute_on(&mut self, what: &str, vif: &str, mut matches: impl FnMut(&[u8]) -> bool) {
        let Some((_, v)) = self.vif(vif) else {
            self.fail(format!("no watched VIF named {vif}"));
            return;
        };
        match self.new_packets(&v) {
            Ok(packets) => {
                for (_, p) in packets.iter().filter(|(_, p)| matches(p)) {
                    self.fail(format!("{what}: {} arrived on {vif}", describe(p)));
                }
            }
            Err(e) => self.fail(format!("{what}: {e}")),
        }
    }

    /// `ovn-nbctl --wait=hv sync`; an error (it did not return in time) is recorded.
    pub fn wait_hv(&mut self, what: &str) {
        let r = self.lab.central().wait_hv_sync();
        self.check(&format!("{what}: ovn-nbctl --wait=hv sync"), r);
    }

    /// Runs `ovn-nbctl ARGS`, recording a failure.
    pub fn nbctl(&mut self, args: &[&str]) -> Option<String> {
        let r = self.lab.central().nbctl(args);
        self.check(&format!("ovn-nbctl {}", args.join(" ")), r)
    }

    /// Waits until no watched capture grew for a moment, then takes the packets and the
    /// bindings of `ports`.
    pub fn finish(mut self, ports: &[&str]) -> Outcome {
        let mut last: Vec<usize> = Vec::new();
        let mut since = Instant::now();
        let deadline = Instant::now() + DELIVERY_TIMEOUT;
        while Instant::now() < deadline {
            let now: Vec<usize> = self
                .vifs
                .iter()
                .map(|(_, v)| v.transmitted().map_or(0, |p| p.len()))
                .collect();
            if now != last {
                last = now;
                since = Instant::now();
            } else if since.elapsed() >= QUIET {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut observation = Observation {
            facts: std::mem::take(&mut self.facts),
            ..Observation::default()
        };
        for (_, v) in self.vifs.clone() {
            match self.new_packets(&v) {
                Ok(packets) => {
                    let mut packets: Vec<Vec<u8>> = packets
                        .into_iter()
                        .map(|(_, p)| p)
                        .filter(|p| !is_unsolicited(p))
                        .collect();
                    packets.sort();
                    observation.packets.insert(v.name.clone(), packets);
                }
                Err(e) => self.fail(format!("read the capture of {}: {e}", v.name)),
            }
        }
        match self.lab.central().port_bindings() {
            Ok(all) => {
                for p in ports {
                    let b = all.get(*p).cloned().unwrap_or(Binding {
                        chassis: None,
                        up: None,
                    });
                    observation.bindings.insert((*p).to_owned(), b);
                }
            }
            Err(e) => self.fail(format!("read the port bindings: {e}")),
        }
        Outcome {
            observation,
            failures: self.failures,
            oracle_misses: self.oracle_misses,
            elapsed: self.started.elapsed(),
        }
    }
}

/// The outcomes of scenarios run with several controller setups, compared with the oracle's.
#[derive(Debug, Default)]
pub struct Report {
    /// (scenario, setup, outcome), in run order.
    runs: Vec<(String, String, Outcome)>,
    /// Scenarios where the oracle is known to get it wrong, with the reason: the oracle must
    /// miss at least one expectation there (else the note is stale), the others must meet
    /// them all, and nobody is compared with the oracle.
    oracle_wrong: Vec<(String, String)>,
}

impl Report {
    /// Records that ovn-controller 23.03.1 gets `scenario` wrong, and why (an intended
    /// difference, DESIGN.md "The oracle").
    pub fn oracle_is_wrong(&mut self, scenario: &str, reason: &str) {
        self.oracle_wrong
            .push((scenario.to_owned(), reason.to_owned()));
    }

    fn known_wrong(&self, scenario: &str) -> Option<&str> {
        self.oracle_wrong
            .iter()
            .find(|(s, _)| s == scenario)
            .map(|(_, r)| r.as_str())
    }

    pub fn add(&mut self, scenario: &str, setup: &str, outcome: Outcome) {
        self.runs
            .push((scenario.to_owned(), setup.to_owned(), outcome));
    }

    /// What the `oracle` setup missed in scenarios it is not noted as getting wrong. The oracle
    /// is the real ovn-controller, not the code under test: a miss of its own (seen under load,
    /// a packet still dropped 10 s after `acl-del --wait=hv` acknowledged) is printed, not
    /// failed, and the other setups of that scenario are held to the expectations alone.
    pub fn oracle_misses(&self, oracle: &str) -> Vec<String> {
        self.runs
            .iter()
            .flat_map(|(scenario, setup, outcome)| {
                let own = (setup == oracle && self.known_wrong(scenario).is_none())
                    .then_some(&outcome.failures);
                own.into_iter()
                    .chain(std::iter::once(&outcome.oracle_misses))
                    .flatten()
                    .map(move |f| format!("[{scenario} / {setup}] {f}"))
            })
            .collect()
    }

    /// Every problem: unmet expectations of any run but the oracle's ([`Self::oracle_misses`]),
    /// and every difference between a run and the `oracle` setup's run of the same scenario
    /// when that run met its expectations.
    pub fn problems(&self, oracle: &str) -> Vec<String> {
        let mut out = Vec::new();
        for (scenario, setup, outcome) in &self.runs {
            if let (Some(reason), true) = (self.known_wrong(scenario), setup == oracle) {
                if outcome.failures.is_empty() {
                    out.push(format!(
                        "[{scenario} / {setup}] meets every expectation although it is noted \
                         as getting this wrong ({reason}): the note is stale"
                    ));
                }
                continue;
            }
            if setup == oracle {
                continue;
            }
            for f in &outcome.failures {
                out.push(format!("[{scenario} / {setup}] {f}"));
            }
            if self.known_wrong(scenario).is_some() {
                continue;
            }
            // A run that differs because the oracle missed something (in its own run, or on
            // its chassis of this run) is held to the expectations alone.
            match self.find(scenario, oracle) {
                Some(reference)
                    if !reference.failures.is_empty()
                        || !reference.oracle_misses.is_empty()
                        || !outcome.oracle_misses.is_empty() => {}
                Some(reference) => {
                    for d in reference.observation.diff(&outcome.observation) {
                        out.push(format!("[{scenario} / {setup}] differs from {oracle}: {d}"));
                    }
                }
                None => out.push(format!("[{scenario} / {setup}] no {oracle} run to compare")),
            }
        }
        out
    }

    fn find(&self, scenario: &str, setup: &str) -> Option<&Outcome> {
        self.runs
            .iter()
            .find(|(s, c, _)| s == scenario && c == setup)
            .map(|(_, _, o)| o)
    }

    /// A table: one line per scenario, one column per setup (pass, or the number of problems).
    pub fn table(&self, oracle: &str) -> String {
        let mut scenarios: Vec<&String> = Vec::new();
        let mut setups: Vec<&String> = Vec::new();
        for (s, c, _) in &self.runs {
            if !scenarios.contains(&s) {
                scenarios.push(s);
            }
            if !setups.contains(&c) {
                setups.push(c);
            }
        }
        let width = scenarios.iter().map(|s| s.len()).max().unwrap_or(8).max(8);
        let mut out = format!("{:width$}", "scenario");
        for c in &setups {
            let _ = write!(out, " | {c}");
        }
        out.push('\n');
        for s in scenarios {
            let _ = write!(out, "{s:width$}");
            for c in &setups {
                let cell = match self.find(s, c) {
                    None => "-".to_owned(),
                    Some(o) => {
                        let wrong = self.known_wrong(s).is_some();
                        let diffs = if *c == oracle || wrong {
                            0
                        } else {
                            self.find(s, oracle)
                                .map_or(0, |r| r.observation.diff(&o.observation).len())
                        };
                        let verdict = match (o.failures.len(), diffs) {
                            (f, _) if wrong && *c == oracle && f > 0 => {
                                format!("wrong as known ({f} unmet)")
                            }
                            (0, 0) => "pass".to_owned(),
                            (f, 0) => format!("FAIL ({f} unmet)"),
                            (0, d) => format!("FAIL ({d} differences)"),
                            (f, d) => format!("FAIL ({f} unmet, {d} differences)"),
                        };
                        format!("{verdict} {:.1}s", o.elapsed.as_secs_f64())
                    }
                };
                let _ = write!(out, " | {cell:w$}", w = c.len());
            }
            out.push('\n');
        }
        for (s, reason) in &self.oracle_wrong {
            let _ = writeln!(out, "intended difference in \"{s}\": {reason}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(failures: &[&str]) -> Outcome {
        Outcome {
            failures: failures.iter().map(|f| (*f).to_owned()).collect(),
            ..Outcome::default()
        }
    }

    #[test]
    fn an_oracle_miss_is_noted_and_the_others_still_meet_the_expectations() {
        let mut report = Report::default();
        report.add("s", "oracle", outcome(&["packet did not pass"]));
        report.add("s", "agent", outcome(&[]));
        report.add("s", "mixed", outcome(&["packet did not pass"]));
        assert_eq!(
            report.oracle_misses("oracle"),
            ["[s / oracle] packet did not pass"]
        );
        assert_eq!(
            report.problems("oracle"),
            ["[s / mixed] packet did not pass"]
        );
    }

    #[test]
    fn a_miss_on_the_oracles_chassis_of_a_mixed_run_is_noted_and_its_own_misses_still_fail() {
        let mut report = Report::default();
        let mut packet = Observation::default();
        packet.packets.insert("vm3".to_owned(), vec![vec![1, 2, 3]]);
        report.add(
            "s",
            "oracle",
            Outcome {
                observation: packet,
                ..Outcome::default()
            },
        );
        report.add(
            "s",
            "mixed",
            Outcome {
                failures: vec!["the agent's chassis dropped it".to_owned()],
                oracle_misses: vec!["the oracle's chassis dropped it".to_owned()],
                ..Outcome::default()
            },
        );
        assert_eq!(
            report.oracle_misses("oracle"),
            ["[s / mixed] the oracle's chassis dropped it"]
        );
        // Held to the expectations alone: no packet difference is reported.
        assert_eq!(
            report.problems("oracle"),
            ["[s / mixed] the agent's chassis dropped it"]
        );
    }
}
