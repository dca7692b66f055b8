//! Nicira vendor messages: packet_in2, resume, set_packet_in_format, TLV table, ct flush.

use bytes::{BufMut, BytesMut};

use super::encode::{check_match, patch_len16, EncodeError};
use super::reader::{put_pad8, DecodeError, Reader};
use super::Wire;
use crate::oxm::Match;

/// One `NXPINT_*` property of `NXT_PACKET_IN2` / `NXT_RESUME`.
#[derive(Clone, Debug, Eq, PartialEq, Hash)]
#[non_exhaustive]
pub enum PacketInProp {
    Packet(Vec<u8>),
    FullLen(u32),
    BufferId(u32),
    TableId(u8),
    Cookie(u64),
    Reason(u8),
    /// Pipeline metadata as OXM fields.
    Metadata(Match),
    Userdata(Vec<u8>),
    /// Opaque continuation (nested `NXCPT_*` properties), kept verbatim.
    Continuation(Vec<u8>),
    Unknown {
        ty: u16,
        body: Vec<u8>,
    },
}

const NXPINT_PACKET: u16 = 0;
const NXPINT_FULL_LEN: u16 = 1;
const NXPINT_BUFFER_ID: u16 = 2;
const NXPINT_TABLE_ID: u16 = 3;
const NXPINT_COOKIE: u16 = 4;
const NXPINT_REASON: u16 = 5;
const NXPINT_METADATA: u16 = 6;
const NXPINT_USERDATA: u16 = 7;
const NXPINT_CONTINUATION: u16 = 8;

impl PacketInProp {
    fn decode_all(mut r: Reader<'_>) -> Result<Vec<Self>, DecodeError> {
        let mut out = Vec::new();
        while !r.is_empty() {
            let (ty, mut b) = r.property("nx_packet_in2 property")?;
            out.push(match ty {
                NXPINT_PACKET => Self::Packet(b.take_rest().to_vec()),
                NXPINT_FULL_LEN => Self::FullLen(b.u32("full_len")?),
                NXPINT_BUFFER_ID => Self::BufferId(b.u32("buffer_id")?),
                NXPINT_TABLE_ID => Self::TableId(b.u8("table_id")?),
                NXPINT_COOKIE => {
                    b.skip(4, "cookie")?;
                    Self::Cookie(b.u64("cookie")?)
                }
                NXPINT_REASON => Self::Reason(b.u8("reason")?),
                NXPINT_METADATA => Self::Metadata(Match::decode_oxms(b)?),
                NXPINT_USERDATA => Self::Userdata(b.take_rest().to_vec()),
                NXPINT_CONTINUATION => Self::Continuation(b.take_rest().to_vec()),
                _ => Self::Unknown {
                    ty,
                    body: b.take_rest().to_vec(),
                },
            });
        }
        Ok(out)
    }

    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        let start = out.len();
        let ty = match self {
            Self::Packet(_) => NXPINT_PACKET,
            Self::FullLen(_) => NXPINT_FULL_LEN,
            Self::BufferId(_) => NXPINT_BUFFER_ID,
            Self::TableId(_) => NXPINT_TABLE_ID,
            Self::Cookie(_) => NXPINT_COOKIE,
            Self::Reason(_) => NXPINT_REASON,
            Self::Metadata(_) => NXPINT_METADATA,
            Self::Userdata(_) => NXPINT_USERDATA,
            Self::Continuation(_) => NXPINT_CONTINUATION,
            Self::Unknown { ty, .. } => *ty,
        };
        out.put_u16(ty);
        out.put_u16(0);
        match self {
            Self::Packet(b) | Self::Userdata(b) | Self::Continuation(b) => out.put_slice(b),
            Self::Unknown { body, .. } => out.put_slice(body),
            Self::FullLen(v) | Self::BufferId(v) => out.put_u32(*v),
            Self::TableId(v) | Self::Reason(v) => out.put_u8(*v),
            Self::Cookie(v) => {
                out.put_u32(0);
                out.put_u64(*v);
            }
            Self::Metadata(m) => {
                check_match(m)?;
                m.encode_oxms(out);
            }
        }
        patch_len16(out, start, start + 2, "nx_packet_in2 property")?;
        put_pad8(out, start);
        Ok(())
    }
}

/// `NXT_PACKET_IN2`: a list of properties.
#[derive(Clone, Debug, Default, Eq, PartialEq, Hash)]
pub struct PacketIn2 {
    pub props: Vec<PacketInProp>,
}

impl PacketIn2 {
    pub fn packet(&self) -> Option<&[u8]> {
        self.props.iter().find_map(|p| match p {
            PacketInProp::Packet(b) => Some(b.as_slice()),
            _ => None,
        })
    }
    pub fn userdata(&self) -> Option<&[u8]> {
        self.props.iter().find_map(|p| match p {
            PacketInProp::Userdata(b) => Some(b.as_slice()),
            _ => None,
        })
    }
    /// The `NXT_RESUME` that continues this paused pipeline (packet, metadata and
    /// continuation), if it was paused (`controller(...,pause)`).
    pub fn to_resume(&self) -> Option<Resume> {
        self.props
            .iter()
            .any(|p| matches!(p, PacketInProp::Continuation(_)))
            .then(|| Resume {
                props: self
                    .props
                    .iter()
                    .filter(|p| {
                        matches!(
                            p,
                            PacketInProp::Packet(_)
                                | PacketInProp::Metadata(_)
                                | PacketInProp::Continuation(_)
                        )
                    })
                    .cloned()
                    .collect(),
            })
    }

    pub fn metadata(&self) -> Option<&Match> {
        self.props.iter().find_map(|p| match p {
            PacketInProp::Metadata(m) => Some(m),
            _ => None,
        })
    }
}

impl Wire for PacketIn2 {
    fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        Ok(Self {
            props: PacketInProp::decode_all(Reader::new(buf))?,
        })
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        self.props.iter().try_for_each(|p| p.encode(out))
    }
}

/// `NXT_RESUME`: same properties as packet_in2 (packet, metadata, continuation).
pub type Resume = PacketIn2;

/// `NXT_SET_PACKET_IN_FORMAT`: 0 standard, 1 NXM, 2 NXT_PACKET_IN2.
#[derive(Clone, Debug, Default, Eq, PartialEq, Hash)]
pub struct SetPacketInFormat {
    pub format: u32,
}

impl Wire for SetPacketInFormat {
    fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(buf);
        let format = r.u32("nx_set_packet_in_format")?;
        r.finish("nx_set_packet_in_format")?;
        Ok(Self { format })
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        out.put_u32(self.format);
        Ok(())
    }
}

/// `nx_tlv_map`: Geneve option (class, type, len) mapped to `tun_metadata<index>`.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq, Hash)]
pub struct TlvMap {
    pub option_class: u16,
    pub option_type: u8,
    pub option_len: u8,
    pub index: u16,
}

impl TlvMap {
    fn decode_all(mut r: Reader<'_>) -> Result<Vec<Self>, DecodeError> {
        let mut out = Vec::new();
        while !r.is_empty() {
            let m = Self {
                option_class: r.u16("nx_tlv_map")?,
                option_type: r.u8("nx_tlv_map")?,
                option_len: r.u8("nx_tlv_map")?,
                index: r.u16("nx_tlv_map")?,
            };
            r.skip(2, "nx_tlv_map")?;
            out.push(m);
        }
        Ok(out)
    }
    fn encode(self, out: &mut BytesMut) {
        out.put_u16(self.option_class);
        out.put_u8(self.option_type);
        out.put_u8(self.option_len);
        out.put_u16(self.index);
        out.put_u16(0);
    }
}

pub const NXTTMC_ADD: u16 = 0;
pub const NXTTMC_DELETE: u16 = 1;
pub const NXTTMC_CLEAR: u16 = 2;

/// `NXT_TLV_TABLE_MOD`.
#[derive(Clone, Debug, Default, Eq, PartialEq, Hash)]
pub struct TlvTableMod {
    pub command: u16,
    pub mappings: Vec<TlvMap>,
}

impl Wire for TlvTableMod {
    fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(buf);
        let command = r.u16("nx_tlv_table_mod")?;
        r.skip(6, "nx_tlv_table_mod")?;
        Ok(Self {
            command,
            mappings: TlvMap::decode_all(r)?,
        })
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        out.put_u16(self.command);
        out.put_slice(&[0; 6]);
        for m in &self.mappings {
            m.encode(out);
        }
        Ok(())
    }
}

/// `NXT_TLV_TABLE_REPLY`.
#[derive(Clone, Debug, Default, Eq, PartialEq, Hash)]
pub struct TlvTableReply {
    pub max_option_space: u32,
    pub max_fields: u16,
    pub mappings: Vec<TlvMap>,
}

impl Wire for TlvTableReply {
    fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(buf);
        let max_option_space = r.u32("nx_tlv_table_reply")?;
        let max_fields = r.u16("nx_tlv_table_reply")?;
        r.skip(10, "nx_tlv_table_reply")?;
        Ok(Self {
            max_option_space,
            max_fields,
            mappings: TlvMap::decode_all(r)?,
        })
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        out.put_u32(self.max_option_space);
        out.put_u16(self.max_fields);
        out.put_slice(&[0; 10]);
        for m in &self.mappings {
            m.encode(out);
        }
        Ok(())
    }
}

/// `NXT_CT_FLUSH_ZONE` (`nx_zone_id`: 6 zero bytes, then the zone).
#[derive(Clone, Debug, Default, Eq, PartialEq, Hash)]
pub struct CtFlushZone {
    pub zone_id: u16,
}

impl Wire for CtFlushZone {
    fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(buf);
        r.skip(6, "nx_zone_id")?;
        let zone_id = r.u16("nx_zone_id")?;
        r.finish("nx_zone_id")?;
        Ok(Self { zone_id })
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        out.put_slice(&[0; 6]);
        out.put_u16(self.zone_id);
        Ok(())
    }
}
