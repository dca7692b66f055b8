//! `OFPT_PACKET_OUT` (OF1.5 `ofp15_packet_out`: the pipeline fields are a match).
//!
//! ```text
//! buffer_id:32 actions_len:16 pad:16 ofp_match actions... data...
//! ```

use bytes::{BufMut, BytesMut};

use super::encode::{patch_len16, put_match, EncodeError};
use super::reader::{DecodeError, Reader};
use super::Wire;
use crate::action::Action;
use crate::oxm::Match;

#[derive(Clone, Debug, Eq, PartialEq, Hash)]
pub struct PacketOut {
    pub buffer_id: u32,
    /// Pipeline fields, at least `in_port`.
    pub r#match: Match,
    pub actions: Vec<Action>,
    pub data: Vec<u8>,
}

impl Wire for PacketOut {
    fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(buf);
        let buffer_id = r.u32("ofp15_packet_out")?;
        let alen = r.u16("ofp15_packet_out")? as usize;
        r.skip(2, "ofp15_packet_out")?;
        let m = Match::decode(&mut r)?;
        let actions = Action::decode_list(r.take(alen, "packet_out actions")?)?;
        Ok(Self {
            buffer_id,
            r#match: m,
            actions,
            data: r.take_rest().to_vec(),
        })
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        out.put_u32(self.buffer_id);
        let at = out.len();
        out.put_u16(0);
        out.put_u16(0);
        put_match(&self.r#match, out)?;
        let a0 = out.len();
        Action::encode_list(&self.actions, out)?;
        patch_len16(out, a0, at, "ofp15_packet_out actions_len")?;
        out.put_slice(&self.data);
        Ok(())
    }
}
