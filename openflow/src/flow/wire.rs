//! `FlowMatch` to and from OXM entries: the OpenFlow 1.5 form OVS sends and stores, the
//! NXM-flavoured form `ovs-ofctl` prints for flows as written, and what a switch dumps.

use std::fmt;

use bytes::{BufMut, BytesMut};

use super::slots::{ones, FlowMatch, Slot};
use crate::oxm::{FieldId, FieldRef, Match, MatchField};
use crate::text::format_match;
use crate::text::value::{from_u128, to_u128};
use crate::wire::reader::put_pad8;

const ETH_IP: u16 = 0x0800;
const ETH_IPV6: u16 = 0x86dd;
const ETH_ARP: u16 = 0x0806;
const ETH_RARP: u16 = 0x8035;

/// Which OXM form of a match to produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchForm {
    /// As OVS encodes an OpenFlow 1.5 match (and so stores and dumps it): VLAN TCI as
    /// OXM VLAN_VID/VLAN_PCP, DSCP shifted, `in_port` as a 32-bit OXM port.
    Of15,
    /// As the match was written: `vlan_tci` and `nw_tos` as such (the form `ovs-ofctl`
    /// prints for a flow before it reaches a switch).
    Written,
}

/// A match that the requested form cannot carry (a slot value that no field of that form
/// expresses), or a dumped field with no slot.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("match cannot be expressed: {0}")]
pub struct UnsupportedMatch(pub String);

fn port16_to_32(p: u128) -> u128 {
    if p >= 0xff00 {
        p + 0xffff_0000
    } else {
        p
    }
}

fn port32_to_16(p: u128) -> u128 {
    if p >= 0xffff_ff00 {
        p - 0xffff_0000
    } else {
        p
    }
}

impl FlowMatch {
    /// Visits the match as OXM entries `(field, value, mask)` of `form`, prerequisites
    /// first (`eth_type`, then `nw_proto`, then ICMP types: switches check a field's
    /// prerequisites against what they read before it). A mask is `None` when it covers
    /// every meaningful bit of the field.
    pub fn for_each_entry(
        &self,
        form: MatchForm,
        mut visit: impl FnMut(FieldId, u128, Option<u128>),
    ) -> Result<(), UnsupportedMatch> {
        let dl_type = self.dl_type();
        let proto = self.nw_proto();
        let is_arp = matches!(dl_type, Some(ETH_ARP | ETH_RARP));
        let icmp = match (dl_type, proto) {
            (Some(ETH_IP), Some(1)) => Some((FieldId::ICMP_TYPE, FieldId::ICMP_CODE)),
            (Some(ETH_IPV6), Some(58)) => Some((FieldId::ICMPV6_TYPE, FieldId::ICMPV6_CODE)),
            _ => None,
        };
        let mut emit = |field: FieldId, v: u128, m: u128| -> Result<(), UnsupportedMatch> {
            let d = field.def();
            let full = d.full_mask();
            let m = m & full;
            if m == full {
                visit(field, v & full, None);
            } else if d.maskable {
                visit(field, v & m, Some(m));
            } else {
                return Err(UnsupportedMatch(format!(
                    "{} cannot be matched with mask {m:#x}",
                    d.name
                )));
            }
            Ok(())
        };
        // Prerequisites first.
        if let Some((v, m)) = self.get(Slot::DlType) {
            emit(FieldId::ETH_TYPE, v, m)?;
        }
        if let Some((v, m)) = self.get(Slot::NwProto) {
            emit(
                if is_arp {
                    FieldId::ARP_OP
                } else {
                    FieldId::NW_PROTO
                },
                v,
                m,
            )?;
        }
        if let (Some((ty, _)), Some((v, m))) = (icmp, self.get(Slot::TpSrc)) {
            emit(ty, v & 0xff, m & 0xff)?;
        }
        for (slot, v, m) in self.iter() {
            match slot {
                Slot::DlType | Slot::NwProto => {}
                Slot::TpSrc if icmp.is_some() => {}
                Slot::PktMark => emit(FieldId::PKT_MARK, v, m)?,
                Slot::ConjId => emit(FieldId::CONJ_ID, v, m)?,
                Slot::CtState => emit(FieldId::CT_STATE, v, m)?,
                Slot::CtMark => emit(FieldId::CT_MARK, v, m)?,
                Slot::CtLabel => emit(FieldId::CT_LABEL, v, m)?,
                Slot::CtNwSrc => emit(FieldId::CT_NW_SRC, v, m)?,
                Slot::CtNwDst => emit(FieldId::CT_NW_DST, v, m)?,
                Slot::CtIpv6Src => emit(FieldId::CT_IPV6_SRC, v, m)?,
                Slot::CtIpv6Dst => emit(FieldId::CT_IPV6_DST, v, m)?,
                Slot::CtNwProto => emit(FieldId::CT_NW_PROTO, v, m)?,
                Slot::CtTpSrc => emit(FieldId::CT_TP_SRC, v, m)?,
                Slot::CtTpDst => emit(FieldId::CT_TP_DST, v, m)?,
                Slot::Reg(n) => emit(FieldId::reg(n), v, m)?,
                Slot::TunId => emit(FieldId::TUN_ID, v, m)?,
                Slot::Metadata => emit(FieldId::METADATA, v, m)?,
                Slot::InPort => match form {
                    MatchForm::Of15 => emit(FieldId::IN_PORT_OXM, port16_to_32(v), ones(32))?,
                    MatchForm::Written => emit(FieldId::IN_PORT, v, m)?,
                },
                Slot::VlanTci => match form {
                    MatchForm::Written => emit(FieldId::VLAN_TCI, v, m)?,
                    MatchForm::Of15 => {
                        let (vid, vid_m) = (v & 0x1fff, m & 0x1fff);
                        if vid_m != 0 {
                            emit(FieldId::VLAN_VID, vid, vid_m)?;
                        }
                        if vid != 0 && m & 0xe000 != 0 {
                            emit(FieldId::VLAN_PCP, (v >> 13) & 7, 7)?;
                        }
                    }
                },
                Slot::DlSrc => emit(FieldId::ETH_SRC, v, m)?,
                Slot::DlDst => emit(FieldId::ETH_DST, v, m)?,
                Slot::NwSrc => emit(
                    if is_arp {
                        FieldId::ARP_SPA
                    } else {
                        FieldId::IP_SRC
                    },
                    v,
                    m,
                )?,
                Slot::NwDst => emit(
                    if is_arp {
                        FieldId::ARP_TPA
                    } else {
                        FieldId::IP_DST
                    },
                    v,
                    m,
                )?,
                Slot::Ipv6Src => emit(FieldId::IPV6_SRC, v, m)?,
                Slot::Ipv6Dst => emit(FieldId::IPV6_DST, v, m)?,
                Slot::Ipv6Label => emit(FieldId::IPV6_LABEL, v, m)?,
                Slot::ArpSha => emit(
                    if icmp.is_some() {
                        FieldId::ND_SLL
                    } else {
                        FieldId::ARP_SHA
                    },
                    v,
                    m,
                )?,
                Slot::ArpTha => emit(
                    if icmp.is_some() {
                        FieldId::ND_TLL
                    } else {
                        FieldId::ARP_THA
                    },
                    v,
                    m,
                )?,
                Slot::NwTos => {
                    if m & 0xfc != 0 {
                        match form {
                            MatchForm::Of15 => emit(FieldId::IP_DSCP, v >> 2, (m & 0xfc) >> 2)?,
                            MatchForm::Written => emit(FieldId::NW_TOS, v & 0xfc, 0xff)?,
                        }
                    }
                    if m & 3 != 0 {
                        emit(FieldId::NW_ECN, v & 3, m & 3)?;
                    }
                }
                Slot::NwTtl => emit(FieldId::NW_TTL, v, m)?,
                Slot::NwFrag => emit(FieldId::NW_FRAG, v, m)?,
                Slot::TpSrc | Slot::TpDst => {
                    let src = slot == Slot::TpSrc;
                    let field = match (icmp, proto) {
                        (Some((_, code)), _) => code,
                        (None, Some(17)) => pick(src, FieldId::UDP_SRC, FieldId::UDP_DST),
                        (None, Some(132)) => pick(src, FieldId::SCTP_SRC, FieldId::SCTP_DST),
                        (None, Some(6)) => pick(src, FieldId::TCP_SRC, FieldId::TCP_DST),
                        _ if form == MatchForm::Written => {
                            pick(src, FieldId::TCP_SRC, FieldId::TCP_DST)
                        }
                        _ => {
                            return Err(UnsupportedMatch(format!(
                                "transport port without a transport protocol (nw_proto {proto:?})"
                            )))
                        }
                    };
                    let (v, m) = if icmp.is_some() {
                        (v & 0xff, m & 0xff)
                    } else {
                        (v, m)
                    };
                    emit(field, v, m)?;
                }
                Slot::NdTarget => emit(FieldId::ND_TARGET, v, m)?,
                Slot::TcpFlags => emit(FieldId::TCP_FLAGS, v, m)?,
            }
        }
        Ok(())
    }

    /// The match as an OXM list of `form`.
    pub fn to_match(&self, form: MatchForm) -> Result<Match, UnsupportedMatch> {
        let mut out = Match::new();
        out.fields.reserve(self.iter().count() + 1);
        self.for_each_entry(form, |id, v, m| {
            let w = id.def().width;
            out.fields.push(MatchField::new(
                id,
                from_u128(v, w),
                m.map(|m| from_u128(m, w)),
            ));
        })?;
        Ok(out)
    }

    /// Appends the OpenFlow 1.5 `ofp_match` (type OXM, length, entries, padding) OVS would
    /// send for this match.
    pub fn encode_of15(&self, out: &mut BytesMut) -> Result<(), UnsupportedMatch> {
        let start = out.len();
        out.put_u16(1);
        out.put_u16(0);
        self.for_each_entry(MatchForm::Of15, |id, v, m| {
            let d = id.def();
            let (class, field) = d.wire_header();
            let w = d.width;
            let len = if m.is_some() { 2 * w } else { w };
            out.put_u16(class);
            out.put_u8((field << 1) | u8::from(m.is_some()));
            out.put_u8(len as u8);
            put_be(out, v, w);
            if let Some(m) = m {
                put_be(out, m, w);
            }
        })?;
        let len = out.len() - start;
        let len16 =
            u16::try_from(len).map_err(|_| UnsupportedMatch(format!("match of {len} bytes")))?;
        out[start + 2..start + 4].copy_from_slice(&len16.to_be_bytes());
        put_pad8(out, start);
        Ok(())
    }

    /// The canonical match of what a switch reports (flow stats): 32-bit registers from
    /// `xreg`/`xxreg` entries, VLAN_VID/VLAN_PCP back into the TCI, DSCP into `nw_tos`, OXM
    /// ports into 16-bit ones. Equal to [`FlowMatch::canonical_of15`] of the flow that was
    /// sent. A field this model has no slot for is an error (the flow is not one of ours).
    pub fn from_match(m: &Match) -> Result<FlowMatch, UnsupportedMatch> {
        let mut out = FlowMatch::new();
        let (mut tci, mut tci_mask) = (0u128, 0u128);
        for f in &m.fields {
            let FieldRef::Known(id) = f.field else {
                return Err(UnsupportedMatch(format!("unknown field {:?}", f.field)));
            };
            let d = id.def();
            if f.value.len() > 16 {
                return Err(UnsupportedMatch(format!("{} wider than 128 bits", d.name)));
            }
            let v = to_u128(&f.value);
            let mask = f.mask.as_deref().map_or(d.full_mask(), to_u128);
            let ok = match id {
                FieldId::IN_PORT_OXM => out.add(FieldId::IN_PORT, port32_to_16(v), 0xffff),
                FieldId::VLAN_VID => {
                    tci |= v & 0x1fff;
                    tci_mask |= mask & 0x1fff;
                    true
                }
                FieldId::VLAN_PCP => {
                    tci |= ((v & 7) << 13) | 0x1000;
                    tci_mask |= 0xf000;
                    true
                }
                _ => out.add(id, v, mask),
            };
            if !ok {
                return Err(UnsupportedMatch(format!(
                    "{} has no slot or contradicts an earlier field",
                    d.name
                )));
            }
        }
        if tci_mask != 0 && !out.put(Slot::VlanTci, tci, tci_mask) {
            return Err(UnsupportedMatch("vlan fields contradict".into()));
        }
        Ok(out)
    }
}

fn pick(src: bool, a: FieldId, b: FieldId) -> FieldId {
    if src {
        a
    } else {
        b
    }
}

fn put_be(out: &mut BytesMut, v: u128, width: usize) {
    let b = v.to_be_bytes();
    if width <= 16 {
        out.put_slice(&b[16 - width..]);
    } else {
        out.put_bytes(0, width - 16);
        out.put_slice(&b);
    }
}

impl fmt::Display for FlowMatch {
    /// `ovs-ofctl` syntax (`match_format`), as the match was written.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_match(MatchForm::Written) {
            Ok(m) => f.write_str(&format_match(&m, None)),
            Err(e) => write!(f, "<{e}>"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::reader::Reader;

    #[test]
    fn prints_like_ovs_ofctl() {
        let mut m = FlowMatch::new();
        assert!(m.add(FieldId::ETH_TYPE, 0x86dd, 0xffff));
        assert!(m.add(FieldId::NW_PROTO, 58, 0xff));
        assert!(m.add(FieldId::ICMPV6_TYPE, 135, 0xff));
        assert!(m.add(FieldId::xxreg(0), 1 << 104, 1 << 104));
        assert!(m.add(FieldId::METADATA, 3, u128::from(u64::MAX)));
        assert!(m.add(FieldId::IPV6_DST, 0xff02 << 112, 0xffff << 112));
        assert_eq!(
            m.to_string(),
            "icmp6,reg0=0x100/0x100,metadata=0x3,ipv6_dst=ff02::/16,icmp_type=135"
        );
        let mut a = FlowMatch::new();
        assert!(a.add(FieldId::VLAN_TCI, 0x1000, 0x1000));
        assert!(a.add(FieldId::CT_STATE, 0x22, 0x22));
        assert!(a.add(FieldId::ETH_SRC, 1 << 40, 1 << 40));
        assert!(!a.add(FieldId::CT_STATE, 0, 0x2));
        assert_eq!(
            a.to_string(),
            "ct_state=+est+trk,vlan_tci=0x1000/0x1000,dl_src=01:00:00:00:00:00/01:00:00:00:00:00"
        );
    }

    #[test]
    fn of15_wire_form_reads_back_canonical() {
        let mut m = FlowMatch::new();
        assert!(m.add(FieldId::IN_PORT, 7, 0xffff));
        assert!(m.add(FieldId::VLAN_TCI, 0x1000 | 0x2a, 0x1fff));
        assert!(m.add(FieldId::ETH_TYPE, 0x800, 0xffff));
        assert!(m.add(FieldId::NW_PROTO, 1, 0xff));
        assert!(m.add(FieldId::ICMP_TYPE, 11, 0xff));
        assert!(m.add(FieldId::IP_DSCP, 0x2e, 0x3f));
        assert!(m.add(FieldId::xreg(7), 0x10, 0x10));
        assert!(m.add(FieldId::REG14, 3, 0xffff_ffff));
        let mut b = BytesMut::new();
        m.encode_of15(&mut b).unwrap();
        assert_eq!(b.len() % 8, 0);
        let back = Match::decode(&mut Reader::new(&b)).unwrap();
        assert_eq!(
            back.fields[0].field,
            FieldRef::Known(FieldId::ETH_TYPE),
            "prerequisites first"
        );
        assert_eq!(FlowMatch::from_match(&back).unwrap(), m.canonical_of15());
        // A switch reports registers as xregs.
        let mut dumped = Match::new();
        dumped.push(
            FieldId::xreg(7),
            vec![0, 0, 0, 3, 0, 0, 0, 0x10],
            Some(vec![0, 0, 0, 0xff, 0, 0, 0, 0x10]),
        );
        let d = FlowMatch::from_match(&dumped).unwrap();
        assert_eq!(d.get(Slot::Reg(14)), Some((3, 0xff)));
        assert_eq!(d.get(Slot::Reg(15)), Some((0x10, 0x10)));
    }

    #[test]
    fn unsupported_forms_are_errors() {
        let mut m = FlowMatch::new();
        assert!(m.add(FieldId::TCP_SRC, 80, 0xffff));
        assert!(
            m.to_match(MatchForm::Of15).is_err(),
            "tp_src without nw_proto"
        );
        assert!(m.to_match(MatchForm::Written).is_ok());
        let mut d = Match::new();
        d.push(FieldId::tun_metadata(0), vec![0, 0, 0, 1], None);
        assert!(FlowMatch::from_match(&d).is_err());
    }
}
