//! Subfields (`NXM_NX_REG0[0..15]`) and raw field headers inside actions.

use bytes::{BufMut, BytesMut};

use crate::oxm::FieldId;
use crate::wire::reader::{DecodeError, Reader};

/// A field header inside an action: a known field or a raw 32-bit NXM/OXM header.
#[derive(Clone, Copy, Debug, Eq, PartialEq, Hash)]
#[non_exhaustive]
pub enum HeaderRef {
    Known(FieldId),
    Raw(u32),
}

impl HeaderRef {
    pub fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let h = r.u32("field header")?;
        Ok(Self::from_raw(h))
    }

    pub fn from_raw(h: u32) -> Self {
        let class = (h >> 16) as u16;
        let field = ((h >> 9) & 0x7f) as u8;
        match FieldId::by_header(class, field) {
            Some(id) if h & 0x100 == 0 => Self::Known(id),
            _ => Self::Raw(h),
        }
    }

    pub fn raw(self) -> u32 {
        match self {
            HeaderRef::Known(id) => {
                let d = id.def();
                let (c, f) = d.wire_header();
                (u32::from(c) << 16) | (u32::from(f) << 9) | d.width as u32
            }
            HeaderRef::Raw(h) => h,
        }
    }

    pub fn encode(self, out: &mut BytesMut) {
        out.put_u32(self.raw());
    }

    /// Number of bits of the field (raw headers: 8 * length byte).
    pub fn n_bits(self) -> u16 {
        match self {
            HeaderRef::Known(id) => id.def().n_bits,
            HeaderRef::Raw(h) => ((h & 0xff) * 8) as u16,
        }
    }
}

/// A bit range of a field: `ofs` and `n_bits`.
#[derive(Clone, Copy, Debug, Eq, PartialEq, Hash)]
pub struct SubField {
    pub field: HeaderRef,
    pub ofs: u16,
    pub n_bits: u16,
}

impl SubField {
    /// The whole field.
    pub fn whole(id: FieldId) -> Self {
        Self {
            field: HeaderRef::Known(id),
            ofs: 0,
            n_bits: id.def().n_bits,
        }
    }

    /// NXM `ofs_nbits` encoding: `ofs << 6 | (n_bits - 1)`.
    pub fn ofs_nbits(self) -> u16 {
        (self.ofs << 6) | (self.n_bits.saturating_sub(1) & 0x3f)
    }

    pub fn from_ofs_nbits(field: HeaderRef, v: u16) -> Self {
        Self {
            field,
            ofs: v >> 6,
            n_bits: (v & 0x3f) + 1,
        }
    }
}
