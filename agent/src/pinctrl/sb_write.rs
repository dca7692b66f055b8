//! Turning learnt MAC bindings into one Southbound transaction (the main loop owns the
//! client): a new (logical port, IP) is inserted, a known one with another MAC is
//! updated, and the timestamp is set whenever the MAC is written, as
//! `mac-binding-timestamp` tells northd to expect.

use std::collections::HashMap;

use sbclient::ovn_sb::{DatapathBinding, Fdb, MacBinding, PortBinding};
use sbclient::transaction::by_uuid;
use sbclient::{Atom, Columns, Replica, Transaction, Uuid};

use super::buffer::{FdbWrite, MacBindingWrite, SbWrite};
use crate::vlog::RateLimit;

static UNKNOWN_PORT: RateLimit = RateLimit::new(5, 20);

fn mac_text(m: [u8; 6]) -> String {
    super::packet::mac_text(&m)
}

/// The transaction that writes `writes` (later entries win), or `None` when the database
/// already has them all.
pub fn txn(sb: &Replica, writes: &[SbWrite], now_ms: i64) -> Option<Transaction> {
    let mut txn = Transaction::new(sbclient::ovn_sb::DATABASE);
    let bindings: Vec<(MacBindingWrite, bool)> = writes
        .iter()
        .filter_map(|w| match w {
            SbWrite::MacBinding(b) => Some((*b, false)),
            SbWrite::Announced { write, update_only } => Some((*write, *update_only)),
            _ => None,
        })
        .collect();
    let fdb: Vec<FdbWrite> = writes
        .iter()
        .filter_map(|w| match w {
            SbWrite::Fdb(f) => Some(*f),
            _ => None,
        })
        .collect();
    if !bindings.is_empty() {
        mac_bindings(sb, &bindings, now_ms, &mut txn);
    }
    if !fdb.is_empty() {
        fdb_entries(sb, &fdb, &mut txn);
    }
    services(sb, writes, &mut txn);
    (!txn.is_empty()).then_some(txn)
}

/// Controller events, virtual port claims and health statuses, per chassis.
fn services(sb: &Replica, writes: &[SbWrite], txn: &mut Transaction) {
    let mut events: HashMap<Uuid, Vec<super::events::EmptyLbBackends>> = HashMap::new();
    let mut claims: HashMap<Uuid, Vec<super::vport::VportClaim>> = HashMap::new();
    let mut activations: HashMap<Uuid, Vec<super::activation::Activation>> = HashMap::new();
    let mut statuses = Vec::new();
    let mut bfd = Vec::new();
    let mut prefixes = Vec::new();
    for w in writes {
        match w {
            SbWrite::Event(e, ch) => events.entry(*ch).or_default().push(e.clone()),
            SbWrite::Vport(c, ch) => claims.entry(*ch).or_default().push(*c),
            SbWrite::Activated(a, ch) => activations.entry(*ch).or_default().push(*a),
            SbWrite::SvcStatus(s) => statuses.push(*s),
            SbWrite::BfdStatus(u, s) => bfd.push((*u, *s)),
            SbWrite::PrefixDelegated(u, v) => prefixes.push((*u, v.clone())),
            SbWrite::MacBinding(_)
            | SbWrite::Fdb(_)
            | SbWrite::Announced { .. }
            | SbWrite::Igmp(_) => {}
        }
    }
    for (ch, e) in events {
        super::events::write(sb, &e, ch, txn);
    }
    for (ch, c) in claims {
        super::vport::write(sb, &c, ch, txn);
    }
    for (ch, a) in activations {
        super::activation::write(sb, &a, ch, txn);
    }
    super::svc_monitor::write(sb, &statuses, txn);
    super::bfd::write(sb, &bfd, txn);
    super::prefixd::write(sb, &prefixes, txn);
}

/// FDB rows by (datapath key, MAC): a new one is inserted, a moved one gets its new port.
fn fdb_entries(sb: &Replica, writes: &[FdbWrite], txn: &mut Transaction) {
    let existing: HashMap<(i64, &str), (Uuid, i64)> = sb
        .table::<Fdb>()
        .map(|t| {
            t.iter()
                .map(|(u, f)| ((f.dp_key, f.mac.as_str()), (*u, f.port_key)))
                .collect()
        })
        .unwrap_or_default();
    let mut wanted: Vec<((i64, String), i64)> = Vec::new();
    for w in writes {
        let key = (i64::from(w.datapath), mac_text(w.mac));
        match wanted.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = i64::from(w.port),
            None => wanted.push((key, i64::from(w.port))),
        }
    }
    for ((dp, mac), port) in wanted {
        match existing.get(&(dp, mac.as_str())) {
            Some((_, have)) if *have == port => {}
            Some((uuid, _)) => {
                txn.update(
                    "FDB",
                    &by_uuid(*uuid),
                    Columns::new().set("port_key", Atom::Integer(port)),
                );
            }
            None => {
                txn.insert(
                    "FDB",
                    Columns::new()
                        .set("dp_key", Atom::Integer(dp))
                        .set("mac", Atom::from(mac))
                        .set("port_key", Atom::Integer(port)),
                    None,
                );
            }
        }
    }
}

/// MAC_Binding rows by (logical port, IP); a write flagged update-only inserts nothing.
fn mac_bindings(
    sb: &Replica,
    writes: &[(MacBindingWrite, bool)],
    now_ms: i64,
    txn: &mut Transaction,
) -> Option<()> {
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
    // (port, ip) -> (datapath, mac, update only): one operation per row.
    type Wanted = ((String, String), (Uuid, String, bool));
    let mut wanted: Vec<Wanted> = Vec::new();
    for (w, update_only) in writes {
        let Some((port, dp)) = ports.get(&(w.datapath, w.port)) else {
            crate::vlog_rl!(WARN, &UNKNOWN_PORT, target: "pinctrl",
                "unknown logical port with datapath {} and port {}", w.datapath, w.port);
            continue;
        };
        let key = ((*port).to_owned(), w.ip.to_string());
        let value = (*dp, mac_text(w.mac), *update_only);
        match wanted.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => wanted.push((key, value)),
        }
    }
    for ((port, ip), (dp, mac, update_only)) in wanted {
        match existing.get(&(port.as_str(), ip.as_str())) {
            None if update_only => {}
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
    Some(())
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use super::*;
    use crate::pinctrl::View;
    use crate::southbound::Southbound;

    const DP: &str = "00000000-0000-4000-8000-0000000000d1";

    fn sb() -> Southbound {
        let mut sb = Southbound::default();
        let text = format!(
            r#"{{"caption":"Datapath_Binding table","headings":["_uuid","tunnel_key"],"data":[[["uuid","{DP}"],3]]}}
               {{"caption":"Port_Binding table","headings":["_uuid","logical_port","datapath","tunnel_key","type","options"],"data":[
                 [["uuid","00000000-0000-4000-8000-0000000000a1"],"lr0-sw1",["uuid","{DP}"],2,"patch",["map",[]]],
                 [["uuid","00000000-0000-4000-8000-0000000000a2"],"cr-lr0-public",["uuid","{DP}"],4,"chassisredirect",["map",[["distributed-port","lr0-public"]]]]]}}
               {{"caption":"MAC_Binding table","headings":["_uuid","logical_port","ip","mac","datapath","timestamp"],"data":[
                 [["uuid","00000000-0000-4000-8000-0000000000b1"],"lr0-sw1","10.0.1.7","50:54:00:00:01:07",["uuid","{DP}"],5],
                 [["uuid","00000000-0000-4000-8000-0000000000b2"],"lr0-public","172.16.0.100","f0:00:00:00:00:64",["uuid","{DP}"],5]]}}"#
        );
        sb.load_json(&text).expect("loads");
        sb
    }

    fn write(port: u32, ip: &str, last: u8) -> MacBindingWrite {
        MacBindingWrite {
            datapath: 3,
            port,
            ip: ip.parse().expect("ip"),
            mac: [0x50, 0x54, 0, 0, 1, last],
        }
    }

    #[test]
    fn new_bindings_are_inserted_changed_ones_updated_and_known_ones_left() {
        let sb = sb();
        let writes = [
            write(2, "10.0.1.9", 9),
            write(2, "10.0.1.9", 0x10),
            write(2, "10.0.1.7", 7),
            write(2, "10.0.1.8", 8),
            write(9, "10.0.1.6", 6),
        ];
        let written =
            txn(&sb.replica, &writes.map(SbWrite::MacBinding), 1234).expect("something to write");
        let ops = written.to_params().to_string();
        // 10.0.1.9: one insert with the last MAC; 10.0.1.7: already there; 10.0.1.8: insert.
        assert_eq!(ops.matches("\"insert\"").count(), 2, "{ops}");
        assert!(
            ops.contains("50:54:00:00:01:10") && !ops.contains("50:54:00:00:01:09"),
            "{ops}"
        );
        assert!(
            !ops.contains("10.0.1.7") && !ops.contains("10.0.1.6"),
            "{ops}"
        );
        assert!(ops.contains("\"timestamp\":1234"), "{ops}");
        let changed = txn(
            &sb.replica,
            &[SbWrite::MacBinding(write(2, "10.0.1.7", 0x77))],
            99,
        )
        .expect("an update");
        let ops = changed.to_params().to_string();
        assert!(
            ops.contains("\"update\"") && ops.contains("50:54:00:00:01:77"),
            "{ops}"
        );
        assert!(txn(
            &sb.replica,
            &[SbWrite::MacBinding(write(2, "10.0.1.7", 7))],
            99
        )
        .is_none());
    }

    #[test]
    fn fdb_entries_are_inserted_and_moved() {
        let mut sb = sb();
        sb.load_json(
            r#"{"caption":"FDB table","headings":["_uuid","dp_key","mac","port_key"],"data":[
                 [["uuid","00000000-0000-4000-8000-0000000000c1"],3,"50:54:00:00:00:33",1]]}"#,
        )
        .expect("loads");
        let fdb = |port, last| {
            SbWrite::Fdb(FdbWrite {
                datapath: 3,
                port,
                mac: [0x50, 0x54, 0, 0, 0, last],
            })
        };
        assert!(
            txn(&sb.replica, &[fdb(1, 0x33)], 0).is_none(),
            "already there"
        );
        let ops = txn(&sb.replica, &[fdb(2, 0x33), fdb(4, 0x44)], 0)
            .expect("writes")
            .to_params()
            .to_string();
        assert!(
            ops.contains("\"update\"") && ops.contains("\"port_key\":2"),
            "{ops}"
        );
        assert!(
            ops.contains("\"insert\"") && ops.contains("50:54:00:00:00:44"),
            "{ops}"
        );
    }

    #[test]
    fn the_view_resolves_next_hops_through_chassisredirect_ports() {
        let view = View::from_replica(&sb().replica, 37, 42);
        let ip = |s: &str| s.parse::<IpAddr>().expect("ip");
        assert_eq!(
            view.resolve(3, 2, ip("10.0.1.7")),
            Some([0x50, 0x54, 0, 0, 1, 7])
        );
        assert_eq!(
            view.resolve(3, 4, ip("172.16.0.100")),
            Some([0xf0, 0, 0, 0, 0, 0x64])
        );
        assert_eq!(view.resolve(3, 2, ip("172.16.0.100")), None);
        assert_eq!(view.resolve(1, 2, ip("10.0.1.7")), None);
    }
}
