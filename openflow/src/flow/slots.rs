//! `FlowMatch`: (value, mask) constraints on the slots of an OVS flow.

use crate::oxm::{FieldId, RegFamily};

/// Storage slots of an OVS flow, in `ovs-ofctl` print order. Fields that share storage in
/// OVS share a slot: `ip_src`/`arp_spa`, `tcp_src`/`udp_src`/`icmp_type`, `arp_sha`/`nd_sll`,
/// `ip_dscp`/`nw_ecn` (in `nw_tos`); the registers are always the 32-bit `reg`s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Slot {
    PktMark,
    ConjId,
    CtState,
    CtMark,
    CtLabel,
    DlType,
    Reg(u8),
    TunId,
    Metadata,
    InPort,
    VlanTci,
    DlSrc,
    DlDst,
    NwSrc,
    NwDst,
    Ipv6Src,
    Ipv6Dst,
    Ipv6Label,
    NwProto,
    ArpSha,
    ArpTha,
    NwTos,
    NwTtl,
    NwFrag,
    TpSrc,
    TpDst,
    NdTarget,
    TcpFlags,
}

/// A set of (value, mask) constraints on flow slots: the canonical match, and the key of
/// flow tables (two matches are the same flow iff they are equal).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowMatch {
    /// Sorted by slot; a handful of entries, so a vector beats a tree.
    slots: Vec<(Slot, u128, u128)>,
}

/// All ones in the low `bits` bits.
pub(crate) fn ones(bits: u32) -> u128 {
    if bits >= 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    }
}

/// The slot a (non-register) field lives in.
fn slot_of(f: FieldId) -> Option<Slot> {
    Some(match f {
        FieldId::IN_PORT => Slot::InPort,
        FieldId::METADATA => Slot::Metadata,
        FieldId::PKT_MARK => Slot::PktMark,
        FieldId::CONJ_ID => Slot::ConjId,
        FieldId::CT_STATE => Slot::CtState,
        FieldId::CT_MARK => Slot::CtMark,
        FieldId::CT_LABEL => Slot::CtLabel,
        FieldId::TUN_ID => Slot::TunId,
        FieldId::ETH_SRC => Slot::DlSrc,
        FieldId::ETH_DST => Slot::DlDst,
        FieldId::ETH_TYPE => Slot::DlType,
        FieldId::VLAN_TCI => Slot::VlanTci,
        FieldId::NW_PROTO | FieldId::ARP_OP => Slot::NwProto,
        FieldId::NW_TTL => Slot::NwTtl,
        FieldId::NW_FRAG => Slot::NwFrag,
        FieldId::NW_TOS => Slot::NwTos,
        FieldId::IP_SRC | FieldId::ARP_SPA => Slot::NwSrc,
        FieldId::IP_DST | FieldId::ARP_TPA => Slot::NwDst,
        FieldId::IPV6_SRC => Slot::Ipv6Src,
        FieldId::IPV6_DST => Slot::Ipv6Dst,
        FieldId::IPV6_LABEL => Slot::Ipv6Label,
        FieldId::ARP_SHA | FieldId::ND_SLL => Slot::ArpSha,
        FieldId::ARP_THA | FieldId::ND_TLL => Slot::ArpTha,
        FieldId::ND_TARGET => Slot::NdTarget,
        FieldId::TCP_SRC
        | FieldId::UDP_SRC
        | FieldId::SCTP_SRC
        | FieldId::ICMP_TYPE
        | FieldId::ICMPV6_TYPE => Slot::TpSrc,
        FieldId::TCP_DST
        | FieldId::UDP_DST
        | FieldId::SCTP_DST
        | FieldId::ICMP_CODE
        | FieldId::ICMPV6_CODE => Slot::TpDst,
        FieldId::TCP_FLAGS => Slot::TcpFlags,
        _ => return None,
    })
}

impl FlowMatch {
    pub fn new() -> Self {
        Self::default()
    }

    /// A copy with room for `extra` more slots, so the adds that follow do not reallocate.
    #[must_use]
    pub fn clone_with_room(&self, extra: usize) -> Self {
        let mut slots = Vec::with_capacity(self.slots.len() + extra);
        slots.extend_from_slice(&self.slots);
        Self { slots }
    }

    /// Adds `field & mask == value`. Returns false if it contradicts what is already there,
    /// or if the field has no slot (it cannot be matched by this model).
    pub fn add(&mut self, field: FieldId, value: u128, mask: u128) -> bool {
        match field.register() {
            Some((RegFamily::Reg, n)) => return self.put(Slot::Reg(n), value, mask),
            Some((RegFamily::Xreg, n)) => {
                return self.put(
                    Slot::Reg(2 * n),
                    (value >> 32) & 0xffff_ffff,
                    (mask >> 32) & 0xffff_ffff,
                ) && self.put(
                    Slot::Reg(2 * n + 1),
                    value & 0xffff_ffff,
                    mask & 0xffff_ffff,
                );
            }
            Some((RegFamily::Xxreg, n)) => {
                return (0..4u8).all(|k| {
                    let shift = 32 * (3 - u32::from(k));
                    self.put(
                        Slot::Reg(4 * n + k),
                        (value >> shift) & 0xffff_ffff,
                        (mask >> shift) & 0xffff_ffff,
                    )
                });
            }
            None => {}
        }
        match field {
            FieldId::IP_DSCP => self.put(Slot::NwTos, value << 2, mask << 2),
            FieldId::NW_ECN => self.put(Slot::NwTos, value, mask),
            f => {
                let Some(slot) = slot_of(f) else { return false };
                // 8-bit ICMP fields live in 16-bit transport slots; an exact match is all ones.
                let mask = if matches!(slot, Slot::TpSrc | Slot::TpDst)
                    && f.def().n_bits == 8
                    && mask == 0xff
                {
                    0xffff
                } else {
                    mask
                };
                self.put(slot, value, mask)
            }
        }
    }

    /// Sets (or replaces) the conjunction id matched.
    pub fn set_conj_id(&mut self, id: u32) {
        let v = (Slot::ConjId, u128::from(id), u128::from(u32::MAX));
        match self.slots.binary_search_by_key(&Slot::ConjId, |e| e.0) {
            Ok(i) => self.slots[i] = v,
            Err(i) => self.slots.insert(i, v),
        }
    }

    pub(crate) fn put(&mut self, slot: Slot, value: u128, mask: u128) -> bool {
        if mask == 0 {
            return true;
        }
        match self.slots.binary_search_by_key(&slot, |e| e.0) {
            Ok(i) => {
                let e = &mut self.slots[i];
                if (e.1 ^ value) & e.2 & mask != 0 {
                    return false;
                }
                e.1 |= value & mask;
                e.2 |= mask;
            }
            Err(i) => self.slots.insert(i, (slot, value & mask, mask)),
        }
        true
    }

    /// The (value, mask) of a slot, if constrained.
    pub fn get(&self, slot: Slot) -> Option<(u128, u128)> {
        self.slots
            .binary_search_by_key(&slot, |e| e.0)
            .ok()
            .map(|i| (self.slots[i].1, self.slots[i].2))
    }

    /// Every constrained slot, in print order.
    pub fn iter(&self) -> impl Iterator<Item = (Slot, u128, u128)> + '_ {
        self.slots.iter().copied()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The match as OVS stores it after an OpenFlow 1.3+ (OXM) flow_mod: the VLAN TCI is sent
    /// as OXM VLAN_VID (VID and present bit, maskable) plus an exact VLAN_PCP, and the PCP
    /// only when the VID part is non-zero. So `vlan_tci=0/0xffff` becomes `0/0x1fff`, and a
    /// partial PCP mask becomes exact (which narrows e.g. `vlan.pcp > 3` to pcp 4).
    pub fn canonical_of15(&self) -> FlowMatch {
        let mut out = self.clone();
        if let Ok(i) = out.slots.binary_search_by_key(&Slot::VlanTci, |e| e.0) {
            let (_, v, m) = out.slots[i];
            let (mut nv, mut nm) = (v & 0x1fff, m & 0x1fff);
            if nv != 0 && m & 0xe000 != 0 {
                nv |= v & 0xe000;
                nm |= 0xe000;
            }
            if nm == 0 {
                out.slots.remove(i);
            } else {
                out.slots[i] = (Slot::VlanTci, nv & nm, nm);
            }
        }
        out
    }

    /// Exact `dl_type`, if matched.
    pub(crate) fn dl_type(&self) -> Option<u16> {
        self.get(Slot::DlType).map(|(v, _)| v as u16)
    }

    /// Exact `nw_proto`, if matched.
    pub(crate) fn nw_proto(&self) -> Option<u8> {
        self.get(Slot::NwProto).map(|(v, _)| v as u8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflicts_and_register_views() {
        let mut m = FlowMatch::new();
        assert!(m.add(FieldId::xxreg(0), 1 << 104, 1 << 104));
        assert_eq!(m.get(Slot::Reg(0)), Some((0x100, 0x100)));
        assert!(m.add(FieldId::xreg(4), 0x10, 0x10));
        assert_eq!(m.get(Slot::Reg(9)), Some((0x10, 0x10)));
        assert!(!m.add(FieldId::REG9, 0, 0x10), "contradicts reg9[4]=1");
        assert!(m.add(FieldId::REG9, 0x10, 0x30));
        assert_eq!(m.get(Slot::Reg(9)), Some((0x10, 0x30)));
        assert!(m.add(FieldId::ICMP_TYPE, 3, 0xff));
        assert_eq!(m.get(Slot::TpSrc), Some((3, 0xffff)));
        assert!(m.add(FieldId::IP_DSCP, 0x2e, 0x3f));
        assert!(m.add(FieldId::NW_ECN, 1, 3));
        assert_eq!(m.get(Slot::NwTos), Some((0xb9, 0xff)));
        assert!(!m.add(FieldId::TUN_METADATA0, 1, 1), "no slot");
    }

    #[test]
    fn of15_vlan_canonical_form() {
        let canon = |v: u128, m: u128| {
            let mut x = FlowMatch::new();
            x.add(FieldId::VLAN_TCI, v, m);
            x.canonical_of15().get(Slot::VlanTci)
        };
        assert_eq!(canon(0, 0xffff), Some((0, 0x1fff)));
        assert_eq!(canon(0x9000, 0x9000), Some((0x9000, 0xf000)));
        assert_eq!(canon(0x1000, 0x1000), Some((0x1000, 0x1000)));
        assert_eq!(canon(0x8000, 0x8000), None);
    }
}
