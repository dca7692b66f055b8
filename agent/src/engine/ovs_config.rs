//! What the agent maintains in the local OVS database (reference §5.2-§5.3): the
//! integration bridge, one tunnel port per remote chassis and encap IP, the patch ports of
//! mapped localnet networks, `ovn-installed` on interfaces whose flows are in, and the
//! bridge's `ct-zone-*` / `ovn-nb-cfg` keys. One function computes the operations that make
//! the database match; nothing is written when it already does.

use std::collections::{BTreeMap, BTreeSet};

use sbclient::datum::{Atom, Datum};
use sbclient::ovn_sb::PortBinding;
use sbclient::transaction::{by_uuid, Columns, Mutator};
use sbclient::vswitch::{Bridge, Datapath, Interface, OpenVswitch, Port};
use sbclient::{Replica, Transaction, Uuid};

use super::binding::bridge;
use super::config::ChassisConfig;
use super::tunnels::{chassis_idx, sync_tunnels, CHASSIS_IDX_PREFIX};
use crate::runtime::Runtime;

/// The external_ids keys that mark the patch ports of localnet and l2gateway ports.
const LOCALNET_KEY: &str = "ovn-localnet-port";
const L2GATEWAY_KEY: &str = "ovn-l2gateway-port";

/// What the bridge's external_ids should hold for zones and nb_cfg.
#[derive(Clone, Debug)]
pub struct BridgeKeys<'a> {
    pub ct_zones: &'a BTreeMap<String, u16>,
    /// `(nb_cfg, timestamp ms)` last acknowledged.
    pub nb_cfg: Option<(i64, i64)>,
    /// Patch ports that no local datapath wants now are kept (just after a start, when
    /// the datapaths that want them may not have arrived yet).
    pub keep_unwanted_patches: bool,
}

/// Creates the integration bridge (fail-mode secure, a fixed hwaddr so the datapath-id does
/// not change when ports come, in-band off) with its internal port.
pub fn create_bridge(ovs: &Replica, cfg: &ChassisConfig, txn: &mut Transaction) {
    let Some((ovs_uuid, _)) = ovs.table::<OpenVswitch>().and_then(|t| t.iter().next()) else {
        return;
    };
    let name = cfg.bridge.as_str();
    txn.insert(
        "Interface",
        Columns::new()
            .set("name", Atom::from(name))
            .set("type", Atom::from("internal")),
        Some("iface"),
    );
    txn.insert(
        "Port",
        Columns::new().set("name", Atom::from(name)).set(
            "interfaces",
            Datum::Set(vec![Atom::NamedUuid("iface".into())]),
        ),
        Some("port"),
    );
    let mac = random_mac();
    let other = BTreeMap::from([
        ("disable-in-band".to_owned(), "true".to_owned()),
        ("hwaddr".to_owned(), mac),
    ]);
    let mut cols = Columns::new()
        .set("name", Atom::from(name))
        .set("fail_mode", Datum::Set(vec![Atom::from("secure")]))
        .set("other_config", Datum::map(&other))
        .set("ports", Datum::Set(vec![Atom::NamedUuid("port".into())]));
    if let Some(dt) = cfg.get("ovn-bridge-datapath-type") {
        cols = cols.set("datapath_type", Atom::from(dt));
    }
    txn.insert("Bridge", cols, Some("bridge"));
    txn.mutate(
        "Open_vSwitch",
        &by_uuid(*ovs_uuid),
        vec![(
            "bridges".into(),
            Mutator::Insert,
            Datum::Set(vec![Atom::NamedUuid("bridge".into())]),
        )],
    );
}

/// The datapath type of the integration bridge, as ovn-controller 23.03.1 chooses it:
/// `ovn-bridge-datapath-type` (per chassis too) when set, else the bridge's own, else
/// `system`. It is written to the bridge and reported in `Chassis:other_config`.
pub fn wanted_datapath_type(cfg: &ChassisConfig, br: Option<&Bridge>) -> String {
    cfg.get("ovn-bridge-datapath-type")
        .or(br
            .map(|b| b.datapath_type.as_str())
            .filter(|t| !t.is_empty()))
        .unwrap_or("system")
        .to_owned()
}

/// A locally administered unicast MAC, random per bridge.
fn random_mac() -> String {
    let b = uuid::Uuid::new_v4();
    let x = b.as_bytes();
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        (x[0] & 0xfe) | 0x02,
        x[1],
        x[2],
        x[3],
        x[4],
        x[5]
    )
}

/// Whether ovs-vswitchd reports capability `name` for br-int's datapath
/// (`Datapath:capabilities`, e.g. `ct_flush`).
pub fn br_int_capability(ovs: &Replica, cfg: &ChassisConfig, name: &str) -> bool {
    let Some((_, br)) = bridge(ovs, &cfg.bridge) else {
        return false;
    };
    let datapath_type = wanted_datapath_type(cfg, Some(br));
    ovs.table::<OpenVswitch>()
        .and_then(|t| t.iter().next())
        .and_then(|(_, r)| r.datapaths.get(&datapath_type).copied())
        .and_then(|u| ovs.table::<Datapath>()?.get(&u))
        .is_some_and(|d| d.capabilities.get(name).is_some_and(|v| v == "true"))
}

/// Adds to `txn` what makes br-int's ports and keys match; false if nothing to do.
#[allow(clippy::too_many_lines)]
pub fn sync(
    ovs: &Replica,
    sb: &Replica,
    cfg: &ChassisConfig,
    rt: &Runtime,
    installed: &BTreeSet<Uuid>,
    keys: &BridgeKeys<'_>,
    txn: &mut Transaction,
) -> bool {
    let open_vswitch_changed = sync_open_vswitch(ovs, cfg, txn);
    let Some((br_uuid, br)) = bridge(ovs, &cfg.bridge) else {
        create_bridge(ovs, cfg, txn);
        return true;
    };
    let (Some(ports), Some(ifaces)) = (ovs.table::<Port>(), ovs.table::<Interface>()) else {
        return false;
    };
    let mut changed = open_vswitch_changed;
    if br.fail_mode.as_deref() != Some("secure") {
        tracing::warn!("Integration bridge fail-mode changed to 'secure'");
        txn.update(
            "Bridge",
            &by_uuid(*br_uuid),
            Columns::new().set("fail_mode", Datum::Set(vec![Atom::from("secure")])),
        );
        changed = true;
    }
    let datapath_type = wanted_datapath_type(cfg, Some(br));
    if br.datapath_type != datapath_type {
        txn.update(
            "Bridge",
            &by_uuid(*br_uuid),
            Columns::new().set("datapath_type", Atom::from(datapath_type.as_str())),
        );
        changed = true;
    }
    // A Datapath record for br-int's datapath type, as ovn-controller keeps one:
    // ovs-vswitchd reports that datapath's capabilities there (ct_flush, ...).
    if let Some((ovs_uuid, row)) = ovs.table::<OpenVswitch>().and_then(|t| t.iter().next()) {
        if !row.datapaths.contains_key(&datapath_type) {
            txn.insert("Datapath", Columns::new(), Some("br_int_dp"));
            txn.mutate(
                "Open_vSwitch",
                &by_uuid(*ovs_uuid),
                vec![(
                    "datapaths".into(),
                    Mutator::Insert,
                    Datum::Map(vec![(
                        Atom::from(datapath_type.as_str()),
                        Atom::NamedUuid("br_int_dp".into()),
                    )]),
                )],
            );
            changed = true;
        }
    }
    let idx = chassis_idx(ovs, &cfg.system_id).unwrap_or_default();
    let (mut remove_ports, mut add_ports) = sync_tunnels(sb, cfg, br, ports, ifaces, txn, &idx);
    // Patch ports for the mapped localnet ports of local datapaths, and for the l2gateway
    // ports this chassis serves; keyed by the external_ids key that marks them.
    let pbs = sb.table::<PortBinding>();
    let mut wanted_patch: BTreeMap<(&'static str, String), (String, String)> = BTreeMap::new();
    let localnets = rt
        .local_datapaths
        .values()
        .filter_map(|dp| dp.localnet.and_then(|u| pbs.and_then(|t| t.get(&u))))
        .map(|pb| (LOCALNET_KEY, pb));
    let l2gateways = pbs
        .into_iter()
        .flat_map(sbclient::Table::iter)
        .map(|(_, pb)| pb)
        .filter(|pb| {
            pb.type_ == "l2gateway" && pb.options.get("l2gateway-chassis") == Some(&cfg.system_id)
        })
        .map(|pb| (L2GATEWAY_KEY, pb));
    for (key, pb) in localnets.chain(l2gateways) {
        let Some(net) = pb.options.get("network_name") else {
            continue;
        };
        let Some(phys) = cfg.bridge_mappings.get(net) else {
            continue;
        };
        if bridge(ovs, phys).is_none() {
            continue;
        }
        wanted_patch.insert((key, pb.logical_port.clone()), (phys.clone(), net.clone()));
    }
    let mut have_patch: BTreeMap<(&'static str, String), Uuid> = BTreeMap::new();
    for p in &br.ports {
        for key in [LOCALNET_KEY, L2GATEWAY_KEY] {
            if let Some(lp) = ports.get(p).and_then(|x| x.external_ids.get(key)) {
                have_patch.insert((key, lp.clone()), *p);
            }
        }
    }
    for ((key, lp), p) in &have_patch {
        if !keys.keep_unwanted_patches && !wanted_patch.contains_key(&(*key, lp.clone())) {
            remove_ports.push(*p);
            // The peer on the physical bridge goes too.
            for (bu, b) in ovs
                .table::<Bridge>()
                .into_iter()
                .flat_map(sbclient::Table::iter)
            {
                let peers: Vec<Uuid> = b
                    .ports
                    .iter()
                    .filter(|q| {
                        ports.get(q).is_some_and(|x| {
                            x.external_ids.get(*key) == Some(lp) && *bu != *br_uuid
                        })
                    })
                    .copied()
                    .collect();
                if !peers.is_empty() {
                    txn.mutate(
                        "Bridge",
                        &by_uuid(*bu),
                        vec![(
                            "ports".into(),
                            Mutator::Delete,
                            Datum::Set(peers.into_iter().map(Atom::Uuid).collect()),
                        )],
                    );
                    changed = true;
                }
            }
        }
    }
    for (i, ((key, lp), (phys, _))) in wanted_patch.iter().enumerate() {
        if have_patch.contains_key(&(*key, lp.clone())) {
            continue;
        }
        let here = format!("patch-{}-to-{lp}", cfg.bridge);
        let there = format!("patch-{lp}-to-{}", cfg.bridge);
        let ext = BTreeMap::from([((*key).to_owned(), lp.clone())]);
        for (side, name, peer) in [("a", &here, &there), ("b", &there, &here)] {
            txn.insert(
                "Interface",
                Columns::new()
                    .set("name", Atom::from(name.as_str()))
                    .set("type", Atom::from("patch"))
                    .set(
                        "options",
                        Datum::map(&BTreeMap::from([("peer".to_owned(), peer.clone())])),
                    ),
                Some(&format!("patch_iface_{side}{i}")),
            );
            txn.insert(
                "Port",
                Columns::new()
                    .set("name", Atom::from(name.as_str()))
                    .set(
                        "interfaces",
                        Datum::Set(vec![Atom::NamedUuid(format!("patch_iface_{side}{i}"))]),
                    )
                    .set("external_ids", Datum::map(&ext)),
                Some(&format!("patch_port_{side}{i}")),
            );
        }
        add_ports.push(Atom::NamedUuid(format!("patch_port_a{i}")));
        if let Some((pu, _)) = bridge(ovs, phys) {
            txn.mutate(
                "Bridge",
                &by_uuid(*pu),
                vec![(
                    "ports".into(),
                    Mutator::Insert,
                    Datum::Set(vec![Atom::NamedUuid(format!("patch_port_b{i}"))]),
                )],
            );
        }
    }
    if !remove_ports.is_empty() {
        remove_ports.sort();
        remove_ports.dedup();
        txn.mutate(
            "Bridge",
            &by_uuid(*br_uuid),
            vec![(
                "ports".into(),
                Mutator::Delete,
                Datum::Set(remove_ports.into_iter().map(Atom::Uuid).collect()),
            )],
        );
        changed = true;
    }
    if !add_ports.is_empty() {
        txn.mutate(
            "Bridge",
            &by_uuid(*br_uuid),
            vec![("ports".into(), Mutator::Insert, Datum::Set(add_ports))],
        );
        changed = true;
    }
    // ovn-installed on the interfaces of ports whose flows are in; off elsewhere.
    for p in &br.ports {
        let Some(port) = ports.get(p) else { continue };
        for iu in &port.interfaces {
            let Some(i) = ifaces.get(iu) else { continue };
            // An interface whose iface-id went keeps no ovn-installed either.
            if !i.external_ids.contains_key("iface-id")
                && !i.external_ids.contains_key("ovn-installed")
            {
                continue;
            }
            let want = installed.contains(iu);
            let has = i
                .external_ids
                .get("ovn-installed")
                .is_some_and(|v| v == "true");
            if want && !has {
                tracing::info!(target: "binding", "Setting lport {} ovn-installed in OVS",
                    i.external_ids.get("iface-id").map_or("", String::as_str));
                let now = super::now_ms().to_string();
                txn.mutate(
                    "Interface",
                    &by_uuid(*iu),
                    vec![(
                        "external_ids".into(),
                        Mutator::Insert,
                        Datum::map(&BTreeMap::from([
                            ("ovn-installed".to_owned(), "true".to_owned()),
                            ("ovn-installed-ts".to_owned(), now),
                        ])),
                    )],
                );
                changed = true;
            } else if !want && has {
                txn.mutate(
                    "Interface",
                    &by_uuid(*iu),
                    vec![(
                        "external_ids".into(),
                        Mutator::Delete,
                        Datum::Set(vec![
                            Atom::from("ovn-installed"),
                            Atom::from("ovn-installed-ts"),
                        ]),
                    )],
                );
                changed = true;
            }
        }
    }
    // Bridge keys: zones and nb_cfg.
    let mut set: BTreeMap<String, String> = BTreeMap::new();
    let mut del: BTreeSet<String> = BTreeSet::new();
    for (k, v) in br.external_ids.iter() {
        if let Some(name) = k.strip_prefix("ct-zone-") {
            if keys.ct_zones.get(name).map(ToString::to_string).as_deref() != Some(v.as_str()) {
                del.insert(k.clone());
            }
        }
    }
    for (name, z) in keys.ct_zones {
        let k = format!("ct-zone-{name}");
        if br.external_ids.get(&k).map(String::as_str) != Some(z.to_string().as_str()) {
            set.insert(k, z.to_string());
        }
    }
    if let Some((cfg_id, ts)) = keys.nb_cfg {
        if br.external_ids.get("ovn-nb-cfg").map(String::as_str)
            != Some(cfg_id.to_string().as_str())
        {
            set.insert("ovn-nb-cfg".into(), cfg_id.to_string());
            set.insert("ovn-nb-cfg-ts".into(), ts.to_string());
        }
    }
    if !br.external_ids.contains_key("ovn-startup-ts") {
        set.insert("ovn-startup-ts".into(), super::now_ms().to_string());
    }
    let muts = map_mutations(
        "external_ids",
        |k| br.external_ids.contains_key(k),
        &set,
        del,
    );
    if !muts.is_empty() {
        txn.mutate("Bridge", &by_uuid(*br_uuid), muts);
        changed = true;
    }
    changed
}

/// What ovn-controller 23.03.1 keeps in the Open_vSwitch row's `other_config`:
/// `vlan-limit=0` (ACLs may match double-tagged traffic), and this chassis' index among
/// the controllers of the host (`ovn-chassis-idx-<chassis>`: `""` for the first, then
/// `0`-`9`, `a`-`z`), set once. Adds the mutation to `txn`; false if nothing to do.
pub fn sync_open_vswitch(ovs: &Replica, cfg: &ChassisConfig, txn: &mut Transaction) -> bool {
    let Some((uuid, row)) = ovs.table::<OpenVswitch>().and_then(|t| t.iter().next()) else {
        return false;
    };
    let mut set: BTreeMap<String, String> = BTreeMap::new();
    if row
        .other_config
        .get("vlan-limit")
        .and_then(|v| v.parse::<i64>().ok())
        != Some(0)
    {
        set.insert("vlan-limit".to_owned(), "0".to_owned());
    }
    let idx_key = format!("{CHASSIS_IDX_PREFIX}{}", cfg.system_id);
    if !row.other_config.contains_key(&idx_key) {
        if let Some(i) = chassis_idx(ovs, &cfg.system_id) {
            set.insert(idx_key, i);
        } else {
            tracing::error!("All unique controller indices consumed.");
        }
    }
    if set.is_empty() {
        return false;
    }
    let muts = map_mutations(
        "other_config",
        |k| row.other_config.contains_key(k),
        &set,
        BTreeSet::new(),
    );
    txn.mutate("Open_vSwitch", &by_uuid(*uuid), muts);
    true
}

/// The mutations that give map `column` the pairs of `set` and remove the keys of `del`.
/// A map insert does not overwrite, so a key being set that `has` is deleted first; each
/// key is deleted once (ovsdb-server refuses a set with a duplicate).
fn map_mutations(
    column: &str,
    has: impl Fn(&str) -> bool,
    set: &BTreeMap<String, String>,
    mut del: BTreeSet<String>,
) -> Vec<(String, Mutator, Datum)> {
    del.extend(set.keys().filter(|k| has(k)).cloned());
    let mut muts = Vec::new();
    if !del.is_empty() {
        let keys = del.iter().map(|k| Atom::from(k.as_str())).collect();
        muts.push((column.to_owned(), Mutator::Delete, Datum::Set(keys)));
    }
    if !set.is_empty() {
        muts.push((column.to_owned(), Mutator::Insert, Datum::map(set)));
    }
    muts
}

/// `exit` cleanup of the Open_vSwitch row: this chassis' index goes.
pub fn remove_chassis_index(ovs: &Replica, cfg: &ChassisConfig, txn: &mut Transaction) {
    let Some((uuid, row)) = ovs.table::<OpenVswitch>().and_then(|t| t.iter().next()) else {
        return;
    };
    let idx_key = format!("{CHASSIS_IDX_PREFIX}{}", cfg.system_id);
    if row.other_config.contains_key(&idx_key) {
        txn.mutate(
            "Open_vSwitch",
            &by_uuid(*uuid),
            vec![(
                "other_config".to_owned(),
                Mutator::Delete,
                Datum::Set(vec![Atom::from(idx_key.as_str())]),
            )],
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::engine::tunnels::tests::cfg;

    #[test]
    fn a_changed_key_is_deleted_once_then_set() {
        let set = BTreeMap::from([("ct-zone-a".to_owned(), "7".to_owned())]);
        let del = BTreeSet::from(["ct-zone-a".to_owned(), "ct-zone-b".to_owned()]);
        let muts = map_mutations("external_ids", |k| k == "ct-zone-a", &set, del);
        assert_eq!(muts.len(), 2);
        assert_eq!(
            muts[0].2,
            Datum::Set(vec![Atom::from("ct-zone-a"), Atom::from("ct-zone-b")])
        );
        assert_eq!(muts[1].1, Mutator::Insert);
        assert!(map_mutations("c", |_| false, &BTreeMap::new(), BTreeSet::new()).is_empty());
    }

    #[test]
    fn datapath_type_as_ovn_controller_chooses_it() {
        let mut br = Bridge::default();
        assert_eq!(wanted_datapath_type(&cfg(&[]), Some(&br)), "system");
        br.datapath_type = "netdev".into();
        assert_eq!(wanted_datapath_type(&cfg(&[]), Some(&br)), "netdev");
        let c = cfg(&[("ovn-bridge-datapath-type", "foo")]);
        assert_eq!(wanted_datapath_type(&c, Some(&br)), "foo");
        assert_eq!(wanted_datapath_type(&c, None), "foo");
    }
}
