//! The control-socket commands the main loop answers from the engine's state (the names,
//! arguments and output text of ovn-controller 23.03.1, reference §8).

use std::fmt::Write as _;

use sbclient::ovn_sb::PortBinding;

use crate::engine::core::Engine;
use crate::runtime::BindingKind;

/// The commands the main loop answers, with their usage, for `list-commands`.
pub const COMMANDS: &[(&str, &str, usize, usize)] = &[
    ("connection-status", "", 0, 0),
    ("ct-zone-list", "", 0, 0),
    ("debug/dump-local-bindings", "", 0, 0),
    ("debug/status", "", 0, 0),
    ("exit", "[--restart]", 0, 1),
    ("inc-engine/recompute", "", 0, 0),
    ("inc-engine/show-stats", "", 0, 2),
    ("recompute", "[deprecated]", 0, 0),
];

/// What the loop does with a command.
pub enum Outcome {
    Reply(Result<String, String>),
    Exit { restart: bool },
    Recompute,
}

pub fn handle(engine: &mut Engine, _program: &str, command: &str, args: &[String]) -> Outcome {
    match command {
        "exit" => match args {
            [] => Outcome::Exit { restart: false },
            [a] if a == "--restart" => Outcome::Exit { restart: true },
            _ => Outcome::Reply(Err(format!("exit: unknown argument {args:?}\n"))),
        },
        "connection-status" => Outcome::Reply(Ok(format!("{}\n", engine.sb_status()))),
        "debug/status" => Outcome::Reply(Ok("running\n".into())),
        "ct-zone-list" => {
            let mut s = String::new();
            for (name, z) in &engine.zones.by_name {
                let _ = writeln!(s, "{name} {z}");
            }
            Outcome::Reply(Ok(s))
        }
        "recompute" | "inc-engine/recompute" => {
            engine.force_recompute("recompute requested");
            Outcome::Recompute
        }
        "inc-engine/show-stats" => Outcome::Reply(Ok(show_stats(engine))),
        "debug/dump-local-bindings" => Outcome::Reply(Ok(dump_local_bindings(engine))),
        other => Outcome::Reply(Err(format!(
            "\"{other}\" is not a valid command (use \"list-commands\" to see a list of valid commands)\n"
        ))),
    }
}

fn show_stats(engine: &Engine) -> String {
    let s = &engine.stats;
    let mut out = String::new();
    let _ = writeln!(out, "Node: flow_output");
    let _ = writeln!(out, "- recompute: {:>12}", s.full_recomputes);
    let _ = writeln!(out, "- compute:   {:>12}", s.incremental_lflows);
    let _ = writeln!(out, "- abort:     {:>12}", 0);
    let _ = writeln!(
        out,
        "runs {}, puts {} ({} failed), flow mods {}, refused flows {}, bad rows {}, \
         condition failures {}, missing columns {} ({} required)",
        s.runs,
        s.puts,
        s.put_failures,
        s.flow_mods,
        s.rejected_flows,
        s.bad_rows,
        s.condition_failures,
        s.missing_columns,
        s.missing_required_columns
    );
    let replica = engine.sb.replica.stats();
    let _ = writeln!(
        out,
        "southbound rows skipped {}, bad messages {}, bad-input log lines suppressed {}",
        replica.rows_skipped,
        replica.bad_messages,
        crate::vlog::limits::suppressed_total()
    );
    let _ = writeln!(
        out,
        "dependency runs {} ({} lflows recompiled for changed ports, port groups or datapaths)",
        s.dependency_runs, s.dependency_lflows
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

/// `debug/dump-local-bindings` in ovn-controller's shape.
fn dump_local_bindings(engine: &Engine) -> String {
    let mut out = String::from("Local bindings:\n");
    let Some(pbs) = engine.sb.replica.table::<PortBinding>() else {
        return out;
    };
    for (iface_id, iface) in &engine.ifaces.by_iface_id {
        let primary = pbs
            .iter()
            .find(|(u, p)| p.logical_port == *iface_id && engine.runtime.bound.contains_key(u));
        let children: Vec<&PortBinding> = pbs
            .iter()
            .filter(|(u, p)| {
                p.parent_port.as_deref() == Some(iface_id.as_str())
                    && matches!(
                        engine.runtime.bound.get(u),
                        Some(BindingKind::Container { .. })
                    )
            })
            .map(|(_, p)| p)
            .collect();
        let localport = pbs.iter().find(|(u, p)| {
            p.logical_port == *iface_id && engine.runtime.localports.contains_key(u)
        });
        let n = usize::from(primary.is_some() || localport.is_some()) + children.len();
        let _ = writeln!(
            out,
            "name: [{iface_id}], OVS interface name : [{}], num binding lports : [{n}]",
            iface.name
        );
        if let Some((_, p)) = primary {
            let _ = writeln!(out, "primary lport : [{}]", p.logical_port);
        } else if let Some((_, p)) = localport {
            let _ = writeln!(out, "localport lport : [{}]", p.logical_port);
        } else {
            let _ = writeln!(out, "primary lport : [None]");
        }
        for (i, c) in children.iter().enumerate() {
            let _ = writeln!(
                out,
                "child lport[{}] : [{}], type : [CONTAINER]",
                i + 1,
                c.logical_port
            );
        }
        let _ = writeln!(out, "----------------------------------------");
    }
    out
}
