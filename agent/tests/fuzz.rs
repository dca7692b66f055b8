//! Fuzz-style tests: random and mutated inputs to the lexer, parsers and encoder must give
//! an error or a bounded result, never a panic.

use agent::lflow::actions::{parse_actions, ParseOptions, Pipeline};
use agent::lflow::encode::{EncodeEnv, EncodeParams, Encoder};
use agent::lflow::expr::ExprContext;
use agent::lflow::layout::TableLayout;
use agent::lflow::lexer::tokenize;
use agent::lflow::normalize::PortResolver;
use agent::lflow::{compile_match, LflowError};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

struct Ctx(Vec<String>, Vec<String>);

impl ExprContext for Ctx {
    fn address_set(&self, _: &str) -> Option<&[String]> {
        Some(&self.0)
    }
    fn port_group(&self, _: &str) -> Option<&[String]> {
        Some(&self.1)
    }
}

impl PortResolver for Ctx {
    fn port_key(&self, name: &str) -> Option<u32> {
        name.bytes().next().map(u32::from)
    }
}

impl EncodeEnv for Ctx {
    fn port_key(&self, name: &str) -> Option<u32> {
        name.bytes().next().map(u32::from)
    }
    fn group_id(&self, _: &openflow::wire::Group) -> Option<u32> {
        Some(1)
    }
    fn meter_id(&self, _: &str, _: &openflow::wire::MeterMod) -> Option<u32> {
        Some(1)
    }
    fn named_meter(&self, _: &str) -> Option<u32> {
        None
    }
}

const PIECES: &[&str] = &[
    "ip4",
    "ip6",
    "ip",
    "tcp",
    "udp",
    "tcp.dst",
    "ip4.src",
    "ip6.dst",
    "reg0",
    "reg9[1]",
    "xxreg0",
    "reg0[3..5]",
    "ct.est",
    "ct_mark",
    "inport",
    "outport",
    "eth.src",
    "vlan.pcp",
    "nd_ns",
    "arp.op",
    "flags.loopback",
    "pkt.mark",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "&&",
    "||",
    "!",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    ",",
    ";",
    "=",
    "<->",
    "--",
    "..",
    ":",
    "-",
    "1",
    "0",
    "65535",
    "0x10",
    "0xffffffffffffffffffffffffffffffff",
    "10.0.0.1",
    "10.0.0.0/8",
    "fe80::/10",
    "aa:bb:cc:dd:ee:ff",
    "1.2.3.4/255.0.255.0",
    "\"p1\"",
    "\"",
    "$as",
    "@pg",
    "^T",
    "next",
    "output",
    "drop",
    "ct_commit",
    "ct_lb_mark",
    "backends=",
    "put_dhcp_opts",
    "select",
    "is_chassis_resident",
    "clone",
    "arp",
    "icmp4.frag_mtu",
    "/*",
    "*/",
    "//",
    " ",
    " ",
    "\n",
    "é",
    "\\u0041",
];

fn random_text(rng: &mut StdRng) -> String {
    let n = rng.gen_range(0..20);
    let mut s = String::new();
    for _ in 0..n {
        if rng.gen_bool(0.1) {
            s.push(char::from(rng.gen_range(0x20u8..0x7f)));
        } else {
            s.push_str(PIECES[rng.gen_range(0..PIECES.len())]);
            s.push(' ');
        }
    }
    s
}

fn exercise(text: &str, ctx: &Ctx) {
    let _ = tokenize(text);
    let resident = |p: &str| p.len().is_multiple_of(2);
    match compile_match(text, ctx, &resident, ctx, 500) {
        Ok(m) => assert!(m.len() <= 500, "{text}: {} flows", m.len()),
        Err(LflowError::TooManyFlows { limit }) => assert_eq!(limit, 500),
        Err(_) => {}
    }
    for pipeline in [Pipeline::Ingress, Pipeline::Egress] {
        if let Ok(p) = parse_actions(
            text,
            ParseOptions {
                pipeline,
                table: 27,
                n_tables: 29,
            },
        ) {
            let params = EncodeParams {
                pipeline,
                table: 27,
                layout: TableLayout::OVN_23_03,
                is_switch: true,
                common_zone_is_snat: false,
                controller_meter: Some(1),
                lflow_uuid: "00000000-0000-0000-0000-000000000000".parse().unwrap(),
                dp_key: 1,
            };
            let _ = Encoder {
                env: ctx,
                p: &params,
            }
            .encode(&p.actions);
        }
    }
}

/// Iterations and seed offset; `FUZZ_ITERS` / `FUZZ_SEED` give longer or other runs.
fn knobs() -> (usize, u64) {
    let get = |k: &str| std::env::var(k).ok().and_then(|v| v.parse().ok());
    (
        get("FUZZ_ITERS").map_or(20_000, |n: u64| n as usize),
        get("FUZZ_SEED").unwrap_or(0),
    )
}

#[test]
fn random_token_soup_never_panics() {
    let ctx = Ctx(
        vec!["10.0.0.1".into(), "bad entry".into(), "10.0.0.0/8".into()],
        vec!["p1".into(), "p2".into()],
    );
    let (iters, seed) = knobs();
    let mut rng = StdRng::seed_from_u64(0x5eed ^ seed);
    for _ in 0..iters {
        exercise(&random_text(&mut rng), &ctx);
    }
}

#[test]
fn mutated_reference_lflows_never_panic() {
    let ctx = Ctx(vec!["10.0.0.1".into()], vec!["p1".into()]);
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/lflows_final.json"
    ))
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut corpus = Vec::new();
    for r in v["data"].as_array().unwrap() {
        corpus.push(r[6].as_str().unwrap().to_string());
        corpus.push(r[7].as_str().unwrap().to_string());
    }
    let (iters, seed) = knobs();
    let mut rng = StdRng::seed_from_u64(7 ^ seed);
    for _ in 0..iters {
        let mut s: Vec<char> = corpus[rng.gen_range(0..corpus.len())].chars().collect();
        for _ in 0..rng.gen_range(1..4) {
            if s.is_empty() {
                break;
            }
            let i = rng.gen_range(0..s.len());
            match rng.gen_range(0..3) {
                0 => {
                    s.remove(i);
                }
                1 => s.insert(i, char::from(rng.gen_range(0x20u8..0x7f))),
                _ => {
                    let j = rng.gen_range(0..s.len());
                    s.swap(i, j);
                }
            }
        }
        exercise(&s.into_iter().collect::<String>(), &ctx);
    }
}

#[test]
fn deep_nesting_is_an_error() {
    let ctx = Ctx(vec![], vec![]);
    let deep = format!("{}ip4{}", "(".repeat(500), ")".repeat(500));
    assert!(compile_match(&deep, &ctx, &|_| true, &ctx, 100).is_err());
    let nested = format!("{}next;{}", "clone { ".repeat(100), " };".repeat(100));
    assert!(parse_actions(
        &nested,
        ParseOptions {
            pipeline: Pipeline::Ingress,
            table: 0,
            n_tables: 29
        }
    )
    .is_err());
}
