//! What the pinctrl task knows of the engine: a small snapshot the main loop rebuilds when
//! the Southbound port bindings or MAC bindings change.

use std::collections::HashMap;
use std::net::IpAddr;

use sbclient::ovn_sb::{DatapathBinding, MacBinding, PortBinding};
use sbclient::{Replica, Uuid};

use super::packet::Mac;
use super::svc_monitor::MonitorRow;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct View {
    /// The table where buffered packets re-enter the pipeline (output entry).
    pub output_entry_table: u8,
    /// The first table of the logical egress pipeline.
    pub egress_table: u8,
    /// (datapath key, port key) -> the logical ports whose MAC bindings resolve next hops
    /// out of that port: the port itself, and for a chassisredirect port `cr-P` also `P`
    /// (the bindings are learnt on the distributed port).
    pub ports: HashMap<(u32, u32), Vec<String>>,
    /// (logical port, IP) -> MAC of the Southbound `MAC_Binding` rows.
    pub mac_bindings: HashMap<(String, IpAddr), Mac>,
    /// This chassis's row (claims and controller events name it), see [`View::with_services`].
    pub chassis: Option<Uuid>,
    /// Where health check probes enter the pipeline (local output).
    pub local_output_table: u8,
    /// The Service_Monitor rows of the ports bound to this chassis.
    pub service_monitors: Vec<MonitorRow>,
    /// The router ports to get IPv6 prefixes for from here.
    pub prefixd: Vec<super::prefixd::PdPort>,
    /// The release sends prefix delegation REQUESTs to all DHCP servers.
    pub prefixd_request_to_all: bool,
    /// The BFD rows whose router port is here.
    pub bfd: Vec<super::bfd::BfdRow>,
    /// The first table of the logical ingress pipeline (where announcements enter).
    pub ingress_table: u8,
    /// The gratuitous ARPs this chassis sends ([`super::announce::plan`]).
    pub announce: Vec<super::garp::Announce>,
    /// The `DNS` rows, for `dns_lookup`.
    pub dns: super::dns::DnsRecords,
    /// Router ports that send periodic RAs, by name.
    pub periodic_ras: std::collections::BTreeMap<String, super::ra::PeriodicRa>,
    /// The multicast snooping configuration of the local datapaths (their
    /// `IP_Multicast` rows), by datapath key; see [`View::with_multicast`].
    pub ip_multicast: std::collections::BTreeMap<u32, super::igmp::Config>,
}

pub use super::packet::parse_mac;

static QUERIER_CONFIG: crate::vlog::RateLimit = crate::vlog::RateLimit::new(1, 5);

impl View {
    pub fn from_replica(sb: &Replica, output_entry_table: u8, egress_table: u8) -> Self {
        let mut view = Self {
            output_entry_table,
            egress_table,
            ..Self::default()
        };
        let dp_keys: HashMap<_, u32> = sb
            .table::<DatapathBinding>()
            .map(|t| {
                t.iter()
                    .filter_map(|(u, d)| Some((*u, u32::try_from(d.tunnel_key).ok()?)))
                    .collect()
            })
            .unwrap_or_default();
        if let Some(t) = sb.table::<PortBinding>() {
            for (_, pb) in t.iter() {
                let (Some(dp), Ok(key)) = (dp_keys.get(&pb.datapath), u32::try_from(pb.tunnel_key))
                else {
                    continue;
                };
                let mut names = vec![pb.logical_port.clone()];
                if pb.type_ == "chassisredirect" {
                    if let Some(p) = pb.options.get("distributed-port") {
                        names.push(p.clone());
                    }
                }
                view.ports.insert((*dp, key), names);
            }
        }
        if let Some(t) = sb.table::<MacBinding>() {
            for (_, mb) in t.iter() {
                let (Ok(ip), Some(mac)) = (mb.ip.parse::<IpAddr>(), parse_mac(&mb.mac)) else {
                    continue;
                };
                view.mac_bindings.insert((mb.logical_port.clone(), ip), mac);
            }
        }
        view.dns = super::dns::DnsRecords::from_replica(sb, &dp_keys);
        view.periodic_ras = super::ra::periodic_from_replica(sb, &dp_keys);
        view
    }

    /// Adds what health checks and claims need: this chassis, the local output table,
    /// and the Service_Monitor rows of ports bound to this chassis.
    #[must_use]
    pub fn with_services(mut self, sb: &Replica, chassis: Option<Uuid>, local_output: u8) -> Self {
        let dps = sb.table::<DatapathBinding>();
        self.chassis = chassis;
        self.local_output_table = local_output;
        self.service_monitors = super::svc_monitor::rows(sb, chassis, |dp| {
            u32::try_from(dps?.get(&dp)?.tunnel_key).ok()
        });
        self
    }

    /// Adds the BFD rows of router ports here (`resident`: whether a port is active here).
    #[must_use]
    pub fn with_bfd(mut self, sb: &Replica, resident: impl Fn(&str) -> bool) -> Self {
        let dps = sb.table::<DatapathBinding>();
        self.bfd = super::bfd::rows(sb, self.chassis, resident, |dp| {
            u32::try_from(dps?.get(&dp)?.tunnel_key).ok()
        });
        self
    }

    /// Adds the ports to get delegated prefixes for (`local_router`: a local datapath;
    /// `resident`: whether a gateway port lives here).
    #[must_use]
    pub fn with_prefixd(
        mut self,
        sb: &Replica,
        local_router: impl Fn(&Uuid) -> bool,
        resident: impl Fn(&PortBinding) -> bool,
    ) -> Self {
        let dps = sb.table::<DatapathBinding>();
        self.prefixd = super::prefixd::ports(sb, local_router, resident, |dp| {
            u32::try_from(dps?.get(&dp)?.tunnel_key).ok()
        });
        self
    }

    /// Adds the `IP_Multicast` configuration of the datapaths `local` says are local.
    #[must_use]
    pub fn with_multicast(mut self, sb: &Replica, local: impl Fn(Uuid) -> bool) -> Self {
        let (cfgs, warnings) = super::igmp::configs_from_replica(sb, local);
        for w in warnings {
            crate::vlog_rl!(WARN, &QUERIER_CONFIG, target: "pinctrl", "{w}");
        }
        self.ip_multicast = cfgs;
        self
    }

    /// The MAC the Southbound database has for `next_hop` out of (datapath, port).
    pub fn resolve(&self, datapath: u32, port: u32, next_hop: IpAddr) -> Option<Mac> {
        self.ports
            .get(&(datapath, port))?
            .iter()
            .find_map(|name| self.mac_bindings.get(&(name.clone(), next_hop)).copied())
    }
}
