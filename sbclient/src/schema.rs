//! Database schemas (RFC 7047 section 3.2), as read from an `.ovsschema` file
//! or a `get_schema` reply.

use std::collections::BTreeMap;

use serde_json::Value;
use thiserror::Error;

use crate::datum::Datum;

/// A schema that does not follow RFC 7047.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SchemaError {
    #[error("invalid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("{path}: {reason}")]
    Invalid { path: String, reason: String },
}

fn invalid(path: &str, reason: impl Into<String>) -> SchemaError {
    SchemaError::Invalid {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

/// The atomic types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AtomicType {
    Integer,
    Real,
    Boolean,
    String,
    Uuid,
}

impl AtomicType {
    fn parse(name: &str, path: &str) -> Result<Self, SchemaError> {
        Ok(match name {
            "integer" => AtomicType::Integer,
            "real" => AtomicType::Real,
            "boolean" => AtomicType::Boolean,
            "string" => AtomicType::String,
            "uuid" => AtomicType::Uuid,
            other => return Err(invalid(path, format!("unknown atomic type {other:?}"))),
        })
    }
}

/// A base type with its constraints.
#[derive(Debug, Clone, PartialEq)]
pub struct BaseType {
    pub atomic: AtomicType,
    pub enumeration: Option<Datum>,
    pub min_integer: Option<i64>,
    pub max_integer: Option<i64>,
    pub min_real: Option<f64>,
    pub max_real: Option<f64>,
    pub min_length: Option<i64>,
    pub max_length: Option<i64>,
    pub ref_table: Option<String>,
    /// `true` for strong references (the default), `false` for weak ones.
    pub ref_strong: bool,
}

impl BaseType {
    fn parse(v: &Value, path: &str) -> Result<Self, SchemaError> {
        if let Some(name) = v.as_str() {
            return Ok(Self::plain(AtomicType::parse(name, path)?));
        }
        let obj = v
            .as_object()
            .ok_or_else(|| invalid(path, "base type is neither a string nor an object"))?;
        let name = obj
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid(path, "base type without \"type\""))?;
        let mut base = Self::plain(AtomicType::parse(name, path)?);
        if let Some(e) = obj.get("enum") {
            base.enumeration = Some(serde_json::from_value(e.clone())?);
        }
        base.min_integer = obj.get("minInteger").and_then(Value::as_i64);
        base.max_integer = obj.get("maxInteger").and_then(Value::as_i64);
        base.min_real = obj.get("minReal").and_then(Value::as_f64);
        base.max_real = obj.get("maxReal").and_then(Value::as_f64);
        base.min_length = obj.get("minLength").and_then(Value::as_i64);
        base.max_length = obj.get("maxLength").and_then(Value::as_i64);
        base.ref_table = obj
            .get("refTable")
            .and_then(Value::as_str)
            .map(str::to_owned);
        base.ref_strong = obj.get("refType").and_then(Value::as_str) != Some("weak");
        Ok(base)
    }

    fn plain(atomic: AtomicType) -> Self {
        Self {
            atomic,
            enumeration: None,
            min_integer: None,
            max_integer: None,
            min_real: None,
            max_real: None,
            min_length: None,
            max_length: None,
            ref_table: None,
            ref_strong: true,
        }
    }
}

/// A column type: key, optional value (for maps), and element count bounds.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnType {
    pub key: BaseType,
    pub value: Option<BaseType>,
    pub min: u64,
    /// `None` means "unlimited".
    pub max: Option<u64>,
}

/// How a column is represented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ColumnKind {
    /// Exactly one atom.
    Scalar,
    /// Zero or one atom.
    Optional,
    /// A set of atoms.
    Set,
    /// A map.
    Map,
}

impl ColumnType {
    fn parse(v: &Value, path: &str) -> Result<Self, SchemaError> {
        if v.is_string() {
            return Ok(Self {
                key: BaseType::parse(v, path)?,
                value: None,
                min: 1,
                max: Some(1),
            });
        }
        let obj = v
            .as_object()
            .ok_or_else(|| invalid(path, "column type is neither a string nor an object"))?;
        let key = BaseType::parse(
            obj.get("key")
                .ok_or_else(|| invalid(path, "column type without key"))?,
            path,
        )?;
        let value = obj
            .get("value")
            .map(|v| BaseType::parse(v, path))
            .transpose()?;
        let min = match obj.get("min") {
            None => 1,
            Some(m) => m
                .as_u64()
                .filter(|m| *m <= 1)
                .ok_or_else(|| invalid(path, "min must be 0 or 1"))?,
        };
        let max = match obj.get("max") {
            None => Some(1),
            Some(Value::String(s)) if s == "unlimited" => None,
            Some(m) => Some(
                m.as_u64()
                    .filter(|m| *m >= 1 && *m >= min)
                    .ok_or_else(|| invalid(path, "bad max"))?,
            ),
        };
        Ok(Self {
            key,
            value,
            min,
            max,
        })
    }

    /// The representation used by generated rows.
    pub fn kind(&self) -> ColumnKind {
        if self.value.is_some() {
            ColumnKind::Map
        } else if self.max == Some(1) {
            if self.min == 1 {
                ColumnKind::Scalar
            } else {
                ColumnKind::Optional
            }
        } else {
            ColumnKind::Set
        }
    }
}

/// A column.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnSchema {
    pub ty: ColumnType,
    pub ephemeral: bool,
    pub mutable: bool,
}

/// A table.
#[derive(Debug, Clone, PartialEq)]
pub struct TableSchema {
    pub columns: BTreeMap<String, ColumnSchema>,
    pub max_rows: Option<u64>,
    pub is_root: bool,
    pub indexes: Vec<Vec<String>>,
}

/// A database schema.
#[derive(Debug, Clone, PartialEq)]
pub struct DatabaseSchema {
    pub name: String,
    pub version: String,
    pub cksum: Option<String>,
    pub tables: BTreeMap<String, TableSchema>,
}

impl DatabaseSchema {
    /// Parses a schema from its JSON text.
    pub fn parse(text: &str) -> Result<Self, SchemaError> {
        Self::from_value(&serde_json::from_str(text)?)
    }

    /// Parses a schema from a JSON value (a `get_schema` result).
    pub fn from_value(v: &Value) -> Result<Self, SchemaError> {
        let obj = v
            .as_object()
            .ok_or_else(|| invalid("schema", "not an object"))?;
        let text = |key: &str| obj.get(key).and_then(Value::as_str).map(str::to_owned);
        let name = text("name").ok_or_else(|| invalid("schema", "no name"))?;
        let tables_json = obj
            .get("tables")
            .and_then(Value::as_object)
            .ok_or_else(|| invalid("schema", "no tables"))?;
        let mut tables = BTreeMap::new();
        for (table_name, tv) in tables_json {
            tables.insert(table_name.clone(), parse_table(table_name, tv)?);
        }
        Ok(Self {
            name,
            version: text("version").unwrap_or_default(),
            cksum: text("cksum"),
            tables,
        })
    }
}

fn parse_table(table_name: &str, tv: &Value) -> Result<TableSchema, SchemaError> {
    let columns_json = tv
        .get("columns")
        .and_then(Value::as_object)
        .ok_or_else(|| invalid(table_name, "no columns"))?;
    let mut columns = BTreeMap::new();
    for (col_name, cv) in columns_json {
        let path = format!("{table_name}.{col_name}");
        let ty = ColumnType::parse(
            cv.get("type")
                .ok_or_else(|| invalid(&path, "column without type"))?,
            &path,
        )?;
        columns.insert(
            col_name.clone(),
            ColumnSchema {
                ty,
                ephemeral: cv.get("ephemeral").and_then(Value::as_bool) == Some(true),
                mutable: cv.get("mutable").and_then(Value::as_bool) != Some(false),
            },
        );
    }
    let indexes = match tv.get("indexes") {
        None => Vec::new(),
        Some(v) => serde_json::from_value(v.clone())?,
    };
    Ok(TableSchema {
        columns,
        max_rows: tv.get("maxRows").and_then(Value::as_u64),
        is_root: tv.get("isRoot").and_then(Value::as_bool) == Some(true),
        indexes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINI: &str = r#"{"name":"Mini","version":"1.2.3","tables":{
        "T":{"columns":{
            "name":{"type":"string"},
            "opt":{"type":{"key":"integer","min":0,"max":1}},
            "tags":{"type":{"key":{"type":"string","enum":["set",["a","b"]]},"min":0,"max":"unlimited"}},
            "refs":{"type":{"key":{"type":"uuid","refTable":"T","refType":"weak"},"min":0,"max":"unlimited"}},
            "m":{"type":{"key":"string","value":"integer","min":0,"max":"unlimited"}}},
          "isRoot":true,"indexes":[["name"]],"maxRows":3}}}"#;

    #[test]
    fn parses_a_small_schema() {
        let s = DatabaseSchema::parse(MINI).unwrap();
        assert_eq!(s.name, "Mini");
        let t = &s.tables["T"];
        assert!(t.is_root);
        assert_eq!(t.max_rows, Some(3));
        assert_eq!(t.indexes, vec![vec!["name".to_owned()]]);
        assert_eq!(t.columns["name"].ty.kind(), ColumnKind::Scalar);
        assert_eq!(t.columns["opt"].ty.kind(), ColumnKind::Optional);
        assert_eq!(t.columns["tags"].ty.kind(), ColumnKind::Set);
        assert_eq!(t.columns["m"].ty.kind(), ColumnKind::Map);
        assert_eq!(
            t.columns["tags"].ty.key.enumeration,
            Some(Datum::set(["a", "b"]))
        );
        assert!(!t.columns["refs"].ty.key.ref_strong);
        assert_eq!(t.columns["refs"].ty.key.ref_table.as_deref(), Some("T"));
    }

    #[test]
    fn parses_the_installed_schemas() {
        for (path, name, tables) in [
            ("/usr/share/ovn/ovn-sb.ovsschema", "OVN_Southbound", 34),
            (
                "/usr/share/openvswitch/vswitch.ovsschema",
                "Open_vSwitch",
                19,
            ),
        ] {
            let Ok(text) = std::fs::read_to_string(path) else {
                eprintln!("skipping: {path} not installed");
                continue;
            };
            let s = DatabaseSchema::parse(&text).unwrap();
            assert_eq!(s.name, name);
            assert_eq!(s.tables.len(), tables);
        }
    }

    #[test]
    fn rejects_bad_schemas() {
        for bad in [
            r#"{"tables":{}}"#,
            r#"{"name":"x"}"#,
            r#"{"name":"x","tables":{"T":{"columns":{"c":{"type":"float"}}}}}"#,
            r#"{"name":"x","tables":{"T":{"columns":{"c":{"type":{"key":"string","min":2}}}}}}"#,
            r#"{"name":"x","tables":{"T":{"columns":{"c":{}}}}}"#,
        ] {
            assert!(DatabaseSchema::parse(bad).is_err(), "{bad}");
        }
    }
}
