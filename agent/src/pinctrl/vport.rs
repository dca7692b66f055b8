//! `bind_vport(V, P)` (opcode `BIND_VPORT`): a virtual port's parent announced the
//! virtual IP (a gratuitous ARP or an ARP reply from the parent), so this chassis claims
//! the virtual port: `chassis` = this chassis and `virtual_parent` = the parent's name,
//! as ovn-controller 23.03.1 writes it. The claim is written only for a Port_Binding of
//! type `virtual`; the binding stage leaves virtual ports alone (engine/binding.rs), so
//! it does not release what was claimed here. The port is marked `up`, as ovn-controller
//! marks every port that rides on a local interface once it has claimed it.

use std::collections::HashMap;

use sbclient::ovn_sb::{DatapathBinding, PortBinding};
use sbclient::transaction::by_uuid;
use sbclient::{Atom, Columns, Replica, Transaction, Uuid};

use super::metadata::Registers;
use crate::vlog::RateLimit;

static UNKNOWN_PORT: RateLimit = RateLimit::new(5, 20);

/// At most this many claims wait for the main loop (as ovn-controller's).
pub const MAX_PENDING: usize = 1000;

/// A virtual port to claim: (datapath key, virtual port key) and its parent's port key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VportClaim {
    pub datapath: u32,
    pub vport: u32,
    pub parent: u32,
}

/// The claim of a `bind_vport` packet-in: the virtual port's key is the userdata, the
/// parent is the logical inport, the datapath the metadata.
pub fn parse(payload: &[u8], regs: &Registers) -> Option<VportClaim> {
    let key = payload.get(..4)?;
    Some(VportClaim {
        datapath: regs.datapath(),
        vport: u32::from_be_bytes([key[0], key[1], key[2], key[3]]),
        parent: regs.reg(14),
    })
}

/// Claims waiting for the main loop, one per virtual port (the latest parent wins).
#[derive(Debug, Default)]
pub struct Pending {
    claims: HashMap<(u32, u32), u32>,
}

impl Pending {
    /// `false` when the table is full and `c` is for a new port (dropped).
    pub fn push(&mut self, c: VportClaim) -> bool {
        let key = (c.datapath, c.vport);
        if self.claims.len() >= MAX_PENDING && !self.claims.contains_key(&key) {
            return false;
        }
        self.claims.insert(key, c.parent);
        true
    }

    pub fn is_empty(&self) -> bool {
        self.claims.is_empty()
    }

    pub fn take(&mut self) -> Vec<VportClaim> {
        let mut out: Vec<_> = self
            .claims
            .drain()
            .map(|((datapath, vport), parent)| VportClaim {
                datapath,
                vport,
                parent,
            })
            .collect();
        out.sort();
        out
    }
}

/// Writes `claims` for `chassis`; a claim already in the database is not written again.
pub fn write(sb: &Replica, claims: &[VportClaim], chassis: Uuid, txn: &mut Transaction) {
    let (Some(dps), Some(pbs)) = (sb.table::<DatapathBinding>(), sb.table::<PortBinding>()) else {
        return;
    };
    let dp_uuid: HashMap<i64, Uuid> = dps.iter().map(|(u, d)| (d.tunnel_key, *u)).collect();
    let by_key: HashMap<(Uuid, i64), (Uuid, &PortBinding)> = pbs
        .iter()
        .map(|(u, pb)| ((pb.datapath, pb.tunnel_key), (*u, pb)))
        .collect();
    let lookup = |dp: u32, port: u32| {
        let dp = dp_uuid.get(&i64::from(dp))?;
        by_key.get(&(*dp, i64::from(port))).copied()
    };
    for c in claims {
        let Some((uuid, pb)) = lookup(c.datapath, c.vport) else {
            crate::vlog_rl!(WARN, &UNKNOWN_PORT, target: "pinctrl",
                "unknown logical port with datapath {} and port {}", c.datapath, c.vport);
            continue;
        };
        if pb.type_ != "virtual" {
            continue;
        }
        let Some((_, parent)) = lookup(c.datapath, c.parent) else {
            continue;
        };
        if pb.chassis == Some(chassis)
            && pb.virtual_parent.as_deref() == Some(parent.logical_port.as_str())
            && pb.up == Some(true)
        {
            continue;
        }
        tracing::info!(target: "pinctrl",
            "Claiming virtual lport {} for this chassis with the virtual parent {}",
            pb.logical_port, parent.logical_port);
        txn.update(
            "Port_Binding",
            &by_uuid(uuid),
            Columns::new()
                .set("chassis", Atom::Uuid(chassis))
                .set("virtual_parent", Atom::from(parent.logical_port.as_str()))
                // Up with its parent, as ovn-controller's binding then marks every
                // port riding on the parent's interface.
                .set("up", Atom::Boolean(true)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::southbound::Southbound;

    const DP: &str = "00000000-0000-4000-8000-0000000000d1";
    const ME: &str = "00000000-0000-4000-8000-0000000000c1";

    fn sb(vport_chassis: &str, vparent: &str) -> Southbound {
        let mut sb = Southbound::default();
        let text = format!(
            r#"{{"caption":"Datapath_Binding table","headings":["_uuid","tunnel_key"],"data":[[["uuid","{DP}"],1]]}}
               {{"caption":"Port_Binding table","headings":["_uuid","logical_port","datapath","tunnel_key","type","chassis","virtual_parent","up"],"data":[
                 [["uuid","00000000-0000-4000-8000-0000000000a1"],"sw0-p1",["uuid","{DP}"],1,"",["set",[]],["set",[]],true],
                 [["uuid","00000000-0000-4000-8000-0000000000a2"],"sw0-vir",["uuid","{DP}"],3,"virtual",{vport_chassis},{vparent},true],
                 [["uuid","00000000-0000-4000-8000-0000000000a3"],"sw0-p2",["uuid","{DP}"],2,"",["set",[]],["set",[]],true]]}}"#
        );
        sb.load_json(&text).expect("loads");
        sb
    }

    fn me() -> Uuid {
        ME.parse().expect("uuid")
    }

    fn ops(sb: &Southbound, claims: &[VportClaim]) -> String {
        let mut txn = Transaction::new(sbclient::ovn_sb::DATABASE);
        write(&sb.replica, claims, me(), &mut txn);
        txn.to_params().to_string()
    }

    #[test]
    fn a_claim_sets_chassis_and_virtual_parent() {
        let sb = sb(r#"["set",[]]"#, r#"["set",[]]"#);
        let c = VportClaim {
            datapath: 1,
            vport: 3,
            parent: 1,
        };
        let text = ops(&sb, &[c]);
        assert!(text.contains("\"update\""), "{text}");
        assert!(
            text.contains(ME) && text.contains("\"virtual_parent\":\"sw0-p1\""),
            "{text}"
        );
        // Not a virtual port, unknown port, unknown parent: nothing.
        for bad in [(2, 1), (9, 1), (3, 9)] {
            let text = ops(
                &sb,
                &[VportClaim {
                    datapath: 1,
                    vport: bad.0,
                    parent: bad.1,
                }],
            );
            assert!(!text.contains("\"update\""), "{bad:?}: {text}");
        }
    }

    #[test]
    fn a_claim_already_written_is_not_written_again_and_a_new_parent_is() {
        let sb = sb(&format!(r#"["uuid","{ME}"]"#), r#""sw0-p1""#);
        let c = |parent| VportClaim {
            datapath: 1,
            vport: 3,
            parent,
        };
        assert!(!ops(&sb, &[c(1)]).contains("\"update\""));
        assert!(ops(&sb, &[c(2)]).contains("\"virtual_parent\":\"sw0-p2\""));
    }

    #[test]
    fn pending_claims_keep_the_latest_parent() {
        let mut p = Pending::default();
        let c = |vport, parent| VportClaim {
            datapath: 1,
            vport,
            parent,
        };
        assert!(p.push(c(3, 1)) && p.push(c(3, 2)));
        assert_eq!(p.take(), vec![c(3, 2)]);
        for n in 0..MAX_PENDING as u32 {
            assert!(p.push(c(n, 1)));
        }
        assert!(!p.push(c(5000, 1)));
    }

    proptest::proptest! {
        #[test]
        fn any_userdata_parses_or_fails_without_panic(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..16),
        ) {
            let parsed = parse(&bytes, &Registers::default());
            proptest::prop_assert_eq!(parsed.is_some(), bytes.len() >= 4);
        }
    }
}
