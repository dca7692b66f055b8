//! The tunnel ports of br-int: which the chassis wants (one per remote chassis and encap IP
//! it shares an encap type and a transport zone with), with the options ovn-controller gives
//! them, and the operations that make the bridge match.

use std::collections::{BTreeMap, BTreeSet};

use sbclient::datum::{Atom, Datum};
use sbclient::ovn_sb::{Chassis, Encap, SbGlobal};
use sbclient::transaction::{by_uuid, Columns, Mutator};
use sbclient::vswitch::{Bridge, Interface, OpenVswitch, Port};
use sbclient::{Replica, Table, Transaction, Uuid};

use super::binding::bridge;
use super::config::ChassisConfig;
use crate::runtime::EncapType;

/// A tunnel port the agent wants on br-int.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct WantedTunnel {
    /// `<chassis>@<ip>`, the Port's `external_ids:ovn-chassis-id`.
    pub chassis_id: String,
    pub chassis: String,
    pub encap: EncapType,
    pub remote_ip: String,
    /// The interface's options besides `remote_ip` and `key` (see [`tunnel_extra_options`]).
    pub extra_options: BTreeMap<String, String>,
}

/// The options ovn-controller 23.03.1 gives a tunnel interface besides `remote_ip` and
/// `key=flow`: the encap's `csum` (`true`/`false` only) and `dst_port`, this chassis'
/// `ovn-encap-tos` (unless `none`) and `ovn-encap-df_default`, and with
/// `ovn-set-local-ip=true` or IPsec on (`SB_Global:ipsec`) our encap IP as `local_ip`;
/// IPsec adds `remote_name` and the NAT-T choices of `SB_Global:options`.
fn tunnel_extra_options(
    encap: &Encap,
    chassis_id: &str,
    cfg: &ChassisConfig,
    sb_global: Option<&SbGlobal>,
) -> BTreeMap<String, String> {
    let mut o = BTreeMap::new();
    if let Some(c) = encap
        .options
        .get("csum")
        .filter(|c| *c == "true" || *c == "false")
    {
        o.insert("csum".to_owned(), c.clone());
    }
    if let Some(port) = encap.options.get("dst_port") {
        o.insert("dst_port".to_owned(), port.clone());
    }
    if let Some(tos) = cfg.get("ovn-encap-tos").filter(|t| *t != "none") {
        o.insert("tos".to_owned(), tos.to_owned());
    }
    if let Some(df) = cfg.get("ovn-encap-df_default") {
        o.insert("df_default".to_owned(), df.to_owned());
    }
    let ipsec = sb_global.is_some_and(|g| g.ipsec);
    let mut set_local_ip = cfg
        .get("ovn-set-local-ip")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if ipsec {
        set_local_ip = true;
        o.insert("remote_name".to_owned(), chassis_id.to_owned());
        let options = sb_global.map(|g| &g.options);
        for (key, option) in [
            ("ipsec_encapsulation", "ipsec_encapsulation"),
            ("ipsec_forceencaps", "ipsec_forceencaps"),
        ] {
            if options
                .and_then(|m| m.get(key))
                .is_some_and(|v| v == "true")
            {
                o.insert(option.to_owned(), "yes".to_owned());
            }
        }
    }
    if set_local_ip {
        if let Some(ip) = cfg.encap_ips.first() {
            if cfg.encap_ips.iter().any(|other| other != ip) {
                tracing::error!("ovn-encap-ip has been configured as a list. This is unsupported for IPsec and explicit local_ip configuration.");
            }
            o.insert("local_ip".to_owned(), ip.clone());
        }
    }
    o
}

/// Tunnels to every other chassis we share an encap type and a transport zone with.
pub fn wanted_tunnels(sb: &Replica, cfg: &ChassisConfig) -> Vec<WantedTunnel> {
    let (Some(chassis), Some(encaps)) = (sb.table::<Chassis>(), sb.table::<Encap>()) else {
        return Vec::new();
    };
    let sb_global = sb
        .table::<SbGlobal>()
        .and_then(|t| t.iter().map(|(_, g)| g).next());
    let mut out = Vec::new();
    for (_, ch) in chassis.iter() {
        if ch.name == cfg.system_id {
            continue;
        }
        let remote_zones: BTreeSet<&String> = ch.transport_zones.iter().collect();
        let ours: BTreeSet<&String> = cfg.transport_zones.iter().collect();
        if !(remote_zones.is_empty() && ours.is_empty()) && remote_zones.is_disjoint(&ours) {
            continue;
        }
        if ch
            .other_config
            .get("is-remote")
            .is_some_and(|v| v == "true")
            && !cfg.is_interconn
        {
            continue;
        }
        let theirs: Vec<&Encap> = ch.encaps.iter().filter_map(|e| encaps.get(e)).collect();
        // Preferred type: the best (geneve > stt > vxlan) that both sides list.
        let best = [EncapType::Geneve, EncapType::Stt, EncapType::Vxlan]
            .into_iter()
            .find(|t| {
                cfg.encap_types.contains(t)
                    && theirs
                        .iter()
                        .any(|e| EncapType::parse(&e.type_) == Some(*t))
            });
        let Some(best) = best else {
            tracing::warn!(chassis = %ch.name, "chassis_tunnel_add: No supported encaps for '{}'", ch.name);
            continue;
        };
        for e in theirs
            .iter()
            .filter(|e| EncapType::parse(&e.type_) == Some(best))
        {
            out.push(WantedTunnel {
                chassis_id: format!("{}@{}", ch.name, e.ip),
                chassis: ch.name.clone(),
                encap: best,
                remote_ip: e.ip.clone(),
                extra_options: tunnel_extra_options(e, &ch.name, cfg, sb_global),
            });
        }
    }
    out.sort();
    out
}

fn tunnel_options(t: &WantedTunnel) -> BTreeMap<String, String> {
    let mut o = BTreeMap::from([
        ("remote_ip".to_owned(), t.remote_ip.clone()),
        ("key".to_owned(), "flow".to_owned()),
    ]);
    o.extend(t.extra_options.iter().map(|(k, v)| (k.clone(), v.clone())));
    o
}

/// Tunnel port name: `ovn-<first 6 of the chassis name>-<n>`, the first free n.
fn tunnel_name(chassis: &str, idx: &str, taken: &BTreeSet<String>) -> String {
    let short: String = chassis
        .chars()
        .take(if idx.is_empty() { 6 } else { 5 })
        .collect();
    (0..=taken.len())
        .map(|n| format!("ovn{idx}-{short}-{n:x}"))
        .find(|n| !taken.contains(n))
        .unwrap_or_default()
}

/// `ovn-chassis-idx-<chassis>`: the index of each controller on a host, in the
/// Open_vSwitch row's other_config.
pub(super) const CHASSIS_IDX_PREFIX: &str = "ovn-chassis-idx-";

/// This controller's index among the controllers of the host, its tunnel ports being
/// named `ovn<idx>-...`: the one stored, else the first free (`""`, then `0`-`9`, `a`-`z`),
/// which the same comparison stores (so that the first tunnels already carry it); `None`
/// when every index is taken.
pub(super) fn chassis_idx(ovs: &Replica, system_id: &str) -> Option<String> {
    let Some((_, row)) = ovs.table::<OpenVswitch>().and_then(|t| t.iter().next()) else {
        return Some(String::new());
    };
    if let Some(i) = row
        .other_config
        .get(&format!("{CHASSIS_IDX_PREFIX}{system_id}"))
    {
        return Some(i.clone());
    }
    let used: BTreeSet<&str> = row
        .other_config
        .iter()
        .filter(|(k, _)| k.starts_with(CHASSIS_IDX_PREFIX))
        .map(|(_, v)| v.as_str())
        .collect();
    std::iter::once(String::new())
        .chain(('0'..='9').chain('a'..='z').map(String::from))
        .find(|i| !used.contains(i.as_str()))
}

/// Tunnel ports this controller left on bridges it no longer integrates, as ovn-controller
/// clears them: at start (`previous` is `None`), those named as this controller's
/// (`ovn<idx>-`) on every bridge but br-int, leaving other controllers' alone; after br-int
/// changed, every tunnel port of the old one. Adds the deletions to `txn`; true if any.
pub fn clear_old_tunnels(
    ovs: &Replica,
    cfg: &ChassisConfig,
    previous: Option<&str>,
    txn: &mut Transaction,
) -> bool {
    let (Some(bridges), Some(ports)) = (ovs.table::<Bridge>(), ovs.table::<Port>()) else {
        return false;
    };
    let prefix = match previous {
        // No index: which tunnels are ours is not known, and none is touched.
        None => match chassis_idx(ovs, &cfg.system_id) {
            Some(i) => format!("ovn{i}-"),
            None => return false,
        },
        Some(_) => String::new(),
    };
    let mut changed = false;
    for (br_uuid, br) in bridges.iter() {
        let old = match previous {
            None => br.name != cfg.bridge,
            Some(p) => br.name == p && p != cfg.bridge,
        };
        if !old {
            continue;
        }
        let gone: Vec<Atom> = br
            .ports
            .iter()
            .filter_map(|p| ports.get(p).map(|x| (p, x)))
            .filter_map(|(p, port)| {
                let id = port.external_ids.get("ovn-chassis-id")?;
                port.name.starts_with(&prefix).then(|| {
                    tracing::debug!(target: "encaps", "Clearing old tunnel port \"{}\" ({id}) from bridge \"{}\".", port.name, br.name);
                    Atom::Uuid(*p)
                })
            })
            .collect();
        if !gone.is_empty() {
            txn.mutate(
                "Bridge",
                &by_uuid(*br_uuid),
                vec![("ports".into(), Mutator::Delete, Datum::Set(gone))],
            );
            changed = true;
        }
    }
    changed
}

/// Adds to `txn` the tunnel ports to create and returns the bridge ports to remove and the
/// named ports to add: one tunnel per remote chassis and encap IP, replaced when its
/// options change.
pub(super) fn sync_tunnels(
    sb: &Replica,
    cfg: &ChassisConfig,
    br: &Bridge,
    ports: &Table<Port>,
    ifaces: &Table<Interface>,
    txn: &mut Transaction,
    idx: &str,
) -> (Vec<Uuid>, Vec<Atom>) {
    let mut remove_ports: Vec<Uuid> = Vec::new();
    let mut add_ports: Vec<Atom> = Vec::new();
    let wanted = wanted_tunnels(sb, cfg);
    let mut have: BTreeMap<String, (Uuid, &Port)> = BTreeMap::new();
    let mut names: BTreeSet<String> = BTreeSet::new();
    for p in &br.ports {
        let Some(port) = ports.get(p) else { continue };
        names.insert(port.name.clone());
        if let Some(id) = port.external_ids.get("ovn-chassis-id") {
            if have.contains_key(id) {
                remove_ports.push(*p);
            } else {
                have.insert(id.clone(), (*p, port));
            }
        }
    }
    for (id, (p, port)) in &have {
        let keep = wanted
            .iter()
            .find(|w| &w.chassis_id == id)
            .is_some_and(|w| {
                port.interfaces
                    .iter()
                    .filter_map(|i| ifaces.get(i))
                    .all(|i| {
                        let opts: BTreeMap<String, String> = i
                            .options
                            .iter()
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect();
                        i.type_ == w.encap.as_str() && opts == tunnel_options(w)
                    })
            });
        if !keep {
            remove_ports.push(*p);
        }
    }
    for (n, w) in wanted.iter().enumerate() {
        let keep = have
            .get(&w.chassis_id)
            .is_some_and(|(p, _)| !remove_ports.contains(p));
        if keep {
            continue;
        }
        // A changed tunnel keeps its name (a new ofport comes with the new interface).
        let name = have.get(&w.chassis_id).map_or_else(
            || {
                let n = tunnel_name(&w.chassis, idx, &names);
                names.insert(n.clone());
                n
            },
            |(_, port)| port.name.clone(),
        );
        let (iface_name, port_name) = (format!("tun_iface{n}"), format!("tun_port{n}"));
        txn.insert(
            "Interface",
            Columns::new()
                .set("name", Atom::from(name.as_str()))
                .set("type", Atom::from(w.encap.as_str()))
                .set("options", Datum::map(&tunnel_options(w))),
            Some(&iface_name),
        );
        txn.insert(
            "Port",
            Columns::new()
                .set("name", Atom::from(name.as_str()))
                .set("interfaces", Datum::Set(vec![Atom::NamedUuid(iface_name)]))
                .set(
                    "external_ids",
                    Datum::map(&BTreeMap::from([(
                        "ovn-chassis-id".to_owned(),
                        w.chassis_id.clone(),
                    )])),
                ),
            Some(&port_name),
        );
        add_ports.push(Atom::NamedUuid(port_name));
    }
    (remove_ports, add_ports)
}

/// `exit` cleanup: every tunnel port goes from the bridge.
pub fn remove_tunnels(ovs: &Replica, cfg: &ChassisConfig, txn: &mut Transaction) {
    let (Some((br_uuid, br)), Some(ports)) = (bridge(ovs, &cfg.bridge), ovs.table::<Port>()) else {
        return;
    };
    let tunnels: Vec<Atom> = br
        .ports
        .iter()
        .filter(|p| {
            ports
                .get(p)
                .is_some_and(|x| x.external_ids.contains_key("ovn-chassis-id"))
        })
        .map(|p| Atom::Uuid(*p))
        .collect();
    if !tunnels.is_empty() {
        txn.mutate(
            "Bridge",
            &by_uuid(*br_uuid),
            vec![("ports".into(), Mutator::Delete, Datum::Set(tunnels))],
        );
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    #[test]
    fn tunnel_names_are_short_and_unique() {
        let mut taken = BTreeSet::new();
        let a = tunnel_name("hv2-long-name", "", &taken);
        assert_eq!(a, "ovn-hv2-lo-0");
        taken.insert(a);
        assert_eq!(tunnel_name("hv2-long-name-b", "", &taken), "ovn-hv2-lo-1");
        // A second controller of the host: its index, and five characters.
        assert_eq!(tunnel_name("hv1-long", "0", &taken), "ovn0-hv1-l-0");
    }

    /// An OVS replica with bridges holding tunnel ports `(bridge, port name, chassis id)`,
    /// and this controller's index stored as `idx`.
    fn ovs_with_tunnels(ports: &[(&str, &str, &str)], idx: Option<&str>) -> Replica {
        use serde_json::{json, Value};
        let mut r = Replica::new(sbclient::vswitch::DATABASE);
        sbclient::vswitch::register_all(&mut r);
        let uuid = |kind: u128, n: usize| Uuid::from_u128((kind << 64) | n as u128).to_string();
        let mut bridges: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
        let mut port_rows = serde_json::Map::new();
        for (n, (br, name, id)) in ports.iter().enumerate() {
            bridges
                .entry(br)
                .or_default()
                .push(json!(["uuid", uuid(2, n)]));
            port_rows.insert(
                uuid(2, n),
                json!({"initial": {"name": name, "external_ids": ["map", [["ovn-chassis-id", id]]]}}),
            );
        }
        let bridge_rows: serde_json::Map<String, Value> = bridges
            .into_iter()
            .enumerate()
            .map(|(n, (br, p))| {
                (
                    uuid(1, n),
                    json!({"initial": {"name": br, "ports": ["set", p]}}),
                )
            })
            .collect();
        let other: Vec<Value> = idx
            .map(|i| vec![json!(["ovn-chassis-idx-hv1", i])])
            .unwrap_or_default();
        let update = json!({
            "Open_vSwitch": {uuid(3, 0): {"initial": {"other_config": ["map", other]}}},
            "Bridge": bridge_rows,
            "Port": port_rows,
        });
        r.apply_snapshot(&serde_json::value::to_raw_value(&update).unwrap())
            .unwrap();
        r
    }

    #[test]
    fn old_tunnels_are_cleared_from_other_bridges_as_ovn_controller_clears_them() {
        let ports = [
            ("br-int", "ovn-hv2-0", "hv2@10.0.0.2"),
            ("br-old", "ovn-hv2-0", "hv2@10.0.0.2"),
            ("br-old", "ovn0-hv3-0", "hv3@10.0.0.3"),
            ("br-int-2", "ovn0-hv1-0", "hv1@10.0.0.1"),
        ];
        let c = cfg(&[]);
        let deleted = |ovs: &Replica, previous: Option<&str>| {
            let mut txn = Transaction::new(sbclient::vswitch::DATABASE);
            let changed = clear_old_tunnels(ovs, &c, previous, &mut txn);
            (changed, txn.to_params().to_string())
        };
        // At start (index ""), this controller's ports (`ovn-`) elsewhere go; those of the
        // controller with index 0 and those on br-int stay.
        let ovs = ovs_with_tunnels(&ports, Some(""));
        let (changed, ops) = deleted(&ovs, None);
        assert!(changed);
        assert_eq!(ops.matches("\"delete\"").count(), 1, "{ops}");
        assert!(!ops.contains(&Uuid::from_u128((2 << 64) | 3).to_string()));
        assert!(!ops.contains(&Uuid::from_u128((2 << 64) | 2).to_string()));
        // With index 0 stored, the other way round.
        let ovs = ovs_with_tunnels(&ports, Some("0"));
        let (_, ops) = deleted(&ovs, None);
        assert!(
            ops.contains(&Uuid::from_u128((2 << 64) | 2).to_string()),
            "{ops}"
        );
        assert!(
            ops.contains(&Uuid::from_u128((2 << 64) | 3).to_string()),
            "{ops}"
        );
        // br-int changed from br-old: every tunnel port of br-old goes, nothing else.
        let (_, ops) = deleted(&ovs, Some("br-old"));
        assert!(
            ops.contains(&Uuid::from_u128((2 << 64) | 1).to_string()),
            "{ops}"
        );
        assert!(
            ops.contains(&Uuid::from_u128((2 << 64) | 2).to_string()),
            "{ops}"
        );
        assert!(
            !ops.contains(&Uuid::from_u128((2 << 64) | 3).to_string()),
            "{ops}"
        );
        // Same bridge as before: nothing.
        assert!(!deleted(&ovs, Some("br-int")).0);
    }

    pub(crate) fn cfg(pairs: &[(&str, &str)]) -> ChassisConfig {
        let mut row = OpenVswitch::default();
        for (k, v) in [
            ("system-id", "hv1"),
            ("ovn-remote", "unix:/a"),
            ("ovn-encap-type", "geneve"),
            ("ovn-encap-ip", "192.168.0.1"),
        ]
        .iter()
        .chain(pairs)
        {
            row.external_ids.insert((*k).to_owned(), (*v).to_owned());
        }
        ChassisConfig::from_ovs(Some(&row), None, None, "hv1", None).unwrap()
    }

    #[test]
    fn tunnel_options_as_ovn_controller_sets_them() {
        let mut encap = Encap {
            ip: "192.168.0.2".into(),
            ..Encap::default()
        };
        encap.options.insert("csum".into(), "true".into());
        encap.options.insert("dst_port".into(), "6082".into());
        let plain = tunnel_extra_options(
            &encap,
            "hv2",
            &cfg(&[("ovn-encap-ip", "192.168.0.1")]),
            None,
        );
        assert_eq!(
            plain.into_iter().collect::<Vec<_>>(),
            [
                ("csum".into(), "true".into()),
                ("dst_port".into(), "6082".into())
            ]
        );
        encap.options.insert("csum".into(), "maybe".into());
        let c = cfg(&[
            ("ovn-encap-ip", "192.168.0.1"),
            ("ovn-encap-tos-hv1", "inherit"),
            ("ovn-encap-df_default", "false"),
            ("ovn-set-local-ip", "true"),
        ]);
        let o = tunnel_extra_options(&encap, "hv2", &c, None);
        assert_eq!(o.get("csum"), None, "only true or false is passed on");
        assert_eq!(o.get("tos").map(String::as_str), Some("inherit"));
        assert_eq!(o.get("df_default").map(String::as_str), Some("false"));
        assert_eq!(o.get("local_ip").map(String::as_str), Some("192.168.0.1"));
        let none = tunnel_extra_options(&encap, "hv2", &cfg(&[("ovn-encap-tos", "none")]), None);
        assert_eq!(none.get("tos"), None);
        let mut global = SbGlobal {
            ipsec: true,
            ..SbGlobal::default()
        };
        global
            .options
            .insert("ipsec_forceencaps".into(), "true".into());
        let o = tunnel_extra_options(
            &encap,
            "hv2",
            &cfg(&[("ovn-encap-ip", "10.0.0.1")]),
            Some(&global),
        );
        assert_eq!(o.get("remote_name").map(String::as_str), Some("hv2"));
        assert_eq!(o.get("ipsec_forceencaps").map(String::as_str), Some("yes"));
        assert_eq!(o.get("local_ip").map(String::as_str), Some("10.0.0.1"));
    }
}
