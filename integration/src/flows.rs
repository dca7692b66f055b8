//! OpenFlow tables as `ovs-ofctl dump-flows --no-stats` prints them, normalized so that two
//! controllers can be compared: table numbers are replaced by their role (`ingress.3`,
//! `remote_output`, ...) under the table layout each controller uses, and flows are grouped by
//! cookie, which both controllers derive from the logical flow's UUID.

use std::collections::BTreeMap;
use std::fmt;

/// Where the OVN pipeline stages sit in the OpenFlow table space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableLayout {
    /// ovn-agent's default: ingress 1+N, outputs 32-36, egress 37+N.
    Classic,
    /// ovn-controller 23.03.1: ingress 8+N, outputs 37-41, egress 42+N.
    Ovn2303,
    /// ovn-controller 25.03: ingress 8+N, outputs 40-44, egress 45+N.
    Ovn2503,
    /// ovn-controller 26.03: ingress 8+N, outputs 42-47 (45: remote VTEP output), egress
    /// 48+N.
    Ovn2603,
}

/// What a table does, independent of its number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TableRole {
    PhysicalToLogical,
    Ingress(u8),
    OutputLargePacketDetect,
    OutputLargePacketProcess,
    RemoteOutput,
    RemoteVtepOutput,
    LocalOutput,
    CheckLoopback,
    Egress(u8),
    /// Tables 64 and up have the same numbers in every layout.
    Fixed(u8),
    /// A number no role maps to in this layout.
    Unassigned(u8),
}

impl fmt::Display for TableRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PhysicalToLogical => f.write_str("phy_to_log"),
            Self::Ingress(n) => write!(f, "ingress.{n}"),
            Self::OutputLargePacketDetect => f.write_str("output_large_pkt_detect"),
            Self::OutputLargePacketProcess => f.write_str("output_large_pkt_process"),
            Self::RemoteOutput => f.write_str("remote_output"),
            Self::RemoteVtepOutput => f.write_str("remote_vtep_output"),
            Self::LocalOutput => f.write_str("local_output"),
            Self::CheckLoopback => f.write_str("check_loopback"),
            Self::Egress(n) => write!(f, "egress.{n}"),
            Self::Fixed(n) => write!(f, "{n}"),
            Self::Unassigned(n) => write!(f, "unassigned.{n}"),
        }
    }
}

impl TableLayout {
    /// The layout of ovn-agent's `--table-layout NAME` (the OVN-numbered ones).
    pub fn of_agent_layout(name: &str) -> Option<Self> {
        match name {
            "classic" => Some(Self::Classic),
            "ovn-23.03" => Some(Self::Ovn2303),
            "ovn-25.03" => Some(Self::Ovn2503),
            "ovn-26.03" => Some(Self::Ovn2603),
            _ => None,
        }
    }

    pub fn role(self, table: u8) -> TableRole {
        let (ingress, detect, process, remote, local, loopback, egress) = match self {
            Self::Classic => (1, 35, 36, 32, 33, 34, 37),
            Self::Ovn2303 => (8, 37, 38, 39, 40, 41, 42),
            Self::Ovn2503 => (8, 40, 41, 42, 43, 44, 45),
            Self::Ovn2603 => (8, 42, 43, 44, 46, 47, 48),
        };
        if self == Self::Ovn2603 && table == 45 {
            return TableRole::RemoteVtepOutput;
        }
        match table {
            0 => TableRole::PhysicalToLogical,
            64.. => TableRole::Fixed(table),
            t if t == detect => TableRole::OutputLargePacketDetect,
            t if t == process => TableRole::OutputLargePacketProcess,
            t if t == remote => TableRole::RemoteOutput,
            t if t == local => TableRole::LocalOutput,
            t if t == loopback => TableRole::CheckLoopback,
            t if t >= egress => TableRole::Egress(t - egress),
            t if t >= ingress && t < remote.min(detect) => TableRole::Ingress(t - ingress),
            t => TableRole::Unassigned(t),
        }
    }
}

/// One flow of a dump: its cookie and its text with table numbers replaced by roles.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct NormalizedFlow {
    pub cookie: u64,
    pub text: String,
}

/// Parses the flow lines of `ovs-ofctl dump-flows --no-stats` output (other lines, such as a
/// reply header, are skipped) and normalizes them under `layout`.
pub fn normalize_dump(dump: &str, layout: TableLayout) -> Vec<NormalizedFlow> {
    let mut flows: Vec<NormalizedFlow> = dump
        .lines()
        .map(str::trim)
        .filter(|l| l.contains("actions="))
        .map(|line| NormalizedFlow {
            cookie: cookie_of(line),
            text: normalize_line(line, layout),
        })
        .collect();
    flows.sort();
    flows
}

/// Flows grouped by cookie, each group sorted.
pub fn by_cookie(flows: &[NormalizedFlow]) -> BTreeMap<u64, Vec<String>> {
    let mut map: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for f in flows {
        map.entry(f.cookie).or_default().push(f.text.clone());
    }
    map
}

fn cookie_of(line: &str) -> u64 {
    line.strip_prefix("cookie=0x")
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_hexdigit()).next())
        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
        .unwrap_or(0)
}

/// Rewrites every table reference in a flow line: the flow's own `table=N` (absent means 0),
/// `resubmit(PORT,N[,ct])`, and `table=N` inside `ct(...)` and `learn(...)`. The cookie is
/// dropped from the text (it is the grouping key).
pub fn normalize_line(line: &str, layout: TableLayout) -> String {
    let body = line
        .strip_prefix("cookie=")
        .and_then(|rest| rest.split_once(", ").map(|(_, after)| after))
        .unwrap_or(line);
    let body = if body.starts_with("table=") {
        body.to_owned()
    } else {
        format!("table=0, {body}")
    };
    let mut out = String::with_capacity(body.len() + 16);
    let mut rest = body.as_str();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("table=") {
            out.push_str("table=");
            rest = push_table(&mut out, after, layout);
        } else if let Some(after) = rest.strip_prefix("resubmit(") {
            out.push_str("resubmit(");
            // `resubmit(PORT)` has no table; `resubmit(PORT,TABLE...)` has one after the comma.
            let end = after.find([',', ')']).unwrap_or(after.len());
            if after[end..].starts_with(',') {
                out.push_str(&after[..=end]);
                rest = push_table(&mut out, &after[end + 1..], layout);
            } else {
                rest = after;
            }
        } else {
            let ch = rest.chars().next().unwrap_or(' ');
            out.push(ch);
            rest = &rest[ch.len_utf8()..];
        }
    }
    out
}

/// Copies the table number at the start of `text` as its role and returns the rest.
fn push_table<'a>(out: &mut String, text: &'a str, layout: TableLayout) -> &'a str {
    let digits = text.chars().take_while(char::is_ascii_digit).count();
    match text[..digits].parse::<u8>() {
        Ok(table) => out.push_str(&layout.role(table).to_string()),
        Err(_) => out.push_str(&text[..digits]),
    }
    &text[digits..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_agree_between_layouts() {
        let pairs = [
            (8, 1),
            (36, 29),
            (37, 35),
            (38, 36),
            (39, 32),
            (40, 33),
            (41, 34),
            (42, 37),
            (51, 46),
            (65, 65),
        ];
        for (ovn, classic) in pairs {
            assert_eq!(
                TableLayout::Ovn2303.role(ovn),
                TableLayout::Classic.role(classic),
                "{ovn} vs {classic}"
            );
        }
        assert_eq!(TableLayout::Ovn2303.role(3), TableRole::Unassigned(3));
    }

    #[test]
    fn normalizes_every_table_reference() {
        let ovn = "cookie=0x8aa15f7f, table=10, priority=100,metadata=0x1 actions=ct(commit,zone=NXM_NX_REG13[0..15],table=19),resubmit(,11),resubmit(,37),learn(table=69,priority=100),resubmit(5),resubmit(5,65)";
        let classic = "cookie=0x8aa15f7f, table=3, priority=100,metadata=0x1 actions=ct(commit,zone=NXM_NX_REG13[0..15],table=12),resubmit(,4),resubmit(,35),learn(table=69,priority=100),resubmit(5),resubmit(5,65)";
        let a = normalize_line(ovn, TableLayout::Ovn2303);
        assert_eq!(a, normalize_line(classic, TableLayout::Classic));
        assert_eq!(a, "table=ingress.2, priority=100,metadata=0x1 actions=ct(commit,zone=NXM_NX_REG13[0..15],table=ingress.11),resubmit(,ingress.3),resubmit(,output_large_pkt_detect),learn(table=69,priority=100),resubmit(5),resubmit(5,65)");
    }

    #[test]
    fn table_zero_is_explicit_and_cookies_group() {
        let dump = "OFPST_FLOW reply (OF1.5):\n cookie=0x2, priority=100,in_port=1 actions=resubmit(,8)\n cookie=0x2, table=65, priority=0 actions=drop\n cookie=0x0, table=40, priority=0 actions=drop\n";
        let flows = normalize_dump(dump, TableLayout::Ovn2303);
        let groups = by_cookie(&flows);
        assert_eq!(
            groups[&0],
            vec!["table=local_output, priority=0 actions=drop"]
        );
        assert_eq!(
            groups[&2],
            vec![
                "table=65, priority=0 actions=drop",
                "table=phy_to_log, priority=100,in_port=1 actions=resubmit(,ingress.0)"
            ]
        );
    }
}
