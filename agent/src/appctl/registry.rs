//! The unixctl command table: names, usage texts and argument counts, for
//! `list-commands` and for checking requests before anything runs them.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::vlog::VLOG_COMMANDS;

/// Who answers a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handler {
    /// `list-commands`, answered by the server.
    ListCommands,
    /// `version`, answered by the server.
    Version,
    /// A `vlog/*` command, answered by the server from the logging state.
    Vlog,
    /// `set-options [--format text|json]` (OVS 3.3's library on): the connection's output
    /// format, answered by the server.
    SetOptions,
    /// Everything else: sent to the main loop as an [`super::AppctlRequest`].
    Forward,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    /// `None`: hidden from `list-commands` (OVS registers such commands with a NULL usage).
    usage: Option<String>,
    min_args: usize,
    max_args: usize,
    handler: Handler,
    /// The release (`YY.MM`) from which the command is gone (a later library or
    /// ovn-controller dropped it); `None`: every release has it.
    until: Option<&'static str>,
    /// The first release that has it.
    since: &'static str,
}

/// A command name registered twice.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unixctl command {0:?} is already registered")]
pub struct DuplicateCommand(pub String);

/// The commands a server answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandRegistry {
    commands: BTreeMap<String, Entry>,
}

impl Default for CommandRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl CommandRegistry {
    /// `list-commands` and `version`, which every unixctl server has.
    pub fn new() -> CommandRegistry {
        let mut registry = CommandRegistry {
            commands: BTreeMap::new(),
        };
        registry.insert("list-commands", Some(""), 0, 0, Handler::ListCommands);
        registry.insert("version", Some(""), 0, 0, Handler::Version);
        registry.insert(
            "set-options",
            Some("[--format text|json]"),
            1,
            2,
            Handler::SetOptions,
        );
        registry.introduce("set-options", "25.03");
        registry
    }

    /// Adds the `vlog/*` commands (the server answers them from its [`crate::vlog::Vlog`]).
    pub fn with_vlog_commands(mut self) -> CommandRegistry {
        for command in VLOG_COMMANDS {
            self.insert(
                command.name,
                Some(command.usage),
                command.min_args,
                command.max_args,
                Handler::Vlog,
            );
        }
        self
    }

    fn insert(
        &mut self,
        name: &str,
        usage: Option<&str>,
        min_args: usize,
        max_args: usize,
        handler: Handler,
    ) {
        self.commands.insert(
            name.to_string(),
            Entry {
                usage: usage.map(str::to_string),
                min_args,
                max_args,
                handler,
                until: None,
                since: "23.03",
            },
        );
    }

    /// Marks `name` as new in release `release` (`YY.MM`): earlier releases' servers
    /// neither list nor answer it.
    pub fn introduce(&mut self, name: &str, release: &'static str) {
        if let Some(e) = self.commands.get_mut(name) {
            e.since = release;
        }
    }

    /// Marks `name` as gone from release `release` on (`YY.MM`): that release's server
    /// neither lists nor answers it.
    pub fn retire(&mut self, name: &str, release: &'static str) {
        if let Some(e) = self.commands.get_mut(name) {
            e.until = Some(release);
        }
    }

    fn entry(&self, name: &str, release: &str) -> Option<&Entry> {
        self.commands
            .get(name)
            .filter(|e| e.since <= release && e.until.is_none_or(|u| release < u))
    }

    /// Registers a command the main loop answers. `usage` is what `list-commands` shows
    /// after the name (e.g. `"[NAME]"`, or `""`).
    pub fn register(
        &mut self,
        name: &str,
        usage: &str,
        min_args: usize,
        max_args: usize,
    ) -> Result<(), DuplicateCommand> {
        self.register_with_usage(name, Some(usage), min_args, max_args)
    }

    /// Like [`CommandRegistry::register`] but not shown by `list-commands`.
    pub fn register_hidden(
        &mut self,
        name: &str,
        min_args: usize,
        max_args: usize,
    ) -> Result<(), DuplicateCommand> {
        self.register_with_usage(name, None, min_args, max_args)
    }

    fn register_with_usage(
        &mut self,
        name: &str,
        usage: Option<&str>,
        min_args: usize,
        max_args: usize,
    ) -> Result<(), DuplicateCommand> {
        if self.commands.contains_key(name) {
            return Err(DuplicateCommand(name.to_string()));
        }
        self.insert(name, usage, min_args, max_args, Handler::Forward);
        Ok(())
    }

    pub fn contains(&self, name: &str) -> bool {
        self.commands.contains_key(name)
    }

    /// `list-commands` under `--format json`: each listed command's usage by name.
    pub fn list_commands_json(&self, release: &str) -> serde_json::Value {
        let mut out = serde_json::Map::new();
        for (name, entry) in &self.commands {
            if let (Some(_), Some(usage)) = (self.entry(name, release), &entry.usage) {
                out.insert(name.clone(), serde_json::Value::from(usage.as_str()));
            }
        }
        serde_json::Value::Object(out)
    }

    /// The `list-commands` reply of release `release`, byte for byte as OVS formats it.
    pub fn list_commands(&self, release: &str) -> String {
        let mut out = String::from("The available commands are:\n");
        for (name, entry) in &self.commands {
            if self.entry(name, release).is_none() {
                continue;
            }
            if let Some(usage) = &entry.usage {
                let _ = writeln!(out, "  {name:<23} {usage}");
            }
        }
        out
    }

    /// Checks a request as OVS's `process_command()` does, in the same order, with the same
    /// error texts. `params_are_strings` is false if any parameter is not a JSON string.
    pub fn check(
        &self,
        method: &str,
        n_params: usize,
        params_are_strings: bool,
        release: &str,
    ) -> Result<Handler, String> {
        let Some(entry) = self.entry(method, release) else {
            return Err(format!(
                "\"{method}\" is not a valid command (use \"list-commands\" to see a list of valid commands)"
            ));
        };
        if n_params < entry.min_args {
            return Err(format!(
                "\"{method}\" command requires at least {} arguments",
                entry.min_args
            ));
        }
        if n_params > entry.max_args {
            return Err(format!(
                "\"{method}\" command takes at most {} arguments",
                entry.max_args
            ));
        }
        if !params_are_strings {
            return Err(format!("\"{method}\" command has non-string argument"));
        }
        Ok(entry.handler)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retired_command_is_gone_from_its_release_on() {
        let mut registry = CommandRegistry::new();
        registry
            .register("tnl/egress_port_range", "min max", 0, 2)
            .unwrap();
        registry.retire("tnl/egress_port_range", "25.03");
        assert!(registry
            .list_commands("23.03")
            .contains("tnl/egress_port_range"));
        assert!(!registry
            .list_commands("25.03")
            .contains("tnl/egress_port_range"));
        assert!(registry
            .check("tnl/egress_port_range", 0, true, "23.03")
            .is_ok());
        assert_eq!(
            registry.check("tnl/egress_port_range", 0, true, "26.03"),
            Err("\"tnl/egress_port_range\" is not a valid command (use \"list-commands\" to see a list of valid commands)".into())
        );
    }

    #[test]
    fn list_commands_matches_ovn_controller_layout() {
        let mut registry = CommandRegistry::new().with_vlog_commands();
        registry.register("exit", "", 0, 1).unwrap();
        registry
            .register("debug/delay-nb-cfg-report", "SECONDS", 1, 1)
            .unwrap();
        registry.register("stopwatch/show", "[NAME]", 0, 1).unwrap();
        registry.register_hidden("debug/secret", 0, 0).unwrap();
        assert_eq!(
            registry.list_commands("23.03"),
            "The available commands are:\n\
             \x20 debug/delay-nb-cfg-report SECONDS\n\
             \x20 exit                    \n\
             \x20 list-commands           \n\
             \x20 stopwatch/show          [NAME]\n\
             \x20 version                 \n\
             \x20 vlog/close              \n\
             \x20 vlog/disable-rate-limit [module]...\n\
             \x20 vlog/enable-rate-limit  [module]...\n\
             \x20 vlog/list               \n\
             \x20 vlog/list-pattern       \n\
             \x20 vlog/reopen             \n\
             \x20 vlog/set                {spec | PATTERN:destination:pattern}\n"
        );
        assert!(registry.contains("debug/secret"));
        assert_eq!(
            registry.register("exit", "", 0, 0),
            Err(DuplicateCommand("exit".into()))
        );
    }

    #[test]
    fn checks_in_ovs_order_with_ovs_texts() {
        let mut registry = CommandRegistry::new();
        registry
            .register("coverage/read-counter", "COUNTER", 1, 1)
            .unwrap();
        assert_eq!(
            registry.check("bogus", 2, true, "23.03"),
            Err("\"bogus\" is not a valid command (use \"list-commands\" to see a list of valid commands)".into())
        );
        assert_eq!(
            registry.check("coverage/read-counter", 0, true, "23.03"),
            Err("\"coverage/read-counter\" command requires at least 1 arguments".into())
        );
        assert_eq!(
            registry.check("version", 1, false, "23.03"),
            Err("\"version\" command takes at most 0 arguments".into())
        );
        assert_eq!(
            registry.check("coverage/read-counter", 1, false, "23.03"),
            Err("\"coverage/read-counter\" command has non-string argument".into())
        );
        assert_eq!(
            registry.check("coverage/read-counter", 1, true, "23.03"),
            Ok(Handler::Forward)
        );
        assert_eq!(
            registry.check("list-commands", 0, true, "23.03"),
            Ok(Handler::ListCommands)
        );
    }
}
