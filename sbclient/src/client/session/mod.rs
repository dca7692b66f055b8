//! The tokio task: connection loop, one session per connection.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use rand::seq::SliceRandom;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::monitor::{MonitorState, ZERO_TXN_ID};
use super::remote::{connect, ConnectError, Remote, Stream};
use super::server_db::{ClusterMemory, ServerDatabase, Unsuitable};
use super::timing::{Backoff, Probe, ProbeAction};
use super::tls::{write_bootstrapped_ca, Connector, TlsError, TlsState};
use super::{ClientConfig, ClientError, ClientStats, Command, Event};
use crate::jsonrpc::{encode_request, Framer};
use crate::replica::Replica;
use crate::transaction::{Transaction, TxnError, TxnOutcome};

mod handlers;

const SERVER_DB: &str = "_Server";

/// How often an SSL session looks at its key and certificate files.
const TLS_FILE_CHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// A read error; on a TLS session, one of the TLS layer (an alert) is told apart.
fn read_error(tls: bool, e: &std::io::Error) -> End {
    let of_tls = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<tokio_rustls::rustls::Error>())
        .is_some();
    if tls && of_tls {
        End::TlsRefused(e.to_string())
    } else {
        End::Io(e.to_string())
    }
}

async fn tick_opt(interval: Option<&mut tokio::time::Interval>) {
    match interval {
        Some(i) => {
            i.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// Why a session ended.
#[derive(Debug)]
enum End {
    Io(String),
    /// The TLS layer failed after the handshake (with TLS 1.3 the server refuses the
    /// client's certificate only then: an alert instead of the first reply).
    TlsRefused(String),
    Protocol(String),
    Unsuitable(Unsuitable),
    ProbeTimeout,
    /// The SSL settings or files changed: reconnect with them.
    TlsChanged,
    Shutdown,
}

impl std::fmt::Display for End {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            End::Io(e) => write!(f, "I/O error: {e}"),
            End::TlsRefused(e) => write!(f, "SSL error: {e}"),
            End::Protocol(e) => write!(f, "protocol error: {e}"),
            End::Unsuitable(u) => write!(f, "server unsuitable: {u}"),
            End::ProbeTimeout => f.write_str("inactivity probe timed out"),
            End::TlsChanged => f.write_str("SSL configuration changed"),
            End::Shutdown => f.write_str("shutdown"),
        }
    }
}

enum Pending {
    ServerMonitor,
    /// `get_schema` of the data database (a server without `_Server`).
    GetSchema,
    Monitor {
        since: bool,
    },
    CondChange,
    Transact(Transaction, oneshot::Sender<Result<TxnOutcome, TxnError>>),
    Request(oneshot::Sender<Result<Value, ClientError>>),
    Ignore,
}

#[derive(PartialEq, Eq)]
enum Phase {
    CheckingServer,
    Subscribing,
    Monitoring,
}

pub(super) struct Driver {
    config: ClientConfig,
    commands: mpsc::Receiver<Command>,
    events: mpsc::Sender<Event>,
    stats: Arc<Mutex<ClientStats>>,
    monitor: MonitorState,
    cluster: ClusterMemory,
    /// Commands issued before the first connection reached monitoring; none after.
    queued: VecDeque<Command>,
    /// Connections that reached monitoring (the current one's number while monitoring).
    connections: u64,
    shutdown: bool,
    tls: TlsState,
}

struct Session {
    writer: WriteHalf<Stream>,
    next_id: u64,
    pending: HashMap<u64, Pending>,
    phase: Phase,
    server: Replica,
    resumed: bool,
    remote: String,
    unix: bool,
    tls: bool,
    /// The data database's schema as the server has it (from `_Server`, or `get_schema`).
    schema: Option<crate::schema::DatabaseSchema>,
    /// Its text from `get_schema`, when the server has no `_Server` database.
    schema_text: Option<String>,
    /// Monitored columns that the server's schema lacks, as `(table, column)`.
    missing_columns: Vec<(String, String)>,
}

impl Driver {
    pub(super) fn new(
        mut config: ClientConfig,
        commands: mpsc::Receiver<Command>,
        events: mpsc::Sender<Event>,
        stats: Arc<Mutex<ClientStats>>,
    ) -> Self {
        let mut monitor = MonitorState::new();
        for (table, cond) in std::mem::take(&mut config.conditions) {
            monitor.set_condition(&table, cond);
        }
        Self {
            tls: TlsState::new(config.tls.clone()),
            config,
            commands,
            events,
            stats,
            monitor,
            cluster: ClusterMemory::default(),
            queued: VecDeque::new(),
            connections: 0,
            shutdown: false,
        }
    }

    fn stat(&self, f: impl FnOnce(&mut ClientStats)) {
        if let Ok(mut s) = self.stats.lock() {
            f(&mut s);
        }
    }

    pub(super) async fn run(mut self) {
        let mut backoff = Backoff::new(self.config.backoff_min, self.config.backoff_max);
        let mut order: Vec<Remote> = Vec::new();
        while !self.shutdown {
            if order.is_empty() {
                order.clone_from(&self.config.remotes);
                order.shuffle(&mut rand::thread_rng());
                order.reverse();
            }
            let Some(remote) = order.pop() else {
                tracing::error!("no remotes configured");
                return;
            };
            let started = Instant::now();
            let end = match self.open(&remote).await {
                Ok(stream) => match self.session(stream, &remote).await {
                    Err(End::TlsRefused(e)) => {
                        Err(self.tls_failure(&TlsError::Handshake(remote.to_string(), e)))
                    }
                    other => other,
                },
                Err(end) => {
                    self.stat(|s| s.connect_failures += 1);
                    Err(end)
                }
            };
            self.monitor.on_disconnect();
            self.stat(|st| st.connected = false);
            // New SSL settings are tried at once.
            let mut skip_backoff = matches!(end, Err(End::TlsChanged));
            match end {
                Ok(()) | Err(End::Shutdown) => return,
                Err(end) => {
                    tracing::info!(remote = %remote, reason = %end, "OVSDB connection ended");
                    if let End::Unsuitable(_) = end {
                        self.stat(|s| s.unsuitable_servers += 1);
                        // A forced move to another server skips the backoff,
                        // until every remote was tried once.
                        skip_backoff = !order.is_empty();
                    }
                    let _ = self
                        .events
                        .send(Event::Disconnected {
                            remote: remote.to_string(),
                            reason: end.to_string(),
                        })
                        .await;
                    backoff.on_session_end(started.elapsed());
                }
            }
            if skip_backoff {
                continue;
            }
            // Wait, but keep serving commands (queued until connected).
            let deadline = Instant::now() + backoff.next_delay();
            loop {
                tokio::select! {
                    () = tokio::time::sleep_until(deadline) => break,
                    cmd = self.commands.recv() => match cmd {
                        None | Some(Command::Shutdown) => return,
                        Some(cmd) => self.offline_command(cmd),
                    },
                }
            }
        }
    }

    /// Opens a connection to `remote`; for `ssl:`, with the SSL configuration as it is
    /// now (reloaded if a file changed), bootstrapping the CA certificate if asked.
    async fn open(&mut self, remote: &Remote) -> Result<Stream, End> {
        let connector = match remote {
            Remote::Ssl { .. } => Some(self.tls.connector().map_err(|e| self.tls_failure(&e))?),
            _ => None,
        };
        let config = connector.as_ref().map(|c| match c {
            Connector::Verify(config) | Connector::Bootstrap { config, .. } => config,
        });
        let stream = match connect(remote, config).await {
            Ok(stream) => stream,
            Err(ConnectError::Handshake(e)) => {
                return Err(
                    self.tls_failure(&TlsError::Handshake(remote.to_string(), e.to_string()))
                )
            }
            Err(e) => return Err(End::Io(e.to_string())),
        };
        if let Some(Connector::Bootstrap { ca_cert, .. }) = connector {
            let chain = stream.peer_certificates().unwrap_or_default();
            write_bootstrapped_ca(chain, &ca_cert).map_err(|e| self.tls_failure(&e))?;
            tracing::info!(
                "successfully bootstrapped CA cert to {}; reconnecting to verify the server with it",
                ca_cert.display()
            );
            return Err(End::TlsChanged);
        }
        Ok(stream)
    }

    /// Counts an SSL failure and logs it, once while it repeats.
    fn tls_failure(&mut self, error: &TlsError) -> End {
        self.stat(|s| s.tls_failures += 1);
        if self.tls.first_report(error) {
            tracing::error!("{error}");
        }
        End::Io(error.to_string())
    }

    /// A command while no connection is monitoring. Transactions and requests fail at
    /// once (they may rest on a stale replica), except before the first connection, when
    /// they wait for it.
    fn offline_command(&mut self, cmd: Command) {
        let first = self.connections == 0;
        match cmd {
            Command::SetCondition(table, cond, reply) => {
                let _ = reply.send(self.monitor.set_condition(&table, cond));
            }
            Command::ResetClusterIndex => self.cluster.reset(),
            Command::SetTls(settings) => {
                self.tls.set(settings);
            }
            Command::Shutdown => self.shutdown = true,
            Command::Transact(txn, None, reply) if first => {
                self.queued.push_back(Command::Transact(txn, None, reply));
            }
            Command::Transact(_, made_for, reply) => {
                let _ = reply.send(Err(match made_for {
                    Some(made_for) => TxnError::StaleConnection {
                        made_for,
                        current: None,
                    },
                    None => TxnError::NotConnected,
                }));
            }
            Command::Request(method, params, reply) if first => {
                self.queued
                    .push_back(Command::Request(method, params, reply));
            }
            Command::Request(_, _, reply) => {
                let _ = reply.send(Err(ClientError::NotConnected));
            }
        }
    }

    async fn session(&mut self, stream: Stream, remote: &Remote) -> Result<(), End> {
        let (mut reader, writer) = tokio::io::split(stream);
        let mut server = Replica::new(SERVER_DB);
        server.add_table::<ServerDatabase>();
        let mut s = Session {
            writer,
            next_id: 0,
            pending: HashMap::new(),
            phase: Phase::CheckingServer,
            server,
            resumed: false,
            remote: remote.to_string(),
            unix: matches!(remote, Remote::Unix(_)),
            tls: matches!(remote, Remote::Ssl { .. }),
            schema: None,
            schema_text: None,
            missing_columns: Vec::new(),
        };
        let result = self.session_loop(&mut s, &mut reader).await;
        for (_, p) in s.pending.drain() {
            match p {
                Pending::Transact(_, reply) => {
                    let _ = reply.send(Err(TxnError::ConnectionLost));
                }
                Pending::Request(reply) => {
                    let _ = reply.send(Err(ClientError::ConnectionLost));
                }
                _ => {}
            }
        }
        result
    }

    async fn session_loop(
        &mut self,
        s: &mut Session,
        reader: &mut ReadHalf<Stream>,
    ) -> Result<(), End> {
        let db = self.config.database.clone();
        let where_name = json!([["name", "==", db]]);
        s.send(
            "monitor_cond",
            json!([SERVER_DB, ["monid", SERVER_DB],
                   {"Database": [{"columns": <ServerDatabase as crate::wire::Row>::COLUMNS, "where": where_name}]}]),
            Pending::ServerMonitor,
        )
        .await?;
        let mut framer = Framer::with_limit(self.config.max_message);
        let mut buf = vec![0u8; 256 * 1024];
        // As ovn-controller does, unix sockets are not probed unless asked.
        let interval = if s.unix && !self.config.probe_unix {
            None
        } else {
            self.config.probe_interval
        };
        let mut probe = Probe::new(interval, Instant::now().into_std());
        // An SSL session ends when its files change, so that the next one uses them.
        let mut tls_check = s.tls.then(|| tokio::time::interval(TLS_FILE_CHECK));
        loop {
            let probe_at = probe.deadline().map(Instant::from_std);
            tokio::select! {
                read = reader.read(&mut buf) => {
                    let n = read.map_err(|e| read_error(s.tls, &e))?;
                    if n == 0 {
                        return Err(End::Io("connection closed by peer".into()));
                    }
                    probe.on_receive(Instant::now().into_std());
                    framer.push(&buf[..n]);
                    while let Some(frame) = framer.next_frame().map_err(|e| End::Protocol(e.to_string()))? {
                        self.handle_frame(s, &frame).await?;
                    }
                }
                cmd = self.commands.recv() => match cmd {
                    None | Some(Command::Shutdown) => return Err(End::Shutdown),
                    Some(cmd) => self.command(s, cmd).await?,
                },
                () = tick_opt(tls_check.as_mut()) => if self.tls.changed_since_connect() {
                    return Err(End::TlsChanged);
                },
                () = sleep_until_opt(probe_at) => match probe.poll(Instant::now().into_std()) {
                    ProbeAction::Wait => {}
                    ProbeAction::SendEcho => {
                        self.stat(|st| st.probes_sent += 1);
                        s.send("echo", json!([]), Pending::Ignore).await?;
                    }
                    ProbeAction::Timeout => {
                        self.stat(|st| st.probe_timeouts += 1);
                        return Err(End::ProbeTimeout);
                    }
                },
            }
        }
    }

    async fn command(&mut self, s: &mut Session, cmd: Command) -> Result<(), End> {
        if let Command::SetTls(settings) = cmd {
            return if self.tls.set(settings) && s.tls {
                Err(End::TlsChanged)
            } else {
                Ok(())
            };
        }
        if s.phase != Phase::Monitoring {
            self.offline_command(cmd);
            return Ok(());
        }
        match cmd {
            Command::Transact(_, Some(made_for), reply) if made_for != self.connections => {
                let _ = reply.send(Err(TxnError::StaleConnection {
                    made_for,
                    current: Some(self.connections),
                }));
                Ok(())
            }
            Command::Transact(mut txn, _, reply) => {
                if s.schema.is_some() {
                    let dropped = txn.retain_columns(|t, c| server_has(s.schema.as_ref(), t, c));
                    if !dropped.is_empty() {
                        self.stat(|st| st.columns_not_written += dropped.len() as u64);
                        tracing::debug!(?dropped, "not written: columns the server's schema lacks");
                    }
                }
                let params = txn.to_params();
                s.send("transact", params, Pending::Transact(txn, reply))
                    .await
            }
            Command::Request(method, params, reply) => {
                s.send(&method, params, Pending::Request(reply)).await
            }
            Command::SetCondition(table, cond, reply) => {
                let _ = reply.send(self.monitor.set_condition(&table, cond));
                self.send_condition_change(s).await
            }
            Command::ResetClusterIndex => {
                self.cluster.reset();
                Ok(())
            }
            Command::SetTls(_) | Command::Shutdown => Err(End::Shutdown),
        }
    }

    async fn send_condition_change(&mut self, s: &mut Session) -> Result<(), End> {
        if let Some(changes) = self.monitor.next_change() {
            let id = json!(["monid", self.config.database]);
            self.stat(|st| st.condition_changes_sent += 1);
            let params = MonitorState::change_params_for(&id, &changes, |t, c| {
                server_has(s.schema.as_ref(), t, c)
            });
            s.send("monitor_cond_change", params, Pending::CondChange)
                .await?;
        }
        Ok(())
    }

    async fn emit(&mut self, event: Event) -> Result<(), End> {
        self.events.send(event).await.map_err(|_| End::Shutdown)
    }

    /// The monitor requests, and the requested columns that the server's schema lacks
    /// (`(table, column)`; a table it lacks is not monitored and not listed).
    fn monitor_requests(
        &self,
        conditions: &std::collections::BTreeMap<String, crate::Condition>,
        server_schema: Option<&crate::schema::DatabaseSchema>,
    ) -> (Value, Vec<(String, String)>) {
        let mut obj = serde_json::Map::new();
        let mut missing = Vec::new();
        for (table, columns) in &self.config.tables {
            let columns: Vec<&String> = match server_schema {
                None => columns.iter().collect(),
                Some(schema) => {
                    let Some(ts) = schema.tables.get(table) else {
                        tracing::info!(%table, "table not in the server's schema, not monitored");
                        continue;
                    };
                    let (have, lack): (Vec<&String>, Vec<&String>) =
                        columns.iter().partition(|c| ts.columns.contains_key(*c));
                    missing.extend(lack.into_iter().map(|c| (table.clone(), c.clone())));
                    have
                }
            };
            let mut req = json!({ "columns": columns });
            if let Some(c) = conditions.get(table) {
                req["where"] =
                    json!(c.for_monitor_without(|c| server_has(server_schema, table, c)));
            }
            obj.insert(table.clone(), json!([req]));
        }
        (Value::Object(obj), missing)
    }

    /// Restricts the monitored tables and columns to those of the server's
    /// schema (an older server lacks newer tables and columns, and refuses a
    /// monitor request that names them).
    fn server_schema_filter(&self, s: &Session) -> Option<crate::schema::DatabaseSchema> {
        let from_server = s.server.table::<ServerDatabase>().and_then(|t| {
            t.iter()
                .map(|(_, r)| r)
                .find(|r| r.name == self.config.database)
                .and_then(|r| r.schema.clone())
        });
        let text = from_server.or_else(|| s.schema_text.clone())?;
        match crate::schema::DatabaseSchema::parse(&text) {
            Ok(schema) => Some(schema),
            Err(e) => {
                tracing::warn!(error = %e, "cannot parse the server's schema; monitoring everything");
                None
            }
        }
    }

    async fn start_data_monitor(&mut self, s: &mut Session, since: bool) -> Result<(), End> {
        let init = self.monitor.start_monitor();
        let schema = self.server_schema_filter(s);
        let (requests, missing) = self.monitor_requests(&init.conditions, schema.as_ref());
        s.schema = schema;
        s.missing_columns = missing;
        let db = self.config.database.clone();
        s.phase = Phase::Subscribing;
        if since {
            if init.last_txn_id.is_some() {
                self.stat(|st| st.resume_attempts += 1);
            }
            let last = init.last_txn_id.unwrap_or_else(|| ZERO_TXN_ID.to_owned());
            s.send(
                "monitor_cond_since",
                json!([db, ["monid", db], requests, last]),
                Pending::Monitor { since: true },
            )
            .await
        } else {
            s.send(
                "monitor_cond",
                json!([db, ["monid", db], requests]),
                Pending::Monitor { since: false },
            )
            .await
        }
    }

    fn check_server(&mut self, s: &Session) -> Result<(), End> {
        let row = s.server.table::<ServerDatabase>().and_then(|t| {
            t.iter()
                .map(|(_, r)| r)
                .find(|r| r.name == self.config.database)
        });
        self.cluster
            .check(row, self.config.leader_only)
            .map_err(End::Unsuitable)
    }
}

impl Session {
    async fn write(&mut self, bytes: &[u8]) -> Result<(), End> {
        self.writer
            .write_all(bytes)
            .await
            .map_err(|e| End::Io(e.to_string()))
    }

    async fn send(&mut self, method: &str, params: Value, pending: Pending) -> Result<(), End> {
        self.next_id += 1;
        let id = self.next_id;
        let bytes =
            encode_request(method, params, json!(id)).map_err(|e| End::Protocol(e.to_string()))?;
        self.pending.insert(id, pending);
        self.write(&bytes).await
    }
}

/// Whether the server's schema (if known) has `table.column`; a table it lacks is not
/// judged here (it is not monitored at all), and `_uuid`/`_version` always exist.
fn server_has(schema: Option<&crate::schema::DatabaseSchema>, table: &str, column: &str) -> bool {
    column.starts_with('_')
        || schema
            .and_then(|s| s.tables.get(table))
            .is_none_or(|t| t.columns.contains_key(column))
}

fn parse<'a, T: serde::Deserialize<'a>>(raw: &'a RawValue) -> Result<T, End> {
    serde_json::from_str(raw.get()).map_err(|e| End::Protocol(format!("bad params: {e}")))
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
