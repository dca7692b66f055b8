//! Multicast groups: local members in table 40, patch ports / localports / remote chassis
//! in table 39.

use super::*;

const HV2: &str = "22222222-0000-4000-8000-000000000002";
const GENEVE_OUT: &str = "move:NXM_NX_REG14[0..14]->NXM_NX_TUN_METADATA0[16..30]";

fn hv(n: u16) -> String {
    u(0xc0, n)
}

/// §3.2, hv2's `_MC_flood` of ls1: vm3 (key 3) here, vm1 on hv1, the router patch port
/// (key 4).
fn flood_world() -> (World, String, Rt) {
    let ls = u(0xd1, 1);
    let lr = u(0xd2, 2);
    let (vm1, vm3, patch, rpatch) = (
        u(0x6284_8eb8, 1),
        u(0xc1ce_33c3, 3),
        u(0xf0ff_94a9, 4),
        u(0xf0ff_94aa, 1),
    );
    let mut w = World::default();
    w.dp(&ls, 1)
        .dp(&lr, 2)
        .chassis(HV2, "hv2")
        .chassis(&hv(1), "hv1");
    w.pb(Pb::new(&vm1, "vm1", &ls, 1, "").on(&hv(1)));
    w.pb(Pb::new(&vm3, "vm3", &ls, 3, "").on(HV2));
    w.pb(Pb::new(&patch, "ls1-lr1", &ls, 4, "patch").opt("peer", "lr1-ls1"));
    w.pb(Pb::new(&rpatch, "lr1-ls1", &lr, 1, "patch").opt("peer", "ls1-lr1"));
    w.mc(
        &u(0x7994_0b55, 1),
        &ls,
        "_MC_flood",
        32768,
        &[&vm1, &vm3, &patch],
    );
    let mut rt = Rt::new("hv2", HV2);
    rt.local_dp(&ls, 1, None)
        .local_dp(&lr, 2, None)
        .vif(&vm3, 13)
        .zone("vm3", 2)
        .tunnel("hv1", "192.168.0.1", Geneve, 1);
    (w, ls, rt)
}

fn mc_flows(flows: &BTreeSet<String>, cookie: u32) -> Vec<&str> {
    let tag = format!("cookie={cookie:#x}, ");
    flows
        .iter()
        .filter(|f| f.starts_with(&tag))
        .map(String::as_str)
        .collect()
}

#[test]
fn flood_equals_the_reference() {
    let (w, _, rt) = flood_world();
    let (flows, p) = run(&w.load(), &rt.0);
    assert!(p.errors.is_empty(), "{:?}", p.errors);
    assert_eq!(
        mc_flows(&flows, 0x7994_0b55),
        vec![
            format!("cookie=0x79940b55, table=39, priority=100,reg15=0x8000,metadata=0x1 actions=set_field:0x4->reg15,resubmit(,41),set_field:0x8000->reg15,set_field:0x1/0xffffff->tun_id,set_field:0x8000->tun_metadata0,{GENEVE_OUT},output:1,resubmit(,40)"),
            "cookie=0x79940b55, table=40, priority=100,reg15=0x8000,metadata=0x1 actions=set_field:0x2->reg13,set_field:0x3->reg15,resubmit(,41),set_field:0x8000->reg15".to_owned(),
        ]
    );
}

#[test]
fn vxlan_folds_multicast_keys_into_12_bits() {
    let (mut w, ls, mut rt) = flood_world();
    rt.0.tunnels.get_mut("hv1").unwrap()[0].encap = Vxlan;
    rt.0.tunnels.get_mut("hv1").unwrap()[0].ofport = 2;
    w.mc(
        &u(0x37a4_6b3a, 1),
        &ls,
        "_MC_flood_l2",
        32772,
        &[&u(0x6284_8eb8, 1)],
    );
    let (flows, _) = run(&w.load(), &rt.0);
    assert!(mc_flows(&flows, 0x7994_0b55)[0]
        .ends_with("set_field:0x800001/0xffffff->tun_id,output:2,resubmit(,40)"));
    assert_eq!(
        mc_flows(&flows, 0x37a4_6b3a),
        vec!["cookie=0x37a46b3a, table=39, priority=100,reg15=0x8004,metadata=0x1 actions=set_field:0x804001/0xffffff->tun_id,output:2"]
    );
}

/// With a localnet port the flood reaches remote chassis over the physical network: no
/// tunnel outputs (and so no table-39 flow when nothing else is there).
#[test]
fn no_remote_chassis_on_a_localnet_switch() {
    let (mut w, ls, mut rt) = flood_world();
    let ln = u(0x1e1e_0001, 9);
    w.pb(Pb::new(&ln, "ln", &ls, 9, "localnet"));
    w.mcs[0].4.push(ln.clone());
    w.mcs[0].4.retain(|m| *m != u(0xf0ff_94a9, 4));
    rt.local_dp(&u(0xd1, 1), 1, Some(&ln)).patch(&ln, 5);
    let (flows, _) = run(&w.load(), &rt.0);
    assert_eq!(
        mc_flows(&flows, 0x7994_0b55),
        vec!["cookie=0x79940b55, table=40, priority=100,reg15=0x8000,metadata=0x1 actions=set_field:0x9->reg15,resubmit(,41),set_field:0x2->reg13,set_field:0x3->reg15,resubmit(,41),set_field:0x8000->reg15"]
    );
}

/// of_final.txt, `_MC_flood` of sw0 (datapath 1): VIFs keys 1, 3, 2 here, localport key 6
/// and router port key 5 from table 39; the localport's zone is loaded in table 40 too.
#[test]
fn sandbox_flood_equals_the_dump() {
    let sw0 = u(0x0951_8436, 1);
    let hv1 = "19d7aa79-edef-5a8a-857f-5403be3f6300";
    let ports = [
        (0x2fe3_c0c9, 1, "", 0x12),
        (0x4f3b_d9cb, 3, "", 0x14),
        (0xc34a_605e, 2, "", 0x13),
        (0xd031_96e4, 6, "localport", 0x17),
        (0xd1e7_b9e3, 5, "patch", 0),
    ];
    let mut w = World::default();
    w.dp(&sw0, 1).chassis(hv1, "hv1");
    let mut rt = Rt::new("hv1", hv1);
    rt.local_dp(&sw0, 1, None);
    let mut members = Vec::new();
    for (cookie, key, ty, zone) in ports {
        let uuid = u(cookie, key);
        let name = format!("p{key}");
        let mut pb = Pb::new(&uuid, &name, &sw0, i64::from(key), ty);
        match ty {
            "" => {
                pb = pb.on(hv1);
                rt.vif(&uuid, u32::from(key) + 1);
            }
            "localport" => {
                rt.0.localports.insert(id(&uuid), 7);
            }
            _ => pb = pb.opt("peer", "nowhere"),
        }
        if zone != 0 {
            rt.zone(&name, zone);
        }
        w.pb(pb);
        members.push(uuid);
    }
    let refs: Vec<&str> = members.iter().map(String::as_str).collect();
    w.mc(&u(0x0063_28fe, 1), &sw0, "_MC_flood", 32768, &refs);
    let (flows, _) = run(&w.load(), &rt.0);
    assert_eq!(
        mc_flows(&flows, 0x0063_28fe),
        vec![
            "cookie=0x6328fe, table=39, priority=100,reg15=0x8000,metadata=0x1 actions=set_field:0x6->reg15,resubmit(,41),set_field:0x5->reg15,resubmit(,41),set_field:0x8000->reg15,resubmit(,40)",
            "cookie=0x6328fe, table=40, priority=100,reg15=0x8000,metadata=0x1 actions=set_field:0x12->reg13,set_field:0x1->reg15,resubmit(,41),set_field:0x14->reg13,set_field:0x3->reg15,resubmit(,41),set_field:0x13->reg13,set_field:0x2->reg15,resubmit(,41),set_field:0x17->reg13,set_field:0x8000->reg15",
        ]
    );
}

/// Members on several chassis: one output each; the encapsulation is written again only
/// when the tunnel type changes. A VTEP chassis gets the datapath-only VNI.
#[test]
fn fan_out_to_several_chassis() {
    let ls = u(0xd1, 1);
    let me = hv(1);
    let mut w = World::default();
    w.dp(&ls, 1).chassis(&me, "hv1");
    let mut members = Vec::new();
    for n in 2..=4u16 {
        w.chassis(&hv(n), &format!("hv{n}"));
        let p = u(0x4444_0000 | u32::from(n), n);
        w.pb(Pb::new(&p, &format!("vm{n}"), &ls, i64::from(n), "").on(&hv(n)));
        members.push(p);
    }
    w.chassis(&hv(9), "gw9");
    w.chassis[4].2.push(("is-vtep".into(), "true".into()));
    let vtep = u(0x4444_0009, 9);
    w.pb(Pb::new(&vtep, "vtep", &ls, 9, "vtep").on(&hv(9)));
    members.push(vtep);
    let refs: Vec<&str> = members.iter().map(String::as_str).collect();
    w.mc(&u(0x5050_0001, 1), &ls, "_MC_flood", 32768, &refs);
    let mut rt = Rt::new("hv1", &me);
    rt.local_dp(&ls, 1, None)
        .tunnel("hv2", "192.168.0.2", Geneve, 2)
        .tunnel("hv3", "192.168.0.3", Geneve, 3)
        .tunnel("hv4", "192.168.0.4", Vxlan, 4)
        .tunnel("gw9", "192.168.0.9", Vxlan, 9);
    let (flows, _) = run(&w.load(), &rt.0);
    let f = mc_flows(&flows, 0x5050_0001);
    assert_eq!(f.len(), 1, "{f:#?}");
    let geneve =
        format!("set_field:0x1/0xffffff->tun_id,set_field:0x8000->tun_metadata0,{GENEVE_OUT}");
    let vxlan = "set_field:0x800001/0xffffff->tun_id";
    // The order of hv2, hv3 and hv4 is OVS's sset order of their names.
    let order = crate::physical::ovs_order::sset_order(["hv2", "hv3", "hv4"]);
    let mut expected = Vec::new();
    let mut previous = "";
    for name in order {
        let (encap, port) = match name {
            "hv2" => (geneve.as_str(), 2),
            "hv3" => (geneve.as_str(), 3),
            _ => (vxlan, 4),
        };
        if encap != previous {
            expected.push(encap.to_owned());
            previous = encap;
        }
        expected.push(format!("output:{port}"));
    }
    expected.push("set_field:0x1/0xffffff->tun_id,output:9".to_owned());
    assert_eq!(
        f[0],
        format!(
            "cookie=0x50500001, table=39, priority=100,reg15=0x8000,metadata=0x1 actions={}",
            expected.join(",")
        )
    );
}

/// A transit switch delivers patch ports locally; a remote (OVN-IC) port is tunnelled with
/// its own key; a chassisredirect member active here is delivered as its distributed port.
#[test]
fn transit_remote_and_chassisredirect_members() {
    let ts = u(0xd7, 7);
    let me = hv(1);
    let (patch, ic, cr, dgp) = (
        u(0x7777_0001, 1),
        u(0x7777_0002, 2),
        u(0x7777_0003, 3),
        u(0x7777_0004, 4),
    );
    let mut w = World::default();
    w.datapaths
        .push((ts.clone(), 7, vec![("interconn-ts".into(), "ts1".into())]));
    w.chassis(&me, "hv1").chassis(&hv(5), "az2-gw");
    w.pb(Pb::new(&patch, "ts-lr", &ts, 1, "patch").opt("peer", "lr-ts"));
    w.pb(Pb::new(&ic, "ts-az2", &ts, 2, "remote").on(&hv(5)));
    w.pb(Pb::new(&cr, "cr-x", &ts, 3, "chassisredirect")
        .on(&me)
        .opt("distributed-port", "x"));
    w.pb(Pb::new(&dgp, "x", &ts, 4, "patch"));
    w.mc(
        &u(0x6060_0001, 1),
        &ts,
        "_MC_flood",
        32768,
        &[&patch, &ic, &cr],
    );
    let mut rt = Rt::new("hv1", &me);
    rt.local_dp(&ts, 7, None)
        .tunnel("az2-gw", "10.9.0.1", Geneve, 6);
    let (flows, _) = run(&w.load(), &rt.0);
    assert_eq!(
        mc_flows(&flows, 0x6060_0001),
        vec![
            format!("cookie=0x60600001, table=39, priority=100,reg15=0x8000,metadata=0x7 actions=set_field:0x2->reg15,set_field:0x7/0xffffff->tun_id,set_field:0x2->tun_metadata0,{GENEVE_OUT},output:6,set_field:0x8000->reg15,resubmit(,40)"),
            "cookie=0x60600001, table=40, priority=100,reg15=0x8000,metadata=0x7 actions=set_field:0x1->reg15,resubmit(,41),set_field:0x4->reg15,resubmit(,41),set_field:0x8000->reg15".to_owned(),
        ]
    );
}
