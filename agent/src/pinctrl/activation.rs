//! `activation_strategy_rarp` packet-ins: the RARP a hypervisor sends from a live-migrated
//! port's new home. The port is then activated on this chassis: its name is appended to the
//! port's `options:additional-chassis-activated` (comma-separated), as ovn-controller writes
//! it, and the physical stage stops blocking the port's interface here.

use std::collections::BTreeSet;
use std::collections::HashMap;

use sbclient::ovn_sb::{Chassis, DatapathBinding, PortBinding};
use sbclient::transaction::by_uuid;
use sbclient::{Replica, Transaction, Uuid};

use crate::vlog::RateLimit;

static UNKNOWN_PORT: RateLimit = RateLimit::new(5, 20);

/// At most this many activations wait for the main loop.
pub const MAX_PENDING: usize = 1000;

/// A port to activate here: (datapath key, port key), from the packet-in's metadata and
/// logical inport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Activation {
    pub datapath: u32,
    pub port: u32,
}

/// Activations waiting for the main loop.
#[derive(Debug, Default)]
pub struct Pending {
    ports: BTreeSet<Activation>,
}

impl Pending {
    /// `false` when the table is full and `a` is new (dropped).
    pub fn push(&mut self, a: Activation) -> bool {
        if self.ports.len() >= MAX_PENDING && !self.ports.contains(&a) {
            return false;
        }
        self.ports.insert(a);
        true
    }

    pub fn is_empty(&self) -> bool {
        self.ports.is_empty()
    }

    pub fn take(&mut self) -> Vec<Activation> {
        std::mem::take(&mut self.ports).into_iter().collect()
    }
}

/// Adds `chassis`' name to `options:additional-chassis-activated` of each port of
/// `ports` that does not name it yet.
pub fn write(sb: &Replica, ports: &[Activation], chassis: Uuid, txn: &mut Transaction) {
    let (Some(dps), Some(pbs), Some(name)) = (
        sb.table::<DatapathBinding>(),
        sb.table::<PortBinding>(),
        sb.table::<Chassis>()
            .and_then(|t| t.get(&chassis))
            .map(|c| c.name.as_str()),
    ) else {
        return;
    };
    let dp_uuid: HashMap<i64, Uuid> = dps.iter().map(|(u, d)| (d.tunnel_key, *u)).collect();
    for a in ports {
        let found = dp_uuid.get(&i64::from(a.datapath)).and_then(|dp| {
            pbs.iter()
                .find(|(_, pb)| pb.datapath == *dp && pb.tunnel_key == i64::from(a.port))
        });
        let Some((uuid, pb)) = found else {
            crate::vlog_rl!(WARN, &UNKNOWN_PORT, target: "pinctrl",
                "activation: unknown logical port with datapath {} and port {}", a.datapath, a.port);
            continue;
        };
        if crate::physical::activated_on(pb, name) {
            continue;
        }
        let list = match pb.options.get("additional-chassis-activated") {
            Some(have) => format!("{have},{name}"),
            None => name.to_owned(),
        };
        txn.set_map_keys(
            "Port_Binding",
            &by_uuid(*uuid),
            "options",
            &[("additional-chassis-activated", list.as_str())],
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::southbound::Southbound;

    const DP: &str = "00000000-0000-4000-8000-0000000000d1";
    const ME: &str = "00000000-0000-4000-8000-0000000000c2";

    fn sb(options: &str) -> Southbound {
        let mut sb = Southbound::default();
        let text = format!(
            r#"{{"caption":"Datapath_Binding table","headings":["_uuid","tunnel_key"],"data":[[["uuid","{DP}"],1]]}}
               {{"caption":"Chassis table","headings":["_uuid","name"],"data":[[["uuid","{ME}"],"hv2"]]}}
               {{"caption":"Port_Binding table","headings":["_uuid","logical_port","datapath","tunnel_key","options"],"data":[
                 [["uuid","00000000-0000-4000-8000-0000000000a1"],"migrator",["uuid","{DP}"],1,{options}]]}}"#
        );
        sb.load_json(&text).expect("loads");
        sb
    }

    fn ops(sb: &Southbound, port: u32) -> String {
        let mut txn = Transaction::new(sbclient::ovn_sb::DATABASE);
        let me: Uuid = ME.parse().expect("uuid");
        write(
            &sb.replica,
            &[Activation { datapath: 1, port }],
            me,
            &mut txn,
        );
        txn.to_params().to_string()
    }

    #[test]
    fn the_chassis_name_is_added_to_the_activated_list() {
        let first = ops(&sb(r#"["map",[["activation-strategy","rarp"]]]"#), 1);
        assert!(
            first.contains(
                r#"["options","insert",["map",[["additional-chassis-activated","hv2"]]]]"#
            ),
            "{first}"
        );
        let appended = ops(
            &sb(
                r#"["map",[["activation-strategy","rarp"],["additional-chassis-activated","hv3"]]]"#,
            ),
            1,
        );
        assert!(
            appended.contains(r#"["options","delete","additional-chassis-activated"]"#)
                && appended.contains(r#"["additional-chassis-activated","hv3,hv2"]"#),
            "{appended}"
        );
        // Already activated here, or an unknown port: nothing written.
        let done = ops(
            &sb(r#"["map",[["additional-chassis-activated","hv3,hv2"]]]"#),
            1,
        );
        assert!(!done.contains("mutate"), "{done}");
        assert!(!ops(&sb(r#"["map",[]]"#), 7).contains("mutate"));
    }

    #[test]
    fn pending_activations_are_bounded() {
        let mut p = Pending::default();
        for port in 0..MAX_PENDING as u32 {
            assert!(p.push(Activation { datapath: 1, port }));
        }
        assert!(
            p.push(Activation {
                datapath: 1,
                port: 0
            }),
            "a known port still fits"
        );
        assert!(!p.push(Activation {
            datapath: 2,
            port: 0
        }));
        assert_eq!(p.take().len(), MAX_PENDING);
        assert!(p.is_empty());
    }
}
