//! Database events into the engine: the OVS and Southbound clients' updates applied to
//! the replicas, connection changes, and what a Southbound schema lacks.

use std::time::Instant;

use sbclient::Event;
use tokio::sync::mpsc;

use crate::engine::core::Engine;

pub(super) fn on_ovs_event(engine: &mut Engine, ev: &Event) -> bool {
    match ev {
        Event::Connected { .. } => engine.ovs_connected = true,
        Event::Disconnected { remote, reason } => {
            tracing::info!(target: "main", "{remote}: OVS database connection lost: {reason}");
            engine.ovs_connected = false;
        }
        _ => {}
    }
    match ev.apply(&mut engine.inputs.ovs) {
        Ok(true) => engine.ovs_changed(),
        Ok(false) => {}
        Err(e) => {
            crate::vlog_rl!(WARN, &crate::vlog::limits::BAD_UPDATE, target: "main", "OVS update not applied: {e}");
        }
    }
    true
}

/// `bindings_changed` is set when what pinctrl's snapshot holds (datapaths, ports, MAC
/// bindings) may have changed.
pub(super) fn on_sb_event(engine: &mut Engine, ev: &Event, bindings_changed: &mut bool) -> bool {
    match ev {
        Event::Connected {
            remote,
            missing_columns,
            resumed,
            ..
        } => {
            tracing::info!(target: "reconnect", "{remote}: connected");
            engine.sb_connected(Instant::now(), *resumed);
            schema_lacks(engine, missing_columns);
        }
        Event::Disconnected { remote, reason } => {
            tracing::info!(target: "main", "{remote}: southbound connection lost: {reason}");
            engine.sb_disconnected();
        }
        Event::ConditionsAcked(n) => engine.conditions_acked(*n),
        Event::ConditionsRefused { seqno, error } => {
            crate::vlog_rl!(WARN, &crate::vlog::limits::CONDITION, target: "main", "monitor condition {seqno} refused: {error}");
            engine.conditions_acked(*seqno);
        }
        _ => {}
    }
    match ev.apply(&mut engine.inputs.sb.replica) {
        Ok(true) => {
            tracing::debug!(target: "main", "southbound update of {:?}", engine.inputs.sb.replica.changed_tables());
            *bindings_changed |= engine.inputs.sb.replica.changed_tables().iter().any(|t| {
                matches!(
                    *t,
                    "MAC_Binding"
                        | "Port_Binding"
                        | "Datapath_Binding"
                        | "Service_Monitor"
                        | "BFD"
                        | "Chassis"
                        | "DNS"
                        | "IP_Multicast"
                        | "IGMP_Group"
                )
            });
            engine.sb_changed();
        }
        Ok(false) => {}
        Err(e) => {
            crate::vlog_rl!(WARN, &crate::vlog::limits::BAD_UPDATE, target: "main", "southbound update not applied: {e}");
        }
    }
    true
}

/// A Southbound server with an older schema: the columns it lacks are not monitored (rows
/// read them as their default) and not written. Logged (rate-limited) and counted; a column
/// the agent cannot do without is a warning.
fn schema_lacks(engine: &mut Engine, missing: &[(String, String)]) {
    let mut required = 0;
    for (table, column) in missing {
        if crate::southbound::required_columns(table).contains(&column.as_str()) {
            required += 1;
            crate::vlog_rl!(WARN, &crate::vlog::limits::MISSING_COLUMN, target: "main",
                "the southbound schema has no column {table}.{column}, which ovn-agent needs: its rows read it as empty");
        } else {
            crate::vlog_rl!(INFO, &crate::vlog::limits::MISSING_COLUMN, target: "main",
                "the southbound schema has no column {table}.{column} (an older schema): not monitored, read as its default");
        }
    }
    engine.stats.missing_columns = missing.len() as u64;
    engine.stats.missing_required_columns = required;
}

/// Applies every event already queued on `events` (without waiting); true if the channel
/// is closed.
///
/// A database client queues a transaction's updates before it hands out the transaction's
/// reply (the server sends them first, on the same connection, and the client keeps their
/// order), so draining the queue when a reply arrives brings the replica up to the
/// transaction's effect.
pub(super) fn drain_events(
    events: &mut mpsc::Receiver<Event>,
    mut apply: impl FnMut(&Event) -> bool,
) -> bool {
    loop {
        match events.try_recv() {
            Ok(ev) => {
                apply(&ev);
            }
            Err(mpsc::error::TryRecvError::Empty) => return false,
            Err(mpsc::error::TryRecvError::Disconnected) => return true,
        }
    }
}
