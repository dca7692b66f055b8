//! The main loop's side of pinctrl: the task (its own connection to the bridge), the
//! snapshot of the engine it answers from, the announcements it sends, and the Southbound
//! writes it asks for (MAC bindings learnt, IGMP groups), sent in their own transaction.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::tasks::{spawn_txn, Done, Sb};
use crate::engine::core::Engine;
use crate::pinctrl::buffer::SbWrite;
use crate::pinctrl::{announce::Announcements, igmp, Pinctrl, Stats, View};

pub(super) struct PinctrlLink {
    pub(super) task: Option<Pinctrl>,
    pub(super) stats: Arc<Stats>,
    /// MAC bindings it learnt and not yet written.
    writes: Vec<SbWrite>,
    /// Whether its snapshot must be rebuilt.
    pub(super) view_dirty: bool,
    /// The input generation the announcements were planned at (they follow only inputs).
    announced_at: Option<u64>,
    /// The snooping tables pinctrl reported last, and whether IGMP_Group may differ.
    igmp_wanted: Option<igmp::Snapshot>,
    pub(super) igmp_dirty: bool,
    announcements: Announcements,
}

impl PinctrlLink {
    pub(super) fn new() -> Self {
        Self {
            task: None,
            stats: Arc::new(Stats::default()),
            writes: Vec::new(),
            view_dirty: true,
            announced_at: None,
            igmp_wanted: None,
            igmp_dirty: false,
            announcements: Announcements::default(),
        }
    }

    /// A batch of writes from the task; `None`: the task is gone.
    pub(super) fn on_writes(&mut self, batch: Option<Vec<SbWrite>>) {
        let Some(batch) = batch else {
            if let Some(gone) = self.task.take() {
                tracing::warn!(target: "pinctrl", "{}: pinctrl task ended; starting it again", gone.target);
            }
            return;
        };
        for w in batch {
            match w {
                SbWrite::Igmp(snap) => {
                    self.igmp_wanted = Some(snap);
                    self.igmp_dirty = true;
                }
                w => self.writes.push(w),
            }
        }
    }

    /// Starts the task on the bridge's management socket `target` unless it runs there.
    pub(super) fn follow_bridge(&mut self, engine: &Engine, target: &str) {
        if self.task.as_ref().is_some_and(|p| p.target == target) {
            return;
        }
        let view = pin_view(engine, &self.announcements.current);
        match crate::pinctrl::spawn(target, Arc::new(view), self.stats.clone()) {
            Ok(p) => self.task = Some(p),
            Err(e) => tracing::warn!(target: "pinctrl", "{target}: {e}"),
        }
        self.view_dirty = false;
    }

    /// After an engine run: the announcements, pinctrl's Southbound writes (when no other
    /// Southbound transaction is in flight: `sb_busy`), and the task's snapshot. `due`: no
    /// input is queued (the snapshot and plans are rebuilt from whole tables: while more
    /// input waits, the engine answers it first). Returns whether a Southbound transaction
    /// was sent.
    pub(super) fn after_run(
        &mut self,
        engine: &Engine,
        due: bool,
        sb: Option<&Sb>,
        sb_busy: &mut bool,
        done: &mpsc::UnboundedSender<Done>,
    ) -> bool {
        // Gratuitous ARPs follow bindings, interfaces and HA activity: planned every run
        // (local ports and local switches only).
        if due
            && self.task.is_some()
            && engine.sb_connected
            && self.announced_at != Some(engine.input_generation())
        {
            self.announced_at = Some(engine.input_generation());
            let planned = crate::pinctrl::announce::plan(
                &engine.inputs.sb.replica,
                &engine.runtime,
                &engine.ifaces,
            );
            let (changed, learn) = self.announcements.update(planned);
            self.view_dirty |= changed;
            self.writes.extend(learn);
        }
        let sent = self.send_writes(engine, sb, sb_busy, done);
        self.refresh_view(engine, due);
        sent
    }

    /// MAC bindings and IGMP groups go in their own transaction, when the engine's is done.
    fn send_writes(
        &mut self,
        engine: &Engine,
        sb: Option<&Sb>,
        sb_busy: &mut bool,
        done: &mpsc::UnboundedSender<Done>,
    ) -> bool {
        self.igmp_dirty |= self.view_dirty;
        let igmp_due = self.igmp_dirty && self.igmp_wanted.is_some() && engine.sb_connected;
        let (true, false, Some(s)) = (!self.writes.is_empty() || igmp_due, *sb_busy, sb) else {
            return false;
        };
        let writes = std::mem::take(&mut self.writes);
        let mut txn = crate::pinctrl::sb_write::txn(
            &engine.inputs.sb.replica,
            &writes,
            crate::engine::now_ms(),
        );
        if let (true, Some(snap), Some(chassis)) =
            (igmp_due, self.igmp_wanted.as_ref(), engine.runtime.chassis)
        {
            self.igmp_dirty = false;
            let t =
                txn.get_or_insert_with(|| sbclient::Transaction::new(sbclient::ovn_sb::DATABASE));
            let local = &engine.runtime.local_datapaths;
            igmp::sync(
                &engine.inputs.sb.replica,
                chassis,
                |dp| local.contains_key(&dp),
                snap,
                t,
            );
            if t.is_empty() {
                txn = None;
            }
        }
        if let Some(txn) = txn {
            *sb_busy = true;
            crate::coverage::SB_TXN.inc();
            spawn_txn(s.client.clone(), txn, done.clone(), Done::PinTxn);
            return true;
        }
        false
    }

    /// The task's snapshot, rebuilt when something it holds moved.
    fn refresh_view(&mut self, engine: &Engine, due: bool) {
        // The snapshot also carries table numbers: a layout change rebuilds it too.
        if let Some(p) = self.task.as_ref() {
            let l = engine.layout();
            let v = p.view.borrow();
            self.view_dirty |= v.output_entry_table != l.output_entry
                || v.egress_table != l.egress
                || v.ingress_table != l.ingress
                || v.local_output_table != l.local_output
                || v.dns.forms != l.dialect.dns
                || v.prefixd_request_to_all != l.dialect.prefixd_request_to_all_servers
                || v.chassis != engine.runtime.chassis;
        }
        if let (true, true, Some(p)) = (due, self.view_dirty, self.task.as_ref()) {
            let view = pin_view(engine, &self.announcements.current);
            p.view.send_if_modified(|v| {
                let new = **v != view;
                if new {
                    *v = Arc::new(view);
                }
                new
            });
            self.view_dirty = false;
        }
    }
}

/// The pinctrl task's snapshot of the engine.
fn pin_view(engine: &Engine, announce: &[crate::pinctrl::garp::Announce]) -> View {
    let l = engine.layout();
    let mut view = View::from_replica(&engine.inputs.sb.replica, l.output_entry, l.egress);
    view.ingress_table = l.ingress;
    view.dns.forms = l.dialect.dns;
    view.prefixd_request_to_all = l.dialect.prefixd_request_to_all_servers;
    view.announce = announce.to_vec();
    let local = &engine.runtime.local_datapaths;
    view.with_services(
        &engine.inputs.sb.replica,
        engine.runtime.chassis,
        l.local_output,
    )
    .with_multicast(&engine.inputs.sb.replica, |dp| local.contains_key(&dp))
    .with_bfd(&engine.inputs.sb.replica, |name| resident(engine, name))
    .with_prefixd(
        &engine.inputs.sb.replica,
        |dp| local.contains_key(dp),
        |gw| {
            let here = gw.chassis.is_some() && gw.chassis == engine.runtime.chassis;
            (gw.type_ == "l3gateway" && here)
                || resident(engine, &format!("cr-{}", gw.logical_port))
        },
    )
}

/// Whether port `name` is active on this chassis (bound here, or the active member of its
/// HA group).
fn resident(engine: &Engine, name: &str) -> bool {
    crate::southbound::port_binding_named(&engine.inputs.sb.replica, name).is_some_and(|(u, pb)| {
        (pb.chassis.is_some() && pb.chassis == engine.runtime.chassis)
            || engine.runtime.active_ha.contains(u)
    })
}
