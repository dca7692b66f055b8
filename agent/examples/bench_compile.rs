//! Compile benchmark on a synthetic Southbound: the reference sandbox replicated N times (new
//! uuids, datapath keys and port names per copy) plus, per copy, ACL lflows over 100-address
//! sets. Prints, separately, SB load (JSON into the typed replica), compile, encode to
//! flow_mod bytes and peak RSS, single-threaded and on all cores.
//!
//! `cargo run --release -p agent --example bench_compile -- [COPIES] [ACLS_PER_COPY]`
//! (defaults 40 and 81: ~34k lflows, ~400k flows). `BENCH_DUMP=PATH` also writes the sorted
//! flows to `PATH.t1` and `PATH.tN` (to check that a change keeps the output).

use std::collections::HashSet;
use std::fmt::Write as _;
use std::time::Instant;

use agent::compile::{compile_all, Context};
use agent::compile_cmd::peak_rss_kib;
use agent::lflow::flows::MatchCache;
use agent::lflow::layout::TableLayout;
use agent::southbound::Southbound;
use agent::view::{Ids, SbView};
use bytes::BytesMut;
use openflow::flow::FlowModCommand;
use serde_json::{json, Value};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");

/// Tables copied per replica; the others (chassis, HA, templates, address sets) are shared.
const REPLICATED: [&str; 8] = [
    "Datapath_Binding",
    "Port_Binding",
    "Multicast_Group",
    "Logical_DP_Group",
    "Logical_Flow",
    "Port_Group",
    "Load_Balancer",
    "MAC_Binding",
];

fn tables() -> Vec<Value> {
    let mut files: Vec<_> = std::fs::read_dir(format!("{DATA}/sandbox"))
        .expect("sandbox dir")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    files.push(format!("{DATA}/lflows_final.json").into());
    files
        .iter()
        .map(|f| serde_json::from_str(&std::fs::read_to_string(f).expect("read")).expect("json"))
        .collect()
}

fn table_name(t: &Value) -> String {
    // The sandbox files have no caption; load one alone to learn what it is.
    let mut sb = Southbound::default();
    sb.load_json(&t.to_string()).expect("load");
    sb.tables.into_iter().next().expect("a table")
}

/// Rewrites one value of copy `c`: uuids of replicated rows, quoted port names, names.
fn rewrite(v: &Value, c: u32, uuids: &HashSet<String>, ports: &[String]) -> Value {
    match v {
        Value::Array(a) if a.len() == 2 && a[0] == "uuid" => {
            let u = a[1].as_str().unwrap_or_default();
            if uuids.contains(u) {
                json!(["uuid", format!("{c:04x}{}", &u[4..])])
            } else {
                v.clone()
            }
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| rewrite(x, c, uuids, ports)).collect()),
        Value::String(s) if c > 0 => {
            let mut s = s.clone();
            for p in ports {
                if s == *p {
                    return Value::String(format!("{p}-c{c}"));
                }
                s = s.replace(&format!("\"{p}\""), &format!("\"{p}-c{c}\""));
            }
            Value::String(s)
        }
        _ => v.clone(),
    }
}

fn synth(copies: u32, acls: u32) -> String {
    let base = tables();
    let named: Vec<(String, Value)> = base.into_iter().map(|t| (table_name(&t), t)).collect();
    let mut uuids = HashSet::new();
    let mut ports = Vec::new();
    for (name, t) in &named {
        let heads: Vec<&str> = t["headings"]
            .as_array()
            .expect("headings")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        for row in t["data"].as_array().expect("data") {
            if REPLICATED.contains(&name.as_str()) {
                uuids.insert(row[0][1].as_str().unwrap_or_default().to_owned());
            }
            if name == "Port_Binding" {
                if let Some(i) = heads.iter().position(|h| *h == "logical_port") {
                    ports.push(row[i].as_str().unwrap_or_default().to_owned());
                }
            }
        }
    }
    // Longest names first, so that "sw0-p1" is not rewritten inside "sw0-p10".
    ports.sort_by_key(|p| std::cmp::Reverse(p.len()));
    let mut out = String::new();
    for (name, t) in &named {
        let heads: Vec<String> = t["headings"]
            .as_array()
            .expect("headings")
            .iter()
            .filter_map(|h| h.as_str().map(String::from))
            .collect();
        let col = |n: &str| heads.iter().position(|h| h == n);
        let mut data = Vec::new();
        let n_copies = if REPLICATED.contains(&name.as_str()) {
            copies
        } else {
            1
        };
        for c in 0..n_copies {
            for row in t["data"].as_array().expect("data") {
                let mut r = rewrite(row, c, &uuids, &ports);
                let key_off = c * 16;
                if name == "Datapath_Binding" {
                    if let Some(i) = col("tunnel_key") {
                        r[i] = json!(row[i].as_u64().unwrap_or(0) + u64::from(key_off));
                    }
                }
                if name == "Port_Group" && c > 0 {
                    if let Some(i) = col("name") {
                        let n = row[i].as_str().unwrap_or_default();
                        if let Some((k, rest)) = n.split_once('_') {
                            let key: u32 = k.parse().unwrap_or(0);
                            r[i] = json!(format!("{}_{rest}", key + key_off));
                        }
                    }
                }
                data.push(r);
            }
        }
        if name == "Logical_Flow" {
            for c in 0..copies {
                let sw0 = format!("{c:04x}8436-d3f1-46e9-8cae-88e25d5f7a8f");
                for a in 0..acls {
                    let mut row = vec![Value::Null; heads.len()];
                    let set = |row: &mut Vec<Value>, n: &str, v: Value| {
                        if let Some(i) = col(n) {
                            row[i] = v;
                        }
                    };
                    set(
                        &mut row,
                        "_uuid",
                        json!(["uuid", format!("ac{c:06x}-{a:04x}-4000-8000-000000000000")]),
                    );
                    set(&mut row, "logical_datapath", json!(["uuid", sw0]));
                    set(&mut row, "logical_dp_group", json!(["set", []]));
                    set(&mut row, "pipeline", json!("ingress"));
                    set(&mut row, "table_id", json!(8));
                    set(&mut row, "priority", json!(2000 + a));
                    set(
                        &mut row,
                        "match",
                        json!(format!("reg0[7] == 1 && (ip4.src == $big_{c}_{a} && tcp)")),
                    );
                    set(&mut row, "actions", json!("reg0[1] = 1; next;"));
                    set(&mut row, "external_ids", json!(["map", []]));
                    set(&mut row, "controller_meter", json!(["set", []]));
                    set(&mut row, "tags", json!(["map", []]));
                    let row: Vec<Value> = row
                        .into_iter()
                        .map(|v| if v.is_null() { json!(["set", []]) } else { v })
                        .collect();
                    data.push(Value::Array(row));
                }
            }
        }
        let _ = writeln!(
            out,
            "{}",
            json!({"caption": format!("{name} table"), "headings": heads, "data": data})
        );
    }
    let mut sets = Vec::new();
    for c in 0..copies {
        for a in 0..acls {
            let addrs: Vec<String> = (0..100)
                .map(|i| format!("10.{}.{}.{}", a % 250, i / 250, i % 250 + 1))
                .collect();
            sets.push(json!([
                ["uuid", format!("a5{c:06x}-{a:04x}-4000-8000-000000000000")],
                format!("big_{c}_{a}"),
                ["set", addrs]
            ]));
        }
    }
    let _ = writeln!(
        out,
        "{}",
        json!({"caption": "Address_Set table", "headings": ["_uuid", "name", "addresses"], "data": sets})
    );
    out
}

/// Resident set size now, in MiB.
fn rss_now() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .unwrap_or(0)
        / 1024
}

/// User+system CPU seconds of this process so far.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |x| x.1)
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // Fields after the command: state is index 0, utime 11, stime 12 (clock ticks, 100/s).
    (ticks(11) + ticks(12)) / 100.0
}

fn main() {
    let mut args = std::env::args().skip(1);
    let copies: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(40);
    let acls: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(81);
    let text = synth(copies, acls);
    eprintln!(
        "synthetic SB: {} MiB of JSON; RSS {} MiB",
        text.len() >> 20,
        rss_now()
    );
    let t = Instant::now();
    let cpu0 = cpu_seconds();
    let mut sb = Southbound::default();
    sb.load_json(&text).expect("synthetic SB loads");
    drop(text);
    eprintln!("after load: RSS {} MiB", rss_now());
    println!(
        "SB load: {:.3} s wall, {:.2} CPU-s; peak RSS so far {} MiB",
        t.elapsed().as_secs_f64(),
        cpu_seconds() - cpu0,
        peak_rss_kib().unwrap_or(0) / 1024
    );
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    for threads in [1, cores] {
        let ids = Ids::default();
        let view = SbView::new(&sb, "hv1", &ids);
        let cache = MatchCache::default();
        let cx = Context {
            view: &view,
            layout: &TableLayout::OVN_23_03,
            cache: &cache,
            only_dp: None,
            limit: agent::lflow::DEFAULT_FLOW_LIMIT,
        };
        let t = Instant::now();
        let cpu0 = cpu_seconds();
        let report = compile_all(&cx, threads);
        let (secs, cpu) = (t.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
        eprintln!("after compile: RSS {} MiB", rss_now());
        let t = Instant::now();
        let cpu1 = cpu_seconds();
        // As a bundle sender would: one flow_mod at a time into a reused buffer.
        let mut buf = BytesMut::with_capacity(1 << 16);
        let mut encoded = 0usize;
        for f in report.desired.iter() {
            buf.clear();
            let _ = openflow::flow::encode_flow_mod_body(
                &mut buf,
                FlowModCommand::Add,
                f.table,
                f.priority,
                f.cookie,
                f.m,
                f.actions,
            );
            encoded += buf.len();
        }
        let (enc_secs, enc_cpu) = (t.elapsed().as_secs_f64(), cpu_seconds() - cpu1);
        if let Some(path) = std::env::var_os("BENCH_DUMP") {
            let mut lines: Vec<String> = report.flows().iter().map(ToString::to_string).collect();
            lines.sort_unstable();
            let mut path = std::path::PathBuf::from(path);
            path.set_extension(format!("t{threads}"));
            std::fs::write(path, lines.join("\n")).expect("write dump");
        }
        println!(
            "threads {threads}: {} lflows ({} failed) -> {} flows; compile {secs:.3} s wall, {cpu:.2} CPU-s ({:.0} flows/s); encode {enc_secs:.3} s, {enc_cpu:.2} CPU-s ({} MiB of flow_mods); cache {} entries / {} hits; peak RSS {} MiB",
            report.lflows,
            report.failures.len(),
            report.desired.len(),
            report.desired.len() as f64 / secs,
            encoded >> 20,
            report.cache_entries,
            report.cache_hits,
            peak_rss_kib().unwrap_or(0) / 1024
        );
    }
}
