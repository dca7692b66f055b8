//! Golden test (a): every line of the real flow and group dumps parses and prints back
//! identically.

use openflow::text::Flow;
use openflow::wire::Group;

fn lines(name: &str) -> Vec<String> {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .filter(|l| l.starts_with(' '))
        .map(|l| l.trim().to_owned())
        .collect()
}

#[test]
fn every_flow_of_of_final_round_trips_through_text() {
    check_flows("of_final.txt", 2000);
}

#[test]
fn every_flow_of_the_experiments_round_trips_through_text() {
    check_flows("experiments_of_table35.txt", 150);
}

fn check_flows(file: &str, at_least: usize) {
    let lines = lines(file);
    assert!(lines.len() > at_least);
    let mut failures = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        match line.parse::<Flow>() {
            Ok(f) => {
                let back = f.to_string();
                if &back != line {
                    failures.push(format!("line {i}:\n  in:  {line}\n  out: {back}"));
                }
            }
            Err(e) => failures.push(format!("line {i}: {e}\n  in: {line}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} lines differ:\n{}",
        failures.len(),
        lines.len(),
        failures
            .iter()
            .take(15)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn every_group_round_trips_through_text() {
    let mut lines = lines("groups_final.txt");
    lines.extend(self::lines("experiments_groups.txt"));
    assert!(lines.len() >= 30);
    for line in &lines {
        let g: Group = line.parse().unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(&g.to_string(), line);
    }
}

/// A number too large for its field is an error naming the field, never truncated (a
/// `table=256` used to become table 0). Where ovs-ofctl itself truncates (`dl_vlan`,
/// `dl_vlan_pcp`, the ECN bits of `nw_tos`), we refuse too.
#[test]
fn numbers_that_do_not_fit_their_field_are_errors() {
    use openflow::text::ParseError;
    use openflow::wire::MeterMod;
    let out_of_range = |text: &str, field: &str| match text.parse::<Flow>() {
        Err(ParseError::OutOfRange { what, .. }) => assert_eq!(what, field, "{text}"),
        other => panic!("{text}: {other:?}"),
    };
    out_of_range("table=256,ip actions=drop", "table");
    out_of_range("table=0x1ff,ip actions=drop", "table");
    out_of_range("priority=65536,ip actions=drop", "priority");
    out_of_range("idle_timeout=70000,ip actions=drop", "idle_timeout");
    out_of_range("hard_timeout=70000,ip actions=drop", "hard_timeout");
    out_of_range("importance=70000,ip actions=drop", "importance");
    out_of_range("cookie=0x10000000000000000,ip actions=drop", "cookie");
    out_of_range("in_port=4294967296 actions=drop", "port");
    out_of_range("ip actions=output:4294967296", "port");
    out_of_range("ip actions=resubmit(70000,1)", "port");
    out_of_range("ip actions=resubmit:70000", "port");
    out_of_range("ip actions=output(port=70000,max_len=100)", "port");
    out_of_range("dl_vlan=4096 actions=drop", "dl_vlan");
    out_of_range("dl_vlan_pcp=8 actions=drop", "dl_vlan_pcp");
    out_of_range("ip,nw_tos=256 actions=drop", "nw_tos");
    out_of_range("tcp,tcp_flags=0x1000 actions=drop", "flags");
    assert!(matches!(
        "ip,nw_tos=3 actions=drop".parse::<Flow>(),
        Err(ParseError::BadValue(_))
    ));
    // The largest values that fit still parse, and print back.
    for text in [
        "cookie=0xffffffffffffffff, table=255, priority=65535,ip actions=drop",
        "cookie=0x0, table=254, priority=1,dl_vlan=4095,dl_vlan_pcp=7 actions=drop",
        "cookie=0x0, table=1, priority=1,ip,nw_tos=252 actions=resubmit(65279,254)",
    ] {
        let f: Flow = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(f.to_string(), text);
    }
    let e = "table=256,ip actions=drop".parse::<Flow>().unwrap_err();
    assert_eq!(e.to_string(), "table=256: out of range for a 8-bit field");

    let group_range = |text: &str, field: &str| match text.parse::<Group>() {
        Err(ParseError::OutOfRange { what, .. }) => assert_eq!(what, field, "{text}"),
        other => panic!("{text}: {other:?}"),
    };
    group_range(
        "group_id=4294967296,type=all,bucket=actions=drop",
        "group_id",
    );
    group_range(
        "group_id=1,type=select,bucket=bucket_id:0,weight:65536,actions=drop",
        "weight",
    );
    group_range(
        "group_id=1,type=all,bucket=bucket_id:4294967296,actions=drop",
        "bucket_id",
    );
    group_range(
        "group_id=1,type=ff,bucket=watch_group:4294967296,actions=drop",
        "watch_group",
    );
    group_range(
        "group_id=1,type=ff,bucket=watch_port:4294967296,actions=drop",
        "port",
    );
    group_range(
        "group_id=1,type=select,selection_method=hash,selection_method_param=0x10000000000000000,bucket=actions=drop",
        "selection_method_param",
    );
    let meter_range = |text: &str, field: &str| match text.parse::<MeterMod>() {
        Err(ParseError::OutOfRange { what, .. }) => assert_eq!(what, field, "{text}"),
        other => panic!("{text}: {other:?}"),
    };
    meter_range("meter=4294967296,pktps,bands=type=drop,rate=1", "meter");
    meter_range("meter=1,pktps,bands=type=drop,rate=4294967296", "rate");
    meter_range(
        "meter=1,pktps,burst,bands=type=drop,rate=1,burst_size=4294967296",
        "burst_size",
    );
    meter_range(
        "meter=1,kbps,bands=type=dscp_remark,rate=1,prec_level=256",
        "prec_level",
    );
    assert!("meter=1,kbps,bands=type=dscp_remark,rate=1,prec_level=255"
        .parse::<MeterMod>()
        .is_ok());
}
