// The values compared are counts and sums of whole numbers, exact in text and in f64.
#![allow(clippy::float_cmp)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use prometheus_parse::{Scrape, Value};
use sbclient::Uuid;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::observe::PutSent;
use super::*;
use crate::engine::core::{Engine, EngineOptions};
use crate::lflow::of::{Flow, FlowMatch};
use crate::owner::Owner;
use crate::runtime::BindingKind;
use crate::stopwatch::Stopwatches;

fn parse(text: &str) -> Scrape {
    Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).expect("parsable exposition")
}

/// The value of the sample `name` whose labels include `labels`.
fn value(scrape: &Scrape, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    scrape
        .samples
        .iter()
        .find(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .and_then(|s| match &s.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => Some(*v),
            _ => None,
        })
}

/// `(count, sum)` of histogram `name`.
fn histogram(scrape: &Scrape, name: &str, labels: &[(&str, &str)]) -> (f64, f64) {
    let count = value(scrape, &format!("{name}_count"), labels).unwrap_or(0.0);
    let sum = value(scrape, &format!("{name}_sum"), labels).unwrap_or(0.0);
    (count, sum)
}

/// The `# TYPE` of every family in the text.
fn types(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_once(' '))
        .map(|(n, t)| (n.to_owned(), t.to_owned()))
        .collect()
}

/// A chassis configuration as ovs-vsctl would set it.
fn chassis_row(pairs: &[(&str, &str)]) -> sbclient::vswitch::OpenVswitch {
    let mut row = sbclient::vswitch::OpenVswitch::default();
    for (k, v) in pairs {
        row.external_ids.insert((*k).to_owned(), (*v).to_owned());
    }
    row
}

const CHASSIS: &[(&str, &str)] = &[
    ("system-id", "hv1"),
    ("ovn-remote", "tcp:10.0.0.1:6642"),
    ("ovn-encap-type", "geneve"),
    ("ovn-encap-ip", "192.168.0.1"),
    ("ovn-bridge-mappings", "phys:br-phys"),
    ("ovn-monitor-all", "true"),
    ("ovn-openflow-probe-interval", "30"),
];

fn configure(engine: &mut Engine, row: &sbclient::vswitch::OpenVswitch) {
    engine.cfg = Some(
        crate::engine::config::ChassisConfig::from_ovs(Some(row), None, None, "host", None)
            .unwrap(),
    );
}

#[test]
fn every_family_is_exposed_with_its_type() {
    // Families show once they have a series: give each one.
    let (mut engine, mut observer, metrics) = observed();
    configure(&mut engine, &chassis_row(CHASSIS));
    engine.flows.replace(lflow(1), vec![flow(3, 1)]);
    engine.stats.full_recomputes = 1;
    engine.stats.recompute_reasons.insert("start".to_owned(), 1);
    observer.after_run(&engine, None, Instant::now(), &Stopwatches::default());
    let text = metrics.encode();
    let types = types(&text);
    let expected = [
        ("ovn_controller_build_info", "gauge"),
        ("ovn_controller_southbound_database_connected", "gauge"),
        ("ovn_controller_integration_bridge_openflow", "counter"),
        ("ovn_controller_integration_bridge_patch_ports", "gauge"),
        ("ovn_controller_integration_bridge_geneve_ports", "gauge"),
        ("ovn_controller_remote_probe_interval_seconds", "gauge"),
        ("ovn_controller_openflow_probe_interval_seconds", "gauge"),
        ("ovn_controller_monitor_all", "gauge"),
        ("ovn_controller_encap_ip", "gauge"),
        ("ovn_controller_encap_type", "gauge"),
        ("ovn_controller_sb_connection_method", "gauge"),
        ("ovn_controller_bridge_mappings", "gauge"),
        ("ovn_controller_lflow_run", "gauge"),
        ("ovn_agent_build_info", "gauge"),
        ("ovn_agent_engine_runs", "counter"),
        ("ovn_agent_compile_duration_seconds", "histogram"),
        ("ovn_agent_full_recomputes", "counter"),
        ("ovn_agent_incremental_lflows", "counter"),
        ("ovn_agent_flows", "gauge"),
        ("ovn_agent_flow_mods", "counter"),
        ("ovn_agent_bundle_messages", "histogram"),
        ("ovn_agent_bundle_bytes", "histogram"),
        ("ovn_agent_bundle_duration_seconds", "histogram"),
        ("ovn_agent_bundle_failures", "counter"),
        ("ovn_agent_sb_lag_seconds", "histogram"),
        ("ovn_agent_port_claims", "counter"),
        ("ovn_agent_port_releases", "counter"),
        ("ovn_agent_bound_ports", "gauge"),
        ("ovn_agent_rejected_lflows", "gauge"),
        ("ovn_agent_rejected_flows", "counter"),
        ("ovn_agent_bad_rows", "counter"),
        ("ovn_agent_openflow_connected", "gauge"),
    ];
    let stopwatch_gauges: Vec<String> = STOPWATCHES
        .iter()
        .flat_map(|(prefix, _)| {
            [
                "total_samples",
                "maximum",
                "minimum",
                "95th_percentile",
                "short_term_avg",
                "long_term_avg",
            ]
            .map(|what| format!("ovn_controller_{prefix}_{what}"))
        })
        .collect();
    let expected: BTreeMap<String, String> = expected
        .iter()
        .map(|(n, t)| ((*n).to_owned(), (*t).to_owned()))
        .chain(
            stopwatch_gauges
                .into_iter()
                .map(|n| (n, "gauge".to_owned())),
        )
        .collect();
    assert_eq!(types, expected);
    assert!(
        text.ends_with("# EOF\n"),
        "an OpenMetrics exposition ends in # EOF"
    );
    for name in expected.keys() {
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("# HELP {name} "))),
            "{name} has no HELP"
        );
    }
}

#[test]
fn a_fresh_registry_reads_as_prometheus_text() {
    let text = Metrics::new().encode();
    let s = parse(&text);
    assert_eq!(
        value(
            &s,
            "ovn_controller_build_info",
            &[("version", crate::appctl::COMPATIBLE_OVN_VERSION)]
        ),
        Some(1.0)
    );
    assert_eq!(
        value(
            &s,
            "ovn_agent_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))]
        ),
        Some(1.0)
    );
    // Counters carry the _total suffix, as ovn-kubernetes' CounterFunc exposes them.
    assert!(text.contains("\novn_controller_integration_bridge_openflow_total 0\n"));
    assert_eq!(
        value(&s, "ovn_controller_southbound_database_connected", &[]),
        Some(0.0)
    );
    // Histograms have their buckets up to +Inf.
    let lag = s
        .samples
        .iter()
        .find(|x| x.metric == "ovn_agent_sb_lag_seconds")
        .expect("the lag histogram");
    match &lag.value {
        Value::Histogram(buckets) => {
            assert!(buckets.iter().any(|b| b.less_than.is_infinite()));
            assert!(buckets.iter().all(|b| b.count == 0.0));
        }
        other => panic!("not a histogram: {other:?}"),
    }
}

fn flow(table: u8, priority: u16) -> Flow {
    Flow {
        table,
        priority,
        cookie: 0,
        m: FlowMatch::new(),
        actions: Arc::new(Vec::new()),
    }
}

fn lflow(n: u128) -> Owner {
    Owner::Lflow(Uuid::from_u128(n))
}

fn observed() -> (Engine, Observer, Arc<Metrics>) {
    let metrics = Arc::new(Metrics::new());
    (
        Engine::new(EngineOptions::default()),
        Observer::new(metrics.clone()),
        metrics,
    )
}

#[test]
fn engine_state_becomes_metrics() {
    let (mut engine, mut observer, metrics) = observed();
    engine
        .flows
        .replace(lflow(1), vec![flow(3, 1), flow(3, 2), flow(40, 1)]);
    engine.flows.replace(lflow(2), vec![flow(0, 100)]);
    engine.stats.runs = 3;
    engine.stats.full_recomputes = 1;
    engine.stats.recompute_reasons.insert("start".to_owned(), 1);
    engine.stats.bad_rows = 2;
    engine.sb_connected = true;
    engine
        .failures
        .insert(lflow(7), "does not compile".to_owned());
    engine
        .failures
        .insert(Owner::PhysicalPort(Uuid::from_u128(8)), "no".to_owned());
    for n in 1..=3 {
        engine
            .runtime
            .bound
            .insert(Uuid::from_u128(n), BindingKind::Claimed);
    }
    observer.after_run(&engine, None, Instant::now(), &Stopwatches::default());
    let s = parse(&metrics.encode());
    assert_eq!(value(&s, "ovn_agent_flows", &[("table", "3")]), Some(2.0));
    assert_eq!(value(&s, "ovn_agent_flows", &[("table", "40")]), Some(1.0));
    assert_eq!(value(&s, "ovn_agent_flows", &[("table", "0")]), Some(1.0));
    assert_eq!(
        value(&s, "ovn_agent_flows", &[("table", "1")]),
        None,
        "a table that never had flows is not shown"
    );
    assert_eq!(
        value(&s, "ovn_controller_integration_bridge_openflow_total", &[]),
        Some(4.0)
    );
    assert_eq!(value(&s, "ovn_agent_engine_runs_total", &[]), Some(3.0));
    assert_eq!(
        value(
            &s,
            "ovn_agent_full_recomputes_total",
            &[("reason", "start")]
        ),
        Some(1.0)
    );
    assert_eq!(
        histogram(
            &s,
            "ovn_agent_compile_duration_seconds",
            &[("mode", "full")]
        )
        .0,
        1.0
    );
    assert_eq!(value(&s, "ovn_agent_bad_rows_total", &[]), Some(2.0));
    assert_eq!(value(&s, "ovn_agent_rejected_lflows", &[]), Some(1.0));
    assert_eq!(
        value(&s, "ovn_controller_southbound_database_connected", &[]),
        Some(1.0)
    );
    assert_eq!(value(&s, "ovn_agent_port_claims_total", &[]), Some(3.0));
    assert_eq!(value(&s, "ovn_agent_bound_ports", &[]), Some(3.0));

    // Changes move the metrics: a release, a new claim, flows gone, more recomputes.
    engine.runtime.bound.remove(&Uuid::from_u128(1));
    engine
        .runtime
        .bound
        .insert(Uuid::from_u128(9), BindingKind::Claimed);
    engine.flows.remove(lflow(1));
    engine.stats.runs = 5;
    engine.stats.full_recomputes = 3;
    engine.stats.recompute_reasons.insert("start".to_owned(), 1);
    engine
        .stats
        .recompute_reasons
        .insert("Chassis_Template_Var changed".to_owned(), 2);
    engine.sb_connected = false;
    observer.after_run(&engine, None, Instant::now(), &Stopwatches::default());
    let s = parse(&metrics.encode());
    assert_eq!(value(&s, "ovn_agent_port_claims_total", &[]), Some(4.0));
    assert_eq!(value(&s, "ovn_agent_port_releases_total", &[]), Some(1.0));
    assert_eq!(
        value(&s, "ovn_agent_flows", &[("table", "3")]),
        Some(0.0),
        "a table whose flows went shows 0"
    );
    assert_eq!(
        value(&s, "ovn_controller_integration_bridge_openflow_total", &[]),
        Some(1.0)
    );
    assert_eq!(value(&s, "ovn_agent_engine_runs_total", &[]), Some(5.0));
    assert_eq!(
        value(
            &s,
            "ovn_agent_full_recomputes_total",
            &[("reason", "Chassis_Template_Var changed")]
        ),
        Some(2.0)
    );
    assert_eq!(
        value(
            &s,
            "ovn_agent_full_recomputes_total",
            &[("reason", "start")]
        ),
        Some(1.0)
    );
    assert_eq!(
        value(&s, "ovn_controller_southbound_database_connected", &[]),
        Some(0.0)
    );
}

/// Applies a Southbound update (a new SB_Global row) to the engine's replica.
fn southbound_change(engine: &mut Engine, n: u128) {
    let text = serde_json::json!({
        "SB_Global": { Uuid::from_u128(n).to_string(): {"insert": {"nb_cfg": 1}} }
    })
    .to_string();
    let raw = serde_json::value::RawValue::from_string(text).unwrap();
    engine.inputs.sb.replica.apply_update(&raw).unwrap();
}

fn put(seq: u64) -> PutSent {
    PutSent {
        seq,
        messages: 10,
        bytes: 1000,
    }
}

#[test]
fn southbound_lag_runs_from_the_change_to_the_confirmed_put() {
    let (mut engine, mut observer, metrics) = observed();
    let before_change = Instant::now();
    southbound_change(&mut engine, 1);
    engine.flows.replace(lflow(1), vec![flow(3, 1)]);
    // The first run sees the change, but the put waits (no switch yet): pending flows.
    observer.after_run(&engine, None, Instant::now(), &Stopwatches::default());
    std::thread::sleep(Duration::from_millis(20));
    observer.after_run(
        &engine,
        Some(put(1)),
        Instant::now(),
        &Stopwatches::default(),
    );
    observer.after_put(&engine, 1, true);
    let waited = before_change.elapsed().as_secs_f64();
    let s = parse(&metrics.encode());
    let (count, sum) = histogram(&s, "ovn_agent_sb_lag_seconds", &[]);
    assert_eq!(count, 1.0);
    assert!(
        (0.02..=waited).contains(&sum),
        "lag {sum} s from the first run that saw the change"
    );
    assert_eq!(
        histogram(&s, "ovn_agent_bundle_duration_seconds", &[]).0,
        1.0
    );
    let (messages, total) = histogram(&s, "ovn_agent_bundle_messages", &[]);
    assert_eq!((messages, total), (1.0, 10.0));
    assert_eq!(histogram(&s, "ovn_agent_bundle_bytes", &[]).1, 1000.0);

    // A change that alters no flow (nothing pending, no put) is not a lag sample.
    engine.flows.commit();
    southbound_change(&mut engine, 2);
    observer.after_run(&engine, None, Instant::now(), &Stopwatches::default());
    observer.after_run(
        &engine,
        Some(put(2)),
        Instant::now(),
        &Stopwatches::default(),
    );
    observer.after_put(&engine, 2, true);
    let s = parse(&metrics.encode());
    assert_eq!(histogram(&s, "ovn_agent_sb_lag_seconds", &[]).0, 1.0);
    assert_eq!(
        histogram(&s, "ovn_agent_bundle_duration_seconds", &[]).0,
        2.0
    );

    // A refused put hands its change to the next one; a put lost with the connection too.
    southbound_change(&mut engine, 3);
    observer.after_run(
        &engine,
        Some(put(3)),
        Instant::now(),
        &Stopwatches::default(),
    );
    engine.stats.put_failures = 1;
    observer.after_put(&engine, 3, false);
    observer.after_run(
        &engine,
        Some(put(4)),
        Instant::now(),
        &Stopwatches::default(),
    );
    observer.after_run(
        &engine,
        Some(put(5)),
        Instant::now(),
        &Stopwatches::default(),
    );
    observer.after_put(&engine, 4, true);
    let s = parse(&metrics.encode());
    assert_eq!(
        histogram(&s, "ovn_agent_sb_lag_seconds", &[]).0,
        1.0,
        "put 4 was lost: its confirmation is not expected"
    );
    observer.after_put(&engine, 5, true);
    let s = parse(&metrics.encode());
    assert_eq!(histogram(&s, "ovn_agent_sb_lag_seconds", &[]).0, 2.0);
    assert_eq!(value(&s, "ovn_agent_bundle_failures_total", &[]), Some(1.0));
}

#[test]
fn coverage_and_stopwatches_are_exported_under_ovn_kubernetes_names() {
    let (engine, mut observer, metrics) = observed();
    let mut watches = Stopwatches::default();
    watches.add("flow-generation", Duration::from_millis(4));
    watches.add("flow-generation", Duration::from_millis(2));
    watches.add("flow-installation", Duration::from_millis(7));
    // Other tests' engines count into the same process-wide coverage counter.
    crate::coverage::LFLOW_RUN.inc();
    let before = crate::coverage::LFLOW_RUN.total();
    observer.after_run(&engine, None, Instant::now(), &watches);
    let after = crate::coverage::LFLOW_RUN.total();
    let s = parse(&metrics.encode());
    let lflow_run = value(&s, "ovn_controller_lflow_run", &[]).unwrap() as u64;
    assert!((before..=after).contains(&lflow_run), "{lflow_run}");
    let get = |name: &str| value(&s, name, &[]).unwrap_or_else(|| panic!("no {name}"));
    assert_eq!(get("ovn_controller_flow_generation_total_samples"), 2.0);
    assert_eq!(get("ovn_controller_flow_generation_maximum"), 4.0);
    assert_eq!(get("ovn_controller_flow_generation_minimum"), 2.0);
    assert_eq!(get("ovn_controller_flow_generation_95th_percentile"), 4.0);
    assert_eq!(get("ovn_controller_flow_generation_short_term_avg"), 3.0);
    assert_eq!(get("ovn_controller_flow_installation_total_samples"), 1.0);
    assert_eq!(get("ovn_controller_flow_installation_long_term_avg"), 7.0);
    for (prefix, _) in STOPWATCHES {
        if !prefix.starts_with("flow_") {
            assert_eq!(get(&format!("ovn_controller_{prefix}_total_samples")), 0.0);
        }
    }
}

#[test]
fn chassis_configuration_is_labelled_as_ovn_kubernetes_labels_it() {
    let (mut engine, mut observer, metrics) = observed();
    let mut row = chassis_row(CHASSIS);
    configure(&mut engine, &row);
    observer.after_run(&engine, None, Instant::now(), &Stopwatches::default());
    let s = parse(&metrics.encode());
    let one = |name: &str, label: &str, v: &str| value(&s, name, &[(label, v)]);
    assert_eq!(
        one("ovn_controller_encap_ip", "ipaddress", "192.168.0.1"),
        Some(1.0)
    );
    assert_eq!(
        one("ovn_controller_encap_type", "type", "geneve"),
        Some(1.0)
    );
    assert_eq!(
        one(
            "ovn_controller_sb_connection_method",
            "connection_method",
            "tcp:10.0.0.1:6642"
        ),
        Some(1.0)
    );
    assert_eq!(
        one("ovn_controller_bridge_mappings", "mapping", "phys:br-phys"),
        Some(1.0)
    );
    assert_eq!(value(&s, "ovn_controller_monitor_all", &[]), Some(1.0));
    assert_eq!(
        value(&s, "ovn_controller_openflow_probe_interval_seconds", &[]),
        Some(30.0)
    );
    assert_eq!(
        value(&s, "ovn_controller_remote_probe_interval_seconds", &[]),
        Some(5.0),
        "the default probe of a tcp: remote"
    );
    // A new encap IP replaces the old series.
    row.external_ids
        .insert("ovn-encap-ip".to_owned(), "192.168.0.9".to_owned());
    configure(&mut engine, &row);
    observer.after_run(&engine, None, Instant::now(), &Stopwatches::default());
    let s = parse(&metrics.encode());
    let ips: Vec<&str> = s
        .samples
        .iter()
        .filter(|x| x.metric == "ovn_controller_encap_ip")
        .filter_map(|x| x.labels.get("ipaddress"))
        .collect();
    assert_eq!(ips, ["192.168.0.9"]);
}

/// One HTTP/1.1 exchange on a new connection: head and body (both empty when the server
/// closed or reset the connection without an answer).
async fn http(addr: std::net::SocketAddr, request: &str) -> (String, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut reply = Vec::new();
    if stream.write_all(request.as_bytes()).await.is_ok() {
        let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut reply))
            .await
            .expect("the server closes the connection after one answer");
        if read.is_err() {
            reply.clear();
        }
    }
    let reply = String::from_utf8(reply).unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
    (head.to_owned(), body.to_owned())
}

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n")
}

async fn started(limits: ServerLimits) -> (std::net::SocketAddr, Arc<Metrics>) {
    let metrics = Arc::new(Metrics::new());
    let server = MetricsServer::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = server.local_addr();
    assert_ne!(addr.port(), 0);
    server.spawn(metrics.clone(), limits);
    (addr, metrics)
}

#[tokio::test]
async fn the_endpoint_serves_metrics_and_nothing_else() {
    let (addr, metrics) = started(ServerLimits::default()).await;
    metrics.agent.port_claims.inc_by(7);
    let (head, body) = http(addr, &get("/metrics")).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/openmetrics-text; version=1.0.0"),
        "{head}"
    );
    assert_eq!(
        value(&parse(&body), "ovn_agent_port_claims_total", &[]),
        Some(7.0)
    );
    let (head, _) = http(addr, &get("/")).await;
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    let (head, _) = http(addr, &get("/metrics/extra")).await;
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    let (head, _) = http(
        addr,
        "POST /metrics HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n",
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 405"), "{head}");
    let (head, _) = http(addr, "garbage\r\n\r\n").await;
    assert!(
        head.is_empty() || head.starts_with("HTTP/1.1 400"),
        "a malformed request gets 400 or a closed connection: {head}"
    );
}

#[tokio::test]
async fn idle_or_excess_clients_cannot_hold_the_endpoint() {
    let limits = ServerLimits {
        connections: 2,
        header_timeout: Duration::from_millis(300),
        exchange_timeout: Duration::from_millis(600),
        buffer: 8 * 1024,
    };
    let (addr, _) = started(limits).await;
    // Two clients that connect and say nothing take both slots...
    let mut idle = Vec::new();
    for _ in 0..2 {
        idle.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    // ...so a third is closed at once, without an answer.
    let (head, _) = http(addr, &get("/metrics")).await;
    assert_eq!(head, "", "over the limit: closed");
    // The idle ones are cut off by the header deadline; then scrapes work again.
    for stream in &mut idle {
        let mut buf = [0u8; 64];
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
            .await
            .expect("the idle connection is closed by the server");
        assert!(n.is_err() || n.is_ok_and(|n| n < buf.len()));
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (head, _) = http(addr, &get("/metrics")).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    // A client with headers too large for the buffer is refused.
    let huge = format!(
        "GET /metrics HTTP/1.1\r\nHost: t\r\nX-Big: {}\r\n\r\n",
        "a".repeat(64 * 1024)
    );
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let _ = stream.write_all(huge.as_bytes()).await;
    let mut reply = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut reply)).await;
    let reply = String::from_utf8_lossy(&reply);
    assert!(
        !reply.starts_with("HTTP/1.1 200"),
        "oversized headers are not served: {reply}"
    );
}

#[tokio::test]
async fn a_used_address_is_a_clear_error() {
    let first = MetricsServer::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let error = MetricsServer::bind(first.local_addr()).await.unwrap_err();
    let text = error.to_string();
    assert!(
        text.starts_with(&format!(
            "cannot listen for metrics on {}",
            first.local_addr()
        )),
        "{text}"
    );
}
