//! The action parser: statements, assignments, result functions.

use super::*;

pub(super) struct AParser<'a> {
    pub(super) p: Parser<'a>,
    pub(super) opts: ParseOptions,
    pub(super) dialect: &'static crate::lflow::dialect::Dialect,
    pub(super) prereqs: Vec<String>,
    pub(super) scope: WriteScope,
}

const MAX_NESTING: usize = 32;

impl AParser<'_> {
    pub(super) fn err(&self, msg: impl Into<String>) -> LflowError {
        LflowError::Syntax {
            pos: self.p.pos(),
            msg: msg.into(),
        }
    }

    pub(super) fn list(&mut self, end: &Token) -> Result<Vec<Action>> {
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

    pub(super) fn nested(
        &mut self,
        scope: Option<WriteScope>,
        keep_prereqs: bool,
    ) -> Result<Vec<Action>> {
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

    pub(super) fn field(&mut self) -> Result<FieldRef> {
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
            SymKind::Ovn(_) => (FieldId::reg(0), 0),
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

    pub(super) fn check_writable(&self, f: &FieldRef) -> Result<()> {
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

    pub(super) fn action(&mut self) -> Result<Action> {
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
                let snat_zone =
                    if self.p.peek() == &Token::LParen && self.dialect.has_action("ct_next(") {
                        self.zone_arg("ct_next")?
                    } else {
                        false
                    };
                Action::CtNext { snat_zone }
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
                let snat_zone = if self.p.peek() == &Token::LParen
                    && self.dialect.has_action("ct_commit_nat(")
                {
                    self.zone_arg("ct_commit_nat")?
                } else {
                    false
                };
                Action::CtCommitZone {
                    snat_zone,
                    nat: true,
                }
            }
            "ct_commit_to_zone" if self.dialect.has_action("ct_commit_to_zone") => {
                self.prereqs.push("ip".into());
                if self.p.peek() != &Token::LParen {
                    return Err(self.err("Syntax error: expecting `('"));
                }
                Action::CtCommitZone {
                    snat_zone: self.zone_arg("ct_commit_to_zone")?,
                    nat: false,
                }
            }
            "mac_cache_use" if self.dialect.has_action("mac_cache_use") => Action::MacCacheUse,
            "ct_lb" | "ct_lb_mark" => {
                self.prereqs.push("ip".into());
                self.ct_lb(kw == "ct_lb_mark", false)?
            }
            "ct_lb_mark_local" if self.dialect.has_action("ct_lb_mark_local") => {
                self.prereqs.push("ip".into());
                self.ct_lb(true, true)?
            }
            "mirror" if self.dialect.has_action("mirror") => {
                self.p.expect(&Token::LParen, "`('")?;
                let Token::Str(port) = self.p.bump() else {
                    return Err(self.err("Syntax error: expecting port name string"));
                };
                self.p.expect(&Token::RParen, "`)'")?;
                Action::Mirror(port)
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
                if let Some(p) = self.dialect.nested_prereq(k.opcode()).or(k.prereq()) {
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
                if rate == 0 {
                    return semantic("Rate 0 for set_meter is not valid.");
                }
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

    pub(super) fn int(&mut self) -> Result<u128> {
        match self.p.bump() {
            Token::Int { value, .. } => Ok(value),
            _ => Err(self.err("expecting integer")),
        }
    }

    pub(super) fn two_fields(&mut self) -> Result<(FieldRef, FieldRef)> {
        let v = self.field_args(2)?;
        let [a, b] = <[FieldRef; 2]>::try_from(v).map_err(|_| self.err("expecting 2 arguments"))?;
        Ok((a, b))
    }

    pub(super) fn field_args(&mut self, n: usize) -> Result<Vec<FieldRef>> {
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

    pub(super) fn next(&mut self) -> Result<Action> {
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

    pub(super) fn assignment(&mut self) -> Result<Action> {
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

    pub(super) fn assign_rhs(&mut self, dst: FieldRef) -> Result<Action> {
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

    pub(super) fn check_const_width(
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
            None => crate::lflow::lexer::min_width(value, format),
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

    /// `(dnat)` or `(snat)` after `name`: whether it names the SNAT zone.
    fn zone_arg(&mut self, name: &str) -> Result<bool> {
        self.p.expect(&Token::LParen, "`('")?;
        let snat = match self.p.bump() {
            Token::Id(z) if z == "dnat" => false,
            Token::Id(z) if z == "snat" => true,
            _ => {
                return Err(self.err(format!(
                    "\"{name}\" action accepts only \"dnat\" or \"snat\" parameter."
                )))
            }
        };
        self.p.expect(&Token::RParen, "`)'")?;
        Ok(snat)
    }

    pub(super) fn result_function(&mut self, f: &str, dst: &FieldRef) -> Result<Option<Action>> {
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
        let orig_dst = match f {
            "ct_nw_dst" => Some((ResultFn::CtOrigNwDst, 32)),
            "ct_ip6_dst" => Some((ResultFn::CtOrigIp6Dst, 128)),
            "ct_tp_dst" => Some((ResultFn::CtOrigTpDst, 16)),
            "ct_proto" => Some((ResultFn::CtOrigProto, 8)),
            "ct_state_save" => Some((ResultFn::CtStateSave, 8)),
            _ => None,
        };
        if let Some((func, bits)) = orig_dst.filter(|_| self.dialect.has_action(f)) {
            self.check_writable(dst)?;
            if dst.n_bits != bits {
                return semantic(format!("{f}() result must be a {bits}-bit field"));
            }
            self.p.bump();
            self.p.bump();
            self.p.expect(&Token::RParen, "`)'")?;
            return Ok(Some(Action::Result {
                dst: dst.clone(),
                func,
            }));
        }
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
            "get_fdb" | "get_remote_fdb" if f == "get_fdb" || self.dialect.has_action(f) => {
                self.check_writable(dst)?;
                self.p.bump();
                self.p.expect(&Token::LParen, "`('")?;
                let mac = self.field()?;
                self.p.expect(&Token::RParen, "`)'")?;
                Action::GetFdb {
                    dst: dst.clone(),
                    mac,
                    remote: f == "get_remote_fdb",
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
}
