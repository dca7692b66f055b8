//! What the main loop is started with and how it ends: its configuration, the local OVS
//! columns it monitors, its exit and its errors (shared by `run.rs` and `main_loop.rs`).

use std::path::PathBuf;

use crate::engine::core::EngineOptions;

/// The Open_vSwitch columns the agent reads (as ovn-controller's OVS IDL registers them):
/// statistics and other busy columns stay unmonitored.
pub(super) const OVS_COLUMNS: [(&str, &[&str]); 8] = [
    (
        "Open_vSwitch",
        &[
            "external_ids",
            "other_config",
            "bridges",
            "datapaths",
            "iface_types",
            "ssl",
        ],
    ),
    (
        "SSL",
        &["private_key", "certificate", "ca_cert", "bootstrap_ca_cert"],
    ),
    (
        "Bridge",
        &[
            "name",
            "ports",
            "mirrors",
            "fail_mode",
            "other_config",
            "external_ids",
            "datapath_type",
        ],
    ),
    ("Port", &["name", "interfaces", "external_ids"]),
    (
        "Interface",
        &[
            "name",
            "type",
            "options",
            "ofport",
            "external_ids",
            "mtu",
            "mtu_request",
            "bfd",
            "bfd_status",
        ],
    ),
    ("Datapath", &["capabilities"]),
    (
        "Mirror",
        &[
            "name",
            "output_port",
            "select_src_port",
            "select_dst_port",
            "external_ids",
        ],
    ),
    ("Flow_Sample_Collector_Set", &["id", "bridge"]),
];

/// What the daemon was started with.
#[derive(Clone, Debug)]
pub struct LoopConfig {
    /// The local OVS database (`unix:/var/run/openvswitch/db.sock`).
    pub ovs_remote: String,
    /// `OVS_RUNDIR`, where `<bridge>.mgmt` is.
    pub ovs_rundir: PathBuf,
    pub engine: EngineOptions,
    /// Program name (`ovn-controller` or `ovn-agent`) for `version`.
    pub program: String,
    /// `--metrics`: the metrics the loop keeps up to date.
    pub metrics: Option<std::sync::Arc<crate::metrics::Metrics>>,
    /// The command line's SSL settings (`-p/-c/-C`, ...): for an `ssl:` OVS database,
    /// and for the Southbound when the OVS database has no `SSL` row.
    pub tls: Option<sbclient::client::TlsSettings>,
    /// The control socket's reply forms, set to those of the release the agent speaks.
    pub appctl_replies: Option<crate::appctl::ReplyForms>,
}

pub use crate::appctl::AppctlRequest as Request;

/// How the daemon ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// `exit`: the chassis was removed from the Southbound database.
    Cleaned,
    /// `exit --restart`, SIGTERM: everything left as it is for the next start.
    Restart,
}

/// Why the daemon could not run.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("bad OVS database remote {0:?}: {1}")]
    OvsRemote(String, String),
}
