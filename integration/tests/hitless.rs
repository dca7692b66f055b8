//! Restarts under traffic: a numbered UDP stream from vm1 (hv1) to vm2 (hv2, routed by lr0)
//! runs while, in turn,
//!
//! 1. hv1's controller is killed with SIGKILL and started again (a crash);
//! 2. the Southbound `ovsdb-server` is stopped and started again on the same database;
//! 3. hv1's `ovs-vswitchd` is stopped and started again (it comes back with no flows);
//! 4. in a lab whose Southbound is a 3-server Raft cluster, its leader is killed (SIGKILL)
//!    and started again once a new leader leads.
//!
//! with ovn-controller on both chassis, then ovn-agent, in the same test. Each event prints,
//! per controller, the packets sent and lost and the longest outage. (A stop by SIGTERM is
//! scenario 11 of `scenarios.rs`.)
//!
//! ovn-agent is held to: no packet lost across its crash, the Southbound restart or the
//! leader's loss; across the Southbound restart and the leader's loss no flow changes on
//! either chassis (the tables dumped before and after are equal and no flow mod was sent),
//! and across the leader's loss not even a full recompute (its monitors resume with
//! `monitor_cond_since`; the standalone server's restart loses the transaction history, so
//! the agent computes everything again from the snapshot and finds nothing to change);
//! after the vswitchd restart every flow is back (the table equals the one before) and the
//! stream passes again. ovn-controller is the oracle: the stream must pass before and after
//! each event; its losses and flow changes are printed.

mod common;

use std::time::{Duration, Instant};

use common::{
    mac, two_switches_one_router, two_switches_one_router_in, Net, Setup, LR0_SW0_MAC,
    STREAM_INTERVAL,
};
use integration::observe::{Outcome, Report};
use integration::packet::icmp4_echo;

/// How long the stream goes on after an event's last step.
const AFTER: Duration = Duration::from_millis(1500);

/// ovn-agent's counter `name` on each chassis (`None` for ovn-controller).
fn agent_counters(net: &Net, name: &str) -> Vec<Option<u64>> {
    ["hv1", "hv2"]
        .iter()
        .map(|c| common::agent_counter(net, c, name))
        .collect()
}

fn crash_controller(net: &mut Net) -> Vec<String> {
    let mut failures = Vec::new();
    let ctl = net
        .setup
        .controller("hv1")
        .cloned()
        .expect("hv1's controller");
    if let Ok(hv1) = net.lab.chassis_mut("hv1") {
        hv1.crash_controller();
    }
    std::thread::sleep(Duration::from_secs(1));
    if let Err(e) = net.lab.start_controller("hv1", &ctl) {
        failures.push(format!("start the controller on hv1 again: {e}"));
    }
    if let Err(e) = net.lab.central().wait_hv_sync() {
        failures.push(format!("--wait=hv after the crash: {e}"));
    }
    failures
}

fn restart_southbound(net: &mut Net) -> Vec<String> {
    let mut failures = Vec::new();
    if let Err(e) = net.lab.central_mut().restart_sb() {
        failures.push(format!("restart the Southbound ovsdb-server: {e}"));
    }
    if let Err(e) = net.lab.central().wait_hv_sync() {
        failures.push(format!("--wait=hv after the Southbound restart: {e}"));
    }
    failures
}

fn restart_vswitchd(net: &mut Net) -> Vec<String> {
    let mut failures = Vec::new();
    let restarted = net
        .lab
        .chassis_mut("hv1")
        .and_then(integration::Chassis::restart_vswitchd);
    if let Err(e) = restarted {
        failures.push(format!("restart hv1's ovs-vswitchd: {e}"));
    }
    failures
}

/// Kills the clustered Southbound's leader (SIGKILL); once a new leader took over and both
/// chassis acknowledged through it, the killed server is started again.
fn kill_southbound_leader(net: &mut Net) -> Vec<String> {
    let Some(cluster) = net.lab.central_mut().sb_cluster_mut() else {
        return vec!["the Southbound is not clustered".to_owned()];
    };
    let leader = match cluster.leader(Duration::from_secs(20)) {
        Ok(l) => l,
        Err(e) => return vec![format!("find the leader: {e}")],
    };
    let sessions: Vec<_> = (0..cluster.len()).map(|i| cluster.sessions(i)).collect();
    eprintln!("leader s{leader} killed; client sessions per server before: {sessions:?}");
    cluster.kill_server(leader);
    let mut failures = Vec::new();
    if let Err(e) = net.lab.central().wait_hv_sync() {
        failures.push(format!("--wait=hv after the leader was killed: {e}"));
    }
    let Some(cluster) = net.lab.central_mut().sb_cluster_mut() else {
        return failures;
    };
    if let Err(e) = cluster
        .start_server(leader)
        .and_then(|()| cluster.wait_connected(leader))
    {
        failures.push(format!("start s{leader} again: {e}"));
    }
    failures
}

/// The events the stream runs through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    ControllerCrash,
    SouthboundRestart,
    VswitchdRestart,
    /// Needs a lab with a clustered Southbound.
    LeaderKill,
}

impl Event {
    const ALL: [Event; 3] = [
        Event::ControllerCrash,
        Event::SouthboundRestart,
        Event::VswitchdRestart,
    ];

    fn name(self) -> &'static str {
        match self {
            Event::ControllerCrash => "controller SIGKILL on hv1 and start",
            Event::SouthboundRestart => "Southbound ovsdb-server restart",
            Event::VswitchdRestart => "ovs-vswitchd restart on hv1",
            Event::LeaderKill => "clustered Southbound leader SIGKILL",
        }
    }

    fn run(self, net: &mut Net) -> Vec<String> {
        match self {
            Event::ControllerCrash => crash_controller(net),
            Event::SouthboundRestart => restart_southbound(net),
            Event::VswitchdRestart => restart_vswitchd(net),
            Event::LeaderKill => kill_southbound_leader(net),
        }
    }
}

/// One event under the stream, judged for the lab's setup; returns its outcome and a
/// summary line.
fn run_event(net: &mut Net, event: Event) -> (Outcome, String) {
    let name = event.name();
    let started = Instant::now();
    let agent = net.setup.label != common::ORACLE;
    let mut failures = Vec::new();
    let dumps_before: Vec<_> = ["hv1", "hv2"]
        .iter()
        .map(|c| common::flow_dump(&net.lab, c))
        .collect();
    let mods_before = agent_counters(net, "flow mods");
    let recomputes_before = agent_counters(net, "full recomputes");
    let (sent, received) = common::stream_during(net, AFTER, |n| event.run(n), &mut failures);
    // The switch may still be filling its table after a vswitchd restart: wait until the
    // dump settles before comparing.
    let dumps_after: Vec<_> = ["hv1", "hv2"]
        .iter()
        .map(|c| settled_dump(net, c))
        .collect();
    let mods_after = agent_counters(net, "flow mods");
    let recomputes_after = agent_counters(net, "full recomputes");
    let loss = common::judge_stream(sent, &received, &mut failures);
    let mut changed = Vec::new();
    for ((chassis, before), after) in ["hv1", "hv2"].iter().zip(&dumps_before).zip(&dumps_after) {
        match (before, after) {
            (Ok(b), Ok(a)) => changed.extend(common::compare_across_restart(chassis, b, a, !agent)),
            (Err(e), _) | (_, Err(e)) => failures.push(format!("dump {chassis}: {e}")),
        }
    }
    let delta = |before: &[Option<u64>], after: &[Option<u64>]| -> String {
        before
            .iter()
            .zip(after)
            .map(|(b, a)| match (b, a) {
                (Some(b), Some(a)) if a >= b => (a - b).to_string(),
                (_, Some(a)) => format!("{a} (new process)"),
                _ => "-".to_owned(),
            })
            .collect::<Vec<_>>()
            .join("/")
    };
    let summary = format!(
        "[{}] {name}: {} sent, {} lost, longest outage {} packets ({} ms), flow changes {}, flow mods sent hv1/hv2 {}, full recomputes {}",
        net.setup.label,
        loss.sent,
        loss.lost,
        loss.longest_gap,
        u128::from(loss.longest_gap) * STREAM_INTERVAL.as_millis(),
        changed.len(),
        delta(&mods_before, &mods_after),
        delta(&recomputes_before, &recomputes_after)
    );
    eprintln!("{summary}");
    for c in changed.iter().take(5) {
        eprintln!("[{}]   {c}", net.setup.label);
    }
    if agent {
        if event != Event::VswitchdRestart && loss.lost > 0 {
            failures.push(format!("{} packets lost across {name}", loss.lost));
        }
        failures.extend(changed);
        if matches!(event, Event::SouthboundRestart | Event::LeaderKill)
            && mods_before.iter().zip(&mods_after).any(|(b, a)| b != a)
        {
            failures.push(format!(
                "flow mods sent across the {name}: before {mods_before:?}, after {mods_after:?}"
            ));
        }
        // A resumed monitor brings only what changed: no reason to compute everything again.
        if event == Event::LeaderKill && recomputes_before != recomputes_after {
            failures.push(format!(
                "full recomputes across the {name}: before {recomputes_before:?}, after {recomputes_after:?}"
            ));
        }
    }
    // pinctrl has its own connection to the bridge: it must come back with the switch.
    let observation = if event == Event::VswitchdRestart {
        let answered = pinctrl_answers(net);
        failures.extend(answered.failures);
        answered.observation
    } else {
        integration::observe::Observation::default()
    };
    let outcome = Outcome {
        observation,
        failures,
        elapsed: started.elapsed(),
        ..Outcome::default()
    };
    (outcome, summary)
}

/// A ping from vm1 (hv1) with TTL 1 through the router: hv1's pinctrl answers with ICMP
/// time exceeded, over the connection it made again after the switch's restart.
fn pinctrl_answers(net: &Net) -> Outcome {
    let mut p = net.probe();
    let (vm1, vm2) = (net.vm("vm1"), net.vm("vm2"));
    let ping = icmp4_echo(
        vm1.port.mac,
        mac(LR0_SW0_MAC),
        vm1.port.ip,
        vm2.port.ip,
        1,
        56,
    );
    p.send("vm1", &ping);
    p.expect(
        "after the vswitchd restart, vm1 gets ICMP time exceeded from the router",
        "vm1",
        |f| common::is_icmp(f, 11, 0),
    );
    p.finish(&net.ports())
}

/// `chassis`' flow table once two dumps 300 ms apart agree (at most 15 s).
fn settled_dump(net: &Net, chassis: &str) -> integration::Result<Vec<String>> {
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut last = common::flow_dump(&net.lab, chassis)?;
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let now = common::flow_dump(&net.lab, chassis)?;
        if now == last || Instant::now() >= deadline {
            return Ok(now);
        }
        last = now;
    }
}

#[test]
fn crashes_and_server_restarts_under_traffic() {
    let mut report = Report::default();
    let mut nets = Vec::new();
    let mut summaries = Vec::new();
    for setup in Setup::oracle_and_agent(&["hv1", "hv2"]) {
        let mut net = two_switches_one_router(&setup, &["hv1", "hv2"])
            .unwrap_or_else(|e| panic!("build the lab for {}: {e}", setup.label));
        for event in Event::ALL {
            let (outcome, summary) = run_event(&mut net, event);
            summaries.push(summary);
            report.add(event.name(), &setup.label, outcome);
        }
        nets.push(net);
    }
    eprintln!("{}", summaries.join("\n"));
    // Not `conclude_healthy`: a lost switch or server connection is rightly a warning.
    common::conclude(nets, &report);
}

#[test]
fn southbound_leader_loss_under_traffic() {
    let mut report = Report::default();
    let mut nets = Vec::new();
    let mut summaries = Vec::new();
    for setup in Setup::oracle_and_agent(&["hv1", "hv2"]) {
        let lab = integration::Lab::start_clustered(3).expect("a lab with a 3-server Southbound");
        let mut net = two_switches_one_router_in(lab, &setup, &["hv1", "hv2"])
            .unwrap_or_else(|e| panic!("build the lab for {}: {e}", setup.label));
        let (outcome, summary) = run_event(&mut net, Event::LeaderKill);
        summaries.push(summary);
        report.add(Event::LeaderKill.name(), &setup.label, outcome);
        nets.push(net);
    }
    eprintln!("{}", summaries.join("\n"));
    common::conclude(nets, &report);
}
