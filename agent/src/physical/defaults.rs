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
    if l.physical_only_tables().contains(&l.ct_orig_nw_dst_load) {
        flows.extend(ct_orig_dst_loads(l));
    }
    flows
}

/// The loads of an established connection's original destination (`ct_nw_dst()`,
/// `ct_ip6_dst()`, `ct_tp_dst()`) into the registers northd reads them from.
fn ct_orig_dst_loads(l: &TableLayout) -> Vec<Flow> {
    /// `ct_state=+est+trk`.
    const EST_TRK: u128 = 0x22;
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
        flow(l.remote_output, 0, 0, any(), vec![goto(l.local_output)]),
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
