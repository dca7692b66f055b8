//! TLS and RBAC as deployments run the Southbound: an `ssl:` remote served by a `pssl:`
//! connection with the `ovn-controller` role (a chassis may change only its own rows:
//! certificate CN = chassis name), certificates made by `ovs-pki`. Both controllers in
//! one run each:
//!
//! - configured only through `ovs-vsctl set-ssl` (the local `SSL` table): ports claimed
//!   and up, `nb_cfg` acknowledged and traffic routed over SSL; with another chassis'
//!   certificate, hv1 cannot acknowledge (the server refuses its Chassis_Private write)
//!   until its own certificate is back;
//! - configured only through `-p/-c/-C`: a mismatched pair at start does not connect,
//!   the right files connect without a restart, removed files drop the connection and
//!   restored ones bring it back (as OVN's "ssl files change" test);
//! - ovn-agent only, where ovn-controller 23.03.1 has no equivalent: a certificate
//!   rotated in place is taken without restart (by the live connection, not only the
//!   next one), and each unusable file (missing, unreadable, mismatched, expired, a CA
//!   that did not sign the server) gives its own log line and counter, then recovers.
//! - `ovn-agent compile --sb ssl:...` with the same options, and the CA bootstrap.

mod common;

use std::path::Path;
use std::time::Duration;

use common::pki::{add_rbac_listener, Pki};
use common::{two_switches_one_router_in, Net, Setup};
use integration::host::wait_for;
use integration::observe::{Outcome, Report};
use integration::scenario::wait_port_up;
use integration::{Controller, Lab};

const WAIT: Duration = Duration::from_secs(30);

fn set_ssl(net: &Net, chassis: &str, pki: &Pki, identity: &str) -> integration::Result<String> {
    net.lab.chassis(chassis)?.vsctl(&[
        "set-ssl",
        &pki.key(identity).display().to_string(),
        &pki.cert(identity).display().to_string(),
        &pki.ca().display().to_string(),
    ])
}

/// Points `chassis` at `remote`, passing through an unusable remote first: ovn-controller
/// 23.03.1 reads new certificates only for a new connection (OVN's testsuite does the same).
fn reconnect(net: &Net, chassis: &str, remote: &str) -> integration::Result<()> {
    let c = net.lab.chassis(chassis)?;
    c.vsctl(&[
        "set",
        "Open_vSwitch",
        ".",
        "external-ids:ovn-remote=unix:/dev/null",
    ])?;
    std::thread::sleep(Duration::from_millis(500));
    c.vsctl(&[
        "set",
        "Open_vSwitch",
        ".",
        &format!("external-ids:ovn-remote={remote}"),
    ])
    .map(drop)
}

/// `n_connections` of the Southbound's `pssl:` connection (the server updates it every
/// few seconds).
fn ssl_sessions(lab: &Lab) -> usize {
    lab.central()
        .sbctl(&["--bare", "--columns=status", "list", "Connection"])
        .ok()
        .and_then(|s| {
            s.split([',', ' ']).find_map(|kv| {
                kv.trim()
                    .strip_prefix("n_connections=")?
                    .trim_matches('"')
                    .parse()
                    .ok()
            })
        })
        .unwrap_or(0)
}

fn chassis_private_nb_cfg(lab: &Lab, chassis: &str) -> i64 {
    lab.central()
        .sbctl(&["get", "Chassis_Private", chassis, "nb_cfg"])
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(-1)
}

fn counter(lab: &Lab, chassis: &str, name: &str) -> u64 {
    lab.chassis(chassis)
        .and_then(|c| c.controller_appctl(&["coverage/read-counter", name]))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

fn over_ssl_with_rbac(net: &Net, pki: &Pki, remote: &str) -> Outcome {
    let agent = net.setup.controller("hv1") != Some(&Controller::OvnController);
    let mut p = net.probe();
    for chassis in ["hv1", "hv2"] {
        let r = set_ssl(net, chassis, pki, chassis).and_then(|_| reconnect(net, chassis, remote));
        p.check(&format!("{chassis} over SSL"), r);
    }
    let sessions = wait_for("both controllers on the pssl connection", WAIT, || {
        Ok((ssl_sessions(&net.lab) >= 2).then_some(()))
    });
    p.check("two SSL sessions", sessions);
    p.wait_hv("both chassis acknowledge over SSL");

    // A new port on hv1: claimed and up through the RBAC role.
    if common::plug_vm6_on_hv1(&mut p, net).is_some() {
        p.check("vm6 up over SSL", wait_port_up(net.lab.central(), "vm6"));
    }
    p.wait_hv("vm6 bound");
    common::expect_routed_pings(&mut p, net, "over SSL: ");

    // hv1 with hv2's certificate: its Chassis_Private is not its to write.
    let before = chassis_private_nb_cfg(&net.lab, "hv1");
    let r = set_ssl(net, "hv1", pki, "hv2").and_then(|_| reconnect(net, "hv1", remote));
    p.check("hv1 takes hv2's certificate", r);
    let acked = net
        .lab
        .central()
        .nbctl_with_timeout(8, &["--wait=hv", "sync"])
        .is_ok();
    p.fact(
        "hv1 acknowledges nb_cfg with hv2's certificate",
        if acked { "yes" } else { "no" },
    );
    p.fact(
        "hv1's Chassis_Private.nb_cfg moved",
        if chassis_private_nb_cfg(&net.lab, "hv1") > before {
            "yes"
        } else {
            "no"
        },
    );
    if agent {
        let refused = counter(&net.lab, "hv1", "sb_txn_refused");
        if refused == 0 {
            p.fail("ovn-agent counted no refused transaction");
        }
        let log = common::controller_log(net, "hv1");
        if !log.contains("prohibit") {
            p.fail("ovn-agent did not log the server's RBAC reason");
        }
        // Refused transactions are not sent again while nothing changes.
        let sent = counter(&net.lab, "hv1", "sb_txn");
        std::thread::sleep(Duration::from_secs(3));
        let more = counter(&net.lab, "hv1", "sb_txn") - sent;
        eprintln!(
            "[{}] refused: {refused}, transactions in 3 s of refusal: {more}",
            net.setup.label
        );
        if more > 2 {
            p.fail(format!(
                "{more} Southbound transactions in 3 s while refused: a retry loop"
            ));
        }
    }
    let r = set_ssl(net, "hv1", pki, "hv1").and_then(|_| reconnect(net, "hv1", remote));
    p.check("hv1 takes its own certificate back", r);
    p.wait_hv("hv1 acknowledges again with its own certificate");
    p.finish(&["vm1", "vm2", "vm3", "vm5", "vm6"])
}

#[test]
fn controllers_work_over_ssl_with_rbac_configured_by_set_ssl() {
    let pki = Pki::create(&["central", "hv1", "hv2"]);
    let mut report = Report::default();
    let mut nets = Vec::new();
    for setup in Setup::oracle_and_agent(&["hv1", "hv2"]) {
        let lab = Lab::start_listening(&pki.sb_listen("central")).expect("lab");
        let remote = add_rbac_listener(&lab);
        let net = two_switches_one_router_in(lab, &setup, &["hv1", "hv2"])
            .unwrap_or_else(|e| panic!("build the lab for {}: {e}", setup.label));
        let outcome = over_ssl_with_rbac(&net, &pki, &remote);
        report.add("SSL + RBAC through set-ssl", &setup.label, outcome);
        nets.push(net);
    }
    common::conclude(nets, &report);
}

fn copy(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir(to);
    let _ = std::fs::remove_file(to);
    std::fs::copy(from, to).unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
}

fn status(lab: &Lab) -> String {
    lab.chassis("hv1")
        .and_then(|c| c.controller_appctl(&["connection-status"]))
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

fn wait_status(lab: &Lab, want: &str, what: &str) {
    wait_for(what, WAIT, || Ok((status(lab) == want).then_some(())))
        .unwrap_or_else(|e| panic!("{e}: connection-status says {:?}", status(lab)));
}

/// The files hv1's controller is started with, in its directory.
struct Files {
    key: std::path::PathBuf,
    cert: std::path::PathBuf,
    ca: std::path::PathBuf,
}

impl Files {
    fn put(&self, pki: &Pki, identity: &str) {
        copy(&pki.cert(identity), &self.cert);
        copy(&pki.key(identity), &self.key);
    }
}

/// Starts `controller` on hv1 with `-p/-c/-C` only (no SSL row), first with hv1's
/// certificate and hv2's key.
fn command_line_lab(pki: &Pki, controller: &Controller) -> (Lab, Files) {
    let mut lab = Lab::start_listening(&pki.sb_listen("central")).expect("lab");
    let remote = add_rbac_listener(&lab);
    let chassis = lab.add_bare_chassis("hv1").expect("hv1");
    let dir = chassis.host().path("");
    let files = Files {
        key: dir.join("key.pem"),
        cert: dir.join("cert.pem"),
        ca: dir.join("cacert.pem"),
    };
    copy(&pki.key("hv2"), &files.key);
    copy(&pki.cert("hv1"), &files.cert);
    copy(&pki.ca(), &files.ca);
    chassis.configure_ovn(&remote).expect("configure hv1");
    let options: Vec<String> = [("-p", &files.key), ("-c", &files.cert), ("-C", &files.ca)]
        .iter()
        .flat_map(|(o, f)| [(*o).to_owned(), f.display().to_string()])
        .collect();
    chassis
        .spawn_controller_with(controller, &options)
        .expect("start the controller");
    (lab, files)
}

/// OVN's "ssl files change when using command line options", for one controller.
fn files_change(lab: &Lab, files: &Files, pki: &Pki) {
    wait_status(
        lab,
        "not connected",
        "a mismatched key and certificate do not connect",
    );
    files.put(pki, "hv1");
    wait_status(
        lab,
        "connected",
        "the right files connect without a restart",
    );
    lab.central()
        .wait_for_chassis("hv1", WAIT)
        .expect("hv1 registers through the RBAC role");
    std::fs::remove_file(&files.key).expect("rm key");
    std::fs::remove_file(&files.cert).expect("rm cert");
    wait_status(lab, "not connected", "removed files drop the connection");
    files.put(pki, "hv1");
    wait_status(lab, "connected", "restored files connect again");
}

#[test]
fn ssl_files_from_the_command_line() {
    let pki = Pki::create(&["central", "hv1", "hv2"]);
    pki.add_expired("hv1-expired");
    let agent = Controller::ovn_agent().expect("build ovn-agent");

    let (lab, files) = command_line_lab(&pki, &Controller::OvnController);
    files_change(&lab, &files, &pki);
    drop(lab);

    let (lab, files) = command_line_lab(&pki, &agent);
    files_change(&lab, &files, &pki);
    lab.central().wait_hv_sync().expect("hv1 acknowledges");

    // Rotated in place to another identity: the live connection takes it, and the
    // server's RBAC then refuses hv1's rows to it.
    files.put(&pki, "hv2");
    std::thread::sleep(Duration::from_secs(2));
    wait_status(&lab, "connected", "connected with the rotated certificate");
    assert!(
        lab.central()
            .nbctl_with_timeout(6, &["--wait=hv", "sync"])
            .is_err(),
        "hv1 acknowledged nb_cfg with hv2's certificate: the rotation was not taken"
    );
    assert!(counter(&lab, "hv1", "sb_txn_refused") >= 1);
    files.put(&pki, "hv1");
    lab.central()
        .wait_hv_sync()
        .expect("hv1 acknowledges after rotating back, no restart");

    // Each unusable file: not connected, its own log line, counted; then back.
    let unreadable = |f: &Path| {
        std::fs::remove_file(f).expect("rm");
        std::fs::create_dir(f).expect("a directory in the file's place");
    };
    type Break<'a> = Box<dyn Fn() + 'a>;
    let cases: Vec<(&str, Break, &str)> = vec![
        (
            "missing CA certificate",
            Box::new(|| std::fs::remove_file(&files.ca).expect("rm ca")),
            "cacert.pem: No such file",
        ),
        (
            "unreadable private key",
            Box::new(|| unreadable(&files.key)),
            "key.pem: Is a directory",
        ),
        (
            "mismatched key",
            Box::new(|| copy(&pki.key("hv2"), &files.key)),
            "does not match certificate",
        ),
        (
            "expired certificate",
            Box::new(|| files.put(&pki, "hv1-expired")),
            "handshake failed",
        ),
        (
            "a CA that did not sign the server",
            Box::new(|| copy(&pki.other_ca(), &files.ca)),
            "invalid peer certificate",
        ),
    ];
    for (what, break_it, logged) in cases {
        let failures = counter(&lab, "hv1", "sb_ssl_failures");
        break_it();
        wait_status(&lab, "not connected", what);
        wait_for(&format!("{what}: logged"), WAIT, || {
            Ok(
                std::fs::read_to_string(lab.chassis("hv1")?.controller().expect("agent").log())
                    .unwrap_or_default()
                    .contains(logged)
                    .then_some(()),
            )
        })
        .unwrap_or_else(|e| panic!("{e}: no log line with {logged:?}"));
        wait_for(&format!("{what}: counted"), WAIT, || {
            Ok((counter(&lab, "hv1", "sb_ssl_failures") > failures).then_some(()))
        })
        .expect("sb_ssl_failures grows");
        files.put(&pki, "hv1");
        copy(&pki.ca(), &files.ca);
        wait_status(
            &lab,
            "connected",
            &format!("{what}: repaired, connected again"),
        );
    }
    lab.central()
        .wait_hv_sync()
        .expect("hv1 acknowledges at the end");
}

/// `ovn-agent compile --sb ssl:...` takes the daemon's SSL options: with the CA it fetches
/// the Southbound, with a CA that did not sign the server it says so, and with
/// `--bootstrap-ca-cert` it writes the server's CA to the file and then fetches.
#[test]
fn compile_over_ssl_and_ca_bootstrap() {
    let pki = Pki::create(&["central", "hv1"]);
    let lab = Lab::start_listening(&pki.sb_listen("central")).expect("lab");
    let remote = add_rbac_listener(&lab);
    let Controller::OvnAgent(agent) = Controller::ovn_agent().expect("build ovn-agent") else {
        unreachable!("ovn_agent gives the agent")
    };
    let compile = |ca_option: &str, ca: &Path| {
        std::process::Command::new(&agent)
            .args([
                "compile",
                "--sb",
                &remote,
                "--chassis",
                "hv1",
                "--quiet",
                "--stats",
            ])
            .arg("-p")
            .arg(pki.key("hv1"))
            .arg("-c")
            .arg(pki.cert("hv1"))
            .arg(ca_option)
            .arg(ca)
            .output()
            .expect("run ovn-agent compile")
    };
    let out = compile("-C", &pki.ca());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = compile("-C", &pki.other_ca());
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("invalid peer certificate"), "{stderr}");
    let dir = tempfile::tempdir().expect("dir");
    let boot = dir.path().join("boot-ca.pem");
    let out = compile("--bootstrap-ca-cert", &boot);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written = std::fs::read_to_string(&boot).expect("the CA was bootstrapped");
    let ca = std::fs::read_to_string(pki.ca()).expect("CA");
    // The first certificate's base64 (the CA file may carry text before it).
    let der = |pem: &str| {
        pem.lines()
            .skip_while(|l| !l.starts_with("-----BEGIN CERTIFICATE"))
            .skip(1)
            .take_while(|l| !l.starts_with("-----END"))
            .collect::<String>()
    };
    assert_eq!(
        der(&written),
        der(&ca),
        "the bootstrapped CA is the switch CA"
    );
}
