//! Action-list syntax tree and parser (OVN 23.03.1 action language).

use std::net::IpAddr;

use super::error::{semantic, LflowError, Result};
use super::expr::{NoSets, Parser};
use super::fields::MfField;
use super::lexer::{tokenize, IntFormat, Token};
use super::symtab::{symtab, OvnField, SymKind, WriteScope};

/// A field reference in an action: the symbol, its OVS field and bit range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldRef {
    pub symbol: String,
    pub field: MfField,
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
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LbBackend {
    pub addr: IpAddr,
    pub port: Option<u16>,
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
    CtNext,
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
    CtCommitNat,
    CtLb {
        mark: bool,
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
    },
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
    let toks = tokenize(input)?;
    let mut p = AParser {
        p: Parser {
            toks: &toks,
            i: 0,
            ctx: &NoSets,
            depth: 0,
        },
        opts,
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

struct AParser<'a> {
    p: Parser<'a>,
    opts: ParseOptions,
    prereqs: Vec<String>,
    scope: WriteScope,
}

const MAX_NESTING: usize = 32;

impl AParser<'_> {
    fn err(&self, msg: impl Into<String>) -> LflowError {
        LflowError::Syntax {
            pos: self.p.pos(),
            msg: msg.into(),
        }
    }

    fn list(&mut self, end: &Token) -> Result<Vec<Action>> {
        let mut out = Vec::new();
        while self.p.peek() != end {
            if self.p.peek() == &Token::End {
                return Err(self.err("unexpected end of input, expecting `}'"));
            }
            out.push(self.action()?);
            if self.p.peek() != &Token::Semicolon {
                return Err(self.err("Syntax error: expecting `;'"));
            }
            self.p.bump();
        }
        Ok(out)
    }

    fn nested(&mut self, scope: Option<WriteScope>, keep_prereqs: bool) -> Result<Vec<Action>> {
        self.p.depth += 1;
        if self.p.depth > MAX_NESTING {
            return Err(self.err("Nested actions too deep"));
        }
        self.p.expect(&Token::LCurly, "`{'")?;
        let saved_scope = self.scope;
        let saved_prereqs = self.prereqs.len();
        if let Some(s) = scope {
            self.scope = s;
        }
        let v = self.list(&Token::RCurly)?;
        self.p.bump();
        self.scope = saved_scope;
        if !keep_prereqs {
            self.prereqs.truncate(saved_prereqs);
        }
        self.p.depth -= 1;
        Ok(v)
    }

    fn field(&mut self) -> Result<FieldRef> {
        let pos = self.p.pos();
        let Token::Id(name) = self.p.bump() else {
            return Err(self.err("expecting field name"));
        };
        let t = symtab();
        let sym = t.get(&name).ok_or(LflowError::Syntax {
            pos,
            msg: format!("Syntax error at `{name}' expecting field name."),
        })?;
        if matches!(sym.kind, SymKind::Predicate(_)) {
            return semantic(format!(
                "Predicate symbol {name} used where lvalue required."
            ));
        }
        let (field, base) = match sym.kind {
            SymKind::Ovn(_) => (MfField::Reg(0), 0),
            _ => t
                .resolve(&name)
                .ok_or(LflowError::Semantic(format!("{name}: not a field")))?,
        };
        let (mut lo, mut w) = (0, sym.width);
        if self.p.peek() == &Token::LSquare {
            self.p.bump();
            lo = self.p.small_int()?;
            let hi = if self.p.peek() == &Token::Ellipsis {
                self.p.bump();
                self.p.small_int()?
            } else {
                lo
            };
            self.p.expect(&Token::RSquare, "`]'")?;
            if hi < lo || hi >= sym.width {
                return Err(LflowError::Syntax {
                    pos,
                    msg: format!("Invalid bit range for {name}"),
                });
            }
            w = hi - lo + 1;
        }
        if let Some(p) = &sym.prereqs {
            self.prereqs.push(p.clone());
        }
        // Prerequisites of parent symbols (e.g. vlan.pcp -> vlan.present).
        let mut cur = sym;
        while let SymKind::Subfield { parent, .. } = &cur.kind {
            let Some(ps) = t.get(parent) else { break };
            if let Some(p) = &ps.prereqs {
                self.prereqs.push(p.clone());
            }
            cur = ps;
        }
        Ok(FieldRef {
            symbol: name,
            field,
            ofs: base + lo,
            n_bits: w,
            is_string: sym.is_string(),
        })
    }

    fn check_writable(&self, f: &FieldRef) -> Result<()> {
        let Some(sym) = symtab().get(&f.symbol) else {
            return semantic("unknown field");
        };
        let ok = match sym.scope {
            WriteScope::ReadOnly => false,
            WriteScope::Default => {
                self.scope == WriteScope::Default || matches!(sym.kind, SymKind::Ovn(_))
            }
            WriteScope::CtCommit => self.scope == WriteScope::CtCommit,
        };
        if ok {
            Ok(())
        } else {
            semantic(format!("Field {} is not modifiable.", f.symbol))
        }
    }

    fn action(&mut self) -> Result<Action> {
        let pos = self.p.pos();
        let Token::Id(kw) = self.p.peek().clone() else {
            return Err(self.err("Syntax error: expecting action"));
        };
        if matches!(
            self.p.peek_at(1),
            Token::Equals | Token::Exchange | Token::LSquare | Token::Decrement
        ) {
            return self.assignment();
        }
        self.p.bump();
        let a = match kw.as_str() {
            "next" => self.next()?,
            "output" => Action::Output,
            "drop" => {
                return Err(LflowError::Syntax {
                    pos,
                    msg: "\"drop\" must be the only action".into(),
                })
            }
            "ct_next" => {
                self.prereqs.push("ip".into());
                Action::CtNext
            }
            "ct_commit" => {
                self.prereqs.push("ip".into());
                if self.p.peek() == &Token::LCurly {
                    Action::CtCommit(self.nested(Some(WriteScope::CtCommit), false)?)
                } else if self.p.peek() == &Token::LParen {
                    self.ct_commit_v1()?
                } else {
                    Action::CtCommit(vec![])
                }
            }
            "ct_dnat" | "ct_snat" | "ct_dnat_in_czone" | "ct_snat_in_czone" => {
                self.prereqs.push("ip".into());
                let kind = match kw.as_str() {
                    "ct_dnat" => CtNatKind::Dnat,
                    "ct_snat" => CtNatKind::Snat,
                    "ct_dnat_in_czone" => CtNatKind::DnatInCzone,
                    _ => CtNatKind::SnatInCzone,
                };
                self.ct_nat(kind)?
            }
            "ct_commit_nat" => {
                self.prereqs.push("ip".into());
                Action::CtCommitNat
            }
            "ct_lb" | "ct_lb_mark" => {
                self.prereqs.push("ip".into());
                self.ct_lb(kw == "ct_lb_mark")?
            }
            "ct_clear" => Action::CtClear,
            "ct_snat_to_vip" => Action::CtSnatToVip,
            "clone" => Action::Clone(self.nested(Some(WriteScope::Default), true)?),
            "arp" | "nd_na" | "nd_na_router" | "nd_ns" | "icmp4" | "icmp6" | "icmp4_error"
            | "icmp6_error" | "tcp_reset" | "sctp_abort" | "reject" => {
                let k = match kw.as_str() {
                    "arp" => NestedKind::Arp,
                    "nd_na" => NestedKind::NdNa,
                    "nd_na_router" => NestedKind::NdNaRouter,
                    "nd_ns" => NestedKind::NdNs,
                    "icmp4" => NestedKind::Icmp4,
                    "icmp6" => NestedKind::Icmp6,
                    "icmp4_error" => NestedKind::Icmp4Error,
                    "icmp6_error" => NestedKind::Icmp6Error,
                    "tcp_reset" => NestedKind::TcpReset,
                    "sctp_abort" => NestedKind::SctpAbort,
                    _ => NestedKind::Reject,
                };
                let inner = self.nested(None, k == NestedKind::Reject)?;
                if let Some(p) = k.prereq() {
                    self.prereqs.push(p.into());
                }
                Action::Nested(k, inner)
            }
            "get_arp" | "get_nd" => {
                let v6 = kw == "get_nd";
                let (port, ip) = self.two_fields()?;
                Action::GetArp { v6, port, ip }
            }
            "put_arp" | "put_nd" => {
                let v6 = kw == "put_nd";
                let args = self.field_args(3)?;
                let [port, ip, mac] = <[FieldRef; 3]>::try_from(args)
                    .map_err(|_| self.err("expecting 3 arguments"))?;
                Action::PutArp { v6, port, ip, mac }
            }
            "put_fdb" => {
                let (port, mac) = self.two_fields()?;
                Action::PutFdb { port, mac }
            }
            "push" | "pop" => {
                self.p.expect(&Token::LParen, "`('")?;
                let f = self.field()?;
                if kw == "pop" {
                    self.check_writable(&f)?;
                }
                self.p.expect(&Token::RParen, "`)'")?;
                if kw == "push" {
                    Action::Push(f)
                } else {
                    Action::Pop(f)
                }
            }
            "set_queue" => {
                self.p.expect(&Token::LParen, "`('")?;
                let q = self.int()?;
                self.p.expect(&Token::RParen, "`)'")?;
                if q > 0xf000 {
                    return Err(self.err("Queue ID must be in range 0..61440"));
                }
                Action::SetQueue(q as u16)
            }
            "set_meter" => {
                self.p.expect(&Token::LParen, "`('")?;
                let rate = self.int()? as u64;
                let burst = if self.p.peek() == &Token::Comma {
                    self.p.bump();
                    Some(self.int()? as u64)
                } else {
                    None
                };
                self.p.expect(&Token::RParen, "`)'")?;
                Action::SetMeter { rate, burst }
            }
            "log" => self.log()?,
            "igmp" => Action::Igmp,
            "bind_vport" => {
                self.p.expect(&Token::LParen, "`('")?;
                let Token::Str(vport) = self.p.bump() else {
                    return Err(self.err("expecting port name string"));
                };
                self.p.expect(&Token::Comma, "`,'")?;
                let port = self.field()?;
                self.p.expect(&Token::RParen, "`)'")?;
                Action::BindVport { vport, port }
            }
            "handle_svc_check" => {
                self.p.expect(&Token::LParen, "`('")?;
                let port = self.field()?;
                self.p.expect(&Token::RParen, "`)'")?;
                Action::HandleSvcCheck(port)
            }
            "handle_dhcpv6_reply" => Action::HandleDhcpv6Reply,
            "handle_bfd_msg" => {
                self.p.expect(&Token::LParen, "`('")?;
                self.p.expect(&Token::RParen, "`)'")?;
                Action::BfdMsg
            }
            "trigger_event" => self.trigger_event()?,
            "fwd_group" => self.fwd_group()?,
            "commit_ecmp_nh" => self.commit_ecmp_nh()?,
            "commit_lb_aff" => self.commit_lb_aff()?,
            "sample" => self.sample()?,
            _ => {
                return Err(LflowError::Syntax {
                    pos,
                    msg: format!("Syntax error at `{kw}' expecting action."),
                })
            }
        };
        Ok(a)
    }

    fn int(&mut self) -> Result<u128> {
        match self.p.bump() {
            Token::Int { value, .. } => Ok(value),
            _ => Err(self.err("expecting integer")),
        }
    }

    fn two_fields(&mut self) -> Result<(FieldRef, FieldRef)> {
        let v = self.field_args(2)?;
        let [a, b] = <[FieldRef; 2]>::try_from(v).map_err(|_| self.err("expecting 2 arguments"))?;
        Ok((a, b))
    }

    fn field_args(&mut self, n: usize) -> Result<Vec<FieldRef>> {
        self.p.expect(&Token::LParen, "`('")?;
        let mut v = Vec::new();
        for i in 0..n {
            if i > 0 {
                self.p.expect(&Token::Comma, "`,'")?;
            }
            v.push(self.field()?);
        }
        self.p.expect(&Token::RParen, "`)'")?;
        Ok(v)
    }

    fn next(&mut self) -> Result<Action> {
        let mut pipeline = self.opts.pipeline;
        let mut table = self.opts.table + 1;
        if self.p.peek() == &Token::LParen {
            self.p.bump();
            if let Token::Int { .. } = self.p.peek() {
                table = self.p.small_int()?;
            } else {
                loop {
                    let Token::Id(k) = self.p.bump() else {
                        return Err(self.err("expecting `pipeline' or `table'"));
                    };
                    self.p.expect(&Token::Equals, "`='")?;
                    match k.as_str() {
                        "pipeline" => {
                            pipeline = match self.p.bump() {
                                Token::Id(s) if s == "ingress" => Pipeline::Ingress,
                                Token::Id(s) if s == "egress" => Pipeline::Egress,
                                _ => return Err(self.err("expecting `ingress' or `egress'")),
                            };
                        }
                        "table" => table = self.p.small_int()?,
                        _ => return Err(self.err("expecting `pipeline' or `table'")),
                    }
                    if self.p.peek() == &Token::Comma {
                        self.p.bump();
                    } else {
                        break;
                    }
                }
            }
            self.p.expect(&Token::RParen, "`)'")?;
        }
        if table >= self.opts.n_tables {
            return Err(self.err(format!(
                "\"next\" action cannot advance beyond table {}.",
                self.opts.n_tables - 1
            )));
        }
        Ok(Action::Next { pipeline, table })
    }

    fn assignment(&mut self) -> Result<Action> {
        let dst = self.field()?;
        match self.p.bump() {
            Token::Decrement => {
                if dst.symbol != "ip.ttl" {
                    return Err(self.err("`--' is only supported for ip.ttl"));
                }
                self.prereqs.push("ip".into());
                Ok(Action::DecTtl)
            }
            Token::Exchange => {
                let src = self.field()?;
                self.check_writable(&dst)?;
                self.check_writable(&src)?;
                if dst.n_bits != src.n_bits || dst.is_string != src.is_string {
                    return semantic("Can't exchange fields of different widths or types.");
                }
                Ok(Action::Exchange { a: dst, b: src })
            }
            Token::Equals => self.assign_rhs(dst),
            _ => Err(self.err("expecting `=' or `<->'")),
        }
    }

    fn assign_rhs(&mut self, dst: FieldRef) -> Result<Action> {
        if let (Token::Id(f), Token::LParen) = (self.p.peek().clone(), self.p.peek_at(1).clone()) {
            if let Some(a) = self.result_function(&f, &dst)? {
                return Ok(a);
            }
        }
        self.check_writable(&dst)?;
        if let Some(SymKind::Ovn(of)) = symtab().get(&dst.symbol).map(|s| s.kind.clone()) {
            let v = self.int()?;
            return Ok(Action::OvnFieldLoad {
                field: of,
                value: v as u32,
            });
        }
        match self.p.peek().clone() {
            Token::Id(_) => {
                let src = self.field()?;
                if src.n_bits != dst.n_bits || src.is_string != dst.is_string {
                    return semantic(format!(
                        "Can't assign {}-bit value to {}-bit destination.",
                        src.n_bits, dst.n_bits
                    ));
                }
                Ok(Action::Move { dst, src })
            }
            Token::Str(s) => {
                self.p.bump();
                if !dst.is_string {
                    return semantic("String constant used with integer field.");
                }
                Ok(Action::Load {
                    dst,
                    value: Rhs::Str(s),
                })
            }
            Token::Int { value, format } => {
                self.p.bump();
                Self::check_const_width(&dst, value, None, format)?;
                Ok(Action::Load {
                    dst,
                    value: Rhs::Int { value, mask: None },
                })
            }
            Token::Masked {
                value,
                mask,
                format,
            } => {
                self.p.bump();
                Self::check_const_width(&dst, value, Some(mask), format)?;
                Ok(Action::Load {
                    dst,
                    value: Rhs::Int {
                        value,
                        mask: Some(mask),
                    },
                })
            }
            _ => Err(self.err("Syntax error: expecting constant or field")),
        }
    }

    fn check_const_width(
        dst: &FieldRef,
        value: u128,
        mask: Option<u128>,
        format: IntFormat,
    ) -> Result<()> {
        if dst.is_string {
            return semantic("Integer constant used with string field.");
        }
        let w = match mask {
            Some(m) => 128 - m.leading_zeros(),
            None => super::lexer::min_width(value, format),
        };
        let sym_w = symtab().get(&dst.symbol).map_or(dst.n_bits, |s| s.width);
        if w > sym_w {
            return semantic(format!(
                "{w}-bit constant is not compatible with {sym_w}-bit field {}.",
                dst.symbol
            ));
        }
        Ok(())
    }

    fn result_function(&mut self, f: &str, dst: &FieldRef) -> Result<Option<Action>> {
        let one_bit = |s: &Self| -> Result<()> {
            s.check_writable(dst)?;
            if dst.n_bits != 1 {
                return semantic(format!("{f}() result must be a 1-bit field"));
            }
            Ok(())
        };
        let simple = match f {
            "chk_lb_hairpin" => Some(ResultFn::ChkLbHairpin),
            "chk_lb_hairpin_reply" => Some(ResultFn::ChkLbHairpinReply),
            "check_in_port_sec" => Some(ResultFn::CheckInPortSec),
            "check_out_port_sec" => Some(ResultFn::CheckOutPortSec),
            "chk_ecmp_nh_mac" => Some(ResultFn::ChkEcmpNhMac),
            "chk_ecmp_nh" => Some(ResultFn::ChkEcmpNh),
            "chk_lb_aff" => Some(ResultFn::ChkLbAff),
            "dns_lookup" => Some(ResultFn::DnsLookup),
            _ => None,
        };
        if let Some(func) = simple {
            one_bit(self)?;
            self.p.bump();
            self.p.bump();
            self.p.expect(&Token::RParen, "`)'")?;
            if func == ResultFn::DnsLookup {
                self.prereqs.push("udp".into());
            }
            return Ok(Some(Action::Result {
                dst: dst.clone(),
                func,
            }));
        }
        let a = match f {
            "check_pkt_larger" => {
                one_bit(self)?;
                self.p.bump();
                self.p.bump();
                let len = self.int()?;
                self.p.expect(&Token::RParen, "`)'")?;
                Action::Result {
                    dst: dst.clone(),
                    func: ResultFn::CheckPktLarger(len as u16),
                }
            }
            "lookup_arp" | "lookup_nd" => {
                one_bit(self)?;
                self.p.bump();
                let args = self.field_args(3)?;
                let [port, ip, mac] = <[FieldRef; 3]>::try_from(args)
                    .map_err(|_| self.err("expecting 3 arguments"))?;
                Action::LookupArp {
                    v6: f == "lookup_nd",
                    dst: dst.clone(),
                    port,
                    ip,
                    mac,
                }
            }
            "lookup_arp_ip" | "lookup_nd_ip" => {
                one_bit(self)?;
                self.p.bump();
                let (port, ip) = self.two_fields()?;
                Action::LookupArpIp {
                    v6: f == "lookup_nd_ip",
                    dst: dst.clone(),
                    port,
                    ip,
                }
            }
            "lookup_fdb" => {
                one_bit(self)?;
                self.p.bump();
                let (port, mac) = self.two_fields()?;
                Action::LookupFdb {
                    dst: dst.clone(),
                    port,
                    mac,
                }
            }
            "get_fdb" => {
                self.check_writable(dst)?;
                self.p.bump();
                self.p.expect(&Token::LParen, "`('")?;
                let mac = self.field()?;
                self.p.expect(&Token::RParen, "`)'")?;
                Action::GetFdb {
                    dst: dst.clone(),
                    mac,
                }
            }
            "put_dhcp_opts" | "put_dhcpv6_opts" | "put_nd_ra_opts" => {
                one_bit(self)?;
                self.p.bump();
                let opts = self.opt_args()?;
                if f == "put_nd_ra_opts" {
                    self.prereqs.push("ip6".into());
                }
                Action::PutOpts {
                    dst: dst.clone(),
                    v6: f == "put_dhcpv6_opts",
                    ra: f == "put_nd_ra_opts",
                    opts,
                }
            }
            "select" => {
                self.check_writable(dst)?;
                self.p.bump();
                self.p.bump();
                let mut members = Vec::new();
                while self.p.peek() != &Token::RParen {
                    let v = self.int()?;
                    let w = if self.p.peek() == &Token::Equals {
                        self.p.bump();
                        self.int()?
                    } else {
                        100
                    };
                    if v > 0xffff || w == 0 || w > 0xffff {
                        return semantic("select() member or weight out of range");
                    }
                    members.push((v as u16, w as u16));
                    if self.p.peek() == &Token::Comma {
                        self.p.bump();
                    }
                }
                self.p.bump();
                if members.len() < 2 {
                    return semantic("select() must have at least 2 members");
                }
                Action::Select {
                    dst: dst.clone(),
                    members,
                }
            }
            _ => return Ok(None),
        };
        Ok(Some(a))
    }

    /// `(name = value[, ...])` where a value is a constant or `{set}`.
    fn opt_args(&mut self) -> Result<Vec<OptArg>> {
        self.p.expect(&Token::LParen, "`('")?;
        let mut out = Vec::new();
        while self.p.peek() != &Token::RParen {
            let Token::Id(name) = self.p.bump() else {
                return Err(self.err("expecting option name"));
            };
            self.p.expect(&Token::Equals, "`='")?;
            let mut values = Vec::new();
            // Values are constants or `{}` sets of constants, as in matches.
            let is_const =
                |t: &Token| matches!(t, Token::Str(_) | Token::Int { .. } | Token::Masked { .. });
            if self.p.peek() == &Token::LCurly {
                self.p.bump();
                while self.p.peek() != &Token::RCurly {
                    let t = self.p.bump();
                    if is_const(&t) {
                        values.push(t);
                    } else if t != Token::Comma {
                        return Err(self.err("Syntax error: expecting constant"));
                    }
                }
                self.p.bump();
            } else {
                let t = self.p.bump();
                if !is_const(&t) {
                    return Err(self.err("Syntax error: expecting constant"));
                }
                values.push(t);
            }
            out.push(OptArg { name, values });
            if self.p.peek() == &Token::Comma {
                self.p.bump();
            }
        }
        self.p.bump();
        Ok(out)
    }

    fn ct_commit_v1(&mut self) -> Result<Action> {
        self.p.bump();
        let (mut mark, mut label) = (None, None);
        while self.p.peek() != &Token::RParen {
            let Token::Id(k) = self.p.bump() else {
                return Err(self.err("expecting ct_mark or ct_label"));
            };
            self.p.expect(&Token::Equals, "`='")?;
            let vm = match self.p.bump() {
                Token::Int { value, .. } => (value, u128::MAX),
                Token::Masked { value, mask, .. } => (value, mask),
                _ => return Err(self.err("expecting integer")),
            };
            match k.as_str() {
                "ct_mark" => mark = Some((vm.0, vm.1 & 0xffff_ffff)),
                "ct_label" => label = Some(vm),
                _ => return Err(self.err("expecting ct_mark or ct_label")),
            }
            if self.p.peek() == &Token::Comma {
                self.p.bump();
            }
        }
        self.p.bump();
        Ok(Action::CtCommitV1 { mark, label })
    }

    fn ip_addr(&mut self) -> Result<IpAddr> {
        match self.p.bump() {
            Token::Int {
                value,
                format: IntFormat::Ipv4,
            } => Ok(IpAddr::V4((value as u32).into())),
            Token::Int {
                value,
                format: IntFormat::Ipv6,
            } => Ok(IpAddr::V6(value.into())),
            _ => Err(self.err("expecting IPv4 or IPv6 address")),
        }
    }

    fn ct_nat(&mut self, kind: CtNatKind) -> Result<Action> {
        let (mut addr, mut ports) = (None, None);
        if self.p.peek() == &Token::LParen {
            self.p.bump();
            addr = Some(self.ip_addr()?);
            if self.p.peek() == &Token::Comma {
                self.p.bump();
                let lo = self.int()? as u16;
                let hi = if self.p.peek() == &Token::Minus {
                    self.p.bump();
                    self.int()? as u16
                } else {
                    lo
                };
                if hi < lo {
                    return semantic("invalid port range");
                }
                ports = Some((lo, hi));
            }
            self.p.expect(&Token::RParen, "`)'")?;
        }
        Ok(Action::CtNat { kind, addr, ports })
    }

    fn ct_lb(&mut self, mark: bool) -> Result<Action> {
        let mut backends = Vec::new();
        let (mut hash_fields, mut flag) = (None, None);
        if self.p.peek() != &Token::LParen {
            return Ok(Action::CtLb {
                mark,
                backends,
                hash_fields,
                flag,
            });
        }
        self.p.bump();
        let legacy = !matches!(self.p.peek(), Token::Id(s) if s == "backends");
        if !legacy {
            self.p.bump();
            self.p.expect(&Token::Equals, "`='")?;
        }
        while !matches!(self.p.peek(), Token::RParen | Token::Semicolon) {
            let (addr, port) = if self.p.peek() == &Token::LSquare {
                self.p.bump();
                let a = self.ip_addr()?;
                self.p.expect(&Token::RSquare, "`]'")?;
                self.p.expect(&Token::Colon, "`:'")?;
                (a, Some(self.int()? as u16))
            } else {
                let a = self.ip_addr()?;
                let port = if self.p.peek() == &Token::Colon {
                    self.p.bump();
                    Some(self.int()? as u16)
                } else {
                    None
                };
                (a, port)
            };
            backends.push(LbBackend { addr, port });
            if self.p.peek() == &Token::Comma {
                self.p.bump();
            }
        }
        while self.p.peek() == &Token::Semicolon {
            self.p.bump();
            match self.p.bump() {
                Token::Id(k) if k == "hash_fields" => {
                    self.p.expect(&Token::Equals, "`='")?;
                    let Token::Str(s) = self.p.bump() else {
                        return Err(self.err("expecting string"));
                    };
                    hash_fields = Some(s);
                }
                Token::Id(k) if k == "skip_snat" || k == "force_snat" => flag = Some(k),
                _ => return Err(self.err("unexpected ct_lb option")),
            }
        }
        self.p.expect(&Token::RParen, "`)'")?;
        Ok(Action::CtLb {
            mark,
            backends,
            hash_fields,
            flag,
        })
    }

    fn kv_args(&mut self) -> Result<Vec<(String, Token)>> {
        self.p.expect(&Token::LParen, "`('")?;
        let mut out = Vec::new();
        while self.p.peek() != &Token::RParen {
            let Token::Id(k) = self.p.bump() else {
                return Err(self.err("expecting argument name"));
            };
            if self.p.peek() == &Token::Equals {
                self.p.bump();
                let v = self.p.bump();
                if v == Token::End {
                    return Err(self.err("unexpected end"));
                }
                out.push((k, v));
            } else {
                out.push((k, Token::End));
            }
            if self.p.peek() == &Token::Comma {
                self.p.bump();
            }
        }
        self.p.bump();
        Ok(out)
    }

    fn log(&mut self) -> Result<Action> {
        let (mut verdict, mut severity, mut name, mut meter) = (0u8, 6u8, None, None);
        for (k, v) in self.kv_args()? {
            match (k.as_str(), v) {
                ("verdict", Token::Id(s)) => {
                    verdict = match s.as_str() {
                        "allow" => 0,
                        "drop" => 1,
                        "reject" => 2,
                        _ => return semantic("unknown verdict"),
                    }
                }
                ("severity", Token::Id(s)) => {
                    severity = match s.as_str() {
                        "alert" => 1,
                        "warning" => 4,
                        "notice" => 5,
                        "info" => 6,
                        "debug" => 7,
                        _ => return semantic("unknown severity"),
                    }
                }
                ("name", Token::Str(s)) => name = Some(s),
                ("meter", Token::Str(s)) => meter = Some(s),
                _ => return semantic(format!("unexpected log argument {k}")),
            }
        }
        Ok(Action::Log {
            verdict,
            severity,
            name,
            meter,
        })
    }

    fn trigger_event(&mut self) -> Result<Action> {
        let mut event = None;
        let mut opts = Vec::new();
        for (k, v) in self.kv_args()? {
            let Token::Str(s) = v else {
                return semantic("trigger_event arguments must be strings");
            };
            if k == "event" {
                event = Some(s);
            } else {
                opts.push((k, s));
            }
        }
        let event = event.ok_or(LflowError::Semantic("trigger_event needs event".into()))?;
        Ok(Action::TriggerEvent { event, opts })
    }

    fn fwd_group(&mut self) -> Result<Action> {
        self.p.expect(&Token::LParen, "`('")?;
        let mut liveness = false;
        let mut ports = Vec::new();
        while self.p.peek() != &Token::RParen {
            match self.p.bump() {
                Token::Id(k) if k == "liveness" => {
                    self.p.expect(&Token::Equals, "`='")?;
                    liveness = matches!(self.p.bump(), Token::Id(v) if v == "true");
                }
                Token::Id(k) if k == "childports" => self.p.expect(&Token::Equals, "`='")?,
                Token::Str(s) => ports.push(s),
                Token::Comma => {}
                _ => return Err(self.err("unexpected fwd_group argument")),
            }
        }
        self.p.bump();
        Ok(Action::FwdGroup { liveness, ports })
    }

    fn commit_ecmp_nh(&mut self) -> Result<Action> {
        let (mut ipv6, mut proto) = (false, None);
        for (k, v) in self.kv_args()? {
            match (k.as_str(), v) {
                ("ipv6", Token::Id(s)) => ipv6 = s == "true",
                ("proto", Token::Id(s)) => proto = Some(s),
                _ => return semantic("bad commit_ecmp_nh argument"),
            }
        }
        let proto = proto.ok_or(LflowError::Semantic("commit_ecmp_nh needs proto".into()))?;
        Ok(Action::CommitEcmpNh { ipv6, proto })
    }

    fn commit_lb_aff(&mut self) -> Result<Action> {
        let (mut vip, mut backend, mut proto, mut timeout) = (None, None, None, 0);
        for (k, v) in self.kv_args()? {
            match (k.as_str(), v) {
                ("vip", Token::Str(s)) => vip = Some(s),
                ("backend", Token::Str(s)) => backend = Some(s),
                ("proto", Token::Id(s)) => proto = Some(s),
                ("timeout", Token::Int { value, .. }) => timeout = value as u32,
                _ => return semantic("bad commit_lb_aff argument"),
            }
        }
        let (Some(vip), Some(backend)) = (vip, backend) else {
            return semantic("commit_lb_aff needs vip and backend");
        };
        Ok(Action::CommitLbAff {
            vip,
            backend,
            proto,
            timeout,
        })
    }

    fn sample(&mut self) -> Result<Action> {
        let (mut probability, mut collector_set, mut obs_domain, mut obs_point) =
            (0u16, 0u32, 0u32, None);
        for (k, v) in self.kv_args()? {
            match (k.as_str(), v) {
                ("probability", Token::Int { value, .. }) => probability = value as u16,
                ("collector_set", Token::Int { value, .. }) => collector_set = value as u32,
                ("obs_domain", Token::Int { value, .. }) => obs_domain = value as u32,
                ("obs_point", Token::Int { value, .. }) => obs_point = Some(value as u32),
                ("obs_point", Token::Macro(m)) if m == "cookie" => obs_point = None,
                _ => return semantic("bad sample argument"),
            }
        }
        Ok(Action::Sample {
            probability,
            collector_set,
            obs_domain,
            obs_point,
        })
    }
}
