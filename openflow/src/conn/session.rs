//! Sans-IO OpenFlow session: hello/version negotiation (OF1.5 required), echo replies,
//! inactivity probe, xid correlation (incl. multipart), barrier tracking.
//!
//! Inputs: [`Session::handle_message`], [`Session::handle_timeout`], [`Session::send`].
//! Outputs: [`Session::poll_transmit`], [`Session::poll_event`], [`Session::poll_timeout`].
//! Time is a parameter, so tests drive it virtually.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use thiserror::Error;

use crate::wire::multipart::OFPMPF_MORE;
use crate::wire::{Echo, Empty, ErrorCode, ErrorMsg, Hello, Message, OfpMessage, OFP15_VERSION};

/// Why a session ended or a request failed.
#[derive(Clone, Debug, Eq, PartialEq, Error)]
#[non_exhaustive]
pub enum SessionError {
    #[error("peer does not speak OpenFlow 1.5 (its hello: version {0:#x})")]
    VersionMismatch(u8),
    #[error("no message from the peer for {0:?}")]
    Timeout(Duration),
    #[error("peer sent an error before the handshake completed: {0:?}")]
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
    transmit: VecDeque<OfpMessage>,
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

/// Messages whose errors a later barrier reports.
fn is_tracked(body: &Message) -> bool {
    matches!(
        body,
        Message::FlowMod(_)
            | Message::GroupMod(_)
            | Message::MeterMod(_)
            | Message::TlvTableMod(_)
            | Message::BundleAddMessage(_)
            | Message::BundleControl(_)
    )
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
            events: VecDeque::new(),
            pending: HashMap::new(),
            barriers: VecDeque::new(),
            unclaimed_errors: Vec::new(),
            tracked: HashSet::new(),
        };
        let xid = s.alloc_xid();
        s.transmit.push_back(OfpMessage::new(
            xid,
            Message::Hello(Hello::with_versions(&[OFP15_VERSION])),
        ));
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
    /// [`Event::Reply`]; a barrier request always completes as [`Event::Barrier`].
    pub fn send(&mut self, body: Message, expect_reply: bool) -> u32 {
        let xid = self.alloc_xid();
        self.send_with_xid(xid, body, expect_reply);
        xid
    }

    /// Like [`Session::send`] with a caller-chosen xid (e.g. reserved with [`Session::reserve_xid`]).
    pub fn send_with_xid(&mut self, xid: u32, body: Message, expect_reply: bool) {
        if matches!(body, Message::BarrierRequest(_)) {
            self.barriers.push_back(xid);
        } else if expect_reply {
            self.pending.insert(xid, Vec::new());
        } else if is_tracked(&body) {
            self.tracked.insert(xid);
        }
        self.transmit.push_back(OfpMessage::new(xid, body));
    }

    /// Take an xid without sending anything (for messages nested in bundles).
    pub fn reserve_xid(&mut self) -> u32 {
        self.alloc_xid()
    }

    /// A barrier request; its completion is [`Event::Barrier`].
    pub fn barrier(&mut self) -> u32 {
        self.send(Message::BarrierRequest(Empty), false)
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
                        self.transmit.push_back(OfpMessage::new(
                            xid,
                            Message::Error(ErrorMsg {
                                code: ErrorCode::Standard { ty: 0, code: 0 },
                                data: b"OpenFlow 1.5 required".to_vec(),
                            }),
                        ));
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
                self.transmit.push_back(OfpMessage::new(
                    xid,
                    Message::EchoReply(Echo {
                        data: e.data.clone(),
                    }),
                ));
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
            self.transmit
                .push_back(OfpMessage::new(xid, Message::EchoRequest(Echo::default())));
        }
    }

    pub fn poll_transmit(&mut self) -> Option<OfpMessage> {
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

    fn connected(now: Instant) -> Session {
        let mut s = Session::new(now, Config::default());
        let hello = s.poll_transmit().unwrap();
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
        s.poll_transmit();
        let mut old = OfpMessage::new(1, Message::Hello(Hello::with_versions(&[1, 4])));
        old.version = 4;
        s.handle_message(now, old);
        assert!(matches!(s.poll_transmit().unwrap().body, Message::Error(_)));
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
        let r = s.poll_transmit().unwrap();
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
        assert!(s.poll_transmit().is_none());
        s.handle_timeout(t0 + step);
        assert!(matches!(
            s.poll_transmit().unwrap().body,
            Message::EchoRequest(_)
        ));
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
        s.poll_transmit();
        s.handle_message(
            t0,
            OfpMessage::new(1, Message::Hello(Hello::with_versions(&[6]))),
        );
        assert_eq!(s.poll_event(), Some(Event::Connected));
        assert_eq!(s.poll_timeout(), None);
        s.handle_timeout(t0 + Duration::from_secs(3 * 86_400 + 1));
        assert!(s.poll_transmit().is_none());
        assert!(s.poll_event().is_none());
    }

    #[test]
    fn correlates_multipart_replies() {
        let now = Instant::now();
        let mut s = connected(now);
        let xid = s.send(
            Message::MultipartRequest(crate::wire::MultipartRequest {
                flags: 0,
                body: crate::wire::MultipartRequestBody::GroupDesc(0xffff_fffc),
            }),
            true,
        );
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
        let a = s.send(Message::FlowMod(FlowMod::default()), false);
        let b = s.send(Message::FlowMod(FlowMod::default()), false);
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
        let c = s.send(
            Message::PacketOut(crate::wire::PacketOut {
                buffer_id: u32::MAX,
                r#match: crate::oxm::Match::default(),
                actions: vec![],
                data: vec![],
            }),
            false,
        );
        s.handle_message(now, OfpMessage::new(c, Message::Error(err.clone())));
        assert!(matches!(s.poll_event(), Some(Event::Async(_))));
        // Errors of messages sent after the barrier in flight wait for the next one.
        let d = s.send(Message::FlowMod(FlowMod::default()), false);
        let bar2 = s.barrier();
        let e = s.send(Message::FlowMod(FlowMod::default()), false);
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
}
