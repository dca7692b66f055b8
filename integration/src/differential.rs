//! Flow-for-flow comparison of `ovn-agent compile` with what the real ovn-controller installed
//! for the same Southbound content. Logical flows are compared by cookie (the first 32 bits of
//! the `Logical_Flow` UUID, which both controllers use); the lookup tables that the compiler
//! also produces (66-78: MAC bindings, LB hairpin, FDB, port security, ...) are compared as
//! whole tables.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::flows::{by_cookie, NormalizedFlow, TableRole};

/// A known ovn-controller 23.03.1 bug that ovn-agent deliberately does not reproduce: `fix`
/// turns an oracle flow into what a correct controller installs (None: not affected).
#[derive(Debug, Clone, Copy)]
pub struct IntendedDifference {
    pub name: &'static str,
    pub reason: &'static str,
    pub fix: fn(&str) -> Option<String>,
}

/// The intended differences (agent/LFLOW.md lists them with the evidence).
pub const INTENDED: &[IntendedDifference] = &[IntendedDifference {
    name: "port-security-nd-ttl",
    reason: "23.03.1 matches nw_ttl=225 in the ND port-security flows of table 74; ND packets \
             carry hop limit 255 (RFC 4861), so ovn-agent matches nw_ttl=255",
    fix: |flow| {
        (flow.contains("table=74,") && flow.contains(",nw_ttl=225,"))
            .then(|| flow.replacen(",nw_ttl=225,", ",nw_ttl=255,", 1))
    },
}];

/// How a comparison came out.
#[derive(Debug, Default)]
pub struct Comparison {
    /// Logical flows whose OpenFlow flows are identical (including lflows that give no flow
    /// on either side).
    pub identical: usize,
    /// Logical flows whose flows differ: (cookie, flows only in the oracle, flows only in ours).
    pub different: Vec<(u64, Vec<String>, Vec<String>)>,
    /// Lookup-table flows (tables 66 and up) only in the oracle / only in ours.
    pub lookup_missing: Vec<String>,
    pub lookup_extra: Vec<String>,
    /// How many oracle flows each intended difference changed before comparing.
    pub intended: BTreeMap<&'static str, usize>,
}

impl Comparison {
    pub fn total(&self) -> usize {
        self.identical + self.different.len()
    }

    pub fn percent_identical(&self) -> f64 {
        if self.total() == 0 {
            return 100.0;
        }
        self.identical as f64 * 100.0 / self.total() as f64
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}/{} logical flows identical ({:.1}%); lookup tables: {} missing, {} extra",
            self.identical,
            self.total(),
            self.percent_identical(),
            self.lookup_missing.len(),
            self.lookup_extra.len()
        )?;
        for (name, count) in &self.intended {
            writeln!(f, "  intended difference {name}: {count} flows")?;
        }
        for (cookie, theirs, ours) in &self.different {
            writeln!(f, "  cookie {cookie:#x}:")?;
            for l in theirs {
                writeln!(f, "    ovn-controller: {l}")?;
            }
            for l in ours {
                writeln!(f, "    ovn-agent:      {l}")?;
            }
        }
        for l in &self.lookup_missing {
            writeln!(f, "  only ovn-controller: {l}")?;
        }
        for l in &self.lookup_extra {
            writeln!(f, "  only ovn-agent:      {l}")?;
        }
        Ok(())
    }
}

/// Whether a normalized flow lives in a lookup table (66 and up) rather than a pipeline stage.
fn in_lookup_table(flow: &NormalizedFlow) -> bool {
    flow.text
        .strip_prefix("table=")
        .and_then(|t| t.split(',').next())
        .and_then(|t| t.parse::<u8>().ok())
        .is_some_and(|t| matches!(crate::flows::TableLayout::Ovn2303.role(t), TableRole::Fixed(n) if n >= 66))
}

/// Compares the flows of every logical flow in `lflow_cookies`, and the lookup tables, after
/// applying the [`INTENDED`] differences to the oracle. Both sides must be normalized under
/// their own layouts.
pub fn compare(
    oracle: &[NormalizedFlow],
    ours: &[NormalizedFlow],
    lflow_cookies: &BTreeSet<u64>,
) -> Comparison {
    let mut intended = BTreeMap::new();
    let oracle: Vec<NormalizedFlow> = oracle
        .iter()
        .map(|flow| {
            let mut flow = flow.clone();
            for difference in INTENDED {
                if let Some(fixed) = (difference.fix)(&flow.text) {
                    *intended.entry(difference.name).or_insert(0) += 1;
                    flow.text = fixed;
                }
            }
            flow
        })
        .collect();
    let (oracle_lookup, oracle_pipeline): (Vec<_>, Vec<_>) =
        oracle.into_iter().partition(in_lookup_table);
    let (ours_lookup, ours_pipeline): (Vec<_>, Vec<_>) =
        ours.iter().cloned().partition(in_lookup_table);
    let theirs = by_cookie(&oracle_pipeline);
    let mine = by_cookie(&ours_pipeline);
    let empty = Vec::new();
    let mut result = Comparison {
        intended,
        ..Comparison::default()
    };
    for cookie in lflow_cookies {
        let a = theirs.get(cookie).unwrap_or(&empty);
        let b = mine.get(cookie).unwrap_or(&empty);
        if a == b {
            result.identical += 1;
        } else {
            let only_a = a.iter().filter(|l| !b.contains(l)).cloned().collect();
            let only_b = b.iter().filter(|l| !a.contains(l)).cloned().collect();
            result.different.push((*cookie, only_a, only_b));
        }
    }
    let set = |flows: &[NormalizedFlow]| -> BTreeSet<String> {
        flows
            .iter()
            .map(|f| format!("cookie={:#x}, {}", f.cookie, f.text))
            .collect()
    };
    let (a, b) = (set(&oracle_lookup), set(&ours_lookup));
    result.lookup_missing = a.difference(&b).cloned().collect();
    result.lookup_extra = b.difference(&a).cloned().collect();
    result
}

/// Cookies of the logical flows listed by `ovn-sbctl --bare --columns=_uuid list Logical_Flow`.
pub fn lflow_cookies(uuid_list: &str) -> BTreeSet<u64> {
    uuid_list
        .split_whitespace()
        .filter_map(|uuid| u64::from_str_radix(uuid.get(..8)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flows::{normalize_dump, TableLayout};

    #[test]
    fn compares_by_cookie_and_lookup_tables_as_sets() {
        let oracle = normalize_dump(
            " cookie=0xaa, table=8, priority=50 actions=resubmit(,9)\n cookie=0xbb, table=9, priority=10,ip actions=drop\n cookie=0x1, table=66, priority=100,reg0=0x1 actions=set_field:00:00:00:00:00:01->eth_dst\n",
            TableLayout::Ovn2303,
        );
        let ours = normalize_dump(
            " cookie=0xaa, table=1, priority=50 actions=resubmit(,2)\n cookie=0xbb, table=2, priority=10,ipv6 actions=drop\n cookie=0x2, table=66, priority=100,reg0=0x2 actions=drop\n",
            TableLayout::Classic,
        );
        let cookies = lflow_cookies("000000aa-0000-0000-0000-000000000000\n000000bb-1111-2222-3333-444444444444\n000000cc-0000-0000-0000-000000000000\n");
        let c = compare(&oracle, &ours, &cookies);
        // 0xaa identical once tables are roles; 0xcc has no flow on either side.
        assert_eq!(c.identical, 2);
        assert_eq!(c.different.len(), 1);
        assert_eq!(c.different[0].0, 0xbb);
        assert_eq!(c.lookup_missing.len(), 1);
        assert_eq!(c.lookup_extra.len(), 1);
        assert!(c
            .to_string()
            .starts_with("2/3 logical flows identical (66.7%)"));
    }

    #[test]
    fn intended_differences_are_applied_and_counted() {
        let line = " cookie=0x5, table=74, priority=90,icmp6,reg14=0x1,metadata=0x1,nw_ttl=225,icmp_type=135,icmp_code=0 actions=drop\n";
        let oracle = normalize_dump(line, TableLayout::Ovn2303);
        let ours = normalize_dump(
            &line.replace("nw_ttl=225", "nw_ttl=255"),
            TableLayout::Ovn2303,
        );
        let c = compare(&oracle, &ours, &BTreeSet::new());
        assert!(
            c.lookup_missing.is_empty() && c.lookup_extra.is_empty(),
            "{c}"
        );
        assert_eq!(c.intended["port-security-nd-ttl"], 1);
        // Without the fix the two would differ.
        assert_ne!(oracle, ours);
    }
}
