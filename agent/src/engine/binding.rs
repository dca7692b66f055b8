//! Which port bindings this chassis claims, releases and serves (reference §4.1-§4.2).
//! Pure: reads the SB and OVS replicas, returns the decision and the SB updates.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::{Duration, Instant};

use sbclient::ovn_sb::{Chassis, Encap, HaChassis, HaChassisGroup, PortBinding};
use sbclient::vswitch::{Bridge, Interface, Port};
use sbclient::{Atom, Replica, Uuid};

use crate::runtime::BindingKind;

/// A claim attempt within this long after our own last claim of a port that another
/// chassis took since waits (ovn-controller's CLAIM_TIME_THRESHOLD_MS): no claim fights.
pub const CLAIM_THROTTLE: Duration = Duration::from_millis(500);

/// An OVS interface on the integration bridge that names a logical port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalIface {
    pub uuid: Uuid,
    pub name: String,
    pub ofport: Option<u32>,
    pub iface_id_ver: Option<String>,
    pub encap_ip: Option<String>,
    /// `external_ids:ovn-installed` is set.
    pub installed: bool,
}

/// The interfaces of the integration bridge, by `external_ids:iface-id`.
#[derive(Clone, Debug, Default)]
pub struct LocalIfaces {
    pub by_iface_id: BTreeMap<String, LocalIface>,
    /// Interfaces whose iface-id a newer interface took (ignored, warned; one of them
    /// serves the port again if the newer one goes).
    pub duplicates: Vec<(String, String)>,
    /// When each interface got its iface-id, so that the newest serves the port.
    pub order: IfaceOrder,
}

/// The order in which interfaces got their iface-id: of several interfaces with one
/// iface-id the newest serves the port, as ovn-controller hands a port to the interface
/// that named it last (a VM's new tap during a migration on one host); when it goes, the
/// newest one left takes over.
#[derive(Clone, Debug, Default)]
pub struct IfaceOrder {
    next: u64,
    seen: HashMap<Uuid, (String, u64)>,
}

impl IfaceOrder {
    /// The sequence number of interface `uuid` with iface-id `id` (a new one when the
    /// interface is new or its iface-id changed).
    fn seq(&mut self, uuid: Uuid, id: &str) -> u64 {
        match self.seen.get(&uuid) {
            Some((known, seq)) if known == id => *seq,
            _ => {
                self.next += 1;
                self.seen.insert(uuid, (id.to_owned(), self.next));
                self.next
            }
        }
    }
}

/// The Bridge row named `name`.
pub fn bridge<'a>(ovs: &'a Replica, name: &str) -> Option<(&'a Uuid, &'a Bridge)> {
    ovs.table::<Bridge>()?.iter().find(|(_, b)| b.name == name)
}

/// Interfaces of bridge `name` that carry an `iface-id`.
pub fn local_ifaces(ovs: &Replica, bridge_name: &str, mut order: IfaceOrder) -> LocalIfaces {
    let mut out = LocalIfaces::default();
    let (Some((_, br)), Some(ports), Some(ifaces)) = (
        bridge(ovs, bridge_name),
        ovs.table::<Port>(),
        ovs.table::<Interface>(),
    ) else {
        return out;
    };
    let mut found: Vec<(&Uuid, &Interface)> = br
        .ports
        .iter()
        .filter_map(|p| ports.get(p))
        .flat_map(|p| p.interfaces.iter())
        .filter_map(|i| ifaces.get(i).map(|r| (i, r)))
        .filter(|(_, i)| i.external_ids.contains_key("iface-id"))
        .collect();
    // Interfaces seen for the first time together count as named in reverse name order:
    // of those, the first by name serves.
    found.sort_by(|a, b| b.1.name.cmp(&a.1.name));
    let mut ranked: Vec<(u64, &Uuid, &Interface, &String)> = found
        .into_iter()
        .filter_map(|(u, i)| {
            let id = i.external_ids.get("iface-id")?;
            Some((order.seq(*u, id), u, i, id))
        })
        .collect();
    let present: HashSet<&Uuid> = ranked.iter().map(|(_, u, _, _)| *u).collect();
    order.seen.retain(|u, _| present.contains(u));
    ranked.sort_by_key(|r| std::cmp::Reverse(r.0));
    out.order = order;
    for (_, uuid, i, id) in ranked {
        if out.by_iface_id.contains_key(id) {
            out.duplicates.push((id.clone(), i.name.clone()));
            continue;
        }
        out.by_iface_id.insert(
            id.clone(),
            LocalIface {
                uuid: *uuid,
                name: i.name.clone(),
                ofport: i
                    .ofport
                    .and_then(|p| u32::try_from(p).ok())
                    .filter(|p| *p > 0 && *p < 0xff00),
                iface_id_ver: i.external_ids.get("iface-id-ver").cloned(),
                encap_ip: i.external_ids.get("encap-ip").cloned(),
                installed: i
                    .external_ids
                    .get("ovn-installed")
                    .is_some_and(|v| v == "true"),
            },
        );
    }
    out
}

/// This chassis as the binding code sees it.
#[derive(Clone, Debug)]
pub struct Me<'a> {
    pub name: &'a str,
    pub hostname: &'a str,
    /// Our Chassis row, once it exists.
    pub uuid: Option<Uuid>,
    /// The remote chassis whose tunnel BFD says is up; `None` where liveness is not known
    /// (`ovn-agent compile`: every HA member then counts as up).
    pub active_tunnels: Option<&'a BTreeSet<String>>,
}

/// Where a port may be bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bindable {
    Main,
    Additional,
    No,
}

/// `lport_can_bind_on_this_chassis` (reference §4.1).
pub fn can_bind(
    pb: &PortBinding,
    me: &Me<'_>,
    chassis: Option<&sbclient::Table<Chassis>>,
) -> Bindable {
    if me.uuid.is_some() && pb.requested_chassis == me.uuid {
        return Bindable::Main;
    }
    if me
        .uuid
        .is_some_and(|u| pb.requested_additional_chassis.contains(&u))
    {
        return Bindable::Additional;
    }
    // northd fills requested_chassis from the option; a named chassis that does not exist
    // yet still counts by name.
    let names = pb
        .options
        .get("requested-chassis")
        .map_or("", String::as_str);
    if names.is_empty() {
        if let (Some(req), Some(t)) = (pb.requested_chassis, chassis) {
            if t.get(&req).is_some() {
                return Bindable::No;
            }
        }
        return Bindable::Main;
    }
    for (i, n) in names.split(',').map(str::trim).enumerate() {
        if n == me.name || n == me.hostname {
            return if i == 0 {
                Bindable::Main
            } else {
                Bindable::Additional
            };
        }
    }
    Bindable::No
}

/// Whether this chassis is the active member of an HA chassis group, and whether it is a
/// member at all, by ovn-controller's rules (reference §4.1): a one-chassis group is active
/// on that chassis; the only member whose chassis exists is active; without any BFD
/// session up nobody is; else the first by priority (ties by name, descending) among this
/// chassis and the members whose tunnel is up, and a chassis left alone is active only
/// while BFD is up to one of the group's `ref_chassis`.
pub fn ha_active(sb: &Replica, group: &Uuid, me: &Me<'_>) -> (bool, bool) {
    let (Some(g), Some(ha), Some(ch)) = (
        sb.table::<HaChassisGroup>().and_then(|t| t.get(group)),
        sb.table::<HaChassis>(),
        sb.table::<Chassis>(),
    ) else {
        return (false, false);
    };
    let members: Vec<(i64, &str)> = g
        .ha_chassis
        .iter()
        .filter_map(|m| ha.get(m))
        .filter_map(|h| Some((h.priority, ch.get(&h.chassis?)?.name.as_str())))
        .collect();
    let member = members.iter().any(|m| m.1 == me.name);
    if g.ha_chassis.len() == 1 || (member && members.len() == 1) {
        return (member, member);
    }
    let mut candidates: Vec<(i64, &str)> = match me.active_tunnels {
        None => members,
        Some(up) if up.is_empty() => return (false, member),
        Some(up) => members
            .into_iter()
            .filter(|m| m.1 == me.name || up.contains(m.1))
            .collect(),
    };
    if let (Some(up), [_]) = (me.active_tunnels, candidates.as_slice()) {
        let reaches_a_ref = g
            .ref_chassis
            .iter()
            .filter_map(|r| ch.get(r))
            .any(|c| up.contains(&c.name));
        if !reaches_a_ref {
            return (false, member);
        }
    }
    candidates.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(a.1)));
    (candidates.first().is_some_and(|m| m.1 == me.name), member)
}

/// What this chassis holds and what it must write.
#[derive(Clone, Debug, Default)]
pub struct BindingPlan {
    /// Ports bound here (for flows): VIFs and containers with ofports, claimed ports.
    pub bound: HashMap<Uuid, BindingKind>,
    /// Localports with an interface here.
    pub localports: HashMap<Uuid, u32>,
    /// Ports to claim (set `chassis` to us), with the encap to record.
    pub claim: Vec<(Uuid, Option<Uuid>)>,
    /// Ports to add ourselves to as an additional chassis.
    pub claim_additional: Vec<(Uuid, Option<Uuid>)>,
    /// Ports to release (they point to us but should not).
    pub release: Vec<Uuid>,
    /// Ports to remove ourselves from `additional_chassis`.
    pub release_additional: Vec<Uuid>,
    /// Ports we are an additional chassis of, with our encaps to remove from
    /// `additional_encap` (the interface no longer names an `encap-ip`).
    pub release_additional_encap: Vec<(Uuid, Vec<Uuid>)>,
    /// Claims held back by the throttle (retry when it expires).
    pub throttled: Vec<(Uuid, Instant)>,
    /// HA groups (cr / external ports) in which this chassis is a member, active or not.
    pub ha_member: HashSet<Uuid>,
    /// cr / external ports active here.
    pub active_ha: HashSet<Uuid>,
    /// Virtual ports pinctrl claimed here (`bind_vport`) whose virtual parent is bound
    /// here: resident for the logical flows (`is_chassis_resident`), with no flows of their
    /// own.
    pub virtual_held: HashSet<Uuid>,
    /// Lines worth a (rate-limited) log message: ports we refuse and why.
    pub notes: Vec<String>,
    /// Port_Bindings that cannot be served as they are (unknown type, a required option
    /// missing): skipped; logged and counted once per problem.
    pub problems: Vec<(Uuid, String)>,
}

/// The Port_Binding types ovn-controller 23.03.1 knows (`get_lport_type`).
const KNOWN_TYPES: &[&str] = &[
    "",
    "patch",
    "chassisredirect",
    "l3gateway",
    "localnet",
    "localport",
    "l2gateway",
    "vtep",
    "external",
    "virtual",
    "remote",
];

/// What makes `pb` unusable, if anything.
fn problem(pb: &PortBinding) -> Option<String> {
    let name = &pb.logical_port;
    let has = |k: &str| pb.options.get(k).is_some_and(|v| !v.is_empty());
    match pb.type_.as_str() {
        t if !KNOWN_TYPES.contains(&t) => Some(format!(
            "Port_Binding {name} has unknown type {t:?}: skipped"
        )),
        "localnet" | "l2gateway" if !has("network_name") => Some(format!(
            "{} port {name} has no network_name option: skipped",
            pb.type_
        )),
        "chassisredirect" if !has("distributed-port") => Some(format!(
            "chassisredirect port {name} has no distributed-port option: skipped"
        )),
        _ => None,
    }
}

/// The encap row of our chassis whose ip is `ip`: of several (one per tunnel type), the
/// preferred type's (geneve, then stt, then vxlan), as ovn-controller picks it.
fn encap_for(sb: &Replica, me: &Me<'_>, ip: Option<&str>) -> Option<Uuid> {
    let ip = ip?;
    let ch = sb.table::<Chassis>()?.get(&me.uuid?)?;
    let encaps = sb.table::<Encap>()?;
    ch.encaps
        .iter()
        .filter_map(|e| encaps.get(e).map(|r| (e, r)))
        .filter(|(_, e)| e.ip == ip)
        .filter_map(|(u, e)| crate::runtime::EncapType::parse(&e.type_).map(|t| (t, *u)))
        .min()
        .map(|(_, u)| u)
}

/// Which of `encaps` belong to our chassis.
fn encaps_of(sb: &Replica, me: &Me<'_>, encaps: &BTreeSet<Uuid>) -> Vec<Uuid> {
    let Some(table) = sb.table::<Encap>() else {
        return Vec::new();
    };
    encaps
        .iter()
        .filter(|e| table.get(e).is_some_and(|r| r.chassis_name == me.name))
        .copied()
        .collect()
}

/// Types whose rows matter to a plan only when an interface here names them or they are
/// bound here; every other type (gateways, localnet, unknown ones) is looked at wherever it is.
const BY_INTERFACE_OR_CHASSIS: &[&str] = &["", "patch", "virtual", "localport", "vtep", "remote"];

/// The Port_Bindings a plan must look at, in uuid order: those the local interfaces name
/// (and their containers), those bound here, and every row of the other types. Through
/// the replica's indexes, so a run costs what is local, not every port of the cluster; a
/// replica without them gives every row.
fn candidates<'a>(
    pbs: &'a sbclient::Table<PortBinding>,
    ifaces: &LocalIfaces,
    me: Option<Uuid>,
) -> Vec<(&'a Uuid, &'a PortBinding)> {
    let indexed = [
        "logical_port",
        "parent_port",
        "chassis",
        "additional_chassis",
        "type",
    ]
    .iter()
    .all(|c| pbs.has_index(c));
    if !indexed {
        let mut all: Vec<_> = pbs.iter().collect();
        all.sort_unstable_by_key(|(u, _)| **u);
        return all;
    }
    let mut out: BTreeMap<Uuid, (&'a Uuid, &'a PortBinding)> = BTreeMap::new();
    let mut add = |rows: &mut dyn Iterator<Item = (&'a Uuid, &'a PortBinding)>| {
        for (u, p) in rows {
            out.insert(*u, (u, p));
        }
    };
    for id in ifaces.by_iface_id.keys() {
        let key = Atom::String(id.clone());
        add(&mut pbs.find("logical_port", &key));
        add(&mut pbs.find("parent_port", &key));
    }
    if let Some(me) = me {
        add(&mut pbs.find("chassis", &Atom::Uuid(me)));
        add(&mut pbs.find("additional_chassis", &Atom::Uuid(me)));
    }
    for ty in pbs.indexed_values("type") {
        if matches!(ty, Atom::String(t) if BY_INTERFACE_OR_CHASSIS.contains(&t.as_str())) {
            continue;
        }
        add(&mut pbs.find("type", ty));
    }
    out.into_values().collect()
}

/// Decides every binding of this chassis. `last_claim` holds when we last claimed a port
/// (for the throttle).
pub fn plan(
    sb: &Replica,
    ifaces: &LocalIfaces,
    me: &Me<'_>,
    last_claim: &HashMap<Uuid, Instant, impl std::hash::BuildHasher>,
    now: Instant,
) -> BindingPlan {
    let mut out = BindingPlan::default();
    let Some(pbs) = sb.table::<PortBinding>() else {
        return out;
    };
    let chassis_table = sb.table::<Chassis>();
    let is_me = |c: &Option<Uuid>| c.is_some() && *c == me.uuid;
    // VIFs first, so containers can find their parents.
    let mut parents: HashMap<&str, u32> = HashMap::new();
    // In uuid order within each class: deterministic without sorting every Port_Binding
    // by name on every run.
    let candidates = candidates(pbs, ifaces, me.uuid);
    let order = candidates
        .iter()
        .filter(|(_, p)| p.parent_port.is_none())
        .chain(candidates.iter().filter(|(_, p)| p.parent_port.is_some()))
        .copied();
    for (uuid, pb) in order {
        if let Some(p) = problem(pb) {
            out.problems.push((*uuid, p));
            if is_me(&pb.chassis) {
                out.release.push(*uuid);
            }
            continue;
        }
        let wants = match pb.type_.as_str() {
            "" | "virtual" if pb.parent_port.is_none() => {
                let Some(iface) = ifaces.by_iface_id.get(&pb.logical_port) else {
                    // A virtual port (claimed by pinctrl's bind_vport) stays ours while
                    // its virtual parent is bound here, as in ovn-controller.
                    let parent_here = || {
                        pb.virtual_parent.as_ref().is_some_and(|p| {
                            let named = |q: &PortBinding| q.logical_port == *p && is_me(&q.chassis);
                            ifaces.by_iface_id.contains_key(p)
                                && if pbs.has_index("logical_port") {
                                    pbs.find("logical_port", &Atom::String(p.clone()))
                                        .any(|(_, q)| named(q))
                                } else {
                                    pbs.iter().any(|(_, q)| named(q))
                                }
                        })
                    };
                    if is_me(&pb.chassis) {
                        if pb.type_.is_empty() || !parent_here() {
                            out.release.push(*uuid);
                        } else {
                            out.virtual_held.insert(*uuid);
                        }
                    }
                    continue;
                };
                if pb.type_ == "virtual" {
                    // Bound by pinctrl (bind_vport), not here.
                    continue;
                }
                if let Some(want) = pb.options.get("iface-id-ver") {
                    if iface.iface_id_ver.as_ref() != Some(want) {
                        out.notes.push(format!(
                            "not claiming {}: iface-id-ver {want:?} does not match the interface's {:?}",
                            pb.logical_port, iface.iface_id_ver
                        ));
                        if is_me(&pb.chassis) {
                            out.release.push(*uuid);
                        }
                        continue;
                    }
                }
                let Some(ofport) = iface.ofport else {
                    continue;
                };
                match can_bind(pb, me, chassis_table) {
                    Bindable::No => {
                        // ovn-controller's words: operators and OVN's tests look for them.
                        let holder = pb
                            .chassis
                            .and_then(|c| chassis_table?.get(&c))
                            .map_or("", |c| c.name.as_str());
                        out.notes.push(format!(
                            "Not claiming lport {}, chassis {} requested-chassis {} pb->chassis {holder}",
                            pb.logical_port,
                            me.name,
                            pb.options
                                .get("requested-chassis")
                                .map_or("[]", String::as_str)
                        ));
                        if is_me(&pb.chassis) {
                            out.release.push(*uuid);
                        }
                        continue;
                    }
                    Bindable::Additional => {
                        let want = encap_for(sb, me, iface.encap_ip.as_deref());
                        match me.uuid {
                            Some(u) if !pb.additional_chassis.contains(&u) => {
                                out.claim_additional.push((*uuid, want));
                            }
                            // Already an additional chassis: the encap follows the
                            // interface's `encap-ip` (added when named, ours removed when
                            // not), as ovn-controller's.
                            Some(_) => match want {
                                Some(e) if !pb.additional_encap.contains(&e) => {
                                    out.claim_additional.push((*uuid, Some(e)));
                                }
                                Some(_) => {}
                                None => {
                                    let mine = encaps_of(sb, me, &pb.additional_encap);
                                    if !mine.is_empty() {
                                        out.release_additional_encap.push((*uuid, mine));
                                    }
                                }
                            },
                            None => {}
                        }
                    }
                    Bindable::Main => {
                        claim_main(
                            &mut out,
                            uuid,
                            pb,
                            me,
                            last_claim,
                            now,
                            ClaimEncap::Interface(encap_for(sb, me, iface.encap_ip.as_deref())),
                        );
                        // An additional chassis that becomes the main one leaves
                        // `additional_chassis` (a migration completed).
                        if me.uuid.is_some_and(|u| pb.additional_chassis.contains(&u)) {
                            leave_additional(&mut out, sb, me, uuid, pb);
                        }
                    }
                }
                parents.insert(pb.logical_port.as_str(), ofport);
                out.bound.insert(
                    *uuid,
                    BindingKind::Vif {
                        ofport,
                        iface: iface.name.clone(),
                    },
                );
                continue;
            }
            "" => {
                // A container: on its parent's interface with its VLAN tag.
                let parent = pb.parent_port.as_deref().unwrap_or_default();
                let Some(&ofport) = parents.get(parent) else {
                    if is_me(&pb.chassis) {
                        out.release.push(*uuid);
                    }
                    continue;
                };
                // Claimed without a tag too, as ovn-controller does (the physical stage
                // gives such a container no flows).
                let Ok(tag) = u16::try_from(pb.tag.unwrap_or(0)) else {
                    out.notes
                        .push(format!("{}: bad tag {:?}", pb.logical_port, pb.tag));
                    continue;
                };
                claim_main(&mut out, uuid, pb, me, last_claim, now, ClaimEncap::Keep);
                out.bound.insert(
                    *uuid,
                    BindingKind::Container {
                        parent_ofport: ofport,
                        tag,
                    },
                );
                continue;
            }
            "localport" => {
                if let Some(ofport) = ifaces
                    .by_iface_id
                    .get(&pb.logical_port)
                    .and_then(|i| i.ofport)
                {
                    out.localports.insert(*uuid, ofport);
                }
                if is_me(&pb.chassis) {
                    out.release.push(*uuid);
                }
                continue;
            }
            "l3gateway" => pb
                .options
                .get("l3gateway-chassis")
                .is_some_and(|c| c == me.name),
            "l2gateway" => pb
                .options
                .get("l2gateway-chassis")
                .is_some_and(|c| c == me.name),
            "chassisredirect" | "external" => match pb.ha_chassis_group {
                Some(g) => {
                    let (active, member) = ha_active(sb, &g, me);
                    if member {
                        out.ha_member.insert(*uuid);
                    }
                    if active {
                        out.active_ha.insert(*uuid);
                    }
                    active
                }
                // The older form: `options:gateway-chassis` / Port_Binding.chassis pinned.
                None => pb
                    .options
                    .get("redirect-chassis")
                    .is_some_and(|c| c == me.name),
            },
            _ => {
                // localnet, patch, vtep, remote: never claimed here. One we hold (a VIF
                // whose type changed) is released, as ovn-controller releases it.
                if is_me(&pb.chassis) {
                    if !matches!(pb.type_.as_str(), "localnet" | "patch") {
                        out.notes.push(format!(
                            "{}: type {:?} is not bound by a chassis",
                            pb.logical_port, pb.type_
                        ));
                    }
                    out.release.push(*uuid);
                }
                continue;
            }
        };
        if wants {
            claim_main(&mut out, uuid, pb, me, last_claim, now, ClaimEncap::Keep);
            out.bound.insert(*uuid, BindingKind::Claimed);
        } else if is_me(&pb.chassis) {
            out.release.push(*uuid);
        }
    }
    // Additional bindings we hold but no longer want.
    if let Some(u) = me.uuid {
        for (uuid, pb) in candidates {
            if pb.additional_chassis.contains(&u) && !out.bound.contains_key(uuid) {
                leave_additional(&mut out, sb, me, uuid, pb);
            }
        }
    }
    out
}

/// Removes this chassis from `pb`'s `additional_chassis`, with its encaps from
/// `additional_encap`.
fn leave_additional(
    out: &mut BindingPlan,
    sb: &Replica,
    me: &Me<'_>,
    uuid: &Uuid,
    pb: &PortBinding,
) {
    out.release_additional.push(*uuid);
    let mine = encaps_of(sb, me, &pb.additional_encap);
    if !mine.is_empty() {
        out.release_additional_encap.push((*uuid, mine));
    }
}

/// The encap a main claim records.
#[derive(Clone, Copy)]
enum ClaimEncap {
    /// A VIF's: the encap its interface's `encap-ip` names, none without one (as
    /// ovn-controller's, it follows the interface).
    Interface(Option<Uuid>),
    /// A port without an interface keeps what it has.
    Keep,
}

/// Claims `pb` for this chassis as its main chassis, unless a recent claim throttles it.
#[allow(clippy::too_many_arguments)]
fn claim_main(
    out: &mut BindingPlan,
    uuid: &Uuid,
    pb: &PortBinding,
    me: &Me<'_>,
    last_claim: &HashMap<Uuid, Instant, impl std::hash::BuildHasher>,
    now: Instant,
    claim_encap: ClaimEncap,
) {
    let Some(my) = me.uuid else { return };
    let encap = match claim_encap {
        ClaimEncap::Interface(e) => e,
        ClaimEncap::Keep => None,
    };
    if pb.chassis == Some(my) {
        if matches!(claim_encap, ClaimEncap::Interface(e) if pb.encap != e) {
            out.claim.push((*uuid, encap));
        }
        return;
    }
    if pb.chassis.is_some() {
        if let Some(t) = last_claim.get(uuid) {
            if now.duration_since(*t) < CLAIM_THROTTLE {
                out.throttled.push((*uuid, *t + CLAIM_THROTTLE));
                return;
            }
        }
    }
    out.claim.push((*uuid, encap));
}

#[cfg(test)]
#[path = "binding_tests.rs"]
mod tests;
