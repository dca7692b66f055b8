//! A logical flow's flows after a small address-set change, changed in place (see
//! [`crate::lflow::set_delta`]): the flows the removed addresses made, to take away, and
//! those the added ones make, to add.

use std::collections::BTreeSet;

use sbclient::ovn_sb::LogicalFlow;
use sbclient::Uuid;

use super::{lflow_datapaths, lflow_spec, Context};
use crate::lflow::expr::parse_address_set;
use crate::lflow::flows::{ChassisView, DpSpec, IdUse, OfFlow};
use crate::lflow::lexer::{tokenize, Token};
use crate::lflow::set_delta::compile_set_delta;
use crate::lflow::template::expand_templates;

/// Address set `name` gained `added` and lost `deleted`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetChange {
    pub name: String,
    pub added: Vec<String>,
    pub deleted: Vec<String>,
}

impl SetChange {
    /// The change from `old` to `new`, when it can be made in place as ovn-controller makes
    /// it: the set has two or more addresses before and after (the flows keep their form:
    /// one value is a plain match, several a clause), and fewer addresses changed than it
    /// has now (else compiling it again is cheaper).
    pub fn between(name: &str, old: &BTreeSet<String>, new: &BTreeSet<String>) -> Option<Self> {
        let added: Vec<String> = new.difference(old).cloned().collect();
        let deleted: Vec<String> = old.difference(new).cloned().collect();
        let size =
            |s: &BTreeSet<String>| parse_address_set(&s.iter().cloned().collect::<Vec<_>>()).len();
        let (old_size, new_size) = (size(old), size(new));
        let handled = old_size > 1
            && new_size > 1
            && added.len() + deleted.len() < new_size
            && !(added.is_empty() && deleted.is_empty());
        handled.then(|| Self {
            name: name.to_owned(),
            added,
            deleted,
        })
    }
}

/// The flows to add and to take away, and the ids the compiles took (to release: the
/// lflow's flows hold their own). `flows` is `None` when the change cannot be made in place.
#[derive(Default)]
pub struct SetDelta {
    pub flows: Option<(Vec<OfFlow>, Vec<OfFlow>)>,
    pub uses: Vec<IdUse>,
}

/// How the flows of logical flow `uuid` change with `change`.
pub fn logical_flow_set_delta(
    uuid: &Uuid,
    lf: &LogicalFlow,
    cx: &Context<'_>,
    change: &SetChange,
) -> SetDelta {
    let mut out = SetDelta::default();
    let (mut added, mut removed) = (Vec::new(), Vec::new());
    let handled = delta_in(
        uuid,
        lf,
        cx,
        change,
        &mut added,
        &mut removed,
        &mut out.uses,
    );
    if handled.is_some() {
        out.flows = Some((added, removed));
    }
    out
}

fn delta_in(
    uuid: &Uuid,
    lf: &LogicalFlow,
    cx: &Context<'_>,
    change: &SetChange,
    added: &mut Vec<OfFlow>,
    removed: &mut Vec<OfFlow>,
    uses: &mut Vec<IdUse>,
) -> Option<()> {
    let spec = lflow_spec(uuid, lf, cx.view).ok()?;
    if spec.controller_meter.is_some() {
        if let Some(m) = &lf.controller_meter {
            uses.push(IdUse::Meter(m.clone()));
        }
    }
    let match_text = expand_templates(&lf.match_, cx.view.template_vars());
    let refs = references(&match_text, &change.name)?;
    let members = cx.view.address_set(&change.name)?;
    let in_out_port = lf.tags.get("in_out_port");
    for dp_uuid in &lflow_datapaths(lf, cx.view) {
        let Some(key) = cx.wanted_dp(dp_uuid) else {
            continue;
        };
        if let Some(p) = in_out_port {
            let related = cx
                .view
                .port_key(dp_uuid, p)
                .is_some_and(|k| cx.view.is_related(key, k));
            if !related {
                continue;
            }
        }
        let info = cx.view.datapath(dp_uuid)?;
        let dp = DpSpec {
            uuid: dp_uuid,
            key,
            is_switch: !info.is_router,
            snat_ct_zone: info.snat_ct_zone,
        };
        for (changed, into) in [
            (&change.deleted, &mut *removed),
            (&change.added, &mut *added),
        ] {
            if changed.is_empty() {
                continue;
            }
            let set = small_set(changed, members)?;
            let r = compile_set_delta(
                &spec,
                &dp,
                cx.view,
                cx.layout,
                cx.limit,
                &change.name,
                &set,
                changed,
            )?;
            uses.extend(r.uses);
            if r.matches != refs * changed.len() {
                return None;
            }
            into.extend(r.flows);
        }
    }
    Some(())
}

/// How many times `match_text` names `$name`.
fn references(match_text: &str, name: &str) -> Option<usize> {
    let tokens = tokenize(match_text).ok()?;
    Some(
        tokens
            .iter()
            .filter(|t| matches!(&t.token, Token::Macro(n) if n == name))
            .count(),
    )
}

/// The set to compile with: the changed addresses, and when that is one address, a member
/// that is not (a set of one would compile to a plain match, not to a clause).
fn small_set(changed: &[String], members: &[String]) -> Option<Vec<String>> {
    if changed.len() > 1 {
        return Some(changed.to_vec());
    }
    let other = members.iter().find(|m| !changed.contains(m))?;
    Some(vec![changed[0].clone(), other.clone()])
}
