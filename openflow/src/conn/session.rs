//! Sans-IO OpenFlow session: hello/version negotiation (OF1.5 required), echo replies,
//! inactivity probe, xid correlation (incl. multipart), barrier tracking.
//!
//! Inputs: [`Session::handle_message`], [`Session::handle_timeout`], [`Session::send`],
//! [`Session::send_encoded`].
//! Outputs: [`Session::poll_transmit`] (encoded bytes, in order), [`Session::poll_event`],
//! [`Session::poll_timeout`]. Time is a parameter, so tests drive it virtually.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use thiserror::Error;

use crate::wire::bundle::BUNDLE_ADD_HEADER_LEN;
use crate::wire::multipart::OFPMPF_MORE;
use crate::wire::{
    frame_len, Echo, Empty, EncodeError, ErrorCode, ErrorMsg, Hello, Message, OfpMessage,
    HEADER_LEN, NX_VENDOR_ID, OFP15_VERSION,
};

/// Why a session ended or a request failed.
#[derive(Clone, Debug, Eq, PartialEq, Error)]
#[non_exhaustive]
pub enum SessionError {
    #[error("peer does not speak OpenFlow 1.5 (its hello: version {0:#x})")]
    VersionMismatch(u8),
    #[error("no message from the peer for {0:?}")]
    Timeout(Duration),
    #[error("peer sent an error before the handshake completed: {0}")]
    HandshakeError(ErrorCode),
}

#[derive(Clone, Copy, Debug, Eq, PartialEq)]
enum State {
    AwaitHello,
    Connected,
    Failed,
}

/// What the session reports.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// Hello exchanged, OF1.5 agreed.
    Connected,
    /// The reply (all parts, for multipart) to a request sent with `expect_reply`, or the
    /// error the peer returned for it.
    Reply { xid: u32, msgs: Vec<OfpMessage> },
    /// A barrier completed; `errors` are the peer errors for messages sent before it
    /// (and after the previous barrier) that did not expect a reply.
    Barrier {
        xid: u32,
        errors: Vec<(u32, ErrorMsg)>,
    },
    /// Unsolicited messages: packet-in2, port status, errors with unknown xids, ...
    Async(OfpMessage),
    /// The session is dead; the caller should drop the transport (and reconnect).
    Failed(SessionError),
}

/// Tunables of a session.
#[derive(Clone, Debug)]
pub struct Config {
    /// Send an echo request after this long without traffic; fail after twice this.
    /// `Duration::ZERO` disables the probe (as ovn-controller does on unix sockets).
    pub probe_interval: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            probe_interval: Duration::from_secs(5),
        }
    }
}

pub struct Session {
    cfg: Config,
    state: State,
    next_xid: u32,
    last_rx: Instant,
    probe_sent: bool,
    /// Encoded output ready to write, oldest first; `gather` collects small messages after it.
    transmit: VecDeque<Bytes>,
    gather: BytesMut,
    events: VecDeque<Event>,
    /// xid -> parts received so far, for requests that expect a reply.
    pending: HashMap<u32, Vec<OfpMessage>>,
    /// xids of barriers in flight, oldest first.
    barriers: VecDeque<u32>,
    /// Errors of tracked messages, held until the barrier reply that covers them.
    unclaimed_errors: Vec<(u32, ErrorMsg)>,
    /// Table modifications (flow/group/meter/TLV mods, bundle messages) sent without a
    /// reply expected and not yet covered by a barrier reply. Their errors are reported
    /// with the barrier; errors of other fire-and-forget messages (packet-outs, resumes)
    /// are asynchronous, so that traffic keeps no state here.
    tracked: HashSet<u32>,
}

const OFPT_EXPERIMENTER: u8 = 4;
const OFPT_BARRIER_REQUEST: u8 = 20;
const OFPT_BUNDLE_ADD_MESSAGE: u8 = 34;
const NXT_TLV_TABLE_MOD: u32 = 24;

/// Messages whose errors a later barrier reports: flow, group, meter and TLV table mods and
/// bundle messages, told from their encoded header.
fn is_tracked(frame: &[u8]) -> bool {
    match frame.get(1).copied() {
        Some(14 | 15 | 29 | 33 | OFPT_BUNDLE_ADD_MESSAGE) => true,
        Some(OFPT_EXPERIMENTER) => {
            frame.len() >= 16
                && frame[8..12] == NX_VENDOR_ID.to_be_bytes()
                && frame[12..16] == NXT_TLV_TABLE_MOD.to_be_bytes()
        }
        _ => false,
    }
}

/// Was `a` sent before `b` (xids are allocated in increasing, wrapping order)?
fn before(a: u32, b: u32) -> bool {
    b.wrapping_sub(a).wrapping_sub(1) < (1 << 31)
}

impl Session {
    /// A new session; our hello is queued for transmission.
    pub fn new(now: Instant, cfg: Config) -> Self {
        let mut s = Self {
            cfg,
            state: State::AwaitHello,
            next_xid: 1,
            last_rx: now,
            probe_sent: false,
            transmit: VecDeque::new(),
            gather: BytesMut::new(),
            events: VecDeque::new(),
            pending: HashMap::new(),
            barriers: VecDeque::new(),
            unclaimed_errors: Vec::new(),
            tracked: HashSet::new(),
        };
        let xid = s.alloc_xid();
        s.send_internal(xid, &Message::Hello(Hello::with_versions(&[OFP15_VERSION])));
        s
    }

    pub fn is_connected(&self) -> bool {
        self.state == State::Connected
    }

    fn alloc_xid(&mut self) -> u32 {
        let x = self.next_xid;
        self.next_xid = self.next_xid.wrapping_add(1).max(1);
        x
    }

    /// Queue a message; returns its xid. With `expect_reply`, its reply comes back as
    /// [`Event::Reply`]; a barrier request always completes as [`Event::Barrier`]. A message
    /// that cannot be encoded (too long) is an error and nothing is queued.
    pub fn send(&mut self, body: &Message, expect_reply: bool) -> Result<u32, EncodeError> {
        let xid = self.alloc_xid();
        self.send_with_xid(xid, body, expect_reply)?;
        Ok(xid)
    }

    /// Like [`Session::send`] with a caller-chosen xid (e.g. reserved with [`Session::reserve_xid`]).
    pub fn send_with_xid(
        &mut self,
        xid: u32,
        body: &Message,
        expect_reply: bool,
    ) -> Result<(), EncodeError> {
        let start = self.gather.len();
        body.encode(xid, &mut self.gather)?;
        let ty = self.gather[start + 1];
        let tracked = is_tracked(&self.gather[start..]);
        self.register(xid, ty, tracked, expect_reply);
        Ok(())
    }

    /// Queue already encoded messages: `frames` holds complete messages back to back (as
    /// [`Message::encode`] or a [`crate::wire::BundleBuilder`] writes them). Each gets a
    /// fresh xid in its header, and a bundle add also in its embedded message (they must be
    /// equal). Returns the xids in order; errors the peer reports for them come back as for
    /// [`Session::send`]. A buffer that is not a sequence of complete messages is refused
    /// and nothing is queued.
    pub fn send_encoded(
        &mut self,
        mut frames: BytesMut,
        expect_reply: bool,
    ) -> Result<Vec<u32>, EncodeError> {
        let mut at = 0;
        let mut n = 0;
        while at < frames.len() {
            let len = frame_len(&frames[at..])
                .filter(|len| *len >= HEADER_LEN && at + len <= frames.len())
                .ok_or(EncodeError::Inconsistent(
                    "send_encoded: the buffer is not a sequence of complete OpenFlow messages",
                ))?;
            at += len;
            n += 1;
        }
        let mut xids = Vec::with_capacity(n);
        at = 0;
        while let Some(len) = frame_len(&frames[at..]) {
            let xid = self.alloc_xid();
            let frame = &mut frames[at..at + len];
            frame[4..8].copy_from_slice(&xid.to_be_bytes());
            let ty = frame[1];
            if ty == OFPT_BUNDLE_ADD_MESSAGE && len >= BUNDLE_ADD_HEADER_LEN + HEADER_LEN {
                let inner = BUNDLE_ADD_HEADER_LEN + 4;
                frame[inner..inner + 4].copy_from_slice(&xid.to_be_bytes());
            }
            let tracked = is_tracked(frame);
            self.register(xid, ty, tracked, expect_reply);
            xids.push(xid);
            at += len;
        }
        self.flush_gather();
        if !frames.is_empty() {
            self.transmit.push_back(frames.freeze());
        }
        Ok(xids)
    }

    /// Report the peer's errors for these already sent messages with the next barrier
    /// again (e.g. the adds of a bundle, whose errors may also come at commit, after a
    /// barrier that covered the adds).
    pub fn track_errors(&mut self, xids: impl IntoIterator<Item = u32>) {
        self.tracked.extend(xids);
    }

    fn register(&mut self, xid: u32, ty: u8, tracked: bool, expect_reply: bool) {
        if ty == OFPT_BARRIER_REQUEST {
            self.barriers.push_back(xid);
        } else if expect_reply {
            self.pending.insert(xid, Vec::new());
        } else if tracked {
            self.tracked.insert(xid);
        }
    }

    /// Queue a message of the session itself (hello, echo, error, barrier), which always fits
    /// a message: an echo reply is as long as the request it answers.
    fn send_internal(&mut self, xid: u32, body: &Message) {
        if let Err(e) = body.encode(xid, &mut self.gather) {
            tracing::warn!("openflow session: {} not sent: {e}", body.kind());
        }
    }

    fn flush_gather(&mut self) {
        if !self.gather.is_empty() {
            self.transmit.push_back(self.gather.split().freeze());
        }
    }

    /// Take an xid without sending anything.
    pub fn reserve_xid(&mut self) -> u32 {
        self.alloc_xid()
    }

    /// A barrier request; its completion is [`Event::Barrier`].
    pub fn barrier(&mut self) -> u32 {
        let xid = self.alloc_xid();
        self.send_internal(xid, &Message::BarrierRequest(Empty));
        self.barriers.push_back(xid);
        xid
    }

    fn fail(&mut self, e: SessionError) {
        if self.state != State::Failed {
            self.state = State::Failed;
            self.events.push_back(Event::Failed(e));
        }
    }

    pub fn handle_message(&mut self, now: Instant, msg: OfpMessage) {
        if self.state == State::Failed {
            return;
        }
        self.last_rx = now;
        self.probe_sent = false;
        if self.state == State::AwaitHello {
            match &msg.body {
                Message::Hello(h) => {
                    let ok = h
                        .offers(OFP15_VERSION)
                        .unwrap_or(msg.version >= OFP15_VERSION);
                    if ok {
                        self.state = State::Connected;
                        self.events.push_back(Event::Connected);
                    } else {
                        // OFPET_HELLO_FAILED / OFPHFC_INCOMPATIBLE, then give up.
                        let xid = self.alloc_xid();
                        self.send_internal(
                            xid,
                            &Message::Error(ErrorMsg {
                                code: ErrorCode::Standard { ty: 0, code: 0 },
                                data: b"OpenFlow 1.5 required".to_vec(),
                            }),
                        );
                        self.fail(SessionError::VersionMismatch(msg.version));
                    }
                }
                Message::Error(e) => self.fail(SessionError::HandshakeError(e.code)),
                _ => {} // ignore anything before hello
            }
            return;
        }
        let xid = msg.xid;
        match &msg.body {
            Message::EchoRequest(e) => {
                self.send_internal(
                    xid,
                    &Message::EchoReply(Echo {
                        data: e.data.clone(),
                    }),
                );
            }
            Message::BarrierReply(_) => {
                if let Some(pos) = self.barriers.iter().position(|b| *b == xid) {
                    // Replies come in order; earlier barriers are implied.
                    self.barriers.drain(..=pos);
                    self.tracked.retain(|x| !before(*x, xid));
                    let (errors, later): (Vec<_>, Vec<_>) =
                        std::mem::take(&mut self.unclaimed_errors)
                            .into_iter()
                            .partition(|(x, _)| before(*x, xid));
                    self.unclaimed_errors = later;
                    self.events.push_back(Event::Barrier { xid, errors });
                } else {
                    self.events.push_back(Event::Async(msg));
                }
            }
            Message::Error(e) if self.tracked.contains(&xid) => {
                self.unclaimed_errors.push((xid, e.clone()));
            }
            _ if self.pending.contains_key(&xid) => {
                let more =
                    matches!(&msg.body, Message::MultipartReply(m) if m.flags & OFPMPF_MORE != 0);
                if let Some(parts) = self.pending.get_mut(&xid) {
                    parts.push(msg);
                }
                if !more {
                    let msgs = self.pending.remove(&xid).unwrap_or_default();
                    self.events.push_back(Event::Reply { xid, msgs });
                }
            }
            Message::EchoReply(_) => {}
            _ => self.events.push_back(Event::Async(msg)),
        }
    }

    /// When [`Session::handle_timeout`] should next be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.state {
            State::Failed => None,
            _ if self.cfg.probe_interval.is_zero() => None,
            _ if self.probe_sent => Some(self.last_rx + 2 * self.cfg.probe_interval),
            _ => Some(self.last_rx + self.cfg.probe_interval),
        }
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        if self.state == State::Failed || self.cfg.probe_interval.is_zero() {
            return;
        }
        let idle = now.saturating_duration_since(self.last_rx);
        if idle >= 2 * self.cfg.probe_interval {
            self.fail(SessionError::Timeout(idle));
        } else if idle >= self.cfg.probe_interval && !self.probe_sent {
            self.probe_sent = true;
            let xid = self.alloc_xid();
            self.send_internal(xid, &Message::EchoRequest(Echo::default()));
        }
    }

    /// The next bytes to write (one or more complete messages), in order.
    pub fn poll_transmit(&mut self) -> Option<Bytes> {
        self.flush_gather();
        self.transmit.pop_front()
    }

    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::multipart::{MultipartReply, MultipartReplyBody};
    use crate::wire::FlowMod;

    /// Everything the session wants to write, decoded.
    fn sent(s: &mut Session) -> Vec<OfpMessage> {
        let mut out = Vec::new();
        while let Some(chunk) = s.poll_transmit() {
            let mut at = 0;
            while at < chunk.len() {
                let len = frame_len(&chunk[at..]).unwrap();
                out.push(OfpMessage::decode(&chunk[at..at + len]).unwrap());
                at += len;
            }
        }
        out
    }

    fn connected(now: Instant) -> Session {
        let mut s = Session::new(now, Config::default());
        let hello = sent(&mut s).remove(0);
        assert!(matches!(hello.body, Message::Hello(ref h) if h.offers(6) == Some(true)));
        s.handle_message(
            now,
            OfpMessage::new(99, Message::Hello(Hello::with_versions(&[1, 4, 6]))),
        );
        assert_eq!(s.poll_event(), Some(Event::Connected));
        s
    }

    #[test]
    fn refuses_peers_without_of15() {
        let now = Instant::now();
        let mut s = Session::new(now, Config::default());
        sent(&mut s);
        let mut old = OfpMessage::new(1, Message::Hello(Hello::with_versions(&[1, 4])));
        old.version = 4;
        s.handle_message(now, old);
        assert!(matches!(sent(&mut s)[0].body, Message::Error(_)));
        assert_eq!(
            s.poll_event(),
            Some(Event::Failed(SessionError::VersionMismatch(4)))
        );
        assert!(!s.is_connected());
    }

    #[test]
    fn answers_echo_with_same_xid_and_data() {
        let now = Instant::now();
        let mut s = connected(now);
        s.handle_message(
            now,
            OfpMessage::new(7, Message::EchoRequest(Echo { data: vec![1, 2] })),
        );
        let r = sent(&mut s).remove(0);
        assert_eq!(r.xid, 7);
        assert_eq!(r.body, Message::EchoReply(Echo { data: vec![1, 2] }));
    }

    #[test]
    fn probes_when_idle_and_fails_when_silent() {
        let t0 = Instant::now();
        let mut s = connected(t0);
        let step = Duration::from_secs(5);
        assert_eq!(s.poll_timeout(), Some(t0 + step));
        s.handle_timeout(t0 + Duration::from_secs(4));
        assert!(sent(&mut s).is_empty());
        s.handle_timeout(t0 + step);
        assert!(matches!(sent(&mut s)[0].body, Message::EchoRequest(_)));
        // Traffic resets the clock.
        let t1 = t0 + Duration::from_secs(6);
        s.handle_message(t1, OfpMessage::new(50, Message::EchoReply(Echo::default())));
        s.handle_timeout(t1 + Duration::from_secs(9));
        assert!(s.poll_event().is_none());
        s.handle_timeout(t1 + 2 * step);
        assert!(matches!(
            s.poll_event(),
            Some(Event::Failed(SessionError::Timeout(_)))
        ));
    }

    #[test]
    fn zero_probe_interval_disables_the_probe() {
        let t0 = Instant::now();
        let mut s = Session::new(
            t0,
            Config {
                probe_interval: Duration::ZERO,
            },
        );
        sent(&mut s);
        s.handle_message(
            t0,
            OfpMessage::new(1, Message::Hello(Hello::with_versions(&[6]))),
        );
        assert_eq!(s.poll_event(), Some(Event::Connected));
        assert_eq!(s.poll_timeout(), None);
        s.handle_timeout(t0 + Duration::from_secs(3 * 86_400 + 1));
        assert!(sent(&mut s).is_empty());
        assert!(s.poll_event().is_none());
    }

    #[test]
    fn correlates_multipart_replies() {
        let now = Instant::now();
        let mut s = connected(now);
        let xid = s
            .send(
                &Message::MultipartRequest(crate::wire::MultipartRequest {
                    flags: 0,
                    body: crate::wire::MultipartRequestBody::GroupDesc(0xffff_fffc),
                }),
                true,
            )
            .unwrap();
        let part = |flags| {
            OfpMessage::new(
                xid,
                Message::MultipartReply(MultipartReply {
                    flags,
                    body: MultipartReplyBody::GroupDesc(vec![]),
                }),
            )
        };
        s.handle_message(now, part(OFPMPF_MORE));
        assert!(s.poll_event().is_none());
        s.handle_message(now, part(0));
        match s.poll_event() {
            Some(Event::Reply { xid: x, msgs }) => {
                assert_eq!(x, xid);
                assert_eq!(msgs.len(), 2);
            }
            other => panic!("{other:?}"),
        }
        // An unrelated message is asynchronous.
        s.handle_message(now, part(0));
        assert!(matches!(s.poll_event(), Some(Event::Async(_))));
    }

    #[test]
    fn barrier_collects_errors_of_earlier_messages() {
        let now = Instant::now();
        let mut s = connected(now);
        let a = s
            .send(&Message::FlowMod(FlowMod::default()), false)
            .unwrap();
        let b = s
            .send(&Message::FlowMod(FlowMod::default()), false)
            .unwrap();
        let bar = s.barrier();
        let err = ErrorMsg {
            code: ErrorCode::Standard { ty: 5, code: 1 },
            data: vec![],
        };
        s.handle_message(now, OfpMessage::new(b, Message::Error(err.clone())));
        assert!(s.poll_event().is_none(), "held until the barrier");
        s.handle_message(now, OfpMessage::new(bar, Message::BarrierReply(Empty)));
        assert_eq!(
            s.poll_event(),
            Some(Event::Barrier {
                xid: bar,
                errors: vec![(b, err.clone())]
            })
        );
        // After the barrier, an error for `a` is no longer ours to claim.
        s.handle_message(now, OfpMessage::new(a, Message::Error(err.clone())));
        assert!(matches!(s.poll_event(), Some(Event::Async(_))));
        // Errors of untracked fire-and-forget messages (packet-outs) are asynchronous.
        let c = s
            .send(
                &Message::PacketOut(crate::wire::PacketOut {
                    buffer_id: u32::MAX,
                    r#match: crate::oxm::Match::default(),
                    actions: vec![],
                    data: vec![],
                }),
                false,
            )
            .unwrap();
        s.handle_message(now, OfpMessage::new(c, Message::Error(err.clone())));
        assert!(matches!(s.poll_event(), Some(Event::Async(_))));
        // Errors of messages sent after the barrier in flight wait for the next one.
        let d = s
            .send(&Message::FlowMod(FlowMod::default()), false)
            .unwrap();
        let bar2 = s.barrier();
        let e = s
            .send(&Message::FlowMod(FlowMod::default()), false)
            .unwrap();
        let bar3 = s.barrier();
        // (e's error even arrives before bar2's reply: it still belongs to bar3.)
        s.handle_message(now, OfpMessage::new(d, Message::Error(err.clone())));
        s.handle_message(now, OfpMessage::new(e, Message::Error(err.clone())));
        s.handle_message(now, OfpMessage::new(bar2, Message::BarrierReply(Empty)));
        s.handle_message(now, OfpMessage::new(bar3, Message::BarrierReply(Empty)));
        assert_eq!(
            s.poll_event(),
            Some(Event::Barrier {
                xid: bar2,
                errors: vec![(d, err.clone())]
            })
        );
        assert_eq!(
            s.poll_event(),
            Some(Event::Barrier {
                xid: bar3,
                errors: vec![(e, err)]
            })
        );
    }

    #[test]
    fn encoded_frames_get_xids_and_bundle_adds_carry_them_inside() {
        let now = Instant::now();
        let mut s = connected(now);
        let mut b = crate::wire::BundleBuilder::new(1);
        b.push_message(&Message::FlowMod(FlowMod::default()))
            .unwrap();
        b.push_message(&Message::FlowMod(FlowMod::default()))
            .unwrap();
        let (frames, _) = b.into_frames(5);
        let xids = s.send_encoded(frames, false).unwrap();
        assert_eq!(xids.len(), 2);
        assert_eq!(xids[1], xids[0] + 1);
        let out = sent(&mut s);
        assert_eq!(out.len(), 2);
        for (m, xid) in out.iter().zip(&xids) {
            assert_eq!(m.xid, *xid);
            let Message::BundleAddMessage(add) = &m.body else {
                panic!("{m:?}")
            };
            assert_eq!(add.bundle_id, 5);
            assert_eq!(OfpMessage::decode(&add.message).unwrap().xid, *xid);
        }
        // Bundle adds are tracked: their errors come with the next barrier.
        let bar = s.barrier();
        let err = ErrorMsg {
            code: ErrorCode::Standard { ty: 5, code: 0 },
            data: vec![],
        };
        s.handle_message(now, OfpMessage::new(xids[1], Message::Error(err.clone())));
        s.handle_message(now, OfpMessage::new(bar, Message::BarrierReply(Empty)));
        assert_eq!(
            s.poll_event(),
            Some(Event::Barrier {
                xid: bar,
                errors: vec![(xids[1], err.clone())]
            })
        );
        // Past that barrier they are not ours, unless tracked again.
        s.handle_message(now, OfpMessage::new(xids[0], Message::Error(err.clone())));
        assert!(matches!(s.poll_event(), Some(Event::Async(_))));
        s.track_errors(xids.iter().copied());
        let bar = s.barrier();
        s.handle_message(now, OfpMessage::new(xids[0], Message::Error(err.clone())));
        s.handle_message(now, OfpMessage::new(bar, Message::BarrierReply(Empty)));
        assert_eq!(
            s.poll_event(),
            Some(Event::Barrier {
                xid: bar,
                errors: vec![(xids[0], err)]
            })
        );
    }

    #[test]
    fn encoded_requests_and_barriers_are_correlated() {
        let now = Instant::now();
        let mut s = connected(now);
        let mut frames = BytesMut::new();
        Message::EchoRequest(Echo { data: vec![3] })
            .encode(0, &mut frames)
            .unwrap();
        let xid = s.send_encoded(frames, true).unwrap()[0];
        let mut frames = BytesMut::new();
        Message::BarrierRequest(Empty)
            .encode(0, &mut frames)
            .unwrap();
        let bar = s.send_encoded(frames, false).unwrap()[0];
        assert_eq!(
            sent(&mut s).iter().map(|m| m.xid).collect::<Vec<_>>(),
            [xid, bar]
        );
        s.handle_message(
            now,
            OfpMessage::new(xid, Message::EchoReply(Echo { data: vec![3] })),
        );
        assert!(matches!(s.poll_event(), Some(Event::Reply { xid: x, .. }) if x == xid));
        s.handle_message(now, OfpMessage::new(bar, Message::BarrierReply(Empty)));
        assert!(matches!(s.poll_event(), Some(Event::Barrier { xid: x, .. }) if x == bar));
    }

    #[test]
    fn malformed_frames_and_overlong_messages_queue_nothing() {
        let now = Instant::now();
        let mut s = connected(now);
        let mut frames = BytesMut::new();
        Message::BarrierRequest(Empty)
            .encode(0, &mut frames)
            .unwrap();
        frames.extend_from_slice(&[6, 20, 0, 9, 0, 0, 0, 0]); // claims 9 bytes, has 8
        assert!(matches!(
            s.send_encoded(frames, false),
            Err(EncodeError::Inconsistent(_))
        ));
        let long = Message::EchoRequest(Echo {
            data: vec![0; 70_000],
        });
        assert!(matches!(
            s.send(&long, true),
            Err(EncodeError::TooLong { .. })
        ));
        assert!(sent(&mut s).is_empty());
        // Nothing is pending: a barrier completes with no errors, and no reply waits.
        let bar = s.barrier();
        s.handle_message(now, OfpMessage::new(bar, Message::BarrierReply(Empty)));
        assert_eq!(
            s.poll_event(),
            Some(Event::Barrier {
                xid: bar,
                errors: vec![]
            })
        );
        assert!(s.pending.is_empty());
    }
}
