//! sbclient against a real 3-server clustered Southbound database: while
//! another client keeps writing, the leader and then the server our client is
//! connected to are stopped. After reconnecting, the replica equals
//! `ovsdb-client dump`, no row update was rejected (an update applied twice
//! would be: a second insert of a row is refused and counted), and the client
//! resumed with `monitor_cond_since` (`ClientStats::resumed`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use integration::host::Host;
use integration::ovsdb_cluster::{differences, dump, replica_dump, Cluster, DbDump};
use sbclient::ovn_sb::{self, AddressSet};
use sbclient::{spawn, Clause, ClientConfig, Condition, Event, Function, Remote, Replica};
use tokio::sync::mpsc::Receiver;

const DB: &str = "OVN_Southbound";

struct Writer {
    stop: Arc<AtomicBool>,
    written: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Writer {
    /// Keeps committing transactions (insert, mutate, delete of Address_Set
    /// rows) through `ovsdb-client`, on whichever server answers.
    fn start(host: Host, remotes: Vec<String>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let written = Arc::new(AtomicU64::new(0));
        let (stop2, written2) = (Arc::clone(&stop), Arc::clone(&written));
        let thread = std::thread::spawn(move || {
            let mut i: u64 = 0;
            let mut next = 0usize;
            while !stop2.load(Ordering::SeqCst) {
                let mut ops = vec![
                    serde_json::json!(DB),
                    serde_json::json!({"op": "insert", "table": "Address_Set",
                        "row": {"name": format!("as{i}"), "addresses": format!("10.0.{}.{}", i / 256, i % 256)}}),
                ];
                if i >= 1 {
                    ops.push(serde_json::json!({"op": "mutate", "table": "Address_Set",
                        "where": [["name", "==", format!("as{}", i - 1)]],
                        "mutations": [["addresses", "insert", format!("x{i}")]]}));
                }
                if i >= 5 && i.is_multiple_of(5) {
                    ops.push(serde_json::json!({"op": "delete", "table": "Address_Set",
                        "where": [["name", "==", format!("as{}", i - 5)]]}));
                }
                let remote = &remotes[next % remotes.len()];
                let result = host.run(
                    "ovsdb-client",
                    &[
                        "--timeout=5",
                        "transact",
                        remote,
                        &serde_json::Value::Array(ops).to_string(),
                    ],
                );
                let text = match result {
                    Ok(out) => out,
                    Err(e) => format!("\"error\" {e}"),
                };
                // A constraint violation on the insert means an earlier try
                // committed but its reply was lost.
                if !text.contains("\"error\"") || text.contains("constraint violation") {
                    i += 1;
                    written2.store(i, Ordering::SeqCst);
                } else {
                    next += 1;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Self {
            stop,
            written,
            thread: Some(thread),
        }
    }

    fn written(&self) -> u64 {
        self.written.load(Ordering::SeqCst)
    }

    fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Applies events for up to `window`; returns the remote of the last connection seen.
async fn pump_for(
    events: &mut Receiver<Event>,
    replica: &mut Replica,
    window: Duration,
    connected: &mut Option<String>,
) {
    let deadline = tokio::time::Instant::now() + window;
    while let Ok(Some(event)) = tokio::time::timeout_at(deadline, events.recv()).await {
        event.apply(replica).expect("apply event");
        if let Event::Connected { remote, .. } = &event {
            *connected = Some(remote.clone());
        }
    }
}

async fn wait_rows(
    events: &mut Receiver<Event>,
    replica: &mut Replica,
    connected: &mut Option<String>,
    at_least: u64,
    writer: &Writer,
) {
    for _ in 0..300 {
        pump_for(events, replica, Duration::from_millis(100), connected).await;
        if writer.written() >= at_least && connected.is_some() {
            return;
        }
    }
    panic!("writer stalled at {} (wanted {at_least})", writer.written());
}

fn server_index(cluster: &Cluster, remote: &str) -> usize {
    (0..cluster.len())
        .find(|i| cluster.remote(*i) == remote)
        .expect("connected to a cluster member")
}

fn live_dump(cluster: &Cluster) -> DbDump {
    for i in 0..cluster.len() {
        if cluster.is_running(i) {
            if let Ok(d) = dump(&cluster.host, &cluster.remote(i), DB) {
                return d;
            }
        }
    }
    panic!("no server could be dumped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn survives_leader_and_server_loss_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = Cluster::start(dir.path(), 3).unwrap();

    let mut replica = Replica::new(DB);
    ovn_sb::register_all(&mut replica);
    let mut config = ClientConfig::new(Remote::parse_list(&cluster.remotes()).unwrap(), DB)
        .monitor_replica(&replica);
    config.backoff_min = Duration::from_millis(100);
    config.backoff_max = Duration::from_millis(800);
    config.probe_interval = Some(Duration::from_secs(2));
    // A condition, so that resuming must keep it: every row but as7.
    let condition = Condition(vec![Clause::new("name", Function::Ne, "as7")]);
    config
        .conditions
        .insert("Address_Set".into(), condition.clone());
    let (client, mut events) = spawn(config);
    let mut connected = None;

    let mut writer = Writer::start(
        cluster.host.clone(),
        (0..cluster.len()).map(|i| cluster.remote(i)).collect(),
    );
    wait_rows(&mut events, &mut replica, &mut connected, 20, &writer).await;

    // Narrow the condition at run time (as7 and as8 excluded, by address) and
    // wait for the server to confirm; the resumes below must keep it.
    let condition = Condition(vec![Clause::new(
        "addresses",
        Function::Excludes,
        sbclient::Datum::set(["10.0.0.7", "10.0.0.8"]),
    )]);
    let seq = client
        .set_condition("Address_Set", condition.clone())
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let event = tokio::time::timeout_at(deadline, events.recv())
            .await
            .expect("condition change acknowledged")
            .unwrap();
        event.apply(&mut replica).unwrap();
        match event {
            Event::ConditionsAcked(s) if s >= seq => break,
            Event::ConditionsRefused { error, .. } => panic!("refused: {error}"),
            _ => {}
        }
    }

    // Stop the leader while the writer goes on.
    let leader = cluster.leader(Duration::from_secs(30)).unwrap();
    cluster.stop_server(leader);
    let target = writer.written() + 20;
    wait_rows(&mut events, &mut replica, &mut connected, target, &writer).await;
    cluster.start_server(leader).unwrap();
    cluster.wait_connected(leader).unwrap();

    // Crash (SIGKILL) the server we are connected to (it may be the restarted leader).
    let ours = server_index(&cluster, connected.as_deref().unwrap());
    let connections_before = client.stats().connections;
    cluster.kill_server(ours);
    let target = writer.written() + 20;
    wait_rows(&mut events, &mut replica, &mut connected, target, &writer).await;
    for _ in 0..300 {
        if client.stats().connections > connections_before {
            break;
        }
        pump_for(
            &mut events,
            &mut replica,
            Duration::from_millis(100),
            &mut connected,
        )
        .await;
    }
    assert!(
        client.stats().connections > connections_before,
        "reconnected"
    );
    cluster.start_server(ours).unwrap();
    cluster.wait_connected(ours).unwrap();

    // Crash two of the three at once: no quorum for a while, then both come back.
    let ours = server_index(&cluster, connected.as_deref().unwrap());
    let leader = cluster.leader(Duration::from_secs(30)).unwrap();
    let other = (0..cluster.len()).find(|i| *i != ours).unwrap();
    let second = if leader == ours { other } else { leader };
    cluster.kill_server(ours);
    cluster.kill_server(second);
    pump_for(
        &mut events,
        &mut replica,
        Duration::from_millis(1500),
        &mut connected,
    )
    .await;
    cluster.start_server(ours).unwrap();
    cluster.start_server(second).unwrap();
    let target = writer.written() + 20;
    wait_rows(&mut events, &mut replica, &mut connected, target, &writer).await;
    writer.stop();

    // Converge: the replica equals a dump of the database.
    let mut diff = Vec::new();
    for _ in 0..100 {
        pump_for(
            &mut events,
            &mut replica,
            Duration::from_millis(200),
            &mut connected,
        )
        .await;
        let mut server = live_dump(&cluster);
        if let Some(rows) = server.get_mut("Address_Set") {
            rows.retain(|_, cols| condition.matches_any(&|c| cols.get(c).cloned()));
        }
        let mine = replica_dump(&replica);
        diff = differences(&mine, &server);
        if diff.is_empty() {
            let server: DbDump = server
                .into_iter()
                .filter(|(t, _)| mine.contains_key(t))
                .collect();
            assert_eq!(mine, server);
            break;
        }
    }
    assert_eq!(diff, Vec::<String>::new(), "replica differs from the dump");

    let stats = client.stats();
    let rstats = replica.stats();
    eprintln!(
        "client stats: {stats:?}\nreplica stats: {rstats:?}\nrows written: {}",
        writer.written()
    );
    let sets = replica.table::<AddressSet>().unwrap();
    assert!(sets.len() > 40);
    assert!(
        sets.iter().all(|(_, s)| s.name != "as7"),
        "the condition held"
    );
    assert_eq!(
        rstats.rows_skipped, 0,
        "no update was refused (none applied twice)"
    );
    assert_eq!(rstats.bad_messages, 0);
    assert!(stats.resume_attempts >= 1, "reconnects asked to resume");
    assert!(
        stats.resumed >= 1,
        "monitor_cond_since resumed from the last txn id"
    );
    assert!(stats.snapshots <= 1 + (stats.resume_attempts - stats.resumed));
    client.shutdown().await;
}

/// Waits for the next `Connected` event and returns its remote.
async fn next_connection(events: &mut Receiver<Event>, replica: &mut Replica) -> String {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(45);
    loop {
        let event = tokio::time::timeout_at(deadline, events.recv())
            .await
            .expect("a connection in time")
            .expect("client alive");
        event.apply(replica).expect("apply event");
        if let Event::Connected { remote, .. } = event {
            return remote;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_only_follows_the_leader() {
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = Cluster::start(dir.path(), 3).unwrap();
    let mut replica = Replica::new(DB);
    replica.add_table::<AddressSet>();
    let mut config = ClientConfig::new(Remote::parse_list(&cluster.remotes()).unwrap(), DB)
        .monitor_replica(&replica);
    config.leader_only = true;
    config.backoff_min = Duration::from_millis(100);
    config.backoff_max = Duration::from_millis(400);
    let (client, mut events) = spawn(config);

    let remote = next_connection(&mut events, &mut replica).await;
    let leader = cluster.leader(Duration::from_secs(30)).unwrap();
    assert_eq!(remote, cluster.remote(leader), "connected to the leader");

    cluster.stop_server(leader);
    let remote = next_connection(&mut events, &mut replica).await;
    let new_leader = cluster.leader(Duration::from_secs(30)).unwrap();
    assert_ne!(new_leader, leader);
    assert_eq!(
        remote,
        cluster.remote(new_leader),
        "followed the new leader"
    );
    eprintln!("client stats: {:?}", client.stats());
    client.shutdown().await;
}
