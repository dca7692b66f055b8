//! `ovn-agent compile`: the OpenFlow flows this chassis would install for the logical flows
//! of a Southbound snapshot.

use std::collections::HashMap;

use crate::lflow::actions::{parse_actions, ParseOptions, Pipeline};
use crate::lflow::flows::{
    compile_lflow, merge_conjunctions, ChassisView, DpSpec, LflowSpec, MatchCache, OfFlow,
};
use crate::lflow::layout::TableLayout;
use crate::lflow::LflowError;
use crate::sbdata::{DatapathRow, LflowRow, SbData};
pub use crate::view::{Ids, SbView};

/// Command line of `ovn-agent`.
#[derive(clap::Parser, Debug)]
#[command(name = "ovn-agent", about = "Rust replacement for ovn-controller")]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Command,
}

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Print the OpenFlow flows this chassis would install for the SB logical flows.
    Compile(CompileArgs),
}

#[derive(clap::Args, Debug)]
pub struct CompileArgs {
    /// Southbound database remote (`unix:PATH`, `tcp:IP:PORT`), or files holding
    /// `ovn-sbctl --format=json list TABLE` / `ovsdb-client -f json dump` output (repeatable).
    #[arg(long, required = true)]
    pub sb: Vec<String>,
    /// Chassis name.
    #[arg(long)]
    pub chassis: String,
    /// Only the flows of this datapath tunnel key (chassis-wide flows such as the LB
    /// hairpin tables are left out).
    #[arg(long)]
    pub datapath: Option<u32>,
    /// `classic` or `ovn-23.03`.
    #[arg(long, default_value = "classic")]
    pub table_layout: String,
    /// `ovs-ofctl dump-groups` output whose group ids are reused for identical groups.
    #[arg(long)]
    pub groups: Option<String>,
    /// Named meter id, `NAME=ID` (repeatable).
    #[arg(long)]
    pub meter: Vec<String>,
    /// Maximum OpenFlow flows per logical flow.
    #[arg(long, default_value_t = crate::lflow::DEFAULT_FLOW_LIMIT)]
    pub flow_limit: usize,
    /// Print counters (lflows, flows, failures, cache, duplicates) to stderr at the end.
    #[arg(long)]
    pub stats: bool,
    /// Sort the flows by table, then priority (highest first), then text.
    #[arg(long)]
    pub sort: bool,
    /// Print matches as OVS stores them after an OpenFlow 1.5 flow_mod (VLAN TCI as OXM
    /// VLAN_VID/VLAN_PCP), i.e. as `ovs-ofctl dump-flows` will show them.
    #[arg(long)]
    pub as_installed: bool,
    /// Compiler threads.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
}

/// A logical flow that could not be compiled.
#[derive(Debug, Clone)]
pub struct Failure {
    pub uuid: String,
    pub pipeline: String,
    pub table_id: u32,
    pub error: LflowError,
    pub text: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pos = self
            .error
            .position()
            .map(|p| format!(" at position {p}"))
            .unwrap_or_default();
        write!(
            f,
            "lflow {} ({} table {}): {}{pos} in {:?}",
            self.uuid, self.pipeline, self.table_id, self.error, self.text
        )
    }
}

/// Flows of every local logical flow, and the failures.
pub struct CompileReport {
    pub flows: Vec<OfFlow>,
    pub failures: Vec<Failure>,
    /// (lflow uuid, flows) in input order, before conjunction merging.
    pub per_lflow: Vec<(String, Vec<OfFlow>)>,
    /// Match-cache hits and misses (a miss parses, annotates and simplifies).
    pub cache_hits: usize,
    pub cache_misses: usize,
    pub cache_entries: usize,
    /// Flows dropped because an earlier lflow already produced the same table, priority
    /// and match (ofctrl keeps the first).
    pub duplicates: usize,
    /// Lflows refused because they expand to more flows than the limit.
    pub too_many_flows: usize,
}

/// One lflow's uuid, flows and failure.
type LflowResult = (String, Vec<OfFlow>, Option<Failure>);

/// Compiles one logical flow for every local datapath it applies to.
#[allow(clippy::too_many_arguments)]
fn compile_one(
    lf: &LflowRow,
    sb: &SbData,
    dps: &HashMap<&str, &DatapathRow>,
    view: &SbView<'_>,
    layout: &TableLayout,
    cache: &MatchCache,
    only_dp: Option<u32>,
    limit: usize,
) -> (Vec<OfFlow>, Option<Failure>) {
    let members: Vec<String> = match (&lf.datapath, &lf.dp_group) {
        (Some(d), _) => vec![d.clone()],
        (None, Some(g)) => sb.dp_groups.get(g).cloned().unwrap_or_default(),
        _ => vec![],
    };
    let pipeline = if lf.pipeline == "egress" {
        Pipeline::Egress
    } else {
        Pipeline::Ingress
    };
    let controller_meter = lf
        .controller_meter
        .as_deref()
        .and_then(|m| view.named_meter(m));
    let spec = LflowSpec {
        uuid: &lf.uuid,
        pipeline,
        table_id: lf.table_id,
        priority: lf.priority,
        match_text: &lf.match_text,
        actions: &lf.actions,
        controller_meter,
    };
    let mut flows = Vec::new();
    for m in &members {
        let Some(dp) = dps.get(m.as_str()) else {
            continue;
        };
        if !view.local_datapaths.contains(m) || only_dp.is_some_and(|k| k != dp.key) {
            continue;
        }
        if let Some(p) = &lf.in_out_port {
            if !view
                .port_key(&dp.uuid, p)
                .is_some_and(|k| view.is_related(dp.key, k))
            {
                continue;
            }
        }
        let dps = DpSpec {
            uuid: &dp.uuid,
            key: dp.key,
            is_switch: !dp.is_router,
            snat_ct_zone: dp.snat_ct_zone,
        };
        match compile_lflow(&spec, &dps, view, layout, cache, limit) {
            Ok(f) => flows.extend(f),
            Err(error) => {
                let actions_bad = matches!(error, LflowError::InActions(_))
                    || parse_actions(
                        &lf.actions,
                        ParseOptions {
                            pipeline,
                            table: lf.table_id,
                            n_tables: 29,
                        },
                    )
                    .is_err();
                let text = if actions_bad {
                    lf.actions.clone()
                } else {
                    lf.match_text.clone()
                };
                let f = Failure {
                    uuid: lf.uuid.clone(),
                    pipeline: lf.pipeline.clone(),
                    table_id: lf.table_id,
                    error,
                    text,
                };
                return (flows, Some(f));
            }
        }
    }
    (flows, None)
}

/// Compiles every logical flow of `sb` for the local datapaths of `view`, on `threads`
/// threads (chunks of lflows; the match cache is shared).
pub fn compile_all_threads(
    sb: &SbData,
    view: &SbView<'_>,
    layout: &TableLayout,
    only_dp: Option<u32>,
    limit: usize,
    threads: usize,
) -> CompileReport {
    let cache = MatchCache::default();
    let dps: HashMap<&str, &DatapathRow> =
        sb.datapaths.iter().map(|d| (d.uuid.as_str(), d)).collect();
    let threads = threads.max(1);
    let chunk = sb.lflows.len().div_ceil(threads).max(1);
    let results: Vec<Vec<LflowResult>> = std::thread::scope(|s| {
        let handles: Vec<_> = sb
            .lflows
            .chunks(chunk)
            .map(|part| {
                let (cache, dps) = (&cache, &dps);
                s.spawn(move || {
                    part.iter()
                        .map(|lf| {
                            let (f, e) =
                                compile_one(lf, sb, dps, view, layout, cache, only_dp, limit);
                            (lf.uuid.clone(), f, e)
                        })
                        .collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut failures = Vec::new();
    let mut per_lflow = Vec::new();
    for (uuid, flows, failure) in results.into_iter().flatten() {
        failures.extend(failure);
        per_lflow.push((uuid, flows));
    }
    let total: usize = per_lflow.iter().map(|(_, f)| f.len()).sum();
    let mut all: Vec<OfFlow> = Vec::with_capacity(total);
    for (_, f) in &per_lflow {
        all.extend(f.iter().cloned());
    }
    all.extend(port_security_flows(sb, view, layout, only_dp));
    all.extend(neighbor_flows(sb, view, layout, only_dp));
    if only_dp.is_none() {
        // Hairpin flows are chassis-wide (no datapath match).
        all.extend(hairpin_flows(sb, view, layout));
    }
    let (flows, duplicates) = merge_conjunctions(all);
    let too_many_flows = failures
        .iter()
        .filter(|f| matches!(f.error, LflowError::TooManyFlows { .. }))
        .count();
    CompileReport {
        flows,
        duplicates,
        too_many_flows,
        failures,
        per_lflow,
        cache_hits: cache.hits.load(std::sync::atomic::Ordering::Relaxed),
        cache_misses: cache.misses.load(std::sync::atomic::Ordering::Relaxed),
        cache_entries: cache.len(),
    }
}

/// Tables 73-75 for the ports bound here that have port security.
pub fn port_security_flows(
    sb: &SbData,
    view: &SbView<'_>,
    layout: &TableLayout,
    only_dp: Option<u32>,
) -> Vec<OfFlow> {
    let dp_key: HashMap<&str, u32> = sb
        .datapaths
        .iter()
        .map(|d| (d.uuid.as_str(), d.key))
        .collect();
    let mut out = Vec::new();
    for pb in sb
        .port_bindings
        .iter()
        .filter(|p| !p.port_security.is_empty() && view.bound_here(p))
    {
        let Some(&dk) = dp_key.get(pb.datapath.as_str()) else {
            continue;
        };
        if only_dp.is_some_and(|k| k != dk) {
            continue;
        }
        let entries: Vec<_> = pb
            .port_security
            .iter()
            .filter_map(|e| crate::portsec::parse_port_security(e))
            .collect();
        let cookie = u32::from_str_radix(pb.uuid.get(..8).unwrap_or("0"), 16).unwrap_or(0);
        out.extend(crate::portsec::port_security_flows(
            cookie, dk, pb.key, &entries, layout,
        ));
    }
    out
}

/// Tables 66/67 (MAC bindings) and 71/72 (FDB) for local datapaths.
pub fn neighbor_flows(
    sb: &SbData,
    view: &SbView<'_>,
    layout: &TableLayout,
    only_dp: Option<u32>,
) -> Vec<OfFlow> {
    let dp_by_uuid: HashMap<&str, &DatapathRow> =
        sb.datapaths.iter().map(|d| (d.uuid.as_str(), d)).collect();
    let local_keys: std::collections::HashSet<u32> = view
        .local_datapaths
        .iter()
        .filter_map(|u| dp_by_uuid.get(u.as_str()).map(|d| d.key))
        .collect();
    let wanted = |k: u32| local_keys.contains(&k) && only_dp.is_none_or(|d| d == k);
    let pb_by_name: HashMap<&str, &crate::sbdata::PortBindingRow> = sb
        .port_bindings
        .iter()
        .map(|p| (p.name.as_str(), p))
        .collect();
    let mut out = Vec::new();
    for (uuid, port, ip, mac, prio) in &sb.mac_bindings {
        let Some(pb) = pb_by_name.get(port.as_str()) else {
            continue;
        };
        let Some(dp) = dp_by_uuid.get(pb.datapath.as_str()) else {
            continue;
        };
        if wanted(dp.key) {
            out.extend(
                crate::neighbor::mac_binding_flows(uuid, dp.key, pb.key, ip, mac, *prio, layout)
                    .unwrap_or_default(),
            );
        }
    }
    for (uuid, mac, dp_key, port_key) in &sb.fdbs {
        if wanted(*dp_key) {
            out.extend(
                crate::neighbor::fdb_flows(uuid, *dp_key, *port_key, mac, layout)
                    .unwrap_or_default(),
            );
        }
    }
    out
}

/// Tables 68 and 70 for the load balancers that apply to a local logical switch.
pub fn hairpin_flows(sb: &SbData, view: &SbView<'_>, layout: &TableLayout) -> Vec<OfFlow> {
    use crate::hairpin::{parse_endpoint, HairpinLb};
    use crate::lflow::template::expand_templates;
    let dps: HashMap<&str, &DatapathRow> =
        sb.datapaths.iter().map(|d| (d.uuid.as_str(), d)).collect();
    let vars = crate::lflow::flows::ChassisView::template_vars(view);
    let mut out = Vec::new();
    for lb in &sb.load_balancers {
        let mut members: Vec<&String> = lb.datapaths.iter().collect();
        if let Some(g) = lb.datapath_group.as_ref().and_then(|g| sb.dp_groups.get(g)) {
            members.extend(g.iter());
        }
        let local: Vec<u32> = members
            .iter()
            .filter(|d| view.local_datapaths.contains(d.as_str()))
            .filter_map(|d| dps.get(d.as_str()))
            .filter(|d| !d.is_router)
            .map(|d| d.key)
            .collect();
        if local.is_empty() {
            continue;
        }
        let vips = lb
            .vips
            .iter()
            .filter_map(|(k, v)| {
                let vip = parse_endpoint(&expand_templates(k, vars))?;
                let backends = expand_templates(v, vars)
                    .split(',')
                    .filter(|b| !b.trim().is_empty())
                    .filter_map(parse_endpoint)
                    .collect();
                Some((vip, backends))
            })
            .collect();
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
            cookie: u32::from_str_radix(lb.uuid.get(..8).unwrap_or("0"), 16).unwrap_or(0),
            proto: match lb.protocol.as_deref() {
                Some("udp") => 17,
                Some("sctp") => 132,
                _ => 6,
            },
            vips,
            snat_v4: snat.iter().find_map(|a| {
                if let std::net::IpAddr::V4(v) = a {
                    Some(*v)
                } else {
                    None
                }
            }),
            snat_v6: snat.iter().find_map(|a| {
                if let std::net::IpAddr::V6(v) = a {
                    Some(*v)
                } else {
                    None
                }
            }),
            local_dp_keys: local,
        };
        out.extend(crate::hairpin::hairpin_flows(&h, layout));
    }
    out
}

/// Single-threaded [`compile_all_threads`].
pub fn compile_all(
    sb: &SbData,
    view: &SbView<'_>,
    layout: &TableLayout,
    only_dp: Option<u32>,
    limit: usize,
) -> CompileReport {
    compile_all_threads(sb, view, layout, only_dp, limit, 1)
}

fn merge(into: &mut SbData, from: SbData) {
    into.load_balancers.extend(from.load_balancers);
    into.mac_bindings.extend(from.mac_bindings);
    into.fdbs.extend(from.fdbs);
    into.lflows.extend(from.lflows);
    into.dp_groups.extend(from.dp_groups);
    into.datapaths.extend(from.datapaths);
    into.port_bindings.extend(from.port_bindings);
    into.mcast_groups.extend(from.mcast_groups);
    into.address_sets.extend(from.address_sets);
    into.port_groups.extend(from.port_groups);
    into.chassis.extend(from.chassis);
    into.template_vars.extend(from.template_vars);
    into.meters.extend(from.meters);
    into.ha_groups.extend(from.ha_groups);
    into.ha_chassis.extend(from.ha_chassis);
    for (into, from) in [
        (&mut into.dhcp_options, from.dhcp_options),
        (&mut into.dhcpv6_options, from.dhcpv6_options),
    ] {
        if let Some(names) = from {
            into.get_or_insert_with(Default::default).extend(names);
        }
    }
}

/// Runs the command line; returns the process exit status.
pub fn run(cli: Cli) -> anyhow::Result<i32> {
    let Command::Compile(args) = cli.cmd;
    let layout = TableLayout::by_name(&args.table_layout).ok_or_else(|| {
        anyhow::anyhow!(
            "unknown table layout {:?} (classic, ovn-23.03)",
            args.table_layout
        )
    })?;
    let mut sb = SbData::default();
    for f in &args.sb {
        if crate::sbfetch::is_remote(f) {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let fetched =
                rt.block_on(crate::sbfetch::fetch(f, std::time::Duration::from_secs(10)))?;
            merge(&mut sb, fetched);
            continue;
        }
        let text = std::fs::read_to_string(f).map_err(|e| anyhow::anyhow!("{f}: {e}"))?;
        sb.load_str(&text)
            .map_err(|e| anyhow::anyhow!("{f}: {e}"))?;
    }
    let view = SbView::new(&sb, &args.chassis);
    if !view.has_chassis() {
        eprintln!(
            "warning: chassis {:?} not found in the Chassis table; no datapath is local",
            args.chassis
        );
    }
    if let Some(g) = &args.groups {
        view.seed_groups(&std::fs::read_to_string(g)?);
    }
    for m in &args.meter {
        let (n, id) = m
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("--meter wants NAME=ID"))?;
        view.seed_named_meter(n, id.parse()?);
    }
    let report = compile_all_threads(
        &sb,
        &view,
        &layout,
        args.datapath,
        args.flow_limit,
        args.threads,
    );
    for f in &report.failures {
        eprintln!("{f}");
    }
    let canonical: Vec<OfFlow>;
    let mut flows: Vec<&OfFlow> = if args.as_installed {
        canonical = report
            .flows
            .iter()
            .map(|f| OfFlow {
                m: f.m.canonical_of15(),
                ..f.clone()
            })
            .collect();
        canonical.iter().collect()
    } else {
        report.flows.iter().collect()
    };
    if args.sort {
        flows.sort_by_cached_key(|f| (f.table, std::cmp::Reverse(f.priority), f.to_string()));
    }
    let mut out = String::new();
    for f in flows {
        out.push_str(&f.to_string());
        out.push('\n');
    }
    print!("{out}");
    if args.stats {
        eprintln!(
            "lflows {} failed {} (over the flow limit {}), flows {}, duplicates dropped {}, match cache {} entries / {} hits",
            report.per_lflow.len(),
            report.failures.len(),
            report.too_many_flows,
            report.flows.len(),
            report.duplicates,
            report.cache_entries,
            report.cache_hits
        );
    }
    let ok = report.per_lflow.len() > report.failures.len() || report.failures.is_empty();
    Ok(i32::from(!ok))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_keeps_an_empty_dhcp_catalogue() {
        // A live SB with empty DHCP_Options makes every option unknown (as the real
        // controller refuses put_dhcp_opts then); losing the catalogue would accept them.
        let mut into = SbData::default();
        let from = SbData {
            dhcp_options: Some(std::collections::HashSet::new()),
            ..SbData::default()
        };
        merge(&mut into, from);
        assert_eq!(into.dhcp_options, Some(std::collections::HashSet::new()));
        assert_eq!(into.dhcpv6_options, None);
    }
}
