//! `NXT_CT_FLUSH` (Open vSwitch 3.1 on): flush the conntrack entries that match a tuple.
//!
//! ```text
//! nx_ct_flush: ip_proto:8 pad:56, then properties (type:16 len:16 value, padded to 8):
//!   NXT_CT_ORIG_TUPLE (0), NXT_CT_REPLY_TUPLE (1): nested (4 pad bytes after the header),
//!     SRC (0) / DST (1): 16-byte IPv6 or IPv4-mapped address, SRC_PORT (2) / DST_PORT (3)
//!     / ICMP_ID (4): be16, ICMP_TYPE (5) / ICMP_CODE (6): u8
//!   NXT_CT_ZONE_ID (2): be16
//! ```
//! An absent field matches anything. Property types this build does not know are kept.

use std::net::Ipv6Addr;

use bytes::{BufMut, BytesMut};

use super::encode::{patch_len16, EncodeError};
use super::reader::{pad8, put_pad8, DecodeError, Reader};
use super::Wire;

const NXT_CT_ORIG_TUPLE: u16 = 0;
const NXT_CT_REPLY_TUPLE: u16 = 1;
const NXT_CT_ZONE_ID: u16 = 2;

const TUPLE_SRC: u16 = 0;
const TUPLE_DST: u16 = 1;
const TUPLE_SRC_PORT: u16 = 2;
const TUPLE_DST_PORT: u16 = 3;
const TUPLE_ICMP_ID: u16 = 4;
const TUPLE_ICMP_TYPE: u16 = 5;
const TUPLE_ICMP_CODE: u16 = 6;

/// One direction's tuple of a [`CtFlush`].
#[derive(Clone, Debug, Default, Eq, PartialEq, Hash)]
pub struct CtTuple {
    /// IPv6, or IPv4 as an IPv4-mapped address.
    pub src: Option<Ipv6Addr>,
    pub dst: Option<Ipv6Addr>,
    pub src_port: Option<u16>,
    pub dst_port: Option<u16>,
    pub icmp_id: Option<u16>,
    pub icmp_type: Option<u8>,
    pub icmp_code: Option<u8>,
    /// Properties of other types: (type, value).
    pub unknown: Vec<(u16, Vec<u8>)>,
}

/// `NXT_CT_FLUSH`.
#[derive(Clone, Debug, Default, Eq, PartialEq, Hash)]
pub struct CtFlush {
    /// 0: any protocol.
    pub ip_proto: u8,
    pub orig: CtTuple,
    pub reply: CtTuple,
    pub zone_id: Option<u16>,
    /// Properties of other types: (type, value).
    pub unknown: Vec<(u16, Vec<u8>)>,
}

/// Reads the properties in `r`: (type, value) pairs.
fn props<'a>(mut r: Reader<'a>, what: &'static str) -> Result<Vec<(u16, &'a [u8])>, DecodeError> {
    let mut out = Vec::new();
    while !r.is_empty() {
        let ty = r.u16(what)?;
        let len = r.u16(what)? as usize;
        if len < 4 {
            return Err(DecodeError::BadLength { what, len });
        }
        let value = r.take(len - 4, what)?;
        // The last property's padding may be left out.
        let pad = pad8(len) - len;
        if !r.is_empty() {
            r.skip(pad, what)?;
        }
        out.push((ty, value));
    }
    Ok(out)
}

fn be16(v: &[u8], what: &'static str) -> Result<u16, DecodeError> {
    let mut r = Reader::new(v);
    let x = r.u16(what)?;
    r.finish(what)?;
    Ok(x)
}

fn byte(v: &[u8], what: &'static str) -> Result<u8, DecodeError> {
    let mut r = Reader::new(v);
    let x = r.u8(what)?;
    r.finish(what)?;
    Ok(x)
}

fn put_prop(out: &mut BytesMut, ty: u16, value: &[u8]) -> Result<(), EncodeError> {
    let start = out.len();
    out.put_u16(ty);
    out.put_u16(0);
    out.put_slice(value);
    patch_len16(out, start, start + 2, "ct flush property")?;
    put_pad8(out, start);
    Ok(())
}

impl CtTuple {
    fn is_empty(&self) -> bool {
        *self == CtTuple::default()
    }

    fn decode(value: &[u8]) -> Result<Self, DecodeError> {
        const W: &str = "nx_ct_flush tuple";
        let mut r = Reader::new(value);
        // Nested properties start 8-aligned: 4 pad bytes after the outer header.
        r.skip(4, W)?;
        let mut t = CtTuple::default();
        for (ty, v) in props(r, W)? {
            match ty {
                TUPLE_SRC | TUPLE_DST => {
                    let a: [u8; 16] = v.try_into().map_err(|_| DecodeError::BadLength {
                        what: W,
                        len: v.len(),
                    })?;
                    let ip = Some(Ipv6Addr::from(a));
                    if ty == TUPLE_SRC {
                        t.src = ip;
                    } else {
                        t.dst = ip;
                    }
                }
                TUPLE_SRC_PORT => t.src_port = Some(be16(v, W)?),
                TUPLE_DST_PORT => t.dst_port = Some(be16(v, W)?),
                TUPLE_ICMP_ID => t.icmp_id = Some(be16(v, W)?),
                TUPLE_ICMP_TYPE => t.icmp_type = Some(byte(v, W)?),
                TUPLE_ICMP_CODE => t.icmp_code = Some(byte(v, W)?),
                other => t.unknown.push((other, v.to_vec())),
            }
        }
        Ok(t)
    }

    fn encode(&self, out: &mut BytesMut, ty: u16) -> Result<(), EncodeError> {
        if self.is_empty() {
            return Ok(());
        }
        let start = out.len();
        out.put_u16(ty);
        out.put_u16(0);
        out.put_u32(0);
        for (t, a) in [(TUPLE_SRC, self.src), (TUPLE_DST, self.dst)] {
            if let Some(a) = a {
                put_prop(out, t, &a.octets())?;
            }
        }
        for (t, v) in [
            (TUPLE_SRC_PORT, self.src_port),
            (TUPLE_DST_PORT, self.dst_port),
            (TUPLE_ICMP_ID, self.icmp_id),
        ] {
            if let Some(v) = v {
                put_prop(out, t, &v.to_be_bytes())?;
            }
        }
        for (t, v) in [
            (TUPLE_ICMP_TYPE, self.icmp_type),
            (TUPLE_ICMP_CODE, self.icmp_code),
        ] {
            if let Some(v) = v {
                put_prop(out, t, &[v])?;
            }
        }
        for (t, v) in &self.unknown {
            put_prop(out, *t, v)?;
        }
        patch_len16(out, start, start + 2, "ct flush tuple")
    }
}

impl Wire for CtFlush {
    fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        const W: &str = "nx_ct_flush";
        let mut r = Reader::new(buf);
        let ip_proto = r.u8(W)?;
        r.skip(7, W)?;
        let mut m = CtFlush {
            ip_proto,
            ..CtFlush::default()
        };
        for (ty, v) in props(r, W)? {
            match ty {
                NXT_CT_ORIG_TUPLE => m.orig = CtTuple::decode(v)?,
                NXT_CT_REPLY_TUPLE => m.reply = CtTuple::decode(v)?,
                NXT_CT_ZONE_ID => m.zone_id = Some(be16(v, W)?),
                other => m.unknown.push((other, v.to_vec())),
            }
        }
        Ok(m)
    }

    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        out.put_u8(self.ip_proto);
        out.put_slice(&[0; 7]);
        self.orig.encode(out, NXT_CT_ORIG_TUPLE)?;
        self.reply.encode(out, NXT_CT_REPLY_TUPLE)?;
        if let Some(z) = self.zone_id {
            put_prop(out, NXT_CT_ZONE_ID, &z.to_be_bytes())?;
        }
        for (t, v) in &self.unknown {
            put_prop(out, *t, v)?;
        }
        Ok(())
    }
}
