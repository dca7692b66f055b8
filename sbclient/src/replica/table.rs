//! One replicated table of typed rows, with indexes and change tracking.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::datum::{Atom, Datum};
use crate::wire::{Row, RowError};

/// What happened to the rows of one table since the last
/// [`crate::replica::Replica::clear_changes`].
#[derive(Debug, Clone)]
pub struct TableChanges<T> {
    /// Rows that did not exist before.
    pub inserted: BTreeSet<Uuid>,
    /// Rows that changed, with their value before the first change.
    pub modified: BTreeMap<Uuid, Arc<T>>,
    /// Rows that were removed, with their last value.
    pub deleted: BTreeMap<Uuid, Arc<T>>,
}

impl<T> Default for TableChanges<T> {
    fn default() -> Self {
        Self {
            inserted: BTreeSet::new(),
            modified: BTreeMap::new(),
            deleted: BTreeMap::new(),
        }
    }
}

impl<T> TableChanges<T> {
    /// True if nothing changed.
    pub fn is_empty(&self) -> bool {
        self.inserted.is_empty() && self.modified.is_empty() && self.deleted.is_empty()
    }
}

/// An index of the rows by the atoms of one column (each element of a set,
/// each key of a map).
#[derive(Debug, Default)]
struct Index {
    column: &'static str,
    entries: BTreeMap<Atom, BTreeSet<Uuid>>,
}

fn index_keys(datum: Option<Datum>) -> Vec<Atom> {
    match datum {
        Some(Datum::Set(atoms)) => atoms,
        Some(Datum::Map(pairs)) => pairs.into_iter().map(|(k, _)| k).collect(),
        _ => Vec::new(),
    }
}

impl Index {
    fn add<T: Row>(&mut self, uuid: Uuid, row: &T) {
        for key in index_keys(row.column(self.column)) {
            self.entries.entry(key).or_default().insert(uuid);
        }
    }

    fn remove<T: Row>(&mut self, uuid: Uuid, row: &T) {
        for key in index_keys(row.column(self.column)) {
            if let Some(set) = self.entries.get_mut(&key) {
                set.remove(&uuid);
                if set.is_empty() {
                    self.entries.remove(&key);
                }
            }
        }
    }
}

/// One row operation of an update2/update3 message.
#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum RowOp<U> {
    Initial(U),
    Insert(U),
    Modify(U),
    Delete(()),
}

/// Rows of one table keyed by uuid. Rows are shared (`Arc`), so a change set
/// keeps old values without copying them and [`Table::snapshot`] is cheap.
#[derive(Debug)]
pub struct Table<T: Row> {
    rows: HashMap<Uuid, Arc<T>>,
    indexes: Vec<Index>,
    changes: TableChanges<T>,
    /// Rows present before a full snapshot started and not yet seen in it.
    unseen: Option<HashSet<Uuid>>,
}

impl<T: Row> Default for Table<T> {
    fn default() -> Self {
        Self {
            rows: HashMap::new(),
            indexes: Vec::new(),
            changes: TableChanges::default(),
            unseen: None,
        }
    }
}

impl<T: Row> Table<T> {
    /// The row with this uuid.
    pub fn get(&self, uuid: &Uuid) -> Option<&T> {
        self.rows.get(uuid).map(|r| &**r)
    }

    /// The row with this uuid, shared.
    pub fn get_shared(&self, uuid: &Uuid) -> Option<&Arc<T>> {
        self.rows.get(uuid)
    }

    /// All rows, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&Uuid, &T)> {
        self.rows.iter().map(|(u, r)| (u, &**r))
    }

    /// An immutable copy of the rows for another task: it shares the rows and
    /// does not change when the replica does (O(rows) pointer copies).
    pub fn snapshot(&self) -> Arc<HashMap<Uuid, Arc<T>>> {
        Arc::new(self.rows.clone())
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True if the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Changes since the last `clear_changes`.
    pub fn changes(&self) -> &TableChanges<T> {
        &self.changes
    }

    /// Adds an index on `column` (no-op if it exists or the column is unknown).
    pub fn add_index(&mut self, column: &'static str) {
        if self.indexes.iter().any(|i| i.column == column) || !T::COLUMNS.contains(&column) {
            return;
        }
        let mut index = Index {
            column,
            entries: BTreeMap::new(),
        };
        for (uuid, row) in &self.rows {
            index.add(*uuid, &**row);
        }
        self.indexes.push(index);
    }

    /// Rows whose indexed `column` holds `key`. Empty if there is no such index.
    pub fn find<'a>(&'a self, column: &str, key: &Atom) -> impl Iterator<Item = (&'a Uuid, &'a T)> {
        self.indexes
            .iter()
            .find(|i| i.column == column)
            .and_then(|i| i.entries.get(key))
            .into_iter()
            .flatten()
            .filter_map(|u| self.rows.get(u).map(|r| (u, &**r)))
    }

    /// The distinct values of indexed `column` (none without an index).
    pub fn indexed_values<'a>(&'a self, column: &str) -> impl Iterator<Item = &'a Atom> {
        self.indexes
            .iter()
            .find(|i| i.column == column)
            .into_iter()
            .flat_map(|i| i.entries.keys())
    }

    /// Whether `column` has an index ([`Self::find`] answers only then).
    pub fn has_index(&self, column: &str) -> bool {
        self.indexes.iter().any(|i| i.column == column)
    }

    /// The first row whose indexed `column` holds `key`.
    pub fn find_one(&self, column: &str, key: &Atom) -> Option<(&Uuid, &T)> {
        self.find(column, key).next()
    }

    pub(crate) fn clear_changes(&mut self) {
        self.changes = TableChanges::default();
    }

    fn insert_row(&mut self, uuid: Uuid, row: Arc<T>) {
        for index in &mut self.indexes {
            index.add(uuid, &*row);
        }
        if self.changes.deleted.contains_key(&uuid) {
            // Deleted then re-inserted in one batch: report a modification.
            if let Some(old) = self.changes.deleted.remove(&uuid) {
                if old != row {
                    self.changes.modified.insert(uuid, old);
                }
            }
        } else {
            self.changes.inserted.insert(uuid);
        }
        self.rows.insert(uuid, row);
    }

    fn remove_row(&mut self, uuid: Uuid) -> Option<Arc<T>> {
        let row = self.rows.remove(&uuid)?;
        for index in &mut self.indexes {
            index.remove(uuid, &*row);
        }
        if !self.changes.inserted.remove(&uuid) {
            let old = self
                .changes
                .modified
                .remove(&uuid)
                .unwrap_or_else(|| Arc::clone(&row));
            self.changes.deleted.insert(uuid, old);
        }
        Some(row)
    }

    fn replace_row(&mut self, uuid: Uuid, old: Arc<T>, new: Arc<T>) {
        for index in &mut self.indexes {
            index.remove(uuid, &*old);
            index.add(uuid, &*new);
        }
        if !self.changes.inserted.contains(&uuid) {
            match self.changes.modified.entry(uuid) {
                // Back to the value before the batch: nothing to report.
                Entry::Occupied(first) if *first.get() == new => {
                    first.remove();
                }
                Entry::Occupied(_) => {}
                Entry::Vacant(slot) => {
                    slot.insert(old);
                }
            }
        }
        self.rows.insert(uuid, new);
    }

    /// Applies one row operation given as raw JSON.
    pub(crate) fn apply_raw(&mut self, uuid: Uuid, raw: &RawValue) -> Result<(), RowError> {
        let op: RowOp<T::Update> =
            serde_json::from_str(raw.get()).map_err(|e| RowError::Decode(e.to_string()))?;
        match op {
            RowOp::Initial(update) | RowOp::Insert(update) => {
                let mut row = T::default();
                row.apply_new(update)?;
                let row = Arc::new(row);
                if self.unseen.as_mut().is_some_and(|u| u.remove(&uuid)) {
                    // Present before the snapshot: report a modification if it differs.
                    if let Some(old) = self.rows.get(&uuid).filter(|old| **old != row).cloned() {
                        self.replace_row(uuid, old, row);
                    }
                    return Ok(());
                }
                if self.rows.contains_key(&uuid) {
                    return Err(RowError::Decode(format!("insert of existing row {uuid}")));
                }
                self.insert_row(uuid, row);
            }
            RowOp::Modify(update) => {
                let Some(old) = self.rows.get(&uuid) else {
                    return Err(RowError::Decode(format!("modify of unknown row {uuid}")));
                };
                let mut new = T::clone(old);
                new.apply_diff(update)?;
                if new != **old {
                    let old = Arc::clone(old);
                    self.replace_row(uuid, old, Arc::new(new));
                }
            }
            RowOp::Delete(()) => {
                if self.remove_row(uuid).is_none() {
                    return Err(RowError::Decode(format!("delete of unknown row {uuid}")));
                }
            }
        }
        Ok(())
    }

    /// Starts a full snapshot: rows not seen before [`Self::end_snapshot`] are deleted.
    pub(crate) fn begin_snapshot(&mut self) {
        self.unseen = Some(self.rows.keys().copied().collect());
    }

    /// Ends a snapshot; only a `complete` one deletes the rows it did not mention.
    pub(crate) fn end_snapshot(&mut self, complete: bool) {
        if let Some(unseen) = self.unseen.take() {
            if complete {
                for uuid in unseen {
                    self.remove_row(uuid);
                }
            }
        }
    }

    /// Removes every row (reported as deleted).
    pub(crate) fn clear(&mut self) {
        let uuids: Vec<Uuid> = self.rows.keys().copied().collect();
        for uuid in uuids {
            self.remove_row(uuid);
        }
    }

    /// Every row in dynamic form, sorted by uuid (for comparisons with `ovsdb-client dump`).
    pub fn to_datums(&self) -> BTreeMap<Uuid, Vec<(&'static str, Datum)>> {
        self.rows.iter().map(|(u, r)| (*u, r.to_datums())).collect()
    }
}
