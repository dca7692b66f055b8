//! Builders for the `openflow` crate's actions in the shapes the compiler emits them (how
//! ovn-controller 23.03.1 encodes each: `set_field` with the field's own width, `move` as
//! OF1.5 `copy_field`, stack actions with NXM headers, `ct` with its nested `nat`).

use std::net::IpAddr;

pub use openflow::action::{
    Action, Action as OfAction, Controller, Ct, Learn, LearnDst, LearnSpec, LearnSrc, Nat,
    NatRange, SubField,
};
pub use openflow::flow::{Flow, FlowMatch, Slot};
pub use openflow::oxm::FieldId;
use openflow::oxm::MatchField;

/// `set_field:value/mask->field` (the mask is left out when it covers every byte of the
/// field, as OVS prints and encodes it).
pub fn set_field(field: FieldId, value: u128, mask: u128) -> Action {
    let width = field.bytes();
    let full = if width >= 16 {
        u128::MAX
    } else {
        (1u128 << (8 * width)) - 1
    };
    let value = value & mask;
    let bytes = |v: u128| v.to_be_bytes()[16 - width.min(16)..].to_vec();
    let mask = (mask & full != full).then(|| bytes(mask));
    Action::SetField(MatchField::new(field, bytes(value), mask))
}

/// `resubmit(,table)`.
pub fn resubmit(table: u8) -> Action {
    Action::Resubmit {
        in_port: 0xfff8,
        table,
        ct: false,
    }
}

/// Bits `ofs..ofs+n_bits` of a field.
pub fn sub(field: FieldId, ofs: u32, n_bits: u32) -> SubField {
    SubField::new(field, ofs as u16, n_bits as u16)
}

/// The whole field.
pub fn whole(field: FieldId) -> SubField {
    SubField::whole(field)
}

/// `move:src->dst`, encoded as OpenFlow 1.5 `copy_field` (OXM headers where they exist).
pub fn mov(src: SubField, dst: SubField) -> Action {
    Action::Move {
        src: src.with_oxm_header(),
        dst: dst.with_oxm_header(),
        nx: false,
    }
}

/// `push:field`.
pub fn push(s: SubField) -> Action {
    Action::StackPush(s)
}

/// `pop:field`.
pub fn pop(s: SubField) -> Action {
    Action::StackPop(s)
}

/// `dec_ttl()`: ovn-controller's `ip.ttl--` (no controller ids).
pub fn dec_ttl() -> Action {
    Action::DecTtl { ids: Vec::new() }
}

/// `conjunction(id, clause+1/n_clauses)`; `clause` is 0-based.
pub fn conjunction(id: u32, clause: u32, n_clauses: u32) -> Action {
    Action::Conjunction {
        id,
        clause: clause as u8,
        n_clauses: n_clauses as u8,
    }
}

/// `controller(userdata=..[,pause][,meter_id=..])`.
pub fn controller(userdata: Vec<u8>, pause: bool, meter_id: Option<u32>) -> Action {
    Action::Controller(Controller {
        userdata,
        pause,
        meter_id: meter_id.unwrap_or(u32::MAX),
        ..Controller::default()
    })
}

/// The `nat` part of a `ct` action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NatSpec {
    /// `nat` with no arguments.
    Plain,
    /// `nat(src)` or `nat(dst)` with an optional address and port range.
    Typed {
        src: bool,
        addr: Option<IpAddr>,
        ports: Option<(u16, u16)>,
    },
}

/// What a `ct(...)` action does.
pub struct CtSpec {
    pub commit: bool,
    pub table: Option<u8>,
    pub zone: SubField,
    pub nat: Option<NatSpec>,
    pub exec: Vec<Action>,
}

const NX_CT_F_COMMIT: u16 = 1;
const NX_NAT_F_SRC: u16 = 1;
const NX_NAT_F_DST: u16 = 2;
const NX_CT_RECIRC_NONE: u8 = 255;

/// `ct(commit,table=..,zone=..,nat(..),exec(..))`.
pub fn ct(spec: CtSpec) -> Action {
    let mut actions = Vec::with_capacity(spec.exec.len() + 1);
    if let Some(n) = spec.nat {
        actions.push(Action::Nat(nat(n)));
    }
    actions.extend(spec.exec);
    Action::Ct(Ct {
        flags: if spec.commit { NX_CT_F_COMMIT } else { 0 },
        zone_src: Some(spec.zone),
        zone_imm: 0,
        recirc_table: spec.table.unwrap_or(NX_CT_RECIRC_NONE),
        alg: 0,
        actions,
    })
}

fn nat(n: NatSpec) -> Nat {
    match n {
        NatSpec::Plain => Nat {
            flags: 0,
            range: NatRange::None,
            proto_min: None,
            proto_max: None,
        },
        NatSpec::Typed { src, addr, ports } => Nat {
            flags: if src { NX_NAT_F_SRC } else { NX_NAT_F_DST },
            range: match addr {
                None => NatRange::None,
                Some(IpAddr::V4(a)) => NatRange::V4 {
                    min: Some(a),
                    max: None,
                },
                Some(IpAddr::V6(a)) => NatRange::V6 {
                    min: Some(a),
                    max: None,
                },
            },
            proto_min: ports.map(|p| p.0),
            proto_max: ports.and_then(|(lo, hi)| (hi != lo).then_some(hi)),
        },
    }
}

/// A typed `learn(...)` action, built spec by spec in the order `ovs-ofctl` prints them.
pub struct LearnBuilder(Learn);

const NX_LEARN_F_DELETE_LEARNED: u16 = 2;

fn imm(value: u128, n_bits: u32) -> Vec<u8> {
    let n = (n_bits as usize).div_ceil(8).min(16);
    value.to_be_bytes()[16 - n..].to_vec()
}

impl LearnBuilder {
    /// `learn(table=T,...)`.
    pub fn new(table: u8) -> Self {
        Self(Learn {
            table_id: table,
            ..Learn::default()
        })
    }

    /// `idle_timeout=`, `hard_timeout=` (0 = none).
    #[must_use]
    pub fn timeouts(mut self, idle: u16, hard: u16) -> Self {
        self.0.idle_timeout = idle;
        self.0.hard_timeout = hard;
        self
    }

    /// `delete_learned`.
    #[must_use]
    pub fn delete_learned(mut self) -> Self {
        self.0.flags |= NX_LEARN_F_DELETE_LEARNED;
        self
    }

    /// `cookie=`.
    #[must_use]
    pub fn cookie(mut self, cookie: u64) -> Self {
        self.0.cookie = cookie;
        self
    }

    /// `FIELD[]`: the learned flow matches the field's current value.
    #[must_use]
    pub fn match_same(self, f: FieldId) -> Self {
        let s = whole(f);
        self.spec(s.n_bits, LearnSrc::Field(s), LearnDst::Match(s))
    }

    /// `DST[]=SRC[]`: the learned flow matches `dst` against the current value of `src`.
    #[must_use]
    pub fn match_from(self, dst: FieldId, src: FieldId) -> Self {
        let (d, s) = (whole(dst), whole(src));
        self.spec(d.n_bits, LearnSrc::Field(s), LearnDst::Match(d))
    }

    /// `field=value`: the learned flow matches a constant.
    #[must_use]
    pub fn match_value(self, f: FieldId, value: u128) -> Self {
        let d = whole(f);
        self.spec(
            d.n_bits,
            LearnSrc::Immediate(imm(value, u32::from(d.n_bits))),
            LearnDst::Match(d),
        )
    }

    /// `load:value->dst`: the learned flow loads a constant.
    #[must_use]
    pub fn load_value(self, dst: SubField, value: u128) -> Self {
        self.spec(
            dst.n_bits,
            LearnSrc::Immediate(imm(value, u32::from(dst.n_bits))),
            LearnDst::Load(dst),
        )
    }

    fn spec(mut self, n_bits: u16, src: LearnSrc, dst: LearnDst) -> Self {
        self.0.specs.push(LearnSpec { n_bits, src, dst });
        self
    }

    pub fn build(self) -> Action {
        Action::Learn(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learn_builder_equals_the_parsed_text() {
        let built = LearnBuilder::new(69)
            .delete_learned()
            .cookie(0x1234)
            .match_same(FieldId::METADATA)
            .match_value(FieldId::ETH_TYPE, 0x800)
            .match_same(FieldId::IP_SRC)
            .match_value(FieldId::IP_DST, 0x0a00_0001)
            .match_value(FieldId::NW_PROTO, 6)
            .match_from(FieldId::TCP_SRC, FieldId::TCP_DST)
            .load_value(sub(FieldId::reg(10), 7, 1), 1)
            .build();
        let text = "learn(table=69,delete_learned,cookie=0x1234,OXM_OF_METADATA[],eth_type=0x800,NXM_OF_IP_SRC[],ip_dst=10.0.0.1,nw_proto=6,NXM_OF_TCP_SRC[]=NXM_OF_TCP_DST[],load:0x1->NXM_NX_REG10[7])";
        assert_eq!(built, openflow::text::parse_action(text).unwrap());
        assert_eq!(built.to_string(), text);
    }
}
