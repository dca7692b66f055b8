//! Logical-flow compiler: OVN match expressions and actions to OpenFlow. Pure, no I/O.

pub mod actions;
pub mod annotate;
pub mod chassis_view;
pub mod controller;
pub mod dialect;
pub mod encode;
mod encode_lookup;
pub mod error;
pub mod expr;
pub mod flows;
pub mod hash;
pub mod layout;
pub mod lexer;
pub mod normalize;
pub mod of;
pub mod set_delta;
pub mod set_filter;
pub mod symtab;
pub mod template;

pub use error::{LflowError, Result};

use annotate::annotate;
use expr::{parse_expr, ExprContext};
use normalize::{eval_conditions, normalize, simplify, to_matches, Conj, MatchKind, PortResolver};
use of::FlowMatch as OfMatch;

/// Default bound on the OpenFlow flows one logical flow may produce.
pub const DEFAULT_FLOW_LIMIT: usize = 20_000;

/// Parses, annotates and simplifies a match expression (the chassis-independent part).
pub fn prepare_match(text: &str, ctx: &dyn ExprContext) -> Result<annotate::AExpr> {
    let parsed = parse_expr(text, ctx)?;
    Ok(simplify(annotate(parsed)?, ctx.dialect().ne_as_prefixes))
}

/// Evaluates chassis conditions and normalizes to DNF.
pub fn match_dnf(
    prepared: &annotate::AExpr,
    resident: &dyn Fn(&str) -> bool,
    limit: usize,
) -> Result<Vec<Conj>> {
    let e = eval_conditions(prepared.clone(), resident);
    normalize(&e, limit)
}

/// Full match pipeline: text to OpenFlow matches (without the metadata match).
pub fn compile_match(
    text: &str,
    ctx: &dyn ExprContext,
    resident: &dyn Fn(&str) -> bool,
    ports: &dyn PortResolver,
    limit: usize,
) -> Result<Vec<(OfMatch, Vec<MatchKind>)>> {
    let prepared = prepare_match(text, ctx)?;
    let dnf = match_dnf(&prepared, resident, limit)?;
    to_matches(&dnf, ports, limit)
}
