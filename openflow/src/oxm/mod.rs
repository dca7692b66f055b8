//! Match fields: the field table and OXM/NXM TLV encoding of `Match`.
//!
//! An OXM TLV header (`class:16 | field:7 | hasmask:1 | length:8`), then the value and, if
//! `hasmask`, a mask of the same width. Class 0xffff (experimenter) carries a 4-byte
//! experimenter id first, counted in `length`.

pub mod registry;

use bytes::{BufMut, BytesMut};

pub use registry::{FieldDef, FieldId, Kind, Prereq, RegFamily};

use crate::wire::reader::{put_pad8, DecodeError, Reader};

/// A field: a row of the table, or an unknown header kept as is.
#[derive(Clone, Copy, Debug, Eq, PartialEq, Hash)]
#[non_exhaustive]
pub enum FieldRef {
    Known(FieldId),
    Unknown {
        class: u16,
        field: u8,
        experimenter: Option<u32>,
    },
}

impl FieldRef {
    pub fn known(self) -> Option<FieldId> {
        match self {
            FieldRef::Known(id) => Some(id),
            FieldRef::Unknown { .. } => None,
        }
    }
    fn header(self) -> (u16, u8, Option<u32>) {
        match self {
            FieldRef::Known(id) => {
                let (c, f) = id.def().wire_header();
                (c, f, None)
            }
            FieldRef::Unknown {
                class,
                field,
                experimenter,
            } => (class, field, experimenter),
        }
    }
}

/// One OXM entry: a field, its big-endian value, and an optional mask of the same width.
#[derive(Clone, Debug, Eq, PartialEq, Hash)]
pub struct MatchField {
    pub field: FieldRef,
    pub value: Vec<u8>,
    pub mask: Option<Vec<u8>>,
}

impl MatchField {
    pub fn new(id: FieldId, value: Vec<u8>, mask: Option<Vec<u8>>) -> Self {
        Self {
            field: FieldRef::Known(id),
            value,
            mask,
        }
    }

    /// Encoded size of the TLV.
    pub fn encoded_len(&self) -> usize {
        let exp = self.field.header().2.map_or(0, |_| 4);
        4 + exp + self.value.len() + self.mask.as_ref().map_or(0, Vec::len)
    }

    pub fn encode(&self, out: &mut BytesMut) {
        let (class, field, exp) = self.field.header();
        let payload = self.encoded_len() - 4;
        let has_mask = u32::from(self.mask.is_some());
        out.put_u32(
            (u32::from(class) << 16) | (u32::from(field) << 9) | (has_mask << 8) | payload as u32,
        );
        if let Some(e) = exp {
            out.put_u32(e);
        }
        out.put_slice(&self.value);
        if let Some(m) = &self.mask {
            out.put_slice(m);
        }
    }

    /// Decode one TLV; `allow_mask` is false in contexts such as a plain `set_field`.
    pub fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let h = r.u32("oxm header")?;
        let class = (h >> 16) as u16;
        let field = ((h >> 9) & 0x7f) as u8;
        let has_mask = h & 0x100 != 0;
        let mut len = (h & 0xff) as usize;
        let mut body = r.sub(len, "oxm value")?;
        let experimenter = if class == 0xffff {
            len = len.checked_sub(4).ok_or(DecodeError::BadLength {
                what: "oxm experimenter",
                len,
            })?;
            Some(body.u32("oxm experimenter")?)
        } else {
            None
        };
        if len == 0 || (has_mask && len & 1 != 0) {
            return Err(DecodeError::BadLength {
                what: "oxm value",
                len,
            });
        }
        let vlen = if has_mask { len / 2 } else { len };
        let value = body.take(vlen, "oxm value")?.to_vec();
        let mask = if has_mask {
            Some(body.take(vlen, "oxm mask")?.to_vec())
        } else {
            None
        };
        let known = experimenter
            .is_none()
            .then(|| FieldId::by_header(class, field))
            .flatten()
            .filter(|id| {
                let d = id.def();
                if d.name.starts_with("tun_metadata") {
                    vlen <= d.width
                } else {
                    vlen == d.width
                }
            });
        let field = match known {
            Some(id) => FieldRef::Known(id),
            None => FieldRef::Unknown {
                class,
                field,
                experimenter,
            },
        };
        Ok(Self { field, value, mask })
    }

    /// Order key for the wire: prerequisites (eth_type, ip_proto, icmp type) come first,
    /// because switches check prerequisites against the fields already read.
    fn wire_rank(&self) -> u8 {
        let Some(id) = self.field.known() else {
            return 4;
        };
        match id.def().name {
            "eth_type" => 0,
            "nw_proto" => 1,
            "icmpv6_type" | "icmp_type" => 2,
            _ => 3,
        }
    }

    /// Which prerequisite level (see `wire_rank`) must precede this field.
    fn needs_rank(&self) -> Option<u8> {
        let id = self.field.known()?;
        match id.def().prereq {
            Prereq::None => None,
            Prereq::Ip | Prereq::Ipv4 | Prereq::Ipv6 | Prereq::Arp => Some(0),
            Prereq::Tcp | Prereq::Udp | Prereq::Sctp | Prereq::Icmpv4 | Prereq::Icmpv6 => Some(1),
            Prereq::Nd | Prereq::NdSolicit | Prereq::NdAdvert => Some(2),
        }
    }
}

/// `ofp_match` (OXM type): an ordered list of fields.
#[derive(Clone, Debug, Default, Eq, PartialEq, Hash)]
pub struct Match {
    pub fields: Vec<MatchField>,
}

impl Match {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, id: FieldId, value: Vec<u8>, mask: Option<Vec<u8>>) {
        self.fields.push(MatchField::new(id, value, mask));
    }

    pub fn get(&self, id: FieldId) -> Option<&MatchField> {
        self.fields.iter().find(|f| f.field == FieldRef::Known(id))
    }

    /// Exact value of a field as an integer (for small fields), if matched without mask.
    pub fn exact_u64(&self, name: &str) -> Option<u64> {
        let id = FieldId::by_name(name)?;
        let f = self.get(id)?;
        if f.mask.is_some() || f.value.len() > 8 {
            return None;
        }
        Some(f.value.iter().fold(0u64, |a, b| (a << 8) | u64::from(*b)))
    }

    /// The OXM TLVs only, in wire order (no `ofp_match` header).
    pub fn encode_oxms(&self, out: &mut BytesMut) {
        // Keep the caller's order when every prerequisite already precedes its user
        // (so decode -> encode is the identity); otherwise move prerequisites first.
        let mut seen = [false; 3];
        let in_order = self.fields.iter().all(|f| {
            let ok = f.needs_rank().is_none_or(|r| seen[r as usize]);
            if let Some(s) = seen.get_mut(f.wire_rank() as usize) {
                *s = true;
            }
            ok
        });
        if in_order {
            for f in &self.fields {
                f.encode(out);
            }
        } else {
            let mut order: Vec<&MatchField> = self.fields.iter().collect();
            order.sort_by_key(|f| f.wire_rank());
            for f in order {
                f.encode(out);
            }
        }
    }

    pub fn oxms_len(&self) -> usize {
        self.fields.iter().map(MatchField::encoded_len).sum()
    }

    /// Full `ofp_match` with type OXM, length and padding.
    pub fn encode(&self, out: &mut BytesMut) {
        let start = out.len();
        out.put_u16(1);
        out.put_u16((4 + self.oxms_len()) as u16);
        self.encode_oxms(out);
        put_pad8(out, start);
    }

    pub fn decode_oxms(mut r: Reader<'_>) -> Result<Self, DecodeError> {
        let mut fields = Vec::new();
        while !r.is_empty() {
            fields.push(MatchField::decode(&mut r)?);
        }
        Ok(Self { fields })
    }

    /// Decode an `ofp_match`, consuming its padding.
    pub fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let ty = r.u16("ofp_match")?;
        if ty != 1 {
            return Err(DecodeError::BadValue {
                what: "ofp_match type",
                value: u64::from(ty),
            });
        }
        let len = r.u16("ofp_match")? as usize;
        if len < 4 {
            return Err(DecodeError::BadLength {
                what: "ofp_match",
                len,
            });
        }
        let body = r.sub(len - 4, "ofp_match")?;
        let pad = crate::wire::reader::pad8(len) - len;
        r.skip(pad, "ofp_match pad")?;
        Self::decode_oxms(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn match_round_trip_with_prereq_order() {
        let mut m = Match::new();
        m.push(FieldId::by_name("ip_src").unwrap(), vec![10, 0, 0, 1], None);
        m.push(FieldId::by_name("eth_type").unwrap(), vec![8, 0], None);
        m.push(
            FieldId::by_name("reg0").unwrap(),
            vec![0, 0, 0, 1],
            Some(vec![0, 0, 0, 1]),
        );
        let mut b = BytesMut::new();
        m.encode(&mut b);
        assert_eq!(b.len() % 8, 0);
        // eth_type goes first on the wire
        assert_eq!(&b[4..8], &[0x80, 0x00, 0x0a, 0x02]);
        let d = Match::decode(&mut Reader::new(&b)).unwrap();
        assert_eq!(d.fields.len(), 3);
        assert_eq!(
            d.fields[0].field,
            FieldRef::Known(FieldId::by_name("eth_type").unwrap())
        );
        assert!(d.fields.contains(&m.fields[0]));
    }

    #[test]
    fn unknown_field_is_kept() {
        let raw = [0xff, 0xff, 0x0a, 0x06, 0, 0, 0x23, 0x20, 0xab, 0xcd];
        let f = MatchField::decode(&mut Reader::new(&raw)).unwrap();
        assert!(matches!(
            f.field,
            FieldRef::Unknown {
                class: 0xffff,
                field: 5,
                experimenter: Some(0x2320)
            }
        ));
        let mut b = BytesMut::new();
        f.encode(&mut b);
        assert_eq!(&b[..], &raw);
    }
}
