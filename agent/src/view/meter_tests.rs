//! Controller actions' meters follow the datapath's meter support.

use super::{Ids, LocalFacts, SbView};
use crate::lflow::chassis_view::ChassisView;
use crate::southbound::Southbound;

fn southbound() -> Southbound {
    let mut sb = Southbound::default();
    sb.load_json(
        r#"{"caption":"Meter table","headings":["_uuid","name","unit","bands"],"data":[[["uuid","00000000-0000-0000-0000-0000000000e1"],"acl-meter","pktps",["set",[]]]]}"#,
    )
    .expect("loads");
    sb
}

#[test]
fn named_meters_are_dropped_without_meter_support() {
    let sb = southbound();
    let ids = Ids::default();
    let with = SbView::with_facts(&sb, "hv1", &ids, &LocalFacts::default());
    assert!(with.named_meter("acl-meter").is_some());
    let facts = LocalFacts {
        no_meters: true,
        ..LocalFacts::default()
    };
    let without = SbView::with_facts(&sb, "hv1", &ids, &facts);
    assert_eq!(without.named_meter("acl-meter"), None);
}

#[test]
fn a_change_of_meter_support_compiles_everything_again() {
    use crate::engine::core::{Engine, EngineOptions};
    let mut e = Engine::new(EngineOptions::default());
    assert!(!e.set_meter_support(Some(true)), "supported, as assumed");
    assert!(e.set_meter_support(Some(false)));
    assert!(!e.set_meter_support(Some(false)));
    assert!(e.set_meter_support(Some(true)));
}
