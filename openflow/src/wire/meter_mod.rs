//! `OFPT_METER_MOD` (`ofp13_meter_mod`) and meter bands, shared with meter_desc replies.

use bytes::{BufMut, BytesMut};

use super::encode::EncodeError;
use super::reader::{DecodeError, Reader};
use super::Wire;

/// `ofp_meter_mod_command`.
pub const OFPMC_ADD: u16 = 0;
pub const OFPMC_MODIFY: u16 = 1;
pub const OFPMC_DELETE: u16 = 2;
pub const OFPMBT_DROP: u16 = 1;
pub const OFPMBT_DSCP_REMARK: u16 = 2;
pub const OFPMF_KBPS: u16 = 1;
pub const OFPMF_PKTPS: u16 = 2;
pub const OFPMF_BURST: u16 = 4;
pub const OFPMF_STATS: u16 = 8;

/// `ofp_meter_band_*`: 16 bytes; `extra` holds prec_level (dscp_remark) or experimenter id.
#[derive(Clone, Debug, Default, Eq, PartialEq, Hash)]
pub struct MeterBand {
    pub band_type: u16,
    pub rate: u32,
    pub burst_size: u32,
    pub extra: [u8; 4],
}

impl MeterBand {
    pub(crate) fn decode_list(mut r: Reader<'_>) -> Result<Vec<Self>, DecodeError> {
        let mut out = Vec::new();
        while !r.is_empty() {
            let band_type = r.u16("meter band")?;
            let len = r.u16("meter band")? as usize;
            if len != 16 {
                return Err(DecodeError::BadLength {
                    what: "meter band",
                    len,
                });
            }
            let rate = r.u32("meter band")?;
            let burst_size = r.u32("meter band")?;
            let mut extra = [0; 4];
            extra.copy_from_slice(r.take(4, "meter band")?);
            out.push(Self {
                band_type,
                rate,
                burst_size,
                extra,
            });
        }
        Ok(out)
    }

    pub(crate) fn encode(&self, out: &mut BytesMut) {
        out.put_u16(self.band_type);
        out.put_u16(16);
        out.put_u32(self.rate);
        out.put_u32(self.burst_size);
        out.put_slice(&self.extra);
    }
}

#[derive(Clone, Debug, Default, Eq, PartialEq, Hash)]
pub struct MeterMod {
    pub command: u16,
    pub flags: u16,
    pub meter_id: u32,
    pub bands: Vec<MeterBand>,
}

impl Wire for MeterMod {
    fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(buf);
        let command = r.u16("ofp_meter_mod")?;
        let flags = r.u16("ofp_meter_mod")?;
        let meter_id = r.u32("ofp_meter_mod")?;
        let bands = MeterBand::decode_list(r)?;
        Ok(Self {
            command,
            flags,
            meter_id,
            bands,
        })
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        out.put_u16(self.command);
        out.put_u16(self.flags);
        out.put_u32(self.meter_id);
        self.bands.iter().for_each(|b| b.encode(out));
        Ok(())
    }
}
