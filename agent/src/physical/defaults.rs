//! The chassis-wide default flows of the physical tables (cookie 0).

use crate::lflow::layout::TableLayout;
use crate::lflow::of::{FieldId, Flow, FlowMatch};
use crate::runtime::DropSampling;

use super::actions::*;

fn flags(value: u32, mask: u32) -> FlowMatch {
    let mut m = FlowMatch::new();
    match_flags(&mut m, value, mask);
    m
}

pub fn default_flows(l: &TableLayout, sampling: Option<DropSampling>) -> Vec<Flow> {
    let mut flows = base_defaults(l, sampling);
    if l.physical_only_tables().contains(&l.ct_zone_lookup) {
        // An ICMP error from a tunnel whose port has no zone of its own enters as it is.
        flows.push(flow(
            l.ct_zone_lookup,
            0,
            0,
            FlowMatch::new(),
            vec![goto(l.ingress)],
        ));
    }
    if l.remote_vtep_output != 0 {
        // Nothing goes to a remote VTEP unless a flow says so.
        flows.push(flow(
            l.remote_vtep_output,
            0,
            0,
            FlowMatch::new(),
            vec![goto(l.local_output)],
        ));
    }
    if l.physical_only_tables().contains(&l.ct_orig_nw_dst_load) {
        if l.dialect.ct_orig_in_result_reg {
            flows.extend(ct_orig_loads_into_result_reg(l));
        } else {
            flows.extend(ct_orig_dst_loads(l));
        }
    }
    if l.dialect.physical.lookup_defaults {
        flows.extend(lookup_defaults(l));
    }
    flows
}

/// `ct_state=+est+trk` and `ct_state=+new+trk`.
const EST_TRK: u128 = 0x22;
const NEW_TRK: u128 = 0x21;

/// The `ct_*()` loads into the low bits of xxreg1, for established and new connections.
/// The new connection's flow moves the value twice, as 26.03's ovn-controller writes it
/// (its action list is not cleared in between; the second move changes nothing).
fn ct_orig_loads_into_result_reg(l: &TableLayout) -> Vec<Flow> {
    let loads = [
        (l.ct_orig_tp_dst_load, None, FieldId::CT_TP_DST, 16),
        (l.ct_orig_proto_load, None, FieldId::CT_NW_PROTO, 8),
        (l.ct_orig_nw_dst_load, Some(0x0800), FieldId::CT_NW_DST, 32),
        (
            l.ct_orig_ip6_dst_load,
            Some(0x86dd),
            FieldId::CT_IPV6_DST,
            128,
        ),
    ];
    let mut flows = Vec::new();
    for (table, eth_type, src, bits) in loads {
        let load = mov(src, 0, FieldId::xxreg(1), 0, bits);
        for (state, n) in [(EST_TRK, 1), (NEW_TRK, 2)] {
            let mut m = FlowMatch::new();
            m.add(FieldId::CT_STATE, state, state);
            if let Some(t) = eth_type {
                m.add(FieldId::ETH_TYPE, t, 0xffff);
            }
            flows.push(flow(table, 100, 0, m, vec![load.clone(); n]));
        }
    }
    flows
}

/// Defaults of the lookup tables of releases that give them one.
fn lookup_defaults(l: &TableLayout) -> Vec<Flow> {
    /// `ct_state=-trk`.
    const TRK: u128 = 0x20;
    let mut untracked = FlowMatch::new();
    untracked.add(FieldId::CT_STATE, 0, TRK);
    vec![
        flow(
            l.get_fdb,
            0,
            0,
            FlowMatch::new(),
            vec![load(FieldId::reg(15), 0)],
        ),
        flow(
            l.get_remote_fdb,
            0,
            0,
            FlowMatch::new(),
            vec![load(FieldId::reg(1), 0)],
        ),
        flow(
            l.ct_state_save,
            u16::MAX - 1,
            0,
            FlowMatch::new(),
            vec![mov(FieldId::CT_STATE, 0, FieldId::reg(4), 0, 8)],
        ),
        flow(
            l.ct_state_save,
            u16::MAX,
            0,
            untracked,
            vec![load_bits(FieldId::reg(4), 0, 0, 8)],
        ),
    ]
}

/// The loads of an established connection's original destination (`ct_nw_dst()`,
/// `ct_ip6_dst()`, `ct_tp_dst()`) into the registers northd reads them from.
fn ct_orig_dst_loads(l: &TableLayout) -> Vec<Flow> {
    let tracked = |eth_type: Option<u128>| {
        let mut m = FlowMatch::new();
        m.add(FieldId::CT_STATE, EST_TRK, EST_TRK);
        if let Some(t) = eth_type {
            m.add(FieldId::ETH_TYPE, t, 0xffff);
        }
        m
    };
    vec![
        flow(
            l.ct_orig_tp_dst_load,
            100,
            0,
            tracked(None),
            vec![mov(FieldId::CT_TP_DST, 0, FieldId::reg(2), 0, 16)],
        ),
        flow(
            l.ct_orig_nw_dst_load,
            100,
            0,
            tracked(Some(0x0800)),
            vec![mov(FieldId::CT_NW_DST, 0, FieldId::reg(1), 0, 32)],
        ),
        flow(
            l.ct_orig_ip6_dst_load,
            100,
            0,
            tracked(Some(0x86dd)),
            vec![mov(FieldId::CT_IPV6_DST, 0, FieldId::xxreg(1), 0, 128)],
        ),
    ]
}

fn base_defaults(l: &TableLayout, sampling: Option<DropSampling>) -> Vec<Flow> {
    let any = FlowMatch::new;
    let mut clear_and_egress = Vec::new();
    put_clear_log_regs(&mut clear_and_egress);
    clear_and_egress.push(goto(l.egress));
    vec![
        // Nothing arrives but on a known port.
        flow(0, 0, 0, any(), drop_actions(sampling, 0)),
        // Output: no size check unless a port asks for one.
        flow(l.output_entry, 0, 0, any(), vec![goto(l.remote_output)]),
        // A packet marked too big (and answered) locally goes to local delivery.
        flow(
            l.large_pkt_process,
            10,
            0,
            flags(MLF_ALLOW_LOOPBACK, MLF_ALLOW_LOOPBACK),
            vec![goto(l.local_output)],
        ),
        flow(
            l.large_pkt_process,
            0,
            0,
            any(),
            vec![goto(l.remote_output)],
        ),
        // From a VTEP and not looping back: VXLAN lacks the metadata to tunnel it again.
        flow(
            l.remote_output,
            150,
            0,
            flags(MLF_RCV_FROM_RAMP, MLF_RCV_FROM_RAMP | MLF_ALLOW_LOOPBACK),
            vec![goto(l.local_output)],
        ),
        // Generated here, for here only.
        flow(
            l.remote_output,
            150,
            0,
            flags(MLF_LOCAL_ONLY, MLF_LOCAL_ONLY),
            vec![goto(l.local_output)],
        ),
        flow(
            l.remote_output,
            0,
            0,
            any(),
            vec![goto(l.after_remote_output())],
        ),
        flow(
            l.local_output,
            0,
            0,
            any(),
            drop_actions(sampling, l.local_output),
        ),
        // Into the egress pipeline with clean registers, as a tunnelled packet would be.
        flow(l.check_loopback, 0, 0, any(), clear_and_egress),
        flow(l.save_inport, 0, 0, any(), vec![goto(l.log_to_phy)]),
        flow(
            l.log_to_phy,
            0,
            0,
            any(),
            drop_actions(sampling, l.log_to_phy),
        ),
    ]
}
