//! What a controller reads from its chassis' own OVS database, read back through
//! `ovs-vsctl` and `ovs-ofctl`: the interfaces of `br-int` with their OpenFlow ports (and the
//! `external_ids` of their ports, where OVN marks tunnels and localnet patch ports), the
//! conntrack zones ovn-controller persisted on `br-int`, and the Geneve TLV mapping.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::chassis::Chassis;
use crate::error::{HarnessError, Result};

/// One `Interface` row, with its `Port`'s `external_ids` (ports and interfaces created by
/// OVN and by the harness have the same name).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OvsInterface {
    pub name: String,
    /// `None` until vswitchd assigned one (or when it failed: -1).
    pub ofport: Option<u32>,
    pub kind: String,
    pub options: BTreeMap<String, String>,
    pub external_ids: BTreeMap<String, String>,
    pub port_external_ids: BTreeMap<String, String>,
}

fn bad(what: &str, detail: impl std::fmt::Display) -> HarnessError {
    HarnessError::Config(format!("unexpected ovs-vsctl output for {what}: {detail}"))
}

/// `[headings, rows]` of `ovs-vsctl --format=json list ...`, each row as column -> value.
fn rows(text: &str, what: &str) -> Result<Vec<BTreeMap<String, Value>>> {
    let doc: Value = serde_json::from_str(text).map_err(|e| bad(what, e))?;
    let heads: Vec<String> = doc["headings"]
        .as_array()
        .ok_or_else(|| bad(what, "no headings"))?
        .iter()
        .map(|h| h.as_str().unwrap_or_default().to_owned())
        .collect();
    let data = doc["data"].as_array().ok_or_else(|| bad(what, "no data"))?;
    Ok(data
        .iter()
        .filter_map(Value::as_array)
        .map(|r| heads.iter().cloned().zip(r.iter().cloned()).collect())
        .collect())
}

/// An OVSDB `["map", [[k, v], ...]]`.
fn map(v: Option<&Value>) -> BTreeMap<String, String> {
    let pairs = v
        .and_then(|v| v.get(1))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    pairs
        .iter()
        .filter_map(|p| {
            let k = p.get(0)?.as_str()?;
            let v = p.get(1)?.as_str()?;
            Some((k.to_owned(), v.to_owned()))
        })
        .collect()
}

/// The interfaces of the chassis' `br-int` (the other end of a localnet patch port, on the
/// physical bridge, carries the same `external_ids` and must not be taken for it).
pub fn br_int_interfaces(chassis: &Chassis) -> Result<Vec<OvsInterface>> {
    let on_br_int: std::collections::BTreeSet<String> = chassis
        .vsctl(&["list-ifaces", "br-int"])?
        .lines()
        .map(|l| l.trim().to_owned())
        .collect();
    Ok(interfaces(chassis)?
        .into_iter()
        .filter(|i| on_br_int.contains(&i.name))
        .collect())
}

/// Every interface of the chassis' OVS, on any bridge.
pub fn interfaces(chassis: &Chassis) -> Result<Vec<OvsInterface>> {
    let ifaces = chassis.vsctl(&[
        "--format=json",
        "--columns=name,ofport,type,options,external_ids",
        "list",
        "Interface",
    ])?;
    let ports = chassis.vsctl(&[
        "--format=json",
        "--columns=name,external_ids",
        "list",
        "Port",
    ])?;
    let port_ids: BTreeMap<String, BTreeMap<String, String>> = rows(&ports, "Port")?
        .into_iter()
        .filter_map(|r| {
            let name = r.get("name")?.as_str()?.to_owned();
            Some((name, map(r.get("external_ids"))))
        })
        .collect();
    Ok(rows(&ifaces, "Interface")?
        .into_iter()
        .filter_map(|r| {
            let name = r.get("name")?.as_str()?.to_owned();
            let ofport = r
                .get("ofport")
                .and_then(Value::as_i64)
                .and_then(|p| u32::try_from(p).ok())
                .filter(|p| *p > 0);
            Some(OvsInterface {
                ofport,
                kind: r
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                options: map(r.get("options")),
                external_ids: map(r.get("external_ids")),
                port_external_ids: port_ids.get(&name).cloned().unwrap_or_default(),
                name,
            })
        })
        .collect())
}

/// The conntrack zones ovn-controller assigned: `br-int` `external_ids:ct-zone-<name>`.
pub fn ct_zones(chassis: &Chassis) -> Result<BTreeMap<String, u16>> {
    let text = chassis.vsctl(&[
        "--format=json",
        "--columns=name,external_ids",
        "list",
        "Bridge",
        "br-int",
    ])?;
    let bridge = rows(&text, "Bridge br-int")?
        .into_iter()
        .next()
        .ok_or_else(|| bad("Bridge br-int", "no row"))?;
    Ok(map(bridge.get("external_ids"))
        .into_iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("ct-zone-")?.to_owned(), v.parse().ok()?)))
        .collect())
}

/// The `tun_metadataN` that OVN's Geneve option (class 0x102, type 0x80, length 4) is
/// mapped to on `br-int` (`ovs-ofctl dump-tlv-map`), if it is.
pub fn geneve_tlv_field(chassis: &Chassis) -> Result<Option<u8>> {
    let text = chassis.ofctl(&["dump-tlv-map", "br-int"])?;
    Ok(text.lines().find_map(|line| {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["0x102", "0x80", "4", field] => field.strip_prefix("tun_metadata")?.parse().ok(),
            _ => None,
        }
    }))
}

/// The ids of the `Flow_Sample_Collector_Set` rows of `br-int`.
pub fn br_int_sample_collector_sets(chassis: &Chassis) -> Result<std::collections::BTreeSet<u32>> {
    let br_int = chassis.vsctl(&["get", "Bridge", "br-int", "_uuid"])?;
    let text = chassis.vsctl(&[
        "--format=json",
        "--columns=id,bridge",
        "list",
        "Flow_Sample_Collector_Set",
    ])?;
    Ok(rows(&text, "Flow_Sample_Collector_Set")?
        .into_iter()
        .filter(|r| {
            r.get("bridge")
                .and_then(|b| b.get(1))
                .and_then(Value::as_str)
                == Some(br_int.trim())
        })
        .filter_map(|r| u32::try_from(r.get("id")?.as_i64()?).ok())
        .collect())
}
