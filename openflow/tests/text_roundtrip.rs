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
