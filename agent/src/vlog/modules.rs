//! Log module names, and how a `tracing` target maps onto one.
//!
//! Operators filter ovn-controller's logs by OVS module names (`vlog/set ofctrl:file:dbg`),
//! so every event is attributed to one of the names below. The rule, first match wins:
//! 1. the whole target is a module name (`tracing::info!(target: "acl_log", ...)`);
//! 2. the last `::` segment of the target is a module name (`agent::lflow::expr` -> `expr`);
//! 3. the longest prefix in [`TARGET_PREFIXES`] (`agent::ofctrl::desired` -> `ofctrl`);
//! 4. otherwise `main`.

/// The modules known to `vlog/list` and `vlog/set`: the ones operators of ovn-controller
/// 23.03.1 use (style-and-operations B1.8) plus the ones our own plumbing logs under.
pub const MODULES: &[&str] = &[
    "acl_log",
    "actions",
    "binding",
    "chassis",
    "coverage",
    "daemon_unix",
    "encaps",
    "expr",
    "fatal_signal",
    "ha_chassis",
    "if_status",
    "inc_proc_eng",
    "jsonrpc",
    "lflow",
    "lflow_cache",
    "lport",
    "main",
    "memory",
    "ofctrl",
    "ovsdb_cs",
    "ovsdb_idl",
    "patch",
    "physical",
    "pinctrl",
    "rconn",
    "reconnect",
    "statctrl",
    "stopwatch",
    "stream",
    "stream_ssl",
    "stream_tcp",
    "stream_unix",
    "unixctl",
    "vconn",
    "vlog",
];

/// Target prefixes (Rust module paths) and the module their events belong to.
pub const TARGET_PREFIXES: &[(&str, &str)] = &[
    ("ovn_agent", "main"),
    ("agent::appctl", "unixctl"),
    ("agent::binding", "binding"),
    ("agent::chassis", "chassis"),
    ("agent::compile", "lflow"),
    ("agent::compile_cmd", "lflow"),
    ("agent::daemon", "daemon_unix"),
    ("agent::encaps", "encaps"),
    ("agent::engine", "inc_proc_eng"),
    ("agent::hairpin", "lflow"),
    ("agent::lflow", "lflow"),
    ("agent::neighbor", "lflow"),
    ("agent::ofctrl", "ofctrl"),
    ("agent::patch", "patch"),
    ("agent::physical", "physical"),
    ("agent::pinctrl", "pinctrl"),
    ("agent::portsec", "lflow"),
    ("agent::vlog", "vlog"),
    ("openflow", "rconn"),
    ("sbclient", "ovsdb_cs"),
    ("sbclient::jsonrpc", "jsonrpc"),
    ("sbclient::replica", "ovsdb_idl"),
];

/// Index of a module name in [`MODULES`], case-insensitively (as `vlog_module_from_name`).
pub fn module_index(name: &str) -> Option<usize> {
    MODULES
        .iter()
        .position(|module| module.eq_ignore_ascii_case(name))
}

/// The module a tracing target belongs to, as an index into [`MODULES`].
pub fn module_for_target(target: &str) -> usize {
    let exact = || MODULES.iter().position(|module| *module == target);
    let last_segment = || {
        let last = target.rsplit("::").next().unwrap_or(target);
        MODULES.iter().position(|module| *module == last)
    };
    let prefix = || {
        TARGET_PREFIXES
            .iter()
            .filter(|(prefix, _)| {
                target == *prefix
                    || target
                        .strip_prefix(prefix)
                        .is_some_and(|rest| rest.starts_with("::"))
            })
            .max_by_key(|(prefix, _)| prefix.len())
            .and_then(|(_, module)| MODULES.iter().position(|m| m == module))
    };
    exact()
        .or_else(last_segment)
        .or_else(prefix)
        .unwrap_or_else(main_module)
}

pub fn main_module() -> usize {
    MODULES.iter().position(|m| *m == "main").unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(target: &str) -> &'static str {
        MODULES[module_for_target(target)]
    }

    #[test]
    fn modules_are_sorted_and_prefixes_valid() {
        assert!(MODULES.windows(2).all(|w| w[0] < w[1]));
        for (_, module) in TARGET_PREFIXES {
            assert!(module_index(module).is_some(), "{module}");
        }
    }

    #[test]
    fn targets_map_to_ovs_modules() {
        assert_eq!(name("acl_log"), "acl_log");
        assert_eq!(name("agent::binding"), "binding");
        assert_eq!(name("agent::lflow::expr"), "expr");
        assert_eq!(name("agent::lflow::controller"), "lflow");
        assert_eq!(name("agent::ofctrl::desired"), "ofctrl");
        assert_eq!(name("agent::appctl::server"), "unixctl");
        assert_eq!(name("agent::compile_cmd"), "lflow");
        assert_eq!(name("sbclient::client::session::handlers"), "ovsdb_cs");
        assert_eq!(name("sbclient::replica"), "ovsdb_idl");
        assert_eq!(name("openflow::conn::client"), "rconn");
        assert_eq!(name("ovn_agent"), "main");
        assert_eq!(name("tokio::runtime"), "main");
        assert_eq!(name("agentx::ofctrl"), "ofctrl", "last segment");
        assert_eq!(
            name("sbclientx::foo"),
            "main",
            "prefixes match whole segments"
        );
        assert_eq!(module_index("OFCTRL"), module_index("ofctrl"));
    }
}
