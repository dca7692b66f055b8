//! The ovn-agent daemon: process plumbing (command line, pidfile, `--detach`, signals), the
//! main loop around the engine, and the control commands it answers.

pub mod args;
pub mod commands;
mod db_events;
mod loop_config;
mod main_loop;
pub mod notify;
pub mod os_error;
pub mod pidfile;
mod pinctrl_link;
pub mod process;
pub mod program;
pub mod refused;
pub mod run;
pub mod signals;
pub mod ssl;
mod tasks;
mod turn;

pub use args::{parse_invocation, DaemonArgs, DaemonConfig, Invocation, SslOptions};
pub use pidfile::{Pidfile, PidfileError};
pub use process::{run_detach_parent, DaemonProcess, ProcessError};
pub use program::{Dirs, Program};
pub use signals::{ShutdownSignals, TerminatingSignal};
