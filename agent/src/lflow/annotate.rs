//! Annotation (subfields to fields, predicates expanded, prerequisites added) and
//! simplification (every relational operator to masked `==`).

use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

use super::error::{semantic, Result};
use super::expr::{parse_expr, Cmp, CmpValue, Expr, NoSets, Relop};
use super::of::FieldId;
use super::symtab::{symtab, SymKind, SymbolTable};

/// A comparison on a whole OVS field, named by its root OVN symbol.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Leaf {
    Int {
        sym: &'static str,
        field: FieldId,
        relop: Relop2,
        value: u128,
        mask: u128,
    },
    Str {
        sym: &'static str,
        field: FieldId,
        relop: Relop2,
        name: String,
    },
}

/// `Relop` with an ordering so leaves can be sorted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Relop2 {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl From<Relop> for Relop2 {
    fn from(r: Relop) -> Self {
        match r {
            Relop::Eq => Self::Eq,
            Relop::Ne => Self::Ne,
            Relop::Lt => Self::Lt,
            Relop::Le => Self::Le,
            Relop::Gt => Self::Gt,
            Relop::Ge => Self::Ge,
        }
    }
}

impl Relop2 {
    fn negate(self) -> Self {
        match self {
            Self::Eq => Self::Ne,
            Self::Ne => Self::Eq,
            Self::Lt => Self::Ge,
            Self::Ge => Self::Lt,
            Self::Gt => Self::Le,
            Self::Le => Self::Gt,
        }
    }
}

impl Leaf {
    pub fn sym(&self) -> &'static str {
        match self {
            Leaf::Int { sym, .. } | Leaf::Str { sym, .. } => sym,
        }
    }
}

pub type AExpr = Expr<Leaf>;

const MAX_NESTING: usize = 32;

fn cache() -> &'static RwLock<HashMap<&'static str, AExpr>> {
    static C: OnceLock<RwLock<HashMap<&'static str, AExpr>>> = OnceLock::new();
    C.get_or_init(|| RwLock::new(HashMap::new()))
}

/// Parsed and annotated text of a predicate expansion or prerequisite, cached.
fn expansion(text: &'static str, depth: usize) -> Result<AExpr> {
    if let Some(e) = cache().read().ok().and_then(|c| c.get(text).cloned()) {
        return Ok(e);
    }
    let parsed = parse_expr(text, &NoSets)?;
    let e = annotate_at(parsed, depth + 1, true)?;
    if let Ok(mut c) = cache().write() {
        c.insert(text, e.clone());
    }
    Ok(e)
}

/// Annotates a parsed expression.
pub fn annotate(e: Expr<Cmp>) -> Result<AExpr> {
    annotate_at(e, 0, true)
}

fn prereqs_of(symbol: &str, depth: usize) -> Result<Option<AExpr>> {
    // The symbol table is static, so its strings can key the expansion cache directly.
    let t: &'static SymbolTable = symtab();
    let mut out = Vec::new();
    let mut cur = t.get(symbol);
    while let Some(s) = cur {
        if let Some(p) = &s.prereqs {
            out.push(expansion(p.as_str(), depth)?);
        }
        cur = match &s.kind {
            SymKind::Subfield { parent, .. } => t.get(parent),
            _ => None,
        };
    }
    Ok(if out.is_empty() {
        None
    } else {
        Some(Expr::and_or(true, out))
    })
}

fn unique_symbol(e: &Expr<Cmp>) -> Option<&str> {
    match e {
        Expr::Leaf(c) => Some(c.symbol),
        Expr::And(v) | Expr::Or(v) => {
            let first = unique_symbol(v.first()?)?;
            v.iter()
                .all(|x| unique_symbol(x) == Some(first))
                .then_some(first)
        }
        _ => None,
    }
}

fn annotate_at(e: Expr<Cmp>, depth: usize, with_prereqs: bool) -> Result<AExpr> {
    if depth > MAX_NESTING {
        return semantic("Recursive expansion of symbol.");
    }
    let (is_and, v) = match e {
        Expr::Leaf(c) => return annotate_cmp(c, depth, with_prereqs),
        Expr::Bool(b) => return Ok(Expr::Bool(b)),
        Expr::Resident { port, negated } => return Ok(Expr::Resident { port, negated }),
        Expr::And(v) => (true, v),
        Expr::Or(v) => (false, v),
    };
    // All terms on one symbol: its prerequisites are added once, at this node, so that the
    // node stays a single-symbol disjunction (a conjunctive-match clause).
    let shared = if with_prereqs {
        single_field_symbol(&v)
    } else {
        None
    };
    let inner_prereqs = with_prereqs && shared.is_none();
    let items = v
        .into_iter()
        .map(|x| annotate_at(x, depth, inner_prereqs))
        .collect::<Result<Vec<_>>>()?;
    let node = Expr::and_or(is_and, items);
    match shared {
        Some(sym) => Ok(match prereqs_of(&sym, depth)? {
            Some(p) => Expr::and_or(true, vec![node, p]),
            None => node,
        }),
        None => Ok(node),
    }
}

fn single_field_symbol(v: &[Expr<Cmp>]) -> Option<String> {
    let first = unique_symbol(v.first()?)?;
    let all = v.iter().all(|x| unique_symbol(x) == Some(first));
    (all && symtab()
        .get(first)
        .is_some_and(|s| !matches!(s.kind, SymKind::Predicate(_))))
    .then(|| first.to_string())
}

fn annotate_cmp(c: Cmp, depth: usize, with_prereqs: bool) -> Result<AExpr> {
    let t: &'static SymbolTable = symtab();
    let Some(sym) = t.get(c.symbol) else {
        return semantic(format!("{}: unknown symbol", c.symbol));
    };
    let sym_name: &'static str = sym.name.as_str();
    let core = match (&sym.kind, c.value) {
        (SymKind::Predicate(text), CmpValue::Int { value, .. }) => {
            let text: &'static str = text.as_str();
            let positive = (c.relop == Relop::Eq) == (value != 0);
            let e = expansion(text, depth)?;
            if positive {
                e
            } else {
                negate_a(e)
            }
        }
        (SymKind::String(f), CmpValue::Str(name)) => Expr::Leaf(Leaf::Str {
            sym: sym_name,
            field: *f,
            relop: c.relop.into(),
            name,
        }),
        (SymKind::Field(_) | SymKind::Subfield { .. }, CmpValue::Int { value, mask }) => {
            let (field, off) = t.resolve(c.symbol).ok_or_else(|| {
                super::error::LflowError::Semantic(format!("{}: cannot resolve", c.symbol))
            })?;
            let root = root_symbol(c.symbol).unwrap_or(sym_name);
            let shift = off + c.lo;
            Expr::Leaf(Leaf::Int {
                sym: root,
                field,
                relop: c.relop.into(),
                value: value << shift,
                mask: mask << shift,
            })
        }
        (SymKind::Ovn(_), _) => {
            return semantic(format!("Field {} cannot be used in a match.", c.symbol))
        }
        _ => return semantic(format!("Type mismatch for {}.", c.symbol)),
    };
    if !with_prereqs {
        return Ok(core);
    }
    Ok(match prereqs_of(c.symbol, depth)? {
        Some(p) => Expr::and_or(true, vec![core, p]),
        None => core,
    })
}

fn root_symbol(name: &str) -> Option<&'static str> {
    let t: &'static SymbolTable = symtab();
    let mut sym = t.get(name)?;
    while let SymKind::Subfield { parent, .. } = &sym.kind {
        sym = t.get(parent)?;
    }
    Some(sym.name.as_str())
}

/// A prerequisite text (from the symbol table or an action), parsed and annotated once.
pub fn prerequisite(text: &str) -> Result<AExpr> {
    if let Some(sym) = symtab().get(text) {
        // Action prerequisites are predicate names such as "ip" or "nd_ns".
        if let SymKind::Predicate(_) = sym.kind {
            return expansion_of_symbol(sym);
        }
    }
    annotate(parse_expr(text, &NoSets)?)
}

fn expansion_of_symbol(sym: &'static super::symtab::Symbol) -> Result<AExpr> {
    match &sym.kind {
        SymKind::Predicate(text) => expansion(text.as_str(), 0),
        _ => semantic("not a predicate"),
    }
}

pub fn negate_a(e: AExpr) -> AExpr {
    match e {
        Expr::Leaf(Leaf::Int {
            sym,
            field,
            relop,
            value,
            mask,
        }) => Expr::Leaf(Leaf::Int {
            sym,
            field,
            relop: relop.negate(),
            value,
            mask,
        }),
        Expr::Leaf(Leaf::Str {
            sym,
            field,
            relop,
            name,
        }) => Expr::Leaf(Leaf::Str {
            sym,
            field,
            relop: relop.negate(),
            name,
        }),
        Expr::And(v) => Expr::and_or(false, v.into_iter().map(negate_a).collect()),
        Expr::Or(v) => Expr::and_or(true, v.into_iter().map(negate_a).collect()),
        Expr::Bool(b) => Expr::Bool(!b),
        Expr::Resident { port, negated } => Expr::Resident {
            port,
            negated: !negated,
        },
    }
}
