//! `FlowMatch`: (value, mask) constraints on the slots of an OVS flow.

use smallvec::SmallVec;

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
    CtNwSrc,
    CtNwDst,
    CtIpv6Src,
    CtIpv6Dst,
    CtNwProto,
    CtTpSrc,
    CtTpDst,
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

impl Slot {
    /// The slot's code: its rank in print order (registers 13..=28).
    fn code(self) -> u8 {
        match self {
            Slot::PktMark => 0,
            Slot::ConjId => 1,
            Slot::CtState => 2,
            Slot::CtMark => 3,
            Slot::CtLabel => 4,
            Slot::CtNwSrc => 5,
            Slot::CtNwDst => 6,
            Slot::CtIpv6Src => 7,
            Slot::CtIpv6Dst => 8,
            Slot::CtNwProto => 9,
            Slot::CtTpSrc => 10,
            Slot::CtTpDst => 11,
            Slot::DlType => 12,
            Slot::Reg(n) => 13 + (n & 15),
            Slot::TunId => 29,
            Slot::Metadata => 30,
            Slot::InPort => 31,
            Slot::VlanTci => 32,
            Slot::DlSrc => 33,
            Slot::DlDst => 34,
            Slot::NwSrc => 35,
            Slot::NwDst => 36,
            Slot::Ipv6Src => 37,
            Slot::Ipv6Dst => 38,
            Slot::Ipv6Label => 39,
            Slot::NwProto => 40,
            Slot::ArpSha => 41,
            Slot::ArpTha => 42,
            Slot::NwTos => 43,
            Slot::NwTtl => 44,
            Slot::NwFrag => 45,
            Slot::TpSrc => 46,
            Slot::TpDst => 47,
            Slot::NdTarget => 48,
            Slot::TcpFlags => 49,
        }
    }

    fn from_code(c: u8) -> Slot {
        match c {
            0 => Slot::PktMark,
            1 => Slot::ConjId,
            2 => Slot::CtState,
            3 => Slot::CtMark,
            4 => Slot::CtLabel,
            5 => Slot::CtNwSrc,
            6 => Slot::CtNwDst,
            7 => Slot::CtIpv6Src,
            8 => Slot::CtIpv6Dst,
            9 => Slot::CtNwProto,
            10 => Slot::CtTpSrc,
            11 => Slot::CtTpDst,
            12 => Slot::DlType,
            13..=28 => Slot::Reg(c - 13),
            29 => Slot::TunId,
            30 => Slot::Metadata,
            31 => Slot::InPort,
            32 => Slot::VlanTci,
            33 => Slot::DlSrc,
            34 => Slot::DlDst,
            35 => Slot::NwSrc,
            36 => Slot::NwDst,
            37 => Slot::Ipv6Src,
            38 => Slot::Ipv6Dst,
            39 => Slot::Ipv6Label,
            40 => Slot::NwProto,
            41 => Slot::ArpSha,
            42 => Slot::ArpTha,
            43 => Slot::NwTos,
            44 => Slot::NwTtl,
            45 => Slot::NwFrag,
            46 => Slot::TpSrc,
            47 => Slot::TpDst,
            48 => Slot::NdTarget,
            _ => Slot::TcpFlags,
        }
    }

    /// Bytes of a value in this slot.
    fn width(code: u8) -> usize {
        match code {
            9 | 43 | 44 | 45 => 1,
            10 | 11 | 12 | 31 | 32 | 40 | 46 | 47 | 49 => 2,
            33 | 34 | 41 | 42 => 6,
            29 | 30 => 8,
            4 | 7 | 8 | 37 | 38 | 48 => 16,
            _ => 4,
        }
    }
}

/// All ones in the low `bits` bits.
pub(crate) fn ones(bits: u32) -> u128 {
    if bits >= 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    }
}

/// Entry header flag: a mask follows the value (else the value is matched exactly).
const HAS_MASK: u8 = 0x80;

/// A set of (value, mask) constraints on flow slots: the canonical match, and the key of
/// flow tables (two matches are the same flow iff they are equal).
///
/// Stored packed, because a controller holds hundreds of thousands: entries sorted by slot,
/// each `code | HAS_MASK?`, the value in the slot's width, and the mask only when it is not
/// all ones (typically 25-40 bytes a flow). Up to [`INLINE_MATCH_BYTES`] live inside the
/// value: no heap allocation, and no allocator overhead, for 97% of the flows of an
/// ovn-kubernetes-shaped table.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowMatch {
    bytes: SmallVec<[u8; INLINE_MATCH_BYTES]>,
}

/// Match bytes held without a heap allocation.
pub const INLINE_MATCH_BYTES: usize = 40;

fn get_be(b: &[u8]) -> u128 {
    b.iter().fold(0u128, |a, x| (a << 8) | u128::from(*x))
}

/// (code, value, mask, start, end) of the entry at `at`.
fn entry(b: &[u8], at: usize) -> (u8, u128, u128, usize) {
    let head = b[at];
    let code = head & !HAS_MASK;
    let w = Slot::width(code);
    let v = get_be(&b[at + 1..at + 1 + w]);
    if head & HAS_MASK != 0 {
        let m = get_be(&b[at + 1 + w..at + 1 + 2 * w]);
        (code, v, m, at + 1 + 2 * w)
    } else {
        (code, v, ones(8 * w as u32), at + 1 + w)
    }
}

fn encode_entry(code: u8, v: u128, m: u128) -> ([u8; 33], usize) {
    let w = Slot::width(code);
    let full = ones(8 * w as u32);
    let mut buf = [0u8; 33];
    buf[1..=w].copy_from_slice(&v.to_be_bytes()[16 - w..]);
    if m & full == full {
        buf[0] = code;
        (buf, 1 + w)
    } else {
        buf[0] = code | HAS_MASK;
        buf[1 + w..=2 * w].copy_from_slice(&m.to_be_bytes()[16 - w..]);
        (buf, 1 + 2 * w)
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
        FieldId::CT_NW_SRC => Slot::CtNwSrc,
        FieldId::CT_NW_DST => Slot::CtNwDst,
        FieldId::CT_IPV6_SRC => Slot::CtIpv6Src,
        FieldId::CT_IPV6_DST => Slot::CtIpv6Dst,
        FieldId::CT_NW_PROTO => Slot::CtNwProto,
        FieldId::CT_TP_SRC => Slot::CtTpSrc,
        FieldId::CT_TP_DST => Slot::CtTpDst,
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
        let mut bytes = SmallVec::with_capacity(self.bytes.len() + 9 * extra);
        bytes.extend_from_slice(&self.bytes);
        Self { bytes }
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
        self.remove(Slot::ConjId);
        self.put(Slot::ConjId, u128::from(id), u128::from(u32::MAX));
    }

    /// Where the entry of `code` is, or where it would go: `(start, end, found)`.
    fn locate(&self, code: u8) -> (usize, usize, bool) {
        let mut at = 0;
        while at < self.bytes.len() {
            let (c, _, _, end) = entry(&self.bytes, at);
            if c == code {
                return (at, end, true);
            }
            if c > code {
                return (at, at, false);
            }
            at = end;
        }
        (at, at, false)
    }

    pub(crate) fn put(&mut self, slot: Slot, value: u128, mask: u128) -> bool {
        let code = slot.code();
        let full = ones(8 * Slot::width(code) as u32);
        let mask = mask & full;
        if mask == 0 {
            return true;
        }
        let (start, end, found) = self.locate(code);
        let (v, m) = if found {
            let (_, ov, om, _) = entry(&self.bytes, start);
            if (ov ^ value) & om & mask != 0 {
                return false;
            }
            (ov | (value & mask), om | mask)
        } else {
            (value & mask, mask)
        };
        let (buf, len) = encode_entry(code, v, m);
        if end > start {
            self.bytes.drain(start..end);
        }
        self.bytes.insert_from_slice(start, &buf[..len]);
        true
    }

    fn remove(&mut self, slot: Slot) {
        let (start, end, found) = self.locate(slot.code());
        if found {
            self.bytes.drain(start..end);
        }
    }

    /// The (value, mask) of a slot, if constrained.
    pub fn get(&self, slot: Slot) -> Option<(u128, u128)> {
        let (start, _, found) = self.locate(slot.code());
        found.then(|| {
            let (_, v, m, _) = entry(&self.bytes, start);
            (v, m)
        })
    }

    /// Every constrained slot, in print order.
    pub fn iter(&self) -> impl Iterator<Item = (Slot, u128, u128)> + '_ {
        let mut at = 0;
        std::iter::from_fn(move || {
            if at >= self.bytes.len() {
                return None;
            }
            let (c, v, m, end) = entry(&self.bytes, at);
            at = end;
            Some((Slot::from_code(c), v, m))
        })
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Bytes the match holds on the heap (for memory accounting): none when inline.
    pub fn heap_bytes(&self) -> usize {
        if self.bytes.spilled() {
            self.bytes.capacity()
        } else {
            0
        }
    }

    /// Gives back spare capacity (a match kept for long).
    pub fn shrink_to_fit(&mut self) {
        self.bytes.shrink_to_fit();
    }

    /// The match as OVS stores it after an OpenFlow 1.3+ (OXM) flow_mod: the VLAN TCI is sent
    /// as OXM VLAN_VID (VID and present bit, maskable) plus an exact VLAN_PCP, and the PCP
    /// only when the VID part is non-zero. So `vlan_tci=0/0xffff` becomes `0/0x1fff`, and a
    /// partial PCP mask becomes exact (which narrows e.g. `vlan.pcp > 3` to pcp 4).
    pub fn canonical_of15(&self) -> FlowMatch {
        let mut out = self.clone();
        if let Some((v, m)) = out.get(Slot::VlanTci) {
            out.remove(Slot::VlanTci);
            let (mut nv, mut nm) = (v & 0x1fff, m & 0x1fff);
            if nv != 0 && m & 0xe000 != 0 {
                nv |= v & 0xe000;
                nm |= 0xe000;
            }
            out.put(Slot::VlanTci, nv & nm, nm);
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
        assert!(m.add(FieldId::ETH_TYPE, 0x800, 0xffff));
        let slots: Vec<Slot> = m.iter().map(|(s, _, _)| s).collect();
        let mut sorted = slots.clone();
        sorted.sort();
        assert_eq!(slots, sorted, "print order");
        m.set_conj_id(7);
        m.set_conj_id(8);
        assert_eq!(m.get(Slot::ConjId), Some((8, 0xffff_ffff)));
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
