//! What this chassis announces with gratuitous ARPs, as ovn-controller chooses it: its VIFs
//! on switches with a localnet port here (their first address), and the NAT addresses of
//! router ports reached over such switches (`Port_Binding.nat_addresses`, or the older
//! `options:nat-addresses`) when the address's `is_chassis_resident()` port is here. Each
//! new IPv4 announcement also teaches the switch's other local routers the address
//! directly (a MAC_Binding on their port), as the GARP would if it looped back.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};

use sbclient::ovn_sb::{DatapathBinding, PortBinding};
use sbclient::{Atom, Replica, Uuid};

use super::buffer::{MacBindingWrite, SbWrite};
use super::garp::Announce;
use super::view::parse_mac;
use crate::engine::binding::LocalIfaces;
use crate::runtime::Runtime;

/// An announcement and the routers that learn its address at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    pub announce: Announce,
    /// MAC_Binding writes for the peer router ports of the switch, with whether each may
    /// only update an existing row (`always_learn_from_arp_request=false` on the router).
    pub learn: Vec<(MacBindingWrite, bool)>,
}

/// A `MAC [IP...]` address string: the MAC, its IPv4 addresses (prefix lengths dropped)
/// and what follows the addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Addresses<'a> {
    pub mac: [u8; 6],
    pub ipv4: Vec<Ipv4Addr>,
    pub rest: &'a str,
}

/// Parses the leading `MAC IP...` of `s`, as OVN's address extraction does: `None` without
/// a MAC; addresses stop at the first word that is neither IPv4 nor IPv6.
pub fn parse_addresses(s: &str) -> Option<Addresses<'_>> {
    let s = s.trim_start();
    let mac_end = s.find(char::is_whitespace).unwrap_or(s.len());
    let mac = parse_mac(&s[..mac_end])?;
    let mut ipv4 = Vec::new();
    let mut at = mac_end;
    loop {
        let tail = &s[at..];
        let start = at + (tail.len() - tail.trim_start().len());
        let word_len = s[start..]
            .find(char::is_whitespace)
            .unwrap_or(s.len() - start);
        let word = &s[start..start + word_len];
        if word.is_empty() {
            at = start;
            break;
        }
        let addr = word.split_once('/').map_or(word, |(a, _)| a);
        match addr.parse::<IpAddr>() {
            Ok(IpAddr::V4(v4)) => ipv4.push(v4),
            Ok(IpAddr::V6(_)) => {}
            Err(_) => {
                at = start;
                break;
            }
        }
        at = start + word_len;
    }
    Some(Addresses {
        mac,
        ipv4,
        rest: &s[at..],
    })
}

/// The port named by a trailing `is_chassis_resident("PORT")`: `Ok(None)` when nothing
/// (or something else, which OVN ignores) follows the addresses, `Err` on a malformed call.
fn resident_port(rest: &str) -> Result<Option<&str>, ()> {
    let rest = rest.trim();
    let Some(args) = rest.strip_prefix("is_chassis_resident") else {
        return Ok(None);
    };
    let inner = args
        .trim_start()
        .strip_prefix('(')
        .and_then(|a| a.trim_end().strip_suffix(')'))
        .ok_or(())?
        .trim();
    inner
        .strip_prefix('"')
        .and_then(|i| i.strip_suffix('"'))
        .map(Some)
        .ok_or(())
}

struct Cx<'a> {
    sb: &'a Replica,
    rt: &'a Runtime,
    dp_keys: BTreeMap<Uuid, (u32, bool)>,
}

impl<'a> Cx<'a> {
    fn pb_by_name(&self, name: &str) -> Option<(&'a Uuid, &'a PortBinding)> {
        self.sb
            .table::<PortBinding>()?
            .find_one("logical_port", &Atom::String(name.to_owned()))
    }

    fn is_me(&self, chassis: Option<Uuid>) -> bool {
        chassis.is_some() && chassis == self.rt.chassis
    }

    /// `is_chassis_resident(name)` here: bound, to this chassis (a chassisredirect port:
    /// this chassis is its HA group's active member).
    fn resident(&self, name: &str) -> bool {
        let Some((uuid, pb)) = self.pb_by_name(name) else {
            return false;
        };
        if pb.chassis.is_none() {
            return false;
        }
        if pb.type_ == "chassisredirect" {
            self.rt.active_ha.contains(uuid)
        } else {
            self.is_me(pb.chassis)
        }
    }

    fn key(&self, pb: &PortBinding) -> Option<(u32, u32)> {
        Some((
            self.dp_keys.get(&pb.datapath)?.0,
            u32::try_from(pb.tunnel_key).ok()?,
        ))
    }

    /// The MAC_Binding writes that teach the other routers of `in_pb`'s switch `ip`.
    fn learn(
        &self,
        in_pb: &Uuid,
        pb: &PortBinding,
        ip: Ipv4Addr,
        mac: [u8; 6],
    ) -> Vec<(MacBindingWrite, bool)> {
        let Some(ld) = self.rt.local_datapaths.get(&pb.datapath) else {
            return Vec::new();
        };
        let Some(pbs) = self.sb.table::<PortBinding>() else {
            return Vec::new();
        };
        ld.peers
            .iter()
            .filter(|(local, _)| local != in_pb)
            .filter_map(|(_, remote)| {
                let remote = pbs.get(remote)?;
                let (datapath, port) = self.key(remote)?;
                let update_only = !self.dp_keys.get(&remote.datapath)?.1;
                Some((
                    MacBindingWrite {
                        datapath,
                        port,
                        ip: IpAddr::V4(ip),
                        mac,
                    },
                    update_only,
                ))
            })
            .collect()
    }
}

/// Everything this chassis announces now, sorted by key.
pub fn plan(sb: &Replica, rt: &Runtime, ifaces: &LocalIfaces) -> Vec<Planned> {
    let dp_keys = sb
        .table::<DatapathBinding>()
        .map(|t| {
            t.iter()
                .filter_map(|(u, d)| {
                    let learn = d
                        .external_ids
                        .get("always_learn_from_arp_request")
                        .is_none_or(|v| v != "false");
                    Some((*u, (u32::try_from(d.tunnel_key).ok()?, learn)))
                })
                .collect()
        })
        .unwrap_or_default();
    let cx = Cx { sb, rt, dp_keys };
    let mut out: BTreeMap<String, Planned> = BTreeMap::new();
    // VIFs bound here on switches with a localnet port.
    for (iface_id, iface) in &ifaces.by_iface_id {
        if iface.ofport.is_none() {
            continue;
        }
        let Some((uuid, pb)) = cx.pb_by_name(iface_id) else {
            continue;
        };
        if !cx.is_me(pb.chassis)
            || pb.type_ == "localport"
            || rt
                .local_datapaths
                .get(&pb.datapath)
                .is_none_or(|ld| ld.localnet.is_none())
        {
            continue;
        }
        vif(&cx, uuid, pb, &mut out);
    }
    // Gateway router ports (l3gateway here) and distributed gateway ports (patch) reached
    // over those switches.
    let Some(pbs) = sb.table::<PortBinding>() else {
        return out.into_values().collect();
    };
    for (dp, ld) in &rt.local_datapaths {
        if ld.localnet.is_none() {
            continue;
        }
        for (uuid, pb) in pbs.find("datapath", &Atom::Uuid(*dp)) {
            let gateway = (pb.type_ == "l3gateway" && cx.is_me(pb.chassis)) || pb.type_ == "patch";
            if gateway {
                nat_addresses(&cx, uuid, pb, &mut out);
            }
        }
    }
    out.into_values().collect()
}

/// A VIF announces its first parseable address (RARP when it has no IPv4).
fn vif(cx: &Cx<'_>, uuid: &Uuid, pb: &PortBinding, out: &mut BTreeMap<String, Planned>) {
    let Some((datapath, port)) = cx.key(pb) else {
        return;
    };
    let Some(addrs) = pb.mac.iter().find_map(|m| parse_addresses(m)) else {
        return;
    };
    let ipv4 = addrs.ipv4.first().copied();
    let learn = ipv4
        .map(|ip| cx.learn(uuid, pb, ip, addrs.mac))
        .unwrap_or_default();
    out.insert(
        pb.logical_port.clone(),
        Planned {
            announce: Announce {
                key: pb.logical_port.clone(),
                mac: addrs.mac,
                ipv4,
                datapath,
                port,
            },
            learn,
        },
    );
}

/// The NAT addresses of a gateway port whose resident port is here: one announcement per
/// IPv4 address (a RARP when there is none).
fn nat_addresses(cx: &Cx<'_>, uuid: &Uuid, pb: &PortBinding, out: &mut BTreeMap<String, Planned>) {
    let Some((datapath, port)) = cx.key(pb) else {
        return;
    };
    let entries: Vec<&str> = if pb.nat_addresses.is_empty() {
        pb.options
            .get("nat-addresses")
            .map(String::as_str)
            .into_iter()
            .collect()
    } else {
        pb.nat_addresses.iter().map(String::as_str).collect()
    };
    for entry in entries {
        let Some(addrs) = parse_addresses(entry) else {
            continue;
        };
        let usable = match resident_port(addrs.rest) {
            Err(()) => false,
            Ok(None) => pb.type_ != "patch",
            Ok(Some(lport)) => cx.resident(lport),
        };
        if !usable {
            continue;
        }
        let mut add = |key: String, ipv4: Option<Ipv4Addr>, learn| {
            out.entry(key.clone()).or_insert(Planned {
                announce: Announce {
                    key,
                    mac: addrs.mac,
                    ipv4,
                    datapath,
                    port,
                },
                learn,
            });
        };
        if addrs.ipv4.is_empty() {
            add(format!("{}-noip", pb.logical_port), None, Vec::new());
        }
        for ip in &addrs.ipv4 {
            let learn = cx.learn(uuid, pb, *ip, addrs.mac);
            add(format!("{}-{ip}", pb.logical_port), Some(*ip), learn);
        }
    }
}

/// The main loop's side of the announcements: the list of the last run, to tell which
/// are new.
#[derive(Debug, Default)]
pub struct Announcements {
    pub current: Vec<Announce>,
}

impl Announcements {
    /// Takes a new plan: whether the list changed, and the MAC_Binding writes of the IPv4
    /// announcements that are new.
    pub fn update(&mut self, planned: Vec<Planned>) -> (bool, Vec<SbWrite>) {
        let old: BTreeSet<&str> = self.current.iter().map(|a| a.key.as_str()).collect();
        let mut writes = Vec::new();
        for p in &planned {
            if !old.contains(p.announce.key.as_str()) {
                writes.extend(
                    p.learn
                        .iter()
                        .map(|(write, update_only)| SbWrite::Announced {
                            write: *write,
                            update_only: *update_only,
                        }),
                );
            }
        }
        let next: Vec<Announce> = planned.into_iter().map(|p| p.announce).collect();
        let changed = next != self.current;
        self.current = next;
        (changed, writes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_with_and_without_resident_port() {
        let a = parse_addresses("00:00:00:00:ff:03 172.16.0.1 172.16.0.10/24 fd00::1 is_chassis_resident(\"cr-lr0-public\")")
            .expect("parses");
        assert_eq!(a.mac, [0, 0, 0, 0, 0xff, 3]);
        assert_eq!(
            a.ipv4,
            [Ipv4Addr::new(172, 16, 0, 1), Ipv4Addr::new(172, 16, 0, 10)]
        );
        assert_eq!(resident_port(a.rest), Ok(Some("cr-lr0-public")));
        let b = parse_addresses("50:54:00:00:00:33").expect("parses");
        assert!(b.ipv4.is_empty());
        assert_eq!(resident_port(b.rest), Ok(None));
        assert_eq!(parse_addresses("dynamic"), None);
        assert_eq!(parse_addresses("router"), None);
        let c = parse_addresses("50:54:00:00:00:33 10.0.0.3 is_chassis_resident(cr-x)")
            .expect("parses");
        assert_eq!(resident_port(c.rest), Err(()));
        let d = parse_addresses("50:54:00:00:00:33 10.0.0.3 something").expect("parses");
        assert_eq!(
            resident_port(d.rest),
            Ok(None),
            "other words are ignored, as OVN does"
        );
    }

    proptest::proptest! {
        #[test]
        fn any_address_text_parses_without_panic(s in ".{0,80}") {
            if let Some(a) = parse_addresses(&s) {
                let _ = resident_port(a.rest);
            }
        }
    }
}
