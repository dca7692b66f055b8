//! The client against a scripted fake OVSDB server on a unix socket: bad
//! updates are skipped without dropping the connection, unsuitable cluster
//! members are skipped, `monitor_cond_since` resumes and falls back, and the
//! inactivity probe works. (Real daemons are tested in `integration`.)

use std::time::Duration;

use sbclient::jsonrpc::Framer;
use sbclient::ovn_sb::PortBinding;
use sbclient::{spawn, Client, ClientConfig, Event, Remote, Replica};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc::Receiver;

const DB: &str = "OVN_Southbound";
const PB1: &str = "00000000-0000-0000-0000-0000000000b1";
const PB2: &str = "00000000-0000-0000-0000-0000000000b2";
const TXN1: &str = "11111111-1111-1111-1111-111111111111";
const TXN2: &str = "22222222-2222-2222-2222-222222222222";

/// One accepted connection of the fake server.
struct Conn {
    stream: UnixStream,
    framer: Framer,
}

impl Conn {
    /// The next request or notification: (id, method, params).
    async fn recv(&mut self) -> Option<(Value, String, Value)> {
        let mut buf = [0u8; 4096];
        loop {
            if let Some(frame) = self.framer.next_frame().unwrap() {
                let v: Value = serde_json::from_slice(&frame).unwrap();
                if let Some(method) = v["method"].as_str() {
                    return Some((v["id"].clone(), method.to_owned(), v["params"].clone()));
                }
                continue; // replies to our own requests
            }
            let n = self.stream.read(&mut buf).await.ok()?;
            if n == 0 {
                return None;
            }
            self.framer.push(&buf[..n]);
        }
    }

    /// Receives until a request with `method` arrives, answering echo and
    /// set_db_change_aware on the way.
    async fn expect(&mut self, method: &str) -> (Value, Value) {
        loop {
            let (id, m, params) = self.recv().await.expect("client closed");
            if m == method {
                return (id, params);
            }
            match m.as_str() {
                "echo" => self.reply(id, params).await,
                "set_db_change_aware" => self.reply(id, json!({})).await,
                other => panic!("unexpected {other} while waiting for {method}"),
            }
        }
    }

    async fn send(&mut self, v: &Value) {
        let _ = self.stream.write_all(v.to_string().as_bytes()).await;
    }

    async fn reply(&mut self, id: Value, result: Value) {
        self.send(&json!({"id": id, "result": result, "error": null}))
            .await;
    }

    async fn error(&mut self, id: Value, error: &str) {
        self.send(&json!({"id": id, "result": null, "error": {"error": error}}))
            .await;
    }

    async fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"id": null, "method": method, "params": params}))
            .await;
    }

    /// Answers the `_Server` monitor with one Database row.
    async fn server_db(&mut self, model: &str, connected: bool, leader: bool, index: Option<i64>) {
        self.server_db_with_schema(model, connected, leader, index, None)
            .await;
    }

    async fn server_db_with_schema(
        &mut self,
        model: &str,
        connected: bool,
        leader: bool,
        index: Option<i64>,
        schema: Option<&str>,
    ) {
        let (id, params) = self.expect("monitor_cond").await;
        assert_eq!(params[0], "_Server");
        let index = index.map_or(json!(["set", []]), |i| json!(i));
        let schema = schema.map_or(json!(["set", []]), |s| json!(s));
        self.reply(
            id,
            json!({"Database": {"00000000-0000-0000-0000-00000000000d": {"initial": {
                "name": DB, "model": model, "connected": connected, "leader": leader,
                "cid": ["set", []], "index": index, "schema": schema}}}}),
        )
        .await;
    }
}

fn pb(port: &str, key: i64) -> Value {
    json!({"logical_port": port, "tunnel_key": key, "datapath": ["uuid", "00000000-0000-0000-0000-0000000000d1"]})
}

fn listener() -> (tempfile::TempDir, UnixListener, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fake.sock");
    let listener = UnixListener::bind(&path).unwrap();
    (dir, listener, format!("unix:{}", path.display()))
}

async fn accept(listener: &UnixListener) -> Conn {
    let (stream, _) = tokio::time::timeout(Duration::from_secs(10), listener.accept())
        .await
        .expect("client connects")
        .unwrap();
    Conn {
        stream,
        framer: Framer::new(),
    }
}

fn client(remote: &str, probe: Option<Duration>) -> (Client, Receiver<Event>, Replica) {
    let mut replica = Replica::new(DB);
    replica.add_table::<PortBinding>();
    let mut config =
        ClientConfig::new(Remote::parse_list(remote).unwrap(), DB).monitor_replica(&replica);
    config.backoff_min = Duration::from_millis(20);
    config.backoff_max = Duration::from_millis(50);
    config.probe_interval = probe;
    config.probe_unix = true;
    let (client, events) = spawn(config);
    (client, events, replica)
}

/// Applies events until `done` holds.
async fn pump(
    events: &mut Receiver<Event>,
    replica: &mut Replica,
    mut done: impl FnMut(&Replica, &Event) -> bool,
) {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .expect("event in time")
            .expect("client alive");
        let _ = event.apply(replica);
        if done(replica, &event) {
            return;
        }
    }
}

fn ports(replica: &Replica) -> Vec<String> {
    let mut v: Vec<String> = replica
        .table::<PortBinding>()
        .unwrap()
        .iter()
        .map(|(_, r)| r.logical_port.clone())
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn bad_updates_are_skipped_and_the_connection_stays_up() {
    let (_dir, listener, remote) = listener();
    let (client, mut events, mut replica) = client(&remote, None);
    let mut conn = accept(&listener).await;
    conn.server_db("standalone", true, true, None).await;
    let (id, params) = conn.expect("monitor_cond_since").await;
    assert_eq!(params[3], "00000000-0000-0000-0000-000000000000");
    conn.reply(
        id,
        json!([false, TXN1, {"Port_Binding": {PB1: {"initial": pb("lp1", 1)}}}]),
    )
    .await;
    // One message with a bad row (unknown column), a row of the wrong type and a good row.
    conn.notify(
        "update3",
        json!([["monid", DB], TXN2, {"Port_Binding": {
            PB1: {"modify": {"no_such_column": 1}},
            "00000000-0000-0000-0000-0000000000b3": {"insert": {"tunnel_key": "three"}},
            PB2: {"insert": pb("lp2", 2)}}}]),
    )
    .await;
    // A message that is not even JSON-RPC shaped for update3.
    conn.notify("update3", json!([["monid", DB], TXN2, [1, 2, 3]]))
        .await;
    conn.notify(
        "update3",
        json!([["monid", DB], TXN2, {"Port_Binding": {PB1: {"modify": {"tunnel_key": 10}}}}]),
    )
    .await;
    let mut bad = 0;
    pump(&mut events, &mut replica, |r, e| {
        if let Event::Update(_) = e {
            bad = r.stats().bad_messages;
        }
        r.table::<PortBinding>()
            .unwrap()
            .iter()
            .any(|(_, p)| p.tunnel_key == 10)
    })
    .await;
    assert_eq!(ports(&replica), ["lp1", "lp2"]);
    let stats = replica.stats();
    assert_eq!(stats.rows_skipped, 2);
    assert_eq!(bad, 1);
    assert_eq!(client.stats().connections, 1, "never reconnected");
    assert!(client.stats().connected);
    client.shutdown().await;
}

#[tokio::test]
async fn unsuitable_cluster_members_are_skipped() {
    let (_dir, listener, remote) = listener();
    let (client, mut events, mut replica) = client(&remote, None);
    // 1: healthy, index 10.
    let mut conn = accept(&listener).await;
    conn.server_db("clustered", true, false, Some(10)).await;
    let (id, _) = conn.expect("monitor_cond_since").await;
    conn.reply(id, json!([false, TXN1, {}])).await;
    pump(&mut events, &mut replica, |_, e| {
        matches!(e, Event::Connected { .. })
    })
    .await;
    drop(conn);
    // 2: not connected to the cluster. 3: stale (index 4 < 10). 4: healthy.
    let mut conn = accept(&listener).await;
    conn.server_db("clustered", false, false, Some(11)).await;
    let mut conn2 = accept(&listener).await;
    drop(conn);
    conn2.server_db("clustered", true, false, Some(4)).await;
    let mut conn3 = accept(&listener).await;
    drop(conn2);
    conn3.server_db("clustered", true, true, Some(12)).await;
    let (id, params) = conn3.expect("monitor_cond_since").await;
    assert_eq!(params[3], TXN1, "resumes from the last txn id");
    conn3
        .reply(
            id,
            json!([true, TXN2, {"Port_Binding": {PB1: {"insert": pb("lp1", 1)}}}]),
        )
        .await;
    pump(&mut events, &mut replica, |_, e| {
        matches!(e, Event::Connected { resumed: true, .. })
    })
    .await;
    assert_eq!(ports(&replica), ["lp1"]);
    let stats = client.stats();
    assert_eq!(stats.unsuitable_servers, 2);
    assert_eq!(stats.connections, 2);
    assert_eq!(stats.resumed, 1);
    assert_eq!(stats.snapshots, 1);
    // A later _Server update saying the member left the cluster moves the client away.
    conn3
        .notify(
            "update2",
            json!([["monid", "_Server"], {"Database": {"00000000-0000-0000-0000-00000000000d": {"modify": {"connected": false}}}}]),
        )
        .await;
    pump(&mut events, &mut replica, |_, e| {
        matches!(e, Event::Disconnected { .. })
    })
    .await;
    assert_eq!(client.stats().unsuitable_servers, 3);
    client.shutdown().await;
}

#[tokio::test]
async fn leader_only_skips_followers() {
    let (_dir, listener, remote) = listener();
    let mut replica = Replica::new(DB);
    replica.add_table::<PortBinding>();
    let mut config =
        ClientConfig::new(Remote::parse_list(&remote).unwrap(), DB).monitor_replica(&replica);
    config.leader_only = true;
    config.backoff_min = Duration::from_millis(20);
    let (client, mut events) = spawn(config);
    let mut conn = accept(&listener).await;
    conn.server_db("clustered", true, false, Some(3)).await;
    let mut conn2 = accept(&listener).await;
    drop(conn);
    conn2.server_db("clustered", true, true, Some(3)).await;
    let (id, _) = conn2.expect("monitor_cond_since").await;
    conn2.reply(id, json!([false, TXN1, {}])).await;
    pump(&mut events, &mut replica, |_, e| {
        matches!(e, Event::Connected { .. })
    })
    .await;
    assert_eq!(client.stats().unsuitable_servers, 1);
    client.shutdown().await;
}

#[tokio::test]
async fn falls_back_to_monitor_cond_and_answers_echo() {
    let (_dir, listener, remote) = listener();
    let (client, mut events, mut replica) = client(&remote, None);
    let mut conn = accept(&listener).await;
    // A server without _Server and without monitor_cond_since; it cannot tell its schema
    // either.
    let (id, _) = conn.expect("monitor_cond").await;
    conn.error(id, "unknown database").await;
    let (id, params) = conn.expect("get_schema").await;
    assert_eq!(params, json!([DB]));
    conn.error(id, "unknown method").await;
    let (id, _) = conn.expect("monitor_cond_since").await;
    conn.error(id, "unknown method").await;
    let (id, params) = conn.expect("monitor_cond").await;
    assert_eq!(params[0], DB);
    conn.reply(
        id,
        json!({"Port_Binding": {PB1: {"initial": pb("lp1", 1)}}}),
    )
    .await;
    pump(&mut events, &mut replica, |_, e| {
        matches!(e, Event::Connected { .. })
    })
    .await;
    assert_eq!(ports(&replica), ["lp1"]);
    // The server probes us.
    conn.send(&json!({"id": "echo", "method": "echo", "params": ["x"]}))
        .await;
    let mut buf = [0u8; 4096];
    let mut framer = Framer::new();
    let reply = loop {
        let n = conn.stream.read(&mut buf).await.unwrap();
        framer.push(&buf[..n]);
        if let Some(frame) = framer.next_frame().unwrap() {
            let v: Value = serde_json::from_slice(&frame).unwrap();
            if v["id"] == "echo" {
                break v;
            }
        }
    };
    assert_eq!(reply["result"], json!(["x"]));
    client.shutdown().await;
}

#[tokio::test]
async fn inactivity_probe_disconnects_a_silent_server() {
    let (_dir, listener, remote) = listener();
    let (client, mut events, mut replica) = client(&remote, Some(Duration::from_millis(200)));
    let mut conn = accept(&listener).await;
    conn.server_db("standalone", true, true, None).await;
    let (id, _) = conn.expect("monitor_cond_since").await;
    conn.reply(id, json!([false, TXN1, {}])).await;
    // Answer nothing from now on (not even echo), but keep the socket open.
    pump(
        &mut events,
        &mut replica,
        |_, e| matches!(e, Event::Disconnected { reason, .. } if reason.contains("probe")),
    )
    .await;
    let stats = client.stats();
    assert!(!stats.connected);
    assert_eq!(stats.probes_sent, 1);
    assert_eq!(stats.probe_timeouts, 1);
    drop(conn);
    client.shutdown().await;
}

#[tokio::test]
async fn condition_change_in_flight_at_disconnect_forces_a_snapshot() {
    let (_dir, listener, remote) = listener();
    let (client, mut events, mut replica) = client(&remote, None);
    let mut conn = accept(&listener).await;
    conn.server_db("clustered", true, true, Some(1)).await;
    let (id, _) = conn.expect("monitor_cond_since").await;
    conn.reply(
        id,
        json!([false, TXN1, {"Port_Binding": {PB1: {"initial": pb("lp1", 1)}}}]),
    )
    .await;
    pump(&mut events, &mut replica, |_, e| {
        matches!(e, Event::Connected { .. })
    })
    .await;
    let seq = client
        .set_condition(
            "Port_Binding",
            sbclient::Condition(vec![sbclient::Clause::eq("logical_port", "lp2")]),
        )
        .await
        .unwrap();
    let (_id, params) = conn.expect("monitor_cond_change").await;
    assert_eq!(
        params[2]["Port_Binding"][0]["where"],
        json!([["logical_port", "==", "lp2"]])
    );
    // The connection drops before the reply.
    drop(conn);
    let mut conn = accept(&listener).await;
    conn.server_db("clustered", true, true, Some(2)).await;
    let (id, params) = conn.expect("monitor_cond_since").await;
    assert_eq!(
        params[3], "00000000-0000-0000-0000-000000000000",
        "no resume"
    );
    assert_eq!(
        params[2]["Port_Binding"][0]["where"],
        json!([["logical_port", "==", "lp2"]])
    );
    conn.reply(
        id,
        json!([false, TXN2, {"Port_Binding": {PB2: {"initial": pb("lp2", 2)}}}]),
    )
    .await;
    pump(
        &mut events,
        &mut replica,
        |_, e| matches!(e, Event::ConditionsAcked(s) if *s >= seq),
    )
    .await;
    assert_eq!(ports(&replica), ["lp2"], "lp1 dropped by the snapshot");
    let changes = replica.table::<PortBinding>().unwrap().changes();
    assert_eq!(
        changes.deleted.len(),
        0,
        "lp1 was inserted and deleted in this batch"
    );
    client.shutdown().await;
}

#[tokio::test]
async fn monitors_only_what_the_server_schema_has() {
    let (_dir, listener, remote) = listener();
    let mut replica = Replica::new(DB);
    replica.add_table::<PortBinding>();
    replica.add_table::<sbclient::ovn_sb::Mirror>();
    let config =
        ClientConfig::new(Remote::parse_list(&remote).unwrap(), DB).monitor_replica(&replica);
    let (client, mut events) = spawn(config);
    let mut conn = accept(&listener).await;
    // An older server: no Mirror table, Port_Binding without most columns.
    let old_schema =
        json!({"name": DB, "version": "1.0.0", "tables": {"Port_Binding": {"columns": {
        "logical_port": {"type": "string"}, "tunnel_key": {"type": "integer"}}}}})
        .to_string();
    conn.server_db_with_schema("standalone", true, true, None, Some(&old_schema))
        .await;
    let (id, params) = conn.expect("monitor_cond_since").await;
    let requests = params[2].as_object().unwrap();
    assert_eq!(requests.keys().collect::<Vec<_>>(), ["Port_Binding"]);
    assert_eq!(
        requests["Port_Binding"][0]["columns"],
        json!(["logical_port", "tunnel_key"])
    );
    conn.reply(
        id,
        json!([false, TXN1, {"Port_Binding": {PB1: {"initial": {"logical_port": "lp1", "tunnel_key": 1}}}}]),
    )
    .await;
    pump(&mut events, &mut replica, |_, e| {
        matches!(e, Event::Connected { .. })
    })
    .await;
    assert_eq!(ports(&replica), ["lp1"]);
    client.shutdown().await;
}

#[tokio::test]
async fn unix_sockets_are_not_probed_by_default() {
    let (_dir, listener, remote) = listener();
    let mut replica = Replica::new(DB);
    replica.add_table::<PortBinding>();
    let mut config =
        ClientConfig::new(Remote::parse_list(&remote).unwrap(), DB).monitor_replica(&replica);
    config.probe_interval = Some(Duration::from_millis(100));
    let (client, mut events) = spawn(config);
    let mut conn = accept(&listener).await;
    conn.server_db("standalone", true, true, None).await;
    let (id, _) = conn.expect("monitor_cond_since").await;
    conn.reply(id, json!([false, TXN1, {}])).await;
    pump(&mut events, &mut replica, |_, e| {
        matches!(e, Event::Connected { .. })
    })
    .await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let stats = client.stats();
    assert_eq!(stats.probes_sent, 0);
    assert!(stats.connected);
    client.shutdown().await;
}

/// Accepts the next connection and brings it to monitoring (standalone server, no rows);
/// returns it once the client reports `Connected` with connection number `number`.
async fn monitoring(
    listener: &UnixListener,
    events: &mut Receiver<Event>,
    replica: &mut Replica,
    number: u64,
) -> Conn {
    let mut conn = accept(listener).await;
    conn.server_db("standalone", true, true, None).await;
    let (id, _) = conn.expect("monitor_cond_since").await;
    conn.reply(id, json!([false, TXN1, {}])).await;
    pump(
        events,
        replica,
        |_, e| matches!(e, Event::Connected { connection, .. } if *connection == number),
    )
    .await;
    conn
}

fn comment_txn(text: &str) -> sbclient::Transaction {
    let mut txn = sbclient::Transaction::new(DB);
    txn.comment(text);
    txn
}

/// The comment of a `transact` request made by `comment_txn`.
fn comment_of(params: &Value) -> &str {
    params[1]["comment"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn a_transaction_in_flight_fails_when_the_connection_drops_and_is_not_replayed() {
    let (_dir, listener, remote) = listener();
    let (client, mut events, mut replica) = client(&remote, None);
    let mut conn = monitoring(&listener, &mut events, &mut replica, 1).await;
    let in_flight = {
        let c = client.clone();
        tokio::spawn(async move { c.transact(comment_txn("claim lp1")).await })
    };
    let (_id, params) = conn.expect("transact").await;
    assert_eq!(comment_of(&params), "claim lp1");
    drop(conn); // no reply
    let r = tokio::time::timeout(Duration::from_secs(10), in_flight)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r, Err(sbclient::TxnError::ConnectionLost));
    // The next connection does not see it again: `expect` fails on any request other
    // than the ones it waits for (and echo / set_db_change_aware).
    let mut conn = monitoring(&listener, &mut events, &mut replica, 2).await;
    let next = {
        let c = client.clone();
        tokio::spawn(async move { c.transact(comment_txn("claim lp1 again")).await })
    };
    let (id, params) = conn.expect("transact").await;
    assert_eq!(comment_of(&params), "claim lp1 again");
    conn.reply(id, json!([{}])).await;
    assert!(next.await.unwrap().is_ok());
    client.shutdown().await;
}

#[tokio::test]
async fn transactions_and_requests_made_while_disconnected_fail_at_once() {
    let (_dir, listener, remote) = listener();
    let (client, mut events, mut replica) = client(&remote, None);
    let conn = monitoring(&listener, &mut events, &mut replica, 1).await;
    drop(conn);
    pump(&mut events, &mut replica, |_, e| {
        matches!(e, Event::Disconnected { .. })
    })
    .await;
    assert_eq!(client.connection(), None);
    let at_once = Duration::from_secs(2);
    let r = tokio::time::timeout(at_once, client.transact(comment_txn("stale")))
        .await
        .expect("refused at once, not queued");
    assert_eq!(r, Err(sbclient::TxnError::NotConnected));
    let r = tokio::time::timeout(at_once, client.request("list_dbs", json!([])))
        .await
        .expect("refused at once, not queued");
    assert_eq!(r, Err(sbclient::ClientError::NotConnected));
    // While the next connection is still subscribing (the replica not yet refreshed), too.
    let mut conn = accept(&listener).await;
    conn.server_db("standalone", true, true, None).await;
    let (id, _) = conn.expect("monitor_cond_since").await;
    let r = tokio::time::timeout(at_once, client.transact(comment_txn("still stale")))
        .await
        .expect("refused at once, not queued");
    assert_eq!(r, Err(sbclient::TxnError::NotConnected));
    conn.reply(id, json!([false, TXN2, {}])).await;
    pump(&mut events, &mut replica, |_, e| {
        matches!(e, Event::Connected { connection: 2, .. })
    })
    .await;
    // Only what is made now goes out.
    let fresh = {
        let c = client.clone();
        tokio::spawn(async move { c.transact(comment_txn("fresh")).await })
    };
    let (id, params) = conn.expect("transact").await;
    assert_eq!(comment_of(&params), "fresh");
    conn.reply(id, json!([{}])).await;
    assert!(fresh.await.unwrap().is_ok());
    client.shutdown().await;
}

#[tokio::test]
async fn transact_on_refuses_a_transaction_made_for_an_old_connection() {
    let (_dir, listener, remote) = listener();
    let (client, mut events, mut replica) = client(&remote, None);
    let conn = monitoring(&listener, &mut events, &mut replica, 1).await;
    assert_eq!(client.connection(), Some(1));
    drop(conn);
    let mut conn = monitoring(&listener, &mut events, &mut replica, 2).await;
    assert_eq!(client.connection(), Some(2));
    let r = client
        .transact_on(1, comment_txn("from connection 1"))
        .await;
    assert_eq!(
        r,
        Err(sbclient::TxnError::StaleConnection {
            made_for: 1,
            current: Some(2)
        })
    );
    assert_eq!(
        r.unwrap_err().to_string(),
        "not sent: made for connection 1, the client is now on connection 2"
    );
    let current = {
        let c = client.clone();
        tokio::spawn(async move { c.transact_on(2, comment_txn("from connection 2")).await })
    };
    let (id, params) = conn.expect("transact").await;
    assert_eq!(comment_of(&params), "from connection 2");
    conn.reply(id, json!([{}])).await;
    assert!(current.await.unwrap().is_ok());
    client.shutdown().await;
}

#[tokio::test]
async fn transactions_before_the_first_connection_wait_for_it() {
    let (_dir, listener, remote) = listener();
    let (client, mut events, mut replica) = client(&remote, None);
    // Nothing is known yet, so nothing can be stale: this waits for the first connection.
    let early = {
        let c = client.clone();
        tokio::spawn(async move { c.transact(comment_txn("register chassis")).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut conn = monitoring(&listener, &mut events, &mut replica, 1).await;
    let (id, params) = conn.expect("transact").await;
    assert_eq!(comment_of(&params), "register chassis");
    conn.reply(id, json!([{}])).await;
    assert!(early.await.unwrap().is_ok());
    client.shutdown().await;
}

/// A server without `_Server` whose schema (from `get_schema`) is older: the client monitors
/// only the columns it has, reports the others, and leaves them out of transactions.
#[tokio::test]
async fn an_older_schema_is_read_with_get_schema_and_its_columns_only_are_used() {
    let (_dir, listener, remote) = listener();
    let (client, mut events, mut replica) = client(&remote, None);
    let mut conn = accept(&listener).await;
    let (id, _) = conn.expect("monitor_cond").await;
    conn.error(id, "unknown database").await;
    let (id, _) = conn.expect("get_schema").await;
    let column = |ty: &str| json!({"type": ty});
    conn.reply(
        id,
        json!({"name": DB, "version": "20.0.0", "tables": {"Port_Binding": {"columns": {
            "logical_port": column("string"),
            "tunnel_key": column("integer"),
            "datapath": {"type": {"key": {"type": "uuid"}}},
            "chassis": {"type": {"key": {"type": "uuid"}, "min": 0, "max": 1}},
        }}}}),
    )
    .await;
    let (id, params) = conn.expect("monitor_cond_since").await;
    let mut columns: Vec<String> = params[2]["Port_Binding"][0]["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_owned())
        .collect();
    columns.sort();
    assert_eq!(
        columns,
        ["chassis", "datapath", "logical_port", "tunnel_key"]
    );
    conn.reply(
        id,
        json!([false, TXN1, {"Port_Binding": {PB1: {"initial": pb("lp1", 1)}}}]),
    )
    .await;
    let mut missing = Vec::new();
    pump(&mut events, &mut replica, |_, e| match e {
        Event::Connected {
            missing_columns, ..
        } => {
            missing.clone_from(missing_columns);
            true
        }
        _ => false,
    })
    .await;
    assert!(missing.contains(&("Port_Binding".to_owned(), "requested_chassis".to_owned())));
    assert!(!missing.iter().any(|(_, c)| c == "logical_port"));
    assert_eq!(ports(&replica), ["lp1"]);
    // A transaction that also writes a column the server lacks.
    let mut txn = sbclient::Transaction::new(DB);
    txn.update(
        "Port_Binding",
        &sbclient::transaction::by_uuid(PB1.parse().unwrap()),
        sbclient::transaction::Columns::new()
            .set("chassis", sbclient::datum::Datum::Set(vec![]))
            .set("virtual_parent", sbclient::datum::Datum::Set(vec![])),
    );
    let pending = tokio::spawn({
        let client = client.clone();
        async move { client.transact(txn).await }
    });
    let (id, params) = conn.expect("transact").await;
    assert_eq!(params[1]["row"], json!({"chassis": ["set", []]}));
    conn.reply(id, json!([{"count": 1}])).await;
    pending.await.unwrap().unwrap();
    assert_eq!(client.stats().columns_not_written, 1);
    client.shutdown().await;
}
