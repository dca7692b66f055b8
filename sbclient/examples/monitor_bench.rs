//! Benchmark (not a test): initial monitor of a large Logical_Flow table.
//!
//! Starts a standalone `ovsdb-server` in a temporary directory, fills it with
//! N Logical_Flow rows (default 500000) over 1000 datapaths, then measures, in
//! fresh child processes and in the same run:
//! - sbclient: time from connect to replica ready, and peak RSS (`VmHWM`);
//! - `ovsdb-client monitor … Logical_Flow` (csv): time until every row is
//!   printed, and its peak RSS.
//!
//! Run: `cargo run --release -p sbclient --example monitor_bench [-- ROWS]`

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sbclient::ovn_sb::{DatapathBinding, LogicalFlow};
use sbclient::{spawn, Atom, ClientConfig, Columns, Event, Remote, Replica, Transaction};

type Error = Box<dyn std::error::Error>;

const DB: &str = "OVN_Southbound";
const SCHEMA: &str = "/usr/share/ovn/ovn-sb.ovsschema";

/// Stops the child by pid when dropped.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--measure") {
        return measure(&args[2], args[3].parse()?);
    }
    if args.get(1).map(String::as_str) == Some("--raw") {
        return raw_floor(&args[2]);
    }
    if args.get(1).map(String::as_str) == Some("--decode-only") {
        return decode_only(args[2].parse()?);
    }
    let rows: usize = args.get(1).map_or(Ok(500_000), |a| a.parse())?;
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("sb.db");
    let sock = dir.path().join("sb.sock");
    let status = Command::new("ovsdb-tool")
        .arg("create")
        .arg(&db)
        .arg(SCHEMA)
        .status()?;
    if !status.success() {
        return Err("ovsdb-tool create failed".into());
    }
    let server = Guard(
        Command::new("ovsdb-server")
            .arg("--no-chdir")
            .arg(format!("--remote=punix:{}", sock.display()))
            .arg(format!("--unixctl={}", dir.path().join("sb.ctl").display()))
            .arg(format!(
                "--log-file={}",
                dir.path().join("sb.log").display()
            ))
            .arg("-vconsole:off")
            .arg(&db)
            .stdin(Stdio::null())
            .spawn()?,
    );
    let remote = format!("unix:{}", sock.display());
    for _ in 0..100 {
        if sock.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }

    let t = Instant::now();
    tokio::runtime::Runtime::new()?.block_on(generate(&remote, rows))?;
    println!(
        "generated {rows} Logical_Flow rows in {:.1} s (db file {} MB)",
        t.elapsed().as_secs_f64(),
        std::fs::metadata(&db)?.len() / 1_000_000
    );

    // sbclient, in a child process so the generator's memory does not count.
    let out = Command::new(std::env::current_exe()?)
        .args(["--measure", &remote, &rows.to_string()])
        .output()?;
    if !out.status.success() {
        return Err(format!("measure failed: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    let ours = String::from_utf8_lossy(&out.stdout).trim().to_owned();

    // The floor: the same request, bytes framed but not decoded.
    let out = Command::new(std::env::current_exe()?)
        .args(["--raw", &sock.display().to_string()])
        .output()?;
    let floor = String::from_utf8_lossy(&out.stdout).trim().to_owned();

    // Our decode and apply alone, on a synthetic reply of the same shape.
    let out = Command::new(std::env::current_exe()?)
        .args(["--decode-only", &rows.to_string()])
        .output()?;
    let decode = String::from_utf8_lossy(&out.stdout).trim().to_owned();

    // ovsdb-client monitor of the same table.
    let t = Instant::now();
    let mut child = Guard(
        Command::new("ovsdb-client")
            .args(["monitor", &remote, DB, "Logical_Flow", "-f", "csv"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?,
    );
    let pid = child.0.id();
    let stdout = child.0.stdout.take().ok_or("no stdout")?;
    let mut lines = 0usize;
    let mut reader = BufReader::with_capacity(1 << 20, stdout);
    let mut line = String::new();
    // Header line plus one line per row.
    while lines < rows + 1 && reader.read_line(&mut line)? > 0 {
        lines += 1;
        line.clear();
    }
    let theirs_time = t.elapsed().as_secs_f64();
    let theirs_rss = peak_rss_kib(pid).unwrap_or(0);
    drop(child);

    println!("raw socket floor:     {floor}");
    println!("sbclient:             {ours}");
    println!("sbclient decode only: {decode}");
    println!(
        "ovsdb-client monitor: {:.2} s to print {} rows, peak RSS {} MB",
        theirs_time,
        lines.saturating_sub(1),
        theirs_rss / 1024
    );
    println!(
        "ovsdb-server peak RSS {} MB",
        peak_rss_kib(server.0.id()).unwrap_or(0) / 1024
    );
    Ok(())
}

async fn generate(remote: &str, rows: usize) -> Result<(), Error> {
    let config = ClientConfig::new(Remote::parse_list(remote)?, DB);
    let (client, mut events) = spawn(config);
    tokio::spawn(async move { while events.recv().await.is_some() {} });
    let mut txn = Transaction::new(DB);
    let datapaths = 1000;
    for d in 0..datapaths {
        let dp = DatapathBinding {
            tunnel_key: d + 1,
            external_ids: [("name".to_owned(), format!("ls{d}"))].into(),
            ..DatapathBinding::default()
        };
        txn.insert_row(&dp, None);
    }
    let outcome = client.transact(txn).await?;
    let dps: Vec<Atom> = outcome
        .results
        .iter()
        .filter_map(|r| match r {
            sbclient::transaction::OpResult::Inserted(u) => Some(Atom::Uuid(*u)),
            _ => None,
        })
        .collect();
    let batch = 20_000;
    let mut n = 0;
    while n < rows {
        let mut txn = Transaction::new(DB);
        for i in n..(n + batch).min(rows) {
            let dp = &dps[i % dps.len()];
            let row = Columns::new()
                .set("logical_datapath", dp.clone())
                .set("pipeline", if i % 2 == 0 { "ingress" } else { "egress" })
                .set("table_id", (i % 30) as i64)
                .set("priority", (i % 65_000) as i64)
                .set(
                    "match",
                    format!(
                        "inport == \"lsp{i}\" && eth.src == 00:00:{:02x}:{:02x}:{:02x}:01 && ip4.dst == 10.{}.{}.{}/32",
                        (i >> 16) & 0xff, (i >> 8) & 0xff, i & 0xff, (i >> 16) & 0xff, (i >> 8) & 0xff, i & 0xff
                    ),
                )
                .set("actions", "reg0[0] = 1; reg15 = 0x2; next;")
                .set(
                    "external_ids",
                    sbclient::Datum::map([("stage-name", "ls_in_acl"), ("source", "northd.c:7315")]),
                );
            txn.insert("Logical_Flow", row, None);
        }
        client.transact(txn).await?;
        n += batch;
    }
    client.shutdown().await;
    Ok(())
}

fn measure(remote: &str, rows: usize) -> Result<(), Error> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let elapsed = rt.block_on(async {
        let mut replica = Replica::new(DB);
        replica.add_table::<LogicalFlow>();
        let mut config =
            ClientConfig::new(Remote::parse_list(remote)?, DB).monitor_replica(&replica);
        config.probe_interval = None;
        let t = Instant::now();
        let (client, mut events) = spawn(config);
        let mut received = Duration::ZERO;
        while let Some(event) = events.recv().await {
            if matches!(event, Event::Snapshot(_)) {
                received = t.elapsed();
            }
            event.apply(&mut replica)?;
            if matches!(event, Event::Snapshot(_)) {
                break;
            }
        }
        let elapsed = (t.elapsed(), received);
        let got = replica.row_count("Logical_Flow");
        if got != rows {
            return Err::<_, Error>(format!("replica has {got} rows, expected {rows}").into());
        }
        client.shutdown().await;
        Ok(elapsed)
    })?;
    println!(
        "{:.2} s from connect to replica ready ({rows} rows; reply received and framed after {:.2} s), peak RSS {} MB",
        elapsed.0.as_secs_f64(),
        elapsed.1.as_secs_f64(),
        peak_rss_kib(std::process::id()).unwrap_or(0) / 1024
    );
    Ok(())
}

/// Sends the monitor request by hand and only frames the reply: the time the
/// server needs to produce and send it.
fn raw_floor(path: &str) -> Result<(), Error> {
    use std::io::{Read, Write};
    let t = Instant::now();
    let mut sock = std::os::unix::net::UnixStream::connect(path)?;
    let columns = <LogicalFlow as sbclient::Row>::COLUMNS;
    let req = serde_json::json!({"id": 1, "method": "monitor_cond",
        "params": [DB, null, {"Logical_Flow": [{"columns": columns}]}]});
    sock.write_all(req.to_string().as_bytes())?;
    let mut framer = sbclient::jsonrpc::Framer::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut bytes = 0usize;
    loop {
        let n = sock.read(&mut buf)?;
        if n == 0 {
            return Err("closed".into());
        }
        bytes += n;
        framer.push(&buf[..n]);
        if framer.next_frame()?.is_some() {
            break;
        }
    }
    println!(
        "{:.2} s until the {} MB reply was received and framed, peak RSS {} MB",
        t.elapsed().as_secs_f64(),
        bytes / 1_000_000,
        peak_rss_kib(std::process::id()).unwrap_or(0) / 1024
    );
    Ok(())
}

/// Decodes and applies a synthetic `monitor_cond` reply of `rows` Logical_Flow
/// rows in process: the cost of the replica without server or socket.
fn decode_only(rows: usize) -> Result<(), Error> {
    use std::fmt::Write as _;
    let mut text = String::from("{\"Logical_Flow\":{");
    for i in 0..rows {
        if i > 0 {
            text.push(',');
        }
        write!(
            text,
            r#""{:08x}-0000-4000-8000-{:012x}":{{"initial":{{"actions":"reg0[0] = 1; reg15 = 0x2; next;","external_ids":["map",[["source","northd.c:7315"],["stage-name","ls_in_acl"]]],"logical_datapath":["uuid","{:08x}-1111-4000-8000-000000000000"],"match":"inport == \"lsp{i}\" && eth.src == 00:00:00:00:00:01 && ip4.dst == 10.0.0.1/32","pipeline":"ingress","priority":{},"table_id":{}}}}}"#,
            i,
            i,
            i % 1000,
            i % 65_000,
            i % 30
        )?;
    }
    text.push_str("}}");
    // No copy: the text becomes the raw value.
    let raw = serde_json::value::RawValue::from_string(text)?;
    let before = peak_rss_kib(std::process::id()).unwrap_or(0);
    let t = Instant::now();
    let mut replica = Replica::new(DB);
    replica.add_table::<LogicalFlow>();
    replica.apply_snapshot(&raw)?;
    let elapsed = t.elapsed();
    if replica.row_count("Logical_Flow") != rows {
        return Err("rows missing".into());
    }
    println!(
        "{:.2} s to decode and apply {rows} rows ({} MB of JSON), peak RSS {} MB (input held: {} MB)",
        elapsed.as_secs_f64(),
        raw.get().len() / 1_000_000,
        peak_rss_kib(std::process::id()).unwrap_or(0) / 1024,
        before / 1024
    );
    Ok(())
}
