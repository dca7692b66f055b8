//! Remote ports and tunnels: table 39 encapsulation (Geneve, VXLAN, STT), chassisredirect
//! to one gateway or to an HA group, table 0 tunnel receive.

use super::*;
use crate::physical::Problem;

const HV1: &str = "19d7aa79-edef-5a8a-857f-5403be3f6300";
const GENEVE_OUT: &str = "move:NXM_NX_REG14[0..14]->NXM_NX_TUN_METADATA0[16..30]";

fn hv(n: u16) -> String {
    u(0xc0, n)
}

/// Switch ls1 (datapath 1) with vm3 (key 3) on hv2, seen from hv1.
fn vm3_on_hv2() -> (World, String) {
    let ls = u(0xd1, 1);
    let mut w = World::default();
    w.dp(&ls, 1).chassis(HV1, "hv1").chassis(&hv(2), "hv2");
    w.pb(Pb::new(&u(0xc1ce_33c3, 3), "vm3", &ls, 3, "").on(&hv(2)));
    (w, ls)
}

#[test]
fn geneve_vxlan_and_stt_encapsulations_equal_the_reference() {
    let (w, ls) = vm3_on_hv2();
    let sb = w.load();
    let cases = [
        (
            Geneve,
            1,
            format!(
                "set_field:0x1/0xffffff->tun_id,set_field:0x3->tun_metadata0,{GENEVE_OUT},output:1"
            ),
        ),
        (
            Vxlan,
            2,
            "set_field:0x3001/0xffffff->tun_id,output:2".to_owned(),
        ),
        // STT: dp | outport << 24 in the key, the inport in bits 40..54.
        (
            Stt,
            3,
            "set_field:0x3000001->tun_id,move:NXM_NX_REG14[0..14]->NXM_NX_TUN_ID[40..54],output:3"
                .to_owned(),
        ),
    ];
    for (encap, ofport, actions) in cases {
        let mut rt = Rt::new("hv1", HV1);
        rt.local_dp(&ls, 1, None)
            .tunnel("hv2", "192.168.0.2", encap, ofport);
        let (flows, p) = run(&sb, &rt.0);
        assert!(p.errors.is_empty());
        let vm3: Vec<&str> = flows
            .iter()
            .filter(|f| f.starts_with("cookie=0xc1ce33c3"))
            .map(String::as_str)
            .collect();
        assert_eq!(
            vm3,
            vec![format!("cookie=0xc1ce33c3, table=39, priority=100,reg15=0x3,metadata=0x1 actions={actions},resubmit(,40)")],
            "{encap:?}"
        );
    }
}

#[test]
fn the_negotiated_geneve_field_is_used_and_its_absence_is_a_problem() {
    let (w, ls) = vm3_on_hv2();
    let sb = w.load();
    let mut rt = Rt::new("hv1", HV1);
    rt.local_dp(&ls, 1, None)
        .tunnel("hv2", "192.168.0.2", Geneve, 1);
    rt.0.geneve_field = Some(3);
    let (flows, _) = run(&sb, &rt.0);
    assert_has(&flows, &[
        "cookie=0xc1ce33c3, table=39, priority=100,reg15=0x3,metadata=0x1 actions=set_field:0x1/0xffffff->tun_id,set_field:0x3->tun_metadata3,move:NXM_NX_REG14[0..14]->NXM_NX_TUN_METADATA3[16..30],output:1,resubmit(,40)",
        "cookie=0x0, table=0, priority=100,in_port=1 actions=move:NXM_NX_TUN_ID[0..23]->OXM_OF_METADATA[0..23],move:NXM_NX_TUN_METADATA3[16..30]->NXM_NX_REG14[0..14],move:NXM_NX_TUN_METADATA3[0..15]->NXM_NX_REG15[0..15],resubmit(,40)",
    ]);
    rt.0.geneve_field = None;
    let (flows, p) = run(&sb, &rt.0);
    assert!(!flows.iter().any(|f| f.contains("tun_metadata")));
    assert!(p.errors.iter().any(|e| e.problem == Problem::NoGeneveField));
}

#[test]
fn a_remote_port_without_a_tunnel_has_no_flow_and_a_problem() {
    let (w, ls) = vm3_on_hv2();
    let mut rt = Rt::new("hv1", HV1);
    rt.local_dp(&ls, 1, None);
    let (flows, p) = run(&w.load(), &rt.0);
    assert!(!flows.iter().any(|f| f.starts_with("cookie=0xc1ce33c3")));
    assert_eq!(p.errors.len(), 1);
    assert_eq!(p.errors[0].problem, Problem::NoTunnel("hv2".into()));
}

/// §1.1 / §3.1: tunnel receive flows.
#[test]
fn tunnel_receive_flows_equal_the_reference() {
    let sb = World::default().load();
    let mut rt = Rt::new("hv1", HV1);
    rt.tunnel("hv2", "192.168.0.2", Geneve, 1)
        .tunnel("hv3", "192.168.0.3", Stt, 2)
        .tunnel("hv4", "192.168.0.4", Vxlan, 3);
    let (flows, _) = run(&sb, &rt.0);
    assert_eq!(
        table(&flows, 0),
        vec![
            "cookie=0x0, table=0, priority=0 actions=drop",
            "cookie=0x0, table=0, priority=100,in_port=1 actions=move:NXM_NX_TUN_ID[0..23]->OXM_OF_METADATA[0..23],move:NXM_NX_TUN_METADATA0[16..30]->NXM_NX_REG14[0..14],move:NXM_NX_TUN_METADATA0[0..15]->NXM_NX_REG15[0..15],resubmit(,40)",
            "cookie=0x0, table=0, priority=100,in_port=2 actions=move:NXM_NX_TUN_ID[40..54]->NXM_NX_REG14[0..14],move:NXM_NX_TUN_ID[24..39]->NXM_NX_REG15[0..15],move:NXM_NX_TUN_ID[0..23]->OXM_OF_METADATA[0..23],resubmit(,40)",
            "cookie=0x0, table=0, priority=100,in_port=3 actions=move:NXM_NX_TUN_ID[12..23]->NXM_NX_REG15[0..11],move:NXM_NX_TUN_ID[0..11]->OXM_OF_METADATA[0..11],resubmit(,40)",
            "cookie=0x0, table=0, priority=105,tun_id=0x800000/0x800000,in_port=3 actions=set_field:0x8000/0x8000->reg15,move:NXM_NX_TUN_ID[12..22]->NXM_NX_REG15[0..10],move:NXM_NX_TUN_ID[0..11]->OXM_OF_METADATA[0..11],resubmit(,40)",
        ]
    );
}

/// A VTEP gateway behind a VXLAN tunnel: its packets enter the ingress pipeline as coming
/// from the vtep port, flagged as from a ramp switch; towards it only the datapath is sent.
#[test]
fn vtep_ramp_switch_flows() {
    let ls = u(0xd1, 1);
    let vtep = u(0x7e7e_0001, 1);
    let mut w = World::default();
    w.dp(&ls, 5).chassis(HV1, "hv1").chassis(&hv(9), "gw9");
    w.pb(Pb::new(&vtep, "vtep-port", &ls, 9, "vtep").on(&hv(9)));
    let mut rt = Rt::new("hv1", HV1);
    rt.local_dp(&ls, 5, None)
        .tunnel("gw9", "192.168.0.9", Vxlan, 4);
    let (flows, _) = run(&w.load(), &rt.0);
    assert_has(&flows, &[
        "cookie=0x7e7e0001, table=0, priority=110,tun_id=0x5,in_port=4 actions=move:NXM_NX_TUN_ID[0..23]->OXM_OF_METADATA[0..23],set_field:0x9/0x7fff->reg14,set_field:0x2/0x2->reg10,resubmit(,8)",
        "cookie=0x7e7e0001, table=39, priority=100,reg15=0x9,metadata=0x5 actions=set_field:ANY->in_port,set_field:0x5/0xffffff->tun_id,output:4,resubmit(,40)",
    ]);
}

/// Router lr1 (datapath 2) with distributed gateway port lr1-ext (key 2) and its
/// chassisredirect port cr-lr1-ext (key 3).
fn gateway_world(group: &[(u16, &str, i64)], cr_chassis: Option<&str>) -> (World, String) {
    let lr = u(0xd2, 2);
    let mut w = World::default();
    w.dp(&lr, 2).chassis(HV1, "hv1");
    for n in 2..=4 {
        w.chassis(&hv(n), &format!("hv{n}"));
    }
    w.pb(Pb::new(&u(0x1c11_5e17, 2), "lr1-ext", &lr, 2, "patch").opt("peer", "ext-lr1"));
    let mut cr = Pb::new(&u(0xe37e_99d4, 3), "cr-lr1-ext", &lr, 3, "chassisredirect")
        .opt("distributed-port", "lr1-ext")
        .opt("always-redirect", "true");
    cr.chassis = cr_chassis.map(str::to_owned);
    if !group.is_empty() {
        let g = u(0x9999, 1);
        let mut members = Vec::new();
        for (i, (n, _, prio)) in group.iter().enumerate() {
            let m = u(0x8888, i as u16);
            w.ha_chassis.push((m.clone(), hv(*n), *prio));
            members.push(m);
        }
        w.ha_groups.push((g.clone(), "lr1-ext".into(), members));
        cr.ha_group = Some(g);
    }
    w.pb(cr);
    (w, lr)
}

fn gateway_rt(lr: &str) -> Rt {
    let mut rt = Rt::new("hv1", HV1);
    rt.local_dp(lr, 2, None)
        .tunnel("hv2", "192.168.0.2", Geneve, 1)
        .tunnel("hv3", "192.168.0.3", Geneve, 2)
        .tunnel("hv4", "192.168.0.4", Geneve, 3)
        .zones("lr1-ext", lr, 0, 4, 5);
    rt
}

fn cr_flows(flows: &BTreeSet<String>) -> Vec<&str> {
    flows
        .iter()
        .filter(|f| f.starts_with("cookie=0xe37e99d4"))
        .map(String::as_str)
        .collect()
}

/// §3.6: the chassisredirect port bound to hv2 (HA group of one) is tunnelled to hv2.
#[test]
fn chassisredirect_to_a_single_gateway_is_tunnelled() {
    let (w, lr) = gateway_world(&[(2, "hv2", 20)], Some(&hv(2)));
    let (flows, _) = run(&w.load(), &gateway_rt(&lr).0);
    assert_eq!(
        cr_flows(&flows),
        vec![format!("cookie=0xe37e99d4, table=39, priority=100,reg15=0x3,metadata=0x2 actions=set_field:0x2/0xffffff->tun_id,set_field:0x3->tun_metadata0,{GENEVE_OUT},output:1,resubmit(,40)")]
    );
}

/// §3.6: HA with hv2 (priority 20) and hv3 (priority 10), seen from hv1.
#[test]
fn chassisredirect_to_an_ha_group_is_an_active_backup_bundle() {
    let (w, lr) = gateway_world(&[(3, "hv3", 10), (2, "hv2", 20)], Some(&hv(2)));
    let (flows, _) = run(&w.load(), &gateway_rt(&lr).0);
    assert_eq!(
        cr_flows(&flows),
        vec![format!("cookie=0xe37e99d4, table=39, priority=100,reg15=0x3,metadata=0x2 actions=set_field:0x2/0xffffff->tun_id,set_field:0x3->tun_metadata0,{GENEVE_OUT},bundle(eth_src,0,active_backup,ofport,members:1,2)")]
    );
    // Equal priorities: the larger chassis name first; this chassis (no tunnel) is skipped.
    let (w, lr) = gateway_world(&[(2, "hv2", 10), (4, "hv4", 10), (1, "hv1", 30)], None);
    let mut w = w;
    w.ha_chassis[2].1 = HV1.into();
    let (flows, _) = run(&w.load(), &gateway_rt(&lr).0);
    assert!(cr_flows(&flows)[0].ends_with("bundle(eth_src,0,active_backup,ofport,members:3,1)"));
}

#[test]
fn an_ha_group_with_mixed_encapsulations_gets_no_flow() {
    let (w, lr) = gateway_world(&[(3, "hv3", 10), (2, "hv2", 20)], Some(&hv(2)));
    let mut rt = gateway_rt(&lr);
    rt.0.tunnels.get_mut("hv3").unwrap()[0].encap = Vxlan;
    let (flows, p) = run(&w.load(), &rt.0);
    assert!(cr_flows(&flows).is_empty());
    assert_eq!(
        p.errors[0].problem,
        Problem::MixedHaEncapsulations("cr-lr1-ext".into())
    );
}

/// §3.6: the chassisredirect port active here (hv2's view) delivers as the distributed
/// port with the router's zones, whether bound here or made active by its HA group.
#[test]
fn chassisredirect_active_here_becomes_the_distributed_port() {
    let expected = "cookie=0xe37e99d4, table=40, priority=100,reg15=0x3,metadata=0x2 actions=set_field:0x2->reg15,set_field:0x4->reg11,set_field:0x5->reg12,resubmit(,41)";
    let (w, lr) = gateway_world(&[(1, "hv1", 20)], Some(HV1));
    let mut w = w;
    w.ha_chassis[0].1 = HV1.into();
    let (flows, _) = run(&w.load(), &gateway_rt(&lr).0);
    assert_eq!(cr_flows(&flows), vec![expected]);

    let (w, lr) = gateway_world(&[(3, "hv3", 10), (2, "hv2", 20)], Some(&hv(2)));
    let mut rt = gateway_rt(&lr);
    rt.0.active_ha.insert(id(&u(0xe37e_99d4, 3)));
    let (flows, _) = run(&w.load(), &rt.0);
    assert_eq!(cr_flows(&flows), vec![expected]);

    // A distributed port that does not exist: the flow drops (and it is reported).
    let (mut w, lr) = gateway_world(&[], Some(HV1));
    w.pbs.retain(|p| p.name != "lr1-ext");
    let (flows, p) = run(&w.load(), &gateway_rt(&lr).0);
    assert_eq!(
        cr_flows(&flows),
        vec!["cookie=0xe37e99d4, table=40, priority=100,reg15=0x3,metadata=0x2 actions=drop"]
    );
    assert!(matches!(
        p.errors[0].problem,
        Problem::NoDistributedPort { .. }
    ));
}

/// `redirect-type=bridged`: towards a gateway elsewhere, out on the VLAN network of the
/// switch behind the distributed port, with the router port's MAC.
#[test]
fn bridged_redirect_goes_through_the_localnet_switch() {
    let (mut w, lr) = gateway_world(&[], Some(&hv(2)));
    let ls = u(0xd5, 5);
    w.dp(&ls, 5);
    let ext_lr1 = u(0x5555_0001, 1);
    let ln = u(0x5555_0002, 2);
    w.pb(Pb::new(&ext_lr1, "ext-lr1", &ls, 1, "patch").opt("peer", "lr1-ext"));
    w.pb(Pb::new(&ln, "ln-ext", &ls, 2, "localnet").opt("network_name", "phys"));
    for p in &mut w.pbs {
        if p.name == "cr-lr1-ext" {
            p.options.push(("redirect-type".into(), "bridged".into()));
            p.mac.push("00:00:00:00:ff:ee 172.16.0.1/24".into());
        }
    }
    let mut rt = gateway_rt(&lr);
    rt.local_dp(&ls, 5, Some(&ln))
        .peer(&lr, &u(0x1c11_5e17, 2), &ext_lr1)
        .patch(&ln, 7);
    let (flows, _) = run(&w.load(), &rt.0);
    assert_eq!(
        cr_flows(&flows),
        vec!["cookie=0xe37e99d4, table=40, priority=100,reg15=0x3,metadata=0x2 actions=set_field:00:00:00:00:ff:ee->eth_src,set_field:0x5->metadata,set_field:0x2->reg15,resubmit(,65)"]
    );
}

/// A port with an additional chassis: tunnelled to both other chassis; on a localnet
/// switch, traffic from it to remote ports is still tunnelled (priority 110).
#[test]
fn multichassis_ports_are_tunnelled_to_every_chassis() {
    let ls = u(0xd1, 1);
    let (mcp, vm4) = (u(0x3333_0001, 1), u(0x3333_0002, 2));
    let ln = u(0x3333_0003, 3);
    let mut w = World::default();
    w.dp(&ls, 1)
        .chassis(HV1, "hv1")
        .chassis(&hv(2), "hv2")
        .chassis(&hv(3), "hv3");
    let mut p = Pb::new(&mcp, "mcp", &ls, 1, "").on(&hv(2));
    p.additional_chassis = vec![hv(3)];
    w.pb(p);
    w.pb(Pb::new(&vm4, "vm4", &ls, 2, "").on(&hv(3)));
    let mut rt = Rt::new("hv1", HV1);
    rt.local_dp(&ls, 1, None)
        .tunnel("hv2", "192.168.0.2", Geneve, 1)
        .tunnel("hv3", "192.168.0.3", Geneve, 2);
    let (flows, _) = run(&w.load(), &rt.0);
    assert_has(&flows, &[&format!(
        "cookie=0x33330001, table=39, priority=100,reg15=0x1,metadata=0x1 actions=set_field:0x1/0xffffff->tun_id,set_field:0x1->tun_metadata0,{GENEVE_OUT},output:1,set_field:0x1/0xffffff->tun_id,set_field:0x1->tun_metadata0,{GENEVE_OUT},output:2,resubmit(,40)"
    )]);

    let mut w2 = w;
    w2.pb(Pb::new(&ln, "ln", &ls, 3, "localnet"));
    rt.local_dp(&ls, 1, Some(&ln)).patch(&ln, 9);
    rt.0.local_datapaths
        .get_mut(&id(&ls))
        .unwrap()
        .multichassis_ports = vec![id(&mcp)];
    let (flows, _) = run(&w2.load(), &rt.0);
    assert_has(&flows, &[
        "cookie=0x33330002, table=40, priority=100,reg15=0x2,metadata=0x1 actions=set_field:0x3->reg15,resubmit(,40)",
        &format!("cookie=0x33330002, table=39, priority=110,reg14=0x1,reg15=0x2,metadata=0x1 actions=set_field:0x1/0xffffff->tun_id,set_field:0x2->tun_metadata0,{GENEVE_OUT},output:2"),
    ]);
}
