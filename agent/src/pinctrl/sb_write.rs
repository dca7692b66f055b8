//! Turning learnt MAC bindings into one Southbound transaction (the main loop owns the
//! client): a new (logical port, IP) is inserted, a known one with another MAC is
//! updated, and the timestamp is set whenever the MAC is written, as
//! `mac-binding-timestamp` tells northd to expect.

use std::collections::HashMap;

use sbclient::ovn_sb::{DatapathBinding, MacBinding, PortBinding};
use sbclient::transaction::by_uuid;
use sbclient::{Atom, Columns, Replica, Transaction, Uuid};

use super::buffer::MacBindingWrite;
use crate::vlog::RateLimit;

static UNKNOWN_PORT: RateLimit = RateLimit::new(5, 20);

fn mac_text(m: [u8; 6]) -> String {
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        m[0], m[1], m[2], m[3], m[4], m[5]
    )
}

/// The transaction that writes `writes` (later entries win), or `None` when the database
/// already has them all.
pub fn mac_binding_txn(
    sb: &Replica,
    writes: &[MacBindingWrite],
    now_ms: i64,
) -> Option<Transaction> {
    let dps: HashMap<Uuid, u32> = sb
        .table::<DatapathBinding>()?
        .iter()
        .filter_map(|(u, d)| Some((*u, u32::try_from(d.tunnel_key).ok()?)))
        .collect();
    let ports: HashMap<(u32, u32), (&str, Uuid)> = sb
        .table::<PortBinding>()?
        .iter()
        .filter_map(|(_, pb)| {
            let dp = *dps.get(&pb.datapath)?;
            Some((
                (dp, u32::try_from(pb.tunnel_key).ok()?),
                (pb.logical_port.as_str(), pb.datapath),
            ))
        })
        .collect();
    let existing: HashMap<(&str, &str), (Uuid, &str)> = sb
        .table::<MacBinding>()?
        .iter()
        .map(|(u, mb)| {
            (
                (mb.logical_port.as_str(), mb.ip.as_str()),
                (*u, mb.mac.as_str()),
            )
        })
        .collect();
    // (port, ip) -> (datapath, mac): one operation per row.
    let mut wanted: Vec<((String, String), (Uuid, String))> = Vec::new();
    for w in writes {
        let Some((port, dp)) = ports.get(&(w.datapath, w.port)) else {
            crate::vlog_rl!(WARN, &UNKNOWN_PORT, target: "pinctrl",
                "unknown logical port with datapath {} and port {}", w.datapath, w.port);
            continue;
        };
        let key = ((*port).to_owned(), w.ip.to_string());
        let value = (*dp, mac_text(w.mac));
        match wanted.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => wanted.push((key, value)),
        }
    }
    let mut txn = Transaction::new(sbclient::ovn_sb::DATABASE);
    for ((port, ip), (dp, mac)) in wanted {
        match existing.get(&(port.as_str(), ip.as_str())) {
            Some((_, have)) if *have == mac => {}
            Some((uuid, _)) => {
                txn.update(
                    "MAC_Binding",
                    &by_uuid(*uuid),
                    Columns::new()
                        .set("mac", Atom::from(mac))
                        .set("timestamp", Atom::Integer(now_ms)),
                );
            }
            None => {
                txn.insert(
                    "MAC_Binding",
                    Columns::new()
                        .set("logical_port", Atom::from(port))
                        .set("ip", Atom::from(ip))
                        .set("datapath", Atom::Uuid(dp))
                        .set("mac", Atom::from(mac))
                        .set("timestamp", Atom::Integer(now_ms)),
                    None,
                );
            }
        }
    }
    (!txn.is_empty()).then_some(txn)
}
