//! Runtime data: what this chassis knows beyond the Southbound rows, computed by the engine
//! from the SB replica and the local OVS database (ovn-controller's `runtime_data`): which
//! ports are bound here and on which OpenFlow port, which datapaths are local, the tunnels
//! to other chassis, the conntrack zones. The logical-flow view and the physical flows both
//! read it; only the engine writes it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use sbclient::Uuid;

/// The encapsulation of a tunnel (preferred geneve > stt > vxlan).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EncapType {
    Geneve,
    Stt,
    Vxlan,
}

impl EncapType {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "geneve" => Some(Self::Geneve),
            "stt" => Some(Self::Stt),
            "vxlan" => Some(Self::Vxlan),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Geneve => "geneve",
            Self::Stt => "stt",
            Self::Vxlan => "vxlan",
        }
    }
}

/// A tunnel port on br-int towards another chassis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tunnel {
    /// Remote chassis name.
    pub chassis: String,
    /// Remote encap IP (`ovn-chassis-id` is `<chassis>@<ip>`).
    pub remote_ip: String,
    pub encap: EncapType,
    pub ofport: u32,
}

/// A logical datapath with ports of local interest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LocalDatapath {
    pub key: u32,
    pub is_switch: bool,
    /// The localnet Port_Binding used on this datapath (at most one), if its network is
    /// mapped on this chassis.
    pub localnet: Option<Uuid>,
    /// Patch / l3gateway ports of this datapath whose peers are local: (local PB, peer PB).
    pub peers: Vec<(Uuid, Uuid)>,
    /// Multichassis ports of this datapath (ovn-controller's `ld->multichassis_ports`): its
    /// VIF Port_Bindings (type "", no `parent_port`) whose `additional_chassis` is not
    /// empty, as the engine sees them in the SB. Traffic from them to remote ports is
    /// tunnelled even on a switch with a localnet port.
    pub multichassis_ports: Vec<Uuid>,
}

/// How a Port_Binding is bound to this chassis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BindingKind {
    /// A VIF (or localport) with an OVS interface on br-int.
    Vif { ofport: u32, iface: String },
    /// A nested container: traffic arrives on the parent's ofport with this VLAN tag (0: the
    /// port has no tag, and no flows).
    Container { parent_ofport: u32, tag: u16 },
    /// l3gateway, l2gateway, chassisredirect, external: claimed without an interface.
    Claimed,
}

/// Where the physical stage's drops are sampled (ovn-controller's `physical_debug`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DropSampling {
    /// `Flow_Sample_Collector_Set` id the samples go to.
    pub collector_set_id: u32,
    /// Observation domain; samples carry it in the top 8 bits of `obs_domain_id`.
    pub obs_domain_id: u32,
}

/// What the engine decided about the chassis and its ports.
#[derive(Clone, Debug, Default)]
pub struct Runtime {
    pub chassis_name: String,
    /// This chassis' `Chassis` row, once it exists.
    pub chassis: Option<Uuid>,
    /// Port_Binding uuid to how it is bound here (VIFs with ofport, containers, claims).
    pub bound: HashMap<Uuid, BindingKind>,
    /// Localports with an interface here (never claimed): PB uuid to ofport.
    pub localports: HashMap<Uuid, u32>,
    /// Datapaths of local interest.
    pub local_datapaths: BTreeMap<Uuid, LocalDatapath>,
    /// br-int ofport of the patch port to the mapped bridge, by localnet/l2gateway PB.
    pub patch_ofports: HashMap<Uuid, u32>,
    /// Tunnels to other chassis, by chassis name.
    pub tunnels: BTreeMap<String, Vec<Tunnel>>,
    /// The chassis whose tunnel has a BFD session up (what HA activity follows).
    pub active_tunnels: std::collections::BTreeSet<String>,
    /// Conntrack zones by name (`<lport>`, `<dp uuid>_dnat`, `<dp uuid>_snat`).
    pub ct_zones: BTreeMap<String, u16>,
    /// chassisredirect / external ports whose HA group makes this chassis active.
    pub active_ha: BTreeSet<Uuid>,
    /// chassisredirect / external ports whose HA group names this chassis, active or not
    /// (their flows are installed here either way, as ovn-controller relates them).
    pub ha_members: BTreeSet<Uuid>,
    /// `tun_metadataN` holding OVN's Geneve option (negotiated with the switch); `None`
    /// when Geneve is unavailable.
    pub geneve_field: Option<u8>,
    /// The `tun_metadataN` holding ovn-agent's pkt.mark option.
    pub mark_field: Option<u8>,
    /// Remote chassis to and from which pkt.mark is carried (both ends have
    /// `ovn-agent-tunnel-pkt-mark`); empty when this chassis has it off.
    pub pkt_mark_peers: std::collections::BTreeSet<String>,
    /// Debug drop sampling: `Some` when `SB_Global options:debug_drop_collector_set` is a
    /// nonzero id and br-int has a `Flow_Sample_Collector_Set` row with that `id` (and
    /// `bridge` br-int); `obs_domain_id` is `SB_Global options:debug_drop_domain_id`
    /// (0 when unset). The drops of tables 0, 40, 41 and 65 then sample first.
    pub drop_sampling: Option<DropSampling>,
    /// The ids of the local OVS's `Flow_Sample_Collector_Set` rows: the logical flows'
    /// `sample` actions to other sets are left out, so a change compiles them again.
    pub collector_ids: std::collections::BTreeSet<u32>,
    /// Virtual ports held here (see `BindingPlan::virtual_held`): resident, no flows.
    pub virtual_held: BTreeSet<Uuid>,
}
