//! Bookkeeping of monitor conditions and of the resume point (sans-IO).
//!
//! Three sets of conditions per table:
//! - `acked`: what the replica content reflects (confirmed by the server);
//! - `in_flight`: sent in a `monitor_cond_change` (or the initial monitor
//!   request) whose reply has not arrived;
//! - `desired`: the latest conditions the consumer asked for.
//!
//! A table without an entry is monitored without condition (all rows).
//!
//! Resume rule: after a reconnect, `monitor_cond_since` with the last
//! transaction id is valid only for the conditions the replica reflects. If a
//! change was in flight when the connection dropped, the server may or may not
//! have applied it, so the next monitor is a full snapshot (as ovsdb-cs does).

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::condition::Condition;

type Conditions = BTreeMap<String, Condition>;

fn condition_of<'a>(map: &'a Conditions, table: &str, all: &'a Condition) -> &'a Condition {
    map.get(table).unwrap_or(all)
}

/// What the initial monitor request of a connection must carry.
#[derive(Debug, Clone, PartialEq)]
pub struct InitialMonitor {
    /// Conditions for the request.
    pub conditions: Conditions,
    /// The transaction id to resume from; `None` asks for a full snapshot.
    pub last_txn_id: Option<String>,
}

/// The zero transaction id, meaning "no resume".
pub const ZERO_TXN_ID: &str = "00000000-0000-0000-0000-000000000000";

/// Conditions and resume state of one monitored database.
#[derive(Debug, Clone, Default)]
pub struct MonitorState {
    acked: Conditions,
    in_flight: Option<(Conditions, u64)>,
    desired: Conditions,
    last_txn_id: Option<String>,
    /// Bumped by every call to `set_condition` that changes something.
    requested_seqno: u64,
    acked_seqno: u64,
}

impl MonitorState {
    /// No conditions, no resume point.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks for `condition` on `table`. Returns the sequence number that
    /// [`Self::acked_seqno`] will reach once the server has applied it.
    pub fn set_condition(&mut self, table: &str, condition: Condition) -> u64 {
        let condition = condition.normalized();
        if self.desired.get(table) != Some(&condition) {
            self.desired.insert(table.to_owned(), condition);
            self.requested_seqno += 1;
        }
        self.requested_seqno
    }

    /// The latest requested sequence number.
    pub fn requested_seqno(&self) -> u64 {
        self.requested_seqno
    }

    /// The sequence number of the last condition set the server confirmed.
    pub fn acked_seqno(&self) -> u64 {
        self.acked_seqno
    }

    /// True while a condition change is sent and not yet confirmed, or wanted.
    pub fn has_pending_changes(&self) -> bool {
        self.in_flight.is_some() || self.acked_seqno != self.requested_seqno
    }

    /// The last transaction id seen.
    pub fn last_txn_id(&self) -> Option<&str> {
        self.last_txn_id.as_deref()
    }

    /// The conditions the replica reflects.
    pub fn acked(&self) -> &Conditions {
        &self.acked
    }

    /// Called when a connection is established: the initial monitor request.
    /// The request counts as in flight until [`Self::on_monitor_reply`].
    pub fn start_monitor(&mut self) -> InitialMonitor {
        let resume = self.last_txn_id.is_some();
        let conditions = if resume {
            self.acked.clone()
        } else {
            self.desired.clone()
        };
        let seqno = if resume {
            self.acked_seqno
        } else {
            self.requested_seqno
        };
        self.in_flight = Some((conditions.clone(), seqno));
        InitialMonitor {
            conditions,
            last_txn_id: self.last_txn_id.clone(),
        }
    }

    /// The reply to the initial monitor request arrived. `last_txn_id` is the
    /// id the server reported (`None` for plain `monitor_cond`).
    pub fn on_monitor_reply(&mut self, last_txn_id: Option<String>) {
        if let Some((conditions, seqno)) = self.in_flight.take() {
            self.acked = conditions;
            self.acked_seqno = seqno;
        }
        self.last_txn_id = last_txn_id.filter(|id| id != ZERO_TXN_ID);
    }

    /// An `update3` carried a new transaction id.
    pub fn on_update3(&mut self, last_txn_id: &str) {
        if last_txn_id != ZERO_TXN_ID {
            self.last_txn_id = Some(last_txn_id.to_owned());
        }
    }

    /// The next `monitor_cond_change` to send, if nothing is in flight and the
    /// desired conditions differ from the acknowledged ones. Marks it in flight.
    pub fn next_change(&mut self) -> Option<Conditions> {
        if self.in_flight.is_some() {
            return None;
        }
        let all = Condition::all();
        let changes: Conditions = self
            .desired
            .iter()
            .filter(|(t, c)| condition_of(&self.acked, t, &all) != *c)
            .map(|(t, c)| (t.clone(), c.clone()))
            .collect();
        if changes.is_empty() {
            self.acked_seqno = self.requested_seqno;
            return None;
        }
        self.in_flight = Some((changes.clone(), self.requested_seqno));
        Some(changes)
    }

    /// The server confirmed the change in flight.
    pub fn on_change_acked(&mut self) {
        if let Some((changes, seqno)) = self.in_flight.take() {
            self.acked.extend(changes);
            self.acked_seqno = seqno;
        }
    }

    /// The server refused the change in flight: forget it (the replica still
    /// reflects `acked`) and stop asking for it, unless something newer was
    /// asked for since. Returns the sequence number of the refused change.
    pub fn on_change_failed(&mut self) -> Option<u64> {
        let (changes, seqno) = self.in_flight.take()?;
        for (table, refused) in changes {
            if self.desired.get(&table) == Some(&refused) {
                match self.acked.get(&table) {
                    Some(c) => self.desired.insert(table, c.clone()),
                    None => self.desired.remove(&table),
                };
            }
        }
        Some(seqno)
    }

    /// The connection dropped.
    pub fn on_disconnect(&mut self) {
        if self.in_flight.take().is_some() {
            // The server may have applied it: only a full snapshot is safe.
            self.last_txn_id = None;
        }
    }

    /// Forgets the resume point (for example after the server lost its history).
    pub fn reset_resume(&mut self) {
        self.last_txn_id = None;
    }

    /// The `monitor_cond_change` params for `changes`.
    pub fn change_params(monitor_id: &Value, changes: &Conditions) -> Value {
        Self::change_params_for(monitor_id, changes, |_, _| true)
    }

    /// [`MonitorState::change_params`] for a server whose schema has only the columns for
    /// which `has(table, column)` is true (see [`Condition::for_monitor_without`]).
    pub fn change_params_for(
        monitor_id: &Value,
        changes: &Conditions,
        has: impl Fn(&str, &str) -> bool,
    ) -> Value {
        let mut obj = serde_json::Map::new();
        for (table, cond) in changes {
            let cond = cond.for_monitor_without(|c| has(table, c));
            obj.insert(table.clone(), json!([{ "where": cond }]));
        }
        json!([monitor_id, monitor_id, obj])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::condition::Clause;

    fn cond(port: &str) -> Condition {
        Condition(vec![Clause::eq("logical_port", port)])
    }

    #[test]
    fn change_bookkeeping() {
        let mut m = MonitorState::new();
        let seq = m.set_condition("Port_Binding", cond("a"));
        let init = m.start_monitor();
        assert_eq!(init.last_txn_id, None);
        assert_eq!(init.conditions["Port_Binding"], cond("a"));
        m.on_monitor_reply(Some("11111111-0000-0000-0000-000000000000".into()));
        assert_eq!(m.acked_seqno(), seq);
        assert!(!m.has_pending_changes());
        assert_eq!(m.next_change(), None);

        let seq2 = m.set_condition("Port_Binding", cond("b"));
        assert!(m.has_pending_changes());
        let change = m.next_change().unwrap();
        assert_eq!(change["Port_Binding"], cond("b"));
        // Only one change in flight at a time.
        m.set_condition("Port_Binding", cond("c"));
        assert_eq!(m.next_change(), None);
        m.on_change_acked();
        assert_eq!(m.acked_seqno(), seq2);
        let change = m.next_change().unwrap();
        assert_eq!(change["Port_Binding"], cond("c"));
        m.on_change_acked();
        assert!(!m.has_pending_changes());
        // Setting the same condition again is not a change.
        let same = m.set_condition("Port_Binding", cond("c"));
        assert_eq!(same, m.acked_seqno());
    }

    #[test]
    fn resume_uses_acked_conditions() {
        let mut m = MonitorState::new();
        m.set_condition("Port_Binding", cond("a"));
        m.start_monitor();
        m.on_monitor_reply(Some("11111111-0000-0000-0000-000000000000".into()));
        m.on_update3("22222222-0000-0000-0000-000000000000");
        m.on_disconnect();
        // Changed while disconnected: resume with the old conditions, change after.
        m.set_condition("Port_Binding", cond("b"));
        let init = m.start_monitor();
        assert_eq!(
            init.last_txn_id.as_deref(),
            Some("22222222-0000-0000-0000-000000000000")
        );
        assert_eq!(init.conditions["Port_Binding"], cond("a"));
        m.on_monitor_reply(Some("22222222-0000-0000-0000-000000000000".into()));
        assert_eq!(m.next_change().unwrap()["Port_Binding"], cond("b"));
    }

    #[test]
    fn in_flight_change_at_disconnect_forces_snapshot() {
        let mut m = MonitorState::new();
        m.start_monitor();
        m.on_monitor_reply(Some("11111111-0000-0000-0000-000000000000".into()));
        m.set_condition("Port_Binding", cond("a"));
        assert!(m.next_change().is_some());
        m.on_disconnect();
        let init = m.start_monitor();
        assert_eq!(init.last_txn_id, None);
        assert_eq!(init.conditions["Port_Binding"], cond("a"));
        m.on_monitor_reply(Some(ZERO_TXN_ID.into()));
        assert_eq!(m.last_txn_id(), None);
        assert!(!m.has_pending_changes());
    }

    #[test]
    fn refused_change_is_dropped() {
        let mut m = MonitorState::new();
        m.start_monitor();
        m.on_monitor_reply(None);
        m.set_condition("Port_Binding", cond("a"));
        assert!(m.next_change().is_some());
        assert_eq!(m.on_change_failed(), Some(1));
        assert_eq!(m.next_change(), None);
        assert!(!m.has_pending_changes());
        // A newer request made while the refused one was in flight survives.
        m.set_condition("Port_Binding", cond("b"));
        assert!(m.next_change().is_some());
        m.set_condition("Port_Binding", cond("c"));
        m.on_change_failed();
        assert_eq!(m.next_change().unwrap()["Port_Binding"], cond("c"));
    }

    /// The request ovn-controller 23.03 sent for `ovn-monitor-all=true`
    /// (captured with jsonrpc debug logging; see physical-pipeline.md section 6).
    #[test]
    fn matches_ovn_controller_monitor_all_change() {
        const CAPTURED: &str = r#"[["monid","OVN_Southbound"],["monid","OVN_Southbound"],{"Chassis_Private":[{"where":[true]}],"Chassis_Template_Var":[{"where":[true]}],"IGMP_Group":[{"where":[true]}],"Port_Binding":[{"where":[true]}],"MAC_Binding":[{"where":[true]}],"Multicast_Group":[{"where":[true]}],"DNS":[{"where":[true]}],"Controller_Event":[{"where":[true]}],"IP_Multicast":[{"where":[true]}],"Logical_Flow":[{"where":[true]}]}]"#;
        let captured: Value = serde_json::from_str(CAPTURED).unwrap();
        let mut m = MonitorState::new();
        for table in captured[2].as_object().unwrap().keys() {
            m.set_condition(table, Condition::none());
        }
        m.start_monitor();
        m.on_monitor_reply(None);
        for table in captured[2].as_object().unwrap().keys() {
            m.set_condition(table, Condition::all());
        }
        let changes = m.next_change().unwrap();
        let id = json!(["monid", "OVN_Southbound"]);
        assert_eq!(MonitorState::change_params(&id, &changes), captured);
    }

    #[test]
    fn change_params_shape() {
        let id = json!(["monid", "OVN_Southbound"]);
        let mut changes = Conditions::new();
        changes.insert("Port_Binding".into(), Condition::all());
        assert_eq!(
            MonitorState::change_params(&id, &changes),
            json!([["monid", "OVN_Southbound"], ["monid", "OVN_Southbound"], {"Port_Binding": [{"where": [true]}]}])
        );
    }
}
