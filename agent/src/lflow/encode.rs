//! Action encoding: OVN actions to OpenFlow actions (as ovn-controller 23.03.1 does).

use super::actions::{Action, CtNatKind, FieldRef, Pipeline, Rhs};
use super::controller;
use super::error::{semantic, LflowError, Result};
use super::layout::TableLayout;
use super::of::{
    self, controller as controller_action, ct, dec_ttl, mov, pop, push, resubmit, set_field, whole,
    CtSpec, FieldId, NatSpec, OfAction, SubField as Subfield,
};
use super::symtab::OvnField;
use openflow::wire::group_mod::OFPGT_SELECT;
use openflow::wire::meter_mod::{OFPMBT_DROP, OFPMF_BURST, OFPMF_KBPS, OFPMF_STATS};
use openflow::wire::{Bucket, Group, MeterBand, MeterMod};

/// How the key of a `set_meter` meter starts (as in ovn-controller): its content is in the
/// key, unlike a named meter's (an SB `Meter` row's name, whose bands can change).
pub const SET_METER_KEY: &str = "__string:";

/// A select group with OVN's `dp_hash` selection method.
pub(super) fn select_group(param: u64, buckets: Vec<Bucket>) -> Group {
    Group {
        group_type: OFPGT_SELECT,
        selection_method: "dp_hash".into(),
        selection_method_param: param,
        buckets,
        ..Group::default()
    }
}

/// Chassis state the encoder consults. Implementations use interior mutability for ids.
pub trait EncodeEnv {
    /// Tunnel key of a port or multicast group of the lflow's datapath.
    fn port_key(&self, name: &str) -> Option<u32>;
    /// Id of a group (allocated on first use).
    fn group_id(&self, group: &Group) -> Option<u32>;
    /// Id of the meter known as `key` (allocated on first use), installed as `meter`.
    fn meter_id(&self, key: &str, meter: &MeterMod) -> Option<u32>;
    /// Meter id of a named (NB `Meter`) meter.
    fn named_meter(&self, name: &str) -> Option<u32>;
    /// OpenFlow port of the tunnel to the chassis that hosts `port` (fwd_group liveness).
    fn tunnel_ofport(&self, _port: &str) -> Option<u32> {
        None
    }
    /// Whether logical port `port` is bound to this chassis (`ct_lb_mark_local`).
    fn is_local_port(&self, _port: &str) -> bool {
        false
    }
    /// Whether the SB option catalogue (`DHCP_Options`, `DHCPv6_Options`) has this option.
    fn dhcp_option_known(&self, _v6: bool, _name: &str) -> bool {
        true
    }
    /// Whether the local OVS has a `Flow_Sample_Collector_Set` with this id.
    fn collector_set_exists(&self, _id: u32) -> bool {
        false
    }
    /// SB_Global `options:register_consolidation` (northd 25.03+): load balancer affinity
    /// keeps its backend in the consolidated registers.
    fn register_consolidation(&self) -> bool {
        false
    }
}

/// Per-lflow encoding parameters.
#[derive(Clone, Debug)]
pub struct EncodeParams {
    pub pipeline: Pipeline,
    pub table: u32,
    pub layout: TableLayout,
    pub is_switch: bool,
    /// The router has `snat-ct-zone`, so `*_in_czone` actions use the SNAT zone.
    pub common_zone_is_snat: bool,
    pub controller_meter: Option<u32>,
    pub lflow_uuid: sbclient::Uuid,
    pub dp_key: u32,
}

pub struct Encoder<'a> {
    pub env: &'a dyn EncodeEnv,
    pub p: &'a EncodeParams,
}

pub(super) fn sub(f: &FieldRef) -> Subfield {
    of::sub(f.field, f.ofs, f.n_bits)
}

fn zone(reg: u8) -> Subfield {
    of::sub(FieldId::reg(reg), 0, 16)
}

pub(super) fn reg10_bit(bit: u32) -> Subfield {
    of::sub(FieldId::reg(10), bit, 1)
}

pub(super) fn clear_flag(bit: u32) -> OfAction {
    set_field(FieldId::reg(10), 0, 1 << bit)
}

/// A value loaded into a register argument: from a field or a constant.
enum ArgSrc {
    Field(Subfield),
}

impl Encoder<'_> {
    fn table_of(&self, pipeline: Pipeline, t: u32) -> Result<u8> {
        self.p
            .layout
            .logical_table(pipeline, t)
            .ok_or(LflowError::TableOutOfRange { table: t })
    }

    pub(super) fn next_table(&self) -> Result<u8> {
        self.table_of(self.p.pipeline, self.p.table + 1)
    }

    fn output_table(&self, pipeline: Pipeline) -> u8 {
        match pipeline {
            Pipeline::Ingress => self.p.layout.output_entry,
            Pipeline::Egress => self.p.layout.save_inport,
        }
    }

    /// The ct zone of `ct_next`, `ct_commit`, `ct_lb*`: per-port on switches, DNAT zone on routers.
    pub(super) fn default_zone(&self) -> Subfield {
        zone(if self.p.is_switch { 13 } else { 11 })
    }

    /// A switch's zone, or a router's SNAT zone (`snat`) or DNAT zone.
    pub(super) fn zone_of(&self, snat: bool) -> Subfield {
        if snat && !self.p.is_switch {
            zone(12)
        } else {
            self.default_zone()
        }
    }

    /// Where `get_arp`/`get_nd` and `lookup_arp_ip`/`lookup_nd_ip` pass the address: reg0,
    /// or the release's xxreg for IPv6.
    fn nd_lookup_arg(&self, v6: bool) -> Subfield {
        whole(if v6 {
            FieldId::xxreg(self.p.layout.dialect.nd_lookup_xxreg)
        } else {
            FieldId::reg(0)
        })
    }

    pub fn encode(&self, actions: &[Action]) -> Result<Vec<OfAction>> {
        let mut out = Vec::new();
        for a in actions {
            self.encode_one(a, &mut out)?;
        }
        Ok(out)
    }

    pub(super) fn controller(&self, userdata: Vec<u8>, pause: bool) -> OfAction {
        controller_action(userdata, pause, self.p.controller_meter)
    }

    /// The stack-based argument protocol: save destinations, load sources, run `body`,
    /// restore destinations.
    fn with_args(
        args: &[(Subfield, ArgSrc)],
        out: &mut Vec<OfAction>,
        body: impl FnOnce(&mut Vec<OfAction>),
    ) {
        let used: Vec<&(Subfield, ArgSrc)> = args
            .iter()
            .filter(|(dst, ArgSrc::Field(src))| src.field != dst.field)
            .collect();
        for (dst, _) in &used {
            out.push(push(*dst));
        }
        for (_, ArgSrc::Field(src)) in used.iter().rev() {
            out.push(push(*src));
        }
        for (dst, _) in &used {
            out.push(pop(*dst));
        }
        body(out);
        for (dst, _) in used.iter().rev() {
            out.push(pop(*dst));
        }
    }

    fn nested_userdata(&self, opcode: u32, inner: &[Action]) -> Result<Vec<u8>> {
        let mut ud = controller::header(opcode);
        let acts = self.encode(inner)?;
        let mut nested = bytes::BytesMut::new();
        OfAction::encode_list(&acts, &mut nested)
            .map_err(|e| LflowError::Semantic(format!("nested actions: {e}")))?;
        ud.extend_from_slice(&nested);
        Ok(ud)
    }

    fn encode_one(&self, a: &Action, out: &mut Vec<OfAction>) -> Result<()> {
        let ip_arg = |v6: bool| {
            whole(if v6 {
                FieldId::xxreg(0)
            } else {
                FieldId::reg(0)
            })
        };
        match a {
            Action::Next { pipeline, table } => {
                out.push(resubmit(self.table_of(*pipeline, *table)?));
            }
            Action::Output => out.push(resubmit(self.output_table(self.p.pipeline))),
            Action::Load { dst, value } => {
                let (v, m) = match value {
                    Rhs::Int { value, mask } => {
                        let width_mask = of::sub(dst.field, 0, dst.n_bits).mask();
                        let m = mask.unwrap_or(u128::MAX) & width_mask;
                        (value & m, m)
                    }
                    Rhs::Str(name) => (
                        u128::from(self.env.port_key(name).unwrap_or(0)),
                        0xffff_ffff,
                    ),
                    Rhs::Field(_) => return semantic("internal: field load"),
                };
                if m == 0 {
                    return Ok(());
                }
                out.push(set_field(dst.field, v << dst.ofs, m << dst.ofs));
            }
            Action::Move { dst, src } => out.push(mov(sub(src), sub(dst))),
            Action::Exchange { a, b } => {
                out.extend([push(sub(b)), push(sub(a)), pop(sub(b)), pop(sub(a))]);
            }
            Action::Push(f) => out.push(push(sub(f))),
            Action::Pop(f) => out.push(pop(sub(f))),
            Action::DecTtl => out.push(dec_ttl()),
            Action::CtNext { snat_zone } => out.push(ct(CtSpec {
                commit: false,
                table: Some(self.next_table()?),
                zone: self.zone_of(*snat_zone),
                nat: None,
                exec: vec![],
            })),
            Action::CtCommit(inner) => {
                let exec = self.encode(inner)?;
                // Always encoded where it stands (23.03.1 drops it when it is not first).
                out.push(ct(CtSpec {
                    commit: true,
                    table: None,
                    zone: self.default_zone(),
                    nat: Some(NatSpec::Typed {
                        src: true,
                        addr: None,
                        ports: None,
                    }),
                    exec,
                }));
            }
            Action::CtCommitV1 { mark, label } => {
                let mut exec = Vec::new();
                if let Some((v, m)) = mark {
                    exec.push(set_field(FieldId::CT_MARK, v & m, *m));
                }
                if let Some((v, m)) = label {
                    exec.push(set_field(FieldId::CT_LABEL, v & m, *m));
                }
                out.push(ct(CtSpec {
                    commit: true,
                    table: None,
                    zone: zone(13),
                    nat: Some(NatSpec::Typed {
                        src: true,
                        addr: None,
                        ports: None,
                    }),
                    exec,
                }));
            }
            Action::CtNat { kind, addr, ports } => {
                let czone = if self.p.common_zone_is_snat { 12 } else { 11 };
                let (reg, src) = match kind {
                    CtNatKind::Dnat => (11, false),
                    CtNatKind::Snat => (12, true),
                    CtNatKind::DnatInCzone => (czone, false),
                    CtNatKind::SnatInCzone => (czone, true),
                };
                let nat = match addr {
                    None => NatSpec::Plain,
                    Some(a) => NatSpec::Typed {
                        src,
                        addr: Some(*a),
                        ports: *ports,
                    },
                };
                out.push(ct(CtSpec {
                    commit: addr.is_some(),
                    table: Some(self.next_table()?),
                    zone: zone(reg),
                    nat: Some(nat),
                    exec: vec![],
                }));
            }
            Action::CtCommitZone { snat_zone, nat } => out.push(ct(CtSpec {
                commit: true,
                table: Some(self.next_table()?),
                zone: self.zone_of(*snat_zone),
                nat: nat.then_some(NatSpec::Plain),
                exec: vec![],
            })),
            Action::MacCacheUse => out.push(resubmit(self.p.layout.mac_cache_use)),
            Action::CtLb {
                mark,
                local,
                backends,
                hash_fields,
                flag,
            } => self.ct_lb(
                *mark,
                *local,
                backends,
                hash_fields.as_deref(),
                flag.as_deref(),
                out,
            )?,
            Action::CtClear => out.push(OfAction::CtClear),
            Action::CtSnatToVip => out.push(resubmit(self.p.layout.ct_snat_hairpin)),
            Action::Clone(inner) => out.push(OfAction::Clone(self.encode(inner)?)),
            Action::Nested(kind, inner) => {
                let ud = self.nested_userdata(kind.opcode(), inner)?;
                let paused = self
                    .p
                    .layout
                    .dialect
                    .paused_nested_opcodes
                    .contains(&kind.opcode());
                out.push(self.controller(ud, paused));
            }
            Action::OvnFieldLoad { field, value } => {
                let mut ud;
                match field {
                    OvnField::Icmp4FragMtu => {
                        ud = controller::header(13);
                        ud.extend_from_slice(&(*value as u16).to_be_bytes());
                    }
                    OvnField::Icmp6FragMtu => {
                        ud = controller::header(21);
                        ud.extend_from_slice(&value.to_be_bytes());
                    }
                }
                out.push(self.controller(ud, true));
            }
            Action::Result { dst, func } => self.result_fn(dst, *func, out),
            Action::PutOpts { dst, v6, ra, opts } => {
                let opcode = if *ra {
                    8
                } else if *v6 {
                    5
                } else {
                    2
                };
                if !*ra {
                    if let Some(o) = opts
                        .iter()
                        .find(|o| !self.env.dhcp_option_known(*v6, &o.name))
                    {
                        return semantic(format!("unknown DHCP option {}", o.name));
                    }
                }
                let mut ud = controller::header(opcode);
                controller::put_result_dst(&mut ud, &sub(dst));
                if *ra {
                    controller::put_nd_ra_opts(&mut ud, opts)?;
                } else if *v6 {
                    controller::put_dhcpv6_opts(&mut ud, opts)?;
                } else {
                    controller::put_dhcpv4_opts(&mut ud, opts)?;
                }
                out.push(self.controller(ud, true));
            }
            Action::GetArp { v6, port, ip } => {
                let args = [
                    (whole(FieldId::reg(15)), ArgSrc::Field(sub(port))),
                    (self.nd_lookup_arg(*v6), ArgSrc::Field(sub(ip))),
                ];
                let t = self.p.layout.mac_binding;
                Self::with_args(&args, out, |o| {
                    o.push(set_field(FieldId::ETH_DST, 0, 0xffff_ffff_ffff));
                    o.push(resubmit(t));
                });
            }
            Action::PutArp { v6, port, ip, mac } => {
                let args = [
                    (whole(FieldId::reg(14)), ArgSrc::Field(sub(port))),
                    (ip_arg(*v6), ArgSrc::Field(sub(ip))),
                    (whole(FieldId::ETH_SRC), ArgSrc::Field(sub(mac))),
                ];
                let c = self.controller(controller::header(if *v6 { 4 } else { 1 }), false);
                Self::with_args(&args, out, |o| o.push(c));
            }
            Action::LookupArp {
                v6,
                dst,
                port,
                ip,
                mac,
            } => {
                let args = [
                    (whole(FieldId::reg(14)), ArgSrc::Field(sub(port))),
                    (ip_arg(*v6), ArgSrc::Field(sub(ip))),
                    (whole(FieldId::ETH_SRC), ArgSrc::Field(sub(mac))),
                ];
                let t = self.p.layout.mac_lookup;
                Self::with_args(&args, out, |o| {
                    o.push(clear_flag(6));
                    o.push(resubmit(t));
                    o.push(mov(reg10_bit(6), sub(dst)));
                });
            }
            Action::LookupArpIp { v6, dst, port, ip } => {
                let args = [
                    (whole(FieldId::reg(15)), ArgSrc::Field(sub(port))),
                    (self.nd_lookup_arg(*v6), ArgSrc::Field(sub(ip))),
                ];
                let t = self.p.layout.mac_binding;
                Self::with_args(&args, out, |o| {
                    o.push(push(whole(FieldId::ETH_DST)));
                    o.push(clear_flag(6));
                    o.push(resubmit(t));
                    o.push(mov(reg10_bit(6), sub(dst)));
                    o.push(pop(whole(FieldId::ETH_DST)));
                });
            }
            Action::GetFdb { dst, mac, remote } => {
                let args = [(whole(FieldId::ETH_DST), ArgSrc::Field(sub(mac)))];
                // The remote FDB answers in `remote_outport` (reg1), the local in outport.
                let (t, port) = if *remote {
                    (self.p.layout.get_remote_fdb, FieldId::reg(1))
                } else {
                    (self.p.layout.get_fdb, FieldId::reg(15))
                };
                Self::with_args(&args, out, |o| {
                    o.push(set_field(port, 0, 0xffff_ffff));
                    o.push(resubmit(t));
                });
                if sub(dst) != whole(port) {
                    out.push(mov(whole(port), sub(dst)));
                }
            }
            Action::Mirror(port) => {
                // A copy to the mirror's port, entering the output stage from no OpenFlow
                // port (so that a mirror of traffic to that port still gets out).
                if let Some(key) = self.env.port_key(port) {
                    out.push(OfAction::Clone(vec![
                        set_field(FieldId::IN_PORT, 0xffff, 0xffff),
                        set_field(FieldId::reg(15), u128::from(key), 0xffff_ffff),
                        resubmit(self.p.layout.remote_output),
                    ]));
                }
            }
            Action::LookupFdb { dst, port, mac } => {
                let args = [
                    (whole(FieldId::reg(14)), ArgSrc::Field(sub(port))),
                    (whole(FieldId::ETH_SRC), ArgSrc::Field(sub(mac))),
                ];
                let t = self.p.layout.lookup_fdb;
                Self::with_args(&args, out, |o| {
                    o.push(clear_flag(8));
                    o.push(resubmit(t));
                });
                out.push(mov(reg10_bit(8), sub(dst)));
            }
            Action::PutFdb { port, mac } => {
                let args = [
                    (whole(FieldId::reg(14)), ArgSrc::Field(sub(port))),
                    (whole(FieldId::ETH_SRC), ArgSrc::Field(sub(mac))),
                ];
                let c = self.controller(controller::header(25), false);
                Self::with_args(&args, out, |o| o.push(c));
            }
            Action::Select { dst, members } => {
                let t = self.next_table()?;
                let buckets = members
                    .iter()
                    .enumerate()
                    .map(|(i, (v, w))| Bucket {
                        bucket_id: i as u32,
                        weight: Some(*w),
                        actions: vec![
                            set_field(dst.field, u128::from(*v) << dst.ofs, sub(dst).mask()),
                            resubmit(t),
                        ],
                        ..Bucket::default()
                    })
                    .collect();
                if let Some(id) = self.env.group_id(&select_group(1 << 32, buckets)) {
                    out.push(OfAction::Group(id));
                }
            }
            Action::SetQueue(q) => out.push(OfAction::SetQueue(u32::from(*q))),
            Action::SetMeter { rate, burst } => {
                let key = match burst {
                    Some(b) => format!("{SET_METER_KEY} uuid {} kbps burst stats bands=type=drop rate={rate} burst_size={b}", self.p.lflow_uuid),
                    None => format!("{SET_METER_KEY} uuid {} kbps stats bands=type=drop rate={rate}", self.p.lflow_uuid),
                };
                let meter = MeterMod {
                    flags: OFPMF_KBPS | OFPMF_STATS | if burst.is_some() { OFPMF_BURST } else { 0 },
                    bands: vec![MeterBand {
                        band_type: OFPMBT_DROP,
                        rate: u32::try_from(*rate).map_err(|_| {
                            LflowError::Semantic(format!("meter rate {rate} too large"))
                        })?,
                        burst_size: u32::try_from(burst.unwrap_or(0))
                            .map_err(|_| LflowError::Semantic("meter burst too large".into()))?,
                        extra: [0; 4],
                    }],
                    ..MeterMod::default()
                };
                if let Some(id) = self.env.meter_id(&key, &meter) {
                    out.push(OfAction::Meter(id));
                }
            }
            Action::Log {
                verdict,
                severity,
                name,
                meter,
            } => {
                let mut ud = controller::header(7);
                ud.push(*verdict);
                ud.push(*severity);
                if let Some(n) = name {
                    ud.extend_from_slice(n.as_bytes());
                }
                let meter_id = meter.as_deref().and_then(|m| self.env.named_meter(m));
                out.push(controller_action(ud, false, meter_id));
            }
            Action::TriggerEvent { event, opts } => {
                let ud = controller::trigger_event(event, opts)?;
                out.push(self.controller(ud, false));
            }
            Action::Igmp => out.push(self.controller(controller::header(16), false)),
            Action::BindVport { vport, port } => {
                let Some(key) = self.env.port_key(vport) else {
                    return Ok(());
                };
                let mut ud = controller::header(17);
                ud.extend_from_slice(&key.to_be_bytes());
                let c = self.controller(ud, false);
                Self::with_args(
                    &[(whole(FieldId::reg(14)), ArgSrc::Field(sub(port)))],
                    out,
                    |o| o.push(c),
                );
            }
            Action::HandleSvcCheck(port) => {
                let c = self.controller(controller::header(18), false);
                Self::with_args(
                    &[(whole(FieldId::reg(14)), ArgSrc::Field(sub(port)))],
                    out,
                    |o| o.push(c),
                );
            }
            Action::HandleDhcpv6Reply => out.push(self.controller(controller::header(19), false)),
            Action::BfdMsg => out.push(self.controller(controller::header(23), false)),
            Action::FwdGroup { liveness, ports } => {
                let mut buckets = Vec::new();
                for (i, p) in ports.iter().enumerate() {
                    let Some(key) = self.env.port_key(p) else {
                        return Ok(());
                    };
                    // With liveness, each bucket watches the tunnel towards the child's
                    // chassis; a child without one (e.g. local) makes the action encode to
                    // nothing, as in ovn-controller 23.03.1.
                    let watch_port = if *liveness {
                        let Some(ofport) = self.env.tunnel_ofport(p) else {
                            return Ok(());
                        };
                        Some(ofport)
                    } else {
                        None
                    };
                    buckets.push(Bucket {
                        bucket_id: i as u32,
                        weight: Some(1),
                        watch_port,
                        actions: vec![
                            set_field(FieldId::reg(15), u128::from(key), 0xffff),
                            resubmit(self.output_table(Pipeline::Ingress)),
                        ],
                        ..Bucket::default()
                    });
                }
                if let Some(id) = self.env.group_id(&select_group(0, buckets)) {
                    out.push(OfAction::Group(id));
                }
            }
            Action::CommitEcmpNh { ipv6, proto } => {
                out.extend(controller::commit_ecmp_nh(*ipv6, proto, &self.p.layout)?);
            }
            Action::CommitLbAff {
                vip,
                backend,
                proto,
                timeout,
            } => {
                let cookie = self
                    .p
                    .layout
                    .dialect
                    .lb_aff_learn_cookie
                    .then(|| super::chassis_view::cookie_of(&self.p.lflow_uuid));
                out.push(controller::commit_lb_aff(
                    vip,
                    backend,
                    proto.as_deref(),
                    *timeout,
                    controller::LbAffRegisters {
                        is_switch: self.p.is_switch,
                        consolidated: self.env.register_consolidation(),
                        cookie,
                    },
                    &self.p.layout,
                )?);
            }
            Action::Sample {
                probability,
                collector_set,
                obs_domain,
                obs_point,
            } => {
                if self.env.collector_set_exists(*collector_set) {
                    let point =
                        obs_point.unwrap_or_else(|| (self.p.lflow_uuid.as_u128() >> 96) as u32);
                    let domain = (obs_domain << 24) | (self.p.dp_key & 0x00ff_ffff);
                    out.push(OfAction::Sample {
                        probability: *probability,
                        collector_set_id: *collector_set,
                        obs_domain_id: domain,
                        obs_point_id: point,
                    });
                }
            }
        }
        Ok(())
    }
}
