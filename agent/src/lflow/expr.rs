//! Match-expression syntax tree and parser. Negations are pushed down while parsing, so the
//! tree has no NOT nodes.

use std::sync::Arc;

use super::dialect::Dialect;
use super::error::{semantic, LflowError, Result};
use super::lexer::{min_width, tokenize, IntFormat, Spanned, Token};
use super::symtab::{symtab, Level, SymKind, Symbol};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relop {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Relop {
    pub fn negate(self) -> Self {
        match self {
            Self::Eq => Self::Ne,
            Self::Ne => Self::Eq,
            Self::Lt => Self::Ge,
            Self::Ge => Self::Lt,
            Self::Gt => Self::Le,
            Self::Le => Self::Gt,
        }
    }

    fn reverse(self) -> Self {
        match self {
            Self::Lt => Self::Gt,
            Self::Gt => Self::Lt,
            Self::Le => Self::Ge,
            Self::Ge => Self::Le,
            other => other,
        }
    }

    fn from_token(t: &Token) -> Option<Self> {
        Some(match t {
            Token::Eq => Self::Eq,
            Token::Ne => Self::Ne,
            Token::Lt => Self::Lt,
            Token::Le => Self::Le,
            Token::Gt => Self::Gt,
            Token::Ge => Self::Ge,
            _ => return None,
        })
    }
}

/// A comparison as written: symbol (possibly a subfield or predicate) and slice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cmp {
    /// The symbol as written (an entry of the static symbol table).
    pub symbol: &'static str,
    pub lo: u32,
    pub width: u32,
    pub relop: Relop,
    pub value: CmpValue,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CmpValue {
    /// Value and mask within the slice (bit 0 = slice bit `lo`).
    Int {
        value: u128,
        mask: u128,
    },
    Str(String),
}

/// Expression tree, generic over its leaves (parsed comparisons, then annotated ones).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr<L> {
    Leaf(L),
    And(Vec<Expr<L>>),
    Or(Vec<Expr<L>>),
    Bool(bool),
    /// `is_chassis_resident(port)`, possibly negated.
    Resident {
        port: String,
        negated: bool,
    },
}

impl<L> Expr<L> {
    /// AND/OR constructor that flattens same-type children and drops singletons.
    pub fn and_or(is_and: bool, items: Vec<Expr<L>>) -> Self {
        let mut out = Vec::with_capacity(items.len());
        for it in items {
            match it {
                Expr::And(v) if is_and => out.extend(v),
                Expr::Or(v) if !is_and => out.extend(v),
                other => out.push(other),
            }
        }
        match out.len() {
            0 => Expr::Bool(is_and),
            1 => out.pop().unwrap_or(Expr::Bool(is_and)),
            _ if is_and => Expr::And(out),
            _ => Expr::Or(out),
        }
    }
}

/// Supplies address sets and port groups (already filtered to local ports) to the parser.
pub trait ExprContext {
    fn address_set(&self, name: &str) -> Option<&[String]>;
    fn port_group(&self, name: &str) -> Option<&[String]>;
    /// The constants of address set `name`; a context that sees the same set in many
    /// matches parses it once.
    fn address_set_consts(&self, name: &str) -> Option<Arc<[Const]>> {
        self.address_set(name).map(parse_address_set)
    }
    /// The release whose symbols the expression is written in.
    fn dialect(&self) -> &'static Dialect {
        &super::dialect::OVN_23_03
    }
}

/// An address set's entries as constants. Entries that are not integers are skipped, as
/// ovn-controller does.
pub fn parse_address_set(entries: &[String]) -> Arc<[Const]> {
    let mut vals = Vec::with_capacity(entries.len());
    for entry in entries {
        let Ok(t) = tokenize(entry) else {
            continue;
        };
        if t.len() != 2 {
            continue;
        }
        match &t[0].token {
            Token::Int { value, format } => vals.push(Const::Int {
                value: *value,
                mask: None,
                format: *format,
            }),
            Token::Masked {
                value,
                mask,
                format,
            } => vals.push(Const::Int {
                value: *value,
                mask: Some(*mask),
                format: *format,
            }),
            _ => {}
        }
    }
    vals.into()
}

/// A context without sets.
pub struct NoSets;

impl ExprContext for NoSets {
    fn address_set(&self, _: &str) -> Option<&[String]> {
        None
    }
    fn port_group(&self, _: &str) -> Option<&[String]> {
        None
    }
}

const MAX_DEPTH: usize = 100;

/// Parses a match expression.
pub fn parse_expr(input: &str, ctx: &dyn ExprContext) -> Result<Expr<Cmp>> {
    let toks = tokenize(input)?;
    let mut p = Parser {
        toks: &toks,
        i: 0,
        ctx,
        depth: 0,
    };
    let e = p.expr()?;
    if p.peek() != &Token::End {
        return Err(p.err("Syntax error: expecting end of input"));
    }
    check_nominal(&e)?;
    Ok(e)
}

pub(crate) struct Parser<'a> {
    pub toks: &'a [Spanned],
    pub i: usize,
    pub ctx: &'a dyn ExprContext,
    pub depth: usize,
}

/// A constant of a comparison's right-hand side.
#[derive(Clone, Debug)]
pub enum Const {
    Int {
        value: u128,
        mask: Option<u128>,
        format: IntFormat,
    },
    Str(String),
}

impl Parser<'_> {
    pub fn peek(&self) -> &Token {
        &self.toks[self.i.min(self.toks.len() - 1)].token
    }

    pub fn peek_at(&self, k: usize) -> &Token {
        &self.toks[(self.i + k).min(self.toks.len() - 1)].token
    }

    pub fn pos(&self) -> usize {
        self.toks[self.i.min(self.toks.len() - 1)].pos
    }

    pub fn bump(&mut self) -> Token {
        let t = self.peek().clone();
        if self.i < self.toks.len() - 1 {
            self.i += 1;
        }
        t
    }

    pub fn err(&self, msg: &str) -> LflowError {
        LflowError::Syntax {
            pos: self.pos(),
            msg: msg.to_string(),
        }
    }

    pub fn expect(&mut self, t: &Token, what: &str) -> Result<()> {
        if self.peek() == t {
            self.bump();
            Ok(())
        } else {
            Err(self.err(&format!("expecting {what}")))
        }
    }

    fn expr(&mut self) -> Result<Expr<Cmp>> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err("Parentheses nested too deeply."));
        }
        let first = self.unary()?;
        let op = self.peek().clone();
        let result = if op == Token::LogAnd || op == Token::LogOr {
            let mut items = vec![first];
            while self.peek() == &op {
                self.bump();
                items.push(self.unary()?);
            }
            if matches!(self.peek(), Token::LogAnd | Token::LogOr) {
                return Err(self.err("&& and || must be parenthesized when used together."));
            }
            Expr::and_or(op == Token::LogAnd, items)
        } else {
            first
        };
        self.depth -= 1;
        Ok(result)
    }

    fn unary(&mut self) -> Result<Expr<Cmp>> {
        if self.peek() == &Token::Not {
            self.bump();
            if let Token::Id(name) = self.peek().clone() {
                // `!reg0` means reg0 == 0 for a multibit field.
                if self.ctx.dialect().symbol(&name).is_some()
                    && Relop::from_token(self.peek_at(1)).is_none()
                    && self.peek_at(1) != &Token::LParen
                {
                    let (field, _) = self.field()?;
                    return Ok(negate(bare_field(field, true)?));
                }
            }
            let (e, atomic) = self.primary()?;
            if !atomic {
                return Err(self.err("Missing parentheses around operand of !."));
            }
            return Ok(negate(e));
        }
        Ok(self.primary()?.0)
    }

    fn primary(&mut self) -> Result<(Expr<Cmp>, bool)> {
        match self.peek().clone() {
            Token::LParen => {
                self.bump();
                let e = self.expr()?;
                self.expect(&Token::RParen, "`)'")?;
                Ok((e, true))
            }
            Token::Id(name)
                if name == "is_chassis_resident" && self.peek_at(1) == &Token::LParen =>
            {
                self.bump();
                self.bump();
                let Token::Str(port) = self.bump() else {
                    return Err(self.err("is_chassis_resident() requires a string argument"));
                };
                self.expect(&Token::RParen, "`)'")?;
                Ok((
                    Expr::Resident {
                        port,
                        negated: false,
                    },
                    true,
                ))
            }
            Token::Id(_) => {
                let (field, explicit_slice) = self.field()?;
                if let Some(relop) = Relop::from_token(self.peek()) {
                    self.bump();
                    let (consts, braced, unbraced_macro) = self.cset()?;
                    return Ok((
                        build_cmp(&field, relop, consts, braced, unbraced_macro)?,
                        false,
                    ));
                }
                let _ = explicit_slice;
                Ok((bare_field(field, false)?, true))
            }
            Token::Int {
                value,
                format: IntFormat::Decimal,
            } if value <= 1 && Relop::from_token(self.peek_at(1)).is_none() => {
                self.bump();
                Ok((Expr::Bool(value == 1), true))
            }
            Token::Template(_) => Err(self.err("Unexpanded template.")),
            Token::Str(_)
            | Token::Int { .. }
            | Token::Masked { .. }
            | Token::Macro(_)
            | Token::PortGroup(_)
            | Token::LCurly => {
                let (consts, braced, m) = self.cset()?;
                let relop = Relop::from_token(self.peek())
                    .ok_or_else(|| self.err("Syntax error: expecting relational operator"))?;
                self.bump();
                let (field, _) = self.field()?;
                let e1 = build_cmp(&field, relop.reverse(), consts, braced, m)?;
                if let Some(relop2) = Relop::from_token(self.peek()) {
                    let lt = |r: Relop| matches!(r, Relop::Lt | Relop::Le);
                    let gt = |r: Relop| matches!(r, Relop::Gt | Relop::Ge);
                    if !((lt(relop) && lt(relop2)) || (gt(relop) && gt(relop2))) {
                        return Err(self.err("Range expressions must have the form `x < field < y' or `x > field > y', with each `<' optionally replaced by `<=' or `>' by `>=')."));
                    }
                    self.bump();
                    let (consts2, braced2, m2) = self.cset()?;
                    let e2 = build_cmp(&field, relop2, consts2, braced2, m2)?;
                    return Ok((Expr::and_or(true, vec![e1, e2]), false));
                }
                Ok((e1, false))
            }
            Token::End => {
                Err(self.err("Syntax error at end of input expecting field name, constant or `('."))
            }
            _ => Err(self.err("Syntax error: expecting field name, constant or `('.")),
        }
    }

    /// `ID [ '[' INT [ '..' INT ] ']' ]`
    fn field(&mut self) -> Result<(FieldRef, bool)> {
        let pos = self.pos();
        let Token::Id(name) = self.bump() else {
            return Err(self.err("expecting field name"));
        };
        let sym = self.ctx.dialect().symbol(&name).ok_or(LflowError::Syntax {
            pos,
            msg: format!("Syntax error at `{name}' expecting field name."),
        })?;
        let mut f = FieldRef {
            sym,
            lo: 0,
            width: sym.width,
        };
        if self.peek() != &Token::LSquare {
            return Ok((f, false));
        }
        self.bump();
        let lo = self.small_int()?;
        let hi = if self.peek() == &Token::Ellipsis {
            self.bump();
            self.small_int()?
        } else {
            lo
        };
        self.expect(&Token::RSquare, "`]'")?;
        if hi < lo || hi >= sym.width {
            return Err(LflowError::Syntax {
                pos,
                msg: format!("Invalid bit range {lo}..{hi} for {name}"),
            });
        }
        if sym.level != Level::Ordinal && !(lo == 0 && hi + 1 == sym.width) {
            return semantic(format!("Cannot select subfield of nominal field {name}."));
        }
        f.lo = lo;
        f.width = hi - lo + 1;
        Ok((f, true))
    }

    pub fn small_int(&mut self) -> Result<u32> {
        match self.bump() {
            Token::Int {
                value,
                format: IntFormat::Decimal | IntFormat::Hex,
            } if value < 4096 => Ok(value as u32),
            _ => Err(self.err("expecting small integer")),
        }
    }

    /// Returns the constants, whether they were braced, and whether a lone `$set` was used.
    fn cset(&mut self) -> Result<(Vec<Const>, bool, bool)> {
        let mut out = Vec::new();
        if self.peek() == &Token::LCurly {
            self.bump();
            while self.peek() != &Token::RCurly {
                self.constant(&mut out)?;
                if self.peek() == &Token::Comma {
                    self.bump();
                }
            }
            self.bump();
            return Ok((out, true, false));
        }
        let is_macro = matches!(self.peek(), Token::Macro(_));
        self.constant(&mut out)?;
        Ok((out, false, is_macro))
    }

    fn constant(&mut self, out: &mut Vec<Const>) -> Result<()> {
        match self.bump() {
            Token::Str(s) => out.push(Const::Str(s)),
            Token::Int { value, format } => out.push(Const::Int {
                value,
                mask: None,
                format,
            }),
            Token::Masked {
                value,
                mask,
                format,
            } => out.push(Const::Int {
                value,
                mask: Some(mask),
                format,
            }),
            Token::Macro(name) => {
                let set = self
                    .ctx
                    .address_set_consts(&name)
                    .ok_or_else(|| LflowError::Semantic(format!("{name}: unknown address set")))?;
                out.extend(set.iter().cloned());
            }
            Token::PortGroup(name) => {
                let set = self
                    .ctx
                    .port_group(&name)
                    .ok_or_else(|| LflowError::Semantic(format!("{name}: unknown port group")))?;
                out.extend(set.iter().map(|s| Const::Str(s.clone())));
            }
            Token::Template(_) => return Err(self.err("Unexpanded template.")),
            _ => return Err(self.err("Syntax error: expecting constant")),
        }
        Ok(())
    }
}

/// A symbol with a bit slice.
#[derive(Clone, Copy, Debug)]
pub struct FieldRef {
    pub sym: &'static Symbol,
    pub lo: u32,
    pub width: u32,
}

fn slice_mask(width: u32) -> u128 {
    if width >= 128 {
        u128::MAX
    } else {
        (1u128 << width) - 1
    }
}

fn bare_field(f: FieldRef, negated_context: bool) -> Result<Expr<Cmp>> {
    if f.sym.is_string() {
        return semantic(format!(
            "Can't use string field {} as a Boolean.",
            f.sym.name
        ));
    }
    if f.width == 1 || matches!(f.sym.kind, SymKind::Predicate(_)) {
        return Ok(Expr::Leaf(Cmp {
            symbol: f.sym.name.as_str(),
            lo: f.lo,
            width: 1,
            relop: Relop::Eq,
            value: CmpValue::Int { value: 1, mask: 1 },
        }));
    }
    if !negated_context {
        return semantic(format!(
            "Explicit `!= 0' is required for inequality test of multibit field against 0 ({}).",
            f.sym.name
        ));
    }
    // Caller negates this into `field == 0`.
    Ok(Expr::Leaf(Cmp {
        symbol: f.sym.name.as_str(),
        lo: f.lo,
        width: f.width,
        relop: Relop::Ne,
        value: CmpValue::Int {
            value: 0,
            mask: slice_mask(f.width),
        },
    }))
}

fn build_cmp(
    f: &FieldRef,
    relop: Relop,
    consts: Vec<Const>,
    braced: bool,
    unbraced_macro: bool,
) -> Result<Expr<Cmp>> {
    let name = f.sym.name.as_str();
    let relational = !matches!(relop, Relop::Eq | Relop::Ne);
    if relational {
        if braced {
            return semantic(
                "Only == and != operators may be used to compare a field against a set of values.",
            );
        }
        if f.sym.level != Level::Ordinal || f.sym.is_string() {
            return semantic(format!(
                "Only == and != operators may be used with nominal field {name}."
            ));
        }
        if unbraced_macro && consts.is_empty() {
            return semantic("Empty address set used with a relational operator.");
        }
    }
    let mut leaves = Vec::with_capacity(consts.len());
    for c in consts {
        let value = match c {
            Const::Str(s) => {
                if !f.sym.is_string() {
                    return semantic(format!("String constant used with integer field {name}."));
                }
                CmpValue::Str(s)
            }
            Const::Int {
                value,
                mask,
                format,
            } => {
                if f.sym.is_string() {
                    return semantic(format!("Integer constant used with string field {name}."));
                }
                let w = match mask {
                    Some(m) => 128 - m.leading_zeros(),
                    None => min_width(value, format),
                };
                if w > f.sym.width {
                    return semantic(format!(
                        "{w}-bit constant is not compatible with {}-bit field {name}.",
                        f.sym.width
                    ));
                }
                if mask.is_some() && relational {
                    return semantic("Only == and != operators may be used with masked constants.");
                }
                let sm = slice_mask(f.width);
                let m = mask.unwrap_or(u128::MAX) & sm;
                CmpValue::Int {
                    value: value & m,
                    mask: m,
                }
            }
        };
        leaves.push(Expr::Leaf(Cmp {
            symbol: name,
            lo: f.lo,
            width: f.width,
            relop,
            value,
        }));
    }
    // `==` over a set is an OR; every other operator combines with AND.
    Ok(Expr::and_or(relop != Relop::Eq, leaves))
}

/// Pushes a negation down the tree (De Morgan, relop inversion).
pub fn negate(e: Expr<Cmp>) -> Expr<Cmp> {
    match e {
        Expr::Leaf(mut c) => {
            c.relop = c.relop.negate();
            Expr::Leaf(c)
        }
        Expr::And(v) => Expr::and_or(false, v.into_iter().map(negate).collect()),
        Expr::Or(v) => Expr::and_or(true, v.into_iter().map(negate).collect()),
        Expr::Bool(b) => Expr::Bool(!b),
        Expr::Resident { port, negated } => Expr::Resident {
            port,
            negated: !negated,
        },
    }
}

/// Nominal fields and predicates may only be tested positively.
fn check_nominal(e: &Expr<Cmp>) -> Result<()> {
    match e {
        Expr::Leaf(c) => {
            let Some(sym) = symtab().get(c.symbol) else {
                return Ok(());
            };
            if sym.level == Level::Nominal {
                let positive = match (&sym.kind, &c.value) {
                    (SymKind::Predicate(_), CmpValue::Int { value, .. }) => {
                        (c.relop == Relop::Eq) == (*value != 0)
                    }
                    _ => c.relop == Relop::Eq,
                };
                if !positive {
                    return semantic(format!("Nominal field {} may only be tested for equality (taking enclosing `!' operators into account).", c.symbol));
                }
            }
            Ok(())
        }
        Expr::And(v) | Expr::Or(v) => v.iter().try_for_each(check_nominal),
        _ => Ok(()),
    }
}
