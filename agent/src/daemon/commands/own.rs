//! The agent's own debugging commands (listed by `list-commands` beside ovn-controller's).

use std::fmt::Write as _;

use sbclient::ovn_sb::{LogicalFlow, PortBinding};
use sbclient::Uuid;

use super::Outcome;
use crate::engine::core::Engine;
use crate::owner::Owner;

/// Answers `command` if it is one of the agent's own.
pub(super) fn handle(engine: &Engine, command: &str, args: &[String]) -> Option<Outcome> {
    let text = match command {
        "debug/engine-stats" => Ok(engine_stats(engine)),
        "debug/monitor-conditions" => Ok(monitor_conditions(engine)),
        "debug/table-layout" => Ok(table_layout(engine)),
        "lflow/show" => lflow_show(engine, &args[0]),
        "port/flows" => port_flows(engine, &args[0]),
        "tunnel/pkt-mark" => Ok(tunnel_pkt_mark(engine)),
        _ => return None,
    };
    Some(Outcome::Reply(text))
}

/// Everything the engine counts: runs, puts, fallbacks to a full recompute and why, bad
/// input skipped.
fn engine_stats(engine: &Engine) -> String {
    let s = &engine.stats;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "runs {}, full recomputes {}, incremental lflows {}, puts {} ({} failed), flow mods {}, \
         refused flows {}, bad rows {}, condition failures {}, missing columns {} ({} required)",
        s.runs,
        s.full_recomputes,
        s.incremental_lflows,
        s.puts,
        s.put_failures,
        s.flow_mods,
        s.rejected_flows,
        s.bad_rows,
        s.condition_failures,
        s.missing_columns,
        s.missing_required_columns
    );
    let replica = engine.inputs.sb.replica.stats();
    let _ = writeln!(
        out,
        "southbound rows skipped {}, bad messages {}, bad-input log lines suppressed {}",
        replica.rows_skipped,
        replica.bad_messages,
        crate::vlog::limits::suppressed_total()
    );
    let _ = writeln!(
        out,
        "dependency runs {} ({} lflows recompiled for changed ports, port groups or datapaths), {} with the physical flows of the touched ports only",
        s.dependency_runs, s.dependency_lflows, s.scoped_physical_runs
    );
    let _ = writeln!(
        out,
        "incremental runs compiled in batches {} (more lflows than one compile batch)",
        s.batched_lflow_runs
    );
    let _ = writeln!(
        out,
        "address-set changes made in place {}, compiled again instead {}",
        s.set_deltas, s.set_delta_fallbacks
    );
    for (why, n) in &s.recompute_reasons {
        let _ = writeln!(out, "full recompute because {why}: {n}");
    }
    let _ = writeln!(
        out,
        "desired flows {}, owners {}, failing owners {}",
        engine.flows.len(),
        engine.flows.owners_count(),
        engine.failures.len()
    );
    out
}

/// The monitor conditions last asked of the Southbound server, one table per line.
fn monitor_conditions(engine: &Engine) -> String {
    let (conditions, requested, acked) = engine.requested_conditions();
    let mut out = format!("condition changes requested {requested}, acknowledged {acked}\n");
    for (table, cond) in conditions {
        let json = serde_json::to_string(cond).unwrap_or_else(|e| format!("({e})"));
        let _ = writeln!(out, "{table}: {json}");
    }
    out
}

/// The OpenFlow table numbers in use.
fn table_layout(engine: &Engine) -> String {
    let l = engine.layout();
    let last = |base: u8, len: u8| base + len.saturating_sub(1);
    let mut out = format!("layout: {}\n", l.name());
    for (what, table) in [
        (
            "ingress pipeline",
            format!("{}-{}", l.ingress, last(l.ingress, l.ingress_len)),
        ),
        ("output entry", l.output_entry.to_string()),
        ("large packet processing", l.large_pkt_process.to_string()),
        ("remote output", l.remote_output.to_string()),
        ("local output", l.local_output.to_string()),
        ("check loopback", l.check_loopback.to_string()),
        (
            "egress pipeline",
            format!("{}-{}", l.egress, last(l.egress, l.egress_len)),
        ),
        ("save inport", l.save_inport.to_string()),
        ("log to physical", l.log_to_phy.to_string()),
        ("mac binding", l.mac_binding.to_string()),
        ("mac lookup", l.mac_lookup.to_string()),
        ("check lb hairpin", l.chk_lb_hairpin.to_string()),
        ("check lb hairpin reply", l.chk_lb_hairpin_reply.to_string()),
        ("ct snat hairpin", l.ct_snat_hairpin.to_string()),
        ("get fdb", l.get_fdb.to_string()),
        ("lookup fdb", l.lookup_fdb.to_string()),
        ("check in port security", l.chk_in_port_sec.to_string()),
        (
            "check in port security nd",
            l.chk_in_port_sec_nd.to_string(),
        ),
        ("check out port security", l.chk_out_port_sec.to_string()),
        ("ecmp next hop mac", l.ecmp_nh_mac.to_string()),
        ("ecmp next hop", l.ecmp_nh.to_string()),
        ("check lb affinity", l.chk_lb_affinity.to_string()),
    ] {
        let _ = writeln!(out, "{what}: {table}");
    }
    out
}

/// `tunnel/pkt-mark`: whether pkt.mark is carried across the tunnel to each remote chassis.
fn tunnel_pkt_mark(engine: &Engine) -> String {
    let key = crate::engine::config::TUNNEL_PKT_MARK;
    let on = engine.cfg.as_ref().is_some_and(|c| c.tunnel_pkt_mark);
    let rt = &engine.runtime;
    let mut out = match (on, rt.mark_field) {
        (false, _) => format!("this chassis: off (external_ids:{key} is not \"true\")\n"),
        (true, None) => {
            "this chassis: on, but the switch has no tun_metadata field for the option\n".to_owned()
        }
        (true, Some(n)) => {
            format!("this chassis: on (Geneve option class 0x0102 type 0x01 in tun_metadata{n})\n")
        }
    };
    for chassis in rt.tunnels.keys() {
        let status = if rt.pkt_mark_peers.contains(chassis) {
            "carried".to_owned()
        } else if on {
            format!("not carried ({chassis} does not advertise {key})")
        } else {
            "not carried".to_owned()
        };
        let _ = writeln!(out, "{chassis}: {status}");
    }
    out
}

/// The Logical_Flow whose uuid is `text` or starts with it (unique).
fn find_lflow<'a>(engine: &'a Engine, text: &str) -> Result<(Uuid, &'a LogicalFlow), String> {
    let table = engine
        .inputs
        .sb
        .replica
        .table::<LogicalFlow>()
        .ok_or_else(|| "no logical flows".to_owned())?;
    let wanted = text.to_ascii_lowercase();
    let mut found = table
        .iter()
        .filter(|(u, _)| u.to_string().starts_with(&wanted));
    match (found.next(), found.next()) {
        (Some((u, lf)), None) => Ok((*u, lf)),
        (None, _) => Err(format!("no logical flow {text} (on this chassis' view)")),
        (Some(_), Some(_)) => Err(format!("{text} names more than one logical flow")),
    }
}

/// `lflow/show UUID`: the logical flow, why it was rejected if it was, and the OpenFlow
/// flows it compiled to, in `ovs-ofctl` syntax.
fn lflow_show(engine: &Engine, text: &str) -> Result<String, String> {
    let (uuid, lf) = find_lflow(engine, text)?;
    let mut out = String::new();
    let dp = lf
        .logical_datapath
        .map(|d| format!("datapath {d}"))
        .or_else(|| lf.logical_dp_group.map(|g| format!("datapath group {g}")))
        .unwrap_or_else(|| "no datapath".to_owned());
    let stage = lf.external_ids.get("stage-name").map_or("", String::as_str);
    let _ = writeln!(
        out,
        "lflow {uuid}: {dp}, {} table {} ({stage}), priority {}",
        lf.pipeline, lf.table_id, lf.priority
    );
    let _ = writeln!(out, "  match: {}", lf.match_);
    let _ = writeln!(out, "  actions: {}", lf.actions);
    let owner = Owner::Lflow(uuid);
    if let Some(why) = engine.failures.get(&owner) {
        let _ = writeln!(out, "  rejected: {why}");
    }
    push_flows(&mut out, engine, owner);
    Ok(out)
}

fn push_flows(out: &mut String, engine: &Engine, owner: Owner) {
    let mut flows: Vec<String> = engine
        .flows
        .flows_of(owner)
        .iter()
        .map(ToString::to_string)
        .collect();
    flows.sort();
    let _ = writeln!(out, "{owner}: {} OpenFlow flows", flows.len());
    for f in flows {
        let _ = writeln!(out, "  {f}");
    }
}

/// `port/flows NAME`: the physical and port-security flows of one logical port.
fn port_flows(engine: &Engine, name: &str) -> Result<String, String> {
    let (uuid, pb) = engine
        .inputs
        .sb
        .replica
        .table::<PortBinding>()
        .and_then(|t| t.iter().find(|(_, p)| p.logical_port == name))
        .ok_or_else(|| format!("no port binding {name} (on this chassis' view)"))?;
    let mut out = format!(
        "port {name}: Port_Binding {uuid}, tunnel key {}, {}\n",
        pb.tunnel_key,
        match engine.runtime.bound.get(uuid) {
            Some(kind) => format!("bound here ({kind:?})"),
            None => "not bound here".to_owned(),
        }
    );
    for owner in [Owner::PhysicalPort(*uuid), Owner::PortSecurity(*uuid)] {
        if let Some(why) = engine.failures.get(&owner) {
            let _ = writeln!(out, "{owner} rejected: {why}");
        }
        push_flows(&mut out, engine, owner);
    }
    Ok(out)
}

/// `pinctrl/show-stats`: packet-ins received, handled, skipped and rate-limited per
/// opcode; buffered packets and MAC bindings.
pub(super) fn handle_pinctrl(control: &super::Control, command: &str) -> Option<Outcome> {
    (command == "pinctrl/show-stats").then(|| {
        Outcome::Reply(Ok(control
            .pinctrl
            .as_ref()
            .map_or_else(String::new, |s| s.show())))
    })
}
