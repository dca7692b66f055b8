//! What the compiler asks of the chassis and the Southbound content ([`ChassisView`]),
//! and the shared ids its flows refer to: groups by content, meters, conjunctions.

use std::collections::HashMap;

use openflow::wire::{Group, MeterMod};
use sbclient::Uuid;

/// A group's identity: its content in one canonical form (no id; bucket weights and
/// watches as OVS reports them; actions by meaning), so a group the compiler builds and the
/// same group read back from a switch are one key.
pub type GroupKey = std::sync::Arc<Group>;

/// The key of `g`.
pub fn group_key_of(g: &Group) -> GroupKey {
    use openflow::wire::group_mod::OFPGT_SELECT;
    let mut k = g.clone();
    k.group_id = 0;
    let select = k.group_type == OFPGT_SELECT;
    for b in &mut k.buckets {
        if b.weight.is_none() && select {
            b.weight = Some(1);
        }
        if b.watch_port == Some(u32::MAX) {
            b.watch_port = None;
        }
        if b.watch_group == Some(u32::MAX) {
            b.watch_group = None;
        }
        b.actions = openflow::action::canonical(&b.actions);
    }
    std::sync::Arc::new(k)
}

/// An id a compiled flow refers to; its user releases it when the flow goes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum IdUse {
    Group(GroupKey),
    Meter(String),
    Conj(Uuid, Uuid),
}

/// What the compiler needs to know about this chassis and the Southbound content.
pub trait ChassisView: Sync {
    fn address_set(&self, name: &str) -> Option<&[String]>;
    /// Port group by SB name, already filtered to ports related to this chassis.
    fn port_group(&self, name: &str) -> Option<&[String]>;
    /// Tunnel key of a port binding or multicast group on a datapath ("none" is 0).
    fn port_key(&self, dp: &Uuid, name: &str) -> Option<u32>;
    fn is_resident(&self, port: &str) -> bool;
    /// Whether (datapath, port) is related to this chassis (LS port-pinned flows).
    fn is_related(&self, dp_key: u32, port_key: u32) -> bool;
    /// The id of `group` (one more user) and its key.
    fn group_id(&self, group: &Group) -> Option<(u32, GroupKey)>;
    /// The id of the meter `key` (one more user), installed as `meter`.
    fn meter_id(&self, key: &str, meter: &MeterMod) -> Option<u32>;
    /// The id of SB meter `name` (one more user).
    fn named_meter(&self, name: &str) -> Option<u32>;
    fn template_vars(&self) -> &HashMap<String, String>;
    /// Whether the SB DHCP option catalogue knows `name` (default: yes).
    fn dhcp_option_known(&self, _v6: bool, _name: &str) -> bool {
        true
    }
    /// The OpenFlow port of the tunnel to the chassis port `port` of datapath `dp` is bound
    /// to (`fwd_group` liveness; default: none).
    fn tunnel_ofport(&self, _dp: Uuid, _port: &str) -> Option<u32> {
        None
    }
    /// Whether the local OVS has a `Flow_Sample_Collector_Set` with this id (default: no).
    fn collector_set_exists(&self, _id: u32) -> bool {
        false
    }
    /// First of `n` consecutive conjunction ids for (lflow, datapath) (one more user).
    fn conj_ids(&self, lflow: &Uuid, dp: &Uuid, n: u32) -> u32;
    /// SB_Global `options:register_consolidation` (see `EncodeEnv`).
    fn register_consolidation(&self) -> bool {
        false
    }
    /// The first conjunction id (lflow, datapath) holds, without taking it.
    fn held_conj_ids(&self, _lflow: &Uuid, _dp: &Uuid) -> Option<u32> {
        None
    }
}

/// OVN's conjunction-id start for (lflow, datapath): `hash_int(uuid_hash(lflow),
/// uuid_hash(dp))` with OVS's murmur-based `hash_2words`.
pub fn conj_id_hash(lflow_uuid: &Uuid, dp_uuid: &Uuid) -> u32 {
    fn part0(u: &Uuid) -> u32 {
        (u.as_u128() >> 96) as u32
    }
    fn add(h: u32, d: u32) -> u32 {
        let mut h = h;
        if d != 0 {
            let d = d
                .wrapping_mul(0xcc9e_2d51)
                .rotate_left(15)
                .wrapping_mul(0x1b87_3593);
            h ^= d;
        }
        h.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64)
    }
    fn finish(mut h: u32) -> u32 {
        h ^= h >> 16;
        h = h.wrapping_mul(0x85eb_ca6b);
        h ^= h >> 13;
        h = h.wrapping_mul(0xc2b2_ae35);
        h ^ (h >> 16)
    }
    finish(add(add(part0(lflow_uuid), 0), part0(dp_uuid)) ^ 8)
}

/// The cookie ovn-controller gives flows of an SB row: the first 32 bits of its uuid.
pub fn cookie_of(uuid: &Uuid) -> u64 {
    (uuid.as_u128() >> 96) as u64
}
