//! The harness itself: daemons are stopped by pid when a test ends, also when it panics, and a
//! failed test's directory is kept for its logs.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use integration::{Controller, Lab};

fn alive(pid: u32) -> bool {
    // A reaped process has no /proc entry; a zombie would show state Z.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
    })
}

#[test]
fn daemons_are_stopped_when_a_test_panics() {
    let mut pids = Vec::new();
    let mut dir = PathBuf::new();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let mut lab = Lab::start().unwrap();
        dir = lab.dir().to_owned();
        let chassis = lab.add_chassis("hv1", &Controller::OvnController).unwrap();
        pids.extend([chassis.ovsdb().pid(), chassis.vswitchd().pid()]);
        pids.push(chassis.controller().unwrap().pid());
        let central = lab.central();
        pids.extend([
            central.nb_server().pid(),
            central.sb_server().expect("standalone").pid(),
            central.northd().pid(),
        ]);
        pids.extend([lab.network().ovsdb().pid(), lab.network().vswitchd().pid()]);
        assert!(
            pids.iter().all(|p| alive(*p)),
            "all daemons run inside the test"
        );
        panic!("simulated test failure");
    }));
    assert!(outcome.is_err());
    assert_eq!(pids.len(), 8);
    let survivors: Vec<u32> = pids.iter().copied().filter(|p| alive(*p)).collect();
    assert!(
        survivors.is_empty(),
        "daemons still running after the panic: {survivors:?}"
    );
    assert!(
        dir.join("hv1/ovn-controller.log").is_file(),
        "failed test's logs are kept"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_daemon_that_cannot_start_is_reported_with_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let host = integration::Host::create(dir.path(), "h").unwrap();
    // ovsdb-server refuses a database file that does not exist.
    let err = integration::Daemon::start(
        &host,
        "db",
        "ovsdb-server",
        integration::daemon::ControlSocket::Explicit,
        &[host.path("missing.db").display().to_string()],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("exited during start-up"), "{err}");
    assert!(
        err.contains("missing.db"),
        "error shows the daemon's complaint: {err}"
    );
}
