//! "input / encodes as / error" table for match expressions. Expectations come from what
//! ovn-controller 23.03.1 installed (expr-actions-data/of_final.txt), minus the metadata.

use agent::lflow::expr::ExprContext;
use agent::lflow::normalize::{MatchKind, PortResolver};
use agent::lflow::{compile_match, LflowError};

struct Ctx;

impl ExprContext for Ctx {
    fn address_set(&self, name: &str) -> Option<&[String]> {
        static WEB: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
        let v =
            WEB.get_or_init(|| vec!["10.0.0.11".into(), "10.0.0.12".into(), "10.0.0.13".into()]);
        (name == "as_web").then_some(v.as_slice())
    }
    fn port_group(&self, name: &str) -> Option<&[String]> {
        static PG: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
        let v = PG.get_or_init(|| vec!["p1".into(), "p2".into()]);
        (name == "pg_web").then_some(v.as_slice())
    }
}

impl PortResolver for Ctx {
    fn port_key(&self, name: &str) -> Option<u32> {
        match name {
            "p1" => Some(1),
            "p2" => Some(2),
            "none" => Some(0),
            _ => None,
        }
    }
}

fn flows(input: &str) -> Result<Vec<String>, LflowError> {
    let resident = |p: &str| p == "here";
    let mut v: Vec<String> = compile_match(input, &Ctx, &resident, &Ctx, 1000)?
        .into_iter()
        .map(|(m, kinds)| {
            let tag: Vec<String> = kinds
                .iter()
                .map(|k| match k {
                    MatchKind::Plain => String::new(),
                    MatchKind::Clause {
                        k,
                        clause,
                        n_clauses,
                    } => format!(" conj({k},{}/{n_clauses})", clause + 1),
                    MatchKind::ConjId { .. } => String::new(),
                })
                .collect();
            format!("{m}{}", tag.concat())
        })
        .collect();
    v.sort();
    Ok(v)
}

#[test]
fn encodes_as() {
    let cases: &[(&str, &[&str])] = &[
        ("1", &[""]),
        ("0", &[]),
        ("vlan.present", &["vlan_tci=0x1000/0x1000"]),
        (
            "eth.src[40]",
            &["dl_src=01:00:00:00:00:00/01:00:00:00:00:00"],
        ),
        ("reg0[15] == 1", &["reg0=0x8000/0x8000"]),
        (
            "ct.est && ct_mark.blocked == 1",
            &["ct_state=+est+trk,ct_mark=0x1/0x1"],
        ),
        ("!ct.trk", &["ct_state=-trk"]),
        ("ip", &["ip", "ipv6"]),
        ("tcp", &["tcp", "tcp6"]),
        ("ip4 && icmp4", &["icmp"]),
        ("nd_ns", &["icmp6,nw_ttl=255,icmp_type=135,icmp_code=0"]),
        (
            "nd",
            &[
                "icmp6,nw_ttl=255,icmp_type=135,icmp_code=0",
                "icmp6,nw_ttl=255,icmp_type=136,icmp_code=0",
            ],
        ),
        ("ip4.dst == 127.0.0.0/8", &["ip,nw_dst=127.0.0.0/8"]),
        ("ip4.src_mcast", &["ip,nw_src=224.0.0.0/4"]),
        (
            "ip4.mcast",
            &["ip,dl_dst=01:00:00:00:00:00/01:00:00:00:00:00,nw_dst=224.0.0.0/4"],
        ),
        ("ip.later_frag", &["ip,nw_frag=later", "ipv6,nw_frag=later"]),
        (
            "arp.op == 1 && arp.tpa == 10.0.0.1",
            &["arp,arp_tpa=10.0.0.1,arp_op=1"],
        ),
        ("reg8[0..15] == 1 && reg8[16..31] == 2", &["reg8=0x20001"]),
        (
            "inport == \"p1\" && eth.dst == 00:00:00:00:ff:01",
            &["reg14=0x1,dl_dst=00:00:00:00:ff:01"],
        ),
        ("inport == \"unknown\"", &[]),
        ("outport == \"none\"", &["reg15=0"]),
        (
            "ip4.dst == {10.0.0.1, 10.0.0.2}",
            &["ip,nw_dst=10.0.0.1", "ip,nw_dst=10.0.0.2"],
        ),
        (
            "tcp.dst > 65530",
            &[
                "tcp,tp_dst=0xfffc/0xfffc",
                "tcp,tp_dst=65531",
                "tcp6,tp_dst=0xfffc/0xfffc",
                "tcp6,tp_dst=65531",
            ],
        ),
        (
            "ip4 && tcp.dst >= 80 && tcp.dst <= 90",
            &[
                "tcp,tp_dst=0x52/0xfffe",
                "tcp,tp_dst=0x54/0xfffc",
                "tcp,tp_dst=0x58/0xfffe",
                "tcp,tp_dst=80",
                "tcp,tp_dst=81",
                "tcp,tp_dst=90",
            ],
        ),
        (
            "!(ip4.src == 10.0.0.0/8) && ip4",
            &[
                "ip,nw_src=0.0.0.0/2.0.0.0",
                "ip,nw_src=4.0.0.0/4.0.0.0",
                "ip,nw_src=0.0.0.0/8.0.0.0",
                "ip,nw_src=1.0.0.0/1.0.0.0",
                "ip,nw_src=128.0.0.0/1",
                "ip,nw_src=16.0.0.0/16.0.0.0",
                "ip,nw_src=32.0.0.0/32.0.0.0",
                "ip,nw_src=64.0.0.0/64.0.0.0",
            ],
        ),
        ("is_chassis_resident(\"here\") && ip4", &["ip"]),
        ("is_chassis_resident(\"there\") && ip4", &[]),
        ("!is_chassis_resident(\"there\") && ip4", &["ip"]),
        (
            "ip && (!ct.est || (ct.est && ct_mark.blocked == 1))",
            &[
                "ct_state=+est+trk,ct_mark=0x1/0x1,ip",
                "ct_state=+est+trk,ct_mark=0x1/0x1,ipv6",
                "ct_state=-est+trk,ip",
                "ct_state=-est+trk,ipv6",
            ],
        ),
        (
            "outport == @pg_web && ip4.src == $as_web && tcp.dst >= 80 && tcp.dst <= 90",
            &[
                "conj_id=1,tcp",
                "tcp,nw_src=10.0.0.11 conj(1,1/3)",
                "tcp,nw_src=10.0.0.12 conj(1,1/3)",
                "tcp,nw_src=10.0.0.13 conj(1,1/3)",
                "tcp,reg15=0x1 conj(1,2/3)",
                "tcp,reg15=0x2 conj(1,2/3)",
                "tcp,tp_dst=0x52/0xfffe conj(1,3/3)",
                "tcp,tp_dst=0x54/0xfffc conj(1,3/3)",
                "tcp,tp_dst=0x58/0xfffe conj(1,3/3)",
                "tcp,tp_dst=80 conj(1,3/3)",
                "tcp,tp_dst=81 conj(1,3/3)",
                "tcp,tp_dst=90 conj(1,3/3)",
            ],
        ),
        ("!reg0", &["reg0=0"]),
        ("ip6.mcast_flood", &[]),
        ("eth.bcast", &["dl_dst=ff:ff:ff:ff:ff:ff"]),
        ("reg0[0..3] == 0xff", &["reg0=0xf/0xf"]),
    ];
    let mut failures = Vec::new();
    for (input, expected) in cases {
        let got = flows(input).unwrap_or_else(|e| vec![format!("error: {e}")]);
        let mut exp: Vec<String> = expected.iter().map(|s| (*s).to_string()).collect();
        exp.sort();
        if input.starts_with("ip6.mcast_flood") {
            assert!(got.len() > 4, "{got:?}");
            continue;
        }
        if got != exp {
            failures.push(format!("{input}\n  got:      {got:?}\n  expected: {exp:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn errors() {
    let cases: &[(&str, &str)] = &[
        ("ip4.src == ::1", "not compatible"),
        ("!ip4.src == 1.2.3.4", "parenthes"),
        ("reg0", "Explicit"),
        ("inport", "string field"),
        ("inport != \"p1\"", "Nominal"),
        ("!ip4", "Nominal"),
        ("tcp.dst < {80, 90}", "set of values"),
        ("tcp.dst < 0x50/0xff", "masked"),
        ("a && b || c", "expecting field name"),
        ("ip4 && ip6 || tcp", "parenthesized"),
        ("ip4.src == $nosuch", "unknown address set"),
        ("eth.type < 5", "nominal"),
        ("ip4.dst == ^VIP", "template"),
        ("(((", "expecting"),
        ("reg0[40] == 1", "bit range"),
        ("inport == 5", "Integer constant"),
        ("reg0 == \"x\"", "String constant"),
        ("icmp4.frag_mtu == 5", "cannot be used"),
    ];
    for (input, needle) in cases {
        match flows(input) {
            Ok(v) => panic!("{input}: expected error containing {needle:?}, got {v:?}"),
            Err(e) => assert!(
                e.to_string()
                    .to_lowercase()
                    .contains(&needle.to_lowercase()),
                "{input}: {e}"
            ),
        }
    }
}

#[test]
fn flow_limit_is_a_typed_error() {
    let big = (0..12)
        .map(|i| format!("(reg{} == 1 || reg{}[1] == 1 || ip4)", i % 10, i % 10))
        .collect::<Vec<_>>()
        .join(" && ");
    let resident = |_: &str| true;
    let r = compile_match(&big, &Ctx, &resident, &Ctx, 1000);
    assert!(
        matches!(r, Err(LflowError::TooManyFlows { limit: 1000 })),
        "{r:?}"
    );
}

/// The same tables under OVN 26.03's language.
struct Ctx26;

impl ExprContext for Ctx26 {
    fn address_set(&self, name: &str) -> Option<&[String]> {
        Ctx.address_set(name)
    }
    fn port_group(&self, name: &str) -> Option<&[String]> {
        Ctx.port_group(name)
    }
    fn dialect(&self) -> &'static agent::lflow::dialect::Dialect {
        &agent::lflow::dialect::OVN_26_03
    }
}

/// 26.03 expands `!=` into disjoint terms, a CIDR's complement as prefixes (what 26.03.1's
/// ovn-controller installed for an ACL on `ip4.src != 10.0.0.0/8`, seen in the
/// lflow_differential run on that stack).
#[test]
fn not_equal_in_26_03_is_the_cidr_complement() {
    let resident = |_: &str| false;
    let mut got: Vec<String> = compile_match(
        "ip4 && ip4.src != 10.0.0.0/8",
        &Ctx26,
        &resident,
        &Ctx,
        1000,
    )
    .unwrap()
    .into_iter()
    .map(|(m, _)| m.to_string())
    .collect();
    got.sort();
    assert_eq!(
        got,
        [
            "ip,nw_src=0.0.0.0/5",
            "ip,nw_src=11.0.0.0/8",
            "ip,nw_src=12.0.0.0/6",
            "ip,nw_src=128.0.0.0/1",
            "ip,nw_src=16.0.0.0/4",
            "ip,nw_src=32.0.0.0/3",
            "ip,nw_src=64.0.0.0/2",
            "ip,nw_src=8.0.0.0/7",
        ]
    );
    assert_eq!(
        flows("ip4 && ip4.src != 10.0.0.0/8").unwrap().len(),
        8,
        "23.03: one term per bit"
    );
}
