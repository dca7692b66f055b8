//! Southbound rows needed by the lflow compiler, read from `ovn-sbctl --format=json list T`
//! or `ovsdb-client -f json dump` output (until the sbclient replica is wired in).

use std::collections::HashMap;

use serde_json::Value;

/// Errors reading Southbound JSON.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SbDataError {
    #[error("invalid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("table without headings/data")]
    Shape,
}

#[derive(Clone, Debug, Default)]
pub struct LflowRow {
    pub uuid: String,
    pub datapath: Option<String>,
    pub dp_group: Option<String>,
    pub pipeline: String,
    pub table_id: u32,
    pub priority: u16,
    pub match_text: String,
    pub actions: String,
    pub controller_meter: Option<String>,
    pub stage_name: Option<String>,
    /// `tags:in_out_port`: compile only if this port is related to the chassis.
    pub in_out_port: Option<String>,
}

#[derive(Clone, Debug, Default)]
pub struct DatapathRow {
    pub uuid: String,
    pub key: u32,
    pub name: String,
    pub is_router: bool,
    pub snat_ct_zone: bool,
}

#[derive(Clone, Debug, Default)]
pub struct PortBindingRow {
    pub uuid: String,
    pub name: String,
    pub datapath: String,
    pub key: u32,
    pub ty: String,
    pub chassis: Option<String>,
    pub options: HashMap<String, String>,
    pub ha_chassis_group: Option<String>,
    pub port_security: Vec<String>,
}

#[derive(Clone, Debug, Default)]
pub struct LoadBalancerRow {
    pub uuid: String,
    pub name: String,
    pub vips: Vec<(String, String)>,
    pub protocol: Option<String>,
    pub datapaths: Vec<String>,
    pub datapath_group: Option<String>,
    pub options: HashMap<String, String>,
}

#[derive(Clone, Debug, Default)]
pub struct McastRow {
    pub datapath: String,
    pub name: String,
    pub key: u32,
}

/// The Southbound content the compiler reads.
#[derive(Clone, Debug, Default)]
pub struct SbData {
    pub lflows: Vec<LflowRow>,
    pub dp_groups: HashMap<String, Vec<String>>,
    pub datapaths: Vec<DatapathRow>,
    pub port_bindings: Vec<PortBindingRow>,
    pub mcast_groups: Vec<McastRow>,
    pub address_sets: HashMap<String, Vec<String>>,
    pub port_groups: HashMap<String, Vec<String>>,
    /// Chassis uuid to name.
    pub chassis: HashMap<String, String>,
    /// Chassis name to template variables.
    pub template_vars: HashMap<String, HashMap<String, String>>,
    pub meters: Vec<String>,
    /// HA_Chassis_Group uuid to its HA_Chassis uuids.
    pub ha_groups: HashMap<String, Vec<String>>,
    /// HA_Chassis uuid to (chassis uuid, priority).
    pub ha_chassis: HashMap<String, (Option<String>, i64)>,
    pub load_balancers: Vec<LoadBalancerRow>,
    /// MAC_Binding and Static_MAC_Binding rows: (uuid, logical_port, ip, mac, priority).
    pub mac_bindings: Vec<(String, String, String, String, u16)>,
    /// FDB rows: (uuid, mac, dp_key, port_key).
    pub fdbs: Vec<(String, String, u32, u32)>,
    /// Names in SB `DHCP_Options` / `DHCPv6_Options` (`None`: table not in the input).
    pub dhcp_options: Option<std::collections::HashSet<String>>,
    pub dhcpv6_options: Option<std::collections::HashSet<String>>,
}

fn uuid(v: &Value) -> Option<String> {
    match v {
        Value::Array(a) if a.len() == 2 && (a[0] == "uuid" || a[0] == "named-uuid") => {
            a[1].as_str().map(String::from)
        }
        _ => None,
    }
}

fn set(v: &Value) -> Vec<Value> {
    match v {
        Value::Array(a) if a.len() == 2 && a[0] == "set" => {
            a[1].as_array().cloned().unwrap_or_default()
        }
        other => vec![other.clone()],
    }
}

fn opt_uuid(v: Option<&Value>) -> Option<String> {
    v.map(set).and_then(|s| s.first().and_then(uuid))
}

fn map(v: Option<&Value>) -> HashMap<String, String> {
    let mut out = HashMap::new();
    if let Some(Value::Array(a)) = v {
        if a.len() == 2 && a[0] == "map" {
            for kv in a[1].as_array().into_iter().flatten() {
                if let (Some(k), Some(v)) = (
                    kv.get(0).and_then(Value::as_str),
                    kv.get(1).and_then(Value::as_str),
                ) {
                    out.insert(k.to_string(), v.to_string());
                }
            }
        }
    }
    out
}

fn strs(v: Option<&Value>) -> Vec<String> {
    v.map(set)
        .unwrap_or_default()
        .iter()
        .filter_map(|x| x.as_str().map(String::from))
        .collect()
}

fn s(v: Option<&Value>) -> String {
    v.and_then(Value::as_str).unwrap_or_default().to_string()
}

fn int(v: Option<&Value>) -> u64 {
    v.and_then(Value::as_u64).unwrap_or(0)
}

type Row = HashMap<String, Value>;

fn guess_table(caption: Option<&str>, heads: &[String]) -> String {
    if let Some(c) = caption {
        return c.trim_end_matches(" table").to_string();
    }
    let has = |h: &str| heads.iter().any(|x| x == h);
    let t = if has("actions") && has("match") {
        "Logical_Flow"
    } else if has("logical_port") && has("tunnel_key") {
        "Port_Binding"
    } else if has("override_dynamic_mac") {
        "Static_MAC_Binding"
    } else if has("logical_port") && has("ip") && has("mac") {
        "MAC_Binding"
    } else if has("dp_key") && has("port_key") {
        "FDB"
    } else if has("vips") {
        "Load_Balancer"
    } else if has("ha_chassis") {
        "HA_Chassis_Group"
    } else if has("priority") && has("chassis") && !has("match") {
        "HA_Chassis"
    } else if has("datapaths") {
        "Logical_DP_Group"
    } else if has("addresses") && has("name") {
        "Address_Set"
    } else if has("ports") && has("name") && !has("datapath") {
        "Port_Group"
    } else if has("datapath") && has("tunnel_key") && has("name") {
        "Multicast_Group"
    } else if has("tunnel_key") {
        "Datapath_Binding"
    } else if has("variables") {
        "Chassis_Template_Var"
    } else if has("bands") {
        "Meter"
    } else if has("encaps") || (has("name") && heads.len() == 2) {
        "Chassis"
    } else {
        "?"
    };
    t.to_string()
}

impl SbData {
    /// Adds every table found in `text` (one or more JSON documents).
    pub fn load_str(&mut self, text: &str) -> Result<(), SbDataError> {
        for doc in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
            let doc = doc?;
            match doc {
                Value::Array(items) => {
                    for t in items {
                        self.load_table(&t)?;
                    }
                }
                Value::Object(ref o) if o.contains_key("headings") => self.load_table(&doc)?,
                Value::Object(o) => {
                    for (_, t) in o {
                        self.load_table(&t)?;
                    }
                }
                _ => return Err(SbDataError::Shape),
            }
        }
        Ok(())
    }

    fn load_table(&mut self, t: &Value) -> Result<(), SbDataError> {
        let heads: Vec<String> = t
            .get("headings")
            .and_then(Value::as_array)
            .ok_or(SbDataError::Shape)?
            .iter()
            .map(|h| h.as_str().unwrap_or("").to_string())
            .collect();
        let data = t
            .get("data")
            .and_then(Value::as_array)
            .ok_or(SbDataError::Shape)?;
        let name = guess_table(t.get("caption").and_then(Value::as_str), &heads);
        // The option catalogues matter even when empty (options are then unknown).
        match name.as_str() {
            "DHCP_Options" => {
                self.dhcp_options.get_or_insert_with(Default::default);
            }
            "DHCPv6_Options" => {
                self.dhcpv6_options.get_or_insert_with(Default::default);
            }
            _ => {}
        }
        for r in data {
            let Some(cells) = r.as_array() else { continue };
            let row: Row = heads.iter().cloned().zip(cells.iter().cloned()).collect();
            self.add_row(&name, &row);
        }
        Ok(())
    }

    fn add_row(&mut self, table: &str, r: &Row) {
        let id = r.get("_uuid").and_then(uuid).unwrap_or_default();
        match table {
            "Logical_Flow" => {
                let ext = map(r.get("external_ids"));
                self.lflows.push(LflowRow {
                    uuid: id,
                    datapath: opt_uuid(r.get("logical_datapath")),
                    dp_group: opt_uuid(r.get("logical_dp_group")),
                    pipeline: s(r.get("pipeline")),
                    table_id: int(r.get("table_id")) as u32,
                    priority: int(r.get("priority")) as u16,
                    match_text: s(r.get("match")),
                    actions: s(r.get("actions")),
                    controller_meter: strs(r.get("controller_meter")).into_iter().next(),
                    stage_name: ext.get("stage-name").cloned(),
                    in_out_port: map(r.get("tags")).get("in_out_port").cloned(),
                });
            }
            "Logical_DP_Group" => {
                let members = r
                    .get("datapaths")
                    .map(set)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(uuid)
                    .collect();
                self.dp_groups.insert(id, members);
            }
            "Datapath_Binding" => {
                let ext = map(r.get("external_ids"));
                self.datapaths.push(DatapathRow {
                    uuid: id,
                    key: int(r.get("tunnel_key")) as u32,
                    name: ext.get("name").cloned().unwrap_or_default(),
                    is_router: ext.contains_key("logical-router"),
                    snat_ct_zone: ext.contains_key("snat-ct-zone"),
                });
            }
            "Port_Binding" => self.port_bindings.push(PortBindingRow {
                uuid: id,
                name: s(r.get("logical_port")),
                datapath: opt_uuid(r.get("datapath")).unwrap_or_default(),
                key: int(r.get("tunnel_key")) as u32,
                ty: s(r.get("type")),
                chassis: opt_uuid(r.get("chassis")),
                options: map(r.get("options")),
                ha_chassis_group: opt_uuid(r.get("ha_chassis_group")),
                port_security: strs(r.get("port_security")),
            }),
            "Multicast_Group" => self.mcast_groups.push(McastRow {
                datapath: opt_uuid(r.get("datapath")).unwrap_or_default(),
                name: s(r.get("name")),
                key: int(r.get("tunnel_key")) as u32,
            }),
            "Address_Set" => {
                self.address_sets
                    .insert(s(r.get("name")), strs(r.get("addresses")));
            }
            "Port_Group" => {
                self.port_groups
                    .insert(s(r.get("name")), strs(r.get("ports")));
            }
            "Chassis" => {
                self.chassis.insert(id, s(r.get("name")));
            }
            "Chassis_Template_Var" => {
                self.template_vars
                    .insert(s(r.get("chassis")), map(r.get("variables")));
            }
            "Meter" => self.meters.push(s(r.get("name"))),
            "Load_Balancer" => {
                let mut vips: Vec<(String, String)> = map(r.get("vips")).into_iter().collect();
                vips.sort();
                self.load_balancers.push(LoadBalancerRow {
                    uuid: id,
                    name: s(r.get("name")),
                    vips,
                    protocol: strs(r.get("protocol")).into_iter().next(),
                    datapaths: r
                        .get("datapaths")
                        .map(set)
                        .unwrap_or_default()
                        .iter()
                        .filter_map(uuid)
                        .collect(),
                    datapath_group: opt_uuid(r.get("datapath_group")),
                    options: map(r.get("options")),
                });
            }
            "MAC_Binding" => self.mac_bindings.push((
                id,
                s(r.get("logical_port")),
                s(r.get("ip")),
                s(r.get("mac")),
                100,
            )),
            "Static_MAC_Binding" => {
                let over = r
                    .get("override_dynamic_mac")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                self.mac_bindings.push((
                    id,
                    s(r.get("logical_port")),
                    s(r.get("ip")),
                    s(r.get("mac")),
                    if over { 150 } else { 50 },
                ));
            }
            "DHCP_Options" => {
                self.dhcp_options
                    .get_or_insert_with(Default::default)
                    .insert(s(r.get("name")));
            }
            "DHCPv6_Options" => {
                self.dhcpv6_options
                    .get_or_insert_with(Default::default)
                    .insert(s(r.get("name")));
            }
            "FDB" => self.fdbs.push((
                id,
                s(r.get("mac")),
                int(r.get("dp_key")) as u32,
                int(r.get("port_key")) as u32,
            )),
            "HA_Chassis_Group" => {
                let members = r
                    .get("ha_chassis")
                    .map(set)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(uuid)
                    .collect();
                self.ha_groups.insert(id, members);
            }
            "HA_Chassis" => {
                let prio = r.get("priority").and_then(Value::as_i64).unwrap_or(0);
                self.ha_chassis
                    .insert(id, (opt_uuid(r.get("chassis")), prio));
            }
            _ => {}
        }
    }
}
