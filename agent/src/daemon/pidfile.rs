//! The pidfile, created and checked as OVS lib/daemon-unix.c does, because OVS and OVN
//! tools (`ovn-appctl -t NAME`, `ovs-appctl -t NAME`) trust a pidfile only while its writer
//! holds a POSIX write lock (`fcntl(F_SETLK)`) on it: they ask `F_GETLK` who holds it and
//! compare that pid with the file's content.
//!
//! POSIX record locks belong to the process and are dropped when *any* descriptor of the
//! file is closed, so this process must never open its own pidfile elsewhere.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead as _, Write as _};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use nix::fcntl::{fcntl, FcntlArg};
use nix::libc;

use super::os_error::Strerror;

/// Why the pidfile could not be created. Texts follow OVS's fatal messages.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PidfileError {
    #[error("{path}: create failed ({})", Strerror(source))]
    Create { path: String, source: io::Error },
    #[error("{path}: fcntl(F_SETLK) failed ({})", Strerror(source))]
    Lock { path: String, source: io::Error },
    #[error("{path}: already running as pid {pid}, aborting")]
    AlreadyRunning { path: String, pid: i32 },
    #[error("{path}: pidfile check failed ({}), aborting", Strerror(source))]
    Check { path: String, source: io::Error },
    #[error("{path}: write failed ({})", Strerror(source))]
    Write { path: String, source: io::Error },
    #[error("failed to rename \"{from}\" to \"{to}\" ({})", Strerror(source))]
    Rename {
        from: String,
        to: String,
        source: io::Error,
    },
}

fn whole_file_write_lock() -> libc::flock {
    libc::flock {
        l_type: libc::F_WRLCK as libc::c_short,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: 0,
        l_len: 0,
        l_pid: 0,
    }
}

/// Takes a write lock on the whole file without waiting.
fn try_lock(file: &File) -> io::Result<()> {
    fcntl(file, FcntlArg::F_SETLK(&whole_file_write_lock()))
        .map(drop)
        .map_err(io::Error::from)
}

/// The pid of the process holding a lock that would block ours, if any.
fn lock_holder(file: &File) -> io::Result<Option<i32>> {
    let mut lock = whole_file_write_lock();
    fcntl(file, FcntlArg::F_GETLK(&mut lock)).map_err(io::Error::from)?;
    Ok((lock.l_type != libc::F_UNLCK as libc::c_short).then_some(lock.l_pid))
}

fn identity(metadata: &std::fs::Metadata) -> (u64, u64) {
    (metadata.dev(), metadata.ino())
}

/// What a pidfile says, as OVS `read_pidfile()` decides it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PidfileState {
    /// No such file.
    Absent,
    /// The file exists but nobody holds its lock (its writer died).
    Stale,
    /// Held by this live process, whose pid the file contains.
    Running(i32),
}

/// Reads `path` like OVS `read_pidfile()` (without deleting anything). Never call it on a
/// pidfile this process holds: closing the file would release our own lock.
pub fn read_pidfile(path: &Path) -> io::Result<PidfileState> {
    let file = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(PidfileState::Absent),
        Err(error) => return Err(error),
    };
    let Some(holder) = lock_holder(&file)? else {
        return Ok(PidfileState::Stale);
    };
    let mut line = String::new();
    io::BufReader::new(&file).read_line(&mut line)?;
    if line.trim().parse::<i32>().ok() == Some(holder) {
        Ok(PidfileState::Running(holder))
    } else {
        // Locked by a process that is not its writer: that process is about to delete it.
        Err(io::Error::from_raw_os_error(libc::ESRCH))
    }
}

/// Fails if a live process holds `path`; deletes it if it is stale, taking its lock first so
/// that of two starting daemons only one deletes it (OVS `check_already_running()`).
fn check_already_running(path: &Path) -> Result<(), PidfileError> {
    let check_error = |source| PidfileError::Check {
        path: path.display().to_string(),
        source,
    };
    let file = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(check_error(error)),
    };
    if let Some(holder) = lock_holder(&file).map_err(check_error)? {
        let mut line = String::new();
        io::BufReader::new(&file)
            .read_line(&mut line)
            .map_err(check_error)?;
        return if line.trim().parse::<i32>().ok() == Some(holder) {
            Err(PidfileError::AlreadyRunning {
                path: path.display().to_string(),
                pid: holder,
            })
        } else {
            Err(check_error(io::Error::from_raw_os_error(libc::ESRCH)))
        };
    }
    // Stale: whoever locks it first may delete it, if the name still refers to it.
    try_lock(&file).map_err(check_error)?;
    let still_named = std::fs::metadata(path)
        .ok()
        .zip(file.metadata().ok())
        .is_some_and(|(named, open)| identity(&named) == identity(&open));
    if !still_named {
        return Err(check_error(io::Error::from_raw_os_error(libc::EALREADY)));
    }
    std::fs::remove_file(path).map_err(check_error)
}

/// A pidfile this process holds; removed when dropped (or by [`Pidfile::remove`]).
#[derive(Debug)]
pub struct Pidfile {
    path: PathBuf,
    /// Kept open: closing it would drop the lock that proves we are alive.
    _file: File,
    identity: Option<(u64, u64)>,
}

impl Pidfile {
    /// Writes this process's pid to `path`. Unless `overwrite`, refuses when a live process
    /// holds it. The file appears atomically (written as a temporary, then renamed).
    pub fn create(path: &Path, overwrite: bool) -> Result<Pidfile, PidfileError> {
        let pid = std::process::id();
        let shown = |p: &Path| p.display().to_string();
        let mut temporary = path.as_os_str().to_owned();
        // Without --overwrite-pidfile every starter uses the same temporary, which then
        // works as a lock: two daemons starting at once cannot both pass the check.
        temporary.push(if overwrite {
            format!(".tmp{pid}")
        } else {
            ".tmp".to_string()
        });
        let temporary = PathBuf::from(temporary);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&temporary)
            .map_err(|source| PidfileError::Create {
                path: shown(&temporary),
                source,
            })?;
        try_lock(&file).map_err(|source| PidfileError::Lock {
            path: shown(&temporary),
            source,
        })?;
        let finish = |file: &mut File| -> Result<(), PidfileError> {
            if !overwrite {
                check_already_running(path)?;
            }
            let write_error = |source| PidfileError::Write {
                path: shown(&temporary),
                source,
            };
            file.set_len(0).map_err(write_error)?;
            file.write_all(format!("{pid}\n").as_bytes())
                .map_err(write_error)?;
            std::fs::rename(&temporary, path).map_err(|source| PidfileError::Rename {
                from: shown(&temporary),
                to: shown(path),
                source,
            })
        };
        if let Err(error) = finish(&mut file) {
            let _ = std::fs::remove_file(&temporary);
            return Err(error);
        }
        let identity = file.metadata().ok().map(|m| identity(&m));
        Ok(Pidfile {
            path: path.to_path_buf(),
            _file: file,
            identity,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the file now (it is also removed on drop).
    pub fn remove(mut self) {
        self.remove_if_ours();
    }

    fn remove_if_ours(&mut self) {
        // After --overwrite-pidfile by a successor the name is theirs: leave it.
        let ours = std::fs::metadata(&self.path).ok().map(|m| identity(&m)) == self.identity;
        if self.identity.take().is_some() && ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl Drop for Pidfile {
    fn drop(&mut self) {
        self.remove_if_ours();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_writes_pid_and_drop_removes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent.pid");
        let pidfile = Pidfile::create(&path, false).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{}\n", std::process::id())
        );
        assert!(!dir.path().join("agent.pid.tmp").exists());
        drop(pidfile);
        assert!(!path.exists());
    }

    #[test]
    fn stale_pidfile_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent.pid");
        std::fs::write(&path, "999999\n").unwrap();
        // Nobody holds a lock on it (another process would be needed to hold one; the
        // integration tests cover a live holder).
        let pidfile = Pidfile::create(&path, false).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap().trim(),
            std::process::id().to_string()
        );
        pidfile.remove();
        assert!(!path.exists());
    }

    #[test]
    fn successor_pidfile_is_not_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent.pid");
        let pidfile = Pidfile::create(&path, false).unwrap();
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "1\n").unwrap();
        drop(pidfile);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "1\n");
    }

    #[test]
    fn missing_directory_is_a_create_error() {
        let error = Pidfile::create(Path::new("/nonexistent-dir/a.pid"), false).unwrap_err();
        assert_eq!(
            error.to_string(),
            "/nonexistent-dir/a.pid.tmp: create failed (No such file or directory)"
        );
    }

    #[test]
    fn read_pidfile_states() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.pid");
        assert_eq!(read_pidfile(&path).unwrap(), PidfileState::Absent);
        std::fs::write(&path, "12\n").unwrap();
        assert_eq!(read_pidfile(&path).unwrap(), PidfileState::Stale);
    }
}
