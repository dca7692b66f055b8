//! ovn-controller 23.03.1's commands, with its output text (reference §8; the texts and
//! formats come from its sources and from its replies in the same test run).

use std::fmt::Write as _;
use std::time::Duration;

use sbclient::ovn_sb::{ChassisTemplateVar, PortBinding};

use super::{Control, Outcome};
use crate::coverage;
use crate::engine::core::Engine;
use std::collections::BTreeMap;

/// Answers `command` if it is one of ovn-controller's.
pub(super) fn handle(
    engine: &mut Engine,
    control: &mut Control,
    command: &str,
    args: &[String],
) -> Option<Outcome> {
    let reply = |r: Result<String, String>| Some(Outcome::Reply(r));
    match command {
        // As ovn-controller: any argument other than --restart is an exit that cleans up.
        "exit" => Some(Outcome::Exit {
            restart: args.first().is_some_and(|a| a == "--restart"),
        }),
        "connection-status" => reply(Ok(engine.sb_status().to_owned())),
        "coverage/show" => reply(Ok(control
            .coverage
            .show(coverage::ALL, &coverage::totals()))),
        "coverage/read-counter" => reply(coverage::read_counter(&args[0])),
        "ct-zone-list" => {
            let mut s = String::new();
            for (name, z) in &engine.zones.by_name {
                let _ = writeln!(s, "{name} {z}");
            }
            reply(Ok(s))
        }
        "debug/pause" => {
            tracing::info!(target: "main", "User triggered execution pause.");
            control.paused = true;
            reply(Ok(String::new()))
        }
        "debug/resume" => {
            tracing::info!(target: "main", "User triggered execution resume.");
            control.paused = false;
            Some(Outcome::RunNow(String::new()))
        }
        "debug/status" => reply(Ok(if control.paused { "paused" } else { "running" }.into())),
        "debug/delay-nb-cfg-report" => reply(delay_nb_cfg_report(engine, &args[0])),
        "debug/dump-local-bindings" => reply(Ok(dump_local_bindings(engine))),
        "debug/dump-lflow-conj-ids" => reply(Ok(dump_conj_ids(engine))),
        "debug/dump-local-template-vars" => reply(Ok(dump_template_vars(engine))),
        "debug/dump-related-ports" => {
            let mut s = String::new();
            for name in engine.related_port_names() {
                let _ = writeln!(s, "{name}");
            }
            reply(Ok(s))
        }
        "debug/dump-peer-ports" => reply(Ok(dump_peer_ports(engine))),
        "debug/dump-local-datapaths" => reply(Ok(dump_local_datapaths(engine))),
        // The start-up grace period during which unwanted patch ports are kept.
        "debug/ignore-startup-delay" => {
            engine.ignore_startup_delay = true;
            reply(Ok(String::new()))
        }
        "group-table-list" => reply(Ok(group_table_list(engine))),
        "tnl/egress_port_range" => reply(Ok(super::tnl_egress_port_range(
            &mut control.tnl_port_range,
            args,
        ))),
        "inject-pkt" => Some(inject_pkt(engine, &args[0])),
        "meter-table-list" => reply(Ok(meter_table_list(engine))),
        "inc-engine/show-stats" => reply(Ok(show_stats(engine, args))),
        "inc-engine/clear-stats" => {
            engine.stats.nodes = crate::engine::core::NodeStats::default();
            reply(Ok(String::new()))
        }
        "inc-engine/compute-log-timeout" => match args[0].parse::<u64>() {
            Ok(ms) => {
                control.compute_log_timeout = Some(Duration::from_millis(ms));
                reply(Ok(String::new()))
            }
            Err(_) => reply(Err("unsigned integer required".into())),
        },
        "recompute" | "inc-engine/recompute" => {
            engine.force_recompute("recompute requested");
            Some(Outcome::RunNow(String::new()))
        }
        "lflow-cache/flush" | "flush-lflow-cache" => {
            tracing::info!(target: "main", "User triggered lflow cache flush.");
            coverage::LFLOW_CACHE_FLUSH.inc();
            engine.force_recompute("lflow cache flushed");
            Some(Outcome::RunNow(String::new()))
        }
        "lflow-cache/show-stats" => reply(Ok(lflow_cache_stats(engine))),
        "memory/show" => reply(Ok(memory_show(engine))),
        "sb-cluster-state-reset" => Some(Outcome::ResetClusterState),
        "stopwatch/show" => reply(control.stopwatches.show(args.first().map(String::as_str))),
        "stopwatch/reset" => {
            control.stopwatches.reset(args.first().map(String::as_str));
            reply(Ok(String::new()))
        }
        _ => None,
    }
}

fn delay_nb_cfg_report(engine: &mut Engine, arg: &str) -> Result<String, String> {
    let seconds: u32 = arg
        .parse()
        .map_err(|_| "unsigned integer required".to_owned())?;
    engine.sb_writes.nb_cfg_delay = Duration::from_secs(u64::from(seconds));
    Ok(if seconds == 0 {
        "no delay for nb_cfg report.".to_owned()
    } else {
        format!("delay nb_cfg report for {seconds} seconds.")
    })
}

/// `inc-engine/show-stats [NODE [STAT]]`.
fn show_stats(engine: &Engine, args: &[String]) -> String {
    let node = args.first().map(String::as_str);
    let stat = args.get(1).map(String::as_str);
    let release = engine.layout().dialect;
    let third = release.engine_third_stat;
    let mut out = String::new();
    for (name, n) in engine.stats.nodes.all() {
        if node.is_some_and(|want| want != name) || release.engine_nodes_gone.contains(&name) {
            continue;
        }
        match stat {
            None => {
                let _ = write!(
                    out,
                    "Node: {name}\n- recompute: {:>12}\n- compute:   {:>12}\n- {:<11}{:>12}\n",
                    n.recompute,
                    n.compute,
                    format!("{third}:"),
                    n.abort
                );
            }
            Some("recompute") => out.push_str(&n.recompute.to_string()),
            Some("compute") => out.push_str(&n.compute.to_string()),
            Some(s) if s == third => out.push_str(&n.abort.to_string()),
            Some(other) => {
                let _ = write!(out, "Invalid stat type : {other}");
            }
        }
        if node.is_some() {
            break;
        }
    }
    out
}

/// `group-table-list`: `<group>: <id>`, sorted by the group's text. ovn-controller names a
/// group by the text its action encoder wrote; the agent names it by its content in
/// `ovs-ofctl` syntax without the id.
fn group_table_list(engine: &Engine) -> String {
    let groups = engine
        .ids
        .groups
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut items: Vec<(String, u32)> = groups
        .iter()
        .map(|(id, key, _)| {
            let name = super::group_names::ovn_group_name(key).unwrap_or_else(|| {
                let text = key.to_string();
                let text = text
                    .split_once(',')
                    .filter(|(first, _)| first.starts_with("group_id="))
                    .map_or(text.clone(), |(_, rest)| rest.to_owned());
                text.replace(",bucket=bucket_id:", ",bucket=bucket_id=")
            });
            (name, id)
        })
        .collect();
    items.sort();
    items.iter().fold(String::new(), |mut out, (name, id)| {
        let _ = writeln!(out, "{name}: {id}");
        out
    })
}

/// `meter-table-list`: `<meter name>: <id>`, sorted by name.
fn meter_table_list(engine: &Engine) -> String {
    let meters = engine
        .ids
        .meters
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut items: Vec<(&String, u32)> = meters.iter().map(|(id, name, _)| (name, id)).collect();
    items.sort();
    items.iter().fold(String::new(), |mut out, (name, id)| {
        let _ = writeln!(out, "{name}: {id}");
        out
    })
}

/// `debug/dump-lflow-conj-ids`.
fn dump_conj_ids(engine: &Engine) -> String {
    let conj = engine
        .ids
        .conj
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut out = String::from("Conjunction IDs allocations:\n");
    let mut count = 0usize;
    for (lflow, dp, start, n) in conj.iter() {
        let _ = writeln!(out, "lflow: {lflow}, dp: {dp}, start: {start}, n: {n}");
        count += n as usize;
    }
    out.push_str("---\n");
    let _ = writeln!(out, "Total {count} IDs used.");
    if count != conj.total() {
        let _ = writeln!(out, "WARNING: mismatch - {} allocated", conj.total());
    }
    out
}

/// `inject-pkt MICROFLOW`: the packet-out goes on the pinctrl connection.
fn inject_pkt(engine: &Engine, microflow: &str) -> Outcome {
    let (Some(cfg), true) = (engine.cfg.as_ref(), engine.runtime.chassis.is_some()) else {
        return Outcome::Reply(Err("ovn-controller not ready.".to_owned()));
    };
    match crate::pinctrl::inject::packet_out(
        microflow,
        &engine.inputs.sb.replica,
        &cfg.system_id,
        &engine.ifaces,
    ) {
        Ok(po) => Outcome::Inject(po),
        Err(e) => Outcome::Reply(Err(e)),
    }
}

/// `debug/dump-local-template-vars`: this chassis' Chassis_Template_Var variables.
fn dump_template_vars(engine: &Engine) -> String {
    let mut out = String::from("Local template vars:\n");
    let name = engine.cfg.as_ref().map_or("", |c| c.system_id.as_str());
    if let Some(vars) = engine
        .inputs
        .sb
        .replica
        .table::<ChassisTemplateVar>()
        .and_then(|t| t.iter().find(|(_, v)| v.chassis == name).map(|(_, v)| v))
    {
        let sorted: std::collections::BTreeMap<_, _> = vars.variables.iter().collect();
        for (k, v) in sorted {
            let _ = writeln!(out, "name: '{k}' value: '{v}'");
        }
    }
    out
}

/// `lflow-cache/show-stats` (see `lflow_cache.rs`).
fn lflow_cache_stats(engine: &Engine) -> String {
    let lflows = engine
        .inputs
        .sb
        .replica
        .table::<sbclient::ovn_sb::LogicalFlow>();
    let compiled = engine.flows.owners_all().filter_map(|o| match o {
        crate::owner::Owner::Lflow(u) => lflows.and_then(|t| t.get(u)),
        _ => None,
    });
    super::lflow_cache::show_stats(compiled)
}

/// `memory/show`: `key:value` pairs, sorted by key, on one line (OVS's memory report).
fn memory_show(engine: &Engine) -> String {
    let cells = |replica: &sbclient::Replica| -> usize {
        replica
            .table_names()
            .map(|t| replica.row_count(t) * replica.columns_of(t).len())
            .sum()
    };
    let groups = engine.ids.groups.lock().map_or(0, |g| g.len());
    let meters = engine.ids.meters.lock().map_or(0, |m| m.len());
    let conj = engine.ids.conj.lock().map_or(0, |c| c.total());
    let mut items = vec![
        (
            "idl-cells-OVN_Southbound".to_owned(),
            cells(&engine.inputs.sb.replica),
        ),
        (
            "idl-cells-Open_vSwitch".to_owned(),
            cells(&engine.inputs.ovs),
        ),
        ("desired-flows".to_owned(), engine.flows.len()),
        ("flow-owners".to_owned(), engine.flows.owners_count()),
        (
            "local_datapaths".to_owned(),
            engine.runtime.local_datapaths.len(),
        ),
        ("ct-zones".to_owned(), engine.zones.by_name.len()),
        ("groups".to_owned(), groups),
        ("meters".to_owned(), meters),
        ("conj-ids".to_owned(), conj),
        ("failing-owners".to_owned(), engine.failures.len()),
    ];
    let m = engine.flows.memory();
    items.extend([
        ("flow-table-entries-bytes".to_owned(), m.entries_bytes),
        ("flow-table-match-bytes".to_owned(), m.match_bytes),
        ("flow-table-action-lists".to_owned(), m.action_lists),
        ("flow-table-action-bytes".to_owned(), m.action_bytes),
    ]);
    if let Some(kib) = crate::compile_cmd::peak_rss_kib() {
        items.push((
            "peak-rss-KB".to_owned(),
            usize::try_from(kib).unwrap_or(usize::MAX),
        ));
    }
    items.sort();
    items
        .iter()
        .map(|(k, v)| format!("{k}:{v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `debug/dump-local-datapaths`: each local datapath's name and kind, in key order
/// (ovn-controller's follow its hash order; a datapath without a name prints as C's
/// printf prints a null string).
fn dump_local_datapaths(engine: &Engine) -> String {
    let dps = engine
        .inputs
        .sb
        .replica
        .table::<sbclient::ovn_sb::DatapathBinding>();
    let mut local: Vec<_> = engine.runtime.local_datapaths.iter().collect();
    local.sort_by_key(|(_, ld)| ld.key);
    let mut out = String::from("Local datapaths:\n");
    for (uuid, ld) in local {
        let name = dps
            .and_then(|t| t.get(uuid))
            .and_then(|d| d.external_ids.get("name"))
            .map_or("(null)", String::as_str);
        let kind = if ld.is_switch { "switch" } else { "router" };
        let _ = writeln!(out, "Datapath: {name}, type: {kind}");
    }
    out
}

/// `debug/dump-peer-ports`: each local datapath's patch ports whose peers are local too,
/// datapaths in key order (ovn-controller's follow its hash order).
fn dump_peer_ports(engine: &Engine) -> String {
    let replica = &engine.inputs.sb.replica;
    let pbs = replica.table::<PortBinding>();
    let dps = replica.table::<sbclient::ovn_sb::DatapathBinding>();
    let name_of = |u: &sbclient::Uuid| {
        pbs.and_then(|t| t.get(u))
            .map_or_else(String::new, |p| p.logical_port.clone())
    };
    let mut local: Vec<_> = engine.runtime.local_datapaths.iter().collect();
    local.sort_by_key(|(_, ld)| ld.key);
    let mut out = String::new();
    for (uuid, ld) in local {
        let dp_name = dps
            .and_then(|t| t.get(uuid))
            .and_then(|d| d.external_ids.get("name"))
            .map_or("unknown", String::as_str);
        for (here, peer) in &ld.peers {
            let _ = writeln!(
                out,
                "dp {dp_name} : local = {}, remote = {}",
                name_of(here),
                name_of(peer)
            );
        }
    }
    out
}

/// The parent a container port names (a VIF type with a non-empty `parent_port`).
fn container_parent(p: &PortBinding) -> Option<&str> {
    p.parent_port
        .as_deref()
        .filter(|parent| p.type_.is_empty() && !parent.is_empty())
}

/// `debug/dump-local-bindings` in ovn-controller's shape.
fn dump_local_bindings(engine: &Engine) -> String {
    let mut out = String::from("Local bindings:\n");
    let Some(pbs) = engine.inputs.sb.replica.table::<PortBinding>() else {
        return out;
    };
    // As ovn-controller keeps them: one per interface with an iface-id here, and one per
    // parent that a container port in the Southbound names, interface or not.
    let mut names: BTreeMap<&str, Option<&crate::engine::binding::LocalIface>> = engine
        .ifaces
        .by_iface_id
        .iter()
        .map(|(id, iface)| (id.as_str(), Some(iface)))
        .collect();
    let mut children: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (_, p) in pbs.iter() {
        if let Some(parent) = container_parent(p) {
            names.entry(parent).or_insert(None);
            children.entry(parent).or_default().push(&p.logical_port);
        }
    }
    for (name, iface) in names {
        let own =
            crate::southbound::port_binding_named(&engine.inputs.sb.replica, name).map(|(_, p)| p);
        // A port whose iface-id-ver the interface does not carry is not its primary.
        let version_matches = |p: &PortBinding| {
            p.options
                .get("iface-id-ver")
                .is_none_or(|want| iface.is_none_or(|i| i.iface_id_ver.as_ref() == Some(want)))
        };
        let primary = own
            .filter(|p| p.type_.is_empty() && container_parent(p).is_none() && version_matches(p));
        let localport = own.filter(|p| p.type_ == "localport");
        let mut children = children.remove(name).unwrap_or_default();
        children.sort_unstable();
        let n = usize::from(primary.is_some() || localport.is_some()) + children.len();
        let _ = writeln!(
            out,
            "name: [{name}], OVS interface name : [{}], num binding lports : [{n}]",
            iface.map_or("NULL", |i| i.name.as_str())
        );
        if n > 0 {
            if let Some(p) = primary {
                let _ = writeln!(out, "primary lport : [{}]", p.logical_port);
            } else if let Some(p) = localport {
                let _ = writeln!(out, "localport lport : [{}]", p.logical_port);
            } else {
                let _ = writeln!(out, "no primary lport");
            }
        }
        for (i, c) in children.iter().enumerate() {
            let _ = writeln!(out, "child lport[{}] : [{c}], type : [CONTAINER]", i + 1);
        }
        let _ = writeln!(out, "----------------------------------------");
    }
    out
}
