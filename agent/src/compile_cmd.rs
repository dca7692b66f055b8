//! `ovn-agent compile`: prints, in `ovs-ofctl` syntax, the flows this chassis would install
//! for the logical flows (and MAC bindings, FDB, port security, LB hairpin) of a
//! Southbound database or of JSON dumps.

use std::time::{Duration, Instant};

use bytes::BytesMut;
use openflow::flow::FlowModCommand;

use crate::compile::{compile_all, Context};
use crate::lflow::flows::MatchCache;
use crate::lflow::layout::TableLayout;
use crate::ofctrl::FlowTable;
use crate::southbound::{is_remote, Southbound, SouthboundError};
use crate::view::{Ids, SbView};

#[derive(clap::Args, Debug)]
pub struct CompileArgs {
    /// Southbound database remote (`unix:PATH`, `tcp:IP:PORT`, `ssl:IP:PORT`), or files holding
    /// `ovn-sbctl --format=json list TABLE` / `ovsdb-client -f json dump` output (repeatable).
    #[arg(long, required = true)]
    pub sb: Vec<String>,
    /// Chassis name.
    #[arg(long)]
    pub chassis: String,
    /// Only the flows of this datapath tunnel key (chassis-wide flows such as the LB
    /// hairpin tables are left out).
    #[arg(long)]
    pub datapath: Option<u32>,
    /// `classic`, `ovn-23.03`, `ovn-25.03` or `ovn-26.03` (that release's tables and
    /// logical-flow language; 26.03's physical stage and lookup tables are not built yet).
    #[arg(long, default_value = "classic")]
    pub table_layout: String,
    /// `ovs-ofctl dump-groups` output whose group ids are reused for identical groups.
    #[arg(long)]
    pub groups: Option<String>,
    /// Meter id, `NAME=ID` (repeatable; NAME is an SB Meter name or a `__string:` key).
    #[arg(long)]
    pub meter: Vec<String>,
    /// Maximum OpenFlow flows per logical flow.
    #[arg(long, default_value_t = crate::lflow::DEFAULT_FLOW_LIMIT)]
    pub flow_limit: usize,
    /// Print counters and timings (load, compile, encode, print, peak RSS) to stderr.
    #[arg(long)]
    pub stats: bool,
    /// Sort the flows by table, then priority (highest first), then text.
    #[arg(long)]
    pub sort: bool,
    /// Print matches as OVS stores them after an OpenFlow 1.5 flow_mod (VLAN TCI as OXM
    /// VLAN_VID/VLAN_PCP), i.e. as `ovs-ofctl dump-flows` will show them.
    #[arg(long)]
    pub as_installed: bool,
    /// Print no flows (with --stats: only the counters and timings).
    #[arg(long)]
    pub quiet: bool,
    /// Compiler threads (0: one per core).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    #[command(flatten)]
    pub ssl: SslArgs,
}

/// The SSL files and choices for an `ssl:` Southbound remote, as the daemon takes them.
#[derive(clap::Args, Debug, Default)]
pub struct SslArgs {
    /// File with the private key (SSL).
    #[arg(short = 'p', long = "private-key", value_name = "FILE")]
    pub private_key: Option<std::path::PathBuf>,
    /// File with the certificate for the private key (SSL).
    #[arg(short = 'c', long = "certificate", value_name = "FILE")]
    pub certificate: Option<std::path::PathBuf>,
    /// File with the peer CA certificate (SSL).
    #[arg(short = 'C', long = "ca-cert", value_name = "FILE")]
    pub ca_cert: Option<std::path::PathBuf>,
    /// File with the peer CA certificate to read, or to take from the server (SSL).
    #[arg(long, value_name = "FILE")]
    pub bootstrap_ca_cert: Option<std::path::PathBuf>,
    /// SSL protocols to enable.
    #[arg(long, value_name = "PROTOS")]
    pub ssl_protocols: Option<String>,
    /// SSL ciphers to enable.
    #[arg(long, value_name = "CIPHERS")]
    pub ssl_ciphers: Option<String>,
}

impl SslArgs {
    /// As the daemon's options.
    pub fn options(&self) -> crate::ssl_options::SslOptions {
        crate::ssl_options::SslOptions {
            private_key: self.private_key.clone(),
            certificate: self.certificate.clone(),
            ca_cert: self.ca_cert.clone(),
            bootstrap_ca_cert: self.bootstrap_ca_cert.clone(),
            peer_ca_cert: None,
            protocols: self.ssl_protocols.clone(),
            ciphers: self.ssl_ciphers.clone(),
        }
    }
}

/// Why `ovn-agent compile` could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompileCmdError {
    #[error("unknown table layout {0:?} (classic, ovn-23.03, ovn-25.03, ovn-26.03)")]
    Layout(String),
    #[error("{path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Southbound {
        path: String,
        source: SouthboundError,
    },
    #[error("{0}")]
    Groups(String),
    #[error("--meter wants NAME=ID, got {0:?}")]
    Meter(String),
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
}

/// Peak resident set size of this process in KiB (`VmHWM`), if the kernel reports it.
pub fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn load(args: &CompileArgs) -> Result<Southbound, CompileCmdError> {
    let mut sb = Southbound::default();
    for f in &args.sb {
        if is_remote(f) {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(CompileCmdError::Runtime)?;
            let mut fetched = rt
                .block_on(Southbound::fetch(
                    f,
                    Duration::from_secs(10),
                    args.ssl.options().settings(),
                ))
                .map_err(|source| CompileCmdError::Southbound {
                    path: f.clone(),
                    source,
                })?;
            // A remote gives the whole database: it replaces what files gave so far.
            std::mem::swap(&mut sb, &mut fetched);
            continue;
        }
        let text = std::fs::read_to_string(f).map_err(|source| CompileCmdError::Read {
            path: f.clone(),
            source,
        })?;
        sb.load_json(&text)
            .map_err(|source| CompileCmdError::Southbound {
                path: f.clone(),
                source,
            })?;
    }
    if !sb.unknown_tables.is_empty() {
        let names: Vec<&str> = sb.unknown_tables.iter().map(String::as_str).collect();
        eprintln!(
            "ovn-agent compile: tables this build's Southbound schema lacks, skipped: {}",
            names.join(", ")
        );
    }
    Ok(sb)
}

/// Prints the flows to stdout, one `ovs-ofctl` line each. Unsorted output is written as it
/// is formatted (a 700k-flow table as one string, or as a second copy of the flows, would
/// double the command's peak memory); `--sort` needs every line first.
fn print_flows(table: &FlowTable, args: &CompileArgs) {
    use std::io::Write as _;
    let flow = |f: crate::ofctrl::EffectiveFlow<'_>| {
        let mut f = f.to_flow();
        if args.as_installed {
            f.m = f.m.canonical_of15();
        }
        f
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    if args.sort {
        let mut lines: Vec<(u8, std::cmp::Reverse<u16>, String)> = table
            .iter()
            .map(|f| {
                let f = flow(f);
                (f.table, std::cmp::Reverse(f.priority), f.to_string())
            })
            .collect();
        lines.sort_unstable();
        for (_, _, line) in &lines {
            let _ = writeln!(out, "{line}");
        }
    } else {
        for f in table.iter() {
            let _ = writeln!(out, "{}", flow(f));
        }
    }
    let _ = out.flush();
}

/// Runs the subcommand; returns the process exit status (1 when every lflow failed).
pub fn run(args: &CompileArgs) -> Result<i32, CompileCmdError> {
    let layout = TableLayout::by_name(&args.table_layout)
        .ok_or_else(|| CompileCmdError::Layout(args.table_layout.clone()))?;
    let t0 = Instant::now();
    let sb = load(args)?;
    let t_load = t0.elapsed();
    let rss_after_load = peak_rss_kib();
    let ids = Ids::default();
    if let Some(g) = &args.groups {
        let text = std::fs::read_to_string(g).map_err(|source| CompileCmdError::Read {
            path: g.clone(),
            source,
        })?;
        ids.seed_groups(&text)
            .map_err(|e| CompileCmdError::Groups(format!("{g}: {e}")))?;
    }
    for m in &args.meter {
        let (n, id) = m
            .split_once('=')
            .and_then(|(n, id)| Some((n, id.parse().ok()?)))
            .ok_or_else(|| CompileCmdError::Meter(m.clone()))?;
        ids.seed_meter(n, id);
    }
    let view = SbView::new(&sb, &args.chassis, &ids);
    if !view.has_chassis() {
        eprintln!(
            "warning: chassis {:?} not found in the Chassis table; no datapath is local",
            args.chassis
        );
    }
    let cache = MatchCache::default();
    let cx = Context {
        view: &view,
        layout: &layout,
        cache: &cache,
        only_dp: args.datapath,
        limit: args.flow_limit,
    };
    let threads = if args.threads == 0 {
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
    } else {
        args.threads
    };
    let t1 = Instant::now();
    let report = compile_all(&cx, threads);
    let t_compile = t1.elapsed();
    let t2 = Instant::now();
    let mut encoded = 0usize;
    let mut encode_errors = 0usize;
    let mut buf = BytesMut::with_capacity(1 << 20);
    for f in report.desired.iter() {
        buf.clear();
        let r = openflow::flow::encode_flow_mod_body(
            &mut buf,
            FlowModCommand::Add,
            f.table,
            f.priority,
            f.cookie,
            f.m,
            f.actions,
        );
        if r.is_err() {
            encode_errors += 1;
        }
        encoded += buf.len() + 8;
    }
    let t_encode = t2.elapsed();
    let t3 = Instant::now();
    for f in &report.failures {
        eprintln!("{f}");
    }
    if !args.quiet {
        print_flows(&report.desired, args);
    }
    let t_print = t3.elapsed();
    if args.stats {
        eprintln!(
            "lflows {} failed {} (over the flow limit {}), flows {}, duplicates dropped {}, match cache {} entries / {} hits",
            report.lflows,
            report.failures.len(),
            report.too_many_flows,
            report.desired.len(),
            report.duplicates,
            report.cache_entries,
            report.cache_hits
        );
        eprintln!(
            "time: load {:.3}s, compile {:.3}s ({threads} thread(s)), encode {:.3}s ({} flow_mod bytes, {encode_errors} errors), print {:.3}s; peak RSS {} MiB ({} MiB by the end of loading)",
            t_load.as_secs_f64(),
            t_compile.as_secs_f64(),
            t_encode.as_secs_f64(),
            encoded,
            t_print.as_secs_f64(),
            peak_rss_kib().map_or(0, |k| k / 1024),
            rss_after_load.map_or(0, |k| k / 1024)
        );
    }
    if args.stats {
        let m = report.desired.memory();
        eprintln!(
            "flow table: entries {} MiB, matches {} MiB, action lists {} ({} distinct contents, {} references) {} MiB",
            m.entries_bytes >> 20,
            m.match_bytes >> 20,
            m.action_lists,
            m.distinct_action_contents,
            m.action_refs,
            m.action_bytes >> 20
        );
    }
    let lflow_failures = report
        .failures
        .iter()
        .filter(|f| matches!(f.owner, crate::compile::Owner::Lflow(_)))
        .count();
    let ok = report.lflows > lflow_failures || lflow_failures == 0;
    Ok(i32::from(!ok))
}
