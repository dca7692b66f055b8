//! `OFPT_FLOW_MOD` (OF1.5 `ofp11_flow_mod` layout with importance).
//!
//! ```text
//! cookie:64 cookie_mask:64 table_id:8 command:8 idle:16 hard:16 priority:16
//! buffer_id:32 out_port:32 out_group:32 flags:16 importance:16 ofp_match instructions...
//! ```

use bytes::{BufMut, BytesMut};

use super::encode::{put_match, EncodeError};
use super::instruction::Instruction;
use super::reader::{DecodeError, Reader};
use super::Wire;
use crate::oxm::Match;

pub const OFPFC_ADD: u8 = 0;
pub const OFPFC_MODIFY: u8 = 1;
pub const OFPFC_MODIFY_STRICT: u8 = 2;
pub const OFPFC_DELETE: u8 = 3;
pub const OFPFC_DELETE_STRICT: u8 = 4;
pub const OFP_NO_BUFFER: u32 = u32::MAX;
pub const OFPG_ANY: u32 = u32::MAX;

#[derive(Clone, Debug, Eq, PartialEq, Hash)]
pub struct FlowMod {
    pub cookie: u64,
    pub cookie_mask: u64,
    pub table_id: u8,
    pub command: u8,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub priority: u16,
    pub buffer_id: u32,
    pub out_port: u32,
    pub out_group: u32,
    pub flags: u16,
    pub importance: u16,
    pub r#match: Match,
    pub instructions: Vec<Instruction>,
}

impl Default for FlowMod {
    fn default() -> Self {
        Self {
            cookie: 0,
            cookie_mask: 0,
            table_id: 0,
            command: OFPFC_ADD,
            idle_timeout: 0,
            hard_timeout: 0,
            priority: 0x8000,
            buffer_id: OFP_NO_BUFFER,
            out_port: crate::action::OFPP_ANY,
            out_group: OFPG_ANY,
            flags: 0,
            importance: 0,
            r#match: Match::default(),
            instructions: Vec::new(),
        }
    }
}

impl Wire for FlowMod {
    fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(buf);
        let w = "ofp_flow_mod";
        let mut f = Self {
            cookie: r.u64(w)?,
            cookie_mask: r.u64(w)?,
            table_id: r.u8(w)?,
            command: r.u8(w)?,
            idle_timeout: r.u16(w)?,
            hard_timeout: r.u16(w)?,
            priority: r.u16(w)?,
            buffer_id: r.u32(w)?,
            out_port: r.u32(w)?,
            out_group: r.u32(w)?,
            flags: r.u16(w)?,
            importance: r.u16(w)?,
            ..Self::default()
        };
        f.r#match = Match::decode(&mut r)?;
        f.instructions = Instruction::decode_list(r.take_rest())?;
        Ok(f)
    }

    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        out.put_u64(self.cookie);
        out.put_u64(self.cookie_mask);
        out.put_u8(self.table_id);
        out.put_u8(self.command);
        out.put_u16(self.idle_timeout);
        out.put_u16(self.hard_timeout);
        out.put_u16(self.priority);
        out.put_u32(self.buffer_id);
        out.put_u32(self.out_port);
        out.put_u32(self.out_group);
        out.put_u16(self.flags);
        out.put_u16(self.importance);
        put_match(&self.r#match, out)?;
        Instruction::encode_list(&self.instructions, out)
    }
}
