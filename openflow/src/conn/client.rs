//! The thin tokio shell around [`Session`]: unix/tcp transport, framing, reconnect.
//!
//! `connect()` returns a [`Connection`] to spawn, a cloneable [`Handle`] for requests, and
//! a bounded receiver of asynchronous messages (packet-in2, port status, errors).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use thiserror::Error;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch};

use super::session::{Config, Event, Session, SessionError};
use crate::wire::bundle::{
    OFPBCT_COMMIT_REPLY, OFPBCT_COMMIT_REQUEST, OFPBCT_OPEN_REPLY, OFPBCT_OPEN_REQUEST,
};
use crate::wire::{
    frame_len, BundleAddMessage, BundleControl, DecodeError, ErrorMsg, Message, OfpMessage,
    HEADER_LEN,
};

/// Connection-level failures.
#[derive(Clone, Debug, Error)]
#[non_exhaustive]
pub enum ConnError {
    #[error("i/o: {0}")]
    Io(String),
    #[error("decode: {0}")]
    Decode(#[from] DecodeError),
    #[error("session: {0}")]
    Session(#[from] SessionError),
    #[error("switch returned an error: {0}")]
    Peer(ErrorMsg),
    #[error("bundle failed: {}", fmt_errors(.0))]
    BundleFailed(Vec<(u32, ErrorMsg)>),
    #[error("unexpected reply")]
    Unexpected,
    #[error("connection closed")]
    Closed,
    #[error("{0} has no reply: send it, then use a barrier")]
    NoReply(crate::wire::MessageKind),
    #[error("bad target `{0}` (want unix:PATH or tcp:HOST:PORT)")]
    BadTarget(String),
}

fn fmt_errors(errors: &[(u32, ErrorMsg)]) -> String {
    let v: Vec<String> = errors
        .iter()
        .map(|(xid, e)| format!("message xid {xid:#x}: {e}"))
        .collect();
    v.join("; ")
}

impl From<std::io::Error> for ConnError {
    fn from(e: std::io::Error) -> Self {
        ConnError::Io(e.to_string())
    }
}

type ReplyTx = oneshot::Sender<Result<Vec<OfpMessage>, ConnError>>;
type BarrierTx = oneshot::Sender<Result<Vec<(u32, ErrorMsg)>, ConnError>>;

enum Command {
    Send(Vec<Message>),
    Request(Message, ReplyTx),
    Barrier(BarrierTx),
    BundleAdd {
        bundle_id: u32,
        flags: u16,
        bodies: Vec<Message>,
    },
}

/// Where to connect.
#[derive(Clone, Debug)]
enum Target {
    Unix(String),
    Tcp(String),
}

fn parse_target(s: &str) -> Result<Target, ConnError> {
    if let Some(p) = s.strip_prefix("unix:") {
        Ok(Target::Unix(p.to_owned()))
    } else if let Some(a) = s.strip_prefix("tcp:") {
        Ok(Target::Tcp(a.to_owned()))
    } else if s.starts_with('/') || s.starts_with('.') {
        Ok(Target::Unix(s.to_owned()))
    } else {
        Err(ConnError::BadTarget(s.to_owned()))
    }
}

/// Options of the tokio connection.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    pub session: Config,
    /// Reconnect (with backoff) when the connection drops.
    pub reconnect: bool,
    /// Capacity of the command and asynchronous-message channels.
    pub channel_capacity: usize,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            session: Config::default(),
            reconnect: true,
            channel_capacity: 1024,
        }
    }
}

/// Cloneable requester side of a connection.
#[derive(Clone)]
pub struct Handle {
    tx: mpsc::Sender<Command>,
    /// `Some(n)` while the n-th session (1-based) is up, `None` while disconnected.
    connected: watch::Receiver<Option<u64>>,
    next_bundle: Arc<AtomicU32>,
}

/// The task that owns the socket; spawn [`Connection::run`].
pub struct Connection {
    target: Target,
    cfg: ClientConfig,
    rx: mpsc::Receiver<Command>,
    async_tx: mpsc::Sender<OfpMessage>,
    connected: watch::Sender<Option<u64>>,
    sessions: u64,
}

/// Build a connection to `target` (`unix:PATH` or `tcp:HOST:PORT`); nothing happens until
/// the returned [`Connection`] runs.
pub fn connect(
    target: &str,
    cfg: ClientConfig,
) -> Result<(Connection, Handle, mpsc::Receiver<OfpMessage>), ConnError> {
    let target = parse_target(target)?;
    let (tx, rx) = mpsc::channel(cfg.channel_capacity);
    let (async_tx, async_rx) = mpsc::channel(cfg.channel_capacity);
    let (connected_tx, connected_rx) = watch::channel(None);
    Ok((
        Connection {
            target,
            cfg,
            rx,
            async_tx,
            connected: connected_tx,
            sessions: 0,
        },
        Handle {
            tx,
            connected: connected_rx,
            next_bundle: Arc::new(AtomicU32::new(1)),
        },
        async_rx,
    ))
}

impl Handle {
    async fn cmd(&self, c: Command) -> Result<(), ConnError> {
        self.tx.send(c).await.map_err(|_| ConnError::Closed)
    }

    /// Wait until the OF1.5 handshake is done.
    pub async fn wait_connected(&self) -> Result<(), ConnError> {
        let mut rx = self.connected.clone();
        rx.wait_for(Option::is_some)
            .await
            .map_err(|_| ConnError::Closed)?;
        Ok(())
    }

    /// Connection state: `Some(n)` while the n-th session is up. A change of `n` means the
    /// switch was reconnected and may have lost state (resynchronize flows then).
    pub fn state(&self) -> watch::Receiver<Option<u64>> {
        self.connected.clone()
    }

    /// Send messages without waiting for anything (errors surface at the next barrier).
    pub async fn send(&self, bodies: Vec<Message>) -> Result<(), ConnError> {
        self.cmd(Command::Send(bodies)).await
    }

    /// Send a request and wait for its reply (all parts of a multipart reply). Only
    /// messages that have a reply are accepted (others would wait forever).
    pub async fn request(&self, body: Message) -> Result<Vec<OfpMessage>, ConnError> {
        if !has_reply(&body) {
            return Err(ConnError::NoReply(body.kind()));
        }
        let (tx, rx) = oneshot::channel();
        self.cmd(Command::Request(body, tx)).await?;
        rx.await.map_err(|_| ConnError::Closed)?
    }

    /// Send a barrier; resolves with the errors of the messages sent before it.
    pub async fn barrier(&self) -> Result<Vec<(u32, ErrorMsg)>, ConnError> {
        let (tx, rx) = oneshot::channel();
        self.cmd(Command::Barrier(tx)).await?;
        rx.await.map_err(|_| ConnError::Closed)?
    }

    /// Open a bundle with `flags` (`OFPBF_ATOMIC | OFPBF_ORDERED`), add `bodies`, commit.
    /// On failure, returns the errors of the rejected messages.
    pub async fn bundle(&self, bodies: Vec<Message>, flags: u16) -> Result<(), ConnError> {
        let bundle_id = self.next_bundle.fetch_add(1, Ordering::Relaxed);
        let ctrl = |ctrl_type| {
            Message::BundleControl(BundleControl {
                bundle_id,
                ctrl_type,
                flags,
                properties: Vec::new(),
            })
        };
        expect_bundle_reply(
            self.request(ctrl(OFPBCT_OPEN_REQUEST)).await?,
            OFPBCT_OPEN_REPLY,
        )?;
        for chunk in bodies.chunks(1024) {
            self.cmd(Command::BundleAdd {
                bundle_id,
                flags,
                bodies: chunk.to_vec(),
            })
            .await?;
        }
        // Errors of the added messages come when they are added or at commit; the barrier
        // sent right behind the commit collects them.
        let (commit_tx, commit_rx) = oneshot::channel();
        let (barrier_tx, barrier_rx) = oneshot::channel();
        self.cmd(Command::Request(ctrl(OFPBCT_COMMIT_REQUEST), commit_tx))
            .await?;
        self.cmd(Command::Barrier(barrier_tx)).await?;
        let commit = commit_rx.await.map_err(|_| ConnError::Closed)?;
        let mut errors = barrier_rx.await.map_err(|_| ConnError::Closed)??;
        match commit {
            Ok(msgs) if errors.is_empty() => expect_bundle_reply(msgs, OFPBCT_COMMIT_REPLY),
            Ok(_) => Err(ConnError::BundleFailed(errors)),
            Err(ConnError::Peer(e)) => {
                errors.push((0, e));
                Err(ConnError::BundleFailed(errors))
            }
            Err(e) => Err(e),
        }
    }
}

fn has_reply(body: &Message) -> bool {
    matches!(
        body,
        Message::EchoRequest(_)
            | Message::FeaturesRequest(_)
            | Message::GetConfigRequest(_)
            | Message::MultipartRequest(_)
            | Message::RoleRequest(_)
            | Message::BundleControl(_)
            | Message::TlvTableRequest(_)
    )
}

/// Log the 1st, 2nd, 4th, 8th... occurrence only: bad input must not flood the log.
fn rate_limited(counter: &mut u64) -> bool {
    *counter += 1;
    counter.is_power_of_two()
}

fn expect_bundle_reply(msgs: Vec<OfpMessage>, want: u16) -> Result<(), ConnError> {
    match msgs.into_iter().next().map(|m| m.body) {
        Some(Message::BundleControl(b)) if b.ctrl_type == want => Ok(()),
        Some(Message::Error(e)) => Err(ConnError::Peer(e)),
        _ => Err(ConnError::Unexpected),
    }
}

fn now() -> std::time::Instant {
    tokio::time::Instant::now().into_std()
}

impl Connection {
    /// Run until every [`Handle`] is dropped (or, without reconnect, until the connection
    /// fails).
    pub async fn run(mut self) -> Result<(), ConnError> {
        let mut backoff = Duration::from_millis(250);
        loop {
            let res = match self.target.clone() {
                Target::Unix(p) => match tokio::net::UnixStream::connect(&p).await {
                    Ok(s) => self.drive(s).await,
                    Err(e) => Err(e.into()),
                },
                Target::Tcp(a) => match tokio::net::TcpStream::connect(&a).await {
                    Ok(s) => {
                        let _ = s.set_nodelay(true);
                        self.drive(s).await
                    }
                    Err(e) => Err(e.into()),
                },
            };
            let _ = self.connected.send(None);
            match res {
                Ok(()) => return Ok(()),
                Err(e) if !self.cfg.reconnect => return Err(e),
                Err(e) => {
                    tracing::warn!("openflow connection: {e}; reconnecting in {backoff:?}");
                }
            }
            if self.rx.is_closed() {
                return Ok(());
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(8));
        }
    }

    async fn drive<S: AsyncRead + AsyncWrite + Unpin>(
        &mut self,
        stream: S,
    ) -> Result<(), ConnError> {
        let (mut rd, mut wr) = tokio::io::split(stream);
        let mut session = Session::new(now(), self.cfg.session.clone());
        let mut rbuf = BytesMut::with_capacity(1 << 16);
        let mut wbuf = BytesMut::with_capacity(1 << 16);
        let mut replies: HashMap<u32, ReplyTx> = HashMap::new();
        let mut barriers: HashMap<u32, BarrierTx> = HashMap::new();
        let mut dropped = 0u64;
        let mut undecodable = 0u64;
        let result = loop {
            while let Some(m) = session.poll_transmit() {
                m.encode(&mut wbuf);
                if wbuf.len() >= 1 << 20 {
                    wr.write_all(&wbuf).await?;
                    wbuf.clear();
                }
            }
            if !wbuf.is_empty() {
                wr.write_all(&wbuf).await?;
                wbuf.clear();
            }
            let mut failed = None;
            while let Some(ev) = session.poll_event() {
                match ev {
                    Event::Connected => {
                        self.sessions += 1;
                        let _ = self.connected.send(Some(self.sessions));
                    }
                    Event::Reply { xid, msgs } => {
                        if let Some(tx) = replies.remove(&xid) {
                            let r = match msgs.first().map(|m| &m.body) {
                                Some(Message::Error(e)) => Err(ConnError::Peer(e.clone())),
                                _ => Ok(msgs),
                            };
                            let _ = tx.send(r);
                        }
                    }
                    Event::Barrier { xid, errors } => {
                        if let Some(tx) = barriers.remove(&xid) {
                            let _ = tx.send(Ok(errors));
                        }
                    }
                    Event::Async(m) => {
                        if self.async_tx.try_send(m).is_err() && rate_limited(&mut dropped) {
                            tracing::warn!(
                                "openflow: {dropped} asynchronous messages dropped (queue full)"
                            );
                        }
                    }
                    Event::Failed(e) => failed = Some(e),
                }
            }
            if let Some(e) = failed {
                break Err(ConnError::Session(e));
            }
            // A failed session has no timer; any far deadline will do.
            let deadline = session
                .poll_timeout()
                .unwrap_or_else(|| now() + Duration::from_hours(1));
            let sleep = tokio::time::sleep_until(deadline.into());
            tokio::select! {
                n = rd.read_buf(&mut rbuf) => {
                    match n {
                        Ok(0) => break Err(ConnError::Closed),
                        Ok(_) => {}
                        Err(e) => break Err(e.into()),
                    }
                    if let Err(e) = feed(&mut session, &mut rbuf, &mut undecodable) {
                        break Err(e);
                    }
                }
                cmd = self.rx.recv(), if session.is_connected() => {
                    let Some(cmd) = cmd else { break Ok(()) };
                    match cmd {
                        Command::Send(bodies) => {
                            for b in bodies {
                                session.send(b, false);
                            }
                        }
                        Command::Request(body, tx) => {
                            let xid = session.send(body, true);
                            replies.insert(xid, tx);
                        }
                        Command::Barrier(tx) => {
                            let xid = session.barrier();
                            barriers.insert(xid, tx);
                        }
                        Command::BundleAdd { bundle_id, flags, bodies } => {
                            for b in bodies {
                                // The embedded message must carry the add's xid.
                                let xid = session.reserve_xid();
                                let inner = OfpMessage::new(xid, b).to_bytes();
                                session.send_with_xid(xid, Message::BundleAddMessage(BundleAddMessage {
                                    bundle_id, flags, message: inner, properties: Vec::new(),
                                }), false);
                            }
                        }
                    }
                }
                () = sleep => session.handle_timeout(now()),
            }
        };
        for (_, tx) in replies.drain() {
            let _ = tx.send(Err(ConnError::Closed));
        }
        for (_, tx) in barriers.drain() {
            let _ = tx.send(Err(ConnError::Closed));
        }
        result
    }
}

/// Split complete frames off `buf` and hand them to the session. A malformed message is
/// logged and skipped; a frame length below the header size ends the connection.
fn feed(session: &mut Session, buf: &mut BytesMut, bad: &mut u64) -> Result<(), ConnError> {
    while let Some(len) = frame_len(buf) {
        if len < HEADER_LEN {
            return Err(ConnError::Decode(DecodeError::BadLength {
                what: "ofp_header length",
                len,
            }));
        }
        if buf.len() < len {
            break;
        }
        let frame = buf.split_to(len);
        match OfpMessage::decode(&frame) {
            Ok(m) => session.handle_message(now(), m),
            Err(e) => {
                if rate_limited(bad) {
                    tracing::warn!("openflow: skipping undecodable message ({bad} so far): {e}");
                }
            }
        }
    }
    Ok(())
}
