//! ovs-ofctl text form: `Display` and `FromStr` for flows, matches, actions and groups,
//! in the exact syntax of `ovs-ofctl -O OpenFlow15 dump-flows --no-stats` / `dump-groups`.

mod actfmt;
mod actparse;
mod flow;
mod group;
mod matchfmt;
pub mod value;

use thiserror::Error;

pub use actfmt::format_actions;
pub use actparse::{parse_actions, parse_instructions};
pub use flow::Flow;
pub use matchfmt::{format_match, parse_match};

/// Why a piece of ovs-ofctl text could not be parsed.
#[derive(Clone, Debug, Eq, PartialEq, Error)]
#[non_exhaustive]
pub enum ParseError {
    #[error("unknown field `{0}`")]
    UnknownField(String),
    #[error("unknown action `{0}`")]
    UnknownAction(String),
    #[error("bad value `{0}`")]
    BadValue(String),
    #[error("syntax error: {0}")]
    Syntax(String),
}

/// Split at top-level commas (not inside parentheses or brackets).
pub fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < s.len() || !s.is_empty() {
        out.push(&s[start..]);
    }
    out
}

/// `name(args)` -> `Some(args)`.
fn call<'a>(t: &'a str, name: &str) -> Option<&'a str> {
    t.strip_prefix(name)?.strip_prefix('(')?.strip_suffix(')')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_respects_nesting() {
        assert_eq!(
            split_top("a,b(c,d),e[1..2],f"),
            vec!["a", "b(c,d)", "e[1..2]", "f"]
        );
        assert!(split_top("").is_empty());
    }
}
