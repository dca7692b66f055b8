//! `ovn-agent compile` end to end on the reference sandbox files.

use std::process::Command;

fn sb_args() -> Vec<String> {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    let mut files: Vec<String> = std::fs::read_dir(format!("{data}/sandbox"))
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .collect();
    files.push(format!("{data}/lflows_final.json"));
    files
        .into_iter()
        .flat_map(|f| ["--sb".to_string(), f])
        .collect()
}

fn run(extra: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ovn-agent"))
        .arg("compile")
        .args(sb_args())
        .args(["--chassis", "hv1"])
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn bad_lflows_are_one_stderr_line_each_and_exit_is_zero() {
    let (code, stdout, stderr) = run(&["--table-layout", "ovn-23.03"]);
    assert_eq!(code, 0, "{stderr}");
    let errors: Vec<&str> = stderr.lines().collect();
    assert_eq!(errors.len(), 6, "{stderr}");
    for e in &errors {
        assert!(
            e.starts_with("lflow ")
                && e.contains("ingress table ")
                && e.contains(" at position ")
                && e.contains(" in \""),
            "{e}"
        );
    }
    assert!(errors
        .iter()
        .any(|e| e.contains("fb917ae9-b44f-42a1-beab-e1fee26c91f7")
            && e.contains("\"drop\" must be the only action")));
    let flows: Vec<&str> = stdout.lines().collect();
    assert!(flows.len() > 1800, "{}", flows.len());
    assert!(flows
        .iter()
        .all(|l| l.starts_with(" cookie=0x") && l.contains(" actions=")));
    // The classic layout moves ingress to 1+N and egress to 37+N, output to 35.
    let (_, classic, _) = run(&["--table-layout", "classic"]);
    assert_eq!(classic.lines().count(), flows.len());
    assert!(stdout.contains("table=8, priority=50,metadata=0x1 actions=set_field:0/0x1000->reg10,resubmit(,73),move:NXM_NX_REG10[12]->NXM_NX_XXREG0[111],resubmit(,9)"));
    assert!(classic.contains("table=1, priority=50,metadata=0x1 actions=set_field:0/0x1000->reg10,resubmit(,73),move:NXM_NX_REG10[12]->NXM_NX_XXREG0[111],resubmit(,2)"));
    assert!(!classic.contains("resubmit(,37)") && classic.contains("resubmit(,35)"));
}

#[test]
fn datapath_filter_and_unknown_chassis() {
    let (_, sorted, stderr) = run(&["--table-layout", "ovn-23.03", "--sort", "--stats"]);
    assert!(stderr.contains("lflows 761 failed 6"), "{stderr}");
    let keys: Vec<(u32, i64)> = sorted
        .lines()
        .map(|l| {
            let t = l
                .split("table=")
                .nth(1)
                .unwrap()
                .split(',')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            let p: i64 = l
                .split("priority=")
                .nth(1)
                .unwrap()
                .split([',', ' '])
                .next()
                .unwrap()
                .parse()
                .unwrap();
            (t, -p)
        })
        .collect();
    assert!(keys.windows(2).all(|w| w[0] <= w[1]), "not sorted");
    let (code, stdout, _) = run(&["--table-layout", "ovn-23.03", "--datapath", "7"]);
    assert_eq!(code, 0);
    assert!(stdout.lines().count() > 10);
    assert!(
        stdout
            .lines()
            .all(|l| l.contains("metadata=0x7") || l.contains("cookie=0x0,")),
        "{stdout}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_ovn-agent"))
        .arg("compile")
        .args(sb_args())
        .args(["--chassis", "nope"])
        .output()
        .unwrap();
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not found"));
    let out = Command::new(env!("CARGO_BIN_EXE_ovn-agent"))
        .args(["compile", "--sb", "/nonexistent", "--chassis", "hv1"])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
}
