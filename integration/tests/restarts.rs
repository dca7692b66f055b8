//! Controller starts and restarts, many times, with each controller (the oracle, then
//! ovn-agent) on every chassis of the two-switch lab:
//!
//! - `exit` then start again on hv1 (the chassis leaves the Southbound database and its
//!   tunnels go, so each start registers the chassis and its Encap and creates the tunnel
//!   anew, as a first start does, and hv2 removes and re-creates its tunnel to hv1): no
//!   transaction may fail with a constraint violation (a transaction planned from a replica
//!   that lacked the effect of the previous one creates a duplicate Encap or tunnel
//!   Interface; its claims then fail with it) and each port is claimed once per start;
//! - a restart by SIGTERM (flows left on the switch) sends no flow_mod at all when nothing
//!   changed (`flow mods` in ovn-agent's `inc-engine/show-stats`; ovn-controller 23.03.1
//!   replaces the whole table after a restart, so it is not counted there).
//!
//! `OVN_RESTARTS=N` sets the number of exit/start cycles (default 10).

mod common;

use std::time::Duration;

use common::{two_switches_one_router, Setup};
use integration::scenario::wait_port_up;
use integration::Controller;

const EXIT_TIMEOUT: Duration = Duration::from_secs(20);

fn count(text: &str, what: &str) -> usize {
    text.lines().filter(|l| l.contains(what)).count()
}

#[test]
fn starts_make_no_duplicate_rows_and_restarts_no_flow_mods() {
    let cycles: usize = std::env::var("OVN_RESTARTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let mut problems = Vec::new();
    for setup in Setup::oracle_and_agent(&["hv1", "hv2"]) {
        let label = setup.label.clone();
        let mut net = two_switches_one_router(&setup, &["hv1", "hv2"])
            .unwrap_or_else(|e| panic!("[{label}] build the lab: {e}"));
        let ctl = setup.controller("hv1").cloned().expect("hv1's controller");
        let agent = ctl != Controller::OvnController;
        let mut violations = 0;
        let mut failed_txns = 0;
        let mut extra_claims = 0;
        // The log of the first start counts too.
        let mut from = [0usize, 0usize];
        for cycle in 0..=cycles {
            if cycle > 0 {
                from = [
                    common::controller_log(&net, "hv1").len(),
                    common::controller_log(&net, "hv2").len(),
                ];
                let restarted = net
                    .lab
                    .chassis_mut("hv1")
                    .and_then(|c| c.exit_controller(EXIT_TIMEOUT))
                    .and_then(|()| net.lab.start_controller("hv1", &ctl))
                    .and_then(|()| wait_port_up(net.lab.central(), "vm1"))
                    .and_then(|()| wait_port_up(net.lab.central(), "vm5"))
                    .and_then(|()| net.lab.central().wait_hv_sync());
                if let Err(e) = restarted {
                    problems.push(format!("[{label}] cycle {cycle}: {e}"));
                    break;
                }
            }
            for (i, chassis) in ["hv1", "hv2"].iter().enumerate() {
                let log = common::controller_log(&net, chassis);
                let new = log.get(from[i]..).unwrap_or("");
                let v = count(new, "constraint violation");
                if v > 0 {
                    eprintln!(
                        "[{label}] cycle {cycle}, {chassis}: {v} constraint violation(s):\n{}",
                        new.lines()
                            .filter(|l| l.contains("constraint violation"))
                            .map(|l| l.chars().take(300).collect::<String>())
                            .collect::<Vec<_>>()
                            .join("\n")
                    );
                }
                violations += v;
                if agent {
                    failed_txns +=
                        count(new, "southbound transaction: ") + count(new, "OVS transaction: ");
                }
                if *chassis == "hv1" {
                    for port in ["vm1", "vm5"] {
                        let claims = count(new, &format!("Claiming lport {port} for this chassis"));
                        extra_claims += claims.saturating_sub(1);
                    }
                }
            }
        }
        eprintln!(
            "[{label}] {} starts: {violations} constraint violations, {failed_txns} failed \
             transactions (ovn-agent), {extra_claims} extra claims",
            cycles + 1
        );
        if violations > 0 {
            problems.push(format!(
                "[{label}] {violations} constraint violation(s) in {} starts",
                cycles + 1
            ));
        }
        if agent && extra_claims > 0 {
            problems.push(format!(
                "[{label}] {extra_claims} port(s) claimed more than once in a start"
            ));
        }
        // A restart that changes nothing sends no flow_mod. The table is taken once it has
        // settled: `--wait=hv` does not wait for the tunnels the start re-created, whose
        // flows follow their ofports.
        let before = settled_flows(&net);
        let restarted = net
            .lab
            .chassis_mut("hv1")
            .map(integration::Chassis::stop_controller)
            .and_then(|()| net.lab.start_controller("hv1", &ctl))
            .and_then(|()| net.lab.central().wait_hv_sync());
        if let Err(e) = restarted {
            problems.push(format!("[{label}] restart: {e}"));
            continue;
        }
        let after = settled_flows(&net);
        let differences = common::compare_across_restart("hv1", &before, &after, !agent);
        if !differences.is_empty() {
            // The logs tell which change the table before the restart had missed.
            net.lab.keep_dir();
        }
        problems.extend(differences.into_iter().map(|p| format!("[{label}] {p}")));
        if agent {
            let mods = common::agent_counter(&net, "hv1", "flow mods");
            eprintln!("[{label}] flow_mods sent after a restart: {mods:?}");
            if mods != Some(0) {
                problems.push(format!(
                    "[{label}] a restart that changes nothing sent {mods:?} flow_mods, expected 0"
                ));
            }
            problems.extend(
                streamed_puts(&mut net, &ctl, &after)
                    .into_iter()
                    .map(|p| format!("[{label}] {p}")),
            );
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// hv1's flow table once two dumps 300 ms apart agree (at most 10 s).
fn settled_flows(net: &common::Net) -> Vec<String> {
    let mut last = common::flow_dump(&net.lab, "hv1").unwrap_or_default();
    for _ in 0..33 {
        std::thread::sleep(Duration::from_millis(300));
        let now = common::flow_dump(&net.lab, "hv1").unwrap_or_default();
        if now == last {
            break;
        }
        last = now;
    }
    last
}

/// ovn-agent with its full compile streamed in batches of 8 logical flows into puts of 16
/// flow mods (many parts, each sent while the next batch is compiled), started on hv1 over
/// `table` (what a normal start installed): first over that table (a restart: nothing may
/// change on the way, so no flow_mod at all), then on an emptied switch (every flow again,
/// some sent twice as later batches change them). Both end with exactly `table`, and the
/// routed pings pass.
fn streamed_puts(net: &mut common::Net, ctl: &Controller, table: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    let small = match common::agent_with_args(
        net.lab.dir(),
        ctl,
        &["--compile-batch-lflows", "8", "--put-part-flows", "16"],
    ) {
        Ok(c) => c,
        Err(e) => return vec![e],
    };
    for (case, empty_first) in [
        ("over the installed table", false),
        ("on an empty switch", true),
    ] {
        let started = net
            .lab
            .chassis_mut("hv1")
            .map(integration::Chassis::stop_controller)
            .and_then(|()| {
                if empty_first {
                    let c = net.lab.chassis("hv1")?;
                    c.ofctl(&["del-flows", "br-int"])?;
                    c.ofctl(&["-O", "OpenFlow15", "del-groups", "br-int"])?;
                }
                Ok(())
            })
            .and_then(|()| net.lab.start_controller("hv1", &small))
            .and_then(|()| net.lab.central().wait_hv_sync());
        if let Err(e) = started {
            problems.push(format!("streamed put {case}: {e}"));
            continue;
        }
        let now = settled_flows(net);
        problems.extend(
            common::compare_across_restart("hv1", table, &now, false)
                .into_iter()
                .map(|p| format!("streamed put {case}: {p}")),
        );
        let mods = common::agent_counter(net, "hv1", "flow mods");
        eprintln!(
            "streamed put {case}: {mods:?} flow_mods for {} flows",
            table.len()
        );
        let expected = if empty_first {
            mods.is_some_and(|m| m >= table.len() as u64)
        } else {
            mods == Some(0)
        };
        if !expected {
            problems.push(format!(
                "streamed put {case}: {mods:?} flow_mods for a table of {} flows",
                table.len()
            ));
        }
        let mut p = net.probe();
        common::expect_routed_pings(&mut p, net, &format!("after a streamed put {case}: "));
        problems.extend(p.finish(&net.ports()).failures);
    }
    problems
}
