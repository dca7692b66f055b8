//! Bundles of the openflow crate (`BundleBuilder` and `Handle::commit_bundle`, through the
//! `ofreplay` example) against a real `ovs-vswitchd`: a flow the switch refuses is named by
//! its index (ofreplay prints it as `file:line`), both when the switch refuses it as it is
//! added and when it fails as the bundle is applied, and nothing of the bundle is applied.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use integration::cargo::{self, Artifact};
use integration::Chassis;

fn example(name: &str) -> PathBuf {
    cargo::build("openflow", Artifact::Example(name)).expect("build the openflow example")
}

fn replay(chassis: &Chassis, file: &Path) -> Output {
    Command::new(example("ofreplay"))
        .arg(format!("unix:{}", chassis.br_int_mgmt().display()))
        .arg(file)
        .output()
        .unwrap()
}

/// Flow lines of `ovs-ofctl dump-flows --no-stats`, sorted.
fn flows(chassis: &Chassis) -> Vec<String> {
    let dump = chassis
        .ofctl(&["dump-flows", "--no-stats", "br-int"])
        .unwrap();
    let mut v: Vec<String> = dump
        .lines()
        .filter(|l| l.starts_with(' '))
        .map(|l| l.trim().to_owned())
        .collect();
    v.sort();
    v
}

/// `n` good flows with `bad` put at 1-based line `at`.
fn write_flows(dir: &Path, n: usize, at: usize, bad: &str) -> PathBuf {
    let mut text = String::new();
    for i in 1..=n {
        if i == at {
            text.push_str(bad);
        } else {
            let _ = write!(
                text,
                "table=1,priority={i},ip,reg0={i} actions=set_field:{i}->reg1,resubmit(,2)"
            );
        }
        text.push('\n');
    }
    let file = dir.join("flows.txt");
    std::fs::write(&file, text).unwrap();
    file
}

/// The `file:line` names in ofreplay's error.
fn named_lines(stderr: &str) -> Vec<String> {
    stderr
        .split(|c: char| c.is_whitespace() || c == ';')
        .filter_map(|w| w.rsplit_once("flows.txt:").map(|(_, line)| line))
        .map(|w| w.trim_end_matches(':').to_owned())
        .collect()
}

#[test]
fn a_flow_failing_at_commit_is_named_and_nothing_is_applied() {
    let dir = tempfile::tempdir().unwrap();
    let chassis = Chassis::start_bare(dir.path(), "hv1").unwrap();
    chassis
        .ofctl(&["add-flow", "br-int", "table=5,priority=1 actions=drop"])
        .unwrap();
    let before = flows(&chassis);
    // Meter 99 does not exist: vswitchd refuses the flow when the bundle is committed.
    let file = write_flows(
        dir.path(),
        2000,
        1234,
        "table=1,priority=60000,ip actions=meter:99,resubmit(,2)",
    );
    let out = replay(&chassis, &file);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("bundle failed"), "{err}");
    assert!(
        err.contains("flows.txt:1234: OFPMMFC_INVALID_METER"),
        "{err}"
    );
    assert_eq!(named_lines(&err), ["1234"], "{err}");
    assert!(err.contains("commit: OFPBFC_MSG_FAILED"), "{err}");
    assert_eq!(flows(&chassis), before, "nothing of the bundle is applied");
}

#[test]
fn a_flow_refused_when_added_is_named_and_nothing_is_applied() {
    let dir = tempfile::tempdir().unwrap();
    let chassis = Chassis::start_bare(dir.path(), "hv1").unwrap();
    chassis
        .ofctl(&["add-flow", "br-int", "table=5,priority=1 actions=drop"])
        .unwrap();
    let before = flows(&chassis);
    // tun_metadata5 has no TLV mapping: vswitchd refuses the bundle add itself.
    let file = write_flows(
        dir.path(),
        300,
        17,
        "table=1,priority=60000,ip actions=set_field:0x1->tun_metadata5",
    );
    let out = replay(&chassis, &file);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert_eq!(named_lines(&err), ["17"], "{err}");
    // Refused before the commit: the bundle is discarded, never committed.
    assert!(!err.contains("commit:"), "{err}");
    assert_eq!(flows(&chassis), before, "nothing of the bundle is applied");
    // The same flows without the bad one all go in, in one bundle.
    let file = write_flows(
        dir.path(),
        300,
        17,
        "table=1,priority=60000,ip actions=resubmit(,3)",
    );
    let out = replay(&chassis, &file);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(flows(&chassis).len(), before.len() + 300);
}
