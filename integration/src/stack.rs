//! The OVS/OVN release the harness runs: the system's packages (Debian 12: OVS 3.1, OVN
//! 23.03.1), or a release unpacked beside them by `scripts/ovn-stack.sh` (OVN 25.03 from
//! Debian 13, 26.03 from sid), chosen by `OVN_STACK`: a release (`25.03` is
//! `/opt/ovn-25.03`) or the root the script printed. Every program the harness starts or runs
//! by name, and every schema it creates a database from, comes from the stack.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stack {
    /// `system`, or the release as `OVN_STACK` names it.
    pub name: String,
    /// Where the unpacked release lives (`None`: the system's programs, found by `PATH`).
    pub root: Option<PathBuf>,
}

impl Stack {
    /// The system's packages.
    pub fn system() -> Self {
        Self {
            name: "system".to_owned(),
            root: None,
        }
    }

    /// The stack `OVN_STACK` names (unset or empty: the system's).
    pub fn from_env() -> Self {
        match std::env::var("OVN_STACK") {
            Ok(v) if !v.is_empty() && v != "system" => {
                let root = if v.contains('/') {
                    PathBuf::from(&v)
                } else {
                    PathBuf::from(format!("/opt/ovn-{v}"))
                };
                Self {
                    name: v,
                    root: Some(root),
                }
            }
            _ => Self::system(),
        }
    }

    /// The stack of this process (read once).
    pub fn current() -> &'static Stack {
        static CURRENT: OnceLock<Stack> = OnceLock::new();
        CURRENT.get_or_init(Self::from_env)
    }

    pub fn is_system(&self) -> bool {
        self.root.is_none()
    }

    /// The OVN and OVS version prefixes the stack's programs report (`ovn-northd 25.03.0`,
    /// `ovs-vswitchd (Open vSwitch) 3.5.0`), for the releases the project runs; `None` for
    /// a root it does not know.
    pub fn versions(&self) -> Option<(&'static str, &'static str)> {
        self.release().map(|r| (r.ovn, r.ovs))
    }

    /// The `--table-layout` of ovn-agent that numbers tables as this release's
    /// ovn-controller does (`None`: none yet).
    pub fn agent_layout(&self) -> Option<&'static str> {
        self.release().and_then(|r| r.agent_layout)
    }

    /// Whether the release's ovn-controller answers a DNS query that carries additional
    /// records (EDNS); 23.03 leaves it to the router.
    pub fn dns_answers_edns(&self) -> bool {
        self.release().is_some_and(|r| r.dns_answers_edns)
    }

    /// Whether the release's ovn-controller answers a record's addresses in a random order
    /// (26.03: a new order for every answer).
    pub fn dns_shuffles(&self) -> bool {
        self.release().is_some_and(|r| r.dns_shuffles)
    }

    /// Whether the release's ovn-controller ends a control-socket reply with a newline
    /// (its OVS library 3.1 does; 3.5 and later send the text as it is).
    pub fn appctl_reply_newline(&self) -> bool {
        self.release().is_none_or(|r| r.appctl_reply_newline)
    }

    fn release(&self) -> Option<&'static Release> {
        RELEASES.iter().find(|r| r.stack == self.name)
    }
}

/// What the harness knows of each release it runs.
struct Release {
    stack: &'static str,
    /// Version prefixes the OVN and OVS programs report.
    ovn: &'static str,
    ovs: &'static str,
    agent_layout: Option<&'static str>,
    dns_answers_edns: bool,
    dns_shuffles: bool,
    appctl_reply_newline: bool,
}

const RELEASES: [Release; 3] = [
    Release {
        stack: "system",
        ovn: "23.03.",
        ovs: "3.1.",
        agent_layout: Some("ovn-23.03"),
        dns_answers_edns: false,
        dns_shuffles: false,
        appctl_reply_newline: true,
    },
    Release {
        stack: "25.03",
        ovn: "25.03.",
        ovs: "3.5.",
        agent_layout: Some("ovn-25.03"),
        dns_answers_edns: true,
        dns_shuffles: false,
        appctl_reply_newline: false,
    },
    Release {
        stack: "26.03",
        ovn: "26.03.",
        ovs: "4.",
        agent_layout: Some("ovn-26.03"),
        dns_answers_edns: true,
        dns_shuffles: true,
        appctl_reply_newline: false,
    },
];

impl Stack {
    /// The program to run for `name`: the stack's own when it has one (a path is kept).
    pub fn program(&self, name: &str) -> OsString {
        match &self.root {
            Some(root) if !name.contains('/') => {
                let p = root.join("bin").join(name);
                if p.exists() {
                    p.into_os_string()
                } else {
                    name.into()
                }
            }
            _ => name.into(),
        }
    }

    fn share(&self, file: &str) -> String {
        let base = self.root.as_deref().unwrap_or(Path::new("/"));
        base.join("usr/share").join(file).display().to_string()
    }

    pub fn nb_schema(&self) -> String {
        self.share("ovn/ovn-nb.ovsschema")
    }

    pub fn sb_schema(&self) -> String {
        self.share("ovn/ovn-sb.ovsschema")
    }

    pub fn vswitch_schema(&self) -> String {
        self.share("openvswitch/vswitch.ovsschema")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_and_unpacked_stacks_name_their_files() {
        let s = Stack::system();
        assert_eq!(s.sb_schema(), "/usr/share/ovn/ovn-sb.ovsschema");
        assert_eq!(s.program("ovn-northd"), OsString::from("ovn-northd"));
        let dir = std::env::temp_dir().join(format!("stack-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::write(dir.join("bin/ovn-northd"), "").unwrap();
        let u = Stack {
            name: "25.03".into(),
            root: Some(dir.clone()),
        };
        assert_eq!(
            u.program("ovn-northd"),
            dir.join("bin/ovn-northd").into_os_string()
        );
        assert_eq!(
            u.program("ovs-ofctl"),
            OsString::from("ovs-ofctl"),
            "not in the stack"
        );
        assert_eq!(u.program("/x/ovn-agent"), OsString::from("/x/ovn-agent"));
        assert_eq!(
            u.vswitch_schema(),
            dir.join("usr/share/openvswitch/vswitch.ovsschema")
                .display()
                .to_string()
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
