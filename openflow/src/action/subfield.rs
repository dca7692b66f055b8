//! Subfields (`NXM_NX_REG0[0..15]`) and field headers inside actions.

use bytes::{BufMut, BytesMut};

use crate::oxm::FieldId;
use crate::wire::encode::EncodeError;
use crate::wire::reader::{DecodeError, Reader};

/// A 32-bit NXM/OXM field header as it appears inside an action. The exact header is
/// kept (a field may have both an NXM and an OXM header) so re-encoding is lossless.
#[derive(Clone, Copy, Debug, Eq, PartialEq, Hash)]
pub struct HeaderRef(pub u32);

fn header(class: u16, field: u8, width: usize) -> u32 {
    (u32::from(class) << 16) | (u32::from(field) << 9) | width as u32
}

impl HeaderRef {
    /// The field's original (NXM if it has one) header, as Nicira actions use.
    pub fn nxm(id: FieldId) -> Self {
        let d = id.def();
        let (c, f) = d.nxm.or(d.oxm).unwrap_or((0, 0));
        Self(header(c, f, d.width))
    }

    /// The field's OpenFlow 1.5 (OXM if it has one) header.
    pub fn oxm(id: FieldId) -> Self {
        let d = id.def();
        let (c, f) = d.wire_header();
        Self(header(c, f, d.width))
    }

    /// The field this header names, if it is in the table.
    pub fn field(self) -> Option<FieldId> {
        if self.0 & 0x100 != 0 {
            return None;
        }
        FieldId::by_header((self.0 >> 16) as u16, ((self.0 >> 9) & 0x7f) as u8)
    }

    pub fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Self(r.u32("field header")?))
    }

    pub fn raw(self) -> u32 {
        self.0
    }

    pub fn encode(self, out: &mut BytesMut) {
        out.put_u32(self.0);
    }

    /// Number of bits of the field (unknown headers: 8 * length byte).
    pub fn n_bits(self) -> u16 {
        match self.field() {
            Some(id) => id.def().n_bits,
            None => ((self.0 & 0xff) * 8) as u16,
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
    /// Bits `ofs..ofs+n_bits` of a field, with its NXM header (as Nicira actions and
    /// `ovs-ofctl` name it).
    pub fn new(id: FieldId, ofs: u16, n_bits: u16) -> Self {
        Self {
            field: HeaderRef::nxm(id),
            ofs,
            n_bits,
        }
    }

    /// The field named, if it is in the table.
    pub fn id(self) -> Option<FieldId> {
        self.field.field()
    }

    /// The bits covered, as a mask over the whole field (fields up to 128 bits).
    pub fn mask(self) -> u128 {
        let ones = if self.n_bits >= 128 {
            u128::MAX
        } else {
            (1u128 << self.n_bits) - 1
        };
        ones.checked_shl(u32::from(self.ofs)).unwrap_or(0)
    }

    /// The whole field, with its NXM header.
    pub fn whole(id: FieldId) -> Self {
        Self {
            field: HeaderRef::nxm(id),
            ofs: 0,
            n_bits: id.def().n_bits,
        }
    }

    /// NXM `ofs_nbits` encoding: `ofs << 6 | (n_bits - 1)`. Only meaningful for
    /// `ofs < 1024` and `1 <= n_bits <= 64` (encoders use [`SubField::checked_ofs_nbits`]).
    pub fn ofs_nbits(self) -> u16 {
        (self.ofs << 6) | (self.n_bits.saturating_sub(1) & 0x3f)
    }

    /// [`SubField::ofs_nbits`], or an error if `ofs` (10 bits) or `n_bits` (1..=64) does not
    /// fit the encoding.
    pub fn checked_ofs_nbits(self, what: &'static str) -> Result<u16, EncodeError> {
        if self.ofs >= 1 << 10 {
            return Err(EncodeError::OutOfRange {
                what,
                value: u64::from(self.ofs),
                max: (1 << 10) - 1,
            });
        }
        if !(1..=64).contains(&self.n_bits) {
            return Err(EncodeError::OutOfRange {
                what,
                value: u64::from(self.n_bits),
                max: 64,
            });
        }
        Ok(self.ofs_nbits())
    }

    pub fn from_ofs_nbits(field: HeaderRef, v: u16) -> Self {
        Self {
            field,
            ofs: v >> 6,
            n_bits: (v & 0x3f) + 1,
        }
    }

    /// The same bits named by the field's OXM header.
    pub fn with_oxm_header(self) -> Self {
        match self.field.field() {
            Some(id) => Self {
                field: HeaderRef::oxm(id),
                ..self
            },
            None => self,
        }
    }
}
