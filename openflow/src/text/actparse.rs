//! Parsing actions (and instructions) from ovs-ofctl syntax.

use std::net::{Ipv4Addr, Ipv6Addr};

use super::value::{parse_int_bytes, parse_port, parse_port16, parse_u128, parse_value};
use super::{call, split_top, ParseError};
use crate::action::ct::{
    NX_CT_F_COMMIT, NX_CT_F_FORCE, NX_NAT_F_DST, NX_NAT_F_PERSISTENT, NX_NAT_F_PROTO_HASH,
    NX_NAT_F_PROTO_RANDOM, NX_NAT_F_SRC,
};
use crate::action::learn::{
    NX_LEARN_F_DELETE_LEARNED, NX_LEARN_F_SEND_FLOW_REM, NX_LEARN_F_WRITE_RESULT,
};
use crate::action::{
    Action, Bundle, Controller, Ct, HeaderRef, Learn, LearnDst, LearnSpec, LearnSrc, Nat, NatRange,
    SubField, NX_BD_ALG_ACTIVE_BACKUP, NX_BD_ALG_HRW, NX_HASH_FIELDS_NAMES, OFPP_CONTROLLER,
};
use crate::oxm::{FieldId, MatchField};
use crate::wire::Instruction;

fn bad(t: &str) -> ParseError {
    ParseError::BadValue(t.to_owned())
}

fn num<T: TryFrom<u128>>(t: &str) -> Result<T, ParseError> {
    T::try_from(parse_u128(t.trim())?).map_err(|_| bad(t))
}

/// `NAME[]`, `NAME[N]`, `NAME[a..b]` or bare `NAME`; NAME is an NXM/OXM or field name.
pub fn parse_subfield(t: &str) -> Result<SubField, ParseError> {
    let t = t.trim();
    let (name, range) = match t.find('[') {
        Some(i) => (
            &t[..i],
            Some(t[i + 1..].strip_suffix(']').ok_or_else(|| bad(t))?),
        ),
        None => (t, None),
    };
    let id = FieldId::by_nxm_name(name)
        .or_else(|| FieldId::by_name(name))
        .ok_or_else(|| ParseError::UnknownField(name.to_owned()))?;
    let total = id.def().n_bits;
    let (ofs, n_bits) = match range {
        None | Some("") => (0, total),
        Some(r) => match r.split_once("..") {
            Some((a, b)) => {
                let a: u16 = num(a)?;
                let b: u16 = num(b)?;
                if b < a {
                    return Err(bad(t));
                }
                (a, b - a + 1)
            }
            None => (num(r)?, 1),
        },
    };
    if u32::from(ofs) + u32::from(n_bits) > u32::from(total) {
        return Err(bad(t));
    }
    Ok(SubField {
        field: HeaderRef::nxm(id),
        ofs,
        n_bits,
    })
}

fn field_def_of(sf: SubField) -> Result<FieldId, ParseError> {
    match sf.field.field() {
        Some(id) => Ok(id),
        None => Err(ParseError::UnknownField("raw header".into())),
    }
}

/// `load:V->SUBFIELD` as OF1.5 sends it: a (masked) set_field.
fn load_as_set_field(v: &str, dst: &str) -> Result<Action, ParseError> {
    let sf = parse_subfield(dst)?;
    let id = field_def_of(sf)?;
    let d = id.def();
    let value = parse_u128(v)?;
    let width = d.width;
    let total = u32::from(d.n_bits);
    if sf.n_bits < 128 && value >> sf.n_bits != 0 {
        return Err(bad(v));
    }
    let to_bytes = |x: u128| super::value::from_u128(x, width);
    // Values wider than 128 bits (long tun_metadata) are not loadable from text.
    let shift = u32::from(sf.ofs);
    let shifted = value
        .checked_shl(shift)
        .filter(|_| shift < 128)
        .ok_or_else(|| bad(dst))?;
    let ones: u128 = if sf.n_bits >= 128 {
        u128::MAX
    } else {
        (1u128 << sf.n_bits) - 1
    };
    if u32::from(sf.n_bits) + shift > 128 {
        return Err(bad(dst));
    }
    let mask = ones << shift;
    let full = sf.ofs == 0 && u32::from(sf.n_bits) == total;
    Ok(Action::SetField(MatchField::new(
        id,
        to_bytes(shifted),
        (!full).then(|| to_bytes(mask)),
    )))
}

fn parse_set_field(arg: &str) -> Result<Action, ParseError> {
    let (v, f) = arg.rsplit_once("->").ok_or_else(|| bad(arg))?;
    let id = FieldId::by_name(f.trim()).ok_or_else(|| ParseError::UnknownField(f.to_owned()))?;
    let d = id.def();
    let width = if d.name.starts_with("tun_metadata") {
        4
    } else {
        d.width
    };
    let (value, mask) = parse_value(d.kind, width, v)?;
    Ok(Action::SetField(MatchField::new(id, value, mask)))
}

fn parse_controller(args: &str) -> Result<Controller, ParseError> {
    let mut c = Controller::default();
    for a in split_top(args) {
        let (k, v) = a.split_once('=').unwrap_or((a, ""));
        match k {
            "max_len" => c.max_len = num(v)?,
            "id" => c.controller_id = num(v)?,
            "reason" => {
                c.reason = match v {
                    "no_match" => 0,
                    "action" => 1,
                    "invalid_ttl" => 2,
                    "action_set" => 3,
                    "group" => 4,
                    "packet_out" => 5,
                    _ => return Err(bad(v)),
                }
            }
            "userdata" => {
                c.userdata = v
                    .split('.')
                    .map(|x| u8::from_str_radix(x, 16).map_err(|_| bad(x)))
                    .collect::<Result<_, _>>()?;
            }
            "pause" => c.pause = true,
            "meter_id" => c.meter_id = num(v)?,
            _ => return Err(bad(a)),
        }
    }
    Ok(c)
}

fn parse_nat(args: Option<&str>) -> Result<Nat, ParseError> {
    let mut n = Nat {
        flags: 0,
        range: NatRange::None,
        proto_min: None,
        proto_max: None,
    };
    let Some(args) = args else {
        return Ok(n);
    };
    for a in split_top(args) {
        let (k, v) = a.split_once('=').map_or((a, None), |(k, v)| (k, Some(v)));
        match k {
            "src" | "dst" => {
                n.flags |= if k == "src" {
                    NX_NAT_F_SRC
                } else {
                    NX_NAT_F_DST
                };
                if let Some(v) = v {
                    parse_nat_range(&mut n, v)?;
                }
            }
            "persistent" => n.flags |= NX_NAT_F_PERSISTENT,
            "hash" => n.flags |= NX_NAT_F_PROTO_HASH,
            "random" => n.flags |= NX_NAT_F_PROTO_RANDOM,
            _ => return Err(bad(a)),
        }
    }
    Ok(n)
}

fn parse_nat_range(n: &mut Nat, v: &str) -> Result<(), ParseError> {
    // Forms: A, A-B, A:P, A-B:P-Q, [V6]:P, [V6]-[V6]:P
    let (addrs, ports) = if v.starts_with('[') {
        match v.rfind("]:") {
            Some(i) => (&v[..=i], Some(&v[i + 2..])),
            None => (v, None),
        }
    } else if v.contains('.') || !v.contains(':') {
        match v.split_once(':') {
            Some((a, p)) => (a, Some(p)),
            None => (v, None),
        }
    } else {
        (v, None)
    };
    let (lo, hi) = match addrs.split_once('-') {
        Some((a, b)) => (a, Some(b)),
        None => (addrs, None),
    };
    let strip = |x: &str| x.trim_start_matches('[').trim_end_matches(']').to_owned();
    if lo.contains(':') || lo.starts_with('[') {
        let p = |x: &str| strip(x).parse::<Ipv6Addr>().map_err(|_| bad(x));
        n.range = NatRange::V6 {
            min: Some(p(lo)?),
            max: hi.map(p).transpose()?,
        };
    } else {
        let p = |x: &str| x.parse::<Ipv4Addr>().map_err(|_| bad(x));
        n.range = NatRange::V4 {
            min: Some(p(lo)?),
            max: hi.map(p).transpose()?,
        };
    }
    if let Some(ports) = ports {
        let (a, b) = match ports.split_once('-') {
            Some((a, b)) => (a, Some(b)),
            None => (ports, None),
        };
        n.proto_min = Some(num(a)?);
        n.proto_max = b.map(num).transpose()?;
    }
    Ok(())
}

fn parse_ct(args: &str) -> Result<Ct, ParseError> {
    let mut c = Ct::default();
    for a in split_top(args) {
        if a == "commit" {
            c.flags |= NX_CT_F_COMMIT;
        } else if a == "force" {
            c.flags |= NX_CT_F_FORCE;
        } else if let Some(t) = a.strip_prefix("table=") {
            c.recirc_table = num(t)?;
        } else if let Some(z) = a.strip_prefix("zone=") {
            if z.starts_with(|ch: char| ch.is_ascii_digit()) {
                c.zone_imm = num(z)?;
            } else {
                c.zone_src = Some(parse_subfield(z)?);
            }
        } else if a == "nat" {
            c.actions.push(Action::Nat(parse_nat(None)?));
        } else if let Some(n) = call(a, "nat") {
            c.actions.push(Action::Nat(parse_nat(Some(n))?));
        } else if let Some(e) = call(a, "exec") {
            c.actions.extend(parse_actions(e)?);
        } else if let Some(alg) = a.strip_prefix("alg=") {
            c.alg = match alg {
                "ftp" => 21,
                "tftp" => 69,
                n => num(n)?,
            };
        } else {
            return Err(bad(a));
        }
    }
    Ok(c)
}

fn imm_bytes(v: &str, n_bits: u16) -> Result<Vec<u8>, ParseError> {
    parse_int_bytes(v, (n_bits as usize).div_ceil(8))
}

fn parse_learn(args: &str) -> Result<Learn, ParseError> {
    let mut l = Learn::default();
    for a in split_top(args) {
        let kv = a.split_once('=');
        match kv {
            Some(("table", v)) => l.table_id = num(v)?,
            Some(("idle_timeout", v)) => l.idle_timeout = num(v)?,
            Some(("hard_timeout", v)) => l.hard_timeout = num(v)?,
            Some(("fin_idle_timeout", v)) => l.fin_idle_timeout = num(v)?,
            Some(("fin_hard_timeout", v)) => l.fin_hard_timeout = num(v)?,
            Some(("priority", v)) => l.priority = num(v)?,
            Some(("cookie", v)) => l.cookie = num(v)?,
            Some(("limit", v)) => l.limit = num(v)?,
            Some(("result_dst", v)) => {
                let r = parse_subfield(v)?;
                if r.n_bits != 1 {
                    return Err(bad(a));
                }
                l.result_dst = Some(r);
                l.flags |= NX_LEARN_F_WRITE_RESULT;
            }
            _ if a == "send_flow_rem" => l.flags |= NX_LEARN_F_SEND_FLOW_REM,
            _ if a == "delete_learned" => l.flags |= NX_LEARN_F_DELETE_LEARNED,
            _ => l.specs.push(parse_learn_spec(a)?),
        }
    }
    Ok(l)
}

fn parse_learn_spec(a: &str) -> Result<LearnSpec, ParseError> {
    if let Some(rest) = a.strip_prefix("load:") {
        let (src, dst) = rest.split_once("->").ok_or_else(|| bad(a))?;
        let dst = parse_subfield(dst)?;
        let src = if src.starts_with(|c: char| c.is_ascii_digit()) {
            LearnSrc::Immediate(imm_bytes(src, dst.n_bits)?)
        } else {
            LearnSrc::Field(parse_subfield(src)?)
        };
        return Ok(LearnSpec {
            n_bits: dst.n_bits,
            src,
            dst: LearnDst::Load(dst),
        });
    }
    if let Some(rest) = a.strip_prefix("output:") {
        let src = parse_subfield(rest)?;
        return Ok(LearnSpec {
            n_bits: src.n_bits,
            src: LearnSrc::Field(src),
            dst: LearnDst::Output,
        });
    }
    match a.split_once('=') {
        None => {
            let sf = parse_subfield(a)?;
            Ok(LearnSpec {
                n_bits: sf.n_bits,
                src: LearnSrc::Field(sf),
                dst: LearnDst::Match(sf),
            })
        }
        Some((k, v)) => {
            let dst = parse_subfield(k)?;
            let field_src = v
                .starts_with(|c: char| c.is_ascii_alphabetic())
                .then(|| parse_subfield(v).ok())
                .flatten();
            let src = if let Some(sf) = field_src {
                LearnSrc::Field(sf)
            } else if k.contains('[') {
                LearnSrc::Immediate(imm_bytes(v, dst.n_bits)?)
            } else {
                let d = field_def_of(dst)?.def();
                let (val, mask) = parse_value(d.kind, d.width, v)?;
                if mask.is_some() {
                    return Err(bad(a));
                }
                let keep = (dst.n_bits as usize).div_ceil(8);
                LearnSrc::Immediate(val[val.len().saturating_sub(keep)..].to_vec())
            };
            Ok(LearnSpec {
                n_bits: dst.n_bits,
                src,
                dst: LearnDst::Match(dst),
            })
        }
    }
}

fn parse_resubmit(args: &str) -> Result<Action, ParseError> {
    let parts = split_top(args);
    let port = parts.first().copied().unwrap_or("");
    let table = parts.get(1).copied().unwrap_or("");
    let ct = match parts.get(2).copied() {
        None => false,
        Some("ct") => true,
        Some(x) => return Err(bad(x)),
    };
    Ok(Action::Resubmit {
        in_port: if port.is_empty() {
            0xfff8
        } else {
            parse_port16(port)?
        },
        table: if table.is_empty() { 255 } else { num(table)? },
        ct,
    })
}

fn output_port(p: u32) -> u32 {
    if (0xff00..=0xffff).contains(&p) {
        p | 0xffff_0000
    } else {
        p
    }
}

/// Parse one action.
pub fn parse_action(t: &str) -> Result<Action, ParseError> {
    let t = t.trim();
    let (head, arg) = match t.split_once(':') {
        Some((h, a)) if !h.contains('(') => (h, Some(a)),
        _ => (t, None),
    };
    let a = match (head, arg) {
        ("output", Some(p)) if p.contains('[') => Action::OutputReg {
            src: parse_subfield(p)?,
            max_len: 0,
        },
        ("output", Some(p)) => Action::Output {
            port: output_port(parse_port(p)?),
            max_len: 0,
        },
        // As in OVS, a plain `controller:N` is an output to the CONTROLLER port.
        ("CONTROLLER" | "controller", Some(n)) => Action::Output {
            port: OFPP_CONTROLLER,
            max_len: num(n)?,
        },
        ("resubmit", Some(p)) => Action::Resubmit {
            in_port: parse_port16(p)?,
            table: 255,
            ct: false,
        },
        ("group", Some(g)) => Action::Group(num(g)?),
        ("meter", Some(m)) => Action::Meter(num(m)?),
        ("set_queue", Some(q)) => Action::SetQueue(num(q)?),
        ("push_vlan", Some(e)) => Action::PushVlan(num(e)?),
        ("set_field", Some(x)) => parse_set_field(x)?,
        ("load", Some(x)) => {
            let (v, d) = x.split_once("->").ok_or_else(|| bad(t))?;
            load_as_set_field(v, d)?
        }
        ("move", Some(x)) => {
            let (s, d) = x.split_once("->").ok_or_else(|| bad(t))?;
            let (src, dst) = (parse_subfield(s)?, parse_subfield(d)?);
            if src.n_bits != dst.n_bits {
                return Err(bad(t));
            }
            // OF1.5 copy_field names both fields by their OXM headers, as OVS does.
            Action::Move {
                src: src.with_oxm_header(),
                dst: dst.with_oxm_header(),
                nx: false,
            }
        }
        ("push", Some(x)) => Action::StackPush(parse_subfield(x)?),
        ("pop", Some(x)) => Action::StackPop(parse_subfield(x)?),
        ("note", Some(x)) => Action::Note(
            x.split('.')
                .filter(|p| !p.is_empty())
                .map(|p| u8::from_str_radix(p, 16).map_err(|_| bad(p)))
                .collect::<Result<_, _>>()?,
        ),
        ("pop_vlan", None) => Action::PopVlan,
        ("strip_vlan", None) => Action::PopVlan,
        ("dec_ttl", None) => Action::DecNwTtl,
        ("ct_clear", None) => Action::CtClear,
        ("exit", None) => Action::Exit,
        ("controller" | "CONTROLLER", None) => Action::Controller(Controller::default()),
        ("IN_PORT" | "LOCAL" | "NORMAL" | "FLOOD" | "ALL" | "TABLE", None) => Action::Output {
            port: output_port(parse_port(head)?),
            max_len: 0,
        },
        _ => return parse_call(t),
    };
    Ok(a)
}

fn parse_call(t: &str) -> Result<Action, ParseError> {
    if let Some(x) = call(t, "output") {
        let (mut port, mut max_len) = (None, None);
        for kv in split_top(x) {
            match kv.split_once('=') {
                Some(("port", v)) => port = Some(parse_port16(v)?),
                Some(("max_len", v)) => max_len = Some(num(v)?),
                _ => return Err(bad(kv)),
            }
        }
        return match (port, max_len) {
            (Some(port), Some(max_len)) => Ok(Action::OutputTrunc { port, max_len }),
            _ => Err(bad(t)),
        };
    }
    if let Some(x) = call(t, "resubmit") {
        return parse_resubmit(x);
    }
    if let Some(x) = call(t, "ct") {
        return Ok(Action::Ct(parse_ct(x)?));
    }
    if let Some(x) = call(t, "learn") {
        return Ok(Action::Learn(parse_learn(x)?));
    }
    if let Some(x) = call(t, "controller") {
        return Ok(Action::Controller(parse_controller(x)?));
    }
    if let Some(x) = call(t, "bundle") {
        return parse_bundle(x).map(Action::Bundle);
    }
    if let Some(x) = call(t, "clone") {
        return Ok(Action::Clone(parse_actions(x)?));
    }
    if let Some(x) = call(t, "dec_ttl") {
        let ids = split_top(x)
            .into_iter()
            .map(num)
            .collect::<Result<Vec<u16>, _>>()?;
        return Ok(Action::DecTtl { ids });
    }
    if let Some(x) = call(t, "conjunction") {
        let (id, rest) = x.split_once(',').ok_or_else(|| bad(t))?;
        let (k, n) = rest.split_once('/').ok_or_else(|| bad(t))?;
        let k: u8 = num(k)?;
        let n: u8 = num(n)?;
        if k == 0 || k > n || n > 64 {
            return Err(bad(t));
        }
        return Ok(Action::Conjunction {
            id: num(id)?,
            clause: k - 1,
            n_clauses: n,
        });
    }
    if let Some(x) = call(t, "sample") {
        let mut a = (0u16, 0u32, 0u32, 0u32);
        for kv in split_top(x) {
            match kv.split_once('=') {
                Some(("probability", v)) => a.0 = num(v)?,
                Some(("collector_set_id", v)) => a.1 = num(v)?,
                Some(("obs_domain_id", v)) => a.2 = num(v)?,
                Some(("obs_point_id", v)) => a.3 = num(v)?,
                _ => return Err(bad(kv)),
            }
        }
        return Ok(Action::Sample {
            probability: a.0,
            collector_set_id: a.1,
            obs_domain_id: a.2,
            obs_point_id: a.3,
        });
    }
    if let Some(rest) = t.strip_prefix("check_pkt_larger(") {
        let (n, dst) = rest.split_once(")->").ok_or_else(|| bad(t))?;
        let dst = parse_subfield(dst)?;
        if dst.n_bits != 1 {
            return Err(bad(t));
        }
        return Ok(Action::CheckPktLarger {
            pkt_len: num(n)?,
            dst,
        });
    }
    if t.chars().all(|c| c.is_ascii_digit()) && !t.is_empty() {
        return Ok(Action::Output {
            port: num(t)?,
            max_len: 0,
        });
    }
    Err(ParseError::UnknownAction(t.to_owned()))
}

/// `fields,basis,algorithm,ofport,members:P[,P...]` (the inside of `bundle(...)`).
fn parse_bundle(x: &str) -> Result<Bundle, ParseError> {
    let parts = split_top(x);
    let [fields, basis, algorithm, member_type, first, more @ ..] = parts.as_slice() else {
        return Err(bad(x));
    };
    let fields = NX_HASH_FIELDS_NAMES
        .iter()
        .position(|n| *n == fields.trim())
        .ok_or_else(|| bad(fields))?;
    let algorithm = match algorithm.trim() {
        "active_backup" => NX_BD_ALG_ACTIVE_BACKUP,
        "hrw" => NX_BD_ALG_HRW,
        other => return Err(bad(other)),
    };
    if member_type.trim() != "ofport" {
        return Err(bad(member_type));
    }
    let first = first
        .trim()
        .strip_prefix("members:")
        .or_else(|| first.trim().strip_prefix("slaves:"))
        .ok_or_else(|| bad(first))?;
    let members = std::iter::once(first)
        .chain(more.iter().copied())
        .map(|p| parse_port16(p.trim()))
        .collect::<Result<Vec<u16>, _>>()?;
    Ok(Bundle {
        algorithm,
        fields: fields as u16,
        basis: num(basis)?,
        members,
    })
}

/// Parse an action list (`drop` or empty = no actions).
pub fn parse_actions(s: &str) -> Result<Vec<Action>, ParseError> {
    let s = s.trim();
    if s.is_empty() || s == "drop" {
        return Ok(Vec::new());
    }
    split_top(s).into_iter().map(parse_action).collect()
}

/// Parse the `actions=` part of a flow into instructions (apply-actions first).
pub fn parse_instructions(s: &str) -> Result<Vec<Instruction>, ParseError> {
    let s = s.trim();
    let mut apply = Vec::new();
    let mut rest = Vec::new();
    if !(s.is_empty() || s == "drop") {
        for t in split_top(s) {
            let t = t.trim();
            if let Some(v) = t.strip_prefix("goto_table:") {
                rest.push(Instruction::GotoTable(num(v)?));
            } else if let Some(v) = t.strip_prefix("write_metadata:") {
                let (a, b) = v.split_once('/').unwrap_or((v, "0xffffffffffffffff"));
                rest.push(Instruction::WriteMetadata {
                    value: num(a)?,
                    mask: num(b)?,
                });
            } else if t == "clear_actions" {
                rest.push(Instruction::ClearActions);
            } else if let Some(x) = call(t, "write_actions") {
                rest.push(Instruction::WriteActions(parse_actions(x)?));
            } else {
                apply.push(parse_action(t)?);
            }
        }
    }
    let mut out = Vec::new();
    if !apply.is_empty() {
        out.push(Instruction::ApplyActions(apply));
    }
    out.extend(rest);
    Ok(out)
}
