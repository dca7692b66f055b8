//! The ovn-agent daemon: the main loop around the engine, and the commands it answers.

pub mod commands;
pub mod run;
