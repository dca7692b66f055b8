//! Decoding of column values straight into Rust types (used by the generated
//! row structs), and the update2 "diff" semantics for sets and maps.
//!
//! No JSON tree is built: a column arrives as a datum and lands in a `String`,
//! `i64`, `Option<Uuid>`, `BTreeSet<_>` or `BTreeMap<_, _>`.

use std::collections::BTreeSet;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeOwned, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use thiserror::Error;
use uuid::Uuid;

use crate::datum::{tagged_atom, Atom, Datum};
use crate::ovsmap::OvsMap;

/// A Rust type that holds one OVSDB atom.
pub trait AtomValue: Sized + Clone {
    /// Converts a decoded atom, or says which type was expected.
    fn from_atom(atom: Atom) -> Result<Self, &'static str>;
    /// The dynamic form, for conditions, transactions and comparisons.
    fn to_atom(&self) -> Atom;
}

impl AtomValue for i64 {
    fn from_atom(atom: Atom) -> Result<Self, &'static str> {
        atom.as_integer().ok_or("expected an integer")
    }
    fn to_atom(&self) -> Atom {
        Atom::Integer(*self)
    }
}

impl AtomValue for f64 {
    fn from_atom(atom: Atom) -> Result<Self, &'static str> {
        atom.as_real().ok_or("expected a real")
    }
    fn to_atom(&self) -> Atom {
        Atom::Real(*self)
    }
}

impl AtomValue for bool {
    fn from_atom(atom: Atom) -> Result<Self, &'static str> {
        match atom {
            Atom::Boolean(b) => Ok(b),
            _ => Err("expected a boolean"),
        }
    }
    fn to_atom(&self) -> Atom {
        Atom::Boolean(*self)
    }
}

impl AtomValue for String {
    fn from_atom(atom: Atom) -> Result<Self, &'static str> {
        match atom {
            Atom::String(s) => Ok(s),
            _ => Err("expected a string"),
        }
    }
    fn to_atom(&self) -> Atom {
        Atom::String(self.clone())
    }
}

impl AtomValue for Uuid {
    fn from_atom(atom: Atom) -> Result<Self, &'static str> {
        match atom {
            Atom::Uuid(u) => Ok(u),
            _ => Err("expected a uuid"),
        }
    }
    fn to_atom(&self) -> Atom {
        Atom::Uuid(*self)
    }
}

/// One atom on the wire, decoded into `T`.
#[derive(Debug, Clone, PartialEq)]
pub struct WireAtom<T>(pub T);

impl<'de, T: AtomValue> Deserialize<'de> for WireAtom<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let atom = Atom::deserialize(d)?;
        T::from_atom(atom).map(WireAtom).map_err(de::Error::custom)
    }
}

/// A set on the wire (a bare atom or `["set", [...]]`), decoded into `Vec<T>`.
#[derive(Debug, Clone, PartialEq)]
pub struct WireSet<T>(pub Vec<T>);

struct SetVisitor<T>(PhantomData<T>);

impl<T: AtomValue> SetVisitor<T> {
    fn one<E: de::Error>(atom: Atom) -> Result<WireSet<T>, E> {
        T::from_atom(atom)
            .map(|v| WireSet(vec![v]))
            .map_err(E::custom)
    }
}

impl<'de, T: AtomValue> Visitor<'de> for SetVisitor<T> {
    type Value = WireSet<T>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an OVSDB set")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Self::one(Atom::Integer(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        let v = i64::try_from(v).map_err(|_| E::custom("integer out of range"))?;
        Self::one(Atom::Integer(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Self::one(Atom::Real(v))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Self::one(Atom::Boolean(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Self::one(Atom::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Self::one(Atom::String(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let tag: std::borrow::Cow<'de, str> = seq
            .next_element()?
            .ok_or_else(|| de::Error::custom("empty array is not a set"))?;
        if tag != "set" {
            return Self::one(tagged_atom(&tag, &mut seq)?);
        }
        let items: Vec<WireAtom<T>> = seq
            .next_element()?
            .ok_or_else(|| de::Error::custom("set without elements"))?;
        if seq.next_element::<de::IgnoredAny>()?.is_some() {
            return Err(de::Error::custom("set with extra elements"));
        }
        Ok(WireSet(items.into_iter().map(|a| a.0).collect()))
    }
}

impl<'de, T: AtomValue> Deserialize<'de> for WireSet<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SetVisitor(PhantomData))
    }
}

/// A map on the wire (`["map", [[k, v], ...]]`), decoded into pairs.
#[derive(Debug, Clone, PartialEq)]
pub struct WireMap<K, V>(pub Vec<(K, V)>);

impl<'de, K: AtomValue, V: AtomValue> Deserialize<'de> for WireMap<K, V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        type Pairs<K, V> = Vec<(WireAtom<K>, WireAtom<V>)>;
        let (tag, pairs): (std::borrow::Cow<'de, str>, Pairs<K, V>) = Deserialize::deserialize(d)?;
        if tag != "map" {
            return Err(de::Error::custom("expected [\"map\", ...]"));
        }
        Ok(WireMap(
            pairs.into_iter().map(|(k, v)| (k.0, v.0)).collect(),
        ))
    }
}

/// A row update cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RowError {
    #[error("column {column}: {reason}")]
    Column {
        column: &'static str,
        reason: &'static str,
    },
    #[error("cannot decode row: {0}")]
    Decode(String),
}

/// A typed row of one table, generated from a schema.
pub trait Row: Clone + Default + PartialEq + fmt::Debug + Send + Sync + 'static {
    /// The table name as in the schema.
    const TABLE: &'static str;
    /// All columns, in schema order.
    const COLUMNS: &'static [&'static str];
    /// The wire form of a (possibly partial) row: present columns only.
    type Update: DeserializeOwned;

    /// Sets the columns present in an `initial`/`insert`/`new` row.
    fn apply_new(&mut self, update: Self::Update) -> Result<(), RowError>;
    /// Applies an update2 `modify` diff.
    fn apply_diff(&mut self, update: Self::Update) -> Result<(), RowError>;
    /// One column in dynamic form.
    fn column(&self, name: &str) -> Option<Datum>;
    /// All columns in dynamic form, in schema order.
    fn to_datums(&self) -> Vec<(&'static str, Datum)>;
}

/// Applies the "diff" of an optional column (min 0, max 1): ovsdb-server sends the new
/// value itself, not a symmetric difference (observed with OVS 3.1: `up` going from false
/// to true arrives as `"up":true`, cleared as `"up":["set",[]]`).
pub fn apply_optional_diff<T: AtomValue + PartialEq>(
    current: &mut Option<T>,
    diff: Vec<T>,
    column: &'static str,
) -> Result<(), RowError> {
    if diff.len() > 1 {
        return Err(RowError::Column {
            column,
            reason: "more than one value for an optional column",
        });
    }
    *current = diff.into_iter().next();
    Ok(())
}

/// Applies a set diff: elements present are removed, absent ones added.
pub fn apply_set_diff<T: Ord>(current: &mut BTreeSet<T>, diff: Vec<T>) {
    for item in diff {
        if current.contains(&item) {
            current.remove(&item);
        } else {
            current.insert(item);
        }
    }
}

/// Applies a map diff: a pair equal to the current one removes the key, any other
/// value of an existing key replaces it, a new key is added.
pub fn apply_map_diff<K: Ord, V: PartialEq>(current: &mut OvsMap<K, V>, diff: Vec<(K, V)>) {
    for (key, value) in diff {
        match current.get(&key) {
            Some(old) if *old == value => {
                current.remove(&key);
            }
            _ => {
                current.insert(key, value);
            }
        }
    }
}

/// Exactly one value for a scalar column.
pub fn exactly_one<T>(mut values: Vec<T>, column: &'static str) -> Result<T, RowError> {
    if values.len() != 1 {
        return Err(RowError::Column {
            column,
            reason: "expected exactly one value",
        });
    }
    values.pop().ok_or(RowError::Column {
        column,
        reason: "expected exactly one value",
    })
}

/// At most one value for an optional column.
pub fn at_most_one<T>(mut values: Vec<T>, column: &'static str) -> Result<Option<T>, RowError> {
    if values.len() > 1 {
        return Err(RowError::Column {
            column,
            reason: "expected at most one value",
        });
    }
    Ok(values.pop())
}

/// Dynamic forms of typed columns, used by the generated `column`/`to_datums`.
pub fn scalar_datum<T: AtomValue>(v: &T) -> Datum {
    Datum::Set(vec![v.to_atom()])
}

/// See [`scalar_datum`].
pub fn optional_datum<T: AtomValue>(v: &Option<T>) -> Datum {
    Datum::Set(v.iter().map(AtomValue::to_atom).collect())
}

/// See [`scalar_datum`].
pub fn set_datum<T: AtomValue>(v: &BTreeSet<T>) -> Datum {
    Datum::Set(v.iter().map(AtomValue::to_atom).collect()).normalized()
}

/// See [`scalar_datum`].
pub fn map_datum<K: AtomValue + Ord, V: AtomValue>(v: &OvsMap<K, V>) -> Datum {
    Datum::Map(v.iter().map(|(k, v)| (k.to_atom(), v.to_atom())).collect()).normalized()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_decodes_bare_atom_and_tagged_set() {
        let one: WireSet<String> = serde_json::from_str(r#""a""#).unwrap();
        assert_eq!(one.0, vec!["a".to_owned()]);
        let many: WireSet<i64> = serde_json::from_str(r#"["set",[1,2]]"#).unwrap();
        assert_eq!(many.0, vec![1, 2]);
        let u: WireSet<Uuid> =
            serde_json::from_str(r#"["uuid","36bb4ef2-5f4f-4d36-8c1c-7d7a6b0e0a11"]"#).unwrap();
        assert_eq!(u.0.len(), 1);
        assert!(serde_json::from_str::<WireSet<i64>>(r#""a""#).is_err());
        assert!(serde_json::from_str::<WireSet<i64>>(r#"["map",[]]"#).is_err());
    }

    #[test]
    fn map_decodes() {
        let m: WireMap<String, i64> = serde_json::from_str(r#"["map",[["a",1],["b",2]]]"#).unwrap();
        assert_eq!(m.0, vec![("a".to_owned(), 1), ("b".to_owned(), 2)]);
        assert!(serde_json::from_str::<WireMap<String, i64>>(r#"["set",[]]"#).is_err());
        assert!(serde_json::from_str::<WireMap<String, i64>>(r#"["map",[["a","x"]]]"#).is_err());
    }

    #[test]
    fn diff_semantics() {
        let mut set: BTreeSet<i64> = [1, 2].into();
        apply_set_diff(&mut set, vec![2, 3]);
        assert_eq!(set, [1, 3].into());

        let mut map: OvsMap<String, String> =
            [("a".into(), "1".into()), ("b".into(), "2".into())].into();
        apply_map_diff(
            &mut map,
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "9".into()),
                ("c".into(), "3".into()),
            ],
        );
        assert_eq!(
            map,
            [("b".into(), "9".into()), ("c".into(), "3".into())].into()
        );

        // What ovsdb-server sends for an optional column is the new value.
        let mut opt = Some(5i64);
        apply_optional_diff(&mut opt, vec![6], "x").unwrap();
        assert_eq!(opt, Some(6));
        apply_optional_diff(&mut opt, vec![], "x").unwrap();
        assert_eq!(opt, None);
        assert!(apply_optional_diff(&mut opt, vec![1, 2], "x").is_err());
    }
}
