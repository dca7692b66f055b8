//! OVSDB atoms and datums, encoded exactly as RFC 7047 section 5.1 says:
//! an atom is a JSON number, boolean or string, `["uuid", "<uuid>"]` or
//! `["named-uuid", "<id>"]`; a set is a bare atom (one element) or
//! `["set", [atoms]]`; a map is `["map", [[key, value], ...]]`.

use std::cmp::Ordering;
use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::ser::{SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// One OVSDB value of an atomic type.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Atom {
    Integer(i64),
    Real(f64),
    Boolean(bool),
    String(String),
    Uuid(Uuid),
    /// A reference to a row inserted earlier in the same transaction.
    NamedUuid(String),
}

impl Atom {
    fn rank(&self) -> u8 {
        match self {
            Atom::Integer(_) => 0,
            Atom::Real(_) => 1,
            Atom::Boolean(_) => 2,
            Atom::String(_) => 3,
            Atom::Uuid(_) => 4,
            Atom::NamedUuid(_) => 5,
        }
    }

    /// The atom as an integer, if it is one.
    pub fn as_integer(&self) -> Option<i64> {
        match self {
            Atom::Integer(i) => Some(*i),
            _ => None,
        }
    }

    /// The atom as a number (integer or real).
    pub fn as_real(&self) -> Option<f64> {
        match self {
            Atom::Integer(i) => Some(*i as f64),
            Atom::Real(r) => Some(*r),
            _ => None,
        }
    }

    /// The atom as a string, if it is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Atom::String(s) => Some(s),
            _ => None,
        }
    }
}

impl PartialEq for Atom {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Atom {}

impl PartialOrd for Atom {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Atom {
    /// A total order (reals by `total_cmp`), so datums can be normalized and compared.
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Atom::Integer(a), Atom::Integer(b)) => a.cmp(b),
            (Atom::Real(a), Atom::Real(b)) => a.total_cmp(b),
            (Atom::Boolean(a), Atom::Boolean(b)) => a.cmp(b),
            (Atom::String(a), Atom::String(b)) | (Atom::NamedUuid(a), Atom::NamedUuid(b)) => {
                a.cmp(b)
            }
            (Atom::Uuid(a), Atom::Uuid(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl fmt::Display for Atom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Atom::Integer(i) => write!(f, "{i}"),
            Atom::Real(r) => write!(f, "{r}"),
            Atom::Boolean(b) => write!(f, "{b}"),
            Atom::String(s) => write!(f, "{s:?}"),
            Atom::Uuid(u) => write!(f, "{u}"),
            Atom::NamedUuid(n) => write!(f, "{n}"),
        }
    }
}

impl From<i64> for Atom {
    fn from(v: i64) -> Self {
        Atom::Integer(v)
    }
}
impl From<f64> for Atom {
    fn from(v: f64) -> Self {
        Atom::Real(v)
    }
}
impl From<bool> for Atom {
    fn from(v: bool) -> Self {
        Atom::Boolean(v)
    }
}
impl From<&str> for Atom {
    fn from(v: &str) -> Self {
        Atom::String(v.to_owned())
    }
}
impl From<String> for Atom {
    fn from(v: String) -> Self {
        Atom::String(v)
    }
}
impl From<&String> for Atom {
    fn from(v: &String) -> Self {
        Atom::String(v.clone())
    }
}
impl From<Uuid> for Atom {
    fn from(v: Uuid) -> Self {
        Atom::Uuid(v)
    }
}

impl Serialize for Atom {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Atom::Integer(i) => s.serialize_i64(*i),
            Atom::Real(r) => s.serialize_f64(*r),
            Atom::Boolean(b) => s.serialize_bool(*b),
            Atom::String(v) => s.serialize_str(v),
            Atom::Uuid(u) => ("uuid", u.hyphenated().to_string()).serialize(s),
            Atom::NamedUuid(n) => ("named-uuid", n).serialize(s),
        }
    }
}

/// Parses the `["uuid", …]` / `["named-uuid", …]` pair after its tag was read.
pub(crate) fn tagged_atom<'de, A: SeqAccess<'de>>(
    tag: &str,
    seq: &mut A,
) -> Result<Atom, A::Error> {
    let text: String = seq
        .next_element()?
        .ok_or_else(|| de::Error::custom(format!("{tag} without value")))?;
    if seq.next_element::<de::IgnoredAny>()?.is_some() {
        return Err(de::Error::custom(format!("{tag} with extra elements")));
    }
    match tag {
        "uuid" => Uuid::parse_str(&text)
            .map(Atom::Uuid)
            .map_err(|_| de::Error::custom(format!("bad uuid {text:?}"))),
        "named-uuid" => Ok(Atom::NamedUuid(text)),
        _ => Err(de::Error::custom(format!("unknown tag {tag:?}"))),
    }
}

struct AtomVisitor;

impl<'de> Visitor<'de> for AtomVisitor {
    type Value = Atom;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an OVSDB atom")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Atom, E> {
        Ok(Atom::Integer(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Atom, E> {
        i64::try_from(v)
            .map(Atom::Integer)
            .map_err(|_| E::custom("integer out of range"))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Atom, E> {
        Ok(Atom::Real(v))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Atom, E> {
        Ok(Atom::Boolean(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Atom, E> {
        Ok(Atom::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Atom, E> {
        Ok(Atom::String(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Atom, A::Error> {
        let tag: std::borrow::Cow<'de, str> = seq
            .next_element()?
            .ok_or_else(|| de::Error::custom("empty array is not an atom"))?;
        tagged_atom(&tag, &mut seq)
    }
}

impl<'de> Deserialize<'de> for Atom {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(AtomVisitor)
    }
}

/// A column value: a set of atoms (a scalar is a set of one) or a map.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Datum {
    Set(Vec<Atom>),
    Map(Vec<(Atom, Atom)>),
}

impl Default for Datum {
    fn default() -> Self {
        Datum::Set(Vec::new())
    }
}

impl Datum {
    /// A set with one element.
    pub fn scalar(atom: impl Into<Atom>) -> Self {
        Datum::Set(vec![atom.into()])
    }

    /// A set.
    pub fn set<A: Into<Atom>>(atoms: impl IntoIterator<Item = A>) -> Self {
        Datum::Set(atoms.into_iter().map(Into::into).collect()).normalized()
    }

    /// A map.
    pub fn map<K: Into<Atom>, V: Into<Atom>>(pairs: impl IntoIterator<Item = (K, V)>) -> Self {
        Datum::Map(
            pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
        .normalized()
    }

    /// An empty map.
    pub fn empty_map() -> Self {
        Datum::Map(Vec::new())
    }

    /// Sorted, without duplicates (maps: last value of a key wins), so that equal
    /// datums compare equal.
    pub fn normalized(self) -> Self {
        match self {
            Datum::Set(mut atoms) => {
                atoms.sort();
                atoms.dedup();
                Datum::Set(atoms)
            }
            Datum::Map(mut pairs) => {
                pairs.reverse();
                pairs.sort_by(|a, b| a.0.cmp(&b.0));
                pairs.dedup_by(|a, b| a.0 == b.0);
                Datum::Map(pairs)
            }
        }
    }

    /// Number of elements (set atoms or map pairs).
    pub fn len(&self) -> usize {
        match self {
            Datum::Set(a) => a.len(),
            Datum::Map(p) => p.len(),
        }
    }

    /// True for the empty set or map.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The single atom of a scalar.
    pub fn as_scalar(&self) -> Option<&Atom> {
        match self {
            Datum::Set(a) if a.len() == 1 => a.first(),
            _ => None,
        }
    }
}

impl<T: Into<Atom>> From<T> for Datum {
    fn from(v: T) -> Self {
        Datum::scalar(v)
    }
}

impl Serialize for Datum {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Datum::Set(atoms) if atoms.len() == 1 => atoms[0].serialize(s),
            Datum::Set(atoms) => ("set", atoms).serialize(s),
            Datum::Map(pairs) => ("map", PairList(pairs)).serialize(s),
        }
    }
}

struct PairList<'a>(&'a [(Atom, Atom)]);

impl Serialize for PairList<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for (k, v) in self.0 {
            seq.serialize_element(&(k, v))?;
        }
        seq.end()
    }
}

struct DatumVisitor;

impl<'de> Visitor<'de> for DatumVisitor {
    type Value = Datum;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an OVSDB datum")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Datum, E> {
        AtomVisitor.visit_i64(v).map(Datum::scalar)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Datum, E> {
        AtomVisitor.visit_u64(v).map(Datum::scalar)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Datum, E> {
        AtomVisitor.visit_f64(v).map(Datum::scalar)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Datum, E> {
        AtomVisitor.visit_bool(v).map(Datum::scalar)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Datum, E> {
        AtomVisitor.visit_str(v).map(Datum::scalar)
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Datum, E> {
        AtomVisitor.visit_string(v).map(Datum::scalar)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Datum, A::Error> {
        let tag: std::borrow::Cow<'de, str> = seq
            .next_element()?
            .ok_or_else(|| de::Error::custom("empty array is not a datum"))?;
        let datum = match &*tag {
            "set" => Datum::Set(
                seq.next_element()?
                    .ok_or_else(|| de::Error::custom("set without elements"))?,
            ),
            "map" => Datum::Map(
                seq.next_element()?
                    .ok_or_else(|| de::Error::custom("map without pairs"))?,
            ),
            other => return tagged_atom(other, &mut seq).map(Datum::scalar),
        };
        if seq.next_element::<de::IgnoredAny>()?.is_some() {
            return Err(de::Error::custom("datum with extra elements"));
        }
        Ok(datum)
    }
}

impl<'de> Deserialize<'de> for Datum {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DatumVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const U: &str = "36bb4ef2-5f4f-4d36-8c1c-7d7a6b0e0a11";

    #[test]
    fn encodes_as_rfc7047() {
        let u = Uuid::parse_str(U).unwrap();
        let cases = [
            (Datum::scalar(5), json!(5)),
            (Datum::scalar(1.5), json!(1.5)),
            (Datum::scalar(true), json!(true)),
            (Datum::scalar("x"), json!("x")),
            (Datum::scalar(u), json!(["uuid", U])),
            (
                Datum::scalar(Atom::NamedUuid("row1".into())),
                json!(["named-uuid", "row1"]),
            ),
            (Datum::set(Vec::<i64>::new()), json!(["set", []])),
            (Datum::set([2, 1]), json!(["set", [1, 2]])),
            (Datum::empty_map(), json!(["map", []])),
            (
                Datum::map([("b", "2"), ("a", "1")]),
                json!(["map", [["a", "1"], ["b", "2"]]]),
            ),
            (Datum::map([("k", u)]), json!(["map", [["k", ["uuid", U]]]])),
        ];
        for (datum, wire) in cases {
            assert_eq!(serde_json::to_value(&datum).unwrap(), wire);
            let back: Datum = serde_json::from_value(wire.clone()).unwrap();
            assert_eq!(back, datum, "{wire}");
        }
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            json!([]),
            json!(["uuid"]),
            json!(["uuid", "not-a-uuid"]),
            json!(["set"]),
            json!(["set", [1], 2]),
            json!(["map", [[1]]]),
            json!(["frob", 1]),
            json!({"a": 1}),
            json!(null),
            json!(u64::MAX),
        ] {
            assert!(
                serde_json::from_value::<Datum>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn normalization_orders_and_dedups() {
        let d = Datum::Set(vec![Atom::from(3), Atom::from(1), Atom::from(3)]).normalized();
        assert_eq!(d, Datum::Set(vec![Atom::from(1), Atom::from(3)]));
        let m = Datum::Map(vec![
            (Atom::from("a"), Atom::from(1)),
            (Atom::from("a"), Atom::from(2)),
        ])
        .normalized();
        assert_eq!(m, Datum::Map(vec![(Atom::from("a"), Atom::from(2))]));
    }

    fn arb_atom() -> impl Strategy<Value = Atom> {
        prop_oneof![
            any::<i64>().prop_map(Atom::Integer),
            (-1e9f64..1e9).prop_map(Atom::Real),
            any::<bool>().prop_map(Atom::Boolean),
            "[ -~]{0,10}".prop_map(Atom::String),
            any::<u128>().prop_map(|n| Atom::Uuid(Uuid::from_u128(n))),
        ]
    }

    proptest! {
        #[test]
        fn datum_round_trips(atoms in proptest::collection::vec(arb_atom(), 0..6),
                             keys in proptest::collection::vec(arb_atom(), 0..6)) {
            let set = Datum::Set(atoms.clone()).normalized();
            let text = serde_json::to_string(&set).unwrap();
            prop_assert_eq!(serde_json::from_str::<Datum>(&text).unwrap(), set);
            let map = Datum::Map(keys.into_iter().zip(atoms).collect()).normalized();
            let text = serde_json::to_string(&map).unwrap();
            let back = serde_json::from_str::<Datum>(&text).unwrap();
            prop_assert_eq!(back, map);
        }
    }
}
