//! NXT_PACKET_IN2 and NXT_RESUME through the openflow crate against a real
//! `ovs-vswitchd`: a flow pauses the pipeline with `controller(...,pause)`; our connection
//! (the `ofpacketin` example) receives the packet-in2 with its userdata, metadata and
//! continuation, resumes it, and the rest of the pipeline runs (a second packet-in shows
//! the register written after the pause).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use integration::cargo::{self, Artifact};
use integration::Chassis;

/// An example of the openflow crate, built if needed.
fn example(name: &str) -> PathBuf {
    cargo::build("openflow", Artifact::Example(name)).expect("build the openflow example")
}

/// Kills the child (by its pid) when the test ends, also on panic.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn packet_in2_pause_and_resume_with_a_real_switch() {
    let dir = tempfile::tempdir().unwrap();
    let chassis = Chassis::start_bare(dir.path(), "hv1").unwrap();
    chassis
        .vsctl(&[
            "add-port",
            "br-int",
            "p1",
            "--",
            "set",
            "interface",
            "p1",
            "type=dummy",
            "ofport_request=1",
        ])
        .unwrap();
    chassis
        .ofctl(&[
            "add-flow",
            "br-int",
            "table=0,priority=100,in_port=1,arp actions=set_field:0x7->reg3,controller(userdata=01.02.03,pause),set_field:0x5->reg4,resubmit(,1)",
        ])
        .unwrap();
    chassis
        .ofctl(&[
            "add-flow",
            "br-int",
            "table=1,priority=100,reg4=0x5 actions=controller(userdata=04.05)",
        ])
        .unwrap();

    let mut child = KillOnDrop(
        Command::new(example("ofpacketin"))
            .arg(format!("unix:{}", chassis.br_int_mgmt().display()))
            .arg("2")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "ready");

    let arp =
        "ffffffffffff000000000001080600010800060400010000000000010a0000010000000000000a000002";
    chassis
        .appctl(&["netdev-dummy/receive", "p1", arp])
        .unwrap();

    let first = lines.next().unwrap().unwrap();
    assert_eq!(
        first,
        "packet_in2 table=0 cookie=0x0 userdata=01.02.03 paused=yes len=42 metadata=reg3=0x7,in_port=1"
    );
    let second = lines.next().unwrap().unwrap();
    assert_eq!(
        second,
        "packet_in2 table=1 cookie=0x0 userdata=04.05 paused=no len=42 metadata=reg3=0x7,reg4=0x5,in_port=1"
    );
    let status = child.0.wait().unwrap();
    assert!(status.success(), "ofpacketin saw switch errors");
}
