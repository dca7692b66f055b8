//! The 1-bit result of a paused controller action (`R = put_dhcp_opts(...)` and the like):
//! the userdata names the field and bit after the action header, and the handler writes 1
//! (answered) or 0 into the metadata of the `NXT_RESUME`, which the flows after the
//! action match on.

use openflow::oxm::{FieldId, FieldRef, MatchField, RegFamily};
use openflow::wire::nx::Resume;
use openflow::wire::PacketInProp;

/// Why the result field of a paused action cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResultBitError {
    #[error("bad result OXM (userdata too short)")]
    Truncated,
    #[error("bad result OXM (unknown field header {0:#010x})")]
    UnknownField(u32),
    #[error("bad result bit (field {0} is not a register)")]
    NotRegister(&'static str),
    #[error("bad result bit (bit {ofs} of a {bits}-bit field)")]
    OutOfRange { ofs: u32, bits: u32 },
}

/// One bit of one 32-bit register (`reg0[3]` arrives as bit 99 of `xxreg0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultBit {
    pub reg: usize,
    pub bit: u32,
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

impl ResultBit {
    /// Reads the field header (NXM/OXM, 4 bytes; 8 for an experimenter class) and the be32
    /// bit offset at the start of `payload`; returns the bit and the rest of the payload.
    pub fn parse(payload: &[u8]) -> Result<(Self, &[u8]), ResultBitError> {
        let header = payload
            .get(..4)
            .map(be32)
            .ok_or(ResultBitError::Truncated)?;
        let class = (header >> 16) as u16;
        let header_len = if class == 0xffff { 8 } else { 4 };
        let ofs = payload
            .get(header_len..header_len + 4)
            .map(be32)
            .ok_or(ResultBitError::Truncated)?;
        let rest = &payload[header_len + 4..];
        let field = (class != 0xffff)
            .then(|| FieldId::by_header(class, ((header >> 9) & 0x7f) as u8))
            .flatten()
            .ok_or(ResultBitError::UnknownField(header))?;
        // northd only ever names register bits; other writable fields are refused.
        let (family, index) = field
            .register()
            .ok_or(ResultBitError::NotRegister(field.def().name))?;
        let regs = match family {
            RegFamily::Reg => 1,
            RegFamily::Xreg => 2,
            RegFamily::Xxreg => 4,
        };
        if ofs >= 32 * regs {
            return Err(ResultBitError::OutOfRange {
                ofs,
                bits: 32 * regs,
            });
        }
        // The most significant register of a wide field comes first.
        let reg = usize::from(index) * regs as usize + (regs - 1 - ofs / 32) as usize;
        Ok((Self { reg, bit: ofs % 32 }, rest))
    }

    /// Writes `value` into the resume's metadata: into whichever register field (reg, xreg
    /// or xxreg) carries the register, else as a new `regN` field (OVS leaves zero
    /// registers out of the packet-in).
    pub fn write(self, resume: &mut Resume, value: bool) {
        let at = resume
            .props
            .iter()
            .position(|p| matches!(p, PacketInProp::Metadata(_)));
        let at = at.unwrap_or_else(|| {
            resume
                .props
                .push(PacketInProp::Metadata(openflow::oxm::Match::new()));
            resume.props.len() - 1
        });
        let PacketInProp::Metadata(m) = &mut resume.props[at] else {
            return;
        };
        let covering = m.fields.iter_mut().find_map(|f| {
            let FieldRef::Known(id) = f.field else {
                return None;
            };
            let (family, index) = id.register()?;
            let regs = match family {
                RegFamily::Reg => 1,
                RegFamily::Xreg => 2,
                RegFamily::Xxreg => 4,
            };
            let first = usize::from(index) * regs;
            (first..first + regs)
                .contains(&self.reg)
                .then(|| (f, self.reg - first))
        });
        let (field, position) = match covering {
            Some(c) => c,
            None if !value => return,
            None => {
                m.fields.push(MatchField::new(
                    FieldId::reg(self.reg as u8),
                    vec![0; 4],
                    None,
                ));
                (m.fields.last_mut().expect("just pushed"), 0)
            }
        };
        let byte = position * 4 + 3 - (self.bit / 8) as usize;
        let mask = 1u8 << (self.bit % 8);
        if let Some(b) = field.value.get_mut(byte) {
            if value {
                *b |= mask;
            } else {
                *b &= !mask;
            }
        }
        if let Some(b) = field.mask.as_mut().and_then(|m| m.get_mut(byte)) {
            *b |= mask;
        }
    }
}

/// Puts `packet` in place of the paused packet.
pub fn set_packet(resume: &mut Resume, packet: Vec<u8>) {
    let slot = resume.props.iter_mut().find_map(|p| match p {
        PacketInProp::Packet(b) => Some(b),
        _ => None,
    });
    match slot {
        Some(b) => *b = packet,
        None => resume.props.insert(0, PacketInProp::Packet(packet)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openflow::oxm::Match;

    fn resume_with(m: Match) -> Resume {
        Resume {
            props: vec![
                PacketInProp::Packet(vec![1, 2, 3]),
                PacketInProp::Metadata(m),
                PacketInProp::Continuation(vec![0; 8]),
            ],
        }
    }

    fn metadata(r: &Resume) -> &Match {
        r.metadata().expect("metadata")
    }

    #[test]
    fn reg0_bit_3_arrives_as_bit_99_of_xxreg0() {
        // `reg0[3] = put_dhcp_opts(...)` as northd writes it and ovn-controller encodes it.
        let ud = [0x00, 0x01, 0xde, 0x10, 0, 0, 0, 99, 0x0a, 0, 0, 1];
        let (bit, rest) = ResultBit::parse(&ud).expect("parsed");
        assert_eq!(bit, ResultBit { reg: 0, bit: 3 });
        assert_eq!(rest, &[0x0a, 0, 0, 1]);
    }

    #[test]
    fn bad_headers_are_refused() {
        assert_eq!(ResultBit::parse(&[0, 1]), Err(ResultBitError::Truncated));
        assert!(matches!(
            ResultBit::parse(&[0x00, 0x01, 0xde, 0x10, 0, 0, 0x01, 0]),
            Err(ResultBitError::OutOfRange { ofs: 256, .. })
        ));
        assert!(matches!(
            ResultBit::parse(&[0xff, 0xff, 0x00, 0x08, 0, 0, 0, 0, 0, 0, 0, 0]),
            Err(ResultBitError::UnknownField(_))
        ));
    }

    #[test]
    fn the_bit_goes_into_the_register_field_that_carries_it() {
        // OVS sends packet registers (xreg) masked to the registers that are not zero.
        let mut m = Match::new();
        m.push(
            FieldId::xreg(0),
            0x0000_0000_0000_0005u64.to_be_bytes().to_vec(),
            Some(0x0000_0000_ffff_ffffu64.to_be_bytes().to_vec()),
        );
        let mut r = resume_with(m);
        ResultBit { reg: 0, bit: 3 }.write(&mut r, true);
        let f = &metadata(&r).fields[0];
        assert_eq!(f.value, 0x0000_0008_0000_0005u64.to_be_bytes());
        assert_eq!(
            f.mask.as_deref(),
            Some(&0x0000_0008_ffff_ffffu64.to_be_bytes()[..])
        );
        ResultBit { reg: 1, bit: 0 }.write(&mut r, false);
        assert_eq!(
            metadata(&r).fields[0].value,
            0x0000_0008_0000_0004u64.to_be_bytes()
        );
    }

    #[test]
    fn an_absent_register_is_added_for_a_one_and_left_out_for_a_zero() {
        let mut r = resume_with(Match::new());
        ResultBit { reg: 0, bit: 3 }.write(&mut r, false);
        assert!(metadata(&r).fields.is_empty());
        ResultBit { reg: 0, bit: 3 }.write(&mut r, true);
        let f = metadata(&r).get(FieldId::reg(0)).expect("reg0 added");
        assert_eq!(f.value, 8u32.to_be_bytes());
    }
}
