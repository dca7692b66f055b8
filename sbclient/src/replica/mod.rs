//! In-memory replica of monitored tables (sans-IO).
//!
//! The replica applies `update2`/`update3` table-updates, decoding each row
//! straight from its JSON text into the generated typed row. A row that cannot
//! be decoded or applied (wrong type, unknown column, modify of an unknown row)
//! is logged, counted in [`ReplicaStats`] and skipped; the rest of the message
//! and of the replica stay as they are.
//!
//! Changes accumulate per table ([`TableChanges`]) until [`Replica::clear_changes`],
//! so a consumer sees one consistent view after each applied message.

mod table;

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;
use thiserror::Error;
use uuid::Uuid;

use crate::condition::Condition;
use crate::datum::Datum;
use crate::wire::{Row, RowError};

pub use table::{Table, TableChanges};

/// The table-updates object itself is malformed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum UpdateError {
    #[error("malformed table-updates: {0}")]
    Shape(#[from] serde_json::Error),
}

/// Counters of what the replica did with incoming rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplicaStats {
    /// Row operations applied.
    pub rows_applied: u64,
    /// Row operations skipped because they could not be decoded or applied.
    pub rows_skipped: u64,
    /// Updates for tables this replica does not hold.
    pub unknown_tables: u64,
    /// Messages whose table-updates object was malformed.
    pub bad_messages: u64,
}

trait AnyTable: Send + Sync {
    fn apply_raw(&mut self, uuid: Uuid, raw: &RawValue) -> Result<(), RowError>;
    fn begin_snapshot(&mut self);
    fn end_snapshot(&mut self, complete: bool);
    fn clear(&mut self);
    fn clear_changes(&mut self);
    fn has_changes(&self) -> bool;
    fn len(&self) -> usize;
    fn columns(&self) -> &'static [&'static str];
    fn dump(&self) -> BTreeMap<Uuid, Vec<(&'static str, Datum)>>;
    fn snapshot(&self) -> Arc<dyn Any + Send + Sync>;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Row> AnyTable for Table<T> {
    fn apply_raw(&mut self, uuid: Uuid, raw: &RawValue) -> Result<(), RowError> {
        Table::apply_raw(self, uuid, raw)
    }
    fn begin_snapshot(&mut self) {
        Table::begin_snapshot(self);
    }
    fn end_snapshot(&mut self, complete: bool) {
        Table::end_snapshot(self, complete);
    }
    fn clear(&mut self) {
        Table::clear(self);
    }
    fn clear_changes(&mut self) {
        Table::clear_changes(self);
    }
    fn has_changes(&self) -> bool {
        !self.changes().is_empty()
    }
    fn len(&self) -> usize {
        Table::len(self)
    }
    fn columns(&self) -> &'static [&'static str] {
        T::COLUMNS
    }
    fn dump(&self) -> BTreeMap<Uuid, Vec<(&'static str, Datum)>> {
        self.to_datums()
    }
    fn snapshot(&self) -> Arc<dyn Any + Send + Sync> {
        Table::snapshot(self)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// The replica of one database.
pub struct Replica {
    database: String,
    tables: BTreeMap<&'static str, Box<dyn AnyTable>>,
    stats: ReplicaStats,
}

impl fmt::Debug for Replica {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Replica")
            .field("database", &self.database)
            .field("tables", &self.tables.keys().collect::<Vec<_>>())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Replica {
    /// An empty replica of `database` with no tables.
    pub fn new(database: impl Into<String>) -> Self {
        Self {
            database: database.into(),
            tables: BTreeMap::new(),
            stats: ReplicaStats::default(),
        }
    }

    /// The database name.
    pub fn database(&self) -> &str {
        &self.database
    }

    /// Adds (monitors) table `T` and returns it (for adding indexes).
    pub fn add_table<T: Row>(&mut self) -> Option<&mut Table<T>> {
        let entry = self
            .tables
            .entry(T::TABLE)
            .or_insert_with(|| Box::new(Table::<T>::default()));
        if !entry.as_any().is::<Table<T>>() {
            // Another row type with the same table name: replace it.
            *entry = Box::new(Table::<T>::default());
        }
        entry.as_any_mut().downcast_mut()
    }

    /// Table `T`, if it is monitored.
    pub fn table<T: Row>(&self) -> Option<&Table<T>> {
        self.tables.get(T::TABLE)?.as_any().downcast_ref()
    }

    /// Table `T` for adding indexes.
    pub fn table_mut<T: Row>(&mut self) -> Option<&mut Table<T>> {
        self.tables.get_mut(T::TABLE)?.as_any_mut().downcast_mut()
    }

    /// Names of the monitored tables.
    pub fn table_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.tables.keys().copied()
    }

    /// The columns of table `name` (empty if it is not monitored).
    pub fn columns_of(&self, name: &str) -> &'static [&'static str] {
        self.tables.get(name).map_or(&[], |t| t.columns())
    }

    /// Number of rows in table `name`.
    pub fn row_count(&self, name: &str) -> usize {
        self.tables.get(name).map_or(0, |t| t.len())
    }

    /// Every row of table `name` in dynamic form, sorted by uuid.
    pub fn dump_table(&self, name: &str) -> BTreeMap<Uuid, Vec<(&'static str, Datum)>> {
        self.tables.get(name).map(|t| t.dump()).unwrap_or_default()
    }

    /// Counters.
    pub fn stats(&self) -> ReplicaStats {
        self.stats
    }

    /// An immutable view of every table for other tasks (shares the rows).
    pub fn snapshot(&self) -> ReplicaSnapshot {
        ReplicaSnapshot {
            tables: self
                .tables
                .iter()
                .map(|(name, t)| (*name, t.snapshot()))
                .collect(),
        }
    }

    /// Names of the tables that changed since the last [`Self::clear_changes`].
    pub fn changed_tables(&self) -> Vec<&'static str> {
        self.tables
            .iter()
            .filter(|(_, t)| t.has_changes())
            .map(|(n, _)| *n)
            .collect()
    }

    /// Forgets the recorded changes (call after processing them).
    pub fn clear_changes(&mut self) {
        for t in self.tables.values_mut() {
            t.clear_changes();
        }
    }

    /// Removes every row (reported as deleted).
    pub fn clear(&mut self) {
        for t in self.tables.values_mut() {
            t.clear();
        }
    }

    /// The `monitor-cond-requests` object for all tables: all columns, with the
    /// given condition per table (tables without one get no `where`, so all rows).
    pub fn monitor_requests(&self, conditions: &BTreeMap<String, Condition>) -> Value {
        let mut obj = serde_json::Map::new();
        for (name, table) in &self.tables {
            let mut req = serde_json::Map::new();
            req.insert("columns".into(), Value::from(table.columns().to_vec()));
            if let Some(cond) = conditions.get(*name) {
                req.insert(
                    "where".into(),
                    serde_json::to_value(cond).unwrap_or(Value::Null),
                );
            }
            obj.insert((*name).to_owned(), Value::Array(vec![Value::Object(req)]));
        }
        Value::Object(obj)
    }

    /// Applies `table-updates2` (from an `update2`/`update3` notification, or a
    /// `monitor_cond_since` reply with `found=true`).
    pub fn apply_update(&mut self, updates: &RawValue) -> Result<(), UpdateError> {
        let mut de = serde_json::Deserializer::from_str(updates.get());
        let result = UpdatesSeed { replica: self }.deserialize(&mut de);
        if let Err(error) = &result {
            self.stats.bad_messages += 1;
            if rate_limited(self.stats.bad_messages) {
                tracing::warn!(%error, bad_messages = self.stats.bad_messages,
                    "malformed table-updates, rest of the message skipped");
            }
        }
        Ok(result?)
    }

    /// Applies a full snapshot (a `monitor_cond` reply, or `monitor_cond_since`
    /// with `found=false`): rows absent from it are deleted, rows that differ
    /// are reported as modified. If the snapshot is malformed, the rows it did
    /// not mention are kept (bad input never loses state).
    pub fn apply_snapshot(&mut self, updates: &RawValue) -> Result<(), UpdateError> {
        for t in self.tables.values_mut() {
            t.begin_snapshot();
        }
        let result = self.apply_update(updates);
        for t in self.tables.values_mut() {
            t.end_snapshot(result.is_ok());
        }
        result
    }
}

/// A consistent, immutable view of a replica taken between two updates;
/// cheap to clone and to send to another task.
#[derive(Clone)]
pub struct ReplicaSnapshot {
    tables: BTreeMap<&'static str, Arc<dyn Any + Send + Sync>>,
}

impl fmt::Debug for ReplicaSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplicaSnapshot")
            .field("tables", &self.tables.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ReplicaSnapshot {
    /// The rows of table `T` at the time of the snapshot.
    pub fn table<T: Row>(&self) -> Option<&HashMap<Uuid, Arc<T>>> {
        self.tables.get(T::TABLE)?.downcast_ref()
    }
}

struct UpdatesSeed<'r> {
    replica: &'r mut Replica,
}

impl<'de> DeserializeSeed<'de> for UpdatesSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for UpdatesSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("table-updates2 object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Replica { tables, stats, .. } = self.replica;
        while let Some(name) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if let Some(table) = tables.get_mut(&*name) {
                map.next_value_seed(RowsSeed {
                    table: &name,
                    rows: &mut **table,
                    stats,
                })?;
            } else {
                stats.unknown_tables += 1;
                if rate_limited(stats.unknown_tables) {
                    tracing::warn!(table = %name, skipped_so_far = stats.unknown_tables,
                        "update for a table not in the replica, skipped");
                }
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

struct RowsSeed<'a> {
    table: &'a str,
    rows: &'a mut dyn AnyTable,
    stats: &'a mut ReplicaStats,
}

impl<'de> DeserializeSeed<'de> for RowsSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RowsSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("table-update2 object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let raw: &'de RawValue = map.next_value()?;
            let outcome = Uuid::parse_str(&key)
                .map_err(|_| RowError::Decode(format!("bad row uuid {key:?}")))
                .and_then(|uuid| self.rows.apply_raw(uuid, raw));
            match outcome {
                Ok(()) => self.stats.rows_applied += 1,
                Err(error) => {
                    self.stats.rows_skipped += 1;
                    let n = self.stats.rows_skipped;
                    if rate_limited(n) {
                        tracing::warn!(table = self.table, row = %key, %error, skipped_so_far = n,
                            "row update skipped");
                    }
                }
            }
        }
        Ok(())
    }
}

/// Whether the `n`th occurrence (1-based) of a warning is logged: the first five, then at
/// powers of two (the library has no clock; the count says how many there were).
fn rate_limited(n: u64) -> bool {
    n <= 5 || n.is_power_of_two()
}

/// Borrows `text` as raw JSON for [`Replica::apply_update`] /
/// [`Replica::apply_snapshot`] (for table-updates obtained as text, e.g. in tests).
pub fn raw(text: &str) -> Result<&RawValue, UpdateError> {
    Ok(serde_json::from_str(text)?)
}

#[cfg(all(test, feature = "generated"))]
mod tests;
