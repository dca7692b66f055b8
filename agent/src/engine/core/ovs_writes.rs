//! The local OVS writes stage: br-int's keys (`ct-zone-*`, `ovn-nb-cfg`), tunnels, patch
//! ports, `ovn-installed`, BFD, compared with what the OVS replica has when something they
//! follow changed. Part of the core's `impl Engine`; the comparison itself is
//! `engine/ovs_config.rs`.

use super::*;

/// What the local OVS configuration is compared with besides the replicas: interfaces
/// whose flows are in, conntrack zones, and the installed nb_cfg.
pub(super) type OvsSyncInputs = (BTreeSet<Uuid>, BTreeMap<String, u16>, Option<(i64, i64)>);

/// The stage's state: whether the local OVS needs comparing again, and with what it was.
pub struct OvsSync {
    /// The local OVS configuration needs comparing with what it should be.
    pub(in crate::engine) dirty: bool,
    pub(in crate::engine) inputs: Option<OvsSyncInputs>,
    /// The local OVS was compared during the start-up grace period: compare it again
    /// once that is over (unwanted patch ports go then).
    pub(in crate::engine) compare_after_startup: bool,
    /// The integration bridge tunnels were last made on (`None` until the first
    /// comparison): tunnel ports left elsewhere are cleared when it is set or changes.
    pub(in crate::engine) bridge: Option<String>,
}

impl OvsSync {
    pub(crate) fn new() -> Self {
        Self {
            dirty: true,
            inputs: None,
            compare_after_startup: false,
            bridge: None,
        }
    }
}

impl Engine {
    /// Compares the local OVS with what it should be, when something it follows changed
    /// and no OVS transaction is in flight; the writes go in `actions.ovs_txn`.
    pub(super) fn sync_local_ovs(
        &mut self,
        cfg: &ChassisConfig,
        chassis_uuid: Option<Uuid>,
        actions: &mut Actions,
    ) {
        let installed_ifaces: BTreeSet<Uuid> = self.installed_iface_uuids();
        let started_recently = self.started_recently(Instant::now());
        if !started_recently && std::mem::take(&mut self.ovs_sync.compare_after_startup) {
            self.ovs_sync.dirty = true;
        }
        let keys = BridgeKeys {
            ct_zones: &self.zones.by_name,
            nb_cfg: self.sb_writes.nb_cfg_acked,
            keep_unwanted_patches: started_recently,
        };
        let mut ovs_txn = Transaction::new(sbclient::vswitch::DATABASE);
        // BFD only once the rest is in (the tunnels it configures must exist). The inputs
        // are compared in place and copied only when they changed (this runs every run).
        let inputs_changed = self.ovs_sync.inputs.as_ref().is_none_or(|(i, z, n)| {
            *i != installed_ifaces || z != keys.ct_zones || *n != keys.nb_cfg
        });
        self.ovs_sync.dirty |= inputs_changed;
        let compare = !self.ovs_busy && self.ovs_sync.dirty;
        if compare {
            self.ovs_sync.dirty = false;
            self.ovs_sync.compare_after_startup |= started_recently;
            if inputs_changed {
                self.ovs_sync.inputs =
                    Some((installed_ifaces.clone(), keys.ct_zones.clone(), keys.nb_cfg));
            }
        }
        let mut cleared = false;
        if compare
            && self.ovs_sync.bridge.as_deref() != Some(cfg.bridge.as_str())
            && binding::bridge(&self.inputs.ovs, &cfg.bridge).is_some()
        {
            cleared = super::super::tunnels::clear_old_tunnels(
                &self.inputs.ovs,
                cfg,
                self.ovs_sync.bridge.as_deref(),
                &mut ovs_txn,
            );
            self.ovs_sync.bridge = Some(cfg.bridge.clone());
        }
        let mirrors = |txn: &mut Transaction| {
            binding::bridge(&self.inputs.ovs, &cfg.bridge).is_some_and(|(u, br)| {
                super::super::mirror::sync(
                    &self.inputs.ovs,
                    &self.inputs.sb.replica,
                    &self.runtime,
                    (*u, br),
                    txn,
                )
            })
        };
        let can_unplug = !started_recently;
        let plugging = |txn: &mut Transaction| {
            let (Some(uuid), false) = (chassis_uuid, self.opts.vif_plug.is_empty()) else {
                return false;
            };
            binding::bridge(&self.inputs.ovs, &cfg.bridge).is_some_and(|(u, br)| {
                super::super::vif_plug::sync(
                    &self.inputs.ovs,
                    &self.inputs.sb.replica,
                    &self.opts.vif_plug,
                    super::super::vif_plug::Me {
                        uuid,
                        name: &cfg.system_id,
                    },
                    (*u, br),
                    can_unplug,
                    txn,
                )
            })
        };
        let ovs_dirty = compare
            && (cleared
                | ovs_config::sync(
                    &self.inputs.ovs,
                    &self.inputs.sb.replica,
                    cfg,
                    &self.runtime,
                    &installed_ifaces,
                    &keys,
                    &mut ovs_txn,
                )
                | mirrors(&mut ovs_txn)
                | plugging(&mut ovs_txn)
                || self.sync_bfd(cfg, chassis_uuid, &mut ovs_txn));
        if ovs_dirty {
            actions.ovs_txn = Some(ovs_txn);
            self.stats.nodes.ovs_writes.compute += 1;
        }
    }
}
