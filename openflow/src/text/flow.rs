//! A flow as `dump-flows --no-stats` prints it, and as `add-flow` accepts it.

use std::fmt::Write as _;

use std::fmt;
use std::str::FromStr;

use super::actfmt::put_actions;
use super::actparse::parse_instructions;
use super::matchfmt::{format_match, parse_match_item};
use super::value::{parse_uint, put_hex};
use super::ParseError;
use crate::oxm::Match;
use crate::wire::flow_mod::OFPFC_ADD;
use crate::wire::{FlowDesc, FlowMod, Instruction};

/// One flow entry: what `ovs-ofctl dump-flows` shows, minus statistics.
#[derive(Clone, Debug, Eq, PartialEq, Hash)]
pub struct Flow {
    pub cookie: u64,
    pub table_id: u8,
    pub priority: u16,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub importance: u16,
    pub r#match: Match,
    pub instructions: Vec<Instruction>,
}

impl Default for Flow {
    fn default() -> Self {
        Self {
            cookie: 0,
            table_id: 0,
            priority: 0x8000,
            idle_timeout: 0,
            hard_timeout: 0,
            importance: 0,
            r#match: Match::default(),
            instructions: Vec::new(),
        }
    }
}

/// Instructions as the `actions=` text: apply-actions inline, then the others.
pub fn format_instructions(list: &[Instruction]) -> String {
    let mut s = String::new();
    let mut first = true;
    let mut sep = |s: &mut String| {
        if !first {
            s.push(',');
        }
        first = false;
    };
    for i in list {
        match i {
            Instruction::ApplyActions(a) if a.is_empty() => {}
            Instruction::ApplyActions(a) => {
                sep(&mut s);
                put_actions(&mut s, a);
            }
            Instruction::ClearActions => {
                sep(&mut s);
                s.push_str("clear_actions");
            }
            Instruction::WriteActions(a) => {
                sep(&mut s);
                s.push_str("write_actions(");
                put_actions(&mut s, a);
                s.push(')');
            }
            Instruction::WriteMetadata { value, mask } => {
                sep(&mut s);
                let _ = write!(s, "write_metadata:{value:#x}");
                if *mask != u64::MAX {
                    let _ = write!(s, "/{mask:#x}");
                }
            }
            Instruction::GotoTable(t) => {
                sep(&mut s);
                let _ = write!(s, "goto_table:{t}");
            }
            Instruction::Unknown { ty, body } => {
                sep(&mut s);
                let _ = write!(s, "unknown_instruction(type={ty},body=");
                put_hex(&mut s, body);
                s.push(')');
            }
        }
    }
    if s.is_empty() {
        s.push_str("drop");
    }
    s
}

impl Flow {
    /// Exactly as `ovs-ofctl dump-flows --no-stats` prints it: like `Display`, but
    /// `cookie=` and `table=` are each left out when zero.
    pub fn to_no_stats_string(&self) -> String {
        NoStats(self).to_string()
    }

    fn write_line(&self, f: &mut fmt::Formatter<'_>, zeros: bool) -> fmt::Result {
        if zeros || self.cookie != 0 {
            write!(f, "cookie={:#x}, ", self.cookie)?;
        }
        if zeros || self.table_id != 0 {
            write!(f, "table={}, ", self.table_id)?;
        }
        if self.idle_timeout != 0 {
            write!(f, "idle_timeout={}, ", self.idle_timeout)?;
        }
        if self.hard_timeout != 0 {
            write!(f, "hard_timeout={}, ", self.hard_timeout)?;
        }
        if self.importance != 0 {
            write!(f, "importance={}, ", self.importance)?;
        }
        let m = format_match(&self.r#match, Some(self.priority));
        if !m.is_empty() {
            write!(f, "{m} ")?;
        }
        write!(f, "actions={}", format_instructions(&self.instructions))
    }
}

struct NoStats<'a>(&'a Flow);

impl fmt::Display for NoStats<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.write_line(f, false)
    }
}

/// The line format of the reference dumps: `dump-flows` with the counters removed
/// (`cookie=` and `table=` always present).
impl fmt::Display for Flow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_line(f, true)
    }
}

/// Position of the top-level `actions=` keyword.
fn find_actions(s: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in s.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            'a' if depth == 0 && s[i..].starts_with("actions=") => {
                let before = s[..i].chars().last();
                if matches!(before, None | Some(' ' | ',')) {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

impl FromStr for Flow {
    type Err = ParseError;

    /// Accepts dump-flows lines (with or without statistics) and add-flow lines.
    fn from_str(s: &str) -> Result<Self, ParseError> {
        let s = s.trim();
        let at = find_actions(s).ok_or_else(|| ParseError::Syntax("missing actions=".into()))?;
        let (head, acts) = (&s[..at], &s[at + "actions=".len()..]);
        let mut flow = Flow::default();
        for item in head.split(',') {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            let (k, v) = item.split_once('=').unwrap_or((item, ""));
            match k {
                "cookie" => {
                    flow.cookie = parse_uint("cookie", v.split('/').next().unwrap_or(v))?;
                }
                "table" => flow.table_id = parse_uint("table", v)?,
                "priority" => flow.priority = parse_uint("priority", v)?,
                "idle_timeout" => flow.idle_timeout = parse_uint("idle_timeout", v)?,
                "hard_timeout" => flow.hard_timeout = parse_uint("hard_timeout", v)?,
                "importance" => flow.importance = parse_uint("importance", v)?,
                "duration" | "n_packets" | "n_bytes" | "idle_age" | "hard_age" => {}
                _ => parse_match_item(&mut flow.r#match, item)?,
            }
        }
        flow.instructions = parse_instructions(acts)?;
        Ok(flow)
    }
}

impl Flow {
    /// An OF1.5 flow_mod with this flow and `command` (`OFPFC_*`).
    pub fn to_flow_mod(&self, command: u8) -> FlowMod {
        FlowMod {
            cookie: self.cookie,
            table_id: self.table_id,
            command,
            idle_timeout: self.idle_timeout,
            hard_timeout: self.hard_timeout,
            priority: self.priority,
            importance: self.importance,
            r#match: self.r#match.clone(),
            instructions: self.instructions.clone(),
            ..FlowMod::default()
        }
    }

    pub fn add(&self) -> FlowMod {
        self.to_flow_mod(OFPFC_ADD)
    }

    /// Like [`Flow::to_flow_mod`], moving the match and instructions instead of cloning.
    pub fn into_flow_mod(self, command: u8) -> FlowMod {
        FlowMod {
            cookie: self.cookie,
            table_id: self.table_id,
            command,
            idle_timeout: self.idle_timeout,
            hard_timeout: self.hard_timeout,
            priority: self.priority,
            importance: self.importance,
            r#match: self.r#match,
            instructions: self.instructions,
            ..FlowMod::default()
        }
    }

    pub fn from_flow_mod(fm: &FlowMod) -> Self {
        Self {
            cookie: fm.cookie,
            table_id: fm.table_id,
            priority: fm.priority,
            idle_timeout: fm.idle_timeout,
            hard_timeout: fm.hard_timeout,
            importance: fm.importance,
            r#match: fm.r#match.clone(),
            instructions: fm.instructions.clone(),
        }
    }

    pub fn from_flow_desc(fd: &FlowDesc) -> Self {
        Self {
            cookie: fd.cookie,
            table_id: fd.table_id,
            priority: fd.priority,
            idle_timeout: fd.idle_timeout,
            hard_timeout: fd.hard_timeout,
            importance: fd.importance,
            r#match: fd.r#match.clone(),
            instructions: fd.instructions.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Flow;

    #[test]
    fn no_stats_leaves_out_zero_cookie_and_table() {
        let f: Flow = "cookie=0x0, table=0, priority=0 actions=drop"
            .parse()
            .unwrap();
        assert_eq!(f.to_no_stats_string(), "priority=0 actions=drop");
        let f: Flow = "cookie=0x5, table=0, priority=9,ip actions=drop"
            .parse()
            .unwrap();
        assert_eq!(
            f.to_no_stats_string(),
            "cookie=0x5, priority=9,ip actions=drop"
        );
        let f: Flow = "table=3, actions=drop".parse().unwrap();
        assert_eq!(f.to_no_stats_string(), "table=3, actions=drop");
        assert_eq!(f.to_string(), "cookie=0x0, table=3, actions=drop");
        assert_eq!(f.add(), f.clone().into_flow_mod(0));
    }
}
