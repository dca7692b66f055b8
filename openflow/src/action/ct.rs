//! `NXAST_CT` (`nx_action_conntrack`) and `NXAST_NAT` (`nx_action_nat`).
//!
//! ```text
//! nx_action_conntrack: hdr(10) flags:16 zone_src:32 zone_ofs_nbits|zone_imm:16
//!                      recirc_table:8 pad:24 alg:16 actions...
//! nx_action_nat:       hdr(10) pad:16 flags:16 range_present:16 [ranges...]
//! ```

use std::net::{Ipv4Addr, Ipv6Addr};

use bytes::{BufMut, BytesMut};

use super::{nx_header, nxast, Action, HeaderRef, SubField};
use crate::wire::encode::EncodeError;
use crate::wire::reader::{DecodeError, Reader};

pub const NX_CT_F_COMMIT: u16 = 1;
pub const NX_CT_F_FORCE: u16 = 2;
pub const NX_CT_RECIRC_NONE: u8 = 255;

/// `ct(...)`.
#[derive(Clone, Debug, Eq, PartialEq, Hash)]
pub struct Ct {
    pub flags: u16,
    /// Zone from a field (`zone=NXM_NX_REG13[0..15]`), else `zone_imm`.
    pub zone_src: Option<SubField>,
    pub zone_imm: u16,
    pub recirc_table: u8,
    pub alg: u16,
    /// Nested actions (a leading `Nat` prints outside `exec(...)`).
    pub actions: Vec<Action>,
}

impl Default for Ct {
    fn default() -> Self {
        Self {
            flags: 0,
            zone_src: None,
            zone_imm: 0,
            recirc_table: NX_CT_RECIRC_NONE,
            alg: 0,
            actions: Vec::new(),
        }
    }
}

pub const NX_NAT_F_SRC: u16 = 1;
pub const NX_NAT_F_DST: u16 = 2;
pub const NX_NAT_F_PERSISTENT: u16 = 4;
pub const NX_NAT_F_PROTO_HASH: u16 = 8;
pub const NX_NAT_F_PROTO_RANDOM: u16 = 16;

/// Address range of a NAT action; absent bounds are not on the wire.
#[derive(Clone, Debug, Eq, PartialEq, Hash)]
#[non_exhaustive]
pub enum NatRange {
    None,
    V4 {
        min: Option<Ipv4Addr>,
        max: Option<Ipv4Addr>,
    },
    V6 {
        min: Option<Ipv6Addr>,
        max: Option<Ipv6Addr>,
    },
}

/// `nat(...)`.
#[derive(Clone, Debug, Eq, PartialEq, Hash)]
pub struct Nat {
    pub flags: u16,
    pub range: NatRange,
    pub proto_min: Option<u16>,
    pub proto_max: Option<u16>,
}

const R_IPV4_MIN: u16 = 1;
const R_IPV4_MAX: u16 = 2;
const R_IPV6_MIN: u16 = 4;
const R_IPV6_MAX: u16 = 8;
const R_PROTO_MIN: u16 = 16;
const R_PROTO_MAX: u16 = 32;

pub(super) fn decode_ct(b: &mut Reader<'_>) -> Result<Ct, DecodeError> {
    let flags = b.u16("nx_action_conntrack")?;
    let zone_hdr = b.u32("nx_action_conntrack")?;
    let zone_v = b.u16("nx_action_conntrack")?;
    let recirc_table = b.u8("nx_action_conntrack")?;
    b.skip(3, "nx_action_conntrack")?;
    let alg = b.u16("nx_action_conntrack")?;
    let actions = Action::decode_list(b.take_rest())?;
    let (zone_src, zone_imm) = if zone_hdr == 0 {
        (None, zone_v)
    } else {
        (
            Some(SubField::from_ofs_nbits(HeaderRef(zone_hdr), zone_v)),
            0,
        )
    };
    Ok(Ct {
        flags,
        zone_src,
        zone_imm,
        recirc_table,
        alg,
        actions,
    })
}

pub(super) fn encode_ct(c: &Ct, out: &mut BytesMut) -> Result<(), EncodeError> {
    nx_header(out, nxast::CT);
    out.put_u16(c.flags);
    if let Some(sf) = &c.zone_src {
        sf.field.encode(out);
        out.put_u16(sf.checked_ofs_nbits("nx_action_conntrack zone")?);
    } else {
        out.put_u32(0);
        out.put_u16(c.zone_imm);
    }
    out.put_u8(c.recirc_table);
    out.put_slice(&[0; 3]);
    out.put_u16(c.alg);
    Action::encode_list_partial(&c.actions, out)
}

pub(super) fn decode_nat(b: &mut Reader<'_>) -> Result<Nat, DecodeError> {
    b.skip(2, "nx_action_nat")?;
    let flags = b.u16("nx_action_nat")?;
    let present = b.u16("nx_action_nat")?;
    let v4 = |b: &mut Reader<'_>, bit: u16| -> Result<Option<Ipv4Addr>, DecodeError> {
        Ok(if present & bit != 0 {
            Some(Ipv4Addr::from(b.u32("nat range")?))
        } else {
            None
        })
    };
    let v4min = v4(b, R_IPV4_MIN)?;
    let v4max = v4(b, R_IPV4_MAX)?;
    let v6 = |b: &mut Reader<'_>, bit: u16| -> Result<Option<Ipv6Addr>, DecodeError> {
        Ok(if present & bit != 0 {
            let mut a = [0u8; 16];
            a.copy_from_slice(b.take(16, "nat range")?);
            Some(Ipv6Addr::from(a))
        } else {
            None
        })
    };
    let v6min = v6(b, R_IPV6_MIN)?;
    let v6max = v6(b, R_IPV6_MAX)?;
    let proto_min = if present & R_PROTO_MIN != 0 {
        Some(b.u16("nat range")?)
    } else {
        None
    };
    let proto_max = if present & R_PROTO_MAX != 0 {
        Some(b.u16("nat range")?)
    } else {
        None
    };
    let has_v4 = v4min.is_some() || v4max.is_some();
    let has_v6 = v6min.is_some() || v6max.is_some();
    if has_v4 && has_v6 {
        // One range per action: keeping both would not survive re-encoding.
        return Err(DecodeError::BadValue {
            what: "nx_action_nat range_present",
            value: u64::from(present),
        });
    }
    let range = if has_v4 {
        NatRange::V4 {
            min: v4min,
            max: v4max,
        }
    } else if has_v6 {
        NatRange::V6 {
            min: v6min,
            max: v6max,
        }
    } else {
        NatRange::None
    };
    // The rest must be zero padding.
    if b.take_rest().iter().any(|x| *x != 0) {
        return Err(DecodeError::BadValue {
            what: "nx_action_nat padding",
            value: 0,
        });
    }
    Ok(Nat {
        flags,
        range,
        proto_min,
        proto_max,
    })
}

pub(super) fn encode_nat(n: &Nat, out: &mut BytesMut) {
    nx_header(out, nxast::NAT);
    out.put_u16(0);
    out.put_u16(n.flags);
    let mut present = 0;
    let mut body = BytesMut::new();
    match &n.range {
        NatRange::None => {}
        NatRange::V4 { min, max } => {
            if let Some(a) = min {
                present |= R_IPV4_MIN;
                body.put_slice(&a.octets());
            }
            if let Some(a) = max {
                present |= R_IPV4_MAX;
                body.put_slice(&a.octets());
            }
        }
        NatRange::V6 { min, max } => {
            if let Some(a) = min {
                present |= R_IPV6_MIN;
                body.put_slice(&a.octets());
            }
            if let Some(a) = max {
                present |= R_IPV6_MAX;
                body.put_slice(&a.octets());
            }
        }
    }
    if let Some(p) = n.proto_min {
        present |= R_PROTO_MIN;
        body.put_u16(p);
    }
    if let Some(p) = n.proto_max {
        present |= R_PROTO_MAX;
        body.put_u16(p);
    }
    out.put_u16(present);
    out.put_slice(&body);
}
