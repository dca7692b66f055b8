//! Reading `ovsdb-client -f json dump` output: one JSON object per table, with a `caption`
//! ("<Table> table"), `headings` (column names) and `data` (rows of OVSDB JSON values).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use serde_json::Value;

use crate::error::{io_error, HarnessError, Result};

/// One table of a dump.
#[derive(Debug, Clone, Default)]
pub struct DumpTable {
    pub headings: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

impl DumpTable {
    /// The values of column `name`, one per row (nothing if there is no such column).
    pub fn column<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a Value> + 'a {
        let index = self.headings.iter().position(|h| h == name);
        self.rows
            .iter()
            .filter_map(move |row| index.and_then(|i| row.get(i)))
    }

    /// Rows as (value of column `key`, value of column `value`) pairs.
    pub fn pairs<'a>(
        &'a self,
        key: &str,
        value: &str,
    ) -> impl Iterator<Item = (&'a Value, &'a Value)> + 'a {
        self.column(key).zip(self.column(value))
    }
}

/// A whole database dump, by table name.
#[derive(Debug, Clone, Default)]
pub struct Dump {
    tables: BTreeMap<String, DumpTable>,
}

impl Dump {
    pub fn read(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(io_error(format!("open {}", path.display())))?;
        let bad = |reason: String| HarnessError::Dump {
            path: path.to_owned(),
            reason,
        };
        let mut tables = BTreeMap::new();
        for object in serde_json::Deserializer::from_reader(BufReader::new(file)).into_iter() {
            let object: Value = object.map_err(|e| bad(e.to_string()))?;
            let name = object["caption"]
                .as_str()
                .and_then(|c| c.strip_suffix(" table"))
                .ok_or_else(|| bad("a table without caption".into()))?;
            let headings = object["headings"]
                .as_array()
                .ok_or_else(|| bad(format!("{name}: no headings")))?
                .iter()
                .map(|h| h.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| bad(format!("{name}: a heading is not a string")))?;
            let rows = object["data"]
                .as_array()
                .ok_or_else(|| bad(format!("{name}: no data")))?
                .iter()
                .map(|r| r.as_array().cloned())
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| bad(format!("{name}: a row is not an array")))?;
            tables.insert(name.to_owned(), DumpTable { headings, rows });
        }
        Ok(Self { tables })
    }

    pub fn table(&self, name: &str) -> Option<&DumpTable> {
        self.tables.get(name)
    }

    pub fn table_names(&self) -> impl Iterator<Item = &str> {
        self.tables.keys().map(String::as_str)
    }

    /// Rows of table `name` (0 if the dump has no such table).
    pub fn count(&self, name: &str) -> usize {
        self.table(name).map_or(0, |t| t.rows.len())
    }

    /// Logical ports whose `Port_Binding.chassis` is the `Chassis` named `chassis`, sorted.
    pub fn ports_bound_to(&self, chassis: &str) -> Vec<String> {
        let Some(uuid) = self.table("Chassis").and_then(|t| {
            t.pairs("name", "_uuid")
                .find(|(name, _)| name.as_str() == Some(chassis))
                .and_then(|(_, uuid)| uuid_of(uuid))
        }) else {
            return Vec::new();
        };
        let mut ports: Vec<String> = self
            .table("Port_Binding")
            .map(|t| {
                t.pairs("logical_port", "chassis")
                    .filter(|(_, c)| uuid_of(c) == Some(uuid))
                    .filter_map(|(p, _)| p.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        ports.sort_unstable();
        ports
    }
}

/// The UUID in an OVSDB `["uuid", "..."]` value.
pub fn uuid_of(value: &Value) -> Option<&str> {
    match value.as_array().map(Vec::as_slice) {
        Some([tag, Value::String(uuid)]) if tag == "uuid" => Some(uuid),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tables_and_finds_bound_ports() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dump.json");
        std::fs::write(
            &path,
            r#"{"caption":"Chassis table","data":[[["uuid","c1"],"hv1"],[["uuid","c2"],"hv2"]],"headings":["_uuid","name"]}
{"caption":"Port_Binding table","data":[["p1",["uuid","c1"]],["p2",["set",[]]],["p0",["uuid","c1"]],["p3",["uuid","c2"]]],"headings":["logical_port","chassis"]}
{"caption":"Logical_Flow table","data":[],"headings":["_uuid"]}
"#,
        )
        .unwrap();
        let dump = Dump::read(&path).unwrap();
        assert_eq!(dump.count("Port_Binding"), 4);
        assert_eq!(dump.count("Logical_Flow"), 0);
        assert_eq!(dump.count("Nope"), 0);
        assert_eq!(dump.ports_bound_to("hv1"), ["p0", "p1"]);
        assert_eq!(dump.ports_bound_to("hv2"), ["p3"]);
        assert!(dump.ports_bound_to("hv3").is_empty());
        assert_eq!(
            dump.table_names().collect::<Vec<_>>(),
            ["Chassis", "Logical_Flow", "Port_Binding"]
        );

        std::fs::write(&path, r#"{"caption":"X table","data":[1],"headings":[]}"#).unwrap();
        let err = Dump::read(&path).unwrap_err().to_string();
        assert!(err.contains("X: a row is not an array"), "{err}");
    }
}
