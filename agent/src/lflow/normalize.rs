//! Simplification to masked `==`, chassis-residency evaluation, disjunctive normal form with
//! per-symbol OR clauses, and conversion to OpenFlow matches with conjunctive matches.

use super::annotate::{AExpr, Leaf, Relop2};
use super::error::{LflowError, Result};
use super::expr::Expr;
use super::of::FieldId;
use super::of::FlowMatch as OfMatch;
use super::symtab::symtab;

fn ones(bits: u32) -> u128 {
    if bits >= 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    }
}

fn int(sym: &'static str, field: FieldId, value: u128, mask: u128) -> AExpr {
    Expr::Leaf(Leaf::Int {
        sym,
        field,
        relop: Relop2::Eq,
        value,
        mask,
    })
}

/// Rewrites `!=`, `<`, `<=`, `>`, `>=` as ORs/ANDs of masked `==` (prefix expansion).
/// `ne_as_prefixes`: the release's form of `!=` (see [`super::dialect::Dialect`]).
pub fn simplify(e: AExpr, ne_as_prefixes: bool) -> AExpr {
    match e {
        Expr::Leaf(Leaf::Int {
            sym,
            field,
            relop,
            value,
            mask,
        }) => simplify_int(sym, field, relop, value, mask, ne_as_prefixes),
        Expr::And(v) => Expr::and_or(
            true,
            v.into_iter().map(|e| simplify(e, ne_as_prefixes)).collect(),
        ),
        Expr::Or(v) => Expr::and_or(
            false,
            v.into_iter().map(|e| simplify(e, ne_as_prefixes)).collect(),
        ),
        other => other,
    }
}

fn simplify_int(
    sym: &'static str,
    field: FieldId,
    relop: Relop2,
    value: u128,
    mask: u128,
    ne_as_prefixes: bool,
) -> AExpr {
    // One term per bit `b` of the mask: that bit differs from `value`'s; with prefixes, the
    // mask's bits above `b` equal `value`'s too (the terms are disjoint: a CIDR's
    // complement), else they are wildcarded.
    let ne = |value: u128, mask: u128| {
        let terms = (0..128)
            .filter(|b| mask >> b & 1 == 1)
            .map(|b| {
                let m = if ne_as_prefixes {
                    mask & !((1u128 << b) - 1)
                } else {
                    1 << b
                };
                int(sym, field, (value & m) ^ (1 << b), m)
            })
            .collect();
        Expr::and_or(false, terms)
    };
    if mask == 0 {
        return Expr::Bool(relop == Relop2::Eq || matches!(relop, Relop2::Le | Relop2::Ge));
    }
    let lo = mask.trailing_zeros();
    let w = 128 - mask.leading_zeros() - lo;
    let max = ones(w);
    let c = (value >> lo) & max;
    let term = |v: u128, m: u128| int(sym, field, v << lo, m << lo);
    // One term per bit position `z` where `c` has bit `want`: bits above z equal c's, bit z is
    // flipped, bits below are wildcarded.
    let prefixes = |want: u128| -> Vec<AExpr> {
        (0..w)
            .filter(|z| (c >> z) & 1 == want)
            .map(|z| {
                let above = max & !ones(z + 1);
                let v = (c & above) | ((1 - want) << z);
                term(v, above | (1 << z))
            })
            .collect()
    };
    match relop {
        Relop2::Eq => int(sym, field, value, mask),
        Relop2::Ne => ne(value, mask),
        Relop2::Gt if c == 0 => ne(0, mask),
        Relop2::Gt => Expr::and_or(false, prefixes(0)),
        Relop2::Ge if c == 0 => Expr::Bool(true),
        Relop2::Ge => {
            let mut v = prefixes(0);
            v.push(term(c, max));
            Expr::and_or(false, v)
        }
        Relop2::Lt if c == max => ne(max << lo, mask),
        Relop2::Lt => Expr::and_or(false, prefixes(1)),
        Relop2::Le if c == max => Expr::Bool(true),
        Relop2::Le => {
            let mut v = prefixes(1);
            v.push(term(c, max));
            Expr::and_or(false, v)
        }
    }
}

/// Replaces `is_chassis_resident()` conditions by their value on this chassis.
pub fn eval_conditions(e: AExpr, resident: &dyn Fn(&str) -> bool) -> AExpr {
    match e {
        Expr::Resident { port, negated } => Expr::Bool(resident(&port) != negated),
        Expr::And(v) => tidy(
            true,
            v.into_iter()
                .map(|x| eval_conditions(x, resident))
                .collect(),
        ),
        Expr::Or(v) => tidy(
            false,
            v.into_iter()
                .map(|x| eval_conditions(x, resident))
                .collect(),
        ),
        other => other,
    }
}

fn tidy(is_and: bool, v: Vec<AExpr>) -> AExpr {
    let mut out = Vec::new();
    for x in v {
        match x {
            Expr::Bool(b) if b == is_and => {}
            Expr::Bool(b) => return Expr::Bool(b),
            other => out.push(other),
        }
    }
    Expr::and_or(is_and, out)
}

/// One AND term of the DNF: plain comparisons plus single-symbol OR clauses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Conj {
    pub terms: Vec<Leaf>,
    pub clauses: Vec<Vec<Leaf>>,
}

fn intersect(a: &Leaf, b: &Leaf) -> Option<Leaf> {
    match (a, b) {
        (
            Leaf::Int {
                sym,
                field,
                value: v1,
                mask: m1,
                ..
            },
            Leaf::Int {
                value: v2,
                mask: m2,
                ..
            },
        ) => ((v1 ^ v2) & m1 & m2 == 0).then(|| Leaf::Int {
            sym,
            field: *field,
            relop: Relop2::Eq,
            value: v1 | v2,
            mask: m1 | m2,
        }),
        (Leaf::Str { name: n1, .. }, Leaf::Str { name: n2, .. }) => (n1 == n2).then(|| a.clone()),
        _ => None,
    }
}

fn xprod(sym: &str) -> bool {
    symtab().get(sym).is_some_and(|s| s.must_crossproduct)
}

fn dedup(v: &mut Vec<Leaf>) {
    if v.len() > 1 {
        v.sort_unstable();
        v.dedup();
    }
}

/// Merges comparisons and clauses that share a symbol. `None` if the term is unsatisfiable.
/// Works in place (compacting with swaps) to avoid allocating on this hot path; the order of
/// terms and clauses is the order of first occurrence, as before.
fn crush(mut c: Conj) -> Option<Conj> {
    let mut kept = 0;
    for i in 0..c.terms.len() {
        let sym = c.terms[i].sym();
        if let Some(j) = c.terms[..kept].iter().position(|p| p.sym() == sym) {
            c.terms[j] = intersect(&c.terms[j], &c.terms[i])?;
        } else {
            c.terms.swap(kept, i);
            kept += 1;
        }
    }
    c.terms.truncate(kept);
    let mut kept = 0;
    for i in 0..c.clauses.len() {
        let sym = c.clauses[i].first()?.sym();
        if let Some(j) = c.clauses[..kept]
            .iter()
            .position(|p| p.first().map(Leaf::sym) == Some(sym))
        {
            let merged: Vec<Leaf> = c.clauses[j]
                .iter()
                .flat_map(|a| c.clauses[i].iter().filter_map(|b| intersect(a, b)))
                .collect();
            if merged.is_empty() {
                return None;
            }
            c.clauses[j] = merged;
        } else {
            c.clauses.swap(kept, i);
            kept += 1;
        }
    }
    c.clauses.truncate(kept);
    // Conjunction clause numbers follow the symbol names, as in ovn-controller.
    c.clauses.sort_by_key(|c| c.first().map(Leaf::sym));
    let mut kept = 0;
    for i in 0..c.clauses.len() {
        let sym = c.clauses[i].first()?.sym();
        if let Some(ti) = c.terms.iter().position(|t| t.sym() == sym) {
            let t = c.terms.swap_remove(ti);
            c.clauses[i].retain_mut(|d| match intersect(d, &t) {
                Some(x) => {
                    *d = x;
                    true
                }
                None => false,
            });
        }
        dedup(&mut c.clauses[i]);
        match c.clauses[i].len() {
            0 => return None,
            1 => {
                let l = c.clauses[i].pop()?;
                c.terms.push(l);
            }
            _ => {
                c.clauses.swap(kept, i);
                kept += 1;
            }
        }
    }
    c.clauses.truncate(kept);
    Some(c)
}

/// Converts to DNF. `limit` bounds the number of AND terms.
pub fn normalize(e: &AExpr, limit: usize) -> Result<Vec<Conj>> {
    match e {
        Expr::Leaf(l) => Ok(vec![Conj {
            terms: vec![l.clone()],
            clauses: vec![],
        }]),
        Expr::Bool(true) => Ok(vec![Conj::default()]),
        Expr::Bool(false) | Expr::Resident { .. } => Ok(vec![]),
        Expr::Or(v) => {
            let mut out = Vec::new();
            for x in v {
                out.extend(normalize(x, limit)?);
                if out.len() > limit {
                    return Err(LflowError::TooManyFlows { limit });
                }
            }
            Ok(out)
        }
        Expr::And(v) => {
            let mut acc = vec![Conj::default()];
            for x in v {
                if let Some(clause) = leaf_clause(x, limit) {
                    for a in &mut acc {
                        a.clauses.push(clause.clone());
                    }
                    continue;
                }
                let n = normalize(x, limit)?;
                if let Some(clause) = as_clause(&n) {
                    for a in &mut acc {
                        a.clauses.push(clause.clone());
                    }
                    continue;
                }
                if acc.len().saturating_mul(n.len()) > limit {
                    return Err(LflowError::TooManyFlows { limit });
                }
                let mut next = Vec::with_capacity(acc.len() * n.len());
                for a in &acc {
                    for b in &n {
                        let mut m = Conj {
                            terms: Vec::with_capacity(a.terms.len() + b.terms.len()),
                            clauses: Vec::with_capacity(a.clauses.len() + b.clauses.len()),
                        };
                        m.terms.extend(a.terms.iter().chain(&b.terms).cloned());
                        m.clauses
                            .extend(a.clauses.iter().chain(&b.clauses).cloned());
                        if let Some(c) = crush(m) {
                            next.push(c);
                        }
                    }
                }
                acc = next;
            }
            Ok(acc.into_iter().filter_map(crush).collect())
        }
    }
}

/// `as_clause(&normalize(x))` without building the DNF, for the common OR of two or more
/// comparisons on one non-crossproduct symbol (address sets); `None` when that does not apply.
fn leaf_clause(x: &AExpr, limit: usize) -> Option<Vec<Leaf>> {
    let Expr::Or(v) = x else { return None };
    if v.len() < 2 || v.len() > limit {
        return None;
    }
    let Some(Expr::Leaf(first)) = v.first() else {
        return None;
    };
    let sym = first.sym();
    if xprod(sym) {
        return None;
    }
    let mut out = Vec::with_capacity(v.len());
    for e in v {
        match e {
            Expr::Leaf(l) if l.sym() == sym => out.push(l.clone()),
            _ => return None,
        }
    }
    dedup(&mut out);
    Some(out)
}

/// A DNF that is two or more single comparisons on one non-crossproduct symbol.
fn as_clause(n: &[Conj]) -> Option<Vec<Leaf>> {
    if n.len() < 2 {
        return None;
    }
    let sym = n[0].terms.first()?.sym();
    if xprod(sym) {
        return None;
    }
    let ok = n
        .iter()
        .all(|c| c.clauses.is_empty() && c.terms.len() == 1 && c.terms[0].sym() == sym);
    ok.then(|| {
        let mut v: Vec<Leaf> = n.iter().map(|c| c.terms[0].clone()).collect();
        dedup(&mut v);
        v
    })
}

/// What a match produced by an expression does.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MatchKind {
    /// Runs the lflow's actions.
    Plain,
    /// `conjunction(k, clause/n)` (clause 0-based); installed with cookie 0.
    Clause { k: u32, clause: u32, n_clauses: u32 },
    /// `conj_id=k`: runs the lflow's actions.
    ConjId { k: u32 },
}

/// Resolves port names of string comparisons (inport/outport) to tunnel keys.
pub trait PortResolver {
    fn port_key(&self, name: &str) -> Option<u32>;
}

fn add_leaf(m: &mut OfMatch, l: &Leaf, ports: &dyn PortResolver) -> bool {
    match l {
        Leaf::Int {
            field, value, mask, ..
        } => m.add(*field, *value, *mask),
        Leaf::Str { field, name, .. } => match ports.port_key(name) {
            Some(k) => m.add(*field, u128::from(k), 0xffff_ffff),
            None => false,
        },
    }
}

/// Slots a match usually gains after its base: a clause value or conj_id, then metadata.
const ROOM: usize = 2;

/// A match and what it does.
pub type KindedMatch = (OfMatch, Vec<MatchKind>);

/// Whether a clause is one whose matches are followed back to their leaf.
pub type ClauseTest<'a> = dyn Fn(&[Leaf]) -> bool + 'a;

/// Turns the DNF into matches; duplicate matches are merged (plain wins over clauses).
pub fn to_matches(
    dnf: &[Conj],
    ports: &dyn PortResolver,
    limit: usize,
) -> Result<Vec<KindedMatch>> {
    to_matches_impl(dnf, ports, limit, None).map(|(m, _)| m)
}

/// [`to_matches`], and for each match the clause leaf it was made from when that clause is
/// one `tracked` accepts (an address set's constants as they were written) and no other
/// term made the same match (a merged match belongs to no single address).
pub fn to_matches_tracked(
    dnf: &[Conj],
    ports: &dyn PortResolver,
    limit: usize,
    tracked: &ClauseTest<'_>,
) -> Result<(Vec<KindedMatch>, Vec<Option<Leaf>>)> {
    to_matches_impl(dnf, ports, limit, Some(tracked))
}

fn to_matches_impl(
    dnf: &[Conj],
    ports: &dyn PortResolver,
    limit: usize,
    tracked: Option<&ClauseTest<'_>>,
) -> Result<(Vec<KindedMatch>, Vec<Option<Leaf>>)> {
    let mut out: Vec<KindedMatch> = Vec::new();
    // Filled only when tracking: the origin of out[i].
    let mut origins: Vec<Option<Leaf>> = Vec::new();
    let track = |clause: &[Leaf]| tracked.is_some_and(|t| t(clause));
    // Hash of a match to its first index in `out`; `chain` links later ones with the same
    // hash, so matches are not cloned into the index.
    let build = super::hash::FxBuild::default();
    let mut heads: std::collections::HashMap<u64, usize, super::hash::FxBuild> =
        std::collections::HashMap::default();
    let mut chain: Vec<Option<usize>> = Vec::new();
    let tracking = tracked.is_some();
    let mut push = |m: OfMatch,
                    k: MatchKind,
                    origin: Option<&Leaf>,
                    out: &mut Vec<KindedMatch>,
                    origins: &mut Vec<Option<Leaf>>|
     -> Result<()> {
        use std::hash::BuildHasher;
        let h = build.hash_one(&m);
        let mut cur = heads.get(&h).copied();
        while let Some(i) = cur {
            if out[i].0 != m {
                cur = chain[i];
                continue;
            }
            if tracking {
                origins[i] = None;
            }
            let kinds = &mut out[i].1;
            if kinds.contains(&MatchKind::Plain) {
                return Ok(());
            }
            if k == MatchKind::Plain {
                *kinds = vec![MatchKind::Plain];
            } else if !kinds.contains(&k) {
                kinds.push(k);
            }
            return Ok(());
        }
        if out.len() >= limit {
            return Err(LflowError::TooManyFlows { limit });
        }
        chain.push(heads.insert(h, out.len()));
        out.push((m, vec![k]));
        if tracking {
            origins.push(origin.cloned());
        }
        Ok(())
    };
    let mut next_k = 1u32;
    for c in dnf {
        let mut base = OfMatch::new();
        if !c.terms.iter().all(|t| add_leaf(&mut base, t, ports)) {
            continue;
        }
        match c.clauses.len() {
            0 => push(base, MatchKind::Plain, None, &mut out, &mut origins)?,
            1 => {
                let tracked = track(&c.clauses[0]);
                for d in &c.clauses[0] {
                    let mut m = base.clone_with_room(ROOM);
                    if add_leaf(&mut m, d, ports) {
                        let origin = tracked.then_some(d);
                        push(m, MatchKind::Plain, origin, &mut out, &mut origins)?;
                    }
                }
            }
            n => {
                let k = next_k;
                next_k += 1;
                let mut complete = true;
                for (i, cl) in c.clauses.iter().enumerate() {
                    let mut any = false;
                    let tracked = track(cl);
                    for d in cl {
                        let mut m = base.clone_with_room(ROOM);
                        if add_leaf(&mut m, d, ports) {
                            any = true;
                            push(
                                m,
                                MatchKind::Clause {
                                    k,
                                    clause: i as u32,
                                    n_clauses: n as u32,
                                },
                                tracked.then_some(d),
                                &mut out,
                                &mut origins,
                            )?;
                        }
                    }
                    complete &= any;
                }
                if complete {
                    let mut m = base.clone_with_room(ROOM);
                    m.set_conj_id(k);
                    push(m, MatchKind::ConjId { k }, None, &mut out, &mut origins)?;
                }
            }
        }
    }
    Ok((out, origins))
}
