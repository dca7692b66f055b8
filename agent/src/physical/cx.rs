//! What every physical flow builder reads: the Southbound replica, the runtime data and the
//! table layout, with the lookups ovn-controller does through its IDL indexes.

use sbclient::ovn_sb::{Chassis, DatapathBinding, PortBinding};
use sbclient::{Atom, Replica, Uuid};

use crate::lflow::layout::TableLayout;
use crate::lflow::of::FieldId;
use crate::runtime::{BindingKind, LocalDatapath, Runtime, Tunnel};

use super::actions::Zones;
use super::error::Problem;

/// Largest logical datapath key (24 bits).
const MAX_DP_KEY: i64 = (1 << 24) - 1;
/// Largest logical port key (15 bits: Geneve carries 15 bits of inport).
const MAX_PORT_KEY: i64 = 32767;
const MIN_MC_KEY: i64 = 32768;
const MAX_MC_KEY: i64 = 65535;

/// The inputs of the physical stage.
#[derive(Clone, Copy)]
pub struct Cx<'a> {
    pub sb: &'a Replica,
    pub rt: &'a Runtime,
    pub l: &'a TableLayout,
}

impl<'a> Cx<'a> {
    /// This chassis' row, once it exists.
    pub fn me(&self) -> Option<Uuid> {
        self.rt.chassis
    }

    /// Whether `chassis` (a Port_Binding's `chassis` column) is this chassis.
    pub fn is_me(&self, chassis: Option<Uuid>) -> bool {
        chassis.is_some() && chassis == self.me()
    }

    pub fn geneve_field(&self) -> Option<FieldId> {
        self.rt.geneve_field.map(FieldId::tun_metadata)
    }

    /// The field of ovn-agent's pkt.mark option, if pkt.mark is carried with `chassis`.
    pub fn mark_field_for(&self, chassis: &str) -> Option<FieldId> {
        self.rt
            .mark_field
            .filter(|_| self.rt.pkt_mark_peers.contains(chassis))
            .map(FieldId::tun_metadata)
    }

    pub fn pb(&self, uuid: &Uuid) -> Option<&'a PortBinding> {
        self.sb.table::<PortBinding>()?.get(uuid)
    }

    /// The Port_Binding named `name` (through the `logical_port` index; a scan if the
    /// replica was built without it).
    pub fn pb_by_name(&self, name: &str) -> Option<(&'a Uuid, &'a PortBinding)> {
        let t = self.sb.table::<PortBinding>()?;
        t.find_one("logical_port", &Atom::String(name.to_owned()))
            .or_else(|| t.iter().find(|(_, p)| p.logical_port == name))
    }

    /// Every Port_Binding of datapath `dp`.
    pub fn pbs_of_datapath(&self, dp: &Uuid) -> Vec<(&'a Uuid, &'a PortBinding)> {
        let Some(t) = self.sb.table::<PortBinding>() else {
            return Vec::new();
        };
        let mut found: Vec<_> = t.find("datapath", &Atom::Uuid(*dp)).collect();
        if found.is_empty() {
            found = t.iter().filter(|(_, p)| p.datapath == *dp).collect();
        }
        found.sort_by_key(|(u, _)| **u);
        found
    }

    pub fn chassis(&self, uuid: &Uuid) -> Option<&'a Chassis> {
        self.sb.table::<Chassis>()?.get(uuid)
    }

    pub fn datapath(&self, uuid: &Uuid) -> Result<&'a DatapathBinding, Problem> {
        self.sb
            .table::<DatapathBinding>()
            .and_then(|t| t.get(uuid))
            .ok_or(Problem::MissingDatapath(*uuid))
    }

    /// The tunnel key of datapath `uuid`, checked.
    pub fn dp_key(&self, uuid: &Uuid) -> Result<u32, Problem> {
        let key = self.datapath(uuid)?.tunnel_key;
        if (1..=MAX_DP_KEY).contains(&key) {
            Ok(key as u32)
        } else {
            Err(Problem::BadKey {
                what: "datapath",
                value: key,
            })
        }
    }

    /// The datapath of interest here that `uuid` is, if it is one.
    pub fn local_dp(&self, uuid: &Uuid) -> Option<&'a LocalDatapath> {
        self.rt.local_datapaths.get(uuid)
    }

    /// The conntrack zone named `name`; 0 when none is assigned.
    pub fn zone(&self, name: &str) -> u16 {
        self.rt.ct_zones.get(name).copied().unwrap_or(0)
    }

    /// The port's zone and its datapath's NAT zones (`<dp>_dnat`, `<dp>_snat`, the datapath
    /// named by uuid or by `external_ids:name` as the release names it).
    pub fn zones(&self, pb: &PortBinding) -> Zones {
        let forms = &self.l.dialect.physical;
        let dp = if forms.nat_zones_by_name {
            self.datapath(&pb.datapath)
                .ok()
                .and_then(|d| d.external_ids.get("name").cloned())
        } else {
            Some(pb.datapath.to_string())
        };
        let nat = |kind: &str| dp.as_ref().map_or(0, |d| self.zone(&format!("{d}_{kind}")));
        Zones {
            ct: self.zone(&pb.logical_port),
            dnat: nat("dnat"),
            snat: nat("snat"),
            ct_low_half: forms.encap_id_in_reg13,
        }
    }

    /// The tunnel to `chassis` (by name), preferring the one to `encap_ip` when given.
    pub fn tunnel(&self, chassis: &str, encap_ip: Option<&str>) -> Option<&'a Tunnel> {
        let tunnels = self.rt.tunnels.get(chassis)?;
        encap_ip
            .and_then(|ip| tunnels.iter().find(|t| t.remote_ip == ip))
            .or_else(|| tunnels.first())
    }

    /// The br-int OpenFlow port of the OVS interface of `pb` (a VIF, or a localport with an
    /// interface here), if it has one.
    pub fn vif_ofport(&self, uuid: &Uuid) -> Option<u32> {
        match self.rt.bound.get(uuid) {
            Some(BindingKind::Vif { ofport, .. }) => Some(*ofport),
            _ => self.rt.localports.get(uuid).copied(),
        }
    }
}

/// The tunnel key of a logical port, checked (1..32767).
pub fn port_key(pb: &PortBinding) -> Result<u32, Problem> {
    if (1..=MAX_PORT_KEY).contains(&pb.tunnel_key) {
        Ok(pb.tunnel_key as u32)
    } else {
        Err(Problem::BadKey {
            what: "port",
            value: pb.tunnel_key,
        })
    }
}

/// The tunnel key of a multicast group, checked (32768..65535).
pub fn mc_key(key: i64) -> Result<u32, Problem> {
    if (MIN_MC_KEY..=MAX_MC_KEY).contains(&key) {
        Ok(key as u32)
    } else {
        Err(Problem::BadKey {
            what: "multicast group",
            value: key,
        })
    }
}

/// A VLAN tag, checked (1..4095).
pub fn vlan_tag(tag: i64) -> Result<u16, Problem> {
    if (1..=4095).contains(&tag) {
        Ok(tag as u16)
    } else {
        Err(Problem::BadTag(tag))
    }
}

/// The first 32 bits of a row's uuid: the cookie of the flows it owns.
pub fn cookie(uuid: &Uuid) -> u64 {
    crate::lflow::flows::cookie_of(uuid)
}

/// An `options` boolean as OVS's `smap_get_bool` reads it.
pub fn option_true(value: Option<&String>) -> bool {
    value.is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// The MAC at the start of a `mac`/`addresses` entry (`"50:54:00:00:00:01 10.0.0.1"`), as
/// OVS's `str_to_mac` reads it: six hex bytes separated by colons, anything after ignored.
pub fn leading_mac(s: &str) -> Option<u64> {
    let token = s.split_whitespace().next()?;
    let parts: Vec<&str> = token.split(':').collect();
    if parts.len() != 6 {
        return None;
    }
    parts.iter().try_fold(0u64, |acc, p| {
        let byte = u8::from_str_radix(p, 16).ok()?;
        (p.len() <= 2).then_some((acc << 8) | u64::from(byte))
    })
}

/// A port's keys and where its flows go, shared by the builders.
pub struct PortCx<'a> {
    pub uuid: &'a Uuid,
    pub pb: &'a PortBinding,
    pub dp_key: u32,
    pub port_key: u32,
    pub cookie: u64,
}
