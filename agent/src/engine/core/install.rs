//! The install stage: what the switch has (a new OpenFlow session's dump), the put that
//! makes it the desired table, groups and meters (streamed in parts while the rest
//! compiles), and its result. Part of the core's `impl Engine`, in a file of its own.

use super::*;

impl Engine {
    /// A new OpenFlow session with what the switch has.
    pub fn of_connected(
        &mut self,
        session: SessionId,
        fields: crate::ofctrl::conn::GeneveFields,
        dump: Dump,
    ) {
        self.finish_streamed_compile();
        self.install.ids_in_step = None;
        self.install.of_session = Some(session);
        self.runtime_work.inputs_dirty = true;
        // What the switch has is compared anew.
        self.stats.nodes.install.recompute += 1;
        self.install.in_flight = None;
        if self.runtime.geneve_field != fields.ovn || self.runtime.mark_field != fields.pkt_mark {
            self.runtime.geneve_field = fields.ovn;
            self.runtime.mark_field = fields.pkt_mark;
            self.runtime_work.changed = true;
            self.runtime_work.inputs_dirty = true;
        }
        self.flows.forget_installed();
        let foreign = self.flows.record_dump(dump.flows);
        if !foreign.is_empty() {
            tracing::info!(target: "ofctrl", "{} flows of unknown form will be replaced", foreign.len());
        }
        self.install.foreign = foreign;
        // The switch's groups keep their ids (a restart then changes no flow that uses one).
        if let Ok(mut t) = self.ids.groups.lock() {
            for g in &dump.groups {
                t.seed(crate::view::group_key_of(g), g.group_id, g.clone());
            }
        }
        self.install.installed_groups = dump
            .groups
            .iter()
            .map(|g| (g.group_id, crate::view::group_key_of(g)))
            .collect();
        self.install.installed_meters = dump
            .meters
            .iter()
            .map(|m| {
                let installed = MeterMod {
                    meter_id: m.meter_id,
                    flags: m.flags,
                    bands: m.bands.clone(),
                    ..MeterMod::default()
                };
                (m.meter_id, installed)
            })
            .collect();
        if let Ok(mut t) = self.ids.meters.lock() {
            t.prefer(
                self.install
                    .installed_meters
                    .iter()
                    .map(|(id, m)| (*id, m.clone())),
            );
        }
        // Zones were flushed before; the switch's conntrack survives a reconnect.
    }

    pub fn of_disconnected(&mut self) {
        self.finish_streamed_compile();
        self.install.ids_in_step = None;
        self.install.of_session = None;
        self.install.in_flight = None;
        // Which tunnels count as up depends on the connection.
        self.runtime_work.inputs_dirty = true;
    }

    /// Whether the first put may go: the chassis is known and no condition change is
    /// pending (the replica holds every row the flows need), or the wait for that has gone
    /// on too long.
    pub(super) fn initial_view_settled(&self, now: Instant, conditions_stable: bool) -> bool {
        let settled =
            self.runtime.chassis.is_some() && conditions_stable && !self.conditions_pending();
        settled
            || self
                .sb_connected_at
                .is_some_and(|t| now.duration_since(t) >= INITIAL_SETTLE)
    }

    pub(super) fn build_put(&mut self, now: Instant, conditions_stable: bool) -> Option<Put> {
        let session = self.install.of_session?;
        if self.install.in_flight.is_some() {
            return None;
        }
        if !self.initial_sync_done && !self.initial_view_settled(now, conditions_stable) {
            return None;
        }
        let sb_nb_cfg = self
            .inputs
            .sb
            .replica
            .table::<SbGlobal>()
            .and_then(|t| t.iter().next().map(|(_, g)| g.nb_cfg));
        // nb_cfg is acknowledged only by a put computed with no condition change pending (the
        // flows then reflect every row the configuration needs).
        let sb_nb_cfg = sb_nb_cfg.filter(|_| !self.conditions_pending());
        // A configuration installed but waiting out `debug/delay-nb-cfg-report` needs no
        // put of its own.
        let nb_cfg_pending = sb_nb_cfg.is_some_and(|n| {
            self.sb_writes.nb_cfg_acked.map(|a| a.0) != Some(n)
                && self.sb_writes.nb_cfg_due.map(|d| d.0) != Some(n)
        });
        // Only what differs from the switch is cloned (this runs on every engine run), and
        // nothing is compared while neither the ids nor the switch moved since a put found
        // them in step.
        let versions = (
            self.ids.groups.lock().map_or(u64::MAX, |t| t.version()),
            self.ids.meters.lock().map_or(u64::MAX, |t| t.version()),
        );
        let ids_in_step =
            self.install.ids_in_step == Some(versions) && self.install.streamed.is_none();
        let mut groups_add: Vec<(u32, crate::view::GroupKey, Group)> = Vec::new();
        let mut groups_wanted: HashSet<u32> = HashSet::new();
        if let (false, Ok(t)) = (ids_in_step, self.ids.groups.lock()) {
            for (id, k, g) in t.iter() {
                groups_wanted.insert(id);
                if self.install.installed_groups.get(&id) != Some(k) {
                    groups_add.push((id, k.clone(), g.clone()));
                }
            }
        }
        // While a compile is streamed, what it will want is not known yet: unwanted groups
        // and meters go in the next put.
        let streamed = self.install.streamed.is_some();
        let groups_del: Vec<u32> = self
            .install
            .installed_groups
            .keys()
            .filter(|id| !ids_in_step && !streamed && !groups_wanted.contains(id))
            .copied()
            .collect();
        let mut meters_add: Vec<(u32, MeterMod)> = Vec::new();
        let mut meters_wanted: HashSet<u32> = HashSet::new();
        if let (false, Ok(t)) = (ids_in_step, self.ids.meters.lock()) {
            for (id, name, m) in t.iter() {
                if m.bands.is_empty() {
                    // A named meter without its Southbound row: the switch's meter goes
                    // (the flows naming it stay, as ovn-controller leaves them).
                    if !name.starts_with(crate::lflow::encode::SET_METER_KEY) {
                        crate::vlog_rl!(ERROR, &crate::vlog::limits::BAD_ROW, target: "ofctrl", "could not find meter named \"{name}\"");
                    }
                    continue;
                }
                meters_wanted.insert(id);
                if let Some(sent) = meter_to_send(self.install.installed_meters.get(&id), id, m) {
                    meters_add.push((id, sent));
                }
            }
        }
        let meters_del: Vec<u32> = self
            .install
            .installed_meters
            .keys()
            .filter(|id| !ids_in_step && !streamed && !meters_wanted.contains(id))
            .copied()
            .collect();
        self.install.ids_in_step = (groups_add.is_empty()
            && groups_del.is_empty()
            && meters_add.is_empty()
            && meters_del.is_empty()
            && !streamed)
            .then_some(versions);
        let flush: Vec<u16> = self.zones.to_flush.iter().copied().collect();
        // Conntrack flushes by tuple only where the datapath has them (ovs-vswitchd says
        // so in its Datapath record), as ovn-controller checks; looked up only when there
        // is something to flush (this runs on every engine run).
        if self.lb_flushes.has_pending()
            && !self.cfg.as_ref().is_some_and(|c| {
                crate::engine::ovs_config::br_int_capability(&self.inputs.ovs, c, "ct_flush")
            })
        {
            self.lb_flushes.discard_pending();
        }
        let work = self.flows.has_pending()
            || !groups_add.is_empty()
            || !groups_del.is_empty()
            || !meters_add.is_empty()
            || !meters_del.is_empty()
            || !flush.is_empty()
            || self.lb_flushes.has_pending()
            || !self.install.foreign.is_empty()
            || !self.initial_sync_done
            || nb_cfg_pending
            || streamed
            || !self.sb_writes.waiting_install.is_empty();
        if !work {
            return None;
        }
        let mut bundle = BundleBuilder::new(BUNDLE_FLAGS);
        let mut entries: Vec<Option<u32>> = Vec::new();
        for (id, _, g) in &groups_add {
            let replace = self.install.installed_groups.contains_key(id);
            push_group_add(&mut bundle, &mut entries, *id, g, replace);
        }
        for f in std::mem::take(&mut self.install.foreign) {
            let fm = openflow::wire::FlowMod {
                table_id: f.table,
                priority: f.priority,
                command: openflow::wire::flow_mod::OFPFC_DELETE_STRICT,
                r#match: f.m,
                ..openflow::wire::FlowMod::default()
            };
            if bundle.push_message(&Message::FlowMod(fm)).is_ok() {
                entries.push(None);
            }
        }
        self.install.put_seq += 1;
        let seq = self.install.put_seq;
        self.stats.puts += 1;
        crate::coverage::OFCTRL_PUT.inc();
        self.zones.to_flush.clear();
        let mut batch = FlowBatch::default();
        self.flows.take_more(&mut batch, streamed);
        self.install.in_flight = Some(InFlight {
            seq,
            batch,
            nb_cfg: sb_nb_cfg,
            entries,
            groups_added: groups_add
                .iter()
                .map(|(id, k, _)| (*id, k.clone()))
                .collect(),
            groups_deleted: groups_del,
            meters_added: meters_add.clone(),
            meters_deleted: meters_del.clone(),
            next_op: 0,
            encoded: false,
        });
        let mut meter_mods: Vec<MeterMod> = meters_add.into_iter().map(|(_, m)| m).collect();
        let complete = self.encode_put_part(&mut bundle, &mut meter_mods);
        Some(Put {
            session,
            seq,
            flush_zones: flush,
            ct_flush: self.lb_flushes.take_pending(),
            meters_add: meter_mods,
            bundle,
            complete,
            rest: None,
            meters_del: meters_del
                .into_iter()
                .map(|id| MeterMod {
                    command: openflow::wire::meter_mod::OFPMC_DELETE,
                    meter_id: id,
                    ..MeterMod::default()
                })
                .collect(),
        })
    }

    /// The next part of the put whose first part [`Actions::put`] carried (when it was not
    /// `complete`), and whether it is the last; `None` when no put is being encoded. Call
    /// it until the last part before the next [`Engine::run`]: the parts are computed from
    /// the flow table as it was when the put was made.
    pub fn next_put_part(&mut self) -> Option<BundlePart> {
        if self.install.in_flight.as_ref().is_none_or(|f| f.encoded) {
            return None;
        }
        let mut bundle = BundleBuilder::new(BUNDLE_FLAGS);
        let mut meters = Vec::new();
        let last = self.encode_put_part(&mut bundle, &mut meters);
        Some(BundlePart {
            before: meters.into_iter().map(Message::MeterMod).collect(),
            bundle,
            last,
        })
    }

    /// Encodes up to a part's worth of flow mods ([`PUT_PART_MESSAGES`] unless set) of the put in flight into `bundle`
    /// (compiling more of a streamed compile when they run out, with the meters its flows
    /// need added to `meters`), then, once no flow mod remains, its group deletes; true
    /// when nothing remains.
    pub(super) fn encode_put_part(
        &mut self,
        bundle: &mut BundleBuilder,
        meters: &mut Vec<MeterMod>,
    ) -> bool {
        let mut room = self.opts.put_part_flows();
        loop {
            if !self.encode_flow_mods(bundle, &mut room) {
                return false;
            }
            if self.install.streamed.is_none() {
                break;
            }
            self.compile_streamed_batch();
            self.take_streamed_changes(bundle, meters);
        }
        let Some(InFlight {
            entries,
            groups_deleted,
            encoded,
            ..
        }) = self.install.in_flight.as_mut()
        else {
            return true;
        };
        for id in groups_deleted.iter() {
            if bundle
                .push_message(&Message::GroupMod(GroupMod {
                    command: OFPGC_DELETE,
                    command_bucket_id: 0xffff_ffff,
                    group: Group {
                        group_id: *id,
                        ..Group::default()
                    },
                }))
                .is_ok()
            {
                entries.push(None);
            }
        }
        *encoded = true;
        true
    }

    /// Encodes the put's pending flow mods into `bundle`, at most `room` of them (less
    /// what it encodes); false when the room ran out first.
    pub(super) fn encode_flow_mods(
        &mut self,
        bundle: &mut BundleBuilder,
        room: &mut usize,
    ) -> bool {
        let Some(InFlight {
            batch,
            entries,
            next_op,
            ..
        }) = self.install.in_flight.as_mut()
        else {
            return true;
        };
        let mut more = false;
        for (after, op) in self.flows.batch_ops(batch, *next_op) {
            if *room == 0 {
                more = true;
                break;
            }
            *room -= 1;
            *next_op = after;
            let r = bundle.try_push_raw(14, |out| {
                openflow::flow::encode_flow_mod_body(
                    out,
                    op.command,
                    op.table,
                    op.priority,
                    op.cookie,
                    op.m,
                    op.actions,
                )
            });
            match r {
                Ok(_) => {
                    entries.push(Some(op.entry));
                    self.stats.flow_mods += 1;
                    crate::coverage::OFCTRL_FLOW_MOD.inc();
                }
                Err(e) => {
                    crate::vlog_rl!(WARN, &crate::vlog::limits::REFUSED_FLOW, target: "ofctrl", "flow not encodable ({e}): table={} priority={} {}", op.table, op.priority, op.m);
                    self.stats.rejected_flows += 1;
                }
            }
        }
        !more
    }

    /// Compiles the next batch of a streamed compile into the flow table.
    pub(super) fn compile_streamed_batch(&mut self) {
        let Some(mut sc) = self.install.streamed.take() else {
            return;
        };
        let started = Instant::now();
        // Parsed matches and actions serve the lflows of one batch (an lflow's match on
        // its other datapaths): kept longer they grow to a quarter of the peak memory.
        if sc.next > 0 {
            sc.cache.forget_parsed();
        }
        let end = (sc.next + self.opts.compile_batch_lflows()).min(sc.lflows.len());
        let table = self.inputs.sb.replica.table::<LogicalFlow>();
        let batch: Vec<(&Uuid, &LogicalFlow)> = sc.lflows[sc.next..end]
            .iter()
            .filter_map(|u| Some((u, table?.get(u)?)))
            .collect();
        let view = SbView::from_parts(&self.inputs.sb, &self.ids, &self.view.parts);
        let cx = Context {
            view: &view,
            layout: &sc.layout,
            cache: &sc.cache,
            only_dp: None,
            limit: crate::lflow::DEFAULT_FLOW_LIMIT,
        };
        let compiled = compile_lflow_list(&cx, &batch, sc.threads);
        self.stats.bad_rows += apply_compiled(
            &mut self.flows,
            &mut self.uses,
            &mut self.failures,
            &self.ids,
            compiled,
        );
        sc.next = end;
        sc.spent += started.elapsed();
        self.stats.last_phases.compile += started.elapsed();
        if sc.next < sc.lflows.len() {
            self.install.streamed = Some(sc);
        } else {
            tracing::debug!(target: "main", "streamed compile: {} logical flows compiled in {} us", sc.lflows.len(), sc.spent.as_micros());
        }
    }

    /// Compiles what is left of a streamed compile at once (its put will not carry it).
    pub(super) fn finish_streamed_compile(&mut self) {
        while self.install.streamed.is_some() {
            self.compile_streamed_batch();
        }
    }

    /// Adds what the last streamed batch changed to the put in flight, with the groups and
    /// meters its flows use that the switch does not have yet (groups go in the bundle
    /// before the flows; meters, which a bundle cannot hold, are sent ahead of the part).
    pub(super) fn take_streamed_changes(
        &mut self,
        bundle: &mut BundleBuilder,
        meters: &mut Vec<MeterMod>,
    ) {
        let Some(f) = self.install.in_flight.as_mut() else {
            return;
        };
        // Until the compile is complete only new flows go (see `FlowTable::take_more`).
        self.flows
            .take_more(&mut f.batch, self.install.streamed.is_some());
        let added: HashSet<u32> = f.groups_added.iter().map(|(id, _)| *id).collect();
        if let Ok(t) = self.ids.groups.lock() {
            for (id, k, g) in t.iter() {
                let installed = self.install.installed_groups.get(&id);
                if added.contains(&id) || installed == Some(k) {
                    continue;
                }
                push_group_add(bundle, &mut f.entries, id, g, installed.is_some());
                f.groups_added.push((id, k.clone()));
            }
        }
        if let Ok(t) = self.ids.meters.lock() {
            for (id, _, m) in t.iter() {
                if f.meters_added.iter().any(|(sent, _)| *sent == id) {
                    continue;
                }
                if let Some(sent) = meter_to_send(self.install.installed_meters.get(&id), id, m) {
                    meters.push(sent.clone());
                    f.meters_added.push((id, sent));
                }
            }
        }
    }

    /// A put finished.
    pub fn put_done(&mut self, seq: u64, result: Result<(), PutError>) {
        self.finish_streamed_compile();
        self.install.ids_in_step = None;
        let Some(f) = self.install.in_flight.take() else {
            return;
        };
        if f.seq != seq {
            return;
        }
        match result {
            Ok(()) => {
                tracing::debug!(target: "ofctrl", "put {seq} in: {} flow-table entries, {} groups added, {} deleted, {} meters added, {} deleted", f.batch.len(), f.groups_added.len(), f.groups_deleted.len(), f.meters_added.len(), f.meters_deleted.len());
                self.flows.commit_batch(f.batch);
                for (id, k) in f.groups_added {
                    self.install.installed_groups.insert(id, k);
                }
                for id in f.groups_deleted {
                    self.install.installed_groups.remove(&id);
                }
                self.install.installed_meters.extend(f.meters_added);
                for id in f.meters_deleted {
                    self.install.installed_meters.remove(&id);
                }
                self.install.acked_seq = seq;
                // Zones unused since the start can go once the first put is in.
                self.runtime_work.inputs_dirty |= !self.initial_sync_done;
                self.initial_sync_done = true;
                let done: Vec<Uuid> = self
                    .sb_writes
                    .waiting_install
                    .iter()
                    .filter(|(_, s)| **s <= seq)
                    .map(|(u, _)| *u)
                    .collect();
                for u in done {
                    self.sb_writes.waiting_install.remove(&u);
                    self.sb_writes.installed_ports.insert(u);
                }
                if let Some(n) = f.nb_cfg {
                    // Exact only when no condition change was in flight (the flows then
                    // reflect every row the configuration needs).
                    if !self.conditions_pending() {
                        if self.sb_writes.nb_cfg_delay.is_zero() {
                            self.sb_writes.nb_cfg_acked = Some((n, super::super::now_ms()));
                        } else if self.sb_writes.nb_cfg_due.is_none_or(|d| d.0 != n) {
                            self.sb_writes.nb_cfg_due =
                                Some((n, Instant::now() + self.sb_writes.nb_cfg_delay));
                        }
                    }
                }
            }
            Err(PutError::Rejected(rejected)) => {
                self.stats.put_failures += 1;
                self.stats.nodes.install.abort += 1;
                self.flows.fail_batch(f.batch);
                // Nothing of the bundle was applied. Drop the owners of the refused flows
                // (counted, logged) and try the rest again.
                for (i, err) in rejected {
                    let Some(Some(entry)) = f.entries.get(i) else {
                        crate::vlog_rl!(WARN, &crate::vlog::limits::REFUSED_FLOW, target: "ofctrl", "switch refused bundle message {i}: {err}");
                        continue;
                    };
                    for o in self.flows.owners_of_entry(*entry) {
                        crate::vlog_rl!(WARN, &crate::vlog::limits::REFUSED_FLOW, target: "ofctrl", "switch refused a flow of {o}: {err}; its flows are left out");
                        self.flows.remove(o);
                        if let Some(u) = self.uses.remove(&o) {
                            self.ids.release(&u);
                        }
                        self.failures
                            .insert(o, format!("refused by the switch: {err}"));
                        self.stats.rejected_flows += 1;
                    }
                }
            }
            Err(PutError::Connection(e)) => {
                self.stats.put_failures += 1;
                self.stats.nodes.install.abort += 1;
                self.flows.fail_batch(f.batch);
                tracing::info!(target: "ofctrl", "put {seq} lost with the connection: {e}");
            }
        }
    }
}

/// Adds a group to a put's bundle (replacing the switch's group of that id when `replace`:
/// delete, then add).
fn push_group_add(
    bundle: &mut BundleBuilder,
    entries: &mut Vec<Option<u32>>,
    id: u32,
    g: &Group,
    replace: bool,
) {
    if replace {
        let _ = bundle.push_message(&Message::GroupMod(GroupMod {
            command: OFPGC_DELETE,
            command_bucket_id: 0xffff_ffff,
            group: Group {
                group_id: id,
                ..Group::default()
            },
        }));
        entries.push(None);
    }
    let mut g = g.clone();
    g.group_id = id;
    let add = GroupMod {
        command: OFPGC_ADD,
        command_bucket_id: 0xffff_ffff,
        group: g,
    };
    let add = Message::GroupMod(add);
    let pushed = match bundle.push_message(&add) {
        Ok(_) => {
            entries.push(None);
            Ok(())
        }
        // A group too large for one message goes as an add and bucket inserts.
        Err(openflow::wire::EncodeError::TooLong { .. }) => {
            let Message::GroupMod(add) = add else {
                unreachable!("built as a group mod above")
            };
            add.split(openflow::wire::bundle::MAX_BUNDLED_BODY)
                .and_then(|parts| {
                    parts.into_iter().try_for_each(|p| {
                        bundle.push_message(&Message::GroupMod(p))?;
                        // One entry per message of the bundle, as pushed.
                        entries.push(None);
                        Ok(())
                    })
                })
        }
        Err(e) => Err(e),
    };
    if let Err(e) = pushed {
        crate::vlog_rl!(WARN, &crate::vlog::limits::REFUSED_FLOW, target: "ofctrl", "group {id} not encodable: {e}");
    }
}

/// The meter mod that adds meter `id` (with statistics, as ovn-controller asks).
fn meter_add_mod(id: u32, m: &MeterMod) -> MeterMod {
    MeterMod {
        command: openflow::wire::meter_mod::OFPMC_ADD,
        meter_id: id,
        flags: m.flags | OFPMF_STATS,
        bands: m.bands.clone(),
    }
}

/// The meter mod that makes the switch's meter `id` (`installed`: as last sent or dumped)
/// what `wanted` says: an add, a modify when its flags or bands differ, none when it is
/// already so or has no bands to install (a `Meter` row not there yet).
fn meter_to_send(installed: Option<&MeterMod>, id: u32, wanted: &MeterMod) -> Option<MeterMod> {
    if wanted.bands.is_empty() {
        return None;
    }
    let add = meter_add_mod(id, wanted);
    match installed {
        None => Some(add),
        Some(i) if i.flags == add.flags && i.bands == add.bands => None,
        Some(_) => Some(MeterMod {
            command: openflow::wire::meter_mod::OFPMC_MODIFY,
            ..add
        }),
    }
}

/// The install stage's state: the OpenFlow session, what the switch has beside the flow
/// table (groups, meters, flows the table cannot hold) and the put in flight.
pub struct SwitchState {
    pub of_session: Option<SessionId>,
    /// Flows the switch has in a form the table cannot hold (deleted at the next put).
    pub(in crate::engine) foreign: Vec<ForeignFlow>,
    pub(in crate::engine) installed_groups: BTreeMap<u32, crate::view::GroupKey>,
    /// The switch's meters as last sent (or dumped): a Southbound `Meter` change modifies
    /// them in place.
    pub(in crate::engine) installed_meters: BTreeMap<u32, MeterMod>,
    pub(in crate::engine) put_seq: u64,
    pub(in crate::engine) in_flight: Option<InFlight>,
    /// The logical flows of a full compile still to compile, each batch as the put in
    /// flight needs more flows to send (the switch installs one part while the next is
    /// compiled).
    pub(in crate::engine) streamed: Option<StreamedCompile>,
    /// The group and meter id versions at which the switch had every wanted group and
    /// meter and nothing else (cleared whenever what the switch has may have moved).
    pub(in crate::engine) ids_in_step: Option<(u64, u64)>,
    pub(in crate::engine) acked_seq: u64,
}

impl SwitchState {
    pub(crate) fn new() -> Self {
        Self {
            of_session: None,
            foreign: Vec::new(),
            installed_groups: BTreeMap::new(),
            installed_meters: BTreeMap::new(),
            put_seq: 0,
            in_flight: None,
            streamed: None,
            ids_in_step: None,
            acked_seq: 0,
        }
    }
}

#[cfg(test)]
mod meter_tests {
    use super::meter_to_send;
    use openflow::wire::meter_mod::{OFPMC_ADD, OFPMC_MODIFY, OFPMF_PKTPS, OFPMF_STATS};
    use openflow::wire::{MeterBand, MeterMod};

    fn meter(rate: u32) -> MeterMod {
        MeterMod {
            flags: OFPMF_PKTPS,
            bands: vec![MeterBand {
                band_type: 1,
                rate,
                burst_size: 0,
                extra: [0; 4],
            }],
            ..MeterMod::default()
        }
    }

    #[test]
    fn a_meter_is_added_then_modified_when_its_bands_change_and_left_when_equal() {
        let added = meter_to_send(None, 7, &meter(100)).expect("an add");
        assert_eq!((added.command, added.meter_id), (OFPMC_ADD, 7));
        assert_eq!(added.flags, OFPMF_PKTPS | OFPMF_STATS);
        // As sent, or as the switch reports it: nothing to send.
        assert_eq!(meter_to_send(Some(&added), 7, &meter(100)), None);
        let modified = meter_to_send(Some(&added), 7, &meter(400)).expect("a modify");
        assert_eq!((modified.command, modified.meter_id), (OFPMC_MODIFY, 7));
        assert_eq!(modified.bands[0].rate, 400);
        // A name with no Meter row yet has no bands: nothing is installed.
        assert_eq!(meter_to_send(None, 7, &MeterMod::default()), None);
    }
}
