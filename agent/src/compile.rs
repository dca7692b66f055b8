//! `ovn-agent compile`: the OpenFlow flows this chassis would install for the logical flows
//! of a Southbound snapshot.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Mutex;

use crate::lflow::actions::Pipeline;
use crate::lflow::flows::{
    compile_lflow, conj_id_hash, merge_conjunctions, ChassisView, DpSpec, LflowSpec, MatchCache,
    OfFlow,
};
use crate::lflow::layout::TableLayout;
use crate::lflow::LflowError;
use crate::sbdata::SbData;

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
    /// Southbound content: `ovn-sbctl --format=json list TABLE` or `ovsdb-client -f json dump`
    /// output files (repeatable).
    #[arg(long, required = true)]
    pub sb: Vec<String>,
    /// Chassis name.
    #[arg(long)]
    pub chassis: String,
    /// Only this datapath tunnel key.
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
}

/// Chassis view over a Southbound snapshot.
pub struct SbView<'a> {
    sb: &'a SbData,
    chassis_uuid: Option<String>,
    ports: HashMap<(String, String), u32>,
    resident: HashSet<String>,
    related: HashSet<(u32, u32)>,
    port_groups: HashMap<String, Vec<String>>,
    pub local_datapaths: BTreeSet<String>,
    vars: HashMap<String, String>,
    groups: Mutex<Ids>,
    meters: Mutex<Ids>,
    named_meters: Mutex<Ids>,
    conj: Mutex<HashSet<u32>>,
}

/// Ids allocated by description, lowest free first (ovn-controller's extend tables).
#[derive(Default)]
pub struct Ids {
    by_desc: HashMap<String, u32>,
    used: BTreeSet<u32>,
}

impl Ids {
    pub fn seed(&mut self, desc: String, id: u32) {
        self.used.insert(id);
        self.by_desc.insert(desc, id);
    }

    fn get(&mut self, desc: &str) -> Option<u32> {
        if let Some(id) = self.by_desc.get(desc) {
            return Some(*id);
        }
        let id = (1..=65535u32).find(|i| !self.used.contains(i))?;
        self.seed(desc.to_string(), id);
        Some(id)
    }
}

/// Types of port bindings that are related to every chassis that has their datapath.
const ALWAYS_RELATED: [&str; 5] = ["patch", "localnet", "l2gateway", "vtep", "l3gateway"];

impl<'a> SbView<'a> {
    pub fn new(sb: &'a SbData, chassis: &str) -> Self {
        let chassis_uuid = sb
            .chassis
            .iter()
            .find(|(_, n)| n.as_str() == chassis)
            .map(|(u, _)| u.clone());
        let here = |c: &Option<String>| c.is_some() && *c == chassis_uuid;
        let dp_key: HashMap<&str, u32> = sb
            .datapaths
            .iter()
            .map(|d| (d.uuid.as_str(), d.key))
            .collect();
        let mut ports = HashMap::new();
        for m in &sb.mcast_groups {
            ports.insert((m.datapath.clone(), m.name.clone()), m.key);
        }
        let mut resident = HashSet::new();
        let mut related = HashSet::new();
        let mut related_names = HashSet::new();
        for p in &sb.port_bindings {
            ports.insert((p.datapath.clone(), p.name.clone()), p.key);
            if here(&p.chassis) {
                resident.insert(p.name.clone());
            }
            if here(&p.chassis) || ALWAYS_RELATED.contains(&p.ty.as_str()) {
                if let Some(k) = dp_key.get(p.datapath.as_str()) {
                    related.insert((*k, p.key));
                }
                related_names.insert(p.name.clone());
            }
        }
        // Local datapaths: those with a port here, plus everything reachable over patch peers.
        let by_name: HashMap<&str, &crate::sbdata::PortBindingRow> = sb
            .port_bindings
            .iter()
            .map(|p| (p.name.as_str(), p))
            .collect();
        let mut local = BTreeSet::new();
        let mut queue: VecDeque<String> = sb
            .port_bindings
            .iter()
            .filter(|p| here(&p.chassis))
            .map(|p| p.datapath.clone())
            .collect();
        while let Some(dp) = queue.pop_front() {
            if !local.insert(dp.clone()) {
                continue;
            }
            for p in sb
                .port_bindings
                .iter()
                .filter(|p| p.datapath == dp && (p.ty == "patch" || p.ty == "l3gateway"))
            {
                if let Some(peer) = p.options.get("peer").and_then(|n| by_name.get(n.as_str())) {
                    if p.ty == "patch" || here(&peer.chassis) {
                        queue.push_back(peer.datapath.clone());
                    }
                }
            }
        }
        let port_groups = sb
            .port_groups
            .iter()
            .map(|(n, m)| {
                (
                    n.clone(),
                    m.iter()
                        .filter(|p| related_names.contains(*p))
                        .cloned()
                        .collect(),
                )
            })
            .collect();
        let vars = sb.template_vars.get(chassis).cloned().unwrap_or_default();
        Self {
            sb,
            chassis_uuid,
            ports,
            resident,
            related,
            port_groups,
            local_datapaths: local,
            vars,
            groups: Mutex::new(Ids::default()),
            meters: Mutex::new(Ids::default()),
            named_meters: Mutex::new(Ids::default()),
            conj: Mutex::new(HashSet::new()),
        }
    }

    /// Reuses group ids from `ovs-ofctl dump-groups` output (`group_id=N,<description>`).
    pub fn seed_groups(&self, dump: &str) {
        if let Ok(mut g) = self.groups.lock() {
            for line in dump.lines() {
                let Some(rest) = line.trim().strip_prefix("group_id=") else {
                    continue;
                };
                if let Some((id, desc)) = rest.split_once(',') {
                    if let Ok(id) = id.parse() {
                        g.seed(desc.to_string(), id);
                    }
                }
            }
        }
    }

    pub fn seed_meter(&self, description: &str, id: u32) {
        if let Ok(mut m) = self.meters.lock() {
            m.seed(description.to_string(), id);
        }
    }

    pub fn seed_named_meter(&self, name: &str, id: u32) {
        if let Ok(mut m) = self.named_meters.lock() {
            m.seed(name.to_string(), id);
        }
        // Named and per-lflow meters share one id space.
        self.seed_meter(&format!("named:{name}"), id);
    }

    pub fn has_chassis(&self) -> bool {
        self.chassis_uuid.is_some()
    }
}

impl ChassisView for SbView<'_> {
    fn address_set(&self, name: &str) -> Option<&[String]> {
        self.sb.address_sets.get(name).map(Vec::as_slice)
    }
    fn port_group(&self, name: &str) -> Option<&[String]> {
        self.port_groups.get(name).map(Vec::as_slice)
    }
    fn port_key(&self, dp_uuid: &str, name: &str) -> Option<u32> {
        if name == "none" {
            return Some(0);
        }
        self.ports
            .get(&(dp_uuid.to_string(), name.to_string()))
            .copied()
    }
    fn is_resident(&self, port: &str) -> bool {
        self.resident.contains(port)
    }
    fn is_related(&self, dp_key: u32, port_key: u32) -> bool {
        self.related.contains(&(dp_key, port_key))
    }
    fn group_id(&self, d: &str) -> Option<u32> {
        self.groups.lock().ok()?.get(d)
    }
    fn meter_id(&self, d: &str) -> Option<u32> {
        self.meters.lock().ok()?.get(d)
    }
    fn named_meter(&self, n: &str) -> Option<u32> {
        if let Some(id) = self.named_meters.lock().ok()?.by_desc.get(n).copied() {
            return Some(id);
        }
        let id = self.meters.lock().ok()?.get(&format!("named:{n}"))?;
        self.named_meters.lock().ok()?.seed(n.to_string(), id);
        Some(id)
    }
    fn template_vars(&self) -> &HashMap<String, String> {
        &self.vars
    }
    fn conj_ids(&self, lflow_uuid: &str, dp_uuid: &str, n: u32) -> u32 {
        let Ok(mut used) = self.conj.lock() else {
            return 1;
        };
        let mut start = conj_id_hash(lflow_uuid, dp_uuid).max(1);
        loop {
            let free = (0..n).all(|i| start.checked_add(i).is_some_and(|id| !used.contains(&id)));
            if free {
                used.extend((0..n).map(|i| start + i));
                return start;
            }
            start = start.wrapping_add(1).max(1);
        }
    }
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
}

/// Compiles every logical flow of `sb` for the local datapaths of `view`.
pub fn compile_all(
    sb: &SbData,
    view: &SbView<'_>,
    layout: &TableLayout,
    only_dp: Option<u32>,
    limit: usize,
) -> CompileReport {
    let cache = MatchCache::default();
    let dps: HashMap<&str, &crate::sbdata::DatapathRow> =
        sb.datapaths.iter().map(|d| (d.uuid.as_str(), d)).collect();
    let mut failures = Vec::new();
    let mut per_lflow = Vec::new();
    for lf in &sb.lflows {
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
        let mut failed = false;
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
            match compile_lflow(&spec, &dps, view, layout, &cache, limit) {
                Ok(f) => flows.extend(f),
                Err(error) => {
                    if !failed {
                        let text = if crate::lflow::actions::parse_actions(
                            &lf.actions,
                            crate::lflow::actions::ParseOptions {
                                pipeline,
                                table: lf.table_id,
                                n_tables: 29,
                            },
                        )
                        .is_err()
                        {
                            lf.actions.clone()
                        } else {
                            lf.match_text.clone()
                        };
                        failures.push(Failure {
                            uuid: lf.uuid.clone(),
                            pipeline: lf.pipeline.clone(),
                            table_id: lf.table_id,
                            error,
                            text,
                        });
                    }
                    failed = true;
                }
            }
        }
        per_lflow.push((lf.uuid.clone(), flows));
    }
    let all: Vec<OfFlow> = per_lflow
        .iter()
        .flat_map(|(_, f)| f.iter().cloned())
        .collect();
    CompileReport {
        flows: merge_conjunctions(all),
        failures,
        per_lflow,
        cache_hits: cache.hits.load(std::sync::atomic::Ordering::Relaxed),
        cache_misses: cache.misses.load(std::sync::atomic::Ordering::Relaxed),
        cache_entries: cache.len(),
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
    let report = compile_all(&sb, &view, &layout, args.datapath, args.flow_limit);
    for f in &report.failures {
        eprintln!("{f}");
    }
    let mut out = String::new();
    for f in &report.flows {
        out.push_str(&f.to_string());
        out.push('\n');
    }
    print!("{out}");
    let ok = report.per_lflow.len() > report.failures.len() || report.failures.is_empty();
    Ok(i32::from(!ok))
}
