//! Install flows (and groups) given in ovs-ofctl text form through our OpenFlow 1.5
//! connection, in one atomic+ordered bundle, then wait for the barrier.
//!
//! Usage: `ofreplay SOCKET FLOWS [GROUPS]` where SOCKET is `unix:PATH`, a path, or
//! `tcp:HOST:PORT`. FLOWS holds `dump-flows` or `add-flow` lines; GROUPS holds
//! `dump-groups` or `add-group` lines. Header lines (`OFPST_...`), blank lines and `#`
//! comments are skipped. The first line that does not parse stops the run with its line
//! number and the reason; so does a flow or group the switch refuses (the bundle is then
//! not applied at all).

use std::process::ExitCode;
use std::time::Instant;

use openflow::conn::client::ClientConfig;
use openflow::conn::{connect, ConnError};
use openflow::text::Flow;
use openflow::wire::bundle::{OFPBF_ATOMIC, OFPBF_ORDERED};
use openflow::wire::flow_mod::OFPFC_ADD;
use openflow::wire::group_mod::OFPGC_ADD;
use openflow::wire::{BundleBuilder, Group, GroupMod, Message, Wire};

/// `OFPT_FLOW_MOD`.
const OFPT_FLOW_MOD: u8 = 14;

fn content_lines(path: &str) -> Result<Vec<(usize, String)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    Ok(text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim().to_owned()))
        .filter(|(_, l)| {
            !(l.is_empty()
                || l.starts_with('#')
                || l.starts_with("OFPST_")
                || l.starts_with("NXST_"))
        })
        .collect())
}

/// Where each message of the bundle came from (`file:line`), by bundle index.
type Origins = Vec<String>;

fn load(
    flows_path: &str,
    groups_path: Option<&str>,
) -> Result<(BundleBuilder, Origins, usize, usize), String> {
    let flags = OFPBF_ATOMIC | OFPBF_ORDERED;
    let mut bundle = BundleBuilder::new(flags);
    let mut origins = Vec::new();
    let mut n_groups = 0;
    if let Some(gp) = groups_path {
        for (n, line) in content_lines(gp)? {
            let g: Group = line
                .parse()
                .map_err(|e| format!("{gp}:{n}: {e}\n  {line}"))?;
            let gm = Message::GroupMod(GroupMod {
                command: OFPGC_ADD,
                command_bucket_id: 0xffff_ffff,
                group: g,
            });
            bundle
                .push_message(&gm)
                .map_err(|e| format!("{gp}:{n}: {e}\n  {line}"))?;
            origins.push(format!("{gp}:{n}"));
            n_groups += 1;
        }
    }
    // Parse and encode in parallel chunks, each into its own builder; the first bad line
    // (by line number) is reported.
    let lines = content_lines(flows_path)?;
    let n_flows = lines.len();
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let chunk = lines.len().div_ceil(threads).max(1);
    let parts: Vec<Result<BundleBuilder, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = lines
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    let mut b = BundleBuilder::new(flags);
                    for (n, line) in part {
                        let fm = line
                            .parse::<Flow>()
                            .map(|f| f.into_flow_mod(OFPFC_ADD))
                            .map_err(|e| format!("{flows_path}:{n}: {e}\n  {line}"))?;
                        b.try_push_raw(OFPT_FLOW_MOD, |out| fm.encode(out))
                            .map_err(|e| format!("{flows_path}:{n}: {e}\n  {line}"))?;
                    }
                    Ok(b)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("parser thread panicked".into()))
            })
            .collect()
    });
    for part in parts {
        bundle
            .append(part?)
            .map_err(|_| "bundle parts with different flags".to_owned())?;
    }
    origins.extend(lines.iter().map(|(n, _)| format!("{flows_path}:{n}")));
    Ok((bundle, origins, n_flows, n_groups))
}

/// The switch's refusal, with each rejected message named by its file and line.
fn describe(e: &ConnError, origins: &Origins) -> String {
    match e {
        ConnError::BundleFailed { rejected, commit } => {
            let mut parts: Vec<String> = rejected
                .iter()
                .map(|(i, err)| {
                    let at = origins.get(*i).map_or("?", String::as_str);
                    format!("{at}: {err}")
                })
                .collect();
            if let Some(c) = commit {
                parts.push(format!("commit: {c}"));
            }
            format!("bundle failed: {}", parts.join("; "))
        }
        other => other.to_string(),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 || args.len() > 3 {
        eprintln!("usage: ofreplay SOCKET FLOWS [GROUPS]");
        return ExitCode::from(2);
    }
    let target = if args[0].contains(':') {
        args[0].clone()
    } else {
        format!("unix:{}", args[0])
    };
    let start = Instant::now();
    let (bundle, origins, n_flows, n_groups) = match load(&args[1], args.get(2).map(String::as_str))
    {
        Ok(x) => x,
        Err(e) => {
            eprintln!("ofreplay: {e}");
            return ExitCode::from(1);
        }
    };
    let parsed = start.elapsed();
    let cfg = ClientConfig {
        reconnect: false,
        ..ClientConfig::default()
    };
    let (conn, handle, _async_rx) = match connect(&target, cfg) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("ofreplay: {e}");
            return ExitCode::from(1);
        }
    };
    let task = tokio::spawn(conn.run());
    let result = async {
        let sid = handle.wait_connected().await?;
        handle.commit_bundle(sid, bundle).await?;
        handle.barrier(sid).await
    }
    .await;
    let total = start.elapsed();
    drop(handle);
    let _ = task.await;
    match result {
        Ok(errors) if errors.is_empty() => {
            println!(
                "installed {n_flows} flows and {n_groups} groups in {:.3} s (parse and encode {:.3} s, {:.0} flows/s)",
                total.as_secs_f64(),
                parsed.as_secs_f64(),
                n_flows as f64 / total.as_secs_f64()
            );
            ExitCode::SUCCESS
        }
        Ok(errors) => {
            eprintln!(
                "ofreplay: switch reported {} errors: {errors:?}",
                errors.len()
            );
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("ofreplay: {}", describe(&e, &origins));
            ExitCode::from(1)
        }
    }
}
