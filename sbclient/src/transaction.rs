//! Transactions (RFC 7047 section 5.2): a builder for the operations and the
//! decoding of a `transact` reply.
//!
//! Optimistic concurrency: add a `wait` on the columns you read (see
//! [`Transaction::wait_unchanged`]); if another client changed them, the server
//! fails the wait and the reply decodes to [`TxnError::Conflict`]. Retrying is
//! left to the caller, who should re-read the replica first.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use thiserror::Error;
use uuid::Uuid;

use crate::condition::{Clause, Condition, Function};
use crate::datum::{Atom, Datum};
use crate::wire::Row;

/// Column values of a row to insert or update.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Columns(pub BTreeMap<String, Datum>);

impl Columns {
    /// No columns.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets one column.
    pub fn set(mut self, column: impl Into<String>, value: impl Into<Datum>) -> Self {
        self.0.insert(column.into(), value.into());
        self
    }

    fn into_json(self) -> Value {
        Value::Object(
            self.0
                .into_iter()
                .map(|(k, v)| (k, serde_json::to_value(v).unwrap_or(Value::Null)))
                .collect(),
        )
    }

    /// The columns of a typed row whose value differs from the default row
    /// (the server fills in the defaults itself).
    pub fn from_row<T: Row>(row: &T) -> Self {
        let default = T::default().to_datums();
        let mut out = Self::new();
        for ((name, value), (_, def)) in row.to_datums().into_iter().zip(default) {
            if value != def {
                out.0.insert(name.to_owned(), value);
            }
        }
        out
    }

    /// The columns that differ between two versions of a row.
    pub fn diff<T: Row>(old: &T, new: &T) -> Self {
        let mut out = Self::new();
        for ((name, value), (_, before)) in new.to_datums().into_iter().zip(old.to_datums()) {
            if value != before {
                out.0.insert(name.to_owned(), value);
            }
        }
        out
    }
}

/// The mutators of the `mutate` operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mutator {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Insert,
    Delete,
}

impl Mutator {
    fn as_str(self) -> &'static str {
        match self {
            Mutator::Add => "+=",
            Mutator::Sub => "-=",
            Mutator::Mul => "*=",
            Mutator::Div => "/=",
            Mutator::Mod => "%=",
            Mutator::Insert => "insert",
            Mutator::Delete => "delete",
        }
    }
}

/// `until` of a `wait` operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WaitUntil {
    /// The selected rows equal the given rows.
    Equal,
    /// The selected rows differ from the given rows.
    NotEqual,
}

/// The `where` clause that selects one row by uuid.
pub fn by_uuid(uuid: Uuid) -> Condition {
    Condition(vec![Clause::new("_uuid", Function::Eq, Atom::Uuid(uuid))])
}

/// A transaction being built.
#[derive(Debug, Clone)]
pub struct Transaction {
    database: String,
    ops: Vec<Value>,
    /// uuid-name -> index of the insert operation.
    names: BTreeMap<String, usize>,
}

impl Transaction {
    /// An empty transaction on `database`.
    pub fn new(database: impl Into<String>) -> Self {
        Self {
            database: database.into(),
            ops: Vec::new(),
            names: BTreeMap::new(),
        }
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// True if there are no operations.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    fn push(&mut self, op: Value) -> usize {
        self.ops.push(op);
        self.ops.len() - 1
    }

    /// `insert`; with `uuid_name`, later operations can refer to the new row as
    /// `Atom::NamedUuid(uuid_name)`. Returns the operation index.
    pub fn insert(&mut self, table: &str, row: Columns, uuid_name: Option<&str>) -> usize {
        let mut op = json!({"op": "insert", "table": table, "row": row.into_json()});
        if let Some(name) = uuid_name {
            op["uuid-name"] = Value::from(name);
        }
        let index = self.push(op);
        if let Some(name) = uuid_name {
            self.names.insert(name.to_owned(), index);
        }
        index
    }

    /// Typed `insert` of the non-default columns of `row`.
    pub fn insert_row<T: Row>(&mut self, row: &T, uuid_name: Option<&str>) -> usize {
        self.insert(T::TABLE, Columns::from_row(row), uuid_name)
    }

    /// `update` of the rows matching all clauses of `condition`.
    pub fn update(&mut self, table: &str, condition: &Condition, row: Columns) -> usize {
        self.push(
            json!({"op": "update", "table": table, "where": condition, "row": row.into_json()}),
        )
    }

    /// Typed `update` of row `uuid` from `old` to `new` (changed columns only).
    pub fn update_row<T: Row>(&mut self, uuid: Uuid, old: &T, new: &T) -> usize {
        self.update(T::TABLE, &by_uuid(uuid), Columns::diff(old, new))
    }

    /// `mutate` with `(column, mutator, value)` mutations.
    pub fn mutate(
        &mut self,
        table: &str,
        condition: &Condition,
        mutations: Vec<(String, Mutator, Datum)>,
    ) -> usize {
        let mutations: Vec<Value> = mutations
            .into_iter()
            .map(|(c, m, v)| json!([c, m.as_str(), v]))
            .collect();
        self.push(
            json!({"op": "mutate", "table": table, "where": condition, "mutations": mutations}),
        )
    }

    /// Sets `pairs` in map column `column` of the rows matching `condition`, other keys
    /// kept: a `mutate` deleting the keys, then inserting the pairs (OVSDB's insert leaves
    /// an existing key alone).
    pub fn set_map_keys(
        &mut self,
        table: &str,
        condition: &Condition,
        column: &str,
        pairs: &[(&str, &str)],
    ) -> usize {
        let keys = Datum::Set(pairs.iter().map(|(k, _)| Atom::from(*k)).collect());
        let map = Datum::Map(
            pairs
                .iter()
                .map(|(k, v)| (Atom::from(*k), Atom::from(*v)))
                .collect(),
        );
        self.mutate(
            table,
            condition,
            vec![
                (column.to_owned(), Mutator::Delete, keys),
                (column.to_owned(), Mutator::Insert, map),
            ],
        )
    }

    /// `delete` of the rows matching `condition`.
    pub fn delete(&mut self, table: &str, condition: &Condition) -> usize {
        self.push(json!({"op": "delete", "table": table, "where": condition}))
    }

    /// Typed `delete` of row `uuid`.
    pub fn delete_row<T: Row>(&mut self, uuid: Uuid) -> usize {
        self.delete(T::TABLE, &by_uuid(uuid))
    }

    /// `wait` until the rows matching `condition`, restricted to `columns`,
    /// are (or are not) exactly `rows`. `timeout_ms` of 0 fails at once.
    pub fn wait(
        &mut self,
        table: &str,
        condition: &Condition,
        columns: &[&str],
        until: WaitUntil,
        rows: Vec<Columns>,
        timeout_ms: Option<u64>,
    ) -> usize {
        let rows: Vec<_> = rows.into_iter().map(Columns::into_json).collect();
        let mut op = json!({
            "op": "wait", "table": table, "where": condition, "columns": columns,
            "until": match until { WaitUntil::Equal => "==", WaitUntil::NotEqual => "!=" },
            "rows": rows,
        });
        if let Some(t) = timeout_ms {
            op["timeout"] = Value::from(t);
        }
        self.push(op)
    }

    /// Optimistic concurrency: fail the transaction with [`TxnError::Conflict`]
    /// unless row `uuid` still has the values of `expected` in `columns`.
    pub fn wait_unchanged<T: Row>(&mut self, uuid: Uuid, expected: &T, columns: &[&str]) -> usize {
        let mut row = Columns::new();
        for c in columns {
            if let Some(v) = expected.column(c) {
                row.0.insert((*c).to_owned(), v);
            }
        }
        self.wait(
            T::TABLE,
            &by_uuid(uuid),
            columns,
            WaitUntil::Equal,
            vec![row],
            Some(0),
        )
    }

    /// `comment` (written to the database log).
    pub fn comment(&mut self, text: &str) -> usize {
        self.push(json!({"op": "comment", "comment": text}))
    }

    /// Removes what the operations write or wait on in columns for which `has(table,
    /// column)` is false (columns a server with an older schema lacks, which would fail the
    /// whole transaction), and returns them as `(table, column)`. Operations stay in place
    /// (an update or mutate left with nothing to write is a no-op), so results keep their
    /// indexes.
    pub fn retain_columns(&mut self, has: impl Fn(&str, &str) -> bool) -> Vec<(String, String)> {
        let mut dropped = Vec::new();
        for op in &mut self.ops {
            let Some(table) = op.get("table").and_then(Value::as_str).map(str::to_owned) else {
                continue;
            };
            let mut drop = |column: &str| {
                let gone = !has(&table, column);
                if gone && !dropped.iter().any(|(t, c)| t == &table && c == column) {
                    dropped.push((table.clone(), column.to_owned()));
                }
                gone
            };
            if let Some(Value::Object(row)) = op.get_mut("row") {
                row.retain(|c, _| !drop(c));
            }
            if let Some(Value::Array(mutations)) = op.get_mut("mutations") {
                mutations.retain(|m| m.get(0).and_then(Value::as_str).is_none_or(|c| !drop(c)));
            }
            if let Some(Value::Array(columns)) = op.get_mut("columns") {
                columns.retain(|c| c.as_str().is_none_or(|c| !drop(c)));
            }
            if let Some(Value::Array(rows)) = op.get_mut("rows") {
                for r in rows {
                    if let Value::Object(r) = r {
                        r.retain(|c, _| !drop(c));
                    }
                }
            }
        }
        dropped
    }

    /// The `transact` params: `[database, op...]`.
    pub fn to_params(&self) -> Value {
        let mut params = vec![Value::from(self.database.clone())];
        params.extend(self.ops.iter().cloned());
        Value::Array(params)
    }

    /// Decodes the `transact` reply result.
    pub fn decode_reply(&self, result: &Value) -> Result<TxnOutcome, TxnError> {
        let items = result
            .as_array()
            .ok_or_else(|| TxnError::Malformed("result is not an array".into()))?;
        let mut results = Vec::with_capacity(self.ops.len());
        for (index, item) in items.iter().enumerate() {
            if let Some(error) = item.get("error").and_then(Value::as_str) {
                let details = item
                    .get("details")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                if index >= self.ops.len() {
                    return Err(TxnError::Commit {
                        error: error.to_owned(),
                        details,
                    });
                }
                if self.ops[index]["op"] == "wait" && error == "timed out" {
                    return Err(TxnError::Conflict { op_index: index });
                }
                return Err(TxnError::Operation {
                    op_index: index,
                    error: error.to_owned(),
                    details,
                });
            }
            if index < self.ops.len() {
                results.push(OpResult::decode(item)?);
            }
        }
        if results.len() < self.ops.len() {
            return Err(TxnError::Malformed(format!(
                "{} results for {} operations",
                results.len(),
                self.ops.len()
            )));
        }
        let inserted = self
            .names
            .iter()
            .filter_map(|(name, index)| match results.get(*index) {
                Some(OpResult::Inserted(uuid)) => Some((name.clone(), *uuid)),
                _ => None,
            })
            .collect();
        Ok(TxnOutcome { results, inserted })
    }
}

/// The result of one successful operation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum OpResult {
    /// `insert`: the new row's uuid.
    Inserted(Uuid),
    /// `update`, `mutate`, `delete`: rows affected.
    Count(u64),
    /// `select`: rows as returned.
    Rows(Vec<Value>),
    /// Operations with an empty result (`wait`, `comment`, ...).
    Empty,
}

impl OpResult {
    fn decode(item: &Value) -> Result<Self, TxnError> {
        if let Some(uuid) = item.get("uuid") {
            let datum: Datum = serde_json::from_value(uuid.clone())
                .map_err(|e| TxnError::Malformed(e.to_string()))?;
            return match datum.as_scalar() {
                Some(Atom::Uuid(u)) => Ok(OpResult::Inserted(*u)),
                _ => Err(TxnError::Malformed("insert result without uuid".into())),
            };
        }
        if let Some(count) = item.get("count").and_then(Value::as_u64) {
            return Ok(OpResult::Count(count));
        }
        if let Some(rows) = item.get("rows").and_then(Value::as_array) {
            return Ok(OpResult::Rows(rows.clone()));
        }
        Ok(OpResult::Empty)
    }
}

/// A committed transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct TxnOutcome {
    /// One result per operation, in order.
    pub results: Vec<OpResult>,
    /// The uuids of rows inserted with a uuid-name.
    pub inserted: BTreeMap<String, Uuid>,
}

/// Why a transaction did not commit.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum TxnError {
    /// A `wait` failed: someone else changed the rows. Re-read and retry.
    #[error("conflict: wait operation {op_index} failed, the rows changed")]
    Conflict { op_index: usize },
    /// An operation failed.
    #[error("operation {op_index} failed: {error}: {details}")]
    Operation {
        op_index: usize,
        error: String,
        details: String,
    },
    /// The commit failed after all operations succeeded (e.g. referential integrity).
    #[error("commit failed: {error}: {details}")]
    Commit { error: String, details: String },
    /// The server answered with a JSON-RPC error.
    #[error("server error: {0}")]
    Rpc(String),
    /// The reply could not be understood.
    #[error("malformed reply: {0}")]
    Malformed(String),
    /// The client task stopped (or another connection-level failure); the transaction may
    /// or may not have committed.
    #[error("connection lost: {0}")]
    Connection(String),
    /// Not sent: no connection was monitoring when the transaction reached the client
    /// (the replica it was built from may be stale). Nothing was committed: once
    /// reconnected, re-read the replica and build it again from the current state.
    #[error(
        "not sent: not connected to the database (retry from the current state once reconnected)"
    )]
    NotConnected,
    /// Not sent: it was made for connection `made_for`
    /// ([`crate::client::Client::transact_on`]), but the client is now on `current`
    /// (`None`: disconnected). Nothing was committed; retry from the current state.
    #[error("not sent: made for connection {made_for}, the client is now {}", match current {
        Some(c) => format!("on connection {c}"),
        None => "disconnected".to_owned(),
    })]
    StaleConnection { made_for: u64, current: Option<u64> },
    /// Sent, but the connection dropped before the reply: the transaction may or may not
    /// have committed. It is not sent again; re-read the replica after reconnecting and
    /// retry from the current state.
    #[error("connection lost before the reply (the transaction may or may not have committed; retry from the current state)")]
    ConnectionLost,
}

#[cfg(all(test, feature = "generated"))]
mod tests {
    use super::*;
    use crate::generated::ovn_sb::{Chassis, Encap};

    const U1: &str = "36bb4ef2-5f4f-4d36-8c1c-7d7a6b0e0a11";

    #[test]
    fn columns_the_server_lacks_are_not_written() {
        let pb = Uuid::from_u128(7);
        let mut txn = Transaction::new("OVN_Southbound");
        txn.update(
            "Port_Binding",
            &by_uuid(pb),
            Columns::new()
                .set("chassis", Datum::Set(vec![]))
                .set("virtual_parent", Datum::Set(vec![])),
        );
        txn.mutate(
            "Port_Binding",
            &by_uuid(pb),
            vec![(
                "additional_chassis".into(),
                Mutator::Insert,
                Datum::Set(vec![Atom::Uuid(pb)]),
            )],
        );
        txn.insert(
            "Encap",
            Columns::new().set("ip", "192.0.2.1").set("type", "geneve"),
            None,
        );
        let old_schema = |t: &str, c: &str| {
            !(t == "Port_Binding" && (c == "virtual_parent" || c == "additional_chassis"))
        };
        let dropped = txn.retain_columns(old_schema);
        assert_eq!(
            dropped,
            [
                ("Port_Binding".to_owned(), "virtual_parent".to_owned()),
                ("Port_Binding".to_owned(), "additional_chassis".to_owned())
            ]
        );
        let params = txn.to_params();
        assert_eq!(params[1]["row"], json!({"chassis": ["set", []]}));
        assert_eq!(params[2]["mutations"], json!([]));
        assert_eq!(
            params[3]["row"],
            json!({"ip": "192.0.2.1", "type": "geneve"})
        );
        assert_eq!(txn.len(), 3, "operations keep their indexes");
        assert!(txn.retain_columns(|_, _| true).is_empty());
    }

    #[test]
    fn builds_operations() {
        let mut txn = Transaction::new("OVN_Southbound");
        let encap = Encap {
            type_: "geneve".into(),
            ip: "10.0.0.1".into(),
            chassis_name: "hv1".into(),
            ..Encap::default()
        };
        txn.insert_row(&encap, Some("encap0"));
        let chassis = Chassis {
            name: "hv1".into(),
            encaps: [].into(),
            ..Chassis::default()
        };
        let mut row = Columns::from_row(&chassis);
        row = row.set("encaps", Datum::Set(vec![Atom::NamedUuid("encap0".into())]));
        txn.insert("Chassis", row, Some("ch"));
        let u = Uuid::parse_str(U1).unwrap();
        txn.mutate(
            "Chassis",
            &by_uuid(u),
            vec![(
                "external_ids".into(),
                Mutator::Insert,
                Datum::map([("k", "v")]),
            )],
        );
        txn.wait_unchanged(u, &chassis, &["name"]);
        txn.delete_row::<Encap>(u);
        txn.comment("hello");
        let params = txn.to_params();
        assert_eq!(
            params,
            json!(["OVN_Southbound",
                {"op": "insert", "table": "Encap", "uuid-name": "encap0",
                 "row": {"type": "geneve", "ip": "10.0.0.1", "chassis_name": "hv1"}},
                {"op": "insert", "table": "Chassis", "uuid-name": "ch",
                 "row": {"name": "hv1", "encaps": ["named-uuid", "encap0"]}},
                {"op": "mutate", "table": "Chassis", "where": [["_uuid", "==", ["uuid", U1]]],
                 "mutations": [["external_ids", "insert", ["map", [["k", "v"]]]]]},
                {"op": "wait", "table": "Chassis", "where": [["_uuid", "==", ["uuid", U1]]],
                 "columns": ["name"], "until": "==", "rows": [{"name": "hv1"}], "timeout": 0},
                {"op": "delete", "table": "Encap", "where": [["_uuid", "==", ["uuid", U1]]]},
                {"op": "comment", "comment": "hello"}])
        );
    }

    #[test]
    fn decodes_results_and_named_uuids() {
        let mut txn = Transaction::new("db");
        txn.comment("c");
        txn.insert("T", Columns::new().set("a", 1), Some("row"));
        txn.delete("T", &Condition::all());
        let outcome = txn
            .decode_reply(&json!([{}, {"uuid": ["uuid", U1]}, {"count": 3}]))
            .unwrap();
        assert_eq!(outcome.inserted["row"], Uuid::parse_str(U1).unwrap());
        assert_eq!(outcome.results[2], OpResult::Count(3));
    }

    #[test]
    fn decodes_errors() {
        let mut txn = Transaction::new("db");
        txn.wait(
            "T",
            &Condition::all(),
            &["a"],
            WaitUntil::Equal,
            vec![],
            Some(0),
        );
        txn.insert("T", Columns::new(), None);
        assert_eq!(
            txn.decode_reply(&json!([{"error": "timed out"}, null])),
            Err(TxnError::Conflict { op_index: 0 })
        );
        assert!(matches!(
            txn.decode_reply(&json!([{}, {"error": "constraint violation", "details": "x"}])),
            Err(TxnError::Operation { op_index: 1, .. })
        ));
        assert!(matches!(
            txn.decode_reply(
                &json!([{}, {"uuid": ["uuid", U1]}, {"error": "referential integrity violation"}])
            ),
            Err(TxnError::Commit { .. })
        ));
        assert!(matches!(
            txn.decode_reply(&json!([{}])),
            Err(TxnError::Malformed(_))
        ));
        assert!(matches!(
            txn.decode_reply(&json!({})),
            Err(TxnError::Malformed(_))
        ));
    }
}
