//! A small OpenFlow action model: prints in `ovs-ofctl` syntax and encodes the subset that
//! OVN nests inside controller userdata as OpenFlow 1.5 wire bytes.

use std::fmt::{self, Write as _};
use std::net::{IpAddr, Ipv4Addr};

use super::fields::{MfField, ValueFormat};
use super::ofmatch::{fmt_mac, hex};

/// A bit range of an OVS field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Subfield {
    pub field: MfField,
    pub ofs: u32,
    pub n_bits: u32,
}

impl Subfield {
    pub fn whole(field: MfField) -> Self {
        Self {
            field,
            ofs: 0,
            n_bits: field.width(),
        }
    }

    pub fn mask(&self) -> u128 {
        let ones = if self.n_bits >= 128 {
            u128::MAX
        } else {
            (1u128 << self.n_bits) - 1
        };
        ones << self.ofs
    }
}

impl fmt::Display for Subfield {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.field.nxm_name();
        if self.ofs == 0 && self.n_bits == self.field.width() {
            write!(f, "{name}[]")
        } else if self.n_bits == 1 {
            write!(f, "{name}[{}]", self.ofs)
        } else {
            write!(f, "{name}[{}..{}]", self.ofs, self.ofs + self.n_bits - 1)
        }
    }
}

/// NAT part of a `ct` action.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Nat {
    /// `nat` with no arguments.
    Plain,
    /// `nat(src)` or `nat(dst)` with an optional address and port range.
    Typed {
        src: bool,
        addr: Option<IpAddr>,
        ports: Option<(u16, u16)>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OfAction {
    Resubmit(u8),
    SetField {
        field: MfField,
        value: u128,
        mask: u128,
    },
    Move {
        src: Subfield,
        dst: Subfield,
    },
    Push(Subfield),
    Pop(Subfield),
    Ct {
        commit: bool,
        table: Option<u8>,
        zone: Subfield,
        nat: Option<Nat>,
        exec: Vec<OfAction>,
    },
    CtClear,
    DecTtl,
    Controller {
        userdata: Vec<u8>,
        pause: bool,
        meter_id: Option<u32>,
    },
    Clone(Vec<OfAction>),
    Group(u32),
    Meter(u32),
    SetQueue(u32),
    Conjunction {
        id: u32,
        clause: u32,
        n_clauses: u32,
    },
    CheckPktLarger {
        len: u16,
        dst: Subfield,
    },
    /// An action already in `ovs-ofctl` text form (learn, sample); never nested in userdata.
    Text(String),
}

fn fmt_value(field: MfField, v: u128) -> String {
    match field.value_format() {
        ValueFormat::Hex => hex(v),
        ValueFormat::Decimal => v.to_string(),
        ValueFormat::Ipv4 => Ipv4Addr::from(v as u32).to_string(),
        ValueFormat::Ipv6 => super::ofmatch::fmt_ipv6(v),
        ValueFormat::Ethernet => fmt_mac(v),
    }
}

fn fmt_list(f: &mut fmt::Formatter<'_>, acts: &[OfAction]) -> fmt::Result {
    for (i, a) in acts.iter().enumerate() {
        if i > 0 {
            f.write_char(',')?;
        }
        write!(f, "{a}")?;
    }
    Ok(())
}

/// Formats an action list the way `ovs-ofctl` does (`drop` when empty).
pub fn format_actions(acts: &[OfAction]) -> String {
    if acts.is_empty() {
        return "drop".into();
    }
    acts.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

impl fmt::Display for Nat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Nat::Plain => f.write_str("nat"),
            Nat::Typed { src, addr, ports } => {
                write!(f, "nat({}", if *src { "src" } else { "dst" })?;
                if let Some(a) = addr {
                    match (a, ports) {
                        (IpAddr::V6(x), Some(_)) => {
                            write!(f, "=[{}]", super::ofmatch::fmt_ipv6(u128::from(*x)))?;
                        }
                        (IpAddr::V6(x), None) => {
                            write!(f, "={}", super::ofmatch::fmt_ipv6(u128::from(*x)))?;
                        }
                        (IpAddr::V4(_), _) => write!(f, "={a}")?,
                    }
                    if let Some((lo, hi)) = ports {
                        write!(f, ":{lo}")?;
                        if hi != lo {
                            write!(f, "-{hi}")?;
                        }
                    }
                }
                f.write_char(')')
            }
        }
    }
}

impl fmt::Display for OfAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Resubmit(t) => write!(f, "resubmit(,{t})"),
            Self::SetField { field, value, mask } => {
                // OVS compares the mask with all-ones over the field's bytes, not its bits.
                let bytes = field.n_bytes() as u32 * 8;
                let full = if bytes >= 128 {
                    u128::MAX
                } else {
                    (1u128 << bytes) - 1
                };
                write!(f, "set_field:{}", fmt_value(*field, *value))?;
                if *mask != full {
                    let m = match field.value_format() {
                        ValueFormat::Decimal => format!("{mask:#x}"),
                        _ => fmt_value(*field, *mask),
                    };
                    write!(f, "/{m}")?;
                }
                write!(f, "->{}", field.name())
            }
            Self::Move { src, dst } => write!(f, "move:{src}->{dst}"),
            Self::Push(s) => write!(f, "push:{s}"),
            Self::Pop(s) => write!(f, "pop:{s}"),
            Self::Ct {
                commit,
                table,
                zone,
                nat,
                exec,
            } => {
                f.write_str("ct(")?;
                let mut parts = Vec::new();
                if *commit {
                    parts.push("commit".to_string());
                }
                if let Some(t) = table {
                    parts.push(format!("table={t}"));
                }
                parts.push(format!("zone={zone}"));
                if let Some(n) = nat {
                    parts.push(n.to_string());
                }
                if !exec.is_empty() {
                    parts.push(format!("exec({})", format_actions(exec)));
                }
                write!(f, "{})", parts.join(","))
            }
            Self::CtClear => f.write_str("ct_clear"),
            Self::DecTtl => f.write_str("dec_ttl()"),
            Self::Controller {
                userdata,
                pause,
                meter_id,
            } => {
                let ud: Vec<String> = userdata.iter().map(|b| format!("{b:02x}")).collect();
                write!(f, "controller(userdata={}", ud.join("."))?;
                if *pause {
                    f.write_str(",pause")?;
                }
                if let Some(m) = meter_id {
                    write!(f, ",meter_id={m}")?;
                }
                f.write_char(')')
            }
            Self::Clone(v) => {
                f.write_str("clone(")?;
                fmt_list(f, v)?;
                f.write_char(')')
            }
            Self::Group(g) => write!(f, "group:{g}"),
            Self::Meter(m) => write!(f, "meter:{m}"),
            Self::SetQueue(q) => write!(f, "set_queue:{q}"),
            Self::Conjunction {
                id,
                clause,
                n_clauses,
            } => write!(f, "conjunction({id},{}/{n_clauses})", clause + 1),
            Self::CheckPktLarger { len, dst } => write!(f, "check_pkt_larger({len})->{dst}"),
            Self::Text(t) => f.write_str(t),
        }
    }
}

/// Errors of the nested-action wire encoder.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("action {0} cannot be nested in controller userdata")]
pub struct NotNestable(pub String);

fn pad8(b: &mut Vec<u8>, start: usize) {
    while !(b.len() - start).is_multiple_of(8) {
        b.push(0);
    }
}

fn put_header(b: &mut Vec<u8>, (class, field): (u16, u8), has_mask: bool, len: usize) {
    b.extend_from_slice(&class.to_be_bytes());
    b.push((field << 1) | u8::from(has_mask));
    b.push(len as u8);
}

fn put_value(b: &mut Vec<u8>, v: u128, n: usize) {
    b.extend_from_slice(&v.to_be_bytes()[16 - n..]);
}

fn put_nx_header(b: &mut Vec<u8>, subtype: u16) -> usize {
    let start = b.len();
    b.extend_from_slice(&[0xff, 0xff, 0, 0, 0, 0, 0x23, 0x20]);
    b.extend_from_slice(&subtype.to_be_bytes());
    start
}

fn fix_len(b: &mut [u8], start: usize) {
    let len = (b.len() - start) as u16;
    b[start + 2..start + 4].copy_from_slice(&len.to_be_bytes());
}

fn put_stack(b: &mut Vec<u8>, subtype: u16, s: &Subfield) {
    let start = put_nx_header(b, subtype);
    b.extend_from_slice(&(s.ofs as u16).to_be_bytes());
    put_header(b, s.field.nxm_header(), false, s.field.n_bytes());
    b.extend_from_slice(&(s.n_bits as u16).to_be_bytes());
    b.extend_from_slice(&[0; 6]);
    fix_len(b, start);
}

/// NXAST_CONTROLLER2 with userdata, pause and meter properties.
pub fn put_controller2(b: &mut Vec<u8>, userdata: &[u8], pause: bool, meter_id: Option<u32>) {
    let start = put_nx_header(b, 37);
    b.extend_from_slice(&[0; 6]);
    let p = b.len();
    b.extend_from_slice(&3u16.to_be_bytes());
    b.extend_from_slice(&((4 + userdata.len()) as u16).to_be_bytes());
    b.extend_from_slice(userdata);
    pad8(b, p);
    if pause {
        b.extend_from_slice(&[0, 4, 0, 4, 0, 0, 0, 0]);
    }
    if let Some(m) = meter_id {
        b.extend_from_slice(&[0, 5, 0, 8]);
        b.extend_from_slice(&m.to_be_bytes());
    }
    fix_len(b, start);
}

/// Appends the OpenFlow 1.5 encoding of `acts` (as `ovs-vswitchd` would serialize them).
pub fn encode_of15(acts: &[OfAction], b: &mut Vec<u8>) -> Result<(), NotNestable> {
    for a in acts {
        match a {
            OfAction::SetField { field, value, mask } => {
                let start = b.len();
                b.extend_from_slice(&[0, 25, 0, 0]);
                let n = field.n_bytes();
                let masked = *mask != Subfield::whole(*field).mask();
                put_header(
                    b,
                    field.oxm15_header(),
                    masked,
                    if masked { 2 * n } else { n },
                );
                // ip_dscp is carried shifted in OXM_OF_IP_DSCP's low bits: no shift needed.
                put_value(b, *value, n);
                if masked {
                    put_value(b, *mask, n);
                }
                pad8(b, start);
                fix_len(b, start);
            }
            OfAction::Move { src, dst } => {
                let start = b.len();
                b.extend_from_slice(&[0, 28, 0, 0]);
                b.extend_from_slice(&(src.n_bits as u16).to_be_bytes());
                b.extend_from_slice(&(src.ofs as u16).to_be_bytes());
                b.extend_from_slice(&(dst.ofs as u16).to_be_bytes());
                b.extend_from_slice(&[0, 0]);
                put_header(b, src.field.oxm15_header(), false, src.field.n_bytes());
                put_header(b, dst.field.oxm15_header(), false, dst.field.n_bytes());
                pad8(b, start);
                fix_len(b, start);
            }
            OfAction::Push(s) => put_stack(b, 27, s),
            OfAction::Pop(s) => put_stack(b, 28, s),
            OfAction::Resubmit(t) => {
                let start = put_nx_header(b, 14);
                b.extend_from_slice(&[0xff, 0xf8, *t, 0, 0, 0]);
                fix_len(b, start);
            }
            OfAction::CtClear => {
                let start = put_nx_header(b, 43);
                b.extend_from_slice(&[0; 6]);
                fix_len(b, start);
            }
            OfAction::DecTtl => b.extend_from_slice(&[0, 24, 0, 8, 0, 0, 0, 0]),
            OfAction::Controller {
                userdata,
                pause,
                meter_id,
            } => put_controller2(b, userdata, *pause, *meter_id),
            other => return Err(NotNestable(other.to_string())),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dotted(b: &[u8]) -> String {
        b.iter()
            .map(|x| format!("{x:02x}"))
            .collect::<Vec<_>>()
            .join(".")
    }

    #[test]
    fn of15_encodings_match_real_userdata() {
        let mut b = Vec::new();
        encode_of15(
            &[OfAction::SetField {
                field: MfField::EthDst,
                value: 0xffff_ffff_ffff,
                mask: 0xffff_ffff_ffff,
            }],
            &mut b,
        )
        .unwrap();
        assert_eq!(
            dotted(&b),
            "00.19.00.10.80.00.06.06.ff.ff.ff.ff.ff.ff.00.00"
        );
        b.clear();
        let s14 = Subfield::whole(MfField::Reg(14));
        let s15 = Subfield::whole(MfField::Reg(15));
        encode_of15(&[OfAction::Move { src: s14, dst: s15 }], &mut b).unwrap();
        assert_eq!(
            dotted(&b),
            "00.1c.00.18.00.20.00.00.00.00.00.00.00.01.1c.04.00.01.1e.04.00.00.00.00"
        );
        b.clear();
        encode_of15(
            &[
                OfAction::Push(Subfield::whole(MfField::EthSrc)),
                OfAction::Resubmit(37),
            ],
            &mut b,
        )
        .unwrap();
        assert_eq!(
            dotted(&b),
            "ff.ff.00.18.00.00.23.20.00.1b.00.00.00.00.04.06.00.30.00.00.00.00.00.00.ff.ff.00.10.00.00.23.20.00.0e.ff.f8.25.00.00.00"
        );
        b.clear();
        encode_of15(
            &[OfAction::SetField {
                field: MfField::Reg(10),
                value: 1,
                mask: 1,
            }],
            &mut b,
        )
        .unwrap();
        assert_eq!(
            dotted(&b),
            "00.19.00.10.00.01.15.08.00.00.00.01.00.00.00.01"
        );
    }

    #[test]
    fn display() {
        let z = Subfield {
            field: MfField::Reg(11),
            ofs: 0,
            n_bits: 16,
        };
        let ct = OfAction::Ct {
            commit: true,
            table: Some(16),
            zone: z,
            nat: Some(Nat::Typed {
                src: false,
                addr: Some("10.0.0.12".parse().unwrap()),
                ports: Some((443, 443)),
            }),
            exec: vec![OfAction::SetField {
                field: MfField::CtMark,
                value: 2,
                mask: 2,
            }],
        };
        assert_eq!(ct.to_string(), "ct(commit,table=16,zone=NXM_NX_REG11[0..15],nat(dst=10.0.0.12:443),exec(set_field:0x2/0x2->ct_mark))");
        let sf = OfAction::SetField {
            field: MfField::Xxreg(0),
            value: 0,
            mask: 1 << 97,
        };
        assert_eq!(
            sf.to_string(),
            "set_field:0/0x2000000000000000000000000->xxreg0"
        );
        assert_eq!(
            OfAction::SetField {
                field: MfField::EthDst,
                value: 0,
                mask: 0xffff_ffff_ffff
            }
            .to_string(),
            "set_field:00:00:00:00:00:00->eth_dst"
        );
    }
}
