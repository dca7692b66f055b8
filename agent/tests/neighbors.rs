//! MAC_Binding flows sit on the datapath of their logical port, as ovn-controller places
//! them: the row's own `datapath` column does not count (OVN's "icmp defrag" test creates
//! a binding of router port lr0-sw0 with the switch's datapath).

mod common;

use agent::lflow::layout::TableLayout;
use agent::view::Ids;

#[test]
fn a_mac_binding_goes_on_its_ports_datapath() {
    let text = r#"{"caption":"Chassis table","headings":["_uuid","name"],"data":[[["uuid","c1"],"hv1"]]}
        {"caption":"Datapath_Binding table","headings":["_uuid","tunnel_key","external_ids"],"data":[
          [["uuid","sw"],1,["map",[["logical-switch","x"]]]],
          [["uuid","lr"],2,["map",[["logical-router","y"]]]]]}
        {"caption":"Port_Binding table","headings":["_uuid","logical_port","datapath","tunnel_key","type","chassis","options"],"data":[
          [["uuid","p1"],"vm1",["uuid","sw"],1,"",["uuid","c1"],["map",[]]],
          [["uuid","p2"],"sw0-lr0",["uuid","sw"],2,"patch",["set",[]],["map",[["peer","lr0-sw0"]]]],
          [["uuid","p3"],"lr0-sw0",["uuid","lr"],3,"patch",["set",[]],["map",[["peer","sw0-lr0"]]]]]}
        {"caption":"MAC_Binding table","headings":["_uuid","logical_port","datapath","ip","mac"],"data":[
          [["uuid","m1"],"lr0-sw0",["uuid","sw"],"172.168.0.3","00:00:00:12:af:11"]]}"#;
    let sb = common::load_short(text);
    let r = common::compile(
        &sb,
        "hv1",
        &Ids::default(),
        &TableLayout::OVN_23_03,
        agent::lflow::DEFAULT_FLOW_LIMIT,
    );
    let lines = common::lines(&r);
    let neighbor: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("172.168.0.3") || l.contains("0xaca80003"))
        .collect();
    assert!(
        !neighbor.is_empty(),
        "no flow for the binding:\n{}",
        lines.join("\n")
    );
    for l in &neighbor {
        assert!(
            l.contains("metadata=0x2") && (l.contains("reg15=0x3") || l.contains("reg14=0x3")),
            "not on lr0-sw0 of the router: {l}"
        );
    }
}
