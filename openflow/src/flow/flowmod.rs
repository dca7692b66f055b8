//! A flow (table, priority, cookie, match, shared actions) and the borrowing encoder that
//! writes it as an OpenFlow 1.5 `flow_mod` body without building a `FlowMod`.

use std::fmt;
use std::sync::Arc;

use bytes::{BufMut, BytesMut};

use super::slots::FlowMatch;
use super::wire::UnsupportedMatch;
use crate::action::{Action, OFPP_ANY};
use crate::text::format_actions;
use crate::wire::flow_mod::{
    OFPFC_ADD, OFPFC_DELETE_STRICT, OFPFC_MODIFY_STRICT, OFPG_ANY, OFP_NO_BUFFER,
};
use crate::wire::EncodeError;

/// `OFPIT_APPLY_ACTIONS`.
const OFPIT_APPLY_ACTIONS: u16 = 4;

/// One OpenFlow flow as a controller wants it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Flow {
    pub table: u8,
    pub priority: u16,
    pub cookie: u64,
    pub m: FlowMatch,
    /// Shared by every flow that has the same actions (all flows of one logical flow on
    /// one datapath, for example).
    pub actions: Arc<Vec<Action>>,
}

impl fmt::Display for Flow {
    /// The `ovs-ofctl dump-flows` line without statistics: ` cookie=0x.., table=.., priority=..,match actions=..`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.m.to_string();
        let sep = if m.is_empty() { "" } else { "," };
        write!(
            f,
            " cookie={:#x}, table={}, priority={}{sep}{m} actions={}",
            self.cookie,
            self.table,
            self.priority,
            format_actions(&self.actions)
        )
    }
}

/// Why a flow could not be encoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FlowEncodeError {
    #[error(transparent)]
    Match(#[from] UnsupportedMatch),
    #[error(transparent)]
    Encode(#[from] EncodeError),
}

/// The flow_mod commands a controller diffing flow tables uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowModCommand {
    /// `OFPFC_ADD`: a new flow, or one whose cookie changes.
    Add,
    /// `OFPFC_MODIFY_STRICT`: new actions for the flow with exactly this match and priority.
    ModifyStrict,
    /// `OFPFC_DELETE_STRICT`: remove exactly this flow.
    DeleteStrict,
}

impl FlowModCommand {
    fn code(self) -> u8 {
        match self {
            Self::Add => OFPFC_ADD,
            Self::ModifyStrict => OFPFC_MODIFY_STRICT,
            Self::DeleteStrict => OFPFC_DELETE_STRICT,
        }
    }
}

/// Appends the body of an OpenFlow 1.5 `flow_mod` (everything after the 8-byte header):
/// the same bytes `FlowMod::encode` writes for the equivalent `FlowMod`, with the match in
/// the form OVS itself sends ([`FlowMatch::encode_of15`]) and the actions in one
/// apply-actions instruction (none for a drop, and none for a delete).
pub fn encode_flow_mod_body(
    out: &mut BytesMut,
    command: FlowModCommand,
    table: u8,
    priority: u16,
    cookie: u64,
    m: &FlowMatch,
    actions: &[Action],
) -> Result<(), FlowEncodeError> {
    out.put_u64(cookie);
    out.put_u64(0); // cookie_mask
    out.put_u8(table);
    out.put_u8(command.code());
    out.put_u16(0); // idle_timeout
    out.put_u16(0); // hard_timeout
    out.put_u16(priority);
    out.put_u32(OFP_NO_BUFFER);
    out.put_u32(OFPP_ANY);
    out.put_u32(OFPG_ANY);
    out.put_u16(0); // flags
    out.put_u16(0); // importance
    m.encode_of15(out)?;
    if command != FlowModCommand::DeleteStrict && !actions.is_empty() {
        let start = out.len();
        out.put_u16(OFPIT_APPLY_ACTIONS);
        out.put_u16(0);
        out.put_u32(0);
        Action::encode_list(actions, out)?;
        let len = out.len() - start;
        let len16 = u16::try_from(len).map_err(|_| EncodeError::TooLong {
            what: "apply_actions instruction",
            len,
            max: usize::from(u16::MAX),
        })?;
        out[start + 2..start + 4].copy_from_slice(&len16.to_be_bytes());
    }
    Ok(())
}

impl Flow {
    /// [`encode_flow_mod_body`] for this flow.
    pub fn encode_flow_mod_body(
        &self,
        out: &mut BytesMut,
        command: FlowModCommand,
    ) -> Result<(), FlowEncodeError> {
        encode_flow_mod_body(
            out,
            command,
            self.table,
            self.priority,
            self.cookie,
            &self.m,
            &self.actions,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oxm::FieldId;
    use crate::wire::{FlowMod, Instruction, Wire};

    #[test]
    fn borrowing_encoder_writes_what_flow_mod_decodes() {
        let mut m = FlowMatch::new();
        assert!(m.add(FieldId::METADATA, 1, u128::from(u64::MAX)));
        assert!(m.add(FieldId::REG14, 2, 0xffff_ffff));
        let actions = vec![Action::Resubmit {
            in_port: 0xfff8,
            table: 9,
            ct: false,
        }];
        let mut b = BytesMut::new();
        encode_flow_mod_body(&mut b, FlowModCommand::Add, 8, 100, 0xabcd, &m, &actions).unwrap();
        let fm = FlowMod::decode(&b).unwrap();
        assert_eq!((fm.table_id, fm.priority, fm.cookie), (8, 100, 0xabcd));
        assert_eq!(fm.instructions, vec![Instruction::ApplyActions(actions)]);
        assert_eq!(FlowMatch::from_match(&fm.r#match).unwrap(), m);
        let mut again = BytesMut::new();
        fm.encode(&mut again).unwrap();
        assert_eq!(again, b, "byte for byte what FlowMod encodes");
    }
}
