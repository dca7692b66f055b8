//! The chassis view of the Southbound replica: which datapaths and ports are local, port
//! keys, address sets, port groups filtered to related ports; and the id tables (groups,
//! meters, conjunctions) the compiled flows refer to.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use openflow::wire::{Group, MeterMod};
use sbclient::ovn_sb::{
    AddressSet, Chassis, ChassisTemplateVar, DatapathBinding, DhcpOptions, Dhcpv6Options, Meter,
    MeterBand, PortBinding,
};
use sbclient::{Replica, Uuid};

use crate::ids::{ConjIds, IdTable};
use crate::lflow::chassis_view::{conj_id_hash, ChassisView};
use crate::lflow::hash::FxBuild;
use crate::southbound::Southbound;

#[cfg(test)]
mod meter_tests;
mod ports;

pub use ports::TouchedRows;
use ports::{PortInputs, PortsPart};

/// A datapath as the compiler needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatapathInfo {
    pub key: u32,
    pub is_router: bool,
    /// The router has `snat-ct-zone`, so `*_in_czone` actions use the SNAT zone.
    pub snat_ct_zone: bool,
}

/// The OpenFlow groups, meters and conjunction ids of compiled flows (see [`crate::ids`]),
/// reference-counted, shared by compile threads.
pub struct Ids {
    /// Group content (canonical, id 0) to its id and the group to install.
    pub groups: Mutex<IdTable<GroupKey, Group>>,
    /// Meter name (SB `Meter`) or `__string: ...` description to its id and the meter.
    pub meters: Mutex<IdTable<String, MeterMod>>,
    pub conj: Mutex<ConjIds>,
}

/// OpenFlow group ids below `OFPG_MAX` (0xffffff00).
pub const GROUP_IDS: std::ops::RangeInclusive<u32> = 1..=0xffff_feff;
/// Meter ids as ovn-controller allocates them (16 bits).
pub const METER_IDS: std::ops::RangeInclusive<u32> = 1..=0xffff;

impl Default for Ids {
    fn default() -> Self {
        Self {
            groups: Mutex::new(IdTable::new(GROUP_IDS)),
            meters: Mutex::new(IdTable::with_allocation(
                METER_IDS,
                crate::ids::Allocation::LowestFree { same: same_meter },
            )),
            conj: Mutex::new(ConjIds::default()),
        }
    }
}

pub use crate::lflow::chassis_view::{group_key_of, GroupKey};

/// A group's text as `dump-groups` prints it, without the id.
pub fn group_key(g: &Group) -> String {
    let mut g = g.clone();
    g.group_id = 0;
    let text = g.to_string();
    text.strip_prefix("group_id=0,").unwrap_or(&text).to_owned()
}

impl Ids {
    /// Reuses group ids from `ovs-ofctl dump-groups` output (`group_id=N,<group>`) for
    /// identical groups.
    pub fn seed_groups(&self, dump: &str) -> Result<(), openflow::text::ParseError> {
        let Ok(mut t) = self.groups.lock() else {
            return Ok(());
        };
        for line in dump.lines().map(str::trim) {
            if !line.starts_with("group_id=") {
                continue;
            }
            let g: Group = line.parse()?;
            t.seed(group_key_of(&g), g.group_id, g);
        }
        Ok(())
    }

    /// Drops the references a compiled owner held (its flows are gone).
    pub fn release(&self, uses: &[crate::lflow::chassis_view::IdUse]) {
        use crate::lflow::chassis_view::IdUse;
        for u in uses {
            match u {
                IdUse::Group(k) => {
                    if let Ok(mut t) = self.groups.lock() {
                        t.release(k);
                    }
                }
                IdUse::Meter(k) => {
                    if let Ok(mut t) = self.meters.lock() {
                        t.release(k);
                    }
                }
                IdUse::Conj(l, d) => {
                    if let Ok(mut t) = self.conj.lock() {
                        t.release(*l, *d);
                    }
                }
            }
        }
    }

    /// `(id, text)` of every group in use, in id order.
    pub fn group_list(&self) -> Vec<(u32, String)> {
        self.groups
            .lock()
            .map(|t| t.iter().map(|(id, _, g)| (id, group_key(g))).collect())
            .unwrap_or_default()
    }

    /// `(id, key)` of every meter in use, in id order.
    pub fn meter_list(&self) -> Vec<(u32, String)> {
        self.meters
            .lock()
            .map(|t| t.iter().map(|(id, k, _)| (id, k.clone())).collect())
            .unwrap_or_default()
    }

    /// Gives every named meter in use (a key that is not `__string: ...`) the bands its
    /// Southbound `Meter` row has now: after a `Meter` or `Meter_Band` change, the switch's
    /// meter is modified under the same id, and no flow changes.
    pub fn refresh_named_meters(&self, replica: &Replica) {
        let Ok(mut t) = self.meters.lock() else {
            return;
        };
        let names: Vec<String> = t
            .iter()
            .filter(|(_, k, _)| !k.starts_with(crate::lflow::encode::SET_METER_KEY))
            .map(|(_, k, _)| k.clone())
            .collect();
        for name in names {
            t.set_value(&name, named_meter_mod(replica, &name));
        }
    }

    /// Pins a meter key (`__string: ...` or a meter name) to an id.
    pub fn seed_meter(&self, key: &str, id: u32) {
        if let Ok(mut t) = self.meters.lock() {
            t.seed(key.to_owned(), id, MeterMod::default());
        }
    }
}

/// Chassis view over the Southbound replica. Its parts are shared ([`ViewParts`]): a run
/// rebuilds only those whose rows or local facts changed.
pub struct SbView<'a> {
    replica: &'a Replica,
    ids: &'a Ids,
    chassis_uuid: Option<Uuid>,
    // Fx-hashed: looked up for every flow.
    datapaths: Arc<HashMap<Uuid, DatapathInfo, FxBuild>>,
    ports: Arc<PortsPart>,
    port_groups: Arc<ports::PortGroups>,
    address_sets: Arc<HashMap<String, Vec<String>, FxBuild>>,
    pub local_datapaths: Arc<BTreeSet<Uuid>>,
    vars: Arc<HashMap<String, String>>,
    dhcp_options: Arc<Option<HashSet<String>>>,
    dhcpv6_options: Arc<Option<HashSet<String>>>,
    collector_ids: BTreeSet<u32>,
    tunnel_ofports: BTreeMap<String, u32>,
    no_meters: bool,
}

/// What a [`ViewParts::refresh`] changed in what logical flows depend on besides their own
/// rows: datapaths that became or stopped being local, port and multicast group names whose
/// key, residence or relatedness changed, port groups whose filtered members changed.
#[derive(Debug, Default)]
pub struct ViewChanges {
    /// Every part was built anew (first refresh, or another chassis): no difference known.
    pub rebuilt: bool,
    pub datapaths: HashSet<Uuid>,
    pub names: HashSet<String>,
    pub port_groups: HashSet<String>,
}

impl ViewChanges {
    pub fn is_empty(&self) -> bool {
        !self.rebuilt
            && self.datapaths.is_empty()
            && self.names.is_empty()
            && self.port_groups.is_empty()
    }
}

/// The parts of a [`SbView`], kept between runs: [`ViewParts::refresh`] rebuilds a part
/// only when a table it is computed from changed, or (for ports, port groups and local
/// datapaths) when the local facts did.
#[derive(Default)]
pub struct ViewParts {
    built: bool,
    chassis: String,
    facts: LocalFacts,
    datapaths: Arc<HashMap<Uuid, DatapathInfo, FxBuild>>,
    ports: Arc<PortsPart>,
    port_groups: Arc<ports::PortGroups>,
    address_sets: Arc<HashMap<String, Vec<String>, FxBuild>>,
    local_datapaths: Arc<BTreeSet<Uuid>>,
    vars: Arc<HashMap<String, String>>,
    dhcp_options: Arc<Option<HashSet<String>>>,
    dhcpv6_options: Arc<Option<HashSet<String>>>,
    changes: ViewChanges,
}

impl ViewParts {
    /// The tunnel ports the parts were last refreshed with.
    pub fn tunnel_ofports(&self) -> &BTreeMap<String, u32> {
        &self.facts.tunnel_ofports
    }

    /// The names of the ports related to this chassis (ovn-controller's related lports),
    /// sorted.
    pub fn related_port_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .ports
            .related_names
            .iter()
            .map(String::as_str)
            .collect();
        names.sort_unstable();
        names
    }

    /// Brings the parts up to date with `sb` and `facts`; `changed` names the Southbound
    /// tables changed since the last refresh.
    ///
    /// `touched` names the Port_Binding, Multicast_Group, Address_Set and Port_Group rows
    /// changed since then (`None`: not known, so a part is built anew when its tables
    /// changed); with it, and the local facts' differences, the ports part, the port groups
    /// and the address sets change entry by entry. What changed accumulates until
    /// [`Self::take_changes`].
    pub fn refresh(
        &mut self,
        sb: &Southbound,
        chassis: &str,
        facts: &LocalFacts,
        changed: &BTreeSet<&str>,
        touched: Option<&TouchedRows>,
    ) {
        let replica = &sb.replica;
        let all = !self.built || self.chassis != chassis;
        let facts_changed = all || self.facts != *facts;
        let stale = |tables: &[&str]| all || tables.iter().any(|t| changed.contains(t));
        let datapaths_stale = stale(&["Datapath_Binding"]);
        if datapaths_stale {
            self.datapaths = Arc::new(datapaths_part(replica));
        }
        let inputs = PortInputs {
            replica,
            chassis,
            facts,
            datapaths: &self.datapaths,
        };
        let rebuild_ports = datapaths_stale
            || (touched.is_none()
                && (facts_changed || stale(&["Port_Binding", "Multicast_Group"])));
        let mut flips = HashSet::new();
        if rebuild_ports {
            let ports = PortsPart::build(&inputs);
            if !all {
                self.changes.names.extend(self.ports.changed_names(&ports));
                flips.extend(
                    ports
                        .related_names
                        .symmetric_difference(&self.ports.related_names)
                        .cloned(),
                );
            }
            self.ports = Arc::new(ports);
        } else {
            let mut rows = TouchedRows::default();
            if let Some(t) = touched {
                rows.port_bindings.extend(t.port_bindings.iter().copied());
                rows.multicast_groups
                    .extend(t.multicast_groups.iter().copied());
            }
            if facts_changed {
                rows.port_bindings
                    .extend(self.facts.port_differences(facts));
            }
            if !rows.is_empty() {
                Arc::make_mut(&mut self.ports).update(
                    &inputs,
                    &rows,
                    &mut self.changes,
                    &mut flips,
                );
            }
        }
        // Address sets and port groups change row by row when the changed rows are known.
        let touched_sets = touched.map(|t| &t.address_sets).filter(|_| !all);
        let touched_groups = touched.map(|t| &t.port_groups).filter(|_| !all);
        if stale(&["Port_Group"]) && touched_groups.is_none() {
            let groups = ports::port_groups(replica, &self.ports.related_names);
            if !all {
                let changed = ports::changed_groups(&self.port_groups, &groups);
                self.changes.port_groups.extend(changed);
            }
            self.port_groups = Arc::new(groups);
        } else {
            if let Some(names) = touched_groups.filter(|n| !n.is_empty()) {
                ports::update_named_groups(
                    Arc::make_mut(&mut self.port_groups),
                    replica,
                    &self.ports.related_names,
                    names,
                    &mut self.changes,
                );
            }
            if !flips.is_empty() {
                ports::update_port_groups(
                    Arc::make_mut(&mut self.port_groups),
                    replica,
                    &self.ports.related_names,
                    &flips,
                    &mut self.changes,
                );
            }
        }
        if facts_changed && (all || self.facts.local_datapaths != facts.local_datapaths) {
            if !all {
                let moved = self
                    .local_datapaths
                    .symmetric_difference(&facts.local_datapaths)
                    .copied();
                self.changes.datapaths.extend(moved);
            }
            self.local_datapaths = Arc::new(facts.local_datapaths.clone());
        }
        self.changes.rebuilt |= all;
        if stale(&["Address_Set"]) && touched_sets.is_none() {
            self.address_sets = Arc::new(
                rows::<AddressSet>(replica)
                    .map(|(_, a)| (a.name.clone(), a.addresses.iter().cloned().collect()))
                    .collect(),
            );
        } else if let Some(names) = touched_sets.filter(|n| !n.is_empty()) {
            let sets = Arc::make_mut(&mut self.address_sets);
            for name in names {
                sets.remove(name);
            }
            for (_, a) in rows::<AddressSet>(replica).filter(|(_, a)| names.contains(&a.name)) {
                sets.insert(a.name.clone(), a.addresses.iter().cloned().collect());
            }
        }
        if stale(&["Chassis_Template_Var"]) {
            self.vars = Arc::new(
                rows::<ChassisTemplateVar>(replica)
                    .find(|(_, v)| v.chassis == chassis)
                    .map(|(_, v)| {
                        v.variables
                            .iter()
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect()
                    })
                    .unwrap_or_default(),
            );
        }
        if stale(&["DHCP_Options"]) {
            self.dhcp_options = Arc::new(sb.tables.contains("DHCP_Options").then(|| {
                rows::<DhcpOptions>(replica)
                    .map(|(_, o)| o.name.clone())
                    .collect()
            }));
        }
        if stale(&["DHCPv6_Options"]) {
            self.dhcpv6_options = Arc::new(sb.tables.contains("DHCPv6_Options").then(|| {
                rows::<Dhcpv6Options>(replica)
                    .map(|(_, o)| o.name.clone())
                    .collect()
            }));
        }
        if facts_changed {
            self.facts = facts.clone();
        }
        chassis.clone_into(&mut self.chassis);
        self.built = true;
    }

    /// What the refreshes since the last call changed.
    pub fn take_changes(&mut self) -> ViewChanges {
        std::mem::take(&mut self.changes)
    }
}

fn datapaths_part(replica: &Replica) -> HashMap<Uuid, DatapathInfo, FxBuild> {
    rows::<DatapathBinding>(replica)
        .map(|(u, d)| {
            (
                *u,
                DatapathInfo {
                    key: key_u32(d.tunnel_key),
                    is_router: d.external_ids.contains_key("logical-router"),
                    snat_ct_zone: d.external_ids.contains_key("snat-ct-zone"),
                },
            )
        })
        .collect()
}

/// Every row of table `T` (none if the replica lacks the table).
fn rows<T: sbclient::Row>(replica: &Replica) -> impl Iterator<Item = (&Uuid, &T)> {
    replica
        .table::<T>()
        .into_iter()
        .flat_map(sbclient::Table::iter)
}

fn key_u32(k: i64) -> u32 {
    u32::try_from(k).unwrap_or(0)
}

/// What this chassis holds, as the view needs it: from the engine's runtime data, or (for
/// `ovn-agent compile`) from the Southbound rows alone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LocalFacts {
    pub chassis: Option<Uuid>,
    /// Port bindings bound here (VIFs, containers, claimed gateway ports).
    pub bound: HashSet<Uuid>,
    /// Localports with an interface here (related, never resident).
    pub localports: HashSet<Uuid>,
    /// chassisredirect / external ports active here.
    pub active_ha: HashSet<Uuid>,
    /// chassisredirect / external ports whose HA group names this chassis, active or not.
    pub ha_members: HashSet<Uuid>,
    pub local_datapaths: BTreeSet<Uuid>,
    /// The local `Flow_Sample_Collector_Set` ids (`sample` actions to others are dropped).
    pub collector_ids: BTreeSet<u32>,
    /// The OpenFlow port of the (first) tunnel to each remote chassis, by chassis name
    /// (`fwd_group(liveness=true)` watches it).
    pub tunnel_ofports: BTreeMap<String, u32>,
    /// The datapath has no meters (the feature probe said so): controller actions go
    /// without theirs, as ovn-controller encodes them then.
    pub no_meters: bool,
}

impl LocalFacts {
    /// The port bindings whose place in the facts differs between `self` and `other`.
    fn port_differences<'s>(&'s self, other: &'s Self) -> impl Iterator<Item = Uuid> + 's {
        let pairs = [
            (&self.bound, &other.bound),
            (&self.localports, &other.localports),
            (&self.active_ha, &other.active_ha),
            (&self.ha_members, &other.ha_members),
        ];
        pairs
            .into_iter()
            .flat_map(|(a, b)| a.symmetric_difference(b).copied())
    }

    /// The facts the Southbound rows tell: ports whose `chassis` is us, HA groups as the
    /// binding code decides them, and the local datapaths they reach.
    pub fn from_southbound(replica: &Replica, chassis: &str) -> Self {
        use crate::engine::binding::{ha_active, Me};
        let uuid = rows::<Chassis>(replica)
            .find(|(_, c)| c.name == chassis)
            .map(|(u, _)| *u);
        let hostname = rows::<Chassis>(replica)
            .find(|(_, c)| c.name == chassis)
            .map_or("", |(_, c)| c.hostname.as_str());
        let me = Me {
            name: chassis,
            hostname,
            uuid,
            active_tunnels: None,
        };
        let mut facts = Self {
            chassis: uuid,
            ..Self::default()
        };
        let mut members = HashSet::new();
        for (u, p) in rows::<PortBinding>(replica) {
            if p.chassis.is_some() && p.chassis == uuid {
                facts.bound.insert(*u);
            }
            if let ("chassisredirect" | "external", Some(g)) =
                (p.type_.as_str(), &p.ha_chassis_group)
            {
                let (active, member) = ha_active(replica, g, &me);
                if active {
                    facts.active_ha.insert(*u);
                }
                if member {
                    members.insert(*u);
                }
            }
        }
        let seeds: Vec<Uuid> = facts.bound.iter().chain(members.iter()).copied().collect();
        facts.local_datapaths = crate::engine::local::local_datapaths(
            replica,
            seeds,
            uuid,
            &|u| members.contains(u),
            &|_| true,
        )
        .into_keys()
        .collect();
        facts.ha_members = members;
        facts
    }
}

impl<'a> SbView<'a> {
    /// The view of chassis `chassis` from the Southbound rows alone.
    pub fn new(sb: &'a Southbound, chassis: &str, ids: &'a Ids) -> Self {
        let facts = LocalFacts::from_southbound(&sb.replica, chassis);
        Self::with_facts(sb, chassis, ids, &facts)
    }

    /// The view with what this chassis holds given by the caller, every part built anew.
    pub fn with_facts(sb: &'a Southbound, chassis: &str, ids: &'a Ids, facts: &LocalFacts) -> Self {
        let mut parts = ViewParts::default();
        parts.refresh(sb, chassis, facts, &BTreeSet::new(), None);
        Self::from_parts(sb, ids, &parts)
    }

    /// The view over `parts` (refreshed by the caller).
    pub fn from_parts(sb: &'a Southbound, ids: &'a Ids, parts: &ViewParts) -> Self {
        Self {
            replica: &sb.replica,
            ids,
            chassis_uuid: parts.facts.chassis,
            datapaths: Arc::clone(&parts.datapaths),
            ports: Arc::clone(&parts.ports),
            port_groups: Arc::clone(&parts.port_groups),
            address_sets: Arc::clone(&parts.address_sets),
            local_datapaths: Arc::clone(&parts.local_datapaths),
            vars: Arc::clone(&parts.vars),
            dhcp_options: Arc::clone(&parts.dhcp_options),
            dhcpv6_options: Arc::clone(&parts.dhcpv6_options),
            collector_ids: parts.facts.collector_ids.clone(),
            tunnel_ofports: parts.facts.tunnel_ofports.clone(),
            no_meters: parts.facts.no_meters,
        }
    }

    pub fn replica(&self) -> &'a Replica {
        self.replica
    }

    /// The Port_Binding named `name` (on whichever datapath).
    pub fn port_binding(&self, name: &str) -> Option<&'a PortBinding> {
        let pbs = self.replica.table::<PortBinding>()?;
        let (_, pb) = if pbs.has_index("logical_port") {
            pbs.find("logical_port", &sbclient::Atom::String(name.to_owned()))
                .next()?
        } else {
            pbs.iter().find(|(_, p)| p.logical_port == name)?
        };
        Some(pb)
    }

    pub fn ids(&self) -> &'a Ids {
        self.ids
    }

    /// Every port and multicast group name by datapath, with its tunnel key.
    pub fn port_names(&self) -> impl Iterator<Item = (&Uuid, &str, u32)> {
        self.ports
            .ports
            .iter()
            .flat_map(|(dp, m)| m.iter().map(move |(n, k)| (dp, n.as_str(), *k)))
    }

    /// Every port group with its members related to this chassis (what `@name` expands to).
    pub fn port_groups_filtered(&self) -> impl Iterator<Item = (&str, &[String])> {
        self.port_groups
            .iter()
            .map(|(n, m)| (n.as_str(), m.as_slice()))
    }

    pub fn datapath(&self, uuid: &Uuid) -> Option<&DatapathInfo> {
        self.datapaths.get(uuid)
    }

    /// Whether the port binding is claimed by this chassis.
    pub fn bound_here(&self, pb: &PortBinding) -> bool {
        pb.chassis.is_some() && pb.chassis == self.chassis_uuid
    }

    pub fn has_chassis(&self) -> bool {
        self.chassis_uuid.is_some()
    }
}

impl ChassisView for SbView<'_> {
    fn collector_set_exists(&self, id: u32) -> bool {
        self.collector_ids.contains(&id)
    }
    fn tunnel_ofport(&self, dp: Uuid, port: &str) -> Option<u32> {
        let pb = self.port_binding(port)?;
        if pb.datapath != dp {
            return None;
        }
        let chassis = self.replica.table::<Chassis>()?.get(pb.chassis.as_ref()?)?;
        self.tunnel_ofports.get(&chassis.name).copied()
    }
    fn address_set(&self, name: &str) -> Option<&[String]> {
        self.address_sets.get(name).map(Vec::as_slice)
    }
    fn port_group(&self, name: &str) -> Option<&[String]> {
        self.port_groups.get(name).map(Vec::as_slice)
    }
    fn port_key(&self, dp: &Uuid, name: &str) -> Option<u32> {
        if name == "none" {
            return Some(0);
        }
        self.ports.ports.get(dp).and_then(|m| m.get(name)).copied()
    }
    fn is_resident(&self, port: &str) -> bool {
        self.ports.resident.contains(port)
    }
    fn is_related(&self, dp_key: u32, port_key: u32) -> bool {
        self.ports.related.contains(&(dp_key, port_key))
    }
    fn group_id(&self, group: &Group) -> Option<(u32, GroupKey)> {
        let key = group_key_of(group);
        let mut table = self.ids.groups.lock().ok()?;
        let id = table.acquire(&key, || group.clone())?;
        // Every flow using the group holds its key: one shared copy, not one each.
        let key = table.interned(&key).unwrap_or(key);
        Some((id, key))
    }
    fn meter_id(&self, key: &str, meter: &MeterMod) -> Option<u32> {
        self.ids
            .meters
            .lock()
            .ok()?
            .acquire(&key.to_owned(), || meter.clone())
    }
    fn named_meter(&self, name: &str) -> Option<u32> {
        if self.no_meters {
            return None;
        }
        let meter = named_meter_mod(self.replica, name);
        self.ids
            .meters
            .lock()
            .ok()?
            .acquire(&name.to_owned(), || meter)
    }
    fn template_vars(&self) -> &HashMap<String, String> {
        &self.vars
    }
    fn dhcp_option_known(&self, v6: bool, name: &str) -> bool {
        let catalogue = if v6 {
            &*self.dhcpv6_options
        } else {
            &*self.dhcp_options
        };
        catalogue.as_ref().is_none_or(|c| c.contains(name))
    }
    fn conj_ids(&self, lflow: &Uuid, dp: &Uuid, n: u32) -> u32 {
        let start = conj_id_hash(lflow, dp);
        self.ids
            .conj
            .lock()
            .map_or(start, |mut c| c.acquire(*lflow, *dp, n, start))
    }
    fn register_consolidation(&self) -> bool {
        crate::northd_options::register_consolidation(self.replica)
    }
    fn held_conj_ids(&self, lflow: &Uuid, dp: &Uuid) -> Option<u32> {
        self.ids.conj.lock().ok()?.held(*lflow, *dp)
    }
}

/// Whether two meters install the same (the switch reports the statistics flag the agent
/// always asks for).
fn same_meter(a: &MeterMod, b: &MeterMod) -> bool {
    use openflow::wire::meter_mod::OFPMF_STATS;
    a.flags | OFPMF_STATS == b.flags | OFPMF_STATS && a.bands == b.bands
}

/// The meter to install for SB `Meter` row `name` (id filled in by the caller; no bands
/// when there is no such row).
fn named_meter_mod(replica: &Replica, name: &str) -> MeterMod {
    use openflow::wire::meter_mod::{
        OFPMBT_DROP, OFPMF_BURST, OFPMF_KBPS, OFPMF_PKTPS, OFPMF_STATS,
    };
    let Some((_, m)) = replica
        .table::<Meter>()
        .and_then(|t| t.iter().find(|(_, m)| m.name == name))
    else {
        return MeterMod::default();
    };
    let bands_table = replica.table::<MeterBand>();
    let bands: Vec<openflow::wire::MeterBand> = m
        .bands
        .iter()
        .filter_map(|b| bands_table.and_then(|t| t.get(b)))
        .map(|b| openflow::wire::MeterBand {
            band_type: OFPMBT_DROP,
            rate: u32::try_from(b.rate).unwrap_or(0),
            burst_size: u32::try_from(b.burst_size).unwrap_or(0),
            extra: [0; 4],
        })
        .collect();
    let unit = if m.unit == "pktps" {
        OFPMF_PKTPS
    } else {
        OFPMF_KBPS
    };
    let burst = if bands.iter().any(|b| b.burst_size != 0) {
        OFPMF_BURST
    } else {
        0
    };
    MeterMod {
        flags: unit | burst | OFPMF_STATS,
        bands,
        ..MeterMod::default()
    }
}
