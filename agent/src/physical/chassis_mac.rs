//! Chassis MACs (`ovn-chassis-mac-mappings`) on localnet switches. A chassis that routes a
//! packet onto a VLAN network sends it with its own chassis MAC instead of the router
//! port's MAC (so the physical switches never see one MAC on many ports). Table 65 does the
//! rewrite on the way out; table 0 recognizes a remote chassis' MAC on the way in (a
//! conjunction of "source is a remote chassis MAC" and "arrived on the localnet port with
//! its VLAN") and restores the router port's MAC.

use sbclient::ovn_sb::Chassis;
use sbclient::Uuid;

use crate::lflow::of::{conjunction, Action, FieldId, FlowMatch};
use crate::runtime::LocalDatapath;

use super::actions::*;
use super::cx::PortCx;
use super::cx::{cookie, leading_mac, Cx};
use super::error::Problem;
use super::OwnerFlows;

/// The conjunction id of the table-0 chassis MAC flows.
const CHASSIS_MAC_TO_ROUTER_MAC_CONJID: u32 = 100;
const ETH_EXACT: u128 = 0xffff_ffff_ffff;

/// A chassis' `ovn-chassis-mac-mappings` (`<physnet>:<MAC>,...`): the chassis-specific key
/// `ovn-chassis-mac-mappings-<name>` wins over the plain one.
fn mac_mappings(chassis: &Chassis) -> &str {
    let specific = format!("ovn-chassis-mac-mappings-{}", chassis.name);
    chassis
        .other_config
        .get(specific.as_str())
        .or_else(|| chassis.other_config.get("ovn-chassis-mac-mappings"))
        .map_or("", String::as_str)
}

/// `(physnet, MAC text)` of each mapping; an entry without a MAC part has `None`.
fn mappings(text: &str) -> impl Iterator<Item = (&str, Option<&str>)> {
    text.split(',')
        .filter(|t| !t.is_empty())
        .map(|t| match t.split_once(':') {
            Some((net, mac)) if !mac.is_empty() => (net, Some(mac)),
            Some((net, _)) => (net, None),
            None => (t, None),
        })
}

/// Table 0, clause 1 of 2: the MACs of remote chassis `uuid`. Nothing for this chassis.
pub fn chassis_mac_flows(cx: &Cx<'_>, uuid: &Uuid) -> OwnerFlows {
    let mut out = OwnerFlows::default();
    let Some(chassis) = cx.chassis(uuid) else {
        return out;
    };
    if chassis.name == cx.rt.chassis_name {
        return out;
    }
    for (net, mac) in mappings(mac_mappings(chassis)) {
        // ovn-controller warns about an entry without a MAC and goes on.
        let Some(mac) = mac else {
            out.problems
                .push(Problem::ChassisMacMapping(net.to_owned()));
            continue;
        };
        let Some(value) = leading_mac(mac) else {
            // ... but stops at one whose MAC does not parse (ovn-controller then stops for
            // every chassis, in hash order; we stop for this one only).
            out.problems.push(Problem::BadMac {
                port: chassis.name.clone(),
                value: mac.to_owned(),
            });
            break;
        };
        let mut m = FlowMatch::new();
        m.add(FieldId::ETH_SRC, u128::from(value), ETH_EXACT);
        out.flows.push(flow(
            0,
            180,
            cookie(uuid),
            m,
            vec![conjunction(CHASSIS_MAC_TO_ROUTER_MAC_CONJID, 0, 2)],
        ));
    }
    out
}

/// The MAC of a router port (peer of a localnet switch): it must have exactly one.
fn router_port_mac(rport: &sbclient::ovn_sb::PortBinding) -> Result<u64, Problem> {
    let mut macs = rport.mac.iter();
    match (macs.next(), macs.next()) {
        (Some(mac), None) => leading_mac(mac).ok_or_else(|| Problem::BadMac {
            port: rport.logical_port.clone(),
            value: mac.clone(),
        }),
        _ => Err(Problem::RouterPortMacCount {
            port: rport.logical_port.clone(),
            count: rport.mac.len(),
        }),
    }
}

/// Adds the localnet port's VLAN match: `dl_vlan=tag`, or no VLAN header.
fn match_localnet_vlan(m: &mut FlowMatch, tag: u16) {
    if tag != 0 {
        match_vlan(m, tag);
    } else {
        match_no_vlan(m);
    }
}

/// Table 0 for localnet port `p` on `ofport`: per router peer of the switch, the
/// conjunction's action flow (restore the router port's MAC, enter the switch) and its
/// clause 2 of 2 (the localnet VLAN). Installed even when no chassis MACs exist (clause 1 is
/// then empty and never matches).
pub fn replace_chassis_mac_flows(
    cx: &Cx<'_>,
    p: &PortCx<'_>,
    ld: &LocalDatapath,
    ofport: u32,
    zones: Zones,
    out: &mut OwnerFlows,
) -> Result<(), Problem> {
    let tag = match p.pb.tag {
        Some(t) => super::cx::vlan_tag(t)?,
        None => 0,
    };
    for (_, remote) in &ld.peers {
        let Some(rport) = cx.pb(remote) else { continue };
        let router_mac = router_port_mac(rport)?;
        let rcookie = cookie(remote);

        let mut m = FlowMatch::new();
        match_in_port(&mut m, ofport);
        m.set_conj_id(CHASSIS_MAC_TO_ROUTER_MAC_CONJID);
        match_localnet_vlan(&mut m, tag);
        let mut actions = Vec::new();
        if tag != 0 {
            actions.push(Action::PopVlan);
        }
        put_ingress_metadata_from_outside(zones, p.dp_key, p.port_key, &mut actions);
        actions.push(load(FieldId::ETH_SRC, u128::from(router_mac)));
        actions.push(goto(cx.l.ingress));
        out.flows.push(flow(0, 180, rcookie, m, actions));

        let mut m = FlowMatch::new();
        if cx.l.dialect.physical.chassis_mac_vlan_in_port {
            match_in_port(&mut m, ofport);
        }
        match_localnet_vlan(&mut m, tag);
        out.flows.push(flow(
            0,
            180,
            rcookie,
            m,
            vec![conjunction(CHASSIS_MAC_TO_ROUTER_MAC_CONJID, 1, 2)],
        ));
    }
    Ok(())
}

/// Whether `name` is resident here as `is_chassis_resident()` sees it: bound to a chassis,
/// and that chassis is this one (for a chassisredirect port: this chassis is its HA group's
/// active member).
fn resident(cx: &Cx<'_>, name: &str) -> bool {
    let Some((uuid, pb)) = cx.pb_by_name(name) else {
        return false;
    };
    if pb.chassis.is_none() {
        return false;
    }
    if pb.type_ == "chassisredirect" {
        cx.rt.active_ha.contains(uuid)
    } else {
        cx.is_me(pb.chassis)
    }
}

/// Table 65, priority 150, for localnet port `p` on `ofport` with VLAN `tag`: a packet a
/// router port sends onto the physical network leaves with this chassis' MAC for the
/// network, unless the router port's gateway (`cr-<port>`) is here. The MAC and VLAN are
/// restored afterwards for the other ports of a flood.
pub fn replace_router_port_mac_flows(
    cx: &Cx<'_>,
    p: &PortCx<'_>,
    ld: &LocalDatapath,
    ofport: u32,
    tag: u16,
    out: &mut OwnerFlows,
) -> Result<(), Problem> {
    let Some(network) = p.pb.options.get("network_name") else {
        return Ok(());
    };
    let Some(me) = cx.me().and_then(|u| cx.chassis(&u)) else {
        return Ok(());
    };
    let chassis_mac = mappings(mac_mappings(me))
        .filter(|(net, _)| *net == network.as_str())
        .find_map(|(_, mac)| leading_mac(mac?));
    let Some(chassis_mac) = chassis_mac else {
        return Ok(());
    };
    let ethtype = p.pb.options.get("ethtype").map(String::as_str);
    for (_, remote) in &ld.peers {
        let Some(rport) = cx.pb(remote) else { continue };
        if resident(cx, &format!("cr-{}", rport.logical_port)) {
            continue;
        }
        let router_mac = router_port_mac(rport)?;
        let mut m = match_outport(p.dp_key, p.port_key);
        m.add(FieldId::ETH_SRC, u128::from(router_mac), ETH_EXACT);
        let mut actions = vec![load(FieldId::ETH_SRC, u128::from(chassis_mac))];
        if tag != 0 {
            put_push_vlan(ethtype, tag, &mut actions);
        }
        actions.push(output(ofport));
        actions.push(load(FieldId::ETH_SRC, u128::from(router_mac)));
        if tag != 0 {
            actions.push(Action::PopVlan);
        }
        out.flows
            .push(flow(cx.l.log_to_phy, 150, p.cookie, m, actions));
    }
    Ok(())
}
