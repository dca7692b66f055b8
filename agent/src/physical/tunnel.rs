//! Table 0 for packets arriving on a tunnel: the sending chassis already ran the ingress
//! pipeline, so the datapath, inport and outport come out of the encapsulation and the
//! packet goes straight to local output. VXLAN carries no inport and only 12 bits of
//! outport (multicast keys are folded into `0x800 | low 11 bits` and unfolded here);
//! packets from VTEP gateways ("ramp" switches) carry only the datapath and enter the
//! ingress pipeline as coming from the VTEP's logical port.

use sbclient::ovn_sb::PortBinding;

use crate::lflow::of::{FieldId, FlowMatch};
use crate::runtime::{EncapType, Tunnel};

use super::actions::*;
use super::cx::{cookie, port_key, Cx};
use super::error::Problem;
use super::OwnerFlows;

/// `tun_id` bit 23: a VXLAN VNI whose outport part is a folded multicast key.
const VXLAN_MULTICAST_BIT: u128 = 0x80_0000;

pub fn tunnel_flows(cx: &Cx<'_>, ofport: u32) -> OwnerFlows {
    let mut out = OwnerFlows::default();
    let Some(tunnel) = cx
        .rt
        .tunnels
        .values()
        .flatten()
        .find(|t| t.ofport == ofport)
    else {
        return out;
    };
    if let Err(p) = receive_flows(cx, tunnel, &mut out) {
        out.problems.push(p);
    }
    out
}

fn receive_flows(cx: &Cx<'_>, t: &Tunnel, out: &mut OwnerFlows) -> Result<(), Problem> {
    let mut m = FlowMatch::new();
    match_in_port(&mut m, t.ofport);
    let mut actions = match t.encap {
        EncapType::Geneve => {
            let option = cx.geneve_field().ok_or(Problem::NoGeneveField)?;
            let mut a = vec![
                mov(FieldId::TUN_ID, 0, LOG_DATAPATH, 0, 24),
                mov(option, 16, LOG_INPORT, 0, 15),
                mov(option, 0, LOG_OUTPORT, 0, 16),
            ];
            if cx.l.dialect.physical.tunnel_ofport_in_reg5 {
                a.push(load_bits(FieldId::reg(5), u128::from(t.ofport), 16, 16));
            }
            if let Some(mark) = cx.mark_field_for(&t.chassis) {
                put_mark_from_option(mark, &mut a);
            }
            a
        }
        EncapType::Stt => vec![
            mov(FieldId::TUN_ID, 40, LOG_INPORT, 0, 15),
            mov(FieldId::TUN_ID, 24, LOG_OUTPORT, 0, 16),
            mov(FieldId::TUN_ID, 0, LOG_DATAPATH, 0, 24),
        ],
        EncapType::Vxlan => vec![
            mov(FieldId::TUN_ID, 12, LOG_OUTPORT, 0, 12),
            mov(FieldId::TUN_ID, 0, LOG_DATAPATH, 0, 12),
        ],
    };
    actions.push(goto(cx.l.local_output));
    out.flows.push(flow(0, 100, 0, m.clone(), actions.clone()));
    if let Some(bit) = cx.l.dialect.physical.rx_from_tunnel_bit {
        // An ICMP "too big" error for a packet this chassis tunnelled also looks up the
        // zone of the port it answers and enters the ingress pipeline, flagged.
        actions.push(load_bits(LOG_FLAGS, 1, bit, 1));
        actions.push(goto(cx.l.ct_zone_lookup));
        for (eth_type, proto, ty_field, code_field, ty, code) in [
            (0x0800, 1, FieldId::ICMP_TYPE, FieldId::ICMP_CODE, 3, 4),
            (0x86dd, 58, FieldId::ICMPV6_TYPE, FieldId::ICMPV6_CODE, 2, 0),
        ] {
            let mut icmp = m.clone();
            icmp.add(FieldId::ETH_TYPE, eth_type, 0xffff);
            icmp.add(FieldId::NW_PROTO, proto, 0xff);
            icmp.add(ty_field, ty, 0xff);
            icmp.add(code_field, code, 0xff);
            out.flows.push(flow(0, 120, 0, icmp, actions.clone()));
        }
    }
    if t.encap != EncapType::Vxlan {
        return Ok(());
    }

    let mut mcast = m.clone();
    mcast.add(FieldId::TUN_ID, VXLAN_MULTICAST_BIT, VXLAN_MULTICAST_BIT);
    out.flows.push(flow(
        0,
        105,
        0,
        mcast,
        vec![
            load_bits(LOG_OUTPORT, 1, 15, 1),
            mov(FieldId::TUN_ID, 12, LOG_OUTPORT, 0, 11),
            mov(FieldId::TUN_ID, 0, LOG_DATAPATH, 0, 12),
            goto(cx.l.local_output),
        ],
    ));

    let vteps = cx
        .sb
        .table::<PortBinding>()
        .into_iter()
        .flat_map(sbclient::Table::iter)
        .filter(|(_, pb)| pb.type_ == "vtep");
    let mut vteps: Vec<_> = vteps.collect();
    vteps.sort_by_key(|(u, _)| **u);
    for (uuid, pb) in vteps {
        let on_this_tunnel = pb
            .chassis
            .and_then(|c| cx.chassis(&c))
            .is_some_and(|c| c.name == t.chassis);
        if !on_this_tunnel {
            continue;
        }
        let (dp_key, vtep_key) = match (cx.dp_key(&pb.datapath), port_key(pb)) {
            (Ok(d), Ok(p)) => (d, p),
            (Err(e), _) | (_, Err(e)) => {
                out.problems.push(e);
                continue;
            }
        };
        let mut ramp = m.clone();
        ramp.add(FieldId::TUN_ID, u128::from(dp_key), u128::from(u64::MAX));
        out.flows.push(flow(
            0,
            110,
            cookie(uuid),
            ramp,
            vec![
                mov(FieldId::TUN_ID, 0, LOG_DATAPATH, 0, 24),
                load_bits(LOG_INPORT, u128::from(vtep_key), 0, 15),
                load_bits(LOG_FLAGS, 1, MLF_RCV_FROM_RAMP_BIT, 1),
                goto(cx.l.ingress),
            ],
        ));
    }
    Ok(())
}
