//! sbclient against a real standalone Southbound `ovsdb-server`: monitor with
//! conditions, change conditions at run time, transact (including a conflict),
//! writes by another client, and the replica equals `ovsdb-client dump`.

use std::collections::BTreeMap;
use std::time::Duration;

use integration::ovsdb_cluster::{differences, dump, replica_dump, Standalone};
use sbclient::ovn_sb::{self, DatapathBinding, PortBinding};
use sbclient::transaction::by_uuid;
use sbclient::{
    spawn, Atom, Clause, ClientConfig, Columns, Condition, Datum, Event, Remote, Replica,
    Transaction, TxnError,
};
use tokio::sync::mpsc::Receiver;

const DB: &str = "OVN_Southbound";

/// Applies events to the replica until `done` holds (checked after each event).
async fn pump(
    events: &mut Receiver<Event>,
    replica: &mut Replica,
    what: &str,
    mut done: impl FnMut(&Replica, &Event) -> bool,
) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let event = tokio::time::timeout_at(deadline, events.recv())
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
            .expect("client task ended");
        event.apply(replica).expect("apply event");
        if done(replica, &event) {
            return;
        }
    }
}

fn pb_names(replica: &Replica) -> Vec<String> {
    let mut names: Vec<String> = replica
        .table::<PortBinding>()
        .unwrap()
        .iter()
        .map(|(_, r)| r.logical_port.clone())
        .collect();
    names.sort();
    names
}

fn port_condition(ports: &[&str]) -> Condition {
    Condition(
        ports
            .iter()
            .map(|p| Clause::eq("logical_port", *p))
            .collect(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitor_conditions_transactions_and_dump() {
    let dir = tempfile::tempdir().unwrap();
    let sb = Standalone::start(dir.path()).unwrap();

    let mut replica = Replica::new(DB);
    ovn_sb::register_all(&mut replica);
    replica
        .table_mut::<PortBinding>()
        .unwrap()
        .add_index("logical_port");
    let mut config =
        ClientConfig::new(Remote::parse_list(&sb.remote()).unwrap(), DB).monitor_replica(&replica);
    config
        .conditions
        .insert("Port_Binding".into(), port_condition(&["lp1"]));
    config.backoff_min = Duration::from_millis(100);
    let (client, mut events) = spawn(config);
    pump(&mut events, &mut replica, "connection", |_, e| {
        matches!(e, Event::Connected { .. })
    })
    .await;

    // Insert a datapath and three ports in one transaction, with a named uuid.
    let mut txn = Transaction::new(DB);
    let dp = DatapathBinding {
        tunnel_key: 1,
        external_ids: [("name".to_owned(), "ls1".to_owned())].into(),
        ..DatapathBinding::default()
    };
    txn.insert_row(&dp, Some("dp"));
    for (key, port) in [(1, "lp1"), (2, "lp2"), (3, "lp3")] {
        txn.insert(
            "Port_Binding",
            Columns::new()
                .set("logical_port", port)
                .set("tunnel_key", key)
                .set("datapath", Atom::NamedUuid("dp".into())),
            None,
        );
    }
    let outcome = client.transact(txn).await.unwrap();
    let dp_uuid = outcome.inserted["dp"];

    pump(&mut events, &mut replica, "lp1 and the datapath", |r, _| {
        r.table::<DatapathBinding>().unwrap().len() == 1 && pb_names(r) == ["lp1"]
    })
    .await;
    assert_eq!(
        replica
            .table::<DatapathBinding>()
            .unwrap()
            .get(&dp_uuid)
            .unwrap()
            .external_ids["name"],
        "ls1"
    );

    // Widen the condition at run time.
    let seq = client
        .set_condition("Port_Binding", port_condition(&["lp1", "lp2"]))
        .await
        .unwrap();
    pump(&mut events, &mut replica, "condition ack", |r, e| {
        matches!(e, Event::ConditionsAcked(s) if *s >= seq) && pb_names(r) == ["lp1", "lp2"]
    })
    .await;
    assert_eq!(client.stats().condition_changes_acked, 1);

    // Another client writes: a map change on lp2, a delete of lp1, a new lp4.
    let (lp2_uuid, _) = replica
        .table::<PortBinding>()
        .unwrap()
        .find_one("logical_port", &Atom::from("lp2"))
        .unwrap();
    let lp2_uuid = *lp2_uuid;
    replica.clear_changes();
    let ops = serde_json::json!([DB,
        {"op": "mutate", "table": "Port_Binding", "where": [["logical_port", "==", "lp2"]],
         "mutations": [["options", "insert", ["map", [["requested-chassis", "hv1"]]]]]},
        {"op": "delete", "table": "Port_Binding", "where": [["logical_port", "==", "lp1"]]},
        {"op": "insert", "table": "Port_Binding",
         "row": {"logical_port": "lp4", "tunnel_key": 4, "datapath": ["uuid", dp_uuid.to_string()]}}]);
    sb.host
        .run(
            "ovsdb-client",
            &["transact", &sb.remote(), &ops.to_string()],
        )
        .unwrap();
    pump(
        &mut events,
        &mut replica,
        "the other client's writes",
        |r, _| {
            pb_names(r) == ["lp2"]
                && r.table::<PortBinding>()
                    .unwrap()
                    .get(&lp2_uuid)
                    .unwrap()
                    .options
                    .get("requested-chassis")
                    == Some(&"hv1".to_owned())
        },
    )
    .await;
    let changes = replica.table::<PortBinding>().unwrap().changes();
    assert!(
        changes.modified.contains_key(&lp2_uuid),
        "lp2 reported as modified"
    );
    assert!(
        changes.modified[&lp2_uuid].options.is_empty(),
        "old value kept"
    );

    // Optimistic concurrency: a wait on a stale value is a conflict.
    let stale = PortBinding {
        logical_port: "lp2-old-name".into(),
        ..PortBinding::default()
    };
    let mut txn = Transaction::new(DB);
    txn.wait_unchanged(lp2_uuid, &stale, &["logical_port"]);
    txn.update(
        "Port_Binding",
        &by_uuid(lp2_uuid),
        Columns::new().set("tag", 7),
    );
    assert_eq!(
        client.transact(txn).await,
        Err(TxnError::Conflict { op_index: 0 })
    );
    // ... and with the current value it commits.
    let current = replica
        .table::<PortBinding>()
        .unwrap()
        .get(&lp2_uuid)
        .unwrap()
        .clone();
    let mut txn = Transaction::new(DB);
    txn.wait_unchanged(lp2_uuid, &current, &["logical_port", "options"]);
    let mut tagged = current.clone();
    tagged.tag = Some(7);
    txn.update_row(lp2_uuid, &current, &tagged);
    client.transact(txn).await.unwrap();
    pump(&mut events, &mut replica, "the tag", |r, _| {
        r.table::<PortBinding>()
            .unwrap()
            .get(&lp2_uuid)
            .unwrap()
            .tag
            == Some(7)
    })
    .await;

    // The replica equals the server's dump (Port_Binding filtered by our condition).
    let mut server = dump(&sb.host, &sb.remote(), DB).unwrap();
    let condition = port_condition(&["lp1", "lp2"]);
    if let Some(rows) = server.get_mut("Port_Binding") {
        rows.retain(|_, cols: &mut BTreeMap<String, Datum>| {
            condition.matches_any(&|c| cols.get(c).cloned())
        });
    }
    let ours = replica_dump(&replica);
    assert_eq!(differences(&ours, &server), Vec::<String>::new());
    assert_eq!(
        ours,
        server
            .into_iter()
            .filter(|(t, _)| ours.contains_key(t))
            .collect()
    );
    assert_eq!(replica.stats().rows_skipped, 0);

    // A condition the server refuses (two values for a scalar column) is reported
    // and the previous condition stays in effect.
    let seq = client
        .set_condition(
            "Port_Binding",
            Condition(vec![Clause::new(
                "logical_port",
                sbclient::Function::Excludes,
                Datum::set(["lp1", "lp2"]),
            )]),
        )
        .await
        .unwrap();
    let mut refused = None;
    pump(&mut events, &mut replica, "the refusal", |_, e| {
        if let Event::ConditionsRefused { seqno, error } = e {
            refused = Some((*seqno, error.clone()));
            true
        } else {
            false
        }
    })
    .await;
    let (seqno, error) = refused.unwrap();
    assert_eq!(seqno, seq);
    eprintln!("refused: {error}");
    assert_eq!(pb_names(&replica), ["lp2"]);

    // A standalone server keeps no history: the client never resumed.
    let stats = client.stats();
    assert_eq!(stats.connections, 1);
    assert_eq!(stats.resumed, 0);
    client.shutdown().await;
}
