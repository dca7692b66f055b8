//! The command line: `ovn-agent compile ...`, or the daemon, `ovn-agent [OPTIONS]
//! [OVS-DATABASE]` with ovn-controller's options (so ovn-ctl's exact argv works).
//!
//! Options with an optional value (`--pidfile[=F]`, `--log-file[=F]`, `-v[SPEC]`) take it
//! only when attached (`--pidfile=F`, `-vdbg`), as getopt does: `--pidfile /x` leaves `/x`
//! as the database argument. Unambiguous long option prefixes are accepted, as getopt does.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use super::program::{abs_file_name, Dirs, Program};
use crate::compile_cmd::CompileArgs;
use crate::lflow::layout::TableLayout;

/// The hidden option that marks the re-executed child of `--detach`.
pub const DETACHED_CHILD_FLAG: &str = "--detached-child";

/// `ovn-agent compile ...`.
#[derive(clap::Parser, Debug)]
#[command(name = "ovn-agent")]
struct CompileCli {
    #[command(subcommand)]
    command: CompileCommand,
}

#[derive(clap::Subcommand, Debug)]
enum CompileCommand {
    /// Print the OpenFlow flows this chassis would install for the SB logical flows.
    Compile(CompileArgs),
}

/// The daemon's options, as ovn-controller 23.03.1 names them.
#[derive(clap::Parser, Debug, Clone, PartialEq, Eq)]
#[command(
    about = "OVN controller (ovn-agent)",
    disable_version_flag = true,
    infer_long_args = true,
    after_help = "`ovn-agent compile --help` describes the offline flow compiler."
)]
pub struct DaemonArgs {
    /// OVS database: unix:FILE, tcp:HOST:PORT or ssl:HOST:PORT (default unix:$OVS_RUNDIR/db.sock).
    #[arg(value_name = "OVS-DATABASE")]
    pub ovs_database: Option<String>,

    /// Custom chassis name (else /etc/ovn/system-id-override, else external_ids:system-id).
    #[arg(
        short = 'n',
        long = "chassis",
        value_name = "NAME",
        allow_hyphen_values = true
    )]
    pub chassis: Option<String>,

    /// Run in the background; the parent exits once the daemon is ready.
    #[arg(long)]
    pub detach: bool,
    /// Accepted for ovn-ctl; the agent runs no monitor process (systemd restarts it).
    #[arg(long)]
    pub monitor: bool,
    /// Accepted; changing user is left to the service manager.
    #[arg(long, value_name = "USER[:GROUP]", allow_hyphen_values = true)]
    pub user: Option<String>,
    /// Do not chdir to / after detaching.
    #[arg(long)]
    pub no_chdir: bool,
    /// Accepted (SELinux self-confinement is not ours to manage).
    #[arg(long)]
    pub no_self_confinement: bool,
    /// Create a pidfile (default $OVN_RUNDIR/<program>.pid; relative names are in $OVN_RUNDIR).
    #[arg(long, value_name = "FILE", num_args = 0..=1, require_equals = true)]
    pub pidfile: Option<Option<String>>,
    /// With --pidfile, start even if the pidfile is held by a running process.
    #[arg(long)]
    pub overwrite_pidfile: bool,

    /// Set logging levels (SPEC: [module][:destination][:level], PATTERN:dest:pattern, ...);
    /// a bare -v means dbg everywhere. Repeatable.
    #[arg(
        short = 'v',
        long = "verbose",
        value_name = "SPEC",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "",
        action = clap::ArgAction::Append
    )]
    pub verbose: Vec<String>,
    /// Log to FILE (default $OVN_LOGDIR/<program>.log).
    #[arg(long, value_name = "FILE", num_args = 0..=1, require_equals = true)]
    pub log_file: Option<Option<String>>,
    /// How to reach syslog: libc, unix:FILE, udp:IP:PORT or null.
    #[arg(long, value_name = "METHOD", allow_hyphen_values = true)]
    pub syslog_method: Option<String>,
    /// Accepted (deprecated in OVS in favour of --syslog-method).
    #[arg(long, value_name = "HOST:PORT", allow_hyphen_values = true)]
    pub syslog_target: Option<String>,

    /// File with the private key (SSL).
    #[arg(
        short = 'p',
        long = "private-key",
        value_name = "FILE",
        allow_hyphen_values = true
    )]
    pub private_key: Option<String>,
    /// File with the certificate for the private key (SSL).
    #[arg(
        short = 'c',
        long = "certificate",
        value_name = "FILE",
        allow_hyphen_values = true
    )]
    pub certificate: Option<String>,
    /// File with the peer CA certificate (SSL).
    #[arg(
        short = 'C',
        long = "ca-cert",
        value_name = "FILE",
        allow_hyphen_values = true
    )]
    pub ca_cert: Option<String>,
    /// File with the peer CA certificate to read or create (SSL).
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    pub bootstrap_ca_cert: Option<String>,
    /// Accepted for compatibility (SSL).
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    pub peer_ca_cert: Option<String>,
    /// SSL protocols to enable.
    #[arg(long, value_name = "PROTOS", allow_hyphen_values = true)]
    pub ssl_protocols: Option<String>,
    /// SSL ciphers to enable.
    #[arg(long, value_name = "CIPHERS", allow_hyphen_values = true)]
    pub ssl_ciphers: Option<String>,

    /// Control socket path (default $OVN_RUNDIR/<program>.<pid>.ctl; relative names are in $OVN_RUNDIR).
    #[arg(long, value_name = "PATH", allow_hyphen_values = true)]
    pub unixctl: Option<String>,
    /// Enable the dummy VIF plug provider (`options:vif-plug-type=dummy`; for tests).
    #[arg(long, hide = true)]
    pub enable_dummy_vif_plug: bool,
    /// OpenFlow table numbering: classic (default) or ovn-23.03.
    #[arg(long, value_name = "LAYOUT", value_parser = parse_table_layout, allow_hyphen_values = true)]
    pub table_layout: Option<String>,
    /// Serve Prometheus metrics on http://ADDR:PORT/metrics (off unless given).
    #[arg(long, value_name = "ADDR:PORT", value_parser = parse_metrics_address, allow_hyphen_values = true)]
    pub metrics: Option<SocketAddr>,

    /// Flow mods per part of a large put (testing: many small parts).
    #[arg(long, value_name = "N", hide = true)]
    pub put_part_flows: Option<usize>,
    /// Logical flows per batch of a full compile (testing: many small batches).
    #[arg(long, value_name = "N", hide = true)]
    pub compile_batch_lflows: Option<usize>,

    /// Print the version and exit.
    #[arg(short = 'V', long = "version")]
    pub version: bool,

    /// Set on the re-executed child of --detach (internal).
    #[arg(long = "detached-child", hide = true)]
    pub detached_child: bool,
}

fn parse_table_layout(name: &str) -> Result<String, String> {
    match TableLayout::for_daemon(name) {
        Some(_) => Ok(name.to_string()),
        None if name == "auto" => Ok(name.to_string()),
        None => Err(format!(
            "unknown table layout {name:?} ({}, auto)",
            TableLayout::names(true)
        )),
    }
}

fn parse_metrics_address(text: &str) -> Result<SocketAddr, String> {
    text.parse().map_err(|_| {
        format!("{text:?} is not ADDR:PORT (for example 127.0.0.1:9476 or [::1]:9476)")
    })
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Invocation {
    Compile(Box<CompileArgs>),
    Daemon(Box<DaemonArgs>),
}

/// Parses argv (argv[0] included). `compile` as the first argument selects the compiler;
/// anything else is the daemon (no database is ever named `compile`).
pub fn parse_invocation(argv: &[OsString]) -> Result<Invocation, clap::Error> {
    use clap::{CommandFactory, FromArgMatches, Parser};
    if argv.get(1).is_some_and(|arg| arg == "compile") {
        let CompileCommand::Compile(args) = CompileCli::try_parse_from(argv)?.command;
        return Ok(Invocation::Compile(Box::new(args)));
    }
    let program = Program::from_argv0(
        argv.first()
            .map_or_else(Default::default, OsString::as_os_str),
    );
    let matches = DaemonArgs::command()
        .name(program.name())
        .bin_name(program.name())
        .try_get_matches_from(getopt_verbose(argv))?;
    Ok(Invocation::Daemon(Box::new(DaemonArgs::from_arg_matches(
        &matches,
    )?)))
}

/// Options that take their value from the next argument when it is not attached.
const SEPARATE_VALUE_OPTIONS: &[&str] = &[
    "-n",
    "-p",
    "-c",
    "-C",
    "--chassis",
    "--user",
    "--syslog-method",
    "--syslog-target",
    "--private-key",
    "--certificate",
    "--ca-cert",
    "--bootstrap-ca-cert",
    "--peer-ca-cert",
    "--ssl-protocols",
    "--ssl-ciphers",
    "--unixctl",
    "--table-layout",
    "--metrics",
];

/// Rewrites `-vSPEC` as `--verbose=SPEC` (and `-v` as `--verbose`): getopt gives a short
/// option's optional value only when attached, which clap cannot express for shorts.
fn getopt_verbose(argv: &[OsString]) -> Vec<OsString> {
    let mut out = Vec::with_capacity(argv.len());
    let mut value_expected = false;
    let mut options_ended = false;
    for (index, arg) in argv.iter().enumerate() {
        let text = arg.to_str();
        let rewrite = index > 0 && !value_expected && !options_ended;
        value_expected = text.is_some_and(|t| SEPARATE_VALUE_OPTIONS.contains(&t));
        options_ended |= text == Some("--");
        match text.and_then(|t| t.strip_prefix("-v")) {
            Some(spec) if rewrite => out.push(if spec.is_empty() {
                OsString::from("--verbose")
            } else {
                OsString::from(format!("--verbose={spec}"))
            }),
            _ => out.push(arg.clone()),
        }
    }
    out
}

pub use crate::ssl_options::SslOptions;

/// The daemon's settings with every path resolved (absolute, so the chdir after detaching
/// cannot change what they name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DaemonConfig {
    pub program: Program,
    pub dirs: Dirs,
    /// The OVS database remote.
    pub ovs_remote: String,
    pub chassis: Option<String>,
    pub pidfile: Option<PathBuf>,
    pub overwrite_pidfile: bool,
    pub detach: bool,
    /// True in the re-executed child of `--detach`.
    pub detached_child: bool,
    /// chdir to `/` once detached (OVS does it only when detaching).
    pub chdir: bool,
    pub monitor: bool,
    pub user: Option<String>,
    pub log_file: Option<PathBuf>,
    /// `-v` specs in command-line order (`""` is a bare `-v`).
    pub vlog_specs: Vec<String>,
    pub syslog_method: Option<String>,
    pub syslog_target: Option<String>,
    pub ssl: SslOptions,
    /// `--unixctl`, resolved; `None` means `$OVN_RUNDIR/<program>.<pid>.ctl`.
    pub unixctl: Option<PathBuf>,
    pub enable_dummy_vif_plug: bool,
    /// `--table-layout`, if given (else external_ids or the default decide).
    pub table_layout: Option<TableLayout>,
    /// `--metrics`: where to serve Prometheus metrics.
    pub metrics: Option<SocketAddr>,
    /// `--put-part-flows`, `--compile-batch-lflows` (0: the built-in sizes).
    pub put_part_flows: usize,
    pub compile_batch_lflows: usize,
}

impl DaemonConfig {
    /// Resolves `args` for `program` with the directories `dirs`; `cwd` anchors relative
    /// paths.
    pub fn resolve(args: &DaemonArgs, program: Program, dirs: &Dirs, cwd: &Path) -> DaemonConfig {
        let name = program.name();
        let anchored = |dir: &Path| abs_file_name(Path::new(""), dir, cwd);
        let dirs = &Dirs {
            ovs_rundir: anchored(&dirs.ovs_rundir),
            ovn_rundir: anchored(&dirs.ovn_rundir),
            logdir: anchored(&dirs.logdir),
        };
        let rundir = &dirs.ovn_rundir;
        let pidfile = args.pidfile.as_ref().map(|file| match file {
            Some(file) => abs_file_name(rundir, Path::new(file), cwd),
            None => abs_file_name(rundir, Path::new(&format!("{name}.pid")), cwd),
        });
        let log_file = args.log_file.as_ref().map(|file| match file {
            // OVS opens a relative --log-file relative to the working directory.
            Some(file) => abs_file_name(Path::new(""), Path::new(file), cwd),
            None => abs_file_name(&dirs.logdir, Path::new(&format!("{name}.log")), cwd),
        });
        let file = |value: &Option<String>| value.as_ref().map(PathBuf::from);
        DaemonConfig {
            program,
            dirs: dirs.clone(),
            ovs_remote: args.ovs_database.clone().unwrap_or_else(|| {
                format!(
                    "unix:{}",
                    abs_file_name(&dirs.ovs_rundir, Path::new("db.sock"), cwd).display()
                )
            }),
            chassis: args.chassis.clone(),
            pidfile,
            overwrite_pidfile: args.overwrite_pidfile,
            detach: args.detach,
            detached_child: args.detached_child,
            chdir: !args.no_chdir,
            monitor: args.monitor,
            user: args.user.clone(),
            log_file,
            vlog_specs: args.verbose.clone(),
            syslog_method: args.syslog_method.clone(),
            syslog_target: args.syslog_target.clone(),
            ssl: SslOptions {
                private_key: file(&args.private_key),
                certificate: file(&args.certificate),
                ca_cert: file(&args.ca_cert),
                bootstrap_ca_cert: file(&args.bootstrap_ca_cert),
                peer_ca_cert: file(&args.peer_ca_cert),
                protocols: args.ssl_protocols.clone(),
                ciphers: args.ssl_ciphers.clone(),
            },
            unixctl: args
                .unixctl
                .as_ref()
                .map(|path| abs_file_name(rundir, Path::new(path), cwd)),
            enable_dummy_vif_plug: args.enable_dummy_vif_plug,
            table_layout: args
                .table_layout
                .as_deref()
                .and_then(TableLayout::for_daemon),
            metrics: args.metrics,
            put_part_flows: args.put_part_flows.unwrap_or(0),
            compile_batch_lflows: args.compile_batch_lflows.unwrap_or(0),
        }
    }

    /// The control socket path for a daemon whose pid is `pid`.
    pub fn unixctl_path(&self, pid: u32) -> PathBuf {
        self.unixctl.clone().unwrap_or_else(|| {
            self.dirs
                .ovn_rundir
                .join(format!("{}.{pid}.ctl", self.program.name()))
        })
    }
}

#[cfg(test)]
mod tests;
