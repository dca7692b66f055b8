//! Tokenizer shared by match expressions and action lists (OVN 23.03 lexical rules).

use std::net::{Ipv4Addr, Ipv6Addr};

use super::error::{LflowError, Result};

/// How an integer constant was written; decides its minimum width and how it prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntFormat {
    Decimal,
    Hex,
    Ipv4,
    Ipv6,
    Ethernet,
}

/// One lexical token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Token {
    Id(String),
    Str(String),
    Int {
        value: u128,
        format: IntFormat,
    },
    Masked {
        value: u128,
        mask: u128,
        format: IntFormat,
    },
    Macro(String),
    PortGroup(String),
    Template(String),
    LParen,
    RParen,
    LCurly,
    RCurly,
    LSquare,
    RSquare,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Not,
    LogAnd,
    LogOr,
    Ellipsis,
    Comma,
    Semicolon,
    Equals,
    Exchange,
    Decrement,
    Colon,
    Minus,
    End,
}

/// A token and the byte offset where it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spanned {
    pub token: Token,
    pub pos: usize,
}

/// Minimum number of bits needed to hold a constant written in `format`.
pub fn min_width(value: u128, format: IntFormat) -> u32 {
    match format {
        IntFormat::Ipv4 => 32,
        IntFormat::Ipv6 => 128,
        IntFormat::Ethernet => 48,
        IntFormat::Decimal | IntFormat::Hex => 128 - value.leading_zeros(),
    }
}

/// Splits `input` into tokens; the last one is always `End`.
pub fn tokenize(input: &str) -> Result<Vec<Spanned>> {
    let b = input.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        let err = |msg: &str| LflowError::Lex {
            pos: start,
            msg: msg.to_string(),
        };
        if matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
            i += 1;
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            loop {
                match b.get(i) {
                    None | Some(b'\n') => return Err(err("`/*' without matching `*/'")),
                    Some(b'*') if b.get(i + 1) == Some(&b'/') => {
                        i += 2;
                        break;
                    }
                    Some(_) => i += 1,
                }
            }
            continue;
        }
        let two = |x: u8| b.get(i + 1) == Some(&x);
        let (tok, len) = match c {
            b'(' => (Token::LParen, 1),
            b')' => (Token::RParen, 1),
            b'{' => (Token::LCurly, 1),
            b'}' => (Token::RCurly, 1),
            b'[' => (Token::LSquare, 1),
            b']' => (Token::RSquare, 1),
            b',' => (Token::Comma, 1),
            b';' => (Token::Semicolon, 1),
            b'=' if two(b'=') => (Token::Eq, 2),
            b'=' => (Token::Equals, 1),
            b'!' if two(b'=') => (Token::Ne, 2),
            b'!' => (Token::Not, 1),
            b'<' if two(b'=') => (Token::Le, 2),
            b'<' if two(b'-') && b.get(i + 2) == Some(&b'>') => (Token::Exchange, 3),
            b'<' => (Token::Lt, 1),
            b'>' if two(b'=') => (Token::Ge, 2),
            b'>' => (Token::Gt, 1),
            b'&' if two(b'&') => (Token::LogAnd, 2),
            b'|' if two(b'|') => (Token::LogOr, 2),
            b'.' if two(b'.') => (Token::Ellipsis, 2),
            b'-' if two(b'-') => (Token::Decrement, 2),
            b'-' => (Token::Minus, 1),
            b':' if !two(b':') => (Token::Colon, 1),
            b'&' | b'|' => return Err(err("`&' and `|' must be doubled")),
            b'.' => return Err(err("Unexpected `.'")),
            b'/' => return Err(err("Unexpected `/'")),
            b'"' => {
                let (s, end) = lex_string(input, i)?;
                out.push(Spanned {
                    token: Token::Str(s),
                    pos: start,
                });
                i = end;
                continue;
            }
            b'$' | b'@' | b'^' => {
                let end = id_end(b, i + 1);
                if end == i + 1 {
                    return Err(err("`$', `@' or `^' must be followed by a name"));
                }
                let name = input[i + 1..end].to_string();
                let tok = match c {
                    b'$' => Token::Macro(name),
                    b'@' => Token::PortGroup(name),
                    _ => Token::Template(name),
                };
                out.push(Spanned {
                    token: tok,
                    pos: start,
                });
                i = end;
                continue;
            }
            _ if starts_integer(b, i) => {
                let (tok, end) = lex_number(input, i)?;
                out.push(Spanned {
                    token: tok,
                    pos: start,
                });
                i = end;
                continue;
            }
            _ if c.is_ascii_alphabetic() || c == b'_' => {
                let end = id_end(b, i);
                out.push(Spanned {
                    token: Token::Id(input[i..end].to_string()),
                    pos: start,
                });
                i = end;
                continue;
            }
            _ => return Err(err("Invalid character")),
        };
        out.push(Spanned {
            token: tok,
            pos: start,
        });
        i += len;
    }
    out.push(Spanned {
        token: Token::End,
        pos: b.len(),
    });
    Ok(out)
}

fn id_end(b: &[u8], mut i: usize) -> usize {
    if i < b.len() && (b[i].is_ascii_alphabetic() || b[i] == b'_') {
        i += 1;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
            i += 1;
        }
    }
    i
}

fn starts_integer(b: &[u8], i: usize) -> bool {
    let c = b[i];
    if c.is_ascii_digit() || (c == b':' && b.get(i + 1) == Some(&b':')) {
        return true;
    }
    // "fe80::1" or "aa:bb:..": a hex run followed by a colon is a number.
    let mut j = i;
    while j < b.len() && b[j].is_ascii_hexdigit() {
        j += 1;
    }
    j > i && b.get(j) == Some(&b':')
}

fn number_end(b: &[u8], mut i: usize) -> usize {
    let mut saw_dot = false;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_alphanumeric() || (c == b':' && !saw_dot) {
            i += 1;
        } else if c == b'.' && b.get(i + 1) != Some(&b'.') {
            saw_dot = true;
            i += 1;
        } else {
            break;
        }
    }
    i
}

fn lex_number(input: &str, start: usize) -> Result<(Token, usize)> {
    let b = input.as_bytes();
    let end = number_end(b, start);
    let (value, format) = parse_integer(&input[start..end], start)?;
    if b.get(end) == Some(&b'/') && b.get(end + 1).is_some_and(|&c| c != b'/' && c != b'*') {
        let mstart = end + 1;
        if !starts_integer(b, mstart) {
            return Err(LflowError::Lex {
                pos: mstart,
                msg: "Invalid mask".into(),
            });
        }
        let mend = number_end(b, mstart);
        let (mask, mformat) = parse_integer(&input[mstart..mend], mstart)?;
        let (value, mask, format) =
            combine_mask(value, format, mask, mformat).ok_or_else(|| LflowError::Lex {
                pos: mstart,
                msg: "Value and mask have incompatible formats".into(),
            })?;
        return Ok((
            Token::Masked {
                value: value & mask,
                mask,
                format,
            },
            mend,
        ));
    }
    Ok((Token::Int { value, format }, end))
}

fn combine_mask(
    value: u128,
    vf: IntFormat,
    mask: u128,
    mf: IntFormat,
) -> Option<(u128, u128, IntFormat)> {
    use IntFormat::*;
    match (vf, mf) {
        (a, b) if a == b => Some((value, mask, vf)),
        (Ipv4, Decimal) if mask <= 32 => Some((value, prefix_mask(mask as u32, 32), Ipv4)),
        (Ipv6, Decimal) if mask <= 128 => Some((value, prefix_mask(mask as u32, 128), Ipv6)),
        (Decimal, Hex) if value == 0 => Some((0, mask, Hex)),
        _ => None,
    }
}

/// A mask with the `plen` most significant bits of a `width`-bit field set.
pub fn prefix_mask(plen: u32, width: u32) -> u128 {
    if plen == 0 {
        0
    } else {
        let ones = if plen >= 128 {
            u128::MAX
        } else {
            (1u128 << plen) - 1
        };
        ones << (width - plen.min(width))
    }
}

fn parse_integer(s: &str, pos: usize) -> Result<(u128, IntFormat)> {
    let err = |msg: &str| LflowError::Lex {
        pos,
        msg: msg.to_string(),
    };
    let b = s.as_bytes();
    if s.len() == 17
        && b.iter().enumerate().all(|(k, c)| {
            if k % 3 == 2 {
                *c == b':'
            } else {
                c.is_ascii_hexdigit()
            }
        })
    {
        let mut v = 0u128;
        for part in s.split(':') {
            v = (v << 8)
                | u128::from(u8::from_str_radix(part, 16).map_err(|_| err("Invalid MAC"))?);
        }
        return Ok((v, IntFormat::Ethernet));
    }
    if b.iter().all(u8::is_ascii_digit) {
        if s.len() > 1 && b[0] == b'0' {
            return Err(err("Decimal constants must not have leading zeros."));
        }
        let v: u64 = s
            .parse()
            .map_err(|_| err("Decimal constant is too large."))?;
        return Ok((u128::from(v), IntFormat::Decimal));
    }
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        let h = h.trim_start_matches('0');
        if !h.bytes().all(|c| c.is_ascii_hexdigit()) || s.len() == 2 {
            return Err(err("Invalid syntax in hexadecimal constant."));
        }
        if h.len() > 32 {
            return Err(err("Hexadecimal constant is wider than 128 bits."));
        }
        let v = if h.is_empty() {
            0
        } else {
            u128::from_str_radix(h, 16).map_err(|_| err("Invalid hex"))?
        };
        return Ok((v, IntFormat::Hex));
    }
    if s.len() < 46 {
        if let Ok(a) = s.parse::<Ipv4Addr>() {
            return Ok((u128::from(u32::from(a)), IntFormat::Ipv4));
        }
        if let Ok(a) = s.parse::<Ipv6Addr>() {
            return Ok((u128::from(a), IntFormat::Ipv6));
        }
    }
    Err(err("Invalid numeric constant."))
}

fn lex_string(input: &str, start: usize) -> Result<(String, usize)> {
    let mut out = String::new();
    let mut chars = input[start + 1..].char_indices();
    while let Some((k, c)) = chars.next() {
        match c {
            '"' => return Ok((out, start + 1 + k + 1)),
            '\\' => {
                let Some((_, e)) = chars.next() else { break };
                match e {
                    '"' | '\\' | '/' => out.push(e),
                    'b' => out.push('\u{8}'),
                    'f' => out.push('\u{c}'),
                    'n' => out.push('\n'),
                    'r' => out.push('\r'),
                    't' => out.push('\t'),
                    'u' => {
                        let hex: String =
                            (0..4).filter_map(|_| chars.next().map(|x| x.1)).collect();
                        let code = u32::from_str_radix(&hex, 16)
                            .ok()
                            .and_then(char::from_u32)
                            .ok_or(LflowError::Lex {
                                pos: start,
                                msg: "Invalid \\u escape".into(),
                            })?;
                        out.push(code);
                    }
                    _ => {
                        return Err(LflowError::Lex {
                            pos: start,
                            msg: "Invalid escape in string".into(),
                        })
                    }
                }
            }
            _ => out.push(c),
        }
    }
    Err(LflowError::Lex {
        pos: start,
        msg: "Input ends inside quoted string".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Token> {
        tokenize(s).unwrap().into_iter().map(|t| t.token).collect()
    }

    #[test]
    fn table() {
        let cases: &[(&str, &[Token])] = &[
            (
                "1.2.3.4:80",
                &[
                    Token::Int {
                        value: 0x01020304,
                        format: IntFormat::Ipv4,
                    },
                    Token::Colon,
                    Token::Int {
                        value: 80,
                        format: IntFormat::Decimal,
                    },
                    Token::End,
                ],
            ),
            (
                "80..90",
                &[
                    Token::Int {
                        value: 80,
                        format: IntFormat::Decimal,
                    },
                    Token::Ellipsis,
                    Token::Int {
                        value: 90,
                        format: IntFormat::Decimal,
                    },
                    Token::End,
                ],
            ),
            (
                "10.0.0.0/8",
                &[
                    Token::Masked {
                        value: 0x0a000000,
                        mask: 0xff000000,
                        format: IntFormat::Ipv4,
                    },
                    Token::End,
                ],
            ),
            (
                "0/0x10",
                &[
                    Token::Masked {
                        value: 0,
                        mask: 0x10,
                        format: IntFormat::Hex,
                    },
                    Token::End,
                ],
            ),
            (
                "fe80::/10",
                &[
                    Token::Masked {
                        value: 0xfe80 << 112,
                        mask: 0xffc0 << 112,
                        format: IntFormat::Ipv6,
                    },
                    Token::End,
                ],
            ),
            (
                "aa:bb:cc:dd:ee:ff",
                &[
                    Token::Int {
                        value: 0xaabbccddeeff,
                        format: IntFormat::Ethernet,
                    },
                    Token::End,
                ],
            ),
            (
                "ip4.src_mcast ||x",
                &[
                    Token::Id("ip4.src_mcast".into()),
                    Token::LogOr,
                    Token::Id("x".into()),
                    Token::End,
                ],
            ),
            (
                "$as_web @pg",
                &[
                    Token::Macro("as_web".into()),
                    Token::PortGroup("pg".into()),
                    Token::End,
                ],
            ),
            (
                "ip.ttl--; a <-> b",
                &[
                    Token::Id("ip.ttl".into()),
                    Token::Decrement,
                    Token::Semicolon,
                    Token::Id("a".into()),
                    Token::Exchange,
                    Token::Id("b".into()),
                    Token::End,
                ],
            ),
            (
                "\"a\\\"b\" /* c */ // d",
                &[Token::Str("a\"b".into()), Token::End],
            ),
            (
                "::ffff:1.2.3.4",
                &[
                    Token::Int {
                        value: 0xffff_0102_0304,
                        format: IntFormat::Ipv6,
                    },
                    Token::End,
                ],
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(&toks(input), expected, "input {input}");
        }
    }

    #[test]
    fn errors() {
        for bad in [
            "a & b",
            "a | b",
            "01",
            "\"abc",
            "1.2.3.4/0x5",
            "/* x\n */",
            "0xg",
            "99999999999999999999",
            "a . b",
        ] {
            assert!(tokenize(bad).is_err(), "{bad} should fail");
        }
    }
}
