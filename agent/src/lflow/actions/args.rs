//! Argument lists of the actions that take options (ct_*, log, events, groups, learn).

use super::*;

impl AParser<'_> {
    /// `(name = value[, ...])` where a value is a constant or `{set}`.
    pub(super) fn opt_args(&mut self) -> Result<Vec<OptArg>> {
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

    pub(super) fn ct_commit_v1(&mut self) -> Result<Action> {
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

    pub(super) fn ip_addr(&mut self) -> Result<IpAddr> {
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

    pub(super) fn ct_nat(&mut self, kind: CtNatKind) -> Result<Action> {
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

    pub(super) fn ct_lb(&mut self, mark: bool, local: bool) -> Result<Action> {
        let mut backends = Vec::new();
        let (mut hash_fields, mut flag) = (None, None);
        if self.p.peek() != &Token::LParen {
            return Ok(Action::CtLb {
                mark,
                local,
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
            let logical_port = if local {
                let Token::Str(name) = self.p.bump() else {
                    return Err(self.err(
                        "Syntax error: expecting logical port name for distributed load balancer",
                    ));
                };
                self.p.expect(&Token::Colon, "`:'")?;
                Some(name)
            } else {
                None
            };
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
            backends.push(LbBackend {
                addr,
                port,
                logical_port,
            });
            if self.p.peek() == &Token::Comma {
                self.p.bump();
            }
        }
        // 23.03.1's order: `[; hash_fields="…"][; skip_snat|force_snat]` (the other order is
        // a syntax error on the real controller too: observed).
        if self.p.peek() == &Token::Semicolon {
            self.p.bump();
            if matches!(self.p.peek(), Token::Id(k) if k == "hash_fields") {
                self.p.bump();
                self.p.expect(&Token::Equals, "`='")?;
                let Token::Str(s) = self.p.bump() else {
                    return Err(self.err("expecting string"));
                };
                hash_fields = Some(s);
                if self.p.peek() == &Token::Semicolon {
                    self.p.bump();
                    flag = Some(self.lb_flag()?);
                }
            } else {
                flag = Some(self.lb_flag()?);
            }
        }
        self.p.expect(&Token::RParen, "`)'")?;
        Ok(Action::CtLb {
            mark,
            local,
            backends,
            hash_fields,
            flag,
        })
    }

    fn lb_flag(&mut self) -> Result<String> {
        match self.p.bump() {
            Token::Id(k) if k == "skip_snat" || k == "force_snat" => Ok(k),
            _ => Err(self.err("expecting `skip_snat' or `force_snat'")),
        }
    }

    pub(super) fn kv_args(&mut self) -> Result<Vec<(String, Token)>> {
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

    pub(super) fn log(&mut self) -> Result<Action> {
        let (mut verdict, mut severity, mut name, mut meter) = (None, 6u8, None, None);
        for (k, v) in self.kv_args()? {
            match (k.as_str(), v) {
                ("verdict", Token::Id(s)) => {
                    verdict = Some(match s.as_str() {
                        "allow" => 0,
                        "drop" => 1,
                        "reject" => 2,
                        _ => return semantic("unknown verdict"),
                    });
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
                // The name travels in datapath actions; OVN caps it below 64 bytes.
                ("name", Token::Str(s)) if s.len() < 64 => name = Some(s),
                ("name", Token::Str(_)) => {
                    return semantic("name must be shorter than 64 characters")
                }
                ("meter", Token::Str(s)) => meter = Some(s),
                _ => return semantic(format!("unexpected log argument {k}")),
            }
        }
        let Some(verdict) = verdict else {
            return semantic("log: expecting verdict");
        };
        Ok(Action::Log {
            verdict,
            severity,
            name,
            meter,
        })
    }

    pub(super) fn trigger_event(&mut self) -> Result<Action> {
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

    pub(super) fn fwd_group(&mut self) -> Result<Action> {
        self.p.expect(&Token::LParen, "`('")?;
        let mut liveness = false;
        let mut ports = Vec::new();
        while self.p.peek() != &Token::RParen {
            match self.p.bump() {
                Token::Id(k) if k == "liveness" => {
                    self.p.expect(&Token::Equals, "`='")?;
                    // `true`/`false`, quoted (as northd writes it) or not.
                    liveness = match self.p.bump() {
                        Token::Id(v) | Token::Str(v) if v == "true" => true,
                        Token::Id(v) | Token::Str(v) if v == "false" => false,
                        _ => return Err(self.err("expecting true or false")),
                    };
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

    pub(super) fn commit_ecmp_nh(&mut self) -> Result<Action> {
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

    pub(super) fn commit_lb_aff(&mut self) -> Result<Action> {
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

    pub(super) fn sample(&mut self) -> Result<Action> {
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
