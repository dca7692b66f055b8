//! Groups in `ovs-ofctl dump-groups` / `add-group` syntax.

use std::fmt::Write as _;

use std::fmt;
use std::str::FromStr;

use super::actfmt::put_actions;
use super::actparse::parse_actions;
use super::value::{fmt_port, fmt_value, parse_port, parse_uint, parse_value, Ctx};
use super::{split_top, ParseError};
use crate::oxm::{FieldId, FieldRef, MatchField};
use crate::wire::group_mod::{OFPGT_ALL, OFPGT_FF, OFPGT_INDIRECT, OFPGT_SELECT};
use crate::wire::{Bucket, Group};

fn type_name(t: u8) -> String {
    match t {
        OFPGT_ALL => "all".into(),
        OFPGT_SELECT => "select".into(),
        OFPGT_INDIRECT => "indirect".into(),
        OFPGT_FF => "ff".into(),
        n => format!("{n}"),
    }
}

fn fmt_fields(s: &mut String, fields: &[MatchField]) {
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        match f.field {
            FieldRef::Known(id) => {
                let d = id.def();
                s.push_str(d.name);
                if let Some(m) = &f.mask {
                    s.push('=');
                    fmt_value(s, d.kind, Ctx::SetField, m, None);
                }
            }
            FieldRef::Unknown { class, field, .. } => {
                let _ = write!(s, "oxm(0x{class:04x}:{field})");
            }
        }
    }
}

impl fmt::Display for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = format!(
            "group_id={},type={}",
            self.group_id,
            type_name(self.group_type)
        );
        if !self.selection_method.is_empty() {
            let _ = write!(s, ",selection_method={}", self.selection_method);
            if self.selection_method_param != 0 {
                let _ = write!(s, ",selection_method_param={}", self.selection_method_param);
            }
            match self.fields.len() {
                0 => {}
                1 => {
                    s.push_str(",fields=");
                    fmt_fields(&mut s, &self.fields);
                }
                _ => {
                    s.push_str(",fields(");
                    fmt_fields(&mut s, &self.fields);
                    s.push(')');
                }
            }
        }
        let default_weight = u16::from(self.group_type == OFPGT_SELECT);
        for b in &self.buckets {
            let _ = write!(s, ",bucket=bucket_id:{},", b.bucket_id);
            let w = b.weight.unwrap_or(default_weight);
            if w != default_weight {
                let _ = write!(s, "weight:{w},");
            }
            if let Some(p) = b.watch_port.filter(|p| *p != u32::MAX) {
                s.push_str("watch_port:");
                fmt_port(&mut s, p);
                s.push(',');
            }
            if let Some(g) = b.watch_group.filter(|g| *g != u32::MAX) {
                let _ = write!(s, "watch_group:{g},");
            }
            s.push_str("actions=");
            put_actions(&mut s, &b.actions);
        }
        f.write_str(&s)
    }
}

fn parse_fields(list: &str) -> Result<Vec<MatchField>, ParseError> {
    let mut out = Vec::new();
    for item in split_top(list) {
        let (name, mask) = match item.split_once('=') {
            Some((n, m)) => (n, Some(m)),
            None => (item, None),
        };
        let id = FieldId::by_name(name).ok_or_else(|| ParseError::UnknownField(name.into()))?;
        let d = id.def();
        let mask = mask
            .map(|m| parse_value(d.kind, d.width, m).map(|(v, _)| v))
            .transpose()?;
        out.push(MatchField::new(id, Vec::new(), mask));
    }
    Ok(out)
}

fn parse_bucket(text: &str, index: u32, select: bool) -> Result<Bucket, ParseError> {
    let mut b = Bucket {
        bucket_id: index,
        ..Bucket::default()
    };
    let mut rest = text;
    loop {
        let rest_trim = rest.trim_start_matches(',');
        if let Some(a) = rest_trim.strip_prefix("actions=") {
            b.actions = parse_actions(a)?;
            break;
        }
        let (item, tail) = rest_trim.split_once(',').unwrap_or((rest_trim, ""));
        let (k, v) = item
            .split_once([':', '='])
            .ok_or_else(|| ParseError::Syntax(format!("bucket item `{item}`")))?;
        match k {
            "bucket_id" => b.bucket_id = parse_uint("bucket_id", v)?,
            "weight" => b.weight = Some(parse_uint("weight", v)?),
            "watch_port" => b.watch_port = Some(parse_port(v)?),
            "watch_group" => b.watch_group = Some(parse_uint("watch_group", v)?),
            _ => {
                // ovs-ofctl also accepts bare actions in a bucket.
                b.actions = parse_actions(rest_trim)?;
                break;
            }
        }
        if tail.is_empty() {
            break;
        }
        rest = tail;
    }
    if select && b.weight.is_none() {
        b.weight = Some(1);
    }
    Ok(b)
}

impl FromStr for Group {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        let s = s.trim();
        let mut parts = s.split(",bucket=");
        let head = parts.next().unwrap_or("");
        let mut g = Group::default();
        for item in split_top(head) {
            let item = item.trim();
            if let Some(f) = item
                .strip_prefix("fields(")
                .and_then(|x| x.strip_suffix(')'))
            {
                g.fields = parse_fields(f)?;
                continue;
            }
            let (k, v) = item.split_once('=').unwrap_or((item, ""));
            match k {
                "group_id" => g.group_id = parse_uint("group_id", v)?,
                "type" => {
                    g.group_type = match v {
                        "all" => OFPGT_ALL,
                        "select" => OFPGT_SELECT,
                        "indirect" => OFPGT_INDIRECT,
                        "ff" | "fast_failover" => OFPGT_FF,
                        _ => return Err(ParseError::BadValue(v.into())),
                    }
                }
                "selection_method" => v.clone_into(&mut g.selection_method),
                "selection_method_param" => {
                    g.selection_method_param = parse_uint("selection_method_param", v)?;
                }
                "fields" => g.fields = parse_fields(v)?,
                "" => {}
                _ => return Err(ParseError::UnknownField(k.to_owned())),
            }
        }
        for (i, b) in parts.enumerate() {
            g.buckets
                .push(parse_bucket(b, i as u32, g.group_type == OFPGT_SELECT)?);
        }
        Ok(g)
    }
}
