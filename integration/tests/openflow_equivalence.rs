//! `openflow::action::equivalent` against the real `ovs-vswitchd`: flows whose actions use
//! many encodings (full-mask set_fields, NXM headers in copy_field, register views, notes
//! without padding, every dec_ttl form, nested clone/ct/learn) are installed with one
//! OpenFlow 1.5 bundle and read back with an OpenFlow 1.5 flow dump (the `ofequiv` example):
//! every flow read back must be equivalent to the one sent, and some must come back in
//! another encoding (else the comparison would not be needed, and this test would show
//! nothing).

use std::process::Command;

use integration::cargo::{self, Artifact};
use integration::Chassis;

#[test]
fn dumped_actions_are_equivalent_to_the_ones_sent() {
    let ofequiv =
        cargo::build("openflow", Artifact::Example("ofequiv")).expect("build the openflow example");
    let dir = tempfile::tempdir().unwrap();
    let chassis = Chassis::start_bare(dir.path(), "hv1").unwrap();
    for seed in ["1", "2", "3"] {
        chassis.ofctl(&["del-flows", "br-int"]).unwrap();
        let out = Command::new(&ofequiv)
            .arg(format!("unix:{}", chassis.br_int_mgmt().display()))
            .args(["1000", seed])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "seed {seed}: {}{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
        println!("seed {seed}: {}", stdout.trim());
        // "1000 flows: N dumped in another encoding, all equivalent"
        let differ: usize = stdout
            .split_whitespace()
            .nth(2)
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("unexpected output: {stdout}"));
        assert!(
            differ > 100,
            "seed {seed}: only {differ} re-encoded: {stdout}"
        );
        assert!(stdout.contains("all equivalent"), "{stdout}");
    }
}
