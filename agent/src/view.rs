//! The chassis view of the Southbound replica: which datapaths and ports are local, port
//! keys, address sets, port groups filtered to related ports; and the id tables (groups,
//! meters, conjunctions) the compiled flows refer to.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use openflow::wire::{Group, MeterMod};
use sbclient::ovn_sb::{
    AddressSet, Chassis, ChassisTemplateVar, DatapathBinding, DhcpOptions, Dhcpv6Options, Meter,
    MeterBand, MulticastGroup, PortBinding, PortGroup,
};
use sbclient::{Replica, Uuid};

use crate::ids::{ConjIds, IdTable};
use crate::lflow::flows::{conj_id_hash, ChassisView};
use crate::lflow::hash::FxBuild;
use crate::southbound::Southbound;

/// A datapath as the compiler needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatapathInfo {
    pub key: u32,
    pub is_router: bool,
    /// The router has `snat-ct-zone`, so `*_in_czone` actions use the SNAT zone.
    pub snat_ct_zone: bool,
}

/// The OpenFlow groups, meters and conjunction ids of compiled flows: content-addressed,
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
            meters: Mutex::new(IdTable::new(METER_IDS)),
            conj: Mutex::new(ConjIds::default()),
        }
    }
}

/// A group's identity: its content in one canonical form (no id; bucket weights and
/// watches as OVS reports them; actions by meaning), so a group the compiler builds and the
/// same group read back from a switch are one key.
pub type GroupKey = std::sync::Arc<Group>;

/// The key of `g`.
pub fn group_key_of(g: &Group) -> GroupKey {
    use openflow::wire::group_mod::OFPGT_SELECT;
    let mut k = g.clone();
    k.group_id = 0;
    let select = k.group_type == OFPGT_SELECT;
    for b in &mut k.buckets {
        if b.weight.is_none() && select {
            b.weight = Some(1);
        }
        if b.watch_port == Some(u32::MAX) {
            b.watch_port = None;
        }
        if b.watch_group == Some(u32::MAX) {
            b.watch_group = None;
        }
        b.actions = openflow::action::canonical(&b.actions);
    }
    std::sync::Arc::new(k)
}

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
    pub fn release(&self, uses: &[crate::lflow::flows::IdUse]) {
        use crate::lflow::flows::IdUse;
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
    port_groups: Arc<HashMap<String, Vec<String>, FxBuild>>,
    address_sets: Arc<HashMap<String, Vec<String>, FxBuild>>,
    pub local_datapaths: Arc<BTreeSet<Uuid>>,
    vars: Arc<HashMap<String, String>>,
    dhcp_options: Arc<Option<HashSet<String>>>,
    dhcpv6_options: Arc<Option<HashSet<String>>>,
}

/// Port keys and which ports are resident or related here.
#[derive(Debug, Default)]
pub(crate) struct PortsPart {
    /// Datapath to port (and multicast group) name to tunnel key.
    pub(crate) ports: HashMap<Uuid, HashMap<String, u32, FxBuild>, FxBuild>,
    pub(crate) resident: HashSet<String, FxBuild>,
    pub(crate) related: HashSet<(u32, u32), FxBuild>,
    /// Names of the related ports (what port groups are filtered to).
    related_names: HashSet<String, FxBuild>,
}

/// The parts of a view that logical flows depend on besides their own rows, shared (not
/// copied) with the view: [`crate::engine::deps::Deps`] compares two of them.
#[derive(Clone, Default)]
pub(crate) struct DepParts {
    pub(crate) datapaths: Arc<HashMap<Uuid, DatapathInfo, FxBuild>>,
    pub(crate) ports: Arc<PortsPart>,
    pub(crate) port_groups: Arc<HashMap<String, Vec<String>, FxBuild>>,
    pub(crate) local_datapaths: Arc<BTreeSet<Uuid>>,
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
    port_groups: Arc<HashMap<String, Vec<String>, FxBuild>>,
    address_sets: Arc<HashMap<String, Vec<String>, FxBuild>>,
    local_datapaths: Arc<BTreeSet<Uuid>>,
    vars: Arc<HashMap<String, String>>,
    dhcp_options: Arc<Option<HashSet<String>>>,
    dhcpv6_options: Arc<Option<HashSet<String>>>,
}

impl ViewParts {
    /// Brings the parts up to date with `sb` and `facts`; `changed` names the Southbound
    /// tables changed since the last refresh.
    pub fn refresh(
        &mut self,
        sb: &Southbound,
        chassis: &str,
        facts: &LocalFacts,
        changed: &BTreeSet<&str>,
    ) {
        let replica = &sb.replica;
        let all = !self.built || self.chassis != chassis;
        let facts_changed = all || self.facts != *facts;
        let stale = |tables: &[&str]| all || tables.iter().any(|t| changed.contains(t));
        if stale(&["Datapath_Binding"]) {
            self.datapaths = Arc::new(datapaths_part(replica));
        }
        let ports_stale = facts_changed || stale(&["Port_Binding", "Multicast_Group"]);
        let mut related_changed = all;
        if ports_stale {
            let ports = ports_part(replica, chassis, facts, &self.datapaths);
            related_changed |= ports.related_names != self.ports.related_names;
            self.ports = Arc::new(ports);
        }
        // Port groups are filtered to the related ports: only a change of those, or of the
        // groups themselves, changes them.
        if related_changed || stale(&["Port_Group"]) {
            self.port_groups = Arc::new(port_groups_part(replica, &self.ports.related_names));
        }
        if stale(&["Address_Set"]) {
            self.address_sets = Arc::new(
                rows::<AddressSet>(replica)
                    .map(|(_, a)| (a.name.clone(), a.addresses.iter().cloned().collect()))
                    .collect(),
            );
        }
        if facts_changed {
            self.local_datapaths = Arc::new(facts.local_datapaths.clone());
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

fn ports_part(
    replica: &Replica,
    chassis: &str,
    facts: &LocalFacts,
    datapaths: &HashMap<Uuid, DatapathInfo, FxBuild>,
) -> PortsPart {
    let mut part = PortsPart::default();
    for (_, m) in rows::<MulticastGroup>(replica) {
        part.ports
            .entry(m.datapath)
            .or_default()
            .insert(m.name.clone(), key_u32(m.tunnel_key));
    }
    for (u, p) in rows::<PortBinding>(replica) {
        let key = key_u32(p.tunnel_key);
        part.ports
            .entry(p.datapath)
            .or_default()
            .insert(p.logical_port.clone(), key);
        if facts.bound.contains(u) || facts.active_ha.contains(u) {
            part.resident.insert(p.logical_port.clone());
        }
        if is_related_port(u, p, chassis, facts) {
            if let Some(d) = datapaths.get(&p.datapath) {
                part.related.insert((d.key, key));
            }
            part.related_names.insert(p.logical_port.clone());
        }
    }
    part
}

fn port_groups_part(
    replica: &Replica,
    related_names: &HashSet<String, FxBuild>,
) -> HashMap<String, Vec<String>, FxBuild> {
    rows::<PortGroup>(replica)
        .map(|(_, g)| {
            (
                g.name.clone(),
                g.ports
                    .iter()
                    .filter(|p| related_names.contains(*p))
                    .cloned()
                    .collect(),
            )
        })
        .collect()
}

/// Types of port bindings that are related to every chassis that has their datapath.
const ALWAYS_RELATED: [&str; 3] = ["patch", "localnet", "vtep"];

/// Whether `p` is related to chassis `chassis` (its `in_out_port` flows are installed here):
/// bound or active here, a localport with an interface here, a member of an HA group naming
/// this chassis, a port of a type related everywhere, or an l2gateway / l3gateway port whose
/// option names this chassis (as ovn-controller's binding decides).
fn is_related_port(u: &Uuid, p: &PortBinding, chassis: &str, facts: &LocalFacts) -> bool {
    let gateway_here = |option: &str| p.options.get(option).is_some_and(|c| c == chassis);
    facts.bound.contains(u)
        || facts.localports.contains(u)
        || facts.active_ha.contains(u)
        || facts.ha_members.contains(u)
        || ALWAYS_RELATED.contains(&p.type_.as_str())
        || (p.type_ == "l2gateway" && gateway_here("l2gateway-chassis"))
        || (p.type_ == "l3gateway" && gateway_here("l3gateway-chassis"))
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
}

impl LocalFacts {
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
        parts.refresh(sb, chassis, facts, &BTreeSet::new());
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
        }
    }

    pub(crate) fn dep_parts(&self) -> DepParts {
        DepParts {
            datapaths: Arc::clone(&self.datapaths),
            ports: Arc::clone(&self.ports),
            port_groups: Arc::clone(&self.port_groups),
            local_datapaths: Arc::clone(&self.local_datapaths),
        }
    }

    pub fn replica(&self) -> &'a Replica {
        self.replica
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

    /// The meter to install for SB `Meter` row `name` (id filled in by the caller).
    fn named_meter_mod(&self, name: &str) -> MeterMod {
        use openflow::wire::meter_mod::{
            OFPMBT_DROP, OFPMF_BURST, OFPMF_KBPS, OFPMF_PKTPS, OFPMF_STATS,
        };
        let Some((_, m)) = self
            .replica
            .table::<Meter>()
            .and_then(|t| t.iter().find(|(_, m)| m.name == name))
        else {
            return MeterMod::default();
        };
        let bands_table = self.replica.table::<MeterBand>();
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
}

impl ChassisView for SbView<'_> {
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
        let meter = self.named_meter_mod(name);
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
}
