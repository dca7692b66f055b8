//! Actions in ovs-ofctl syntax (`ofpacts_format`).

use std::fmt::{self, Write as _};

use super::value::{fmt_port, fmt_value, put_hex, Ctx};
use crate::action::ct::{
    NX_CT_F_COMMIT, NX_CT_F_FORCE, NX_CT_RECIRC_NONE, NX_NAT_F_DST, NX_NAT_F_PERSISTENT,
    NX_NAT_F_PROTO_HASH, NX_NAT_F_PROTO_RANDOM, NX_NAT_F_SRC,
};
use crate::action::learn::{
    NX_LEARN_F_DELETE_LEARNED, NX_LEARN_F_SEND_FLOW_REM, NX_LEARN_F_WRITE_RESULT,
};
use crate::action::{
    Action, Bundle, Controller, Ct, Learn, LearnDst, LearnSrc, Nat, NatRange, SubField,
    NX_BD_ALG_ACTIVE_BACKUP, NX_BD_ALG_HRW, NX_HASH_FIELDS_NAMES,
};
use crate::oxm::FieldRef;

/// `NXM_NX_REG0[0..15]`.
pub fn fmt_subfield(s: &mut String, sf: SubField) {
    match sf.field.field() {
        Some(id) => s.push_str(id.def().nxm_name),
        None => {
            let _ = write!(s, "0x{:08x}", sf.field.raw());
        }
    }
    if sf.ofs == 0 && sf.n_bits == sf.field.n_bits() {
        s.push_str("[]");
    } else if sf.n_bits == 1 {
        let _ = write!(s, "[{}]", sf.ofs);
    } else {
        // Computed wide: decoded subfields may carry any 16-bit offset and width.
        let end = u32::from(sf.ofs) + u32::from(sf.n_bits).saturating_sub(1);
        let _ = write!(s, "[{}..{end}]", sf.ofs);
    }
}

/// Actions joined by commas; `drop` when empty.
pub fn format_actions(list: &[Action]) -> String {
    let mut s = String::new();
    put_actions(&mut s, list);
    s
}

pub(crate) fn put_actions(s: &mut String, list: &[Action]) {
    if list.is_empty() {
        s.push_str("drop");
        return;
    }
    for (i, a) in list.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        put_action(s, a);
    }
}

fn put_controller(s: &mut String, c: &Controller) {
    if c.reason == 1
        && c.controller_id == 0
        && c.userdata.is_empty()
        && !c.pause
        && c.meter_id == u32::MAX
    {
        let _ = write!(s, "CONTROLLER:{}", c.max_len);
        return;
    }
    let mut parts = Vec::new();
    if c.reason != 1 {
        let r = match c.reason {
            0 => "no_match".to_owned(),
            2 => "invalid_ttl".to_owned(),
            3 => "action_set".to_owned(),
            4 => "group".to_owned(),
            5 => "packet_out".to_owned(),
            n => n.to_string(),
        };
        parts.push(format!("reason={r}"));
    }
    if c.max_len != u16::MAX {
        parts.push(format!("max_len={}", c.max_len));
    }
    if c.controller_id != 0 {
        parts.push(format!("id={}", c.controller_id));
    }
    if !c.userdata.is_empty() {
        let hex: Vec<String> = c.userdata.iter().map(|b| format!("{b:02x}")).collect();
        parts.push(format!("userdata={}", hex.join(".")));
    }
    if c.pause {
        parts.push("pause".to_owned());
    }
    if c.meter_id != u32::MAX {
        parts.push(format!("meter_id={}", c.meter_id));
    }
    let _ = write!(s, "controller({})", parts.join(","));
}

fn put_nat(s: &mut String, n: &Nat) {
    s.push_str("nat");
    if n.flags & (NX_NAT_F_SRC | NX_NAT_F_DST) == 0 {
        return;
    }
    s.push('(');
    s.push_str(if n.flags & NX_NAT_F_SRC != 0 {
        "src"
    } else {
        "dst"
    });
    let bracket = n.proto_min.is_some();
    match &n.range {
        NatRange::None => {}
        NatRange::V4 { min, max } => {
            s.push('=');
            let lo = min.unwrap_or(std::net::Ipv4Addr::UNSPECIFIED);
            let _ = write!(s, "{lo}");
            if let Some(hi) = max.filter(|h| *h != lo && !h.is_unspecified()) {
                let _ = write!(s, "-{hi}");
            }
        }
        NatRange::V6 { min, max } => {
            s.push('=');
            let lo = min.unwrap_or(std::net::Ipv6Addr::UNSPECIFIED);
            let one = |s: &mut String, a: std::net::Ipv6Addr| {
                if bracket {
                    s.push('[');
                    super::value::fmt_ipv6(s, a);
                    s.push(']');
                } else {
                    super::value::fmt_ipv6(s, a);
                }
            };
            one(s, lo);
            if let Some(hi) = max.filter(|h| *h != lo && !h.is_unspecified()) {
                s.push('-');
                one(s, hi);
            }
        }
    }
    if !matches!(n.range, NatRange::None) || n.proto_min.is_some() {
        if let Some(p) = n.proto_min {
            let _ = write!(s, ":{p}");
            if let Some(q) = n.proto_max.filter(|q| *q != p && *q != 0) {
                let _ = write!(s, "-{q}");
            }
        }
    }
    for (bit, name) in [
        (NX_NAT_F_PERSISTENT, ",persistent"),
        (NX_NAT_F_PROTO_HASH, ",hash"),
        (NX_NAT_F_PROTO_RANDOM, ",random"),
    ] {
        if n.flags & bit != 0 {
            s.push_str(name);
        }
    }
    s.push(')');
}

fn put_ct(s: &mut String, c: &Ct) {
    let mut parts: Vec<String> = Vec::new();
    if c.flags & NX_CT_F_COMMIT != 0 {
        parts.push("commit".into());
    }
    if c.flags & NX_CT_F_FORCE != 0 {
        parts.push("force".into());
    }
    if c.recirc_table != NX_CT_RECIRC_NONE {
        parts.push(format!("table={}", c.recirc_table));
    }
    if let Some(z) = &c.zone_src {
        let mut t = String::from("zone=");
        fmt_subfield(&mut t, *z);
        parts.push(t);
    } else if c.zone_imm != 0 {
        parts.push(format!("zone={}", c.zone_imm));
    }
    let mut rest = c.actions.as_slice();
    if let Some(Action::Nat(n)) = rest.first() {
        let mut t = String::new();
        put_nat(&mut t, n);
        parts.push(t);
        rest = &rest[1..];
    }
    if !rest.is_empty() {
        let mut t = String::from("exec(");
        put_actions(&mut t, rest);
        t.push(')');
        parts.push(t);
    }
    match c.alg {
        0 => {}
        21 => parts.push("alg=ftp".into()),
        69 => parts.push("alg=tftp".into()),
        n => parts.push(format!("alg={n}")),
    }
    let _ = write!(s, "ct({})", parts.join(","));
}

fn put_learn(s: &mut String, l: &Learn) {
    let _ = write!(s, "learn(table={}", l.table_id);
    if l.idle_timeout != 0 {
        let _ = write!(s, ",idle_timeout={}", l.idle_timeout);
    }
    if l.hard_timeout != 0 {
        let _ = write!(s, ",hard_timeout={}", l.hard_timeout);
    }
    if l.fin_idle_timeout != 0 {
        let _ = write!(s, ",fin_idle_timeout={}", l.fin_idle_timeout);
    }
    if l.fin_hard_timeout != 0 {
        let _ = write!(s, ",fin_hard_timeout={}", l.fin_hard_timeout);
    }
    if l.priority != 0x8000 {
        let _ = write!(s, ",priority={}", l.priority);
    }
    if l.flags & NX_LEARN_F_SEND_FLOW_REM != 0 {
        s.push_str(",send_flow_rem");
    }
    if l.flags & NX_LEARN_F_DELETE_LEARNED != 0 {
        s.push_str(",delete_learned");
    }
    if l.cookie != 0 {
        let _ = write!(s, ",cookie={:#x}", l.cookie);
    }
    if l.limit != 0 {
        let _ = write!(s, ",limit={}", l.limit);
    }
    if let Some(r) = l
        .result_dst
        .filter(|_| l.flags & NX_LEARN_F_WRITE_RESULT != 0)
    {
        s.push_str(",result_dst=");
        fmt_subfield(s, r);
    }
    for spec in &l.specs {
        s.push(',');
        match (&spec.src, &spec.dst) {
            (LearnSrc::Immediate(v), LearnDst::Match(dst)) => match dst.field.field() {
                Some(id) if dst.ofs == 0 && dst.n_bits == id.def().n_bits => {
                    let d = id.def();
                    let mut full = vec![0u8; d.width.saturating_sub(v.len())];
                    full.extend_from_slice(v);
                    let _ = write!(s, "{}=", d.name);
                    fmt_value(s, d.kind, Ctx::SetField, &full, None);
                }
                _ => {
                    fmt_subfield(s, *dst);
                    s.push('=');
                    put_hex(s, v);
                }
            },
            (LearnSrc::Field(src), LearnDst::Match(dst)) => {
                fmt_subfield(s, *dst);
                if src.field != dst.field || src.ofs != dst.ofs {
                    s.push('=');
                    fmt_subfield(s, *src);
                }
            }
            (LearnSrc::Immediate(v), LearnDst::Load(dst)) => {
                s.push_str("load:");
                put_hex(s, v);
                s.push_str("->");
                fmt_subfield(s, *dst);
            }
            (LearnSrc::Field(src), LearnDst::Load(dst)) => {
                s.push_str("load:");
                fmt_subfield(s, *src);
                s.push_str("->");
                fmt_subfield(s, *dst);
            }
            (LearnSrc::Field(src), LearnDst::Output) => {
                s.push_str("output:");
                fmt_subfield(s, *src);
            }
            (LearnSrc::Immediate(v), LearnDst::Output) => {
                s.push_str("output:");
                put_hex(s, v);
            }
        }
    }
    s.push(')');
}

fn put_action(s: &mut String, a: &Action) {
    match a {
        Action::Output { port, max_len } => {
            let p16 = if *port >= 0xffff_ff00 {
                port - 0xffff_0000
            } else {
                *port
            };
            if p16 < 0xff00 {
                s.push_str("output:");
            }
            fmt_port(s, *port);
            if p16 == 0xfffd {
                let _ = write!(s, ":{max_len}");
            }
        }
        Action::Group(g) => {
            let _ = write!(s, "group:{g}");
        }
        Action::SetQueue(q) => {
            let _ = write!(s, "set_queue:{q}");
        }
        Action::Meter(m) => {
            let _ = write!(s, "meter:{m}");
        }
        Action::DecNwTtl => s.push_str("dec_ttl"),
        Action::DecTtl { ids } => {
            let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
            let _ = write!(s, "dec_ttl({})", ids.join(","));
        }
        Action::PushVlan(t) => {
            let _ = write!(s, "push_vlan:{t:#x}");
        }
        Action::PopVlan => s.push_str("pop_vlan"),
        Action::SetField(f) | Action::RegLoad2(f) => {
            s.push_str("set_field:");
            match f.field {
                FieldRef::Known(id) => {
                    let d = id.def();
                    fmt_value(
                        s,
                        d.kind,
                        Ctx::SetField,
                        &f.value,
                        // mf_format prints any mask, even one covering all field bits.
                        f.mask.as_deref(),
                    );
                    s.push_str("->");
                    s.push_str(d.name);
                }
                FieldRef::Unknown { class, field, .. } => {
                    put_hex(s, &f.value);
                    let _ = write!(s, "->oxm(0x{class:04x}:{field})");
                }
            }
        }
        Action::RegLoad { dst, value } => {
            let _ = write!(s, "load:{value:#x}->");
            fmt_subfield(s, *dst);
        }
        Action::Move { src, dst, .. } => {
            s.push_str("move:");
            fmt_subfield(s, *src);
            s.push_str("->");
            fmt_subfield(s, *dst);
        }
        Action::Resubmit { in_port, table, ct } => {
            if *in_port != 0xfff8 && *table == 255 && !ct {
                s.push_str("resubmit:");
                fmt_port(s, u32::from(*in_port));
            } else {
                s.push_str("resubmit(");
                if *in_port != 0xfff8 {
                    fmt_port(s, u32::from(*in_port));
                }
                s.push(',');
                if *table != 255 {
                    let _ = write!(s, "{table}");
                }
                if *ct {
                    s.push_str(",ct");
                }
                s.push(')');
            }
        }
        Action::StackPush(sf) => {
            s.push_str("push:");
            fmt_subfield(s, *sf);
        }
        Action::StackPop(sf) => {
            s.push_str("pop:");
            fmt_subfield(s, *sf);
        }
        Action::Conjunction {
            id,
            clause,
            n_clauses,
        } => {
            let _ = write!(
                s,
                "conjunction({id},{}/{n_clauses})",
                u16::from(*clause) + 1
            );
        }
        Action::Ct(c) => put_ct(s, c),
        Action::CtClear => s.push_str("ct_clear"),
        Action::Nat(n) => put_nat(s, n),
        Action::Learn(l) => put_learn(s, l),
        Action::Controller(c) => put_controller(s, c),
        Action::Clone(list) => {
            s.push_str("clone(");
            put_actions(s, list);
            s.push(')');
        }
        Action::Bundle(b) => put_bundle(s, b),
        Action::CheckPktLarger { pkt_len, dst } => {
            let _ = write!(s, "check_pkt_larger({pkt_len})->");
            fmt_subfield(s, *dst);
        }
        Action::Note(n) => {
            s.push_str("note:");
            let hex: Vec<String> = n.iter().map(|b| format!("{b:02x}")).collect();
            s.push_str(&hex.join("."));
        }
        Action::Sample {
            probability,
            collector_set_id,
            obs_domain_id,
            obs_point_id,
        } => {
            let _ = write!(
                s,
                "sample(probability={probability},collector_set_id={collector_set_id},obs_domain_id={obs_domain_id},obs_point_id={obs_point_id})"
            );
        }
        Action::Exit => s.push_str("exit"),
        Action::OutputReg { src, .. } => {
            s.push_str("output:");
            fmt_subfield(s, *src);
        }
        Action::OutputTrunc { port, max_len } => {
            s.push_str("output(port=");
            fmt_port(s, u32::from(*port));
            let _ = write!(s, ",max_len={max_len})");
        }
        Action::Unknown { ty, body } => {
            let _ = write!(s, "unknown_action(type={ty:#x},body=");
            put_hex(s, body);
            s.push(')');
        }
    }
}

/// `bundle(eth_src,0,active_backup,ofport,members:1,2)` (OVS `bundle_format`).
fn put_bundle(s: &mut String, b: &Bundle) {
    let fields = NX_HASH_FIELDS_NAMES
        .get(usize::from(b.fields))
        .copied()
        .unwrap_or("<unknown>");
    let algorithm = match b.algorithm {
        NX_BD_ALG_ACTIVE_BACKUP => "active_backup",
        NX_BD_ALG_HRW => "hrw",
        _ => "<unknown>",
    };
    let _ = write!(s, "bundle({fields},{},{algorithm},ofport,members:", b.basis);
    for (i, m) in b.members.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        // Members are 16-bit ports; reserved ones print by name like any port.
        let port = if *m >= 0xff00 {
            u32::from(*m) + 0xffff_0000
        } else {
            u32::from(*m)
        };
        fmt_port(s, port);
    }
    s.push(')');
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        put_action(&mut s, self);
        f.write_str(&s)
    }
}
