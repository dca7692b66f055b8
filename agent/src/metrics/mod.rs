//! The opt-in Prometheus endpoint (`--metrics=ADDR:PORT`).
//!
//! Two sets of metrics:
//! - `ovn_controller_*`: the names and types ovn-kubernetes exports for ovn-controller (it
//!   scrapes `ovn-appctl` and OVS for them), for those whose data the agent has, so its
//!   dashboards and alerts work on the agent's own endpoint;
//! - `ovn_agent_*`: what the agent alone knows (compile and install times, flows per table,
//!   bundle sizes, Southbound-to-switch lag, claims, recompute reasons, refusals).
//!
//! The handles are prometheus-client atomics shared through an `Arc<Metrics>`: the main loop
//! writes them through an [`Observer`] after each engine run and each confirmed put, and the
//! HTTP task ([`MetricsServer`]) encodes them for each scrape without ever reaching the
//! engine.

pub mod observe;
pub mod server;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

pub use observe::{Observer, PutSent};
pub use server::{MetricsError, MetricsServer, ServerLimits};

/// The content type of [`Metrics::encode`]'s text (what Prometheus asks for first).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// `ovn_controller_build_info`'s labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BuildLabels {
    pub version: String,
    pub ovs_lib_version: String,
}

/// `ovn_agent_build_info`'s labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AgentBuildLabels {
    pub version: String,
}

/// One OpenFlow table.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TableLabels {
    pub table: u8,
}

/// Why every flow was recompiled.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    pub reason: String,
}

/// Whether an engine run recompiled everything or only what changed.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ModeLabels {
    pub mode: &'static str,
}

/// ovn-kubernetes' "constant 1 labelled by the value" gauges each have their own label name.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct IpAddressLabels {
    pub ipaddress: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TypeLabels {
    pub r#type: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ConnectionMethodLabels {
    pub connection_method: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MappingLabels {
    pub mapping: String,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;
type FloatGauge = Gauge<f64, std::sync::atomic::AtomicU64>;

/// Seconds, from 1 ms to about 65 s.
fn duration_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

/// Message counts, from 1 to about a million.
fn message_buckets() -> Histogram {
    Histogram::new(exponential_buckets(1.0, 4.0, 11))
}

/// Bytes, from 64 to about 256 MiB.
fn byte_buckets() -> Histogram {
    Histogram::new(exponential_buckets(64.0, 4.0, 12))
}

/// The `stopwatch/show` stopwatches ovn-kubernetes exports, by its metric prefix.
pub const STOPWATCHES: &[(&str, &str)] = &[
    ("bfd_run", "bfd-run"),
    ("ct_zone_commit", "ct-zone-commit"),
    ("flow_generation", "flow-generation"),
    ("flow_installation", "flow-installation"),
    ("if_status_mgr_run", "if-status-mgr-run"),
    ("if_status_mgr_update", "if-status-mgr-update"),
    ("ofctrl_seqno_run", "ofctrl-seqno-run"),
    ("patch_run", "patch-run"),
    ("pinctrl_run", "pinctrl-run"),
];

/// One stopwatch as six gauges (milliseconds, as `stopwatch/show` prints them).
#[derive(Debug, Default)]
pub struct StopwatchGauges {
    pub total_samples: Gauge,
    pub maximum: Gauge,
    pub minimum: Gauge,
    pub percentile_95: FloatGauge,
    pub short_term_avg: FloatGauge,
    pub long_term_avg: FloatGauge,
}

/// The metrics of ovn-kubernetes' ovn-controller exporter that the agent can fill.
#[derive(Debug)]
pub struct OvnControllerMetrics {
    pub build_info: Family<BuildLabels, Gauge>,
    pub southbound_database_connected: Gauge,
    /// A counter in ovn-kubernetes (which reads `ovs-ofctl dump-aggregate`): kept so, though
    /// it goes down when flows go.
    pub integration_bridge_openflow: Counter,
    pub integration_bridge_patch_ports: Gauge,
    pub integration_bridge_geneve_ports: Gauge,
    pub remote_probe_interval_seconds: FloatGauge,
    pub openflow_probe_interval_seconds: Gauge,
    pub monitor_all: Gauge,
    pub encap_ip: Family<IpAddressLabels, Gauge>,
    pub encap_type: Family<TypeLabels, Gauge>,
    pub sb_connection_method: Family<ConnectionMethodLabels, Gauge>,
    pub bridge_mappings: Family<MappingLabels, Gauge>,
    /// The `lflow_run` coverage counter: full translations of the Logical_Flow table.
    pub lflow_run: Gauge,
    /// By stopwatch name ([`STOPWATCHES`] order).
    pub stopwatches: Vec<(&'static str, StopwatchGauges)>,
}

impl Default for OvnControllerMetrics {
    fn default() -> Self {
        Self {
            build_info: Family::default(),
            southbound_database_connected: Gauge::default(),
            integration_bridge_openflow: Counter::default(),
            integration_bridge_patch_ports: Gauge::default(),
            integration_bridge_geneve_ports: Gauge::default(),
            remote_probe_interval_seconds: FloatGauge::default(),
            openflow_probe_interval_seconds: Gauge::default(),
            monitor_all: Gauge::default(),
            encap_ip: Family::default(),
            encap_type: Family::default(),
            sb_connection_method: Family::default(),
            bridge_mappings: Family::default(),
            lflow_run: Gauge::default(),
            stopwatches: STOPWATCHES
                .iter()
                .map(|(_, name)| (*name, StopwatchGauges::default()))
                .collect(),
        }
    }
}

/// The agent's own metrics.
#[derive(Debug)]
pub struct AgentMetrics {
    pub build_info: Family<AgentBuildLabels, Gauge>,
    pub engine_runs: Counter,
    pub compile_duration_seconds: HistogramFamily<ModeLabels>,
    pub full_recomputes: Family<ReasonLabels, Counter>,
    pub incremental_lflows: Counter,
    pub flows: Family<TableLabels, Gauge>,
    pub flow_mods: Counter,
    pub bundle_messages: Histogram,
    pub bundle_bytes: Histogram,
    pub bundle_duration_seconds: Histogram,
    pub bundle_failures: Counter,
    pub sb_lag_seconds: Histogram,
    pub port_claims: Counter,
    pub port_releases: Counter,
    pub bound_ports: Gauge,
    pub rejected_lflows: Gauge,
    pub rejected_flows: Counter,
    pub bad_rows: Counter,
    pub openflow_connected: Gauge,
}

impl Default for AgentMetrics {
    fn default() -> Self {
        Self {
            build_info: Family::default(),
            engine_runs: Counter::default(),
            compile_duration_seconds: Family::new_with_constructor(duration_buckets),
            full_recomputes: Family::default(),
            incremental_lflows: Counter::default(),
            flows: Family::default(),
            flow_mods: Counter::default(),
            bundle_messages: message_buckets(),
            bundle_bytes: byte_buckets(),
            bundle_duration_seconds: duration_buckets(),
            bundle_failures: Counter::default(),
            sb_lag_seconds: duration_buckets(),
            port_claims: Counter::default(),
            port_releases: Counter::default(),
            bound_ports: Gauge::default(),
            rejected_lflows: Gauge::default(),
            rejected_flows: Counter::default(),
            bad_rows: Counter::default(),
            openflow_connected: Gauge::default(),
        }
    }
}

/// Every metric, and the registry that encodes them.
#[derive(Debug)]
pub struct Metrics {
    pub ovn: OvnControllerMetrics,
    pub agent: AgentMetrics,
    registry: Registry,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let ovn = OvnControllerMetrics::default();
        let agent = AgentMetrics::default();
        let mut registry = Registry::default();
        register_ovn_controller(&mut registry, &ovn);
        register_agent(&mut registry, &agent);
        ovn.build_info
            .get_or_create(&BuildLabels {
                version: crate::appctl::COMPATIBLE_OVN_VERSION.to_owned(),
                // The agent does not use the Open vSwitch library.
                ovs_lib_version: String::new(),
            })
            .set(1);
        agent
            .build_info
            .get_or_create(&AgentBuildLabels {
                version: env!("CARGO_PKG_VERSION").to_owned(),
            })
            .set(1);
        Self {
            ovn,
            agent,
            registry,
        }
    }

    /// Every metric in the OpenMetrics text format ([`CONTENT_TYPE`]).
    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(8 * 1024);
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

// Help texts get a final "." from the registry.

fn register_ovn_controller(r: &mut Registry, m: &OvnControllerMetrics) {
    // Names and types as ovn-kubernetes exports them for ovn-controller; help in our words.
    r.register(
        "ovn_controller_build_info",
        "Always 1; version is the ovn-controller release the agent is compatible with, \
         ovs_lib_version is empty (the agent does not use the Open vSwitch library)",
        m.build_info.clone(),
    );
    r.register(
        "ovn_controller_southbound_database_connected",
        "1 while connected to the OVN Southbound database, else 0",
        m.southbound_database_connected.clone(),
    );
    r.register(
        "ovn_controller_integration_bridge_openflow",
        "OpenFlow flows the agent keeps in the integration bridge (what the switch has once \
         the last bundle is confirmed; a counter, as ovn-kubernetes types it, that also goes \
         down)",
        m.integration_bridge_openflow.clone(),
    );
    r.register(
        "ovn_controller_integration_bridge_patch_ports",
        "Patch interfaces whose name contains the integration bridge's (both ends of each \
         link between it and another bridge, as ovn-kubernetes counts them)",
        m.integration_bridge_patch_ports.clone(),
    );
    r.register(
        "ovn_controller_integration_bridge_geneve_ports",
        "Geneve tunnel interfaces in the local Open vSwitch database",
        m.integration_bridge_geneve_ports.clone(),
    );
    r.register(
        "ovn_controller_remote_probe_interval_seconds",
        "Inactivity probe interval of the Southbound connection in use (5 unless \
         ovn-remote-probe-interval says otherwise, 0 for unix: remotes)",
        m.remote_probe_interval_seconds.clone(),
    );
    r.register(
        "ovn_controller_openflow_probe_interval_seconds",
        "Inactivity probe interval of the OpenFlow connection to the integration bridge \
         (0: off)",
        m.openflow_probe_interval_seconds.clone(),
    );
    r.register(
        "ovn_controller_monitor_all",
        "1 if ovn-monitor-all asks for every Southbound row, 0 if only the rows this chassis \
         needs are monitored",
        m.monitor_all.clone(),
    );
    r.register(
        "ovn_controller_encap_ip",
        "Always 1, labelled by ovn-encap-ip",
        m.encap_ip.clone(),
    );
    r.register(
        "ovn_controller_encap_type",
        "Always 1, labelled by ovn-encap-type",
        m.encap_type.clone(),
    );
    r.register(
        "ovn_controller_sb_connection_method",
        "Always 1, labelled by the ovn-remote in use",
        m.sb_connection_method.clone(),
    );
    r.register(
        "ovn_controller_bridge_mappings",
        "Always 1, labelled by ovn-bridge-mappings (physical network to bridge)",
        m.bridge_mappings.clone(),
    );
    r.register(
        "ovn_controller_lflow_run",
        "Full translations of the Logical_Flow table into OpenFlow (ovn-controller's \
         lflow_run coverage counter; a gauge, as ovn-kubernetes types it)",
        m.lflow_run.clone(),
    );
    for ((prefix, name), (_, g)) in STOPWATCHES.iter().zip(&m.stopwatches) {
        let metric = |what: &str| format!("ovn_controller_{prefix}_{what}");
        let help = |what: &str| format!("{what} of the {name} stopwatch (stopwatch/show)");
        r.register(
            metric("total_samples"),
            help("Samples"),
            g.total_samples.clone(),
        );
        r.register(
            metric("maximum"),
            help("Longest sample in ms"),
            g.maximum.clone(),
        );
        r.register(
            metric("minimum"),
            help("Shortest sample in ms"),
            g.minimum.clone(),
        );
        r.register(
            metric("95th_percentile"),
            help("95th percentile in ms"),
            g.percentile_95.clone(),
        );
        r.register(
            metric("short_term_avg"),
            help("Short-term moving average in ms"),
            g.short_term_avg.clone(),
        );
        r.register(
            metric("long_term_avg"),
            help("Long-term moving average in ms"),
            g.long_term_avg.clone(),
        );
    }
}

fn register_agent(r: &mut Registry, m: &AgentMetrics) {
    r.register(
        "ovn_agent_build_info",
        "A metric with a constant '1' value labeled by the ovn-agent version",
        m.build_info.clone(),
    );
    r.register(
        "ovn_agent_engine_runs",
        "Engine runs (each turn of the main loop that had something to look at)",
        m.engine_runs.clone(),
    );
    r.register(
        "ovn_agent_compile_duration_seconds",
        "Duration of the engine runs that compiled flows: mode=full recompiled every owner, \
         mode=incremental only the logical flows a change touched",
        m.compile_duration_seconds.clone(),
    );
    r.register(
        "ovn_agent_full_recomputes",
        "Full recomputes (every flow compiled again), by the change that could not be \
         handled incrementally",
        m.full_recomputes.clone(),
    );
    r.register(
        "ovn_agent_incremental_lflows",
        "Logical flows compiled again one by one by incremental runs",
        m.incremental_lflows.clone(),
    );
    r.register(
        "ovn_agent_flows",
        "OpenFlow flows the agent wants in the integration bridge, by table",
        m.flows.clone(),
    );
    r.register(
        "ovn_agent_flow_mods",
        "Flow_mods sent to the switch",
        m.flow_mods.clone(),
    );
    r.register(
        "ovn_agent_bundle_messages",
        "Messages (flow, group mods) per OpenFlow bundle sent to the switch",
        m.bundle_messages.clone(),
    );
    r.register(
        "ovn_agent_bundle_bytes",
        "Encoded size of each OpenFlow bundle sent to the switch",
        m.bundle_bytes.clone(),
    );
    r.register(
        "ovn_agent_bundle_duration_seconds",
        "Time from sending an OpenFlow bundle to the switch's confirmation (barrier reply \
         or refusal)",
        m.bundle_duration_seconds.clone(),
    );
    r.register(
        "ovn_agent_bundle_failures",
        "Bundles the switch refused or that were lost with the connection",
        m.bundle_failures.clone(),
    );
    r.register(
        "ovn_agent_sb_lag_seconds",
        "Time from the engine run that first saw a Southbound change to the confirmed bundle \
         that carries its flows (changes that alter no flow are not counted)",
        m.sb_lag_seconds.clone(),
    );
    r.register(
        "ovn_agent_port_claims",
        "Port_Bindings this chassis started to bind (claims) since the agent started",
        m.port_claims.clone(),
    );
    r.register(
        "ovn_agent_port_releases",
        "Port_Bindings this chassis stopped binding (released, or deleted from the \
         Southbound database) since the agent started",
        m.port_releases.clone(),
    );
    r.register(
        "ovn_agent_bound_ports",
        "Port_Bindings bound to this chassis now",
        m.bound_ports.clone(),
    );
    r.register(
        "ovn_agent_rejected_lflows",
        "Logical flows left out now: they did not compile, or the switch refused their flows",
        m.rejected_lflows.clone(),
    );
    r.register(
        "ovn_agent_rejected_flows",
        "OpenFlow flows left out because they could not be encoded or the switch refused them",
        m.rejected_flows.clone(),
    );
    r.register(
        "ovn_agent_bad_rows",
        "Unusable database rows and logical flows (logged, counted and skipped)",
        m.bad_rows.clone(),
    );
    r.register(
        "ovn_agent_openflow_connected",
        "Whether the OpenFlow connection to the integration bridge is up (1) or not (0)",
        m.openflow_connected.clone(),
    );
}

#[cfg(test)]
mod tests;
