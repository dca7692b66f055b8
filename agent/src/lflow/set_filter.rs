//! Which matches of an address-set delta compile belong to the changed addresses (see
//! [`super::set_delta`]): those a clause holding exactly the small set's constants made.

use super::annotate::Leaf;
use super::expr::Const;
use super::symtab::symtab;

/// Which matches a compile keeps: those a clause holding exactly the constants of `set`
/// made for a constant of `wanted`.
pub struct SetFilter {
    set: Vec<Const>,
    wanted: Vec<Const>,
}

impl SetFilter {
    pub fn new(set: Vec<Const>, wanted: Vec<Const>) -> Self {
        Self { set, wanted }
    }

    pub fn set_len(&self) -> usize {
        self.set.len()
    }

    pub fn wanted_len(&self) -> usize {
        self.wanted.len()
    }

    /// Whether `clause` is the set as written: one leaf per constant, nothing else.
    pub fn is_set_clause(&self, clause: &[Leaf]) -> bool {
        clause.len() == self.set.len()
            && self
                .set
                .iter()
                .all(|c| clause.iter().any(|l| leaf_is(l, c)))
    }

    pub fn wants(&self, leaf: &Leaf) -> bool {
        self.wanted.iter().any(|c| leaf_is(leaf, c))
    }
}

/// Whether `leaf` is `field == c` as the parser builds it for a whole field.
fn leaf_is(leaf: &Leaf, c: &Const) -> bool {
    let (
        Leaf::Int {
            sym, value, mask, ..
        },
        Const::Int {
            value: cv,
            mask: cm,
            ..
        },
    ) = (leaf, c)
    else {
        return false;
    };
    let Some(width) = symtab().get(sym).map(|s| s.width) else {
        return false;
    };
    let full = if width >= 128 {
        u128::MAX
    } else {
        (1u128 << width) - 1
    };
    let m = cm.unwrap_or(u128::MAX) & full;
    *mask == m && *value == cv & m
}
