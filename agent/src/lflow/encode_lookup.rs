//! Encoding of result functions (flag lookups in fixed tables) and `ct_lb*` groups.

use super::actions::{FieldRef, LbBackend, ResultFn};
use super::controller;
use super::encode::{clear_flag, reg10_bit, sub, Encoder};
use super::error::Result;
use super::of::{ct, mov, resubmit, set_field, CtSpec, FieldId, NatSpec, OfAction};

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
        }
    }

    pub(super) fn ct_lb(
        &self,
        mark: bool,
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
        let buckets: Vec<String> = backends
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let nat = NatSpec::Typed {
                    src: false,
                    addr: Some(b.addr),
                    ports: b.port.map(|p| (p, p)),
                };
                let ct = ct(CtSpec {
                    commit: true,
                    table: Some(t),
                    zone: z,
                    nat: Some(nat),
                    exec: exec.clone(),
                });
                format!("bucket=bucket_id:{i},weight:100,actions={ct}")
            })
            .collect();
        let method = match hash_fields {
            // As ovs-ofctl prints it: `fields=f` for one field, `fields(f1,f2)` for more.
            Some(f) if !f.contains(',') => format!("selection_method=hash,fields={f}"),
            Some(f) => format!("selection_method=hash,fields({f})"),
            None => "selection_method=dp_hash".to_string(),
        };
        let desc = format!("type=select,{method},{}", buckets.join(","));
        if let Some(id) = self.env.group_id(&desc) {
            out.push(OfAction::Group(id));
        }
        Ok(())
    }
}
