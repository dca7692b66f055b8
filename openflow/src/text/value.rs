//! Field values in ovs-ofctl text: formatting (`mf_format`, `match_format`) and parsing.

use std::fmt::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};

use super::ParseError;
use crate::oxm::Kind;

/// `ds_put_hex`: `0x` and the bytes without leading zeros; `0` if all zero.
pub fn put_hex(s: &mut String, b: &[u8]) {
    let mut printed = false;
    for &v in b {
        if v != 0 || printed {
            if printed {
                let _ = write!(s, "{v:02x}");
            } else {
                let _ = write!(s, "0x{v:x}");
            }
            printed = true;
        }
    }
    if !printed {
        s.push('0');
    }
}

pub fn to_u128(b: &[u8]) -> u128 {
    b.iter()
        .take(16)
        .fold(0u128, |a, x| (a << 8) | u128::from(*x))
}

pub fn from_u128(v: u128, width: usize) -> Vec<u8> {
    let full = v.to_be_bytes();
    if width >= 16 {
        let mut out = vec![0; width - 16];
        out.extend_from_slice(&full);
        out
    } else {
        full[16 - width..].to_vec()
    }
}

pub fn fmt_eth(s: &mut String, b: &[u8]) {
    for (i, x) in b.iter().enumerate() {
        if i > 0 {
            s.push(':');
        }
        let _ = write!(s, "{x:02x}");
    }
}

fn cidr_bits(mask: &[u8]) -> Option<u32> {
    let bits = (mask.len() * 8) as u32;
    if bits == 0 || bits > 128 {
        return None;
    }
    let shifted = to_u128(mask) << (128 - bits);
    if shifted == 0 {
        return Some(0);
    }
    let ones = shifted.leading_ones();
    (ones + shifted.trailing_zeros() == 128).then_some(ones)
}

fn fmt_ip_masked(s: &mut String, v: &[u8], m: Option<&[u8]>) {
    if v.len() == 4 {
        let _ = write!(s, "{}", Ipv4Addr::new(v[0], v[1], v[2], v[3]));
    } else {
        let mut a = [0u8; 16];
        a.copy_from_slice(&v[..16]);
        fmt_ipv6(s, Ipv6Addr::from(a));
    }
    if let Some(m) = m {
        if m.iter().all(|x| *x == 0xff) {
            return;
        }
        if let Some(n) = cidr_bits(m) {
            let _ = write!(s, "/{n}");
        } else {
            s.push('/');
            fmt_ip_masked(s, m, None);
        }
    }
}

/// IPv6 text as `inet_ntop` writes it: like Rust's, except that an IPv4-compatible address
/// (`::a.b.c.d`, first 96 bits zero, not `::` or `::x` with x < 2^16) keeps the dotted quad.
pub fn fmt_ipv6(s: &mut String, a: Ipv6Addr) {
    let seg = a.segments();
    if seg[..6].iter().all(|w| *w == 0) && seg[6] != 0 {
        let o = a.octets();
        let _ = write!(s, "::{}.{}.{}.{}", o[12], o[13], o[14], o[15]);
    } else {
        let _ = write!(s, "{a}");
    }
}

const CT_STATE: &[&str] = &["new", "est", "rel", "rpl", "inv", "trk", "snat", "dnat"];
const TCP_FLAGS: &[&str] = &["fin", "syn", "rst", "psh", "ack", "urg", "ece", "cwr", "ns"];

fn flag_name(names: &[&str], bit: u32) -> String {
    names
        .get(bit.trailing_zeros() as usize)
        .map_or_else(|| format!("[{bit:x}]"), |n| (*n).to_owned())
}

/// `format_flags_masked`.
fn fmt_flags(s: &mut String, names: &[&str], v: u32, m: u32, max: u32) {
    if m == max {
        if v == 0 {
            s.push('0');
            return;
        }
        let mut first = true;
        let mut rest = v;
        while rest != 0 {
            let bit = rest & rest.wrapping_neg();
            if !first {
                s.push('|');
            }
            s.push_str(&flag_name(names, bit));
            first = false;
            rest &= !bit;
        }
        return;
    }
    if m == 0 {
        s.push_str("0/0");
        return;
    }
    let mut rest = m;
    while rest != 0 {
        let bit = rest & rest.wrapping_neg();
        s.push(if v & bit != 0 { '+' } else { '-' });
        s.push_str(&flag_name(names, bit));
        rest &= !bit;
    }
}

fn fmt_frag(s: &mut String, v: u8, m: u8) {
    let t = match m & 3 {
        3 => match v & 3 {
            0 => "no",
            1 => "first",
            3 => "later",
            _ => "<error>",
        },
        1 => {
            if v & 1 != 0 {
                "yes"
            } else {
                "no"
            }
        }
        2 => {
            if v & 2 != 0 {
                "later"
            } else {
                "not_later"
            }
        }
        _ => "0/0",
    };
    s.push_str(t);
}

/// OpenFlow port names (16-bit space).
pub fn fmt_port(s: &mut String, port: u32) {
    let p = if port >= 0xffff_ff00 {
        port - 0xffff_0000
    } else {
        port
    };
    let name = match p {
        0xfff8 => "IN_PORT",
        0xfff9 => "TABLE",
        0xfffa => "NORMAL",
        0xfffb => "FLOOD",
        0xfffc => "ALL",
        0xfffd => "CONTROLLER",
        0xfffe => "LOCAL",
        0xffff => "ANY",
        _ => {
            let _ = write!(s, "{p}");
            return;
        }
    };
    s.push_str(name);
}

pub fn parse_port(t: &str) -> Result<u32, ParseError> {
    Ok(match t {
        "IN_PORT" | "in_port" => 0xfff8,
        "TABLE" | "table" => 0xfff9,
        "NORMAL" | "normal" => 0xfffa,
        "FLOOD" | "flood" => 0xfffb,
        "ALL" | "all" => 0xfffc,
        "CONTROLLER" | "controller" => 0xfffd,
        "LOCAL" | "local" => 0xfffe,
        "ANY" | "NONE" | "any" | "none" => 0xffff,
        _ => parse_uint::<u32>("port", t)?,
    })
}

/// A port in a 16-bit (OpenFlow 1.0) port field, such as `resubmit`'s.
pub fn parse_port16(t: &str) -> Result<u16, ParseError> {
    u16::try_from(parse_port(t)?).map_err(|_| ParseError::OutOfRange {
        what: "port",
        value: t.to_owned(),
        bits: 16,
    })
}

/// Where a value is printed: `set_field`/learn (`mf_format`) or a match (`match_format`).
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Ctx {
    SetField,
    Match,
}

/// Print a value with optional mask in the style of the context.
pub fn fmt_value(s: &mut String, kind: Kind, ctx: Ctx, v: &[u8], m: Option<&[u8]>) {
    let m = m.filter(|m| !m.iter().all(|x| *x == 0xff) || kind == Kind::CtState);
    match kind {
        Kind::Hex => {
            put_hex(s, v);
            if let Some(m) = m {
                s.push('/');
                put_hex(s, m);
            }
        }
        Kind::Dec => match (ctx, m) {
            (_, None) => {
                let _ = write!(s, "{}", to_u128(v));
            }
            (Ctx::SetField, Some(m)) => {
                let _ = write!(s, "{}/", to_u128(v));
                put_hex(s, m);
            }
            (Ctx::Match, Some(m)) => {
                let _ = write!(s, "0x{:x}/0x{:x}", to_u128(v), to_u128(m));
            }
        },
        Kind::Tci | Kind::Label => {
            let digits = if kind == Kind::Tci { 4 } else { 5 };
            if ctx == Ctx::SetField {
                put_hex(s, v);
            } else {
                let _ = write!(s, "0x{:0digits$x}", to_u128(v));
            }
            if let Some(m) = m {
                if ctx == Ctx::SetField {
                    s.push('/');
                    put_hex(s, m);
                } else {
                    let _ = write!(s, "/0x{:0digits$x}", to_u128(m));
                }
            }
        }
        Kind::Eth => {
            fmt_eth(s, v);
            if let Some(m) = m {
                s.push('/');
                fmt_eth(s, m);
            }
        }
        Kind::Ipv4 | Kind::Ipv6 => {
            if v.len() == 4 || v.len() == 16 {
                fmt_ip_masked(s, v, m);
            } else {
                put_hex(s, v);
            }
        }
        Kind::Port => fmt_port(s, to_u128(v) as u32),
        Kind::CtState => {
            let mv = m.map_or(u32::MAX, |m| to_u128(m) as u32);
            fmt_flags(s, CT_STATE, to_u128(v) as u32, mv, u32::MAX);
        }
        Kind::TcpFlags => {
            let mv = m.map_or(0xfff, |m| to_u128(m) as u32 & 0xfff);
            fmt_flags(s, TCP_FLAGS, to_u128(v) as u32, mv, 0xfff);
        }
        Kind::Frag => {
            let mv = m.map_or(0xff, |m| m.first().copied().unwrap_or(0));
            fmt_frag(s, v.first().copied().unwrap_or(0), mv);
        }
    }
}

/// A number that must fit `bits` bits (`what` names the field in the error).
pub fn parse_bits(what: &'static str, t: &str, bits: u32) -> Result<u128, ParseError> {
    let v = parse_u128(t)?;
    if bits < 128 && v >> bits != 0 {
        return Err(ParseError::OutOfRange {
            what,
            value: t.to_owned(),
            bits,
        });
    }
    Ok(v)
}

/// A number of type `T`; one that does not fit is [`ParseError::OutOfRange`], never
/// truncated.
pub fn parse_uint<T: TryFrom<u128>>(what: &'static str, t: &str) -> Result<T, ParseError> {
    let bits = (std::mem::size_of::<T>() * 8) as u32;
    T::try_from(parse_bits(what, t, bits)?).map_err(|_| ParseError::OutOfRange {
        what,
        value: t.to_owned(),
        bits,
    })
}

pub fn parse_u128(t: &str) -> Result<u128, ParseError> {
    let r = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u128::from_str_radix(h, 16)
    } else {
        t.parse::<u128>()
    };
    r.map_err(|_| ParseError::BadValue(t.to_owned()))
}

/// Parse a (possibly long) hex or decimal integer into `width` big-endian bytes.
pub fn parse_int_bytes(t: &str, width: usize) -> Result<Vec<u8>, ParseError> {
    if let Some(h) = t.strip_prefix("0x") {
        if h.len() > 32 {
            let h = if h.len() % 2 == 1 {
                format!("0{h}")
            } else {
                h.to_owned()
            };
            let b = hex_bytes(&h)?;
            if b.len() > width {
                return Err(ParseError::BadValue(t.to_owned()));
            }
            let mut out = vec![0; width - b.len()];
            out.extend(b);
            return Ok(out);
        }
    }
    let v = parse_u128(t)?;
    if width < 16 && v >> (width * 8) != 0 {
        return Err(ParseError::BadValue(t.to_owned()));
    }
    Ok(from_u128(v, width))
}

pub fn hex_bytes(h: &str) -> Result<Vec<u8>, ParseError> {
    if h.len() & 1 != 0 {
        return Err(ParseError::BadValue(h.to_owned()));
    }
    (0..h.len())
        .step_by(2)
        .map(|i| {
            h.get(i..i + 2)
                .and_then(|x| u8::from_str_radix(x, 16).ok())
                .ok_or_else(|| ParseError::BadValue(h.to_owned()))
        })
        .collect()
}

fn parse_eth(t: &str) -> Result<Vec<u8>, ParseError> {
    let parts: Vec<&str> = t.split(':').collect();
    if parts.len() != 6 {
        return Err(ParseError::BadValue(t.to_owned()));
    }
    parts
        .iter()
        .map(|p| u8::from_str_radix(p, 16).map_err(|_| ParseError::BadValue(t.to_owned())))
        .collect()
}

fn prefix_mask(bits: u32, width: usize) -> Vec<u8> {
    let total = (width * 8) as u32;
    let v: u128 = if bits == 0 {
        0
    } else {
        (u128::MAX << (128 - bits.min(128))) >> (128 - total)
    };
    from_u128(v, width)
}

fn parse_flags(t: &str, names: &[&str], max: u32) -> Result<(u32, Option<u32>), ParseError> {
    let bit = |n: &str| -> Result<u32, ParseError> {
        names
            .iter()
            .position(|x| *x == n)
            .map(|i| 1u32 << i)
            .ok_or_else(|| ParseError::BadValue(n.to_owned()))
    };
    if t.starts_with('+') || t.starts_with('-') {
        let (mut v, mut m) = (0, 0);
        let mut rest = t;
        while !rest.is_empty() {
            let plus = rest.starts_with('+');
            rest = &rest[1..];
            let end = rest.find(['+', '-']).unwrap_or(rest.len());
            let b = bit(&rest[..end])?;
            m |= b;
            if plus {
                v |= b;
            }
            rest = &rest[end..];
        }
        return Ok((v, Some(m)));
    }
    if t.starts_with("0x") || t.chars().all(|c| c.is_ascii_digit()) {
        let (a, b) = t.split_once('/').map_or((t, None), |(a, b)| (a, Some(b)));
        let bits = 32 - max.leading_zeros();
        let m = b
            .map(|b| parse_bits("flags mask", b, bits))
            .transpose()?
            .map(|x| x as u32);
        let v = parse_bits("flags", a, bits)? as u32;
        return Ok((v, m.filter(|m| *m != max)));
    }
    let mut v = 0;
    for n in t.split('|') {
        v |= bit(n)?;
    }
    Ok((v, None))
}

/// Parse `value[/mask]` for a field of `kind` and `width` bytes.
pub fn parse_value(
    kind: Kind,
    width: usize,
    t: &str,
) -> Result<(Vec<u8>, Option<Vec<u8>>), ParseError> {
    match kind {
        Kind::CtState | Kind::TcpFlags => {
            let (names, max) = if kind == Kind::CtState {
                (CT_STATE, u32::MAX)
            } else {
                (TCP_FLAGS, 0xfff)
            };
            let (v, m) = parse_flags(t, names, max)?;
            Ok((
                from_u128(u128::from(v), width),
                m.map(|m| from_u128(u128::from(m), width)),
            ))
        }
        Kind::Frag => {
            let (v, m) = match t {
                "no" => (0, 3),
                "yes" => (1, 1),
                "first" => (1, 3),
                "later" => (3, 3),
                "not_later" => (0, 2),
                _ => return Err(ParseError::BadValue(t.to_owned())),
            };
            Ok((vec![v], Some(vec![m])))
        }
        Kind::Port => Ok((from_u128(u128::from(parse_port(t)?), width), None)),
        _ => {
            let (a, b) = match t.split_once('/') {
                Some((a, b)) => (a, Some(b)),
                None => (t, None),
            };
            let one = |x: &str| -> Result<Vec<u8>, ParseError> {
                match kind {
                    Kind::Eth => parse_eth(x),
                    Kind::Ipv4 if width == 4 => x
                        .parse::<Ipv4Addr>()
                        .map(|a| a.octets().to_vec())
                        .map_err(|_| ParseError::BadValue(x.to_owned())),
                    Kind::Ipv6 if width == 16 => x
                        .parse::<Ipv6Addr>()
                        .map(|a| a.octets().to_vec())
                        .map_err(|_| ParseError::BadValue(x.to_owned())),
                    _ => parse_int_bytes(x, width),
                }
            };
            let v = one(a)?;
            let m = match b {
                None => None,
                Some(b) if matches!(kind, Kind::Ipv4 | Kind::Ipv6) && !b.contains(['.', ':']) => {
                    let n: u32 = b.parse().map_err(|_| ParseError::BadValue(b.to_owned()))?;
                    Some(prefix_mask(n, width))
                }
                Some(b) => Some(one(b)?),
            };
            Ok((v, m.filter(|m| !m.iter().all(|x| *x == 0xff))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_and_cidr() {
        let mut s = String::new();
        put_hex(&mut s, &[0, 0, 1, 0]);
        assert_eq!(s, "0x100");
        let (v, m) = parse_value(Kind::Ipv4, 4, "10.0.0.0/24").unwrap();
        let mut s = String::new();
        fmt_value(&mut s, Kind::Ipv4, Ctx::Match, &v, m.as_deref());
        assert_eq!(s, "10.0.0.0/24");
        let (v, m) = parse_value(Kind::Ipv4, 4, "10.0.0.1/255.0.255.0").unwrap();
        let mut s = String::new();
        fmt_value(&mut s, Kind::Ipv4, Ctx::Match, &v, m.as_deref());
        assert_eq!(s, "10.0.0.1/255.0.255.0");
        let (v, m) = parse_value(Kind::CtState, 4, "-new+est+trk").unwrap();
        let mut s = String::new();
        fmt_value(&mut s, Kind::CtState, Ctx::Match, &v, m.as_deref());
        assert_eq!(s, "-new+est+trk");
    }
}
