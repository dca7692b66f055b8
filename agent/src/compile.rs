//! The flows a chassis installs for the Southbound content, owner by owner: each logical
//! flow, and the rows ovn-controller's lflow module turns into flows without logical flows
//! (MAC bindings, FDB entries, port security, load-balancer hairpin). Pure: reads the typed
//! replica through [`SbView`], returns flows with the ids they use.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering::Relaxed;

use sbclient::ovn_sb::{
    Fdb, LoadBalancer, LogicalDpGroup, LogicalFlow, MacBinding, PortBinding, StaticMacBinding,
};
use sbclient::Uuid;

use crate::lflow::actions::{parse_actions_in, ParseOptions, Pipeline};
use crate::lflow::flows::{
    compile_lflow, cookie_of, ChassisView, DpSpec, IdUse, LflowSpec, MatchCache, OfFlow,
};
use crate::lflow::layout::TableLayout;
use crate::lflow::LflowError;
use crate::northd_options::lb_hairpin_use_ct_mark;
use crate::ofctrl::DesiredFlows;
use crate::view::SbView;

pub use crate::owner::Owner;

mod set_delta;
pub use set_delta::{logical_flow_set_delta, SetChange, SetDelta};

/// A row that could not be turned into flows.
#[derive(Debug, Clone)]
pub struct Failure {
    pub owner: Owner,
    /// `ingress table 3` for logical flows.
    pub place: String,
    pub error: LflowError,
    /// The text the error is about (match or actions of a logical flow).
    pub text: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pos = self
            .error
            .position()
            .map(|p| format!(" at position {p}"))
            .unwrap_or_default();
        let place = if self.place.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.place)
        };
        write!(f, "{}{place}: {}{pos}", self.owner, self.error)?;
        if !self.text.is_empty() {
            write!(f, " in {:?}", self.text)?;
        }
        Ok(())
    }
}

/// The flows of one owner, the ids they use, and why part of it failed.
#[derive(Debug, Default)]
pub struct Compiled {
    pub flows: Vec<OfFlow>,
    pub uses: Vec<IdUse>,
    pub failure: Option<Failure>,
}

/// Everything compiling needs besides the view: layout, shared caches, bounds.
pub struct Context<'a> {
    pub view: &'a SbView<'a>,
    pub layout: &'a TableLayout,
    pub cache: &'a MatchCache,
    /// Only the flows of this datapath tunnel key (chassis-wide flows are left out).
    pub only_dp: Option<u32>,
    pub limit: usize,
}

impl Context<'_> {
    fn wanted_dp(&self, dp: &Uuid) -> Option<u32> {
        let key = self.view.datapath(dp)?.key;
        (self.view.local_datapaths.contains(dp) && self.only_dp.is_none_or(|k| k == key))
            .then_some(key)
    }
}

fn lflow_failure(uuid: Uuid, lf: &LogicalFlow, error: LflowError, layout: &TableLayout) -> Failure {
    let pipeline = if lf.pipeline == "egress" {
        Pipeline::Egress
    } else {
        Pipeline::Ingress
    };
    let actions_bad = matches!(error, LflowError::InActions(_))
        || u32::try_from(lf.table_id).is_ok_and(|table| {
            parse_actions_in(
                &lf.actions,
                ParseOptions {
                    pipeline,
                    table,
                    n_tables: layout.max_pipeline_len(),
                },
                layout.dialect,
            )
            .is_err()
        });
    Failure {
        owner: Owner::Lflow(uuid),
        place: format!("{} table {}", lf.pipeline, lf.table_id),
        text: if actions_bad {
            lf.actions.clone()
        } else {
            lf.match_.clone()
        },
        error,
    }
}

/// The checked scalar columns of a logical flow.
fn lflow_spec<'r>(
    uuid: &'r Uuid,
    lf: &'r LogicalFlow,
    view: &SbView<'_>,
) -> Result<LflowSpec<'r>, LflowError> {
    let pipeline = match lf.pipeline.as_str() {
        "ingress" => Pipeline::Ingress,
        "egress" => Pipeline::Egress,
        p => return Err(LflowError::BadRow(format!("pipeline {p:?}"))),
    };
    let table_id = u32::try_from(lf.table_id)
        .map_err(|_| LflowError::BadRow(format!("table_id {}", lf.table_id)))?;
    let priority = u16::try_from(lf.priority)
        .map_err(|_| LflowError::BadRow(format!("priority {}", lf.priority)))?;
    Ok(LflowSpec {
        uuid,
        pipeline,
        table_id,
        priority,
        match_text: &lf.match_,
        actions: &lf.actions,
        controller_meter: lf
            .controller_meter
            .as_deref()
            .and_then(|m| view.named_meter(m)),
    })
}

/// The datapaths a logical flow applies to.
fn lflow_datapaths(lf: &LogicalFlow, view: &SbView<'_>) -> Vec<Uuid> {
    match (lf.logical_datapath, lf.logical_dp_group) {
        (Some(d), _) => vec![d],
        (None, Some(g)) => view
            .replica()
            .table::<LogicalDpGroup>()
            .and_then(|t| t.get(&g))
            .map(|g| g.datapaths.iter().copied().collect())
            .unwrap_or_default(),
        (None, None) => Vec::new(),
    }
}

/// Compiles one logical flow for every local datapath it applies to. A panic inside the
/// compiler is caught and reported as this flow's failure.
pub fn compile_logical_flow(uuid: &Uuid, lf: &LogicalFlow, cx: &Context<'_>) -> Compiled {
    let mut out = Compiled::default();
    let result = catch_unwind(AssertUnwindSafe(|| {
        compile_logical_flow_in(uuid, lf, cx, &mut out)
    }));
    let error = match result {
        Ok(Ok(())) => return out,
        Ok(Err(e)) => e,
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            LflowError::Internal(format!("panic: {msg}"))
        }
    };
    out.failure = Some(lflow_failure(*uuid, lf, error, cx.layout));
    out
}

fn compile_logical_flow_in(
    uuid: &Uuid,
    lf: &LogicalFlow,
    cx: &Context<'_>,
    out: &mut Compiled,
) -> Result<(), LflowError> {
    let datapaths = lflow_datapaths(lf, cx.view);
    if !datapaths.iter().any(|d| cx.wanted_dp(d).is_some()) {
        return Ok(());
    }
    let spec = lflow_spec(uuid, lf, cx.view)?;
    if spec.controller_meter.is_some() {
        if let Some(m) = &lf.controller_meter {
            out.uses.push(IdUse::Meter(m.clone()));
        }
    }
    let in_out_port = lf.tags.get("in_out_port");
    for dp_uuid in &datapaths {
        let Some(key) = cx.wanted_dp(dp_uuid) else {
            continue;
        };
        if let Some(p) = in_out_port {
            if !cx
                .view
                .port_key(dp_uuid, p)
                .is_some_and(|k| cx.view.is_related(key, k))
            {
                continue;
            }
        }
        let info = cx.view.datapath(dp_uuid).cloned();
        let Some(info) = info else { continue };
        let dp = DpSpec {
            uuid: dp_uuid,
            key,
            is_switch: !info.is_router,
            snat_ct_zone: info.snat_ct_zone,
        };
        let flows = compile_lflow(
            &spec,
            &dp,
            cx.view,
            cx.layout,
            cx.cache,
            cx.limit,
            &mut out.uses,
        )?;
        out.flows.extend(flows);
    }
    Ok(())
}

/// Tables 66/67 of a MAC_Binding row on a local datapath.
pub fn mac_binding(uuid: &Uuid, mb: &MacBinding, cx: &Context<'_>) -> Compiled {
    neighbor(
        Owner::MacBinding(*uuid),
        &mb.logical_port,
        &mb.ip,
        &mb.mac,
        100,
        cx,
    )
}

/// Tables 66/67 of a Static_MAC_Binding row (priority 150 when it overrides learnt ones).
pub fn static_mac_binding(uuid: &Uuid, mb: &StaticMacBinding, cx: &Context<'_>) -> Compiled {
    let priority = if mb.override_dynamic_mac { 150 } else { 50 };
    neighbor(
        Owner::StaticMacBinding(*uuid),
        &mb.logical_port,
        &mb.ip,
        &mb.mac,
        priority,
        cx,
    )
}

/// The flows of a neighbor on the datapath of its logical port, as ovn-controller reads
/// them (the row's own `datapath` column is not what places it). A port not in the
/// replica (not of local interest) has none.
fn neighbor(
    owner: Owner,
    port: &str,
    ip: &str,
    mac: &str,
    priority: u16,
    cx: &Context<'_>,
) -> Compiled {
    let mut out = Compiled::default();
    let Some(pb) = cx.view.port_binding(port) else {
        return out;
    };
    let Some(dp_key) = cx.wanted_dp(&pb.datapath) else {
        return out;
    };
    let (Owner::MacBinding(uuid) | Owner::StaticMacBinding(uuid)) = owner else {
        return out;
    };
    let Some(port_key) = cx.view.port_key(&pb.datapath, port) else {
        out.failure = Some(row_failure(owner, format!("unknown logical port {port:?}")));
        return out;
    };
    match crate::neighbor::mac_binding_flows(
        cookie_of(&uuid),
        dp_key,
        port_key,
        ip,
        mac,
        priority,
        cx.layout,
    ) {
        Some(f) => out.flows = f,
        None => {
            out.failure = Some(row_failure(
                owner,
                format!("bad address ip {ip:?} mac {mac:?}"),
            ));
        }
    }
    out
}

fn row_failure(owner: Owner, msg: String) -> Failure {
    Failure {
        owner,
        place: String::new(),
        error: LflowError::BadRow(msg),
        text: String::new(),
    }
}

/// Tables 71/72 of an FDB row on a local datapath.
pub fn fdb(uuid: &Uuid, f: &Fdb, cx: &Context<'_>) -> Compiled {
    let mut out = Compiled::default();
    let owner = Owner::Fdb(*uuid);
    let (Ok(dp_key), Ok(port_key)) = (u32::try_from(f.dp_key), u32::try_from(f.port_key)) else {
        out.failure = Some(row_failure(
            owner,
            format!("keys {} {}", f.dp_key, f.port_key),
        ));
        return out;
    };
    let local = cx
        .view
        .local_datapaths
        .iter()
        .any(|d| cx.view.datapath(d).is_some_and(|i| i.key == dp_key));
    if !local || cx.only_dp.is_some_and(|k| k != dp_key) {
        return out;
    }
    match crate::neighbor::fdb_flows(cookie_of(uuid), dp_key, port_key, &f.mac, cx.layout) {
        Some(flows) => out.flows = flows,
        None => out.failure = Some(row_failure(owner, format!("bad mac {:?}", f.mac))),
    }
    out
}

/// Tables 73-75 of a port bound here that has port security.
pub fn port_security(uuid: &Uuid, pb: &PortBinding, cx: &Context<'_>) -> Compiled {
    let mut out = Compiled::default();
    if pb.port_security.is_empty() || !cx.view.bound_here(pb) {
        return out;
    }
    let Some(dp_key) = cx.wanted_dp(&pb.datapath) else {
        return out;
    };
    let mut entries = Vec::new();
    for e in &pb.port_security {
        match crate::portsec::parse_port_security(e) {
            Some(a) => entries.push(a),
            None => {
                out.failure = Some(row_failure(
                    Owner::PortSecurity(*uuid),
                    format!("port_security entry {e:?}"),
                ));
            }
        }
    }
    let port_key = u32::try_from(pb.tunnel_key).unwrap_or(0);
    out.flows =
        crate::portsec::port_security_flows(cookie_of(uuid), dp_key, port_key, &entries, cx.layout);
    out
}

/// Tables 68 and 70 of a load balancer that applies to a local logical switch
/// (chassis-wide: left out when compiling one datapath only).
pub fn lb_hairpin(uuid: &Uuid, lb: &LoadBalancer, cx: &Context<'_>) -> Compiled {
    use crate::hairpin::{parse_endpoint, HairpinLb};
    use crate::lflow::template::expand_templates;
    let mut out = Compiled::default();
    if cx.only_dp.is_some() {
        return out;
    }
    let mut members: Vec<Uuid> = lb.datapaths.iter().copied().collect();
    // The switches' group: `datapath_group` (23.03, and later northds while a chassis lacks
    // `ls-dpg-column`) or `ls_datapath_group`.
    let groups = cx.view.replica().table::<LogicalDpGroup>();
    for g in [lb.datapath_group, lb.ls_datapath_group]
        .into_iter()
        .flatten()
        .filter_map(|g| groups?.get(&g))
    {
        members.extend(g.datapaths.iter().copied());
    }
    let local: Vec<u32> = members
        .iter()
        .filter(|d| cx.view.local_datapaths.contains(*d))
        .filter_map(|d| cx.view.datapath(d))
        .filter(|d| !d.is_router)
        .map(|d| d.key)
        .collect();
    // A load balancer of a local router applies here too (its routers' group, 24.03 on),
    // though its SNAT flows are per switch.
    let router_here = lb
        .lr_datapath_group
        .and_then(|g| groups?.get(&g))
        .is_some_and(|g| {
            g.datapaths
                .iter()
                .any(|d| cx.view.local_datapaths.contains(d))
        });
    if local.is_empty() && !router_here {
        return out;
    }
    let vars = cx.view.template_vars();
    let mut vips = Vec::new();
    for (k, v) in lb.vips.iter() {
        let Some(vip) = parse_endpoint(&expand_templates(k, vars)) else {
            out.failure = Some(row_failure(Owner::LbHairpin(*uuid), format!("vip {k:?}")));
            continue;
        };
        let backends = expand_templates(v, vars)
            .split(',')
            .filter(|b| !b.trim().is_empty())
            .filter_map(parse_endpoint)
            .collect();
        vips.push((vip, backends));
    }
    vips.sort_by_key(|(v, _): &(crate::hairpin::Endpoint, Vec<_>)| (v.ip, v.port));
    let snat: Vec<std::net::IpAddr> = lb
        .options
        .get("hairpin_snat_ip")
        .map(|s| {
            s.split_whitespace()
                .filter_map(|a| a.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let h = HairpinLb {
        cookie: cookie_of(uuid),
        proto: match lb.protocol.as_deref() {
            Some("udp") => 17,
            Some("sctp") => 132,
            _ => 6,
        },
        vips,
        snat_v4: snat.iter().find_map(|a| match a {
            std::net::IpAddr::V4(v) => Some(*v),
            std::net::IpAddr::V6(_) => None,
        }),
        snat_v6: snat.iter().find_map(|a| match a {
            std::net::IpAddr::V6(v) => Some(*v),
            std::net::IpAddr::V4(_) => None,
        }),
        local_dp_keys: local,
        use_ct_mark: lb_hairpin_use_ct_mark(cx.view.replica()),
        orig_dip_in_reg4: crate::northd_options::register_consolidation(cx.view.replica()),
        orig_tuple: cx.layout.dialect.lb_orig_tuple_always
            || lb
                .options
                .get("hairpin_orig_tuple")
                .is_some_and(|v| v == "true"),
    };
    out.flows = crate::hairpin::hairpin_flows(&h, cx.layout);
    out
}

/// Every owner's flows, as the desired flow table the switch gets.
pub struct CompileReport {
    pub desired: DesiredFlows,
    pub failures: Vec<Failure>,
    /// Each owner in compile order with the ids it uses (its flows are in `desired`).
    pub per_owner: Vec<(Owner, Compiled)>,
    /// Logical flows looked at.
    pub lflows: usize,
    /// Match-cache hits and misses (a miss parses, annotates and simplifies).
    pub cache_hits: usize,
    pub cache_misses: usize,
    pub cache_entries: usize,
    /// Contributions hidden because another owner produced the same table, priority and
    /// match (the switch gets one flow).
    pub duplicates: usize,
    /// Lflows refused because they expand to more flows than the limit.
    pub too_many_flows: usize,
}

/// Compiles every owner of the replica for the local datapaths of the view, logical flows
/// on `threads` threads (chunks of lflows; the match cache is shared).
pub fn compile_all(cx: &Context<'_>, threads: usize) -> CompileReport {
    let mut desired = DesiredFlows::new();
    let mut per_owner = Vec::new();
    let mut failures = Vec::new();
    let mut take_flows = |part: &mut Vec<(Owner, Compiled)>, desired: &mut DesiredFlows| {
        for (owner, c) in part.iter_mut() {
            desired.replace(*owner, std::mem::take(&mut c.flows));
            failures.extend(c.failure.iter().cloned());
        }
    };
    // In batches, each put in the table as soon as it is compiled: the compiled form of
    // every flow never exists beside the table (as in the daemon's full compile).
    // The parsed matches and actions are forgotten between batches: nearly every hit is
    // an lflow's match on its other datapaths, within its batch (480,168 of 480,584 hits
    // stay at ovn-kubernetes scale), and the cache would otherwise grow to a quarter of
    // the peak memory.
    let lflows = sorted_lflows(cx);
    for (i, batch) in lflows.chunks(COMPILE_ALL_BATCH).enumerate() {
        if i > 0 {
            cx.cache.forget_parsed();
        }
        let mut part = compile_lflow_list(cx, batch, threads);
        take_flows(&mut part, &mut desired);
        per_owner.append(&mut part);
    }
    let n_lflows = per_owner.len();
    let mut others = Vec::new();
    compile_other_owners(cx, &mut others, true);
    compile_port_security(cx, &mut others, None);
    take_flows(&mut others, &mut desired);
    per_owner.append(&mut others);
    let duplicates = desired.duplicates();
    let too_many_flows = failures
        .iter()
        .filter(|f| matches!(f.error, LflowError::TooManyFlows { .. }))
        .count();
    CompileReport {
        desired,
        failures,
        per_owner,
        lflows: n_lflows,
        cache_hits: cx.cache.hits.load(Relaxed),
        cache_misses: cx.cache.misses.load(Relaxed),
        cache_entries: cx.cache.len(),
        duplicates,
        too_many_flows,
    }
}

/// Every owner's flows (logical flows first, in uuid order, then the other rows in uuid
/// order), and how many logical flows there were.
pub fn compile_owners(cx: &Context<'_>, threads: usize) -> (Vec<(Owner, Compiled)>, usize) {
    let mut per_owner = compile_lflows(cx, threads);
    let n_lflows = per_owner.len();
    compile_other_owners(cx, &mut per_owner, true);
    compile_port_security(cx, &mut per_owner, None);
    (per_owner, n_lflows)
}

/// The flows of the owners that are neither logical flows nor ports (MAC bindings, FDB
/// entries, and with `lb_hairpin` load-balancer hairpin), appended to `per_owner` in kind
/// then uuid order.
pub fn compile_other_owners(
    cx: &Context<'_>,
    per_owner: &mut Vec<(Owner, Compiled)>,
    lb_hairpin: bool,
) {
    let replica = cx.view.replica();
    for_each_row::<MacBinding>(replica, per_owner, |u, r| {
        (Owner::MacBinding(*u), mac_binding(u, r, cx))
    });
    for_each_row::<StaticMacBinding>(replica, per_owner, |u, r| {
        (Owner::StaticMacBinding(*u), static_mac_binding(u, r, cx))
    });
    for_each_row::<Fdb>(replica, per_owner, |u, r| (Owner::Fdb(*u), fdb(u, r, cx)));
    if lb_hairpin {
        for_each_row::<LoadBalancer>(replica, per_owner, |u, r| {
            (Owner::LbHairpin(*u), self::lb_hairpin(u, r, cx))
        });
    }
}

/// The port-security flows of every port binding, or of those in `only` (sorted uuids;
/// rows that are gone give nothing).
pub fn compile_port_security(
    cx: &Context<'_>,
    per_owner: &mut Vec<(Owner, Compiled)>,
    only: Option<&[Uuid]>,
) {
    let replica = cx.view.replica();
    let Some(only) = only else {
        for_each_row::<PortBinding>(replica, per_owner, |u, r| {
            (Owner::PortSecurity(*u), port_security(u, r, cx))
        });
        return;
    };
    let Some(t) = replica.table::<PortBinding>() else {
        return;
    };
    for u in only {
        let Some(r) = t.get(u) else { continue };
        let c = port_security(u, r, cx);
        if !c.flows.is_empty() || c.failure.is_some() {
            per_owner.push((Owner::PortSecurity(*u), c));
        }
    }
}

/// Logical flows per batch of [`compile_all`].
const COMPILE_ALL_BATCH: usize = 4096;

/// The logical flows of the replica in uuid order (the merged table must not depend on
/// hash order).
fn sorted_lflows<'a>(cx: &Context<'a>) -> Vec<(&'a Uuid, &'a LogicalFlow)> {
    let mut lflows: Vec<(&Uuid, &LogicalFlow)> = cx
        .view
        .replica()
        .table::<LogicalFlow>()
        .map(|t| t.iter().collect())
        .unwrap_or_default();
    lflows.sort_unstable_by_key(|(u, _)| **u);
    lflows
}

/// Every logical flow's flows, in uuid order, compiled on `threads` threads.
pub fn compile_lflows(cx: &Context<'_>, threads: usize) -> Vec<(Owner, Compiled)> {
    compile_lflow_list(cx, &sorted_lflows(cx), threads)
}

/// The flows of `lflows`, in their order, compiled on up to `threads` threads (one for a
/// short list: starting threads would cost more).
pub fn compile_lflow_list(
    cx: &Context<'_>,
    lflows: &[(&Uuid, &LogicalFlow)],
    threads: usize,
) -> Vec<(Owner, Compiled)> {
    const CHUNK: usize = 64;
    let threads = threads.clamp(1, lflows.len().div_ceil(CHUNK).max(1));
    if threads == 1 {
        return lflows
            .iter()
            .map(|(u, lf)| (Owner::Lflow(**u), compile_logical_flow(u, lf, cx)))
            .collect();
    }
    // Threads take chunks from a shared cursor (the costly lflows are not evenly spread),
    // then the results are put back in uuid order.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut parts: Vec<(usize, Vec<(Owner, Compiled)>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let start = next.fetch_add(CHUNK, Relaxed);
                        if start >= lflows.len() {
                            break;
                        }
                        let part = &lflows[start..(start + CHUNK).min(lflows.len())];
                        let done = part
                            .iter()
                            .map(|(u, lf)| (Owner::Lflow(**u), compile_logical_flow(u, lf, cx)))
                            .collect();
                        mine.push((start, done));
                    }
                    mine
                })
            })
            .collect();
        // Each lflow's compile catches its own panics, so a thread cannot die with results.
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    parts.sort_unstable_by_key(|(start, _)| *start);
    parts.into_iter().flat_map(|(_, v)| v).collect()
}

impl CompileReport {
    /// The flows the switch gets, in the order they were first wanted.
    pub fn flows(&self) -> Vec<OfFlow> {
        self.desired.iter().map(|f| f.to_flow()).collect()
    }
}

/// Rows in uuid order, so that the output does not depend on hash order.
fn for_each_row<T: sbclient::Row>(
    replica: &sbclient::Replica,
    out: &mut Vec<(Owner, Compiled)>,
    f: impl Fn(&Uuid, &T) -> (Owner, Compiled),
) {
    let Some(t) = replica.table::<T>() else {
        return;
    };
    let mut rows: Vec<(&Uuid, &T)> = t.iter().collect();
    rows.sort_by_key(|(u, _)| **u);
    for (u, r) in rows {
        let (owner, c) = f(u, r);
        if !c.flows.is_empty() || c.failure.is_some() {
            out.push((owner, c));
        }
    }
}

/// Counts by owner kind, for `--stats`.
pub fn owner_counts(report: &CompileReport) -> HashMap<&'static str, usize> {
    let mut m = HashMap::new();
    for (o, _) in &report.per_owner {
        let k = match o {
            Owner::Lflow(_) => "lflow",
            Owner::MacBinding(_) | Owner::StaticMacBinding(_) => "mac_binding",
            Owner::Fdb(_) => "fdb",
            Owner::PortSecurity(_) => "port_security",
            Owner::LbHairpin(_) => "lb_hairpin",
            Owner::PhysicalPort(_)
            | Owner::PhysicalMcGroup(_)
            | Owner::TunnelIn(_)
            | Owner::ChassisMac(_)
            | Owner::PhysicalDefaults => "physical",
        };
        *m.entry(k).or_default() += 1;
    }
    m
}
