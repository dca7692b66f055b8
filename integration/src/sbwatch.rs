//! Watches the Southbound from outside, the way a benchmark needs it: `ovsdb-client monitor`
//! processes (one per table, the tool takes one) print every update as it arrives, and a reader
//! thread stamps each one with the time it was read. This times the Southbound commits
//! themselves, independent of either controller and of `ovn-nbctl --wait` polling:
//!
//! - `SB_Global.nb_cfg` becomes n in the same transaction in which `ovn-northd` writes the
//!   logical flows for Northbound change n;
//! - `Chassis_Private.nb_cfg` becomes n once a chassis' controller has installed the flows
//!   for it;
//! - `Port_Binding.up` turns true once the controller has bound and set up a port.
//!
//! The monitor processes are children of this process and are killed by pid on drop.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::error::{HarnessError, Result};
use crate::host::Host;

/// One change seen in the Southbound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SbEvent {
    /// `SB_Global.nb_cfg` is now this.
    SbNbCfg(i64),
    /// The `Chassis_Private` row of `chassis` has this `nb_cfg`.
    ChassisNbCfg { chassis: String, nb_cfg: i64 },
    /// Port_Binding `port`'s `up` column is now `up` (false when unset).
    PortUp { port: String, up: bool },
}

/// When an update was read.
#[derive(Debug, Clone)]
pub struct Stamped {
    pub at: Instant,
    pub event: SbEvent,
}

#[derive(Default)]
struct Log {
    events: Vec<Stamped>,
    /// Which monitors have printed their initial contents.
    initial_done: usize,
}

type Shared = Arc<(Mutex<Log>, Condvar)>;

/// The three monitors and what they have seen so far.
pub struct SbWatch {
    shared: Shared,
    children: Vec<Child>,
    readers: Vec<JoinHandle<()>>,
}

/// What one monitor watches: table, columns, and how a row becomes an event.
struct Monitor {
    table: &'static str,
    columns: &'static str,
    event: fn(&HashMap<String, Value>) -> Option<SbEvent>,
}

const MONITORS: [Monitor; 3] = [
    Monitor {
        table: "SB_Global",
        columns: "nb_cfg",
        event: |row| Some(SbEvent::SbNbCfg(row.get("nb_cfg")?.as_i64()?)),
    },
    Monitor {
        table: "Chassis_Private",
        columns: "name,nb_cfg",
        event: |row| {
            Some(SbEvent::ChassisNbCfg {
                chassis: row.get("name")?.as_str()?.to_owned(),
                nb_cfg: row.get("nb_cfg")?.as_i64()?,
            })
        },
    },
    Monitor {
        table: "Port_Binding",
        columns: "logical_port,up",
        event: |row| {
            Some(SbEvent::PortUp {
                port: row.get("logical_port")?.as_str()?.to_owned(),
                // An optional boolean: `true`/`false`, or `["set",[]]` when unset.
                up: row.get("up")?.as_bool().unwrap_or(false),
            })
        },
    },
];

impl SbWatch {
    /// Starts the monitors against `remote` and returns once each has printed the table's
    /// current contents (or `timeout` passes).
    pub fn start(host: &Host, remote: &str, timeout: Duration) -> Result<Self> {
        let shared: Shared = Arc::default();
        let mut watch = Self {
            shared: Arc::clone(&shared),
            children: Vec::new(),
            readers: Vec::new(),
        };
        for monitor in &MONITORS {
            let mut child = host
                .command("ovsdb-client")
                .args([
                    "--format=json",
                    "monitor",
                    remote,
                    "OVN_Southbound",
                    monitor.table,
                    monitor.columns,
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|source| HarnessError::Spawn {
                    program: "ovsdb-client".into(),
                    source,
                })?;
            let stdout = child.stdout.take().expect("stdout is piped");
            watch.children.push(child);
            let shared = Arc::clone(&shared);
            let event = monitor.event;
            watch.readers.push(std::thread::spawn(move || {
                read_updates(BufReader::new(stdout), event, &shared);
            }));
        }
        watch.wait_until(
            "the Southbound monitors' initial contents",
            timeout,
            |log| (log.initial_done == MONITORS.len()).then_some(()),
        )?;
        Ok(watch)
    }

    /// The first event at or after `since` that `wanted` accepts, waiting up to `timeout`.
    pub fn first_after(
        &self,
        what: &str,
        since: Instant,
        timeout: Duration,
        wanted: impl Fn(&SbEvent) -> bool,
    ) -> Result<Instant> {
        self.wait_until(what, timeout, |log| {
            log.events
                .iter()
                .find(|s| s.at >= since && wanted(&s.event))
                .map(|s| s.at)
        })
    }

    /// Latency of Northbound change `nb_cfg` on `chassis`: from `ovn-northd` committing its
    /// Southbound transaction to the chassis acknowledging it (flows installed).
    pub fn nb_cfg_latency(
        &self,
        chassis: &str,
        nb_cfg: i64,
        since: Instant,
        timeout: Duration,
    ) -> Result<Duration> {
        let northd = self.first_after(
            "SB_Global.nb_cfg",
            since,
            timeout,
            |e| matches!(e, SbEvent::SbNbCfg(n) if *n >= nb_cfg),
        )?;
        let acked = self.first_after("Chassis_Private.nb_cfg", since, timeout, |e| {
            matches!(e, SbEvent::ChassisNbCfg { chassis: c, nb_cfg: n } if c == chassis && *n >= nb_cfg)
        })?;
        Ok(acked.saturating_duration_since(northd))
    }

    fn wait_until<T>(
        &self,
        what: &str,
        timeout: Duration,
        found: impl Fn(&Log) -> Option<T>,
    ) -> Result<T> {
        let (lock, changed) = &*self.shared;
        let deadline = Instant::now() + timeout;
        let mut log = lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            if let Some(v) = found(&log) {
                return Ok(v);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(HarnessError::Timeout {
                    what: what.to_owned(),
                    after: timeout,
                });
            }
            log = changed
                .wait_timeout(log, left)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }
}

impl Drop for SbWatch {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
    }
}

/// Reads `ovsdb-client --format=json monitor` output: one JSON object per update, with
/// `headings` (`row`, `action`, then the columns) and `data` rows. A modification comes as an
/// `old` row (uuid, changed columns) followed by a `new` row with every column.
fn read_updates(
    out: impl BufRead,
    event: fn(&HashMap<String, Value>) -> Option<SbEvent>,
    shared: &Shared,
) {
    let (lock, changed) = &**shared;
    let mut first = true;
    for line in out.lines() {
        let Ok(line) = line else { break };
        let at = Instant::now();
        let Ok(update) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let events = update_events(&update, event);
        let mut log = lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        log.events
            .extend(events.into_iter().map(|event| Stamped { at, event }));
        if first {
            log.initial_done += 1;
            first = false;
        }
        changed.notify_all();
    }
}

fn update_events(
    update: &Value,
    event: fn(&HashMap<String, Value>) -> Option<SbEvent>,
) -> Vec<SbEvent> {
    let headings: Vec<&str> = update["headings"]
        .as_array()
        .map(|h| h.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(rows) = update["data"].as_array() else {
        return Vec::new();
    };
    rows.iter()
        .filter_map(Value::as_array)
        .filter_map(|cells| {
            let row: HashMap<String, Value> = headings
                .iter()
                .zip(cells)
                .map(|(h, v)| ((*h).to_owned(), v.clone()))
                .collect();
            let action = row.get("action")?.as_str()?;
            matches!(action, "initial" | "insert" | "new")
                .then(|| event(&row))
                .flatten()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modification_yields_the_new_row() {
        let update: Value = serde_json::from_str(
            r#"{"data":[["446e","old",5],["","new",7]],"headings":["row","action","nb_cfg"]}"#,
        )
        .unwrap();
        assert_eq!(
            update_events(&update, MONITORS[0].event),
            vec![SbEvent::SbNbCfg(7)]
        );
    }

    #[test]
    fn unset_up_is_down() {
        let update: Value = serde_json::from_str(
            r#"{"data":[["1f1b","initial","lsp1",["set",[]]],["2a2b","insert","lsp2",true]],
                "headings":["row","action","logical_port","up"]}"#,
        )
        .unwrap();
        assert_eq!(
            update_events(&update, MONITORS[2].event),
            vec![
                SbEvent::PortUp {
                    port: "lsp1".into(),
                    up: false
                },
                SbEvent::PortUp {
                    port: "lsp2".into(),
                    up: true
                }
            ]
        );
    }
}
