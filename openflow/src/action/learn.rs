//! `NXAST_LEARN` (`nx_action_learn`) and its flow_mod specs.
//!
//! ```text
//! hdr(10) idle:16 hard:16 priority:16 cookie:64 flags:16 table:8 pad:8
//!         fin_idle:16 fin_hard:16 specs... (zero padding)
//! spec:   header:16 (src_type<<13 | dst_type<<11 | n_bits) src dst
//! ```

use bytes::{BufMut, BytesMut};

use super::{nx_header, nxast, HeaderRef, SubField};
use crate::wire::encode::EncodeError;
use crate::wire::reader::{DecodeError, Reader};

pub const NX_LEARN_F_SEND_FLOW_REM: u16 = 1;
pub const NX_LEARN_F_DELETE_LEARNED: u16 = 2;
pub const NX_LEARN_F_WRITE_RESULT: u16 = 4;

#[derive(Clone, Debug, Eq, PartialEq, Hash)]
pub struct Learn {
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub priority: u16,
    pub cookie: u64,
    pub flags: u16,
    pub table_id: u8,
    pub fin_idle_timeout: u16,
    pub fin_hard_timeout: u16,
    /// `NXAST_LEARN2` only: maximum number of learned flows (0 = unlimited).
    pub limit: u32,
    /// `NXAST_LEARN2` only: the bit that receives the result (with `NX_LEARN_F_WRITE_RESULT`).
    pub result_dst: Option<SubField>,
    pub specs: Vec<LearnSpec>,
}

impl Learn {
    /// Whether this needs the `NXAST_LEARN2` encoding.
    pub fn is_learn2(&self) -> bool {
        self.limit != 0 || self.result_dst.is_some() || self.flags & NX_LEARN_F_WRITE_RESULT != 0
    }
}

impl Default for Learn {
    fn default() -> Self {
        Self {
            idle_timeout: 0,
            hard_timeout: 0,
            priority: 0x8000,
            cookie: 0,
            flags: 0,
            table_id: 1,
            fin_idle_timeout: 0,
            fin_hard_timeout: 0,
            limit: 0,
            result_dst: None,
            specs: Vec::new(),
        }
    }
}

/// Source of a learn spec: a subfield, or an immediate of `ceil(n_bits/8)` bytes.
#[derive(Clone, Debug, Eq, PartialEq, Hash)]
pub enum LearnSrc {
    Field(SubField),
    Immediate(Vec<u8>),
}

#[derive(Clone, Debug, Eq, PartialEq, Hash)]
pub enum LearnDst {
    Match(SubField),
    Load(SubField),
    Output,
}

#[derive(Clone, Debug, Eq, PartialEq, Hash)]
pub struct LearnSpec {
    pub n_bits: u16,
    pub src: LearnSrc,
    pub dst: LearnDst,
}

pub(super) fn decode(b: &mut Reader<'_>, learn2: bool) -> Result<Learn, DecodeError> {
    let w = "nx_action_learn";
    let mut l = Learn {
        idle_timeout: b.u16(w)?,
        hard_timeout: b.u16(w)?,
        priority: b.u16(w)?,
        cookie: b.u64(w)?,
        flags: b.u16(w)?,
        table_id: b.u8(w)?,
        ..Learn::default()
    };
    b.skip(1, w)?;
    l.fin_idle_timeout = b.u16(w)?;
    l.fin_hard_timeout = b.u16(w)?;
    if !learn2 && l.flags & NX_LEARN_F_WRITE_RESULT != 0 {
        // Only NXAST_LEARN2 carries a result destination.
        return Err(DecodeError::BadValue {
            what: "nx_action_learn flags",
            value: u64::from(l.flags),
        });
    }
    if learn2 {
        l.limit = b.u32("nx_action_learn2")?;
        let ofs = b.u16("nx_action_learn2")?;
        b.skip(2, "nx_action_learn2")?;
        if l.flags & NX_LEARN_F_WRITE_RESULT != 0 {
            l.result_dst = Some(SubField {
                field: HeaderRef::decode(b)?,
                ofs,
                n_bits: 1,
            });
        } else if ofs != 0 {
            return Err(DecodeError::BadValue {
                what: "nx_action_learn2 result_dst_ofs",
                value: u64::from(ofs),
            });
        }
    }
    while b.left() >= 2 {
        let h = b.u16("learn spec")?;
        if h == 0 {
            break;
        }
        let n_bits = h & 0x7ff;
        // Reserved bits, or a zero width (whose header could not be told from the end
        // marker), do not survive re-encoding: refuse them.
        if h & 0xc000 != 0 || n_bits == 0 {
            return Err(DecodeError::BadValue {
                what: "learn spec header",
                value: u64::from(h),
            });
        }
        let src_imm = h & (1 << 13) != 0;
        let dst_type = (h >> 11) & 3;
        let src = if src_imm {
            let wire = (n_bits as usize).div_ceil(16) * 2;
            let bytes = b.take(wire, "learn spec immediate")?;
            let keep = (n_bits as usize).div_ceil(8);
            LearnSrc::Immediate(bytes[wire - keep..].to_vec())
        } else {
            let f = HeaderRef::decode(b)?;
            let ofs = b.u16("learn spec")?;
            LearnSrc::Field(SubField {
                field: f,
                ofs,
                n_bits,
            })
        };
        let dst = match dst_type {
            0 | 1 => {
                let f = HeaderRef::decode(b)?;
                let ofs = b.u16("learn spec")?;
                let sf = SubField {
                    field: f,
                    ofs,
                    n_bits,
                };
                if dst_type == 0 {
                    LearnDst::Match(sf)
                } else {
                    LearnDst::Load(sf)
                }
            }
            2 => LearnDst::Output,
            v => {
                return Err(DecodeError::BadValue {
                    what: "learn spec dst",
                    value: u64::from(v),
                })
            }
        };
        l.specs.push(LearnSpec { n_bits, src, dst });
    }
    if b.take_rest().iter().any(|x| *x != 0) {
        return Err(DecodeError::BadValue {
            what: "nx_action_learn padding",
            value: 0,
        });
    }
    Ok(l)
}

/// Largest `n_bits` of a learn spec (an 11-bit field).
const MAX_SPEC_BITS: u16 = 0x7ff;

pub(super) fn encode(l: &Learn, out: &mut BytesMut) -> Result<(), EncodeError> {
    let learn2 = l.is_learn2();
    nx_header(out, if learn2 { nxast::LEARN2 } else { nxast::LEARN });
    out.put_u16(l.idle_timeout);
    out.put_u16(l.hard_timeout);
    out.put_u16(l.priority);
    out.put_u64(l.cookie);
    out.put_u16(l.flags);
    out.put_u8(l.table_id);
    out.put_u8(0);
    out.put_u16(l.fin_idle_timeout);
    out.put_u16(l.fin_hard_timeout);
    if learn2 {
        out.put_u32(l.limit);
        out.put_u16(l.result_dst.map_or(0, |r| r.ofs));
        out.put_u16(0);
        if l.flags & NX_LEARN_F_WRITE_RESULT != 0 {
            // The flag promises a destination header; a missing one is written as zero.
            out.put_u32(l.result_dst.map_or(0, |r| r.field.raw()));
        }
    }
    for s in &l.specs {
        if s.n_bits > MAX_SPEC_BITS {
            return Err(EncodeError::OutOfRange {
                what: "learn spec n_bits",
                value: u64::from(s.n_bits),
                max: u64::from(MAX_SPEC_BITS),
            });
        }
        let src_bit = u16::from(matches!(s.src, LearnSrc::Immediate(_))) << 13;
        let dst_bits = match s.dst {
            LearnDst::Match(_) => 0,
            LearnDst::Load(_) => 1 << 11,
            LearnDst::Output => 2 << 11,
        };
        out.put_u16(src_bit | dst_bits | s.n_bits);
        match &s.src {
            LearnSrc::Field(sf) => {
                sf.field.encode(out);
                out.put_u16(sf.ofs);
            }
            LearnSrc::Immediate(v) => {
                let wire = (s.n_bits as usize).div_ceil(16) * 2;
                let keep = v.len().min(wire);
                // Leading zero bytes beyond the wire width may go; anything else would be lost.
                if v[..v.len() - keep].iter().any(|b| *b != 0) {
                    return Err(EncodeError::TooLong {
                        what: "learn spec immediate",
                        len: v.len(),
                        max: wire,
                    });
                }
                out.put_bytes(0, wire - keep);
                out.put_slice(&v[v.len() - keep..]);
            }
        }
        match &s.dst {
            LearnDst::Match(sf) | LearnDst::Load(sf) => {
                sf.field.encode(out);
                out.put_u16(sf.ofs);
            }
            LearnDst::Output => {}
        }
    }
    Ok(())
}
