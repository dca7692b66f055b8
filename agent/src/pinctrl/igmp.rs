//! IGMP / MLD snooping (`igmp;`), as ovn-controller 23.03.1's pinctrl does it with OVS's
//! `mcast-snooping` library: every logical switch whose `IP_Multicast` row is enabled
//! keeps a table of multicast groups, each with the logical ports that joined it, aged
//! by `idle_timeout` and bounded by `table_size` (the least recently used group makes
//! room); IGMP and MLD queries mark their port as leading to a multicast router
//! (aged after 180 s). Reports are forwarded to the switch's multicast routers
//! (`_MC_mrouter_flood`), queries flooded to the L2 domain (`_MC_flood_l2`). The main
//! loop writes the tables to `IGMP_Group` ([`sync`]); the querier lives in
//! [`super::igmp_query`].
//!
//! Sans-IO: [`parse`] reads one packet; [`Snooping`] is told the configuration
//! ([`Snooping::configure`]), the messages ([`Snooping::on_message`]) and the time in
//! milliseconds ([`Snooping::run`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::{Ipv4Addr, Ipv6Addr};

use openflow::wire::PacketOut;
use sbclient::ovn_sb::{DatapathBinding, IgmpGroup, IpMulticast, PortBinding};
use sbclient::transaction::by_uuid;
use sbclient::{Atom, Columns, Datum, Replica, Transaction, Uuid};

use super::igmp_parse::mapped;
pub use super::igmp_parse::{
    address_text, parse, parse_igmp, parse_mld, IgmpError, Message, Received, Record, FLOOD_L2_KEY,
    MROUTER_FLOOD_KEY,
};
use super::packet::parse_mac;
use super::packet::Mac;

/// The `IGMP_Group` address of the row that lists a switch's multicast router ports.
pub const MROUTERS: &str = "mrouters";
pub use super::igmp_query::FLOOD_KEY;

const DEFAULT_TABLE_SIZE: u32 = 2048;
const DEFAULT_IDLE_S: u32 = 300;
const MIN_QUERY_INTERVAL_S: u32 = 1;
const DEFAULT_QUERY_MAX_RESP_S: u32 = 1;
/// `MCAST_MROUTER_PORT_IDLE_TIME`.
pub const MROUTER_IDLE_S: i64 = 180;

// ---------------------------------------------------------------------------------------
// Configuration

/// A datapath's multicast configuration (`ip_mcast_snoop_cfg_load`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub enabled: bool,
    pub querier_v4: bool,
    pub querier_v6: bool,
    pub table_size: u32,
    pub idle_time_s: u32,
    pub query_interval_s: u32,
    pub query_max_resp_s: u32,
    pub seq_no: i64,
    pub eth_src: Mac,
    pub ip4_src: Ipv4Addr,
    pub ip6_src: Ipv6Addr,
}

impl Default for Config {
    /// All zero, as a datapath's configuration starts before its row is read.
    fn default() -> Self {
        Self {
            enabled: false,
            querier_v4: false,
            querier_v6: false,
            table_size: 0,
            idle_time_s: 0,
            query_interval_s: 0,
            query_max_resp_s: 0,
            seq_no: 0,
            eth_src: [0; 6],
            ip4_src: Ipv4Addr::UNSPECIFIED,
            ip6_src: Ipv6Addr::UNSPECIFIED,
        }
    }
}

/// The configuration of an `IP_Multicast` row, and why its querier is off although the
/// row asks for it (for a rate-limited warning).
pub fn config(row: &IpMulticast) -> (Config, Option<&'static str>) {
    let enabled = row.enabled == Some(true);
    let querier = enabled && row.querier == Some(true);
    let cast = |v: i64| u32::try_from(v).unwrap_or(if v < 0 { 0 } else { u32::MAX });
    let idle = row.idle_timeout.map_or(DEFAULT_IDLE_S, cast);
    let mut c = Config {
        enabled,
        querier_v4: querier,
        querier_v6: querier,
        table_size: row.table_size.map_or(DEFAULT_TABLE_SIZE, cast),
        idle_time_s: idle,
        query_interval_s: row
            .query_interval
            .map_or((idle / 2).max(MIN_QUERY_INTERVAL_S), cast),
        query_max_resp_s: row.query_max_resp.map_or(DEFAULT_QUERY_MAX_RESP_S, cast),
        seq_no: row.seq_no,
        ..Config::default()
    };
    if !querier {
        return (c, None);
    }
    let mut warn = None;
    if row.ip4_src.is_empty() {
        c.querier_v4 = false;
    } else if let Ok(a) = row.ip4_src.parse() {
        c.ip4_src = a;
    } else {
        c.querier_v4 = false;
        warn = Some("IGMP Querier enabled with invalid IPv4 src address");
    }
    if row.ip6_src.is_empty() {
        c.querier_v6 = false;
    } else if let Ok(a) = row.ip6_src.parse() {
        c.ip6_src = a;
    } else {
        c.querier_v6 = false;
        warn = Some("MLD Querier enabled with invalid IPv6 src address");
    }
    if !c.querier_v4 && !c.querier_v6 {
        warn = Some("IGMP Querier enabled without a valid IPv4 or IPv6 address");
    }
    if let Some(m) = parse_mac(&row.eth_src) {
        c.eth_src = m;
    } else {
        c.querier_v4 = false;
        c.querier_v6 = false;
        warn = Some("IGMP Querier enabled with invalid ETH src address");
    }
    (c, warn)
}

/// The configurations of the IP_Multicast rows of `local` datapaths, by datapath key.
pub fn configs_from_replica(
    sb: &Replica,
    local: impl Fn(Uuid) -> bool,
) -> (BTreeMap<u32, Config>, Vec<&'static str>) {
    let mut out = BTreeMap::new();
    let mut warnings = Vec::new();
    let (Some(rows), Some(dps)) = (sb.table::<IpMulticast>(), sb.table::<DatapathBinding>()) else {
        return (out, warnings);
    };
    for (_, row) in rows.iter() {
        if !local(row.datapath) {
            continue;
        }
        let Some(key) = dps
            .get(&row.datapath)
            .and_then(|d| u32::try_from(d.tunnel_key).ok())
        else {
            continue;
        };
        let (c, warn) = config(row);
        warnings.extend(warn);
        out.insert(key, c);
    }
    (out, warnings)
}

// ---------------------------------------------------------------------------------------
// The snooping table of one datapath (OVS `struct mcast_snooping`), on a clock of seconds.

#[derive(Debug, Clone)]
struct Group {
    /// (port, expires), least recently refreshed first.
    bundles: Vec<(u32, i64)>,
    lru: u64,
}

#[derive(Debug, Clone)]
pub struct Table {
    max_entries: usize,
    idle_s: i64,
    groups: HashMap<Ipv6Addr, Group>,
    /// Groups by recency: the first one goes first.
    lru: BTreeMap<u64, Ipv6Addr>,
    next: u64,
    /// (port, expires), least recently refreshed first.
    mrouters: Vec<(u32, i64)>,
}

impl Default for Table {
    fn default() -> Self {
        Self {
            max_entries: DEFAULT_TABLE_SIZE as usize,
            idle_s: i64::from(DEFAULT_IDLE_S),
            groups: HashMap::new(),
            lru: BTreeMap::new(),
            next: 0,
            mrouters: Vec::new(),
        }
    }
}

impl Table {
    pub fn set_max_entries(&mut self, n: u32) {
        self.max_entries = (n as usize).clamp(10, 1_000_000);
    }

    pub fn set_idle_time(&mut self, s: u32) {
        let idle = i64::from(s.clamp(15, 3600));
        let delta = idle - self.idle_s;
        if delta != 0 {
            for g in self.groups.values_mut() {
                for b in &mut g.bundles {
                    b.1 += delta;
                }
            }
            self.idle_s = idle;
        }
    }

    pub fn flush(&mut self) {
        self.groups.clear();
        self.lru.clear();
        self.mrouters.clear();
    }

    fn remove_group(&mut self, addr: &Ipv6Addr) {
        if let Some(g) = self.groups.remove(addr) {
            self.lru.remove(&g.lru);
        }
    }

    /// A port joins (or refreshes) `addr`; `true` when the group is new.
    pub fn add_group(&mut self, addr: Ipv6Addr, port: u32, now_s: i64) -> bool {
        // Reports from a router port are not learnt.
        if self.mrouters.iter().any(|(p, _)| *p == port) {
            return false;
        }
        let stamp = self.next;
        self.next += 1;
        let learned = if let Some(g) = self.groups.get_mut(&addr) {
            self.lru.remove(&g.lru);
            false
        } else {
            if self.groups.len() >= self.max_entries {
                if let Some((_, oldest)) = self.lru.first_key_value() {
                    let oldest = *oldest;
                    self.remove_group(&oldest);
                }
            }
            self.groups.insert(
                addr,
                Group {
                    bundles: Vec::new(),
                    lru: stamp,
                },
            );
            true
        };
        let idle = self.idle_s;
        if let Some(g) = self.groups.get_mut(&addr) {
            g.bundles.retain(|(p, _)| *p != port);
            g.bundles.push((port, now_s + idle));
            g.lru = stamp;
        }
        self.lru.insert(stamp, addr);
        learned
    }

    /// A port leaves `addr`; `true` when it was a member. The group stays, empty, until
    /// the next [`Table::run`].
    pub fn leave_group(&mut self, addr: Ipv6Addr, port: u32) -> bool {
        let Some(g) = self.groups.get_mut(&addr) else {
            return false;
        };
        let before = g.bundles.len();
        g.bundles.retain(|(p, _)| *p != port);
        g.bundles.len() != before
    }

    pub fn add_mrouter(&mut self, port: u32, now_s: i64) {
        self.mrouters.retain(|(p, _)| *p != port);
        self.mrouters.push((port, now_s + MROUTER_IDLE_S));
    }

    /// Ages groups and router ports (`mcast_snooping_run`): from the least recently used
    /// group on, expired members go, and groups left without members; it stops at the
    /// first group with nothing expired. `true` when something went.
    pub fn run(&mut self, now_s: i64) -> bool {
        let mut changed = false;
        while let Some((_, addr)) = self.lru.first_key_value() {
            let addr = *addr;
            if self.groups.len() > self.max_entries {
                self.remove_group(&addr);
                changed = true;
                continue;
            }
            let Some(g) = self.groups.get_mut(&addr) else {
                self.lru.pop_first();
                continue;
            };
            let before = g.bundles.len();
            // Sorted on expiry: the expired ones come first.
            let keep = g.bundles.iter().position(|b| b.1 > now_s);
            g.bundles.drain(..keep.unwrap_or(g.bundles.len()));
            let mut expired = before - g.bundles.len();
            if g.bundles.is_empty() {
                self.remove_group(&addr);
                expired += 1;
            }
            if expired == 0 {
                break;
            }
            changed = true;
        }
        while self.mrouters.first().is_some_and(|m| now_s >= m.1) {
            self.mrouters.remove(0);
            changed = true;
        }
        changed
    }

    /// The groups with members: address text -> ports.
    pub fn groups(&self) -> BTreeMap<String, BTreeSet<u32>> {
        self.groups
            .iter()
            .filter(|(_, g)| !g.bundles.is_empty())
            .map(|(a, g)| (address_text(*a), g.bundles.iter().map(|b| b.0).collect()))
            .collect()
    }

    pub fn mrouters(&self) -> BTreeSet<u32> {
        self.mrouters.iter().map(|m| m.0).collect()
    }

    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// When the next member or router port expires (seconds).
    pub fn next_expiry(&self) -> Option<i64> {
        let g = self
            .lru
            .first_key_value()
            .and_then(|(_, a)| self.groups.get(a))
            .and_then(|g| g.bundles.first().map(|b| b.1));
        let m = self.mrouters.first().map(|m| m.1);
        match (g, m) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

// ---------------------------------------------------------------------------------------
// All datapaths: the snooping tables and the querier schedule.

#[derive(Debug, Clone)]
struct Datapath {
    cfg: Config,
    /// `None` while snooping is disabled.
    table: Option<Table>,
    /// Next query (ms on the task's clock).
    query_at: u64,
}

/// What the main loop writes to `IGMP_Group`: the groups and router ports of every
/// datapath the task knows, by datapath key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Snapshot {
    pub datapaths: BTreeMap<u32, DatapathGroups>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct DatapathGroups {
    pub enabled: bool,
    pub groups: BTreeMap<String, BTreeSet<u32>>,
    pub mrouters: BTreeSet<u32>,
}

/// The snooping state of this chassis's datapaths.
#[derive(Debug)]
pub struct Snooping {
    dps: BTreeMap<u32, Datapath>,
    last: Option<Snapshot>,
    /// Something was learnt, aged or configured since [`Snooping::changed`] last looked.
    dirty: bool,
}

impl Default for Snooping {
    fn default() -> Self {
        Self::new()
    }
}

fn secs(now_ms: u64) -> i64 {
    i64::try_from(now_ms / 1000).unwrap_or(i64::MAX)
}

impl Snooping {
    pub fn new() -> Self {
        Self {
            dps: BTreeMap::new(),
            last: None,
            dirty: true,
        }
    }

    /// Takes the configurations of the local datapaths (`ip_mcast_snoop_configure`):
    /// a new datapath starts with an empty table and a query due at once; a new
    /// `seq_no` flushes the table; gone datapaths are forgotten.
    pub fn configure(&mut self, cfgs: &BTreeMap<u32, Config>, now_ms: u64) {
        let before = self.dps.len();
        self.dps.retain(|k, _| cfgs.contains_key(k));
        self.dirty |= self.dps.len() != before;
        for (key, cfg) in cfgs {
            let dp = self.dps.entry(*key).or_insert_with(|| Datapath {
                cfg: Config::default(),
                table: None,
                query_at: 0,
            });
            if dp.cfg == *cfg {
                continue;
            }
            self.dirty = true;
            if cfg.enabled {
                let table = dp.table.get_or_insert_with(Table::default);
                if dp.cfg.seq_no != cfg.seq_no {
                    table.flush();
                }
                if cfg.table_size != dp.cfg.table_size {
                    table.set_max_entries(cfg.table_size);
                }
                if cfg.idle_time_s != dp.cfg.idle_time_s {
                    table.set_idle_time(cfg.idle_time_s);
                }
                if cfg.query_interval_s != dp.cfg.query_interval_s {
                    let limit = now_ms + u64::from(cfg.query_interval_s) * 1000;
                    if dp.query_at > limit {
                        dp.query_at = now_ms;
                    }
                }
            } else {
                dp.table = None;
            }
            dp.cfg = cfg.clone();
        }
    }

    /// Whether `dp` snoops (packets of other datapaths are ignored, not forwarded).
    pub fn enabled(&self, dp: u32) -> bool {
        self.dps.get(&dp).is_some_and(|d| d.table.is_some())
    }

    /// Learns from a message received on `port` of `dp`. `false` when the datapath does
    /// not snoop.
    pub fn on_message(&mut self, dp: u32, port: u32, msg: &Message, now_ms: u64) -> bool {
        let Some(table) = self.dps.get_mut(&dp).and_then(|d| d.table.as_mut()) else {
            return false;
        };
        let now = secs(now_ms);
        self.dirty = true;
        match msg {
            Message::Query { learn_mrouter } => {
                if *learn_mrouter {
                    table.add_mrouter(port, now);
                }
            }
            Message::Report(records) => {
                for r in records {
                    match *r {
                        Record::Join(a) => {
                            table.add_group(mapped(a), port, now);
                        }
                        Record::Leave(a) => {
                            table.leave_group(mapped(a), port);
                        }
                    }
                }
            }
            Message::Other => {}
        }
        true
    }

    /// Ages the tables.
    pub fn run(&mut self, now_ms: u64) {
        let now = secs(now_ms);
        for d in self.dps.values_mut() {
            if let Some(t) = d.table.as_mut() {
                self.dirty |= t.run(now);
            }
        }
    }

    /// The state to write, when it differs from what was last returned.
    pub fn changed(&mut self) -> Option<Snapshot> {
        if !self.dirty {
            return None;
        }
        self.dirty = false;
        let snap = self.snapshot();
        if self.last.as_ref() == Some(&snap) {
            return None;
        }
        self.last = Some(snap.clone());
        Some(snap)
    }

    /// Forgets what [`Snooping::changed`] returned last (it was not delivered).
    pub fn resend(&mut self) {
        self.last = None;
        self.dirty = true;
    }

    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            datapaths: self
                .dps
                .iter()
                .map(|(k, d)| {
                    let (groups, mrouters) = d
                        .table
                        .as_ref()
                        .map(|t| (t.groups(), t.mrouters()))
                        .unwrap_or_default();
                    (
                        *k,
                        DatapathGroups {
                            enabled: d.table.is_some(),
                            groups,
                            mrouters,
                        },
                    )
                })
                .collect(),
        }
    }

    /// The queries due at `now_ms` (`ip_mcast_querier_send`): an IGMP and an MLD general
    /// query per querier datapath, every `query_interval` seconds, the first at once.
    pub fn queries(&mut self, now_ms: u64, local_output: u8) -> Vec<PacketOut> {
        let mut out = Vec::new();
        for (key, d) in &mut self.dps {
            let c = &d.cfg;
            if !(c.querier_v4 || c.querier_v6) || now_ms < d.query_at {
                continue;
            }
            if c.querier_v4 {
                let f = super::igmp_query::igmp_query(c.eth_src, c.ip4_src, c.query_max_resp_s);
                out.push(super::igmp_query::packet_out(*key, f, local_output));
            }
            if c.querier_v6 {
                let f = super::igmp_query::mld_query(c.eth_src, c.ip6_src, c.query_max_resp_s);
                out.push(super::igmp_query::packet_out(*key, f, local_output));
            }
            d.query_at = now_ms + u64::from(c.query_interval_s) * 1000;
        }
        out
    }

    /// When the next query is due (ms), if a querier runs.
    pub fn next_query(&self) -> Option<u64> {
        self.dps
            .values()
            .filter(|d| d.cfg.querier_v4 || d.cfg.querier_v6)
            .map(|d| d.query_at)
            .min()
    }

    /// Groups in all tables.
    pub fn group_count(&self) -> usize {
        self.dps
            .values()
            .filter_map(|d| d.table.as_ref())
            .map(Table::len)
            .sum()
    }
}

/// The packet-out that sends a report (or query) on to `key`'s multicast group, as if
/// it had come in on `port` (`pinctrl_forward_pkt`).
pub fn forward(dp: u32, port: u32, key: u32, packet: Vec<u8>, output_entry: u8) -> PacketOut {
    let at = super::packet_in::Entry {
        datapath: dp,
        inport: Some(port),
        outport: Some(key),
        local_only: false,
        table: output_entry,
    };
    super::packet_in::into_pipeline(at, packet)
}

// ---------------------------------------------------------------------------------------
// IGMP_Group rows (`ip_mcast_sync`)

/// Makes this chassis's `IGMP_Group` rows of the `local` datapaths follow `snap`: rows
/// of datapaths that do not snoop and of groups gone are deleted, new groups inserted,
/// ports updated; every snooping datapath has a `mrouters` row.
pub fn sync(
    sb: &Replica,
    chassis: Uuid,
    local: impl Fn(Uuid) -> bool,
    snap: &Snapshot,
    txn: &mut Transaction,
) {
    let (Some(dps), Some(pbs)) = (sb.table::<DatapathBinding>(), sb.table::<PortBinding>()) else {
        return;
    };
    let dp_key: HashMap<Uuid, u32> = dps
        .iter()
        .filter_map(|(u, d)| Some((*u, u32::try_from(d.tunnel_key).ok()?)))
        .collect();
    let dp_uuid: HashMap<u32, Uuid> = dp_key.iter().map(|(u, k)| (*k, *u)).collect();
    // Only a snooping datapath needs the ports.
    let port_uuid: HashMap<(Uuid, u32), Uuid> = if snap.datapaths.values().any(|d| d.enabled) {
        pbs.iter()
            .filter_map(|(u, pb)| Some(((pb.datapath, u32::try_from(pb.tunnel_key).ok()?), *u)))
            .collect()
    } else {
        HashMap::new()
    };
    let mut existing: HashMap<(Uuid, &str), (Uuid, &IgmpGroup)> = HashMap::new();
    if let Some(rows) = sb.table::<IgmpGroup>() {
        for (uuid, row) in rows.iter() {
            let Some(dp) = row.datapath else { continue };
            if row.chassis != Some(chassis) || !local(dp) {
                continue;
            }
            let Some(state) = dp_key.get(&dp).and_then(|k| snap.datapaths.get(k)) else {
                txn.delete("IGMP_Group", &by_uuid(*uuid));
                continue;
            };
            let keep = state.enabled
                && (row.address == MROUTERS || state.groups.contains_key(&row.address));
            if !keep || existing.contains_key(&(dp, row.address.as_str())) {
                txn.delete("IGMP_Group", &by_uuid(*uuid));
                continue;
            }
            existing.insert((dp, row.address.as_str()), (*uuid, row));
        }
    }
    for (key, state) in &snap.datapaths {
        let Some(dp) = dp_uuid.get(key).copied() else {
            continue;
        };
        if !state.enabled || !local(dp) {
            continue;
        }
        let wanted = state
            .groups
            .iter()
            .map(|(a, p)| (a.as_str(), p))
            .chain(std::iter::once((MROUTERS, &state.mrouters)));
        for (address, ports) in wanted {
            let ports: BTreeSet<Uuid> = ports
                .iter()
                .filter_map(|p| port_uuid.get(&(dp, *p)).copied())
                .collect();
            let datum = || Datum::Set(ports.iter().map(|u| Atom::Uuid(*u)).collect());
            match existing.get(&(dp, address)) {
                Some((_, row)) if row.ports == ports => {}
                Some((uuid, _)) => {
                    txn.update(
                        "IGMP_Group",
                        &by_uuid(*uuid),
                        Columns::new().set("ports", datum()),
                    );
                }
                None => {
                    txn.insert(
                        "IGMP_Group",
                        Columns::new()
                            .set("address", Atom::from(address))
                            .set("datapath", Datum::Set(vec![Atom::Uuid(dp)]))
                            .set("chassis", Datum::Set(vec![Atom::Uuid(chassis)]))
                            .set("ports", datum()),
                        None,
                    );
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "igmp_tests.rs"]
mod tests;
