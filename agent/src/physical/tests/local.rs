//! Ports delivered on this chassis: VIFs, localports, containers, localnet ports, patch
//! ports (tables 0, 39, 40, 41, 64, 65).

use super::*;

const HV1: &str = "19d7aa79-edef-5a8a-857f-5403be3f6300";

/// Every flow whose cookie is `cookie`.
fn of_cookie(flows: &BTreeSet<String>, cookie: u32) -> BTreeSet<String> {
    let tag = format!("cookie={cookie:#x}, ");
    flows
        .iter()
        .filter(|f| f.starts_with(&tag))
        .cloned()
        .collect()
}

fn set(lines: &[&str]) -> BTreeSet<String> {
    lines.iter().map(|s| (*s).to_owned()).collect()
}

const HAIRPIN: &str =
    "push:NXM_OF_IN_PORT[],set_field:ANY->in_port,resubmit(,65),pop:NXM_OF_IN_PORT[]";

/// The sandbox switch of of_final.txt (datapath 1): VIF `sw0-p1` (key 1, ofport 2) and
/// localport key 6 (ofport 7).
#[test]
fn vif_and_localport_flows_equal_the_sandbox_dump() {
    let ls = u(0x0951_8436, 1);
    let (vif, lp) = (u(0x2fe3_c0c9, 1), u(0xd031_96e4, 1));
    let mut w = World::default();
    w.dp(&ls, 1).chassis(HV1, "hv1");
    w.pb(Pb::new(&vif, "sw0-p1", &ls, 1, "").on(HV1));
    w.pb(Pb::new(&lp, "sw0-lp", &ls, 6, "localport"));
    let mut rt = Rt::new("hv1", HV1);
    rt.local_dp(&ls, 1, None)
        .vif(&vif, 2)
        .zones("sw0-p1", &ls, 0x12, 0xf, 0xe)
        .zone("sw0-lp", 0x17);
    rt.0.localports.insert(id(&lp), 7);
    let (flows, p) = run(&w.load(), &rt.0);
    assert!(p.errors.is_empty(), "{:?}", p.errors);
    assert_eq!(
        of_cookie(&flows, 0x2fe3_c0c9),
        set(&[
            "cookie=0x2fe3c0c9, table=0, priority=100,in_port=2 actions=set_field:0x12->reg13,set_field:0xf->reg11,set_field:0xe->reg12,set_field:0x1->metadata,set_field:0x1->reg14,resubmit(,8)",
            "cookie=0x2fe3c0c9, table=40, priority=100,reg15=0x1,metadata=0x1 actions=set_field:0x12->reg13,set_field:0xf->reg11,set_field:0xe->reg12,resubmit(,41)",
            "cookie=0x2fe3c0c9, table=41, priority=100,reg10=0/0x1,reg14=0x1,reg15=0x1,metadata=0x1 actions=drop",
            &format!("cookie=0x2fe3c0c9, table=64, priority=100,reg10=0x1/0x1,reg15=0x1,metadata=0x1 actions={HAIRPIN}"),
            "cookie=0x2fe3c0c9, table=65, priority=100,reg15=0x1,metadata=0x1 actions=output:2",
        ])
    );
    assert_eq!(
        of_cookie(&flows, 0xd031_96e4),
        set(&[
            "cookie=0xd03196e4, table=0, priority=100,in_port=7 actions=set_field:0x17->reg13,set_field:0xf->reg11,set_field:0xe->reg12,set_field:0x1->metadata,set_field:0x6->reg14,set_field:0x400/0x400->reg10,resubmit(,8)",
            "cookie=0xd03196e4, table=39, priority=150,reg14=0x6,metadata=0x1 actions=resubmit(,40)",
            "cookie=0xd03196e4, table=40, priority=100,reg15=0x6,metadata=0x1 actions=set_field:0x17->reg13,set_field:0xf->reg11,set_field:0xe->reg12,resubmit(,41)",
            "cookie=0xd03196e4, table=41, priority=100,reg10=0/0x1,reg14=0x6,reg15=0x6,metadata=0x1 actions=drop",
            &format!("cookie=0xd03196e4, table=64, priority=100,reg10=0x1/0x1,reg15=0x6,metadata=0x1 actions={HAIRPIN}"),
            "cookie=0xd03196e4, table=65, priority=100,reg15=0x6,metadata=0x1 actions=output:7",
        ])
    );
}

/// §3.1: hv2's VIF vm3 on ofport 13.
#[test]
fn vif_table0_equals_the_reference() {
    let (ls, vm3) = (u(0xd1, 1), u(0xc1ce_33c3, 3));
    let mut w = World::default();
    w.dp(&ls, 1).chassis(HV1, "hv2");
    w.pb(Pb::new(&vm3, "vm3", &ls, 3, "").on(HV1));
    let mut rt = Rt::new("hv2", HV1);
    rt.local_dp(&ls, 1, None)
        .vif(&vm3, 13)
        .zones("vm3", &ls, 2, 3, 1);
    let (flows, _) = run(&w.load(), &rt.0);
    assert_has(
        &flows,
        &["cookie=0xc1ce33c3, table=0, priority=100,in_port=13 actions=set_field:0x2->reg13,set_field:0x3->reg11,set_field:0x1->reg12,set_field:0x1->metadata,set_field:0x3->reg14,resubmit(,8)"],
    );
}

/// of_final.txt: untagged localnet `ln-public` (datapath 4, key 2, patch ofport 1) on a
/// switch whose router peer has MAC 00:00:20:20:12:13: priority-tagged and untagged frames,
/// the chassis-MAC conjunction, the localnet guards of table 41.
#[test]
fn untagged_localnet_equals_the_sandbox_dump() {
    let (ls, lr) = (u(0x4d, 1), u(0x3d, 1));
    let (ln, sw_peer, rport) = (u(0xe231_bb28, 1), u(0x4338_910a, 1), u(0x8aa1_5f7f, 1));
    let mut w = World::default();
    w.dp(&ls, 4).dp(&lr, 3).chassis(HV1, "hv1");
    w.pb(Pb::new(&ln, "ln-public", &ls, 2, "localnet").opt("network_name", "phys"));
    w.pb(Pb::new(&sw_peer, "public-lr0", &ls, 1, "patch").opt("peer", "lr0-public"));
    w.pb(Pb::new(&rport, "lr0-public", &lr, 3, "patch")
        .opt("peer", "public-lr0")
        .mac("00:00:20:20:12:13 172.16.1.1/24"));
    let mut rt = Rt::new("hv1", HV1);
    rt.local_dp(&ls, 4, Some(&ln))
        .local_dp(&lr, 3, None)
        .peer(&ls, &sw_peer, &rport)
        .peer(&lr, &rport, &sw_peer)
        .patch(&ln, 1)
        .zones("ln-public", &ls, 0x11, 0x2, 0x10);
    let (flows, p) = run(&w.load(), &rt.0);
    assert!(p.errors.is_empty(), "{:?}", p.errors);
    assert_eq!(
        of_cookie(&flows, 0xe231_bb28),
        set(&[
            "cookie=0xe231bb28, table=0, priority=100,in_port=1,dl_vlan=0 actions=pop_vlan,set_field:0x11->reg13,set_field:0x2->reg11,set_field:0x10->reg12,set_field:0x4->metadata,set_field:0x2->reg14,resubmit(,8)",
            "cookie=0xe231bb28, table=0, priority=100,in_port=1,vlan_tci=0x0000/0x1000 actions=set_field:0x11->reg13,set_field:0x2->reg11,set_field:0x10->reg12,set_field:0x4->metadata,set_field:0x2->reg14,resubmit(,8)",
            "cookie=0xe231bb28, table=40, priority=100,reg15=0x2,metadata=0x4 actions=set_field:0x11->reg13,set_field:0x2->reg11,set_field:0x10->reg12,resubmit(,41)",
            "cookie=0xe231bb28, table=41, priority=160,reg10=0x10/0x10,reg15=0x2,metadata=0x4 actions=drop",
            "cookie=0xe231bb28, table=41, priority=160,reg10=0x400/0x400,reg15=0x2,metadata=0x4 actions=drop",
            "cookie=0xe231bb28, table=41, priority=100,reg10=0/0x1,reg14=0x2,reg15=0x2,metadata=0x4 actions=drop",
            &format!("cookie=0xe231bb28, table=64, priority=100,reg10=0x1/0x1,reg15=0x2,metadata=0x4 actions={HAIRPIN}"),
            "cookie=0xe231bb28, table=65, priority=100,reg15=0x2,metadata=0x4 actions=output:1",
        ])
    );
    assert_has(
        &flows,
        &[
            "cookie=0x8aa15f7f, table=0, priority=180,vlan_tci=0x0000/0x1000 actions=conjunction(100,2/2)",
            "cookie=0x8aa15f7f, table=0, priority=180,conj_id=100,in_port=1,vlan_tci=0x0000/0x1000 actions=set_field:0x11->reg13,set_field:0x2->reg11,set_field:0x10->reg12,set_field:0x4->metadata,set_field:0x2->reg14,set_field:00:00:20:20:12:13->eth_src,resubmit(,8)",
        ],
    );
}

/// §3.3/§3.4/§3.5: hv1's tagged localnet `ln2` (tag 100, patch ofport 3) on ls2 (datapath
/// 4), with remote vm5 and external port ext1 claimed here.
#[test]
fn tagged_localnet_external_port_and_remote_ports_equal_the_reference() {
    let ls2 = u(0x42, 1);
    let (ln2, vm5, ext1) = (u(0x4537_7934, 1), u(0x7250_097e, 1), u(0x2d2c_5486, 1));
    let hv2 = u(0x22, 2);
    let mut w = World::default();
    w.dp(&ls2, 4).chassis(HV1, "hv1").chassis(&hv2, "hv2");
    w.pb(Pb::new(&ln2, "ln2", &ls2, 1, "localnet")
        .tag(100)
        .opt("network_name", "phys"));
    w.pb(Pb::new(&vm5, "vm5", &ls2, 3, "").on(&hv2));
    w.pb(Pb::new(&ext1, "ext1", &ls2, 4, "external")
        .on(HV1)
        .mac("50:54:00:00:02:99 10.0.2.99"));
    let mut rt = Rt::new("hv1", HV1);
    rt.local_dp(&ls2, 4, Some(&ln2))
        .patch(&ln2, 3)
        .zones("ln2", &ls2, 0xd, 0xc, 0xa);
    let (flows, p) = run(&w.load(), &rt.0);
    assert!(p.errors.is_empty(), "{:?}", p.errors);
    assert_has(
        &flows,
        &[
            "cookie=0x45377934, table=0, priority=150,in_port=3,dl_vlan=100 actions=pop_vlan,set_field:0xd->reg13,set_field:0xc->reg11,set_field:0xa->reg12,set_field:0x4->metadata,set_field:0x1->reg14,resubmit(,8)",
            "cookie=0x45377934, table=65, priority=100,reg15=0x1,metadata=0x4 actions=push_vlan:0x8100,set_field:4196->vlan_vid,output:3,pop_vlan",
            &format!("cookie=0x45377934, table=41, priority=170,reg10=0x400/0x400,reg15=0x1,metadata=0x4,dl_dst=50:54:00:00:02:99 actions={},resubmit(,42)", clear_regs()),
            "cookie=0x45377934, table=41, priority=160,reg10=0x10/0x10,reg15=0x1,metadata=0x4 actions=drop",
            "cookie=0x45377934, table=41, priority=160,reg10=0x400/0x400,reg15=0x1,metadata=0x4 actions=drop",
            "cookie=0x7250097e, table=40, priority=100,reg15=0x3,metadata=0x4 actions=set_field:0x1->reg15,resubmit(,40)",
            "cookie=0x2d2c5486, table=40, priority=100,reg15=0x4,metadata=0x4 actions=set_field:0x1->reg15,resubmit(,40)",
        ],
    );
    // A tagged localnet port takes only its own VLAN; remote ports behind localnet are
    // never tunnelled.
    assert_eq!(
        table(&flows, 0).len(),
        1 + 1,
        "ln2's flow and the default drop"
    );
    assert_eq!(of_cookie(&flows, 0x7250_097e).len(), 1);
}

/// §3.1/§3.5: container c1 (parent vm1 on ofport 11, tag 42, key 7) on datapath 1.
#[test]
fn container_flows_equal_the_reference() {
    let ls = u(0xd1, 1);
    let (vm1, c1) = (u(0x6284_8eb8, 1), u(0x5e43_0376, 1));
    let mut w = World::default();
    w.dp(&ls, 1).chassis(HV1, "hv1");
    w.pb(Pb::new(&vm1, "vm1", &ls, 1, "").on(HV1));
    let mut child = Pb::new(&c1, "c1", &ls, 7, "").on(HV1).tag(42);
    child.parent = Some("vm1".into());
    w.pb(child);
    let mut rt = Rt::new("hv1", HV1);
    rt.local_dp(&ls, 1, None)
        .vif(&vm1, 11)
        .zones("c1", &ls, 8, 3, 2)
        .zone("vm1", 4);
    let (flows, _) = run(&w.load(), &rt.0);
    let child_flows = of_cookie(&flows, 0x5e43_0376);
    assert!(child_flows.contains("cookie=0x5e430376, table=0, priority=150,in_port=11,dl_vlan=42 actions=set_field:0x20/0x20->reg10,pop_vlan,set_field:0x8->reg13,set_field:0x3->reg11,set_field:0x2->reg12,set_field:0x1->metadata,set_field:0x7->reg14,resubmit(,8)"), "{child_flows:#?}");
    assert!(child_flows.contains(
        "cookie=0x5e430376, table=65, priority=100,reg15=0x7,metadata=0x1 actions=push_vlan:0x8100,set_field:4138->vlan_vid,output:11,pop_vlan"
    ));
    // A container always may hairpin (no loopback-flag match); its parent may when the
    // packet comes from a container (one cookie-0 flow).
    assert!(child_flows.contains(&format!(
        "cookie=0x5e430376, table=64, priority=100,reg15=0x7,metadata=0x1 actions={HAIRPIN}"
    )));
    assert_has(
        &flows,
        &[&format!(
            "cookie=0x0, table=64, priority=100,reg10=0x20/0x20,reg15=0x1,metadata=0x1 actions={HAIRPIN}"
        )],
    );
    // The parent VIF's own table-0 flow is untouched by the tag.
    assert_has(&flows, &["cookie=0x62848eb8, table=0, priority=100,in_port=11 actions=set_field:0x4->reg13,set_field:0x3->reg11,set_field:0x2->reg12,set_field:0x1->metadata,set_field:0x1->reg14,resubmit(,8)"]);

    // Without a tag a container has no flows at all; with its parent elsewhere it is remote.
    let mut w2 = World::default();
    w2.dp(&ls, 1).chassis(HV1, "hv1");
    let mut untagged = Pb::new(&c1, "c1", &ls, 7, "").on(HV1);
    untagged.parent = Some("vm1".into());
    w2.pb(untagged);
    let (flows2, _) = run(&w2.load(), &rt.0);
    assert!(of_cookie(&flows2, 0x5e43_0376).is_empty());
}

/// vlan-passthru: an untagged localnet port matches no VLAN in its first flow.
#[test]
fn vlan_passthru_localnet_keeps_vlan_headers() {
    let ls = u(0x4d, 1);
    let ln = u(0xe231_bb28, 1);
    let mut w = World::default();
    w.dp(&ls, 4).chassis(HV1, "hv1");
    w.pb(Pb::new(&ln, "ln", &ls, 2, "localnet").opt("vlan-passthru", "true"));
    let mut rt = Rt::new("hv1", HV1);
    rt.local_dp(&ls, 4, Some(&ln)).patch(&ln, 1);
    let (flows, _) = run(&w.load(), &rt.0);
    assert_eq!(
        table(&flows, 0)
            .into_iter()
            .filter(|f| f.starts_with("cookie=0xe231bb28"))
            .collect::<Vec<_>>(),
        vec![
            "cookie=0xe231bb28, table=0, priority=100,in_port=1 actions=set_field:0x4->metadata,set_field:0x2->reg14,resubmit(,8)",
            "cookie=0xe231bb28, table=0, priority=100,in_port=1,vlan_tci=0x0000/0x1000 actions=set_field:0x4->metadata,set_field:0x2->reg14,resubmit(,8)",
        ]
    );
}

/// §3.5 / of_final.txt: a patch port clones into its peer's ingress; table 40 loads the
/// patch port's datapath zones.
#[test]
fn patch_port_crossing_equals_the_reference() {
    let (ls, lr) = (u(0xd1, 1), u(0xd2, 2));
    let (ls_lr, lr_ls) = (u(0xf0ff_94a9, 1), u(0xaa, 1));
    let mut w = World::default();
    w.dp(&ls, 1).dp(&lr, 2).chassis(HV1, "hv1");
    w.pb(Pb::new(&ls_lr, "ls1-lr1", &ls, 4, "patch").opt("peer", "lr1-ls1"));
    w.pb(Pb::new(&lr_ls, "lr1-ls1", &lr, 1, "patch")
        .opt("peer", "ls1-lr1")
        .mac("00:00:00:00:ff:01 10.0.0.1/24"));
    let mut rt = Rt::new("hv1", HV1);
    rt.local_dp(&ls, 1, None)
        .local_dp(&lr, 2, None)
        .zones("ls1-lr1", &ls, 0, 0xf, 0xe)
        .zones("lr1-ls1", &lr, 0, 5, 6);
    let (flows, _) = run(&w.load(), &rt.0);
    assert_has(
        &flows,
        &[
            &format!("cookie=0xf0ff94a9, table=65, priority=100,reg15=0x4,metadata=0x1 actions=clone(ct_clear,set_field:0->reg11,set_field:0->reg12,set_field:0->reg13,set_field:0x5->reg11,set_field:0x6->reg12,set_field:0x2->metadata,set_field:0x1->reg14,set_field:0->reg10,set_field:0->reg15,{},resubmit(,8))", clear_regs()),
            "cookie=0xf0ff94a9, table=40, priority=100,reg15=0x4,metadata=0x1 actions=set_field:0xf->reg11,set_field:0xe->reg12,resubmit(,41)",
            "cookie=0xf0ff94a9, table=41, priority=100,reg10=0/0x1,reg14=0x4,reg15=0x4,metadata=0x1 actions=drop",
        ],
    );
    assert_eq!(of_cookie(&flows, 0xf0ff_94a9).len(), 4, "40, 41, 64, 65");

    // A peer that does not name this port back is no peer: no flows.
    let mut w2 = World::default();
    w2.dp(&ls, 1).dp(&lr, 2).chassis(HV1, "hv1");
    w2.pb(Pb::new(&ls_lr, "ls1-lr1", &ls, 4, "patch").opt("peer", "lr1-ls1"));
    w2.pb(Pb::new(&lr_ls, "lr1-ls1", &lr, 1, "patch").opt("peer", "other"));
    let (flows2, _) = run(&w2.load(), &rt.0);
    assert!(of_cookie(&flows2, 0xf0ff_94a9).is_empty());
}

/// An l3gateway port is a patch port on its gateway chassis and a remote port elsewhere.
#[test]
fn l3gateway_is_local_on_its_chassis_only() {
    let (ls, gr) = (u(0xd1, 1), u(0xd3, 3));
    let (ls_gr, gr_ls) = (u(0x1111_0001, 1), u(0x1111_0002, 2));
    let hv2 = u(0x22, 2);
    let world = |chassis: &str| {
        let mut w = World::default();
        w.dp(&ls, 1)
            .dp(&gr, 3)
            .chassis(HV1, "hv1")
            .chassis(&hv2, "hv2");
        w.pb(Pb::new(&ls_gr, "ls-gr", &ls, 2, "l3gateway")
            .opt("peer", "gr-ls")
            .on(chassis));
        w.pb(Pb::new(&gr_ls, "gr-ls", &gr, 1, "l3gateway")
            .opt("peer", "ls-gr")
            .on(chassis));
        w.load()
    };
    let mut rt = Rt::new("hv1", HV1);
    rt.local_dp(&ls, 1, None)
        .local_dp(&gr, 3, None)
        .tunnel("hv2", "192.168.0.2", Geneve, 5);
    let (here, _) = run(&world(HV1), &rt.0);
    assert!(table(&here, 65).iter().any(|f| f.starts_with(
        "cookie=0x11110001, table=65, priority=100,reg15=0x2,metadata=0x1 actions=clone("
    )));
    let (there, _) = run(&world(&hv2), &rt.0);
    assert_eq!(
        of_cookie(&there, 0x1111_0001),
        set(&["cookie=0x11110001, table=39, priority=100,reg15=0x2,metadata=0x1 actions=set_field:0x1/0xffffff->tun_id,set_field:0x2->tun_metadata0,move:NXM_NX_REG14[0..14]->NXM_NX_TUN_METADATA0[16..30],output:5,resubmit(,40)"])
    );
}

/// `activation-strategy=rarp` on a port bound to hv1 with hv2 (this chassis) as additional
/// chassis: hv2's interface is cut off both ways but for the RARP, which goes to the
/// controller and on into the pipeline; activated on hv2, the block goes.
#[test]
fn activation_strategy_blocks_until_activated_here() {
    let (ls, mig) = (u(0xd1, 1), u(0x5eed_0001, 1));
    let other = u(0xc0, 9);
    let world = |options: &[(&str, &str)]| {
        let mut w = World::default();
        w.dp(&ls, 1).chassis(HV1, "hv2").chassis(&other, "hv1");
        let mut p = Pb::new(&mig, "migrator", &ls, 1, "").on(&other);
        p.additional_chassis = vec![HV1.to_owned()];
        p.options = options
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        w.pb(p);
        w.load()
    };
    let mut rt = Rt::new("hv2", HV1);
    rt.local_dp(&ls, 1, None)
        .vif(&mig, 13)
        .zones("migrator", &ls, 2, 3, 1);
    let blocking = set(&[
        "cookie=0x5eed0001, table=0, priority=1010,rarp,in_port=13 actions=set_field:0x2->reg13,set_field:0x3->reg11,set_field:0x1->reg12,set_field:0x1->metadata,set_field:0x1->reg14,controller(userdata=00.00.00.1a.00.00.00.00),resubmit(,8)",
        "cookie=0x5eed0001, table=0, priority=1000,in_port=13 actions=drop",
        "cookie=0x5eed0001, table=65, priority=1000,reg15=0x1,metadata=0x1 actions=drop",
    ]);
    let blocks = |flows: &BTreeSet<String>| -> BTreeSet<String> {
        of_cookie(flows, 0x5eed_0001)
            .into_iter()
            .filter(|f| f.contains("priority=1000,") || f.contains("priority=1010,"))
            .collect()
    };

    let (flows, _) = run(&world(&[("activation-strategy", "rarp")]), &rt.0);
    assert_eq!(blocks(&flows), blocking);
    assert!(flows.contains("cookie=0x5eed0001, table=0, priority=100,in_port=13 actions=set_field:0x2->reg13,set_field:0x3->reg11,set_field:0x1->reg12,set_field:0x1->metadata,set_field:0x1->reg14,resubmit(,8)"));

    let activated = world(&[
        ("activation-strategy", "rarp"),
        ("additional-chassis-activated", "hv3,hv2"),
    ]);
    assert!(blocks(&run(&activated, &rt.0).0).is_empty());
    let elsewhere = world(&[
        ("activation-strategy", "rarp"),
        ("additional-chassis-activated", "hv22"),
    ]);
    assert_eq!(blocks(&run(&elsewhere, &rt.0).0), blocking);

    let (flows, p) = run(&world(&[("activation-strategy", "garp")]), &rt.0);
    assert!(blocks(&flows).is_empty());
    let unknown = format!(
        "physical Port_Binding {mig}: Unknown activation strategy defined for port migrator: garp"
    );
    assert!(
        p.errors.iter().any(|e| e.to_string() == unknown),
        "{:?}",
        p.errors
    );
}
