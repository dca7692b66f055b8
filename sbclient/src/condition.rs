//! Conditions: the `where` clauses of RFC 7047 (section 5.1) plus the Open vSwitch
//! extensions used by `monitor_cond`: the constant clauses `true` and `false`.
//!
//! A transaction's `where` is the conjunction of its clauses; a monitor condition
//! is the disjunction of its clauses (an empty monitor condition selects all rows).

use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

use crate::datum::{Atom, Datum};

/// The comparison functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Function {
    Lt,
    Le,
    Eq,
    Ne,
    Ge,
    Gt,
    Includes,
    Excludes,
}

impl Function {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Function::Lt => "<",
            Function::Le => "<=",
            Function::Eq => "==",
            Function::Ne => "!=",
            Function::Ge => ">=",
            Function::Gt => ">",
            Function::Includes => "includes",
            Function::Excludes => "excludes",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "<" => Function::Lt,
            "<=" => Function::Le,
            "==" => Function::Eq,
            "!=" => Function::Ne,
            ">=" => Function::Ge,
            ">" => Function::Gt,
            "includes" => Function::Includes,
            "excludes" => Function::Excludes,
            _ => return None,
        })
    }
}

/// One clause.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Clause {
    /// The OVS constant clause `true`.
    True,
    /// The OVS constant clause `false`.
    False,
    /// `[column, function, value]`.
    Compare {
        column: String,
        function: Function,
        value: Datum,
    },
}

impl Clause {
    /// `[column, function, value]`.
    pub fn new(column: impl Into<String>, function: Function, value: impl Into<Datum>) -> Self {
        Clause::Compare {
            column: column.into(),
            function,
            value: value.into().normalized(),
        }
    }

    /// `column == value`.
    pub fn eq(column: impl Into<String>, value: impl Into<Datum>) -> Self {
        Self::new(column, Function::Eq, value)
    }

    /// Evaluates the clause; `column` returns a column value of the row.
    /// A clause on a column the row does not have is false.
    pub fn evaluate(&self, column: &dyn Fn(&str) -> Option<Datum>) -> bool {
        match self {
            Clause::True => true,
            Clause::False => false,
            Clause::Compare {
                column: name,
                function,
                value,
            } => match column(name) {
                Some(actual) => compare(&actual.normalized(), *function, value),
                None => false,
            },
        }
    }
}

fn compare(actual: &Datum, function: Function, arg: &Datum) -> bool {
    match function {
        Function::Eq => actual == arg,
        Function::Ne => actual != arg,
        Function::Includes => includes(actual, arg),
        Function::Excludes => excludes(actual, arg),
        Function::Lt | Function::Le | Function::Ge | Function::Gt => {
            let (Some(a), Some(b)) = (number(actual), number(arg)) else {
                return false;
            };
            match function {
                Function::Lt => a < b,
                Function::Le => a <= b,
                Function::Ge => a >= b,
                _ => a > b,
            }
        }
    }
}

fn number(d: &Datum) -> Option<f64> {
    d.as_scalar().and_then(Atom::as_real)
}

fn includes(actual: &Datum, arg: &Datum) -> bool {
    match (actual, arg) {
        (Datum::Set(have), Datum::Set(want)) => want.iter().all(|w| have.binary_search(w).is_ok()),
        (Datum::Map(have), Datum::Map(want)) => want.iter().all(|w| have.contains(w)),
        _ => false,
    }
}

fn excludes(actual: &Datum, arg: &Datum) -> bool {
    match (actual, arg) {
        (Datum::Set(have), Datum::Set(want)) => want.iter().all(|w| have.binary_search(w).is_err()),
        (Datum::Map(have), Datum::Map(want)) => want.iter().all(|w| !have.contains(w)),
        _ => false,
    }
}

/// A list of clauses.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Condition(pub Vec<Clause>);

impl Condition {
    /// Selects every row (`[true]`).
    pub fn all() -> Self {
        Condition(vec![Clause::True])
    }

    /// Selects no row (`[false]`).
    pub fn none() -> Self {
        Condition(vec![Clause::False])
    }

    /// Monitor semantics: true if any clause is true, or if there are no clauses.
    pub fn matches_any(&self, column: &dyn Fn(&str) -> Option<Datum>) -> bool {
        self.0.is_empty() || self.0.iter().any(|c| c.evaluate(column))
    }

    /// Transaction `where` semantics: true if every clause is true.
    pub fn matches_all(&self, column: &dyn Fn(&str) -> Option<Datum>) -> bool {
        self.0.iter().all(|c| c.evaluate(column))
    }

    /// The condition for a server whose schema lacks some columns (`has(column)` false):
    /// as a monitor condition (a disjunction), a clause on a column the server does not
    /// have selects nothing and is left out (the server would refuse the whole request);
    /// if nothing is left, `[false]`.
    pub fn for_monitor_without(&self, has: impl Fn(&str) -> bool) -> Self {
        let kept: Vec<Clause> = self
            .0
            .iter()
            .filter(|c| match c {
                Clause::Compare { column, .. } => has(column),
                _ => true,
            })
            .cloned()
            .collect();
        if kept.is_empty() && !self.0.is_empty() {
            return Self::none();
        }
        Condition(kept)
    }

    /// Sorted, deduplicated clauses, so two conditions can be compared.
    pub fn normalized(mut self) -> Self {
        self.0.sort();
        self.0.dedup();
        self
    }
}

impl Serialize for Clause {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Clause::True => s.serialize_bool(true),
            Clause::False => s.serialize_bool(false),
            Clause::Compare {
                column,
                function,
                value,
            } => (column, function.as_str(), value).serialize(s),
        }
    }
}

struct ClauseVisitor;

impl<'de> Visitor<'de> for ClauseVisitor {
    type Value = Clause;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a clause: true, false or [column, function, value]")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Clause, E> {
        Ok(if v { Clause::True } else { Clause::False })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Clause, A::Error> {
        let column: String = seq
            .next_element()?
            .ok_or_else(|| de::Error::custom("clause without column"))?;
        let function: String = seq
            .next_element()?
            .ok_or_else(|| de::Error::custom("clause without function"))?;
        let value: Datum = seq
            .next_element()?
            .ok_or_else(|| de::Error::custom("clause without value"))?;
        if seq.next_element::<de::IgnoredAny>()?.is_some() {
            return Err(de::Error::custom("clause with extra elements"));
        }
        let function = Function::parse(&function)
            .ok_or_else(|| de::Error::custom(format!("unknown function {function:?}")))?;
        Ok(Clause::new(column, function, value))
    }
}

impl<'de> Deserialize<'de> for Clause {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ClauseVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn clauses_on_columns_the_server_lacks_are_left_out_of_a_monitor_condition() {
        let c = Condition(vec![
            Clause::eq("type", "patch"),
            Clause::eq("requested_chassis", Atom::from("x")),
        ]);
        let old = |col: &str| col != "requested_chassis";
        assert_eq!(
            c.for_monitor_without(old),
            Condition(vec![Clause::eq("type", "patch")])
        );
        assert_eq!(c.for_monitor_without(|_| true), c);
        let only = Condition(vec![Clause::eq("requested_chassis", Atom::from("x"))]);
        assert_eq!(only.for_monitor_without(old), Condition::none());
        assert_eq!(Condition::all().for_monitor_without(old), Condition::all());
    }

    fn row(name: &str) -> Option<Datum> {
        match name {
            "name" => Some(Datum::scalar("lp1")),
            "tag" => Some(Datum::scalar(7)),
            "opt" => Some(Datum::set(Vec::<i64>::new())),
            "macs" => Some(Datum::set(["a", "b", "c"])),
            "options" => Some(Datum::map([("x", "1"), ("y", "2")])),
            _ => None,
        }
    }

    fn eval(clause: serde_json::Value) -> bool {
        let clause: Clause = serde_json::from_value(clause).unwrap();
        clause.evaluate(&row)
    }

    #[test]
    fn evaluates_all_functions() {
        assert!(eval(json!(true)));
        assert!(!eval(json!(false)));
        assert!(eval(json!(["name", "==", "lp1"])));
        assert!(!eval(json!(["name", "!=", "lp1"])));
        assert!(eval(json!(["name", "!=", "lp2"])));
        assert!(eval(json!(["tag", "<", 8])));
        assert!(eval(json!(["tag", "<=", 7])));
        assert!(!eval(json!(["tag", ">", 7])));
        assert!(eval(json!(["tag", ">=", 7])));
        assert!(!eval(json!(["opt", "<", 8])), "empty optional never orders");
        assert!(eval(json!(["opt", "==", ["set", []]])));
        assert!(eval(json!(["macs", "includes", ["set", ["c", "a"]]])));
        assert!(!eval(json!(["macs", "includes", ["set", ["a", "z"]]])));
        assert!(eval(json!(["macs", "excludes", ["set", ["y", "z"]]])));
        assert!(!eval(json!(["macs", "excludes", ["set", ["y", "b"]]])));
        assert!(eval(json!(["macs", "==", ["set", ["c", "b", "a"]]])));
        assert!(eval(json!(["options", "includes", ["map", [["y", "2"]]]])));
        assert!(!eval(json!(["options", "includes", ["map", [["y", "3"]]]])));
        assert!(eval(json!(["options", "excludes", ["map", [["y", "3"]]]])));
        assert!(!eval(json!(["nope", "==", 1])));
    }

    #[test]
    fn any_and_all() {
        let c: Condition =
            serde_json::from_value(json!([["name", "==", "x"], ["tag", "==", 7]])).unwrap();
        assert!(c.matches_any(&row));
        assert!(!c.matches_all(&row));
        assert!(Condition(vec![]).matches_any(&row));
        assert!(!Condition::none().matches_any(&row));
        assert!(Condition::all().matches_any(&row));
    }

    #[test]
    fn wire_round_trip() {
        let wire = json!([
            true,
            false,
            ["logical_port", "==", "lp1"],
            [
                "datapaths",
                "includes",
                ["uuid", "36bb4ef2-5f4f-4d36-8c1c-7d7a6b0e0a11"]
            ]
        ]);
        let c: Condition = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(serde_json::to_value(&c).unwrap(), wire);
        assert!(serde_json::from_value::<Clause>(json!(["a", "~", 1])).is_err());
        assert!(serde_json::from_value::<Clause>(json!(["a", "=="])).is_err());
        assert!(serde_json::from_value::<Clause>(json!(1)).is_err());
    }
}
