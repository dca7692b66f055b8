//! The benchmark topology generator produces what it promises, and northd accepts it.

use integration::scale::{build, vm_port, ScaleSpec};
use integration::Central;

fn rows(central: &Central, table: &str, column: &str) -> Vec<String> {
    central
        .nbctl(&["--bare", &format!("--columns={column}"), "list", table])
        .unwrap()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn generated_topology_has_the_requested_shape() {
    let dir = tempfile::tempdir().unwrap();
    let central = Central::start(dir.path()).unwrap();
    let spec = ScaleSpec {
        switches: 3,
        ports_per_switch: 4,
        acls_per_switch: 2,
    };
    build(&central, spec).unwrap();
    central.wait_sb_sync().unwrap();

    assert_eq!(rows(&central, "Logical_Switch", "name").len(), 3);
    // VM ports plus one router-type port per switch.
    assert_eq!(
        rows(&central, "Logical_Switch_Port", "name").len(),
        3 * 4 + 3
    );
    assert_eq!(rows(&central, "Logical_Router_Port", "name").len(), 3);
    // Per switch: the requested ACLs plus one ICMP rule.
    assert_eq!(rows(&central, "ACL", "_uuid").len(), 3 * (2 + 1));
    let members = central
        .nbctl(&["--bare", "--columns=ports", "list", "Port_Group"])
        .unwrap();
    assert_eq!(members.split_whitespace().count(), 12);
    // One address set per switch, each with one element per VM port.
    let sets = central
        .nbctl(&["get", "Address_Set", "as_sw1", "addresses"])
        .unwrap();
    assert_eq!(
        sets.trim(),
        "[\"10.100.1.1\", \"10.100.1.2\", \"10.100.1.3\", \"10.100.1.4\"]"
    );
    let (name, mac, ip) = vm_port(2, 3);
    assert_eq!(
        (name.as_str(), mac.as_str(), ip.as_str()),
        ("s2p3", "0a:00:00:02:00:03", "10.100.2.4")
    );
    let addresses = central
        .nbctl(&["get", "Logical_Switch_Port", &name, "addresses"])
        .unwrap();
    assert_eq!(addresses.trim(), format!("[\"{mac} {ip}\"]"));
    let lflows = central
        .sbctl(&["--bare", "--columns=_uuid", "list", "Logical_Flow"])
        .unwrap();
    assert!(
        lflows.lines().filter(|l| !l.trim().is_empty()).count() > 100,
        "northd compiled it"
    );
}
