//! The 1-bit result of the paused `R = action(...)` opcodes (`dns_lookup`,
//! `put_nd_ra_opts`): the userdata names the field of R (an NXM/OXM header) and the bit
//! offset in it; the handler writes 1 or 0 there in the metadata of the `NXT_RESUME`, as
//! ovn-controller's `mf_write_subfield` on the packet-in's metadata does.

use openflow::oxm::{FieldId, MatchField, RegFamily};
use openflow::wire::nx::Resume;
use openflow::wire::PacketInProp;

use super::handlers::Skip;

/// Where the result goes: bit `bit` of 32-bit register `reg`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultBit {
    pub reg: u8,
    pub bit: u8,
}

const EXPERIMENTER_CLASS: u16 = 0xffff;

/// Reads the result field and offset at the start of `payload` (after the action header);
/// returns it and the rest of the payload.
pub fn parse(payload: &[u8]) -> Result<(ResultBit, &[u8]), Skip> {
    let header = payload
        .get(..4)
        .ok_or(Skip::WrongPacket("bad result OXM (truncated)"))?;
    let h = u32::from_be_bytes([header[0], header[1], header[2], header[3]]);
    let class = (h >> 16) as u16;
    let field = ((h >> 9) & 0x7f) as u8;
    // An experimenter header carries a 4-byte experimenter id as well.
    let header_len = if class == EXPERIMENTER_CLASS { 8 } else { 4 };
    let ofs = payload
        .get(header_len..header_len + 4)
        .ok_or(Skip::WrongPacket("offset not present in the userdata"))?;
    let ofs = u32::from_be_bytes([ofs[0], ofs[1], ofs[2], ofs[3]]);
    let rest = &payload[header_len + 4..];
    let id = (class != EXPERIMENTER_CLASS)
        .then(|| FieldId::by_header(class, field))
        .flatten()
        .ok_or(Skip::WrongPacket("bad result OXM (unknown field)"))?;
    let Some((family, index)) = id.register() else {
        return Err(Skip::WrongPacket(
            "bad result bit (not a register: unsupported)",
        ));
    };
    let regs: u32 = match family {
        RegFamily::Reg => 1,
        RegFamily::Xreg => 2,
        RegFamily::Xxreg => 4,
    };
    if ofs >= 32 * regs {
        return Err(Skip::WrongPacket("bad result bit (offset out of range)"));
    }
    // The most significant 32 bits of a wide register are its first 32-bit register.
    let first = u32::from(index) * regs;
    let reg = first + (regs - 1 - ofs / 32);
    Ok((
        ResultBit {
            reg: reg as u8,
            bit: (ofs % 32) as u8,
        },
        rest,
    ))
}

/// The registers a metadata field covers: (first 32-bit register, how many).
fn covered(f: &MatchField) -> Option<(u8, u8)> {
    let (family, index) = f.field.known()?.register()?;
    Some(match family {
        RegFamily::Reg => (index, 1),
        RegFamily::Xreg => (index * 2, 2),
        RegFamily::Xxreg => (index * 4, 4),
    })
}

fn set_bit(bytes: &mut [u8], at: usize, bit: u8, value: bool) {
    // `at` is the register's first byte; bit 0 is the last byte's low bit.
    if let Some(b) = bytes.get_mut(at + 3 - usize::from(bit / 8)) {
        let m = 1u8 << (bit % 8);
        if value {
            *b |= m;
        } else {
            *b &= !m;
        }
    }
}

/// Writes `value` into the result bit of the resume's metadata (adding the register when
/// the packet-in left it out, as OVS leaves out zero registers).
pub fn write(resume: &mut Resume, rb: ResultBit, value: bool) {
    if !resume
        .props
        .iter()
        .any(|p| matches!(p, PacketInProp::Metadata(_)))
    {
        resume
            .props
            .push(PacketInProp::Metadata(openflow::oxm::Match::new()));
    }
    let Some(meta) = resume.props.iter_mut().find_map(|p| match p {
        PacketInProp::Metadata(m) => Some(m),
        _ => None,
    }) else {
        return;
    };
    for f in &mut meta.fields {
        let Some((first, count)) = covered(f) else {
            continue;
        };
        if rb.reg < first || rb.reg >= first + count {
            continue;
        }
        let at = usize::from(rb.reg - first) * 4;
        set_bit(&mut f.value, at, rb.bit, value);
        if let Some(mask) = f.mask.as_mut() {
            set_bit(mask, at, rb.bit, true);
        }
        return;
    }
    if value {
        meta.push(
            FieldId::reg(rb.reg),
            (1u32 << rb.bit).to_be_bytes().to_vec(),
            None,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pinctrl::metadata::Registers;
    use openflow::oxm::Match;

    fn payload(field: FieldId, ofs: u32) -> Vec<u8> {
        let (class, f) = field.def().wire_header();
        let len = field.bytes() as u32;
        let h = (u32::from(class) << 16) | (u32::from(f) << 9) | len;
        let mut out = h.to_be_bytes().to_vec();
        out.extend_from_slice(&ofs.to_be_bytes());
        out.extend_from_slice(b"rest");
        out
    }

    #[test]
    fn reg0_bit_4_through_xxreg0_is_bit_100() {
        // `reg0[4] = dns_lookup();` encodes as NXM_NX_XXREG0 (00.01.de.10), offset 100.
        let p = payload(FieldId::xxreg(0), 100);
        assert_eq!(&p[..4], &[0x00, 0x01, 0xde, 0x10]);
        let (rb, rest) = parse(&p).expect("parsed");
        assert_eq!(rb, ResultBit { reg: 0, bit: 4 });
        assert_eq!(rest, b"rest");
        let (rb, _) = parse(&payload(FieldId::xreg(3), 2)).expect("parsed");
        assert_eq!(rb, ResultBit { reg: 7, bit: 2 });
        assert!(parse(&payload(FieldId::reg(1), 32)).is_err());
        assert!(parse(&payload(FieldId::ETH_SRC, 0)).is_err());
        assert!(parse(&[0, 1]).is_err());
    }

    #[test]
    fn the_bit_is_written_into_present_and_absent_registers() {
        let mut m = Match::new();
        // reg0 present (xreg0 high half), reg1 absent.
        m.push(
            FieldId::xreg(0),
            0x0000_0003_0000_0000u64.to_be_bytes().to_vec(),
            Some(0xffff_ffff_0000_0000u64.to_be_bytes().to_vec()),
        );
        let mut resume = Resume {
            props: vec![PacketInProp::Metadata(m)],
        };
        write(&mut resume, ResultBit { reg: 0, bit: 4 }, true);
        write(&mut resume, ResultBit { reg: 1, bit: 0 }, true);
        write(&mut resume, ResultBit { reg: 0, bit: 0 }, false);
        write(&mut resume, ResultBit { reg: 5, bit: 31 }, true);
        write(&mut resume, ResultBit { reg: 6, bit: 1 }, false);
        let r = Registers::from_match(resume.metadata().expect("metadata"));
        assert_eq!(r.regs[0], Some(0x12));
        assert_eq!(r.regs[1], Some(1));
        assert_eq!(r.regs[5], Some(0x8000_0000));
        assert_eq!(
            r.regs[6], None,
            "writing 0 to an absent register adds nothing"
        );
    }
}
