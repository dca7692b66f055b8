//! What the agent maintains in the local OVS database (reference §5.2-§5.3): the
//! integration bridge, one tunnel port per remote chassis and encap IP, the patch ports of
//! mapped localnet networks, `ovn-installed` on interfaces whose flows are in, and the
//! bridge's `ct-zone-*` / `ovn-nb-cfg` keys. One function computes the operations that make
//! the database match; nothing is written when it already does.

use std::collections::{BTreeMap, BTreeSet};

use sbclient::datum::{Atom, Datum};
use sbclient::ovn_sb::{Chassis, Encap, PortBinding, SbGlobal};
use sbclient::transaction::{by_uuid, Columns, Mutator};
use sbclient::vswitch::{Bridge, Interface, OpenVswitch, Port};
use sbclient::{Replica, Transaction, Uuid};

use super::binding::bridge;
use super::config::ChassisConfig;
use crate::runtime::{EncapType, Runtime};

/// The external_ids keys that mark the patch ports of localnet and l2gateway ports.
const LOCALNET_KEY: &str = "ovn-localnet-port";
const L2GATEWAY_KEY: &str = "ovn-l2gateway-port";

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

fn map_datum<'a>(m: impl IntoIterator<Item = (&'a String, &'a String)>) -> Datum {
    Datum::Map(
        m.into_iter()
            .map(|(k, v)| (Atom::from(k.as_str()), Atom::from(v.as_str())))
            .collect(),
    )
}

/// Tunnel port name: `ovn-<first 6 of the chassis name>-<n>`, the first free n.
fn tunnel_name(chassis: &str, taken: &BTreeSet<String>) -> String {
    let short: String = chassis.chars().take(6).collect();
    (0..=taken.len())
        .map(|n| format!("ovn-{short}-{n:x}"))
        .find(|n| !taken.contains(n))
        .unwrap_or_default()
}

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
        .set("other_config", map_datum(&other))
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
    let mut remove_ports: Vec<Uuid> = Vec::new();
    let mut add_ports: Vec<Atom> = Vec::new();
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
    // Tunnels.
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
                let n = tunnel_name(&w.chassis, &names);
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
                .set("options", map_datum(&tunnel_options(w))),
            Some(&iface_name),
        );
        txn.insert(
            "Port",
            Columns::new()
                .set("name", Atom::from(name.as_str()))
                .set("interfaces", Datum::Set(vec![Atom::NamedUuid(iface_name)]))
                .set(
                    "external_ids",
                    map_datum(&BTreeMap::from([(
                        "ovn-chassis-id".to_owned(),
                        w.chassis_id.clone(),
                    )])),
                ),
            Some(&port_name),
        );
        add_ports.push(Atom::NamedUuid(port_name));
    }
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
                        map_datum(&BTreeMap::from([("peer".to_owned(), peer.clone())])),
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
                    .set("external_ids", map_datum(&ext)),
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
                        map_datum(&BTreeMap::from([
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

/// `ovn-chassis-idx-<chassis>`: the index of each controller on a host, in the
/// Open_vSwitch row's other_config.
const CHASSIS_IDX_PREFIX: &str = "ovn-chassis-idx-";

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
        let used: BTreeSet<&str> = row
            .other_config
            .iter()
            .filter(|(k, _)| k.starts_with(CHASSIS_IDX_PREFIX))
            .map(|(_, v)| v.as_str())
            .collect();
        let free = std::iter::once(String::new())
            .chain(('0'..='9').chain('a'..='z').map(String::from))
            .find(|i| !used.contains(i.as_str()));
        if let Some(i) = free {
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
        muts.push((column.to_owned(), Mutator::Insert, map_datum(set)));
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
mod tests {
    use super::*;

    #[test]
    fn tunnel_names_are_short_and_unique() {
        let mut taken = BTreeSet::new();
        let a = tunnel_name("hv2-long-name", &taken);
        assert_eq!(a, "ovn-hv2-lo-0");
        taken.insert(a);
        assert_eq!(tunnel_name("hv2-long-name-b", &taken), "ovn-hv2-lo-1");
    }

    fn cfg(pairs: &[(&str, &str)]) -> ChassisConfig {
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
