//! The Southbound input: the `sbclient` typed replica of `OVN_Southbound`, filled from a
//! live database or from JSON files (`ovn-sbctl --format=json list TABLE`,
//! `ovsdb-client -f json dump`). Files are loaded into the same replica, row by row as a
//! server would send them, so the compiler has one input model.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::time::Duration;

use sbclient::{ovn_sb, spawn, ClientConfig, Event, Remote, Replica};
use serde_json::value::RawValue;
use serde_json::Value;

/// Why Southbound input could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SouthboundError {
    #[error("invalid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("a table needs `headings` and `data`")]
    Shape,
    #[error("table {table}: cannot tell which table this is (no caption; headings {headings:?})")]
    UnknownTable {
        table: String,
        headings: Vec<String>,
    },
    #[error("table {table}: column `{column}` is missing; the compiler needs it")]
    MissingColumn { table: String, column: &'static str },
    #[error("table {table}: row {row} has no `_uuid`")]
    NoUuid { table: String, row: usize },
    #[error("table {table}: {skipped} row(s) could not be decoded (see the log)")]
    BadRows { table: String, skipped: u64 },
    #[error("{remote}: {reason}")]
    Remote { remote: String, reason: String },
}

/// A replica with every Southbound table and the indexes the agent looks rows up by.
pub fn new_replica() -> Replica {
    let mut r = Replica::new(ovn_sb::DATABASE);
    ovn_sb::register_all(&mut r);
    if let Some(t) = r.table_mut::<ovn_sb::PortBinding>() {
        t.add_index("logical_port");
        t.add_index("datapath");
        // What a binding plan looks at (engine::binding::candidates).
        t.add_index("chassis");
        t.add_index("additional_chassis");
        t.add_index("parent_port");
        t.add_index("type");
        // VIF plugging (engine::vif_plug).
        t.add_index("requested_chassis");
    }
    if let Some(t) = r.table_mut::<ovn_sb::Chassis>() {
        t.add_index("name");
    }
    r
}

/// The Port_Binding named `name`, through the `logical_port` index of [`new_replica`] (a
/// scan for a replica built without it).
pub fn port_binding_named<'a>(
    sb: &'a Replica,
    name: &str,
) -> Option<(&'a sbclient::Uuid, &'a ovn_sb::PortBinding)> {
    let pbs = sb.table::<ovn_sb::PortBinding>()?;
    pbs.find_one("logical_port", &sbclient::Atom::from(name))
        .or_else(|| pbs.iter().find(|(_, p)| p.logical_port == name))
}

/// Southbound content read from files or a remote: the replica and which tables the input
/// had (files may hold only some tables; a missing DHCP option catalogue means "unknown",
/// an empty one means "no options").
pub struct Southbound {
    pub replica: Replica,
    pub tables: BTreeSet<String>,
    /// Tables of the input that this build's schema does not have (a newer northd's),
    /// skipped.
    pub unknown_tables: BTreeSet<String>,
}

impl Default for Southbound {
    fn default() -> Self {
        Self {
            replica: new_replica(),
            tables: BTreeSet::new(),
            unknown_tables: BTreeSet::new(),
        }
    }
}

/// Columns without which the compiler cannot use a row of the table.
pub(crate) fn required_columns(table: &str) -> &'static [&'static str] {
    match table {
        "Logical_Flow" => &["match", "actions", "pipeline", "table_id", "priority"],
        "Datapath_Binding" => &["tunnel_key"],
        "Port_Binding" => &["logical_port", "datapath", "tunnel_key"],
        "Multicast_Group" => &["datapath", "name", "tunnel_key"],
        "Address_Set" | "Port_Group" => &["name"],
        "MAC_Binding" | "Static_MAC_Binding" => &["logical_port", "ip", "mac"],
        "FDB" => &["mac", "dp_key", "port_key"],
        "Load_Balancer" => &["vips"],
        "HA_Chassis" => &["priority"],
        "Chassis" => &["name"],
        _ => &[],
    }
}

/// Which table a `headings`/`data` document holds when it has no caption (the headings of
/// `ovn-sbctl list` output identify it).
fn guess_table(heads: &[String]) -> Option<&'static str> {
    let has = |h: &str| heads.iter().any(|x| x == h);
    Some(if has("actions") && has("match") {
        "Logical_Flow"
    } else if has("logical_port") && has("tunnel_key") {
        "Port_Binding"
    } else if has("override_dynamic_mac") {
        "Static_MAC_Binding"
    } else if has("logical_port") && has("ip") && has("mac") {
        "MAC_Binding"
    } else if has("dp_key") && has("port_key") {
        "FDB"
    } else if has("vips") {
        "Load_Balancer"
    } else if has("ha_chassis") {
        "HA_Chassis_Group"
    } else if has("priority") && has("chassis") && !has("match") {
        "HA_Chassis"
    } else if has("datapaths") {
        "Logical_DP_Group"
    } else if has("addresses") && has("name") {
        "Address_Set"
    } else if has("ports") && has("name") && !has("datapath") {
        "Port_Group"
    } else if has("datapath") && has("tunnel_key") && has("name") {
        "Multicast_Group"
    } else if has("tunnel_key") {
        "Datapath_Binding"
    } else if has("variables") {
        "Chassis_Template_Var"
    } else if has("bands") {
        "Meter"
    } else if has("encaps") || (has("name") && heads.len() == 2) {
        "Chassis"
    } else {
        return None;
    })
}

impl Southbound {
    /// Adds every table of `text` (one or more JSON documents: a table, a list of tables,
    /// or an object of tables). Tables are decoded one at a time, so only one table's JSON
    /// tree is in memory at once.
    pub fn load_json(&mut self, text: &str) -> Result<(), SouthboundError> {
        let mut de = serde_json::Deserializer::from_str(text);
        // `end` succeeds once only whitespace is left.
        while de.end().is_err() {
            serde::Deserializer::deserialize_any(&mut de, Tables { sb: self })??;
        }
        Ok(())
    }

    /// Loads one table of `ovsdb-client -f json dump` / `ovn-sbctl --format=json list`
    /// output. Rows stay borrowed JSON text until they are written, a chunk at a time, as
    /// the update a server would send: a JSON tree of the whole Logical_Flow table would
    /// take several times the file's size.
    fn load_table(&mut self, t: &TableDump<'_>) -> Result<(), SouthboundError> {
        let (Some(heads), Some(data)) = (&t.headings, &t.data) else {
            return Err(SouthboundError::Shape);
        };
        let name = match t.caption.as_deref() {
            Some(c) => c.trim_end_matches(" table").to_owned(),
            None => guess_table(heads)
                .ok_or_else(|| SouthboundError::UnknownTable {
                    table: "?".into(),
                    headings: heads.clone(),
                })?
                .to_owned(),
        };
        let columns = self.replica.columns_of(&name);
        if columns.is_empty() {
            if t.caption.is_some() {
                // A table a newer schema added: nothing here reads it.
                self.unknown_tables.insert(name);
                return Ok(());
            }
            return Err(SouthboundError::UnknownTable {
                table: name,
                headings: heads.clone(),
            });
        }
        for column in required_columns(&name) {
            if !heads.iter().any(|h| h == column) {
                return Err(SouthboundError::MissingColumn {
                    table: name,
                    column,
                });
            }
        }
        let uuid_at = heads.iter().position(|h| h == "_uuid");
        // The headings this schema has, written once as JSON keys.
        let keys: Vec<Option<String>> = heads
            .iter()
            .map(|h| {
                (h != "_uuid" && columns.contains(&h.as_str())).then(|| {
                    let mut k = String::new();
                    push_json_str(&mut k, h);
                    k
                })
            })
            .collect();
        let mut text = String::with_capacity(1 << 20);
        for (chunk_no, chunk) in data.chunks(LOAD_CHUNK_ROWS).enumerate() {
            text.clear();
            text.push('{');
            push_json_str(&mut text, &name);
            text.push_str(":{");
            for (i, row) in chunk.iter().enumerate() {
                let row_no = chunk_no * LOAD_CHUNK_ROWS + i;
                let no_uuid = || SouthboundError::NoUuid {
                    table: name.clone(),
                    row: row_no,
                };
                let cells: Vec<&RawValue> =
                    serde_json::from_str(row.get()).map_err(|_| SouthboundError::Shape)?;
                let uuid_cell = uuid_at.and_then(|at| cells.get(at)).ok_or_else(no_uuid)?;
                let Ok(("uuid", uuid)) = serde_json::from_str::<(&str, &str)>(uuid_cell.get())
                else {
                    return Err(no_uuid());
                };
                if i > 0 {
                    text.push(',');
                }
                push_json_str(&mut text, uuid);
                text.push_str(":{\"initial\":{");
                let mut first = true;
                for (key, v) in keys.iter().zip(&cells) {
                    let Some(key) = key else { continue };
                    if !first {
                        text.push(',');
                    }
                    first = false;
                    text.push_str(key);
                    text.push(':');
                    text.push_str(v.get());
                }
                text.push_str("}}");
            }
            text.push_str("}}");
            let before = self.replica.stats().rows_skipped;
            let raw = sbclient::replica::raw(&text).map_err(|_| SouthboundError::Shape)?;
            self.replica
                .apply_update(raw)
                .map_err(|_| SouthboundError::Shape)?;
            let skipped = self.replica.stats().rows_skipped - before;
            if skipped > 0 {
                return Err(SouthboundError::BadRows {
                    table: name,
                    skipped,
                });
            }
        }
        self.tables.insert(name);
        Ok(())
    }

    /// Connects to `remote` (`ssl:` with `tls`), takes one snapshot of every table,
    /// disconnects.
    pub async fn fetch(
        remote: &str,
        timeout: Duration,
        tls: Option<sbclient::client::TlsSettings>,
    ) -> Result<Self, SouthboundError> {
        let err = |reason: String| SouthboundError::Remote {
            remote: remote.to_owned(),
            reason,
        };
        let mut sb = Self::default();
        let remotes = Remote::parse_list(remote).map_err(|e| err(e.to_string()))?;
        let mut config = ClientConfig::new(remotes, ovn_sb::DATABASE).monitor_replica(&sb.replica);
        config.probe_interval = None;
        config.tls = tls;
        let (client, mut events) = spawn(config);
        // Why the last attempt failed, for the timeout's message.
        let mut last_failure = None;
        let got = tokio::time::timeout(timeout, async {
            while let Some(event) = events.recv().await {
                if let Event::Disconnected { reason, .. } = &event {
                    last_failure = Some(reason.clone());
                }
                let snapshot = matches!(event, Event::Snapshot(_));
                event
                    .apply(&mut sb.replica)
                    .map_err(|e| err(e.to_string()))?;
                if snapshot {
                    return Ok(true);
                }
            }
            Ok(false)
        })
        .await;
        client.shutdown().await;
        match got {
            Ok(Ok(true)) => {}
            Ok(Ok(false)) => return Err(err("connection closed before the snapshot".into())),
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                let why =
                    last_failure.map_or_else(String::new, |r| format!(" (last attempt: {r})"));
                return Err(err(format!("no snapshot within {timeout:?}{why}")));
            }
        }
        sb.tables = sb.replica.table_names().map(str::to_owned).collect();
        Ok(sb)
    }
}

/// Whether `--sb` names a database remote rather than a file.
pub fn is_remote(s: &str) -> bool {
    ["unix:", "tcp:", "ssl:"].iter().any(|p| s.starts_with(p))
}

fn push_json_str(out: &mut String, s: &str) {
    let _ = write!(out, "{}", Value::from(s));
}

/// Rows applied to the replica per update when loading a file.
const LOAD_CHUNK_ROWS: usize = 4096;

/// One table as the tools print it; rows and cells stay borrowed text.
#[derive(Default, serde::Deserialize)]
struct TableDump<'a> {
    caption: Option<String>,
    headings: Option<Vec<String>>,
    #[serde(borrow)]
    data: Option<Vec<&'a RawValue>>,
}

/// Visits one JSON document of tables, loading each table as soon as it is decoded.
struct Tables<'a> {
    sb: &'a mut Southbound,
}

impl<'de> serde::de::Visitor<'de> for Tables<'_> {
    type Value = Result<(), SouthboundError>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a table, a list of tables or an object of tables")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while let Some(t) = seq.next_element::<TableDump<'de>>()? {
            if let Err(e) = self.sb.load_table(&t) {
                return Ok(Err(e));
            }
        }
        Ok(Ok(()))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        use serde::de::Error as _;
        // Either one table (keys `caption`, `headings`, `data`) or an object whose values
        // are tables.
        let mut single = TableDump::default();
        let mut is_single = false;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "caption" => {
                    is_single = true;
                    single.caption = map.next_value()?;
                }
                "headings" => {
                    is_single = true;
                    single.headings = map.next_value()?;
                }
                "data" => {
                    is_single = true;
                    single.data = map.next_value()?;
                }
                _ if is_single => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
                _ => {
                    let raw: &'de RawValue = map.next_value()?;
                    let t: TableDump<'de> =
                        serde_json::from_str(raw.get()).map_err(A::Error::custom)?;
                    if let Err(e) = self.sb.load_table(&t) {
                        return Ok(Err(e));
                    }
                }
            }
        }
        if is_single {
            return Ok(self.sb.load_table(&single));
        }
        Ok(Ok(()))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Err(SouthboundError::Shape))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Err(SouthboundError::Shape))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Err(SouthboundError::Shape))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Err(SouthboundError::Shape))
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Err(SouthboundError::Shape))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Err(SouthboundError::Shape))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_output_loads_into_typed_rows() {
        let mut sb = Southbound::default();
        sb.load_json(
            r#"{"headings":["_uuid","actions","external_ids","logical_datapath","match","pipeline","priority","table_id","_version"],
                "data":[[["uuid","5b4c5c1e-0000-4000-8000-000000000001"],"next;",["map",[["stage-name","x"]]],
                         ["uuid","5b4c5c1e-0000-4000-8000-0000000000aa"],"1","ingress",100,3,["uuid","5b4c5c1e-0000-4000-8000-0000000000ff"]]]}"#,
        )
        .unwrap();
        let lf = sb.replica.table::<ovn_sb::LogicalFlow>().unwrap();
        let (_, row) = lf.iter().next().unwrap();
        assert_eq!(
            (row.priority, row.table_id, row.match_.as_str()),
            (100, 3, "1")
        );
        assert!(sb.tables.contains("Logical_Flow"));
    }

    #[test]
    fn a_table_of_a_newer_schema_is_skipped_and_named() {
        let mut sb = Southbound::default();
        sb.load_json(
            r#"{"caption":"ACL_ID table","data":[[["uuid","5b4c5c1e-0000-4000-8000-000000000001"],7]],"headings":["_uuid","id"]}
               {"caption":"Chassis table","data":[[["uuid","5b4c5c1e-0000-4000-8000-000000000002"],"hv1",7]],"headings":["_uuid","name","column_of_tomorrow"]}"#,
        )
        .unwrap();
        assert_eq!(sb.unknown_tables.iter().collect::<Vec<_>>(), ["ACL_ID"]);
        assert!(sb.tables.contains("Chassis"), "the known table still loads");
        let ch = sb.replica.table::<ovn_sb::Chassis>().unwrap();
        assert_eq!(ch.iter().next().unwrap().1.name, "hv1");
    }

    #[test]
    fn a_missing_needed_column_is_an_error() {
        let mut sb = Southbound::default();
        let e = sb
            .load_json(r#"{"caption":"Logical_Flow table","headings":["_uuid","actions","match"],"data":[]}"#)
            .unwrap_err();
        assert!(
            matches!(
                e,
                SouthboundError::MissingColumn {
                    column: "pipeline",
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn a_row_of_the_wrong_type_is_an_error() {
        let mut sb = Southbound::default();
        let e = sb
            .load_json(r#"{"caption":"Datapath_Binding table","headings":["_uuid","tunnel_key"],"data":[[["uuid","5b4c5c1e-0000-4000-8000-000000000001"],"seven"]]}"#)
            .unwrap_err();
        assert!(
            matches!(e, SouthboundError::BadRows { skipped: 1, .. }),
            "{e}"
        );
    }

    const CHASSIS: &str = r#"{"caption":"Chassis table","headings":["_uuid","name","hostname","encaps"],"data":[[["uuid","5b4c5c1e-0000-4000-8000-000000000001"],"hv1","h",["set",[]]]]}"#;
    const DATAPATH: &str = r#"{"caption":"Datapath_Binding table","headings":["_uuid","tunnel_key"],"data":[[["uuid","5b4c5c1e-0000-4000-8000-000000000002"],7]]}"#;

    #[test]
    fn lists_objects_and_several_documents_of_tables_load() {
        for text in [
            format!("[{CHASSIS},{DATAPATH}]"),
            format!(r#"{{"Chassis":{CHASSIS},"Datapath_Binding":{DATAPATH}}}"#),
            format!("{CHASSIS}\n{DATAPATH}\n"),
        ] {
            let mut sb = Southbound::default();
            sb.load_json(&text).unwrap();
            assert_eq!(
                sb.replica.table::<ovn_sb::Chassis>().unwrap().len(),
                1,
                "{text}"
            );
            let dps = sb.replica.table::<ovn_sb::DatapathBinding>().unwrap();
            assert_eq!(dps.iter().next().unwrap().1.tunnel_key, 7, "{text}");
        }
    }

    #[test]
    fn truncated_input_is_an_error() {
        let text = format!("[{CHASSIS},{DATAPATH}]");
        let mut sb = Southbound::default();
        let e = sb.load_json(&text[..text.len() - 5]).unwrap_err();
        assert!(matches!(e, SouthboundError::Json(_)), "{e}");
    }

    proptest::proptest! {
        #[test]
        fn any_text_loads_or_fails_cleanly(text in ".{0,200}") {
            let _ = Southbound::default().load_json(&text);
        }

        #[test]
        fn a_cut_or_altered_dump_loads_or_fails_cleanly(cut in 0usize..400, at in 0usize..400, byte in 0u8..128) {
            let mut text = format!("[{CHASSIS},{DATAPATH}]").into_bytes();
            let at = at % text.len();
            text[at] = byte;
            text.truncate(cut.min(text.len()));
            if let Ok(text) = std::str::from_utf8(&text) {
                let _ = Southbound::default().load_json(text);
            }
        }
    }
}
