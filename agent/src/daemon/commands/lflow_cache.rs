//! `lflow-cache/show-stats`. The agent keeps every logical flow's compiled flows and
//! recompiles only what changed, which is what ovn-controller's cache does; the figures
//! count the logical flows with flows here by the entry ovn-controller 23.03.1 would keep
//! for each: the OpenFlow matches (`cache-matches`) of a flow that names no address set,
//! port group, template variable or port; the expression (`cache-expr`) of one that names
//! ports (`inport == "p"`, `is_chassis_resident("p")`, `outport = "p";`, its
//! `in_out_port` tag); none for the rest.

use std::fmt::Write as _;

use sbclient::ovn_sb::LogicalFlow;

use crate::lflow::lexer::{tokenize, Token};

/// The cache entry ovn-controller keeps for one compiled logical flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheEntry {
    Matches,
    Expr,
    Uncached,
}

/// The entry for `lf`, from what its match and actions name.
pub fn entry_for(lf: &LogicalFlow) -> CacheEntry {
    let (Ok(m), Ok(a)) = (tokenize(&lf.match_), tokenize(&lf.actions)) else {
        return CacheEntry::Uncached;
    };
    let m: Vec<&Token> = m.iter().map(|s| &s.token).collect();
    let a: Vec<&Token> = a.iter().map(|s| &s.token).collect();
    let refers = m.iter().any(|t| {
        matches!(
            t,
            Token::Macro(_) | Token::PortGroup(_) | Token::Template(_)
        )
    }) || a.iter().any(|t| matches!(t, Token::Template(_)));
    if refers {
        return CacheEntry::Uncached;
    }
    // The only strings of a match are port names.
    let port = |t: &Token| matches!(t, Token::Str(s) if s != "none");
    let names_port = m.iter().any(|t| port(t))
        || lf.tags.contains_key("in_out_port")
        || action_ports(&a).any(port);
    if names_port {
        CacheEntry::Expr
    } else {
        CacheEntry::Matches
    }
}

/// The strings of `actions` that are port names: assigned to `inport`/`outport`, the
/// port of `bind_vport`, the `childports` of `fwd_group`.
fn action_ports<'a>(a: &'a [&'a Token]) -> impl Iterator<Item = &'a Token> + 'a {
    let mut in_childports = false;
    a.iter().enumerate().filter_map(move |(i, t)| {
        let back = |n: usize| i.checked_sub(n).and_then(|j| a.get(j)).copied();
        let id = |n: usize, name: &str| matches!(back(n), Some(Token::Id(s)) if s == name);
        if id(2, "childports") && matches!(back(1), Some(Token::Equals)) {
            in_childports = true;
        }
        if matches!(t, Token::RParen) {
            in_childports = false;
        }
        let assigned =
            matches!(back(1), Some(Token::Equals)) && (id(2, "inport") || id(2, "outport"));
        let vport = matches!(back(1), Some(Token::LParen)) && id(2, "bind_vport");
        (matches!(t, Token::Str(_)) && (assigned || vport || in_childports)).then_some(*t)
    })
}

/// The reply, for the logical flows `compiled` (those with flows here).
pub fn show_stats<'a>(compiled: impl Iterator<Item = &'a LogicalFlow>) -> String {
    let (mut matches, mut exprs) = (0, 0);
    for lf in compiled {
        match entry_for(lf) {
            CacheEntry::Matches => matches += 1,
            CacheEntry::Expr => exprs += 1,
            CacheEntry::Uncached => {}
        }
    }
    let mut out = String::from("Enabled: true\n");
    for (key, value) in [
        ("high-watermark", matches + exprs),
        ("total", matches + exprs),
        ("cache-expr", exprs),
        ("cache-matches", matches),
        ("trim count", 0),
    ] {
        let _ = writeln!(out, "{key:<16}: {value}");
    }
    let _ = writeln!(out, "{:<16}: {}", "Mem usage (KB)", 0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lf(m: &str, a: &str, in_out_port: Option<&str>) -> LogicalFlow {
        let mut lf = LogicalFlow {
            match_: m.into(),
            actions: a.into(),
            ..LogicalFlow::default()
        };
        if let Some(p) = in_out_port {
            lf.tags.insert("in_out_port".into(), p.into());
        }
        lf
    }

    #[test]
    fn entries_follow_what_the_flow_names() {
        use CacheEntry::{Expr, Matches, Uncached};
        for (m, a, tag, want) in [
            ("1", "drop;", None, Matches),
            ("ip4 && udp.dst == 53", "reg0 = 1; next;", None, Matches),
            ("is_chassis_resident(\"lsp1\")", "drop;", None, Expr),
            ("inport == \"lsp1\"", "next;", None, Expr),
            ("1", "outport = \"lsp2\"; output;", None, Expr),
            ("1", "next;", Some("lsp1"), Expr),
            (
                "1",
                "log(name=\"acl1\", severity=info); next;",
                None,
                Matches,
            ),
            (
                "1",
                "fwd_group(liveness=\"true\", childports=\"p1\", \"p2\");",
                None,
                Expr,
            ),
            (
                "inport == @pg1 && is_chassis_resident(\"lsp1\")",
                "drop;",
                None,
                Uncached,
            ),
            ("ip4.src == $as1", "drop;", None, Uncached),
            ("1", "outport = ^port;", None, Uncached),
            ("ip4 &&", "drop;", None, Matches),
        ] {
            assert_eq!(entry_for(&lf(m, a, tag)), want, "{m} / {a}");
        }
    }

    #[test]
    fn show_stats_counts_by_entry() {
        let flows = [
            lf("1", "drop;", None),
            lf("inport == \"a\"", "next;", None),
            lf("ip4.src == $as1", "drop;", None),
        ];
        let text = show_stats(flows.iter());
        assert!(text.contains("total           : 2\n"), "{text}");
        assert!(
            text.contains("cache-expr      : 1\ncache-matches   : 1\n"),
            "{text}"
        );
    }
}
