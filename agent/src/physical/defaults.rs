//! The chassis-wide default flows of the physical tables (cookie 0).

use crate::lflow::layout::TableLayout;
use crate::lflow::of::{Flow, FlowMatch};
use crate::runtime::DropSampling;

use super::actions::*;

fn flags(value: u32, mask: u32) -> FlowMatch {
    let mut m = FlowMatch::new();
    match_flags(&mut m, value, mask);
    m
}

pub fn default_flows(l: &TableLayout, sampling: Option<DropSampling>) -> Vec<Flow> {
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
