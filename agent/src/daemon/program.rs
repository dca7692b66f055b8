//! The program's name, taken from argv[0], and the directories OVS and OVN take from the
//! environment.
//!
//! Installed or linked as `ovn-controller`, the agent calls itself `ovn-controller` in
//! every file name (pidfile, log, control socket) and in `version`, so that ovn-ctl,
//! systemd units and `ovn-appctl -t ovn-controller` work unchanged (DESIGN.md).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// What the program calls itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Program {
    OvnController,
    OvnAgent,
}

impl Program {
    /// `ovn-controller` if argv[0]'s file name is exactly that, else `ovn-agent`.
    pub fn from_argv0(argv0: &OsStr) -> Program {
        match Path::new(argv0).file_name() {
            Some(name) if name == "ovn-controller" => Program::OvnController,
            _ => Program::OvnAgent,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Program::OvnController => "ovn-controller",
            Program::OvnAgent => "ovn-agent",
        }
    }
}

/// Run and log directories, as OVS `get_dir()` reads them: an unset or empty variable
/// means the built-in default.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dirs {
    /// `$OVS_RUNDIR`, default `/var/run/openvswitch` (where the OVS database socket is).
    pub ovs_rundir: PathBuf,
    /// `$OVN_RUNDIR`, default `/var/run/ovn` (pidfile and control socket).
    pub ovn_rundir: PathBuf,
    /// `$OVN_LOGDIR`, else `$OVS_LOGDIR`, default `/var/log/ovn` (`--log-file` without a
    /// name). ovn-controller 23.03.1 itself only reads `OVS_LOGDIR` (default
    /// `/var/log/openvswitch`); ovn-ctl always names the file, so the difference only shows
    /// for a bare `--log-file`.
    pub logdir: PathBuf,
}

impl Dirs {
    pub fn from_env() -> Dirs {
        Dirs::from_lookup(|name| std::env::var_os(name))
    }

    /// Like [`Dirs::from_env`] with a custom variable lookup (tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<std::ffi::OsString>) -> Dirs {
        let dir = |names: &[&str], default: &str| {
            names
                .iter()
                .filter_map(|name| lookup(name))
                .find(|value| !value.is_empty())
                .map_or_else(|| PathBuf::from(default), PathBuf::from)
        };
        Dirs {
            ovs_rundir: dir(&["OVS_RUNDIR"], "/var/run/openvswitch"),
            ovn_rundir: dir(&["OVN_RUNDIR"], "/var/run/ovn"),
            logdir: dir(&["OVN_LOGDIR", "OVS_LOGDIR"], "/var/log/ovn"),
        }
    }
}

/// The chassis name in `$OVN_SYSCONFDIR/system-id-override` (default `/etc/ovn`), read once
/// at start as ovn-controller reads it: its first line, without the line end. It names the
/// chassis unless `--chassis` does (and wins over `external_ids:system-id`).
pub fn system_id_override() -> Option<String> {
    let dir = std::env::var_os("OVN_SYSCONFDIR")
        .filter(|d| !d.is_empty())
        .map_or_else(|| PathBuf::from("/etc/ovn"), PathBuf::from);
    system_id_from_file(&dir.join("system-id-override"))
}

fn system_id_from_file(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().next()?.trim_end_matches('\r');
    (!line.is_empty()).then(|| line.to_owned())
}

#[cfg(test)]
#[test]
fn system_id_override_is_the_first_line() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("system-id-override");
    std::fs::write(&f, "hv3\nignored\n").unwrap();
    assert_eq!(system_id_from_file(&f).as_deref(), Some("hv3"));
    std::fs::write(&f, "\n").unwrap();
    assert_eq!(system_id_from_file(&f), None);
    assert_eq!(system_id_from_file(&dir.path().join("none")), None);
}

/// OVS `abs_file_name()`: `name` if absolute, else `dir/name`; and, unlike OVS, a relative
/// result is anchored at `cwd` so that the chdir to `/` after detaching cannot change it.
pub fn abs_file_name(dir: &Path, name: &Path, cwd: &Path) -> PathBuf {
    let joined = if name.is_absolute() {
        name.to_path_buf()
    } else {
        dir.join(name)
    };
    if joined.is_absolute() {
        joined
    } else {
        cwd.join(joined)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    #[test]
    fn name_comes_from_argv0_file_name() {
        assert_eq!(
            Program::from_argv0(OsStr::new("ovn-controller")),
            Program::OvnController
        );
        assert_eq!(
            Program::from_argv0(OsStr::new("/usr/bin/ovn-controller")),
            Program::OvnController
        );
        assert_eq!(
            Program::from_argv0(OsStr::new("./target/debug/ovn-agent")),
            Program::OvnAgent
        );
        assert_eq!(
            Program::from_argv0(OsStr::new("/usr/bin/ovn-controller-vtep")),
            Program::OvnAgent
        );
        assert_eq!(Program::from_argv0(OsStr::new("")), Program::OvnAgent);
        assert_eq!(Program::OvnController.name(), "ovn-controller");
    }

    #[test]
    fn dirs_defaults_and_overrides() {
        let none = Dirs::from_lookup(|_| None);
        assert_eq!(none.ovs_rundir, Path::new("/var/run/openvswitch"));
        assert_eq!(none.ovn_rundir, Path::new("/var/run/ovn"));
        assert_eq!(none.logdir, Path::new("/var/log/ovn"));
        let set = Dirs::from_lookup(|name| match name {
            "OVN_RUNDIR" => Some(OsString::from("/run/ovn")),
            "OVS_RUNDIR" => Some(OsString::new()),
            "OVS_LOGDIR" => Some(OsString::from("/log/ovs")),
            _ => None,
        });
        assert_eq!(set.ovn_rundir, Path::new("/run/ovn"));
        assert_eq!(
            set.ovs_rundir,
            Path::new("/var/run/openvswitch"),
            "empty is unset"
        );
        assert_eq!(
            set.logdir,
            Path::new("/log/ovs"),
            "OVS_LOGDIR is the fallback"
        );
        let both = Dirs::from_lookup(|name| match name {
            "OVN_LOGDIR" => Some(OsString::from("/log/ovn")),
            "OVS_LOGDIR" => Some(OsString::from("/log/ovs")),
            _ => None,
        });
        assert_eq!(both.logdir, Path::new("/log/ovn"));
    }

    #[test]
    fn abs_file_name_rules() {
        let cwd = Path::new("/home/op");
        let rundir = Path::new("/var/run/ovn");
        assert_eq!(
            abs_file_name(rundir, Path::new("/tmp/x.pid"), cwd),
            Path::new("/tmp/x.pid")
        );
        assert_eq!(
            abs_file_name(rundir, Path::new("x.pid"), cwd),
            Path::new("/var/run/ovn/x.pid")
        );
        assert_eq!(
            abs_file_name(Path::new("run"), Path::new("x.pid"), cwd),
            Path::new("/home/op/run/x.pid")
        );
        assert_eq!(
            abs_file_name(Path::new(""), Path::new("x.log"), cwd),
            Path::new("/home/op/x.log")
        );
    }
}
