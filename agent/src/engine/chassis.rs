//! The Chassis, Encap and Chassis_Private rows of this chassis (reference §4.3): what they
//! should hold, and the SB operations that make them so.

use std::collections::BTreeMap;

use sbclient::datum::{Atom, Datum};
use sbclient::ovn_sb::{Chassis, ChassisPrivate, Encap};
use sbclient::transaction::{by_uuid, Columns, Mutator};
use sbclient::vswitch::OpenVswitch;
use sbclient::{Replica, Transaction, Uuid};

use super::config::ChassisConfig;

/// Feature flags we implement, as ovn-controller advertises them (northd turns on newer
/// behaviour with them; `ct-no-masked-label` must be there or northd falls back to ct_label).
const FEATURES: [(&str, &str); 4] = [
    ("port-up-notif", "true"),
    ("ct-no-masked-label", "true"),
    ("mac-binding-timestamp", "true"),
    ("ovn-ct-lb-related", "true"),
];

/// The `other_config` this chassis publishes (every key always present, as 23.03.1 does).
pub fn other_config(
    cfg: &ChassisConfig,
    ovs: Option<&OpenVswitch>,
    datapath_type: &str,
) -> BTreeMap<String, String> {
    let mut m: BTreeMap<String, String> = BTreeMap::new();
    let g = |k: &str| cfg.get(k).unwrap_or_default().to_owned();
    m.insert("datapath-type".into(), datapath_type.to_owned());
    let mut types: Vec<&str> = ovs
        .map(|o| o.iface_types.iter().map(String::as_str).collect())
        .unwrap_or_default();
    types.sort_unstable();
    m.insert("iface-types".into(), types.join(","));
    m.insert("is-interconn".into(), cfg.is_interconn.to_string());
    m.insert("ovn-bridge-mappings".into(), g("ovn-bridge-mappings"));
    m.insert(
        "ovn-chassis-mac-mappings".into(),
        cfg.chassis_mac_mappings.clone(),
    );
    m.insert("ovn-cms-options".into(), cfg.cms_options.clone());
    m.insert("ovn-enable-lflow-cache".into(), "true".into());
    for k in [
        "ovn-limit-lflow-cache",
        "ovn-memlimit-lflow-cache-kb",
        "ovn-trim-limit-lflow-cache",
        "ovn-trim-timeout-ms",
        "ovn-trim-wmark-perc-lflow-cache",
    ] {
        m.insert(k.into(), g(k));
    }
    m.insert("ovn-monitor-all".into(), cfg.monitor_all.to_string());
    for (k, v) in FEATURES {
        m.insert(k.into(), v.into());
    }
    // And those of the release the flows are compiled for.
    for k in cfg.layout.dialect.chassis_features {
        m.insert((*k).into(), "true".into());
    }
    if cfg.tunnel_pkt_mark {
        m.insert(super::config::TUNNEL_PKT_MARK.into(), "true".into());
    }
    m
}

/// The encaps this chassis should publish: one per (type, ip).
fn wanted_encaps(cfg: &ChassisConfig) -> Vec<(String, String)> {
    let mut v = Vec::new();
    for t in &cfg.encap_types {
        for ip in &cfg.encap_ips {
            v.push((t.as_str().to_owned(), ip.clone()));
        }
    }
    v.sort();
    v
}

/// Our Chassis row.
pub fn find_chassis<'a>(sb: &'a Replica, name: &str) -> Option<(&'a Uuid, &'a Chassis)> {
    sb.table::<Chassis>()?.iter().find(|(_, c)| c.name == name)
}

/// Our Chassis_Private row.
pub fn find_private<'a>(sb: &'a Replica, name: &str) -> Option<(&'a Uuid, &'a ChassisPrivate)> {
    sb.table::<ChassisPrivate>()?
        .iter()
        .find(|(_, c)| c.name == name)
}

/// Operations that make our Chassis/Encap/Chassis_Private rows what `cfg` says, added to
/// `txn`; false if nothing needs to change.
pub fn sync(
    sb: &Replica,
    cfg: &ChassisConfig,
    other: &BTreeMap<String, String>,
    txn: &mut Transaction,
) -> bool {
    let name = cfg.system_id.as_str();
    let encaps_table = sb.table::<Encap>();
    let wanted = wanted_encaps(cfg);
    let csum = if cfg.encap_csum { "true" } else { "false" };
    let encap_cols = |t: &str, ip: &str| {
        Columns::new()
            .set("type", Atom::from(t))
            .set("ip", Atom::from(ip))
            .set("chassis_name", Atom::from(name))
            .set(
                "options",
                Datum::map(&BTreeMap::from([("csum".to_owned(), csum.to_owned())])),
            )
    };
    let mut changed = false;
    let chassis_ref: Atom;
    match find_chassis(sb, name) {
        None => {
            let mut refs = Vec::new();
            for (i, (t, ip)) in wanted.iter().enumerate() {
                let n = format!("encap{i}");
                txn.insert("Encap", encap_cols(t, ip), Some(&n));
                refs.push(Atom::NamedUuid(n));
            }
            txn.insert(
                "Chassis",
                Columns::new()
                    .set("name", Atom::from(name))
                    .set("hostname", Atom::from(cfg.hostname.as_str()))
                    .set("encaps", Datum::Set(refs))
                    .set("other_config", Datum::map(other))
                    .set(
                        "transport_zones",
                        Datum::Set(
                            cfg.transport_zones
                                .iter()
                                .map(|z| Atom::from(z.as_str()))
                                .collect(),
                        ),
                    ),
                Some("chassis"),
            );
            chassis_ref = Atom::NamedUuid("chassis".into());
            changed = true;
        }
        Some((uuid, ch)) => {
            chassis_ref = Atom::Uuid(*uuid);
            let have: Vec<(String, String, Option<String>)> = ch
                .encaps
                .iter()
                .filter_map(|e| encaps_table.and_then(|t| t.get(e)))
                .map(|e| {
                    (
                        e.type_.clone(),
                        e.ip.clone(),
                        e.options.get("csum").cloned(),
                    )
                })
                .collect();
            let mut have_pairs: Vec<(String, String)> = have
                .iter()
                .map(|(t, ip, _)| (t.clone(), ip.clone()))
                .collect();
            have_pairs.sort();
            let csum_ok = have.iter().all(|(_, _, c)| c.as_deref() == Some(csum));
            let mut cols = Columns::new();
            if have_pairs != wanted || !csum_ok {
                // Encap is not a root table: the old rows go when nothing refers to them.
                let mut refs = Vec::new();
                for (i, (t, ip)) in wanted.iter().enumerate() {
                    let n = format!("encap{i}");
                    txn.insert("Encap", encap_cols(t, ip), Some(&n));
                    refs.push(Atom::NamedUuid(n));
                }
                cols = cols.set("encaps", Datum::Set(refs));
            }
            if ch.hostname != cfg.hostname {
                cols = cols.set("hostname", Atom::from(cfg.hostname.as_str()));
            }
            // Read-merge-write: keys others put in other_config stay.
            let mut merged: BTreeMap<String, String> = ch
                .other_config
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let before = merged.clone();
            merged.extend(other.iter().map(|(k, v)| (k.clone(), v.clone())));
            // Our own capability goes when it is turned off (it is ours to withdraw).
            if !other.contains_key(super::config::TUNNEL_PKT_MARK) {
                merged.remove(super::config::TUNNEL_PKT_MARK);
            }
            if merged != before {
                cols = cols.set("other_config", Datum::map(&merged));
                txn.wait_unchanged(*uuid, ch, &["other_config"]);
            }
            let zones: Vec<&String> = ch.transport_zones.iter().collect();
            let want_zones: Vec<&String> = {
                let mut z: Vec<&String> = cfg.transport_zones.iter().collect();
                z.sort();
                z
            };
            if zones != want_zones {
                cols = cols.set(
                    "transport_zones",
                    Datum::Set(
                        cfg.transport_zones
                            .iter()
                            .map(|z| Atom::from(z.as_str()))
                            .collect(),
                    ),
                );
            }
            if !cols.0.is_empty() {
                txn.update("Chassis", &by_uuid(*uuid), cols);
                changed = true;
            }
        }
    }
    match find_private(sb, name) {
        None => {
            txn.insert(
                "Chassis_Private",
                Columns::new()
                    .set("name", Atom::from(name))
                    .set("chassis", Datum::Set(vec![chassis_ref])),
                None,
            );
            changed = true;
        }
        Some((uuid, p)) => {
            let points_to_us =
                matches!((&chassis_ref, p.chassis), (Atom::Uuid(u), Some(c)) if *u == c);
            if !points_to_us {
                txn.update(
                    "Chassis_Private",
                    &by_uuid(*uuid),
                    Columns::new().set("chassis", Datum::Set(vec![chassis_ref])),
                );
                changed = true;
            }
        }
    }
    changed
}

/// `nb_cfg` (and its timestamp, ms) into our Chassis_Private row.
pub fn ack_nb_cfg(
    sb: &Replica,
    name: &str,
    nb_cfg: i64,
    now_ms: i64,
    txn: &mut Transaction,
) -> bool {
    let Some((uuid, p)) = find_private(sb, name) else {
        return false;
    };
    if p.nb_cfg == nb_cfg {
        return false;
    }
    txn.update(
        "Chassis_Private",
        &by_uuid(*uuid),
        Columns::new()
            .set("nb_cfg", Atom::Integer(nb_cfg))
            .set("nb_cfg_timestamp", Atom::Integer(now_ms)),
    );
    true
}

/// Graceful exit (`exit` without `--restart`): our Chassis, Chassis_Private and
/// IGMP_Group rows go, and every binding that points to us is cleared.
pub fn cleanup(sb: &Replica, name: &str, txn: &mut Transaction) {
    use sbclient::ovn_sb::{IgmpGroup, PortBinding};
    let me = find_chassis(sb, name).map(|(u, _)| *u);
    // `chassis` is a weak reference: the rows would stay, naming no chassis.
    if let (Some(me), Some(groups)) = (me, sb.table::<IgmpGroup>()) {
        for (uuid, g) in groups.iter() {
            if g.chassis == Some(me) {
                txn.delete("IGMP_Group", &by_uuid(*uuid));
            }
        }
    }
    if let (Some(me), Some(pbs)) = (me, sb.table::<PortBinding>()) {
        for (uuid, pb) in pbs.iter() {
            if pb.chassis == Some(me) {
                txn.update(
                    "Port_Binding",
                    &by_uuid(*uuid),
                    Columns::new()
                        .set("chassis", Datum::Set(vec![]))
                        .set("encap", Datum::Set(vec![])),
                );
            }
            if pb.additional_chassis.contains(&me) {
                txn.mutate(
                    "Port_Binding",
                    &by_uuid(*uuid),
                    vec![(
                        "additional_chassis".into(),
                        Mutator::Delete,
                        Datum::Set(vec![Atom::Uuid(me)]),
                    )],
                );
            }
        }
    }
    if let Some((u, _)) = find_private(sb, name) {
        txn.delete("Chassis_Private", &by_uuid(*u));
    }
    if let Some(me) = me {
        txn.delete("Chassis", &by_uuid(me));
    }
}
