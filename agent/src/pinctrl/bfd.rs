//! BFD for router ports (the Southbound `BFD` table: ECMP static routes and router ports
//! with `bfd` on): for each row whose router port lives on this chassis (an `l3gateway`
//! bound here, or a distributed gateway port whose `cr-` port is active here), a session
//! (RFC 5880, asynchronous mode, no authentication) to `dst_ip` from UDP source port
//! `src_port` with discriminator `disc`. Control packets enter the router's ingress
//! pipeline as if received on the port; the peer's come back through `handle_bfd_msg()`.
//! Each state change is written to the row's `status`, as ovn-controller does.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use openflow::wire::PacketOut;
use sbclient::ovn_sb::{Bfd, PortBinding};
use sbclient::{Replica, Uuid};

use super::packet::{self, Headers, Mac, L3};
use super::packet_in::{Entry, Skip};

/// BFD control packets go to this UDP port (RFC 5881).
pub const DEST_PORT: u16 = 3784;
const VERSION: u8 = 1;
const PACKET_LEN: u8 = 24;
/// Sources and destinations when the router port has no address of the family.
const DEFAULT_SRC: Ipv4Addr = Ipv4Addr::new(169, 254, 1, 1);
const DEFAULT_DST: Ipv4Addr = Ipv4Addr::new(169, 254, 1, 0);
/// A new session waits this long for a first packet before it may go down.
const INITIAL_DETECTION: Duration = Duration::from_secs(30);

const FLAG_MULTIPOINT: u8 = 1 << 0;
const FLAG_DEMAND: u8 = 1 << 1;
const FLAG_AUTH: u8 = 1 << 2;
const FLAG_FINAL: u8 = 1 << 4;
const FLAG_POLL: u8 = 1 << 5;

/// A session's state, as the packets and the `status` column carry it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum State {
    AdminDown = 0,
    Down = 1,
    Init = 2,
    Up = 3,
}

impl State {
    fn from_bits(b: u8) -> Self {
        match b & 3 {
            0 => Self::AdminDown,
            1 => Self::Down,
            2 => Self::Init,
            _ => Self::Up,
        }
    }

    pub fn text(self) -> &'static str {
        match self {
            Self::AdminDown => "admin_down",
            Self::Down => "down",
            Self::Init => "init",
            Self::Up => "up",
        }
    }
}

/// One Southbound BFD row this chassis runs, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BfdRow {
    pub uuid: Uuid,
    pub datapath: u32,
    pub port_key: u32,
    pub src_mac: Mac,
    pub src_ip: IpAddr,
    pub dst_ip: IpAddr,
    pub src_port: u16,
    pub disc: u32,
    /// Milliseconds.
    pub min_tx: u32,
    pub min_rx: u32,
    pub detect_mult: u8,
    pub status: String,
}

/// The BFD rows whose router port is here: an `l3gateway` port bound to `chassis`, or one
/// whose `cr-` port `resident` says is active here.
pub fn rows(
    sb: &Replica,
    chassis: Option<Uuid>,
    resident: impl Fn(&str) -> bool,
    dp_keys: impl Fn(Uuid) -> Option<u32>,
) -> Vec<BfdRow> {
    let Some(bfds) = sb.table::<Bfd>() else {
        return Vec::new();
    };
    let by_name = |name: &str| crate::southbound::port_binding_named(sb, name).map(|(_, p)| p);
    let mut out = Vec::new();
    for (uuid, bt) in bfds.iter() {
        let Some(pb) = by_name(&bt.logical_port) else {
            continue;
        };
        if pb.options.get("peer").and_then(|p| by_name(p)).is_none() {
            continue;
        }
        let gateway_here = pb.type_ == "l3gateway" && chassis.is_some() && pb.chassis == chassis;
        if !gateway_here && !resident(&format!("cr-{}", bt.logical_port)) {
            continue;
        }
        let Ok(dst) = bt.dst_ip.parse::<IpAddr>() else {
            continue;
        };
        let Some((src_mac, src_ip, dst_ip)) = addresses(pb, dst) else {
            continue;
        };
        let (Some(datapath), Ok(port_key), Ok(src_port), Ok(disc)) = (
            dp_keys(pb.datapath),
            u32::try_from(pb.tunnel_key),
            u16::try_from(bt.src_port),
            u32::try_from(bt.disc),
        ) else {
            continue;
        };
        let ms = |v: i64| u32::try_from(v.max(0)).unwrap_or(u32::MAX);
        out.push(BfdRow {
            uuid: *uuid,
            datapath,
            port_key,
            src_mac,
            src_ip,
            dst_ip,
            src_port,
            disc,
            min_tx: ms(bt.min_tx),
            min_rx: ms(bt.min_rx),
            detect_mult: u8::try_from(bt.detect_mult.clamp(0, 255)).unwrap_or(0),
            status: bt.status.clone(),
        });
    }
    out.sort_by_key(|r| r.uuid);
    out
}

/// The port's MAC and the (source, destination) pair: an address of the port of the
/// destination's family, else the link-local defaults.
fn addresses(pb: &PortBinding, dst: IpAddr) -> Option<(Mac, IpAddr, IpAddr)> {
    let mut found = None;
    let mut pair = (IpAddr::V4(DEFAULT_SRC), IpAddr::V4(DEFAULT_DST));
    for entry in &pb.mac {
        let mut words = entry.split_whitespace();
        let Some(mac) = words.next().and_then(packet::parse_mac) else {
            continue;
        };
        found = Some(mac);
        let ips: Vec<IpAddr> = words
            .filter_map(|w| w.split('/').next()?.parse().ok())
            .collect();
        let v6 = ips.iter().find(|a| a.is_ipv6());
        let v4 = ips.iter().find(|a| a.is_ipv4());
        if let (true, Some(src)) = (dst.is_ipv6(), v6) {
            pair = (*src, dst);
            break;
        }
        if let (Some(src), IpAddr::V4(_)) = (v4, dst) {
            pair = (*src, dst);
            break;
        }
    }
    found.map(|mac| (mac, pair.0, pair.1))
}

/// A BFD control packet from a peer, as the `handle_bfd_msg` packet-in brings it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    pub src: IpAddr,
    pub payload: Vec<u8>,
}

/// The control packet of a `handle_bfd_msg` packet-in.
pub fn parse(packet_data: &[u8], h: &Headers) -> Result<Received, Skip> {
    let (src, proto) = match h.l3 {
        L3::Ipv4 { src, proto, .. } => (IpAddr::V4(src), proto),
        L3::Ipv6 {
            src, next_header, ..
        } => (IpAddr::V6(src), next_header),
        L3::Other => return Err(Skip::WrongPacket("BFD action on non-IP packet")),
    };
    if proto != packet::PROTO_UDP {
        return Err(Skip::WrongPacket("BFD action on non-UDP packet"));
    }
    let l4 = h.l4(packet_data).unwrap_or_default();
    let udp = l4
        .get(..8)
        .ok_or(Skip::WrongPacket("BFD action: truncated UDP header"))?;
    if u16::from_be_bytes([udp[2], udp[3]]) != DEST_PORT {
        return Err(Skip::WrongPacket("BFD action on wrong UDP dst port"));
    }
    Ok(Received {
        src,
        payload: l4[8..].to_vec(),
    })
}

/// A control packet's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Message {
    flags: u8,
    state: State,
    mult: u8,
    my_disc: u32,
    your_disc: u32,
    /// Microseconds.
    min_tx: u32,
    min_rx: u32,
}

/// Why a control packet is not acted upon (RFC 5880 6.8.6, and what is not supported).
fn decode(p: &[u8]) -> Result<Message, &'static str> {
    let b = p
        .get(..usize::from(PACKET_LEN))
        .ok_or("packet is too short")?;
    let be32 = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    if b[0] >> 5 != VERSION {
        return Err("unsupported version");
    }
    let flags = b[1] & 0x3f;
    let m = Message {
        flags,
        state: State::from_bits(b[1] >> 6),
        mult: b[2],
        my_disc: be32(4),
        your_disc: be32(8),
        min_tx: be32(12),
        min_rx: be32(16),
    };
    if flags & FLAG_AUTH != 0 {
        return Err("authentication is not supported");
    }
    if b[3] < PACKET_LEN {
        return Err("packet is too short");
    }
    if m.mult == 0 {
        return Err("multiplier not set");
    }
    if flags & FLAG_MULTIPOINT != 0 {
        return Err("multipoint is not supported");
    }
    if m.my_disc == 0 {
        return Err("my_disc not set");
    }
    if flags & FLAG_FINAL != 0 && flags & FLAG_POLL != 0 {
        return Err("poll and final both set");
    }
    if m.state >= State::Init && m.your_disc == 0 {
        return Err("remote state is init or up and your_disc is not set");
    }
    Ok(m)
}

#[derive(Debug, Clone)]
struct Session {
    row: BfdRow,
    state: State,
    /// The state changed and the row does not know yet.
    to_write: bool,
    remote_disc: u32,
    /// Milliseconds.
    remote_min_rx: u32,
    remote_demand: bool,
    detection: Duration,
    last_rx: Instant,
    next_tx: Instant,
}

/// The sessions of this chassis, by (destination, source port).
#[derive(Debug, Default)]
pub struct Sessions {
    sessions: BTreeMap<(IpAddr, u16), Session>,
    jitter_seed: u64,
}

impl Sessions {
    pub fn new(seed: u64) -> Self {
        Self {
            sessions: BTreeMap::new(),
            jitter_seed: seed | 1,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Follows the rows: a new session starts down, ready to come up (administratively
    /// down while its row says so), gone ones end, changed timers apply.
    pub fn sync(&mut self, rows: &[BfdRow], now: Instant) {
        let mut keep = BTreeMap::new();
        for row in rows {
            let key = (row.dst_ip, row.src_port);
            let s = match self.sessions.remove(&key) {
                // ovn-controller creates it administratively down and, in the same pass
                // of its main loop's next run, brings it down unless the row says
                // admin_down: the same, at once (this runs on snapshot changes only).
                None => Session {
                    row: row.clone(),
                    state: if row.status == "admin_down" {
                        State::AdminDown
                    } else {
                        State::Down
                    },
                    to_write: false,
                    remote_disc: 0,
                    remote_min_rx: 1,
                    remote_demand: false,
                    detection: INITIAL_DETECTION,
                    last_rx: now,
                    next_tx: now,
                },
                Some(mut s) => {
                    let admin_down = row.status == "admin_down";
                    if admin_down && s.state != State::AdminDown {
                        s.state = State::AdminDown;
                        s.to_write = false;
                        s.remote_disc = 0;
                    } else if !admin_down && s.state == State::AdminDown {
                        s.state = State::Down;
                        s.to_write = false;
                        s.remote_disc = 0;
                    }
                    s.row = row.clone();
                    s
                }
            };
            keep.insert(key, s);
        }
        self.sessions = keep;
    }

    /// A control packet from `r.src`: the state machine of RFC 5880 6.8.6; a poll is
    /// answered at once with a final (the packet-out returned).
    pub fn on_message(
        &mut self,
        r: &Received,
        now: Instant,
        ingress: u8,
    ) -> Result<Option<PacketOut>, &'static str> {
        let m = decode(&r.payload)?;
        let Some(s) = self
            .sessions
            .values_mut()
            .find(|s| s.row.dst_ip == r.src && s.row.disc == m.your_disc)
        else {
            return Ok(None);
        };
        s.remote_disc = m.my_disc;
        s.remote_min_rx = m.min_rx / 1000;
        let detection_ms = u64::from(m.mult) * u64::from((m.min_tx / 1000).max(s.row.min_rx));
        s.detection = Duration::from_millis(detection_ms);
        let before = s.state;
        if m.state == State::AdminDown && s.state >= State::Init {
            s.state = State::Down;
            s.last_rx = now;
        } else {
            match s.state {
                State::Down => {
                    if m.state == State::Down {
                        s.state = State::Init;
                    } else if m.state == State::Init {
                        s.state = State::Up;
                    }
                    s.last_rx = now;
                }
                State::Init => {
                    if m.state >= State::Init {
                        s.state = State::Up;
                    }
                    s.last_rx = now;
                }
                State::Up => {
                    if m.state <= State::Down {
                        s.state = State::Down;
                    }
                    s.last_rx = now;
                }
                State::AdminDown => {}
            }
            if s.state == State::Up && m.flags & FLAG_DEMAND != 0 {
                s.remote_demand = true;
            }
        }
        if s.state != before {
            s.to_write = true;
        }
        Ok((m.flags & FLAG_POLL != 0).then(|| control_packet(s, true, ingress)))
    }

    /// The control packets due at `now`, after the detection timeouts.
    pub fn run(&mut self, now: Instant, ingress: u8) -> Vec<PacketOut> {
        let mut out = Vec::new();
        for s in self.sessions.values_mut() {
            let live = matches!(s.state, State::Init | State::Up);
            if live && !s.detection.is_zero() && now >= s.last_rx + s.detection {
                s.state = State::Down;
                s.to_write = true;
            }
            if now < s.next_tx
                || s.remote_min_rx == 0
                || s.state == State::AdminDown
                || s.remote_demand
            {
                continue;
            }
            out.push(control_packet(s, false, ingress));
            // Up to a quarter less than the interval, so that sessions do not align.
            let interval = u64::from(s.row.min_tx.max(s.remote_min_rx));
            self.jitter_seed ^= self.jitter_seed << 13;
            self.jitter_seed ^= self.jitter_seed >> 7;
            self.jitter_seed ^= self.jitter_seed << 17;
            let jitter = if interval >= 4 {
                self.jitter_seed % (interval / 4)
            } else {
                0
            };
            s.next_tx = now + Duration::from_millis(interval - jitter);
        }
        out
    }

    /// When [`Sessions::run`] is next due.
    pub fn next_due(&self) -> Option<Instant> {
        self.sessions
            .values()
            .filter(|s| s.state != State::AdminDown)
            .map(|s| {
                let detect =
                    matches!(s.state, State::Init | State::Up).then(|| s.last_rx + s.detection);
                detect.map_or(s.next_tx, |d| d.min(s.next_tx))
            })
            .min()
    }

    /// The states to write to rows that do not show them yet (each once).
    pub fn statuses(&mut self) -> Vec<(Uuid, &'static str)> {
        let mut out = Vec::new();
        for s in self.sessions.values_mut() {
            if std::mem::take(&mut s.to_write) {
                if s.state == State::Down {
                    s.remote_disc = 0;
                }
                if s.row.status != s.state.text() {
                    out.push((s.row.uuid, s.state.text()));
                }
            }
        }
        out
    }
}

/// A control packet of `s` into the router's ingress pipeline, as received on its port.
fn control_packet(s: &Session, fin: bool, ingress: u8) -> PacketOut {
    let r = &s.row;
    let mut msg = [0u8; PACKET_LEN as usize];
    msg[0] = VERSION << 5;
    msg[1] = ((s.state as u8) << 6) | if fin { FLAG_FINAL } else { 0 };
    msg[2] = r.detect_mult;
    msg[3] = PACKET_LEN;
    msg[4..8].copy_from_slice(&r.disc.to_be_bytes());
    msg[8..12].copy_from_slice(&s.remote_disc.to_be_bytes());
    msg[12..16].copy_from_slice(&r.min_tx.saturating_mul(1000).to_be_bytes());
    msg[16..20].copy_from_slice(&r.min_rx.saturating_mul(1000).to_be_bytes());
    let data = udp_frame(r, &msg);
    super::packet_in::into_pipeline(
        Entry {
            datapath: r.datapath,
            inport: Some(r.port_key),
            outport: None,
            local_only: false,
            table: ingress,
        },
        data,
    )
}

/// The control packet's frame: to broadcast, TTL 255.
fn udp_frame(r: &BfdRow, payload: &[u8]) -> Vec<u8> {
    packet::udp_datagram(
        (r.src_mac, [0xff; 6]),
        (r.src_ip, r.dst_ip),
        255,
        (r.src_port, DEST_PORT),
        payload,
    )
}

/// Writes the states to the BFD rows.
pub fn write(sb: &Replica, statuses: &[(Uuid, &'static str)], txn: &mut sbclient::Transaction) {
    let Some(bfds) = sb.table::<Bfd>() else {
        return;
    };
    for (uuid, status) in statuses {
        if bfds.get(uuid).is_some_and(|b| b.status != *status) {
            txn.update(
                "BFD",
                &sbclient::transaction::by_uuid(*uuid),
                sbclient::Columns::new().set("status", sbclient::Atom::from(*status)),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: &str = "00000000-0000-0000-0000-0000000000c1";

    fn row(status: &str) -> BfdRow {
        BfdRow {
            uuid: "00000000-0000-0000-0000-0000000000b1".parse().unwrap(),
            datapath: 2,
            port_key: 3,
            src_mac: [0, 0, 0, 0, 0xff, 1],
            src_ip: "172.16.0.1".parse().unwrap(),
            dst_ip: "172.16.0.50".parse().unwrap(),
            src_port: 49152,
            disc: 0x1234,
            min_tx: 1000,
            min_rx: 1000,
            detect_mult: 3,
            status: status.to_owned(),
        }
    }

    /// A peer's control packet: `state`, its discriminator 0x99, ours as `your_disc`.
    fn peer(state: State, your_disc: u32, flags: u8) -> Received {
        let mut p = vec![0u8; 24];
        p[0] = VERSION << 5;
        p[1] = ((state as u8) << 6) | flags;
        p[2] = 3;
        p[3] = 24;
        p[4..8].copy_from_slice(&0x99u32.to_be_bytes());
        p[8..12].copy_from_slice(&your_disc.to_be_bytes());
        p[12..16].copy_from_slice(&500_000u32.to_be_bytes());
        p[16..20].copy_from_slice(&500_000u32.to_be_bytes());
        Received {
            src: "172.16.0.50".parse().unwrap(),
            payload: p,
        }
    }

    fn status(s: &mut Sessions) -> Vec<&'static str> {
        s.statuses().into_iter().map(|(_, st)| st).collect()
    }

    #[test]
    fn a_session_comes_up_with_its_peer_and_goes_down_without_it() {
        let t0 = Instant::now();
        let mut s = Sessions::new(7);
        s.sync(&[row("admin_down")], t0);
        assert!(s.run(t0, 8).is_empty(), "administratively down: silent");
        // northd brings the row out of admin_down: the session starts, down.
        s.sync(&[row("down")], t0);
        let sent = s.run(t0, 8);
        assert_eq!(sent.len(), 1);
        let frame = &sent[0].data;
        let h = packet::parse(frame).unwrap();
        assert_eq!(h.eth_dst, [0xff; 6]);
        let udp = h.l4(frame).unwrap();
        assert_eq!(&udp[..4], &[0xc0, 0x00, 0x0e, 0xc8], "49152 -> 3784");
        assert_eq!(udp[9] >> 6, State::Down as u8);
        assert!(
            s.run(t0 + Duration::from_millis(100), 8).is_empty(),
            "not due yet"
        );
        assert_eq!(s.run(t0 + Duration::from_millis(1001), 8).len(), 1);

        // The three-way handshake: down -> init -> up (the peer names our discriminator,
        // learnt from our packets; without it a packet finds no session).
        assert_eq!(s.on_message(&peer(State::Down, 0, 0), t0, 8), Ok(None));
        assert!(status(&mut s).is_empty());
        assert_eq!(s.on_message(&peer(State::Down, 0x1234, 0), t0, 8), Ok(None));
        assert_eq!(status(&mut s), ["init"]);
        s.on_message(&peer(State::Up, 0x1234, 0), t0, 8).unwrap();
        assert_eq!(status(&mut s), ["up"]);
        assert!(status(&mut s).is_empty(), "written once");
        s.sync(&[row("up")], t0);
        // A poll is answered with a final at once.
        let fin = s
            .on_message(&peer(State::Up, 0x1234, FLAG_POLL), t0, 8)
            .unwrap()
            .expect("final");
        let h = packet::parse(&fin.data).unwrap();
        assert_eq!(
            h.l4(&fin.data).unwrap()[9],
            ((State::Up as u8) << 6) | FLAG_FINAL
        );
        // Silence for 3 x 1000 ms: down.
        s.run(t0 + Duration::from_millis(2999), 8);
        assert!(status(&mut s).is_empty());
        s.run(t0 + Duration::from_secs(3), 8);
        assert_eq!(status(&mut s), ["down"]);
    }

    #[test]
    fn a_new_session_whose_row_is_not_admin_down_starts_at_once() {
        let t0 = Instant::now();
        let mut s = Sessions::new(7);
        s.sync(&[row("down")], t0);
        assert_eq!(s.run(t0, 8).len(), 1, "no second snapshot needed");
    }

    #[test]
    fn packets_for_another_session_or_malformed_are_ignored() {
        let t0 = Instant::now();
        let mut s = Sessions::new(7);
        s.sync(&[row("down")], t0);
        s.sync(&[row("down")], t0);
        assert_eq!(s.on_message(&peer(State::Down, 0x5555, 0), t0, 8), Ok(None));
        assert!(status(&mut s).is_empty());
        assert!(
            s.on_message(&peer(State::Up, 0, 0), t0, 8).is_err(),
            "up without your_disc"
        );
        assert!(s
            .on_message(&peer(State::Down, 0, FLAG_AUTH), t0, 8)
            .is_err());
        let mut short = peer(State::Down, 0, 0);
        short.payload.truncate(20);
        assert!(s.on_message(&short, t0, 8).is_err());
    }

    #[test]
    fn rows_are_those_of_gateway_ports_here() {
        let mut sb = crate::southbound::new_replica();
        let update = serde_json::json!({
            "Datapath_Binding": {"00000000-0000-0000-0000-0000000000d1": {"initial": {"tunnel_key": 2}}},
            "Port_Binding": {
                "00000000-0000-0000-0000-0000000000a1": {"initial": {"logical_port": "lrp-pub", "type": "l3gateway",
                    "chassis": ["uuid", ME], "tunnel_key": 3, "datapath": ["uuid", "00000000-0000-0000-0000-0000000000d1"],
                    "options": ["map", [["peer", "pub-lrp"]]], "mac": "00:00:00:00:ff:01 172.16.0.1/24"}},
                "00000000-0000-0000-0000-0000000000a2": {"initial": {"logical_port": "pub-lrp", "type": "l3gateway",
                    "options": ["map", [["peer", "lrp-pub"]]]}},
            },
            "BFD": {"00000000-0000-0000-0000-0000000000b1": {"initial": {"logical_port": "lrp-pub",
                "dst_ip": "172.16.0.50", "src_port": 49152, "disc": 4660, "min_tx": 1000, "min_rx": 1000,
                "detect_mult": 3, "status": "down"}}},
        });
        sb.apply_snapshot(&serde_json::value::to_raw_value(&update).unwrap())
            .unwrap();
        let dp = |_| Some(2);
        let me = Some(ME.parse().unwrap());
        assert_eq!(rows(&sb, me, |_| false, dp), vec![row("down")]);
        assert!(rows(&sb, None, |_| false, dp).is_empty(), "not bound here");
    }
}
