//! The chassis configuration, read from `Open_vSwitch external_ids` as ovn-controller reads
//! it (reference §5.1): every key may be overridden for one chassis by `<key>-<system-id>`.

use std::collections::BTreeMap;

use sbclient::vswitch::OpenVswitch;

use crate::lflow::layout::TableLayout;
use crate::runtime::EncapType;

/// Why the configuration is not usable yet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    #[error("no Open_vSwitch row yet")]
    NoRow,
    #[error("no system-id: set external_ids:system-id, or pass -n/--chassis")]
    NoSystemId,
    #[error("external_ids:ovn-remote is not set")]
    NoRemote,
    #[error(
        "external_ids:ovn-encap-type is not set or names no known type (geneve, stt, vxlan): {0:?}"
    )]
    NoEncapType(String),
    #[error("external_ids:ovn-encap-ip is not set")]
    NoEncapIp,
    #[error("unknown table layout {0:?} (classic, ovn-23.03, ovn-25.03, ovn-26.03, auto)")]
    Layout(String),
}

/// What the agent needs from the local OVS configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChassisConfig {
    pub system_id: String,
    pub hostname: String,
    pub remote: String,
    pub encap_types: Vec<EncapType>,
    pub encap_ips: Vec<String>,
    pub encap_csum: bool,
    pub bridge: String,
    /// physical network name to bridge name.
    pub bridge_mappings: BTreeMap<String, String>,
    pub monitor_all: bool,
    /// `external_ids:ovn-agent-tunnel-pkt-mark=true`: carry pkt.mark across Geneve tunnels
    /// to and from chassis that advertise the same.
    pub tunnel_pkt_mark: bool,
    /// SB inactivity probe in ms (`None`: ovn-controller's default, 5000, 0 for unix:).
    pub remote_probe_ms: Option<u64>,
    /// br-int OpenFlow inactivity probe in seconds (0: off).
    pub openflow_probe_s: u64,
    pub transport_zones: Vec<String>,
    pub cms_options: String,
    pub chassis_mac_mappings: String,
    pub is_interconn: bool,
    pub layout: TableLayout,
    /// The layout is `auto`: it follows the release of the northd that writes the
    /// Southbound database.
    pub layout_auto: bool,
    /// The raw key/values, for `Chassis.other_config` mirrors.
    pub external_ids: BTreeMap<String, String>,
}

/// Reads key `k`, preferring `k-<system_id>`.
/// The key that turns the pkt.mark capability on (in `Open_vSwitch:external_ids`, with the
/// usual per-chassis override) and advertises it (in `Chassis:other_config`).
pub const TUNNEL_PKT_MARK: &str = "ovn-agent-tunnel-pkt-mark";

fn get<'a>(ids: &'a BTreeMap<String, String>, system_id: &str, k: &str) -> Option<&'a str> {
    ids.get(&format!("{k}-{system_id}"))
        .or_else(|| ids.get(k))
        .map(String::as_str)
}

fn comma_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `physnet1:br-phys,physnet2:br-eth1`.
pub fn parse_bridge_mappings(s: &str) -> BTreeMap<String, String> {
    comma_list(s)
        .iter()
        .filter_map(|m| {
            let (net, br) = m.split_once(':')?;
            Some((net.trim().to_owned(), br.trim().to_owned()))
        })
        .collect()
}

impl ChassisConfig {
    /// The configuration from the Open_vSwitch row; `chassis_override` is `-n/--chassis`,
    /// `layout_override` is `--table-layout`; `northd_release` (`YY.MM`, when the Southbound
    /// database says) decides the `auto` layout.
    pub fn from_ovs(
        row: Option<&OpenVswitch>,
        chassis_override: Option<&str>,
        layout_override: Option<&str>,
        host_name: &str,
        northd_release: Option<&str>,
    ) -> Result<Self, ConfigError> {
        let row = row.ok_or(ConfigError::NoRow)?;
        let ids: BTreeMap<String, String> = row
            .external_ids
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let system_id = chassis_override
            .map(str::to_owned)
            .or_else(|| ids.get("system-id").cloned())
            .filter(|s| !s.is_empty())
            .ok_or(ConfigError::NoSystemId)?;
        let g = |k: &str| get(&ids, &system_id, k);
        let remote = g("ovn-remote")
            .filter(|s| !s.is_empty())
            .ok_or(ConfigError::NoRemote)?
            .to_owned();
        let types_text = g("ovn-encap-type").unwrap_or_default();
        let encap_types: Vec<EncapType> = comma_list(types_text)
            .iter()
            .filter_map(|t| EncapType::parse(t))
            .collect();
        if encap_types.is_empty() {
            return Err(ConfigError::NoEncapType(types_text.to_owned()));
        }
        let encap_ips = comma_list(g("ovn-encap-ip").unwrap_or_default());
        if encap_ips.is_empty() {
            return Err(ConfigError::NoEncapIp);
        }
        let layout_name = layout_override
            .or_else(|| g("ovn-agent-table-layout"))
            .unwrap_or("classic");
        let layout_auto = layout_name == "auto";
        let layout = if layout_auto {
            TableLayout::for_northd(northd_release)
        } else {
            TableLayout::for_daemon(layout_name)
                .ok_or_else(|| ConfigError::Layout(layout_name.to_owned()))?
        };
        let truthy = |k: &str| g(k).is_some_and(|v| v == "true");
        Ok(Self {
            hostname: g("hostname").map_or_else(|| host_name.to_owned(), str::to_owned),
            remote,
            encap_types,
            encap_ips,
            encap_csum: g("ovn-encap-csum").is_none_or(|v| v != "false"),
            bridge: g("ovn-bridge").unwrap_or("br-int").to_owned(),
            bridge_mappings: parse_bridge_mappings(g("ovn-bridge-mappings").unwrap_or_default()),
            monitor_all: truthy("ovn-monitor-all"),
            tunnel_pkt_mark: truthy(TUNNEL_PKT_MARK),
            remote_probe_ms: g("ovn-remote-probe-interval").and_then(|v| v.parse().ok()),
            openflow_probe_s: g("ovn-openflow-probe-interval")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0),
            transport_zones: comma_list(g("ovn-transport-zones").unwrap_or_default()),
            cms_options: g("ovn-cms-options").unwrap_or_default().to_owned(),
            chassis_mac_mappings: g("ovn-chassis-mac-mappings").unwrap_or_default().to_owned(),
            is_interconn: truthy("ovn-is-interconn"),
            layout,
            layout_auto,
            external_ids: ids.clone(),
            system_id,
        })
    }

    /// The SB probe interval in ms: the configured one, else 5000 (0 for `unix:` remotes).
    pub fn sb_probe_ms(&self) -> u64 {
        self.remote_probe_ms
            .unwrap_or(if self.remote.starts_with("unix:") {
                0
            } else {
                5000
            })
    }

    /// The raw value of a key (with the per-chassis override).
    pub fn get(&self, k: &str) -> Option<&str> {
        get(&self.external_ids, &self.system_id, k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pairs: &[(&str, &str)]) -> OpenVswitch {
        let mut r = OpenVswitch::default();
        for (k, v) in pairs {
            r.external_ids.insert((*k).to_owned(), (*v).to_owned());
        }
        r
    }

    #[test]
    fn per_chassis_overrides_win() {
        let r = row(&[
            ("system-id", "hv1"),
            ("ovn-remote", "unix:/a"),
            ("ovn-remote-hv1", "tcp:1.2.3.4:6642"),
            ("ovn-encap-type", "geneve,vxlan"),
            ("ovn-encap-ip", "192.168.0.1"),
            ("ovn-bridge-mappings", "physnet1:br-phys, physnet2:br-eth1"),
            ("ovn-encap-csum-hv1", "false"),
        ]);
        let c = ChassisConfig::from_ovs(Some(&r), None, None, "host", None).unwrap();
        assert_eq!(c.remote, "tcp:1.2.3.4:6642");
        assert_eq!(c.encap_types, [EncapType::Geneve, EncapType::Vxlan]);
        assert_eq!(c.bridge, "br-int");
        assert_eq!(c.hostname, "host");
        assert!(!c.encap_csum);
        assert_eq!(
            c.bridge_mappings.get("physnet2").map(String::as_str),
            Some("br-eth1")
        );
        assert_eq!(c.sb_probe_ms(), 5000);
        assert_eq!(c.layout, TableLayout::CLASSIC);
        let c = ChassisConfig::from_ovs(Some(&r), Some("hv9"), Some("ovn-23.03"), "host", None)
            .unwrap();
        assert_eq!(
            (c.system_id.as_str(), c.remote.as_str()),
            ("hv9", "unix:/a")
        );
        assert_eq!(c.sb_probe_ms(), 0, "unix: remotes are not probed");
        assert_eq!(c.layout, TableLayout::OVN_23_03);
    }

    #[test]
    fn what_is_missing_is_said() {
        assert_eq!(
            ChassisConfig::from_ovs(None, None, None, "h", None),
            Err(ConfigError::NoRow)
        );
        let r = row(&[("system-id", "hv1"), ("ovn-remote", "unix:/a")]);
        assert!(matches!(
            ChassisConfig::from_ovs(Some(&r), None, None, "h", None),
            Err(ConfigError::NoEncapType(_))
        ));
    }
}
