//! Gratuitous ARP (RARP for a MAC without IPv4) announcements, on ovn-controller's
//! schedule: the first one second after the address appears, then after 2, 4, 8 and 16
//! more seconds, five in all. What to announce ([`Announce`]) comes from the main loop
//! ([`super::announce`]); this schedule is sans-IO, driven by the pinctrl task's clock in
//! milliseconds.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use openflow::wire::PacketOut;

use super::packet::{self, Mac};

const BROADCAST: Mac = [0xff; 6];
const ETH_TYPE_RARP: u16 = 0x8035;
const ARP_OP_RARP: u16 = 3;
/// Announcement gaps double from one second until they reach this many seconds.
const MAX_BACKOFF_S: u64 = 16;
const FIRST_DELAY_MS: u64 = 1000;

/// One address to announce, and where it enters the logical pipeline.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Announce {
    /// `<lport>` for a VIF, `<lport>-<ip>` or `<lport>-noip` for NAT addresses: an address
    /// keeps its schedule while its key stays.
    pub key: String,
    pub mac: Mac,
    /// `None`: a RARP for the MAC.
    pub ipv4: Option<Ipv4Addr>,
    /// The logical switch and port whose ingress pipeline the announcement enters.
    pub datapath: u32,
    pub port: u32,
}

#[derive(Debug, Clone)]
struct Entry {
    announce: Announce,
    /// Next announcement (ms on the task's clock); `None` once all five went out.
    due: Option<u64>,
    backoff_s: u64,
}

/// The announcements of this chassis and when each is due.
#[derive(Debug, Default)]
pub struct Schedule {
    entries: BTreeMap<String, Entry>,
}

impl Schedule {
    /// Takes the main loop's current list: new keys start their five announcements, kept
    /// keys follow a moved port without restarting, gone keys stop.
    pub fn sync(&mut self, wanted: &[Announce], now_ms: u64) {
        let keep: std::collections::BTreeSet<&str> =
            wanted.iter().map(|a| a.key.as_str()).collect();
        self.entries.retain(|k, _| keep.contains(k.as_str()));
        for a in wanted {
            match self.entries.get_mut(&a.key) {
                Some(e) => {
                    e.announce.datapath = a.datapath;
                    e.announce.port = a.port;
                }
                None => {
                    self.entries.insert(
                        a.key.clone(),
                        Entry {
                            announce: a.clone(),
                            due: Some(now_ms + FIRST_DELAY_MS),
                            backoff_s: 1,
                        },
                    );
                }
            }
        }
    }

    /// The announcements due at `now_ms`, with their next time set.
    pub fn due(&mut self, now_ms: u64) -> Vec<Announce> {
        let mut out = Vec::new();
        for e in self.entries.values_mut() {
            if e.due.is_some_and(|d| d <= now_ms) {
                out.push(e.announce.clone());
                if e.backoff_s < MAX_BACKOFF_S {
                    e.backoff_s *= 2;
                    e.due = Some(now_ms + e.backoff_s * 1000);
                } else {
                    e.due = None;
                }
            }
        }
        out
    }

    /// When the next announcement is due, if any is.
    pub fn next_due(&self) -> Option<u64> {
        self.entries.values().filter_map(|e| e.due).min()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The frame of an announcement: a broadcast ARP request for its own address (sender and
/// target IP the same, target MAC zero), or a RARP request naming the MAC twice.
pub fn frame(a: &Announce) -> Vec<u8> {
    if let Some(ip) = a.ipv4 {
        return packet::arp_request(a.mac, BROADCAST, ip, ip, None);
    }
    let mut out = Vec::with_capacity(42);
    out.extend_from_slice(&BROADCAST);
    out.extend_from_slice(&a.mac);
    out.extend_from_slice(&ETH_TYPE_RARP.to_be_bytes());
    out.extend_from_slice(&1u16.to_be_bytes()); // Ethernet
    out.extend_from_slice(&0x0800u16.to_be_bytes()); // IPv4
    out.extend_from_slice(&[6, 4]);
    out.extend_from_slice(&ARP_OP_RARP.to_be_bytes());
    out.extend_from_slice(&a.mac);
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&a.mac);
    out.extend_from_slice(&[0; 4]);
    out
}

/// The packet-out that sends `a` into the ingress pipeline of its port's switch, as if the
/// port had sent it.
pub fn packet_out(a: &Announce, ingress_table: u8) -> PacketOut {
    let at = super::packet_in::Entry {
        datapath: a.datapath,
        inport: Some(a.port),
        table: ingress_table,
        ..Default::default()
    };
    super::packet_in::into_pipeline(at, frame(a))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vif(key: &str, port: u32) -> Announce {
        Announce {
            key: key.to_owned(),
            mac: [0x50, 0x54, 0, 0, 0, 0x33],
            ipv4: Some(Ipv4Addr::new(172, 16, 0, 33)),
            datapath: 1,
            port,
        }
    }

    /// Every ms from `from` to `to`: the times announcements went out.
    fn run(s: &mut Schedule, from: u64, to: u64) -> Vec<u64> {
        (from..=to).filter(|t| !s.due(*t).is_empty()).collect()
    }

    #[test]
    fn five_announcements_at_one_three_seven_fifteen_thirtyone_seconds() {
        let mut s = Schedule::default();
        s.sync(&[vif("vm1", 2)], 0);
        assert_eq!(s.next_due(), Some(1000));
        assert_eq!(run(&mut s, 0, 100_000), [1000, 3000, 7000, 15_000, 31_000]);
        assert_eq!(s.next_due(), None);
        assert_eq!(s.len(), 1, "kept, so that it is not announced again");
    }

    #[test]
    fn kept_key_follows_its_port_without_restarting_and_gone_key_stops() {
        let mut s = Schedule::default();
        s.sync(&[vif("vm1", 2)], 0);
        assert_eq!(run(&mut s, 0, 5000), [1000, 3000]);
        s.sync(&[vif("vm1", 9)], 5000);
        let sent = s.due(7000);
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].port, 9);
        s.sync(&[], 8000);
        assert!(s.is_empty());
        assert_eq!(s.next_due(), None);
        // Back again: a new schedule from the start.
        s.sync(&[vif("vm1", 9)], 20_000);
        assert_eq!(s.next_due(), Some(21_000));
    }

    #[test]
    fn garp_and_rarp_frames() {
        let g = frame(&vif("vm1", 2));
        let text = packet::hex(&g);
        assert_eq!(
            text,
            "ffffffffffff5054000000330806\
             0001080006040001505400000033ac100021000000000000ac100021"
        );
        let mut v = vif("lrp-noip", 2);
        v.ipv4 = None;
        let r = packet::hex(&frame(&v));
        assert_eq!(
            r,
            "ffffffffffff5054000000338035\
             00010800060400035054000000330000000050540000003300000000"
        );
        let po = packet_out(&vif("vm1", 2), 8);
        let acts: Vec<String> = po.actions.iter().map(ToString::to_string).collect();
        assert_eq!(
            acts,
            [
                "set_field:0x1->metadata",
                "set_field:0x2->reg14",
                "resubmit(CONTROLLER,8)"
            ]
        );
    }
}
