//! Defaults, both layouts, chassis MACs, bad input.

use super::*;
use crate::owner::Owner;
use crate::physical::{default_flows, port_flows, Problem};

const HV1: &str = "19d7aa79-edef-5a8a-857f-5403be3f6300";

/// §1.1: the defaults of a chassis with no ports (hv1 right after start).
#[test]
fn defaults_equal_the_reference() {
    let flows: BTreeSet<String> = default_flows(&Runtime::default(), &L)
        .iter()
        .map(text)
        .collect();
    let expected: BTreeSet<String> = [
        "cookie=0x0, table=0, priority=0 actions=drop".to_owned(),
        "cookie=0x0, table=37, priority=0 actions=resubmit(,39)".into(),
        "cookie=0x0, table=38, priority=10,reg10=0x1/0x1 actions=resubmit(,40)".into(),
        "cookie=0x0, table=38, priority=0 actions=resubmit(,39)".into(),
        "cookie=0x0, table=39, priority=150,reg10=0x10/0x10 actions=resubmit(,40)".into(),
        "cookie=0x0, table=39, priority=150,reg10=0x2/0x3 actions=resubmit(,40)".into(),
        "cookie=0x0, table=39, priority=0 actions=resubmit(,40)".into(),
        "cookie=0x0, table=40, priority=0 actions=drop".into(),
        format!(
            "cookie=0x0, table=41, priority=0 actions={},resubmit(,42)",
            clear_regs()
        ),
        "cookie=0x0, table=64, priority=0 actions=resubmit(,65)".into(),
        "cookie=0x0, table=65, priority=0 actions=drop".into(),
    ]
    .into_iter()
    .collect();
    assert_eq!(flows, expected);
    assert_encodable(default_flows(&Runtime::default(), &L).iter());
}

/// Every table number comes from the layout: the classic layout moves the output section
/// to 32-36 and the egress pipeline to 37.
#[test]
fn the_classic_layout_renumbers_every_table() {
    let classic = TableLayout::CLASSIC;
    let tables: BTreeSet<u8> = default_flows(&Runtime::default(), &classic)
        .iter()
        .map(|f| f.table)
        .collect();
    assert_eq!(
        tables,
        [0, 32, 33, 34, 35, 36, 64, 65].into_iter().collect()
    );
    let flows: Vec<String> = default_flows(&Runtime::default(), &classic)
        .iter()
        .map(text)
        .collect();
    assert!(flows.contains(&format!(
        "cookie=0x0, table=34, priority=0 actions={},resubmit(,37)",
        clear_regs()
    )));
    assert!(flows.contains(
        &"cookie=0x0, table=36, priority=10,reg10=0x1/0x1 actions=resubmit(,33)".to_owned()
    ));

    let ls = u(0xd1, 1);
    let vif = u(0x2fe3_c0c9, 1);
    let mut w = World::default();
    w.dp(&ls, 1).chassis(HV1, "hv1");
    w.pb(Pb::new(&vif, "vif", &ls, 1, "").on(HV1));
    let mut rt = Rt::new("hv1", HV1);
    rt.local_dp(&ls, 1, None).vif(&vif, 2);
    let sb = w.load();
    let of = port_flows(&id(&vif), &sb.replica, &rt.0, &classic);
    let texts: BTreeSet<String> = of.flows.iter().map(text).collect();
    assert_eq!(
        texts,
        [
            "cookie=0x2fe3c0c9, table=0, priority=100,in_port=2 actions=set_field:0x1->metadata,set_field:0x1->reg14,resubmit(,1)",
            "cookie=0x2fe3c0c9, table=33, priority=100,reg15=0x1,metadata=0x1 actions=resubmit(,34)",
            "cookie=0x2fe3c0c9, table=34, priority=100,reg10=0/0x1,reg14=0x1,reg15=0x1,metadata=0x1 actions=drop",
            "cookie=0x2fe3c0c9, table=64, priority=100,reg10=0x1/0x1,reg15=0x1,metadata=0x1 actions=push:NXM_OF_IN_PORT[],set_field:ANY->in_port,resubmit(,65),pop:NXM_OF_IN_PORT[]",
            "cookie=0x2fe3c0c9, table=65, priority=100,reg15=0x1,metadata=0x1 actions=output:2",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect()
    );
}

/// A remote chassis' MAC mappings become conjunction clauses 1/2 (cookie: its Chassis
/// uuid); this chassis' own mapping rewrites router-port MACs leaving on localnet.
#[test]
fn chassis_macs() {
    let (ls, lr) = (u(0x4d, 1), u(0x3d, 1));
    let (ln, sw_peer, rport) = (u(0xe231_bb28, 1), u(0x4338_910a, 1), u(0x8aa1_5f7f, 1));
    let hv2 = u(0xcafe_0002, 2);
    let mut w = World::default();
    w.dp(&ls, 4).dp(&lr, 3);
    w.chassis.push((
        HV1.into(),
        "hv1".into(),
        vec![(
            "ovn-chassis-mac-mappings".into(),
            "phys:0a:00:00:00:00:01".into(),
        )],
    ));
    w.chassis.push((
        hv2.clone(),
        "hv2".into(),
        vec![(
            "ovn-chassis-mac-mappings".into(),
            "phys:0a:00:00:00:00:02,other:0a:00:00:00:00:03,broken".into(),
        )],
    ));
    w.pb(Pb::new(&ln, "ln", &ls, 2, "localnet")
        .tag(7)
        .opt("network_name", "phys"));
    w.pb(Pb::new(&sw_peer, "ls-lr", &ls, 1, "patch").opt("peer", "lr-ls"));
    w.pb(Pb::new(&rport, "lr-ls", &lr, 3, "patch")
        .opt("peer", "ls-lr")
        .mac("00:00:20:20:12:13 172.16.1.1/24"));
    let mut rt = Rt::new("hv1", HV1);
    rt.local_dp(&ls, 4, Some(&ln))
        .local_dp(&lr, 3, None)
        .peer(&ls, &sw_peer, &rport)
        .patch(&ln, 1);
    let (flows, p) = run(&w.load(), &rt.0);
    // The entry without a MAC is reported as ovn-controller reports it, and skipped.
    let errors: Vec<String> = p.errors.iter().map(|e| e.problem.to_string()).collect();
    assert_eq!(
        errors,
        ["Parsing of ovn-chassis-mac-mappings failed for: \"broken\", the correct format is \"br-name1:MAC1\"."]
    );
    assert_has(&flows, &[
        "cookie=0xcafe0002, table=0, priority=180,dl_src=0a:00:00:00:00:02 actions=conjunction(100,1/2)",
        "cookie=0xcafe0002, table=0, priority=180,dl_src=0a:00:00:00:00:03 actions=conjunction(100,1/2)",
        "cookie=0x8aa15f7f, table=0, priority=180,dl_vlan=7 actions=conjunction(100,2/2)",
        "cookie=0x8aa15f7f, table=0, priority=180,conj_id=100,in_port=1,dl_vlan=7 actions=pop_vlan,set_field:0x4->metadata,set_field:0x2->reg14,set_field:00:00:20:20:12:13->eth_src,resubmit(,8)",
        "cookie=0xe231bb28, table=65, priority=150,reg15=0x2,metadata=0x4,dl_src=00:00:20:20:12:13 actions=set_field:0a:00:00:00:00:01->eth_src,push_vlan:0x8100,set_field:4103->vlan_vid,output:1,set_field:00:00:20:20:12:13->eth_src,pop_vlan",
    ]);
    assert!(
        !flows.iter().any(|f| f.contains("dl_src=0a:00:00:00:00:01")),
        "not our own MAC"
    );
}

/// §1.1: with debug drop sampling, the drops of tables 0, 40, 41 and 65 sample first (the
/// observation point is the table, the domain goes in the top 8 bits).
#[test]
fn drops_sample_when_debug_sampling_is_on() {
    let ls = u(0xd1, 1);
    let (vif, ln) = (u(0x2fe3_c0c9, 1), u(0xe231_bb28, 2));
    let mut w = World::default();
    w.dp(&ls, 1).chassis(HV1, "hv1");
    w.pb(Pb::new(&vif, "vif", &ls, 1, "").on(HV1));
    w.pb(Pb::new(&ln, "ln", &ls, 2, "localnet"));
    let mut rt = Rt::new("hv1", HV1);
    rt.local_dp(&ls, 1, Some(&ln)).vif(&vif, 2).patch(&ln, 3);
    rt.0.drop_sampling = Some(crate::runtime::DropSampling {
        collector_set_id: 5,
        obs_domain_id: 2,
    });
    let (flows, _) = run(&w.load(), &rt.0);
    let sample = |t: u8| {
        format!(
            "sample(probability=65535,collector_set_id=5,obs_domain_id=33554432,obs_point_id={t})"
        )
    };
    assert_has(
        &flows,
        &[
            &format!("cookie=0x0, table=0, priority=0 actions={}", sample(0)),
            &format!("cookie=0x0, table=40, priority=0 actions={}", sample(40)),
            &format!("cookie=0x0, table=65, priority=0 actions={}", sample(65)),
            &format!("cookie=0x2fe3c0c9, table=41, priority=100,reg10=0/0x1,reg14=0x1,reg15=0x1,metadata=0x1 actions={}", sample(41)),
            &format!("cookie=0xe231bb28, table=41, priority=160,reg10=0x10/0x10,reg15=0x2,metadata=0x1 actions={}", sample(41)),
        ],
    );
    assert!(
        !flows.iter().any(|f| f.ends_with("actions=drop")),
        "every drop samples"
    );
}

/// Bad rows are reported and skipped; everything else keeps its flows.
#[test]
fn bad_rows_are_problems_not_crashes() {
    let ls = u(0xd1, 1);
    let good = u(0x600d_0001, 1);
    let mut w = World::default();
    w.dp(&ls, 1).chassis(HV1, "hv1");
    w.pb(Pb::new(&good, "good", &ls, 1, "").on(HV1));
    let bad_key = u(0xbad0_0001, 1);
    w.pb(Pb::new(&bad_key, "bad-key", &ls, 40000, "").on(HV1));
    let bad_tag = u(0xbad0_0002, 2);
    w.pb(Pb::new(&bad_tag, "bad-tag", &ls, 2, "localnet").tag(5000));
    let mut child = Pb::new(&u(0xbad0_0003, 3), "bad-child", &ls, 3, "").tag(0);
    child.parent = Some("good".into());
    w.pb(child);
    let no_dp = u(0xbad0_0004, 4);
    w.pb(Pb::new(&no_dp, "no-dp", &u(0xdead, 9), 4, ""));
    w.mc(&u(0xbad0_0005, 5), &ls, "bad-mc", 7, &[&good]);
    let mut rt = Rt::new("hv1", HV1);
    rt.local_dp(&ls, 1, None)
        .vif(&good, 2)
        .vif(&bad_key, 3)
        .patch(&bad_tag, 4);
    // A datapath that is local but has no row.
    rt.local_dp(&u(0xdead, 9), 9, None).vif(&no_dp, 5);
    let (flows, p) = run(&w.load(), &rt.0);
    let problems: Vec<(Owner, Problem)> = p
        .errors
        .iter()
        .map(|e| (e.owner, e.problem.clone()))
        .collect();
    assert_eq!(
        problems,
        vec![
            (
                Owner::PhysicalPort(id(&bad_key)),
                Problem::BadKey {
                    what: "port",
                    value: 40000
                }
            ),
            (Owner::PhysicalPort(id(&bad_tag)), Problem::BadTag(5000)),
            (
                Owner::PhysicalPort(id(&u(0xbad0_0003, 3))),
                Problem::BadTag(0)
            ),
            (
                Owner::PhysicalPort(id(&no_dp)),
                Problem::MissingDatapath(id(&u(0xdead, 9)))
            ),
            (
                Owner::PhysicalMcGroup(id(&u(0xbad0_0005, 5))),
                Problem::BadKey {
                    what: "multicast group",
                    value: 7
                }
            ),
        ]
    );
    assert!(flows
        .iter()
        .any(|f| f.starts_with("cookie=0x600d0001, table=0,")));
    assert!(!flows.iter().any(|f| f.starts_with("cookie=0xbad0")));
}

/// Ports on datapaths that are not local have no flows; gone rows have none either.
#[test]
fn nothing_for_datapaths_of_no_local_interest() {
    let ls = u(0xd1, 1);
    let vif = u(0x2fe3_c0c9, 1);
    let mut w = World::default();
    w.dp(&ls, 1).chassis(HV1, "hv1");
    w.pb(Pb::new(&vif, "vif", &ls, 1, "").on(HV1));
    let mut rt = Rt::new("hv1", HV1);
    rt.vif(&vif, 2);
    let sb = w.load();
    assert_eq!(
        port_flows(&id(&vif), &sb.replica, &rt.0, &L),
        crate::physical::OwnerFlows::default()
    );
    assert_eq!(
        port_flows(&id(&u(0x1, 1)), &sb.replica, &rt.0, &L),
        crate::physical::OwnerFlows::default()
    );
    let (_, p) = run(&sb, &rt.0);
    assert_eq!(p.per_owner.len(), 1, "only the defaults");
    assert_eq!(p.per_owner[0].0, Owner::PhysicalDefaults);
}
