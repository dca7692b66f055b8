//! BFD on the tunnels of HA chassis groups (reference §4.1): which remote chassis this
//! chassis runs BFD with, the `Interface:bfd` settings that asks OVS for (OVS runs the
//! sessions), and which tunnels BFD says are up (`active_tunnels`, what HA activity follows).

use std::collections::{BTreeMap, BTreeSet};

use sbclient::datum::{Atom, Datum};
use sbclient::ovn_sb::{Chassis, HaChassis, HaChassisGroup, SbGlobal};
use sbclient::transaction::by_uuid;
use sbclient::vswitch::{Interface, Port};
use sbclient::{Replica, Transaction, Uuid};

use super::binding::bridge;

/// The remote chassis (by name) this chassis runs BFD with: for every HA chassis group of
/// two or more chassis, a member runs it with the other members and the group's
/// `ref_chassis` (but those marked `is-remote`), a `ref_chassis` with the members.
pub fn bfd_chassis(sb: &Replica, me: Uuid) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let (Some(groups), Some(ha), Some(chassis)) = (
        sb.table::<HaChassisGroup>(),
        sb.table::<HaChassis>(),
        sb.table::<Chassis>(),
    ) else {
        return out;
    };
    for (_, g) in groups.iter() {
        if g.ha_chassis.len() < 2 {
            continue;
        }
        let members: Vec<Uuid> = g
            .ha_chassis
            .iter()
            .filter_map(|h| ha.get(h)?.chassis)
            .filter(|c| chassis.get(c).is_some())
            .collect();
        let is_member = members.contains(&me);
        let is_ref = g.ref_chassis.contains(&me);
        if !is_member && !is_ref {
            continue;
        }
        let mut peers: Vec<Uuid> = members;
        if is_member {
            peers.extend(g.ref_chassis.iter().copied().filter(|r| {
                chassis
                    .get(r)
                    .is_some_and(|c| c.other_config.get("is-remote").is_none_or(|v| v != "true"))
            }));
        }
        out.extend(
            peers
                .iter()
                .filter(|p| **p != me)
                .filter_map(|p| chassis.get(p).map(|c| c.name.clone())),
        );
    }
    out
}

/// A BFD parameter of `SB_Global:options` that OVS would not take.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("SB_Global options:{key}={value:?} is not a valid BFD setting ({why}): left out")]
pub struct BadParameter {
    pub key: &'static str,
    pub value: String,
    pub why: &'static str,
}

/// The `Interface:bfd` map a BFD tunnel gets: enabled, the tunnel key checked, and the
/// timers of `SB_Global:options` (`bfd-min-rx`, `bfd-decay-min-rx`, `bfd-min-tx`,
/// `bfd-mult`) that are valid; the others are returned to be reported.
pub fn settings(sb: &Replica) -> (BTreeMap<String, String>, Vec<BadParameter>) {
    let mut out = BTreeMap::from([
        ("enable".to_owned(), "true".to_owned()),
        ("check_tnl_key".to_owned(), "true".to_owned()),
    ]);
    let mut bad = Vec::new();
    let options = sb
        .table::<SbGlobal>()
        .and_then(|t| t.iter().next().map(|(_, g)| g.options.clone()))
        .unwrap_or_default();
    // OVS's ranges: timers in ms from 1, the multiplier 1..=255.
    for (key, column, max) in [
        ("bfd-min-rx", "min_rx", u64::from(u32::MAX)),
        ("bfd-decay-min-rx", "decay_min_rx", u64::from(u32::MAX)),
        ("bfd-min-tx", "min_tx", u64::from(u32::MAX)),
        ("bfd-mult", "mult", 255),
    ] {
        let Some(value) = options.get(key) else {
            continue;
        };
        match value.parse::<u64>() {
            Ok(n) if (1..=max).contains(&n) => {
                out.insert(column.to_owned(), value.clone());
            }
            Ok(_) => bad.push(BadParameter {
                key,
                value: value.clone(),
                why: "out of range",
            }),
            Err(_) => bad.push(BadParameter {
                key,
                value: value.clone(),
                why: "not a number",
            }),
        }
    }
    (out, bad)
}

/// The chassis whose tunnel on `bridge_name` has BFD enabled and up.
pub fn active_tunnels(ovs: &Replica, bridge_name: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (_, chassis, iface) in tunnel_interfaces(ovs, bridge_name) {
        let enabled = iface.bfd.get("enable").is_some_and(|v| v == "true");
        let up = iface.bfd_status.get("state").is_some_and(|v| v == "up");
        if enabled && up {
            out.insert(chassis);
        }
    }
    out
}

/// `(interface uuid, remote chassis, interface)` of every tunnel on the bridge.
fn tunnel_interfaces<'a>(
    ovs: &'a Replica,
    bridge_name: &str,
) -> Vec<(Uuid, String, &'a Interface)> {
    let (Some((_, br)), Some(ports), Some(ifaces)) = (
        bridge(ovs, bridge_name),
        ovs.table::<Port>(),
        ovs.table::<Interface>(),
    ) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for port in br.ports.iter().filter_map(|p| ports.get(p)) {
        let Some(id) = port.external_ids.get("ovn-chassis-id") else {
            continue;
        };
        let chassis = id.split_once('@').map_or(id.as_str(), |(c, _)| c);
        for u in &port.interfaces {
            if let Some(i) = ifaces.get(u) {
                if i.options.contains_key("remote_ip") {
                    out.push((*u, chassis.to_owned(), i));
                }
            }
        }
    }
    out
}

/// Adds to `txn` what makes BFD run exactly on the tunnels to `peers` with `wanted`
/// settings; true if it added anything. Logs each change as ovn-controller does.
pub fn sync(
    ovs: &Replica,
    bridge_name: &str,
    peers: &BTreeSet<String>,
    wanted: &BTreeMap<String, String>,
    txn: &mut Transaction,
) -> bool {
    let mut changed = false;
    for (uuid, chassis, iface) in tunnel_interfaces(ovs, bridge_name) {
        let have: BTreeMap<&String, &String> = iface.bfd.iter().collect();
        let target: BTreeMap<&String, &String> = if peers.contains(&chassis) {
            wanted.iter().collect()
        } else {
            BTreeMap::new()
        };
        if have == target {
            continue;
        }
        let value = Datum::Map(
            target
                .iter()
                .map(|(k, v)| (Atom::from(k.as_str()), Atom::from(v.as_str())))
                .collect(),
        );
        txn.update(
            "Interface",
            &by_uuid(uuid),
            sbclient::transaction::Columns::new().set("bfd", value),
        );
        if target.is_empty() {
            tracing::info!(target: "bfd", "Disabled BFD on interface {}", iface.name);
        } else {
            tracing::info!(target: "bfd", "Enabled BFD on interface {}", iface.name);
        }
        changed = true;
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::southbound::Southbound;

    fn id(n: u32) -> String {
        format!("5b4c5c1e-0000-4000-8000-{n:012}")
    }

    fn uuid(n: u32) -> Uuid {
        Uuid::parse_str(&id(n)).unwrap()
    }

    fn set(items: &[u32]) -> String {
        let list: Vec<String> = items
            .iter()
            .map(|n| format!(r#"["uuid","{}"]"#, id(*n)))
            .collect();
        format!(r#"["set",[{}]]"#, list.join(","))
    }

    /// Chassis gw1 (1), gw2 (2), hv1 (3), ic (4, is-remote), hv9 (5); group 10 = gw1/20 +
    /// gw2/10 with refs hv1 and ic; group 11 = hv9 alone with ref hv1.
    fn sb(options: &str) -> Southbound {
        let mut sb = Southbound::default();
        let chassis: Vec<String> = [(1, "gw1"), (2, "gw2"), (3, "hv1"), (4, "ic"), (5, "hv9")]
            .iter()
            .map(|(n, name)| {
                let other = if *name == "ic" {
                    r#"[["is-remote","true"]]"#
                } else {
                    "[]"
                };
                format!(r#"[["uuid","{}"],"{name}",["map",{other}]]"#, id(*n))
            })
            .collect();
        let text = format!(
            r#"{{"caption":"Chassis table","headings":["_uuid","name","other_config"],"data":[{}]}}
            {{"caption":"HA_Chassis table","headings":["_uuid","chassis","priority"],"data":[
                [["uuid","{h1}"],["uuid","{c1}"],20],[["uuid","{h2}"],["uuid","{c2}"],10],
                [["uuid","{h3}"],["uuid","{c5}"],1],
                [["uuid","{h4}"],["uuid","{c1}"],10],[["uuid","{h5}"],["uuid","{c2}"],10],
                [["uuid","{h6}"],["set",[]],50]]}}
            {{"caption":"HA_Chassis_Group table","headings":["_uuid","name","ha_chassis","ref_chassis"],"data":[
                [["uuid","{g10}"],"g10",{m10},{r10}],[["uuid","{g11}"],"g11",{m11},{r11}],
                [["uuid","{g12}"],"g12",{m12},{r10}]]}}
            {{"caption":"SB_Global table","headings":["_uuid","options"],"data":[[["uuid","{g}"],["map",[{options}]]]]}}"#,
            chassis.join(","),
            h1 = id(101),
            h2 = id(102),
            h3 = id(103),
            h4 = id(104),
            h5 = id(105),
            h6 = id(106),
            c1 = id(1),
            c2 = id(2),
            c5 = id(5),
            g10 = id(10),
            g11 = id(11),
            g12 = id(12),
            m10 = set(&[101, 102]),
            r10 = set(&[3, 4]),
            m11 = set(&[103]),
            m12 = set(&[104, 105, 106]),
            r11 = set(&[3]),
            g = id(99),
        );
        sb.load_json(&text).unwrap();
        sb
    }

    #[test]
    fn members_see_members_and_refs_refs_see_members() {
        let sb = sb("");
        let names = |s: BTreeSet<String>| s.into_iter().collect::<Vec<_>>();
        assert_eq!(names(bfd_chassis(&sb.replica, uuid(1))), ["gw2", "hv1"]);
        assert_eq!(names(bfd_chassis(&sb.replica, uuid(3))), ["gw1", "gw2"]);
        // A one-member group needs no BFD.
        assert!(bfd_chassis(&sb.replica, uuid(5)).is_empty());
    }

    #[test]
    fn bad_timers_are_left_out_and_reported() {
        let sb = sb(r#"["bfd-min-rx","100"],["bfd-min-tx","fast"],["bfd-mult","300"]"#);
        let (s, bad) = settings(&sb.replica);
        assert_eq!(s.get("min_rx").map(String::as_str), Some("100"));
        assert_eq!(s.get("enable").map(String::as_str), Some("true"));
        assert!(!s.contains_key("min_tx") && !s.contains_key("mult"));
        let keys: Vec<&str> = bad.iter().map(|b| b.key).collect();
        assert_eq!(keys, ["bfd-min-tx", "bfd-mult"]);
    }

    #[test]
    fn ha_activity_follows_bfd_by_ovn_controllers_rules() {
        use crate::engine::binding::{ha_active, Me};
        let sb = sb("");
        let check = |name: &str, n: u32, up: Option<&[&str]>, group: u32| {
            let up: Option<BTreeSet<String>> =
                up.map(|u| u.iter().map(|s| (*s).to_owned()).collect());
            let me = Me {
                name,
                hostname: "",
                uuid: Some(uuid(n)),
                active_tunnels: up.as_ref(),
            };
            ha_active(&sb.replica, &uuid(group), &me)
        };
        // No BFD session up: nobody is active.
        assert_eq!(check("gw1", 1, Some(&[]), 10), (false, true));
        assert_eq!(check("gw1", 1, Some(&["gw2", "hv1"]), 10), (true, true));
        assert_eq!(check("gw2", 2, Some(&["gw1", "hv1"]), 10), (false, true));
        // gw1 is gone: gw2 alone, active while it reaches a ref_chassis.
        assert_eq!(check("gw2", 2, Some(&["hv1"]), 10), (true, true));
        assert_eq!(check("gw2", 2, Some(&["ic"]), 10), (true, true));
        assert_eq!(check("gw2", 2, Some(&["hv9"]), 10), (false, true));
        // Liveness unknown (the compile tool): by priority.
        assert_eq!(check("gw1", 1, None, 10), (true, true));
        assert_eq!(check("gw2", 2, None, 10), (false, true));
        // A one-chassis group is active on its chassis, BFD or not.
        assert_eq!(check("hv9", 5, Some(&[]), 11), (true, true));
        assert_eq!(check("hv1", 3, Some(&["gw1"]), 10), (false, false));
        // Group 12: gw1 and gw2 tied at 10 (the name decides, descending: gw2), and a member
        // with priority 50 whose chassis does not exist (ignored).
        assert_eq!(check("gw2", 2, Some(&["gw1", "hv1"]), 12), (true, true));
        assert_eq!(check("gw1", 1, Some(&["gw2", "hv1"]), 12), (false, true));
        assert_eq!(check("gw1", 1, Some(&["hv1"]), 12), (true, true));
    }
}
