//! Packets that wait for address resolution (`arp {}` / `nd_ns {}`), and the MAC bindings
//! learnt (`put_arp` / `put_nd`) that wait to be written to the Southbound database.
//! Limits as ovn-controller 23.03.1's: 4 packets per (datapath, outport, next hop), the
//! oldest dropped first; 1000 keys; a key unused for 10 s is dropped; 1000 pending MAC
//! bindings; a binding learnt from a multicast frame waits 1-50 ms (so that one of the
//! chassis that all see a broadcast reply writes first, the others then find the row).

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use openflow::action::Action;

use super::packet::Mac;

pub const PACKETS_PER_KEY: usize = 4;
pub const MAX_KEYS: usize = 1000;
pub const KEY_TIMEOUT: Duration = Duration::from_secs(10);
pub const MAX_PENDING_BINDINGS: usize = 1000;
pub const MAX_MULTICAST_DELAY_MS: u64 = 50;

/// Where a buffered packet goes: the logical datapath, its outport and the next hop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BufferKey {
    pub datapath: u32,
    pub outport: u32,
    pub next_hop: IpAddr,
}

/// One buffered packet: its bytes and the actions that restore its pipeline context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buffered {
    pub packet: Vec<u8>,
    pub actions: Vec<Action>,
}

#[derive(Debug)]
struct Queue {
    packets: VecDeque<Buffered>,
    touched: Instant,
}

/// The packets waiting for a MAC binding.
#[derive(Debug, Default)]
pub struct Buffers {
    queues: HashMap<BufferKey, Queue>,
}

impl Buffers {
    /// Buffers `p` under `key`. `false` when the table of keys is full (the packet is
    /// dropped, as `pinctrl_drop_buffered_packets_map` counts).
    pub fn push(&mut self, key: BufferKey, p: Buffered, now: Instant) -> bool {
        if !self.queues.contains_key(&key) && self.queues.len() >= MAX_KEYS {
            return false;
        }
        let q = self.queues.entry(key).or_insert_with(|| Queue {
            packets: VecDeque::with_capacity(PACKETS_PER_KEY),
            touched: now,
        });
        q.touched = now;
        if q.packets.len() >= PACKETS_PER_KEY {
            q.packets.pop_front();
        }
        q.packets.push_back(p);
        true
    }

    pub fn keys(&self) -> impl Iterator<Item = &BufferKey> {
        self.queues.keys()
    }

    pub fn len(&self) -> usize {
        self.queues.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queues.is_empty()
    }

    pub fn packet_count(&self) -> usize {
        self.queues.values().map(|q| q.packets.len()).sum()
    }

    /// Takes the packets of `key` (its MAC binding is known now).
    pub fn take(&mut self, key: &BufferKey) -> Vec<Buffered> {
        self.queues
            .remove(key)
            .map(|q| q.packets.into())
            .unwrap_or_default()
    }

    /// Drops the keys not used for [`KEY_TIMEOUT`]; returns how many packets went.
    pub fn expire(&mut self, now: Instant) -> usize {
        let mut dropped = 0;
        self.queues.retain(|_, q| {
            let keep = now.saturating_duration_since(q.touched) <= KEY_TIMEOUT;
            if !keep {
                dropped += q.packets.len();
            }
            keep
        });
        dropped
    }
}

/// A MAC binding learnt from a packet: to be written to the Southbound `MAC_Binding` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MacBindingWrite {
    pub datapath: u32,
    pub port: u32,
    pub ip: IpAddr,
    pub mac: Mac,
}

/// A MAC learnt on a port (`put_fdb`): to be written to the Southbound `FDB` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FdbWrite {
    pub datapath: u32,
    pub port: u32,
    pub mac: Mac,
}

/// A Southbound write pinctrl asks the main loop for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SbWrite {
    MacBinding(MacBindingWrite),
    Fdb(FdbWrite),
    /// A controller event (for the chassis), a virtual port claim, a health status.
    Event(super::events::EmptyLbBackends, sbclient::Uuid),
    Vport(super::vport::VportClaim, sbclient::Uuid),
    /// A live-migrated port activated on the chassis.
    Activated(super::activation::Activation, sbclient::Uuid),
    SvcStatus(super::svc_monitor::StatusWrite),
    /// A BFD session's new state, for its row's `status`.
    BfdStatus(sbclient::Uuid, &'static str),
    /// A delegated prefix for a router port's `options:ipv6_ra_pd_list`.
    PrefixDelegated(sbclient::Uuid, String),
    /// The snooping tables as they are now, for `IGMP_Group` (the newest one wins; the
    /// main loop keeps it and makes the rows follow it).
    Igmp(super::igmp::Snapshot),
    /// A binding a gratuitous ARP teaches a local router directly; `update_only`: only an
    /// existing row changes (the router has `always_learn_from_arp_request=false`).
    Announced {
        write: MacBindingWrite,
        update_only: bool,
    },
}

/// At most this many learnt FDB entries wait to be written (as ovn-controller's).
pub const MAX_PENDING_FDB: usize = 1000;

/// Learnt bindings not yet handed to the main loop, one per (datapath, port, IP): a
/// newer MAC replaces an older one.
#[derive(Debug, Default)]
pub struct PendingBindings {
    entries: HashMap<(u32, u32, IpAddr), (Mac, Instant)>,
}

impl PendingBindings {
    /// Queues `w`, to be written at `commit_at`. `false` when full (dropped, as
    /// `pinctrl_drop_put_mac_binding` counts).
    pub fn put(&mut self, w: MacBindingWrite, commit_at: Instant) -> bool {
        let key = (w.datapath, w.port, w.ip);
        if let Some(e) = self.entries.get_mut(&key) {
            e.0 = w.mac;
            return true;
        }
        if self.entries.len() >= MAX_PENDING_BINDINGS {
            return false;
        }
        self.entries.insert(key, (w.mac, commit_at));
        true
    }

    /// The bindings due at `now`, in a stable order, removed from the queue.
    pub fn due(&mut self, now: Instant) -> Vec<MacBindingWrite> {
        let mut out: Vec<MacBindingWrite> = self
            .entries
            .iter()
            .filter(|(_, (_, at))| *at <= now)
            .map(|(&(datapath, port, ip), &(mac, _))| MacBindingWrite {
                datapath,
                port,
                ip,
                mac,
            })
            .collect();
        for w in &out {
            self.entries.remove(&(w.datapath, w.port, w.ip));
        }
        out.sort_by_key(|w| (w.datapath, w.port, w.ip));
        out
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8) -> BufferKey {
        BufferKey {
            datapath: 1,
            outport: 2,
            next_hop: IpAddr::from([10, 0, 0, n]),
        }
    }

    fn pkt(n: u8) -> Buffered {
        Buffered {
            packet: vec![n],
            actions: Vec::new(),
        }
    }

    #[test]
    fn a_key_keeps_its_four_newest_packets_and_expires_after_ten_seconds() {
        let t0 = Instant::now();
        let mut b = Buffers::default();
        for n in 0..6 {
            assert!(b.push(key(1), pkt(n), t0));
        }
        assert!(b.push(key(2), pkt(9), t0 + Duration::from_secs(5)));
        assert_eq!(b.expire(t0 + Duration::from_secs(11)), 4);
        assert_eq!(b.len(), 1);
        let got: Vec<u8> = b.take(&key(2)).iter().map(|p| p.packet[0]).collect();
        assert_eq!(got, [9]);
        for n in 0..6 {
            b.push(key(1), pkt(n), t0);
        }
        let got: Vec<u8> = b.take(&key(1)).iter().map(|p| p.packet[0]).collect();
        assert_eq!(got, [2, 3, 4, 5]);
        assert!(b.is_empty());
    }

    #[test]
    fn the_key_table_is_bounded() {
        let t0 = Instant::now();
        let mut b = Buffers::default();
        for i in 0..MAX_KEYS as u32 {
            let k = BufferKey {
                datapath: i,
                outport: 1,
                next_hop: IpAddr::from([10, 0, 0, 1]),
            };
            assert!(b.push(k, pkt(0), t0));
        }
        assert!(!b.push(key(1), pkt(0), t0));
        assert_eq!(b.packet_count(), MAX_KEYS);
    }

    #[test]
    fn pending_bindings_are_deduplicated_and_wait_for_their_time() {
        let t0 = Instant::now();
        let mut p = PendingBindings::default();
        let w = |mac: u8| MacBindingWrite {
            datapath: 3,
            port: 1,
            ip: IpAddr::from([10, 0, 1, 7]),
            mac: [0, 0, 0, 0, 0, mac],
        };
        assert!(p.put(w(1), t0 + Duration::from_millis(20)));
        assert!(p.put(w(2), t0));
        assert!(p.due(t0).is_empty());
        assert_eq!(p.due(t0 + Duration::from_millis(20)), [w(2)]);
        assert!(p.is_empty());
    }
}
