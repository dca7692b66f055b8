//! The harness runs the programs of the stack `OVN_STACK` names (the system's packages when
//! unset): every daemon and tool it starts by name reports that release's version, and the
//! databases are made from that release's schemas. The scenarios run on OVN 25.03 with
//! `OVN_STACK=25.03` (scripts/test.sh does, after `scripts/ovn-stack.sh 25.03`).

use integration::host::Host;
use integration::stack::Stack;

#[test]
fn every_program_comes_from_the_stack() {
    let stack = Stack::current();
    let (ovn, ovs) = stack
        .versions()
        .unwrap_or_else(|| panic!("no versions known for stack {}", stack.name));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let host = Host::create(dir.path(), "h").expect("a host");
    let ovn_programs = [
        "ovn-controller",
        "ovn-northd",
        "ovn-nbctl",
        "ovn-sbctl",
        "ovn-appctl",
    ];
    let ovs_programs = [
        "ovsdb-server",
        "ovsdb-tool",
        "ovs-vswitchd",
        "ovs-vsctl",
        "ovs-ofctl",
    ];
    for (programs, version) in [(&ovn_programs[..], ovn), (&ovs_programs[..], ovs)] {
        for p in programs {
            let out = host.run(p, &["--version"]).expect("--version");
            let first = out.lines().next().unwrap_or_default();
            assert!(
                first
                    .split_whitespace()
                    .last()
                    .is_some_and(|v| v.starts_with(version)),
                "{p} on stack {}: {first:?}, want {version}*",
                stack.name
            );
        }
    }
    for schema in [stack.nb_schema(), stack.sb_schema(), stack.vswitch_schema()] {
        assert!(std::path::Path::new(&schema).exists(), "{schema}");
    }
}

/// `external_ids:ovn-match-northd-version=true`: ovn-agent processes the Southbound only
/// when northd's internal version is that of the release it speaks (its table layout's:
/// 23.03.1 on the system's stack, 25.03.0 with the `auto` layout on 25.03), as
/// ovn-controller does with its own; a port is then claimed and goes up. Its control socket
/// then answers in that release's forms.
#[test]
fn ovn_agent_matches_the_northd_version_of_its_release() {
    use integration::scenario::wait_port_up;
    use integration::{Controller, Lab};

    let stack = integration::stack::Stack::current();
    if stack.agent_layout().is_none() {
        println!(
            "stack {}: ovn-agent speaks no release of its own here yet",
            stack.name
        );
        return;
    }
    let agent = Controller::ovn_agent().expect("ovn-agent is built");
    let mut lab = Lab::start().expect("lab");
    lab.add_bare_chassis("hv1").expect("chassis");
    lab.chassis("hv1")
        .unwrap()
        .vsctl(&[
            "set",
            "Open_vSwitch",
            ".",
            "external-ids:ovn-match-northd-version=true",
        ])
        .unwrap();
    lab.start_controller("hv1", &agent).expect("ovn-agent");
    let central = lab.central();
    central
        .nbctl(&[
            "ls-add",
            "sw0",
            "--",
            "lsp-add",
            "sw0",
            "vm1",
            "--",
            "lsp-set-addresses",
            "vm1",
            "50:54:00:00:00:01 10.0.0.1",
        ])
        .unwrap();
    lab.chassis("hv1")
        .unwrap()
        .add_vifs(&[("vif-vm1", "vm1")])
        .unwrap();
    wait_port_up(central, "vm1").expect("vm1 goes up: the versions match");
    // The control socket writes replies as the release's ovn-controller does (a final
    // newline added by OVS 3.1's library, none by 3.5's). Read with the system's 3.1
    // client, which prints a reply as it comes (3.5's adds a missing newline itself).
    let hv1 = lab.chassis("hv1").unwrap();
    let ctl = hv1.controller().expect("controller").ctl().clone();
    let out = std::process::Command::new("ovn-appctl")
        .arg("-t")
        .arg(&ctl)
        .arg("debug/status")
        .output()
        .expect("ovn-appctl");
    let want = if stack.appctl_reply_newline() {
        "running\n"
    } else {
        "running"
    };
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
}
