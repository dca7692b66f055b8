//! Why an encoder refused to write, and the checked helpers every encoder writes its length
//! fields with. No encoder truncates a length: a message, action, property or OXM entry whose
//! length (or a value whose width) does not fit its field is an [`EncodeError`], and the
//! public entry points ([`crate::wire::OfpMessage::encode`], [`crate::action::Action::encode`],
//! [`crate::action::Action::encode_list`], [`crate::wire::Instruction::encode_list`], the bundle
//! builder) leave the output buffer as it was before the call.

use bytes::BytesMut;
use thiserror::Error;

use crate::oxm::{Match, MatchField};

/// The largest OpenFlow message (the 16-bit `ofp_header.length`).
pub const MAX_MESSAGE_LEN: usize = u16::MAX as usize;

/// Why a structure could not be encoded. Nothing of it is written.
#[derive(Clone, Debug, Eq, PartialEq, Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// An encoded length exceeds its length field (`max`).
    #[error("{what}: encoded length {len} exceeds the maximum {max}")]
    TooLong {
        what: &'static str,
        len: usize,
        max: usize,
    },
    /// A value does not fit its field (e.g. a subfield offset in `ofs_nbits`).
    #[error("{what}: value {value} does not fit its field (maximum {max})")]
    OutOfRange {
        what: &'static str,
        value: u64,
        max: u64,
    },
    /// The structure contradicts itself (e.g. an OXM mask whose width differs from the value's).
    #[error("{0}")]
    Inconsistent(&'static str),
    /// Open vSwitch takes only flow mods, group mods, port mods and packet-outs in a bundle
    /// (`ofputil_is_bundlable`); it refuses meter mods, for instance.
    #[error("{} cannot be added to a bundle (Open vSwitch bundles take flow mods, group mods, port mods and packet-outs only)", msg_type_name(*.msg_type))]
    NotBundlable { msg_type: u8 },
}

/// The OpenFlow name of a message type, for error texts.
fn msg_type_name(ty: u8) -> String {
    let name = match ty {
        0 => "OFPT_HELLO",
        1 => "OFPT_ERROR",
        2 => "OFPT_ECHO_REQUEST",
        4 => "OFPT_EXPERIMENTER",
        9 => "OFPT_SET_CONFIG",
        18 => "OFPT_MULTIPART_REQUEST",
        20 => "OFPT_BARRIER_REQUEST",
        24 => "OFPT_ROLE_REQUEST",
        29 => "OFPT_METER_MOD",
        33 => "OFPT_BUNDLE_CONTROL",
        34 => "OFPT_BUNDLE_ADD_MESSAGE",
        _ => return format!("OpenFlow message type {ty}"),
    };
    name.to_owned()
}

/// `len` as a 16-bit length field.
pub(crate) fn len16(len: usize, what: &'static str) -> Result<u16, EncodeError> {
    u16::try_from(len).map_err(|_| EncodeError::TooLong {
        what,
        len,
        max: MAX_MESSAGE_LEN,
    })
}

/// Write the length of everything from `start` to the end of `out` as a be16 at `at`.
pub(crate) fn patch_len16(
    out: &mut BytesMut,
    start: usize,
    at: usize,
    what: &'static str,
) -> Result<(), EncodeError> {
    let len = len16(out.len() - start, what)?;
    out[at..at + 2].copy_from_slice(&len.to_be_bytes());
    Ok(())
}

/// Run `f`; if it fails, cut `out` back to its length before the call.
pub(crate) fn all_or_nothing<T>(
    out: &mut BytesMut,
    f: impl FnOnce(&mut BytesMut) -> Result<T, EncodeError>,
) -> Result<T, EncodeError> {
    let start = out.len();
    let r = f(out);
    if r.is_err() {
        out.truncate(start);
    }
    r
}

/// An OXM entry fits its TLV: the payload length is 8 bits, and a mask is as wide as the value.
pub(crate) fn check_oxm(f: &MatchField) -> Result<(), EncodeError> {
    if f.mask.as_ref().is_some_and(|m| m.len() != f.value.len()) {
        return Err(EncodeError::Inconsistent(
            "oxm entry: the mask's width differs from the value's",
        ));
    }
    let payload = f.encoded_len() - 4;
    if payload > usize::from(u8::MAX) {
        return Err(EncodeError::TooLong {
            what: "oxm entry",
            len: payload,
            max: usize::from(u8::MAX),
        });
    }
    Ok(())
}

/// A match fits its `ofp_match` (16-bit length) and every entry fits its TLV.
pub(crate) fn check_match(m: &Match) -> Result<(), EncodeError> {
    for f in &m.fields {
        check_oxm(f)?;
    }
    len16(4 + m.oxms_len(), "ofp_match")?;
    Ok(())
}

/// [`Match::encode`] after [`check_match`].
pub(crate) fn put_match(m: &Match, out: &mut BytesMut) -> Result<(), EncodeError> {
    check_match(m)?;
    m.encode(out);
    Ok(())
}

/// [`MatchField::encode`] after [`check_oxm`].
pub(crate) fn put_oxm(f: &MatchField, out: &mut BytesMut) -> Result<(), EncodeError> {
    check_oxm(f)?;
    f.encode(out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oxm::{FieldId, FieldRef};

    #[test]
    fn lengths_are_checked_not_truncated() {
        assert_eq!(len16(65_535, "x"), Ok(65_535));
        assert_eq!(
            len16(65_536, "x"),
            Err(EncodeError::TooLong {
                what: "x",
                len: 65_536,
                max: 65_535
            })
        );
        let mut b = BytesMut::from(&[1u8, 2][..]);
        let r: Result<(), _> = all_or_nothing(&mut b, |b| {
            b.extend_from_slice(&[0; 100]);
            Err(EncodeError::Inconsistent("no"))
        });
        assert!(r.is_err());
        assert_eq!(&b[..], &[1, 2]);
    }

    #[test]
    fn oxm_entries_must_fit_their_tlv() {
        let reg0 = FieldId::by_name("reg0").unwrap();
        assert!(check_oxm(&MatchField::new(reg0, vec![0; 4], Some(vec![0; 4]))).is_ok());
        assert!(matches!(
            check_oxm(&MatchField::new(reg0, vec![0; 4], Some(vec![0; 2]))),
            Err(EncodeError::Inconsistent(_))
        ));
        let long = MatchField {
            field: FieldRef::Unknown {
                class: 0xffff,
                field: 1,
                experimenter: Some(0x2320),
            },
            value: vec![0; 252],
            mask: None,
        };
        assert_eq!(
            check_oxm(&long),
            Err(EncodeError::TooLong {
                what: "oxm entry",
                len: 256,
                max: 255
            })
        );
    }
}
