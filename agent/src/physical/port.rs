//! The flows of one Port_Binding (ovn-controller's `consider_port_binding`): how a port on a
//! local datapath is reached. A patch (or an l3gateway here) crosses into its peer's
//! datapath; an active chassisredirect port delivers as its distributed port; a port with an
//! interface here (VIF, container, localport, localnet/l2gateway patch port) gets the
//! physical-to-logical and logical-to-physical flows; anything else is remote and is
//! reached through the localnet port or a tunnel (`remote.rs`).

use sbclient::ovn_sb::PortBinding;
use sbclient::Uuid;

use crate::lflow::of::{pop, push, whole, Action, FieldId};

use super::actions::*;
use super::cx::{cookie, port_key, vlan_tag, Cx, PortCx};
use super::error::Problem;
use super::{chassis_mac, remote, OwnerFlows};

/// How the flows of a port reach it.
enum Access {
    /// Through an OpenFlow port of br-int (VIF, container parent, localnet patch port).
    Local { ofport: u32, tag: u16 },
    /// Remote, through the datapath's localnet port.
    Localnet,
    /// Remote, through the tunnel(s) to its chassis.
    Remote,
    /// Remote, through the tunnels of an HA chassis group with two or more members.
    HaRemote,
}

pub fn port_flows(cx: &Cx<'_>, uuid: &Uuid) -> OwnerFlows {
    let mut out = OwnerFlows::default();
    let Some(pb) = cx.pb(uuid) else {
        return out;
    };
    if let Err(p) = consider_port(cx, uuid, pb, &mut out) {
        out.problems.push(p);
    }
    out
}

fn consider_port(
    cx: &Cx<'_>,
    uuid: &Uuid,
    pb: &PortBinding,
    out: &mut OwnerFlows,
) -> Result<(), Problem> {
    if cx.local_dp(&pb.datapath).is_none() {
        return Ok(());
    }
    let p = PortCx {
        uuid,
        pb,
        dp_key: cx.dp_key(&pb.datapath)?,
        port_key: port_key(pb)?,
        cookie: cookie(uuid),
    };
    let ty = pb.type_.as_str();
    let container = pb.parent_port.as_deref().is_some_and(|s| !s.is_empty());
    if ty.is_empty() && !container && cx.l.physical_only_tables().contains(&cx.l.ct_zone_lookup) {
        zone_lookup_flow(cx, &p, out);
    }
    if ty == "patch" || (ty == "l3gateway" && cx.is_me(pb.chassis)) {
        return patch_flows(cx, &p, out);
    }
    if ty == "chassisredirect" && (cx.is_me(pb.chassis) || cx.rt.active_ha.contains(uuid)) {
        let f = chassisredirect_here(cx, &p, out)?;
        out.flows.push(f);
        return Ok(());
    }
    let Some(access) = access(cx, &p)? else {
        return Ok(());
    };
    match access {
        Access::Local { ofport, tag } => {
            local_flows(cx, &p, ofport, tag, out)?;
            remote::remote_port_flows(cx, &p, false, out)
        }
        Access::Localnet => remote::via_localnet(cx, &p, out),
        Access::Remote => remote::remote_port_flows(cx, &p, false, out),
        Access::HaRemote => remote::remote_port_flows(cx, &p, true, out),
    }
}

/// Conntrack zone lookup for a VIF wherever it is bound: an ICMP "too big" error coming
/// back from a tunnel for a packet it sent gets its zones before the ingress pipeline.
fn zone_lookup_flow(cx: &Cx<'_>, p: &PortCx<'_>, out: &mut OwnerFlows) {
    let mut m = crate::lflow::of::FlowMatch::new();
    m.add(LOG_DATAPATH, u128::from(p.dp_key), u128::from(u64::MAX));
    m.add(LOG_INPORT, u128::from(p.port_key), 0xffff_ffff);
    let mut actions = Vec::new();
    cx.zones(p.pb).put(&mut actions);
    actions.push(goto(cx.l.ingress));
    out.flows
        .push(flow(cx.l.ct_zone_lookup, 100, p.cookie, m, actions));
}

/// The OpenFlow port (and VLAN tag) the port is reached by, or how else. `None`: no flows
/// at all (a container without a tag, or a remote port whose localnet port has no patch
/// port here).
fn access(cx: &Cx<'_>, p: &PortCx<'_>) -> Result<Option<Access>, Problem> {
    let pb = p.pb;
    let mut tag = 0;
    let ofport = if let Some(parent) = pb.parent_port.as_deref().filter(|s| !s.is_empty()) {
        let Some(t) = pb.tag else {
            return Ok(None);
        };
        let ofport = container_parent_ofport(cx, p.uuid, parent);
        if ofport.is_some() {
            tag = vlan_tag(t)?;
        }
        ofport
    } else if is_patch_like(pb) {
        let ofport = cx.rt.patch_ofports.get(p.uuid).copied();
        if let (Some(_), Some(t)) = (ofport, pb.tag) {
            tag = vlan_tag(t)?;
        }
        ofport
    } else {
        cx.vif_ofport(p.uuid)
    };
    if let Some(ofport) = ofport {
        return Ok(Some(Access::Local { ofport, tag }));
    }
    let localnet = cx.local_dp(&pb.datapath).and_then(|ld| ld.localnet);
    // A port with additional chassis is always tunnelled: the physical network would not
    // deliver the copy to every chassis.
    if let Some(ln) = localnet.filter(|_| pb.additional_chassis.is_empty()) {
        return Ok(cx
            .rt
            .patch_ofports
            .contains_key(&ln)
            .then_some(Access::Localnet));
    }
    Ok(Some(if remote::ha_members(cx, pb).len() >= 2 {
        Access::HaRemote
    } else {
        Access::Remote
    }))
}

/// localnet and l2gateway ports are OVS patch ports to a physical bridge.
fn is_patch_like(pb: &PortBinding) -> bool {
    pb.type_ == "localnet" || pb.type_ == "l2gateway"
}

/// The OpenFlow port of a container's parent VIF, if the parent is here.
fn container_parent_ofport(cx: &Cx<'_>, uuid: &Uuid, parent: &str) -> Option<u32> {
    if let Some(crate::runtime::BindingKind::Container { parent_ofport, .. }) =
        cx.rt.bound.get(uuid)
    {
        return Some(*parent_ofport);
    }
    let (parent_uuid, _) = cx.pb_by_name(parent)?;
    cx.vif_ofport(parent_uuid)
}

/// The peer of a patch or l3gateway port: named by `options:peer`, of the same type, and
/// naming this port back.
pub fn binding_peer<'a>(cx: &Cx<'a>, pb: &PortBinding) -> Option<(&'a Uuid, &'a PortBinding)> {
    let (uuid, peer) = cx.pb_by_name(pb.options.get("peer")?)?;
    (peer.type_ == pb.type_
        && peer.options.get("peer").map(String::as_str) == Some(pb.logical_port.as_str()))
    .then_some((uuid, peer))
}

/// Tables 40, 41 and 64 of a port delivered on this chassis: load its zones and check
/// loopback; drop inport == outport unless allowed; for an allowed hairpin, clear `in_port`
/// around the output (a container always may hairpin, and so may its parent when the
/// packet came from a container).
fn local_common_flows(
    cx: &Cx<'_>,
    p: &PortCx<'_>,
    parent: Option<(&Uuid, &PortBinding)>,
    zones: Zones,
    out: &mut OwnerFlows,
) -> Result<(), Problem> {
    let l = cx.l;
    let mut actions = Vec::new();
    zones.put(&mut actions);
    actions.push(goto(l.check_loopback));
    out.flows.push(flow(
        l.local_output,
        100,
        p.cookie,
        match_outport(p.dp_key, p.port_key),
        actions,
    ));

    let mut m = match_outport(p.dp_key, p.port_key);
    match_flags(&mut m, 0, MLF_ALLOW_LOOPBACK);
    m.add(LOG_INPORT, u128::from(p.port_key), 0xffff_ffff);
    let drop = drop_actions(cx.rt.drop_sampling, l.check_loopback);
    out.flows
        .push(flow(l.check_loopback, 100, p.cookie, m, drop));

    let mut m = match_outport(p.dp_key, p.port_key);
    if parent.is_none() {
        match_flags(&mut m, MLF_ALLOW_LOOPBACK, MLF_ALLOW_LOOPBACK);
    }
    out.flows
        .push(flow(l.save_inport, 100, p.cookie, m, hairpin_output(cx)));

    if let Some((parent_uuid, parent)) = parent {
        // Shared by every container of the parent (identical flows merge), hence the
        // parent's cookie or 0.
        let shared_cookie = if cx.l.dialect.physical.nested_hairpin_parent_cookie {
            cookie(parent_uuid)
        } else {
            0
        };
        let mut m = match_outport(p.dp_key, port_key(parent)?);
        match_flags(&mut m, MLF_NESTED_CONTAINER, MLF_NESTED_CONTAINER);
        out.flows.push(flow(
            l.save_inport,
            100,
            shared_cookie,
            m,
            hairpin_output(cx),
        ));
    }
    Ok(())
}

/// `push:in_port, in_port=NONE, resubmit(log_to_phy), pop:in_port`. (`in_port` 0 would do
/// too, but a packet frozen for recirculation with in_port 0 is dropped.)
fn hairpin_output(cx: &Cx<'_>) -> Vec<Action> {
    vec![
        push(whole(FieldId::IN_PORT)),
        load(FieldId::IN_PORT, OFPP_NONE),
        goto(cx.l.log_to_phy),
        pop(whole(FieldId::IN_PORT)),
    ]
}

/// A patch port (or an l3gateway port here): delivered locally, and table 65 clones the
/// packet into the peer datapath's ingress with fresh registers, zones and conntrack state.
fn patch_flows(cx: &Cx<'_>, p: &PortCx<'_>, out: &mut OwnerFlows) -> Result<(), Problem> {
    let Some((_, peer)) = binding_peer(cx, p.pb) else {
        return Ok(());
    };
    let peer_dp = cx.dp_key(&peer.datapath)?;
    let peer_port = port_key(peer)?;
    let zones = cx.zones(p.pb);
    local_common_flows(cx, p, None, zones, out)?;
    let mut inner = vec![
        Action::CtClear,
        load(LOG_DNAT_ZONE, 0),
        load(LOG_SNAT_ZONE, 0),
        zones.ct_load(0),
    ];
    put_ingress_metadata(cx.zones(peer), peer_dp, peer_port, &mut inner);
    inner.push(load(LOG_FLAGS, 0));
    inner.push(load(LOG_OUTPORT, 0));
    put_clear_log_regs(&mut inner);
    inner.push(goto(cx.l.ingress));
    out.flows.push(flow(
        cx.l.log_to_phy,
        100,
        p.cookie,
        match_outport(p.dp_key, p.port_key),
        vec![Action::Clone(inner)],
    ));
    Ok(())
}

/// A chassisredirect port active here: table 40 turns the outport into the distributed
/// port and loads that port's zones. If the distributed port is missing or on another
/// datapath the flow has no actions (the packet is dropped), as in ovn-controller.
fn chassisredirect_here(
    cx: &Cx<'_>,
    p: &PortCx<'_>,
    out: &mut OwnerFlows,
) -> Result<openflow::flow::Flow, Problem> {
    let name =
        p.pb.options
            .get("distributed-port")
            .map_or("", String::as_str);
    let mut actions = Vec::new();
    match cx.pb_by_name(name) {
        None => out.problems.push(Problem::NoDistributedPort {
            cr: p.pb.logical_port.clone(),
            distributed: name.to_owned(),
        }),
        Some((_, d)) if d.datapath != p.pb.datapath => {
            out.problems.push(Problem::DistributedPortElsewhere {
                cr: p.pb.logical_port.clone(),
                distributed: name.to_owned(),
            });
        }
        Some((_, d)) => {
            actions.push(load(LOG_OUTPORT, u128::from(port_key(d)?)));
            cx.zones(d).put(&mut actions);
            actions.push(goto(cx.l.check_loopback));
        }
    }
    Ok(flow(
        cx.l.local_output,
        100,
        p.cookie,
        match_outport(p.dp_key, p.port_key),
        actions,
    ))
}

/// A port reached through `ofport` (with VLAN `tag`, 0 = none) on this chassis.
fn local_flows(
    cx: &Cx<'_>,
    p: &PortCx<'_>,
    ofport: u32,
    tag: u16,
    out: &mut OwnerFlows,
) -> Result<(), Problem> {
    let l = cx.l;
    let pb = p.pb;
    let ty = pb.type_.as_str();
    let nested = pb.parent_port.as_deref().is_some_and(|s| !s.is_empty());
    let parent = pb
        .parent_port
        .as_deref()
        .filter(|_| nested)
        .and_then(|n| cx.pb_by_name(n));
    let zones = cx.zones(pb);
    local_common_flows(cx, p, parent, zones, out)?;

    // Table 0: tagged traffic (containers, tagged localnet) at 150, the rest at 100. A
    // localnet/l2gateway port also takes priority-tagged frames (VLAN 0) and strips the tag;
    // untagged frames get a second flow below.
    let mut m = crate::lflow::of::FlowMatch::new();
    match_in_port(&mut m, ofport);
    let mut actions = Vec::new();
    if tag != 0 || is_patch_like(pb) {
        if nested {
            actions.push(load_bits(LOG_FLAGS, 1, MLF_NESTED_CONTAINER_BIT, 1));
        }
        // With vlan-passthru an untagged port leaves the VIF's own VLAN header alone.
        let passthru = super::cx::option_true(pb.options.get("vlan-passthru"));
        if !passthru || tag != 0 {
            match_vlan(&mut m, tag);
            actions.push(Action::PopVlan);
        }
    }
    let before_metadata = actions.len();
    put_ingress_metadata_from_outside(zones, p.dp_key, p.port_key, &mut actions);
    if ty == "localport" {
        actions.push(load_bits(LOG_FLAGS, 1, MLF_LOCALPORT_BIT, 1));
    }
    actions.push(goto(l.ingress));
    let priority = if tag != 0 { 150 } else { 100 };
    if tag == 0 && is_patch_like(pb) {
        let mut untagged = crate::lflow::of::FlowMatch::new();
        match_in_port(&mut untagged, ofport);
        match_no_vlan(&mut untagged);
        let rest = actions[before_metadata..].to_vec();
        out.flows.push(flow(0, priority, p.cookie, m, actions));
        out.flows.push(flow(0, 100, p.cookie, untagged, rest));
    } else {
        out.flows.push(flow(0, priority, p.cookie, m, actions));
    }

    if ty.is_empty() && !nested {
        super::activation::activation_flows(cx, p, ofport, out);
    }

    let ld = cx.local_dp(&pb.datapath);
    if ty == "localnet" {
        if let Some(ld) = ld {
            chassis_mac::replace_chassis_mac_flows(cx, p, ld, ofport, zones, out)?;
        }
    }

    // Table 65: out of the interface, tagged for a container or a tagged localnet port (with
    // the ethertype of the switch's localnet port).
    let ethtype = ld
        .and_then(|ld| ld.localnet)
        .and_then(|u| cx.pb(&u))
        .and_then(|ln| ln.options.get("ethtype"))
        .map(String::as_str);
    let mut actions = Vec::new();
    if tag != 0 {
        put_push_vlan(ethtype, tag, &mut actions);
    }
    actions.push(output(ofport));
    if tag != 0 {
        actions.push(Action::PopVlan);
    }
    out.flows.push(flow(
        l.log_to_phy,
        100,
        p.cookie,
        match_outport(p.dp_key, p.port_key),
        actions,
    ));

    if ty == "localnet" {
        if let Some(ld) = ld {
            chassis_mac::replace_router_port_mac_flows(cx, p, ld, ofport, tag, out)?;
        }
        localnet_loopback_flows(cx, p, out);
    }

    if ty == "localport" {
        // Traffic from a localport never leaves the chassis.
        let mut m = crate::lflow::of::FlowMatch::new();
        m.add(LOG_INPORT, u128::from(p.port_key), 0xffff_ffff);
        m.add(LOG_DATAPATH, u128::from(p.dp_key), u128::from(u64::MAX));
        out.flows.push(flow(
            l.remote_output,
            150,
            p.cookie,
            m,
            vec![goto(l.local_output)],
        ));
    }
    Ok(())
}

/// Table 41 for a localnet port: nothing from a localport and nothing controller-generated
/// goes out to the physical network, except localport traffic to the MACs of external
/// ports claimed here (which are reached only through localnet).
fn localnet_loopback_flows(cx: &Cx<'_>, p: &PortCx<'_>, out: &mut OwnerFlows) {
    let l = cx.l;
    // A local-only packet the release lets out (override-local-only) is not dropped.
    let override_local_only =
        cx.l.dialect
            .physical
            .override_local_only_bit
            .map_or(0, |b| 1 << b);
    for (flag, mask) in [
        (MLF_LOCALPORT, MLF_LOCALPORT),
        (MLF_LOCAL_ONLY, MLF_LOCAL_ONLY | override_local_only),
    ] {
        let mut m = match_outport(p.dp_key, p.port_key);
        match_flags(&mut m, flag, mask);
        let drop = drop_actions(cx.rt.drop_sampling, l.check_loopback);
        out.flows
            .push(flow(l.check_loopback, 160, p.cookie, m, drop));
    }
    let mut to_egress = Vec::new();
    put_clear_log_regs(&mut to_egress);
    to_egress.push(goto(l.egress));
    for (_, ext) in cx.pbs_of_datapath(&p.pb.datapath) {
        if ext.type_ != "external" || !cx.is_me(ext.chassis) {
            continue;
        }
        for mac in &ext.mac {
            let Some(mac) = super::cx::leading_mac(mac) else {
                out.problems.push(Problem::BadMac {
                    port: ext.logical_port.clone(),
                    value: mac.clone(),
                });
                continue;
            };
            let mut m = match_outport(p.dp_key, p.port_key);
            match_flags(&mut m, MLF_LOCALPORT, MLF_LOCALPORT);
            m.add(FieldId::ETH_DST, u128::from(mac), 0xffff_ffff_ffff);
            out.flows
                .push(flow(l.check_loopback, 170, p.cookie, m, to_egress.clone()));
        }
    }
}
