//! Ports on other chassis: table 39 tunnels the packet to the port's chassis (and to its
//! additional chassis), or to the live member of its HA chassis group through an
//! active/backup bundle; on a switch with a localnet port, table 40 hands it to the
//! localnet port instead; a chassisredirect port with `redirect-type=bridged` goes out on
//! the physical network with the router port's MAC.

use openflow::action::{Bundle, NX_BD_ALG_ACTIVE_BACKUP, NX_HASH_FIELDS_ETH_SRC};
use sbclient::ovn_sb::{Encap, HaChassis, HaChassisGroup, PortBinding};

use crate::lflow::of::{Action, FieldId};
use crate::runtime::{EncapType, Tunnel};

use super::actions::*;
use super::cx::PortCx;
use super::cx::{leading_mac, port_key, Cx};
use super::error::Problem;
use super::OwnerFlows;

/// OVS refuses bundles with more members.
const BUNDLE_MAX_MEMBERS: usize = 2048;

/// Table 39 (or 40 for a bridged redirect) for a port that is not delivered here, or is
/// also on other chassis. `ha`: the port has an HA chassis group of two or more chassis.
pub fn remote_port_flows(
    cx: &Cx<'_>,
    p: &PortCx<'_>,
    ha: bool,
    out: &mut OwnerFlows,
) -> Result<(), Problem> {
    let bridged =
        p.pb.options
            .get("redirect-type")
            .is_some_and(|t| t.eq_ignore_ascii_case("bridged"));
    if bridged {
        redirect_bridged(cx, p, out);
        Ok(())
    } else if ha {
        redirect_ha(cx, p, out)
    } else {
        redirect_overlay(cx, p, out)
    }
}

/// The tunnels to the chassis that have the port other than this one: its main chassis
/// (through the tunnel to its `encap` IP if it names one) and its additional chassis.
fn remote_tunnels<'a>(cx: &Cx<'a>, pb: &PortBinding, out: &mut OwnerFlows) -> Vec<&'a Tunnel> {
    let mut tunnels = Vec::new();
    let mut add = |chassis: &sbclient::Uuid, encap: Option<&sbclient::Uuid>| {
        let Some(name) = cx.chassis(chassis).map(|c| c.name.as_str()) else {
            return;
        };
        let ip = encap
            .and_then(|e| cx.sb.table::<Encap>()?.get(e))
            .map(|e| e.ip.as_str());
        match cx.tunnel(name, ip) {
            Some(t) => tunnels.push(t),
            None => out.problems.push(Problem::NoTunnel(name.to_owned())),
        }
    };
    if let Some(main) = pb.chassis.filter(|c| Some(*c) != cx.me()) {
        add(&main, pb.encap.as_ref());
    }
    for extra in &pb.additional_chassis {
        if Some(*extra) != cx.me() {
            // ovn-controller looks the additional encap up under this chassis' name, which
            // never finds one, so any tunnel to the additional chassis is used.
            add(extra, None);
        }
    }
    tunnels
}

/// `in_port=NONE` first for a VTEP port: its ARP/ND responder may answer out of the tunnel
/// the request came in on.
fn put_vtep_in_port(pb: &PortBinding, actions: &mut Vec<Action>) {
    if pb.type_ == "vtep" {
        actions.push(load(FieldId::IN_PORT, OFPP_NONE));
    }
}

/// Encapsulate and output once per tunnel, then `resubmit(local_output)` (where nothing
/// normally matches a remote port).
fn redirect_overlay(cx: &Cx<'_>, p: &PortCx<'_>, out: &mut OwnerFlows) -> Result<(), Problem> {
    let tunnels = remote_tunnels(cx, p.pb, out);
    if tunnels.is_empty() {
        return Ok(());
    }
    let mut actions = Vec::new();
    put_vtep_in_port(p.pb, &mut actions);
    let to_vtep = p.pb.type_ == "vtep";
    for t in tunnels {
        put_encapsulation(
            t.encap,
            cx.geneve_field(),
            p.dp_key,
            p.port_key,
            to_vtep,
            &mut actions,
        )?;
        let mark = cx
            .mark_field_for(&t.chassis)
            .filter(|_| t.encap == EncapType::Geneve);
        if let Some(option) = mark {
            put_mark_to_option(option, &mut actions);
        }
        actions.push(output(t.ofport));
        if let Some(option) = mark {
            put_mark_from_option(option, &mut actions);
        }
    }
    actions.push(goto(cx.l.after_remote_output()));
    let mut m = match_outport(p.dp_key, p.port_key);
    if cx.l.dialect.physical.encap_id_in_reg13 {
        // Entered by the first (only) local encap IP: encap id 0.
        m.add(LOG_CT_ZONE, 0, ENCAP_ID_MASK);
    }
    out.flows
        .push(flow(cx.l.remote_output, 100, p.cookie, m, actions));
    Ok(())
}

/// The chassis of the port's HA chassis group that have a Chassis row, highest priority
/// first (ties: the larger name first), as `(priority, chassis name)`.
pub fn ha_members<'a>(cx: &Cx<'a>, pb: &PortBinding) -> Vec<(i64, &'a str)> {
    let Some(group) = pb
        .ha_chassis_group
        .and_then(|g| cx.sb.table::<HaChassisGroup>()?.get(&g))
    else {
        return Vec::new();
    };
    let Some(ha) = cx.sb.table::<HaChassis>() else {
        return Vec::new();
    };
    let mut members: Vec<(i64, &str)> = group
        .ha_chassis
        .iter()
        .filter_map(|m| ha.get(m))
        .filter_map(|h| Some((h.priority, cx.chassis(&h.chassis?)?.name.as_str())))
        .collect();
    members.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.cmp(a.1)));
    members
}

/// Encapsulate once (every member must use the same encapsulation) and output to the
/// first live member tunnel, in priority order.
fn redirect_ha(cx: &Cx<'_>, p: &PortCx<'_>, out: &mut OwnerFlows) -> Result<(), Problem> {
    let tunnels: Vec<&Tunnel> = ha_members(cx, p.pb)
        .into_iter()
        .filter_map(|(_, name)| cx.tunnel(name, None))
        .collect();
    let Some(first) = tunnels.first() else {
        return Err(Problem::NoHaTunnel(p.pb.logical_port.clone()));
    };
    if tunnels.iter().any(|t| t.encap != first.encap) {
        return Err(Problem::MixedHaEncapsulations(p.pb.logical_port.clone()));
    }
    let mut actions = Vec::new();
    put_encapsulation(
        first.encap,
        cx.geneve_field(),
        p.dp_key,
        p.port_key,
        p.pb.type_ == "vtep",
        &mut actions,
    )?;
    // The mark goes along only if whichever member the bundle picks restores it.
    let marks: Option<Vec<FieldId>> = tunnels
        .iter()
        .map(|t| cx.mark_field_for(&t.chassis))
        .collect();
    if let (Some(option), EncapType::Geneve) = (marks.and_then(|m| m.first().copied()), first.encap)
    {
        put_mark_to_option(option, &mut actions);
    }
    actions.push(Action::Bundle(Bundle {
        algorithm: NX_BD_ALG_ACTIVE_BACKUP,
        fields: NX_HASH_FIELDS_ETH_SRC,
        basis: 0,
        members: tunnels
            .iter()
            .take(BUNDLE_MAX_MEMBERS)
            .map(|t| t.ofport as u16)
            .collect(),
    }));
    out.flows.push(flow(
        cx.l.remote_output,
        100,
        p.cookie,
        match_outport(p.dp_key, p.port_key),
        actions,
    ));
    Ok(())
}

/// `redirect-type=bridged` on a chassisredirect port not active here: send the packet out
/// on the physical network of the switch behind the distributed port, as if the switch's
/// localnet port were the outport, with the router port's MAC as source.
fn redirect_bridged(cx: &Cx<'_>, p: &PortCx<'_>, out: &mut OwnerFlows) {
    let pb = p.pb;
    if pb.type_ != "chassisredirect" {
        return;
    }
    let Some(mac) = pb.mac.iter().next().and_then(|m| leading_mac(m)) else {
        return;
    };
    let distributed = pb.options.get("distributed-port");
    let Some(ld) = cx.local_dp(&pb.datapath) else {
        return;
    };
    // The switch side of the distributed port, among this router's local peers.
    let Some(switch_port) = ld
        .peers
        .iter()
        .filter_map(|(_, remote)| cx.pb(remote))
        .find(|sp| sp.options.get("peer") == distributed)
    else {
        return;
    };
    let Ok(ls_key) = cx.dp_key(&switch_port.datapath) else {
        return;
    };
    let Some(localnet) = cx
        .local_dp(&switch_port.datapath)
        .and_then(|ld| ld.localnet)
        .and_then(|u| cx.pb(&u))
    else {
        return;
    };
    let localnet_key = match port_key(localnet) {
        Ok(k) => k,
        Err(e) => {
            out.problems.push(e);
            return;
        }
    };
    out.flows.push(flow(
        cx.l.local_output,
        100,
        p.cookie,
        match_outport(p.dp_key, p.port_key),
        vec![
            load(FieldId::ETH_SRC, u128::from(mac)),
            load(LOG_DATAPATH, u128::from(ls_key)),
            load(LOG_OUTPORT, u128::from(localnet_key)),
            goto(cx.l.log_to_phy),
        ],
    ));
}

/// A remote port on a switch with a localnet port: table 40 makes the localnet port the
/// outport. Traffic from the switch's multichassis ports to it is still tunnelled (table
/// 39, priority 110), so that each of their chassis gets its copy.
pub fn via_localnet(cx: &Cx<'_>, p: &PortCx<'_>, out: &mut OwnerFlows) -> Result<(), Problem> {
    let Some(localnet) = cx
        .local_dp(&p.pb.datapath)
        .and_then(|ld| ld.localnet)
        .and_then(|u| cx.pb(&u))
    else {
        return Ok(());
    };
    out.flows.push(flow(
        cx.l.local_output,
        100,
        p.cookie,
        match_outport(p.dp_key, p.port_key),
        vec![
            load(LOG_OUTPORT, u128::from(port_key(localnet)?)),
            goto(cx.l.local_output),
        ],
    ));
    enforce_tunneling_for_multichassis(cx, p, out)
}

fn enforce_tunneling_for_multichassis(
    cx: &Cx<'_>,
    p: &PortCx<'_>,
    out: &mut OwnerFlows,
) -> Result<(), Problem> {
    let multichassis: Vec<&PortBinding> = cx
        .local_dp(&p.pb.datapath)
        .map(|ld| {
            ld.multichassis_ports
                .iter()
                .filter_map(|u| cx.pb(u))
                .collect()
        })
        .unwrap_or_default();
    if multichassis.is_empty() {
        return Ok(());
    }
    let tunnels = remote_tunnels(cx, p.pb, out);
    if tunnels.is_empty() {
        return Ok(());
    }
    let to_vtep = p.pb.type_ == "vtep";
    for mcp in multichassis {
        let mut actions = Vec::new();
        put_vtep_in_port(p.pb, &mut actions);
        for t in &tunnels {
            put_encapsulation(
                t.encap,
                cx.geneve_field(),
                p.dp_key,
                p.port_key,
                to_vtep,
                &mut actions,
            )?;
            actions.push(output(t.ofport));
        }
        let mut m = match_outport(p.dp_key, p.port_key);
        m.add(LOG_INPORT, u128::from(port_key(mcp)?), 0xffff_ffff);
        out.flows
            .push(flow(cx.l.remote_output, 110, p.cookie, m, actions));
    }
    Ok(())
}
