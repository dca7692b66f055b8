//! `--detach` without `fork()` (this crate forbids unsafe code, and forking a process that
//! may already run threads is unsound anyway): the parent runs its own executable again
//! with the same arguments plus a hidden marker, and waits on the child's stdout, a pipe,
//! until the child reports that it is ready. That is the readiness `Type=forking` units
//! and ovn-ctl rely on: when the parent exits 0, the pidfile and the control socket exist.
//!
//! The child (or a daemon that does not detach) is a [`DaemonProcess`]: new session,
//! `comm` set to the program name, pidfile; and, once [`DaemonProcess::ready`] is called,
//! the report to the parent, chdir to `/` and standard streams on `/dev/null`.

use std::ffi::{CString, OsString};
use std::io::{self, BufRead as _, BufReader, Write as _};
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};

use super::args::{DaemonConfig, DETACHED_CHILD_FLAG};
use super::os_error::Strerror;
use super::pidfile::{Pidfile, PidfileError};

/// The line the child writes to the parent when it is ready.
const READY_LINE: &[u8] = b"ovn-agent: daemon ready\n";

/// Why daemon start-up failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProcessError {
    #[error("could not detach from foreground session ({})", Strerror(.0))]
    Spawn(io::Error),
    #[error("fork child died before signaling startup ({0})")]
    ChildDied(String),
    #[error(transparent)]
    Pidfile(#[from] PidfileError),
    #[error("setsid failed ({0})")]
    Setsid(nix::Error),
    #[error("cannot report readiness to the parent ({})", Strerror(.0))]
    Notify(io::Error),
    #[error("cannot put standard streams on /dev/null ({})", Strerror(.0))]
    DevNull(io::Error),
}

/// The parent side of `--detach`: starts the daemon as a child and waits for it to be
/// ready. Returns the status the parent exits with: 0 once the child is ready, else the
/// child's own non-zero exit status. `argv` is this process's argv (argv[0] included).
pub fn run_detach_parent(argv: &[OsString]) -> Result<i32, ProcessError> {
    let executable = std::env::current_exe().map_err(ProcessError::Spawn)?;
    let mut command = Command::new(executable);
    if let Some(argv0) = argv.first() {
        // The child names itself from argv[0] (e.g. a symlink called ovn-controller).
        command.arg0(argv0);
    }
    command
        .arg(DETACHED_CHILD_FLAG)
        .args(argv.iter().skip(1))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        // Start-up errors of the child reach the user's terminal directly.
        .stderr(Stdio::inherit());
    let mut child = command.spawn().map_err(ProcessError::Spawn)?;
    if let Some(stdout) = child.stdout.take() {
        let mut reader = BufReader::new(stdout);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) if line == READY_LINE => return Ok(0),
                // Anything else the child prints before it is ready is passed on.
                Ok(_) => {
                    let _ = io::stdout().write_all(&line);
                }
            }
        }
    }
    let status = child.wait().map_err(ProcessError::Spawn)?;
    match status.code() {
        Some(code) if code != 0 => Ok(code),
        _ => Err(ProcessError::ChildDied(describe(status))),
    }
}

/// As OVS `process_status_msg()`.
fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => match nix::sys::signal::Signal::try_from(signal) {
            Ok(signal) => format!("killed ({})", signal.as_str()),
            Err(_) => format!("killed (signal {signal})"),
        },
        (None, None) => "unknown status".into(),
    }
}

/// The daemon's own process state: session, name, pidfile, readiness.
#[derive(Debug)]
pub struct DaemonProcess {
    pidfile: Option<Pidfile>,
    detached_child: bool,
    chdir: bool,
    ready: bool,
}

impl DaemonProcess {
    /// Call once, early, before the runtime starts threads: makes the detached child a
    /// session leader (so the terminal's hangups and signals no longer reach it), names the
    /// process after the program for `/proc/PID/comm` (ovn-ctl's `status` compares it), and
    /// writes the pidfile.
    pub fn start(config: &DaemonConfig) -> Result<DaemonProcess, ProcessError> {
        if config.detached_child {
            nix::unistd::setsid().map_err(ProcessError::Setsid)?;
        }
        // The re-executed child runs /proc/self/exe, whose file name may differ from the
        // name the operator used; comm must still be e.g. `ovn-controller`.
        if let Ok(name) = CString::new(config.program.name()) {
            let _ = nix::sys::prctl::set_name(&name);
        }
        let pidfile = match &config.pidfile {
            Some(path) => Some(Pidfile::create(path, config.overwrite_pidfile)?),
            None => None,
        };
        if config.monitor {
            tracing::info!("--monitor has no effect: the service manager restarts the agent");
        }
        if config.user.is_some() {
            tracing::info!("--user has no effect: run the agent as the wanted user instead");
        }
        Ok(DaemonProcess {
            pidfile,
            detached_child: config.detached_child,
            chdir: config.chdir,
            ready: false,
        })
    }

    pub fn pid(&self) -> u32 {
        std::process::id()
    }

    pub fn pidfile(&self) -> Option<&Path> {
        self.pidfile.as_ref().map(Pidfile::path)
    }

    /// Start-up is complete (the control socket listens and the first OVS database
    /// connection attempt was made): the waiting parent exits 0, and a detached daemon
    /// leaves the working directory and the terminal. Later calls do nothing.
    pub fn ready(&mut self) -> Result<(), ProcessError> {
        if std::mem::replace(&mut self.ready, true) || !self.detached_child {
            return Ok(());
        }
        let mut stdout = io::stdout().lock();
        stdout
            .write_all(READY_LINE)
            .and_then(|()| stdout.flush())
            .map_err(ProcessError::Notify)?;
        drop(stdout);
        if self.chdir {
            // Keeps the daemon from pinning a mount point; all paths are absolute by now.
            let _ = std::env::set_current_dir("/");
        }
        let dev_null = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")
            .map_err(ProcessError::DevNull)?;
        for redirect in [
            nix::unistd::dup2_stdin::<&std::fs::File>,
            nix::unistd::dup2_stdout,
            nix::unistd::dup2_stderr,
        ] {
            redirect(&dev_null).map_err(|e| ProcessError::DevNull(e.into()))?;
        }
        // Nobody reads the console any more (OVS does the same in close_standard_fds()).
        if let Some(vlog) = crate::vlog::global() {
            vlog.disable_console();
        }
        Ok(())
    }

    /// Removes the pidfile (dropping the value does the same).
    pub fn finish(mut self) {
        if let Some(pidfile) = self.pidfile.take() {
            pidfile.remove();
        }
    }
}
