//! `is_chassis_resident()` for chassisredirect ports follows the HA chassis group: the
//! highest-priority member with a chassis is active (ties by chassis name, descending).

mod common;

use agent::lflow::flows::ChassisView;
use agent::southbound::Southbound;
use agent::view::{Ids, SbView};

fn sb(prio_hv1: i64, prio_hv2: i64) -> Southbound {
    let text = format!(
        r#"{{"caption":"Chassis table","headings":["_uuid","name"],"data":[[["uuid","c1"],"hv1"],[["uuid","c2"],"hv2"]]}}
        {{"caption":"HA_Chassis table","headings":["_uuid","chassis","priority"],"data":[[["uuid","h1"],["uuid","c1"],{prio_hv1}],[["uuid","h2"],["uuid","c2"],{prio_hv2}]]}}
        {{"caption":"HA_Chassis_Group table","headings":["_uuid","name","ha_chassis"],"data":[[["uuid","g"],"grp",["set",[["uuid","h1"],["uuid","h2"]]]]]}}
        {{"caption":"Datapath_Binding table","headings":["_uuid","tunnel_key","external_ids"],"data":[[["uuid","d"],1,["map",[["logical-router","x"]]]]]}}
        {{"caption":"Port_Binding table","headings":["_uuid","logical_port","datapath","tunnel_key","type","chassis","ha_chassis_group","options"],"data":[
          [["uuid","p1"],"cr-lrp",["uuid","d"],2,"chassisredirect",["set",[]],["uuid","g"],["map",[]]],
          [["uuid","p2"],"vif",["uuid","d"],3,"",["uuid","c1"],["set",[]],["map",[]]]]}}"#
    );
    common::load_short(&text)
}

fn resident(sb: &Southbound, chassis: &str, port: &str) -> bool {
    SbView::new(sb, chassis, &Ids::default()).is_resident(port)
}

#[test]
fn chassisredirect_follows_ha_priority() {
    let s = sb(20, 10);
    assert!(resident(&s, "hv1", "cr-lrp"));
    assert!(!resident(&s, "hv2", "cr-lrp"));
    let s = sb(10, 20);
    assert!(!resident(&s, "hv1", "cr-lrp"));
    assert!(resident(&s, "hv2", "cr-lrp"));
    // Equal priorities: the chassis name breaks the tie, the greater name first (as
    // ovn-controller's ha-chassis ordering compares names in descending order).
    let s = sb(10, 10);
    assert!(resident(&s, "hv2", "cr-lrp"));
    assert!(!resident(&s, "hv1", "cr-lrp"));
    // Other ports: bound here.
    assert!(resident(&s, "hv1", "vif"));
    assert!(!resident(&s, "hv2", "vif"));
    assert!(!resident(&s, "hv1", "nosuch"));
}
