//! OF1.1+ instructions (`ofp_instruction_*`) of a flow_mod.

use bytes::{BufMut, BytesMut};

use super::encode::{all_or_nothing, patch_len16, EncodeError};
use super::reader::{DecodeError, Reader};
use crate::action::Action;

const OFPIT_GOTO_TABLE: u16 = 1;
const OFPIT_WRITE_METADATA: u16 = 2;
const OFPIT_WRITE_ACTIONS: u16 = 3;
const OFPIT_APPLY_ACTIONS: u16 = 4;
const OFPIT_CLEAR_ACTIONS: u16 = 5;

#[derive(Clone, Debug, Eq, PartialEq, Hash)]
#[non_exhaustive]
pub enum Instruction {
    GotoTable(u8),
    WriteMetadata { value: u64, mask: u64 },
    WriteActions(Vec<Action>),
    ApplyActions(Vec<Action>),
    ClearActions,
    Unknown { ty: u16, body: Vec<u8> },
}

impl Instruction {
    pub fn decode_list(buf: &[u8]) -> Result<Vec<Self>, DecodeError> {
        let mut r = Reader::new(buf);
        let mut out = Vec::new();
        while !r.is_empty() {
            let ty = r.u16("instruction")?;
            let len = r.u16("instruction")? as usize;
            if len < 8 || len & 7 != 0 {
                return Err(DecodeError::BadLength {
                    what: "instruction",
                    len,
                });
            }
            let mut b = r.sub(len - 4, "instruction")?;
            out.push(match ty {
                OFPIT_GOTO_TABLE => Self::GotoTable(b.u8("goto_table")?),
                OFPIT_WRITE_METADATA => {
                    b.skip(4, "write_metadata")?;
                    Self::WriteMetadata {
                        value: b.u64("write_metadata")?,
                        mask: b.u64("write_metadata")?,
                    }
                }
                OFPIT_WRITE_ACTIONS | OFPIT_APPLY_ACTIONS => {
                    b.skip(4, "instruction_actions")?;
                    let acts = Action::decode_list(b.take_rest())?;
                    if ty == OFPIT_APPLY_ACTIONS {
                        Self::ApplyActions(acts)
                    } else {
                        Self::WriteActions(acts)
                    }
                }
                OFPIT_CLEAR_ACTIONS => Self::ClearActions,
                _ => Self::Unknown {
                    ty,
                    body: b.take_rest().to_vec(),
                },
            });
        }
        Ok(out)
    }

    /// Append the instruction; on error (an action list too long for its 16-bit length)
    /// `out` is left as it was.
    pub fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        all_or_nothing(out, |out| self.encode_partial(out))
    }

    fn encode_partial(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        let start = out.len();
        let ty = match self {
            Self::GotoTable(_) => OFPIT_GOTO_TABLE,
            Self::WriteMetadata { .. } => OFPIT_WRITE_METADATA,
            Self::WriteActions(_) => OFPIT_WRITE_ACTIONS,
            Self::ApplyActions(_) => OFPIT_APPLY_ACTIONS,
            Self::ClearActions => OFPIT_CLEAR_ACTIONS,
            Self::Unknown { ty, .. } => *ty,
        };
        out.put_u16(ty);
        out.put_u16(0);
        match self {
            Self::GotoTable(t) => {
                out.put_u8(*t);
                out.put_slice(&[0; 3]);
            }
            Self::WriteMetadata { value, mask } => {
                out.put_u32(0);
                out.put_u64(*value);
                out.put_u64(*mask);
            }
            Self::WriteActions(a) | Self::ApplyActions(a) => {
                out.put_u32(0);
                Action::encode_list(a, out)?;
            }
            Self::ClearActions => out.put_u32(0),
            Self::Unknown { body, .. } => out.put_slice(body),
        }
        super::reader::put_pad8(out, start);
        patch_len16(out, start, start + 2, "instruction")
    }

    /// Append every instruction; on error `out` is left as it was.
    pub fn encode_list(list: &[Self], out: &mut BytesMut) -> Result<(), EncodeError> {
        all_or_nothing(out, |out| {
            list.iter().try_for_each(|i| i.encode_partial(out))
        })
    }
}
