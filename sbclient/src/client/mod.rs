//! The reconnecting OVSDB client: a thin tokio task around the sans-IO parts.
//!
//! [`spawn`] returns a [`Client`] handle (cheap to clone) and a receiver of
//! [`Event`]s. The consumer owns its [`Replica`] and applies the events to it
//! ([`Event::apply`]), so it reads a consistent replica without locks.
//!
//! Per connection: `monitor_cond` on `_Server.Database` (to skip cluster members
//! that are disconnected, stale, or not the leader when `leader_only`), then
//! `monitor_cond_since` (falling back to `monitor_cond`), then
//! `set_db_change_aware`. Conditions changed at run time go out as
//! `monitor_cond_change`, one at a time.

mod monitor;
mod remote;
mod server_db;
mod session;
mod timing;
mod tls;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::Value;
use thiserror::Error;
use tokio::sync::{mpsc, oneshot};

use crate::condition::Condition;
use crate::replica::{Replica, UpdateError};
use crate::transaction::{Transaction, TxnError, TxnOutcome};

pub use monitor::{InitialMonitor, MonitorState, ZERO_TXN_ID};
pub use remote::{Remote, RemoteError};
pub use server_db::{ClusterMemory, ServerDatabase, Unsuitable};
pub use timing::{Backoff, Probe, ProbeAction};
pub use tls::{TlsError, TlsSettings};

/// How to connect and what to monitor.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Remotes, tried in random order.
    pub remotes: Vec<Remote>,
    /// The database to monitor, e.g. `OVN_Southbound`.
    pub database: String,
    /// Tables and columns to monitor (see [`ClientConfig::monitor_replica`]).
    pub tables: BTreeMap<String, Vec<String>>,
    /// Initial conditions per table (absent: all rows).
    pub conditions: BTreeMap<String, Condition>,
    /// Use only the cluster leader.
    pub leader_only: bool,
    /// Inactivity probe (`ovn-remote-probe-interval`); `None` disables it.
    pub probe_interval: Option<Duration>,
    /// Probe `unix:` remotes too (ovn-controller does not).
    pub probe_unix: bool,
    /// Reconnect backoff bounds.
    pub backoff_min: Duration,
    pub backoff_max: Duration,
    /// Largest accepted message.
    pub max_message: usize,
    /// Key, certificates and TLS choices for `ssl:` remotes (changed at run time
    /// with [`Client::set_tls`]).
    pub tls: Option<TlsSettings>,
}

impl ClientConfig {
    /// A configuration with ovn-controller's defaults (probe 5 s, backoff 1-8 s).
    pub fn new(remotes: Vec<Remote>, database: impl Into<String>) -> Self {
        Self {
            remotes,
            database: database.into(),
            tables: BTreeMap::new(),
            conditions: BTreeMap::new(),
            leader_only: false,
            probe_interval: Some(Duration::from_secs(5)),
            probe_unix: false,
            backoff_min: Duration::from_secs(1),
            backoff_max: Duration::from_secs(8),
            max_message: 1 << 32,
            tls: None,
        }
    }

    /// Sets the inactivity probe as `ovn-remote-probe-interval` does: in
    /// milliseconds, 0 disables it, values below 1000 are raised to 1000.
    pub fn set_probe_interval_ms(&mut self, ms: u64) {
        self.probe_interval = (ms != 0).then(|| Duration::from_millis(ms.max(1000)));
    }

    /// Monitors only `columns` of `table` (the others keep their default value
    /// in the replica), as ovn-controller does for the local Open_vSwitch DB.
    pub fn monitor_columns(mut self, table: &str, columns: &[&str]) -> Self {
        self.tables.insert(
            table.to_owned(),
            columns.iter().map(|c| (*c).to_owned()).collect(),
        );
        self
    }

    /// Monitors all columns of every table of `replica`.
    pub fn monitor_replica(mut self, replica: &Replica) -> Self {
        for name in replica.table_names() {
            self.tables.insert(
                name.to_owned(),
                replica
                    .columns_of(name)
                    .iter()
                    .map(|c| (*c).to_owned())
                    .collect(),
            );
        }
        self
    }
}

/// What the client reports to its consumer.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event {
    /// A connection is up and monitoring. `connection` numbers the connections that
    /// reached this state (1-based); pass it to [`Client::transact_on`].
    Connected {
        remote: String,
        resumed: bool,
        connection: u64,
        /// Monitored columns that the server's schema lacks (an older schema), as
        /// `(table, column)`: not monitored, so the replica's rows keep their default
        /// value, and not written by transactions (see [`Client::transact`]).
        missing_columns: Vec<(String, String)>,
    },
    /// A full snapshot of the monitored rows (apply with `Replica::apply_snapshot`).
    Snapshot(Box<RawValue>),
    /// Incremental table-updates (apply with `Replica::apply_update`).
    Update(Box<RawValue>),
    /// The conditions requested up to this sequence number are in effect.
    ConditionsAcked(u64),
    /// The server refused the condition change with this sequence number; the
    /// previous conditions stay in effect.
    ConditionsRefused { seqno: u64, error: String },
    /// The connection was lost or abandoned; the client reconnects.
    Disconnected { remote: String, reason: String },
}

impl Event {
    /// Applies a data event to `replica`; returns true if it was one.
    pub fn apply(&self, replica: &mut Replica) -> Result<bool, UpdateError> {
        match self {
            Event::Snapshot(raw) => replica.apply_snapshot(raw).map(|()| true),
            Event::Update(raw) => replica.apply_update(raw).map(|()| true),
            _ => Ok(false),
        }
    }
}

/// Counters, for tests and for `ovn-appctl` style introspection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// True while a connection is monitoring (transactions sent now go out at
    /// once; otherwise they fail with `TxnError::NotConnected`).
    pub connected: bool,
    /// Connections that reached the monitoring state.
    pub connections: u64,
    /// Connection attempts that failed.
    pub connect_failures: u64,
    /// Servers skipped as not connected, stale or not leader.
    pub unsuitable_servers: u64,
    /// `monitor_cond_since` requests sent with a transaction id to resume from.
    pub resume_attempts: u64,
    /// ... that the server could resume (`found=true`).
    pub resumed: u64,
    /// Full snapshots received.
    pub snapshots: u64,
    /// `update2`/`update3` notifications received.
    pub updates: u64,
    /// `monitor_cond_change` requests sent and confirmed.
    pub condition_changes_sent: u64,
    pub condition_changes_acked: u64,
    /// Echo probes sent, and disconnects for lack of a reply.
    pub probes_sent: u64,
    pub probe_timeouts: u64,
    /// Messages that could not be understood.
    pub bad_messages: u64,
    /// Columns left out of transactions because the server's schema lacks them.
    pub columns_not_written: u64,
    /// `ssl:` connection attempts that failed for SSL: settings or files unusable,
    /// handshake refused, CA bootstrap failed.
    pub tls_failures: u64,
}

/// Errors of requests made through the handle.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ClientError {
    #[error("the client task has stopped")]
    Stopped,
    #[error("connection lost before the reply")]
    ConnectionLost,
    /// Not sent: no connection was monitoring (only before the first connection do
    /// requests wait for one).
    #[error("not sent: not connected to the database")]
    NotConnected,
    #[error("server error: {0}")]
    Server(String),
}

enum Command {
    /// A transaction, and the connection it was made for (`None`: the current one).
    Transact(
        Transaction,
        Option<u64>,
        oneshot::Sender<Result<TxnOutcome, TxnError>>,
    ),
    Request(String, Value, oneshot::Sender<Result<Value, ClientError>>),
    SetCondition(String, Condition, oneshot::Sender<u64>),
    /// New SSL settings: an SSL connection made with others is dropped and made again.
    SetTls(Option<TlsSettings>),
    ResetClusterIndex,
    Shutdown,
}

/// A handle to the client task.
#[derive(Clone, Debug)]
pub struct Client {
    commands: mpsc::Sender<Command>,
    stats: Arc<Mutex<ClientStats>>,
}

impl std::fmt::Debug for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Command::Transact(..) => "Transact",
            Command::Request(..) => "Request",
            Command::SetCondition(..) => "SetCondition",
            Command::SetTls(..) => "SetTls",
            Command::ResetClusterIndex => "ResetClusterIndex",
            Command::Shutdown => "Shutdown",
        })
    }
}

/// Starts the client task on the current tokio runtime.
pub fn spawn(config: ClientConfig) -> (Client, mpsc::Receiver<Event>) {
    let (cmd_tx, cmd_rx) = mpsc::channel(64);
    let (event_tx, event_rx) = mpsc::channel(64);
    let stats = Arc::new(Mutex::new(ClientStats::default()));
    let task = session::Driver::new(config, cmd_rx, event_tx, Arc::clone(&stats));
    tokio::spawn(task.run());
    (
        Client {
            commands: cmd_tx,
            stats,
        },
        event_rx,
    )
}

impl Client {
    /// Runs a transaction on the connection that is monitoring when the client task
    /// receives it. It is never kept for a later connection: while no connection is
    /// monitoring it fails with [`TxnError::NotConnected`], and if the connection drops
    /// before the reply, with [`TxnError::ConnectionLost`]; retry from the current state
    /// then. (Only transactions issued before the very first connection wait for it.)
    /// Conflicts and errors are returned, not retried. To be sure the transaction was
    /// built from the connection it goes out on, use [`Client::transact_on`].
    ///
    /// Columns that the server's schema lacks are left out of the transaction (counted in
    /// [`ClientStats::columns_not_written`]), as they are left out of the monitor.
    ///
    /// Order: the server sends the updates a transaction causes before its reply, and the
    /// client queues them on the event channel in that order, so when this returns they are
    /// already queued; drain the channel before planning from the replica again.
    pub async fn transact(&self, txn: Transaction) -> Result<TxnOutcome, TxnError> {
        self.transact_for(None, txn).await
    }

    /// Like [`Client::transact`], but sent only if `connection` (from the last
    /// [`Event::Connected`] applied to the caller's replica) is still the monitoring
    /// connection; otherwise it fails with [`TxnError::StaleConnection`] and nothing is
    /// sent. This covers the moment when the client has reconnected but the caller has not
    /// applied the new connection's snapshot yet.
    pub async fn transact_on(
        &self,
        connection: u64,
        txn: Transaction,
    ) -> Result<TxnOutcome, TxnError> {
        self.transact_for(Some(connection), txn).await
    }

    async fn transact_for(
        &self,
        connection: Option<u64>,
        txn: Transaction,
    ) -> Result<TxnOutcome, TxnError> {
        let (tx, rx) = oneshot::channel();
        self.commands
            .send(Command::Transact(txn, connection, tx))
            .await
            .map_err(|_| TxnError::Connection("client stopped".into()))?;
        rx.await
            .map_err(|_| TxnError::Connection("client stopped".into()))?
    }

    /// The number of the connection monitoring now (as in [`Event::Connected`]), if any.
    pub fn connection(&self) -> Option<u64> {
        let s = self.stats();
        s.connected.then_some(s.connections)
    }

    /// Sends any request (e.g. `list_dbs`) on the monitoring connection and returns its
    /// result; like transactions, it fails with [`ClientError::NotConnected`] while no
    /// connection is monitoring (it waits only for the very first connection).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        let (tx, rx) = oneshot::channel();
        self.commands
            .send(Command::Request(method.to_owned(), params, tx))
            .await
            .map_err(|_| ClientError::Stopped)?;
        rx.await.map_err(|_| ClientError::Stopped)?
    }

    /// Replaces the SSL settings (the SSL table or the files changed). An SSL
    /// connection is made again with them; the files themselves are watched by the
    /// client, so rewriting a certificate needs no call.
    pub async fn set_tls(&self, settings: Option<TlsSettings>) -> Result<(), ClientError> {
        self.commands
            .send(Command::SetTls(settings))
            .await
            .map_err(|_| ClientError::Stopped)
    }

    /// Sets the monitor condition of `table`. Returns the sequence number that
    /// [`Event::ConditionsAcked`] reaches once the server applied it.
    pub async fn set_condition(
        &self,
        table: &str,
        condition: Condition,
    ) -> Result<u64, ClientError> {
        let (tx, rx) = oneshot::channel();
        self.commands
            .send(Command::SetCondition(table.to_owned(), condition, tx))
            .await
            .map_err(|_| ClientError::Stopped)?;
        rx.await.map_err(|_| ClientError::Stopped)
    }

    /// Forgets the highest cluster index and the cluster id seen
    /// (`sb-cluster-state-reset`), for a cluster that was rebuilt from scratch.
    pub async fn reset_cluster_index(&self) -> Result<(), ClientError> {
        self.commands
            .send(Command::ResetClusterIndex)
            .await
            .map_err(|_| ClientError::Stopped)
    }

    /// A copy of the counters.
    pub fn stats(&self) -> ClientStats {
        self.stats.lock().map(|s| *s).unwrap_or_default()
    }

    /// Stops the client task.
    pub async fn shutdown(&self) {
        let _ = self.commands.send(Command::Shutdown).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_interval_semantics() {
        let mut c = ClientConfig::new(Vec::new(), "db");
        c.set_probe_interval_ms(0);
        assert_eq!(c.probe_interval, None);
        c.set_probe_interval_ms(300);
        assert_eq!(c.probe_interval, Some(Duration::from_secs(1)));
        c.set_probe_interval_ms(30_000);
        assert_eq!(c.probe_interval, Some(Duration::from_secs(30)));
    }
}
