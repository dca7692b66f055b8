//! Encoding of result functions (flag lookups in fixed tables) and `ct_lb*` groups.

use super::actions::{FieldRef, LbBackend, ResultFn};
use super::controller;
use super::encode::{clear_flag, reg10_bit, select_group, sub, Encoder};
use super::error::Result;
use super::of::{
    ct, mov, pop, push, resubmit, set_field, sub as of_sub, CtSpec, FieldId, NatSpec, OfAction,
};
use openflow::oxm::MatchField;
use openflow::wire::{Bucket, Group};

impl Encoder<'_> {
    pub(super) fn result_fn(&self, dst: &FieldRef, func: ResultFn, out: &mut Vec<OfAction>) {
        let l = &self.p.layout;
        let lookup = |bit: u32, table: u8, out: &mut Vec<OfAction>| {
            out.push(clear_flag(bit));
            out.push(resubmit(table));
            out.push(mov(reg10_bit(bit), sub(dst)));
        };
        match func {
            ResultFn::CheckPktLarger(len) => {
                out.push(OfAction::CheckPktLarger {
                    pkt_len: len,
                    dst: sub(dst),
                });
            }
            ResultFn::ChkLbHairpin => lookup(7, l.chk_lb_hairpin, out),
            ResultFn::ChkLbHairpinReply => lookup(7, l.chk_lb_hairpin_reply, out),
            ResultFn::CheckInPortSec => lookup(12, l.chk_in_port_sec, out),
            ResultFn::CheckOutPortSec => lookup(12, l.chk_out_port_sec, out),
            ResultFn::ChkEcmpNhMac => lookup(13, l.ecmp_nh_mac, out),
            ResultFn::ChkEcmpNh => lookup(13, l.ecmp_nh, out),
            ResultFn::ChkLbAff => lookup(14, l.chk_lb_affinity, out),
            ResultFn::DnsLookup => {
                let mut ud = controller::header(6);
                controller::put_result_dst(&mut ud, &sub(dst));
                out.push(self.controller(ud, true));
            }
            ResultFn::CtOrigNwDst => {
                self.ct_orig(dst, l.ct_orig_nw_dst_load, FieldId::reg(1), 32, out);
            }
            ResultFn::CtOrigIp6Dst => {
                self.ct_orig(dst, l.ct_orig_ip6_dst_load, FieldId::xxreg(1), 128, out);
            }
            ResultFn::CtOrigTpDst => {
                self.ct_orig(dst, l.ct_orig_tp_dst_load, FieldId::reg(2), 16, out);
            }
            ResultFn::CtOrigProto => {
                self.ct_orig(dst, l.ct_orig_proto_load, FieldId::xxreg(1), 8, out);
            }
            ResultFn::CtStateSave => {
                load_lookup_move(FieldId::reg(4), 8, l.ct_state_save, dst, out);
            }
        }
    }

    /// A `ct_*()` load: the table loads the value into the release's register, which moves
    /// to `dst` (`legacy_reg` before 26.03; the low bits of xxreg1, saved around it, since).
    fn ct_orig(
        &self,
        dst: &FieldRef,
        table: u8,
        legacy_reg: FieldId,
        bits: u32,
        out: &mut Vec<OfAction>,
    ) {
        if !self.p.layout.dialect.ct_orig_in_result_reg {
            load_lookup_move(legacy_reg, bits, table, dst, out);
            return;
        }
        let result = of_sub(FieldId::xxreg(1), 0, bits);
        let save = sub(dst) != result;
        if save {
            out.push(push(result));
        }
        load_lookup_move(FieldId::xxreg(1), bits, table, dst, out);
        if save {
            out.push(pop(result));
        }
    }

    pub(super) fn ct_lb(
        &self,
        mark: bool,
        local: bool,
        backends: &[LbBackend],
        hash_fields: Option<&str>,
        flag: Option<&str>,
        out: &mut Vec<OfAction>,
    ) -> Result<()> {
        let t = self.next_table()?;
        let z = self.default_zone();
        if backends.is_empty() {
            out.push(ct(CtSpec {
                commit: false,
                table: Some(t),
                zone: z,
                nat: Some(NatSpec::Plain),
                exec: vec![],
            }));
            return Ok(());
        }
        let field = if mark {
            FieldId::CT_MARK
        } else {
            FieldId::CT_LABEL
        };
        let mut exec = vec![set_field(field, 2, 2)];
        match flag {
            Some("skip_snat") => exec.push(set_field(field, 4, 4)),
            Some("force_snat") => exec.push(set_field(field, 8, 8)),
            _ => {}
        }
        // `ct_lb_mark_local` keeps the backends bound here, under their own bucket ids.
        let buckets: Vec<Bucket> = backends
            .iter()
            .enumerate()
            .filter(|(_, b)| {
                !local
                    || b.logical_port
                        .as_deref()
                        .is_some_and(|p| self.env.is_local_port(p))
            })
            .map(|(i, b)| Bucket {
                bucket_id: i as u32,
                weight: Some(100),
                actions: vec![ct(CtSpec {
                    commit: true,
                    table: Some(t),
                    zone: z,
                    nat: Some(NatSpec::Typed {
                        src: false,
                        addr: Some(b.addr),
                        ports: b.port.map(|p| (p, p)),
                    }),
                    exec: exec.clone(),
                })],
                ..Bucket::default()
            })
            .collect();
        if buckets.is_empty() {
            return Ok(());
        }
        let group = match hash_fields {
            Some(f) => Group {
                selection_method: "hash".into(),
                fields: hash_fields_as_ovs_stores_them(f),
                ..select_group(0, buckets)
            },
            None => select_group(0, buckets),
        };
        if let Some(id) = self.env.group_id(&group) {
            out.push(OfAction::Group(id));
        }
        Ok(())
    }
}

/// Zero the low `bits` of `reg`, look the value up in `table` (which loads it there), move
/// it to `dst`.
fn load_lookup_move(reg: FieldId, bits: u32, table: u8, dst: &FieldRef, out: &mut Vec<OfAction>) {
    let mask = if bits >= 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    };
    let low = u128::from(u64::MAX);
    // One load per 64 bits, as OVN writes a wide register.
    out.push(set_field(reg, 0, mask & low));
    if mask >> 64 != 0 {
        out.push(set_field(reg, 0, mask & !low));
    }
    out.push(resubmit(table));
    out.push(mov(of_sub(reg, 0, bits), sub(dst)));
}

/// OVN's `hash_fields="ip_dst,ip_src,tp_dst,tp_src"` as OVS stores the selection fields:
/// canonical names (`tp_src` is `tcp_src`) in OVS field order, each once (observed with OVS
/// 3.1: installed with that list, dumped as `fields(ip_src,ip_dst,tcp_src,tcp_dst)`).
fn hash_fields_as_ovs_stores_them(list: &str) -> Vec<MatchField> {
    const ORDER: [FieldId; 13] = [
        FieldId::ETH_SRC,
        FieldId::ETH_DST,
        FieldId::IP_SRC,
        FieldId::IP_DST,
        FieldId::IPV6_SRC,
        FieldId::IPV6_DST,
        FieldId::NW_PROTO,
        FieldId::TCP_SRC,
        FieldId::TCP_DST,
        FieldId::UDP_SRC,
        FieldId::UDP_DST,
        FieldId::SCTP_SRC,
        FieldId::SCTP_DST,
    ];
    let mut ids: Vec<FieldId> = list
        .split(',')
        .filter_map(|f| match f.trim() {
            "tp_src" => Some(FieldId::TCP_SRC),
            "tp_dst" => Some(FieldId::TCP_DST),
            name => FieldId::by_name(name),
        })
        .collect();
    ids.sort_by_key(|id| ORDER.iter().position(|o| o == id).unwrap_or(ORDER.len()));
    ids.dedup();
    ids.into_iter()
        .map(|id| MatchField::new(id, Vec::new(), None))
        .collect()
}
