//! `inject-pkt MICROFLOW`: a packet described by an OVN match expression (`inport ==
//! "vm1" && eth.src == ... && ip4.dst == ... && ip.ttl == 64`) sent into table 0 as if it
//! arrived on the inport's interface, as ovn-controller offers it.
//!
//! The expression goes through the compiler's own parser and normalizer; it must come
//! down to one conjunction of field values. The frame is composed as OVS's
//! `flow_compose()` does with a 64-byte payload (fields the expression leaves out are
//! zero, IPv4 has no DF bit and id 0, TCP has no sequence numbers, payload byte `i` is
//! `i`): built by hand rather than with etherparse because the point is the same bytes as
//! ovn-controller injects, oddities included (an SCTP checksum of zero).

use std::collections::HashMap;

use openflow::action::Action;
use openflow::flow::{FlowMatch, Slot};
use openflow::oxm::FieldId;
use openflow::wire::PacketOut;
use sbclient::ovn_sb::{AddressSet, ChassisTemplateVar, PortGroup};
use sbclient::Replica;

use crate::engine::binding::LocalIfaces;
use crate::lflow::expr::ExprContext;
use crate::lflow::normalize::PortResolver;

const PAYLOAD_LEN: usize = 64;
const OFPP_IN_PORT: u16 = 0xfff8;
const VLAN_CFI: u16 = 0x1000;
const ETH_TYPE_IP: u16 = 0x0800;
const ETH_TYPE_IPV6: u16 = 0x86dd;
const ETH_TYPE_ARP: u16 = 0x0806;
const ETH_TYPE_RARP: u16 = 0x8035;
const PROTO_ICMP: u8 = 1;
const PROTO_IGMP: u8 = 2;
const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;
const PROTO_ICMPV6: u8 = 58;
const PROTO_SCTP: u8 = 132;
const FRAG_ANY: u8 = 1;
const FRAG_LATER: u8 = 2;
const TCP_FIN: u16 = 0x01;
const TCP_SYN: u16 = 0x02;
const TCP_RST: u16 = 0x04;

/// What the expression may name: the Southbound address sets and port groups, and the
/// local interfaces' ofports for `inport`/`outport`.
struct Names<'a> {
    address_sets: HashMap<&'a str, Vec<String>>,
    port_groups: HashMap<&'a str, Vec<String>>,
    ifaces: &'a LocalIfaces,
}

impl ExprContext for Names<'_> {
    fn address_set(&self, name: &str) -> Option<&[String]> {
        self.address_sets.get(name).map(Vec::as_slice)
    }
    fn port_group(&self, name: &str) -> Option<&[String]> {
        self.port_groups.get(name).map(Vec::as_slice)
    }
}

impl PortResolver for Names<'_> {
    fn port_key(&self, name: &str) -> Option<u32> {
        self.ifaces.by_iface_id.get(name)?.ofport
    }
}

/// The packet-out for `microflow` on this chassis, or the error text `inject-pkt` replies.
pub fn packet_out(
    microflow: &str,
    sb: &Replica,
    chassis_name: &str,
    ifaces: &LocalIfaces,
) -> Result<PacketOut, String> {
    let vars: HashMap<String, String> = sb
        .table::<ChassisTemplateVar>()
        .and_then(|t| t.iter().find(|(_, v)| v.chassis == chassis_name))
        .map(|(_, v)| {
            v.variables
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    let text = crate::lflow::template::expand_templates(microflow, &vars);
    let names = Names {
        address_sets: sb
            .table::<AddressSet>()
            .map(|t| {
                t.iter()
                    .map(|(_, s)| (s.name.as_str(), s.addresses.iter().cloned().collect()))
                    .collect()
            })
            .unwrap_or_default(),
        port_groups: sb
            .table::<PortGroup>()
            .map(|t| {
                t.iter()
                    .map(|(_, g)| (g.name.as_str(), g.ports.iter().cloned().collect()))
                    .collect()
            })
            .unwrap_or_default(),
        ifaces,
    };
    let prepared = crate::lflow::prepare_match(&text, &names).map_err(|e| e.to_string())?;
    let dnf = crate::lflow::match_dnf(&prepared, &|_| true, crate::lflow::DEFAULT_FLOW_LIMIT)
        .map_err(|e| e.to_string())?;
    match dnf.len() {
        0 => return Err("Constraints are contradictory.".to_owned()),
        1 => {}
        _ => return Err(format!("Constraints are ambiguous: {microflow}.")),
    }
    let matches =
        crate::lflow::normalize::to_matches(&dnf, &names, crate::lflow::DEFAULT_FLOW_LIMIT)
            .map_err(|e| e.to_string())?;
    // A port name that is not an interface here leaves no match.
    let Some((flow, _)) = matches.first() else {
        return Err("ingress port not found on hypervisor.".to_owned());
    };
    let in_port = value(flow, Slot::Reg(14)) as u32;
    if in_port == 0 {
        return Err("ingress port not found on hypervisor.".to_owned());
    }
    let mut r#match = openflow::oxm::Match::new();
    r#match.push(FieldId::IN_PORT_OXM, in_port.to_be_bytes().to_vec(), None);
    Ok(PacketOut {
        buffer_id: u32::MAX,
        r#match,
        actions: vec![Action::Resubmit {
            in_port: OFPP_IN_PORT,
            table: 0,
            ct: false,
        }],
        data: compose(flow),
    })
}

/// The slot's value with its mask applied (0 when the match leaves it out).
fn value(m: &FlowMatch, slot: Slot) -> u128 {
    m.get(slot).map_or(0, |(v, mask)| v & mask)
}

fn mac(v: u128) -> [u8; 6] {
    let b = (v as u64).to_be_bytes();
    [b[2], b[3], b[4], b[5], b[6], b[7]]
}

use super::csum::sum16;

fn checksum(acc: u32, data: &[u8]) -> u16 {
    super::csum::fold(super::csum::sum16(data, acc))
}

/// A frame that OVS's flow extraction parses as `m`, as `flow_compose()` builds it.
pub fn compose(m: &FlowMatch) -> Vec<u8> {
    let dl_type = value(m, Slot::DlType) as u16;
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(&mac(value(m, Slot::DlDst)));
    out.extend_from_slice(&mac(value(m, Slot::DlSrc)));
    let tci = value(m, Slot::VlanTci) as u16;
    if tci & VLAN_CFI != 0 {
        out.extend_from_slice(&0x8100u16.to_be_bytes());
        out.extend_from_slice(&tci.to_be_bytes());
    }
    out.extend_from_slice(&dl_type.to_be_bytes());
    let proto = value(m, Slot::NwProto) as u8;
    let tos = value(m, Slot::NwTos) as u8;
    let ttl = value(m, Slot::NwTtl) as u8;
    let frag = value(m, Slot::NwFrag) as u8;
    match dl_type {
        ETH_TYPE_IP => {
            let l3 = out.len();
            let src = (value(m, Slot::NwSrc) as u32).to_be_bytes();
            let dst = (value(m, Slot::NwDst) as u32).to_be_bytes();
            let mut frag_off = 0u16;
            if frag & FRAG_ANY != 0 {
                frag_off |= 0x2000;
                if frag & FRAG_LATER != 0 {
                    frag_off |= 0x64; // a fragment offset of 100 (units of 8 bytes)
                }
            }
            out.extend_from_slice(&[0x45, tos, 0, 0, 0, 0]);
            out.extend_from_slice(&frag_off.to_be_bytes());
            out.extend_from_slice(&[ttl, proto, 0, 0]);
            out.extend_from_slice(&src);
            out.extend_from_slice(&dst);
            let l4 = out.len();
            compose_l4(m, proto, frag, &mut out);
            let total = (out.len() - l3) as u16;
            out[l3 + 2..l3 + 4].copy_from_slice(&total.to_be_bytes());
            let csum = checksum(0, &out[l3..l4]);
            out[l3 + 10..l3 + 12].copy_from_slice(&csum.to_be_bytes());
            let l4_len = (out.len() - l4) as u32;
            let pseudo = sum16(&dst, sum16(&src, u32::from(proto) + l4_len));
            l4_checksums(proto, frag, pseudo, &mut out[l4..]);
        }
        ETH_TYPE_IPV6 => {
            let l3 = out.len();
            let label = value(m, Slot::Ipv6Label) as u32;
            let word = (6u32 << 28) | (u32::from(tos) << 20) | label;
            out.extend_from_slice(&word.to_be_bytes());
            out.extend_from_slice(&[0, 0, proto, ttl]);
            let src = value(m, Slot::Ipv6Src).to_be_bytes();
            let dst = value(m, Slot::Ipv6Dst).to_be_bytes();
            out.extend_from_slice(&src);
            out.extend_from_slice(&dst);
            let l4 = out.len();
            compose_l4(m, proto, frag, &mut out);
            let l4_len = out.len() - l4;
            out[l3 + 4..l3 + 6].copy_from_slice(&(l4_len as u16).to_be_bytes());
            let pseudo = sum16(&dst, sum16(&src, u32::from(proto) + l4_len as u32));
            l4_checksums(proto, frag, pseudo, &mut out[l4..]);
        }
        ETH_TYPE_ARP | ETH_TYPE_RARP => {
            out.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, proto]);
            let mut body = [0u8; 20];
            if proto == 1 || proto == 2 {
                body[..6].copy_from_slice(&mac(value(m, Slot::ArpSha)));
                body[6..10].copy_from_slice(&(value(m, Slot::NwSrc) as u32).to_be_bytes());
                body[10..16].copy_from_slice(&mac(value(m, Slot::ArpTha)));
                body[16..].copy_from_slice(&(value(m, Slot::NwDst) as u32).to_be_bytes());
            }
            out.extend_from_slice(&body);
        }
        _ => {}
    }
    out
}

/// The 64-byte payload `flow_compose()` appends: byte `i` is `i`.
fn payload(out: &mut Vec<u8>) {
    out.extend((0..PAYLOAD_LEN).map(|i| i as u8));
}

fn compose_l4(m: &FlowMatch, proto: u8, frag: u8, out: &mut Vec<u8>) {
    if frag & FRAG_ANY != 0 && frag & FRAG_LATER != 0 {
        return;
    }
    let tp_src = value(m, Slot::TpSrc) as u16;
    let tp_dst = value(m, Slot::TpDst) as u16;
    match proto {
        PROTO_TCP => {
            let flags = value(m, Slot::TcpFlags) as u16;
            out.extend_from_slice(&tp_src.to_be_bytes());
            out.extend_from_slice(&tp_dst.to_be_bytes());
            out.extend_from_slice(&[0; 8]);
            out.extend_from_slice(&((5u16 << 12) | (flags & 0x0fff)).to_be_bytes());
            out.extend_from_slice(&[0; 6]);
            if flags & (TCP_SYN | TCP_FIN | TCP_RST) == 0 {
                payload(out);
            }
        }
        PROTO_UDP => {
            out.extend_from_slice(&tp_src.to_be_bytes());
            out.extend_from_slice(&tp_dst.to_be_bytes());
            out.extend_from_slice(&((8 + PAYLOAD_LEN) as u16).to_be_bytes());
            out.extend_from_slice(&[0, 0]);
            payload(out);
        }
        PROTO_SCTP => {
            out.extend_from_slice(&tp_src.to_be_bytes());
            out.extend_from_slice(&tp_dst.to_be_bytes());
            out.extend_from_slice(&[0; 8]);
        }
        PROTO_ICMP => {
            let (t, c) = (tp_src as u8, tp_dst as u8);
            out.extend_from_slice(&[t, c, 0, 0, 0, 0, 0, 0]);
            if (t == 8 || t == 0) && c == 0 {
                payload(out);
            }
        }
        PROTO_IGMP => {
            out.extend_from_slice(&[tp_src as u8, tp_dst as u8, 0, 0, 0, 0, 0, 0]);
        }
        PROTO_ICMPV6 => {
            let (t, c) = (tp_src as u8, tp_dst as u8);
            out.extend_from_slice(&[t, c, 0, 0, 0, 0, 0, 0]);
            if c == 0 && (t == 135 || t == 136) {
                out.extend_from_slice(&value(m, Slot::NdTarget).to_be_bytes());
                for (slot, opt) in [(Slot::ArpSha, 1u8), (Slot::ArpTha, 2u8)] {
                    let lla = mac(value(m, slot));
                    if lla != [0; 6] {
                        out.extend_from_slice(&[opt, 1]);
                        out.extend_from_slice(&lla);
                    }
                }
            } else if c == 0 && (t == 128 || t == 129) {
                payload(out);
            }
        }
        _ => {}
    }
}

/// Fills the L4 checksum `flow_compose()` computes (none for SCTP, as there).
fn l4_checksums(proto: u8, frag: u8, pseudo: u32, l4: &mut [u8]) {
    if frag & FRAG_ANY != 0 && frag & FRAG_LATER != 0 {
        return;
    }
    let at = match proto {
        PROTO_TCP if l4.len() >= 18 => 16,
        PROTO_UDP if l4.len() >= 8 => 6,
        PROTO_ICMP | PROTO_IGMP | PROTO_ICMPV6 if l4.len() >= 4 => 2,
        _ => return,
    };
    let acc = if matches!(proto, PROTO_ICMP | PROTO_IGMP) {
        0
    } else {
        pseudo
    };
    let mut csum = checksum(acc, l4);
    if proto == PROTO_UDP && csum == 0 {
        csum = 0xffff;
    }
    l4[at..at + 2].copy_from_slice(&csum.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::binding::LocalIface;

    fn ifaces() -> LocalIfaces {
        let mut l = LocalIfaces::default();
        l.by_iface_id.insert(
            "vm1".to_owned(),
            LocalIface {
                uuid: sbclient::Uuid::nil(),
                name: "vm1".to_owned(),
                ofport: Some(7),
                iface_id_ver: None,
                encap_ip: None,
                installed: true,
            },
        );
        l
    }

    use crate::pinctrl::packet::hex;

    fn compose_text(microflow: &str) -> String {
        let sb = crate::southbound::new_replica();
        let po = packet_out(microflow, &sb, "hv1", &ifaces()).expect("a microflow");
        assert_eq!(
            po.r#match.fields[0].value,
            7u32.to_be_bytes(),
            "in_port is vm1's ofport"
        );
        let acts: Vec<String> = po.actions.iter().map(ToString::to_string).collect();
        assert_eq!(
            acts,
            ["resubmit(,0)"],
            "ovs-ofctl prints IN_PORT as an empty port"
        );
        hex(&po.data)
    }

    /// Golden vectors: `ovs-ofctl compose-packet` (OVS 3.1) of the same flows, which runs
    /// the `flow_compose()` that ovn-controller's inject-pkt runs.
    #[test]
    fn microflows_become_the_frames_ovs_composes() {
        const ETH: &str =
            "inport == \"vm1\" && eth.src == 50:54:00:00:00:01 && eth.dst == 00:00:00:00:ff:01";
        const PAYLOAD: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\
                               202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f";
        let v4 = "ip4.src == 10.0.0.1 && ip4.dst == 10.0.1.2 && ip.ttl == 64";
        assert_eq!(
            compose_text(&format!("{ETH} && {v4} && udp.dst == 7001")),
            format!(
                "00000000ff0150540000000108004500005c000000004011658f0a0000010a000102\
                 00001b590048eafe{PAYLOAD}"
            )
        );
        assert_eq!(
            compose_text(&format!(
                "{ETH} && {v4} && tcp.src == 40000 && tcp.dst == 80 && tcp.flags == 0x002"
            )),
            "00000000ff0150540000000108004500002800000000400665ce0a0000010a000102\
             9c400050000000000000000050020000fe4f0000"
        );
        assert_eq!(
            compose_text(&format!(
                "{ETH} && {v4} && icmp4.type == 8 && icmp4.code == 0 && ip.dscp == 46"
            )),
            format!(
                "00000000ff01505400000001080045b8005c00000000400164e70a0000010a000102\
                 080013fc00000000{PAYLOAD}"
            )
        );
        assert_eq!(
            compose_text(
                "inport == \"vm1\" && eth.src == 50:54:00:00:00:01 && eth.dst == ff:ff:ff:ff:ff:ff \
                 && arp.op == 1 && arp.spa == 10.0.0.1 && arp.tpa == 10.0.0.254 \
                 && arp.sha == 50:54:00:00:00:01"
            ),
            "ffffffffffff505400000001080600010800060400015054000000010a000001\
             0000000000000a0000fe"
        );
        assert_eq!(
            compose_text(&format!(
                "{ETH} && ip6.src == fd00::1 && ip6.dst == fd00::2 && ip.ttl == 255 \
                 && nd_ns && nd.target == fd00::2 && nd.sll == 50:54:00:00:00:01"
            )),
            "00000000ff0150540000000186dd6000000000203afffd00000000000000000000000000\
             0001fd0000000000000000000000000000028700304700000000fd000000000000000000\
             0000000000020101505400000001"
        );
    }

    #[test]
    fn bad_microflows_are_refused_with_ovn_controllers_words() {
        let sb = crate::southbound::new_replica();
        let err = |text: &str| packet_out(text, &sb, "hv1", &ifaces()).expect_err(text);
        assert_eq!(
            err("inport == \"nowhere\" && ip4"),
            "ingress port not found on hypervisor."
        );
        assert_eq!(
            err("ip4 && ip4.src == 10.0.0.1"),
            "ingress port not found on hypervisor."
        );
        assert_eq!(
            err("inport == \"vm1\" && ip4.src == 10.0.0.1 && ip4.src == 10.0.0.2"),
            "Constraints are contradictory."
        );
        assert!(err("inport == \"vm1\" && (tcp || udp)").starts_with("Constraints are ambiguous"));
        assert!(!err("inport == ").is_empty());
    }

    proptest::proptest! {
        #[test]
        fn any_text_gives_a_packet_or_an_error(s in ".{0,60}") {
            let sb = crate::southbound::new_replica();
            let _ = packet_out(&s, &sb, "hv1", &ifaces());
        }
    }
}
