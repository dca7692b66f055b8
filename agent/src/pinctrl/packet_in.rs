//! The packet-in as every handler reads it ([`PacketIn`]), why one is skipped ([`Skip`]),
//! the opcodes, and how a generated packet enters the pipeline ([`into_pipeline`]): the
//! parts that the handlers of every opcode share, below all of them.

use openflow::action::Action;
use openflow::oxm::{FieldId, Match, MatchField};
use openflow::wire::{PacketIn2, PacketInProp, PacketOut};

use super::metadata::Registers;
use super::packet::PacketError;

/// `ACTION_OPCODE_*` (the order of OVN's `enum action_opcode`).
pub mod opcode {
    pub const ARP: u32 = 0;
    pub const PUT_ARP: u32 = 1;
    pub const PUT_DHCP_OPTS: u32 = 2;
    pub const PUT_DHCPV6_OPTS: u32 = 5;
    pub const ND_NA: u32 = 3;
    pub const LOG: u32 = 7;
    pub const PUT_ND: u32 = 4;
    pub const DNS_LOOKUP: u32 = 6;
    pub const PUT_ND_RA_OPTS: u32 = 8;
    pub const ND_NS: u32 = 9;
    pub const ICMP: u32 = 10;
    pub const TCP_RESET: u32 = 11;
    pub const ND_NA_ROUTER: u32 = 12;
    pub const PUT_ICMP4_FRAG_MTU: u32 = 13;
    pub const ICMP4_ERROR: u32 = 14;
    pub const EVENT: u32 = 15;
    pub const IGMP: u32 = 16;
    pub const BIND_VPORT: u32 = 17;
    pub const HANDLE_SVC_CHECK: u32 = 18;
    pub const DHCP6_SERVER: u32 = 19;
    pub const ICMP6_ERROR: u32 = 20;
    pub const PUT_ICMP6_FRAG_MTU: u32 = 21;
    pub const REJECT: u32 = 22;
    pub const PUT_FDB: u32 = 25;
    pub const ACTIVATION_STRATEGY_RARP: u32 = 26;
    pub const BFD_MSG: u32 = 23;
    pub const SCTP_ABORT: u32 = 24;
    /// Opcodes are counted per value up to this one (`BFD_MSG` .. `ACTIVATION_STRATEGY_RARP`
    /// included); larger values count as unknown.
    pub const COUNT: usize = 27;

    /// The action's name, for statistics.
    pub fn name(op: u32) -> &'static str {
        const NAMES: [&str; super::opcode::COUNT] = [
            "arp",
            "put_arp",
            "put_dhcp_opts",
            "nd_na",
            "put_nd",
            "put_dhcpv6_opts",
            "dns_lookup",
            "log",
            "put_nd_ra_opts",
            "nd_ns",
            "icmp",
            "tcp_reset",
            "nd_na_router",
            "put_icmp4_frag_mtu",
            "icmp4_error",
            "event",
            "igmp",
            "bind_vport",
            "handle_svc_check",
            "dhcp6_server",
            "icmp6_error",
            "put_icmp6_frag_mtu",
            "reject",
            "bfd_msg",
            "sctp_abort",
            "put_fdb",
            "activation_strategy_rarp",
        ];
        usize::try_from(op)
            .ok()
            .and_then(|i| NAMES.get(i))
            .copied()
            .unwrap_or("unknown")
    }
}

pub(super) const OFPR_ACTION: u8 = 1;
pub(super) const OFPP_CONTROLLER: u32 = 0xffff_fffd;
pub(super) const OFPP_CONTROLLER16: u16 = 0xfffd;
pub(super) const VLAN_CFI: u16 = 0x1000;

/// What the handlers need to know besides the packet-in.
#[derive(Debug, Clone, Copy)]
pub struct Context {
    /// The table where re-injected buffered packets enter the output stage
    /// (`OFTABLE_OUTPUT_INIT` in ovn-controller).
    pub output_entry_table: u8,
    /// The first table of the logical egress pipeline (`log` says `to-lport` from there).
    pub egress_table: u8,
}

/// Why a packet-in was not acted upon.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Skip {
    /// Not sent by a `controller` action (a table miss, a packet-out): ignored.
    #[error("packet-in reason {0} is not an action")]
    NotAction(u8),
    #[error("packet-in userdata lacks action header")]
    NoHeader,
    #[error("unrecognized packet-in opcode {0}")]
    UnknownOpcode(u32),
    #[error("packet-in opcode {0} ({name}) is not handled yet", name = opcode::name(*.0))]
    NotYet(u32),
    #[error("{0}")]
    WrongPacket(&'static str),
    #[error("{0}")]
    Packet(#[from] PacketError),
    #[error("failed to parse actions from userdata ({0})")]
    Actions(String),
    #[error("{0}")]
    Event(#[from] super::events::EventError),
    /// Bad input to a paused action, in the handler's words (the pipeline still resumes).
    #[error("{0}")]
    Malformed(String),
    #[error("{0}")]
    ResultBit(#[from] super::result_bit::ResultBitError),
    /// The handler panicked on this packet-in (a defect of ours): its message.
    #[error("handler panicked: {0}")]
    Panicked(String),
}

/// The parts of a packet-in every handler reads.
pub struct PacketIn<'a> {
    pub opcode: u32,
    /// The userdata after the 8-byte action header.
    pub payload: &'a [u8],
    pub packet: &'a [u8],
    pub regs: Registers,
    pub raw: &'a PacketIn2,
}

impl<'a> PacketIn<'a> {
    pub fn decode(pi: &'a PacketIn2) -> Result<Self, Skip> {
        let reason = pi.props.iter().find_map(|p| match p {
            PacketInProp::Reason(r) => Some(*r),
            _ => None,
        });
        if let Some(r) = reason.filter(|r| *r != OFPR_ACTION) {
            return Err(Skip::NotAction(r));
        }
        let userdata = pi.userdata().unwrap_or_default();
        let (Some(op), Some(payload)) = (userdata.get(..4), userdata.get(8..)) else {
            return Err(Skip::NoHeader);
        };
        Ok(Self {
            opcode: u32::from_be_bytes([op[0], op[1], op[2], op[3]]),
            payload,
            packet: pi.packet().unwrap_or_default(),
            regs: pi.metadata().map(Registers::from_match).unwrap_or_default(),
            raw: pi,
        })
    }
}

/// ovn-controller's debug line for a packet-in it acts on ("pinctrl received  packet-in |
/// opcode=ICMP4_ERROR| OF_Table_ID=..."), which operators and OVN's tests look for.
pub fn received_line(p: &PacketIn<'_>, h: &super::packet::Headers) -> String {
    use std::fmt::Write as _;
    let mut line = format!(
        "pinctrl received  packet-in | opcode={}",
        opcode::name(p.opcode).to_ascii_uppercase()
    );
    for prop in &p.raw.props {
        match prop {
            PacketInProp::TableId(t) => {
                let _ = write!(line, "| OF_Table_ID={t}");
            }
            PacketInProp::Cookie(c) => {
                let _ = write!(line, "| OF_Cookie_ID={c:#x}");
            }
            _ => {}
        }
    }
    let in_port = p.raw.metadata().and_then(|m| {
        m.fields
            .iter()
            .find(|f| f.field.known() == Some(FieldId::IN_PORT_OXM))
            .and_then(|f| <[u8; 4]>::try_from(f.value.as_slice()).ok())
            .map(u32::from_be_bytes)
    });
    if let Some(port) = in_port.filter(|p| *p != 0) {
        let _ = write!(line, "| in-port={port}");
    }
    let mac = |m: &[u8; 6]| super::packet::mac_text(m);
    let _ = write!(
        line,
        "| src-mac={}, dst-mac={}",
        mac(&h.eth_src),
        mac(&h.eth_dst)
    );
    if let super::packet::L3::Ipv4 { src, dst, .. } = h.l3 {
        let _ = write!(line, "| src-ip={src}, dst-ip={dst}");
    }
    line
}

/// A packet-out of `data` that runs `actions` as if the packet came from the controller
/// (`in_port=CONTROLLER`): every packet pinctrl generates goes out this way.
pub fn from_controller(actions: Vec<Action>, data: Vec<u8>) -> PacketOut {
    let mut r#match = Match::new();
    r#match.push(
        FieldId::IN_PORT_OXM,
        OFPP_CONTROLLER.to_be_bytes().to_vec(),
        None,
    );
    PacketOut {
        buffer_id: u32::MAX,
        r#match,
        actions,
        data,
    }
}

/// `MLF_LOCAL_ONLY` in the logical flags (reg10): the packet stays on this chassis.
pub const MLF_LOCAL_ONLY: u32 = 1 << 4;

/// Where a generated packet enters the logical pipeline: its datapath, the logical inport
/// (reg14) and outport (reg15) when set, whether it stays on this chassis, and the table.
#[derive(Clone, Copy, Debug, Default)]
pub struct Entry {
    pub datapath: u32,
    pub inport: Option<u32>,
    pub outport: Option<u32>,
    pub local_only: bool,
    pub table: u8,
}

/// A packet-out of `data` into the pipeline at `at`, from the controller.
pub fn into_pipeline(at: Entry, data: Vec<u8>) -> PacketOut {
    let mut actions = vec![Action::SetField(MatchField::new(
        FieldId::METADATA,
        u64::from(at.datapath).to_be_bytes().to_vec(),
        None,
    ))];
    for (reg, value) in [(14, at.inport), (15, at.outport)] {
        if let Some(v) = value {
            actions.push(Action::SetField(MatchField::new(
                FieldId::reg(reg),
                v.to_be_bytes().to_vec(),
                None,
            )));
        }
    }
    if at.local_only {
        let flag = MLF_LOCAL_ONLY.to_be_bytes().to_vec();
        actions.push(Action::SetField(MatchField::new(
            FieldId::reg(10),
            flag.clone(),
            Some(flag),
        )));
    }
    actions.push(Action::Resubmit {
        in_port: OFPP_CONTROLLER16,
        table: at.table,
        ct: false,
    });
    from_controller(actions, data)
}
