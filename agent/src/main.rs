//! `ovn-agent` command line: `ovn-agent compile ...`, or the daemon with ovn-controller's
//! command line (`ovn-agent [OPTIONS] [OVS-DATABASE]`).

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Duration;

use agent::appctl::{version_text, AppctlServer, CommandRegistry, ServerConfig};
use agent::daemon::run::{run, LoopConfig};
use agent::daemon::{
    parse_invocation, run_detach_parent, DaemonArgs, DaemonConfig, DaemonProcess, Dirs, Invocation,
    Program, ShutdownSignals,
};
use agent::engine::core::EngineOptions;
use agent::vlog::{SyslogMethod, Vlog, VlogOptions};
use anyhow::Context as _;

/// How long `ovn-appctl` waits for a command the main loop answers before it gets an error.
const APPCTL_REPLY_TIMEOUT: Duration = Duration::from_secs(30);

fn main() -> ExitCode {
    let argv: Vec<OsString> = std::env::args_os().collect();
    let invocation = match parse_invocation(&argv) {
        Ok(invocation) => invocation,
        Err(error) => {
            let _ = error.print();
            // getopt programs exit 1 on a bad option; --help is not an error.
            return if error.use_stderr() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match invocation {
        Invocation::Compile(args) => match agent::compile_cmd::run(&args) {
            Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
            Err(error) => {
                eprintln!("ovn-agent compile: {error}");
                ExitCode::FAILURE
            }
        },
        Invocation::Daemon(args) => run_daemon(&argv, &args),
    }
}

fn run_daemon(argv: &[OsString], args: &DaemonArgs) -> ExitCode {
    let program = Program::from_argv0(
        argv.first()
            .map_or_else(Default::default, OsString::as_os_str),
    );
    if args.version {
        print!("{}", version_text(program.name()));
        println!("OpenFlow versions 0x6:0x6");
        println!("SB DB Schema {}", sbclient::ovn_sb::VERSION);
        return ExitCode::SUCCESS;
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
    let config = DaemonConfig::resolve(args, program, &Dirs::from_env(), &cwd);
    let outcome = if config.detach && !config.detached_child {
        run_detach_parent(argv)
            .map(|code| ExitCode::from(u8::try_from(code).unwrap_or(1)))
            .map_err(anyhow::Error::from)
    } else {
        run_daemon_process(&config)
    };
    outcome.unwrap_or_else(|error| {
        eprintln!("{}: {error:#}", program.name());
        ExitCode::FAILURE
    })
}

fn start_logging(config: &DaemonConfig) -> anyhow::Result<Vlog> {
    // As OVS: --syslog-method, else $OVS_SYSLOG_METHOD, else libc.
    let method = config.syslog_method.clone().or_else(|| {
        std::env::var("OVS_SYSLOG_METHOD")
            .ok()
            .filter(|m| !m.is_empty())
    });
    let syslog_method = method
        .map(|method| SyslogMethod::parse(&method))
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let vlog = Vlog::new(VlogOptions {
        program: config.program.name().to_string(),
        syslog_method,
        ..VlogOptions::default()
    });
    vlog.apply_specs(config.vlog_specs.iter().map(String::as_str))?;
    agent::vlog::install(&vlog)?;
    if let Some(path) = &config.log_file {
        vlog.set_log_file(path)?;
    }
    if config.syslog_target.is_some() {
        tracing::warn!(target: "vlog", "--syslog-target is not supported, use --syslog-method");
    }
    Ok(vlog)
}

fn run_daemon_process(config: &DaemonConfig) -> anyhow::Result<ExitCode> {
    let vlog = start_logging(config)?;
    // Before the runtime: setsid and the pidfile belong to a single-threaded start.
    let mut process = DaemonProcess::start(config)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let outcome = runtime.block_on(serve(config, vlog, &mut process));
    process.finish();
    outcome
}

async fn serve(
    config: &DaemonConfig,
    vlog: Vlog,
    process: &mut DaemonProcess,
) -> anyhow::Result<ExitCode> {
    // First: a bad --metrics address stops the start before anything else is set up.
    let (metrics, metrics_task) = match config.metrics {
        Some(addr) => {
            let (metrics, task) = start_metrics(addr).await?;
            (Some(metrics), Some(task))
        }
        None => (None, None),
    };
    let mut signals = ShutdownSignals::new().context("cannot handle signals")?;
    tracing::info!(target: "main", "OVN internal version is : [{}]", agent::appctl::internal_version());
    let mut commands = CommandRegistry::new();
    for (name, usage, min, max) in agent::daemon::commands::COMMANDS {
        commands.register(name, usage, *min, *max)?;
    }
    for (name, release) in agent::daemon::commands::RETIRED {
        commands.retire(name, release);
    }
    for (name, release) in agent::daemon::commands::INTRODUCED {
        commands.introduce(name, release);
    }
    let (requests_tx, requests) = tokio::sync::mpsc::channel(16);
    let server = AppctlServer::bind(
        ServerConfig {
            path: config.unixctl_path(process.pid()),
            version: version_text(config.program.name()),
            reply_timeout: APPCTL_REPLY_TIMEOUT,
        },
        commands,
        Some(vlog),
        requests_tx,
    )?;
    let (stop_tx, stop_rx) = tokio::sync::mpsc::channel(1);
    let signal_code = std::sync::Arc::new(std::sync::Mutex::new(None::<u8>));
    let code = signal_code.clone();
    tokio::spawn(async move {
        let signal = signals.recv().await;
        tracing::warn!(target: "fatal_signal", "terminating with signal {} ({})", signal.number(), signal.description());
        if let Ok(mut c) = code.lock() {
            *c = Some(signal.exit_code());
        }
        let _ = stop_tx.send(()).await;
    });
    let loop_config = LoopConfig {
        ovs_remote: config.ovs_remote.clone(),
        ovs_rundir: config.dirs.ovs_rundir.clone(),
        program: config.program.name().to_owned(),
        engine: EngineOptions {
            chassis: config
                .chassis
                .clone()
                .or_else(agent::daemon::program::system_id_override),
            table_layout: config.table_layout.map(|l| l.name().to_owned()),
            hostname: hostname(),
            threads: 0,
            put_part_flows: config.put_part_flows,
            compile_batch_lflows: config.compile_batch_lflows,
            vif_plug: agent::engine::vif_plug::Providers::new(config.enable_dummy_vif_plug),
        },
        metrics,
        tls: config.ssl.settings(),
        appctl_replies: Some(server.reply_forms()),
    };
    let result = run(loop_config, requests, stop_rx, || {
        if let Err(e) = process.ready() {
            tracing::warn!(target: "main", "cannot report readiness: {e}");
        }
    })
    .await;
    server.shutdown().await;
    if let Some(task) = metrics_task {
        task.abort();
    }
    match result {
        Ok(exit) => {
            tracing::info!(target: "main", "exiting ({exit:?})");
            let code = signal_code.lock().ok().and_then(|c| *c);
            Ok(code.map_or(ExitCode::SUCCESS, ExitCode::from))
        }
        Err(e) => Err(e.into()),
    }
}

/// `--metrics`: listens on `addr` (a failure is a startup error) and serves the metrics
/// from a task of its own.
async fn start_metrics(
    addr: std::net::SocketAddr,
) -> anyhow::Result<(
    std::sync::Arc<agent::metrics::Metrics>,
    tokio::task::JoinHandle<()>,
)> {
    let server = agent::metrics::MetricsServer::bind(addr).await?;
    let local = server.local_addr();
    let metrics = std::sync::Arc::new(agent::metrics::Metrics::new());
    let task = server.spawn(metrics.clone(), agent::metrics::ServerLimits::default());
    tracing::info!(target: "main", "serving metrics on http://{local}/metrics");
    Ok((metrics, task))
}

/// This host's name, for `Chassis.hostname`.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default()
}
