//! Compile benchmark on a synthetic Southbound: the reference sandbox replicated N times
//! (new datapath/port keys and uuids per copy) plus, per copy, ACL lflows over 100-address
//! sets. Prints lflows/s, flows/s and peak RSS, single-threaded and on all cores.
//!
//! `cargo run --release -p agent --example bench_compile -- [COPIES] [ACLS_PER_COPY]`
//! (defaults 40 and 81: ~34k lflows, ~400k flows). `BENCH_DUMP=PATH` also writes the
//! sorted flows to `PATH.t1` and `PATH.tN` (to check that a change keeps the output).

use std::time::Instant;

use agent::compile::{compile_all_threads, SbView};
use agent::lflow::layout::TableLayout;
use agent::sbdata::SbData;

fn synth(copies: u32, acls: u32) -> SbData {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    let mut base = SbData::default();
    for e in std::fs::read_dir(format!("{data}/sandbox")).expect("sandbox dir") {
        let p = e.expect("entry").path();
        base.load_str(&std::fs::read_to_string(p).expect("read"))
            .expect("load");
    }
    base.load_str(&std::fs::read_to_string(format!("{data}/lflows_final.json")).expect("read"))
        .expect("load");
    let mut sb = SbData {
        chassis: base.chassis.clone(),
        template_vars: base.template_vars.clone(),
        ..SbData::default()
    };
    let rename = |u: &str, c: u32| format!("{:08x}{}", c, &u[8..]);
    for c in 0..copies {
        let key_off = c * 16;
        for d in &base.datapaths {
            let mut d = d.clone();
            d.uuid = rename(&d.uuid, c);
            d.key += key_off;
            sb.datapaths.push(d);
        }
        for p in &base.port_bindings {
            let mut p = p.clone();
            p.datapath = rename(&p.datapath, c);
            if c > 0 {
                p.name = format!("{}-c{c}", p.name);
                if let Some(peer) = p.options.get_mut("peer") {
                    *peer = format!("{peer}-c{c}");
                }
            }
            sb.port_bindings.push(p);
        }
        for m in &base.mcast_groups {
            let mut m = m.clone();
            m.datapath = rename(&m.datapath, c);
            sb.mcast_groups.push(m);
        }
        for (g, members) in &base.dp_groups {
            sb.dp_groups
                .insert(rename(g, c), members.iter().map(|m| rename(m, c)).collect());
        }
        for lf in &base.lflows {
            let mut lf = lf.clone();
            lf.uuid = format!("{:04x}{}", c, &lf.uuid[4..]);
            lf.datapath = lf.datapath.map(|d| rename(&d, c));
            lf.dp_group = lf.dp_group.map(|g| rename(&g, c));
            if c > 0 {
                // Port names are per copy; keep quoted names pointing at this copy's ports.
                for p in &base.port_bindings {
                    let q = format!("\"{}\"", p.name);
                    let r = format!("\"{}-c{c}\"", p.name);
                    lf.match_text = lf.match_text.replace(&q, &r);
                    lf.actions = lf.actions.replace(&q, &r);
                }
            }
            sb.lflows.push(lf);
        }
        for (n, members) in &base.port_groups {
            let (k, rest) = n.split_once('_').expect("port group names are KEY_NAME");
            let key: u32 = k.parse().expect("key");
            let members = members
                .iter()
                .map(|m| {
                    if c > 0 {
                        format!("{m}-c{c}")
                    } else {
                        m.clone()
                    }
                })
                .collect();
            sb.port_groups
                .insert(format!("{}_{rest}", key + key_off), members);
        }
        let sw0 = rename("09518436-d3f1-46e9-8cae-88e25d5f7a8f", c);
        for a in 0..acls {
            let set = format!("big_{c}_{a}");
            let addrs = (0..100)
                .map(|i| format!("10.{}.{}.{}", a % 250, i / 250, i % 250 + 1))
                .collect();
            sb.address_sets.insert(set.clone(), addrs);
            sb.lflows.push(agent::sbdata::LflowRow {
                uuid: format!("ac{c:06x}-{a:04x}-4000-8000-000000000000"),
                datapath: Some(sw0.clone()),
                pipeline: "ingress".into(),
                table_id: 8,
                priority: 2000 + a as u16,
                match_text: format!("reg0[7] == 1 && (ip4.src == ${set} && tcp)"),
                actions: "reg0[1] = 1; next;".into(),
                ..Default::default()
            });
        }
    }
    for (n, v) in &base.address_sets {
        sb.address_sets.insert(n.clone(), v.clone());
    }
    sb
}

fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
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
    let sb = synth(copies, acls);
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    if std::env::var_os("BENCH_SHOW_FAILURES").is_some() {
        let view = SbView::new(&sb, "hv1");
        let r = compile_all_threads(
            &sb,
            &view,
            &TableLayout::OVN_23_03,
            None,
            agent::lflow::DEFAULT_FLOW_LIMIT,
            1,
        );
        for f in r.failures.iter().take(20) {
            println!("{f}");
        }
    }
    for threads in [1, cores] {
        let view = SbView::new(&sb, "hv1");
        let t = Instant::now();
        let cpu0 = cpu_seconds();
        let report = compile_all_threads(
            &sb,
            &view,
            &TableLayout::OVN_23_03,
            None,
            agent::lflow::DEFAULT_FLOW_LIMIT,
            threads,
        );
        let secs = t.elapsed().as_secs_f64();
        let cpu = cpu_seconds() - cpu0;
        // BENCH_DUMP=PATH writes the flows (sorted text) to compare outputs across changes.
        if let Some(path) = std::env::var_os("BENCH_DUMP") {
            let mut lines: Vec<String> = report.flows.iter().map(ToString::to_string).collect();
            lines.sort_unstable();
            let mut path = std::path::PathBuf::from(path);
            path.set_extension(format!("t{threads}"));
            std::fs::write(path, lines.join("\n")).expect("write dump");
        }
        println!(
            "threads {threads}: {} lflows ({} failed) -> {} flows in {secs:.3} s wall, {cpu:.2} CPU-s: {:.0} lflows/s, {:.0} flows/s; cache {} entries / {} hits; peak RSS {} MiB",
            sb.lflows.len(),
            report.failures.len(),
            report.flows.len(),
            sb.lflows.len() as f64 / secs,
            report.flows.len() as f64 / secs,
            report.cache_entries,
            report.cache_hits,
            peak_rss_kb() / 1024
        );
    }
}
