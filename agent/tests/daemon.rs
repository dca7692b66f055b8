//! The real `ovn-agent` binary as a daemon: `--detach` readiness, pidfile, control socket,
//! naming from argv[0], signals and `exit`. Every daemon runs in its own temporary
//! directory and is stopped by its pid.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

const AGENT: &str = env!("CARGO_BIN_EXE_ovn-agent");

/// The process is running (exists and is not a zombie).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            // The state follows the parenthesised command name.
            let after = stat.rsplit_once(')')?.1;
            after.split_whitespace().next().map(|state| state != "Z")
        })
        .unwrap_or(false)
}

fn proc_field(pid: i32, index_after_comm: usize) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1.to_string();
    after
        .split_whitespace()
        .nth(index_after_comm)
        .map(str::to_string)
}

fn wait_until_gone(pid: i32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(pid) {
        assert!(Instant::now() < deadline, "pid {pid} did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Stops a daemon by pid when a test fails half-way.
struct Guard(i32);

impl Drop for Guard {
    fn drop(&mut self) {
        if alive(self.0) {
            let _ = kill(Pid::from_raw(self.0), Signal::SIGKILL);
        }
    }
}

fn run(program: &Path, dir: &Path, args: &[&str]) -> (Output, i32) {
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(dir)
        .env("OVN_RUNDIR", dir)
        .env("OVS_RUNDIR", dir)
        .env_remove("OVN_LOGDIR")
        .env_remove("OVS_LOGDIR")
        .stdin(Stdio::null());
    let child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the agent starts");
    let parent_pid = child.id() as i32;
    // Returns when the parent exits and nothing holds its output pipes any more: the
    // daemon puts its standard streams on /dev/null once it is ready.
    (child.wait_with_output().unwrap(), parent_pid)
}

fn appctl(tool: &str, dir: &Path, args: &[&str]) -> Output {
    Command::new(tool)
        .args(args)
        .env("OVN_RUNDIR", dir)
        .env("OVS_RUNDIR", dir)
        .output()
        .unwrap()
}

fn read_pid(path: &Path) -> i32 {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .trim()
        .parse()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn detach_returns_once_pidfile_and_socket_exist() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pidfile = d.join("x.pid");
    let log = d.join("agent.log");
    let pidfile_arg = format!("--pidfile={}", pidfile.display());
    let log_arg = format!("--log-file={}", log.display());
    let db = format!("unix:{}/db.sock", d.display());
    // The argv ovn-ctl uses, with this test's paths.
    let args = [
        db.as_str(),
        "-vconsole:emer",
        "-vsyslog:off",
        "-vfile:info",
        "--no-chdir",
        &log_arg,
        &pidfile_arg,
        "--detach",
    ];
    let (out, parent_pid) = run(Path::new(AGENT), d, &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // No waiting: both must exist when the parent has returned.
    assert!(pidfile.exists(), "pidfile exists when the parent returns");
    let pid = read_pid(&pidfile);
    let _guard = Guard(pid);
    let socket = d.join(format!("ovn-agent.{pid}.ctl"));
    assert!(
        socket.exists(),
        "control socket exists when the parent returns"
    );
    assert_ne!(pid, parent_pid, "the daemon is not the parent");
    assert!(alive(pid));
    assert!(!alive(parent_pid));
    assert_eq!(
        proc_field(pid, 3),
        Some(pid.to_string()),
        "session leader (setsid)"
    );
    assert_eq!(
        std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap(),
        d.canonicalize().unwrap(),
        "--no-chdir"
    );
    assert_eq!(
        std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap(),
        "ovn-agent\n"
    );

    let out = appctl(
        "ovs-appctl",
        d,
        &["-t", &socket.display().to_string(), "version"],
    );
    assert!(
        text(&out.stdout).starts_with("ovn-agent "),
        "{}",
        text(&out.stdout)
    );

    // A second daemon on the same pidfile refuses to start.
    let (second, _) = run(Path::new(AGENT), d, &args);
    assert_eq!(second.status.code(), Some(1));
    assert!(
        text(&second.stderr).contains(&format!(
            "{}: already running as pid {pid}, aborting",
            pidfile.display()
        )),
        "{}",
        text(&second.stderr)
    );
    assert_eq!(
        read_pid(&pidfile),
        pid,
        "the running daemon's pidfile is untouched"
    );

    kill(Pid::from_raw(pid), Signal::SIGTERM).unwrap();
    wait_until_gone(pid);
    assert!(!pidfile.exists(), "pidfile removed on SIGTERM");
    assert!(!socket.exists(), "socket removed on SIGTERM");
    let log_text = std::fs::read_to_string(&log).unwrap();
    assert!(
        log_text.contains("|vlog|INFO|opened log file"),
        "{log_text}"
    );
    assert!(
        log_text.contains("|fatal_signal|WARN|terminating with signal 15 (Terminated)"),
        "{log_text}"
    );
}

#[test]
fn named_ovn_controller_through_a_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let link: PathBuf = d.join("ovn-controller");
    std::os::unix::fs::symlink(AGENT, &link).unwrap();
    let (out, _) = run(
        &link,
        d,
        &[
            "--pidfile",
            "--detach",
            "-vconsole:off",
            "--syslog-method=null",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let pid = read_pid(&d.join("ovn-controller.pid"));
    let _guard = Guard(pid);
    assert!(d.join(format!("ovn-controller.{pid}.ctl")).exists());
    assert_eq!(
        std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap(),
        "ovn-controller\n"
    );
    assert_eq!(
        std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap(),
        Path::new("/"),
        "chdir to / after detaching"
    );

    // ovn-appctl's default target is ovn-controller: $OVN_RUNDIR/ovn-controller.pid.
    let out = appctl("ovn-appctl", d, &["version"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!(
            "ovn-controller {} compatible with ovn-controller 23.03.1\nOVN internal version 23.03.1-20.27.0-70.6\n",
            env!("CARGO_PKG_VERSION")
        )
    );
    let out = appctl("ovn-appctl", d, &["exit"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    wait_until_gone(pid);
    assert!(!d.join("ovn-controller.pid").exists());
    assert!(!d.join(format!("ovn-controller.{pid}.ctl")).exists());
}

#[test]
fn parent_reports_a_child_that_fails_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (out, _) = run(
        Path::new(AGENT),
        d,
        &[
            "--detach",
            "--pidfile",
            "--log-file=/nonexistent-dir/a.log",
            "--syslog-method=null",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("failed to open /nonexistent-dir/a.log for logging"),
        "{}",
        text(&out.stderr)
    );
    assert!(!d.join("ovn-agent.pid").exists());
}

#[test]
fn foreground_run_answers_exit_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let socket = d.join("fg.ctl");
    let mut child = Command::new(AGENT)
        .args([
            "--pidfile=fg.pid",
            "--unixctl=fg.ctl",
            "-vconsole:off",
            "--syslog-method=null",
        ])
        .env("OVN_RUNDIR", d)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let _guard = Guard(pid);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !socket.exists() {
        assert!(Instant::now() < deadline, "socket never appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        read_pid(&d.join("fg.pid")),
        pid,
        "relative --pidfile is in $OVN_RUNDIR"
    );
    let out = appctl(
        "ovs-appctl",
        d,
        &["-t", &socket.display().to_string(), "exit", "--restart"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(child.wait().unwrap().success());
    assert!(!socket.exists() && !d.join("fg.pid").exists());
}

#[test]
fn version_option_and_bad_options() {
    let out = Command::new(AGENT).arg("--version").output().unwrap();
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("ovn-agent "), "{stdout}");
    assert!(stdout.contains("SB DB Schema 20.27.0"), "{stdout}");
    let out = Command::new(AGENT).arg("--bogus").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let out = Command::new(AGENT).arg("-vloud").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr)
            .contains("processing \"loud\": no destination, level, or module \"loud\""),
        "{}",
        text(&out.stderr)
    );
}

/// The whole drop-in path: Debian's ovn-ctl starts us as `ovn-controller`, reports us
/// running, and stops us through `exit` (not SIGTERM), which it only sends when our
/// `version` line passes its version check.
#[test]
fn ovn_ctl_starts_reports_and_stops_us() {
    const OVN_CTL: &str = "/usr/share/ovn/scripts/ovn-ctl";
    assert!(
        Path::new(OVN_CTL).exists(),
        "the ovn-host package (test oracle) is installed"
    );
    // ovn-ctl runs the daemon under `nice -n -10`, which needs root.
    let uid = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap());
    if uid != 0 {
        eprintln!("skipped: ovn-ctl needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for sub in ["bin", "run", "log", "ovs"] {
        std::fs::create_dir(d.join(sub)).unwrap();
    }
    std::os::unix::fs::symlink(AGENT, d.join("bin/ovn-controller")).unwrap();
    let path = format!(
        "{}:{}",
        d.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let ovn_ctl = |action: &str| {
        Command::new(OVN_CTL)
            .args([action, "--no-monitor", "--ovn-manage-ovsdb=no"])
            .env("PATH", &path)
            .env("OVN_RUNDIR", d.join("run"))
            .env("OVN_LOGDIR", d.join("log"))
            .env("OVS_RUNDIR", d.join("ovs"))
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = ovn_ctl("start_controller");
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let pid = read_pid(&d.join("run/ovn-controller.pid"));
    let _guard = Guard(pid);
    assert!(d.join(format!("run/ovn-controller.{pid}.ctl")).exists());
    let out = ovn_ctl("status_controller");
    assert!(out.status.success());
    assert_eq!(
        text(&out.stdout),
        format!("ovn-controller is running with pid {pid}\n")
    );

    let out = ovn_ctl("stop_controller");
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).contains(&format!("Exiting ovn-controller ({pid})")),
        "{}",
        text(&out.stdout)
    );
    assert!(!alive(pid));
    assert!(!d.join("run/ovn-controller.pid").exists());
    let log = std::fs::read_to_string(d.join("log/ovn-controller.log")).unwrap();
    assert!(log.contains("|vlog|INFO|opened log file"), "{log}");
    assert!(
        !log.contains("terminating with signal"),
        "stopped by `exit`, not SIGTERM: {log}"
    );
}
