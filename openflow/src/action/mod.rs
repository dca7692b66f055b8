//! Actions: one enum, one decode/encode dispatch keyed by the table in `ACTIONS` below.
//!
//! Standard actions are `ofp_action_header` (type, len, body); Nicira actions are
//! type 0xffff with vendor 0x2320 and a 16-bit subtype. All are padded to 8 bytes.
//! Unknown actions are kept as raw bytes.

pub mod canon;
pub mod ct;
pub mod learn;
mod nx;
pub mod subfield;

use bytes::{BufMut, BytesMut};

pub use canon::{canonical, equivalent};
pub use ct::{Ct, Nat, NatRange};
pub use learn::{Learn, LearnDst, LearnSpec, LearnSrc};
pub use nx::{
    Bundle, Controller, NX_BD_ALG_ACTIVE_BACKUP, NX_BD_ALG_HRW, NX_HASH_FIELDS_ETH_SRC,
    NX_HASH_FIELDS_NAMES,
};
pub use subfield::{HeaderRef, SubField};

use crate::oxm::MatchField;
use crate::wire::basic::NX_VENDOR_ID;
use crate::wire::encode::{all_or_nothing, patch_len16, put_oxm, EncodeError};
use crate::wire::reader::{put_pad8, DecodeError, Reader};

/// Port numbers with names (OF1.1+ 32-bit space).
pub const OFPP_IN_PORT: u32 = 0xffff_fff8;
pub const OFPP_CONTROLLER: u32 = 0xffff_fffd;
pub const OFPP_ANY: u32 = 0xffff_ffff;

#[derive(Clone, Debug, Eq, PartialEq, Hash)]
#[non_exhaustive]
pub enum Action {
    /// `OFPAT_OUTPUT`.
    Output {
        port: u32,
        max_len: u16,
    },
    /// `OFPAT_GROUP`.
    Group(u32),
    /// `OFPAT_SET_QUEUE`.
    SetQueue(u32),
    /// `OFPAT_DEC_NW_TTL`: prints as `dec_ttl`.
    DecNwTtl,
    /// `NXAST_DEC_TTL_CNT_IDS`: prints as `dec_ttl(ids)`.
    DecTtl {
        ids: Vec<u16>,
    },
    PushVlan(u16),
    PopVlan,
    /// `OFPAT_SET_FIELD` / `NXAST_REG_LOAD2`: the value and optional mask of one field.
    SetField(MatchField),
    /// `NXAST_REG_LOAD2`: same meaning as `SetField`, kept apart for lossless re-encoding.
    RegLoad2(MatchField),
    /// `NXAST_REG_LOAD`: prints as `load:`.
    RegLoad {
        dst: SubField,
        value: u64,
    },
    /// `OFPAT_COPY_FIELD` (OF1.5) or `NXAST_REG_MOVE`: prints as `move:`.
    Move {
        src: SubField,
        dst: SubField,
        nx: bool,
    },
    /// `OFPAT_METER` (OF1.5).
    Meter(u32),
    /// `NXAST_RESUBMIT(_TABLE)(_CT)`; `in_port` OFPP_IN_PORT (16-bit 0xfff8) and table 255 = none.
    Resubmit {
        in_port: u16,
        table: u8,
        ct: bool,
    },
    StackPush(SubField),
    StackPop(SubField),
    /// `NXAST_CONJUNCTION`; `clause` is 0-based on the wire, 1-based in text.
    Conjunction {
        id: u32,
        clause: u8,
        n_clauses: u8,
    },
    Ct(Ct),
    CtClear,
    Nat(Nat),
    Learn(Learn),
    Controller(Controller),
    Clone(Vec<Action>),
    /// `NXAST_BUNDLE`: output to one member port chosen by `algorithm` (ovn-controller's
    /// active/backup output to the tunnels of an HA chassis group).
    Bundle(Bundle),
    CheckPktLarger {
        pkt_len: u16,
        dst: SubField,
    },
    Note(Vec<u8>),
    Sample {
        probability: u16,
        collector_set_id: u32,
        obs_domain_id: u32,
        obs_point_id: u32,
    },
    Exit,
    OutputReg {
        src: SubField,
        max_len: u16,
    },
    /// `NXAST_OUTPUT_TRUNC`: output truncated to `max_len` bytes.
    OutputTrunc {
        port: u16,
        max_len: u32,
    },
    /// Anything else, kept verbatim: `body` is what follows the 4-byte type/len header.
    Unknown {
        ty: u16,
        body: Vec<u8>,
    },
}

// The declarative part: wire numbers of every action.
pub(crate) const OFPAT_OUTPUT: u16 = 0;
pub(crate) const OFPAT_PUSH_VLAN: u16 = 17;
pub(crate) const OFPAT_POP_VLAN: u16 = 18;
pub(crate) const OFPAT_SET_QUEUE: u16 = 21;
pub(crate) const OFPAT_GROUP: u16 = 22;
pub(crate) const OFPAT_DEC_NW_TTL: u16 = 24;
pub(crate) const OFPAT_SET_FIELD: u16 = 25;
pub(crate) const OFPAT_COPY_FIELD: u16 = 28;
pub(crate) const OFPAT_METER: u16 = 29;
pub(crate) const OFPAT_EXPERIMENTER: u16 = 0xffff;

/// Nicira subtypes (`NXAST_*`).
pub(crate) mod nxast {
    pub const RESUBMIT: u16 = 1;
    pub const REG_MOVE: u16 = 6;
    pub const REG_LOAD: u16 = 7;
    pub const NOTE: u16 = 8;
    pub const CONTROLLER: u16 = 20;
    pub const RESUBMIT_TABLE: u16 = 14;
    pub const OUTPUT_REG: u16 = 15;
    pub const LEARN: u16 = 16;
    pub const EXIT: u16 = 17;
    pub const DEC_TTL_CNT_IDS: u16 = 21;
    pub const STACK_PUSH: u16 = 27;
    pub const STACK_POP: u16 = 28;
    pub const SAMPLE: u16 = 29;
    pub const REG_LOAD2: u16 = 33;
    pub const CONJUNCTION: u16 = 34;
    pub const CT: u16 = 35;
    pub const NAT: u16 = 36;
    pub const CONTROLLER2: u16 = 37;
    pub const BUNDLE: u16 = 12;
    pub const CLONE: u16 = 42;
    pub const CT_CLEAR: u16 = 43;
    pub const RESUBMIT_TABLE_CT: u16 = 44;
    pub const OUTPUT_TRUNC: u16 = 39;
    pub const LEARN2: u16 = 45;
    pub const CHECK_PKT_LARGER: u16 = 49;
}

impl Action {
    /// Decode a list of actions filling all of `buf`.
    pub fn decode_list(buf: &[u8]) -> Result<Vec<Action>, DecodeError> {
        let mut r = Reader::new(buf);
        let mut out = Vec::new();
        while !r.is_empty() {
            out.push(Action::decode(&mut r)?);
        }
        Ok(out)
    }

    /// Append every action. An action whose length (or a field inside it) does not fit is
    /// an error, and `out` is then left as it was.
    pub fn encode_list(actions: &[Action], out: &mut BytesMut) -> Result<(), EncodeError> {
        all_or_nothing(out, |out| Self::encode_list_partial(actions, out))
    }

    fn encode_list_partial(actions: &[Action], out: &mut BytesMut) -> Result<(), EncodeError> {
        actions.iter().try_for_each(|a| a.encode_partial(out))
    }

    pub fn decode(r: &mut Reader<'_>) -> Result<Action, DecodeError> {
        let ty = r.u16("action")?;
        let len = r.u16("action")? as usize;
        if len < 8 || len & 7 != 0 {
            return Err(DecodeError::BadLength {
                what: "action",
                len,
            });
        }
        let mut b = r.sub(len - 4, "action")?;
        let raw = b.rest().to_vec();
        let act = match ty {
            OFPAT_OUTPUT => {
                let port = b.u32("ofp_action_output")?;
                let max_len = b.u16("ofp_action_output")?;
                Action::Output { port, max_len }
            }
            OFPAT_GROUP => Action::Group(b.u32("ofp_action_group")?),
            OFPAT_SET_QUEUE => Action::SetQueue(b.u32("ofp_action_set_queue")?),
            OFPAT_METER => Action::Meter(b.u32("ofp_action_meter")?),
            OFPAT_DEC_NW_TTL => Action::DecNwTtl,
            OFPAT_POP_VLAN => Action::PopVlan,
            OFPAT_PUSH_VLAN => Action::PushVlan(b.u16("ofp_action_push")?),
            OFPAT_SET_FIELD => Action::SetField(MatchField::decode(&mut b)?),
            OFPAT_COPY_FIELD => {
                let n_bits = b.u16("ofp_action_copy_field")?;
                let src_ofs = b.u16("ofp_action_copy_field")?;
                let dst_ofs = b.u16("ofp_action_copy_field")?;
                b.skip(2, "ofp_action_copy_field")?;
                let src = HeaderRef::decode(&mut b)?;
                let dst = HeaderRef::decode(&mut b)?;
                Action::Move {
                    src: SubField {
                        field: src,
                        ofs: src_ofs,
                        n_bits,
                    },
                    dst: SubField {
                        field: dst,
                        ofs: dst_ofs,
                        n_bits,
                    },
                    nx: false,
                }
            }
            OFPAT_EXPERIMENTER => {
                let vendor = b.u32("action experimenter")?;
                if vendor == NX_VENDOR_ID {
                    let subtype = b.u16("nx action subtype")?;
                    match nx::decode(subtype, &mut b)? {
                        Some(a) => a,
                        None => return Ok(Action::Unknown { ty, body: raw }),
                    }
                } else {
                    return Ok(Action::Unknown { ty, body: raw });
                }
            }
            _ => return Ok(Action::Unknown { ty, body: raw }),
        };
        Ok(act)
    }

    /// Append the action; on error `out` is left as it was.
    pub fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        all_or_nothing(out, |out| self.encode_partial(out))
    }

    fn encode_partial(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        let start = out.len();
        match self {
            Action::Output { port, max_len } => {
                std_header(out, OFPAT_OUTPUT);
                out.put_u32(*port);
                out.put_u16(*max_len);
            }
            Action::Group(g) => {
                std_header(out, OFPAT_GROUP);
                out.put_u32(*g);
            }
            Action::SetQueue(q) => {
                std_header(out, OFPAT_SET_QUEUE);
                out.put_u32(*q);
            }
            Action::Meter(m) => {
                std_header(out, OFPAT_METER);
                out.put_u32(*m);
            }
            Action::DecNwTtl => std_header(out, OFPAT_DEC_NW_TTL),
            Action::PopVlan => std_header(out, OFPAT_POP_VLAN),
            Action::PushVlan(t) => {
                std_header(out, OFPAT_PUSH_VLAN);
                out.put_u16(*t);
            }
            Action::SetField(f) => {
                std_header(out, OFPAT_SET_FIELD);
                put_oxm(f, out)?;
            }
            Action::Move {
                src,
                dst,
                nx: false,
            } => {
                std_header(out, OFPAT_COPY_FIELD);
                out.put_u16(src.n_bits);
                out.put_u16(src.ofs);
                out.put_u16(dst.ofs);
                out.put_u16(0);
                src.field.encode(out);
                dst.field.encode(out);
            }
            Action::Unknown { ty, body } => {
                std_header(out, *ty);
                out.put_slice(body);
            }
            other => nx::encode(other, out)?,
        }
        // Every action is a multiple of 8 bytes; its length field covers the padding.
        put_pad8(out, start);
        patch_len16(out, start, start + 2, "action")
    }
}

fn std_header(out: &mut BytesMut, ty: u16) {
    out.put_u16(ty);
    out.put_u16(0);
}

/// Nicira action header with the subtype; the caller's `encode` fixes the length.
pub(crate) fn nx_header(out: &mut BytesMut, subtype: u16) {
    out.put_u16(OFPAT_EXPERIMENTER);
    out.put_u16(0);
    out.put_u32(NX_VENDOR_ID);
    out.put_u16(subtype);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oxm::FieldId;

    fn rt(a: &Action) -> Vec<u8> {
        let mut b = BytesMut::new();
        a.encode(&mut b).unwrap();
        assert_eq!(b.len() % 8, 0, "{a:?}");
        let d = Action::decode_list(&b).unwrap();
        assert_eq!(d, vec![a.clone()]);
        b.to_vec()
    }

    #[test]
    fn resubmit_bytes() {
        let b = rt(&Action::Resubmit {
            in_port: 0xfff8,
            table: 9,
            ct: false,
        });
        assert_eq!(
            b,
            [0xff, 0xff, 0, 16, 0, 0, 0x23, 0x20, 0, 14, 0xff, 0xf8, 9, 0, 0, 0]
        );
    }

    #[test]
    fn assorted_round_trips() {
        let reg = FieldId::by_name("reg14").unwrap();
        for a in [
            Action::Output {
                port: 5,
                max_len: 0,
            },
            Action::Group(3),
            Action::DecNwTtl,
            Action::DecTtl { ids: vec![] },
            Action::DecTtl { ids: vec![1, 2, 3] },
            Action::CtClear,
            Action::Exit,
            Action::PushVlan(0x8100),
            Action::StackPush(SubField::whole(reg)),
            Action::Conjunction {
                id: 7,
                clause: 1,
                n_clauses: 2,
            },
            Action::Note(vec![1, 2, 3, 4, 5, 6]),
            Action::Clone(vec![Action::CtClear, Action::Group(1)]),
            Action::Bundle(Bundle {
                algorithm: nx::NX_BD_ALG_ACTIVE_BACKUP,
                fields: nx::NX_HASH_FIELDS_ETH_SRC,
                basis: 0,
                members: vec![1, 2, 3],
            }),
            Action::Unknown {
                ty: 0xffff,
                body: vec![0, 0, 0x12, 0x34, 0, 1, 0, 0, 0, 0, 0, 0],
            },
        ] {
            rt(&a);
        }
    }

    #[test]
    fn nat_with_both_address_families_is_refused() {
        // NXAST_NAT, flags src, range_present = IPV4_MIN | IPV6_MIN.
        let mut b = vec![0xff, 0xff, 0, 40, 0, 0, 0x23, 0x20, 0, 36, 0, 0, 0, 1, 0, 5];
        b.extend_from_slice(&[10, 0, 0, 1]);
        b.extend_from_slice(&[0; 16]);
        b.extend_from_slice(&[0; 4]);
        assert!(Action::decode_list(&b).is_err());
        b[15] = 1;
        assert!(Action::decode_list(&b).is_ok());
    }

    #[test]
    fn learn_spec_with_reserved_bits_is_refused() {
        let l = Action::Learn(Learn {
            specs: vec![LearnSpec {
                n_bits: 16,
                src: LearnSrc::Immediate(vec![8, 0]),
                dst: LearnDst::Match(SubField::whole(FieldId::by_name("eth_type").unwrap())),
            }],
            ..Learn::default()
        });
        let mut b = BytesMut::new();
        l.encode(&mut b).unwrap();
        assert!(Action::decode_list(&b).is_ok());
        b[32] |= 0x40; // first spec header (after the 32-byte nx_action_learn), bit 14
        assert!(Action::decode_list(&b).is_err());
    }

    #[test]
    fn lengths_and_values_that_do_not_fit_are_encode_errors() {
        let reg = FieldId::by_name("reg14").unwrap();
        let too_long = |a: Action| {
            let mut b = BytesMut::from(&b"before"[..]);
            let r = Action::encode_list(&[Action::Exit, a.clone()], &mut b);
            assert!(r.is_err(), "{a:?}");
            assert_eq!(&b[..], b"before", "nothing written for {a:?}");
            r.unwrap_err()
        };
        assert!(matches!(
            too_long(Action::Note(vec![1; 65_530])),
            EncodeError::TooLong { what: "action", .. }
        ));
        assert!(matches!(
            too_long(Action::Clone(vec![Action::Note(vec![1; 40_000]); 2])),
            EncodeError::TooLong { what: "action", .. }
        ));
        assert!(matches!(
            too_long(Action::Controller(Controller {
                userdata: vec![0; 70_000],
                ..Controller::default()
            })),
            EncodeError::TooLong { .. }
        ));
        assert!(matches!(
            too_long(Action::DecTtl {
                ids: vec![0; 70_000]
            }),
            EncodeError::TooLong { .. }
        ));
        assert!(matches!(
            too_long(Action::RegLoad {
                dst: SubField {
                    field: HeaderRef::nxm(reg),
                    ofs: 1024,
                    n_bits: 1
                },
                value: 1
            }),
            EncodeError::OutOfRange { value: 1024, .. }
        ));
        assert!(matches!(
            too_long(Action::OutputReg {
                src: SubField {
                    field: HeaderRef::nxm(reg),
                    ofs: 0,
                    n_bits: 65
                },
                max_len: 0
            }),
            EncodeError::OutOfRange { value: 65, .. }
        ));
        let learn = |spec: LearnSpec| {
            Action::Learn(Learn {
                specs: vec![spec],
                ..Learn::default()
            })
        };
        assert!(matches!(
            too_long(learn(LearnSpec {
                n_bits: 0x800,
                src: LearnSrc::Field(SubField::whole(reg)),
                dst: LearnDst::Match(SubField::whole(reg)),
            })),
            EncodeError::OutOfRange { value: 0x800, .. }
        ));
        // An immediate wider than n_bits would lose its high bytes.
        assert!(matches!(
            too_long(learn(LearnSpec {
                n_bits: 16,
                src: LearnSrc::Immediate(vec![1, 0, 5]),
                dst: LearnDst::Match(SubField::whole(FieldId::by_name("eth_type").unwrap())),
            })),
            EncodeError::TooLong { .. }
        ));
        // Leading zero bytes may go.
        let mut b = BytesMut::new();
        learn(LearnSpec {
            n_bits: 16,
            src: LearnSrc::Immediate(vec![0, 8, 0]),
            dst: LearnDst::Match(SubField::whole(FieldId::by_name("eth_type").unwrap())),
        })
        .encode(&mut b)
        .unwrap();
        let unknown = MatchField {
            field: crate::oxm::FieldRef::Unknown {
                class: 0x0001,
                field: 9,
                experimenter: None,
            },
            value: vec![0; 256],
            mask: None,
        };
        assert!(matches!(
            too_long(Action::SetField(unknown.clone())),
            EncodeError::TooLong {
                what: "oxm entry",
                ..
            }
        ));
        assert!(matches!(
            too_long(Action::RegLoad2(MatchField::new(
                reg,
                vec![0; 4],
                Some(vec![0; 3])
            ))),
            EncodeError::Inconsistent(_)
        ));
    }

    #[test]
    fn bad_lengths_are_errors() {
        assert!(Action::decode_list(&[0, 0, 0, 4]).is_err());
        assert!(Action::decode_list(&[0, 0, 0, 16, 0, 0]).is_err());
    }
}
