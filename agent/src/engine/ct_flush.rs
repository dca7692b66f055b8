//! Conntrack flushes for load balancers with `options:ct_flush=true`: when such a load
//! balancer of a local datapath loses a backend (a VIP's backend removed, the load balancer
//! deleted, no longer local, or the option turned off), the connections to that backend
//! through that VIP are flushed from conntrack with the next put (`NXT_CT_FLUSH`), as
//! ovn-controller does.

use std::collections::{BTreeSet, HashMap};
use std::net::{IpAddr, Ipv6Addr};

use openflow::wire::{CtFlush, CtTuple};
use sbclient::ovn_sb::{LoadBalancer, LogicalDpGroup};
use sbclient::Uuid;

use crate::hairpin::parse_endpoint;
use crate::lflow::chassis_view::ChassisView;
use crate::lflow::template::expand_templates;
use crate::view::SbView;

/// One VIP and backend of a load balancer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LbTuple {
    pub vip: IpAddr,
    pub vip_port: u16,
    pub backend: IpAddr,
    pub backend_port: u16,
    /// 0 for a VIP without a port.
    pub proto: u8,
}

fn mapped(ip: IpAddr) -> Ipv6Addr {
    match ip {
        IpAddr::V4(a) => a.to_ipv6_mapped(),
        IpAddr::V6(a) => a,
    }
}

impl LbTuple {
    /// The flush of the connections to this backend through this VIP: original
    /// destination the VIP, reply source the backend.
    pub fn flush(&self) -> CtFlush {
        let port = |p: u16| (p != 0).then_some(p);
        CtFlush {
            ip_proto: self.proto,
            orig: CtTuple {
                dst: Some(mapped(self.vip)),
                dst_port: port(self.vip_port),
                ..CtTuple::default()
            },
            reply: CtTuple {
                src: Some(mapped(self.backend)),
                src_port: port(self.backend_port),
                ..CtTuple::default()
            },
            ..CtFlush::default()
        }
    }
}

impl std::fmt::Display for LbTuple {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "vip={}:{}, backend={}:{}, protocol={}",
            self.vip, self.vip_port, self.backend, self.backend_port, self.proto
        )
    }
}

/// The tuples of `lb` if it flushes (`options:ct_flush=true`); templates expanded with
/// this chassis' variables.
pub fn lb_tuples<S: std::hash::BuildHasher>(
    lb: &LoadBalancer,
    vars: &HashMap<String, String, S>,
) -> BTreeSet<LbTuple> {
    let mut out = BTreeSet::new();
    if !flushes(lb) {
        return out;
    }
    let proto = match lb.protocol.as_deref() {
        Some("udp") => 17,
        Some("sctp") => 132,
        _ => 6,
    };
    for (vip, backends) in lb.vips.iter() {
        let Some(vip) = parse_endpoint(&expand_templates(vip, vars)) else {
            continue;
        };
        for backend in expand_templates(backends, vars).split(',') {
            let Some(b) = parse_endpoint(backend) else {
                continue;
            };
            out.insert(LbTuple {
                vip: vip.ip,
                vip_port: vip.port.unwrap_or(0),
                backend: b.ip,
                backend_port: b.port.unwrap_or(0),
                proto: if vip.port.is_some() { proto } else { 0 },
            });
        }
    }
    out
}

fn flushes(lb: &LoadBalancer) -> bool {
    lb.options.get("ct_flush").is_some_and(|v| v == "true")
}

/// Whether `lb` applies to a local datapath (directly or through one of its groups).
fn is_local(lb: &LoadBalancer, view: &SbView<'_>) -> bool {
    let groups = view.replica().table::<LogicalDpGroup>();
    lb.datapaths
        .iter()
        .chain(
            [
                lb.datapath_group,
                lb.ls_datapath_group,
                lb.lr_datapath_group,
            ]
            .into_iter()
            .flatten()
            .filter_map(|g| groups?.get(&g))
            .flat_map(|g| g.datapaths.iter()),
        )
        .any(|d| view.local_datapaths.contains(d))
}

/// The local flushing load balancers' tuples, and the tuples to flush.
#[derive(Debug, Default)]
pub struct LbFlushes {
    by_lb: HashMap<Uuid, BTreeSet<LbTuple>>,
    pending: BTreeSet<LbTuple>,
}

impl LbFlushes {
    /// Follows the load balancers in `view`: what a local flushing load balancer had and
    /// no longer has becomes pending.
    pub fn update(&mut self, view: &SbView<'_>) {
        let vars = view.template_vars();
        let now: HashMap<Uuid, BTreeSet<LbTuple>> = view
            .replica()
            .table::<LoadBalancer>()
            .into_iter()
            .flat_map(sbclient::Table::iter)
            // Most load balancers do not flush: that is checked first.
            .filter(|(_, lb)| flushes(lb) && is_local(lb, view))
            .map(|(u, lb)| (*u, lb_tuples(lb, vars)))
            .filter(|(_, t)| !t.is_empty())
            .collect();
        for (u, before) in &self.by_lb {
            let after = now.get(u);
            self.pending.extend(
                before
                    .iter()
                    .filter(|t| !after.is_some_and(|a| a.contains(t))),
            );
        }
        self.by_lb = now;
    }

    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Forgets the tuples to flush (the datapath cannot flush by tuple).
    pub fn discard_pending(&mut self) {
        self.pending.clear();
    }

    /// The tuples to flush now (logged at debug level, as ovn-controller's ofctrl does).
    pub fn take_pending(&mut self) -> Vec<CtFlush> {
        std::mem::take(&mut self.pending)
            .into_iter()
            .map(|t| {
                tracing::debug!(target: "ofctrl", "Flushing CT for 5-tuple: {t}");
                t.flush()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lb(vips: &[(&str, &str)], proto: Option<&str>, flush: bool) -> LoadBalancer {
        let mut lb = LoadBalancer {
            protocol: proto.map(str::to_owned),
            ..LoadBalancer::default()
        };
        for (k, v) in vips {
            lb.vips.insert((*k).to_owned(), (*v).to_owned());
        }
        if flush {
            lb.options.insert("ct_flush".into(), "true".into());
        }
        lb
    }

    #[test]
    fn tuples_as_ovn_controller_forms_them() {
        let vars = HashMap::new();
        let text = |l: &LoadBalancer| {
            lb_tuples(l, &vars)
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            text(&lb(
                &[("192.168.0.10", "192.168.10.10,192.168.10.20")],
                None,
                true
            )),
            [
                "vip=192.168.0.10:0, backend=192.168.10.10:0, protocol=0",
                "vip=192.168.0.10:0, backend=192.168.10.20:0, protocol=0"
            ]
        );
        assert_eq!(
            text(&lb(
                &[("192.168.30.10:80", "192.168.40.10:8080")],
                Some("udp"),
                true
            )),
            ["vip=192.168.30.10:80, backend=192.168.40.10:8080, protocol=17"]
        );
        assert_eq!(
            text(&lb(&[("[aef0::1]:80", "[aef0::2]:8080")], None, true)),
            ["vip=aef0::1:80, backend=aef0::2:8080, protocol=6"]
        );
        assert!(text(&lb(&[("10.0.0.1:80", "10.0.0.2:80")], None, false)).is_empty());
        let t = lb_tuples(&lb(&[("10.0.0.1:80", "10.0.0.2:8080")], None, true), &vars);
        let f = t.first().expect("one").flush();
        assert_eq!(
            (
                f.ip_proto,
                f.orig.dst_port,
                f.reply.src_port,
                f.orig.src,
                f.reply.dst
            ),
            (6, Some(80), Some(8080), None, None)
        );
        assert_eq!(
            f.orig.dst,
            Some(std::net::Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped())
        );
    }
}
