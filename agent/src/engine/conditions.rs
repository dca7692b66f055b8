//! Southbound monitor conditions (reference §6): only the rows of local interest, as
//! ovn-controller asks for them; `ovn-monitor-all=true` asks for everything.

use std::collections::BTreeMap;

use sbclient::datum::{Atom, Datum};
use sbclient::{Clause, Condition, Function, Uuid};

/// The tables ovn-controller conditions.
pub const CONDITIONED: [&str; 11] = [
    "Port_Binding",
    "Logical_Flow",
    "Logical_DP_Group",
    "MAC_Binding",
    "Multicast_Group",
    "IP_Multicast",
    "DNS",
    "Controller_Event",
    "IGMP_Group",
    "Chassis_Private",
    "Chassis_Template_Var",
];

/// What the conditions depend on.
pub struct Interest<'a> {
    pub chassis_name: &'a str,
    pub chassis: Option<Uuid>,
    pub local_datapaths: &'a [Uuid],
    /// Names of the OVS interfaces' iface-ids on br-int.
    pub local_iface_ids: &'a [String],
    pub monitor_all: bool,
}

fn uuid_clause(column: &str, u: Uuid) -> Clause {
    Clause::new(column, Function::Eq, Datum::Set(vec![Atom::Uuid(u)]))
}

fn str_clause(column: &str, s: &str) -> Clause {
    Clause::new(column, Function::Eq, Datum::Set(vec![Atom::from(s)]))
}

/// The condition of every conditioned table.
pub fn conditions(i: &Interest<'_>) -> BTreeMap<&'static str, Condition> {
    let mut out = BTreeMap::new();
    if i.monitor_all {
        for t in CONDITIONED {
            out.insert(t, Condition::all());
        }
        return out;
    }
    let per_dp = |column: &str| -> Vec<Clause> {
        i.local_datapaths
            .iter()
            .map(|d| uuid_clause(column, *d))
            .collect()
    };
    let or_false = |v: Vec<Clause>| {
        if v.is_empty() {
            Condition::none()
        } else {
            Condition(v).normalized()
        }
    };
    let mut pb = vec![
        str_clause("type", "patch"),
        str_clause("type", "chassisredirect"),
        str_clause("type", "external"),
    ];
    if let Some(me) = i.chassis {
        pb.push(uuid_clause("chassis", me));
        pb.push(uuid_clause("requested_chassis", me));
    } else {
        pb.push(str_clause("type", "l2gateway"));
        pb.push(str_clause("type", "l3gateway"));
    }
    for (k, v) in [
        ("l2gateway-chassis", i.chassis_name),
        ("l3gateway-chassis", i.chassis_name),
    ] {
        pb.push(Clause::new(
            "options",
            Function::Includes,
            Datum::Map(vec![(Atom::from(k), Atom::from(v))]),
        ));
    }
    for id in i.local_iface_ids {
        pb.push(str_clause("logical_port", id));
        pb.push(str_clause("parent_port", id));
    }
    pb.extend(per_dp("datapath"));
    out.insert("Port_Binding", or_false(pb));
    let mut lf = per_dp("logical_datapath");
    lf.push(Clause::new(
        "logical_dp_group",
        Function::Ne,
        Datum::Set(vec![]),
    ));
    out.insert("Logical_Flow", or_false(lf));
    out.insert("Logical_DP_Group", Condition::all());
    for t in ["MAC_Binding", "Multicast_Group", "IP_Multicast"] {
        out.insert(t, or_false(per_dp("datapath")));
    }
    out.insert(
        "DNS",
        or_false(
            i.local_datapaths
                .iter()
                .map(|d| {
                    Clause::new(
                        "datapaths",
                        Function::Includes,
                        Datum::Set(vec![Atom::Uuid(*d)]),
                    )
                })
                .collect(),
        ),
    );
    let by_chassis = match i.chassis {
        Some(me) => or_false(vec![uuid_clause("chassis", me)]),
        None => Condition::none(),
    };
    out.insert("Controller_Event", by_chassis.clone());
    out.insert("IGMP_Group", by_chassis);
    out.insert(
        "Chassis_Private",
        match i.chassis {
            Some(_) => or_false(vec![str_clause("name", i.chassis_name)]),
            // Before our Chassis exists, see every row so we never create a duplicate.
            None => Condition::all(),
        },
    );
    out.insert(
        "Chassis_Template_Var",
        or_false(vec![str_clause("chassis", i.chassis_name)]),
    );
    out
}

/// The monitor conditions the engine asked for, and the sequence numbers that tell
/// whether the server applies them yet.
pub struct MonitorConditions {
    pub(in crate::engine) requested: BTreeMap<&'static str, Condition>,
    pub(in crate::engine) requested_seq: u64,
    pub(in crate::engine) acked_seq: u64,
    /// Condition changes handed to the daemon whose sequence numbers have not come back yet
    /// (until they do, `requested_seq` does not show them).
    pub(in crate::engine) unnumbered: usize,
}

impl MonitorConditions {
    pub(crate) fn new() -> Self {
        Self {
            requested: BTreeMap::new(),
            requested_seq: 0,
            acked_seq: 0,
            unnumbered: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_before_and_after_the_chassis_exists() {
        let dps = [Uuid::from_u128(7)];
        let ids = ["vm1".to_owned()];
        let before = conditions(&Interest {
            chassis_name: "hv1",
            chassis: None,
            local_datapaths: &[],
            local_iface_ids: &ids,
            monitor_all: false,
        });
        assert_eq!(before["Chassis_Private"], Condition::all());
        assert_eq!(before["MAC_Binding"], Condition::none());
        let pb = serde_json::to_string(&before["Port_Binding"]).unwrap();
        assert!(pb.contains(r#"["type","==","l3gateway"]"#), "{pb}");
        let after = conditions(&Interest {
            chassis_name: "hv1",
            chassis: Some(Uuid::from_u128(1)),
            local_datapaths: &dps,
            local_iface_ids: &ids,
            monitor_all: false,
        });
        // Health checks: every Service_Monitor row, as ovn-controller (it filters them by
        // binding itself); controller events: only our chassis's.
        assert!(!after.contains_key("Service_Monitor"));
        let ce = serde_json::to_string(&after["Controller_Event"]).unwrap();
        assert!(
            ce.contains(r#"["chassis","==",["uuid","00000000-0000-0000-0000-000000000001"]]"#),
            "{ce}"
        );
        let lf = serde_json::to_string(&after["Logical_Flow"]).unwrap();
        assert!(
            lf.contains("logical_dp_group") && lf.contains("00000000-0000-0000-0000-000000000007"),
            "{lf}"
        );
        let all = conditions(&Interest {
            chassis_name: "hv1",
            chassis: None,
            local_datapaths: &[],
            local_iface_ids: &[],
            monitor_all: true,
        });
        assert!(all.values().all(|c| *c == Condition::all()));
    }
}
