//! Multicast groups (ovn-controller's `consider_mc_group`). Table 40 delivers to the members
//! on this chassis (set the outport to each in turn, check loopback, then restore the group
//! as outport). Table 39 handles what only the chassis where the packet entered may do:
//! logical patch ports and localports (so that every chassis does not repeat them), remote
//! (OVN-IC) ports, and one tunnel output per remote chassis with a member, unless the switch
//! has a localnet port (the flood then reaches them over the physical network).

use sbclient::ovn_sb::{MulticastGroup, PortBinding};
use sbclient::Uuid;

use crate::lflow::of::{Action, FieldId};
use crate::runtime::BindingKind;

use super::actions::*;
use super::cx::{cookie, mc_key, option_true, port_key, Cx};
use super::error::Problem;
use super::ovs_order::sset_order;
use super::OwnerFlows;

pub fn mc_group_flows(cx: &Cx<'_>, uuid: &Uuid) -> OwnerFlows {
    let mut out = OwnerFlows::default();
    let Some(mc) = cx.sb.table::<MulticastGroup>().and_then(|t| t.get(uuid)) else {
        return out;
    };
    if let Err(p) = consider_mc_group(cx, uuid, mc, &mut out) {
        out.problems.push(p);
    }
    out
}

/// Set the outport to `key` and run the loopback check (and what follows) for it.
fn deliver_to(key: u32, cx: &Cx<'_>, actions: &mut Vec<Action>) {
    actions.push(load(LOG_OUTPORT, u128::from(key)));
    actions.push(goto(cx.l.check_loopback));
}

/// Whether a member VIF (or a container, through its parent) has its interface here.
fn has_local_binding(cx: &Cx<'_>, uuid: &Uuid, pb: &PortBinding) -> bool {
    match pb.parent_port.as_deref().filter(|p| !p.is_empty()) {
        None => matches!(cx.rt.bound.get(uuid), Some(BindingKind::Vif { .. })),
        Some(parent) => cx
            .pb_by_name(parent)
            .is_some_and(|(u, _)| matches!(cx.rt.bound.get(u), Some(BindingKind::Vif { .. }))),
    }
}

/// A member delivered from table 40: bound here (as main or additional chassis) with its
/// interface here (an l3gateway port has none), or a localnet/l2gateway patch port.
fn delivered_here(cx: &Cx<'_>, uuid: &Uuid, pb: &PortBinding) -> bool {
    let bound_here = cx.is_me(pb.chassis)
        || cx
            .me()
            .is_some_and(|me| pb.additional_chassis.contains(&me));
    (bound_here && (has_local_binding(cx, uuid, pb) || pb.type_ == "l3gateway"))
        || cx.rt.patch_ofports.contains_key(uuid)
}

/// Remote chassis names of the members, in the order ovn-controller's sets visit them,
/// split into ordinary chassis and VTEP gateways.
#[derive(Default)]
struct RemoteChassis<'a> {
    hypervisors: Vec<&'a str>,
    vteps: Vec<&'a str>,
}

impl<'a> RemoteChassis<'a> {
    fn add(&mut self, cx: &Cx<'a>, chassis: &Uuid) {
        let Some(c) = cx.chassis(chassis) else { return };
        if option_true(c.other_config.get("is-vtep")) {
            self.vteps.push(&c.name);
        } else {
            self.hypervisors.push(&c.name);
        }
    }
}

fn consider_mc_group(
    cx: &Cx<'_>,
    uuid: &Uuid,
    mc: &MulticastGroup,
    out: &mut OwnerFlows,
) -> Result<(), Problem> {
    let Some(ld) = cx.local_dp(&mc.datapath) else {
        return Ok(());
    };
    let dp_key = cx.dp_key(&mc.datapath)?;
    let key = mc_key(mc.tunnel_key)?;
    // On an OVN-IC transit switch the patch ports are delivered after crossing the
    // availability-zone boundary, on the receiving side.
    let transit = cx
        .datapath(&mc.datapath)?
        .external_ids
        .contains_key("interconn-ts");
    let forms = &cx.l.dialect.physical;
    let mut local = Vec::new();
    let mut remote = Vec::new();
    // Patch ports that a packet from a VTEP may loop back to (releases with ramp flows).
    let mut ramp = Vec::new();
    let mut chassis = RemoteChassis::default();
    // Whether any member is on the group's datapath, and how a member's zone is loaded.
    let mut members_here = false;
    let zone_load = Zones {
        ct_low_half: cx.l.dialect.physical.encap_id_in_reg13,
        ..Zones::default()
    };
    for member in &mc.ports {
        let Some(pb) = cx.pb(member) else { continue };
        if pb.datapath != mc.datapath {
            out.problems.push(Problem::MemberOnOtherDatapath(*member));
            continue;
        }
        // Before 26.03 every member's zone is loaded in the local list, even when the
        // member is delivered from the remote output or not here at all (as
        // ovn-controller does); since, with each local delivery only.
        members_here = true;
        let zone = cx.zone(&pb.logical_port);
        let zone_load = (zone != 0).then(|| zone_load.ct_load(zone));
        let deliver_local = |pkey: u32, local: &mut Vec<Action>| {
            if forms.mc_zone_with_delivery {
                local.extend(zone_load.clone());
            }
            deliver_to(pkey, cx, local);
        };
        if !forms.mc_zone_with_delivery {
            local.extend(zone_load.clone());
        }
        let pkey = port_key(pb)?;
        let ty = pb.type_.as_str();
        if ty == "patch" {
            if transit {
                deliver_local(pkey, &mut local);
            } else {
                deliver_to(pkey, cx, &mut remote);
                if forms.mc_ramp_flows {
                    deliver_to(pkey, cx, &mut ramp);
                }
            }
        }
        if ty == "remote" {
            if let Some(c) = pb.chassis.and_then(|c| cx.chassis(&c)) {
                remote.push(load(LOG_OUTPORT, u128::from(pkey)));
                if let Some(t) = cx.tunnel(&c.name, None) {
                    put_encapsulation(
                        t.encap,
                        cx.geneve_field(),
                        dp_key,
                        pkey,
                        false,
                        &mut remote,
                    )?;
                    remote.push(output(t.ofport));
                }
            }
        } else if ty == "localport" {
            deliver_to(pkey, cx, &mut remote);
        } else if delivered_here(cx, member, pb) {
            deliver_local(pkey, &mut local);
        } else if ty == "chassisredirect" && cx.is_me(pb.chassis) {
            let distributed = pb
                .options
                .get("distributed-port")
                .and_then(|n| cx.pb_by_name(n))
                .filter(|(_, d)| d.datapath == pb.datapath);
            if let Some((_, d)) = distributed {
                deliver_local(port_key(d)?, &mut local);
            }
        } else if ld.localnet.is_none() {
            if let Some(c) = pb.chassis {
                chassis.add(cx, &c);
            }
            for c in &pb.additional_chassis {
                chassis.add(cx, c);
            }
        }
    }

    let match_group = || match_outport(dp_key, key);
    // Where the release splits a large group over several flows, each flow starts by
    // clearing the index register (reg6); the first flow therefore has actions even
    // without local members.
    let split = cx.l.dialect.physical.mc_group_reg6;
    if split && members_here {
        local.insert(0, load(FieldId::reg(6), 0));
    }
    let has_local = !local.is_empty();
    if has_local {
        local.push(load(LOG_OUTPORT, u128::from(key)));
        out.flows.push(flow(
            cx.l.local_output,
            100,
            cookie(uuid),
            match_group(),
            local,
        ));
    }
    if forms.mc_ramp_flows && !ramp.is_empty() {
        ramp.push(load(LOG_OUTPORT, u128::from(key)));
        ramp.push(goto(cx.l.after_remote_output()));
        let mut m = match_group();
        match_flags(
            &mut m,
            MLF_RCV_FROM_RAMP | MLF_ALLOW_LOOPBACK,
            MLF_RCV_FROM_RAMP | MLF_ALLOW_LOOPBACK,
        );
        out.flows
            .push(flow(cx.l.remote_output, 120, cookie(uuid), m, ramp));
    }
    if chassis.hypervisors.is_empty() && chassis.vteps.is_empty() && remote.is_empty() {
        return Ok(());
    }
    if !remote.is_empty() {
        remote.push(load(LOG_OUTPORT, u128::from(key)));
    }
    fan_out(cx, &chassis.hypervisors, dp_key, key, false, &mut remote)?;
    fan_out(cx, &chassis.vteps, dp_key, key, true, &mut remote)?;
    if !remote.is_empty() {
        let mut m = match_group();
        if forms.mc_ramp_flows {
            // Not from a VTEP (those come back through the ramp flow), then on.
            match_flags(&mut m, 0, MLF_RCV_FROM_RAMP);
            remote.push(goto(cx.l.after_remote_output()));
        } else if has_local {
            remote.push(goto(cx.l.local_output));
        }
        if split {
            remote.insert(0, load(FieldId::reg(6), 0));
        }
        out.flows
            .push(flow(cx.l.remote_output, 100, cookie(uuid), m, remote));
    }
    Ok(())
}

/// One output per chassis with a tunnel; the encapsulation is written again only when the
/// tunnel type changes from the previous chassis.
fn fan_out(
    cx: &Cx<'_>,
    names: &[&str],
    dp_key: u32,
    key: u32,
    to_vtep: bool,
    actions: &mut Vec<Action>,
) -> Result<(), Problem> {
    let mut previous = None;
    for name in sset_order(names.iter().copied()) {
        let Some(t) = cx.tunnel(name, None) else {
            continue;
        };
        if previous != Some(t.encap) {
            put_encapsulation(t.encap, cx.geneve_field(), dp_key, key, to_vtep, actions)?;
            previous = Some(t.encap);
        }
        actions.push(output(t.ofport));
    }
    Ok(())
}
