//! The pipeline registers of a packet-in (`NXPINT_METADATA`) and the actions that restore
//! them in a packet-out (ovn-controller's `reload_metadata`).

use openflow::action::Action;
use openflow::oxm::{FieldId, Match, MatchField, RegFamily};

/// The 16 32-bit registers and `metadata` of a packet-in. Registers come as `reg`, `xreg`
/// (OpenFlow 1.5 packet registers) or `xxreg` fields; a register that is absent or fully
/// masked out is `None`, as OVS leaves out zero registers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Registers {
    pub regs: [Option<u32>; 16],
    pub metadata: Option<u64>,
    pub pkt_mark: Option<u32>,
}

fn be(bytes: &[u8]) -> u128 {
    bytes.iter().fold(0u128, |a, b| (a << 8) | u128::from(*b))
}

impl Registers {
    pub fn from_match(m: &Match) -> Self {
        let mut out = Self::default();
        for f in &m.fields {
            let Some(id) = f.field.known() else { continue };
            let value = be(&f.value);
            let mask = f.mask.as_deref().map_or(u128::MAX, be);
            if id == FieldId::METADATA {
                out.metadata = Some((value & mask) as u64);
                continue;
            }
            if id == FieldId::PKT_MARK {
                out.pkt_mark = Some((value & mask) as u32);
                continue;
            }
            let Some((family, index)) = id.register() else {
                continue;
            };
            let (first, count) = match family {
                RegFamily::Reg => (index, 1),
                RegFamily::Xreg => (index * 2, 2),
                RegFamily::Xxreg => (index * 4, 4),
            };
            for k in 0..count {
                let shift = 32 * u32::from(count - 1 - k);
                let m = (mask >> shift) as u32;
                if m == 0 {
                    continue;
                }
                if let Some(slot) = out.regs.get_mut(usize::from(first + k)) {
                    *slot = Some(((value >> shift) as u32) & m);
                }
            }
        }
        out
    }

    pub fn reg(&self, n: usize) -> u32 {
        self.regs.get(n).copied().flatten().unwrap_or(0)
    }

    /// `xxreg0` (reg0..reg3, most significant first): where `nd_ns` and `put_nd` find the
    /// IPv6 next hop.
    pub fn xxreg0(&self) -> u128 {
        (0..4).fold(0u128, |a, i| (a << 32) | u128::from(self.reg(i)))
    }

    /// The logical datapath (the `metadata` field).
    pub fn datapath(&self) -> u32 {
        self.metadata.unwrap_or(0) as u32
    }

    /// `set_field` for every register and `metadata` the packet-in carried, so that a
    /// packet-out continues in the same logical context.
    pub fn reload(&self) -> Vec<Action> {
        let mut out: Vec<Action> = self
            .regs
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let v = (*v)?;
                Some(Action::SetField(MatchField::new(
                    FieldId::reg(i as u8),
                    v.to_be_bytes().to_vec(),
                    None,
                )))
            })
            .collect();
        if let Some(md) = self.metadata {
            out.push(Action::SetField(MatchField::new(
                FieldId::METADATA,
                md.to_be_bytes().to_vec(),
                None,
            )));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_registers_split_into_32_bit_registers() {
        let mut m = Match::new();
        // xreg0 = reg0:reg1 with only reg0 present; xreg7 = reg14:reg15 both present.
        m.push(
            FieldId::xreg(0),
            0x0a00_0001_0000_0000u64.to_be_bytes().to_vec(),
            Some(0xffff_ffff_0000_0000u64.to_be_bytes().to_vec()),
        );
        m.push(
            FieldId::xreg(7),
            0x0000_0002_0000_0003u64.to_be_bytes().to_vec(),
            None,
        );
        m.push(FieldId::METADATA, 5u64.to_be_bytes().to_vec(), None);
        let r = Registers::from_match(&m);
        assert_eq!(r.regs[0], Some(0x0a00_0001));
        assert_eq!(r.regs[1], None);
        assert_eq!((r.reg(14), r.reg(15)), (2, 3));
        assert_eq!(r.datapath(), 5);
        let text: Vec<String> = r.reload().iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "set_field:0xa000001->reg0",
                "set_field:0x2->reg14",
                "set_field:0x3->reg15",
                "set_field:0x5->metadata"
            ]
        );
    }
}
