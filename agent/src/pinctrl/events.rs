//! `trigger_event` (opcode `EVENT`): the controller events northd asks for, today only
//! `empty_lb_backends` (a load balancer VIP hit while it has no backends, with
//! `options:event=true` and `NB_Global options:controller_event=true`). As ovn-controller
//! 23.03.1: an event seen again before the main loop wrote it is kept once; the main loop
//! inserts a `Controller_Event` row unless this chassis already has one for the same
//! (vip, protocol, load_balancer), numbering rows from 1 for the life of the process;
//! then the pending events are cleared. Rows are never deleted here (the CMS does).

use std::collections::HashSet;
use std::sync::atomic::{AtomicI64, Ordering};

use sbclient::datum::Datum;
use sbclient::ovn_sb::ControllerEvent;
use sbclient::{Atom, Columns, Replica, Transaction, Uuid};

/// `OVN_EVENT_EMPTY_LB_BACKENDS`.
pub const EMPTY_LB_BACKENDS: u32 = 0;
/// The option codes of an `empty_lb_backends` event (`lib/ovn-l7.h`).
const OPT_VIP: u16 = 1;
const OPT_PROTOCOL: u16 = 2;
const OPT_LOAD_BALANCER: u16 = 3;
/// At most this many events wait for the main loop (ovn-controller's limit).
pub const MAX_PENDING: usize = 1000;
pub const EVENT_TYPE: &str = "empty_lb_backends";

/// One `empty_lb_backends` event.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EmptyLbBackends {
    pub vip: String,
    pub protocol: String,
    pub load_balancer: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    #[error("event not present in the userdata")]
    NoEvent,
    #[error("controller event {0} is not known")]
    UnknownEvent(u32),
    #[error("truncated controller event option")]
    Truncated,
    #[error("unknown empty_lb_backends option {0}")]
    UnknownOption(u16),
    #[error("missing lb parameters in userdata")]
    Missing,
}

/// Reads the userdata after the action header: the event type, then options of
/// (code, length, bytes).
pub fn parse(payload: &[u8]) -> Result<EmptyLbBackends, EventError> {
    let (Some(kind), mut rest) = (payload.get(..4), payload.get(4..).unwrap_or_default()) else {
        return Err(EventError::NoEvent);
    };
    let kind = u32::from_be_bytes([kind[0], kind[1], kind[2], kind[3]]);
    if kind != EMPTY_LB_BACKENDS {
        return Err(EventError::UnknownEvent(kind));
    }
    let (mut vip, mut protocol, mut load_balancer) = (None, None, None);
    while !rest.is_empty() {
        let hdr = rest.get(..4).ok_or(EventError::Truncated)?;
        let code = u16::from_be_bytes([hdr[0], hdr[1]]);
        let size = usize::from(u16::from_be_bytes([hdr[2], hdr[3]]));
        let data = rest.get(4..4 + size).ok_or(EventError::Truncated)?;
        // ovn-controller copies the bytes up to the first NUL.
        let end = data.iter().position(|b| *b == 0).unwrap_or(data.len());
        let text = String::from_utf8_lossy(&data[..end]).into_owned();
        match code {
            OPT_VIP => vip = Some(text),
            OPT_PROTOCOL => protocol = Some(text),
            OPT_LOAD_BALANCER => load_balancer = Some(text),
            other => return Err(EventError::UnknownOption(other)),
        }
        rest = &rest[4 + size..];
    }
    match (vip, protocol, load_balancer) {
        (Some(vip), Some(protocol), Some(load_balancer)) => Ok(EmptyLbBackends {
            vip,
            protocol,
            load_balancer,
        }),
        _ => Err(EventError::Missing),
    }
}

/// The events waiting for the main loop, each once.
#[derive(Debug, Default)]
pub struct Pending {
    events: HashSet<EmptyLbBackends>,
}

impl Pending {
    /// `false` when the table is full and `e` is new (dropped).
    pub fn push(&mut self, e: EmptyLbBackends) -> bool {
        if self.events.len() >= MAX_PENDING && !self.events.contains(&e) {
            return false;
        }
        self.events.insert(e);
        true
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Everything pending, sorted; the table is empty afterwards.
    pub fn take(&mut self) -> Vec<EmptyLbBackends> {
        let mut out: Vec<_> = self.events.drain().collect();
        out.sort();
        out
    }
}

/// The last `seq_num` written (ovn-controller's counter lives as long as the process).
static SEQ_NUM: AtomicI64 = AtomicI64::new(0);

fn matches(row: &ControllerEvent, chassis: Uuid, e: &EmptyLbBackends) -> bool {
    let info = |k: &str| row.event_info.get(k).map(String::as_str);
    row.event_type == EVENT_TYPE
        && row.chassis == Some(chassis)
        && info("vip") == Some(e.vip.as_str())
        && info("protocol") == Some(e.protocol.as_str())
        && info("load_balancer") == Some(e.load_balancer.as_str())
}

/// Inserts a row for each of `events` this chassis has no row for yet.
pub fn write(sb: &Replica, events: &[EmptyLbBackends], chassis: Uuid, txn: &mut Transaction) {
    let rows: Vec<&ControllerEvent> = sb
        .table::<ControllerEvent>()
        .map(|t| t.iter().map(|(_, r)| r).collect())
        .unwrap_or_default();
    let mut done: HashSet<&EmptyLbBackends> = HashSet::new();
    for e in events {
        if !done.insert(e) || rows.iter().any(|r| matches(r, chassis, e)) {
            continue;
        }
        let seq = SEQ_NUM.fetch_add(1, Ordering::Relaxed) + 1;
        let info = Datum::Map(vec![
            (
                Atom::from("load_balancer"),
                Atom::from(e.load_balancer.as_str()),
            ),
            (Atom::from("protocol"), Atom::from(e.protocol.as_str())),
            (Atom::from("vip"), Atom::from(e.vip.as_str())),
        ]);
        txn.insert(
            "Controller_Event",
            Columns::new()
                .set("event_type", Atom::from(EVENT_TYPE))
                .set("seq_num", Atom::Integer(seq))
                .set("event_info", info)
                .set("chassis", Atom::Uuid(chassis)),
            None,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn userdata(opts: &[(u16, &[u8])]) -> Vec<u8> {
        let mut out = EMPTY_LB_BACKENDS.to_be_bytes().to_vec();
        for (code, data) in opts {
            out.extend_from_slice(&code.to_be_bytes());
            out.extend_from_slice(&(data.len() as u16).to_be_bytes());
            out.extend_from_slice(data);
        }
        out
    }

    #[test]
    fn the_three_options_make_an_event() {
        let e = parse(&userdata(&[
            (OPT_VIP, b"10.0.0.200:80"),
            (OPT_PROTOCOL, b"tcp"),
            (OPT_LOAD_BALANCER, b"c5b1b7a6-0000-4000-8000-000000000001"),
        ]))
        .expect("parses");
        assert_eq!(e.vip, "10.0.0.200:80");
        assert_eq!(e.protocol, "tcp");
        assert_eq!(e.load_balancer, "c5b1b7a6-0000-4000-8000-000000000001");
    }

    #[test]
    fn bad_userdata_is_an_error() {
        assert_eq!(parse(&[0, 0]), Err(EventError::NoEvent));
        assert_eq!(parse(&[0, 0, 0, 7]), Err(EventError::UnknownEvent(7)));
        assert_eq!(
            parse(&userdata(&[(OPT_VIP, b"x")])),
            Err(EventError::Missing)
        );
        assert_eq!(
            parse(&userdata(&[(9, b"x")])),
            Err(EventError::UnknownOption(9))
        );
        let mut cut = userdata(&[(OPT_VIP, b"10.0.0.1")]);
        cut.truncate(cut.len() - 1);
        assert_eq!(parse(&cut), Err(EventError::Truncated));
    }

    #[test]
    fn pending_events_are_kept_once_and_bounded() {
        let mut p = Pending::default();
        let e = |n: usize| EmptyLbBackends {
            vip: format!("10.0.0.{n}:80"),
            protocol: "tcp".into(),
            load_balancer: "lb".into(),
        };
        assert!(p.push(e(1)) && p.push(e(1)));
        assert_eq!(p.take(), vec![e(1)]);
        assert!(p.take().is_empty(), "taking clears");
        for n in 0..MAX_PENDING {
            assert!(p.push(e(n)));
        }
        assert!(!p.push(e(MAX_PENDING)), "full");
        assert!(p.push(e(3)), "a known one is still accepted");
    }

    #[test]
    fn a_row_is_inserted_unless_this_chassis_has_one() {
        let me: Uuid = "00000000-0000-4000-8000-0000000000c1"
            .parse()
            .expect("uuid");
        let other = "00000000-0000-4000-8000-0000000000c2";
        let mut sb = crate::southbound::Southbound::default();
        sb.load_json(&format!(
            r#"{{"caption":"Controller_Event table","headings":["_uuid","event_type","event_info","chassis","seq_num"],"data":[
                 [["uuid","00000000-0000-4000-8000-0000000000e1"],"empty_lb_backends",["map",[["vip","10.0.0.200:80"],["protocol","tcp"],["load_balancer","lb"]]],["uuid","{me}"],1],
                 [["uuid","00000000-0000-4000-8000-0000000000e2"],"empty_lb_backends",["map",[["vip","10.0.0.201:80"],["protocol","tcp"],["load_balancer","lb"]]],["uuid","{other}"],1]]}}"#
        ))
        .expect("loads");
        let e = |vip: &str| EmptyLbBackends {
            vip: vip.into(),
            protocol: "tcp".into(),
            load_balancer: "lb".into(),
        };
        let ops = |events: &[EmptyLbBackends]| {
            let mut txn = Transaction::new(sbclient::ovn_sb::DATABASE);
            write(&sb.replica, events, me, &mut txn);
            txn.to_params().to_string()
        };
        assert!(
            !ops(&[e("10.0.0.200:80")]).contains("insert"),
            "already there"
        );
        // Another chassis's row does not count; the same event twice is one row.
        let text = ops(&[e("10.0.0.201:80"), e("10.0.0.201:80")]);
        assert_eq!(text.matches("\"insert\"").count(), 1, "{text}");
        assert!(
            text.contains("\"event_type\":\"empty_lb_backends\"") && text.contains(&me.to_string()),
            "{text}"
        );
        let first = text
            .split("\"seq_num\":")
            .nth(1)
            .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse::<i64>().ok())
            .expect("seq_num");
        let again = ops(&[e("10.0.0.202:80")]);
        assert!(
            again.contains(&format!("\"seq_num\":{}", first + 1)),
            "numbers go up: {again}"
        );
    }

    proptest::proptest! {
        #[test]
        fn any_userdata_parses_or_fails_without_panic(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64),
        ) {
            let _ = parse(&bytes);
            let mut with_type = EMPTY_LB_BACKENDS.to_be_bytes().to_vec();
            with_type.extend_from_slice(&bytes);
            let _ = parse(&with_type);
        }
    }
}
