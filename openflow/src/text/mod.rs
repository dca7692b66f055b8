//! ovs-ofctl text form: `Display` and `FromStr` for flows, matches, actions and groups,
//! in the exact syntax of `ovs-ofctl -O OpenFlow15 dump-flows --no-stats` / `dump-groups`.

mod actfmt;
mod actparse;
mod flow;
mod group;
mod matchfmt;
mod meter;
pub mod value;

use thiserror::Error;

pub use actfmt::format_actions;
pub use actparse::{parse_action, parse_actions, parse_instructions};
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
    /// A number too large for its field: refused, never truncated.
    #[error("{what}={value}: out of range for a {bits}-bit field")]
    OutOfRange {
        what: &'static str,
        value: String,
        bits: u32,
    },
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

impl std::fmt::Display for crate::oxm::Match {
    /// The match as `match_format()` prints it (no priority).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&format_match(self, None))
    }
}

impl std::str::FromStr for crate::oxm::Match {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, ParseError> {
        parse_match(s)
    }
}

impl std::str::FromStr for crate::action::Action {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, ParseError> {
        actparse::parse_action(s)
    }
}

/// An action list in text form (`drop` when empty).
#[derive(Clone, Debug, Default, Eq, PartialEq, Hash)]
pub struct Actions(pub Vec<crate::action::Action>);

impl std::fmt::Display for Actions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&format_actions(&self.0))
    }
}

impl std::str::FromStr for Actions {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, ParseError> {
        parse_actions(s).map(Actions)
    }
}

#[cfg(test)]
mod trait_tests {
    use super::Actions;
    use crate::action::Action;
    use crate::oxm::Match;

    #[test]
    fn match_and_actions_round_trip_as_text() {
        let m: Match = "tcp,reg0=0x1/0x1,metadata=0x5,nw_dst=10.0.0.0/8,tp_dst=80"
            .parse()
            .unwrap();
        // Printed in OVS order (registers and metadata after the protocol shorthand).
        assert_eq!(
            m.to_string(),
            "tcp,reg0=0x1/0x1,metadata=0x5,nw_dst=10.0.0.0/8,tp_dst=80"
        );
        let a: Actions = "ct_clear,resubmit(,8)".parse().unwrap();
        assert_eq!(a.to_string(), "ct_clear,resubmit(,8)");
        assert_eq!("drop".parse::<Actions>().unwrap().to_string(), "drop");
        let one: Action = "group:3".parse().unwrap();
        assert_eq!(one, Action::Group(3));
        assert!("frob".parse::<Action>().is_err());
        assert!(
            "tp_dst=80".parse::<Match>().is_err(),
            "tp_dst needs a protocol"
        );
        // Bit offsets beyond 128 bits are refused, not a shift overflow.
        assert!("load:0x1->NXM_NX_TUN_METADATA0[500]"
            .parse::<Action>()
            .is_err());
        assert!("load:0x1->NXM_NX_TUN_METADATA0[100..127]"
            .parse::<Action>()
            .is_ok());
    }
}
