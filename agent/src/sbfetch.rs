//! Fetches the Southbound tables the compiler needs from a live database (sbclient), and
//! hands them to the same loader as the JSON files.

use std::time::Duration;

use sbclient::ovn_sb::{
    AddressSet, Chassis, ChassisTemplateVar, DatapathBinding, DhcpOptions, Dhcpv6Options, Fdb,
    HaChassis, HaChassisGroup, LoadBalancer, LogicalDpGroup, LogicalFlow, MacBinding, Meter,
    MulticastGroup, PortBinding, PortGroup, StaticMacBinding,
};
use sbclient::{spawn, ClientConfig, Event, Remote, Replica};

use crate::sbdata::SbData;

/// Whether `--sb` names a database remote rather than a file.
pub fn is_remote(s: &str) -> bool {
    ["unix:", "tcp:", "ssl:"].iter().any(|p| s.starts_with(p))
}

/// Connects, takes one snapshot of the relevant tables, disconnects.
pub async fn fetch(remote: &str, timeout: Duration) -> anyhow::Result<SbData> {
    let mut replica = Replica::new("OVN_Southbound");
    replica.add_table::<LogicalFlow>();
    replica.add_table::<LogicalDpGroup>();
    replica.add_table::<DatapathBinding>();
    replica.add_table::<PortBinding>();
    replica.add_table::<MulticastGroup>();
    replica.add_table::<AddressSet>();
    replica.add_table::<PortGroup>();
    replica.add_table::<Chassis>();
    replica.add_table::<ChassisTemplateVar>();
    replica.add_table::<HaChassis>();
    replica.add_table::<HaChassisGroup>();
    replica.add_table::<Meter>();
    replica.add_table::<LoadBalancer>();
    replica.add_table::<MacBinding>();
    replica.add_table::<StaticMacBinding>();
    replica.add_table::<Fdb>();
    replica.add_table::<DhcpOptions>();
    replica.add_table::<Dhcpv6Options>();
    let mut config =
        ClientConfig::new(Remote::parse_list(remote)?, "OVN_Southbound").monitor_replica(&replica);
    config.probe_interval = None;
    let (client, mut events) = spawn(config);
    let got = tokio::time::timeout(timeout, async {
        while let Some(event) = events.recv().await {
            let snapshot = matches!(event, Event::Snapshot(_));
            event.apply(&mut replica)?;
            if snapshot {
                return Ok::<bool, anyhow::Error>(true);
            }
        }
        Ok(false)
    })
    .await;
    client.shutdown().await;
    match got {
        Ok(Ok(true)) => {}
        Ok(Ok(false)) => anyhow::bail!("{remote}: connection closed before the snapshot"),
        Ok(Err(e)) => return Err(e),
        Err(_) => anyhow::bail!("{remote}: no snapshot within {timeout:?}"),
    }
    let mut sb = SbData::default();
    let names: Vec<&'static str> = replica.table_names().collect();
    for name in names {
        let rows = replica.dump_table(name);
        let mut headings = vec![serde_json::Value::from("_uuid")];
        // An empty table still counts (an empty DHCP option catalogue makes options unknown).
        if let Some(first) = rows.values().next() {
            headings.extend(first.iter().map(|(c, _)| serde_json::Value::from(*c)));
        }
        let data: Vec<serde_json::Value> = rows
            .iter()
            .map(|(uuid, cols)| {
                let mut row = vec![serde_json::json!(["uuid", uuid.to_string()])];
                row.extend(
                    cols.iter()
                        .map(|(_, d)| serde_json::to_value(d).unwrap_or(serde_json::Value::Null)),
                );
                serde_json::Value::Array(row)
            })
            .collect();
        let table = serde_json::json!({ "caption": format!("{name} table"), "headings": headings, "data": data });
        sb.load_str(&table.to_string())?;
    }
    Ok(sb)
}
