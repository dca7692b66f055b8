//! The part of containerlab's topology file format (https://containerlab.dev/manual/topo-def-file/,
//! JSON schema `schemas/clab.schema.json` of srl-labs/containerlab) that containers/ovn.clab.yml
//! uses, as typed structs. Keys the lab does not use are only accepted where containerlab
//! documents them; a misspelt key is an error, as is a kind containerlab does not know.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::de::{Error as _, IgnoredAny};
use serde::{Deserialize, Deserializer};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    pub name: String,
    pub topology: TopologySection,
    // Documented keys the lab does not use: accepted, not read.
    #[serde(default, rename = "prefix")]
    _prefix: Option<IgnoredAny>,
    #[serde(default, rename = "mgmt")]
    _mgmt: Option<IgnoredAny>,
    #[serde(default, rename = "settings")]
    _settings: Option<IgnoredAny>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologySection {
    pub nodes: BTreeMap<String, Node>,
    #[serde(default)]
    pub links: Vec<Link>,
    #[serde(default, rename = "defaults")]
    _defaults: Option<IgnoredAny>,
    #[serde(default, rename = "kinds")]
    _kinds: Option<IgnoredAny>,
    #[serde(default, rename = "groups")]
    _groups: Option<IgnoredAny>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Node {
    pub kind: Kind,
    #[serde(default)]
    pub image: Option<String>,
    #[serde(default)]
    pub env: BTreeMap<String, EnvValue>,
    /// Commands containerlab runs in the node once it is up.
    #[serde(default)]
    pub exec: Vec<String>,
    /// `host-path:container-path[:ro]`.
    #[serde(default)]
    pub binds: Vec<String>,
    #[serde(default)]
    pub cmd: Option<String>,
    #[serde(default)]
    pub entrypoint: Option<String>,
    #[serde(default)]
    pub healthcheck: Option<Healthcheck>,
    #[serde(default, rename = "mgmt-ipv4")]
    _mgmt_ipv4: Option<IgnoredAny>,
    #[serde(default, rename = "stages")]
    _stages: Option<IgnoredAny>,
}

impl Node {
    pub fn env_value(&self, key: &str) -> Option<String> {
        self.env.get(key).map(ToString::to_string)
    }
}

/// The schema allows strings and numbers as values of `env`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum EnvValue {
    Text(String),
    Integer(i64),
    Float(f64),
}

impl fmt::Display for EnvValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Text(s) => f.write_str(s),
            Self::Integer(n) => write!(f, "{n}"),
            Self::Float(x) => write!(f, "{x}"),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Healthcheck {
    pub test: Vec<String>,
    #[serde(default)]
    pub start_period: Option<u64>,
    #[serde(default)]
    pub interval: Option<u64>,
    #[serde(default)]
    pub timeout: Option<u64>,
    #[serde(default)]
    pub retries: Option<u64>,
}

/// A link in the brief form, a veth pair between its two endpoints.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    pub endpoints: Vec<Endpoint>,
}

/// `node:interface`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Endpoint {
    pub node: String,
    pub interface: String,
}

impl<'de> Deserialize<'de> for Endpoint {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        let (node, interface) = text
            .split_once(':')
            .filter(|(n, i)| !n.is_empty() && !i.is_empty())
            .filter(|_| !text.contains(char::is_whitespace))
            .ok_or_else(|| D::Error::custom(format!("endpoint {text:?} is not NODE:INTERFACE")))?;
        Ok(Self {
            node: node.to_owned(),
            interface: interface.to_owned(),
        })
    }
}

/// Node kinds containerlab knows (the `kind` enum of its schema).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// Any container image.
    Linux,
    /// A kind for a vendor's network OS or a special node; the lab uses none.
    Other(String),
}

const KINDS: &[&str] = &[
    "srl",
    "nokia_srlinux",
    "ceos",
    "arista_ceos",
    "crpd",
    "juniper_crpd",
    "sonic-vs",
    "sonic-vm",
    "vr-sros",
    "nokia_sros",
    "vr-nokia_sros",
    "vr-vmx",
    "vr-juniper_vmx",
    "juniper_vmx",
    "vr-vqfx",
    "vr-juniper_vqfx",
    "juniper_vqfx",
    "vr-vsrx",
    "vr-juniper_vsrx",
    "juniper_vsrx",
    "juniper_vjunosrouter",
    "juniper_vjunosswitch",
    "juniper_vjunosevolved",
    "vr-xrv",
    "vr-cisco_xrv",
    "cisco_xrv",
    "vr-xrv9k",
    "vr-cisco_xrv9k",
    "cisco_xrv9k",
    "vr-veos",
    "vr-arista_veos",
    "arista_veos",
    "vr-csr",
    "vr-cisco_csr",
    "cisco_csr1000v",
    "vr-pan",
    "vr-paloalto_panos",
    "paloalto_panos",
    "vr-ros",
    "vr-mikrotik_ros",
    "mikrotik_ros",
    "vr-n9kv",
    "vr-cisco_n9kv",
    "cisco_n9kv",
    "cisco_ftdv",
    "dell_ftosv",
    "dell_sonic",
    "vr-aoscx",
    "vr-aruba_aoscx",
    "aruba_aoscx",
    "linux",
    "bridge",
    "ovs-bridge",
    "border0",
    "host",
    "keysight_ixia-c-one",
    "ipinfusion_ocnos",
    "checkpoint_cloudguard",
    "ext-container",
    "xrd",
    "rare",
    "cisco_xrd",
    "c8000",
    "cisco_c8000",
    "cisco_c8000v",
    "cisco_cat9kv",
    "cisco_iol",
    "cvx",
    "cumulus_cvx",
    "openbsd",
    "freebsd",
    "generic_vm",
    "fortinet_fortigate",
    "k8s-kind",
];

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        match text.as_str() {
            "linux" => Ok(Self::Linux),
            known if KINDS.contains(&known) => Ok(Self::Other(text)),
            unknown => Err(D::Error::custom(format!(
                "unknown containerlab kind {unknown:?}"
            ))),
        }
    }
}

/// Containerlab's limit on interface names (the kernel's IFNAMSIZ less the NUL).
const MAX_INTERFACE_NAME: usize = 15;

impl Topology {
    pub fn parse(yaml: &str) -> Result<Self, serde_saphyr::Error> {
        serde_saphyr::from_str(yaml)
    }

    /// What containerlab would refuse or trip over that the types cannot express: links to
    /// nodes that are not defined, interfaces used twice or too long, links that are not
    /// pairs, container nodes without an image.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let mut used = BTreeSet::new();
        for (i, link) in self.topology.links.iter().enumerate() {
            if link.endpoints.len() != 2 {
                problems.push(format!(
                    "link {i}: {} endpoints, a veth link has 2",
                    link.endpoints.len()
                ));
            }
            for endpoint in &link.endpoints {
                let Endpoint { node, interface } = endpoint;
                if !self.topology.nodes.contains_key(node) {
                    problems.push(format!("link {i}: node {node:?} is not defined"));
                }
                if interface.len() > MAX_INTERFACE_NAME {
                    problems.push(format!(
                        "link {i}: interface name {interface:?} is too long"
                    ));
                }
                if !used.insert(endpoint.clone()) {
                    problems.push(format!("link {i}: {node}:{interface} is used twice"));
                }
            }
        }
        for (name, node) in &self.topology.nodes {
            if node.kind == Kind::Linux && node.image.is_none() {
                problems.push(format!("node {name}: kind linux needs an image"));
            }
            for bind in &node.binds {
                let parts: Vec<&str> = bind.split(':').collect();
                let mode_ok = matches!(parts.get(2).copied(), None | Some("ro" | "rw"));
                if !(2..=3).contains(&parts.len()) || parts.iter().any(|p| p.is_empty()) || !mode_ok
                {
                    problems.push(format!(
                        "node {name}: bind {bind:?} is not HOST:CONTAINER[:ro|rw]"
                    ));
                }
            }
            if node.exec.iter().any(|c| c.trim().is_empty()) {
                problems.push(format!("node {name}: empty exec command"));
            }
            if let Some(check) = &node.healthcheck {
                let form_ok = match check.test.first().map(String::as_str) {
                    Some("CMD") => check.test.len() > 1,
                    Some("CMD-SHELL") => check.test.len() == 2,
                    _ => false,
                };
                if !form_ok {
                    problems.push(format!(
                        "node {name}: healthcheck test {:?} is not [CMD, ...] or [CMD-SHELL, COMMAND]",
                        check.test
                    ));
                }
                let times = [
                    check.start_period,
                    check.interval,
                    check.timeout,
                    check.retries,
                ];
                if times.contains(&Some(0)) {
                    problems.push(format!("node {name}: healthcheck time or count of 0"));
                }
            }
        }
        problems
    }
}
