//! The tokio connection against a fake switch on a Unix socket.

use std::time::Duration;

use openflow::conn::client::ClientConfig;
use openflow::conn::{connect, ConnError, SessionError};
use openflow::text::Flow;
use openflow::wire::bundle::{OFPBF_ATOMIC, OFPBF_ORDERED};
use openflow::wire::{
    BundleControl, Echo, Empty, ErrorCode, ErrorMsg, Hello, Message, OfpMessage, PacketIn2,
    PacketInProp,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::mpsc;

async fn read_msg<S: AsyncRead + Unpin>(s: &mut S) -> Option<OfpMessage> {
    let mut h = [0u8; 8];
    s.read_exact(&mut h).await.ok()?;
    let len = u16::from_be_bytes([h[2], h[3]]) as usize;
    let mut all = h.to_vec();
    all.resize(len, 0);
    s.read_exact(&mut all[8..]).await.ok()?;
    Some(OfpMessage::decode(&all).expect("client sent a valid message"))
}

async fn write<S: AsyncWrite + Unpin>(s: &mut S, xid: u32, body: Message) {
    s.write_all(&OfpMessage::new(xid, body).to_bytes())
        .await
        .unwrap();
}

/// A switch that answers hello/echo/barrier/bundle and reports what it received.
async fn fake_switch(
    listener: UnixListener,
    seen: mpsc::UnboundedSender<OfpMessage>,
    reject_xid_of_table: Option<u8>,
) {
    let (s, _) = listener.accept().await.unwrap();
    serve(s, seen, reject_xid_of_table).await;
}

async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    mut s: S,
    seen: mpsc::UnboundedSender<OfpMessage>,
    reject_xid_of_table: Option<u8>,
) {
    write(&mut s, 1, Message::Hello(Hello::with_versions(&[6]))).await;
    while let Some(m) = read_msg(&mut s).await {
        match &m.body {
            Message::EchoRequest(e) => {
                write(
                    &mut s,
                    m.xid,
                    Message::EchoReply(Echo {
                        data: e.data.clone(),
                    }),
                )
                .await;
            }
            Message::BarrierRequest(_) => {
                // Before answering, push an unsolicited packet-in2.
                let pi = PacketIn2 {
                    props: vec![PacketInProp::Packet(vec![1, 2, 3])],
                };
                write(&mut s, 0, Message::PacketIn2(pi)).await;
                write(&mut s, m.xid, Message::BarrierReply(Empty)).await;
            }
            Message::BundleControl(b) => {
                let reply = BundleControl {
                    ctrl_type: b.ctrl_type + 1,
                    ..b.clone()
                };
                write(&mut s, m.xid, Message::BundleControl(reply)).await;
            }
            Message::BundleAddMessage(a) => {
                let inner = OfpMessage::decode(&a.message).unwrap();
                assert_eq!(inner.xid, m.xid, "embedded xid must equal the add's xid");
                if let Message::FlowMod(fm) = &inner.body {
                    if Some(fm.table_id) == reject_xid_of_table {
                        let err = ErrorMsg {
                            code: ErrorCode::Standard { ty: 5, code: 0 },
                            data: vec![],
                        };
                        write(&mut s, m.xid, Message::Error(err)).await;
                    }
                }
            }
            _ => {}
        }
        let _ = seen.send(m);
    }
}

fn setup(
    reject: Option<u8>,
) -> (
    tempfile::TempDir,
    String,
    mpsc::UnboundedReceiver<OfpMessage>,
) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sw.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(fake_switch(listener, tx, reject));
    (dir, format!("unix:{}", path.display()), rx)
}

#[tokio::test]
async fn handshake_echo_barrier_and_async_stream() {
    let (_dir, target, mut seen) = setup(None);
    let (conn, handle, mut asyncs) = connect(&target, ClientConfig::default()).unwrap();
    let task = tokio::spawn(conn.run());
    handle.wait_connected().await.unwrap();
    let reply = handle
        .request(Message::EchoRequest(Echo { data: vec![4, 2] }))
        .await
        .unwrap();
    assert_eq!(reply[0].body, Message::EchoReply(Echo { data: vec![4, 2] }));
    let flow: Flow = "table=1,priority=5,ip actions=drop".parse().unwrap();
    assert!(matches!(
        handle.request(Message::FlowMod(flow.add())).await,
        Err(ConnError::NoReply(_))
    ));
    handle
        .send(vec![Message::FlowMod(flow.add())])
        .await
        .unwrap();
    assert!(handle.barrier().await.unwrap().is_empty());
    let pi = asyncs.recv().await.unwrap();
    assert!(matches!(pi.body, Message::PacketIn2(_)));
    // The switch saw hello, echo, flow_mod, barrier in that order.
    let mut kinds = Vec::new();
    while let Ok(m) = seen.try_recv() {
        kinds.push(m.body.kind().to_string());
    }
    assert_eq!(kinds, ["Hello", "EchoRequest", "FlowMod", "BarrierRequest"]);
    drop(handle);
    assert!(task.await.unwrap().is_ok());
}

#[tokio::test]
async fn bundles_commit_and_report_rejected_messages() {
    let (_dir, target, _seen) = setup(Some(9));
    let (conn, handle, _asyncs) = connect(&target, ClientConfig::default()).unwrap();
    tokio::spawn(conn.run());
    handle.wait_connected().await.unwrap();
    let ok: Vec<Message> = (0..3)
        .map(|i| {
            Message::FlowMod(
                format!("table=1,priority={i} actions=drop")
                    .parse::<Flow>()
                    .unwrap()
                    .add(),
            )
        })
        .collect();
    handle
        .bundle(ok, OFPBF_ATOMIC | OFPBF_ORDERED)
        .await
        .unwrap();
    let bad = vec![Message::FlowMod(
        "table=9,priority=1 actions=drop"
            .parse::<Flow>()
            .unwrap()
            .add(),
    )];
    match handle.bundle(bad, OFPBF_ATOMIC).await {
        Err(ConnError::BundleFailed(errs)) => assert_eq!(errs.len(), 1),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn silent_switch_times_out_in_virtual_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sw.sock");
    let listener = UnixListener::bind(&path).unwrap();
    // Says hello, then never speaks again (but keeps the socket open).
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        write(&mut s, 1, Message::Hello(Hello::with_versions(&[6]))).await;
        let mut sink = vec![0u8; 4096];
        while s.read(&mut sink).await.unwrap_or(0) > 0 {}
    });
    let cfg = ClientConfig {
        reconnect: false,
        ..ClientConfig::default()
    };
    let (conn, handle, _a) = connect(&format!("unix:{}", path.display()), cfg).unwrap();
    let task = tokio::spawn(conn.run());
    handle.wait_connected().await.unwrap();
    let started = tokio::time::Instant::now();
    let res = task.await.unwrap();
    assert!(
        matches!(res, Err(ConnError::Session(SessionError::Timeout(_)))),
        "{res:?}"
    );
    // Probe at 5 s, give up at 10 s: all in virtual time.
    assert!(started.elapsed() >= Duration::from_secs(10));
}

#[tokio::test]
async fn works_over_tcp() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, _seen) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let (s, _) = listener.accept().await.unwrap();
        serve(s, tx, None).await;
    });
    let (conn, handle, _a) =
        connect(&format!("tcp:127.0.0.1:{port}"), ClientConfig::default()).unwrap();
    tokio::spawn(conn.run());
    let reply = handle
        .request(Message::EchoRequest(Echo { data: vec![7] }))
        .await
        .unwrap();
    assert_eq!(reply[0].body, Message::EchoReply(Echo { data: vec![7] }));
    assert!(handle.barrier().await.unwrap().is_empty());
}

#[tokio::test]
async fn reconnects_after_the_switch_drops_the_connection() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sw.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let (accepted_tx, mut accepted) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        // First connection: hello, then hang up.
        let (mut s, _) = listener.accept().await.unwrap();
        let _ = accepted_tx.send(1);
        write(&mut s, 1, Message::Hello(Hello::with_versions(&[6]))).await;
        // Take the client's hello first, so the client sees a complete handshake.
        assert!(matches!(
            read_msg(&mut s).await.unwrap().body,
            Message::Hello(_)
        ));
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(s);
        let (s, _) = listener.accept().await.unwrap();
        let _ = accepted_tx.send(2);
        let (tx, _rx) = mpsc::unbounded_channel();
        serve(s, tx, None).await;
    });
    let (conn, handle, _a) =
        connect(&format!("unix:{}", path.display()), ClientConfig::default()).unwrap();
    tokio::spawn(conn.run());
    let mut attempts = 0;
    let reply = loop {
        attempts += 1;
        assert!(attempts < 50, "never got an answer");
        match handle
            .request(Message::EchoRequest(Echo { data: vec![1] }))
            .await
        {
            Ok(r) => break r,
            Err(ConnError::Closed) => tokio::time::sleep(Duration::from_millis(50)).await,
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(reply[0].body, Message::EchoReply(Echo { data: vec![1] }));
    assert_eq!(*handle.state().borrow(), Some(2), "second session");
    assert_eq!(accepted.recv().await, Some(1));
    assert_eq!(accepted.recv().await, Some(2));
}
