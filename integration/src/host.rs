//! A simulated host: one directory that holds the databases, sockets, logs and pid files of the
//! daemons of one chassis (or of the central node), and the environment that points the OVS and
//! OVN tools at it, as the OVN testsuite's `as` helper does.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::error::{io_error, HarnessError, Result};

#[derive(Debug, Clone)]
pub struct Host {
    name: String,
    dir: PathBuf,
}

impl Host {
    /// Creates `parent/name` and returns the host living there.
    pub fn create(parent: &Path, name: &str) -> Result<Self> {
        Self::at(parent.join(name), name)
    }

    /// The host `name` whose files live in `dir` (created if missing): a container's one node,
    /// whose directory is fixed by the image rather than derived from its name.
    pub fn at(dir: PathBuf, name: &str) -> Result<Self> {
        std::fs::create_dir_all(&dir).map_err(io_error(format!("create {}", dir.display())))?;
        Ok(Self {
            name: name.to_owned(),
            dir,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    /// A command whose OVS/OVN run, log, db and sysconf directories are this host's directory, so
    /// that default socket paths (`br-int.mgmt`, `db.sock`, `*.ctl`) resolve inside it.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(
            crate::stack::Stack::current().program(&program.as_ref().to_string_lossy()),
        );
        for var in [
            "OVS_RUNDIR",
            "OVS_LOGDIR",
            "OVS_DBDIR",
            "OVS_SYSCONFDIR",
            "OVN_RUNDIR",
            "OVN_LOGDIR",
            "OVN_DBDIR",
            "OVN_SYSCONFDIR",
        ] {
            cmd.env(var, &self.dir);
        }
        cmd.current_dir(&self.dir);
        cmd
    }

    /// Runs a tool to completion in this host's environment and returns its standard output.
    pub fn run<S: AsRef<str>>(&self, program: &str, args: &[S]) -> Result<String> {
        let args: Vec<String> = args.iter().map(|a| a.as_ref().to_owned()).collect();
        run_command(self.command(program).args(&args), program, &args)
    }
}

pub(crate) fn run_command(cmd: &mut Command, program: &str, args: &[String]) -> Result<String> {
    let out = cmd.output().map_err(|source| HarnessError::Spawn {
        program: program.to_owned(),
        source,
    })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(HarnessError::Command {
            program: program.to_owned(),
            args: args.to_vec(),
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    }
}

/// Polls `check` every 50 ms until it returns `Ok(Some(v))`, an error, or `timeout` passes.
pub fn wait_for<T>(
    what: &str,
    timeout: Duration,
    mut check: impl FnMut() -> Result<Option<T>>,
) -> Result<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check()? {
            return Ok(v);
        }
        if Instant::now() >= deadline {
            return Err(HarnessError::Timeout {
                what: what.to_owned(),
                after: timeout,
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
