//! Small fixed-layout messages: hello, echo, error, features, config, role, port status.

use bytes::{BufMut, BytesMut};

use super::encode::{len16, EncodeError};
use super::reader::{put_pad8, DecodeError, Reader};
use super::Wire;

/// A message with no body (`OFPT_FEATURES_REQUEST`, `OFPT_BARRIER_*`, ...).
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct Empty;

impl Wire for Empty {
    fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        Reader::new(buf).finish("empty message")?;
        Ok(Self)
    }
    fn encode(&self, _out: &mut BytesMut) -> Result<(), EncodeError> {
        Ok(())
    }
}

/// `OFPT_ECHO_REQUEST` / `OFPT_ECHO_REPLY`: arbitrary payload echoed back.
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct Echo {
    pub data: Vec<u8>,
}

impl Wire for Echo {
    fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        Ok(Self { data: buf.to_vec() })
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        out.put_slice(&self.data);
        Ok(())
    }
}

/// One `ofp_hello_elem_header` element.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum HelloElem {
    /// `OFPHET_VERSIONBITMAP`: bit N of word W set = version 32*W+N supported.
    VersionBitmap(Vec<u32>),
    Unknown {
        ty: u16,
        body: Vec<u8>,
    },
}

/// `OFPT_HELLO` with its elements.
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct Hello {
    pub elements: Vec<HelloElem>,
}

impl Hello {
    /// A hello that offers exactly the given wire versions.
    pub fn with_versions(versions: &[u8]) -> Self {
        let mut words = vec![0u32; 1];
        for &v in versions {
            let w = (v / 32) as usize;
            if words.len() <= w {
                words.resize(w + 1, 0);
            }
            words[w] |= 1 << (v % 32);
        }
        Self {
            elements: vec![HelloElem::VersionBitmap(words)],
        }
    }

    /// Whether the peer offers `version` (without a bitmap: only its header version counts).
    pub fn offers(&self, version: u8) -> Option<bool> {
        self.elements.iter().find_map(|e| match e {
            HelloElem::VersionBitmap(words) => Some(
                words
                    .get((version / 32) as usize)
                    .is_some_and(|w| w & (1 << (version % 32)) != 0),
            ),
            HelloElem::Unknown { .. } => None,
        })
    }
}

impl Wire for Hello {
    fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(buf);
        let mut elements = Vec::new();
        while r.left() >= 4 {
            // Elements are padded to 8 bytes; a missing final pad is tolerated.
            let (ty, mut body) = r.property("hello element")?;
            if ty == 1 {
                let mut words = Vec::new();
                while !body.is_empty() {
                    words.push(body.u32("version bitmap")?);
                }
                elements.push(HelloElem::VersionBitmap(words));
            } else {
                elements.push(HelloElem::Unknown {
                    ty,
                    body: body.take_rest().to_vec(),
                });
            }
        }
        r.finish("ofp_hello")?;
        Ok(Self { elements })
    }

    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        for e in &self.elements {
            let start = out.len();
            match e {
                HelloElem::VersionBitmap(words) => {
                    out.put_u16(1);
                    out.put_u16(len16(4 + 4 * words.len(), "hello element")?);
                    for w in words {
                        out.put_u32(*w);
                    }
                }
                HelloElem::Unknown { ty, body } => {
                    out.put_u16(*ty);
                    out.put_u16(len16(4 + body.len(), "hello element")?);
                    out.put_slice(body);
                }
            }
            put_pad8(out, start);
        }
        Ok(())
    }
}

/// Vendor id of Nicira extensions.
pub const NX_VENDOR_ID: u32 = 0x0000_2320;
/// Vendor id of ONF extensions.
pub const ONF_VENDOR_ID: u32 = 0x4f4e_4600;

/// Error type and code of an `OFPT_ERROR`.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum ErrorCode {
    Standard {
        ty: u16,
        code: u16,
    },
    /// `OFPET_EXPERIMENTER` (0xffff): Nicira/ONF errors in OF1.2+.
    Experimenter {
        exp_code: u16,
        experimenter: u32,
    },
}

/// `OFPT_ERROR` (`ofp_error_msg`); `data` is usually the start of the offending request.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct ErrorMsg {
    pub code: ErrorCode,
    pub data: Vec<u8>,
}

impl Wire for ErrorMsg {
    fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(buf);
        let ty = r.u16("ofp_error_msg")?;
        let code = r.u16("ofp_error_msg")?;
        let code = if ty == 0xffff {
            ErrorCode::Experimenter {
                exp_code: code,
                experimenter: r.u32("ofp_error_msg experimenter")?,
            }
        } else {
            ErrorCode::Standard { ty, code }
        };
        Ok(Self {
            code,
            data: r.take_rest().to_vec(),
        })
    }

    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        match self.code {
            ErrorCode::Standard { ty, code } => {
                out.put_u16(ty);
                out.put_u16(code);
            }
            ErrorCode::Experimenter {
                exp_code,
                experimenter,
            } => {
                out.put_u16(0xffff);
                out.put_u16(exp_code);
                out.put_u32(experimenter);
            }
        }
        out.put_slice(&self.data);
        Ok(())
    }
}

/// `OFPT_FEATURES_REPLY` (OF1.3+ layout, no ports).
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct FeaturesReply {
    pub datapath_id: u64,
    pub n_buffers: u32,
    pub n_tables: u8,
    pub auxiliary_id: u8,
    pub capabilities: u32,
}

impl Wire for FeaturesReply {
    fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(buf);
        let out = Self {
            datapath_id: r.u64("ofp_switch_features")?,
            n_buffers: r.u32("ofp_switch_features")?,
            n_tables: r.u8("ofp_switch_features")?,
            auxiliary_id: r.u8("ofp_switch_features")?,
            capabilities: {
                r.skip(2, "ofp_switch_features")?;
                r.u32("ofp_switch_features")?
            },
        };
        r.skip(4, "ofp_switch_features")?;
        r.finish("ofp_switch_features")?;
        Ok(out)
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        out.put_u64(self.datapath_id);
        out.put_u32(self.n_buffers);
        out.put_u8(self.n_tables);
        out.put_u8(self.auxiliary_id);
        out.put_u16(0);
        out.put_u32(self.capabilities);
        out.put_u32(0);
        Ok(())
    }
}

/// `ofp_switch_config` (get_config reply, set_config).
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct SwitchConfig {
    pub flags: u16,
    pub miss_send_len: u16,
}

impl Wire for SwitchConfig {
    fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(buf);
        let out = Self {
            flags: r.u16("ofp_switch_config")?,
            miss_send_len: r.u16("ofp_switch_config")?,
        };
        r.finish("ofp_switch_config")?;
        Ok(out)
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        out.put_u16(self.flags);
        out.put_u16(self.miss_send_len);
        Ok(())
    }
}

/// `ofp_role_request` (request and reply).
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct RoleRequest {
    pub role: u32,
    pub generation_id: u64,
}

impl Wire for RoleRequest {
    fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(buf);
        let role = r.u32("ofp_role_request")?;
        r.skip(4, "ofp_role_request")?;
        let generation_id = r.u64("ofp_role_request")?;
        r.finish("ofp_role_request")?;
        Ok(Self {
            role,
            generation_id,
        })
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        out.put_u32(self.role);
        out.put_u32(0);
        out.put_u64(self.generation_id);
        Ok(())
    }
}

/// `OFPT_PORT_STATUS` with an OF1.4+ `ofp_port` (properties kept raw).
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct PortStatus {
    pub reason: u8,
    pub port_no: u32,
    pub hw_addr: [u8; 6],
    pub name: [u8; 16],
    pub config: u32,
    pub state: u32,
    pub properties: Vec<u8>,
}

impl Wire for PortStatus {
    fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(buf);
        let reason = r.u8("ofp_port_status")?;
        r.skip(7, "ofp_port_status")?;
        let port_no = r.u32("ofp_port")?;
        let len = r.u16("ofp_port")? as usize;
        if len < 40 {
            return Err(DecodeError::BadLength {
                what: "ofp_port",
                len,
            });
        }
        let mut p = r.sub(len - 6, "ofp_port")?;
        p.skip(2, "ofp_port")?;
        let mut hw_addr = [0; 6];
        hw_addr.copy_from_slice(p.take(6, "ofp_port")?);
        p.skip(2, "ofp_port")?;
        let mut name = [0; 16];
        name.copy_from_slice(p.take(16, "ofp_port")?);
        let config = p.u32("ofp_port")?;
        let state = p.u32("ofp_port")?;
        let properties = p.take_rest().to_vec();
        r.finish("ofp_port_status")?;
        Ok(Self {
            reason,
            port_no,
            hw_addr,
            name,
            config,
            state,
            properties,
        })
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        out.put_u8(self.reason);
        out.put_slice(&[0; 7]);
        out.put_u32(self.port_no);
        out.put_u16(len16(40 + self.properties.len(), "ofp_port")?);
        out.put_u16(0);
        out.put_slice(&self.hw_addr);
        out.put_u16(0);
        out.put_slice(&self.name);
        out.put_u32(self.config);
        out.put_u32(self.state);
        out.put_slice(&self.properties);
        Ok(())
    }
}
