//! The tokio connection against a fake switch on a Unix socket: handshake, requests,
//! barriers, bundles (errors attributed to the right message, discard on failure, meter mods
//! refused), over-long messages refused before anything is sent, and commands of an old
//! session refused after a reconnect.

use std::time::Duration;

use openflow::action::Action;
use openflow::conn::client::ClientConfig;
use openflow::conn::{connect, ConnError, Handle, SessionError, SessionId};
use openflow::text::Flow;
use openflow::wire::bundle::{
    OFPBCT_COMMIT_REQUEST, OFPBCT_DISCARD_REQUEST, OFPBCT_OPEN_REQUEST, OFPBF_ATOMIC, OFPBF_ORDERED,
};
use openflow::wire::{
    Bucket, BundleBuilder, BundleControl, Echo, Empty, EncodeError, ErrorCode, ErrorMsg, Group,
    GroupMod, Hello, Message, MeterMod, OfpMessage, PacketIn2, PacketInProp, Wire,
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
    s.write_all(&OfpMessage::new(xid, body).to_bytes().unwrap())
        .await
        .unwrap();
}

/// How the fake switch treats flow mods in bundles.
#[derive(Clone, Copy, Default)]
struct Rules {
    /// Reject the bundle add of a flow mod for this table (as OVS rejects a bad message).
    reject_add_of_table: Option<u8>,
    /// Accept the add, but fail the commit on a flow mod for this table (as OVS does when a
    /// flow cannot be applied): an error under the add's xid, then the commit's error.
    fail_commit_on_table: Option<u8>,
}

fn err(ty: u16, code: u16) -> ErrorMsg {
    ErrorMsg {
        code: ErrorCode::Standard { ty, code },
        data: vec![],
    }
}

/// A switch that answers hello/echo/barrier/bundle and reports what it received.
async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    mut s: S,
    seen: mpsc::UnboundedSender<OfpMessage>,
    rules: Rules,
) {
    write(&mut s, 1, Message::Hello(Hello::with_versions(&[6]))).await;
    // (add xid, table) of the bundle being filled.
    let mut adds: Vec<(u32, u8)> = Vec::new();
    while let Some(m) = read_msg(&mut s).await {
        let _ = seen.send(m.clone());
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
                if b.ctrl_type == OFPBCT_OPEN_REQUEST {
                    adds.clear();
                }
                let failing = adds
                    .iter()
                    .find(|(_, t)| Some(*t) == rules.fail_commit_on_table);
                match failing {
                    Some((xid, _)) if b.ctrl_type == OFPBCT_COMMIT_REQUEST => {
                        write(&mut s, *xid, Message::Error(err(5, 1))).await;
                        // OFPBFC_MSG_FAILED for the commit.
                        write(&mut s, m.xid, Message::Error(err(17, 13))).await;
                    }
                    _ => {
                        let reply = BundleControl {
                            ctrl_type: b.ctrl_type + 1,
                            ..b.clone()
                        };
                        write(&mut s, m.xid, Message::BundleControl(reply)).await;
                    }
                }
            }
            Message::BundleAddMessage(a) => {
                let inner = OfpMessage::decode(&a.message).unwrap();
                assert_eq!(inner.xid, m.xid, "embedded xid must equal the add's xid");
                if let Message::FlowMod(fm) = &inner.body {
                    adds.push((m.xid, fm.table_id));
                    if Some(fm.table_id) == rules.reject_add_of_table {
                        write(&mut s, m.xid, Message::Error(err(5, 0))).await;
                    }
                }
            }
            _ => {}
        }
    }
}

fn setup(
    rules: Rules,
) -> (
    tempfile::TempDir,
    String,
    mpsc::UnboundedReceiver<OfpMessage>,
) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sw.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let (s, _) = listener.accept().await.unwrap();
        serve(s, tx, rules).await;
    });
    (dir, format!("unix:{}", path.display()), rx)
}

async fn connected(target: &str) -> (Handle, SessionId) {
    let (conn, handle, _asyncs) = connect(target, ClientConfig::default()).unwrap();
    tokio::spawn(conn.run());
    let sid = handle.wait_connected().await.unwrap();
    (handle, sid)
}

fn flow_mod(text: &str) -> Message {
    Message::FlowMod(text.parse::<Flow>().unwrap().add())
}

/// Kinds the switch saw, until the channel is empty.
fn kinds(seen: &mut mpsc::UnboundedReceiver<OfpMessage>) -> Vec<String> {
    let mut v = Vec::new();
    while let Ok(m) = seen.try_recv() {
        v.push(m.body.kind().to_string());
    }
    v
}

#[tokio::test]
async fn handshake_echo_barrier_and_async_stream() {
    let (_dir, target, mut seen) = setup(Rules::default());
    let (conn, handle, mut asyncs) = connect(&target, ClientConfig::default()).unwrap();
    let task = tokio::spawn(conn.run());
    let sid = handle.wait_connected().await.unwrap();
    assert_eq!(sid.get(), 1);
    assert_eq!(handle.session(), Some(sid));
    let reply = handle
        .request(sid, &Message::EchoRequest(Echo { data: vec![4, 2] }))
        .await
        .unwrap();
    assert_eq!(reply[0].body, Message::EchoReply(Echo { data: vec![4, 2] }));
    let fm = flow_mod("table=1,priority=5,ip actions=drop");
    assert!(matches!(
        handle.request(sid, &fm).await,
        Err(ConnError::NoReply(_))
    ));
    let xids = handle.send(sid, &[fm.clone(), fm]).await.unwrap();
    assert_eq!(xids.len(), 2);
    assert!(xids[0] < xids[1]);
    assert!(handle.barrier(sid).await.unwrap().is_empty());
    let pi = asyncs.recv().await.unwrap();
    assert!(matches!(pi.body, Message::PacketIn2(_)));
    // The switch saw hello, echo, the flow mods, barrier in that order.
    assert_eq!(
        kinds(&mut seen),
        [
            "Hello",
            "EchoRequest",
            "FlowMod",
            "FlowMod",
            "BarrierRequest"
        ]
    );
    drop(handle);
    assert!(task.await.unwrap().is_ok());
}

#[tokio::test]
async fn bundles_commit_and_attribute_rejected_adds_to_their_index() {
    let (_dir, target, mut seen) = setup(Rules {
        reject_add_of_table: Some(9),
        ..Rules::default()
    });
    let (handle, sid) = connected(&target).await;
    let ok: Vec<Message> = (0..3)
        .map(|i| flow_mod(&format!("table=1,priority={i} actions=drop")))
        .collect();
    handle
        .bundle(sid, &ok, OFPBF_ATOMIC | OFPBF_ORDERED)
        .await
        .unwrap();
    assert_eq!(
        kinds(&mut seen),
        [
            "Hello",
            "BundleControl",
            "BundleAddMessage",
            "BundleAddMessage",
            "BundleAddMessage",
            "BarrierRequest",
            "BundleControl",
            "BarrierRequest"
        ]
    );
    // Messages 2 and 4 of five are refused when added: no commit, the bundle is discarded.
    let mut b = BundleBuilder::new(OFPBF_ATOMIC);
    for t in [1, 1, 9, 1, 9] {
        b.push_message(&flow_mod(&format!("table={t},priority=1 actions=drop")))
            .unwrap();
    }
    match handle.commit_bundle(sid, b).await {
        Err(ConnError::BundleFailed { rejected, commit }) => {
            let idx: Vec<usize> = rejected.iter().map(|(i, _)| *i).collect();
            assert_eq!(idx, [2, 4]);
            assert_eq!(rejected[0].1.code, ErrorCode::Standard { ty: 5, code: 0 });
            assert!(commit.is_none());
        }
        other => panic!("{other:?}"),
    }
    let mut ctrl = Vec::new();
    while let Ok(m) = seen.try_recv() {
        if let Message::BundleControl(c) = m.body {
            ctrl.push(c.ctrl_type);
        }
    }
    assert_eq!(ctrl, [OFPBCT_OPEN_REQUEST, OFPBCT_DISCARD_REQUEST]);
}

#[tokio::test]
async fn errors_at_commit_are_attributed_to_the_add_that_failed() {
    let (_dir, target, mut seen) = setup(Rules {
        fail_commit_on_table: Some(7),
        ..Rules::default()
    });
    let (handle, sid) = connected(&target).await;
    // Built without `Message` values: the flow mod bodies are encoded straight into the
    // builder.
    let mut b = BundleBuilder::new(OFPBF_ATOMIC | OFPBF_ORDERED);
    for t in [1u8, 2, 7, 3] {
        let f: Flow = format!("table={t},priority=1,ip actions=drop")
            .parse()
            .unwrap();
        let fm = f.add();
        let i = b.try_push_raw(14, |out| fm.encode(out)).unwrap();
        assert_eq!(i, b.len() - 1);
    }
    match handle.commit_bundle(sid, b).await {
        Err(e @ ConnError::BundleFailed { .. }) => {
            let text = e.to_string();
            let ConnError::BundleFailed { rejected, commit } = e else {
                unreachable!()
            };
            assert_eq!(rejected.len(), 1);
            assert_eq!(rejected[0].0, 2);
            assert_eq!(
                commit.unwrap().code,
                ErrorCode::Standard { ty: 17, code: 13 }
            );
            assert!(
                text.contains("message 2: OFPFMFC_TABLE_FULL")
                    && text.contains("commit: OFPBFC_MSG_FAILED"),
                "{text}"
            );
        }
        other => panic!("{other:?}"),
    }
    let mut ctrl = Vec::new();
    while let Ok(m) = seen.try_recv() {
        if let Message::BundleControl(c) = m.body {
            ctrl.push(c.ctrl_type);
        }
    }
    assert_eq!(
        ctrl,
        [
            OFPBCT_OPEN_REQUEST,
            OFPBCT_COMMIT_REQUEST,
            OFPBCT_DISCARD_REQUEST
        ]
    );
}

#[tokio::test]
async fn meter_mods_and_overlong_messages_are_refused_before_anything_is_sent() {
    let (_dir, target, mut seen) = setup(Rules::default());
    let (handle, sid) = connected(&target).await;
    let meter = Message::MeterMod(MeterMod::default());
    assert!(matches!(
        handle
            .bundle(
                sid,
                &[flow_mod("table=1 actions=drop"), meter.clone()],
                OFPBF_ATOMIC
            )
            .await,
        Err(ConnError::Encode(EncodeError::NotBundlable {
            msg_type: 29
        }))
    ));
    // A flow with a huge action list, and a group with thousands of buckets.
    let mut f: Flow = "table=1 actions=drop".parse().unwrap();
    f.instructions = vec![openflow::wire::Instruction::ApplyActions(vec![
        Action::Group(
            1
        );
        8200
    ])];
    let huge_flow = Message::FlowMod(f.add());
    let group = Message::GroupMod(GroupMod {
        command: 0,
        command_bucket_id: 0xffff_ffff,
        group: Group {
            group_id: 1,
            group_type: 0,
            buckets: (0..3000)
                .map(|i| Bucket {
                    bucket_id: i,
                    actions: vec![Action::Output {
                        port: 1,
                        max_len: 0,
                    }],
                    ..Bucket::default()
                })
                .collect(),
            ..Group::default()
        },
    });
    for m in [&huge_flow, &group] {
        assert!(
            matches!(
                handle
                    .send(sid, &[flow_mod("table=2 actions=drop"), m.clone()])
                    .await,
                Err(ConnError::Encode(EncodeError::TooLong { .. }))
            ),
            "{:?}",
            m.kind()
        );
        assert!(matches!(
            handle
                .bundle(sid, std::slice::from_ref(m), OFPBF_ATOMIC)
                .await,
            Err(ConnError::Encode(EncodeError::TooLong { .. }))
        ));
    }
    // The meter mod itself goes out alone, outside a bundle.
    handle.send(sid, &[meter]).await.unwrap();
    assert!(handle.barrier(sid).await.unwrap().is_empty());
    assert_eq!(kinds(&mut seen), ["Hello", "MeterMod", "BarrierRequest"]);
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
        serve(s, tx, Rules::default()).await;
    });
    let (handle, sid) = connected(&format!("tcp:127.0.0.1:{port}")).await;
    let reply = handle
        .request(sid, &Message::EchoRequest(Echo { data: vec![7] }))
        .await
        .unwrap();
    assert_eq!(reply[0].body, Message::EchoReply(Echo { data: vec![7] }));
    assert!(handle.barrier(sid).await.unwrap().is_empty());
}

#[tokio::test]
async fn commands_of_an_old_session_are_refused_after_a_reconnect() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sw.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let (hangup_tx, mut hangup) = mpsc::unbounded_channel::<()>();
    let (accept_tx, mut accept_again) = mpsc::unbounded_channel::<()>();
    let (seen2_tx, mut seen2) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        // First connection: hello, answer one echo, then hang up when told to; an echo
        // still in flight then is never answered.
        let (mut s, _) = listener.accept().await.unwrap();
        write(&mut s, 1, Message::Hello(Hello::with_versions(&[6]))).await;
        assert!(matches!(
            read_msg(&mut s).await.unwrap().body,
            Message::Hello(_)
        ));
        let m = read_msg(&mut s).await.unwrap();
        write(&mut s, m.xid, Message::EchoReply(Echo::default())).await;
        let _unanswered = read_msg(&mut s).await.unwrap();
        hangup.recv().await;
        drop(s);
        // The second connection only once told to: meanwhile the client is disconnected.
        accept_again.recv().await;
        let (s, _) = listener.accept().await.unwrap();
        serve(s, seen2_tx, Rules::default()).await;
    });
    let (conn, handle, _a) =
        connect(&format!("unix:{}", path.display()), ClientConfig::default()).unwrap();
    tokio::spawn(conn.run());
    let first = handle.wait_connected().await.unwrap();
    let mut state = handle.state();
    handle
        .request(first, &Message::EchoRequest(Echo::default()))
        .await
        .unwrap();
    // A request in flight when the session ends fails with that session's id.
    let pending = {
        let h = handle.clone();
        tokio::spawn(async move {
            h.request(first, &Message::EchoRequest(Echo { data: vec![9] }))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    hangup_tx.send(()).unwrap();
    match tokio::time::timeout(Duration::from_secs(10), pending)
        .await
        .unwrap()
        .unwrap()
    {
        Err(ConnError::SessionEnded(s)) => assert_eq!(s, first),
        other => panic!("{other:?}"),
    }
    state.wait_for(Option::is_none).await.unwrap();
    // While disconnected, a command for the old session fails at once (it is not queued
    // for the next connection).
    let fm = flow_mod("table=3,priority=1 actions=drop");
    match tokio::time::timeout(
        Duration::from_secs(5),
        handle.send(first, std::slice::from_ref(&fm)),
    )
    .await
    .expect("refused at once, not queued")
    {
        Err(ConnError::StaleSession { made_for, current }) => {
            assert_eq!(made_for, first);
            assert_eq!(current, None);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        handle.barrier(first).await,
        Err(ConnError::StaleSession { current: None, .. })
    ));
    accept_tx.send(()).unwrap();
    let second = *state.wait_for(Option::is_some).await.unwrap();
    let second = second.unwrap();
    assert_eq!(second.get(), 2);
    assert_eq!(handle.wait_connected().await.unwrap(), second);
    // Commands made for the first session are refused, and name the current one.
    let err = handle
        .send(first, std::slice::from_ref(&fm))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ConnError::StaleSession { made_for, current: Some(c) } if made_for == first && c == second),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "command for OpenFlow session 1 not sent: the switch connection is now session 2"
    );
    assert!(matches!(
        handle
            .bundle(first, std::slice::from_ref(&fm), OFPBF_ATOMIC)
            .await,
        Err(ConnError::StaleSession { .. })
    ));
    assert!(matches!(
        handle
            .request(first, &Message::EchoRequest(Echo::default()))
            .await,
        Err(ConnError::StaleSession { .. })
    ));
    // With the current session, it goes through; the switch never saw the stale ones.
    handle.send(second, &[fm]).await.unwrap();
    assert!(handle.barrier(second).await.unwrap().is_empty());
    assert_eq!(kinds(&mut seen2), ["Hello", "FlowMod", "BarrierRequest"]);
}

/// A bundle of 30,000 flow mods, every one refused as it is added: the connection keeps
/// reading the switch's errors while it writes the adds (writing everything first would
/// dead-lock once both socket buffers are full), and each error names its message.
#[tokio::test]
async fn a_large_bundle_whose_every_add_fails_does_not_deadlock() {
    let (_dir, target, _seen) = setup(Rules {
        reject_add_of_table: Some(9),
        ..Rules::default()
    });
    let (handle, sid) = connected(&target).await;
    let mut b = BundleBuilder::new(OFPBF_ATOMIC);
    let f: Flow = "table=9,priority=1,ip,reg0=0x1 actions=set_field:0x1->reg1,resubmit(,10)"
        .parse()
        .unwrap();
    let fm = f.add();
    for _ in 0..30_000 {
        b.try_push_raw(14, |out| fm.encode(out)).unwrap();
    }
    assert!(b.encoded_len() > 2_000_000);
    let r = tokio::time::timeout(Duration::from_mins(1), handle.commit_bundle(sid, b))
        .await
        .expect("no deadlock");
    match r {
        Err(ConnError::BundleFailed { rejected, commit }) => {
            assert_eq!(rejected.len(), 30_000);
            assert!(rejected.iter().enumerate().all(|(i, (idx, _))| i == *idx));
            assert!(commit.is_none());
        }
        other => panic!("{other:?}"),
    }
}

/// A bundle in parts: refused adds are named by their index across the parts, and when the
/// parts stop before the last one the bundle is discarded, never committed.
#[tokio::test]
async fn bundle_parts_count_indexes_across_parts_and_discard_when_cut_short() {
    use openflow::conn::BundlePart;
    let (_dir, target, mut seen) = setup(Rules {
        reject_add_of_table: Some(9),
        ..Rules::default()
    });
    let (handle, sid) = connected(&target).await;
    let part = |tables: &[u8]| {
        let mut b = BundleBuilder::new(OFPBF_ATOMIC);
        for t in tables {
            b.push_message(&flow_mod(&format!("table={t},priority=1 actions=drop")))
                .unwrap();
        }
        b
    };
    // Three parts (2 + 2 + 1 messages), all accepted: committed once. The second part's
    // `before` message goes out on its own between the first and second parts' adds.
    let (tx, rx) = mpsc::channel(1);
    let sender = tokio::spawn({
        let (a, b) = (part(&[1, 2]), part(&[3]));
        async move {
            tx.send(BundlePart {
                before: vec![Message::MeterMod(MeterMod {
                    meter_id: 7,
                    ..MeterMod::default()
                })],
                bundle: a,
                last: false,
            })
            .await
            .unwrap();
            tx.send(BundlePart {
                before: Vec::new(),
                bundle: b,
                last: true,
            })
            .await
            .unwrap();
        }
    });
    handle
        .commit_bundle_parts(sid, part(&[1, 1]), Some(rx))
        .await
        .unwrap();
    sender.await.unwrap();
    let k = kinds(&mut seen);
    assert_eq!(k.iter().filter(|k| *k == "BundleAddMessage").count(), 5);
    let echo = k
        .iter()
        .position(|k| k == "MeterMod")
        .expect("before message sent");
    let adds_before_echo = k[..echo]
        .iter()
        .filter(|k| *k == "BundleAddMessage")
        .count();
    assert_eq!(adds_before_echo, 2, "{k:?}");
    assert_eq!(k.iter().filter(|k| *k == "BundleControl").count(), 2);
    // A refused add in the third part is index 4.
    let (tx, rx) = mpsc::channel(1);
    let sender = tokio::spawn({
        let (a, b) = (part(&[1, 1]), part(&[9]));
        async move {
            tx.send(BundlePart {
                before: Vec::new(),
                bundle: a,
                last: false,
            })
            .await
            .unwrap();
            tx.send(BundlePart {
                before: Vec::new(),
                bundle: b,
                last: true,
            })
            .await
            .unwrap();
        }
    });
    match handle
        .commit_bundle_parts(sid, part(&[1, 1]), Some(rx))
        .await
    {
        Err(ConnError::BundleFailed { rejected, .. }) => {
            assert_eq!(rejected.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [4]);
        }
        other => panic!("{other:?}"),
    }
    sender.await.unwrap();
    let _ = kinds(&mut seen);
    // The parts stop (sender dropped) before the last: discarded.
    let (tx, rx) = mpsc::channel(1);
    tx.send(BundlePart {
        before: Vec::new(),
        bundle: part(&[1]),
        last: false,
    })
    .await
    .unwrap();
    drop(tx);
    match handle.commit_bundle_parts(sid, part(&[1]), Some(rx)).await {
        Err(ConnError::BundleIncomplete) => {}
        other => panic!("{other:?}"),
    }
    let mut ctrl = Vec::new();
    while let Ok(m) = seen.try_recv() {
        if let Message::BundleControl(c) = m.body {
            ctrl.push(c.ctrl_type);
        }
    }
    assert_eq!(ctrl, [OFPBCT_OPEN_REQUEST, OFPBCT_DISCARD_REQUEST]);
}
