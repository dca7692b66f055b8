//! Comparing action lists independently of the encoding chosen for them.
//!
//! The same actions have several encodings, and a switch does not always dump the one it was
//! sent: after an OpenFlow 1.5 flow_mod, Open vSwitch reports a `load` (`NXAST_REG_LOAD`) as
//! a masked `set_field`, a `reg_load2` as a `set_field`, a `move` with OXM headers
//! (`OFPAT_COPY_FIELD`), and so on. [`canonical`] rewrites a list into one representative of
//! its meaning, and [`equivalent`] compares two lists by it; it is meant for diffing the flows
//! read back from a switch against the ones asked for.
//!
//! What the canonical form identifies:
//! - `SetField`, `RegLoad2` and `RegLoad` of the same bits with the same value (a load is a
//!   masked write of `n_bits` at `ofs`; a mask over every bit of the field is no mask; value
//!   bits outside the mask are ignored);
//! - NXM and OXM headers of a field in `move`, `load`, stack, `output:reg`, `ct(zone=...)`,
//!   `check_pkt_larger` and `learn`, and `NXAST_REG_MOVE` against `OFPAT_COPY_FIELD`;
//! - the register views: bits of `xxregN`, `xregN` and `regN` that are the same bits are the
//!   same field (they are written and named in the narrowest register that holds them);
//! - `dec_ttl` (`OFPAT_DEC_NW_TTL`) and `dec_ttl(0)`, which OVS treats alike (`dec_ttl()`
//!   with no controller ids stays different: it sends no packet-in);
//! - a note and the same note with the zero padding OVS keeps;
//! - the `max_len` of an output to a port other than `CONTROLLER` (ignored by switches);
//! - learn immediates with or without leading zero bytes.
//!
//! `NXAST_RESUBMIT` and `NXAST_RESUBMIT_TABLE` decode to the same [`Action::Resubmit`]
//! already, and `NXAST_CONTROLLER` versus `NXAST_CONTROLLER2` is chosen by content, so those
//! compare equal as they are. Nested lists (`clone`, `ct(exec)`) are compared the same way.

use super::{Action, HeaderRef, LearnDst, LearnSrc, SubField, OFPP_CONTROLLER};
use crate::oxm::registry::RegFamily;
use crate::oxm::{FieldId, FieldRef, MatchField};

/// Whether `a` and `b` do the same thing, whatever encodings they use (see the module
/// documentation for what counts as the same).
pub fn equivalent(a: &[Action], b: &[Action]) -> bool {
    a == b || canonical(a) == canonical(b)
}

/// One representative of the meaning of `actions`: two lists are [`equivalent`] exactly
/// when their canonical forms are equal. The result encodes to valid actions (in the OF1.5
/// forms: `set_field`, `copy_field`).
pub fn canonical(actions: &[Action]) -> Vec<Action> {
    actions.iter().map(canonical_action).collect()
}

fn canonical_action(a: &Action) -> Action {
    match a {
        Action::SetField(f) | Action::RegLoad2(f) => Action::SetField(canonical_write(f)),
        Action::RegLoad { dst, value } => match load_as_write(*dst, *value) {
            Some(f) => Action::SetField(canonical_write(&f)),
            None => a.clone(),
        },
        Action::Move { src, dst, .. } => Action::Move {
            src: canonical_subfield(*src),
            dst: canonical_subfield(*dst),
            nx: false,
        },
        Action::DecNwTtl => Action::DecTtl { ids: vec![0] },
        Action::Output { port, .. } if *port != OFPP_CONTROLLER => Action::Output {
            port: *port,
            max_len: 0,
        },
        Action::Note(n) => {
            // An action is padded to 8 bytes and OVS keeps the padding in the note.
            let mut n = n.clone();
            n.resize(crate::wire::reader::pad8(n.len() + 10) - 10, 0);
            Action::Note(n)
        }
        Action::StackPush(sf) => Action::StackPush(canonical_subfield(*sf)),
        Action::StackPop(sf) => Action::StackPop(canonical_subfield(*sf)),
        Action::OutputReg { src, max_len } => Action::OutputReg {
            src: canonical_subfield(*src),
            max_len: *max_len,
        },
        Action::CheckPktLarger { pkt_len, dst } => Action::CheckPktLarger {
            pkt_len: *pkt_len,
            dst: canonical_subfield(*dst),
        },
        Action::Clone(list) => Action::Clone(canonical(list)),
        Action::Ct(ct) => {
            let mut ct = ct.clone();
            ct.zone_src = ct.zone_src.map(canonical_subfield);
            ct.actions = canonical(&ct.actions);
            Action::Ct(ct)
        }
        Action::Learn(l) => {
            let mut l = l.clone();
            l.result_dst = l.result_dst.map(canonical_subfield);
            for s in &mut l.specs {
                s.src = match &s.src {
                    LearnSrc::Field(sf) => LearnSrc::Field(canonical_subfield(*sf)),
                    LearnSrc::Immediate(v) => {
                        let keep = usize::from(s.n_bits).div_ceil(8);
                        LearnSrc::Immediate(resize_be(v, keep))
                    }
                };
                s.dst = match &s.dst {
                    LearnDst::Match(sf) => LearnDst::Match(canonical_subfield(*sf)),
                    LearnDst::Load(sf) => LearnDst::Load(canonical_subfield(*sf)),
                    LearnDst::Output => LearnDst::Output,
                };
            }
            Action::Learn(l)
        }
        other => other.clone(),
    }
}

/// `v` as `len` big-endian bytes: leading zeros dropped or added (nonzero bytes are kept,
/// so a value too wide stays different).
fn resize_be(v: &[u8], len: usize) -> Vec<u8> {
    let first = v.iter().position(|b| *b != 0).unwrap_or(v.len());
    let digits = &v[first..];
    if digits.len() >= len {
        return digits.to_vec();
    }
    let mut out = vec![0; len - digits.len()];
    out.extend_from_slice(digits);
    out
}

/// Where the bits of a register-family field live: the `xxreg` that holds them and the
/// field's bit offset in it.
fn in_xxreg(id: FieldId) -> Option<(u8, u32)> {
    let (family, n) = id.register()?;
    Some(match family {
        RegFamily::Reg => (n / 4, u32::from(3 - n % 4) * 32),
        RegFamily::Xreg => (n / 2, u32::from(1 - n % 2) * 64),
        RegFamily::Xxreg => (n, 0),
    })
}

/// The narrowest register (`regN`, `xregN` or `xxregN`) of `xxreg` that holds bits
/// `lo..hi` of it, and that register's offset in the `xxreg`.
fn narrowest(xxreg: u8, lo: u32, hi: u32) -> (FieldId, u32) {
    let last = hi.saturating_sub(1).max(lo);
    if lo / 32 == last / 32 {
        let lane = lo / 32;
        (FieldId::reg(xxreg * 4 + 3 - lane as u8), lane * 32)
    } else if lo / 64 == last / 64 {
        let half = lo / 64;
        (FieldId::xreg(xxreg * 2 + 1 - half as u8), half * 64)
    } else {
        (FieldId::xxreg(xxreg), 0)
    }
}

/// The field named by one header, with the register bits named in the narrowest register.
fn canonical_subfield(sf: SubField) -> SubField {
    let Some(id) = sf.field.field() else {
        return sf;
    };
    if let Some((x, shift)) = in_xxreg(id) {
        let lo = shift + u32::from(sf.ofs);
        let hi = lo + u32::from(sf.n_bits);
        if hi <= 128 {
            let (reg, base) = narrowest(x, lo, hi);
            return SubField {
                field: HeaderRef::nxm(reg),
                ofs: (lo - base) as u16,
                n_bits: sf.n_bits,
            };
        }
    }
    SubField {
        field: HeaderRef::nxm(id),
        ..sf
    }
}

/// An `NXAST_REG_LOAD` as the masked write it is; `None` for a field not in the table or
/// bits beyond it.
fn load_as_write(dst: SubField, value: u64) -> Option<MatchField> {
    let id = dst.field.field()?;
    let d = id.def();
    let (ofs, n) = (usize::from(dst.ofs), usize::from(dst.n_bits));
    if n == 0 || n > 64 || ofs + n > d.width * 8 {
        return None;
    }
    let mut v = vec![0u8; d.width];
    let mut m = vec![0u8; d.width];
    for i in 0..n {
        let bit = ofs + i; // from the least significant bit
        let byte = d.width - 1 - bit / 8;
        m[byte] |= 1 << (bit % 8);
        if value >> i & 1 != 0 {
            v[byte] |= 1 << (bit % 8);
        }
    }
    Some(MatchField::new(id, v, Some(m)))
}

fn to_u128(b: &[u8]) -> u128 {
    b.iter().fold(0, |a, x| (a << 8) | u128::from(*x))
}

fn from_u128(v: u128, width: usize) -> Vec<u8> {
    v.to_be_bytes()[16 - width..].to_vec()
}

/// A write of `value` under `mask` to one field, with value bits outside the mask cleared,
/// a mask over all of the field's bits dropped, and register bits written to the narrowest
/// register that holds them.
fn canonical_write(f: &MatchField) -> MatchField {
    let FieldRef::Known(id) = f.field else {
        return f.clone();
    };
    let d = id.def();
    if is_variable(id) {
        return canonical_variable_write(f, d.width);
    }
    if f.value.len() != d.width || f.mask.as_ref().is_some_and(|m| m.len() != d.width) {
        return f.clone();
    }
    if let Some((x, shift)) = in_xxreg(id) {
        let full = d.full_mask();
        let m = f.mask.as_deref().map_or(full, to_u128) & full;
        if m != 0 {
            let v = (to_u128(&f.value) & m) << shift;
            let m = m << shift;
            let (reg, base) = narrowest(x, m.trailing_zeros(), 128 - m.leading_zeros());
            let rd = reg.def();
            let (v, m) = (v >> base, m >> base);
            let mask = (m != rd.full_mask()).then(|| from_u128(m, rd.width));
            return MatchField::new(reg, from_u128(v, rd.width), mask);
        }
    }
    let Some(mask) = &f.mask else {
        return f.clone();
    };
    let value: Vec<u8> = f.value.iter().zip(mask).map(|(v, m)| v & m).collect();
    let covers_all = if d.width <= 16 {
        let full = d.full_mask();
        to_u128(mask) & full == full
    } else {
        mask.iter().all(|b| *b == 0xff)
    };
    MatchField {
        field: f.field,
        value,
        mask: (!covers_all).then(|| mask.clone()),
    }
}

/// `tun_metadataN`: its width is the length of the Geneve option it is mapped to, and a
/// switch dumps a value in as few bytes as it takes (Open vSwitch drops the leading zero
/// bytes: `set_field:0x8004->tun_metadata0` sent with 4 bytes comes back with 2).
fn is_variable(id: FieldId) -> bool {
    id.def().name.starts_with("tun_metadata")
}

/// A write to a variable-length field: value (under its mask) and mask right-aligned in
/// the field's largest width, a mask over all of it dropped. A value longer than the field
/// is left as it is (it stays different from any valid one).
fn canonical_variable_write(f: &MatchField, width: usize) -> MatchField {
    if f.value.len() > width || f.mask.as_ref().is_some_and(|m| m.len() > width) {
        return f.clone();
    }
    let align = |b: &[u8]| {
        let mut out = vec![0u8; width - b.len()];
        out.extend_from_slice(b);
        out
    };
    let mut value = align(&f.value);
    let mask = f.mask.as_deref().map(align);
    if let Some(m) = &mask {
        for (v, m) in value.iter_mut().zip(m) {
            *v &= m;
        }
    }
    let mask = mask.filter(|m| !m.iter().all(|b| *b == 0xff));
    MatchField {
        field: f.field,
        value,
        mask,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::parse_actions;

    fn acts(s: &str) -> Vec<Action> {
        parse_actions(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn loads_and_set_fields_of_the_same_bits_are_equivalent() {
        let reg0 = FieldId::reg(0);
        let set = acts("set_field:0x5/0xff->reg0");
        let load = vec![Action::RegLoad {
            dst: SubField {
                field: HeaderRef::nxm(reg0),
                ofs: 0,
                n_bits: 8,
            },
            value: 5,
        }];
        let load2 = vec![Action::RegLoad2(MatchField::new(
            reg0,
            vec![0, 0, 0, 5],
            Some(vec![0, 0, 0, 0xff]),
        ))];
        assert!(equivalent(&set, &load));
        assert!(equivalent(&set, &load2));
        // A different value or width is not.
        assert!(!equivalent(&set, &acts("set_field:0x6/0xff->reg0")));
        assert!(!equivalent(&set, &acts("set_field:0x5/0xfff->reg0")));
        // A mask over every bit is no mask; bits outside the mask do not count.
        assert!(equivalent(
            &acts("set_field:0x5->metadata"),
            &acts("set_field:0x5/0xffffffffffffffff->metadata")
        ));
        assert!(equivalent(
            &acts("set_field:0x1/0x1->reg10"),
            &[Action::SetField(MatchField::new(
                FieldId::reg(10),
                vec![0xff, 0, 0, 0x3],
                Some(vec![0, 0, 0, 1])
            ))]
        ));
        // A whole-field load of a non-register field.
        let eth = FieldId::by_name("eth_src").unwrap();
        assert!(equivalent(
            &acts("set_field:00:00:00:00:00:07->eth_src"),
            &[Action::RegLoad {
                dst: SubField::whole(eth),
                value: 7
            }]
        ));
    }

    #[test]
    fn register_views_of_the_same_bits_are_equivalent() {
        // xxreg0 bits 96..127 are reg0; xreg4 low half is reg9.
        assert!(equivalent(
            &acts(
                "set_field:0x2000000000000000000000000/0xffffffff000000000000000000000000->xxreg0"
            ),
            &acts("set_field:0x2->reg0")
        ));
        assert!(equivalent(
            &acts("set_field:0x3/0xffffffff->xreg4"),
            &acts("set_field:0x3->reg9")
        ));
        assert!(equivalent(
            &acts("set_field:0x100000002->xreg4"),
            &acts("set_field:0x100000002/0xffffffffffffffff->xreg4")
        ));
        assert!(!equivalent(
            &acts("set_field:0x3/0xffffffff->xreg4"),
            &acts("set_field:0x3->reg8")
        ));
        assert!(equivalent(
            &acts("move:NXM_NX_XXREG0[96..127]->NXM_NX_REG15[]"),
            &acts("move:NXM_NX_REG0[]->OXM_OF_PKT_REG7[0..31]")
        ));
        assert!(equivalent(
            &acts("push:NXM_NX_XXREG0[64..95]"),
            &acts("push:NXM_NX_REG1[]")
        ));
        assert!(!equivalent(
            &acts("push:NXM_NX_XXREG0[64..95]"),
            &acts("push:NXM_NX_REG2[]")
        ));
    }

    #[test]
    fn header_namespaces_and_move_encodings_are_equivalent() {
        let mut nx = acts("move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[]");
        let Action::Move { src, dst, .. } = nx[0] else {
            panic!()
        };
        nx[0] = Action::Move {
            src: SubField {
                field: HeaderRef::nxm(src.field.field().unwrap()),
                ..src
            },
            dst: SubField {
                field: HeaderRef::nxm(dst.field.field().unwrap()),
                ..dst
            },
            nx: true,
        };
        let of15 = acts("move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[]");
        assert_ne!(nx, of15, "different encodings");
        assert!(equivalent(&nx, &of15));
        assert!(!equivalent(
            &nx,
            &acts("move:NXM_OF_ETH_DST[]->NXM_OF_ETH_SRC[]")
        ));
    }

    #[test]
    fn tun_metadata_values_of_any_length_are_equivalent() {
        let tm0 = FieldId::tun_metadata(0);
        let write = |v: &[u8], m: Option<&[u8]>| {
            vec![Action::SetField(MatchField {
                field: FieldRef::Known(tm0),
                value: v.to_vec(),
                mask: m.map(<[u8]>::to_vec),
            })]
        };
        // As sent (the option is 4 bytes) and as Open vSwitch dumps it.
        let sent = write(&[0, 0, 0x80, 0x04], None);
        assert!(equivalent(&sent, &write(&[0x80, 0x04], None)));
        assert!(equivalent(&write(&[0, 0, 0, 1], None), &write(&[1], None)));
        assert!(!equivalent(&sent, &write(&[0x80, 0x05], None)));
        assert!(!equivalent(&sent, &write(&[0x80, 0x04, 0], None)));
        // Masked writes: bits outside the mask do not count, leading zero mask bytes neither.
        assert!(equivalent(
            &write(&[0, 0, 0x12, 0x34], Some(&[0, 0, 0xff, 0x00])),
            &write(&[0x12, 0x00], Some(&[0xff, 0x00]))
        ));
        assert!(!equivalent(
            &write(&[0x12, 0x34], Some(&[0xff, 0xff])),
            &write(&[0x12, 0x34], None)
        ));
        // A value wider than any option stays different.
        assert!(!equivalent(&write(&[0; 125], None), &write(&[0], None)));
    }

    #[test]
    fn dec_ttl_notes_outputs_and_nesting() {
        assert!(equivalent(&acts("dec_ttl"), &acts("dec_ttl(0)")));
        assert!(!equivalent(&acts("dec_ttl"), &acts("dec_ttl()")));
        assert!(equivalent(
            &acts("note:01.02"),
            &acts("note:01.02.00.00.00.00")
        ));
        assert!(!equivalent(&acts("note:01.02"), &acts("note:01.03")));
        assert!(equivalent(
            &[Action::Output {
                port: 3,
                max_len: 0xffff
            }],
            &acts("output:3")
        ));
        assert!(!equivalent(
            &acts("CONTROLLER:100"),
            &acts("CONTROLLER:200")
        ));
        assert!(equivalent(
            &acts("clone(dec_ttl,set_field:0x1->reg0)"),
            &[Action::Clone(vec![
                Action::DecTtl { ids: vec![0] },
                Action::RegLoad {
                    dst: SubField::whole(FieldId::reg(0)),
                    value: 1
                }
            ])]
        ));
        assert!(equivalent(
            &acts("ct(commit,zone=NXM_NX_REG13[0..15],exec(set_field:0x1/0x1->ct_mark))"),
            &acts("ct(commit,zone=NXM_NX_XXREG3[64..79],exec(set_field:0x1/0x1->ct_mark))")
        ));
    }
}
