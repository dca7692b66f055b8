//! `ofp_header`: the 8 bytes that start every OpenFlow message.
//!
//! ```text
//!  0       1       2               4                               8
//! +-------+-------+---------------+-------------------------------+
//! |version| type  |    length     |              xid              |
//! +-------+-------+---------------+-------------------------------+
//! ```

use bytes::{BufMut, BytesMut};

use super::reader::{DecodeError, Reader};

/// OpenFlow 1.5 wire version.
pub const OFP15_VERSION: u8 = 0x06;
pub const HEADER_LEN: usize = 8;

#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub struct Header {
    pub version: u8,
    pub ty: u8,
    pub length: u16,
    pub xid: u32,
}

impl Header {
    pub fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let h = Self {
            version: r.u8("ofp_header")?,
            ty: r.u8("ofp_header")?,
            length: r.u16("ofp_header")?,
            xid: r.u32("ofp_header")?,
        };
        if (h.length as usize) < HEADER_LEN {
            return Err(DecodeError::BadLength {
                what: "ofp_header",
                len: h.length as usize,
            });
        }
        Ok(h)
    }

    pub fn encode(&self, out: &mut BytesMut) {
        out.put_u8(self.version);
        out.put_u8(self.ty);
        out.put_u16(self.length);
        out.put_u32(self.xid);
    }
}

/// Length of the first complete message in `buf`, if the header is there.
/// Framing uses it: check that `frame_len` bytes are buffered, then decode.
pub fn frame_len(buf: &[u8]) -> Option<usize> {
    if buf.len() < 4 {
        return None;
    }
    Some(u16::from_be_bytes([buf[2], buf[3]]) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_frame_len() {
        let h = Header {
            version: 6,
            ty: 2,
            length: 8,
            xid: 0x1234,
        };
        let mut b = BytesMut::new();
        h.encode(&mut b);
        assert_eq!(&b[..], &[6, 2, 0, 8, 0, 0, 0x12, 0x34]);
        assert_eq!(frame_len(&b), Some(8));
        assert_eq!(frame_len(&b[..3]), None);
        assert_eq!(Header::decode(&mut Reader::new(&b)).unwrap(), h);
        let bad = [6, 2, 0, 4, 0, 0, 0, 0];
        assert!(Header::decode(&mut Reader::new(&bad)).is_err());
    }
}
