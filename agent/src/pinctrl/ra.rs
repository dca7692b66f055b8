//! IPv6 router advertisements, as ovn-controller 23.03.1 sends them:
//! - `R = put_nd_ra_opts(...)` (opcode 8, paused): the userdata after the result field is
//!   a complete RA (header and options, encoded by the lflow compiler); the handler puts
//!   it in place of the router solicitation's ICMPv6 body, fixes the length and checksum,
//!   and resumes with R set. The logical flow after it addresses the reply.
//! - Periodic (unsolicited) RAs for the router ports whose Port_Binding options say
//!   `ipv6_ra_send_periodic=true` (northd copies `ipv6_ra_configs` there): built from
//!   those options ([`RaConfig`]) and sent into the peer switch port's pipeline on this
//!   chassis only; [`super::ra_schedule`] says when.

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;
use std::net::Ipv6Addr;

use openflow::wire::{PacketInProp, PacketOut};
use sbclient::ovn_sb::PortBinding;
use sbclient::{OvsMap, Replica, Uuid};

use super::dns::{checksum, pseudo_header6, scan_networks};
use super::effect::Effect;
use super::packet::{self, Headers, Mac, L3};
use super::packet_in::{PacketIn, Skip};
use super::result_bit::ResultBit;
use crate::vlog::RateLimit;

const ND_ROUTER_SOLICIT: u8 = 133;
const ND_ROUTER_ADVERT: u8 = 134;
const OPT_SLLA: u8 = 1;
const OPT_PREFIX: u8 = 3;
const OPT_MTU: u8 = 5;
const OPT_ROUTE_INFO: u8 = 24;
const OPT_RDNSS: u8 = 25;
const OPT_DNSSL: u8 = 31;
const FLAG_MANAGED: u8 = 0x80;
const FLAG_OTHER: u8 = 0x40;
const PRF_HIGH: u8 = 0x08;
const PRF_LOW: u8 = 0x18;
const PREFIX_ON_LINK: u8 = 0x80;
const PREFIX_AUTONOMOUS: u8 = 0x40;
const ROUTER_LIFETIME: u16 = 0xffff;
const INFINITE: [u8; 4] = [0xff; 4];
/// RFC 4861 6.2.1 defaults (`ND_RA_MAX_INTERVAL_DEFAULT`).
const MAX_INTERVAL_DEFAULT: i64 = 600;
/// The all-nodes group and its Ethernet address.
const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
const ALL_NODES_MAC: Mac = [0x33, 0x33, 0, 0, 0, 1];

static BAD_CONFIG: RateLimit = RateLimit::new(1, 5);

// ---- put_nd_ra_opts ---------------------------------------------------------------------

/// Handles a `put_nd_ra_opts` packet-in: always resumes, with the RA and R = 1 when the
/// packet is a router solicitation and the userdata has an RA.
pub fn put_nd_ra_opts(p: &PacketIn<'_>, h: &Headers) -> Result<Vec<Effect>, Skip> {
    let mut resume = p.raw.to_resume().ok_or(Skip::WrongPacket(
        "put_nd_ra_opts action without a paused pipeline",
    ))?;
    let (bit, ra) = match ResultBit::parse(p.payload) {
        Ok(v) => v,
        Err(e) => return Ok(vec![Effect::Resume(resume), Effect::Rejected(e.into())]),
    };
    let mut out = Vec::with_capacity(2);
    match advertisement(p.packet, h, ra) {
        Ok(reply) => {
            for prop in &mut resume.props {
                if let PacketInProp::Packet(b) = prop {
                    b.clone_from(&reply);
                }
            }
            bit.write(&mut resume, true);
            out.push(Effect::Resume(resume));
        }
        Err(e) => {
            bit.write(&mut resume, false);
            out.push(Effect::Resume(resume));
            out.push(Effect::Rejected(e));
        }
    }
    Ok(out)
}

/// The solicitation `frame` with its ICMPv6 body replaced by `ra`.
fn advertisement(frame: &[u8], h: &Headers, ra: &[u8]) -> Result<Vec<u8>, Skip> {
    if ra.is_empty() {
        return Err(Skip::WrongPacket(
            "IPv6 ND RA options not present in the userdata",
        ));
    }
    let l4 = h.l4(frame).unwrap_or_default();
    let (L3::Ipv6 { src, dst, .. }, Some(l4_at)) = (h.l3, h.l4_offset) else {
        return Err(Skip::WrongPacket(
            "put_nd_ra action on invalid or unsupported packet",
        ));
    };
    // OVS reads ICMPv6 type and code only from a full 8-byte ICMPv6 header.
    if h.ip_proto() != Some(packet::PROTO_ICMPV6)
        || l4.len() < 8
        || l4[0] != ND_ROUTER_SOLICIT
        || l4[1] != 0
    {
        return Err(Skip::WrongPacket(
            "put_nd_ra action on invalid or unsupported packet",
        ));
    }
    if ra.len() < 4 {
        return Err(Skip::WrongPacket("IPv6 ND RA options too short"));
    }
    let len = u16::try_from(ra.len()).map_err(|_| packet::PacketError::TooLarge(ra.len()))?;
    let l3 = h.l3_offset;
    let mut out = Vec::with_capacity(l4_at + ra.len());
    out.extend_from_slice(&frame[..l4_at]);
    out.extend_from_slice(ra);
    out[l3 + 4..l3 + 6].copy_from_slice(&len.to_be_bytes());
    out[l4_at + 2..l4_at + 4].fill(0);
    let c = checksum(&[&pseudo_header6(src, dst, out[l3 + 6], len), &out[l4_at..]]);
    out[l4_at + 2..l4_at + 4].copy_from_slice(&c.to_be_bytes());
    Ok(out)
}

// ---- periodic RAs -----------------------------------------------------------------------

/// What a router port's periodic RA says (ovn-controller's `ipv6_ra_config`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaConfig {
    /// Seconds.
    pub min_interval: i64,
    pub max_interval: i64,
    pub eth_src: Mac,
    pub ipv6_src: Ipv6Addr,
    /// 0: no MTU option.
    pub mtu: u32,
    /// M/O flags and router preference.
    pub mo_flags: u8,
    /// L/A flags of the prefix options.
    pub la_flags: u8,
    pub prefixes: Vec<(Ipv6Addr, u8)>,
    pub rdnss: Option<Ipv6Addr>,
    pub dnssl: String,
    pub route_info: String,
}

/// Why a port's `ipv6_ra_*` options give no RA (ovn-controller's warnings).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RaConfigError {
    #[error("No address mode specified")]
    NoAddressMode,
    #[error("Invalid address mode {0}")]
    AddressMode(String),
    #[error("Invalid IPv6 prefixes: {0}")]
    Prefixes(String),
    #[error("Invalid ethernet source {0}")]
    EthSrc(String),
    #[error("Invalid IP source {0}")]
    IpSrc(String),
    #[error("Invalid RDNSS source {0}")]
    Rdnss(String),
}

/// `smap_get_int`: the whole value as a decimal integer, else `default`.
fn int_option(options: &OvsMap<String, String>, key: &str, default: i64) -> i64 {
    options
        .get(key)
        .and_then(|v| v.parse::<i32>().ok())
        .map_or(default, i64::from)
}

/// RFC 4861's default minimum for a maximum interval.
pub fn min_interval_default(max: i64) -> i64 {
    if max >= 9 {
        max / 3
    } else {
        max * 3 / 4
    }
}

impl RaConfig {
    pub fn from_options(o: &OvsMap<String, String>) -> Result<Self, RaConfigError> {
        let max_interval = int_option(o, "ipv6_ra_max_interval", MAX_INTERVAL_DEFAULT);
        let min_interval = int_option(
            o,
            "ipv6_ra_min_interval",
            min_interval_default(max_interval),
        );
        let mut mo_flags = 0;
        let mut la_flags = PREFIX_ON_LINK;
        match o.get("ipv6_ra_address_mode").map(String::as_str) {
            None => return Err(RaConfigError::NoAddressMode),
            Some("dhcpv6_stateless") => {
                mo_flags |= FLAG_OTHER;
                la_flags |= PREFIX_AUTONOMOUS;
            }
            Some("dhcpv6_stateful") => mo_flags |= FLAG_MANAGED,
            Some("slaac") => la_flags |= PREFIX_AUTONOMOUS,
            Some(other) => return Err(RaConfigError::AddressMode(other.to_owned())),
        }
        // northd always writes the preference; ovn-controller needs it (MEDIUM if absent).
        match o.get("ipv6_ra_prf").map(String::as_str) {
            Some("HIGH") => mo_flags |= PRF_HIGH,
            Some("LOW") => mo_flags |= PRF_LOW,
            _ => {}
        }
        let prefixes = match o.get("ipv6_ra_prefixes") {
            None => Vec::new(),
            Some(p) => {
                let (v4, v6) = scan_networks(p);
                if v4.is_empty() && v6.is_empty() {
                    return Err(RaConfigError::Prefixes(p.clone()));
                }
                v6
            }
        };
        let eth = o.get("ipv6_ra_src_eth");
        let eth_src = eth
            .and_then(|e| super::packet::parse_mac(e))
            .ok_or_else(|| RaConfigError::EthSrc(eth.cloned().unwrap_or_default()))?;
        let ip = o.get("ipv6_ra_src_addr");
        let ipv6_src = ip
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| RaConfigError::IpSrc(ip.cloned().unwrap_or_default()))?;
        let rdnss = match o.get("ipv6_ra_rdnss") {
            None => None,
            Some(r) => Some(r.parse().map_err(|_| RaConfigError::Rdnss(r.clone()))?),
        };
        Ok(Self {
            min_interval,
            max_interval,
            eth_src,
            ipv6_src,
            // A negative value is sent as its 32-bit pattern, as ovn-controller sends it.
            mtu: int_option(o, "ipv6_ra_mtu", 0) as i32 as u32,
            mo_flags,
            la_flags,
            prefixes,
            rdnss,
            dnssl: o.get("ipv6_ra_dnssl").cloned().unwrap_or_default(),
            route_info: o.get("ipv6_ra_route_info").cloned().unwrap_or_default(),
        })
    }

    /// The RA frame: to all nodes, hop limit 255, then the options in ovn-controller's
    /// order (source link-layer address, MTU, prefixes, RDNSS, DNSSL, route information).
    pub fn packet(&self) -> Vec<u8> {
        let mut icmp = vec![ND_ROUTER_ADVERT, 0, 0, 0, 255, self.mo_flags];
        icmp.extend_from_slice(&ROUTER_LIFETIME.to_be_bytes());
        icmp.extend_from_slice(&[0; 8]);
        icmp.extend_from_slice(&[OPT_SLLA, 1]);
        icmp.extend_from_slice(&self.eth_src);
        if self.mtu != 0 {
            icmp.extend_from_slice(&[OPT_MTU, 1, 0, 0]);
            icmp.extend_from_slice(&self.mtu.to_be_bytes());
        }
        for (prefix, plen) in &self.prefixes {
            icmp.extend_from_slice(&[OPT_PREFIX, 4, *plen, self.la_flags]);
            icmp.extend_from_slice(&INFINITE);
            icmp.extend_from_slice(&INFINITE);
            icmp.extend_from_slice(&[0; 4]);
            icmp.extend_from_slice(&prefix.octets());
        }
        if let Some(dns) = self.rdnss {
            icmp.extend_from_slice(&[OPT_RDNSS, 3, 0, 0]);
            icmp.extend_from_slice(&INFINITE);
            icmp.extend_from_slice(&dns.octets());
        }
        if !self.dnssl.is_empty() {
            if let Some(body) = dnssl_body(&self.dnssl) {
                icmp.extend_from_slice(&[OPT_DNSSL, ((body.len() + 8) / 8) as u8, 0, 0]);
                icmp.extend_from_slice(&INFINITE);
                icmp.extend_from_slice(&body);
            }
        }
        if !self.route_info.is_empty() {
            route_info(&self.route_info, &mut icmp);
        }
        let len = icmp.len() as u16;
        let c = checksum(&[
            &pseudo_header6(self.ipv6_src, ALL_NODES, packet::PROTO_ICMPV6, len),
            &icmp,
        ]);
        icmp[2..4].copy_from_slice(&c.to_be_bytes());
        let mut out = Vec::with_capacity(14 + 40 + icmp.len());
        out.extend_from_slice(&ALL_NODES_MAC);
        out.extend_from_slice(&self.eth_src);
        out.extend_from_slice(&packet::ETH_TYPE_IPV6.to_be_bytes());
        out.extend_from_slice(&[0x60, 0, 0, 0]);
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&[packet::PROTO_ICMPV6, 255]);
        out.extend_from_slice(&self.ipv6_src.octets());
        out.extend_from_slice(&ALL_NODES.octets());
        out.extend_from_slice(&icmp);
        out
    }
}

/// The DNSSL option body (after its 8-byte header) as ovn-controller encodes
/// `ipv6_ra_dnssl`: comma-separated names in RFC 1035 labels, the option padded to 8
/// bytes; `None` (no option) past 255 bytes.
pub fn dnssl_body(list: &str) -> Option<Vec<u8>> {
    let names: Vec<&str> = list.split(',').filter(|n| !n.is_empty()).collect();
    let size = 8 + names.iter().map(|n| n.len() + 2).sum::<usize>();
    if size > 255 {
        return None;
    }
    let mut body = vec![0u8; size.div_ceil(8) * 8 - 8];
    let mut at = 0;
    for name in names {
        for label in name.split('.').filter(|l| !l.is_empty()) {
            let l = &label.as_bytes()[..label.len().min(255)];
            body[at] = l.len() as u8;
            body[at + 1..at + 1 + l.len()].copy_from_slice(l);
            at += 1 + l.len();
        }
        at += 1;
    }
    Some(body)
}

/// Route information options from `PRF-PREFIX,...` (ovn-controller's walk: the preference
/// is the first `-` item, every later item a prefix with it). An entry whose prefix is not
/// IPv6 ends the list; ovn-controller then also leaves the packet's length and checksum
/// without the options already added (a broken RA), where this keeps them consistent.
fn route_info(spec: &str, out: &mut Vec<u8>) {
    for entry in spec.split(',').filter(|e| !e.is_empty()) {
        let mut flags = 0;
        for (i, item) in entry.split('-').filter(|t| !t.is_empty()).enumerate() {
            if i == 0 {
                flags = match item {
                    "HIGH" => PRF_HIGH,
                    "LOW" => PRF_LOW,
                    _ => 0,
                };
                continue;
            }
            let (_, v6) = scan_networks(item);
            let Some((addr, plen)) = v6.first().copied() else {
                return;
            };
            let network =
                u128::from(addr) & u128::MAX.checked_shl(128 - u32::from(plen)).unwrap_or(0);
            let units = usize::from(plen).div_ceil(64);
            out.extend_from_slice(&[OPT_ROUTE_INFO, 1 + units as u8, plen, flags]);
            out.extend_from_slice(&INFINITE);
            out.extend_from_slice(&network.to_be_bytes()[..units * 8]);
        }
    }
}

/// A router port's periodic RA: its config and where it enters the pipeline (the peer
/// switch port).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeriodicRa {
    pub config: RaConfig,
    /// Tunnel key of the peer's datapath (the logical switch).
    pub datapath: u32,
    /// Tunnel key of the peer port.
    pub port: u32,
}

impl PeriodicRa {
    /// The packet-out: the RA enters the switch's ingress pipeline from the peer port,
    /// for this chassis's ports only.
    pub fn packet_out(&self, ingress_table: u8) -> PacketOut {
        let at = super::packet_in::Entry {
            datapath: self.datapath,
            inport: Some(self.port),
            local_only: true,
            table: ingress_table,
            ..Default::default()
        };
        super::packet_in::into_pipeline(at, self.config.packet())
    }
}

/// `smap_get_bool(options, key, false)`.
fn option_true(options: &OvsMap<String, String>, key: &str) -> bool {
    options
        .get(key)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// The periodic RAs of the Southbound port bindings, by router port name: every binding
/// with `ipv6_ra_send_periodic=true` whose peer is known (ovn-controller takes them all
/// from its conditionally monitored tables, as here).
pub fn periodic_from_replica<S: BuildHasher>(
    sb: &Replica,
    dp_keys: &HashMap<Uuid, u32, S>,
) -> BTreeMap<String, PeriodicRa> {
    let mut out = BTreeMap::new();
    let Some(t) = sb.table::<PortBinding>() else {
        return out;
    };
    let by_name: HashMap<&str, &PortBinding> = t
        .iter()
        .map(|(_, pb)| (pb.logical_port.as_str(), pb))
        .collect();
    for (_, pb) in t.iter() {
        if !option_true(&pb.options, "ipv6_ra_send_periodic") {
            continue;
        }
        let Some(peer) = pb.options.get("peer").and_then(|p| by_name.get(p.as_str())) else {
            continue;
        };
        let (Some(dp), Ok(port)) = (dp_keys.get(&peer.datapath), u32::try_from(peer.tunnel_key))
        else {
            continue;
        };
        match RaConfig::from_options(&pb.options) {
            Ok(config) => {
                out.insert(
                    pb.logical_port.clone(),
                    PeriodicRa {
                        config,
                        datapath: *dp,
                        port,
                    },
                );
            }
            Err(e) => {
                crate::vlog_rl!(WARN, &BAD_CONFIG, target: "pinctrl", "{}: {e}", pb.logical_port);
            }
        }
    }
    out
}
