//! Unit tests: small Southbound worlds (loaded as JSON into the typed replica, as real
//! `ovn-sbctl` output would be) and hand-filled runtime data; the flows are compared, as
//! `ovs-ofctl` text, with real ovn-controller 23.03.1 dumps (reference/physical-pipeline.md
//! §3 and the sandbox dump of_final.txt), in the ovn-23.03 layout.

mod local;
mod mcast;
mod misc;
mod remote;

use std::collections::BTreeSet;

use bytes::BytesMut;
use openflow::flow::FlowModCommand;
use serde_json::{json, Value};

use super::{all, PhysicalFlows};
use crate::lflow::layout::TableLayout;
use crate::lflow::of::Flow;
use crate::runtime::{BindingKind, EncapType, LocalDatapath, Runtime, Tunnel};
use crate::southbound::Southbound;

pub const L: TableLayout = TableLayout::OVN_23_03;

/// A uuid whose first 32 bits (the cookie) are `cookie`.
pub fn u(cookie: u32, n: u16) -> String {
    format!("{cookie:08x}-0000-4000-8000-{n:012x}")
}

pub fn id(s: &str) -> sbclient::Uuid {
    s.parse().expect("test uuid")
}

fn uuid_ref(s: Option<&String>) -> Value {
    match s {
        Some(u) => json!(["uuid", u]),
        None => json!(["set", []]),
    }
}

fn uuid_set(v: &[String]) -> Value {
    json!([
        "set",
        v.iter().map(|u| json!(["uuid", u])).collect::<Vec<_>>()
    ])
}

fn map(pairs: &[(String, String)]) -> Value {
    json!([
        "map",
        pairs.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>()
    ])
}

/// A Port_Binding row.
#[derive(Clone, Default)]
pub struct Pb {
    pub uuid: String,
    pub name: String,
    pub dp: String,
    pub key: i64,
    pub ty: String,
    pub chassis: Option<String>,
    pub options: Vec<(String, String)>,
    pub parent: Option<String>,
    pub tag: Option<i64>,
    pub mac: Vec<String>,
    pub ha_group: Option<String>,
    pub additional_chassis: Vec<String>,
}

impl Pb {
    pub fn new(uuid: &str, name: &str, dp: &str, key: i64, ty: &str) -> Self {
        Self {
            uuid: uuid.into(),
            name: name.into(),
            dp: dp.into(),
            key,
            ty: ty.into(),
            ..Self::default()
        }
    }

    pub fn on(mut self, chassis: &str) -> Self {
        self.chassis = Some(chassis.into());
        self
    }

    pub fn opt(mut self, k: &str, v: &str) -> Self {
        self.options.push((k.into(), v.into()));
        self
    }

    pub fn tag(mut self, tag: i64) -> Self {
        self.tag = Some(tag);
        self
    }

    pub fn mac(mut self, mac: &str) -> Self {
        self.mac.push(mac.into());
        self
    }

    fn row(&self) -> Value {
        let tag = self.tag.map_or(json!(["set", []]), |t| json!(t));
        let parent = self
            .parent
            .as_ref()
            .map_or(json!(["set", []]), |p| json!(p));
        json!([
            ["uuid", self.uuid],
            self.name,
            ["uuid", self.dp],
            self.key,
            self.ty,
            uuid_ref(self.chassis.as_ref()),
            map(&self.options),
            parent,
            tag,
            ["set", self.mac],
            uuid_ref(self.ha_group.as_ref()),
            uuid_set(&self.additional_chassis),
        ])
    }
}

/// `(key, value)` pairs of a map column.
pub type Pairs = Vec<(String, String)>;

/// A Southbound world under construction.
#[derive(Default)]
pub struct World {
    pub datapaths: Vec<(String, i64, Pairs)>,
    pub chassis: Vec<(String, String, Pairs)>,
    pub pbs: Vec<Pb>,
    /// (uuid, datapath, name, key, members)
    pub mcs: Vec<(String, String, String, i64, Vec<String>)>,
    /// HA_Chassis (uuid, chassis, priority).
    pub ha_chassis: Vec<(String, String, i64)>,
    /// HA_Chassis_Group (uuid, name, members).
    pub ha_groups: Vec<(String, String, Vec<String>)>,
}

impl World {
    pub fn dp(&mut self, uuid: &str, key: i64) -> &mut Self {
        self.datapaths.push((uuid.into(), key, Vec::new()));
        self
    }

    pub fn chassis(&mut self, uuid: &str, name: &str) -> &mut Self {
        self.chassis.push((uuid.into(), name.into(), Vec::new()));
        self
    }

    pub fn pb(&mut self, pb: Pb) -> &mut Self {
        self.pbs.push(pb);
        self
    }

    pub fn mc(
        &mut self,
        uuid: &str,
        dp: &str,
        name: &str,
        key: i64,
        members: &[&str],
    ) -> &mut Self {
        self.mcs.push((
            uuid.into(),
            dp.into(),
            name.into(),
            key,
            members.iter().map(|m| (*m).to_owned()).collect(),
        ));
        self
    }

    pub fn json(&self) -> String {
        let dps: Vec<Value> = self
            .datapaths
            .iter()
            .map(|(u, k, ext)| json!([["uuid", u], k, map(ext)]))
            .collect();
        let chassis: Vec<Value> = self
            .chassis
            .iter()
            .map(|(u, n, oc)| json!([["uuid", u], n, map(oc)]))
            .collect();
        let pbs: Vec<Value> = self.pbs.iter().map(Pb::row).collect();
        let mcs: Vec<Value> = self
            .mcs
            .iter()
            .map(|(u, dp, n, k, m)| json!([["uuid", u], ["uuid", dp], n, k, uuid_set(m)]))
            .collect();
        let ha: Vec<Value> = self
            .ha_chassis
            .iter()
            .map(|(u, c, p)| json!([["uuid", u], ["uuid", c], p]))
            .collect();
        let groups: Vec<Value> = self
            .ha_groups
            .iter()
            .map(|(u, n, m)| json!([["uuid", u], n, uuid_set(m)]))
            .collect();
        json!([
            {"caption": "Datapath_Binding table", "headings": ["_uuid", "tunnel_key", "external_ids"], "data": dps},
            {"caption": "Chassis table", "headings": ["_uuid", "name", "other_config"], "data": chassis},
            {"caption": "Port_Binding table", "headings": ["_uuid", "logical_port", "datapath", "tunnel_key", "type", "chassis", "options", "parent_port", "tag", "mac", "ha_chassis_group", "additional_chassis"], "data": pbs},
            {"caption": "Multicast_Group table", "headings": ["_uuid", "datapath", "name", "tunnel_key", "ports"], "data": mcs},
            {"caption": "HA_Chassis table", "headings": ["_uuid", "chassis", "priority"], "data": ha},
            {"caption": "HA_Chassis_Group table", "headings": ["_uuid", "name", "ha_chassis"], "data": groups},
        ])
        .to_string()
    }

    pub fn load(&self) -> Southbound {
        let mut sb = Southbound::default();
        sb.load_json(&self.json()).expect("test world loads");
        sb
    }
}

/// Runtime data under construction.
pub struct Rt(pub Runtime);

impl Rt {
    pub fn new(name: &str, chassis: &str) -> Self {
        Self(Runtime {
            chassis_name: name.into(),
            chassis: Some(id(chassis)),
            geneve_field: Some(0),
            ..Runtime::default()
        })
    }

    pub fn local_dp(&mut self, dp: &str, key: u32, localnet: Option<&str>) -> &mut Self {
        self.0.local_datapaths.insert(
            id(dp),
            LocalDatapath {
                key,
                is_switch: true,
                localnet: localnet.map(id),
                peers: Vec::new(),
                multichassis_ports: Vec::new(),
            },
        );
        self
    }

    pub fn peer(&mut self, dp: &str, local: &str, remote: &str) -> &mut Self {
        if let Some(ld) = self.0.local_datapaths.get_mut(&id(dp)) {
            ld.peers.push((id(local), id(remote)));
        }
        self
    }

    pub fn vif(&mut self, pb: &str, ofport: u32) -> &mut Self {
        self.0.bound.insert(
            id(pb),
            BindingKind::Vif {
                ofport,
                iface: format!("vif{ofport}"),
            },
        );
        self
    }

    pub fn patch(&mut self, pb: &str, ofport: u32) -> &mut Self {
        self.0.patch_ofports.insert(id(pb), ofport);
        self
    }

    pub fn zone(&mut self, name: &str, zone: u16) -> &mut Self {
        self.0.ct_zones.insert(name.into(), zone);
        self
    }

    /// The port's zone and its datapath's DNAT and SNAT zones.
    pub fn zones(&mut self, port: &str, dp: &str, ct: u16, dnat: u16, snat: u16) -> &mut Self {
        if ct != 0 {
            self.zone(port, ct);
        }
        self.zone(&format!("{dp}_dnat"), dnat);
        self.zone(&format!("{dp}_snat"), snat)
    }

    pub fn tunnel(&mut self, chassis: &str, ip: &str, encap: EncapType, ofport: u32) -> &mut Self {
        self.0
            .tunnels
            .entry(chassis.into())
            .or_default()
            .push(Tunnel {
                chassis: chassis.into(),
                remote_ip: ip.into(),
                encap,
                ofport,
            });
        self
    }
}

/// A flow as `ovs-ofctl -O OpenFlow15 dump-flows --no-stats` prints it (the switch keeps
/// the VLAN match in OF1.5 form), without the leading space.
pub fn text(f: &Flow) -> String {
    let stored = Flow {
        m: f.m.canonical_of15(),
        ..f.clone()
    };
    stored.to_string().trim().to_owned()
}

/// Every flow of `all()`, as text, and the errors.
pub fn run(sb: &Southbound, rt: &Runtime) -> (BTreeSet<String>, PhysicalFlows) {
    let p = all(&sb.replica, rt, &L);
    assert_encodable(p.flows());
    (p.flows().map(text).collect(), p)
}

/// Asserts that the expected lines are among the flows.
pub fn assert_has(flows: &BTreeSet<String>, expected: &[&str]) {
    let missing: Vec<&&str> = expected.iter().filter(|e| !flows.contains(**e)).collect();
    assert!(
        missing.is_empty(),
        "missing:\n{}\nhave:\n{}",
        missing
            .iter()
            .map(|s| format!("  {s}"))
            .collect::<Vec<_>>()
            .join("\n"),
        flows
            .iter()
            .map(|s| format!("  {s}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The flows of one table.
pub fn table(flows: &BTreeSet<String>, table: u8) -> Vec<&str> {
    let tag = format!(", table={table}, ");
    flows
        .iter()
        .filter(|f| f.contains(&tag))
        .map(String::as_str)
        .collect()
}

/// Every flow encodes as a flow_mod (the match has an OF1.5 form, the actions fit).
pub fn assert_encodable<'a>(flows: impl Iterator<Item = &'a Flow>) {
    let mut buf = BytesMut::new();
    for f in flows {
        buf.clear();
        f.encode_flow_mod_body(&mut buf, FlowModCommand::Add)
            .unwrap_or_else(|e| panic!("{f}: {e}"));
    }
}

/// The ten `set_field:0->regN` of a register clear, comma-joined.
pub fn clear_regs() -> String {
    (0..10)
        .map(|n| format!("set_field:0->reg{n}"))
        .collect::<Vec<_>>()
        .join(",")
}

pub use crate::runtime::EncapType::{Geneve, Stt, Vxlan};
