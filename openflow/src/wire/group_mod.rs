//! `OFPT_GROUP_MOD` (OF1.5 `ofp15_group_mod`) and groups/buckets shared with group_desc.
//!
//! ```text
//! group_mod: command:16 type:8 pad:8 group_id:32 bucket_array_len:16 pad:16
//!            command_bucket_id:32 buckets... properties...
//! bucket:    len:16 action_array_len:16 bucket_id:32 actions... properties...
//! ```

use bytes::{BufMut, BytesMut};

use super::encode::{len16, patch_len16, put_oxm, EncodeError};
use super::reader::{put_pad8, DecodeError, Reader};
use super::Wire;
use crate::action::Action;
use crate::oxm::MatchField;

pub const OFPGT_ALL: u8 = 0;
pub const OFPGT_SELECT: u8 = 1;
pub const OFPGT_INDIRECT: u8 = 2;
pub const OFPGT_FF: u8 = 3;
pub const OFPGC_ADD: u16 = 0;
pub const OFPGC_MODIFY: u16 = 1;
pub const OFPGC_DELETE: u16 = 2;
pub const OFPGC_INSERT_BUCKET: u16 = 3;
pub const OFPG_BUCKET_ALL: u32 = 0xffff_fffc;
pub const OFPG_BUCKET_LAST: u32 = 0xffff_fffe;

const OFPGBPT_WEIGHT: u16 = 0;
const OFPGBPT_WATCH_PORT: u16 = 1;
const OFPGBPT_WATCH_GROUP: u16 = 2;
const NTRT_SELECTION_METHOD: u32 = 1;
/// Netronome's vendor id: the selection-method property is their extension.
pub const NTR_VENDOR_ID: u32 = 0x0000_154d;

#[derive(Clone, Debug, Default, Eq, PartialEq, Hash)]
pub struct Bucket {
    pub bucket_id: u32,
    pub weight: Option<u16>,
    pub watch_port: Option<u32>,
    pub watch_group: Option<u32>,
    pub actions: Vec<Action>,
    /// Unknown properties, each `(type, body)`.
    pub unknown_props: Vec<(u16, Vec<u8>)>,
}

/// A group as in `dump-groups`: id, type, selection method and buckets.
#[derive(Clone, Debug, Default, Eq, PartialEq, Hash)]
pub struct Group {
    pub group_id: u32,
    pub group_type: u8,
    /// `NTR_SELECTION_METHOD` property: method name (empty = absent), param, hash fields.
    pub selection_method: String,
    pub selection_method_param: u64,
    pub fields: Vec<MatchField>,
    pub buckets: Vec<Bucket>,
    pub unknown_props: Vec<(u16, Vec<u8>)>,
}

fn read_props(
    mut r: Reader<'_>,
    mut f: impl FnMut(u16, Reader<'_>) -> Result<bool, DecodeError>,
    unknown: &mut Vec<(u16, Vec<u8>)>,
) -> Result<(), DecodeError> {
    while !r.is_empty() {
        let (ty, body) = r.property("property")?;
        let raw = body.rest().to_vec();
        if !f(ty, body)? {
            unknown.push((ty, raw));
        }
    }
    Ok(())
}

fn put_prop(out: &mut BytesMut, ty: u16, body: &[u8]) -> Result<(), EncodeError> {
    let start = out.len();
    out.put_u16(ty);
    out.put_u16(len16(4 + body.len(), "group property")?);
    out.put_slice(body);
    put_pad8(out, start);
    Ok(())
}

impl Bucket {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let len = r.u16("ofp15_bucket")? as usize;
        let alen = r.u16("ofp15_bucket")? as usize;
        if len < 8 + alen {
            return Err(DecodeError::BadLength {
                what: "ofp15_bucket",
                len,
            });
        }
        let mut b = r.sub(len - 4, "ofp15_bucket")?;
        let mut out = Bucket {
            bucket_id: b.u32("ofp15_bucket")?,
            ..Bucket::default()
        };
        out.actions = Action::decode_list(b.take(alen, "bucket actions")?)?;
        let (mut w, mut p, mut g) = (None, None, None);
        read_props(
            b,
            |ty, mut body| {
                Ok(match ty {
                    OFPGBPT_WEIGHT => {
                        w = Some(body.u16("weight")?);
                        true
                    }
                    OFPGBPT_WATCH_PORT => {
                        p = Some(body.u32("watch_port")?);
                        true
                    }
                    OFPGBPT_WATCH_GROUP => {
                        g = Some(body.u32("watch_group")?);
                        true
                    }
                    _ => false,
                })
            },
            &mut out.unknown_props,
        )?;
        out.weight = w;
        out.watch_port = p;
        out.watch_group = g;
        Ok(out)
    }

    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        let start = out.len();
        out.put_u16(0);
        out.put_u16(0);
        out.put_u32(self.bucket_id);
        let a0 = out.len();
        Action::encode_list(&self.actions, out)?;
        patch_len16(out, a0, start + 2, "ofp15_bucket action_array_len")?;
        if let Some(w) = self.weight {
            // `ofp15_group_bucket_prop_weight` counts its 2 pad bytes in the length.
            let [a, b] = w.to_be_bytes();
            put_prop(out, OFPGBPT_WEIGHT, &[a, b, 0, 0])?;
        }
        if let Some(p) = self.watch_port {
            put_prop(out, OFPGBPT_WATCH_PORT, &p.to_be_bytes())?;
        }
        if let Some(g) = self.watch_group {
            put_prop(out, OFPGBPT_WATCH_GROUP, &g.to_be_bytes())?;
        }
        for (ty, body) in &self.unknown_props {
            put_prop(out, *ty, body)?;
        }
        patch_len16(out, start, start, "ofp15_bucket")
    }
}

impl Group {
    /// Buckets then properties (the common tail of group_mod and group_desc).
    pub(crate) fn decode_tail(
        &mut self,
        mut buckets: Reader<'_>,
        props: Reader<'_>,
    ) -> Result<(), DecodeError> {
        while !buckets.is_empty() {
            self.buckets.push(Bucket::decode(&mut buckets)?);
        }
        let mut sel: Option<(String, u64, Vec<MatchField>)> = None;
        read_props(
            props,
            |ty, mut body| {
                if ty != 0xffff {
                    return Ok(false);
                }
                let exp = body.u32("group property")?;
                let exp_ty = body.u32("group property")?;
                if exp != NTR_VENDOR_ID || exp_ty != NTRT_SELECTION_METHOD {
                    return Ok(false);
                }
                body.skip(4, "selection_method")?;
                let name = body.take(16, "selection_method")?;
                let name: String = name
                    .iter()
                    .take_while(|c| **c != 0)
                    .map(|c| *c as char)
                    .collect();
                let param = body.u64("selection_method")?;
                // Hash fields: full OXM TLVs whose value is the mask (all-ones = whole field).
                let mut fields = Vec::new();
                while body.left() >= 4 && body.peek_u16("fields")? != 0 {
                    let mut f = MatchField::decode(&mut body)?;
                    if f.value.iter().all(|b| *b == 0xff) {
                        f.mask = None;
                    } else {
                        f.mask = Some(f.value.clone());
                    }
                    if f.field.known().is_some() {
                        f.value.clear();
                    }
                    fields.push(f);
                }
                sel = Some((name, param, fields));
                Ok(true)
            },
            &mut self.unknown_props,
        )?;
        if let Some((n, p, f)) = sel {
            self.selection_method = n;
            self.selection_method_param = p;
            self.fields = f;
        }
        Ok(())
    }

    /// The buckets, with their total length written as a be16 at `len_at`.
    pub(crate) fn encode_buckets(
        &self,
        out: &mut BytesMut,
        len_at: usize,
    ) -> Result<(), EncodeError> {
        let b0 = out.len();
        for b in &self.buckets {
            b.encode(out)?;
        }
        patch_len16(out, b0, len_at, "bucket_array_len")
    }

    pub(crate) fn encode_props(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        if !self.selection_method.is_empty() {
            let start = out.len();
            out.put_u16(0xffff);
            out.put_u16(0);
            out.put_u32(NTR_VENDOR_ID);
            out.put_u32(NTRT_SELECTION_METHOD);
            out.put_u32(0);
            let mut name = [0u8; 16];
            // One byte per char: decoding maps bytes to chars U+0000..U+00FF.
            for (d, c) in name.iter_mut().zip(self.selection_method.chars()) {
                *d = u8::try_from(u32::from(c)).unwrap_or(b'?');
            }
            out.put_slice(&name);
            out.put_u64(self.selection_method_param);
            for f in &self.fields {
                let (_, _, w) = header_of(f);
                let value = f.mask.clone().unwrap_or_else(|| vec![0xff; w]);
                let f = MatchField {
                    field: f.field,
                    value,
                    mask: None,
                };
                put_oxm(&f, out)?;
            }
            patch_len16(out, start, start + 2, "selection_method property")?;
            put_pad8(out, start);
        }
        for (ty, body) in &self.unknown_props {
            put_prop(out, *ty, body)?;
        }
        Ok(())
    }
}

fn header_of(f: &MatchField) -> (u16, u8, usize) {
    match f.field {
        crate::oxm::FieldRef::Known(id) => {
            let d = id.def();
            let (c, fi) = d.wire_header();
            (c, fi, d.width)
        }
        crate::oxm::FieldRef::Unknown { class, field, .. } => (class, field, f.value.len()),
    }
}

/// `OFPT_GROUP_MOD`.
#[derive(Clone, Debug, Default, Eq, PartialEq, Hash)]
pub struct GroupMod {
    pub command: u16,
    pub command_bucket_id: u32,
    pub group: Group,
}

impl GroupMod {
    /// This group_mod as messages whose bodies are at most `max_body` bytes: itself when it
    /// fits, else its command with the buckets that fit, then `OFPGC15_INSERT_BUCKET`s
    /// (after the last bucket, without properties) carrying the rest, as ovn-controller
    /// installs a group too large for one message (a load balancer with thousands of
    /// backends). A single bucket too large stays an error.
    pub fn split(self, max_body: usize) -> Result<Vec<GroupMod>, EncodeError> {
        let body_len = |m: &GroupMod| -> Result<usize, EncodeError> {
            let mut b = BytesMut::new();
            m.encode(&mut b).map(|()| b.len())
        };
        match body_len(&self) {
            Ok(n) if n <= max_body => return Ok(vec![self]),
            Ok(_) | Err(EncodeError::TooLong { .. }) => {}
            Err(e) => return Err(e),
        }
        let mut head = self;
        let buckets = std::mem::take(&mut head.group.buckets);
        let insert = GroupMod {
            command: OFPGC_INSERT_BUCKET,
            command_bucket_id: OFPG_BUCKET_LAST,
            group: Group {
                group_id: head.group.group_id,
                group_type: head.group.group_type,
                ..Group::default()
            },
        };
        let mut out = vec![head];
        let mut room = max_body.saturating_sub(body_len(&out[0])?);
        for bucket in buckets {
            let mut b = BytesMut::new();
            bucket.encode(&mut b)?;
            let need = b.len();
            let last = out.last_mut().expect("one message at least");
            if need <= room {
                last.group.buckets.push(bucket);
                room -= need;
                continue;
            }
            let next = insert.clone();
            room = max_body.saturating_sub(body_len(&next)?);
            if need > room {
                return Err(EncodeError::TooLong {
                    what: "ofp15_bucket",
                    len: need,
                    max: room,
                });
            }
            room -= need;
            out.push(next);
            out.last_mut()
                .expect("just pushed")
                .group
                .buckets
                .push(bucket);
        }
        Ok(out)
    }
}

impl Wire for GroupMod {
    fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(buf);
        let w = "ofp15_group_mod";
        let command = r.u16(w)?;
        let group_type = r.u8(w)?;
        r.skip(1, w)?;
        let group_id = r.u32(w)?;
        let blen = r.u16(w)? as usize;
        r.skip(2, w)?;
        let command_bucket_id = r.u32(w)?;
        let buckets = r.sub(blen, w)?;
        let mut group = Group {
            group_id,
            group_type,
            ..Group::default()
        };
        group.decode_tail(buckets, r)?;
        Ok(Self {
            command,
            command_bucket_id,
            group,
        })
    }

    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        out.put_u16(self.command);
        out.put_u8(self.group.group_type);
        out.put_u8(0);
        out.put_u32(self.group.group_id);
        let len_at = out.len();
        out.put_u16(0);
        out.put_u16(0);
        out.put_u32(self.command_bucket_id);
        self.group.encode_buckets(out, len_at)?;
        self.group.encode_props(out)
    }
}
