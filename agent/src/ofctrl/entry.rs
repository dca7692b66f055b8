//! One key of the flow table: the owners' contributions, the flow ofctrl's preference picks
//! from them, and the flow_mod that brings the switch from what it has to that flow.

use std::sync::Arc;

use openflow::action::equivalent;
use openflow::flow::FlowModCommand;
use smallvec::SmallVec;

use crate::lflow::of::{Action, Flow, FlowMatch};
use crate::owner::Owner;

/// One owner's wish for a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Contribution {
    pub(super) owner: Owner,
    pub(super) cookie: u64,
    pub(super) actions: Arc<Vec<Action>>,
}

/// What the switch has for a key, as far as we know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Installed {
    pub(super) cookie: u64,
    pub(super) actions: Arc<Vec<Action>>,
}

#[derive(Clone, Debug)]
pub(super) struct Entry {
    pub(super) table: u8,
    pub(super) priority: u16,
    pub(super) m: FlowMatch,
    /// Sorted by owner.
    pub(super) contribs: SmallVec<[Contribution; 1]>,
    /// The merged action list when every contribution is conjunction-only and there are
    /// several.
    pub(super) merged: Option<Arc<Vec<Action>>>,
    pub(super) installed: Option<Installed>,
    /// The installed flow was read back from a switch dump (compare by meaning, not
    /// encoding). Kept here, not in [`Installed`], where it would cost 8 bytes an entry.
    pub(super) installed_dumped: bool,
    pub(super) dirty: bool,
    /// Part of a batch the switch has not confirmed: the entry stays (its id must not go
    /// to another key before the batch is finished).
    pub(super) in_flight: bool,
}

/// What the switch should have for one key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EffectiveFlow<'a> {
    pub table: u8,
    pub priority: u16,
    pub m: &'a FlowMatch,
    pub cookie: u64,
    pub actions: &'a Arc<Vec<Action>>,
}

impl EffectiveFlow<'_> {
    pub fn to_flow(&self) -> Flow {
        Flow {
            table: self.table,
            priority: self.priority,
            cookie: self.cookie,
            m: self.m.clone(),
            actions: self.actions.clone(),
        }
    }
}

/// One change to send to the switch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowOp<'a> {
    pub command: FlowModCommand,
    pub table: u8,
    pub priority: u16,
    pub m: &'a FlowMatch,
    pub cookie: u64,
    pub actions: &'a [Action],
    /// Entry index, to attribute a refusal.
    pub entry: u32,
}

pub(super) fn is_conj(actions: &[Action]) -> bool {
    !actions.is_empty()
        && actions
            .iter()
            .all(|a| matches!(a, Action::Conjunction { .. }))
}

/// ofctrl's preference: flows that do something, then drops, then conjunctions.
pub(super) fn rank(actions: &[Action]) -> u8 {
    if is_conj(actions) {
        2
    } else {
        u8::from(actions.is_empty())
    }
}

impl Entry {
    pub(super) fn effective(&self) -> Option<EffectiveFlow<'_>> {
        let first = self.contribs.iter().min_by_key(|c| rank(&c.actions))?;
        let actions = match &self.merged {
            Some(m) if is_conj(&first.actions) => m,
            _ => &first.actions,
        };
        Some(EffectiveFlow {
            table: self.table,
            priority: self.priority,
            m: &self.m,
            cookie: first.cookie,
            actions,
        })
    }

    pub(super) fn remerge(&mut self) {
        let conj: Vec<&Contribution> = self
            .contribs
            .iter()
            .filter(|c| is_conj(&c.actions))
            .collect();
        self.merged = if conj.len() > 1 && conj.len() == self.contribs.len() {
            let mut all: Vec<Action> = Vec::new();
            for c in conj {
                for a in c.actions.iter() {
                    if !all.contains(a) {
                        all.push(a.clone());
                    }
                }
            }
            Some(Arc::new(all))
        } else {
            None
        };
    }

    /// The flow_mod that makes the switch match the desired flow whatever it has for the
    /// key: a full add, or a strict delete when nothing is wanted.
    pub(super) fn overwrite_op(&self, entry: u32) -> FlowOp<'_> {
        let (command, cookie, actions) = match self.effective() {
            Some(w) => (FlowModCommand::Add, w.cookie, w.actions.as_slice()),
            None => (FlowModCommand::DeleteStrict, 0, &[][..]),
        };
        FlowOp {
            command,
            table: self.table,
            priority: self.priority,
            m: &self.m,
            cookie,
            actions,
            entry,
        }
    }

    /// Whether `op` modifies a flow whose installed actions learn with `delete_learned`:
    /// such a flow is deleted and added again instead, since only a delete makes the switch
    /// drop the flows it learned (a load balancer's hairpin replies once its SNAT address
    /// changed), as ovn-controller's put replaces it.
    pub(super) fn forgets_learned(&self, op: &FlowOp<'_>) -> bool {
        use openflow::action::learn::NX_LEARN_F_DELETE_LEARNED;
        op.command == FlowModCommand::ModifyStrict
            && self.installed.as_ref().is_some_and(|i| {
                i.actions.iter().any(
                    |a| matches!(a, Action::Learn(l) if l.flags & NX_LEARN_F_DELETE_LEARNED != 0),
                )
            })
    }

    /// The flow_mod that makes the switch match the desired flow, if any.
    pub(super) fn op(&self, entry: u32) -> Option<FlowOp<'_>> {
        fn make<'e>(
            e: &'e Entry,
            id: u32,
            command: FlowModCommand,
            cookie: u64,
            actions: &'e [Action],
        ) -> FlowOp<'e> {
            FlowOp {
                command,
                table: e.table,
                priority: e.priority,
                m: &e.m,
                cookie,
                actions,
                entry: id,
            }
        }
        let want = self.effective();
        let op = |command, cookie, actions| make(self, entry, command, cookie, actions);
        match (want, &self.installed) {
            (None, None) => None,
            (None, Some(i)) => Some(op(FlowModCommand::DeleteStrict, i.cookie, &[])),
            (Some(w), None) => Some(op(FlowModCommand::Add, w.cookie, w.actions)),
            (Some(w), Some(i)) => {
                let same_actions = Arc::ptr_eq(w.actions, &i.actions)
                    || if self.installed_dumped {
                        equivalent(w.actions, &i.actions)
                    } else {
                        **w.actions == *i.actions
                    };
                if w.cookie != i.cookie {
                    // ADD is the only flow_mod that changes a cookie.
                    Some(op(FlowModCommand::Add, w.cookie, w.actions))
                } else if !same_actions {
                    Some(op(FlowModCommand::ModifyStrict, w.cookie, w.actions))
                } else {
                    None
                }
            }
        }
    }
}
