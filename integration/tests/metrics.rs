//! The `--metrics` endpoint of ovn-agent on a lab chassis, scraped over HTTP and read with a
//! Prometheus text parser, checked against the truth: the flows on the switch
//! (`ovs-ofctl dump-aggregate`), the ports bound to the chassis in the Southbound database,
//! the tunnel interfaces in the local OVS database, the connection. A new port moves the
//! counters. A bad `--metrics` address is a startup error.
//!
//! hv1 runs ovn-agent with `--metrics=127.0.0.1:0` (through a wrapper script, as ovn-ctl's
//! `--ovn-controller-wrapper` would run it); the port it picked is in its log. hv2 runs
//! ovn-agent without metrics, so that hv1 has a Geneve tunnel.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use integration::host::wait_for;
use integration::scenario::{add_switch, wait_port_up, VmPort};
use integration::{Chassis, Controller, HarnessError, Lab, Result};
use prometheus_parse::{Scrape, Value};

const TIMEOUT: Duration = Duration::from_secs(30);

fn agent_binary() -> PathBuf {
    match Controller::ovn_agent().expect("build ovn-agent") {
        Controller::OvnAgent(path) => path,
        other => panic!("not ovn-agent: {other:?}"),
    }
}

/// A script that runs `agent` with `extra` before the harness's arguments (`exec` keeps the
/// pid, and the program name stays the binary's).
fn wrapper(dir: &Path, agent: &Path, extra: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("ovn-agent-with-metrics");
    let script = format!("#!/bin/sh\nexec {} {extra} \"$@\"\n", agent.display());
    std::fs::write(&path, script).expect("write the wrapper");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
        .expect("make the wrapper executable");
    path
}

/// The address the agent on `chassis` serves metrics on, from its log.
fn metrics_address(chassis: &Chassis) -> Result<SocketAddr> {
    let log = chassis
        .controller()
        .map(|d| d.log().clone())
        .ok_or_else(|| HarnessError::Config("no controller on the chassis".into()))?;
    wait_for("the metrics address in the log", TIMEOUT, || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        Ok(text.lines().find_map(|l| {
            let rest = l.split("serving metrics on http://").nth(1)?;
            rest.strip_suffix("/metrics")?.parse().ok()
        }))
    })
}

/// One HTTP GET: the status code, the Content-Type and the body.
fn get(addr: SocketAddr, path: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).expect("connect to the metrics endpoint");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut reply = String::new();
    stream
        .read_to_string(&mut reply)
        .expect("read the answer (the server closes the connection after it)");
    let (head, body) = reply.split_once("\r\n\r\n").expect("a head and a body");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status code");
    let content_type = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_owned())
        })
        .unwrap_or_default();
    (status, content_type, body.to_owned())
}

fn scrape(addr: SocketAddr) -> Scrape {
    let (status, content_type, body) = get(addr, "/metrics");
    assert_eq!(status, 200, "{body}");
    assert!(
        content_type.starts_with("application/openmetrics-text"),
        "{content_type}"
    );
    Scrape::parse(body.lines().map(|l| Ok(l.to_owned()))).expect("a parsable exposition")
}

fn sample(s: &Scrape, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    s.samples
        .iter()
        .find(|x| x.metric == name && labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v)))
        .and_then(|x| match x.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => Some(v),
            _ => None,
        })
}

fn number(s: &Scrape, name: &str) -> u64 {
    let v = sample(s, name, &[]).unwrap_or_else(|| panic!("no sample {name}"));
    v as u64
}

/// The sum over every series of `name`.
fn total(s: &Scrape, name: &str) -> u64 {
    s.samples
        .iter()
        .filter(|x| x.metric == name)
        .filter_map(|x| match x.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => Some(v as u64),
            _ => None,
        })
        .sum()
}

fn histogram_count(s: &Scrape, name: &str) -> u64 {
    total(s, &format!("{name}_count"))
}

/// Scrapes until the agent's flows per table add up to what the switch has (a put may still
/// be in flight right after a change), and returns that scrape with the switch's count.
fn settled(addr: SocketAddr, chassis: &Chassis) -> Result<(Scrape, u64)> {
    let mut last = (0, 0);
    wait_for(
        "the metrics' flow count to match the switch",
        TIMEOUT,
        || {
            let s = scrape(addr);
            let on_switch = chassis.flow_count("br-int")?;
            let per_table = total(&s, "ovn_agent_flows");
            last = (per_table, on_switch);
            let openflow = number(&s, "ovn_controller_integration_bridge_openflow_total");
            Ok((per_table == on_switch && openflow == on_switch).then_some((s, on_switch)))
        },
    )
    .map_err(|e| HarnessError::Config(format!("{e} (metrics {} vs switch {})", last.0, last.1)))
}

fn interfaces_of_type(chassis: &Chassis, kind: &str) -> Result<Vec<String>> {
    let out = chassis.vsctl(&[
        "--bare",
        "--columns=name",
        "find",
        "Interface",
        &format!("type={kind}"),
    ])?;
    Ok(out.split_whitespace().map(str::to_owned).collect())
}

fn vm(name: &str, n: u8) -> VmPort {
    VmPort {
        name: name.to_owned(),
        mac: format!("f0:00:00:00:00:{n:02x}").parse().expect("a MAC"),
        ip: std::net::Ipv4Addr::new(10, 0, 0, n),
    }
}

#[test]
fn scraped_metrics_match_the_switch_and_the_databases() {
    let agent = agent_binary();
    let mut lab = Lab::start().expect("start the lab");
    let with_metrics = Controller::OvnAgent(wrapper(lab.dir(), &agent, "--metrics=127.0.0.1:0"));
    let plain = Controller::OvnAgent(agent.clone());
    lab.add_chassis("hv1", &with_metrics).expect("hv1");
    lab.add_chassis("hv2", &plain).expect("hv2");
    let central = lab.central();
    add_switch(central, "ls1", &[vm("vm1", 1), vm("vm2", 2), vm("vm3", 3)]).unwrap();
    let hv1 = lab.chassis("hv1").unwrap();
    hv1.add_vif("vm1", "vm1").unwrap();
    hv1.add_vif("vm2", "vm2").unwrap();
    lab.chassis("hv2").unwrap().add_vif("vm3", "vm3").unwrap();
    for port in ["vm1", "vm2", "vm3"] {
        wait_port_up(central, port).unwrap();
    }
    central.wait_hv_sync().unwrap();

    let addr = metrics_address(hv1).unwrap();
    assert!(addr.ip().is_loopback() && addr.port() != 0, "{addr}");
    let (s, flows) = settled(addr, hv1).unwrap();
    eprintln!("hv1: {flows} flows on br-int, as the metrics say");
    assert!(flows > 0);

    let bound = central.ports_bound_to("hv1").unwrap();
    assert_eq!(bound, ["vm1", "vm2"], "what hv1 binds");
    assert_eq!(
        number(&s, "ovn_agent_port_claims_total"),
        bound.len() as u64
    );
    assert_eq!(number(&s, "ovn_agent_bound_ports"), bound.len() as u64);
    assert_eq!(number(&s, "ovn_agent_port_releases_total"), 0);
    assert_eq!(
        number(&s, "ovn_controller_southbound_database_connected"),
        1
    );
    assert_eq!(number(&s, "ovn_agent_openflow_connected"), 1);
    let geneve = interfaces_of_type(hv1, "geneve").unwrap();
    assert_eq!(geneve.len(), 1, "one tunnel, to hv2: {geneve:?}");
    assert_eq!(
        number(&s, "ovn_controller_integration_bridge_geneve_ports"),
        geneve.len() as u64
    );
    let patch = interfaces_of_type(hv1, "patch").unwrap();
    assert_eq!(
        number(&s, "ovn_controller_integration_bridge_patch_ports"),
        patch.iter().filter(|p| p.contains("br-int")).count() as u64
    );
    assert_eq!(
        sample(
            &s,
            "ovn_controller_sb_connection_method",
            &[("connection_method", &central.sb_remote())]
        ),
        Some(1.0)
    );
    let encap_ip = hv1.encap_ip().unwrap().to_string();
    assert_eq!(
        sample(&s, "ovn_controller_encap_ip", &[("ipaddress", &encap_ip)]),
        Some(1.0)
    );
    assert_eq!(
        sample(&s, "ovn_controller_encap_type", &[("type", "geneve")]),
        Some(1.0)
    );
    // lflow_run is the coverage counter ovn-appctl reads; every full recompute is also
    // counted under its reason.
    let lflow_run = number(&s, "ovn_controller_lflow_run");
    let read = hv1
        .controller_appctl(&["coverage/read-counter", "lflow_run"])
        .unwrap();
    assert_eq!(read.trim().parse::<u64>().ok(), Some(lflow_run));
    assert!(number(&s, "ovn_controller_flow_generation_total_samples") >= 1);
    assert!(number(&s, "ovn_controller_flow_installation_total_samples") >= 1);
    assert!(lflow_run >= 1);
    assert_eq!(total(&s, "ovn_agent_full_recomputes_total"), lflow_run);
    let reasons: Vec<String> = s
        .samples
        .iter()
        .filter(|x| x.metric == "ovn_agent_full_recomputes_total")
        .filter_map(|x| x.labels.get("reason").map(str::to_owned))
        .collect();
    eprintln!("full recomputes: {lflow_run}, reasons {reasons:?}");
    assert!(!reasons.is_empty());
    assert!(histogram_count(&s, "ovn_agent_compile_duration_seconds") >= lflow_run);
    let bundles = histogram_count(&s, "ovn_agent_bundle_duration_seconds");
    assert!(bundles >= 1, "the flows went in bundles");
    assert!(histogram_count(&s, "ovn_agent_bundle_messages") >= bundles);
    assert!(histogram_count(&s, "ovn_agent_sb_lag_seconds") >= 1);
    assert!(number(&s, "ovn_agent_flow_mods_total") >= flows);
    assert_eq!(number(&s, "ovn_agent_rejected_lflows"), 0);
    assert!(sample(&s, "ovn_controller_build_info", &[("version", "23.03.1")]).is_some());

    // A new port on hv1: one more claim, its flows, a lag sample, more runs.
    let runs = number(&s, "ovn_agent_engine_runs_total");
    let lags = histogram_count(&s, "ovn_agent_sb_lag_seconds");
    let compiles = histogram_count(&s, "ovn_agent_compile_duration_seconds");
    add_switch_port(&lab, "ls1", &vm("vm4", 4));
    lab.chassis("hv1").unwrap().add_vif("vm4", "vm4").unwrap();
    wait_port_up(central, "vm4").unwrap();
    central.wait_hv_sync().unwrap();
    let (s, more_flows) = settled(addr, hv1).unwrap();
    assert!(
        more_flows > flows,
        "vm4 brings flows: {flows} -> {more_flows}"
    );
    let bound = central.ports_bound_to("hv1").unwrap();
    assert_eq!(bound, ["vm1", "vm2", "vm4"]);
    assert_eq!(number(&s, "ovn_agent_port_claims_total"), 3);
    assert_eq!(number(&s, "ovn_agent_bound_ports"), 3);
    assert!(number(&s, "ovn_agent_engine_runs_total") > runs);
    assert!(histogram_count(&s, "ovn_agent_sb_lag_seconds") > lags);
    assert!(histogram_count(&s, "ovn_agent_compile_duration_seconds") > compiles);

    // The port goes: a release.
    central.nbctl(&["lsp-del", "vm4"]).unwrap();
    central.wait_hv_sync().unwrap();
    let (s, fewer_flows) = settled(addr, hv1).unwrap();
    assert!(fewer_flows < more_flows);
    assert_eq!(number(&s, "ovn_agent_port_releases_total"), 1);
    assert_eq!(number(&s, "ovn_agent_bound_ports"), 2);

    // Only /metrics is served.
    let (status, _, _) = get(addr, "/");
    assert_eq!(status, 404);
}

fn add_switch_port(lab: &Lab, switch: &str, port: &VmPort) {
    lab.central()
        .nbctl(&[
            "lsp-add",
            switch,
            &port.name,
            "--",
            "lsp-set-addresses",
            &port.name,
            &format!("{} {}", port.mac, port.ip),
        ])
        .expect("add the port");
}

/// Runs `agent ARGS` in a directory of its own (its run and log directories) until it exits
/// by itself, within a deadline; returns its exit code and standard error.
fn run_to_exit(agent: &Path, args: &[&str]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().expect("a directory");
    let stderr_path = dir.path().join("stderr");
    let stderr = std::fs::File::create(&stderr_path).unwrap();
    let mut cmd = Command::new(agent);
    for var in ["OVS_RUNDIR", "OVN_RUNDIR", "OVN_LOGDIR", "OVN_SYSCONFDIR"] {
        cmd.env(var, dir.path());
    }
    let mut child = cmd
        .args(args)
        .arg(format!("unix:{}/db.sock", dir.path().display()))
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("start ovn-agent");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if Instant::now() >= deadline {
            // Our own child, by its pid.
            let _ = child.kill();
            let _ = child.wait();
            panic!("ovn-agent {args:?} did not exit");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (
        status,
        std::fs::read_to_string(&stderr_path).unwrap_or_default(),
    )
}

#[test]
fn a_bad_metrics_address_stops_the_start() {
    let agent = agent_binary();
    let (code, stderr) = run_to_exit(&agent, &["--metrics=localhost"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("\"localhost\" is not ADDR:PORT"),
        "{stderr}"
    );

    // An address that cannot be had: in use.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let (code, stderr) = run_to_exit(&agent, &[&format!("--metrics={addr}"), "-vconsole:off"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "cannot listen for metrics on {addr}: Address already in use"
        )),
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("Address already in use").count(),
        1,
        "{stderr}"
    );
}
