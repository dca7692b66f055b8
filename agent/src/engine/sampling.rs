//! Sampling inputs from the local OVS: the `Flow_Sample_Collector_Set` ids that logical
//! flows' `sample` actions may use (ovn-controller drops a sample to a set that does not
//! exist), and the debug drop sampling of the physical stage (`SB_Global
//! options:debug_drop_collector_set`, on when br-int has that collector set).

use std::collections::BTreeSet;

use sbclient::ovn_sb::SbGlobal;
use sbclient::vswitch::FlowSampleCollectorSet;
use sbclient::Replica;

use super::binding::bridge;
use crate::runtime::DropSampling;

/// The ids of every `Flow_Sample_Collector_Set` row, whatever its bridge (as
/// ovn-controller 23.03 collects them).
pub fn collector_ids(ovs: &Replica) -> BTreeSet<u32> {
    ovs.table::<FlowSampleCollectorSet>()
        .into_iter()
        .flat_map(sbclient::Table::iter)
        .filter_map(|(_, s)| u32::try_from(s.id).ok())
        .collect()
}

/// Debug drop sampling: on when `debug_drop_collector_set` is a nonzero id and br-int has a
/// collector set with that id; the domain is `debug_drop_domain_id` (0 when unset or bad).
pub fn drop_sampling(sb: &Replica, ovs: &Replica, bridge_name: &str) -> Option<DropSampling> {
    let global = sb.table::<SbGlobal>()?.iter().next().map(|(_, g)| g)?;
    let option = |key: &str| {
        global
            .options
            .get(key)
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    };
    let collector_set_id = option("debug_drop_collector_set");
    if collector_set_id == 0 {
        return None;
    }
    let (br_uuid, _) = bridge(ovs, bridge_name)?;
    let present = ovs
        .table::<FlowSampleCollectorSet>()?
        .iter()
        .any(|(_, s)| s.bridge == *br_uuid && s.id == i64::from(collector_set_id));
    present.then(|| DropSampling {
        collector_set_id,
        obs_domain_id: option("debug_drop_domain_id"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    const BR_INT: &str = "00000000-0000-0000-0000-00000000a002";
    const BR_EX: &str = "00000000-0000-0000-0000-00000000a003";

    fn replica(db: &str, update: &Value) -> Replica {
        let mut r = Replica::new(db);
        if db == sbclient::vswitch::DATABASE {
            sbclient::vswitch::register_all(&mut r);
        } else {
            sbclient::ovn_sb::register_all(&mut r);
        }
        r.apply_snapshot(&serde_json::value::to_raw_value(update).unwrap())
            .unwrap();
        r
    }

    fn ovs(sets: &[(&str, i64, &str)]) -> Replica {
        let mut update = json!({"Bridge": {
            BR_INT: {"initial": {"name": "br-int"}},
            BR_EX: {"initial": {"name": "br-ex"}},
        }});
        let rows: serde_json::Map<String, Value> = sets
            .iter()
            .map(|(uuid, id, bridge)| {
                (
                    (*uuid).to_owned(),
                    json!({"initial": {"id": id, "bridge": ["uuid", bridge]}}),
                )
            })
            .collect();
        update["Flow_Sample_Collector_Set"] = Value::Object(rows);
        replica(sbclient::vswitch::DATABASE, &update)
    }

    fn sb(options: &[(&str, &str)]) -> Replica {
        let pairs: Vec<Value> = options.iter().map(|(k, v)| json!([k, v])).collect();
        replica(
            sbclient::ovn_sb::DATABASE,
            &json!({"SB_Global": {"00000000-0000-0000-0000-0000000000c1":
                {"initial": {"options": ["map", pairs]}}}}),
        )
    }

    const SET_A: &str = "00000000-0000-0000-0000-00000000d001";
    const SET_B: &str = "00000000-0000-0000-0000-00000000d002";

    #[test]
    fn collector_ids_are_every_bridges_sets() {
        let o = ovs(&[(SET_A, 123, BR_INT), (SET_B, 7, BR_EX)]);
        assert_eq!(collector_ids(&o), BTreeSet::from([7, 123]));
        assert!(collector_ids(&ovs(&[])).is_empty());
    }

    #[test]
    fn drop_sampling_needs_the_option_and_the_set_on_br_int() {
        let o = ovs(&[(SET_A, 123, BR_INT), (SET_B, 7, BR_EX)]);
        let on = sb(&[
            ("debug_drop_collector_set", "123"),
            ("debug_drop_domain_id", "1"),
        ]);
        assert_eq!(
            drop_sampling(&on, &o, "br-int"),
            Some(DropSampling {
                collector_set_id: 123,
                obs_domain_id: 1
            })
        );
        // The set is on another bridge, or missing, or the option is off.
        let elsewhere = sb(&[("debug_drop_collector_set", "7")]);
        assert_eq!(drop_sampling(&elsewhere, &o, "br-int"), None);
        assert_eq!(drop_sampling(&on, &ovs(&[]), "br-int"), None);
        assert_eq!(drop_sampling(&sb(&[]), &o, "br-int"), None);
        let zero = sb(&[("debug_drop_collector_set", "0")]);
        assert_eq!(drop_sampling(&zero, &o, "br-int"), None);
        // No domain: 0.
        let no_domain = sb(&[("debug_drop_collector_set", "123")]);
        assert_eq!(
            drop_sampling(&no_domain, &o, "br-int").map(|d| d.obs_domain_id),
            Some(0)
        );
    }
}
