//! What a handler asks the driver to do ([`Effect`]).

use openflow::wire::nx::Resume;
use openflow::wire::PacketOut;

use super::buffer::{BufferKey, Buffered, FdbWrite, MacBindingWrite};
use super::packet_in::Skip;

/// What a handler asks the driver to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// A generated packet, sent into the pipeline.
    PacketOut(PacketOut),
    /// Continue a paused pipeline.
    Resume(Resume),
    /// Write a MAC learnt on a port to the FDB.
    PutFdb(FdbWrite),
    /// An ACL log line (module `acl_log`, level INFO).
    Log(String),
    /// Keep the packet until the MAC binding of its next hop is known.
    Buffer(BufferKey, Buffered),
    /// Write a learnt MAC binding; `multicast`: learnt from a multicast frame (written
    /// after a short random delay).
    PutMacBinding {
        write: MacBindingWrite,
        multicast: bool,
    },
    /// A controller event to record (`trigger_event`).
    ControllerEvent(super::events::EmptyLbBackends),
    /// Claim a virtual port (`bind_vport`).
    BindVport(super::vport::VportClaim),
    /// Activate a live-migrated port here (`activation_strategy_rarp`).
    Activate(super::activation::Activation),
    /// A DHCPv6 server's message for a prefix delegation client (`handle_dhcpv6_reply`).
    Prefixd(super::prefixd::Received),
    /// A BFD control packet from a peer (`handle_bfd_msg`).
    Bfd(super::bfd::Received),
    /// A backend answered a health check (`handle_svc_check`).
    SvcReply(super::svc_monitor::Reply),
    /// The input was bad, yet the paused pipeline is resumed as ovn-controller resumes it
    /// (a `Resume` beside this): counted as skipped and logged.
    Rejected(Skip),
    /// An IGMP or MLD message to learn from (`igmp;`).
    Igmp(super::igmp::Received),
    /// A line for the log (module `pinctrl`, level INFO, rate-limited), such as the
    /// `DHCPOFFER <mac> <ip>` ovn-controller writes.
    Info(String),
}
