//! Every match and every action string that northd 23.03.1 wrote in the reference sandbox
//! (tests/data/lflows_final.json, 761 SB rows) must parse.

use agent::lflow::actions::{parse_actions, ParseOptions, Pipeline};
use agent::lflow::expr::{parse_expr, ExprContext};
use agent::lflow::template::expand_templates;

/// Any set name resolves to one plausible member, so only syntax and typing are tested.
struct AnySets(Vec<String>, Vec<String>);

impl ExprContext for AnySets {
    fn address_set(&self, name: &str) -> Option<&[String]> {
        Some(if name.ends_with("ip6") || name.contains("v6") {
            &self.1
        } else {
            &self.0
        })
    }
    fn port_group(&self, _: &str) -> Option<&[String]> {
        Some(&[])
    }
}

fn rows() -> Vec<serde_json::Map<String, serde_json::Value>> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/lflows_final.json"
    ))
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let heads: Vec<String> = v["headings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap().to_string())
        .collect();
    v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            heads
                .iter()
                .cloned()
                .zip(r.as_array().unwrap().iter().cloned())
                .collect()
        })
        .collect()
}

#[test]
fn every_reference_lflow_parses() {
    let sets = AnySets(vec!["10.0.0.1".into()], vec!["aef0::1".into()]);
    let rows = rows();
    // The sandbox's Chassis_Template_Var for hv1 (topo-fixups.sh).
    let vars: std::collections::HashMap<String, String> = [
        ("VIP", "10.0.0.200"),
        ("VPORT", "8888"),
        ("BACKENDS", "10.0.0.11:80,10.0.0.12:80"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let mut failures = Vec::new();
    let (mut matches, mut actions) = (0, 0);
    for r in &rows {
        let uuid = r["_uuid"][1].as_str().unwrap().to_string();
        let m = &expand_templates(r["match"].as_str().unwrap(), &vars);
        let a = &expand_templates(r["actions"].as_str().unwrap(), &vars);
        let pipeline = if r["pipeline"] == "ingress" {
            Pipeline::Ingress
        } else {
            Pipeline::Egress
        };
        let table = r["table_id"].as_u64().unwrap() as u32;
        match parse_expr(m, &sets) {
            Ok(_) => matches += 1,
            Err(e) => failures.push((uuid.clone(), format!("match {m:?}: {e}"))),
        }
        match parse_actions(
            a,
            ParseOptions {
                pipeline,
                table,
                n_tables: 29,
            },
        ) {
            Ok(_) => actions += 1,
            Err(e) => failures.push((uuid.clone(), format!("actions {a:?}: {e}"))),
        }
    }
    println!(
        "parsed {matches}/{} matches and {actions}/{} action lists",
        rows.len(),
        rows.len()
    );
    assert_eq!(rows.len(), 761);
    // Every rejected row was also rejected by the real ovn-controller 23.03.1: no flow carries
    // its cookie in of_final.txt. They are `flags.force_snat_for_lb = 1; drop;` ("drop" must be
    // the only action) and put_dhcp_opts/put_dhcpv6_opts with unquoted domain names.
    let of = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/of_final.txt"
    ))
    .unwrap();
    for (uuid, f) in &failures {
        assert!(
            !of.contains(&format!("cookie=0x{}, ", uuid[..8].trim_start_matches('0'))),
            "real controller compiled {uuid}: {f}"
        );
    }
    assert_eq!(failures.len(), 6, "{failures:#?}");
    assert_eq!((matches, actions), (761, 755));
}
