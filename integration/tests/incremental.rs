//! A random sequence of Northbound and local changes, then a restart of every chassis'
//! controller: what the running controllers installed, change by change, must be exactly
//! what a fresh start computes from the same databases (br-int's flows compared before and
//! after, [`common::restart_changes_no_flow`]). The changes: ports added and removed (each
//! bound on a random chassis), an interface moved to the other chassis, drop ACLs on address
//! sets and port groups added and removed, addresses added to and removed from an address
//! set, port-group members changed, a load balancer attached and detached, logged ACLs
//! with a meter added and the meter's rate changed, a DNS record changed, a template
//! variable an ACL matches on changed, and the priorities of an HA chassis group (which
//! chassis binds an external port) swapped. Groups and meters are compared as well as
//! flows, and ovn-agent must make every change without a full recompute (the count after
//! the start stays as it is).
//!
//! Run with ovn-controller on both chassis first (the oracle: the test itself must hold
//! there), then ovn-agent on both, then ovn-agent compiling at most 8 logical flows at a
//! time (`--compile-batch-lflows 8`: a change to more lflows than that is compiled and put
//! in the table batch by batch, the path that bounds the memory of a huge update). `OVN_SEED=N` replays a sequence; `OVN_STEPS=N` sets its
//! length (default 40).

mod common;

use std::collections::BTreeMap;

use common::{two_switches_one_router, Net, Setup};
use integration::scenario::wait_port_up;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const CHASSIS: [&str; 2] = ["hv1", "hv2"];

/// A port this test added: its switch and the chassis its interface is on.
struct Added {
    switch: &'static str,
    chassis: &'static str,
}

struct Changes<'a> {
    net: &'a Net,
    rng: StdRng,
    ports: BTreeMap<String, Added>,
    next_port: u32,
    acls: u32,
    lb_attached: bool,
    /// NB rows the changes set: the meter's band, the DNS row, each chassis' template
    /// variables.
    meter_band: String,
    /// The meter's rate now, once a logged ACL uses it (the switches have it then).
    meter_rate: u32,
    /// Whether NB has meter m1 now: logged ACLs keep naming it while it is gone, and the
    /// switches must then have no meter for it.
    meter_present: bool,
    logged_acls: u32,
    dns: String,
    template_vars: BTreeMap<&'static str, String>,
    /// The chassis with the highest priority in HA group gw: where ext1 ends up bound.
    ha_active: &'static str,
    log: Vec<String>,
}

impl Changes<'_> {
    fn nbctl(&mut self, args: &[&str]) {
        self.log.push(format!("ovn-nbctl {}", args.join(" ")));
        self.net
            .lab
            .central()
            .nbctl(args)
            .unwrap_or_else(|e| panic!("ovn-nbctl {args:?}: {e}\nsteps:\n{}", self.steps()));
    }

    fn vsctl(&mut self, chassis: &str, args: &[&str]) {
        self.log
            .push(format!("{chassis}: ovs-vsctl {}", args.join(" ")));
        self.net
            .lab
            .chassis(chassis)
            .and_then(|c| c.vsctl(args))
            .unwrap_or_else(|e| panic!("ovs-vsctl {args:?}: {e}\nsteps:\n{}", self.steps()));
    }

    fn steps(&self) -> String {
        self.log.join("\n")
    }

    fn pick_chassis(&mut self) -> &'static str {
        CHASSIS[self.rng.gen_range(0..CHASSIS.len())]
    }

    fn pick_port(&mut self) -> Option<String> {
        if self.ports.is_empty() {
            return None;
        }
        let at = self.rng.gen_range(0..self.ports.len());
        self.ports.keys().nth(at).cloned()
    }

    fn add_port(&mut self) {
        let n = self.next_port;
        self.next_port += 1;
        let (switch, subnet) = if self.rng.gen_bool(0.5) {
            ("sw0", 0)
        } else {
            ("sw1", 1)
        };
        let name = format!("r{n}");
        let addr = format!(
            "50:54:00:00:{subnet:02x}:{:02x} 10.0.{subnet}.{}",
            20 + n,
            20 + n
        );
        self.nbctl(&["lsp-add", switch, &name]);
        self.nbctl(&["lsp-set-addresses", &name, &addr]);
        let chassis = self.pick_chassis();
        self.log.push(format!("{chassis}: add VIF {name}"));
        self.net
            .lab
            .chassis(chassis)
            .and_then(|c| c.add_vif(&name, &name))
            .unwrap_or_else(|e| panic!("add VIF {name}: {e}"));
        self.ports.insert(name, Added { switch, chassis });
    }

    fn remove_port(&mut self) {
        let Some(name) = self.pick_port() else { return };
        let added = self.ports.remove(&name).expect("picked");
        if self.rng.gen_bool(0.5) {
            self.nbctl(&["lsp-del", &name]);
            self.vsctl(added.chassis, &["del-port", "br-int", &name]);
        } else {
            self.vsctl(added.chassis, &["del-port", "br-int", &name]);
            self.nbctl(&["lsp-del", &name]);
        }
    }

    fn move_port(&mut self) {
        let Some(name) = self.pick_port() else { return };
        let from = self.ports[&name].chassis;
        let to = if from == "hv1" { "hv2" } else { "hv1" };
        self.vsctl(from, &["del-port", "br-int", &name]);
        self.log.push(format!("{to}: add VIF {name}"));
        self.net
            .lab
            .chassis(to)
            .and_then(|c| c.add_vif(&name, &name))
            .unwrap_or_else(|e| panic!("add VIF {name}: {e}"));
        self.ports.get_mut(&name).expect("picked").chassis = to;
    }

    fn add_acl(&mut self) {
        self.acls += 1;
        let priority = (1000 + self.acls).to_string();
        let (direction, matching) = match self.rng.gen_range(0..3) {
            0 => ("to-lport", "ip4.src == $blocked && udp"),
            1 => ("from-lport", "inport == @pg1 && tcp.dst == 22"),
            _ => ("to-lport", "outport == @pg1 && ip4.src == $blocked"),
        };
        let switch = if self.rng.gen_bool(0.5) { "sw0" } else { "sw1" };
        self.nbctl(&["acl-add", switch, direction, &priority, matching, "drop"]);
    }

    fn remove_acls(&mut self) {
        let switch = if self.rng.gen_bool(0.5) { "sw0" } else { "sw1" };
        self.nbctl(&["acl-del", switch]);
    }

    fn change_address_set(&mut self) {
        let addr = format!(
            "\"192.168.{}.{}\"",
            self.rng.gen_range(0..4),
            self.rng.gen_range(1..8)
        );
        let verb = if self.rng.gen_bool(0.6) {
            "add"
        } else {
            "remove"
        };
        self.nbctl(&[
            "--if-exists",
            verb,
            "Address_Set",
            "blocked",
            "addresses",
            &addr,
        ]);
    }

    fn change_port_group(&mut self) {
        let mut members: Vec<String> = vec!["vm1".into(), "vm2".into()];
        members.extend(
            self.ports
                .keys()
                .filter(|_| self.rng.gen_bool(0.5))
                .cloned(),
        );
        let mut args = vec!["pg-set-ports", "pg1"];
        args.extend(members.iter().map(String::as_str));
        self.nbctl(&args);
    }

    fn toggle_load_balancer(&mut self) {
        let verb = if self.lb_attached {
            "ls-lb-del"
        } else {
            "ls-lb-add"
        };
        self.lb_attached = !self.lb_attached;
        self.nbctl(&[verb, "sw0", "lb1"]);
    }

    fn add_logged_acl(&mut self) {
        self.acls += 1;
        let priority = (1000 + self.acls).to_string();
        let name = format!("--name=acl{}", self.acls);
        let matching = format!("outport == @pg1 && udp.dst == {}", 1000 + self.acls);
        self.logged_acls += 1;
        self.nbctl(&[
            "--log",
            "--meter=m1",
            &name,
            "acl-add",
            "pg1",
            "to-lport",
            &priority,
            &matching,
            "allow-related",
        ]);
    }

    fn change_meter_rate(&mut self) {
        if !self.meter_present {
            return self.toggle_meter();
        }
        self.meter_rate = self.rng.gen_range(1..20) * 100;
        let rate = format!("rate={}", self.meter_rate);
        let band = self.meter_band.clone();
        self.nbctl(&["set", "Meter_Band", &band, &rate]);
    }

    /// Deletes meter m1 while logged ACLs still name it, or adds it back.
    fn toggle_meter(&mut self) {
        if self.meter_present {
            self.nbctl(&["meter-del", "m1"]);
        } else {
            let rate = self.meter_rate.to_string();
            self.nbctl(&["meter-add", "m1", "drop", &rate, "pktps"]);
            let bands = self
                .net
                .lab
                .central()
                .nbctl(&["--bare", "--columns=bands", "find", "Meter", "name=m1"])
                .unwrap_or_else(|e| panic!("find meter m1: {e}\nsteps:\n{}", self.steps()));
            bands.trim().clone_into(&mut self.meter_band);
        }
        self.meter_present = !self.meter_present;
    }

    fn change_dns_record(&mut self) {
        let record = format!("records:vm1=\"10.0.0.{}\"", self.rng.gen_range(1..50));
        let dns = self.dns.clone();
        self.nbctl(&["set", "DNS", &dns, &record]);
    }

    fn change_template_var(&mut self) {
        let chassis = self.pick_chassis();
        let value = format!(
            "variables:blockip=\"192.168.9.{}\"",
            self.rng.gen_range(1..50)
        );
        let row = self.template_vars[chassis].clone();
        self.nbctl(&["set", "Chassis_Template_Var", &row, &value]);
    }

    fn swap_ha_priorities(&mut self) {
        let first = self.pick_chassis();
        let second = if first == "hv1" { "hv2" } else { "hv1" };
        self.nbctl(&["ha-chassis-group-add-chassis", "gw", first, "20"]);
        self.nbctl(&["ha-chassis-group-add-chassis", "gw", second, "10"]);
        self.ha_active = first;
    }

    fn step(&mut self) {
        match self.rng.gen_range(0..15) {
            0..=1 => self.add_port(),
            2 => self.remove_port(),
            3 => self.move_port(),
            4 => self.add_acl(),
            5 => self.remove_acls(),
            6 => self.change_address_set(),
            7 => self.change_port_group(),
            8 => self.toggle_load_balancer(),
            9 => self.add_logged_acl(),
            10 if self.rng.gen_bool(0.3) => self.toggle_meter(),
            10 => self.change_meter_rate(),
            11 => self.change_dns_record(),
            12 => self.change_template_var(),
            13 => self.swap_ha_priorities(),
            _ => {
                self.log.push("--wait=hv sync".into());
                self.net
                    .lab
                    .central()
                    .wait_hv_sync()
                    .unwrap_or_else(|e| panic!("--wait=hv sync: {e}\nsteps:\n{}", self.steps()));
            }
        }
    }
}

/// What every chassis' switch must have for meter m1 after a sequence.
enum MeterWanted {
    /// No logged ACL uses the meter: anything goes.
    Unused,
    /// Logged ACLs name it, but NB has no meter m1: no meter at all.
    Absent,
    /// Installed with this rate.
    Rate(u32),
}

/// What a sequence did: its steps, and meter m1 as the switches must have it.
struct Sequence {
    log: Vec<String>,
    meter: MeterWanted,
}

fn run_sequence(net: &Net, seed: u64, steps: usize) -> Sequence {
    let central = net.lab.central();
    for args in [
        &[
            "create",
            "Address_Set",
            "name=blocked",
            "addresses=\"192.168.0.1\"",
        ][..],
        &["pg-add", "pg1", "vm1", "vm2"],
        &[
            "lb-add",
            "lb1",
            "10.0.0.100:80",
            "10.0.0.3:8080,10.0.1.2:8080",
            "tcp",
        ],
        &["meter-add", "m1", "drop", "100", "pktps"],
        // A template variable per chassis, and an ACL that matches on it.
        &[
            "create",
            "Chassis_Template_Var",
            "chassis=hv1",
            "variables={blockip=\"192.168.9.1\"}",
        ],
        &[
            "create",
            "Chassis_Template_Var",
            "chassis=hv2",
            "variables={blockip=\"192.168.9.2\"}",
        ],
        &[
            "acl-add",
            "sw1",
            "to-lport",
            "999",
            "ip4.src == ^blockip && udp",
            "drop",
        ],
        // An external port bound where HA group gw is active.
        &["ha-chassis-group-add", "gw"],
        &["ha-chassis-group-add-chassis", "gw", "hv1", "20"],
        &["ha-chassis-group-add-chassis", "gw", "hv2", "10"],
        &[
            "lsp-add",
            "sw0",
            "ext1",
            "--",
            "lsp-set-type",
            "ext1",
            "external",
            "--",
            "lsp-set-addresses",
            "ext1",
            "50:54:00:00:00:77 10.0.0.77",
        ],
    ] {
        central
            .nbctl(args)
            .unwrap_or_else(|e| panic!("ovn-nbctl {args:?}: {e}"));
    }
    let uuid_of = |args: &[&str]| {
        let out = central
            .nbctl(args)
            .unwrap_or_else(|e| panic!("ovn-nbctl {args:?}: {e}"));
        out.split_whitespace()
            .next()
            .unwrap_or_else(|| panic!("ovn-nbctl {args:?} found no row"))
            .to_owned()
    };
    let group = uuid_of(&[
        "--bare",
        "--columns=_uuid",
        "find",
        "HA_Chassis_Group",
        "name=gw",
    ]);
    let dns = uuid_of(&["create", "DNS", "records={vm1=\"10.0.0.1\"}"]);
    for args in [
        &[
            "set",
            "Logical_Switch_Port",
            "ext1",
            &format!("ha_chassis_group={group}"),
        ][..],
        &["add", "Logical_Switch", "sw0", "dns_records", &dns],
    ] {
        central
            .nbctl(args)
            .unwrap_or_else(|e| panic!("ovn-nbctl {args:?}: {e}"));
    }
    let meter_band = uuid_of(&["--bare", "--columns=bands", "find", "Meter", "name=m1"]);
    let template_vars = CHASSIS
        .iter()
        .map(|c| {
            let row = uuid_of(&[
                "--bare",
                "--columns=_uuid",
                "find",
                "Chassis_Template_Var",
                &format!("chassis={c}"),
            ]);
            (*c, row)
        })
        .collect();
    let mut changes = Changes {
        net,
        rng: StdRng::seed_from_u64(seed),
        ports: BTreeMap::new(),
        next_port: 0,
        acls: 0,
        lb_attached: false,
        meter_band,
        meter_rate: 100,
        meter_present: true,
        logged_acls: 0,
        dns,
        template_vars,
        ha_active: "hv1",
        log: Vec::new(),
    };
    for _ in 0..steps {
        changes.step();
        // Half the changes are waited for, so that the controllers see them one by one
        // (each an incremental run) as well as in batches.
        if changes.rng.gen_bool(0.5) {
            changes.log.push("--wait=hv sync".into());
            central
                .wait_hv_sync()
                .unwrap_or_else(|e| panic!("--wait=hv sync: {e}\nsteps:\n{}", changes.steps()));
        }
    }
    for (name, added) in &changes.ports {
        if let Err(e) = wait_port_up(central, name) {
            panic!(
                "{name} (on {}, {}) never up: {e}\nsteps:\n{}",
                added.chassis,
                added.switch,
                changes.steps()
            );
        }
    }
    // A chassis takes the external port once BFD shows it the highest-priority member that
    // is up, which can be after the last change: the comparison starts from that state.
    if let Err(e) = wait_bound(central, "ext1", changes.ha_active) {
        panic!("{e}\nsteps:\n{}", changes.steps());
    }
    central
        .wait_hv_sync()
        .unwrap_or_else(|e| panic!("--wait=hv sync: {e}"));
    Sequence {
        meter: match (changes.logged_acls, changes.meter_present) {
            (0, _) => MeterWanted::Unused,
            (_, false) => MeterWanted::Absent,
            (_, true) => MeterWanted::Rate(changes.meter_rate),
        },
        log: changes.log,
    }
}

/// Waits (up to 30 s) until logical port `port` is bound to `chassis`.
fn wait_bound(
    central: &integration::Central,
    port: &str,
    chassis: &str,
) -> integration::Result<()> {
    integration::host::wait_for(
        &format!("{port} bound to {chassis}"),
        std::time::Duration::from_secs(30),
        || Ok((central.port_binding_chassis(port)?.as_deref() == Some(chassis)).then_some(())),
    )
}

/// The switch's meters on `chassis` that have no band of rate `rate`.
fn meters_without_rate(net: &Net, chassis: &str, rate: u32) -> Vec<String> {
    let wanted = format!("rate={rate}");
    match common::group_meter_dump(&net.lab, chassis) {
        Ok(lines) => {
            let meters: Vec<String> = lines
                .into_iter()
                .filter(|l| l.starts_with("meter="))
                .collect();
            if meters.is_empty() {
                return vec!["no meter at all".to_owned()];
            }
            meters
                .into_iter()
                .filter(|m| !m.split_whitespace().any(|w| w == wanted))
                .collect()
        }
        Err(e) => vec![format!("dump-meters: {e}")],
    }
}

/// The switch's meters on `chassis` (there should be none).
fn meters_left(net: &Net, chassis: &str) -> Vec<String> {
    match common::group_meter_dump(&net.lab, chassis) {
        Ok(lines) => lines
            .into_iter()
            .filter(|l| l.starts_with("meter="))
            .collect(),
        Err(e) => vec![format!("dump-meters: {e}")],
    }
}

#[test]
fn random_changes_then_a_fresh_start_install_the_same_flows() {
    let seed: u64 = std::env::var("OVN_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_secs())
        });
    let steps: usize = std::env::var("OVN_STEPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    eprintln!("OVN_SEED={seed} OVN_STEPS={steps}");
    let mut problems = Vec::new();
    let scripts = tempfile::tempdir().expect("a temporary directory");
    let mut setups = Setup::oracle_and_agent(&CHASSIS);
    let agent = setups[1].controllers[0].1.clone();
    let batched = common::agent_with_args(scripts.path(), &agent, &["--compile-batch-lflows", "8"])
        .unwrap_or_else(|e| panic!("{e}"));
    let mut small_batches = Setup::all(&batched, &CHASSIS);
    small_batches.label = "ovn-agent, batches of 8".to_owned();
    setups.push(small_batches);
    for setup in setups {
        let label = setup.label.clone();
        let mut net = two_switches_one_router(&setup, &CHASSIS)
            .unwrap_or_else(|e| panic!("[{label}] build the lab: {e}"));
        let problems_before = problems.len();
        let full_at_start: Vec<Option<u64>> = CHASSIS
            .iter()
            .map(|c| common::agent_counter(&net, c, "full recomputes"))
            .collect();
        let Sequence { log, meter } = run_sequence(&net, seed, steps);
        if !matches!(meter, MeterWanted::Unused) {
            for chassis in CHASSIS {
                let wrong = match meter {
                    MeterWanted::Rate(rate) => meters_without_rate(&net, chassis, rate),
                    _ => meters_left(&net, chassis),
                };
                if !wrong.is_empty() {
                    problems.push(format!(
                        "[{label}] {chassis}: meter m1's rate is {}, the switch has {wrong:?}",
                        match meter {
                            MeterWanted::Rate(r) => format!("{r} pktps"),
                            _ => "none (NB has no meter m1)".to_owned(),
                        }
                    ));
                }
            }
        }
        if setup.controller("hv1") != Some(&integration::Controller::OvnController) {
            for (chassis, full_at_start) in CHASSIS.iter().zip(&full_at_start) {
                let stats = common::show_stats(&net, chassis);
                let paths: Vec<&str> = stats
                    .lines()
                    .filter(|l| l.starts_with("dependency runs") || l.starts_with("full recompute"))
                    .collect();
                eprintln!("[{label}] {chassis}: {}", paths.join("; "));
                if setup.label.contains("batches") {
                    let batched_runs = common::agent_counter(&net, chassis, "in batches");
                    if batched_runs.is_none_or(|n| n == 0) {
                        problems.push(format!(
                            "[{label}] {chassis}: no incremental run compiled in batches ({batched_runs:?})"
                        ));
                    }
                }
                // Full recomputes are the start's only.
                let full = common::agent_counter(&net, chassis, "full recomputes");
                if full.is_none() || full != *full_at_start {
                    problems.push(format!(
                        "[{label}] {chassis}: {full_at_start:?} full recomputes after the start, \
                         {full:?} after the changes: {}",
                        paths.join("; ")
                    ));
                }
            }
        }
        let outcome = common::restart_changes_no_flow(&mut net, &CHASSIS);
        eprintln!(
            "[{label}] {} steps, then restarts: {} problem(s)",
            log.len(),
            outcome.failures.len()
        );
        problems.extend(outcome.failures.iter().map(|f| format!("[{label}] {f}")));
        if problems.len() > problems_before {
            eprintln!("[{label}] steps:\n{}", log.join("\n"));
            net.lab.keep_dir();
        }
    }
    assert!(
        problems.is_empty(),
        "OVN_SEED={seed}: {}",
        problems.join("\n")
    );
}
