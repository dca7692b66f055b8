//! One logical flow on one datapath to OpenFlow flows (ovn-controller's
//! `consider_logical_flow__` and `add_matches_to_flow_table`).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use super::actions::{parse_actions_in, ParseOptions, ParsedActions, Pipeline};
use super::annotate::{annotate, AExpr, Leaf};
use super::encode::{EncodeEnv, EncodeParams, Encoder};
use super::error::{LflowError, Result};
use super::expr::{parse_address_set, parse_expr, Const, Expr, ExprContext};
use super::hash::FxBuild;
use super::layout::TableLayout;
use super::lexer::{tokenize, Token};
use super::normalize::{
    eval_conditions, normalize, simplify, to_matches, to_matches_tracked, Conj, MatchKind,
    PortResolver,
};
use super::of::FieldId;
use super::of::Slot;
use super::of::{conjunction, Action};
use super::set_filter::SetFilter;
use super::template::expand_templates;
use openflow::wire::{Group, MeterMod};
use sbclient::Uuid;

pub use super::chassis_view::{conj_id_hash, cookie_of, ChassisView, IdUse};

/// A logical flow.
#[derive(Clone, Debug)]
pub struct LflowSpec<'a> {
    pub uuid: &'a Uuid,
    pub pipeline: Pipeline,
    pub table_id: u32,
    pub priority: u16,
    pub match_text: &'a str,
    pub actions: &'a str,
    pub controller_meter: Option<u32>,
}

/// The datapath the flow is compiled for.
#[derive(Clone, Debug)]
pub struct DpSpec<'a> {
    pub uuid: &'a Uuid,
    pub key: u32,
    pub is_switch: bool,
    pub snat_ct_zone: bool,
}

/// One OpenFlow flow (the `openflow` crate's).
pub use super::of::Flow as OfFlow;

/// (ingress, logical table, expanded action text).
type ActionsKey = (bool, u32, String);

/// Parsed, annotated and simplified matches keyed by their text (and datapath when the text
/// names a port group, whose SB name depends on it), shared by all lflows and threads.
#[derive(Default)]
pub struct MatchCache {
    map: RwLock<HashMap<String, std::result::Result<Arc<AExpr>, LflowError>, FxBuild>>,
    /// Normal forms of condition-free matches keyed by match key, prerequisites and limit:
    /// lflows on several datapaths share them.
    dnf: RwLock<HashMap<String, Arc<Vec<Conj>>, FxBuild>>,
    /// Parsed action lists keyed by (ingress, logical table, expanded text).
    actions: RwLock<HashMap<ActionsKey, Arc<ParsedActions>, FxBuild>>,
    pub hits: std::sync::atomic::AtomicUsize,
    pub misses: std::sync::atomic::AtomicUsize,
    /// Encoded action lists, so that the flows of one lflow on many datapaths (and of
    /// different lflows with the same actions) share one copy.
    action_lists: RwLock<std::collections::HashSet<Arc<Vec<Action>>, FxBuild>>,
    /// Address sets' constants, parsed once per run.
    address_sets: RwLock<HashMap<String, Arc<[Const]>, FxBuild>>,
}

impl MatchCache {
    /// The shared copy of `actions`.
    pub fn intern_actions(&self, mut actions: Vec<Action>) -> Arc<Vec<Action>> {
        if let Some(a) = self
            .action_lists
            .read()
            .ok()
            .and_then(|s| s.get(&actions).cloned())
        {
            return a;
        }
        // Kept for the flows' lifetime: no spare capacity.
        actions.shrink_to_fit();
        let a = Arc::new(actions);
        if let Ok(mut s) = self.action_lists.write() {
            if let Some(existing) = s.get(&a) {
                return existing.clone();
            }
            s.insert(a.clone());
        }
        a
    }

    /// Forgets the parsed matches, normal forms and parsed actions (the interned action
    /// lists stay: flows share them). Counted hits and misses stay.
    pub fn forget_parsed(&self) {
        if let Ok(mut m) = self.map.write() {
            *m = HashMap::default();
        }
        if let Ok(mut m) = self.dnf.write() {
            *m = HashMap::default();
        }
        if let Ok(mut m) = self.actions.write() {
            *m = HashMap::default();
        }
    }

    /// Number of distinct cached matches.
    pub fn len(&self) -> usize {
        self.map.read().map_or(0, |m| m.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

pub(super) struct DpEnv<'a> {
    pub(super) view: &'a dyn ChassisView,
    pub(super) cache: &'a MatchCache,
    pub(super) dp: &'a DpSpec<'a>,
    pub(super) pg_names: RwLock<HashMap<String, String>>,
    /// Ids taken while encoding (released by whoever drops the flows).
    pub(super) uses: std::cell::RefCell<Vec<IdUse>>,
    pub(super) dialect: &'static super::dialect::Dialect,
}

impl ExprContext for DpEnv<'_> {
    fn address_set(&self, name: &str) -> Option<&[String]> {
        self.view.address_set(name)
    }
    fn address_set_consts(&self, name: &str) -> Option<Arc<[Const]>> {
        let sets = &self.cache.address_sets;
        if let Some(c) = sets.read().ok().and_then(|m| m.get(name).cloned()) {
            return Some(c);
        }
        let c = parse_address_set(self.view.address_set(name)?);
        if let Ok(mut m) = sets.write() {
            m.insert(name.to_owned(), c.clone());
        }
        Some(c)
    }
    fn dialect(&self) -> &'static super::dialect::Dialect {
        self.dialect
    }
    fn port_group(&self, name: &str) -> Option<&[String]> {
        let scoped = format!("{}_{name}", self.dp.key);
        if let Ok(mut m) = self.pg_names.write() {
            m.insert(name.to_string(), scoped.clone());
        }
        self.view
            .port_group(&scoped)
            .or_else(|| self.view.port_group(name))
    }
}

impl PortResolver for DpEnv<'_> {
    fn port_key(&self, name: &str) -> Option<u32> {
        self.view.port_key(self.dp.uuid, name)
    }
}

impl EncodeEnv for DpEnv<'_> {
    fn port_key(&self, name: &str) -> Option<u32> {
        self.view.port_key(self.dp.uuid, name)
    }
    fn group_id(&self, g: &Group) -> Option<u32> {
        let (id, key) = self.view.group_id(g)?;
        self.uses.borrow_mut().push(IdUse::Group(key));
        Some(id)
    }
    fn meter_id(&self, key: &str, meter: &MeterMod) -> Option<u32> {
        let id = self.view.meter_id(key, meter)?;
        self.uses.borrow_mut().push(IdUse::Meter(key.to_owned()));
        Some(id)
    }
    fn named_meter(&self, n: &str) -> Option<u32> {
        let id = self.view.named_meter(n)?;
        self.uses.borrow_mut().push(IdUse::Meter(n.to_owned()));
        Some(id)
    }
    fn dhcp_option_known(&self, v6: bool, name: &str) -> bool {
        self.view.dhcp_option_known(v6, name)
    }
    fn is_local_port(&self, port: &str) -> bool {
        self.view.is_resident(port)
    }
    fn collector_set_exists(&self, id: u32) -> bool {
        self.view.collector_set_exists(id)
    }
    fn tunnel_ofport(&self, port: &str) -> Option<u32> {
        self.view.tunnel_ofport(*self.dp.uuid, port)
    }
    fn register_consolidation(&self) -> bool {
        self.view.register_consolidation()
    }
}

/// What a parsed match depends on besides the address sets (the same for every datapath):
/// its text and, for each port group it names, the members that group has on this
/// datapath. Datapaths where a group has the same members (none, on most of them) share
/// one parse and one normal form.
fn match_cache_key(text: &str, env: &DpEnv<'_>) -> String {
    if !text.contains('@') {
        return text.to_owned();
    }
    let Ok(tokens) = tokenize(text) else {
        // Reported when parsed; kept apart per datapath.
        return format!("{}\u{0}{text}", env.dp.key);
    };
    let mut key = text.to_owned();
    for t in tokens {
        if let Token::PortGroup(name) = t.token {
            key.push('\u{0}');
            match env.port_group(&name) {
                Some(members) => {
                    for m in members {
                        key.push_str(m);
                        key.push('\u{1}');
                    }
                }
                None => key.push('\u{2}'),
            }
        }
    }
    key
}

fn prepared_match(text: &str, env: &DpEnv<'_>, cache: &MatchCache) -> (String, Result<Arc<AExpr>>) {
    use std::sync::atomic::Ordering::Relaxed;
    let key = match_cache_key(text, env);
    if let Some(r) = cache.map.read().ok().and_then(|m| m.get(&key).cloned()) {
        cache.hits.fetch_add(1, Relaxed);
        return (key, r);
    }
    let r = parse_expr(text, env)
        .and_then(annotate)
        .map(|e| Arc::new(simplify(e, env.dialect.ne_as_prefixes)));
    cache.misses.fetch_add(1, Relaxed);
    if let Ok(mut m) = cache.map.write() {
        m.insert(key.clone(), r.clone());
    }
    (key, r)
}

/// The parsed action list, shared by every lflow and datapath with the same text and table.
fn parsed_actions(
    text: String,
    lf: &LflowSpec<'_>,
    layout: &TableLayout,
    cache: &MatchCache,
) -> Result<Arc<ParsedActions>> {
    let key = (lf.pipeline == Pipeline::Ingress, lf.table_id, text);
    if let Some(p) = cache.actions.read().ok().and_then(|c| c.get(&key).cloned()) {
        return Ok(p);
    }
    let parsed = Arc::new(
        parse_actions_in(
            &key.2,
            ParseOptions {
                pipeline: lf.pipeline,
                table: lf.table_id,
                n_tables: layout.max_pipeline_len(),
            },
            layout.dialect,
        )
        .map_err(super::error::in_actions)?,
    );
    if let Ok(mut c) = cache.actions.write() {
        c.insert(key, parsed.clone());
    }
    Ok(parsed)
}

/// The normal form of `m` and the action prerequisites on this chassis; cached when it
/// depends neither on the chassis (residency conditions) nor on the datapath (port groups).
fn normal_form(
    m: &Arc<AExpr>,
    match_key: &str,
    prereqs: &[String],
    resident: &dyn Fn(&str) -> bool,
    cache: &MatchCache,
    limit: usize,
) -> Result<Arc<Vec<Conj>>> {
    if has_conditions(m) {
        let e = match prereq_expr(prereqs)? {
            Some(p) => Expr::and_or(true, vec![(**m).clone(), p]),
            None => (**m).clone(),
        };
        return Ok(Arc::new(normalize(&eval_conditions(e, resident), limit)?));
    }
    let mut key = String::with_capacity(match_key.len() + 24);
    key.push_str(match_key);
    for p in prereqs {
        key.push('\u{1}');
        key.push_str(p);
    }
    key.push('\u{2}');
    key.push_str(&limit.to_string());
    if let Some(d) = cache.dnf.read().ok().and_then(|c| c.get(&key).cloned()) {
        return Ok(d);
    }
    let mut cacheable = true;
    let dnf = Arc::new(match prereq_expr(prereqs)? {
        Some(p) => {
            cacheable = !has_conditions(&p);
            normalize(
                &eval_conditions(Expr::and_or(true, vec![(**m).clone(), p]), resident),
                limit,
            )?
        }
        None => normalize(m, limit)?,
    });
    if !cacheable {
        return Ok(dnf);
    }
    if let Ok(mut c) = cache.dnf.write() {
        c.insert(key, dnf.clone());
    }
    Ok(dnf)
}

fn prereq_expr(texts: &[String]) -> Result<Option<AExpr>> {
    if texts.is_empty() {
        return Ok(None);
    }
    let mut parts = Vec::new();
    for t in texts {
        // Action prerequisites name protocols; none compares with `!=`.
        parts.push(simplify(super::annotate::prerequisite(t)?, false));
    }
    Ok(Some(Expr::and_or(true, parts)))
}

fn has_conditions(e: &AExpr) -> bool {
    match e {
        Expr::Resident { .. } => true,
        Expr::And(v) | Expr::Or(v) => v.iter().any(has_conditions),
        _ => false,
    }
}

/// Compiles one logical flow for one datapath.
/// The ids the flows refer to are appended to `uses`, also when compiling fails (the caller
/// releases them with the flows).
pub fn compile_lflow(
    lf: &LflowSpec<'_>,
    dp: &DpSpec<'_>,
    view: &dyn ChassisView,
    layout: &TableLayout,
    cache: &MatchCache,
    limit: usize,
    uses: &mut Vec<IdUse>,
) -> Result<Vec<OfFlow>> {
    let env = DpEnv {
        view,
        cache,
        dp,
        pg_names: RwLock::new(HashMap::new()),
        uses: std::cell::RefCell::new(Vec::new()),
        dialect: layout.dialect,
    };
    let out = compile_with(lf, &env, layout, cache, limit, None);
    uses.append(&mut env.uses.borrow_mut());
    out
}

/// Compiles in `env`; with `only`, keeps the matches the filter wants and counts them.
pub(super) fn compile_with(
    lf: &LflowSpec<'_>,
    env: &DpEnv<'_>,
    layout: &TableLayout,
    cache: &MatchCache,
    limit: usize,
    only: Option<(&SetFilter, &mut usize)>,
) -> Result<Vec<OfFlow>> {
    let (view, dp) = (env.view, env.dp);
    let table = layout
        .logical_table(lf.pipeline, lf.table_id)
        .ok_or(LflowError::TableOutOfRange { table: lf.table_id })?;
    let vars = view.template_vars();
    let actions_text = expand_templates(lf.actions, vars);
    let match_text = expand_templates(lf.match_text, vars);
    let parsed = parsed_actions(actions_text, lf, layout, cache)?;
    let (match_key, m) = prepared_match(&match_text, env, cache);
    let m = m?;
    let resident = |p: &str| view.is_resident(p);
    let dnf = normal_form(&m, &match_key, &parsed.prereqs, &resident, cache, limit)?;
    let matches = match only {
        None => to_matches(&dnf, env, limit)?,
        Some((filter, count)) => {
            let (all, origins) =
                to_matches_tracked(&dnf, env, limit, &|c: &[Leaf]| filter.is_set_clause(c))?;
            let kept: Vec<_> = all
                .into_iter()
                .zip(origins)
                .filter(|(_, o)| o.as_ref().is_some_and(|l| filter.wants(l)))
                .map(|(m, _)| m)
                .collect();
            *count = kept.len();
            kept
        }
    };
    if matches.is_empty() {
        return Ok(vec![]);
    }
    let params = EncodeParams {
        pipeline: lf.pipeline,
        table: lf.table_id,
        layout: *layout,
        is_switch: dp.is_switch,
        common_zone_is_snat: dp.snat_ct_zone,
        controller_meter: lf.controller_meter,
        lflow_uuid: *lf.uuid,
        dp_key: dp.key,
    };
    let encoded = Encoder { env, p: &params }
        .encode(&parsed.actions)
        .map_err(super::error::in_actions)?;
    let actions = cache.intern_actions(encoded);
    let cookie = cookie_of(lf.uuid);
    let n_conj = matches
        .iter()
        .flat_map(|(_, k)| k)
        .filter_map(|k| {
            if let MatchKind::ConjId { k } | MatchKind::Clause { k, .. } = k {
                Some(*k)
            } else {
                None
            }
        })
        .max()
        .unwrap_or(0);
    let base = if n_conj > 0 {
        env.uses.borrow_mut().push(IdUse::Conj(*lf.uuid, *dp.uuid));
        view.conj_ids(lf.uuid, dp.uuid, n_conj)
    } else {
        0
    };
    let pinned = if lf.pipeline == Pipeline::Ingress {
        Slot::Reg(14)
    } else {
        Slot::Reg(15)
    };
    let mut out = Vec::with_capacity(matches.len());
    for (mut m, kinds) in matches {
        if dp.is_switch {
            if let Some((v, 0xffff_ffff)) = m.get(pinned) {
                if !view.is_related(dp.key, v as u32) {
                    continue;
                }
            }
        }
        if !m.add(FieldId::METADATA, u128::from(dp.key), u128::from(u64::MAX)) {
            continue;
        }
        match kinds.as_slice() {
            [MatchKind::Plain] => out.push(OfFlow {
                table,
                priority: lf.priority,
                cookie,
                m,
                actions: actions.clone(),
            }),
            [MatchKind::ConjId { k }] => {
                m.set_conj_id(base + k - 1);
                out.push(OfFlow {
                    table,
                    priority: lf.priority,
                    cookie,
                    m,
                    actions: actions.clone(),
                });
            }
            clauses => {
                let acts = clauses
                    .iter()
                    .filter_map(|k| match k {
                        MatchKind::Clause {
                            k,
                            clause,
                            n_clauses,
                        } => Some(conjunction(base + k - 1, *clause, *n_clauses)),
                        _ => None,
                    })
                    .collect();
                out.push(OfFlow {
                    table,
                    priority: lf.priority,
                    cookie: 0,
                    m,
                    actions: cache.intern_actions(acts),
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {

    #[test]
    fn conj_id_hash_matches_ovn() {
        // cookie 0x200b0200 on datapath sw0 got conjunction id 1228058175 (of_final.txt).
        assert_eq!(
            super::conj_id_hash(
                &"200b0200-ac6f-4f2b-b0e0-0164e83176ec".parse().unwrap(),
                &"09518436-d3f1-46e9-8cae-88e25d5f7a8f".parse().unwrap()
            ),
            1_228_058_175
        );
    }
}
