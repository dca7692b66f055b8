//! The control socket, through the real `ovn-appctl`: every ovn-controller 23.03.1 command
//! the agent offers, run against the real ovn-controller and against ovn-agent on the same
//! topology in the same test run. Replies that tools parse are compared byte for byte where
//! both controllers must print the same (names, errors, fixed texts), and by shape where
//! the values are each controller's own (rates, timings, ids).

mod common;

use std::collections::BTreeSet;
use std::process::Command;
use std::time::Instant;

use common::{two_switches_one_router, Net, Setup, ORACLE};
use integration::Controller;

const CHASSIS: [&str; 2] = ["hv1", "hv2"];

/// What `ovn-appctl` printed: the reply on success, the server's error text on failure.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reply {
    Ok(String),
    Err(String),
}

impl Reply {
    fn text(&self) -> &str {
        match self {
            Reply::Ok(t) | Reply::Err(t) => t,
        }
    }
}

fn appctl(net: &Net, chassis: &str, args: &[&str]) -> Reply {
    let c = net.lab.chassis(chassis).expect("chassis");
    let ctl = c.controller().expect("controller").ctl().clone();
    // The release's own client, as its operators run it.
    let out = Command::new(integration::stack::Stack::current().program("ovn-appctl"))
        .arg("-t")
        .arg(&ctl)
        .args(args)
        .output()
        .expect("run ovn-appctl");
    if out.status.success() {
        Reply::Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        // ovn-appctl prints the server's error, then its own line naming the target.
        let err = String::from_utf8_lossy(&out.stderr);
        let server: Vec<&str> = err
            .lines()
            .filter(|l| !l.contains("server returned an error"))
            .collect();
        Reply::Err(server.join("\n"))
    }
}

/// How two controllers' replies to one command must relate.
#[derive(Clone, Copy)]
enum Compare {
    /// Byte for byte.
    Same,
    /// Both succeed (or both fail) and every line matches one of the `|`-separated shapes
    /// (by [`line_shape`], runs of spaces counting as one).
    Shape(&'static str),
    /// Both succeed and the replies have the same lines, in any order, once UUIDs and
    /// numbers are removed ([`without_numbers`]).
    SameWithoutNumbers,
    /// The same outcome and the same lines, in any order (a hash order in ovn-controller).
    SameLines,
    /// Byte for byte, but for the number of the line starting with the prefix given (a
    /// figure of each controller's own, such as its memory).
    SameBut(&'static str),
    /// Both succeed with one line of space-separated `key:number` pairs (OVS's memory
    /// report), sorted by key, both having the keys given (`|`-separated).
    KeyValues(&'static str),
}

/// Whether `line` fits `shape`, a template where `#` is a number (digits, optionally with
/// `.` and a fraction) and `*` any text without spaces.
fn line_shape(shape: &str, line: &str) -> bool {
    fn go(s: &[u8], l: &[u8]) -> bool {
        match s.first() {
            None => l.is_empty(),
            Some(b'#') => {
                let n = l
                    .iter()
                    .take_while(|c| c.is_ascii_digit() || **c == b'.')
                    .count();
                n > 0 && (1..=n).rev().any(|k| go(&s[1..], &l[k..]))
            }
            Some(b'*') => {
                let n = l.iter().take_while(|c| **c != b' ').count();
                (0..=n).rev().any(|k| go(&s[1..], &l[k..]))
            }
            Some(c) => l.first() == Some(c) && go(&s[1..], &l[1..]),
        }
    }
    go(shape.as_bytes(), line.as_bytes())
}

/// The lines of `text` with every UUID replaced by `<uuid>` and every run of digits by `#`
/// (ids and counts are each controller's own), sorted.
fn without_numbers(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text
        .lines()
        .map(|l| {
            let l: String = l
                .split_inclusive(['_', ' ', ',', ':'])
                .map(|w| {
                    let core = w.trim_end_matches(['_', ' ', ',', ':']);
                    if sbclient::Uuid::parse_str(core).is_ok() {
                        w.replacen(core, "<uuid>", 1)
                    } else {
                        w.to_owned()
                    }
                })
                .collect();
            let mut out = String::new();
            for c in l.chars() {
                if c.is_ascii_digit() {
                    if !out.ends_with('#') {
                        out.push('#');
                    }
                } else {
                    out.push(c);
                }
            }
            out
        })
        .collect();
    lines.sort();
    lines
}

fn compare(how: Compare, oracle: &Reply, agent: &Reply) -> Result<(), String> {
    let ok = match how {
        Compare::Same => oracle == agent,
        Compare::Shape(shapes) => {
            std::mem::discriminant(oracle) == std::mem::discriminant(agent)
                && [oracle, agent].iter().all(|r| {
                    r.text().lines().all(|l| {
                        let l = l.split_whitespace().collect::<Vec<_>>().join(" ");
                        shapes.split('|').any(|s| line_shape(s, &l))
                    })
                })
        }
        Compare::KeyValues(keys) => [oracle, agent].iter().all(|r| {
            let Reply::Ok(text) = r else { return false };
            let pairs: Vec<(&str, &str)> = text
                .trim_end()
                .split(' ')
                .filter_map(|p| p.split_once(':'))
                .collect();
            pairs.len() == text.trim_end().split(' ').count()
                && pairs.iter().all(|(_, v)| v.parse::<u64>().is_ok())
                && pairs.windows(2).all(|w| w[0].0 < w[1].0)
                && keys
                    .split('|')
                    .all(|k| pairs.iter().any(|(key, _)| *key == k))
        }),
        Compare::SameLines => {
            let lines = |r: &Reply| {
                let mut v: Vec<String> = r.text().lines().map(str::to_owned).collect();
                v.sort();
                v
            };
            std::mem::discriminant(oracle) == std::mem::discriminant(agent)
                && lines(oracle) == lines(agent)
        }
        Compare::SameBut(prefix) => {
            let text = |r: &Reply| -> Vec<String> {
                r.text()
                    .lines()
                    .map(|l| match l.strip_prefix(prefix) {
                        Some(rest) => format!(
                            "{prefix}{}",
                            rest.trim_end_matches(|c: char| c.is_ascii_digit())
                        ),
                        None => l.to_owned(),
                    })
                    .collect()
            };
            std::mem::discriminant(oracle) == std::mem::discriminant(agent)
                && text(oracle) == text(agent)
        }
        Compare::SameWithoutNumbers => {
            matches!((oracle, agent), (Reply::Ok(_), Reply::Ok(_)))
                && without_numbers(oracle.text()) == without_numbers(agent.text())
        }
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "ovn-controller: {oracle:?}\n      ovn-agent: {agent:?}"
        ))
    }
}

/// The commands compared, with their arguments and how.
const COMMANDS: &[(&[&str], Compare)] = &[
    (&["connection-status"], Compare::Same),
    (&["debug/status"], Compare::Same),
    (&["debug/dump-local-bindings"], Compare::Same),
    (&["debug/dump-local-template-vars"], Compare::Same),
    // 25.03 on.
    (&["debug/dump-peer-ports"], Compare::SameLines),
    (&["debug/dump-related-ports"], Compare::SameLines),
    // 26.03 on.
    (&["debug/dump-local-datapaths"], Compare::SameLines),
    (&["debug/ignore-startup-delay"], Compare::Same),
    (&["debug/delay-nb-cfg-report", "x"], Compare::Same),
    (&["debug/delay-nb-cfg-report", "0"], Compare::Same),
    (&["coverage/read-counter", "no_such_counter"], Compare::Same),
    (&["coverage/read-counter", "lflow_run"], Compare::Shape("#")),
    (
        &["coverage/show"],
        Compare::Shape(
            "Event coverage, avg rate over last: 5 seconds, last minute, last hour, hash=*:\
             |* #/sec #/sec #/sec total: #|# events never hit",
        ),
    ),
    (&["stopwatch/show", "no-such"], Compare::Same),
    (
        &["stopwatch/show", "flow-generation"],
        Compare::Shape(
            "Statistics for 'flow-generation'|Total samples: #|Maximum: # msec\
             |Minimum: # msec|95th percentile: # msec|Short term average: # msec\
             |Long term average: # msec",
        ),
    ),
    (&["stopwatch/reset"], Compare::Same),
    (&["inc-engine/show-stats", "no_such_node"], Compare::Same),
    (
        &["inc-engine/show-stats", "flow_output", "nonsense"],
        Compare::Same,
    ),
    (
        &["inc-engine/show-stats", "logical_flow_output", "recompute"],
        Compare::Shape("#"),
    ),
    (
        &["inc-engine/show-stats", "flow_output"],
        Compare::Shape("Node: flow_output|- recompute: #|- compute: #|- abort: #"),
    ),
    (&["inc-engine/clear-stats"], Compare::Same),
    (&["inc-engine/compute-log-timeout", "x"], Compare::Same),
    (&["inc-engine/compute-log-timeout", "1000"], Compare::Same),
    (
        &["lflow-cache/show-stats"],
        Compare::SameBut("Mem usage (KB)  : "),
    ),
    (&["ct-zone-list"], Compare::SameWithoutNumbers),
    (&["meter-table-list"], Compare::SameWithoutNumbers),
    (&["group-table-list"], Compare::SameWithoutNumbers),
    (
        &["memory/show"],
        Compare::KeyValues("idl-cells-OVN_Southbound|idl-cells-Open_vSwitch"),
    ),
    (
        &["debug/dump-lflow-conj-ids"],
        Compare::Shape(
            "Conjunction IDs allocations:|lflow: *, dp: *, start: #, n: #|---|Total # IDs used.",
        ),
    ),
    // Only the reading forms: after `tnl/egress_port_range 0 1` and `40000 30000`,
    // ovn-controller 23.03.1's control socket refused every connection (seen in this
    // test); the setting forms are unit-tested.
    (&["tnl/egress_port_range"], Compare::Same),
    (&["tnl/egress_port_range", "x"], Compare::Same),
    (&["sb-cluster-state-reset"], Compare::Same),
    (&["lflow-cache/flush"], Compare::Same),
    (&["inc-engine/recompute"], Compare::Same),
    (&["recompute"], Compare::Same),
    (&["bogus/command", "a"], Compare::Same),
    // The output format (OVS 3.3's library on; 23.03's has no such command, nor its client
    // the option): a bad value, and a reply wrapped in JSON.
    (&["set-options", "--format", "yaml"], Compare::Same),
    (&["--format", "json", "debug/status"], Compare::Same),
    (&["exit", "a", "b"], Compare::Same),
];

/// An ACL with a meter (a meter entry), a load balancer (a group), a template variable,
/// a container port of vm3 (on hv2) and one whose parent does not exist (both listed by
/// hv1's `debug/dump-local-bindings`, without an interface).
fn configure(net: &Net) {
    let c = net.lab.central();
    for cmd in [
        vec!["meter-add", "m1", "drop", "10", "pktps"],
        vec![
            "--log",
            "--meter=m1",
            "acl-add",
            "sw0",
            "to-lport",
            "1001",
            "ip4.src == 10.0.0.3",
            "allow-related",
        ],
        vec!["lb-add", "lb0", "10.0.0.100:80", "10.0.0.3:80,10.0.1.2:80"],
        vec!["ls-lb-add", "sw0", "lb0"],
        vec!["lsp-add", "sw0", "vm3-c1", "vm3", "5"],
        vec!["lsp-add", "sw0", "orphan-c1", "nobody", "6"],
        vec![
            "create",
            "Chassis_Template_Var",
            "chassis=hv1",
            "variables={vip=\"10.0.0.200\"}",
        ],
        vec!["--wait=hv", "sync"],
    ] {
        c.nbctl(&cmd)
            .unwrap_or_else(|e| panic!("ovn-nbctl {cmd:?}: {e}"));
    }
}

struct Run {
    label: String,
    replies: Vec<Reply>,
    /// `ovn-nbctl --wait=hv sync` while paused timed out, and succeeded after resume.
    pause_holds: bool,
    /// `--wait=hv` took at least the nb_cfg report delay.
    delay_seconds: f64,
    list_commands: String,
    version: String,
    net: Net,
}

fn run(setup: &Setup) -> Run {
    let net = two_switches_one_router(setup, &CHASSIS)
        .unwrap_or_else(|e| panic!("[{}] build the lab: {e}", setup.label));
    configure(&net);
    let central = net.lab.central();
    // Let the coverage and stopwatch samples exist.
    std::thread::sleep(std::time::Duration::from_secs(6));
    let replies = COMMANDS
        .iter()
        .filter(|(args, _)| args[0] != "exit")
        .map(|(args, _)| appctl(&net, "hv1", args))
        .collect::<Vec<_>>();
    // debug/pause: the chassis acknowledges no nb_cfg until debug/resume.
    assert_eq!(
        appctl(&net, "hv1", &["debug/pause"]),
        Reply::Ok(String::new())
    );
    // (ovn-appctl of OVS 3.1 ends a reply without a newline with one; later ones do not.)
    assert_eq!(
        appctl(&net, "hv1", &["debug/status"]).text().trim_end(),
        "paused"
    );
    let paused = central.nbctl_with_timeout(3, &["--wait=hv", "sync"]);
    assert_eq!(
        appctl(&net, "hv1", &["debug/resume"]),
        Reply::Ok(String::new())
    );
    let resumed = central.nbctl(&["--wait=hv", "sync"]);
    let pause_holds = paused.is_err() && resumed.is_ok();
    // debug/delay-nb-cfg-report 2: --wait=hv returns no sooner.
    assert_eq!(
        appctl(&net, "hv1", &["debug/delay-nb-cfg-report", "2"])
            .text()
            .trim_end(),
        "delay nb_cfg report for 2 seconds."
    );
    let start = Instant::now();
    central
        .nbctl(&["--wait=hv", "sync"])
        .unwrap_or_else(|e| panic!("[{}] --wait=hv with a delay: {e}", setup.label));
    let delay_seconds = start.elapsed().as_secs_f64();
    appctl(&net, "hv1", &["debug/delay-nb-cfg-report", "0"]);
    let list_commands = appctl(&net, "hv1", &["list-commands"]).text().to_owned();
    let version = appctl(&net, "hv1", &["version"]).text().to_owned();
    Run {
        label: setup.label.clone(),
        replies,
        pause_holds,
        delay_seconds,
        list_commands,
        version,
        net,
    }
}

/// `(name, usage)` of each command `list-commands` shows.
fn commands_listed(text: &str) -> BTreeSet<(String, String)> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.to_owned(), w.collect::<Vec<_>>().join(" ")))
        })
        .collect()
}

#[test]
fn ovn_controller_commands_answer_as_ovn_controller() {
    let setups = Setup::oracle_and_agent(&CHASSIS);
    let runs: Vec<Run> = setups.iter().map(run).collect();
    let (oracle, agent) = (&runs[0], &runs[1]);
    assert_eq!(oracle.label, ORACLE);
    let mut problems = Vec::new();
    let compared = COMMANDS.iter().filter(|(args, _)| args[0] != "exit");
    for (i, (args, how)) in compared.enumerate() {
        if let Err(e) = compare(*how, &oracle.replies[i], &agent.replies[i]) {
            problems.push(format!("{}:\n      {e}", args.join(" ")));
        }
    }
    for r in &runs {
        if !r.pause_holds {
            problems.push(format!(
                "[{}] debug/pause did not hold nb_cfg back",
                r.label
            ));
        }
        if r.delay_seconds < 1.9 {
            problems.push(format!(
                "[{}] --wait=hv returned after {:.2} s with a 2 s nb_cfg report delay",
                r.label, r.delay_seconds
            ));
        }
    }
    // Every command ovn-controller lists, with the same usage text.
    let ours = commands_listed(&agent.list_commands);
    for (name, usage) in commands_listed(&oracle.list_commands) {
        if !ours.contains(&(name.clone(), usage.clone())) {
            problems.push(format!("list-commands lacks {name} {usage}"));
        }
    }
    let own = [
        "debug/engine-stats",
        "lflow/show",
        "port/flows",
        "debug/monitor-conditions",
        "tunnel/pkt-mark",
        "pinctrl/show-stats",
    ];
    for name in own {
        if !ours.iter().any(|(n, _)| n == name) {
            problems.push(format!("list-commands lacks the agent's own {name}"));
        }
    }
    // ovn-ctl takes the last field of the first line as the version: the agent's is
    // 23.03.1's (what it was built to replace), ovn-controller's its release's.
    let stack = integration::stack::Stack::current();
    let release = stack.versions().map_or("23.03.", |(ovn, _)| ovn);
    for r in &runs {
        let first = r.version.lines().next().unwrap_or_default();
        let want = if r.label == ORACLE { release } else { "23.03." };
        if !first
            .rsplit(' ')
            .next()
            .is_some_and(|v| v.starts_with(want))
        {
            problems.push(format!("[{}] version: {:?}", r.label, r.version));
        }
    }
    if !agent
        .version
        .contains("OVN internal version 23.03.1-20.27.0-70.6")
    {
        problems.push(format!(
            "ovn-agent's version lacks the internal version: {:?}",
            agent.version
        ));
    }
    // `exit` with unknown arguments: too many is an error from both; then a plain `exit`.
    let exit = COMMANDS.iter().find(|(a, _)| a[0] == "exit").unwrap();
    let replies: Vec<Reply> = runs.iter().map(|r| appctl(&r.net, "hv2", exit.0)).collect();
    if let Err(e) = compare(exit.1, &replies[0], &replies[1]) {
        problems.push(format!("exit a b:\n      {e}"));
    }
    agent_commands(&agent.net, &mut problems);
    assert!(
        problems.is_empty(),
        "{} difference(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
    drop(runs);
}

/// The agent's own commands on a chassis with vm1 bound.
fn agent_commands(net: &Net, problems: &mut Vec<String>) {
    assert!(
        matches!(net.setup.controller("hv1"), Some(Controller::OvnAgent(_))),
        "the agent's run"
    );
    let mut expect = |args: &[&str], needles: &[&str]| {
        let reply = appctl(net, "hv1", args);
        for n in needles {
            if !matches!(&reply, Reply::Ok(t) if t.contains(n)) {
                problems.push(format!("{}: no {n:?} in {reply:?}", args.join(" ")));
            }
        }
    };
    expect(
        &["port/flows", "vm1"],
        &[
            "port vm1: Port_Binding",
            "bound here",
            "OpenFlow flows",
            "actions=",
        ],
    );
    expect(
        &["debug/monitor-conditions"],
        &["Port_Binding: ", "Logical_Flow: "],
    );
    // The layout of the stack's release (`auto` on an unpacked stack), classic on the
    // system's.
    let layout = match integration::stack::Stack::current().agent_layout() {
        Some(name) if !integration::stack::Stack::current().is_system() => {
            agent::lflow::layout::TableLayout::by_name(name).expect("a layout ovn-agent knows")
        }
        _ => agent::lflow::layout::TableLayout::CLASSIC,
    };
    expect(
        &["debug/table-layout"],
        &[
            &format!("layout: {}", layout.name()),
            &format!("remote output: {}", layout.remote_output),
        ],
    );
    expect(&["debug/engine-stats"], &["runs ", "desired flows "]);
    // The ACL's logical flow: shown with what it compiled to.
    let uuid = net
        .lab
        .central()
        .sbctl(&[
            "--format=csv",
            "--no-headings",
            "--columns=_uuid,match",
            "list",
            "Logical_Flow",
        ])
        .ok()
        .and_then(|o| {
            o.lines()
                .find(|l| l.contains("ip4.src == 10.0.0.3"))
                .and_then(|l| l.split(',').next().map(str::to_owned))
        });
    match uuid {
        Some(u) => expect(
            &["lflow/show", &u[..8]],
            &[
                &format!("lflow {u}"),
                "match: ",
                "OpenFlow flows",
                "cookie=",
            ],
        ),
        None => problems.push("no Logical_Flow for the ACL to show".into()),
    }
    let reply = appctl(net, "hv1", &["lflow/show", "zzzz"]);
    if !matches!(&reply, Reply::Err(t) if t.contains("no logical flow zzzz")) {
        problems.push(format!("lflow/show of nothing: {reply:?}"));
    }
}

#[test]
fn line_shapes() {
    assert!(line_shape("Total # IDs used.", "Total 12 IDs used."));
    assert!(line_shape("* #/sec", "lflow_run 0.2/sec"));
    assert!(!line_shape("#", "12a"));
    assert!(line_shape("*: #", "type=select,bucket=x: 1"));
    assert!(!line_shape("*: #", "a b: 1"));
}
