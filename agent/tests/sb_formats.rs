//! Southbound input formats and chassis filtering.

mod common;

use agent::lflow::layout::TableLayout;
use agent::southbound::Southbound;
use agent::view::Ids;
use common::{compile, load_short};
use sbclient::ovn_sb::{Chassis, DatapathBinding, LogicalFlow, PortBinding};

/// `ovsdb-client -f json dump` of a small SB made with ovn-sbctl (one chassis, one switch,
/// one bound port, a good and a bad lflow), as the real tool printed it.
#[test]
fn ovsdb_client_dump_is_read() {
    let mut sb = Southbound::default();
    sb.load_json(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/ovsdb_client_dump.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let r = &sb.replica;
    assert_eq!(
        (
            r.table::<LogicalFlow>().unwrap().len(),
            r.table::<DatapathBinding>().unwrap().len(),
            r.table::<PortBinding>().unwrap().len(),
            r.table::<Chassis>().unwrap().len()
        ),
        (2, 1, 1, 1)
    );
    let r = compile(&sb, "hv1", &Ids::default(), &TableLayout::OVN_23_03, 100);
    let flows: Vec<String> = r
        .flows()
        .iter()
        .map(|f| f.to_string().split_once(", ").unwrap().1.to_string())
        .collect();
    assert_eq!(
        flows,
        [
            "table=8, priority=100,ip,reg14=0x3,metadata=0x5,nw_src=10.0.0.1 actions=set_field:0x3->reg15,resubmit(,37)",
            "table=8, priority=100,ip,reg14=0x3,metadata=0x5,nw_src=10.0.0.2 actions=set_field:0x3->reg15,resubmit(,37)",
        ]
    );
    assert_eq!(r.failures.len(), 1);
    let line = r.failures[0].to_string();
    assert!(
        line.contains("\"tcp.dst == 80 &&\"")
            && line.contains("end of input")
            && line.contains("at position 16"),
        "{line}"
    );
    assert_eq!(r.too_many_flows, 0);
}

fn two_chassis_sb() -> Southbound {
    let text = r#"
    {"caption":"Chassis table","headings":["_uuid","name"],"data":[[["uuid","c1"],"hv1"],[["uuid","c2"],"hv2"]]}
    {"caption":"Datapath_Binding table","headings":["_uuid","tunnel_key","external_ids"],"data":[
        [["uuid","d1"],1,["map",[["logical-switch","x"],["name","sw"]]]],
        [["uuid","d2"],2,["map",[["logical-switch","y"],["name","other"]]]]]}
    {"caption":"Port_Binding table","headings":["_uuid","logical_port","datapath","tunnel_key","type","chassis","options"],"data":[
        [["uuid","p1"],"a",["uuid","d1"],1,"",["uuid","c1"],["map",[]]],
        [["uuid","p2"],"b",["uuid","d1"],2,"",["uuid","c2"],["map",[]]],
        [["uuid","p3"],"c",["uuid","d2"],1,"",["uuid","c2"],["map",[]]]]}
    {"caption":"Port_Group table","headings":["_uuid","name","ports"],"data":[[["uuid","g"],"1_pg",["set",["a","b"]]]]}
    {"caption":"Logical_Flow table","headings":["_uuid","logical_datapath","logical_dp_group","pipeline","table_id","priority","match","actions","external_ids"],"data":[
        [["uuid","11111111-0000-0000-0000-000000000000"],["uuid","d1"],["set",[]],"egress",4,1000,"outport == @pg && ip4","next;",["map",[]]],
        [["uuid","22222222-0000-0000-0000-000000000000"],["uuid","d1"],["set",[]],"ingress",0,50,"inport == \"b\"","next;",["map",[]]],
        [["uuid","33333333-0000-0000-0000-000000000000"],["uuid","d2"],["set",[]],"ingress",0,50,"1","next;",["map",[]]]]}
    "#;
    load_short(text)
}

#[test]
fn port_groups_and_pinned_ports_are_filtered_to_this_chassis() {
    let sb = two_chassis_sb();
    let r = compile(&sb, "hv1", &Ids::default(), &TableLayout::OVN_23_03, 100);
    let flows: Vec<String> = r.flows().iter().map(ToString::to_string).collect();
    // Only "a" (bound here) is left of the port group; "b" (on hv2) pins reg14 to a port
    // that is not related, so that lflow installs nothing; datapath 2 is not local at all.
    assert_eq!(flows, [" cookie=0x11111111, table=46, priority=1000,ip,reg15=0x1,metadata=0x1 actions=resubmit(,47)"]);
    // On hv2 both datapaths are local and the group keeps "b".
    let r2 = compile(&sb, "hv2", &Ids::default(), &TableLayout::OVN_23_03, 100);
    let f2: Vec<String> = r2.flows().iter().map(ToString::to_string).collect();
    assert!(f2.contains(&" cookie=0x11111111, table=46, priority=1000,ip,reg15=0x2,metadata=0x1 actions=resubmit(,47)".to_string()), "{f2:?}");
    assert!(
        f2.contains(
            &" cookie=0x22222222, table=8, priority=50,reg14=0x2,metadata=0x1 actions=resubmit(,9)"
                .to_string()
        ),
        "{f2:?}"
    );
    assert!(
        f2.contains(
            &" cookie=0x33333333, table=8, priority=50,metadata=0x2 actions=resubmit(,9)"
                .to_string()
        ),
        "{f2:?}"
    );
    assert_eq!(f2.len(), 3);
}

#[test]
fn over_the_flow_bound_is_refused_and_counted() {
    let text = r#"
    {"caption":"Chassis table","headings":["_uuid","name"],"data":[[["uuid","c1"],"hv1"]]}
    {"caption":"Datapath_Binding table","headings":["_uuid","tunnel_key","external_ids"],"data":[[["uuid","d1"],1,["map",[["logical-switch","x"]]]]]}
    {"caption":"Port_Binding table","headings":["_uuid","logical_port","datapath","tunnel_key","type","chassis","options"],"data":[[["uuid","p1"],"a",["uuid","d1"],1,"",["uuid","c1"],["map",[]]]]}
    {"caption":"Logical_Flow table","headings":["_uuid","logical_datapath","logical_dp_group","pipeline","table_id","priority","match","actions","external_ids"],"data":[
        [["uuid","11111111-0000-0000-0000-000000000000"],["uuid","d1"],["set",[]],"ingress",0,1,"(reg0[0] == 1 || reg1[0] == 1) && (reg0[1] == 1 || reg1[1] == 1) && (reg0[2] == 1 || reg1[2] == 1) && (reg0[3] == 1 || reg1[3] == 1) && (reg0[4] == 1 || reg1[4] == 1) && (reg0[5] == 1 || reg1[5] == 1) && (reg0[6] == 1 || reg1[6] == 1)","next;",["map",[]]],
        [["uuid","22222222-0000-0000-0000-000000000000"],["uuid","d1"],["set",[]],"ingress",0,2,"tcp.src != 0","next;",["map",[]]]]}
    "#;
    let sb = load_short(text);
    let r = compile(&sb, "hv1", &Ids::default(), &TableLayout::OVN_23_03, 100);
    assert_eq!(r.too_many_flows, 1);
    assert!(
        r.failures[0].to_string().contains("more than 100 flows"),
        "{}",
        r.failures[0]
    );
    // 2^7 = 128 AND terms (each OR spans two symbols, so it is distributed) > 100. The other
    // lflow: `tcp.src != 0` is 16 single-bit flows, times tcp and tcp6.
    assert_eq!(r.flows().len(), 32);
}
