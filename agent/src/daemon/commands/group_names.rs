//! The names `group-table-list` prints: each group as ovn-controller spells it when it asks
//! for the group (its `ct_lb`/`ct_lb_mark`, `select` and `fwd_group` encodings), which is not
//! `ovs-ofctl`'s order or number base (`ct(nat(dst=..),commit,table=N,zone=..,exec(
//! set_field:2/2->ct_mark))`). A group of another form is printed as `ovs-ofctl` prints it.

use std::fmt::Write as _;

use openflow::action::{Action, Ct};
use openflow::oxm::{FieldRef, MatchField};
use openflow::wire::{Bucket, Group};

/// ovn-controller's name for `g`, or `None` when it is of no form OVN asks for.
pub fn ovn_group_name(g: &Group) -> Option<String> {
    let mut s = format!("type=select,selection_method={}", g.selection_method);
    if g.selection_method == "hash" {
        let names: Vec<&str> = g.fields.iter().filter_map(field_name).collect();
        let _ = write!(s, ",fields({})", names.join(","));
    }
    if g.selection_method_param != 0 {
        let _ = write!(s, ",selection_method_param={:#x}", g.selection_method_param);
    }
    let fwd_group = g.selection_method_param == 0 && g.buckets.iter().all(is_outport_load);
    for b in &g.buckets {
        if let [Action::Ct(ct)] = b.actions.as_slice() {
            let _ = write!(
                s,
                ",bucket=bucket_id={},weight:{},actions=",
                b.bucket_id,
                b.weight.unwrap_or(1)
            );
            put_ct_lb(&mut s, ct)?;
        } else if fwd_group {
            let l = load_and_resubmit(b)?;
            s.push_str(",bucket=");
            if let Some(p) = b.watch_port {
                let _ = write!(s, "watch_port:{p},");
            }
            // OVN writes the decimal key after "0x".
            let _ = write!(
                s,
                "load=0x{}->NXM_NX_REG15[0..15],resubmit(,{})",
                l.value, l.table
            );
        } else {
            let l = load_and_resubmit(b)?;
            let _ = write!(
                s,
                ",bucket=bucket_id={},weight:{},actions=load:{}->{}[{}..{}],resubmit(,{})",
                b.bucket_id,
                b.weight.unwrap_or(1),
                l.value,
                l.field,
                l.ofs,
                l.ofs + l.n_bits - 1,
                l.table
            );
        }
    }
    Some(s)
}

/// `ct(nat(dst=..),commit,table=N,zone=..,exec(set_field:V/M->F,..))`.
fn put_ct_lb(s: &mut String, ct: &Ct) -> Option<()> {
    let [Action::Nat(_), exec @ ..] = ct.actions.as_slice() else {
        return None;
    };
    s.push_str("ct(");
    s.push_str(&openflow::text::format_actions(&ct.actions[..1]));
    let _ = write!(s, ",commit,table={},zone=", ct.recirc_table);
    let zone = ct.zone_src?;
    let _ = write!(
        s,
        "{}[{}..{}]",
        zone.field.field()?.def().nxm_name,
        zone.ofs,
        zone.ofs + zone.n_bits.saturating_sub(1)
    );
    s.push_str(",exec(");
    for (i, a) in exec.iter().enumerate() {
        let Action::SetField(f) = a else { return None };
        let (v, m) = (int(&f.value), int(f.mask.as_deref().unwrap_or(&f.value)));
        if i > 0 {
            s.push(',');
        }
        let _ = write!(s, "set_field:{v}/{m}->{}", field_name(f)?);
    }
    s.push_str("))");
    Some(())
}

fn is_outport_load(b: &Bucket) -> bool {
    load_and_resubmit(b).is_some_and(|l| l.field == "reg15" && l.ofs == 0 && l.n_bits == 16)
}

/// A bucket that writes `value` to bits `ofs..ofs+n_bits` of `field`, then resubmits to
/// `table`.
struct LoadResubmit {
    field: &'static str,
    ofs: u32,
    n_bits: u32,
    value: u128,
    table: u8,
}

fn load_and_resubmit(b: &Bucket) -> Option<LoadResubmit> {
    let [Action::SetField(f), Action::Resubmit { table, .. }] = b.actions.as_slice() else {
        return None;
    };
    let mask = int(f.mask.as_deref()?);
    if mask == 0 {
        return None;
    }
    let ofs = mask.trailing_zeros();
    Some(LoadResubmit {
        field: field_name(f)?,
        ofs,
        n_bits: mask.count_ones(),
        value: int(&f.value) >> ofs,
        table: *table,
    })
}

fn field_name(f: &MatchField) -> Option<&'static str> {
    match f.field {
        FieldRef::Known(id) => Some(id.def().name),
        _ => None,
    }
}

fn int(bytes: &[u8]) -> u128 {
    bytes
        .iter()
        .rev()
        .take(16)
        .rev()
        .fold(0, |acc, b| (acc << 8) | u128::from(*b))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What ovn-controller 23.03.1 prints for a `ct_lb_mark` of two backends (actions.c's
    /// encode_ct_lb spelling) and the same group as `dump-groups` shows it.
    #[test]
    fn ct_lb_mark_as_ovn_controller_names_it() {
        let dumped = "type=select,selection_method=dp_hash,bucket=bucket_id:0,weight:100,actions=ct(commit,table=15,zone=NXM_NX_REG13[0..15],nat(dst=10.0.0.3:80),exec(set_field:0x2/0x2->ct_mark)),bucket=bucket_id:1,weight:100,actions=ct(commit,table=15,zone=NXM_NX_REG13[0..15],nat(dst=10.0.1.2:80),exec(set_field:0x2/0x2->ct_mark))";
        let g: Group = format!("group_id=1,{dumped}").parse().unwrap();
        assert_eq!(
            ovn_group_name(&crate::view::group_key_of(&g)).unwrap(),
            "type=select,selection_method=dp_hash,bucket=bucket_id=0,weight:100,actions=ct(nat(dst=10.0.0.3:80),commit,table=15,zone=NXM_NX_REG13[0..15],exec(set_field:2/2->ct_mark)),bucket=bucket_id=1,weight:100,actions=ct(nat(dst=10.0.1.2:80),commit,table=15,zone=NXM_NX_REG13[0..15],exec(set_field:2/2->ct_mark))"
        );
    }

    /// `fwd_group(liveness="true", childports="p1", "p2")` as encode_FWD_GROUP names it (the
    /// decimal tunnel key after "0x" is OVN's).
    #[test]
    fn fwd_group_as_ovn_controller_names_it() {
        let dumped = "type=select,selection_method=dp_hash,bucket=bucket_id:0,weight:1,watch_port:5,actions=set_field:0xa/0xffff->reg15,resubmit(,37),bucket=bucket_id:1,weight:1,watch_port:6,actions=set_field:0xb/0xffff->reg15,resubmit(,37)";
        let g: Group = format!("group_id=1,{dumped}").parse().unwrap();
        assert_eq!(
            ovn_group_name(&crate::view::group_key_of(&g)).unwrap(),
            "type=select,selection_method=dp_hash,bucket=watch_port:5,load=0x10->NXM_NX_REG15[0..15],resubmit(,37),bucket=watch_port:6,load=0x11->NXM_NX_REG15[0..15],resubmit(,37)"
        );
    }

    /// `select(reg8[16..31] = 1, 2)` (ECMP) as encode_SELECT names it.
    #[test]
    fn select_as_ovn_controller_names_it() {
        let dumped = "type=select,selection_method=dp_hash,selection_method_param=0x100000000,bucket=bucket_id:0,weight:100,actions=set_field:0x10000/0xffff0000->reg8,resubmit(,20),bucket=bucket_id:1,weight:100,actions=set_field:0x20000/0xffff0000->reg8,resubmit(,20)";
        let g: Group = format!("group_id=1,{dumped}").parse().unwrap();
        assert_eq!(
            ovn_group_name(&crate::view::group_key_of(&g)).unwrap(),
            "type=select,selection_method=dp_hash,selection_method_param=0x100000000,bucket=bucket_id=0,weight:100,actions=load:1->reg8[16..31],resubmit(,20),bucket=bucket_id=1,weight:100,actions=load:2->reg8[16..31],resubmit(,20)"
        );
    }
}
