//! `OFPT_MULTIPART_REQUEST` / `_REPLY` for flows (OF1.5 flow_desc), group_desc and meter_desc.

use bytes::{BufMut, BytesMut};

use super::encode::{len16, patch_len16, put_match, EncodeError};
use super::group_mod::Group;
use super::instruction::Instruction;
use super::meter_mod::MeterBand;
use super::reader::{DecodeError, Reader};
use super::Wire;
use crate::oxm::Match;

pub const OFPMP_FLOW_DESC: u16 = 1;
pub const OFPMP_GROUP_DESC: u16 = 7;
pub const OFPMP_METER_DESC: u16 = 10;
pub const OFPMP_METER_FEATURES: u16 = 11;
pub const OFPMPF_MORE: u16 = 1;

/// `ofp11_flow_stats_request` (also the OF1.5 flow_desc request).
#[derive(Clone, Debug, Eq, PartialEq, Hash)]
pub struct FlowStatsRequest {
    pub table_id: u8,
    pub out_port: u32,
    pub out_group: u32,
    pub cookie: u64,
    pub cookie_mask: u64,
    pub r#match: Match,
}

impl Default for FlowStatsRequest {
    fn default() -> Self {
        Self {
            table_id: 0xff,
            out_port: crate::action::OFPP_ANY,
            out_group: super::flow_mod::OFPG_ANY,
            cookie: 0,
            cookie_mask: 0,
            r#match: Match::default(),
        }
    }
}

#[derive(Clone, Debug, Eq, PartialEq, Hash)]
#[non_exhaustive]
pub enum MultipartRequestBody {
    FlowDesc(FlowStatsRequest),
    /// Group id (`OFPG_ALL` = all groups).
    GroupDesc(u32),
    /// Meter id (`OFPM_ALL` = all meters).
    MeterDesc(u32),
    /// What the switch's meters can do (no body).
    MeterFeatures,
    Other {
        ty: u16,
        body: Vec<u8>,
    },
}

#[derive(Clone, Debug, Eq, PartialEq, Hash)]
pub struct MultipartRequest {
    pub flags: u16,
    pub body: MultipartRequestBody,
}

impl Wire for MultipartRequest {
    fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(buf);
        let ty = r.u16("ofp_multipart_request")?;
        let flags = r.u16("ofp_multipart_request")?;
        r.skip(4, "ofp_multipart_request")?;
        let body = match ty {
            OFPMP_FLOW_DESC => {
                let table_id = r.u8("flow_stats_request")?;
                r.skip(3, "flow_stats_request")?;
                let out_port = r.u32("flow_stats_request")?;
                let out_group = r.u32("flow_stats_request")?;
                r.skip(4, "flow_stats_request")?;
                let cookie = r.u64("flow_stats_request")?;
                let cookie_mask = r.u64("flow_stats_request")?;
                let m = Match::decode(&mut r)?;
                MultipartRequestBody::FlowDesc(FlowStatsRequest {
                    table_id,
                    out_port,
                    out_group,
                    cookie,
                    cookie_mask,
                    r#match: m,
                })
            }
            OFPMP_METER_FEATURES => MultipartRequestBody::MeterFeatures,
            OFPMP_GROUP_DESC | OFPMP_METER_DESC => {
                let id = r.u32("multipart id")?;
                r.skip(4, "multipart id")?;
                if ty == OFPMP_GROUP_DESC {
                    MultipartRequestBody::GroupDesc(id)
                } else {
                    MultipartRequestBody::MeterDesc(id)
                }
            }
            _ => MultipartRequestBody::Other {
                ty,
                body: r.take_rest().to_vec(),
            },
        };
        r.finish("ofp_multipart_request")?;
        Ok(Self { flags, body })
    }

    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        let ty = match &self.body {
            MultipartRequestBody::FlowDesc(_) => OFPMP_FLOW_DESC,
            MultipartRequestBody::GroupDesc(_) => OFPMP_GROUP_DESC,
            MultipartRequestBody::MeterDesc(_) => OFPMP_METER_DESC,
            MultipartRequestBody::MeterFeatures => OFPMP_METER_FEATURES,
            MultipartRequestBody::Other { ty, .. } => *ty,
        };
        out.put_u16(ty);
        out.put_u16(self.flags);
        out.put_u32(0);
        match &self.body {
            MultipartRequestBody::MeterFeatures => {}
            MultipartRequestBody::FlowDesc(f) => {
                out.put_u8(f.table_id);
                out.put_slice(&[0; 3]);
                out.put_u32(f.out_port);
                out.put_u32(f.out_group);
                out.put_u32(0);
                out.put_u64(f.cookie);
                out.put_u64(f.cookie_mask);
                put_match(&f.r#match, out)?;
            }
            MultipartRequestBody::GroupDesc(id) | MultipartRequestBody::MeterDesc(id) => {
                out.put_u32(*id);
                out.put_u32(0);
            }
            MultipartRequestBody::Other { body, .. } => out.put_slice(body),
        }
        Ok(())
    }
}

/// `ofp15_flow_desc`: one flow of a dump (statistics kept raw).
#[derive(Clone, Debug, Default, Eq, PartialEq, Hash)]
pub struct FlowDesc {
    pub table_id: u8,
    pub priority: u16,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub flags: u16,
    pub importance: u16,
    pub cookie: u64,
    pub r#match: Match,
    /// `ofp_oxs_stat` block, verbatim (reserved, length, OXS TLVs, padding).
    pub stats: Vec<u8>,
    pub instructions: Vec<Instruction>,
}

/// `ofp13_meter_config`.
#[derive(Clone, Debug, Default, Eq, PartialEq, Hash)]
pub struct MeterConfig {
    pub flags: u16,
    pub meter_id: u32,
    pub bands: Vec<MeterBand>,
}

#[derive(Clone, Debug, Eq, PartialEq, Hash)]
#[non_exhaustive]
pub enum MultipartReplyBody {
    FlowDesc(Vec<FlowDesc>),
    GroupDesc(Vec<Group>),
    MeterDesc(Vec<MeterConfig>),
    MeterFeatures(MeterFeatures),
    Other { ty: u16, body: Vec<u8> },
}

/// `ofp13_meter_features`.
#[derive(Clone, Debug, Default, Eq, PartialEq, Hash)]
pub struct MeterFeatures {
    /// 0: the datapath has no meters.
    pub max_meter: u32,
    pub band_types: u32,
    pub capabilities: u32,
    pub max_bands: u8,
    pub max_color: u8,
}

#[derive(Clone, Debug, Eq, PartialEq, Hash)]
pub struct MultipartReply {
    pub flags: u16,
    pub body: MultipartReplyBody,
}

fn decode_flow_desc(r: &mut Reader<'_>) -> Result<FlowDesc, DecodeError> {
    let len = r.u16("ofp15_flow_desc")? as usize;
    if len < 32 {
        return Err(DecodeError::BadLength {
            what: "ofp15_flow_desc",
            len,
        });
    }
    let mut b = r.sub(len - 2, "ofp15_flow_desc")?;
    b.skip(2, "ofp15_flow_desc")?;
    let table_id = b.u8("ofp15_flow_desc")?;
    b.skip(1, "ofp15_flow_desc")?;
    let mut f = FlowDesc {
        table_id,
        priority: b.u16("ofp15_flow_desc")?,
        idle_timeout: b.u16("ofp15_flow_desc")?,
        hard_timeout: b.u16("ofp15_flow_desc")?,
        flags: b.u16("ofp15_flow_desc")?,
        importance: b.u16("ofp15_flow_desc")?,
        cookie: b.u64("ofp15_flow_desc")?,
        ..FlowDesc::default()
    };
    f.r#match = Match::decode(&mut b)?;
    let mut peek = b.clone();
    peek.skip(2, "ofp_oxs_stat")?;
    let slen = peek.u16("ofp_oxs_stat")? as usize;
    f.stats = b.take(super::reader::pad8(slen), "ofp_oxs_stat")?.to_vec();
    f.instructions = Instruction::decode_list(b.take_rest())?;
    Ok(f)
}

fn encode_flow_desc(f: &FlowDesc, out: &mut BytesMut) -> Result<(), EncodeError> {
    let start = out.len();
    out.put_u16(0);
    out.put_u16(0);
    out.put_u8(f.table_id);
    out.put_u8(0);
    out.put_u16(f.priority);
    out.put_u16(f.idle_timeout);
    out.put_u16(f.hard_timeout);
    out.put_u16(f.flags);
    out.put_u16(f.importance);
    out.put_u64(f.cookie);
    put_match(&f.r#match, out)?;
    if f.stats.is_empty() {
        out.put_u16(0);
        out.put_u16(4);
        out.put_u32(0);
    } else {
        out.put_slice(&f.stats);
    }
    Instruction::encode_list(&f.instructions, out)?;
    patch_len16(out, start, start, "ofp15_flow_desc")
}

fn decode_group_desc(r: &mut Reader<'_>) -> Result<Group, DecodeError> {
    let len = r.u16("ofp15_group_desc_stats")? as usize;
    if len < 16 {
        return Err(DecodeError::BadLength {
            what: "ofp15_group_desc_stats",
            len,
        });
    }
    let mut b = r.sub(len - 2, "ofp15_group_desc_stats")?;
    let group_type = b.u8("ofp15_group_desc_stats")?;
    b.skip(1, "ofp15_group_desc_stats")?;
    let group_id = b.u32("ofp15_group_desc_stats")?;
    let blen = b.u16("ofp15_group_desc_stats")? as usize;
    b.skip(6, "ofp15_group_desc_stats")?;
    let buckets = b.sub(blen, "ofp15_group_desc_stats")?;
    let mut g = Group {
        group_id,
        group_type,
        ..Group::default()
    };
    g.decode_tail(buckets, b)?;
    Ok(g)
}

fn encode_group_desc(g: &Group, out: &mut BytesMut) -> Result<(), EncodeError> {
    let start = out.len();
    out.put_u16(0);
    out.put_u8(g.group_type);
    out.put_u8(0);
    out.put_u32(g.group_id);
    let at = out.len();
    out.put_u16(0);
    out.put_slice(&[0; 6]);
    g.encode_buckets(out, at)?;
    g.encode_props(out)?;
    patch_len16(out, start, start, "ofp15_group_desc_stats")
}

impl Wire for MultipartReply {
    fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(buf);
        let ty = r.u16("ofp_multipart_reply")?;
        let flags = r.u16("ofp_multipart_reply")?;
        r.skip(4, "ofp_multipart_reply")?;
        let body = match ty {
            OFPMP_FLOW_DESC => {
                let mut v = Vec::new();
                while !r.is_empty() {
                    v.push(decode_flow_desc(&mut r)?);
                }
                MultipartReplyBody::FlowDesc(v)
            }
            OFPMP_GROUP_DESC => {
                let mut v = Vec::new();
                while !r.is_empty() {
                    v.push(decode_group_desc(&mut r)?);
                }
                MultipartReplyBody::GroupDesc(v)
            }
            OFPMP_METER_DESC => {
                let mut v = Vec::new();
                while !r.is_empty() {
                    let len = r.u16("ofp13_meter_config")? as usize;
                    if len < 8 {
                        return Err(DecodeError::BadLength {
                            what: "ofp13_meter_config",
                            len,
                        });
                    }
                    let mut b = r.sub(len - 2, "ofp13_meter_config")?;
                    let flags = b.u16("ofp13_meter_config")?;
                    let meter_id = b.u32("ofp13_meter_config")?;
                    v.push(MeterConfig {
                        flags,
                        meter_id,
                        bands: MeterBand::decode_list(b)?,
                    });
                }
                MultipartReplyBody::MeterDesc(v)
            }
            OFPMP_METER_FEATURES => {
                const W: &str = "ofp13_meter_features";
                let f = MeterFeatures {
                    max_meter: r.u32(W)?,
                    band_types: r.u32(W)?,
                    capabilities: r.u32(W)?,
                    max_bands: r.u8(W)?,
                    max_color: r.u8(W)?,
                };
                r.skip(2, W)?;
                r.finish(W)?;
                MultipartReplyBody::MeterFeatures(f)
            }
            _ => MultipartReplyBody::Other {
                ty,
                body: r.take_rest().to_vec(),
            },
        };
        Ok(Self { flags, body })
    }

    /// A reply body longer than one message is an error (the caller splits it into parts
    /// with `OFPMPF_MORE`).
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        let ty = match &self.body {
            MultipartReplyBody::FlowDesc(_) => OFPMP_FLOW_DESC,
            MultipartReplyBody::GroupDesc(_) => OFPMP_GROUP_DESC,
            MultipartReplyBody::MeterDesc(_) => OFPMP_METER_DESC,
            MultipartReplyBody::MeterFeatures(_) => OFPMP_METER_FEATURES,
            MultipartReplyBody::Other { ty, .. } => *ty,
        };
        out.put_u16(ty);
        out.put_u16(self.flags);
        out.put_u32(0);
        match &self.body {
            MultipartReplyBody::FlowDesc(v) => {
                v.iter().try_for_each(|f| encode_flow_desc(f, out))?;
            }
            MultipartReplyBody::GroupDesc(v) => {
                v.iter().try_for_each(|g| encode_group_desc(g, out))?;
            }
            MultipartReplyBody::MeterDesc(v) => {
                for m in v {
                    out.put_u16(len16(8 + 16 * m.bands.len(), "ofp13_meter_config")?);
                    out.put_u16(m.flags);
                    out.put_u32(m.meter_id);
                    m.bands.iter().for_each(|b| b.encode(out));
                }
            }
            MultipartReplyBody::MeterFeatures(f) => {
                out.put_u32(f.max_meter);
                out.put_u32(f.band_types);
                out.put_u32(f.capabilities);
                out.put_u8(f.max_bands);
                out.put_u8(f.max_color);
                out.put_u16(0);
            }
            MultipartReplyBody::Other { body, .. } => out.put_slice(body),
        }
        Ok(())
    }
}
