//! `OFPT_BUNDLE_CONTROL` and `OFPT_BUNDLE_ADD_MESSAGE` (OF1.4+), and [`BundleBuilder`],
//! which encodes the messages of a bundle straight into one buffer of bundle-add frames.

use bytes::{BufMut, BytesMut};

use super::encode::{len16, EncodeError, MAX_MESSAGE_LEN};
use super::header::{frame_len, HEADER_LEN, OFP15_VERSION};
use super::reader::{put_pad8, DecodeError, Reader};
use super::{Message, Wire};

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
/// The longest body of a message added to a bundle: a bundle add (16-byte header, then the
/// message with its own 8-byte header) is at most 65535 bytes.
pub const MAX_BUNDLED_BODY: usize = MAX_MESSAGE_LEN - BUNDLE_ADD_HEADER_LEN - 8;

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
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        out.put_u32(self.bundle_id);
        out.put_u16(self.ctrl_type);
        out.put_u16(self.flags);
        out.put_slice(&self.properties);
        Ok(())
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
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        out.put_u32(self.bundle_id);
        out.put_u16(0);
        out.put_u16(self.flags);
        let start = out.len();
        out.put_slice(&self.message);
        if !self.properties.is_empty() {
            put_pad8(out, start);
            out.put_slice(&self.properties);
        }
        Ok(())
    }
}

const OFPT_PACKET_OUT: u8 = 13;
const OFPT_FLOW_MOD: u8 = 14;
const OFPT_GROUP_MOD: u8 = 15;
const OFPT_PORT_MOD: u8 = 16;
const OFPT_BUNDLE_ADD_MESSAGE: u8 = 34;

/// Bytes of an `OFPT_BUNDLE_ADD_MESSAGE` before the embedded message: the outer header,
/// bundle id, pad and flags.
pub const BUNDLE_ADD_HEADER_LEN: usize = 16;

/// Whether Open vSwitch accepts a message of this type inside a bundle
/// (`ofputil_is_bundlable`: port mods, flow mods, group mods and packet-outs).
pub fn is_bundlable(msg_type: u8) -> bool {
    matches!(
        msg_type,
        OFPT_PACKET_OUT | OFPT_FLOW_MOD | OFPT_GROUP_MOD | OFPT_PORT_MOD
    )
}

/// The messages of one bundle, encoded once, straight into one buffer of complete
/// `OFPT_BUNDLE_ADD_MESSAGE` frames (no `Message` values needed: see
/// [`BundleBuilder::push_raw`]). Each push returns the index of its message; errors the
/// switch reports for a bundle are attributed to these indexes.
///
/// The bundle id and the xids (the add's and the embedded message's, which must be equal)
/// are left zero here and written when the bundle is sent (`conn::Handle::commit_bundle`).
///
/// ```text
/// frame: ofp_header(type 34) bundle_id:32 pad:16 flags:16 | ofp_header(type, len) body...
/// ```
#[derive(Clone, Debug, Default)]
pub struct BundleBuilder {
    flags: u16,
    buf: BytesMut,
    count: usize,
}

impl BundleBuilder {
    /// An empty bundle with `flags` (`OFPBF_ATOMIC | OFPBF_ORDERED`), used for the open
    /// request and every add.
    pub fn new(flags: u16) -> Self {
        Self {
            flags,
            buf: BytesMut::new(),
            count: 0,
        }
    }

    /// Like [`BundleBuilder::new`], with room for `bytes` of frames.
    pub fn with_capacity(flags: u16, bytes: usize) -> Self {
        Self {
            flags,
            buf: BytesMut::with_capacity(bytes),
            count: 0,
        }
    }

    pub fn flags(&self) -> u16 {
        self.flags
    }

    /// Number of messages pushed.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes of encoded frames.
    pub fn encoded_len(&self) -> usize {
        self.buf.len()
    }

    /// The frames as encoded so far (bundle id and xids still zero).
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Add `body` (a flow mod, group mod or packet-out). Meter mods and other kinds that
    /// Open vSwitch does not take in a bundle are refused with
    /// [`EncodeError::NotBundlable`]; a message that does not fit a bundle add with
    /// [`EncodeError::TooLong`]. On error nothing is added.
    pub fn push_message(&mut self, body: &Message) -> Result<usize, EncodeError> {
        let (ty, exp) = body.code();
        if exp.is_some() {
            return Err(EncodeError::NotBundlable { msg_type: ty });
        }
        self.try_push_raw(ty, |out| body.encode_body(out))
    }

    /// Add one message of OpenFlow type `msg_type` whose body `encode_body` appends (only
    /// append: the bytes before belong to other messages). The builder writes the bundle-add
    /// header and the embedded message's header, then fixes both lengths. Returns the index
    /// of the message; refuses types that cannot be bundled and messages too long for a
    /// bundle add (an add is at most 65535 bytes, so the body at most 65511); on error
    /// nothing is added.
    pub fn push_raw(
        &mut self,
        msg_type: u8,
        encode_body: impl FnOnce(&mut BytesMut),
    ) -> Result<usize, EncodeError> {
        self.try_push_raw(msg_type, |out| {
            encode_body(out);
            Ok::<(), EncodeError>(())
        })
    }

    /// [`BundleBuilder::push_raw`] with a body encoder that can fail (such as
    /// [`crate::action::Action::encode_list`], or an encoder with an error type of its own
    /// that converts from [`EncodeError`]); its error is returned and nothing is added.
    pub fn try_push_raw<E: From<EncodeError>>(
        &mut self,
        msg_type: u8,
        encode_body: impl FnOnce(&mut BytesMut) -> Result<(), E>,
    ) -> Result<usize, E> {
        if !is_bundlable(msg_type) {
            return Err(EncodeError::NotBundlable { msg_type }.into());
        }
        let start = self.buf.len();
        let inner = start + BUNDLE_ADD_HEADER_LEN;
        let r = (|| -> Result<(), E> {
            let b = &mut self.buf;
            b.put_slice(&[OFP15_VERSION, OFPT_BUNDLE_ADD_MESSAGE, 0, 0, 0, 0, 0, 0]);
            b.put_u32(0); // bundle id, written when sent
            b.put_u16(0);
            b.put_u16(self.flags);
            b.put_slice(&[OFP15_VERSION, msg_type, 0, 0, 0, 0, 0, 0]);
            encode_body(b)?;
            if b.len() < inner + HEADER_LEN {
                return Err(EncodeError::Inconsistent(
                    "bundle builder: the body encoder removed bytes it did not write",
                )
                .into());
            }
            let outer_len = b.len() - start;
            if outer_len > MAX_MESSAGE_LEN {
                return Err(EncodeError::TooLong {
                    what: "OFPT_BUNDLE_ADD_MESSAGE",
                    len: outer_len,
                    max: MAX_MESSAGE_LEN,
                }
                .into());
            }
            let outer = len16(outer_len, "OFPT_BUNDLE_ADD_MESSAGE")?;
            let inner_len = len16(b.len() - inner, "bundled message")?;
            b[start + 2..start + 4].copy_from_slice(&outer.to_be_bytes());
            b[inner + 2..inner + 4].copy_from_slice(&inner_len.to_be_bytes());
            Ok(())
        })();
        match r {
            Ok(()) => {
                self.count += 1;
                Ok(self.count - 1)
            }
            Err(e) => {
                self.buf.truncate(start);
                Err(e)
            }
        }
    }

    /// Move the messages of `other` behind this builder's (to encode parts of a bundle on
    /// several threads); their indexes shift by the length of `self`. Refused (and `other`
    /// returned) if the flags differ.
    pub fn append(&mut self, other: BundleBuilder) -> Result<(), BundleBuilder> {
        if other.flags != self.flags {
            return Err(other);
        }
        self.buf.unsplit(other.buf);
        self.count += other.count;
        Ok(())
    }

    /// The frames with `bundle_id` written into each (xids still zero), and their number.
    pub(crate) fn into_frames(mut self, bundle_id: u32) -> (BytesMut, usize) {
        let id = bundle_id.to_be_bytes();
        let mut at = 0;
        // Every frame was written by `try_push_raw`, so the lengths are consistent.
        while let Some(len) = frame_len(&self.buf[at..]) {
            if len < BUNDLE_ADD_HEADER_LEN || at + len > self.buf.len() {
                break;
            }
            self.buf[at + 8..at + 12].copy_from_slice(&id);
            at += len;
        }
        (self.buf, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Empty, FlowMod, MeterMod, OfpMessage};

    #[test]
    fn builder_frames_decode_as_bundle_adds_of_the_pushed_messages() {
        let mut b = BundleBuilder::new(3);
        let fm = FlowMod {
            table_id: 7,
            ..FlowMod::default()
        };
        assert_eq!(b.push_message(&Message::FlowMod(fm.clone())), Ok(0));
        let mut body = BytesMut::new();
        fm.encode(&mut body).unwrap();
        assert_eq!(b.push_raw(14, |out| out.put_slice(&body)), Ok(1));
        assert_eq!(b.len(), 2);
        let (frames, n) = b.clone().into_frames(0x0a0b_0c0d);
        assert_eq!(n, 2);
        let mut at = 0;
        let mut seen = 0;
        while at < frames.len() {
            let len = frame_len(&frames[at..]).unwrap();
            let m = OfpMessage::decode(&frames[at..at + len]).unwrap();
            let Message::BundleAddMessage(add) = m.body else {
                panic!("not a bundle add")
            };
            assert_eq!(add.bundle_id, 0x0a0b_0c0d);
            assert_eq!(add.flags, 3);
            let inner = OfpMessage::decode(&add.message).unwrap();
            assert_eq!(inner.body, Message::FlowMod(fm.clone()));
            at += len;
            seen += 1;
        }
        assert_eq!(seen, 2);
    }

    #[test]
    fn appended_builders_keep_order_and_shift_indexes() {
        let fm = |t| {
            Message::FlowMod(FlowMod {
                table_id: t,
                ..FlowMod::default()
            })
        };
        let mut a = BundleBuilder::new(1);
        a.push_message(&fm(1)).unwrap();
        let mut b = BundleBuilder::new(1);
        b.push_message(&fm(2)).unwrap();
        assert_eq!(b.push_message(&fm(3)), Ok(1));
        a.append(b).unwrap();
        assert_eq!(a.len(), 3);
        assert_eq!(a.push_message(&fm(4)), Ok(3));
        assert!(a.append(BundleBuilder::new(2)).is_err());
        let (frames, _) = a.into_frames(1);
        let mut tables = Vec::new();
        let mut at = 0;
        while at < frames.len() {
            let len = frame_len(&frames[at..]).unwrap();
            let Message::BundleAddMessage(add) =
                OfpMessage::decode(&frames[at..at + len]).unwrap().body
            else {
                panic!("not a bundle add")
            };
            let Message::FlowMod(f) = OfpMessage::decode(&add.message).unwrap().body else {
                panic!("not a flow mod")
            };
            tables.push(f.table_id);
            at += len;
        }
        assert_eq!(tables, [1, 2, 3, 4]);
    }

    #[test]
    fn builder_refuses_meter_mods_and_overlong_messages_and_keeps_the_rest() {
        let mut b = BundleBuilder::new(1);
        b.push_message(&Message::FlowMod(FlowMod::default()))
            .unwrap();
        let before = b.as_bytes().to_vec();
        assert_eq!(
            b.push_message(&Message::MeterMod(MeterMod::default())),
            Err(EncodeError::NotBundlable { msg_type: 29 })
        );
        assert_eq!(
            b.push_message(&Message::BarrierRequest(Empty)),
            Err(EncodeError::NotBundlable { msg_type: 20 })
        );
        assert!(matches!(
            b.push_raw(29, |_| {}),
            Err(EncodeError::NotBundlable { msg_type: 29 })
        ));
        // 16 + 8 + 65511 = 65535 fits; one byte more does not.
        assert_eq!(b.push_raw(14, |out| out.put_bytes(0, 65_511)), Ok(1));
        let fits = b.as_bytes().to_vec();
        assert_eq!(
            b.push_raw(14, |out| out.put_bytes(0, 65_512)),
            Err(EncodeError::TooLong {
                what: "OFPT_BUNDLE_ADD_MESSAGE",
                len: 65_536,
                max: 65_535
            })
        );
        assert_eq!(b.as_bytes(), &fits[..]);
        assert_eq!(&b.as_bytes()[..before.len()], &before[..]);
        assert_eq!(b.len(), 2);
        assert!(b
            .try_push_raw(14, |out| {
                out.put_bytes(0, 40);
                Err(EncodeError::Inconsistent("body"))
            })
            .is_err());
        assert_eq!(b.len(), 2);
        assert_eq!(b.as_bytes(), &fits[..]);
    }
}
