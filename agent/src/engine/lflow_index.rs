//! Reverse index of the logical flows: which lflows name a port (any quoted string of their
//! match or actions, and the `in_out_port` tag), an address set (`$name`), a port group
//! (`@name`), a template variable (`^name`), which use `put_dhcp_opts` or
//! `put_dhcpv6_opts` (their options are checked against the DHCP option catalogues), and
//! which lflows sit on a datapath or datapath group. A change to one of
//! these then finds its lflows by lookup, not by scanning every lflow's text.
//!
//! Names are taken with the compiler's own lexer, so an lflow is indexed under exactly the
//! names it is compiled with. An lflow whose text the lexer refuses is named by every
//! lookup (compiling it again reports its error again; nothing is missed).

use std::collections::HashSet;

use sbclient::ovn_sb::LogicalFlow;
use sbclient::{Table, Uuid};

use crate::lflow::hash::FxBuild;
use crate::lflow::lexer::{tokenize, Token};

type UuidSet = HashSet<Uuid, FxBuild>;
type Map<K> = std::collections::HashMap<K, UuidSet, FxBuild>;

/// What a name is, as the lexer saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Kind {
    /// A quoted string: a port or multicast group name, among others.
    Str,
    /// `$name`.
    AddressSet,
    /// `@name`.
    PortGroup,
    /// `^name`.
    Template,
    /// One of [`DHCP_ACTIONS`] or [`FWD_GROUP_ACTION`], as an identifier.
    Action,
}

/// What this chassis' template variables name: for each port group, address set or port a
/// value names, the variables whose value names it (each value read by the lexer once).
#[derive(Debug, Default)]
pub struct TemplateRefs {
    vars_naming: std::collections::HashMap<(Kind, Box<str>), Vec<String>, FxBuild>,
}

impl TemplateRefs {
    /// From `(variable, value)` pairs; a value the lexer refuses names nothing.
    pub fn new<'v>(vars: impl IntoIterator<Item = (&'v String, &'v String)>) -> Self {
        let mut out = Self::default();
        for (var, value) in vars {
            let Ok(tokens) = tokenize(value) else {
                continue;
            };
            for t in tokens {
                let key = match t.token {
                    Token::PortGroup(n) => (Kind::PortGroup, n),
                    Token::Macro(n) => (Kind::AddressSet, n),
                    Token::Str(n) => (Kind::Str, n),
                    _ => continue,
                };
                let vars = out
                    .vars_naming
                    .entry((key.0, key.1.into_boxed_str()))
                    .or_default();
                if !vars.contains(var) {
                    vars.push(var.clone());
                }
            }
        }
        out
    }
}

/// A name a template variable's value may hold ([`LflowIndex::naming_through_templates`]).
#[derive(Clone, Copy, Debug)]
pub enum Named<'n> {
    AddressSet(&'n str),
    PortGroup(&'n str),
    /// A quoted port or multicast group name.
    Port(&'n str),
}

/// The actions whose compiled form depends on the DHCP option catalogues
/// (`DHCP_Options`, `DHCPv6_Options`).
pub const DHCP_ACTIONS: [&str; 2] = ["put_dhcp_opts", "put_dhcpv6_opts"];

/// The action whose compiled form (with `liveness=true`) depends on the tunnels and on
/// where its child ports are bound.
pub const FWD_GROUP_ACTION: &str = "fwd_group";

#[derive(Default)]
pub struct LflowIndex {
    by_name: Map<(Kind, Box<str>)>,
    by_datapath: Map<Uuid>,
    by_dp_group: Map<Uuid>,
    /// Lflows the lexer refused: every name lookup returns them.
    unparsed: UuidSet,
    indexed: usize,
}

/// The names one lflow is indexed under (`None`: its text does not lex).
fn names_of(lf: &LogicalFlow) -> Option<Vec<(Kind, Box<str>)>> {
    let mut out: Vec<(Kind, Box<str>)> = Vec::new();
    for text in [&lf.match_, &lf.actions] {
        for t in tokenize(text).ok()? {
            let name = match t.token {
                Token::Str(s) => (Kind::Str, s),
                Token::Macro(s) => (Kind::AddressSet, s),
                Token::PortGroup(s) => (Kind::PortGroup, s),
                Token::Template(s) => (Kind::Template, s),
                Token::Id(s) if DHCP_ACTIONS.contains(&s.as_str()) || s == FWD_GROUP_ACTION => {
                    (Kind::Action, s)
                }
                _ => continue,
            };
            out.push((name.0, name.1.into_boxed_str()));
        }
    }
    if let Some(p) = lf.tags.get("in_out_port") {
        out.push((Kind::Str, p.as_str().into()));
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

impl LflowIndex {
    fn insert(&mut self, u: Uuid, lf: &LogicalFlow) {
        self.indexed += 1;
        if let Some(d) = lf.logical_datapath {
            self.by_datapath.entry(d).or_default().insert(u);
        }
        if let Some(g) = lf.logical_dp_group {
            self.by_dp_group.entry(g).or_default().insert(u);
        }
        match names_of(lf) {
            Some(names) => {
                for n in names {
                    self.by_name.entry(n).or_default().insert(u);
                }
            }
            None => {
                self.unparsed.insert(u);
            }
        }
    }

    fn remove(&mut self, u: Uuid, lf: &LogicalFlow) {
        self.indexed = self.indexed.saturating_sub(1);
        fn take<K: std::hash::Hash + Eq>(map: &mut Map<K>, k: &K, u: &Uuid) {
            if let Some(set) = map.get_mut(k) {
                set.remove(u);
                if set.is_empty() {
                    map.remove(k);
                }
            }
        }
        if let Some(d) = lf.logical_datapath {
            take(&mut self.by_datapath, &d, &u);
        }
        if let Some(g) = lf.logical_dp_group {
            take(&mut self.by_dp_group, &g, &u);
        }
        self.unparsed.remove(&u);
        for n in names_of(lf).unwrap_or_default() {
            take(&mut self.by_name, &n, &u);
        }
    }

    /// Follows the change set of the Logical_Flow table. An index that no longer counts
    /// the table's rows (a change set it did not see) is built again from the table.
    pub fn apply(&mut self, table: &Table<LogicalFlow>) {
        let c = table.changes();
        for (u, old) in c.modified.iter().chain(c.deleted.iter()) {
            self.remove(*u, old);
        }
        for u in c.inserted.iter().chain(c.modified.keys()) {
            if let Some(lf) = table.get(u) {
                self.insert(*u, lf);
            }
        }
        if self.indexed != table.len() {
            self.rebuild(table);
        }
    }

    pub fn rebuild(&mut self, table: &Table<LogicalFlow>) {
        *self = Self::default();
        for (u, lf) in table.iter() {
            self.insert(*u, lf);
        }
    }

    fn named(&self, kind: Kind, name: &str) -> impl Iterator<Item = &Uuid> {
        self.by_name
            .get(&(kind, Box::from(name)))
            .into_iter()
            .flatten()
            .chain(self.unparsed.iter())
    }

    /// Lflows that name `what` through a template variable of `refs`: those naming `^var`
    /// where the value of `var` names it, as a value `inport == @pg1` makes the lflows
    /// naming `^var` depend on port group pg1.
    pub fn naming_through_templates(&self, refs: &TemplateRefs, what: Named<'_>) -> Vec<Uuid> {
        let key = match what {
            Named::AddressSet(n) => (Kind::AddressSet, n),
            Named::PortGroup(n) => (Kind::PortGroup, n),
            Named::Port(n) => (Kind::Str, n),
        };
        refs.vars_naming
            .get(&(key.0, Box::from(key.1)))
            .into_iter()
            .flatten()
            .flat_map(|var| self.named(Kind::Template, var))
            .copied()
            .collect()
    }

    /// Lflows naming port (or multicast group) `name` as a quoted string or in their
    /// `in_out_port` tag.
    pub fn naming_port<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a Uuid> {
        self.named(Kind::Str, name)
    }

    /// Lflows whose match names address set `$name`.
    pub fn naming_address_set<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a Uuid> {
        self.named(Kind::AddressSet, name)
    }

    /// Lflows whose match names port group `@name`.
    pub fn naming_port_group<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a Uuid> {
        self.named(Kind::PortGroup, name)
    }

    /// Lflows whose text names template variable `^name`.
    pub fn naming_template<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a Uuid> {
        self.named(Kind::Template, name)
    }

    /// Lflows that use `action` (one of [`DHCP_ACTIONS`], or [`FWD_GROUP_ACTION`]).
    pub fn using_action<'a>(&'a self, action: &str) -> impl Iterator<Item = &'a Uuid> {
        self.named(Kind::Action, action)
    }

    /// Lflows on datapath `dp` directly (not through a group).
    pub fn on_datapath(&self, dp: &Uuid) -> impl Iterator<Item = &Uuid> {
        self.by_datapath.get(dp).into_iter().flatten()
    }

    /// Lflows on datapath group `g`.
    pub fn on_dp_group(&self, g: &Uuid) -> impl Iterator<Item = &Uuid> {
        self.by_dp_group.get(g).into_iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sbclient::Replica;
    use serde_json::json;

    fn apply(r: &mut Replica, updates: &serde_json::Value) {
        let raw = serde_json::value::RawValue::from_string(updates.to_string()).unwrap();
        r.apply_update(&raw).unwrap();
    }

    fn sorted<'a>(it: impl Iterator<Item = &'a Uuid>) -> Vec<Uuid> {
        let mut v: Vec<Uuid> = it.copied().collect();
        v.sort();
        v
    }

    const DP: u128 = 0xd0;

    fn lflow(m: &str, a: &str) -> serde_json::Value {
        json!({"insert": {"match": m, "actions": a, "pipeline": "ingress",
            "logical_datapath": ["uuid", Uuid::from_u128(DP).to_string()]}})
    }

    #[test]
    fn lflows_are_found_through_the_template_variables_naming_a_row() {
        let mut r = crate::southbound::new_replica();
        let id = |n: u128| Uuid::from_u128(n).to_string();
        apply(
            &mut r,
            &json!({"Logical_Flow": {
                id(1): lflow("^COND && ip4.src == ^SRC", "next;"),
                id(2): lflow("^OTHER", "next;"),
            }}),
        );
        let mut ix = LflowIndex::default();
        ix.apply(r.table::<LogicalFlow>().unwrap());
        let vars: Vec<(String, String)> = [
            ("COND", "inport == @pg1"),
            ("SRC", "$as1"),
            ("OTHER", r#"outport == "p1""#),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        let refs = TemplateRefs::new(vars.iter().map(|(k, v)| (k, v)));
        let through = |what| ix.naming_through_templates(&refs, what);
        assert_eq!(through(Named::PortGroup("pg1")), [Uuid::from_u128(1)]);
        assert_eq!(through(Named::AddressSet("as1")), [Uuid::from_u128(1)]);
        assert_eq!(through(Named::Port("p1")), [Uuid::from_u128(2)]);
        assert!(through(Named::PortGroup("pg")).is_empty());
        assert!(through(Named::AddressSet("pg1")).is_empty());
    }

    #[test]
    fn lflows_are_found_by_the_names_the_lexer_sees() {
        let mut r = crate::southbound::new_replica();
        let (a, b, c, bad, dhcp, tpl) = (1u128, 2u128, 3u128, 4u128, 5u128, 6u128);
        let id = |n: u128| Uuid::from_u128(n).to_string();
        apply(
            &mut r,
            &json!({"Logical_Flow": {
                id(a): lflow(r#"inport == "p1" && ip4.src == $as1"#, "next;"),
                id(b): lflow(r#"outport == @pg1 && inport == "p10""#, r#"outport = "p2"; output;"#),
                id(c): lflow("ip4.dst == $as10", "drop;"),
                id(bad): lflow("inport == \"", "next;"),
                id(dhcp): lflow("udp.dst == 67", "reg0[3] = put_dhcp_opts(offerip = 10.0.0.5); next;"),
                id(tpl): lflow("ip4.dst == ^vip", "put_dhcp_opts = 1;"),
            }}),
        );
        let t = r.table::<LogicalFlow>().unwrap();
        let mut ix = LflowIndex::default();
        ix.apply(t);
        let (ua, ub, uc, ubad) = (
            Uuid::from_u128(a),
            Uuid::from_u128(b),
            Uuid::from_u128(c),
            Uuid::from_u128(bad),
        );
        // Whole names only ("p1" is not "p10", $as1 is not $as10); the unlexable lflow is
        // named by every lookup.
        assert_eq!(sorted(ix.naming_port("p1")), vec![ua, ubad]);
        assert_eq!(sorted(ix.naming_port("p2")), vec![ub, ubad]);
        assert_eq!(sorted(ix.naming_address_set("as1")), vec![ua, ubad]);
        assert_eq!(sorted(ix.naming_port_group("pg1")), vec![ub, ubad]);
        assert_eq!(sorted(ix.naming_port("pg1")), vec![ubad]);
        let (udhcp, utpl) = (Uuid::from_u128(dhcp), Uuid::from_u128(tpl));
        // An action name counts only where the lexer sees an identifier: `tpl` names it
        // too (as a field, which the compiler then refuses), `b`'s strings do not.
        assert_eq!(
            sorted(ix.using_action("put_dhcp_opts")),
            vec![ubad, udhcp, utpl]
        );
        assert_eq!(sorted(ix.using_action("put_dhcpv6_opts")), vec![ubad]);
        assert_eq!(sorted(ix.naming_template("vip")), vec![ubad, utpl]);
        assert_eq!(sorted(ix.naming_template("vi")), vec![ubad]);
        assert_eq!(
            sorted(ix.on_datapath(&Uuid::from_u128(DP))),
            vec![ua, ub, uc, ubad, udhcp, utpl]
        );
        r.clear_changes();

        // A modification moves the lflow to its new names; a deletion forgets it.
        apply(
            &mut r,
            &json!({"Logical_Flow": {
                id(a): {"modify": {"match": r#"inport == "p3""#}},
                id(bad): {"delete": null},
                id(dhcp): {"delete": null},
                id(tpl): {"delete": null},
            }}),
        );
        ix.apply(r.table::<LogicalFlow>().unwrap());
        assert_eq!(sorted(ix.using_action("put_dhcp_opts")), Vec::<Uuid>::new());
        assert_eq!(sorted(ix.naming_template("vip")), Vec::<Uuid>::new());
        assert_eq!(sorted(ix.naming_port("p1")), Vec::<Uuid>::new());
        assert_eq!(sorted(ix.naming_port("p3")), vec![ua]);
        assert_eq!(sorted(ix.naming_address_set("as1")), Vec::<Uuid>::new());
        assert_eq!(
            sorted(ix.on_datapath(&Uuid::from_u128(DP))),
            vec![ua, ub, uc]
        );

        // An index that missed a change set is built again from the table.
        r.clear_changes();
        let mut stale = LflowIndex::default();
        stale.apply(r.table::<LogicalFlow>().unwrap());
        assert_eq!(sorted(stale.naming_port("p2")), vec![ub]);
    }
}
