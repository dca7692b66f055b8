//! Action-list syntax tree and parser (OVN 23.03.1 action language).

mod args;
mod parser;

use std::net::IpAddr;

use crate::lflow::error::{semantic, LflowError, Result};
use crate::lflow::expr::{NoSets, Parser};
use crate::lflow::lexer::{tokenize, IntFormat, Token};
use crate::lflow::of::FieldId;
use crate::lflow::symtab::{symtab, OvnField, SymKind, WriteScope};

use parser::AParser;

/// A field reference in an action: the symbol, its OVS field and bit range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldRef {
    pub symbol: String,
    pub field: FieldId,
    pub ofs: u32,
    pub n_bits: u32,
    pub is_string: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pipeline {
    Ingress,
    Egress,
}

/// Right-hand side of `=`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rhs {
    Int { value: u128, mask: Option<u128> },
    Str(String),
    Field(FieldRef),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NestedKind {
    Arp,
    NdNa,
    NdNaRouter,
    NdNs,
    Icmp4,
    Icmp6,
    Icmp4Error,
    Icmp6Error,
    TcpReset,
    SctpAbort,
    Reject,
}

impl NestedKind {
    pub fn opcode(self) -> u32 {
        match self {
            Self::Arp => 0,
            Self::NdNa => 3,
            Self::NdNs => 9,
            Self::Icmp4 | Self::Icmp6 => 10,
            Self::TcpReset => 11,
            Self::NdNaRouter => 12,
            Self::Icmp4Error => 14,
            Self::Icmp6Error => 20,
            Self::Reject => 22,
            Self::SctpAbort => 24,
        }
    }

    /// The match prerequisite the action adds.
    pub fn prereq(self) -> Option<&'static str> {
        match self {
            Self::Arp | Self::Icmp4 | Self::Icmp4Error => Some("ip4"),
            Self::Icmp6 | Self::Icmp6Error | Self::NdNs => Some("ip6"),
            Self::NdNa | Self::NdNaRouter => Some("nd_ns"),
            Self::TcpReset => Some("tcp"),
            Self::SctpAbort => Some("sctp"),
            Self::Reject => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CtNatKind {
    Dnat,
    Snat,
    DnatInCzone,
    SnatInCzone,
}

/// Options of `put_dhcp_opts`, `put_dhcpv6_opts`, `put_nd_ra_opts`, `trigger_event`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptArg {
    pub name: String,
    pub values: Vec<Token>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResultFn {
    CheckPktLarger(u16),
    ChkLbHairpin,
    ChkLbHairpinReply,
    CheckInPortSec,
    CheckOutPortSec,
    ChkEcmpNhMac,
    ChkEcmpNh,
    ChkLbAff,
    DnsLookup,
    /// `ct_nw_dst()`, `ct_ip6_dst()`, `ct_tp_dst()` (25.03): the connection's original
    /// destination address or port.
    CtOrigNwDst,
    CtOrigIp6Dst,
    CtOrigTpDst,
    /// `ct_proto()` (26.03): the connection's original IP protocol.
    CtOrigProto,
    /// `ct_state_save()` (26.03): the conntrack state, kept for later stages.
    CtStateSave,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LbBackend {
    pub addr: IpAddr,
    pub port: Option<u16>,
    /// The logical port behind the backend (`ct_lb_mark_local`, 26.03): a bucket only when
    /// that port is bound here.
    pub logical_port: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    Next {
        pipeline: Pipeline,
        table: u32,
    },
    Output,
    Load {
        dst: FieldRef,
        value: Rhs,
    },
    Move {
        dst: FieldRef,
        src: FieldRef,
    },
    Exchange {
        a: FieldRef,
        b: FieldRef,
    },
    Push(FieldRef),
    Pop(FieldRef),
    DecTtl,
    /// `ct_next`; `(snat)` (25.03) uses a router's SNAT zone.
    CtNext {
        snat_zone: bool,
    },
    CtCommit(Vec<Action>),
    CtCommitV1 {
        mark: Option<(u128, u128)>,
        label: Option<(u128, u128)>,
    },
    CtNat {
        kind: CtNatKind,
        addr: Option<IpAddr>,
        ports: Option<(u16, u16)>,
    },
    /// `ct_commit_nat`, `ct_commit_to_zone` (25.03): commit in the zone `(dnat)`/`(snat)`
    /// names on a router, with NAT or not.
    CtCommitZone {
        snat_zone: bool,
        nat: bool,
    },
    /// `mac_cache_use` (25.03).
    MacCacheUse,
    CtLb {
        mark: bool,
        /// `ct_lb_mark_local` (26.03): only the backends bound to this chassis.
        local: bool,
        backends: Vec<LbBackend>,
        hash_fields: Option<String>,
        flag: Option<String>,
    },
    CtClear,
    CtSnatToVip,
    Clone(Vec<Action>),
    Nested(NestedKind, Vec<Action>),
    OvnFieldLoad {
        field: OvnField,
        value: u32,
    },
    Result {
        dst: FieldRef,
        func: ResultFn,
    },
    PutOpts {
        dst: FieldRef,
        v6: bool,
        ra: bool,
        opts: Vec<OptArg>,
    },
    GetArp {
        v6: bool,
        port: FieldRef,
        ip: FieldRef,
    },
    PutArp {
        v6: bool,
        port: FieldRef,
        ip: FieldRef,
        mac: FieldRef,
    },
    LookupArp {
        v6: bool,
        dst: FieldRef,
        port: FieldRef,
        ip: FieldRef,
        mac: FieldRef,
    },
    LookupArpIp {
        v6: bool,
        dst: FieldRef,
        port: FieldRef,
        ip: FieldRef,
    },
    GetFdb {
        dst: FieldRef,
        mac: FieldRef,
        /// `get_remote_fdb` (26.03): the FDB of remote VTEPs, through `remote_outport`.
        remote: bool,
    },
    /// `mirror("port")` (26.03): a copy of the packet to the mirror's logical port.
    Mirror(String),
    LookupFdb {
        dst: FieldRef,
        port: FieldRef,
        mac: FieldRef,
    },
    PutFdb {
        port: FieldRef,
        mac: FieldRef,
    },
    Select {
        dst: FieldRef,
        members: Vec<(u16, u16)>,
    },
    SetQueue(u16),
    SetMeter {
        rate: u64,
        burst: Option<u64>,
    },
    Log {
        verdict: u8,
        severity: u8,
        name: Option<String>,
        meter: Option<String>,
    },
    TriggerEvent {
        event: String,
        opts: Vec<(String, String)>,
    },
    Igmp,
    BindVport {
        vport: String,
        port: FieldRef,
    },
    HandleSvcCheck(FieldRef),
    HandleDhcpv6Reply,
    BfdMsg,
    FwdGroup {
        liveness: bool,
        ports: Vec<String>,
    },
    CommitEcmpNh {
        ipv6: bool,
        proto: String,
    },
    CommitLbAff {
        vip: String,
        backend: String,
        proto: Option<String>,
        timeout: u32,
    },
    Sample {
        probability: u16,
        collector_set: u32,
        obs_domain: u32,
        obs_point: Option<u32>,
    },
}

/// Parse options that depend on the lflow.
#[derive(Clone, Copy, Debug)]
pub struct ParseOptions {
    pub pipeline: Pipeline,
    pub table: u32,
    pub n_tables: u32,
}

/// A parsed action list and the match prerequisites it adds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedActions {
    pub actions: Vec<Action>,
    pub prereqs: Vec<String>,
}

/// Parses an action list.
pub fn parse_actions(input: &str, opts: ParseOptions) -> Result<ParsedActions> {
    parse_actions_in(input, opts, &super::dialect::OVN_23_03)
}

/// [`parse_actions`] in the language of `dialect`'s release.
pub fn parse_actions_in(
    input: &str,
    opts: ParseOptions,
    dialect: &'static super::dialect::Dialect,
) -> Result<ParsedActions> {
    let toks = tokenize(input)?;
    let mut p = AParser {
        p: Parser {
            toks: &toks,
            i: 0,
            ctx: &NoSets,
            depth: 0,
        },
        opts,
        dialect,
        prereqs: Vec::new(),
        scope: WriteScope::Default,
    };
    if p.p.peek() == &Token::End {
        return Ok(ParsedActions {
            actions: vec![],
            prereqs: vec![],
        });
    }
    if p.p.peek() == &Token::Id("drop".into()) && p.p.peek_at(1) == &Token::Semicolon {
        p.p.bump();
        p.p.bump();
        if p.p.peek() != &Token::End {
            return Err(p.p.err("\"drop\" must be the only action"));
        }
        return Ok(ParsedActions {
            actions: vec![],
            prereqs: vec![],
        });
    }
    let actions = p.list(&Token::End)?;
    Ok(ParsedActions {
        actions,
        prereqs: p.prereqs,
    })
}
