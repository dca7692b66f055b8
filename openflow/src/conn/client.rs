//! The thin tokio shell around [`Session`]: unix/tcp transport, framing, reconnect.
//!
//! `connect()` returns a [`Connection`] to spawn, a cloneable [`Handle`] for requests, and
//! a bounded receiver of asynchronous messages (packet-in2, port status, errors).
//!
//! Every command names the session it is made for: a [`SessionId`], the 1-based number of
//! the connection (counting those that completed the OpenFlow 1.5 handshake). A command for
//! a session that is not the current one, because the switch reconnected since or is
//! disconnected now, fails with [`ConnError::StaleSession`] and is never sent: flow deltas
//! computed against one connection must not reach the next, whose switch may have lost or
//! changed its tables. Learn the current session from [`Handle::wait_connected`],
//! [`Handle::session`] or [`Handle::state`]; on a change, resynchronize, then send with the
//! new id. Commands in flight when their session ends fail with [`ConnError::SessionEnded`].
//!
//! Messages are encoded by the caller (on its task) before they reach the connection task;
//! an over-long message fails there with [`ConnError::Encode`] and nothing is sent.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use thiserror::Error;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch};

use super::session::{Config, Event, Session, SessionError};
use crate::wire::bundle::{
    OFPBCT_COMMIT_REPLY, OFPBCT_COMMIT_REQUEST, OFPBCT_DISCARD_REQUEST, OFPBCT_OPEN_REPLY,
    OFPBCT_OPEN_REQUEST,
};
use crate::wire::{
    frame_len, BundleBuilder, BundleControl, DecodeError, EncodeError, ErrorMsg, Message,
    MessageKind, OfpMessage, HEADER_LEN,
};

/// Which connection to the switch a command is for: the n-th (1-based) connection that
/// completed the handshake.
#[derive(Clone, Copy, Debug, Eq, PartialEq, Hash, Ord, PartialOrd)]
pub struct SessionId(u64);

impl SessionId {
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

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
    /// A message could not be encoded (too long, or not allowed in a bundle); nothing of the
    /// command was sent.
    #[error("encode: {0}")]
    Encode(#[from] EncodeError),
    #[error("switch returned an error: {0}")]
    Peer(ErrorMsg),
    /// The switch refused a bundle; nothing of it was applied. `rejected` holds the errors
    /// of its messages by index (the index [`BundleBuilder`] returned for each push, or the
    /// position in the list given to [`Handle::bundle`]); `commit` the error of the commit.
    #[error("bundle failed: {}", fmt_bundle_errors(rejected, commit.as_ref()))]
    BundleFailed {
        rejected: Vec<(usize, ErrorMsg)>,
        commit: Option<ErrorMsg>,
    },
    /// The command was made for a session that is not the current one (the switch
    /// reconnected, or is disconnected); nothing was sent. Resynchronize from the current
    /// state and send again with the current session.
    #[error("command for OpenFlow session {made_for} not sent: {}", match current {
        Some(c) => format!("the switch connection is now session {c}"),
        None => "the switch is disconnected".to_owned(),
    })]
    StaleSession {
        made_for: SessionId,
        current: Option<SessionId>,
    },
    /// The session ended while the command was in flight; it may or may not have been
    /// applied by the switch.
    #[error("OpenFlow session {0} ended before the command completed")]
    SessionEnded(SessionId),
    #[error("unexpected reply")]
    Unexpected,
    #[error("connection closed")]
    Closed,
    #[error("{0} has no reply: send it, then use a barrier")]
    NoReply(MessageKind),
    #[error("bad target `{0}` (want unix:PATH or tcp:HOST:PORT)")]
    BadTarget(String),
    /// The parts of a streamed bundle stopped before the one marked last; the bundle was
    /// discarded, not committed.
    #[error("bundle parts ended before the last one")]
    BundleIncomplete,
}

/// One part of a bundle sent as it is encoded ([`Handle::commit_bundle_parts`]): the
/// messages in it go out at once; the part marked `last` ends the bundle, which is then
/// committed.
#[derive(Debug)]
pub struct BundlePart {
    /// Messages sent outside the bundle just before the part's adds: what OpenFlow does
    /// not allow in a bundle (meter mods) but its flows need. Their errors are logged.
    pub before: Vec<Message>,
    pub bundle: BundleBuilder,
    pub last: bool,
}

fn fmt_bundle_errors(rejected: &[(usize, ErrorMsg)], commit: Option<&ErrorMsg>) -> String {
    let mut v: Vec<String> = rejected
        .iter()
        .map(|(i, e)| format!("message {i}: {e}"))
        .collect();
    if let Some(e) = commit {
        v.push(format!("commit: {e}"));
    }
    v.join("; ")
}

impl From<std::io::Error> for ConnError {
    fn from(e: std::io::Error) -> Self {
        ConnError::Io(e.to_string())
    }
}

type Reply<T> = oneshot::Sender<Result<T, ConnError>>;

/// What a command asks of the session.
enum Op {
    /// Encoded messages without replies (xids zero); the ack carries the xids they got.
    Send {
        frames: BytesMut,
        ack: Reply<Vec<u32>>,
    },
    /// One encoded request; the reply is all parts of its answer.
    Request {
        frame: BytesMut,
        reply: Reply<Vec<OfpMessage>>,
    },
    /// A barrier; the reply is the errors of the tracked messages sent before it.
    Barrier { reply: Reply<Vec<(u32, ErrorMsg)>> },
    /// Report errors of these sent messages with the next barrier again.
    TrackErrors { xids: Vec<u32> },
}

impl Op {
    fn fail(self, e: ConnError) {
        match self {
            Op::Send { ack, .. } => {
                let _ = ack.send(Err(e));
            }
            Op::Request { reply, .. } => {
                let _ = reply.send(Err(e));
            }
            Op::Barrier { reply } => {
                let _ = reply.send(Err(e));
            }
            Op::TrackErrors { .. } => {}
        }
    }
}

struct Command {
    session: SessionId,
    op: Op,
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
    /// `Some(id)` while session `id` is up, `None` while disconnected.
    connected: watch::Receiver<Option<SessionId>>,
    next_bundle: Arc<AtomicU32>,
}

/// The task that owns the socket; spawn [`Connection::run`].
pub struct Connection {
    target: Target,
    cfg: ClientConfig,
    rx: mpsc::Receiver<Command>,
    async_tx: mpsc::Sender<OfpMessage>,
    connected: watch::Sender<Option<SessionId>>,
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
    async fn submit(&self, session: SessionId, op: Op) -> Result<(), ConnError> {
        self.tx
            .send(Command { session, op })
            .await
            .map_err(|_| ConnError::Closed)
    }

    /// Wait until a session is up (the OF1.5 handshake is done); returns its id.
    pub async fn wait_connected(&self) -> Result<SessionId, ConnError> {
        let mut rx = self.connected.clone();
        let id = *rx
            .wait_for(Option::is_some)
            .await
            .map_err(|_| ConnError::Closed)?;
        id.ok_or(ConnError::Closed)
    }

    /// The session up right now, if any.
    pub fn session(&self) -> Option<SessionId> {
        *self.connected.borrow()
    }

    /// Connection state: `Some(id)` while session `id` is up. A new id means the switch was
    /// reconnected and may have lost state: resynchronize, then send with the new id.
    pub fn state(&self) -> watch::Receiver<Option<SessionId>> {
        self.connected.clone()
    }

    /// Send messages on `session` without waiting for the switch; returns their xids, by
    /// which the errors of a later [`Handle::barrier`] name them. All are encoded first: if
    /// one does not encode, none is sent.
    pub async fn send(
        &self,
        session: SessionId,
        bodies: &[Message],
    ) -> Result<Vec<u32>, ConnError> {
        let mut frames = BytesMut::new();
        for b in bodies {
            b.encode(0, &mut frames)?;
        }
        self.send_frames(session, frames).await
    }

    async fn send_frames(
        &self,
        session: SessionId,
        frames: BytesMut,
    ) -> Result<Vec<u32>, ConnError> {
        let (ack, rx) = oneshot::channel();
        self.submit(session, Op::Send { frames, ack }).await?;
        rx.await.map_err(|_| ConnError::Closed)?
    }

    /// Send a request on `session` and wait for its reply (all parts of a multipart reply).
    /// Only messages that have a reply are accepted (others would wait forever).
    pub async fn request(
        &self,
        session: SessionId,
        body: &Message,
    ) -> Result<Vec<OfpMessage>, ConnError> {
        let rx = self.start_request(session, body).await?;
        rx.await.map_err(|_| ConnError::Closed)?
    }

    async fn start_request(
        &self,
        session: SessionId,
        body: &Message,
    ) -> Result<oneshot::Receiver<Result<Vec<OfpMessage>, ConnError>>, ConnError> {
        if !has_reply(body) {
            return Err(ConnError::NoReply(body.kind()));
        }
        let mut frame = BytesMut::new();
        body.encode(0, &mut frame)?;
        let (reply, rx) = oneshot::channel();
        self.submit(session, Op::Request { frame, reply }).await?;
        Ok(rx)
    }

    /// Send a barrier on `session`; resolves with the errors of the messages sent before it
    /// (by xid).
    pub async fn barrier(&self, session: SessionId) -> Result<Vec<(u32, ErrorMsg)>, ConnError> {
        let rx = self.start_barrier(session).await?;
        rx.await.map_err(|_| ConnError::Closed)?
    }

    async fn start_barrier(
        &self,
        session: SessionId,
    ) -> Result<oneshot::Receiver<Result<Vec<(u32, ErrorMsg)>, ConnError>>, ConnError> {
        let (reply, rx) = oneshot::channel();
        self.submit(session, Op::Barrier { reply }).await?;
        Ok(rx)
    }

    /// Install `bodies` in one bundle with `flags` (`OFPBF_ATOMIC | OFPBF_ORDERED`): a thin
    /// wrapper over [`BundleBuilder`] and [`Handle::commit_bundle`]; errors name the
    /// position in `bodies`. Meter mods are refused (Open vSwitch does not take them in
    /// bundles) before anything is sent.
    pub async fn bundle(
        &self,
        session: SessionId,
        bodies: &[Message],
        flags: u16,
    ) -> Result<(), ConnError> {
        let mut b = BundleBuilder::new(flags);
        for m in bodies {
            b.push_message(m)?;
        }
        self.commit_bundle(session, b).await
    }

    /// Open a bundle on `session`, add the builder's messages, and commit them once the
    /// switch has accepted every add (a barrier in between), then wait for a barrier behind
    /// the commit. A refusal is [`ConnError::BundleFailed`] with the errors attributed to
    /// the indexes the builder returned; after any failure past the open request, the
    /// bundle is discarded (`OFPBCT_DISCARD_REQUEST`), unless the session itself ended,
    /// which discards it too.
    pub async fn commit_bundle(
        &self,
        session: SessionId,
        bundle: BundleBuilder,
    ) -> Result<(), ConnError> {
        self.commit_bundle_parts(session, bundle, None).await
    }

    /// [`Handle::commit_bundle`] for a bundle too large to hold encoded at once: `first`
    /// goes out, then each part from `rest` as it arrives, and the bundle is committed after
    /// the part marked last. If `rest` closes before that, the bundle is discarded
    /// ([`ConnError::BundleIncomplete`]): a partial table is never committed. Refused
    /// messages are named by their index across all parts.
    pub async fn commit_bundle_parts(
        &self,
        session: SessionId,
        first: BundleBuilder,
        rest: Option<mpsc::Receiver<BundlePart>>,
    ) -> Result<(), ConnError> {
        let bundle_id = self.next_bundle.fetch_add(1, Ordering::Relaxed);
        let flags = first.flags();
        let ctrl = |ctrl_type| {
            Message::BundleControl(BundleControl {
                bundle_id,
                ctrl_type,
                flags,
                properties: Vec::new(),
            })
        };
        // The adds follow the open without waiting for its reply (the switch takes them in
        // order): one round trip less per put.
        let open = self
            .start_request(session, &ctrl(OFPBCT_OPEN_REQUEST))
            .await?;
        let result = self
            .add_and_commit(session, first, rest, bundle_id, &ctrl, open)
            .await;
        if let Err(e) = &result {
            let gone = matches!(
                e,
                ConnError::StaleSession { .. } | ConnError::SessionEnded(_) | ConnError::Closed
            );
            if !gone {
                // The switch may have dropped the bundle already (it does after a failed
                // commit): an error reply to the discard is expected then.
                if let Err(d) = self.request(session, &ctrl(OFPBCT_DISCARD_REQUEST)).await {
                    tracing::debug!("openflow: discard of bundle {bundle_id}: {d}");
                }
            }
        }
        result
    }

    async fn add_and_commit(
        &self,
        session: SessionId,
        first: BundleBuilder,
        rest: Option<mpsc::Receiver<BundlePart>>,
        bundle_id: u32,
        ctrl: &impl Fn(u16) -> Message,
        open: oneshot::Receiver<Result<Vec<OfpMessage>, ConnError>>,
    ) -> Result<(), ConnError> {
        let (frames, _) = first.into_frames(bundle_id);
        let mut xids = self.send_frames(session, frames).await?;
        if let Some(mut rest) = rest {
            loop {
                let part = rest.recv().await.ok_or(ConnError::BundleIncomplete)?;
                if !part.before.is_empty() {
                    self.send(session, &part.before).await?;
                }
                if !part.bundle.is_empty() {
                    let (frames, _) = part.bundle.into_frames(bundle_id);
                    xids.extend(self.send_frames(session, frames).await?);
                }
                if part.last {
                    break;
                }
            }
        }
        let errors = self.barrier(session).await?;
        // The open's reply (or error) came before the barrier's.
        expect_bundle_reply(
            open.await.map_err(|_| ConnError::Closed)??,
            OFPBCT_OPEN_REPLY,
        )?;
        let rejected = attribute(&xids, errors);
        if !rejected.is_empty() {
            return Err(ConnError::BundleFailed {
                rejected,
                commit: None,
            });
        }
        // A message can also fail when the bundle is applied: the switch then reports it
        // under the add's xid, before the commit's own error.
        self.submit(session, Op::TrackErrors { xids: xids.clone() })
            .await?;
        let commit = self
            .start_request(session, &ctrl(OFPBCT_COMMIT_REQUEST))
            .await?;
        let barrier = self.start_barrier(session).await?;
        let commit = commit.await.map_err(|_| ConnError::Closed)?;
        let rejected = attribute(&xids, barrier.await.map_err(|_| ConnError::Closed)??);
        match commit {
            Ok(msgs) if rejected.is_empty() => expect_bundle_reply(msgs, OFPBCT_COMMIT_REPLY),
            Ok(_) => Err(ConnError::BundleFailed {
                rejected,
                commit: None,
            }),
            Err(ConnError::Peer(e)) => Err(ConnError::BundleFailed {
                rejected,
                commit: Some(e),
            }),
            Err(e) => Err(e),
        }
    }
}

/// Errors of a barrier that belong to the messages with `xids`, by index in `xids`. Errors of
/// other messages (sent by other users of the connection) are logged, not lost silently.
fn attribute(xids: &[u32], errors: Vec<(u32, ErrorMsg)>) -> Vec<(usize, ErrorMsg)> {
    if errors.is_empty() {
        return Vec::new();
    }
    let index: HashMap<u32, usize> = xids.iter().enumerate().map(|(i, x)| (*x, i)).collect();
    let mut out = Vec::new();
    for (xid, e) in errors {
        match index.get(&xid) {
            Some(i) => out.push((*i, e)),
            None => {
                tracing::warn!("openflow: error for message xid {xid:#x} outside the bundle: {e}");
            }
        }
    }
    out.sort_by_key(|(i, _)| *i);
    out
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

/// The first wait before reconnecting, doubled per failed attempt up to [`MAX_BACKOFF`]
/// (OVS's rconn starts at one second; a switch restarting is found again sooner).
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// Logs why the connection is down in OVS rconn's words (operators and OVN's tests look
/// for them): a failed connect, the peer closing, or an error on the session.
fn log_disconnect(name: &str, e: &ConnError, connecting: bool) {
    match e {
        ConnError::Io(io) if connecting => {
            tracing::info!("{name}: connection failed ({})", strerror_words(io));
        }
        ConnError::Closed => tracing::info!("{name}: connection closed by peer"),
        ConnError::Io(io) => {
            tracing::warn!("{name}: connection dropped ({})", strerror_words(io));
        }
        other => tracing::warn!("{name}: connection dropped ({other})"),
    }
}

/// An I/O error's text as `strerror` words ("No such file or directory", without Rust's
/// "(os error 2)").
fn strerror_words(io: &str) -> &str {
    io.split(" (os error ").next().unwrap_or(io)
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Unix(p) => write!(f, "unix:{p}"),
            Target::Tcp(a) => write!(f, "tcp:{a}"),
        }
    }
}

fn now() -> std::time::Instant {
    tokio::time::Instant::now().into_std()
}

/// Stop taking commands while this much encoded output waits for the socket.
const MAX_PENDING_OUTPUT: usize = 4 << 20;

impl Connection {
    /// Run until every [`Handle`] is dropped (or, without reconnect, until the connection
    /// fails). While no session is up, every command fails at once as stale.
    pub async fn run(mut self) -> Result<(), ConnError> {
        let name = self.target.to_string();
        let mut backoff = FIRST_BACKOFF;
        // As OVS's rconn: once the backoff is at its longest, attempts are no longer logged.
        let mut quiet = false;
        loop {
            let sessions_before = self.sessions;
            let (res, connecting) = match self.target.clone() {
                Target::Unix(p) => {
                    match self.refuse_while(tokio::net::UnixStream::connect(p)).await {
                        None => return Ok(()),
                        Some(Ok(s)) => (self.drive(s).await, false),
                        Some(Err(e)) => (Err(e.into()), true),
                    }
                }
                Target::Tcp(a) => {
                    match self.refuse_while(tokio::net::TcpStream::connect(a)).await {
                        None => return Ok(()),
                        Some(Ok(s)) => {
                            let _ = s.set_nodelay(true);
                            (self.drive(s).await, false)
                        }
                        Some(Err(e)) => (Err(e.into()), true),
                    }
                }
            };
            let _ = self.connected.send(None);
            let e = match res {
                Ok(()) => return Ok(()),
                Err(e) if !self.cfg.reconnect => return Err(e),
                Err(e) => e,
            };
            if self.sessions != sessions_before {
                // A session was up: the next attempts start over.
                backoff = FIRST_BACKOFF;
                quiet = false;
            }
            if !quiet {
                log_disconnect(&name, &e, connecting);
                if backoff >= MAX_BACKOFF {
                    tracing::info!("{name}: continuing to retry connections in the background but suppressing further logging");
                    quiet = true;
                } else if backoff >= Duration::from_secs(1) {
                    tracing::info!(
                        "{name}: waiting {} seconds before reconnect",
                        backoff.as_secs()
                    );
                }
            }
            if self
                .refuse_while(tokio::time::sleep(backoff))
                .await
                .is_none()
            {
                return Ok(());
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    /// Run `fut` while failing every command as stale (no session is up). `None` when every
    /// handle is gone.
    async fn refuse_while<F: Future>(&mut self, fut: F) -> Option<F::Output> {
        tokio::pin!(fut);
        loop {
            tokio::select! {
                out = &mut fut => return Some(out),
                cmd = self.rx.recv() => match cmd {
                    Some(cmd) => cmd.op.fail(ConnError::StaleSession {
                        made_for: cmd.session,
                        current: None,
                    }),
                    None => return None,
                },
            }
        }
    }

    async fn drive<S: AsyncRead + AsyncWrite + Unpin>(
        &mut self,
        stream: S,
    ) -> Result<(), ConnError> {
        let (mut rd, mut wr) = tokio::io::split(stream);
        let mut session = Session::new(now(), self.cfg.session.clone());
        let mut current: Option<SessionId> = None;
        let mut rbuf = BytesMut::with_capacity(1 << 16);
        let mut out: VecDeque<Bytes> = VecDeque::new();
        let mut out_len = 0usize;
        let mut replies: HashMap<u32, Reply<Vec<OfpMessage>>> = HashMap::new();
        let mut barriers: HashMap<u32, Reply<Vec<(u32, ErrorMsg)>>> = HashMap::new();
        let mut dropped = 0u64;
        let mut undecodable = 0u64;
        let result = loop {
            while let Some(b) = session.poll_transmit() {
                out_len += b.len();
                out.push_back(b);
            }
            let mut failed = None;
            while let Some(ev) = session.poll_event() {
                match ev {
                    Event::Connected => {
                        self.sessions += 1;
                        current = Some(SessionId(self.sessions));
                        let _ = self.connected.send(current);
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
            let pending: &[u8] = out.front().map_or(&[], |b| &b[..]);
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
                w = wr.write(pending), if !pending.is_empty() => match w {
                    Ok(0) => break Err(ConnError::Closed),
                    Ok(n) => {
                        out_len -= n;
                        if let Some(front) = out.front_mut() {
                            front.advance(n);
                            if front.is_empty() {
                                out.pop_front();
                            }
                        }
                    }
                    Err(e) => break Err(e.into()),
                },
                cmd = self.rx.recv(), if out_len < MAX_PENDING_OUTPUT => {
                    let Some(Command { session: made_for, op }) = cmd else { break Ok(()) };
                    if Some(made_for) != current {
                        op.fail(ConnError::StaleSession { made_for, current });
                        continue;
                    }
                    match op {
                        Op::Send { frames, ack } => {
                            let _ = ack.send(session.send_encoded(frames, false).map_err(Into::into));
                        }
                        Op::Request { frame, reply } => match session.send_encoded(frame, true) {
                            Ok(xids) => {
                                if let Some(xid) = xids.first() {
                                    replies.insert(*xid, reply);
                                }
                            }
                            Err(e) => {
                                let _ = reply.send(Err(e.into()));
                            }
                        },
                        Op::Barrier { reply } => {
                            barriers.insert(session.barrier(), reply);
                        }
                        Op::TrackErrors { xids } => session.track_errors(xids),
                    }
                }
                () = sleep => session.handle_timeout(now()),
            }
        };
        if result.is_ok() {
            // Every handle is gone: what they sent still goes out (unless the switch stops
            // reading for good).
            while let Some(b) = session.poll_transmit() {
                out.push_back(b);
            }
            let flush = async {
                for b in out {
                    wr.write_all(&b).await?;
                }
                Ok::<(), std::io::Error>(())
            };
            match tokio::time::timeout(Duration::from_secs(10), flush).await {
                Ok(r) => r?,
                Err(_) => {
                    tracing::warn!("openflow: output not flushed at close (switch not reading)");
                }
            }
        }
        let ended = || current.map_or(ConnError::Closed, ConnError::SessionEnded);
        for (_, tx) in replies.drain() {
            let _ = tx.send(Err(ended()));
        }
        for (_, tx) in barriers.drain() {
            let _ = tx.send(Err(ended()));
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
