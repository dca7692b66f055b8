//! Bounds-checked big-endian reader over a byte slice, and the decode error type.

use thiserror::Error;

/// Why a byte string could not be decoded. Decoders never panic; they return this.
#[derive(Clone, Debug, Eq, PartialEq, Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Fewer bytes than the structure needs.
    #[error("{what}: truncated, need {need} bytes, have {have}")]
    Truncated {
        what: &'static str,
        need: usize,
        have: usize,
    },
    /// A length field is inconsistent with the data or the structure.
    #[error("{what}: bad length {len}")]
    BadLength { what: &'static str, len: usize },
    /// Bytes left over after a complete structure.
    #[error("{0}: trailing bytes")]
    TrailingBytes(&'static str),
    /// A field holds a value that this structure cannot carry.
    #[error("{what}: bad value {value:#x}")]
    BadValue { what: &'static str, value: u64 },
}

/// Cursor over a byte slice; every read is bounds-checked.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Bytes not yet consumed.
    pub fn left(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.left() == 0
    }

    /// The unread bytes, without consuming them.
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    pub fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        if self.left() < n {
            return Err(DecodeError::Truncated {
                what,
                need: n,
                have: self.left(),
            });
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// A reader over the next `n` bytes, which are consumed from `self`.
    pub fn sub(&mut self, n: usize, what: &'static str) -> Result<Reader<'a>, DecodeError> {
        self.take(n, what).map(Reader::new)
    }

    pub fn skip(&mut self, n: usize, what: &'static str) -> Result<(), DecodeError> {
        self.take(n, what).map(|_| ())
    }

    /// One OpenFlow TLV property (be16 type, be16 length including the 4-byte header, body,
    /// padding to 8 bytes): returns the type and a reader over the body. A missing final pad is
    /// tolerated, as OVS does.
    pub fn property(&mut self, what: &'static str) -> Result<(u16, Reader<'a>), DecodeError> {
        let ty = self.u16(what)?;
        let len = self.u16(what)? as usize;
        if len < 4 {
            return Err(DecodeError::BadLength { what, len });
        }
        let body = self.sub(len - 4, what)?;
        self.skip((pad8(len) - len).min(self.left()), what)?;
        Ok((ty, body))
    }

    /// Consume everything left.
    pub fn take_rest(&mut self) -> &'a [u8] {
        let out = &self.buf[self.pos..];
        self.pos = self.buf.len();
        out
    }

    pub fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        Ok(self.take(1, what)?[0])
    }

    pub fn u16(&mut self, what: &'static str) -> Result<u16, DecodeError> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    pub fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u64(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }

    pub fn peek_u16(&self, what: &'static str) -> Result<u16, DecodeError> {
        self.clone().u16(what)
    }

    /// Succeeds only if everything was consumed.
    pub fn finish(&self, what: &'static str) -> Result<(), DecodeError> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(DecodeError::TrailingBytes(what))
        }
    }
}

/// Round `n` up to a multiple of 8 (OpenFlow structures are 8-byte aligned).
pub const fn pad8(n: usize) -> usize {
    (n + 7) & !7
}

/// Append zero bytes so that `out.len()` becomes a multiple of 8 relative to `start`.
pub fn put_pad8(out: &mut bytes::BytesMut, start: usize) {
    let len = out.len() - start;
    out.resize(start + pad8(len), 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_bounds() {
        let mut r = Reader::new(&[1, 0, 2, 0, 0, 0, 3, 9]);
        assert_eq!(r.u8("a").unwrap(), 1);
        assert_eq!(r.u16("b").unwrap(), 2);
        assert_eq!(r.u32("c").unwrap(), 3);
        assert_eq!(r.finish("x"), Err(DecodeError::TrailingBytes("x")));
        assert_eq!(
            r.u16("d"),
            Err(DecodeError::Truncated {
                what: "d",
                need: 2,
                have: 1
            })
        );
        let mut s = r.sub(1, "e").unwrap();
        assert_eq!(s.u8("f").unwrap(), 9);
        assert!(r.finish("y").is_ok());
        assert_eq!(pad8(0), 0);
        assert_eq!(pad8(9), 16);
    }
}
