//! Any text as a logical-flow match and as an action list, in both pipelines: the lexer,
//! expression compiler, action parser and encoder return errors or a bounded number of
//! flows, never panic.
#![no_main]

use agent::lflow::actions::{parse_actions, ParseOptions, Pipeline};
use agent::lflow::encode::{EncodeEnv, EncodeParams, Encoder};
use agent::lflow::expr::ExprContext;
use agent::lflow::layout::TableLayout;
use agent::lflow::lexer::tokenize;
use agent::lflow::normalize::PortResolver;
use agent::lflow::{compile_match, LflowError};
use libfuzzer_sys::fuzz_target;

const FLOW_LIMIT: usize = 500;

/// Name lookups that always succeed, so that the fuzzer reaches the encoders.
struct Env {
    addresses: Vec<String>,
    ports: Vec<String>,
}

impl ExprContext for Env {
    fn address_set(&self, _: &str) -> Option<&[String]> {
        Some(&self.addresses)
    }
    fn port_group(&self, _: &str) -> Option<&[String]> {
        Some(&self.ports)
    }
}

impl PortResolver for Env {
    fn port_key(&self, name: &str) -> Option<u32> {
        name.bytes().next().map(u32::from)
    }
}

impl EncodeEnv for Env {
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

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let env = Env {
        addresses: vec!["10.0.0.1".into(), "10.0.0.0/8".into(), "aef0::1".into()],
        ports: vec!["p1".into(), "p2".into()],
    };
    let _ = tokenize(text);
    let resident = |p: &str| p.len() % 2 == 0;
    match compile_match(text, &env, &resident, &env, FLOW_LIMIT) {
        Ok(flows) => assert!(flows.len() <= FLOW_LIMIT),
        Err(LflowError::TooManyFlows { limit }) => assert_eq!(limit, FLOW_LIMIT),
        Err(_) => {}
    }
    for pipeline in [Pipeline::Ingress, Pipeline::Egress] {
        let options = ParseOptions { pipeline, table: 10, n_tables: 29 };
        if let Ok(parsed) = parse_actions(text, options) {
            let params = EncodeParams {
                pipeline,
                table: 10,
                layout: TableLayout::OVN_23_03,
                is_switch: pipeline == Pipeline::Ingress,
                common_zone_is_snat: false,
                controller_meter: Some(1),
                lflow_uuid: "00000000-0000-0000-0000-000000000000".parse().unwrap(),
                dp_key: 1,
            };
            let _ = Encoder { env: &env, p: &params }.encode(&parsed.actions);
        }
    }
});
