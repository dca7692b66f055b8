//! The control-socket commands the main loop answers: ovn-controller 23.03.1's (same names,
//! arguments and output text, reference §8) in [`ovn`], and the agent's own debugging
//! commands in [`own`].

mod group_names;
mod lflow_cache;
mod ovn;
mod own;

use std::time::Duration;

use crate::coverage;
use crate::engine::core::Engine;
use crate::stopwatch::Stopwatches;

/// `(name, usage, min args, max args)` of every command the main loop answers, for
/// `list-commands`.
pub const COMMANDS: &[(&str, &str, usize, usize)] = &[
    ("connection-status", "", 0, 0),
    ("coverage/read-counter", "COUNTER", 1, 1),
    ("coverage/show", "", 0, 0),
    ("ct-zone-list", "", 0, 0),
    ("debug/delay-nb-cfg-report", "SECONDS", 1, 1),
    ("debug/dump-lflow-conj-ids", "", 0, 0),
    ("debug/dump-local-datapaths", "", 0, 0),
    ("debug/dump-local-bindings", "", 0, 0),
    ("debug/dump-local-template-vars", "", 0, 0),
    ("debug/dump-peer-ports", "", 0, 0),
    ("debug/dump-related-ports", "", 0, 0),
    ("debug/ignore-startup-delay", "", 0, 0),
    ("debug/pause", "", 0, 0),
    ("debug/resume", "", 0, 0),
    ("debug/status", "", 0, 0),
    ("exit", "", 0, 1),
    ("flush-lflow-cache", "[deprecated]", 0, 0),
    ("group-table-list", "", 0, 0),
    ("inject-pkt", "MICROFLOW", 1, 1),
    ("inc-engine/clear-stats", "", 0, 0),
    ("inc-engine/compute-log-timeout", "", 1, 1),
    ("inc-engine/recompute", "", 0, 0),
    ("inc-engine/show-stats", "", 0, 2),
    ("lflow-cache/flush", "", 0, 0),
    ("lflow-cache/show-stats", "", 0, 0),
    ("memory/show", "", 0, 0),
    ("meter-table-list", "", 0, 0),
    ("recompute", "[deprecated]", 0, 0),
    ("sb-cluster-state-reset", "", 0, 0),
    ("stopwatch/reset", "[NAME]", 0, 1),
    ("stopwatch/show", "[NAME]", 0, 1),
    ("tnl/egress_port_range", "min max", 0, 2),
    // The agent's own.
    ("debug/engine-stats", "", 0, 0),
    ("debug/monitor-conditions", "", 0, 0),
    ("debug/table-layout", "", 0, 0),
    ("lflow/show", "UUID", 1, 1),
    ("pinctrl/show-stats", "", 0, 0),
    ("port/flows", "LOGICAL-PORT", 1, 1),
    ("tunnel/pkt-mark", "", 0, 0),
];

/// Commands later releases no longer have, and the release each is gone from: OVS 3.5's
/// library (25.03's) has no `tnl/egress_port_range`, 26.03 dropped
/// `debug/ignore-startup-delay`.
pub const RETIRED: &[(&str, &str)] = &[
    ("tnl/egress_port_range", "25.03"),
    ("debug/ignore-startup-delay", "26.03"),
];

/// Commands later releases added, and the release each appears in.
pub const INTRODUCED: &[(&str, &str)] = &[
    ("debug/dump-peer-ports", "25.03"),
    ("debug/dump-related-ports", "25.03"),
    ("debug/dump-local-datapaths", "26.03"),
];

/// What the main loop keeps for the control socket besides the engine.
#[derive(Debug, Default)]
pub struct Control {
    /// `debug/pause`: no engine run until `debug/resume`.
    pub paused: bool,
    pub stopwatches: Stopwatches,
    pub coverage: coverage::History,
    /// `inc-engine/compute-log-timeout MS`: engine runs at least this long are logged
    /// (`None`: the default threshold).
    pub compute_log_timeout: Option<Duration>,
    /// The pinctrl task's counters (`pinctrl/show-stats`).
    pub pinctrl: Option<std::sync::Arc<crate::pinctrl::Stats>>,
    /// `tnl/egress_port_range MIN MAX` (`None`: OVS's default, 32768-61000).
    pub tnl_port_range: Option<(u16, u16)>,
}

/// `tnl/egress_port_range [MIN MAX]`, as the OVS library in ovn-controller answers it: the
/// range of UDP source ports of tunnels from the userspace datapath. ovn-controller has no
/// tunnel of its own to use it on; it keeps and reports the range, and so does the agent.
pub fn tnl_egress_port_range(range: &mut Option<(u16, u16)>, args: &[String]) -> String {
    let (min, max) = range.unwrap_or((32768, 61000));
    let [a, b] = args else {
        return format!("Tunnel UDP source port range: {min}-{max}\n");
    };
    // As C's atoi: the leading digits, 0 if none.
    let atoi = |s: &str| {
        let s = s.trim_start();
        let (sign, digits) = match s.strip_prefix('-') {
            Some(rest) => (-1i64, rest),
            None => (1, s.strip_prefix('+').unwrap_or(s)),
        };
        let n: String = digits
            .chars()
            .take_while(char::is_ascii_digit)
            .take(10)
            .collect();
        sign * n.parse::<i64>().unwrap_or(0)
    };
    let valid = |v: i64| u16::try_from(v).ok().filter(|v| *v > 0);
    let Some(a) = valid(atoi(a)) else {
        return "Invalid min.".to_owned();
    };
    let Some(b) = valid(atoi(b)) else {
        return "Invalid max.".to_owned();
    };
    *range = Some((a.min(b), a.max(b)));
    "OK".to_owned()
}

#[cfg(test)]
#[test]
fn tnl_egress_port_range_as_ovs_answers() {
    let mut r = None;
    let args = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        tnl_egress_port_range(&mut r, &[]),
        "Tunnel UDP source port range: 32768-61000\n"
    );
    assert_eq!(
        tnl_egress_port_range(&mut r, &args(&["0", "5"])),
        "Invalid min."
    );
    assert_eq!(
        tnl_egress_port_range(&mut r, &args(&["5", "70000"])),
        "Invalid max."
    );
    assert_eq!(
        tnl_egress_port_range(&mut r, &args(&["6000", "5000x"])),
        "OK"
    );
    assert_eq!(
        tnl_egress_port_range(&mut r, &args(&["1"])),
        "Tunnel UDP source port range: 5000-6000\n"
    );
}

/// What the loop does with a command.
pub enum Outcome {
    Reply(Result<String, String>),
    Exit {
        restart: bool,
    },
    /// Replied, and the engine must run (a recompute was asked for, or processing resumed).
    RunNow(String),
    /// `inject-pkt`: send this packet-out on the pinctrl connection, then reply.
    Inject(openflow::wire::PacketOut),
    /// `sb-cluster-state-reset`: the Southbound client forgets the cluster index it has
    /// seen (after a cluster was rebuilt from scratch) and reconnects.
    ResetClusterState,
}

pub fn handle(
    engine: &mut Engine,
    control: &mut Control,
    command: &str,
    args: &[String],
) -> Outcome {
    coverage::UNIXCTL_RECEIVED.inc();
    let outcome = ovn::handle(engine, control, command, args)
        .or_else(|| own::handle(engine, command, args))
        .or_else(|| own::handle_pinctrl(control, command))
        .unwrap_or_else(|| {
            Outcome::Reply(Err(format!(
                "\"{command}\" is not a valid command (use \"list-commands\" to see a list of valid commands)\n"
            )))
        });
    coverage::UNIXCTL_REPLIED.inc();
    outcome
}
