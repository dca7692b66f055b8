//! The `vlog/*` unixctl commands, with OVS's names, usage texts and argument counts.

use super::state::Vlog;

/// A `vlog/*` command: name, usage for `list-commands`, minimum and maximum arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VlogCommand {
    pub name: &'static str,
    pub usage: &'static str,
    pub min_args: usize,
    pub max_args: usize,
}

pub const VLOG_COMMANDS: &[VlogCommand] = &[
    VlogCommand {
        name: "vlog/set",
        usage: "{spec | PATTERN:destination:pattern}",
        min_args: 0,
        max_args: usize::MAX,
    },
    VlogCommand {
        name: "vlog/list",
        usage: "",
        min_args: 0,
        max_args: 0,
    },
    VlogCommand {
        name: "vlog/list-pattern",
        usage: "",
        min_args: 0,
        max_args: 0,
    },
    VlogCommand {
        name: "vlog/enable-rate-limit",
        usage: "[module]...",
        min_args: 0,
        max_args: usize::MAX,
    },
    VlogCommand {
        name: "vlog/disable-rate-limit",
        usage: "[module]...",
        min_args: 0,
        max_args: usize::MAX,
    },
    VlogCommand {
        name: "vlog/reopen",
        usage: "",
        min_args: 0,
        max_args: 0,
    },
    VlogCommand {
        name: "vlog/close",
        usage: "",
        min_args: 0,
        max_args: 0,
    },
];

impl Vlog {
    /// Runs a `vlog/*` command whose argument count has been checked. `None` if `name` is
    /// not one of [`VLOG_COMMANDS`].
    pub fn run_command(&self, name: &str, args: &[String]) -> Option<Result<String, String>> {
        let outcome = match name {
            "vlog/set" => {
                if args.is_empty() {
                    self.set_levels(None, None, super::Level::Dbg);
                }
                args.iter()
                    .try_for_each(|spec| self.apply_spec(spec))
                    .map(|()| String::new())
            }
            "vlog/list" => Ok(self.list()),
            "vlog/list-pattern" => Ok(self.list_patterns()),
            "vlog/enable-rate-limit" => self.set_rate_limits(args, true).map(|()| String::new()),
            "vlog/disable-rate-limit" => self.set_rate_limits(args, false).map(|()| String::new()),
            "vlog/reopen" => self.reopen().map(|()| String::new()),
            "vlog/close" => {
                self.close_file();
                Ok(String::new())
            }
            _ => return None,
        };
        Some(outcome)
    }
}
