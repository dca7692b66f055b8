//! The tasks the main loop starts and what they report back: the Southbound client and its
//! connection, transactions, monitor condition changes, and the clean-up of `exit`.

use sbclient::{
    spawn as spawn_db, Client, ClientConfig, Condition, Event, Remote, Transaction, TxnError,
};
use tokio::sync::mpsc;

use crate::engine::core::Engine;
use crate::ofctrl::conn::OfControl;

/// Results of the work the loop started.
#[derive(Debug)]
pub(super) enum Done {
    /// The engine's Southbound transaction.
    SbTxn(Result<(), TxnError>),
    /// An `up` transaction sent behind the claims in flight ([`crate::engine::Actions::sb_up_txn`]).
    SbUpTxn(Result<(), TxnError>),
    /// pinctrl's Southbound writes (MAC bindings, IGMP groups, ...).
    PinTxn(Result<(), TxnError>),
    OvsTxn(Result<(), TxnError>),
    ConditionSeq(u64),
    /// The condition change for this table was never handed to the client (its task is
    /// gone): the engine no longer waits for it and asks again.
    ConditionFailed(&'static str),
    Cleanup,
}

pub(super) struct Sb {
    pub(super) client: Client,
    pub(super) events: mpsc::Receiver<Event>,
    pub(super) remote: String,
    /// The SSL settings the client was last given.
    pub(super) tls: Option<sbclient::client::TlsSettings>,
    /// The client's SSL failures already counted in `sb_ssl_failures`.
    ssl_failures_counted: u64,
}

impl Sb {
    /// Adds the client's new SSL failures to the `sb_ssl_failures` counter.
    pub(super) fn count_ssl_failures(&mut self) {
        let total = self.client.stats().tls_failures;
        crate::coverage::SB_SSL_FAILURES.add(total.saturating_sub(self.ssl_failures_counted));
        self.ssl_failures_counted = total;
    }
}

pub(super) fn start_sb(
    engine: &Engine,
    remote: &str,
    probe_ms: u64,
    tls: Option<sbclient::client::TlsSettings>,
) -> Option<Sb> {
    let remotes = match Remote::parse_list(remote) {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(target: "main", "ovn-remote {remote:?}: {e}");
            return None;
        }
    };
    let mut c = ClientConfig::new(remotes, sbclient::ovn_sb::DATABASE)
        .monitor_replica(&engine.inputs.sb.replica);
    c.set_probe_interval_ms(probe_ms);
    c.tls.clone_from(&tls);
    // The first conditions go with the monitor request (before our chassis exists:
    // gateway ports and every Chassis_Private, so we never create a duplicate).
    let initial = crate::engine::conditions::conditions(&crate::engine::conditions::Interest {
        chassis_name: engine.cfg.as_ref().map_or("", |c| c.system_id.as_str()),
        chassis: None,
        local_datapaths: &[],
        local_iface_ids: &[],
        monitor_all: engine.cfg.as_ref().is_some_and(|c| c.monitor_all),
    });
    for (t, cond) in initial {
        c.conditions.insert(t.to_owned(), cond);
    }
    let (client, events) = spawn_db(c);
    tracing::info!(target: "reconnect", "{remote}: connecting...");
    Some(Sb {
        client,
        events,
        remote: remote.to_owned(),
        tls,
        ssl_failures_counted: 0,
    })
}

pub(super) fn spawn_txn(
    client: Client,
    txn: Transaction,
    done: mpsc::UnboundedSender<Done>,
    wrap: fn(Result<(), TxnError>) -> Done,
) {
    tokio::spawn(async move {
        let r = client.transact(txn).await.map(|_| ());
        let _ = done.send(wrap(r));
    });
}

pub(super) fn spawn_condition(
    client: Client,
    table: &'static str,
    cond: Condition,
    done: mpsc::UnboundedSender<Done>,
) {
    tokio::spawn(async move {
        match client.set_condition(table, cond).await {
            Ok(seq) => {
                let _ = done.send(Done::ConditionSeq(seq));
            }
            Err(e) => {
                crate::vlog_rl!(WARN, &crate::vlog::limits::CONDITION, target: "main", "condition for {table} not sent: {e}");
                let _ = done.send(Done::ConditionFailed(table));
            }
        }
    });
}

/// Whether an event waits on any of the loop's inputs that feed the engine.
pub(super) fn input_queued(
    ovs: &mpsc::Receiver<Event>,
    done: &mpsc::UnboundedReceiver<Done>,
    sb: Option<&Sb>,
    of: Option<&(String, OfControl)>,
) -> bool {
    !ovs.is_empty()
        || !done.is_empty()
        || sb.is_some_and(|s| !s.events.is_empty())
        || of.is_some_and(|(_, c)| !c.events.is_empty())
}

/// `exit` without `--restart`: the chassis goes from the Southbound database, tunnels from
/// the bridge; then the loop ends.
pub(super) fn start_cleanup(
    engine: &Engine,
    sb: Option<Client>,
    ovs: Client,
    done: mpsc::UnboundedSender<Done>,
) {
    let name = engine
        .cfg
        .as_ref()
        .map(|c| c.system_id.clone())
        .unwrap_or_default();
    let mut sb_txn = Transaction::new(sbclient::ovn_sb::DATABASE);
    crate::engine::chassis::cleanup(&engine.inputs.sb.replica, &name, &mut sb_txn);
    let mut ovs_txn = Transaction::new(sbclient::vswitch::DATABASE);
    if let Some(c) = &engine.cfg {
        crate::engine::tunnels::remove_tunnels(&engine.inputs.ovs, c, &mut ovs_txn);
        crate::engine::ovs_config::remove_chassis_index(&engine.inputs.ovs, c, &mut ovs_txn);
    }
    tokio::spawn(async move {
        if let Some(sb) = sb {
            if !sb_txn.is_empty() {
                if let Err(e) = sb.transact(sb_txn).await {
                    tracing::warn!(target: "main", "cleanup of the southbound database: {e}");
                }
            }
        }
        if !ovs_txn.is_empty() {
            if let Err(e) = ovs.transact(ovs_txn).await {
                tracing::warn!(target: "main", "cleanup of the OVS database: {e}");
            }
        }
        let _ = done.send(Done::Cleanup);
    });
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::daemon::db_events::drain_events;

    /// A client whose task has ended (no remotes to connect to).
    async fn stopped_client() -> Client {
        let (client, _events) = spawn_db(ClientConfig::new(Vec::new(), "OVN_Southbound"));
        for _ in 0..100 {
            if client.request("echo", serde_json::json!([])).await
                == Err(sbclient::ClientError::Stopped)
            {
                return client;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the client task did not stop");
    }

    #[tokio::test]
    async fn a_condition_change_that_cannot_be_sent_is_reported() {
        let client = stopped_client().await;
        let (tx, mut rx) = mpsc::unbounded_channel();
        spawn_condition(client, "Port_Binding", Condition::all(), tx);
        let done = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await;
        match done {
            Ok(Some(Done::ConditionFailed("Port_Binding"))) => {}
            other => panic!("expected ConditionFailed(Port_Binding), got {other:?}"),
        }
    }

    #[tokio::test]
    async fn draining_applies_what_is_queued_and_sees_a_closed_channel() {
        let (tx, mut rx) = mpsc::channel(4);
        for n in 1..=3 {
            tx.send(Event::ConditionsAcked(n)).await.unwrap();
        }
        let mut seen = Vec::new();
        let apply = |ev: &Event| {
            if let Event::ConditionsAcked(n) = ev {
                seen.push(*n);
            }
            true
        };
        assert!(!drain_events(&mut rx, apply));
        assert_eq!(seen, [1, 2, 3]);
        drop(tx);
        assert!(drain_events(&mut rx, |_| true));
    }
}
