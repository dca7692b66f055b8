//! An address set changed by a few addresses: the flows those addresses make in one logical
//! flow, without compiling the lflow against the whole set (ovn-controller's
//! `lflow_handle_addr_set_update`). The lflow is compiled with the set replaced by a small
//! one (the changed addresses, and one other member when only one changed, so that the set
//! keeps the form of two or more values), and only the matches made from the set's
//! constants as written (a clause that was neither merged with other values nor deduplicated)
//! for a changed address are kept. When the count of those matches is not one per reference
//! to the set per address, the form of the flows depends on the set in a way this cannot
//! follow, and the caller compiles the lflow again.

use std::collections::HashMap;
use std::sync::RwLock;

use openflow::wire::{Group, MeterMod};
use sbclient::Uuid;

use super::chassis_view::{ChassisView, GroupKey};
use super::expr::parse_address_set;
use super::flows::{compile_with, DpEnv, DpSpec, LflowSpec, MatchCache, OfFlow};
use super::layout::TableLayout;
use super::set_filter::SetFilter;
use crate::lflow::chassis_view::IdUse;

/// The flows a compile kept for the changed addresses, and how many matches made them.
pub struct SetDeltaFlows {
    pub flows: Vec<OfFlow>,
    pub matches: usize,
    /// Ids the compile took (the lflow's own flows already hold the same ones).
    pub uses: Vec<IdUse>,
}

/// The view with address set `name` replaced by `members`; conjunction ids are the ones the
/// lflow holds already (`missing_conj` when it holds none: its flows had no conjunction).
struct SetReplaced<'a> {
    inner: &'a dyn ChassisView,
    name: &'a str,
    members: &'a [String],
    missing_conj: std::sync::atomic::AtomicBool,
}

impl ChassisView for SetReplaced<'_> {
    fn address_set(&self, name: &str) -> Option<&[String]> {
        if name == self.name {
            Some(self.members)
        } else {
            self.inner.address_set(name)
        }
    }
    fn port_group(&self, name: &str) -> Option<&[String]> {
        self.inner.port_group(name)
    }
    fn port_key(&self, dp: &Uuid, name: &str) -> Option<u32> {
        self.inner.port_key(dp, name)
    }
    fn is_resident(&self, port: &str) -> bool {
        self.inner.is_resident(port)
    }
    fn is_related(&self, dp_key: u32, port_key: u32) -> bool {
        self.inner.is_related(dp_key, port_key)
    }
    fn group_id(&self, group: &Group) -> Option<(u32, GroupKey)> {
        self.inner.group_id(group)
    }
    fn meter_id(&self, key: &str, meter: &MeterMod) -> Option<u32> {
        self.inner.meter_id(key, meter)
    }
    fn named_meter(&self, name: &str) -> Option<u32> {
        self.inner.named_meter(name)
    }
    fn template_vars(&self) -> &HashMap<String, String> {
        self.inner.template_vars()
    }
    fn dhcp_option_known(&self, v6: bool, name: &str) -> bool {
        self.inner.dhcp_option_known(v6, name)
    }
    fn conj_ids(&self, lflow: &Uuid, dp: &Uuid, _n: u32) -> u32 {
        self.inner.held_conj_ids(lflow, dp).unwrap_or_else(|| {
            self.missing_conj
                .store(true, std::sync::atomic::Ordering::Relaxed);
            0
        })
    }
    fn held_conj_ids(&self, lflow: &Uuid, dp: &Uuid) -> Option<u32> {
        self.inner.held_conj_ids(lflow, dp)
    }
    fn register_consolidation(&self) -> bool {
        self.inner.register_consolidation()
    }
}

/// The flows lflow `lf` has on datapath `dp` for addresses `changed` of address set `name`,
/// compiled with the set replaced by `members` (`changed` and, when that is one address,
/// another member). `None` when they cannot be told apart from the rest of its flows.
#[allow(clippy::too_many_arguments)]
pub fn compile_set_delta(
    lf: &LflowSpec<'_>,
    dp: &DpSpec<'_>,
    view: &dyn ChassisView,
    layout: &TableLayout,
    limit: usize,
    name: &str,
    members: &[String],
    changed: &[String],
) -> Option<SetDeltaFlows> {
    let filter = SetFilter::new(
        parse_address_set(members).to_vec(),
        parse_address_set(changed).to_vec(),
    );
    if filter.set_len() < 2 || filter.wanted_len() != changed.len() {
        return None;
    }
    let replaced = SetReplaced {
        inner: view,
        name,
        members,
        missing_conj: false.into(),
    };
    // A cache of its own: the small set must not meet the parses of the real one.
    let cache = MatchCache::default();
    let env = DpEnv {
        view: &replaced,
        cache: &cache,
        dp,
        pg_names: RwLock::new(HashMap::new()),
        uses: std::cell::RefCell::new(Vec::new()),
        dialect: layout.dialect,
    };
    let mut matches = 0;
    let flows = compile_with(
        lf,
        &env,
        layout,
        &cache,
        limit,
        Some((&filter, &mut matches)),
    );
    let uses = env.uses.take();
    let flows = flows.ok()?;
    if replaced
        .missing_conj
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        return None;
    }
    Some(SetDeltaFlows {
        flows,
        matches,
        uses: uses
            .into_iter()
            .filter(|u| !matches!(u, IdUse::Conj(..)))
            .collect(),
    })
}
