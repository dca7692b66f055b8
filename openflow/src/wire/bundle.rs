//! `OFPT_BUNDLE_CONTROL` and `OFPT_BUNDLE_ADD_MESSAGE` (OF1.4+).

use bytes::{BufMut, BytesMut};

use super::reader::{put_pad8, DecodeError, Reader};
use super::Wire;

pub const OFPBCT_OPEN_REQUEST: u16 = 0;
pub const OFPBCT_OPEN_REPLY: u16 = 1;
pub const OFPBCT_CLOSE_REQUEST: u16 = 2;
pub const OFPBCT_CLOSE_REPLY: u16 = 3;
pub const OFPBCT_COMMIT_REQUEST: u16 = 4;
pub const OFPBCT_COMMIT_REPLY: u16 = 5;
pub const OFPBCT_DISCARD_REQUEST: u16 = 6;
pub const OFPBCT_DISCARD_REPLY: u16 = 7;
pub const OFPBF_ATOMIC: u16 = 1;
pub const OFPBF_ORDERED: u16 = 2;

/// `ofp14_bundle_ctrl_msg`; properties kept raw.
#[derive(Clone, Debug, Default, Eq, PartialEq, Hash)]
pub struct BundleControl {
    pub bundle_id: u32,
    pub ctrl_type: u16,
    pub flags: u16,
    pub properties: Vec<u8>,
}

impl Wire for BundleControl {
    fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(buf);
        Ok(Self {
            bundle_id: r.u32("ofp14_bundle_ctrl_msg")?,
            ctrl_type: r.u16("ofp14_bundle_ctrl_msg")?,
            flags: r.u16("ofp14_bundle_ctrl_msg")?,
            properties: r.take_rest().to_vec(),
        })
    }
    fn encode(&self, out: &mut BytesMut) {
        out.put_u32(self.bundle_id);
        out.put_u16(self.ctrl_type);
        out.put_u16(self.flags);
        out.put_slice(&self.properties);
    }
}

/// `ofp14_bundle_add_msg`: `message` is a complete OpenFlow message (header included).
#[derive(Clone, Debug, Default, Eq, PartialEq, Hash)]
pub struct BundleAddMessage {
    pub bundle_id: u32,
    pub flags: u16,
    pub message: Vec<u8>,
    pub properties: Vec<u8>,
}

impl Wire for BundleAddMessage {
    fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(buf);
        let bundle_id = r.u32("ofp14_bundle_add_msg")?;
        r.skip(2, "ofp14_bundle_add_msg")?;
        let flags = r.u16("ofp14_bundle_add_msg")?;
        let len = super::header::frame_len(r.rest()).ok_or(DecodeError::Truncated {
            what: "bundled message",
            need: 4,
            have: r.left(),
        })?;
        if len < super::header::HEADER_LEN {
            return Err(DecodeError::BadLength {
                what: "bundled message",
                len,
            });
        }
        let message = r.take(len, "bundled message")?.to_vec();
        // Padding to 8 bytes, then properties.
        let pad = super::reader::pad8(len) - len;
        r.skip(pad.min(r.left()), "bundled message pad")?;
        Ok(Self {
            bundle_id,
            flags,
            message,
            properties: r.take_rest().to_vec(),
        })
    }
    fn encode(&self, out: &mut BytesMut) {
        out.put_u32(self.bundle_id);
        out.put_u16(0);
        out.put_u16(self.flags);
        let start = out.len();
        out.put_slice(&self.message);
        if !self.properties.is_empty() {
            put_pad8(out, start);
            out.put_slice(&self.properties);
        }
    }
}
