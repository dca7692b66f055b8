//! VIF plugging: for a VIF port requested on this chassis whose `options:vif-plug-type`
//! names an enabled provider, the agent creates (and keeps up to date) the interface on
//! br-int that the provider describes, marked `external_ids:ovn-plugged=<type>` with the
//! port's `iface-id` and `mtu_request` from `options:vif-plug-mtu-request`; an interface it
//! plugged whose port went or moved to another chassis is unplugged (not during the
//! start-up delay, when the Southbound may not be complete yet). An interface with the
//! port's iface-id that the agent did not plug is left alone, with a warning. The only
//! provider built in is `dummy` (`--enable-dummy-vif-plug`, for tests), as in
//! ovn-controller.

use std::collections::{BTreeMap, BTreeSet};

use sbclient::datum::{Atom, Datum};
use sbclient::ovn_sb::PortBinding;
use sbclient::transaction::{by_uuid, Columns, Mutator};
use sbclient::vswitch::{Bridge, Interface, Port};
use sbclient::{Replica, Transaction, Uuid};

use crate::vlog::RateLimit;

static PLUG_WARN: RateLimit = RateLimit::new(5, 20);

const PLUGGED: &str = "ovn-plugged";
const TYPE_OPTION: &str = "vif-plug-type";
const MTU_OPTION: &str = "vif-plug-mtu-request";
/// Interface names are at most this long (Linux's `IFNAMSIZ` - 1).
const MAX_IFACE_NAME: usize = 15;

/// What a provider wants for one logical port's interface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlugSpec {
    pub name: String,
    pub type_: String,
    pub options: BTreeMap<String, String>,
}

/// A VIF plug provider: how it names and configures the interface of a logical port, and
/// which interface options it maintains (sets and removes) once plugged.
#[derive(Debug)]
pub struct Provider {
    pub name: &'static str,
    pub prepare: fn(lport: &str) -> PlugSpec,
    pub maintained_options: &'static [&'static str],
}

/// The test provider: an internal interface named after the port (cut to 15 bytes), with
/// one option of its own.
pub static DUMMY: Provider = Provider {
    name: "dummy",
    prepare: |lport| {
        let mut name = lport.to_owned();
        if name.len() > MAX_IFACE_NAME {
            let mut end = MAX_IFACE_NAME;
            while !name.is_char_boundary(end) {
                end -= 1;
            }
            name.truncate(end);
        }
        PlugSpec {
            name,
            type_: "internal".to_owned(),
            options: BTreeMap::from([("vif-plug-dummy-option".to_owned(), "value".to_owned())]),
        }
    },
    maintained_options: &["vif-plug-dummy-option"],
};

/// The providers enabled in this run.
#[derive(Clone, Debug, Default)]
pub struct Providers(Vec<&'static Provider>);

impl Providers {
    pub fn new(enable_dummy: bool) -> Self {
        Self(if enable_dummy {
            vec![&DUMMY]
        } else {
            Vec::new()
        })
    }

    fn get(&self, name: &str) -> Option<&'static Provider> {
        self.0.iter().find(|p| p.name == name).copied()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// This chassis as the plugging sees it.
pub struct Me<'a> {
    pub uuid: Uuid,
    pub name: &'a str,
}

/// Whether `pb` may be bound here (its requested chassis, or no request at all).
fn can_bind(pb: &PortBinding, me: &Me<'_>) -> bool {
    if pb.requested_chassis == Some(me.uuid) || pb.requested_additional_chassis.contains(&me.uuid) {
        return true;
    }
    match pb.options.get("requested-chassis").map(String::as_str) {
        None | Some("") => true,
        Some(list) => list.split(',').any(|c| c == me.name),
    }
}

struct Ctx<'a> {
    providers: &'a Providers,
    me: Me<'a>,
    br_uuid: Uuid,
    br_name: &'a str,
    /// The br-int interface (uuid, row) with each iface-id, and the port holding it.
    by_iface_id: BTreeMap<&'a str, (Uuid, &'a Interface, Uuid)>,
    ports_of: BTreeMap<Uuid, Uuid>,
    touched: BTreeSet<String>,
    changed: bool,
    n: usize,
}

/// Adds to `txn` the plugging and unplugging this chassis owes; false if nothing to do.
/// `can_unplug`: false during the start-up delay.
pub fn sync(
    ovs: &Replica,
    sb: &Replica,
    providers: &Providers,
    me: Me<'_>,
    br: (Uuid, &Bridge),
    can_unplug: bool,
    txn: &mut Transaction,
) -> bool {
    let (br_uuid, br) = br;
    let (Some(ports), Some(ifaces), Some(pbs)) = (
        ovs.table::<Port>(),
        ovs.table::<Interface>(),
        sb.table::<PortBinding>(),
    ) else {
        return false;
    };
    let mut by_iface_id = BTreeMap::new();
    let mut ports_of = BTreeMap::new();
    for p in &br.ports {
        let Some(port) = ports.get(p) else { continue };
        for i in &port.interfaces {
            ports_of.insert(*i, *p);
            if let Some((id, row)) = ifaces
                .get(i)
                .and_then(|row| row.external_ids.get("iface-id").map(|id| (id, row)))
            {
                by_iface_id.insert(id.as_str(), (*i, row, *p));
            }
        }
    }
    let mut cx = Ctx {
        providers,
        me,
        br_uuid,
        br_name: &br.name,
        by_iface_id,
        ports_of,
        touched: BTreeSet::new(),
        changed: false,
        n: 0,
    };
    let by_name = |name: &str| crate::southbound::port_binding_named(sb, name).map(|(_, p)| p);
    // Interfaces plugged earlier: kept up to date, or unplugged.
    for (iu, iface) in ifaces.iter() {
        let (Some(_), Some(id)) = (
            iface.external_ids.get(PLUGGED),
            iface.external_ids.get("iface-id"),
        ) else {
            continue;
        };
        if cx.touched.contains(id.as_str()) {
            continue;
        }
        let pb = by_name(id);
        match pb {
            Some(pb) if can_bind(pb, &cx.me) && cx.by_iface_id.contains_key(id.as_str()) => {
                cx.plug(pb, txn);
            }
            Some(pb) if can_bind(pb, &cx.me) => {}
            _ if can_unplug => cx.unplug(*iu, iface, id, txn),
            _ => {}
        }
    }
    // VIF ports requested here.
    for (_, pb) in pbs.find("requested_chassis", &Atom::Uuid(cx.me.uuid)) {
        let vif = pb.type_.is_empty() && pb.parent_port.as_deref().unwrap_or("").is_empty();
        if !vif || cx.touched.contains(&pb.logical_port) {
            continue;
        }
        if can_bind(pb, &cx.me) {
            cx.plug(pb, txn);
        } else if let (true, Some((iu, iface, _))) = (
            can_unplug,
            cx.by_iface_id.get(pb.logical_port.as_str()).copied(),
        ) {
            cx.unplug(iu, iface, &pb.logical_port, txn);
        }
    }
    cx.changed
}

impl Ctx<'_> {
    fn plug(&mut self, pb: &PortBinding, txn: &mut Transaction) {
        if pb.requested_chassis != Some(self.me.uuid) {
            return;
        }
        let Some(kind) = pb.options.get(TYPE_OPTION) else {
            return;
        };
        let lport = pb.logical_port.as_str();
        let Some(provider) = self.providers.get(kind) else {
            crate::vlog_rl!(WARN, &PLUG_WARN, target: "vif_plug",
                "no VIF plug provider {kind:?} (options:{TYPE_OPTION}) for lport {lport}");
            return;
        };
        let spec = (provider.prepare)(lport);
        let mtu = pb
            .options
            .get(MTU_OPTION)
            .and_then(|v| v.parse::<i64>().ok())
            .filter(|m| *m > 0);
        self.touched.insert(lport.to_owned());
        let Some((iu, iface, _)) = self.by_iface_id.get(lport).copied() else {
            tracing::info!(target: "vif_plug",
                "Plugging port {} into {} for lport {lport} on this chassis.", spec.name, self.br_name);
            self.create(kind, lport, &spec, mtu, txn);
            return;
        };
        if !iface.external_ids.contains_key(PLUGGED) {
            crate::vlog_rl!(WARN, &PLUG_WARN, target: "vif_plug",
                "CMS requested plugging of lport {lport}, but interface {iu} already carries its iface-id and was not plugged by OVN: left alone");
            return;
        }
        if iface.name != spec.name {
            crate::vlog_rl!(WARN, &PLUG_WARN, target: "vif_plug",
                "lport {lport}: its plugged interface {} would now be named {}: recreate the port to change it", iface.name, spec.name);
            return;
        }
        self.update(iu, iface, kind, lport, &spec, provider, mtu, txn);
    }

    fn create(
        &mut self,
        kind: &str,
        lport: &str,
        spec: &PlugSpec,
        mtu: Option<i64>,
        txn: &mut Transaction,
    ) {
        let (iface, port) = (
            format!("plug_iface{}", self.n),
            format!("plug_port{}", self.n),
        );
        self.n += 1;
        let mut columns = Columns::new()
            .set("name", Atom::from(spec.name.as_str()))
            .set("type", Atom::from(spec.type_.as_str()))
            .set(
                "external_ids",
                Datum::map([(PLUGGED, kind), ("iface-id", lport)]),
            )
            .set("options", Datum::map(&spec.options));
        if let Some(m) = mtu {
            columns = columns.set("mtu_request", Atom::Integer(m));
        }
        txn.insert("Interface", columns, Some(&iface));
        txn.insert(
            "Port",
            Columns::new()
                .set("name", Atom::from(spec.name.as_str()))
                .set("interfaces", Datum::Set(vec![Atom::NamedUuid(iface)])),
            Some(&port),
        );
        txn.mutate(
            "Bridge",
            &by_uuid(self.br_uuid),
            vec![(
                "ports".into(),
                Mutator::Insert,
                Datum::Set(vec![Atom::NamedUuid(port)]),
            )],
        );
        self.changed = true;
    }

    #[allow(clippy::too_many_arguments)]
    fn update(
        &mut self,
        iu: Uuid,
        iface: &Interface,
        kind: &str,
        lport: &str,
        spec: &PlugSpec,
        provider: &Provider,
        mtu: Option<i64>,
        txn: &mut Transaction,
    ) {
        let mut columns = Columns::new();
        let mut mutations = Vec::new();
        if iface.type_ != spec.type_ {
            columns = columns.set("type", Atom::from(spec.type_.as_str()));
        }
        let ids = [(PLUGGED, kind), ("iface-id", lport)];
        let stale_ids: Vec<(&str, &str)> = ids
            .into_iter()
            .filter(|(k, v)| iface.external_ids.get(*k).map(String::as_str) != Some(*v))
            .collect();
        set_keys(&mut mutations, "external_ids", &stale_ids);
        let stale_options: Vec<(&str, &str)> = spec
            .options
            .iter()
            .filter(|(k, v)| iface.options.get(k.as_str()) != Some(*v))
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        set_keys(&mut mutations, "options", &stale_options);
        let unwanted: Vec<Atom> = provider
            .maintained_options
            .iter()
            .filter(|k| iface.options.contains_key(**k) && !spec.options.contains_key(**k))
            .map(|k| Atom::from(*k))
            .collect();
        if !unwanted.is_empty() {
            mutations.push(("options".into(), Mutator::Delete, Datum::Set(unwanted)));
        }
        if iface.mtu_request != mtu {
            columns = columns.set(
                "mtu_request",
                Datum::Set(mtu.map(Atom::Integer).into_iter().collect()),
            );
        }
        if !columns.0.is_empty() {
            txn.update("Interface", &by_uuid(iu), columns);
            self.changed = true;
        }
        if !mutations.is_empty() {
            txn.mutate("Interface", &by_uuid(iu), mutations);
            self.changed = true;
        }
    }

    fn unplug(&mut self, iu: Uuid, iface: &Interface, lport: &str, txn: &mut Transaction) {
        let Some(kind) = iface.external_ids.get(PLUGGED) else {
            return;
        };
        let Some(port) = self.ports_of.get(&iu).copied() else {
            return;
        };
        if self.providers.get(kind).is_none() {
            crate::vlog_rl!(WARN, &PLUG_WARN, target: "vif_plug",
                "no VIF plug provider {kind:?} to unplug interface {} (iface-id {lport})", iface.name);
            return;
        }
        tracing::info!(target: "vif_plug",
            "Unplugging port {} from {} for iface-id {lport} on this chassis.", iface.name, self.br_name);
        self.touched.insert(lport.to_owned());
        txn.mutate(
            "Bridge",
            &by_uuid(self.br_uuid),
            vec![(
                "ports".into(),
                Mutator::Delete,
                Datum::Set(vec![Atom::Uuid(port)]),
            )],
        );
        self.changed = true;
    }
}

/// Sets map keys by mutation (delete the keys, insert the pairs): other keys stay.
fn set_keys(mutations: &mut Vec<(String, Mutator, Datum)>, column: &str, pairs: &[(&str, &str)]) {
    if pairs.is_empty() {
        return;
    }
    let keys = pairs.iter().map(|(k, _)| Atom::from(*k)).collect();
    mutations.push((column.into(), Mutator::Delete, Datum::Set(keys)));
    mutations.push((
        column.into(),
        Mutator::Insert,
        Datum::map(pairs.iter().copied()),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    const BR_INT: &str = "00000000-0000-0000-0000-00000000a001";
    const PORT: &str = "00000000-0000-0000-0000-00000000b001";
    const IFACE: &str = "00000000-0000-0000-0000-00000000c001";
    const ME: &str = "00000000-0000-0000-0000-00000000d001";
    const OTHER: &str = "00000000-0000-0000-0000-00000000d002";

    fn me() -> Me<'static> {
        Me {
            uuid: ME.parse().unwrap(),
            name: "hv1",
        }
    }

    /// br-int, with an interface `name` carrying `external_ids` (and `mtu_request`) if given.
    /// An interface: name, external_ids, mtu_request.
    type Iface<'a> = (&'a str, &'a [(&'a str, &'a str)], Option<i64>);

    fn ovs(iface: Option<Iface<'_>>) -> Replica {
        let mut r = Replica::new(sbclient::vswitch::DATABASE);
        sbclient::vswitch::register_all(&mut r);
        let mut update = json!({"Bridge": {BR_INT: {"initial": {"name": "br-int"}}}});
        if let Some((name, ids, mtu)) = iface {
            let pairs: Vec<Value> = ids.iter().map(|(k, v)| json!([k, v])).collect();
            let mut row = json!({"name": name, "type": "internal", "external_ids": ["map", pairs],
                "options": ["map", [["vif-plug-dummy-option", "value"]]]});
            if let Some(m) = mtu {
                row["mtu_request"] = json!(m);
            }
            update["Interface"] = json!({IFACE: {"initial": row}});
            update["Port"] =
                json!({PORT: {"initial": {"name": name, "interfaces": ["uuid", IFACE]}}});
            update["Bridge"][BR_INT]["initial"]["ports"] = json!(["uuid", PORT]);
        }
        r.apply_snapshot(&serde_json::value::to_raw_value(&update).unwrap())
            .unwrap();
        r
    }

    /// Port lsp1 requested on `requested` with `options`.
    fn sb(requested: &str, options: &[(&str, &str)]) -> Replica {
        let mut r = crate::southbound::new_replica();
        let pairs: Vec<Value> = options.iter().map(|(k, v)| json!([k, v])).collect();
        let update = json!({"Port_Binding": {"00000000-0000-0000-0000-00000000e001": {"initial": {
            "logical_port": "lsp1", "requested_chassis": ["uuid", requested], "options": ["map", pairs]}}}});
        r.apply_snapshot(&serde_json::value::to_raw_value(&update).unwrap())
            .unwrap();
        r
    }

    fn run(ovs: &Replica, sb: &Replica, can_unplug: bool) -> (bool, String) {
        let (u, br) = crate::engine::binding::bridge(ovs, "br-int").expect("br-int");
        let mut txn = Transaction::new(sbclient::vswitch::DATABASE);
        let changed = sync(
            ovs,
            sb,
            &Providers::new(true),
            me(),
            (*u, br),
            can_unplug,
            &mut txn,
        );
        (changed, txn.to_params().to_string())
    }

    const PLUG: &[(&str, &str)] = &[
        ("requested-chassis", "hv1"),
        ("vif-plug-type", "dummy"),
        ("vif-plug-mtu-request", "42"),
    ];

    #[test]
    fn a_requested_port_is_plugged_as_the_provider_says() {
        let (changed, ops) = run(&ovs(None), &sb(ME, PLUG), true);
        assert!(changed);
        assert!(
            ops.contains(r#""external_ids":["map",[["iface-id","lsp1"],["ovn-plugged","dummy"]]],"mtu_request":42,"name":"lsp1","options":["map",[["vif-plug-dummy-option","value"]]],"type":"internal""#),
            "{ops}"
        );
        assert!(
            ops.contains(r#"["ports","insert",["named-uuid","plug_port0"]]"#),
            "{ops}"
        );
        // Without the provider enabled, or requested elsewhere: nothing.
        let (u, br) = crate::engine::binding::bridge(&ovs(None), "br-int")
            .map(|(u, b)| (*u, b.clone()))
            .unwrap();
        let mut txn = Transaction::new(sbclient::vswitch::DATABASE);
        assert!(!sync(
            &ovs(None),
            &sb(ME, PLUG),
            &Providers::new(false),
            me(),
            (u, &br),
            true,
            &mut txn
        ));
        assert!(!run(&ovs(None), &sb(OTHER, PLUG), true).0);
    }

    #[test]
    fn a_plugged_interface_follows_the_port_and_goes_with_it() {
        let ids: &[(&str, &str)] = &[("iface-id", "lsp1"), ("ovn-plugged", "dummy")];
        // As wanted: nothing to do.
        assert!(!run(&ovs(Some(("lsp1", ids, Some(42)))), &sb(ME, PLUG), true).0);
        // Someone changed its MTU: set back.
        let (changed, ops) = run(&ovs(Some(("lsp1", ids, Some(44)))), &sb(ME, PLUG), true);
        assert!(changed && ops.contains(r#""mtu_request":42"#), "{ops}");
        // Requested elsewhere: unplugged, but not during the start-up delay.
        let moved: &[(&str, &str)] = &[("requested-chassis", "hv2"), ("vif-plug-type", "dummy")];
        let (changed, ops) = run(&ovs(Some(("lsp1", ids, Some(42)))), &sb(OTHER, moved), true);
        assert!(changed, "{ops}");
        assert!(
            ops.contains(&format!(r#"["ports","delete",["uuid","{PORT}"]]"#)),
            "{ops}"
        );
        assert!(
            !run(
                &ovs(Some(("lsp1", ids, Some(42)))),
                &sb(OTHER, moved),
                false
            )
            .0
        );
    }

    #[test]
    fn an_interface_not_plugged_by_ovn_is_left_alone() {
        let ids: &[(&str, &str)] = &[("iface-id", "lsp1")];
        let (changed, ops) = run(&ovs(Some(("vif3", ids, None))), &sb(ME, PLUG), true);
        assert!(!changed, "{ops}");
    }

    #[test]
    fn the_dummy_provider_names_the_interface_after_the_port() {
        assert_eq!((DUMMY.prepare)("lsp1").name, "lsp1");
        assert_eq!(
            (DUMMY.prepare)("a-very-long-port-name").name,
            "a-very-long-por"
        );
    }
}
