//! Daemons started as children of the test process (never `--detach`ed), so that the harness
//! owns them: it stops each one by its pid when the guard is dropped, also when a test fails or
//! panics, and reaps it, so nothing is left behind.

use std::fs::File;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::error::{io_error, HarnessError, Result};
use crate::host::{wait_for, Host};

const START_TIMEOUT: Duration = Duration::from_secs(20);
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Where a daemon puts its unixctl (`ovs-appctl -t`) socket.
#[derive(Debug, Clone, Copy)]
pub enum ControlSocket {
    /// `--unixctl=<dir>/<name>.ctl` is passed on the command line.
    Explicit,
    /// The daemon takes no `--unixctl` option and creates `<rundir>/<program>.<pid>.ctl`
    /// (ovn-controller does this).
    ByPid(&'static str),
}

/// A running daemon; dropping it stops the process (SIGTERM, then SIGKILL after a grace period).
#[derive(Debug)]
pub struct Daemon {
    name: String,
    child: Child,
    ctl: PathBuf,
    log: PathBuf,
}

impl Daemon {
    /// Starts `program` on `host` under the short `name` (which names its pid, log and ctl files)
    /// and waits until it answers on its control socket.
    pub fn start<S: AsRef<str>>(
        host: &Host,
        name: &str,
        program: &str,
        ctl_kind: ControlSocket,
        args: &[S],
    ) -> Result<Self> {
        let log = host.path(&format!("{name}.log"));
        let stderr_path = host.path(&format!("{name}.stderr"));
        let stderr = File::create(&stderr_path)
            .map_err(io_error(format!("create {}", stderr_path.display())))?;
        let mut cmd = host.command(program);
        cmd.arg("--no-chdir")
            .arg(format!(
                "--pidfile={}",
                host.path(&format!("{name}.pid")).display()
            ))
            .arg(format!("--log-file={}", log.display()))
            .arg("-vconsole:off");
        if matches!(ctl_kind, ControlSocket::Explicit) {
            cmd.arg(format!(
                "--unixctl={}",
                host.path(&format!("{name}.ctl")).display()
            ));
        }
        cmd.args(args.iter().map(AsRef::as_ref))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        let child = cmd.spawn().map_err(|source| HarnessError::Spawn {
            program: program.to_owned(),
            source,
        })?;
        let ctl = match ctl_kind {
            ControlSocket::Explicit => host.path(&format!("{name}.ctl")),
            ControlSocket::ByPid(base) => host.path(&format!("{base}.{}.ctl", child.id())),
        };
        let mut daemon = Self {
            name: format!("{}/{name}", host.name()),
            child,
            ctl,
            log,
        };
        daemon.wait_ready(host, &stderr_path)?;
        Ok(daemon)
    }

    fn wait_ready(&mut self, host: &Host, stderr_path: &PathBuf) -> Result<()> {
        let ctl = self.ctl.display().to_string();
        wait_for(
            &format!("{} to answer on {ctl}", self.name),
            START_TIMEOUT,
            || {
                if let Some(status) = self.child.try_wait().map_err(io_error("wait for child"))? {
                    let mut log_tail = tail(&self.log, 20);
                    log_tail.push_str(&tail(stderr_path, 20));
                    return Err(HarnessError::DaemonDied {
                        daemon: self.name.clone(),
                        status: status.to_string(),
                        log: self.log.clone(),
                        log_tail,
                    });
                }
                if !self.ctl.exists() {
                    return Ok(None);
                }
                Ok(host
                    .run("ovs-appctl", &["-t", &ctl, "version"])
                    .ok()
                    .map(|_| ()))
            },
        )
    }

    /// `<host>/<name>`, as in error messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The unixctl socket, for `ovs-appctl -t` / `ovn-appctl -t`.
    pub fn ctl(&self) -> &PathBuf {
        &self.ctl
    }

    pub fn log(&self) -> &PathBuf {
        &self.log
    }

    /// Peak resident set size so far (`VmHWM`), in KiB.
    pub fn peak_rss_kib(&self) -> Result<u64> {
        self.status_kib("VmHWM")
    }

    /// Resident set size now (`VmRSS`), in KiB.
    pub fn rss_kib(&self) -> Result<u64> {
        self.status_kib("VmRSS")
    }

    /// A `kB` line of `/proc/<pid>/status`.
    fn status_kib(&self, key: &str) -> Result<u64> {
        let path = format!("/proc/{}/status", self.pid());
        let status = std::fs::read_to_string(&path).map_err(io_error(format!("read {path}")))?;
        status
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .ok_or_else(|| HarnessError::Config(format!("no {key} in {path}")))
    }

    /// CPU time the process has used so far, user plus system, in seconds (`utime` + `stime`
    /// of `/proc/<pid>/stat`, all threads).
    pub fn cpu_seconds(&self) -> Result<f64> {
        let path = format!("/proc/{}/stat", self.pid());
        let stat = std::fs::read_to_string(&path).map_err(io_error(format!("read {path}")))?;
        // The command name (field 2) is in parentheses and may hold spaces: count from the
        // last ')'. Fields 14 and 15 (utime, stime) are then the 12th and 13th.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok());
        match (ticks(11), ticks(12)) {
            (Some(utime), Some(stime)) => Ok((utime + stime) as f64 / clock_ticks_per_second()),
            _ => Err(HarnessError::Config(format!(
                "no utime/stime in {path}: {stat:?}"
            ))),
        }
    }

    /// Whether the process is still running (it may have crashed).
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills the process with SIGKILL (a crash: it cleans nothing up) and reaps it.
    pub fn crash(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Stops the process by its pid (SIGTERM, then SIGKILL after a grace period) and reaps it.
    pub fn stop(&mut self) {
        if !self.is_running() {
            return;
        }
        let Ok(raw) = i32::try_from(self.child.id()) else {
            return;
        };
        let _ = kill(Pid::from_raw(raw), Signal::SIGTERM);
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline {
            if !self.is_running() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `sysconf(_SC_CLK_TCK)`, the unit of the times in `/proc/<pid>/stat`, as `getconf` reports
/// it (100 on Linux, whatever the kernel's HZ, if `getconf` is missing).
pub fn clock_ticks_per_second() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .filter(|t: &f64| *t > 0.0)
            .unwrap_or(100.0)
    })
}

/// The last `lines` lines of a text file, or a note saying it could not be read.
pub fn tail(path: &PathBuf, lines: usize) -> String {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let all: Vec<&str> = text.lines().collect();
            let start = all.len().saturating_sub(lines);
            all[start..].iter().fold(String::new(), |mut s, l| {
                s.push_str(l);
                s.push('\n');
                s
            })
        }
        Err(e) => format!("({}: {e})\n", path.display()),
    }
}
