//! Design notes (documentation only).
//!
//! # Framing
//! OVSDB puts JSON-RPC objects back to back. [`crate::jsonrpc::Framer`] keeps
//! its scan position, nesting depth and string/escape state across reads, so
//! each byte is looked at once; a message that starts at the beginning of the
//! buffer is handed out without copying. Bytes other than whitespace between
//! messages are an error (the connection is then dropped and re-established).
//!
//! # Decoding without a JSON tree
//! A message is decoded once into an envelope whose payload stays raw JSON.
//! The replica walks the table-updates object with serde visitors and decodes
//! each row operation from its own slice into the generated `*Update` struct
//! (every column optional, unknown columns refused), then into the typed row.
//! A row that fails is skipped and counted; the other rows of the message are
//! applied. Only a table-updates object that is not an object of objects stops
//! the rest of that message (counted in `ReplicaStats::bad_messages`).
//!
//! # update2 semantics
//! `initial`/`insert` carry the columns that differ from the default; `modify`
//! carries, for a scalar, the new value; for a set, the elements to toggle;
//! for a map, pairs that remove a key (same value), replace its value (other
//! value) or add it (new key); for an optional column, toggles of at most one
//! value. `delete` carries nothing.
//!
//! # Change sets
//! Per table, since the last `Replica::clear_changes`: `inserted` (uuids),
//! `modified` (uuid -> value before the first change), `deleted` (uuid -> last
//! value). An insert then delete leaves no trace; a delete then insert of the
//! same uuid is a modification (or nothing if equal); a change undone within
//! the batch is not reported. A full snapshot (reconnect without resume) is
//! reported as the difference from what the replica held.
//!
//! # Read views
//! The consumer owns its replica and applies whole messages, so what it reads
//! between two `Event::apply` calls is consistent. Rows are kept in `Arc`s:
//! `Replica::snapshot` gives other tasks (a control socket, say) an immutable
//! view that shares the rows and costs one pointer copy per row.
//!
//! # Conditions and resume
//! `MonitorState` keeps the conditions the replica reflects (`acked`), the one
//! change in flight, and the latest wanted (`desired`), with sequence numbers
//! for the consumer (`Event::ConditionsAcked` / `ConditionsRefused`). After a
//! reconnect the client resumes (`monitor_cond_since` with the last txn id)
//! with the acked conditions and then sends the pending change; if a change
//! was in flight when the connection dropped, the server may have applied it,
//! so the client asks for a full snapshot instead, as ovsdb-cs does. A
//! standalone server never resumes (it keeps no history), a clustered one does
//! while the id is in its history.
//!
//! # Cluster awareness
//! Each connection first monitors `_Server.Database` for the database: a
//! clustered member that is not connected to the cluster, is not the leader
//! when `leader_only` is set, or whose log index is lower than one already
//! seen (stale) is abandoned for the next remote; the same checks run on every
//! later `_Server` update. The server's schema from that row restricts what is
//! monitored, so an older server is not sent unknown tables or columns.
//!
//! # Connection
//! Remotes are shuffled and tried in turn, with exponential backoff between
//! attempts (reset after a healthy session). The inactivity probe sends `echo`
//! after an idle interval and drops the connection after a second one.
//! A transaction is sent only on the connection that is monitoring when the
//! client task receives it; it is never queued for a later connection, since it
//! was built from a replica that the next connection may have moved past (a
//! stale claim). Issued while no connection is monitoring, it fails at once with
//! `TxnError::NotConnected`; in flight when the connection drops, with
//! `TxnError::ConnectionLost` (it may or may not have committed); either way the
//! caller retries from the current state. `Client::transact_on` also checks the
//! connection number the caller's replica reflects (from `Event::Connected`),
//! which closes the window in which the client has reconnected but the caller
//! has not applied the new snapshot yet. Only before the very first connection,
//! when no replica state exists to be stale, do transactions and requests wait
//! for it. Requests follow the same rules (`ClientError::NotConnected`).
