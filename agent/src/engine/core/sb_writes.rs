//! The Southbound writes of a run: claims and releases of port bindings (with their
//! encap), and `up`. Part of the core's `impl Engine`, in a file of its own.

use super::*;

impl Engine {
    /// Claims, releases and encaps into `txn`; true if it wrote something.
    pub(super) fn write_claims(
        &mut self,
        plan: &binding::BindingPlan,
        me: Option<Uuid>,
        txn: &mut Transaction,
        now: Instant,
    ) -> bool {
        let Some(me) = me else { return false };
        let pbs = self.inputs.sb.replica.table::<PortBinding>();
        let name_of = |u: &Uuid| {
            pbs.and_then(|t| t.get(u))
                .map_or_else(|| u.to_string(), |p| p.logical_port.clone())
        };
        let mut wrote = false;
        for (u, encap) in &plan.claim {
            let pb = pbs.and_then(|t| t.get(u));
            if pb.is_some_and(|p| p.chassis != Some(me)) {
                tracing::info!(target: "binding", "Claiming lport {} for this chassis.", name_of(u));
                for mac in pb.map(|p| p.mac.iter()).into_iter().flatten() {
                    tracing::info!(target: "binding", "{}: Claiming {mac}", name_of(u));
                }
                crate::coverage::BINDING_CLAIM.inc();
                self.sb_writes.last_claim.insert(*u, now);
            }
            let mut cols = Columns::new()
                .set("chassis", Datum::Set(vec![Atom::Uuid(me)]))
                .set(
                    "encap",
                    Datum::Set(encap.iter().map(|e| Atom::Uuid(*e)).collect()),
                );
            if pb.is_some_and(|p| p.up.is_some() && p.chassis != Some(me)) {
                cols = cols.set("up", Datum::Set(vec![Atom::Boolean(false)]));
            }
            txn.update("Port_Binding", &by_uuid(*u), cols);
            self.sb_writes.claims_in_flight.insert(*u);
            // Gateway-type claims have no interface to install: up at once.
            if matches!(plan.bound.get(u), Some(BindingKind::Claimed))
                && pb.is_some_and(|p| p.up.is_some())
            {
                txn.update(
                    "Port_Binding",
                    &by_uuid(*u),
                    Columns::new().set("up", Datum::Set(vec![Atom::Boolean(true)])),
                );
            }
            self.sb_writes.installed_ports.remove(u);
            wrote = true;
        }
        for (u, encap) in &plan.claim_additional {
            txn.mutate(
                "Port_Binding",
                &by_uuid(*u),
                vec![(
                    "additional_chassis".into(),
                    Mutator::Insert,
                    Datum::Set(vec![Atom::Uuid(me)]),
                )],
            );
            if let Some(e) = encap {
                txn.mutate(
                    "Port_Binding",
                    &by_uuid(*u),
                    vec![(
                        "additional_encap".into(),
                        Mutator::Insert,
                        Datum::Set(vec![Atom::Uuid(*e)]),
                    )],
                );
            }
            wrote = true;
        }
        for u in &plan.release {
            tracing::info!(target: "binding", "Releasing lport {} from this chassis.", name_of(u));
            crate::coverage::BINDING_RELEASE.inc();
            let pb = pbs.and_then(|t| t.get(u));
            let mut cols = Columns::new()
                .set("chassis", Datum::Set(vec![]))
                .set("encap", Datum::Set(vec![]))
                .set("virtual_parent", Datum::Set(vec![]));
            if pb.is_some_and(|p| p.up.is_some()) {
                cols = cols.set("up", Datum::Set(vec![Atom::Boolean(false)]));
                if pb.is_some_and(|p| p.up == Some(true)) {
                    tracing::info!(target: "binding", "Setting lport {} down in Southbound", name_of(u));
                }
            }
            txn.update("Port_Binding", &by_uuid(*u), cols);
            self.sb_writes.installed_ports.remove(u);
            self.sb_writes.waiting_install.remove(u);
            wrote = true;
        }
        for (u, encaps) in &plan.release_additional_encap {
            txn.mutate(
                "Port_Binding",
                &by_uuid(*u),
                vec![(
                    "additional_encap".into(),
                    Mutator::Delete,
                    Datum::Set(encaps.iter().map(|e| Atom::Uuid(*e)).collect()),
                )],
            );
            wrote = true;
        }
        for u in &plan.release_additional {
            txn.mutate(
                "Port_Binding",
                &by_uuid(*u),
                vec![(
                    "additional_chassis".into(),
                    Mutator::Delete,
                    Datum::Set(vec![Atom::Uuid(me)]),
                )],
            );
            wrote = true;
        }
        // Ports bound here whose flows are not known to be in wait for the next put.
        let next = self.install.put_seq + 1;
        for u in plan.bound.keys() {
            if !self.sb_writes.installed_ports.contains(u) {
                self.sb_writes.waiting_install.entry(*u).or_insert(next);
            }
        }
        self.sb_writes
            .waiting_install
            .retain(|u, _| plan.bound.contains_key(u));
        self.sb_writes
            .installed_ports
            .retain(|u| plan.bound.contains_key(u));
        wrote
    }

    /// `up=true` for bound ports whose flows are in; true if it wrote something.
    pub(super) fn write_port_up(&self, txn: &mut Transaction) -> bool {
        let Some(pbs) = self.inputs.sb.replica.table::<PortBinding>() else {
            return false;
        };
        let mut wrote = false;
        for u in &self.sb_writes.installed_ports {
            let Some(pb) = pbs.get(u) else { continue };
            if pb.up == Some(false)
                && pb.chassis == self.runtime.chassis
                && !self.sb_writes.up_in_flight.contains(u)
            {
                tracing::info!(target: "binding", "Setting lport {} up in Southbound", pb.logical_port);
                txn.update(
                    "Port_Binding",
                    &by_uuid(*u),
                    Columns::new().set("up", Datum::Set(vec![Atom::Boolean(true)])),
                );
                wrote = true;
            }
        }
        if let (Some(cfg), Some((nb, ts))) = (&self.cfg, self.sb_writes.nb_cfg_acked) {
            wrote |= super::super::chassis::ack_nb_cfg(
                &self.inputs.sb.replica,
                &cfg.system_id,
                nb,
                ts,
                txn,
            );
        }
        wrote
    }

    /// `up` for ports whose flows are in and whose claim is still in flight, each behind a
    /// `wait` for the claim (the server runs a connection's transactions in order: the
    /// port goes up right after its claim commits, not a round trip later). True if it
    /// wrote something.
    pub(super) fn write_port_up_behind_claims(&mut self, txn: &mut Transaction) -> bool {
        let (Some(pbs), Some(me)) = (
            self.inputs.sb.replica.table::<PortBinding>(),
            self.runtime.chassis,
        ) else {
            return false;
        };
        let mut wrote = false;
        for u in self
            .sb_writes
            .installed_ports
            .iter()
            .filter(|u| self.sb_writes.claims_in_flight.contains(u))
        {
            let Some(pb) = pbs.get(u) else { continue };
            if pb.up != Some(false)
                || pb.chassis == Some(me)
                || self.sb_writes.up_in_flight.contains(u)
            {
                continue;
            }
            tracing::info!(target: "binding", "Setting lport {} up in Southbound", pb.logical_port);
            let claimed = Columns::new().set("chassis", Datum::Set(vec![Atom::Uuid(me)]));
            txn.wait(
                "Port_Binding",
                &by_uuid(*u),
                &["chassis"],
                sbclient::transaction::WaitUntil::Equal,
                vec![claimed],
                Some(0),
            );
            txn.update(
                "Port_Binding",
                &by_uuid(*u),
                Columns::new().set("up", Datum::Set(vec![Atom::Boolean(true)])),
            );
            self.sb_writes.up_in_flight.insert(*u);
            wrote = true;
        }
        wrote
    }
}

/// The Southbound writes' state: claims and `up` writes in flight, the ports waiting for
/// their flows before they go up, and the `nb_cfg` this chassis reports.
pub struct SbWriteState {
    pub(in crate::engine) last_claim: HashMap<Uuid, Instant>,
    /// Bound VIF ports (PB uuid) waiting for the put that carries their flows.
    pub(in crate::engine) waiting_install: HashMap<Uuid, u64>,
    /// Bound ports whose flows are in.
    pub installed_ports: BTreeSet<Uuid>,
    pub nb_cfg_acked: Option<(i64, i64)>,
    /// `debug/delay-nb-cfg-report`: how long an installed nb_cfg waits before it is
    /// reported, and the one waiting (with when it is due).
    pub nb_cfg_delay: std::time::Duration,
    pub(in crate::engine) nb_cfg_due: Option<(i64, Instant)>,
    /// Ports claimed by the Southbound transaction in flight, and ports whose `up` went in
    /// an [`Actions::sb_up_txn`] still in flight.
    pub(in crate::engine) claims_in_flight: HashSet<Uuid>,
    pub(in crate::engine) up_in_flight: HashSet<Uuid>,
}

impl SbWriteState {
    pub(crate) fn new() -> Self {
        Self {
            last_claim: HashMap::new(),
            waiting_install: HashMap::new(),
            installed_ports: BTreeSet::new(),
            nb_cfg_acked: None,
            nb_cfg_delay: std::time::Duration::ZERO,
            nb_cfg_due: None,
            claims_in_flight: HashSet::new(),
            up_in_flight: HashSet::new(),
        }
    }
}
