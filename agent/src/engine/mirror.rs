//! Port mirroring (the Southbound `Mirror` table, `Port_Binding:mirror_rules`): for each
//! mirror that a port bound here names, an OVS `Mirror` on br-int (marked
//! `external_ids:ovn-owned=true`) whose output is a tunnel port `ovn-<name>` to the mirror's
//! `sink` (`gre`/`erspan`, `ip6gre`/`ip6erspan` for an IPv6 sink, `key` = the mirror's
//! index), selecting the ports' traffic as they send it (`from-lport`) or as they receive it
//! (otherwise). A mirror no local port names, or that the Southbound no longer has, goes
//! from br-int with its port. OVS mirrors without the mark are the operator's: untouched.

use std::collections::{BTreeMap, BTreeSet};

use sbclient::datum::{Atom, Datum};
use sbclient::ovn_sb::{Mirror as SbMirror, PortBinding};
use sbclient::transaction::{by_uuid, Columns, Mutator};
use sbclient::vswitch::{Bridge, Interface, Mirror as OvsMirror, Port};
use sbclient::{Replica, Transaction, Uuid};

use crate::runtime::{BindingKind, Runtime};

const OWNED: &str = "ovn-owned";

/// The OVS interface type that carries mirror `m` to its sink.
pub fn tunnel_type(m: &SbMirror) -> String {
    let v6 = m.sink.parse::<std::net::Ipv6Addr>().is_ok();
    if v6 {
        format!("ip6{}", m.type_)
    } else {
        m.type_.clone()
    }
}

/// The options of that interface.
pub fn tunnel_options(m: &SbMirror) -> BTreeMap<String, String> {
    let key = m.index.to_string();
    let mut o = BTreeMap::from([
        ("remote_ip".to_owned(), m.sink.clone()),
        ("key".to_owned(), key.clone()),
    ]);
    if m.type_ == "erspan" {
        o.insert("erspan_idx".to_owned(), key);
        o.insert("erspan_ver".to_owned(), "1".to_owned());
    }
    o
}

/// One mirror as the Southbound and br-int have it, and the OVS ports it selects.
#[derive(Default)]
struct Wanted<'a> {
    sb: Option<&'a SbMirror>,
    ovs: Option<(Uuid, &'a OvsMirror)>,
    src: BTreeSet<Uuid>,
    dst: BTreeSet<Uuid>,
}

/// Adds to `txn` what makes br-int's mirrors match the Southbound's for the ports bound
/// here; false if nothing to do.
pub fn sync(
    ovs: &Replica,
    sb: &Replica,
    rt: &Runtime,
    br: (Uuid, &Bridge),
    txn: &mut Transaction,
) -> bool {
    let (br_uuid, br) = br;
    let (Some(ports), Some(ifaces)) = (ovs.table::<Port>(), ovs.table::<Interface>()) else {
        return false;
    };
    let sb_mirrors = sb.table::<SbMirror>();
    let mut mirrors: BTreeMap<&str, Wanted<'_>> = BTreeMap::new();
    for (_, m) in sb_mirrors.into_iter().flat_map(sbclient::Table::iter) {
        mirrors.entry(m.name.as_str()).or_default().sb = Some(m);
    }
    for (u, m) in ovs
        .table::<OvsMirror>()
        .into_iter()
        .flat_map(sbclient::Table::iter)
    {
        if m.external_ids.get(OWNED).is_some_and(|v| v == "true") {
            mirrors.entry(m.name.as_str()).or_default().ovs = Some((*u, m));
        }
    }
    if mirrors.is_empty() {
        return false;
    }
    // The br-int port of each interface, by interface name.
    let port_of: BTreeMap<&str, Uuid> = br
        .ports
        .iter()
        .filter_map(|p| ports.get(p).map(|port| (p, port)))
        .flat_map(|(p, port)| {
            port.interfaces
                .iter()
                .filter_map(|i| ifaces.get(i))
                .map(move |i| (i.name.as_str(), *p))
        })
        .collect();
    let pbs = sb.table::<PortBinding>();
    for (pb_uuid, kind) in &rt.bound {
        let BindingKind::Vif { iface, .. } = kind else {
            continue;
        };
        let Some(pb) = pbs.and_then(|t| t.get(pb_uuid)) else {
            continue;
        };
        let Some(port) = port_of.get(iface.as_str()) else {
            continue;
        };
        for rule in &pb.mirror_rules {
            let Some(m) = sb_mirrors.and_then(|t| t.get(rule)) else {
                continue;
            };
            let w = mirrors.entry(m.name.as_str()).or_default();
            if m.filter == "from-lport" {
                w.src.insert(*port);
            } else {
                w.dst.insert(*port);
            }
        }
    }
    let mut changed = false;
    for (i, (name, w)) in mirrors.iter().enumerate() {
        changed |= sync_one(name, w, (br_uuid, br), ports, ifaces, txn, i);
    }
    changed
}

fn sync_one(
    name: &str,
    w: &Wanted<'_>,
    br: (Uuid, &Bridge),
    ports: &sbclient::Table<Port>,
    ifaces: &sbclient::Table<Interface>,
    txn: &mut Transaction,
    i: usize,
) -> bool {
    let (br_uuid, br) = br;
    let unused = w.src.is_empty() && w.dst.is_empty();
    let (sb, ovs) = match (w.sb, w.ovs) {
        (Some(sb), _) if !unused => (sb, w.ovs),
        (_, Some((u, m))) => {
            // Not in the Southbound, or no port here names it: it goes, with its port.
            let mut mutations = vec![(
                "mirrors".into(),
                Mutator::Delete,
                Datum::Set(vec![Atom::Uuid(u)]),
            )];
            if let Some(p) = m.output_port.filter(|p| br.ports.contains(p)) {
                mutations.push((
                    "ports".into(),
                    Mutator::Delete,
                    Datum::Set(vec![Atom::Uuid(p)]),
                ));
            }
            txn.mutate("Bridge", &by_uuid(br_uuid), mutations);
            return true;
        }
        (_, None) => return false,
    };
    let Some((u, m)) = ovs else {
        let port = insert_port(name, sb, br_uuid, txn, i);
        txn.insert(
            "Mirror",
            selection(w)
                .set("name", Atom::from(name))
                .set("output_port", Atom::NamedUuid(port))
                .set("external_ids", Datum::map([(OWNED, "true")])),
            Some(&format!("mirror{i}")),
        );
        txn.mutate(
            "Bridge",
            &by_uuid(br_uuid),
            vec![(
                "mirrors".into(),
                Mutator::Insert,
                Datum::Set(vec![Atom::NamedUuid(format!("mirror{i}"))]),
            )],
        );
        return true;
    };
    let mut changed = false;
    let output = m.output_port.and_then(|p| ports.get(&p));
    match output.and_then(|p| p.interfaces.iter().next()) {
        // Its port was deleted (the reference is weak): a new one.
        None => {
            let port = insert_port(name, sb, br_uuid, txn, i);
            txn.update(
                "Mirror",
                &by_uuid(u),
                Columns::new().set("output_port", Atom::NamedUuid(port)),
            );
            changed = true;
        }
        Some(iface_uuid) => {
            let (ty, options) = (tunnel_type(sb), tunnel_options(sb));
            let same = ifaces.get(iface_uuid).is_some_and(|have| {
                have.type_ == ty
                    && have.options.len() == options.len()
                    && have.options.iter().all(|(k, v)| options.get(k) == Some(v))
            });
            if !same {
                txn.update(
                    "Interface",
                    &by_uuid(*iface_uuid),
                    Columns::new()
                        .set("type", Atom::from(ty.as_str()))
                        .set("options", Datum::map(&options)),
                );
                changed = true;
            }
        }
    }
    if m.select_src_port != w.src || m.select_dst_port != w.dst {
        txn.update("Mirror", &by_uuid(u), selection(w));
        changed = true;
    }
    changed
}

/// The selected ports of `w` as Mirror columns.
fn selection(w: &Wanted<'_>) -> Columns {
    let set = |s: &BTreeSet<Uuid>| Datum::Set(s.iter().copied().map(Atom::Uuid).collect());
    Columns::new()
        .set("select_src_port", set(&w.src))
        .set("select_dst_port", set(&w.dst))
}

/// Inserts the tunnel port `ovn-<name>` to the mirror's sink and adds it to br-int; returns
/// its row's name in the transaction.
fn insert_port(
    name: &str,
    sb: &SbMirror,
    br_uuid: Uuid,
    txn: &mut Transaction,
    i: usize,
) -> String {
    let port_name = format!("ovn-{name}");
    let (iface, port) = (format!("mirror_iface{i}"), format!("mirror_port{i}"));
    txn.insert(
        "Interface",
        Columns::new()
            .set("name", Atom::from(port_name.as_str()))
            .set("type", Atom::from(tunnel_type(sb).as_str()))
            .set("options", Datum::map(&tunnel_options(sb))),
        Some(&iface),
    );
    txn.insert(
        "Port",
        Columns::new()
            .set("name", Atom::from(port_name.as_str()))
            .set("interfaces", Datum::Set(vec![Atom::NamedUuid(iface)])),
        Some(&port),
    );
    txn.mutate(
        "Bridge",
        &by_uuid(br_uuid),
        vec![(
            "ports".into(),
            Mutator::Insert,
            Datum::Set(vec![Atom::NamedUuid(port.clone())]),
        )],
    );
    port
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    const BR_INT: &str = "00000000-0000-0000-0000-00000000a001";
    const VIF1_PORT: &str = "00000000-0000-0000-0000-00000000b001";
    const VIF1_IFACE: &str = "00000000-0000-0000-0000-00000000c001";
    const MIRROR_PORT: &str = "00000000-0000-0000-0000-00000000b002";
    const MIRROR_IFACE: &str = "00000000-0000-0000-0000-00000000c002";
    const OVS_MIRROR: &str = "00000000-0000-0000-0000-00000000e001";
    const PB: &str = "00000000-0000-0000-0000-00000000f001";
    const SB_MIRROR: &str = "00000000-0000-0000-0000-00000000f002";

    fn replica(db: &str, update: &Value) -> Replica {
        let mut r = Replica::new(db);
        if db == sbclient::vswitch::DATABASE {
            sbclient::vswitch::register_all(&mut r);
        } else {
            sbclient::ovn_sb::register_all(&mut r);
        }
        r.apply_snapshot(&serde_json::value::to_raw_value(update).unwrap())
            .unwrap();
        r
    }

    /// br-int with vif1 and, if `mirror` gives its output interface's type and options,
    /// an OVN-owned mirror0 selecting vif1 as it receives.
    fn ovs(mirror: Option<(&str, &[(&str, &str)])>) -> Replica {
        let mut ports = vec![json!(["uuid", VIF1_PORT])];
        let mut update = json!({
            "Port": {VIF1_PORT: {"initial": {"name": "vif1", "interfaces": ["uuid", VIF1_IFACE]}}},
            "Interface": {VIF1_IFACE: {"initial": {"name": "vif1"}}},
        });
        let mut bridge = json!({"name": "br-int"});
        if let Some((ty, options)) = mirror {
            ports.push(json!(["uuid", MIRROR_PORT]));
            let pairs: Vec<Value> = options.iter().map(|(k, v)| json!([k, v])).collect();
            update["Port"][MIRROR_PORT] =
                json!({"initial": {"name": "ovn-mirror0", "interfaces": ["uuid", MIRROR_IFACE]}});
            update["Interface"][MIRROR_IFACE] =
                json!({"initial": {"name": "ovn-mirror0", "type": ty, "options": ["map", pairs]}});
            update["Mirror"] = json!({OVS_MIRROR: {"initial": {
                "name": "mirror0",
                "output_port": ["uuid", MIRROR_PORT],
                "select_dst_port": ["uuid", VIF1_PORT],
                "external_ids": ["map", [["ovn-owned", "true"]]],
            }}});
            bridge["mirrors"] = json!(["uuid", OVS_MIRROR]);
        }
        bridge["ports"] = json!(["set", ports]);
        update["Bridge"] = json!({BR_INT: {"initial": bridge}});
        replica(sbclient::vswitch::DATABASE, &update)
    }

    /// Port ls1-lp1 naming mirror0 (`filter`, `type`, sink 192.168.1.12, index 0) if
    /// `attached`.
    fn sb(filter: &str, ty: &str, attached: bool) -> Replica {
        let rules = if attached {
            json!(["uuid", SB_MIRROR])
        } else {
            json!(["set", []])
        };
        replica(
            sbclient::ovn_sb::DATABASE,
            &json!({
                "Mirror": {SB_MIRROR: {"initial": {"name": "mirror0", "filter": filter, "type": ty, "sink": "192.168.1.12", "index": 0}}},
                "Port_Binding": {PB: {"initial": {"logical_port": "ls1-lp1", "mirror_rules": rules}}},
            }),
        )
    }

    fn bound() -> Runtime {
        let mut rt = Runtime::default();
        rt.bound.insert(
            PB.parse().unwrap(),
            BindingKind::Vif {
                ofport: 1,
                iface: "vif1".to_owned(),
            },
        );
        rt
    }

    fn run(ovs: &Replica, sb: &Replica, rt: &Runtime) -> (bool, String) {
        let (u, br) = crate::engine::binding::bridge(ovs, "br-int").expect("br-int");
        let mut txn = Transaction::new(sbclient::vswitch::DATABASE);
        let changed = sync(ovs, sb, rt, (*u, br), &mut txn);
        (changed, txn.to_params().to_string())
    }

    #[test]
    fn a_mirror_a_bound_port_names_is_created_with_its_tunnel_port() {
        let (changed, ops) = run(&ovs(None), &sb("to-lport", "gre", true), &bound());
        assert!(changed);
        for part in [
            r#""name":"ovn-mirror0","options":["map",[["key","0"],["remote_ip","192.168.1.12"]]],"type":"gre""#,
            r#""external_ids":["map",[["ovn-owned","true"]]],"name":"mirror0","output_port":["named-uuid","mirror_port0"],"select_dst_port":["uuid","00000000-0000-0000-0000-00000000b001"],"select_src_port":["set",[]]"#,
            r#"["mirrors","insert",["named-uuid","mirror0"]]"#,
            r#"["ports","insert",["named-uuid","mirror_port0"]]"#,
        ] {
            assert!(ops.contains(part), "{part}\nnot in\n{ops}");
        }
        // Nobody here names it: nothing.
        assert!(!run(&ovs(None), &sb("to-lport", "gre", false), &bound()).0);
        assert!(
            !run(
                &ovs(None),
                &sb("to-lport", "gre", true),
                &Runtime::default()
            )
            .0
        );
    }

    #[test]
    fn an_existing_mirror_follows_type_filter_and_detachment() {
        let gre: &[(&str, &str)] = &[("key", "0"), ("remote_ip", "192.168.1.12")];
        let rt = bound();
        assert_eq!(
            run(&ovs(Some(("gre", gre))), &sb("to-lport", "gre", true), &rt),
            (false, r#"["Open_vSwitch"]"#.to_owned())
        );
        let (changed, ops) = run(
            &ovs(Some(("gre", gre))),
            &sb("to-lport", "erspan", true),
            &rt,
        );
        assert!(changed);
        assert!(
            ops.contains(r#""options":["map",[["erspan_idx","0"],["erspan_ver","1"],["key","0"],["remote_ip","192.168.1.12"]]],"type":"erspan""#),
            "{ops}"
        );
        let (_, ops) = run(
            &ovs(Some(("gre", gre))),
            &sb("from-lport", "gre", true),
            &rt,
        );
        assert!(
            ops.contains(r#""select_dst_port":["set",[]],"select_src_port":["uuid","00000000-0000-0000-0000-00000000b001"]"#),
            "{ops}"
        );
        // Detached: the mirror and its port go from br-int.
        let (changed, ops) = run(&ovs(Some(("gre", gre))), &sb("to-lport", "gre", false), &rt);
        assert!(changed);
        assert!(
            ops.contains(r#"["mirrors","delete",["uuid","00000000-0000-0000-0000-00000000e001"]],["ports","delete",["uuid","00000000-0000-0000-0000-00000000b002"]]"#),
            "{ops}"
        );
    }

    #[test]
    fn an_ipv6_sink_takes_the_ip6_tunnel_type() {
        let mut m = SbMirror {
            sink: "fd00::2".into(),
            type_: "erspan".into(),
            ..SbMirror::default()
        };
        assert_eq!(tunnel_type(&m), "ip6erspan");
        m.sink = "10.0.0.2".into();
        assert_eq!(tunnel_type(&m), "erspan");
    }
}
