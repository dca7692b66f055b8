//! Real `ovsdb-server`s for the `sbclient` tests: a standalone Southbound
//! database, a clustered one of N servers (`ovsdb-tool create-cluster` /
//! `join-cluster`, Raft on 127.0.0.1 ports chosen free at run time, clients on
//! unix sockets), and `ovsdb-client dump` parsed into datums for comparison
//! with a replica.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use sbclient::{Datum, Replica, Uuid};

use crate::daemon::{ControlSocket, Daemon};
use crate::error::{HarnessError, Result};
use crate::host::{wait_for, Host};
use crate::ovs::sb_schema;

/// Rows by table, then by uuid, then column -> value. Only real columns (no
/// `_uuid`/`_version`).
pub type DbDump = BTreeMap<String, BTreeMap<Uuid, BTreeMap<String, Datum>>>;

/// `ovsdb-client dump -f json` of `database` at `remote`, parsed.
pub fn dump(host: &Host, remote: &str, database: &str) -> Result<DbDump> {
    let text = host.run(
        "ovsdb-client",
        &["--timeout=30", "dump", "-f", "json", remote, database],
    )?;
    let mut out = DbDump::new();
    for table in serde_json::Deserializer::from_str(&text).into_iter::<serde_json::Value>() {
        let table = table.map_err(|e| HarnessError::Config(format!("bad dump: {e}")))?;
        let name = table["caption"]
            .as_str()
            .and_then(|c| c.strip_suffix(" table"))
            .ok_or_else(|| HarnessError::Config("dump table without caption".into()))?
            .to_owned();
        let headings: Vec<String> = serde_json::from_value(table["headings"].clone())
            .map_err(|e| HarnessError::Config(format!("bad headings: {e}")))?;
        let data: Vec<Vec<Datum>> = serde_json::from_value(table["data"].clone())
            .map_err(|e| HarnessError::Config(format!("bad rows in {name}: {e}")))?;
        let rows = out.entry(name).or_default();
        for row in data {
            let mut uuid = None;
            let mut columns = BTreeMap::new();
            for (heading, value) in headings.iter().zip(row) {
                match heading.as_str() {
                    "_uuid" => {
                        if let Some(sbclient::Atom::Uuid(u)) = value.as_scalar() {
                            uuid = Some(*u);
                        }
                    }
                    "_version" => {}
                    _ => {
                        columns.insert(heading.clone(), value.normalized());
                    }
                }
            }
            let uuid = uuid.ok_or_else(|| HarnessError::Config("row without _uuid".into()))?;
            rows.insert(uuid, columns);
        }
    }
    Ok(out)
}

/// The replica in the same shape as [`dump`], restricted to its tables.
pub fn replica_dump(replica: &Replica) -> DbDump {
    let mut out = DbDump::new();
    for table in replica.table_names() {
        let rows = replica
            .dump_table(table)
            .into_iter()
            .map(|(uuid, cols)| {
                let cols = cols
                    .into_iter()
                    .map(|(c, d)| (c.to_owned(), d.normalized()))
                    .collect();
                (uuid, cols)
            })
            .collect();
        out.insert(table.to_owned(), rows);
    }
    out
}

/// Tables that differ between two dumps (only tables present in `replica`),
/// with a short description, for assertion messages.
pub fn differences(replica: &DbDump, server: &DbDump) -> Vec<String> {
    let empty = BTreeMap::new();
    let mut out = Vec::new();
    for (table, ours) in replica {
        let theirs = server.get(table).unwrap_or(&empty);
        if ours != theirs {
            let missing = theirs.keys().filter(|u| !ours.contains_key(u)).count();
            let extra = ours.keys().filter(|u| !theirs.contains_key(u)).count();
            let changed = ours
                .iter()
                .filter(|(u, r)| theirs.get(u).is_some_and(|t| t != *r))
                .count();
            out.push(format!(
                "{table}: {} rows here, {} on the server ({missing} missing, {extra} extra, {changed} differ)",
                ours.len(),
                theirs.len()
            ));
        }
    }
    out
}

/// A standalone Southbound `ovsdb-server` on `<dir>/sb/sb.sock`.
pub struct Standalone {
    pub daemon: Daemon,
    pub host: Host,
}

impl Standalone {
    pub fn start(parent: &Path) -> Result<Self> {
        let host = Host::create(parent, "sb")?;
        let daemon = crate::ovs::start_ovsdb(&host, "sb", &sb_schema())?;
        Ok(Self { daemon, host })
    }

    /// `unix:<path>` of the server.
    pub fn remote(&self) -> String {
        format!("unix:{}", self.host.path("sb.sock").display())
    }
}

/// The client sessions an `ovsdb-server` on `host` serves (`sessions:N` of its
/// `memory/show`; `None` when it has none or does not answer).
pub fn sessions(host: &Host, server: &Daemon) -> Option<usize> {
    let ctl = server.ctl().display().to_string();
    host.run("ovs-appctl", &["-t", &ctl, "memory/show"])
        .ok()?
        .split_whitespace()
        .find_map(|w| w.strip_prefix("sessions:")?.parse().ok())
}

/// A 127.0.0.1 TCP port that was free a moment ago.
pub fn free_port() -> Result<u16> {
    let listener =
        std::net::TcpListener::bind("127.0.0.1:0").map_err(|source| HarnessError::Io {
            what: "bind a free port".into(),
            source,
        })?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|source| HarnessError::Io {
            what: "local_addr".into(),
            source,
        })
}

/// A clustered Southbound database served by N `ovsdb-server`s.
#[derive(Debug)]
pub struct Cluster {
    pub host: Host,
    servers: Vec<Option<Daemon>>,
    raft: Vec<String>,
}

impl Cluster {
    /// Creates the cluster (server 0 creates, the others join) and starts every server.
    pub fn start(parent: &Path, n: usize) -> Result<Self> {
        let host = Host::create(parent, "cluster")?;
        let mut raft = Vec::new();
        for _ in 0..n {
            raft.push(format!("tcp:127.0.0.1:{}", free_port()?));
        }
        for (i, addr) in raft.iter().enumerate() {
            let db = host.path(&format!("s{i}.db")).display().to_string();
            if i == 0 {
                host.run("ovsdb-tool", &["create-cluster", &db, &sb_schema(), addr])?;
            } else {
                host.run(
                    "ovsdb-tool",
                    &["join-cluster", &db, "OVN_Southbound", addr, &raft[0]],
                )?;
            }
        }
        let mut cluster = Self {
            host,
            servers: (0..n).map(|_| None).collect(),
            raft,
        };
        for i in 0..n {
            cluster.start_server(i)?;
        }
        for i in 0..n {
            cluster.wait_connected(i)?;
        }
        Ok(cluster)
    }

    /// Number of servers.
    pub fn len(&self) -> usize {
        self.servers.len()
    }

    /// True if the cluster has no servers.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// `unix:` remote of server `i`.
    pub fn remote(&self, i: usize) -> String {
        format!("unix:{}", self.host.path(&format!("s{i}.sock")).display())
    }

    /// All client remotes, comma-separated.
    pub fn remotes(&self) -> String {
        (0..self.len())
            .map(|i| self.remote(i))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The Raft address of server `i`.
    pub fn raft_address(&self, i: usize) -> &str {
        &self.raft[i]
    }

    /// Starts (or restarts) server `i`.
    pub fn start_server(&mut self, i: usize) -> Result<()> {
        let db = self.host.path(&format!("s{i}.db")).display().to_string();
        let remote = format!(
            "--remote=punix:{}",
            self.host.path(&format!("s{i}.sock")).display()
        );
        let daemon = Daemon::start(
            &self.host,
            &format!("s{i}"),
            "ovsdb-server",
            ControlSocket::Explicit,
            &[remote, db],
        )?;
        self.servers[i] = Some(daemon);
        Ok(())
    }

    /// Stops server `i` (by pid, through the guard).
    pub fn stop_server(&mut self, i: usize) {
        self.servers[i] = None;
    }

    /// Kills server `i` with SIGKILL (a crash), then reaps it through the guard.
    pub fn kill_server(&mut self, i: usize) {
        if let Some(mut daemon) = self.servers[i].take() {
            daemon.crash();
        }
    }

    /// True if server `i` runs.
    pub fn is_running(&self, i: usize) -> bool {
        self.servers[i].is_some()
    }

    /// Waits until server `i` is connected to the cluster.
    pub fn wait_connected(&self, i: usize) -> Result<()> {
        self.host.run(
            "ovsdb-client",
            &[
                "--timeout=60",
                "wait",
                &self.remote(i),
                "OVN_Southbound",
                "connected",
            ],
        )?;
        Ok(())
    }

    /// `cluster/status` of server `i`.
    pub fn status(&self, i: usize) -> Result<String> {
        let daemon = self.servers[i]
            .as_ref()
            .ok_or_else(|| HarnessError::Config(format!("server {i} is stopped")))?;
        let ctl = daemon.ctl().display().to_string();
        self.host.run(
            "ovs-appctl",
            &["-t", &ctl, "cluster/status", "OVN_Southbound"],
        )
    }

    /// The client sessions server `i` serves ([`sessions`]).
    pub fn sessions(&self, i: usize) -> Option<usize> {
        sessions(&self.host, self.servers[i].as_ref()?)
    }

    /// The index of the current leader, waiting up to `timeout` for one.
    pub fn leader(&self, timeout: Duration) -> Result<usize> {
        wait_for("a cluster leader", timeout, || {
            for i in 0..self.len() {
                if self.servers[i].is_none() {
                    continue;
                }
                if let Ok(status) = self.status(i) {
                    if status.lines().any(|l| l.trim() == "Role: leader") {
                        return Ok(Some(i));
                    }
                }
            }
            Ok(None)
        })
    }
}
