//! The service and the Debian package, with the real tools:
//!
//! - `ready_only_once_the_flows_are_in`: ovn-agent under a fake service manager (a datagram
//!   socket the test binds, `NOTIFY_SOCKET` pointing at it, `WATCHDOG_USEC` set) on a lab
//!   chassis whose `ovn-remote` first points at nothing: it reports its progress in `STATUS=`
//!   lines and extends its start while it waits, but says `READY=1` only after the Southbound
//!   database is fixed and its flow table is in ovs-vswitchd; then it feeds the watchdog and
//!   says `STOPPING=1` on SIGTERM.
//! - `package_replaces_ovn_controller_for_ovn_ctl`: builds the package with cargo-deb (from
//!   the dev profile the tests use), installs it with dpkg, checks the diversion of ovn-host's binary and the
//!   `ovn-controller` alternative, runs `systemd-analyze verify` on the installed unit, starts
//!   the agent with `/usr/share/ovn/scripts/ovn-ctl start_controller` on a lab chassis (the
//!   chassis registers, the flows install) and stops it with `ovn-ctl stop_controller` (by
//!   `exit`: the chassis leaves the Southbound database). The package is purged at the end,
//!   also when the test fails, and the test checks that ovn-host's `/usr/bin/ovn-controller`
//!   is back as it was. It needs root and changes the system for a few seconds (while it
//!   runs, `ovn-controller` on the PATH is ovn-agent): meant for a throwaway CI machine; it
//!   says so and does nothing when not root.
//!
//! Neither needs systemd running as PID 1 (the test machine has none).

mod common;

use std::os::unix::fs::MetadataExt as _;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use integration::host::wait_for;
use integration::scenario::{add_switch, wait_port_up};
use integration::{Chassis, Controller, Lab};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

const WAIT: Duration = Duration::from_secs(30);

// ---- a fake service manager -------------------------------------------------------------

/// The receiving end of `NOTIFY_SOCKET`: every datagram, with when it came.
struct NotifySocket {
    socket: UnixDatagram,
    path: PathBuf,
    received: Vec<(Instant, String)>,
}

impl NotifySocket {
    fn bind(path: PathBuf) -> NotifySocket {
        let socket = UnixDatagram::bind(&path).expect("bind the notify socket");
        socket
            .set_read_timeout(Some(Duration::from_millis(50)))
            .expect("read timeout");
        NotifySocket {
            socket,
            path,
            received: Vec::new(),
        }
    }

    /// Reads what has arrived, for up to `time`.
    fn read_for(&mut self, time: Duration) {
        let end = Instant::now() + time;
        let mut buf = vec![0u8; 4096];
        while Instant::now() < end {
            if let Ok(n) = self.socket.recv(&mut buf) {
                let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                self.received.push((Instant::now(), text));
            }
        }
    }

    /// Reads until a datagram has a line for which `wanted` holds; returns that datagram.
    fn wait_line(&mut self, what: &str, wanted: impl Fn(&str) -> bool) -> (Instant, String) {
        let end = Instant::now() + WAIT;
        loop {
            if let Some(found) = self.received.iter().find(|(_, d)| d.lines().any(&wanted)) {
                return found.clone();
            }
            assert!(
                Instant::now() < end,
                "no {what} within {WAIT:?}; received: {:#?}",
                self.received
            );
            self.read_for(Duration::from_millis(100));
        }
    }

    /// Every line received that starts with `prefix`, with when it came.
    fn lines(&self, prefix: &str) -> Vec<(Instant, String)> {
        self.received
            .iter()
            .flat_map(|(at, d)| {
                d.lines()
                    .filter(|l| l.starts_with(prefix))
                    .map(|l| (*at, l.to_owned()))
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

/// A process the test started, stopped by its pid (SIGTERM, then SIGKILL) when dropped.
struct Spawned(Child);

impl Spawned {
    fn pid(&self) -> Pid {
        Pid::from_raw(i32::try_from(self.0.id()).expect("pid"))
    }

    fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let end = Instant::now() + timeout;
        while Instant::now() < end {
            if let Ok(Some(status)) = self.0.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = kill(self.pid(), Signal::SIGTERM);
            if self.wait_exit(Duration::from_secs(5)).is_none() {
                let _ = self.0.kill();
                let _ = self.0.wait();
            }
        }
    }
}

/// Points the chassis at `remote` with the configuration `Chassis::start_controller` sets.
fn configure(chassis: &Chassis, ip: &str, remote: &str) {
    let name = chassis.name().to_owned();
    chassis
        .vsctl(&[
            "set",
            "Open_vSwitch",
            ".",
            &format!("external-ids:system-id={name}"),
            &format!("external-ids:hostname={name}"),
            &format!("external-ids:ovn-remote={remote}"),
            "external-ids:ovn-encap-type=geneve",
            &format!("external-ids:ovn-encap-ip={ip}"),
        ])
        .expect("configure the chassis");
}

/// A lab with one bare chassis hv1 (192.168.0.1) and switch sw0 whose port vm1 has a VIF on
/// hv1; returns vm1's OpenFlow port number.
fn lab_with_one_port() -> (Lab, u32) {
    let mut lab = Lab::start().expect("start the lab");
    add_switch(
        lab.central(),
        "sw0",
        &[common::vm_port("vm1", "50:54:00:00:00:01", [10, 0, 0, 1])],
    )
    .expect("add sw0");
    let hv1 = lab.add_bare_chassis("hv1").expect("add hv1");
    hv1.add_vif("vm1", "vm1").expect("plug vm1");
    let ofport = hv1
        .vsctl(&["get", "Interface", "vm1", "ofport"])
        .expect("vm1's ofport")
        .trim()
        .parse()
        .expect("a port number");
    (lab, ofport)
}

/// Whether a `dump-flows` line is the table-0 flow (printed without `table=`) that takes
/// packets from OpenFlow port `ofport` into the logical pipeline.
fn is_vif_input(flow: &str, ofport: u32) -> bool {
    !flow.contains("table=") && flow.contains(&format!(",in_port={ofport} actions="))
}

#[test]
fn ready_only_once_the_flows_are_in() {
    let agent = match Controller::ovn_agent().expect("build ovn-agent") {
        Controller::OvnAgent(path) => path,
        other => panic!("not ovn-agent: {other:?}"),
    };
    let (mut lab, vm1_ofport) = lab_with_one_port();
    let nowhere = lab.dir().join("nowhere.sock");
    let mut notify = NotifySocket::bind(lab.dir().join("notify.sock"));
    let hv1 = lab.chassis("hv1").expect("hv1");
    configure(hv1, "192.168.0.1", &format!("unix:{}", nowhere.display()));
    let host = hv1.host();
    let mut cmd = host.command(&agent);
    cmd.arg("--no-chdir")
        .arg(format!(
            "--pidfile={}",
            host.path("ovn-agent.pid").display()
        ))
        .arg(format!(
            "--log-file={}",
            host.path("ovn-agent.log").display()
        ))
        .arg("-vconsole:off")
        .arg(format!("unix:{}", host.path("db.sock").display()))
        .env("NOTIFY_SOCKET", &notify.path)
        // A liveness message every second.
        .env("WATCHDOG_USEC", "2000000")
        .env_remove("WATCHDOG_PID")
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    let mut agent = Spawned(cmd.spawn().expect("start ovn-agent"));

    // The Southbound database is unreachable: progress, liveness, no readiness.
    let waiting = format!(
        "STATUS=connecting to the southbound database unix:{}",
        nowhere.display()
    );
    notify.wait_line("status naming the unreachable database", |l| l == waiting);
    notify.read_for(Duration::from_secs(3));
    assert!(
        notify.lines("READY=1").is_empty(),
        "READY=1 while the southbound database is unreachable: {:#?}",
        notify.received
    );
    let extensions = notify.lines("EXTEND_TIMEOUT_USEC=");
    assert!(
        extensions.len() >= 2
            && extensions
                .iter()
                .all(|(_, l)| l == "EXTEND_TIMEOUT_USEC=2000000"),
        "the start is extended every second while the loop waits: {extensions:?}"
    );
    assert!(
        notify.lines("WATCHDOG=1").is_empty(),
        "the watchdog is armed only once ready"
    );
    assert_eq!(
        hv1.flow_count("br-int").expect("flow count"),
        0,
        "nothing installed without the southbound view"
    );

    // Fixed: the first full flow table goes in, then READY=1.
    let fixed_at = Instant::now();
    configure(hv1, "192.168.0.1", &lab.central().sb_remote());
    let (ready_at, ready) = notify.wait_line("READY=1", |l| l == "READY=1");
    // Read the switch at once, before anything else can change it.
    let dump = hv1
        .ofctl(&["--no-stats", "dump-flows", "br-int"])
        .expect("dump-flows");
    assert!(ready_at > fixed_at);
    let installed: usize = ready
        .lines()
        .find_map(|l| l.strip_prefix("STATUS=flows installed: "))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("READY=1 comes with the flow count: {ready:?}"));
    let flows: Vec<&str> = dump.lines().filter(|l| l.contains("priority=")).collect();
    if flows.len() != installed {
        // The port going up changes northd's logical flows: a later put may have come
        // before the dump. Its count is then the one reported next.
        notify.read_for(Duration::from_secs(2));
    }
    let reported: Vec<String> = notify
        .lines("STATUS=flows installed: ")
        .into_iter()
        .filter(|(at, _)| *at >= ready_at)
        .map(|(_, l)| l)
        .collect();
    assert!(
        reported
            .iter()
            .any(|l| *l == format!("STATUS=flows installed: {}", flows.len())),
        "the switch has a table the agent reported installed ({reported:?} from READY=1 on), \
         {} flows:\n{dump}",
        flows.len()
    );
    assert!(
        flows.iter().any(|f| is_vif_input(f, vm1_ofport)),
        "vm1's physical-to-logical flow is in when READY=1 comes:\n{dump}"
    );
    assert!(
        flows.len() > 50,
        "a whole logical pipeline is in, not a few flows:\n{dump}"
    );
    lab.central()
        .wait_for_chassis("hv1", Duration::from_secs(1))
        .expect("hv1 registered before READY=1");
    let statuses: Vec<String> = notify
        .lines("STATUS=")
        .into_iter()
        .filter(|(at, _)| *at <= ready_at)
        .map(|(_, l)| l)
        .collect();
    let position = |text: &str| statuses.iter().position(|s| s == text);
    assert!(
        position(&waiting) < position(&format!("STATUS=flows installed: {installed}")),
        "statuses in order: {statuses:#?}"
    );

    // Ready: the watchdog is fed every second (read for 4 s: a loaded machine delays
    // the loop's turns, and two pings are what is asked).
    notify.read_for(Duration::from_secs(4));
    let pings = notify.lines("WATCHDOG=1");
    assert!(
        pings.len() >= 2 && pings.iter().all(|(at, _)| *at >= ready_at),
        "watchdog pings after READY=1: {pings:?}"
    );

    // A stop by the service manager: SIGTERM, then STOPPING=1.
    kill(agent.pid(), Signal::SIGTERM).expect("SIGTERM");
    notify.wait_line("STOPPING=1", |l| l == "STOPPING=1");
    let status = agent
        .wait_exit(Duration::from_secs(10))
        .expect("the agent exits");
    assert_eq!(
        status.code(),
        Some(143),
        "128 + SIGTERM, as the unit expects"
    );
    lab.stop_chassis("hv1").expect("stop hv1");
}

// ---- the Debian package -----------------------------------------------------------------

const LINK: &str = "/usr/bin/ovn-controller";
const DIVERTED: &str = "/usr/bin/ovn-controller.ovn-host";
const OVN_CTL: &str = "/usr/share/ovn/scripts/ovn-ctl";

/// Runs a command to completion; panics with its output if it fails.
fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {program}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{program} {args:?}: {}\n{text}",
        out.status
    );
    text
}

fn package_state() -> String {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", "ovn-agent"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// Builds the package (`cargo deb -p agent --profile dev`) into `out` and returns its path.
fn build_package(out: &Path) -> PathBuf {
    let started = Instant::now();
    let mut cmd = integration::cargo::nested_cargo();
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace");
    let out_dir = out.display().to_string();
    let output = cmd
        .current_dir(workspace)
        // The dev profile: the test checks the packaging, and the test run has built that
        // profile already (a release build would add minutes to CI). Operators build the
        // release package with the same command without `--profile dev`.
        .args([
            "deb",
            "-p",
            "agent",
            "--profile",
            "dev",
            "--fast",
            "--output",
            &out_dir,
        ])
        .output()
        .expect("run cargo deb (install it with `cargo install cargo-deb --locked`)");
    assert!(
        output.status.success(),
        "cargo deb: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    eprintln!("cargo deb took {:?}", started.elapsed());
    std::fs::read_dir(out)
        .expect("read the output directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .expect("a .deb built")
}

/// The installed package: purged when dropped (also when the test fails).
struct Installed;

impl Installed {
    fn install(deb: &Path) -> Installed {
        let deb = deb.display().to_string();
        // The guard first: a failed install is purged too.
        let installed = Installed;
        run("dpkg", &["-i", &deb]);
        installed
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        match Command::new("dpkg").args(["--purge", "ovn-agent"]).output() {
            Ok(out) if out.status.success() => {}
            Ok(out) => eprintln!(
                "dpkg --purge ovn-agent failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(e) => eprintln!("dpkg --purge ovn-agent: {e}"),
        }
    }
}

/// A daemon that ovn-ctl started (detached, not our child): stopped by the pid in its
/// pidfile when dropped.
struct ByPidfile(PathBuf);

impl ByPidfile {
    fn pid(&self) -> Option<Pid> {
        let text = std::fs::read_to_string(&self.0).ok()?;
        text.trim().parse().ok().map(Pid::from_raw)
    }
}

fn alive(pid: Pid) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

impl Drop for ByPidfile {
    fn drop(&mut self) {
        let Some(pid) = self.pid() else { return };
        if !alive(pid) {
            return;
        }
        let _ = kill(pid, Signal::SIGTERM);
        let end = Instant::now() + Duration::from_secs(5);
        while alive(pid) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
        }
        if alive(pid) {
            let _ = kill(pid, Signal::SIGKILL);
        }
    }
}

/// `ovn-ctl COMMAND` on the chassis' host (its directories in OVN_RUNDIR, OVS_RUNDIR, ...),
/// with the standard PATH, so that `ovn-controller` is the installed alternative.
fn ovn_ctl(chassis: &Chassis, command: &str) -> String {
    let out = chassis
        .host()
        .command(OVN_CTL)
        .args(["--no-monitor", command])
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .output()
        .expect("run ovn-ctl");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "ovn-ctl {command}: {}\n{text}",
        out.status
    );
    text
}

#[test]
fn package_replaces_ovn_controller_for_ovn_ctl() {
    // /proc/self belongs to the effective user.
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    if !root {
        eprintln!("package_replaces_ovn_controller_for_ovn_ctl needs root (dpkg -i): not run");
        return;
    }
    assert!(
        !package_state().contains("installed"),
        "ovn-agent is already installed here (remove it with `dpkg --purge ovn-agent`)"
    );
    let original = std::fs::read(LINK).expect("ovn-host's /usr/bin/ovn-controller");
    assert!(
        !Path::new(LINK).is_symlink(),
        "{LINK} is ovn-host's real file before the test"
    );

    let out = tempfile::tempdir().expect("a directory for the package");
    let deb = build_package(out.path());
    // The lab first: the system is changed for as short a time as possible.
    let lab = lab_with_one_port();
    {
        let _installed = Installed::install(&deb);

        // ovn-host's binary moved aside, /usr/bin/ovn-controller the alternative, ovn-agent
        // chosen.
        let diversion = run("dpkg-divert", &["--list", LINK]);
        assert!(
            diversion.contains(&format!("diversion of {LINK} to {DIVERTED} by ovn-agent")),
            "{diversion}"
        );
        assert_eq!(
            std::fs::read(DIVERTED).expect("the diverted file"),
            original
        );
        let query = run("update-alternatives", &["--query", "ovn-controller"]);
        for line in [
            "Status: auto",
            "Value: /usr/bin/ovn-agent",
            "Alternative: /usr/bin/ovn-agent",
            "Alternative: /usr/bin/ovn-controller.ovn-host",
        ] {
            assert!(query.lines().any(|l| l == line), "no {line:?} in:\n{query}");
        }
        let resolved = || std::fs::canonicalize(LINK).expect("resolve the link");
        assert_eq!(resolved(), Path::new("/usr/bin/ovn-agent"));
        // Switching back and forth as the README says.
        run(
            "update-alternatives",
            &["--set", "ovn-controller", DIVERTED],
        );
        assert_eq!(resolved(), Path::new(DIVERTED));
        run("update-alternatives", &["--auto", "ovn-controller"]);
        assert_eq!(resolved(), Path::new("/usr/bin/ovn-agent"));
        // An upgrade (the same version again) keeps the diversion and the alternative.
        run("dpkg", &["-i", &deb.display().to_string()]);
        assert_eq!(resolved(), Path::new("/usr/bin/ovn-agent"));
        assert_eq!(
            std::fs::read(DIVERTED).expect("the diverted file"),
            original
        );

        // The unit as installed.
        let files = run("dpkg", &["-L", "ovn-agent"]);
        let unit = files
            .lines()
            .find(|l| l.ends_with("/systemd/system/ovn-agent.service"))
            .unwrap_or_else(|| panic!("no unit installed:\n{files}"));
        run("systemd-analyze", &["verify", unit]);
        assert!(
            files
                .lines()
                .any(|l| l == "/usr/share/doc/ovn-agent/README.md"),
            "{files}"
        );

        started_and_stopped_by_ovn_ctl(lab);
    }

    // Purged: everything as it was.
    assert!(
        !package_state().contains("installed"),
        "ovn-agent purged: {}",
        package_state()
    );
    assert!(!Path::new(LINK).is_symlink(), "{LINK} is a file again");
    assert_eq!(std::fs::read(LINK).expect(LINK), original);
    assert!(!Path::new(DIVERTED).exists());
    let diversion = run("dpkg-divert", &["--list", LINK]);
    assert!(diversion.trim().is_empty(), "diversion left: {diversion}");
    assert!(!Command::new("update-alternatives")
        .args(["--query", "ovn-controller"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("update-alternatives")
        .success());
}

/// `ovn-ctl start_controller` on a lab chassis runs the installed alternative (ovn-agent,
/// named ovn-controller); `ovn-ctl stop_controller` stops it with `exit`.
fn started_and_stopped_by_ovn_ctl((mut lab, vm1_ofport): (Lab, u32)) {
    let hv1 = lab.chassis("hv1").expect("hv1");
    configure(hv1, "192.168.0.1", &lab.central().sb_remote());
    let started = ovn_ctl(hv1, "start_controller");
    let daemon = ByPidfile(hv1.host().path("ovn-controller.pid"));
    let pid = daemon
        .pid()
        .unwrap_or_else(|| panic!("no pidfile after start_controller:\n{started}"));
    assert_eq!(
        std::fs::read_link(format!("/proc/{pid}/exe")).expect("exe"),
        Path::new("/usr/bin/ovn-agent")
    );
    assert_eq!(
        std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .expect("comm")
            .trim(),
        "ovn-controller",
        "ovn-ctl's status compares the process name"
    );
    let status = ovn_ctl(hv1, "status_controller");
    assert!(status.contains("is running"), "{status}");
    let central = lab.central();
    central
        .wait_for_chassis("hv1", WAIT)
        .expect("hv1 registers");
    wait_port_up(central, "vm1").expect("vm1 up");
    wait_for("vm1's flows in br-int", WAIT, || {
        let dump = hv1.ofctl(&["--no-stats", "dump-flows", "br-int"])?;
        Ok(dump
            .lines()
            .any(|f| is_vif_input(f, vm1_ofport))
            .then_some(()))
    })
    .expect("flows installed");
    let version = hv1
        .host()
        .run("ovn-appctl", &["-t", "ovn-controller", "version"])
        .expect("ovn-appctl finds the agent by its ovn-controller pidfile");
    assert!(version.starts_with("ovn-controller "), "{version}");

    let stopped = ovn_ctl(hv1, "stop_controller");
    wait_for("the agent to exit", Duration::from_secs(10), || {
        Ok((!alive(pid)).then_some(()))
    })
    .expect("stopped");
    // `exit` (not SIGTERM): the chassis left the Southbound database.
    let chassis = central
        .sbctl(&["--bare", "--columns=name", "list", "Chassis"])
        .expect("list chassis");
    assert!(
        !chassis.lines().any(|l| l == "hv1"),
        "stop_controller used exit (chassis removed), got: {chassis}\n{stopped}"
    );
    assert!(
        stopped.contains("Exiting ovn-controller"),
        "ovn-ctl took the exit path: {stopped}"
    );
    let log = std::fs::read_to_string(hv1.host().path("ovn-controller.log")).expect("log");
    assert!(
        log.contains("|main|"),
        "the agent logs to ovn-ctl's log file"
    );
    drop(daemon);
    lab.stop_chassis("hv1").expect("stop hv1");
}
