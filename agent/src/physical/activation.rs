//! `options:activation-strategy` of a port being live-migrated (bound on its main chassis
//! and, as an additional chassis, here): until the port is activated here, its interface on
//! this chassis is cut off in both directions, except for the RARP the hypervisor sends once
//! the VM runs here. That RARP goes on into the pipeline and, through the controller,
//! activates the port: pinctrl adds this chassis to `options:additional-chassis-activated`
//! and the block goes with the next physical run.

use crate::lflow::of::{controller, FieldId, FlowMatch};

use super::actions::{flow, goto, match_in_port, match_outport, put_ingress_metadata_from_outside};
use super::cx::{Cx, PortCx};
use super::error::Problem;
use super::OwnerFlows;

const ETH_TYPE_RARP: u128 = 0x8035;
/// ovn-controller's opcode `ACTION_OPCODE_ACTIVATION_STRATEGY_RARP`.
const ACTIVATION_STRATEGY_RARP: u32 = 26;

/// The strategy ovn-controller implements.
const RARP: &str = "rarp";

/// Whether `chassis` is named in the port's `options:additional-chassis-activated`.
pub fn activated_on(pb: &sbclient::ovn_sb::PortBinding, chassis: &str) -> bool {
    pb.options
        .get("additional-chassis-activated")
        .is_some_and(|list| list.split(',').any(|c| c == chassis))
}

/// The blocking flows of a port with an interface (`ofport`) here, when this chassis is one
/// of its additional chassis and the port is not activated here yet.
pub fn activation_flows(cx: &Cx<'_>, p: &PortCx<'_>, ofport: u32, out: &mut OwnerFlows) {
    let pb = p.pb;
    let Some(me) = cx.me() else { return };
    if !pb.additional_chassis.contains(&me) {
        return;
    }
    let Some(strategy) = pb.options.get("activation-strategy") else {
        return;
    };
    if activated_on(pb, &cx.rt.chassis_name) {
        return;
    }
    if strategy != RARP {
        out.problems.push(Problem::UnknownActivationStrategy {
            port: pb.logical_port.clone(),
            strategy: strategy.clone(),
        });
        return;
    }
    let l = cx.l;
    let mut rarp = FlowMatch::new();
    rarp.add(FieldId::ETH_TYPE, ETH_TYPE_RARP, 0xffff);
    match_in_port(&mut rarp, ofport);
    let mut actions = Vec::new();
    put_ingress_metadata_from_outside(cx.zones(pb), p.dp_key, p.port_key, &mut actions);
    actions.push(controller(
        crate::lflow::controller::header(ACTIVATION_STRATEGY_RARP),
        false,
        None,
    ));
    actions.push(goto(l.ingress));
    out.flows.push(flow(0, 1010, p.cookie, rarp, actions));

    let mut from_vif = FlowMatch::new();
    match_in_port(&mut from_vif, ofport);
    out.flows
        .push(flow(0, 1000, p.cookie, from_vif, Vec::new()));
    out.flows.push(flow(
        l.log_to_phy,
        1000,
        p.cookie,
        match_outport(p.dp_key, p.port_key),
        Vec::new(),
    ));
}
