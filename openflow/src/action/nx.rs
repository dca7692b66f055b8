//! Nicira (`NXAST_*`) action bodies, after the 10-byte experimenter header.

use bytes::{BufMut, BytesMut};

use super::{ct, learn, nx_header, nxast, Action, HeaderRef, SubField};
use crate::oxm::MatchField;
use crate::wire::encode::{len16, put_oxm, EncodeError};
use crate::wire::reader::{put_pad8, DecodeError, Reader};

/// `controller(...)` (`NXAST_CONTROLLER` or `NXAST_CONTROLLER2`).
#[derive(Clone, Debug, Eq, PartialEq, Hash)]
pub struct Controller {
    pub max_len: u16,
    pub controller_id: u16,
    /// `OFPR_*`; 1 = action.
    pub reason: u8,
    pub userdata: Vec<u8>,
    pub pause: bool,
    /// `NX_CTLR_NO_METER` (u32::MAX) when absent.
    pub meter_id: u32,
}

impl Default for Controller {
    fn default() -> Self {
        Self {
            max_len: u16::MAX,
            controller_id: 0,
            reason: OFPR_ACTION,
            userdata: Vec::new(),
            pause: false,
            meter_id: NX_CTLR_NO_METER,
        }
    }
}

/// `bundle(...)` (`NXAST_BUNDLE`, without a load destination): the member ports in order,
/// how one is chosen and what is hashed (OVS ignores the hash for active/backup).
#[derive(Clone, Debug, Eq, PartialEq, Hash)]
pub struct Bundle {
    /// `NX_BD_ALG_*`.
    pub algorithm: u16,
    /// `NX_HASH_FIELDS_*`.
    pub fields: u16,
    pub basis: u16,
    pub members: Vec<u16>,
}

/// The first live member, in order.
pub const NX_BD_ALG_ACTIVE_BACKUP: u16 = 0;
/// Highest random weight.
pub const NX_BD_ALG_HRW: u16 = 1;
pub const NX_HASH_FIELDS_ETH_SRC: u16 = 0;
/// The `NX_HASH_FIELDS_*` names `ovs-ofctl` prints, by value.
pub const NX_HASH_FIELDS_NAMES: [&str; 7] = [
    "eth_src",
    "symmetric_l4",
    "symmetric_l3l4",
    "symmetric_l3l4+udp",
    "nw_src",
    "nw_dst",
    "symmetric_l3",
];
/// `member_type` of every bundle: the members are OpenFlow ports (`NXM_OF_IN_PORT`).
const NXM_OF_IN_PORT_HEADER: u32 = 0x0000_0002;

pub const OFPR_ACTION: u8 = 1;
pub const NX_CTLR_NO_METER: u32 = u32::MAX;

// NXAC2PT_* property types of controller2.
const AC2_MAX_LEN: u16 = 0;
const AC2_CONTROLLER_ID: u16 = 1;
const AC2_REASON: u16 = 2;
const AC2_USERDATA: u16 = 3;
const AC2_PAUSE: u16 = 4;
const AC2_METER_ID: u16 = 5;

/// Decode a Nicira action body; `None` means the subtype is unknown (caller keeps raw).
pub(super) fn decode(subtype: u16, b: &mut Reader<'_>) -> Result<Option<Action>, DecodeError> {
    let a = match subtype {
        nxast::RESUBMIT | nxast::RESUBMIT_TABLE | nxast::RESUBMIT_TABLE_CT => {
            let in_port = b.u16("nx_action_resubmit")?;
            let table = if subtype == nxast::RESUBMIT {
                255
            } else {
                b.u8("nx_action_resubmit")?
            };
            Action::Resubmit {
                in_port,
                table,
                ct: subtype == nxast::RESUBMIT_TABLE_CT,
            }
        }
        nxast::REG_MOVE => {
            let n_bits = b.u16("nx_action_reg_move")?;
            let src_ofs = b.u16("nx_action_reg_move")?;
            let dst_ofs = b.u16("nx_action_reg_move")?;
            let src = HeaderRef::decode(b)?;
            let dst = HeaderRef::decode(b)?;
            Action::Move {
                src: SubField {
                    field: src,
                    ofs: src_ofs,
                    n_bits,
                },
                dst: SubField {
                    field: dst,
                    ofs: dst_ofs,
                    n_bits,
                },
                nx: true,
            }
        }
        nxast::REG_LOAD => {
            let ofs_nbits = b.u16("nx_action_reg_load")?;
            let dst = HeaderRef::decode(b)?;
            let value = b.u64("nx_action_reg_load")?;
            Action::RegLoad {
                dst: SubField::from_ofs_nbits(dst, ofs_nbits),
                value,
            }
        }
        nxast::REG_LOAD2 => Action::RegLoad2(MatchField::decode(b)?),
        // Like OVS, the zero padding stays part of the note.
        nxast::NOTE => Action::Note(b.take_rest().to_vec()),
        nxast::EXIT => Action::Exit,
        nxast::CT_CLEAR => Action::CtClear,
        nxast::DEC_TTL_CNT_IDS => {
            let n = b.u16("nx_action_cnt_ids")?;
            b.skip(4, "nx_action_cnt_ids")?;
            let mut ids = Vec::with_capacity(n as usize);
            for _ in 0..n {
                ids.push(b.u16("nx_action_cnt_ids")?);
            }
            Action::DecTtl { ids }
        }
        nxast::STACK_PUSH | nxast::STACK_POP => {
            let ofs = b.u16("nx_action_stack")?;
            let field = HeaderRef::decode(b)?;
            let n_bits = b.u16("nx_action_stack")?;
            let sf = SubField { field, ofs, n_bits };
            if subtype == nxast::STACK_PUSH {
                Action::StackPush(sf)
            } else {
                Action::StackPop(sf)
            }
        }
        nxast::CONJUNCTION => {
            let clause = b.u8("nx_action_conjunction")?;
            let n_clauses = b.u8("nx_action_conjunction")?;
            let id = b.u32("nx_action_conjunction")?;
            Action::Conjunction {
                id,
                clause,
                n_clauses,
            }
        }
        nxast::CONTROLLER => {
            let max_len = b.u16("nx_action_controller")?;
            let controller_id = b.u16("nx_action_controller")?;
            let reason = b.u8("nx_action_controller")?;
            Action::Controller(Controller {
                max_len,
                controller_id,
                reason,
                ..Controller::default()
            })
        }
        nxast::CONTROLLER2 => Action::Controller(decode_controller2(b)?),
        nxast::CLONE => {
            b.skip(6, "nx_action_clone")?;
            Action::Clone(Action::decode_list(b.take_rest())?)
        }
        nxast::BUNDLE => match decode_bundle(b)? {
            Some(bundle) => Action::Bundle(bundle),
            None => return Ok(None),
        },
        nxast::CHECK_PKT_LARGER => {
            let pkt_len = b.u16("nx_action_check_pkt_larger")?;
            let ofs = b.u16("nx_action_check_pkt_larger")?;
            let field = HeaderRef::decode(b)?;
            Action::CheckPktLarger {
                pkt_len,
                dst: SubField {
                    field,
                    ofs,
                    n_bits: 1,
                },
            }
        }
        nxast::SAMPLE => Action::Sample {
            probability: b.u16("nx_action_sample")?,
            collector_set_id: b.u32("nx_action_sample")?,
            obs_domain_id: b.u32("nx_action_sample")?,
            obs_point_id: b.u32("nx_action_sample")?,
        },
        nxast::OUTPUT_REG => {
            let ofs_nbits = b.u16("nx_action_output_reg")?;
            let src = HeaderRef::decode(b)?;
            let max_len = b.u16("nx_action_output_reg")?;
            Action::OutputReg {
                src: SubField::from_ofs_nbits(src, ofs_nbits),
                max_len,
            }
        }
        nxast::OUTPUT_TRUNC => Action::OutputTrunc {
            port: b.u16("nx_action_output_trunc")?,
            max_len: b.u32("nx_action_output_trunc")?,
        },
        nxast::CT => Action::Ct(ct::decode_ct(b)?),
        nxast::NAT => Action::Nat(ct::decode_nat(b)?),
        nxast::LEARN => Action::Learn(learn::decode(b, false)?),
        nxast::LEARN2 => Action::Learn(learn::decode(b, true)?),
        _ => return Ok(None),
    };
    Ok(Some(a))
}

/// A bundle this model describes, or `None` (kept raw): a load destination (that is
/// `NXAST_BUNDLE_LOAD`'s job), members that are not OpenFlow ports, unknown algorithms or
/// hash fields.
fn decode_bundle(b: &mut Reader<'_>) -> Result<Option<Bundle>, DecodeError> {
    let algorithm = b.u16("nx_action_bundle")?;
    let fields = b.u16("nx_action_bundle")?;
    let basis = b.u16("nx_action_bundle")?;
    let member_type = b.u32("nx_action_bundle")?;
    let n_members = b.u16("nx_action_bundle")?;
    let ofs_nbits = b.u16("nx_action_bundle")?;
    let dst = b.u32("nx_action_bundle")?;
    b.skip(4, "nx_action_bundle")?;
    let mut members = Vec::with_capacity(usize::from(n_members));
    for _ in 0..n_members {
        members.push(b.u16("nx_action_bundle members")?);
    }
    let plain = member_type == NXM_OF_IN_PORT_HEADER && ofs_nbits == 0 && dst == 0;
    let known = algorithm <= NX_BD_ALG_HRW && usize::from(fields) < NX_HASH_FIELDS_NAMES.len();
    Ok((plain && known).then_some(Bundle {
        algorithm,
        fields,
        basis,
        members,
    }))
}

fn decode_controller2(b: &mut Reader<'_>) -> Result<Controller, DecodeError> {
    b.skip(6, "nx_action_controller2")?;
    let mut c = Controller::default();
    while !b.is_empty() {
        let (ty, mut p) = b.property("controller2 property")?;
        match ty {
            AC2_MAX_LEN => c.max_len = p.u16("max_len")?,
            AC2_CONTROLLER_ID => c.controller_id = p.u16("controller_id")?,
            AC2_REASON => c.reason = p.u8("reason")?,
            AC2_USERDATA => c.userdata = p.take_rest().to_vec(),
            AC2_PAUSE => c.pause = true,
            AC2_METER_ID => c.meter_id = p.u32("meter_id")?,
            _ => {
                return Err(DecodeError::BadValue {
                    what: "controller2 property",
                    value: u64::from(ty),
                })
            }
        }
    }
    Ok(c)
}

fn prop(out: &mut BytesMut, ty: u16, body: &[u8]) -> Result<(), EncodeError> {
    let start = out.len();
    out.put_u16(ty);
    out.put_u16(len16(4 + body.len(), "controller2 property")?);
    out.put_slice(body);
    put_pad8(out, start);
    Ok(())
}

fn encode_controller(c: &Controller, out: &mut BytesMut) -> Result<(), EncodeError> {
    let plain = c.userdata.is_empty() && !c.pause && c.meter_id == NX_CTLR_NO_METER;
    if plain {
        nx_header(out, nxast::CONTROLLER);
        out.put_u16(c.max_len);
        out.put_u16(c.controller_id);
        out.put_u8(c.reason);
        return Ok(());
    }
    nx_header(out, nxast::CONTROLLER2);
    out.put_slice(&[0; 6]);
    if c.max_len != u16::MAX {
        prop(out, AC2_MAX_LEN, &c.max_len.to_be_bytes())?;
    }
    if c.controller_id != 0 {
        prop(out, AC2_CONTROLLER_ID, &c.controller_id.to_be_bytes())?;
    }
    if c.reason != OFPR_ACTION {
        prop(out, AC2_REASON, &[c.reason])?;
    }
    if !c.userdata.is_empty() {
        prop(out, AC2_USERDATA, &c.userdata)?;
    }
    if c.pause {
        prop(out, AC2_PAUSE, &[])?;
    }
    if c.meter_id != NX_CTLR_NO_METER {
        prop(out, AC2_METER_ID, &c.meter_id.to_be_bytes())?;
    }
    Ok(())
}

pub(super) fn encode(a: &Action, out: &mut BytesMut) -> Result<(), EncodeError> {
    match a {
        Action::Resubmit { in_port, table, ct } => {
            let sub = if *ct {
                nxast::RESUBMIT_TABLE_CT
            } else {
                nxast::RESUBMIT_TABLE
            };
            nx_header(out, sub);
            out.put_u16(*in_port);
            out.put_u8(*table);
        }
        Action::Move { src, dst, .. } => {
            nx_header(out, nxast::REG_MOVE);
            out.put_u16(src.n_bits);
            out.put_u16(src.ofs);
            out.put_u16(dst.ofs);
            src.field.encode(out);
            dst.field.encode(out);
        }
        Action::RegLoad { dst, value } => {
            nx_header(out, nxast::REG_LOAD);
            out.put_u16(dst.checked_ofs_nbits("nx_action_reg_load")?);
            dst.field.encode(out);
            out.put_u64(*value);
        }
        Action::RegLoad2(f) => {
            nx_header(out, nxast::REG_LOAD2);
            put_oxm(f, out)?;
        }
        Action::Note(n) => {
            nx_header(out, nxast::NOTE);
            out.put_slice(n);
        }
        Action::Exit => nx_header(out, nxast::EXIT),
        Action::CtClear => nx_header(out, nxast::CT_CLEAR),
        Action::DecTtl { ids } => {
            nx_header(out, nxast::DEC_TTL_CNT_IDS);
            out.put_u16(len16(ids.len(), "nx_action_cnt_ids n_controllers")?);
            out.put_u32(0);
            for i in ids {
                out.put_u16(*i);
            }
        }
        Action::StackPush(sf) | Action::StackPop(sf) => {
            let sub = if matches!(a, Action::StackPush(_)) {
                nxast::STACK_PUSH
            } else {
                nxast::STACK_POP
            };
            nx_header(out, sub);
            out.put_u16(sf.ofs);
            sf.field.encode(out);
            out.put_u16(sf.n_bits);
        }
        Action::Conjunction {
            id,
            clause,
            n_clauses,
        } => {
            nx_header(out, nxast::CONJUNCTION);
            out.put_u8(*clause);
            out.put_u8(*n_clauses);
            out.put_u32(*id);
        }
        Action::Controller(c) => encode_controller(c, out)?,
        Action::Clone(list) => {
            nx_header(out, nxast::CLONE);
            out.put_slice(&[0; 6]);
            Action::encode_list_partial(list, out)?;
        }
        Action::Bundle(bundle) => {
            nx_header(out, nxast::BUNDLE);
            out.put_u16(bundle.algorithm);
            out.put_u16(bundle.fields);
            out.put_u16(bundle.basis);
            out.put_u32(NXM_OF_IN_PORT_HEADER);
            out.put_u16(len16(bundle.members.len(), "nx_action_bundle n_members")?);
            out.put_u16(0); // ofs_nbits: no load destination
            out.put_u32(0); // dst
            out.put_u32(0); // zero
            for m in &bundle.members {
                out.put_u16(*m);
            }
        }
        Action::CheckPktLarger { pkt_len, dst } => {
            nx_header(out, nxast::CHECK_PKT_LARGER);
            out.put_u16(*pkt_len);
            out.put_u16(dst.ofs);
            dst.field.encode(out);
        }
        Action::Sample {
            probability,
            collector_set_id,
            obs_domain_id,
            obs_point_id,
        } => {
            nx_header(out, nxast::SAMPLE);
            out.put_u16(*probability);
            out.put_u32(*collector_set_id);
            out.put_u32(*obs_domain_id);
            out.put_u32(*obs_point_id);
        }
        Action::OutputReg { src, max_len } => {
            nx_header(out, nxast::OUTPUT_REG);
            out.put_u16(src.checked_ofs_nbits("nx_action_output_reg")?);
            src.field.encode(out);
            out.put_u16(*max_len);
        }
        Action::OutputTrunc { port, max_len } => {
            nx_header(out, nxast::OUTPUT_TRUNC);
            out.put_u16(*port);
            out.put_u32(*max_len);
        }
        Action::Ct(c) => ct::encode_ct(c, out)?,
        Action::Nat(n) => ct::encode_nat(n, out),
        Action::Learn(l) => learn::encode(l, out)?,
        // Standard actions are encoded by the caller.
        _ => {}
    }
    Ok(())
}
