//! sbclient over `ssl:` (rustls) to a real `ovsdb-server --remote=pssl:…`, with
//! certificates made by `ovs-pki`; a client certificate from another CA is refused.

mod common;

use std::time::Duration;

use common::pki::Pki;
use integration::daemon::{ControlSocket, Daemon};
use integration::host::Host;
use integration::ovsdb_cluster::free_port;
use sbclient::client::TlsSettings;
use sbclient::ovn_sb::{self, SbGlobal};
use sbclient::{spawn, ClientConfig, Columns, Event, Remote, Replica, Transaction};

const DB: &str = "OVN_Southbound";

/// `name`'s key and certificate, verifying the server against the switch CA.
fn files(pki: &Pki, name: &str) -> TlsSettings {
    TlsSettings {
        private_key: Some(pki.key(name)),
        certificate: Some(pki.cert(name)),
        ca_cert: Some(pki.ca()),
        ..TlsSettings::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ssl_remote_with_ovs_pki_certificates() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::create(dir.path(), "ssl").unwrap();
    let pki = Pki::create(&["server", "client"]);
    pki.add_signed_by_other_ca("rogue");
    let db = host.path("sb.db").display().to_string();
    host.run(
        "ovsdb-tool",
        &["create", &db, "/usr/share/ovn/ovn-sb.ovsschema"],
    )
    .unwrap();
    let port = free_port().unwrap();
    let _server = Daemon::start(
        &host,
        "sb",
        "ovsdb-server",
        ControlSocket::Explicit,
        &[
            format!("--private-key={}", pki.key("server").display()),
            format!("--certificate={}", pki.cert("server").display()),
            format!("--ca-cert={}", pki.ca().display()),
            format!("--remote=pssl:{port}:127.0.0.1"),
            db,
        ],
    )
    .unwrap();
    let remote = format!("ssl:127.0.0.1:{port}");

    // A client whose certificate the server's CA signed.
    let mut replica = Replica::new(DB);
    ovn_sb::register_all(&mut replica);
    let mut config =
        ClientConfig::new(Remote::parse_list(&remote).unwrap(), DB).monitor_replica(&replica);
    config.tls = Some(files(&pki, "client"));
    config.backoff_min = Duration::from_millis(100);
    let (client, mut events) = spawn(config);
    let mut txn = Transaction::new(DB);
    txn.insert("SB_Global", Columns::new().set("nb_cfg", 42), None);
    // Queued until the connection is up, then sent.
    let outcome = tokio::time::timeout(Duration::from_secs(30), client.transact(txn))
        .await
        .expect("transaction in time")
        .unwrap();
    assert_eq!(outcome.results.len(), 1);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let event = tokio::time::timeout_at(deadline, events.recv())
            .await
            .expect("SB_Global row over ssl")
            .unwrap();
        event.apply(&mut replica).unwrap();
        let sb = replica.table::<SbGlobal>().unwrap();
        if sb.iter().any(|(_, r)| r.nb_cfg == 42) {
            break;
        }
    }
    client.shutdown().await;

    // A client certificate from another CA: the handshake fails, no connection.
    let mut config =
        ClientConfig::new(Remote::parse_list(&remote).unwrap(), DB).monitor_replica(&replica);
    config.tls = Some(files(&pki, "rogue"));
    config.backoff_min = Duration::from_millis(100);
    config.backoff_max = Duration::from_millis(200);
    let (client, mut events) = spawn(config);
    let mut disconnects = 0;
    while disconnects < 3 {
        match tokio::time::timeout(Duration::from_secs(30), events.recv())
            .await
            .expect("events")
            .unwrap()
        {
            Event::Connected { .. } => panic!("a rogue certificate was accepted"),
            Event::Disconnected { reason, .. } => {
                eprintln!("rogue client disconnected: {reason}");
                disconnects += 1;
            }
            _ => {}
        }
    }
    assert_eq!(client.stats().connections, 0);
    client.shutdown().await;
}
