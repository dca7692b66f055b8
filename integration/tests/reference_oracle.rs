//! The reference scenarios run under the real ovn-controller and produce the flows that make
//! them worth comparing against: this checks the scenarios and the capture, so that a
//! differential test built on them compares something real.

use integration::flows::TableLayout;
use integration::oracle::{installed, start_scenario};
use integration::reference::SCENARIOS;
use integration::Controller;

/// A text that must appear in the normalized flows (or groups) of each scenario.
fn signature(scenario: &str) -> &'static [&'static str] {
    match scenario {
        // Address sets and port groups over several ports turn into conjunctive matches.
        "acl" => &["conjunction(", "ct(commit"],
        // The distributed gateway port is resident on hv1: SNAT/DNAT in conntrack.
        "router-nat-dgp" => &["nat(src=172.168.0.100)", "nat(dst=10.0.0.12)"],
        "load-balancers" => &["group:", "selection_method=hash"],
        // put_dhcp_opts (opcode 2) pauses the pipeline in the controller.
        "dhcp" => &["controller(userdata=00.00.00.02", "pause"],
        // pkt_mark=100 and 300 on reroute, 200 on allow.
        "reroute-pkt-mark" => &[
            "set_field:0x64->pkt_mark",
            "set_field:0x12c->pkt_mark",
            "set_field:0xc8->pkt_mark",
        ],
        _ => &[],
    }
}

#[test]
fn reference_scenarios_install_their_signature_flows() {
    for scenario in SCENARIOS {
        let lab = start_scenario(scenario, &Controller::OvnController).expect("scenario starts");
        let got = installed(&lab, TableLayout::Ovn2303).expect("dump hv1");
        let text: String = got
            .flows
            .iter()
            .map(|f| f.text.as_str())
            .chain(got.groups.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            got.flows.len() > 100,
            "{}: only {} flows",
            scenario.name,
            got.flows.len()
        );
        for needle in signature(scenario.name) {
            assert!(
                text.contains(needle),
                "{}: no {needle:?} in the installed flows; controller actions seen: {:?}",
                scenario.name,
                text.match_indices("controller(")
                    .map(|(i, _)| &text[i..(i + 36).min(text.len())])
                    .collect::<std::collections::BTreeSet<_>>()
            );
        }
        assert!(
            !text.contains("unassigned."),
            "{}: a table outside the 23.03 layout was used",
            scenario.name
        );
    }
}
