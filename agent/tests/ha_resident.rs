//! `is_chassis_resident()` for chassisredirect ports follows the HA chassis group: the
//! highest-priority member with a chassis is active (ties by chassis name).

use agent::compile::SbView;
use agent::lflow::flows::ChassisView;
use agent::sbdata::SbData;

fn sb(prio_hv1: i64, prio_hv2: i64) -> SbData {
    let text = format!(
        r#"{{"caption":"Chassis table","headings":["_uuid","name"],"data":[[["uuid","c1"],"hv1"],[["uuid","c2"],"hv2"]]}}
        {{"caption":"HA_Chassis table","headings":["_uuid","chassis","priority"],"data":[[["uuid","h1"],["uuid","c1"],{prio_hv1}],[["uuid","h2"],["uuid","c2"],{prio_hv2}]]}}
        {{"caption":"HA_Chassis_Group table","headings":["_uuid","name","ha_chassis"],"data":[[["uuid","g"],"grp",["set",[["uuid","h1"],["uuid","h2"]]]]]}}
        {{"caption":"Datapath_Binding table","headings":["_uuid","tunnel_key","external_ids"],"data":[[["uuid","d"],1,["map",[["logical-router","x"]]]]]}}
        {{"caption":"Port_Binding table","headings":["_uuid","logical_port","datapath","tunnel_key","type","chassis","ha_chassis_group","options"],"data":[
          [["uuid","p1"],"cr-lrp",["uuid","d"],2,"chassisredirect",["set",[]],["uuid","g"],["map",[]]],
          [["uuid","p2"],"vif",["uuid","d"],3,"",["uuid","c1"],["set",[]],["map",[]]]]}}"#
    );
    let mut sb = SbData::default();
    sb.load_str(&text).unwrap();
    sb
}

#[test]
fn chassisredirect_follows_ha_priority() {
    let s = sb(20, 10);
    assert!(SbView::new(&s, "hv1").is_resident("cr-lrp"));
    assert!(!SbView::new(&s, "hv2").is_resident("cr-lrp"));
    let s = sb(10, 20);
    assert!(!SbView::new(&s, "hv1").is_resident("cr-lrp"));
    assert!(SbView::new(&s, "hv2").is_resident("cr-lrp"));
    // Equal priorities: the chassis name breaks the tie.
    let s = sb(10, 10);
    assert!(SbView::new(&s, "hv1").is_resident("cr-lrp"));
    // Other ports: bound here.
    assert!(SbView::new(&s, "hv1").is_resident("vif"));
    assert!(!SbView::new(&s, "hv2").is_resident("vif"));
    assert!(!SbView::new(&s, "hv1").is_resident("nosuch"));
}
