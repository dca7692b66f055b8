//! `ovs-appctl`/`ovn-appctl` compatible control socket (OVS unixctl).
//!
//! ```no_run
//! # async fn example(vlog: agent::vlog::Vlog) -> Result<(), Box<dyn std::error::Error>> {
//! use agent::appctl::{AppctlServer, CommandRegistry, ServerConfig};
//! let mut commands = CommandRegistry::new();
//! commands.register("exit", "", 0, 1)?;
//! let (requests_tx, mut requests) = tokio::sync::mpsc::channel(16);
//! let server = AppctlServer::bind(
//!     ServerConfig {
//!         path: "/var/run/ovn/ovn-controller.1234.ctl".into(),
//!         version: agent::appctl::version_text("ovn-controller"),
//!         reply_timeout: std::time::Duration::from_secs(30),
//!     },
//!     commands,
//!     Some(vlog),
//!     requests_tx,
//! )?;
//! while let Some(request) = requests.recv().await {
//!     let _ = request.reply.send(Ok(String::new()));
//!     if request.command == "exit" { break; }
//! }
//! server.shutdown().await;
//! # Ok(()) }
//! ```

pub mod protocol;
pub mod registry;
pub mod server;

pub use registry::{CommandRegistry, DuplicateCommand, Handler};
pub use server::{AppctlError, AppctlRequest, AppctlServer, ReplyForms, ServerConfig};

/// The OVN release whose behaviour we reproduce.
pub const COMPATIBLE_OVN_VERSION: &str = "23.03.1";

/// The internal version that `ovn-match-northd-version` compares with ovn-northd's
/// (`SB_Global options:northd_internal_version`): the OVN release, the Southbound schema
/// version, and the action count and internal minor version of the action encoding
/// (23.03.1's, which the compiler reproduces).
pub fn internal_version() -> String {
    format!(
        "{COMPATIBLE_OVN_VERSION}-{}-70.6",
        sbclient::ovn_sb::VERSION
    )
}

/// The `version` reply. Its first line ends in an OVN version because ovn-ctl takes the
/// last field of that line (`awk 'NR==1{print $NF}'`) and only sends `exit` (graceful stop)
/// to daemons whose version is >= 2.5.90; anything else is killed with SIGTERM.
/// The second line gives the internal version northd matching uses.
pub fn version_text(program: &str) -> String {
    format!(
        "{program} {} compatible with ovn-controller {COMPATIBLE_OVN_VERSION}\nOVN internal version {}\n",
        env!("CARGO_PKG_VERSION"),
        internal_version()
    )
}

#[cfg(test)]
mod release_tests {
    #[test]
    fn the_base_release_row_has_the_internal_version_we_report() {
        assert_eq!(
            crate::lflow::dialect::OVN_23_03.internal_version,
            super::internal_version()
        );
    }
}
