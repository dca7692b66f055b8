//! The packet-in handlers: `fn(packet-in, context) -> effects`, no I/O. Each does what
//! ovn-controller 23.03.1's pinctrl does for its opcode (reference expr-actions §5.3-5.6).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use openflow::action::Action;
use openflow::oxm::{FieldId, MatchField};
use openflow::wire::{PacketIn2, PacketInProp};

use super::buffer::{BufferKey, Buffered, FdbWrite, MacBindingWrite};
pub use super::effect::Effect;
use super::packet::{self, Endpoints, Headers, L3};
pub use super::packet_in::{
    from_controller, into_pipeline, opcode, Context, Entry, PacketIn, Skip, MLF_LOCAL_ONLY,
};
use super::packet_in::{OFPP_CONTROLLER16, VLAN_CFI};

/// Handles one packet-in.
pub fn handle(pi: &PacketIn2, cx: &Context) -> Result<Vec<Effect>, Skip> {
    let p = PacketIn::decode(pi)?;
    let h = packet::parse(p.packet)?;
    tracing::debug!(target: "pinctrl", "{}", super::packet_in::received_line(&p, &h));
    match p.opcode {
        opcode::ARP => arp(&p, &h, *cx),
        opcode::LOG => {
            let table = pi.props.iter().find_map(|p| match p {
                PacketInProp::TableId(t) => Some(*t),
                _ => None,
            });
            let egress = table.unwrap_or(0) >= cx.egress_table;
            super::acl_log::line(p.payload, p.packet, &h, egress)
                .map(|l| vec![Effect::Log(l)])
                .ok_or(Skip::WrongPacket("log data missing"))
        }
        opcode::ND_NS => nd_ns(&p, &h, *cx),
        opcode::PUT_ARP | opcode::PUT_ND => Ok(vec![put_mac_binding(&p, &h)]),
        opcode::PUT_DHCP_OPTS => super::dhcp::put_dhcp_opts(&p, &h),
        opcode::PUT_DHCPV6_OPTS => super::dhcpv6::put_dhcpv6_opts(&p, &h),
        opcode::PUT_FDB => Ok(vec![Effect::PutFdb(FdbWrite {
            datapath: p.regs.datapath(),
            port: p.regs.reg(14),
            mac: h.eth_src,
        })]),
        opcode::ND_NA | opcode::ND_NA_ROUTER => nd_na(&p, &h, p.opcode == opcode::ND_NA_ROUTER),
        opcode::ICMP => icmp(&p, &h, true, false),
        opcode::ICMP4_ERROR | opcode::ICMP6_ERROR => icmp(&p, &h, false, false),
        opcode::TCP_RESET => tcp_reset(&p, &h, false),
        opcode::REJECT => reject(&p, &h),
        opcode::SCTP_ABORT => sctp_abort(&p, &h, false),
        opcode::PUT_ICMP4_FRAG_MTU | opcode::PUT_ICMP6_FRAG_MTU => frag_mtu(&p, &h),
        opcode::EVENT => Ok(vec![Effect::ControllerEvent(super::events::parse(
            p.payload,
        )?)]),
        opcode::BIND_VPORT => super::vport::parse(p.payload, &p.regs)
            .map(|c| vec![Effect::BindVport(c)])
            .ok_or(Skip::WrongPacket(
                "bind_vport: no virtual port key in the userdata",
            )),
        opcode::HANDLE_SVC_CHECK => Ok(super::svc_monitor::parse_reply(&p, &h)?
            .map(Effect::SvcReply)
            .into_iter()
            .collect()),
        // The RARP itself goes on into the pipeline (the flow resubmits it after the
        // controller action): nothing to send back.
        opcode::ACTIVATION_STRATEGY_RARP => {
            Ok(vec![Effect::Activate(super::activation::Activation {
                datapath: p.regs.datapath(),
                port: p.regs.reg(14),
            })])
        }
        opcode::DHCP6_SERVER => Ok(vec![Effect::Prefixd(super::prefixd::parse(
            p.packet,
            &h,
            p.regs.datapath(),
            p.regs.reg(14),
        )?)]),
        opcode::BFD_MSG => Ok(vec![Effect::Bfd(super::bfd::parse(p.packet, &h)?)]),
        opcode::PUT_ND_RA_OPTS => super::ra::put_nd_ra_opts(&p, &h),
        opcode::IGMP => match super::igmp::parse(p.packet, &h) {
            Ok(message) => Ok(vec![Effect::Igmp(super::igmp::Received {
                datapath: p.regs.datapath(),
                port: p.regs.reg(14),
                message,
                packet: p.packet.to_vec(),
            })]),
            Err(super::igmp::IgmpError::NotIp) => {
                Err(Skip::WrongPacket("IGMP action on non-IP packet"))
            }
            Err(e) => Ok(vec![Effect::Rejected(Skip::Malformed(e.to_string()))]),
        },
        op if (op as usize) < opcode::COUNT => Err(Skip::NotYet(op)),
        op => Err(Skip::UnknownOpcode(op)),
    }
}

/// Handles one packet-in with the opcodes that read the Southbound snapshot as well
/// (`dns_lookup`: the DNS rows), the others as [`handle`] does.
pub fn handle_with(pi: &PacketIn2, cx: &Context, view: &super::View) -> Result<Vec<Effect>, Skip> {
    let p = PacketIn::decode(pi)?;
    match p.opcode {
        opcode::DNS_LOOKUP => super::dns::lookup(&p, &view.dns),
        _ => handle(pi, cx),
    }
}

/// Runs one handler so that a panic in it costs that packet-in only: a packet that meets a
/// defect of ours must not stop the answers to every other one. The panic comes back as
/// [`Skip::Panicked`] with its message.
pub fn guarded(run: impl FnOnce() -> Result<Vec<Effect>, Skip>) -> Result<Vec<Effect>, Skip> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).unwrap_or_else(|payload| {
        let why = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(no message)".to_owned());
        Err(Skip::Panicked(why))
    })
}

/// The packet-out of a generated packet: the registers restored, then the nested actions
/// of the userdata (OpenFlow 1.5 wire format).
fn nested(p: &PacketIn<'_>, data: Vec<u8>) -> Result<Effect, Skip> {
    let mut actions = p.regs.reload();
    actions.extend(Action::decode_list(p.payload).map_err(|e| Skip::Actions(e.to_string()))?);
    Ok(Effect::PacketOut(from_controller(actions, data)))
}

fn vlan(h: &Headers) -> Option<u16> {
    h.vlan_tci.filter(|t| t & VLAN_CFI != 0)
}

/// The packet as it is now, to be sent again once its next hop's MAC is known: restored
/// registers and `pkt_mark`, then the output stage.
fn buffer(p: &PacketIn<'_>, next_hop: IpAddr, cx: Context) -> Effect {
    let mut actions = p.regs.reload();
    actions.push(Action::SetField(MatchField::new(
        FieldId::PKT_MARK,
        p.regs.pkt_mark.unwrap_or(0).to_be_bytes().to_vec(),
        None,
    )));
    actions.push(Action::Resubmit {
        in_port: OFPP_CONTROLLER16,
        table: cx.output_entry_table,
        ct: false,
    });
    Effect::Buffer(
        BufferKey {
            datapath: p.regs.datapath(),
            outport: p.regs.reg(15),
            next_hop,
        },
        Buffered {
            packet: p.packet.to_vec(),
            actions,
        },
    )
}

fn arp(p: &PacketIn<'_>, h: &Headers, cx: Context) -> Result<Vec<Effect>, Skip> {
    let L3::Ipv4 { src, dst, .. } = h.l3 else {
        return Err(Skip::WrongPacket("ARP action on non-IP packet"));
    };
    let hold = buffer(p, IpAddr::V4(Ipv4Addr::from(p.regs.reg(0))), cx);
    let req = packet::arp_request(h.eth_src, h.eth_dst, src, dst, vlan(h));
    Ok(vec![hold, nested(p, req)?])
}

fn nd_ns(p: &PacketIn<'_>, h: &Headers, cx: Context) -> Result<Vec<Effect>, Skip> {
    let L3::Ipv6 { dst, .. } = h.l3 else {
        return Err(Skip::WrongPacket("NS action on non-IPv6 packet"));
    };
    let hold = buffer(p, IpAddr::V6(Ipv6Addr::from(p.regs.xxreg0())), cx);
    let ns = packet::nd_ns(h.eth_src, packet::link_local(h.eth_src), dst)?;
    Ok(vec![hold, nested(p, ns)?])
}

fn put_mac_binding(p: &PacketIn<'_>, h: &Headers) -> Effect {
    let ip = if p.opcode == opcode::PUT_ARP {
        IpAddr::V4(Ipv4Addr::from(p.regs.reg(0)))
    } else {
        IpAddr::V6(Ipv6Addr::from(p.regs.xxreg0()))
    };
    Effect::PutMacBinding {
        write: MacBindingWrite {
            datapath: p.regs.datapath(),
            port: p.regs.reg(14),
            ip,
            mac: h.eth_src,
        },
        multicast: h.eth_dst[0] & 1 != 0,
    }
}

fn nd_na(p: &PacketIn<'_>, h: &Headers, router: bool) -> Result<Vec<Effect>, Skip> {
    let (L3::Ipv6 { src, .. }, Some(target)) = (h.l3, h.nd_target(p.packet)) else {
        return Err(Skip::WrongPacket("NA action on non-ND packet"));
    };
    // Solicited and override; router too for nd_na_router.
    let flags = 0x40 | 0x20 | if router { 0x80 } else { 0 };
    let na = packet::nd_na(h.eth_dst, h.eth_src, target, src, flags)?;
    Ok(vec![nested(p, na)?])
}

/// ICMPv4 / ICMPv6 destination unreachable quoting the packet. `set_code`: code "port
/// unreachable" for UDP (`icmp4 {}` / `icmp6 {}`, `reject`); `loopback`: answer to the
/// sender (addresses swapped, as `reject` does).
fn icmp(
    p: &PacketIn<'_>,
    h: &Headers,
    set_code: bool,
    loopback: bool,
) -> Result<Vec<Effect>, Skip> {
    let (eth_src, eth_dst) = if loopback {
        (h.eth_dst, h.eth_src)
    } else {
        (h.eth_src, h.eth_dst)
    };
    let l3 = p.packet.get(h.l3_offset..).unwrap_or_default();
    let out = match h.l3 {
        L3::Ipv4 {
            src,
            dst,
            proto,
            total_len,
        } => {
            if total_len < 20 {
                return Err(Skip::WrongPacket(
                    "ICMP action on IP packet with invalid length",
                ));
            }
            // At most 576 bytes in all (RFC 1122 3.2.2): Ethernet, IP and ICMP headers first.
            let quoted = usize::from(total_len)
                .min(576 - (14 + 20 + 8))
                .min(l3.len());
            let code = if set_code && proto == packet::PROTO_UDP {
                3
            } else {
                1
            };
            let (s, d) = if loopback { (dst, src) } else { (src, dst) };
            packet::icmp4(eth_src, eth_dst, s, d, 3, code, &l3[..quoted], vlan(h))?
        }
        L3::Ipv6 {
            src,
            dst,
            next_header,
            payload_len,
        } => {
            // At most the IPv6 minimum MTU of 1280 bytes (RFC 4443 3.1).
            let quoted = (40 + usize::from(payload_len))
                .min(1280 - (14 + 40 + 8))
                .min(l3.len());
            let code = if set_code && next_header == packet::PROTO_UDP {
                4
            } else {
                1
            };
            let (s, d) = if loopback { (dst, src) } else { (src, dst) };
            packet::icmp6(
                eth_src,
                eth_dst,
                s,
                d,
                255,
                (1, code, [0; 4]),
                &l3[..quoted],
                vlan(h),
            )?
        }
        L3::Other => return Err(Skip::WrongPacket("ICMP action on non-IP packet")),
    };
    Ok(vec![nested(p, out)?])
}

fn tcp_reset(p: &PacketIn<'_>, h: &Headers, loopback: bool) -> Result<Vec<Effect>, Skip> {
    let fields = (h.ip_proto() == Some(packet::PROTO_TCP))
        .then(|| h.l4(p.packet).and_then(packet::tcp_fields))
        .flatten();
    let Some((sport, dport, seq, _)) = fields else {
        return Err(Skip::WrongPacket("TCP_RESET action on non-TCP packet"));
    };
    let l3 = if loopback { h.l3.swapped() } else { h.l3 };
    let (eth_src, eth_dst) = if loopback {
        (h.eth_dst, h.eth_src)
    } else {
        (h.eth_src, h.eth_dst)
    };
    let rst = packet::tcp_reset(
        &Endpoints {
            eth_src,
            eth_dst,
            l3,
        },
        dport,
        sport,
        seq.wrapping_add(1),
    )?;
    Ok(vec![nested(p, rst)?])
}

/// `reject {}`: a TCP RST, or an ICMP error, back to the sender; nothing for a RST or an
/// ICMP destination unreachable (no answer to an error).
fn reject(p: &PacketIn<'_>, h: &Headers) -> Result<Vec<Effect>, Skip> {
    let l4 = h.l4(p.packet);
    match h.ip_proto() {
        Some(packet::PROTO_TCP) => match l4.and_then(packet::tcp_fields) {
            Some((.., true)) | None => Ok(Vec::new()),
            Some(_) => tcp_reset(p, h, true),
        },
        Some(packet::PROTO_SCTP) => sctp_abort(p, h, true),
        // No answer to a destination unreachable (no reply loops). A packet too short to
        // carry an ICMP type is answered: ovn-controller reads a type past its end, and
        // OVN's own test expects the answer to an IPv4 header alone.
        Some(packet::PROTO_ICMP)
            if matches!(h.l3, L3::Ipv4 { .. })
                && l4.and_then(|b| b.first()).is_some_and(|t| *t == 3) =>
        {
            Ok(Vec::new())
        }
        Some(packet::PROTO_ICMPV6)
            if matches!(h.l3, L3::Ipv6 { .. })
                && l4.and_then(|b| b.first()).is_some_and(|t| *t == 1) =>
        {
            Ok(Vec::new())
        }
        _ => icmp(p, h, true, true),
    }
}

fn swapped(h: &Headers, loopback: bool) -> (packet::Mac, packet::Mac, L3) {
    if !loopback {
        return (h.eth_src, h.eth_dst, h.l3);
    }
    let l3 = h.l3.swapped();
    (h.eth_dst, h.eth_src, l3)
}

/// `sctp_abort {}`: an ABORT for an SCTP packet (not for an ABORT), with the verification
/// tag RFC 4960 8.4 asks for: the initiate tag of an INIT that had none, else the
/// packet's own tag, reflected.
fn sctp_abort(p: &PacketIn<'_>, h: &Headers, loopback: bool) -> Result<Vec<Effect>, Skip> {
    let l4 = (h.ip_proto() == Some(packet::PROTO_SCTP))
        .then(|| h.l4(p.packet))
        .flatten()
        .ok_or(Skip::WrongPacket("SCTP_ABORT action on non-SCTP packet"))?;
    let (Some(ports), Some(tag)) = (l4.get(..4), l4.get(4..8)) else {
        return Err(Skip::WrongPacket(
            "SCTP_ABORT action on malformed SCTP packet",
        ));
    };
    let (sport, dport) = (
        u16::from_be_bytes([ports[0], ports[1]]),
        u16::from_be_bytes([ports[2], ports[3]]),
    );
    let vtag_in = u32::from_be_bytes([tag[0], tag[1], tag[2], tag[3]]);
    let Some(&chunk_type) = l4.get(12).filter(|_| l4.len() >= 16) else {
        return Err(Skip::WrongPacket(
            "SCTP_ABORT action on SCTP packet with no chunks",
        ));
    };
    if chunk_type == 6 {
        return Err(Skip::WrongPacket(
            "sctp_abort action on incoming SCTP ABORT.",
        ));
    }
    let initiate_tag = if chunk_type == 1 {
        let init = l4.get(16..32).ok_or(Skip::WrongPacket(
            "Incomplete SCTP INIT chunk. Ignoring packet.",
        ))?;
        Some(u32::from_be_bytes([init[0], init[1], init[2], init[3]]))
    } else {
        None
    };
    let (vtag, reflected) = match initiate_tag {
        Some(t) if vtag_in == 0 => (t, false),
        _ => (vtag_in, true),
    };
    let (eth_src, eth_dst, l3) = swapped(h, loopback);
    let abort = packet::sctp_abort(
        &Endpoints {
            eth_src,
            eth_dst,
            l3,
        },
        dport,
        sport,
        vtag,
        reflected,
    )?;
    Ok(vec![nested(p, abort)?])
}

fn ones_complement(data: &[u8], initial: u32) -> u16 {
    let mut sum = initial;
    for c in data.chunks(2) {
        sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// `icmp4.frag_mtu = N` / `icmp6.frag_mtu = N` (paused): writes the next-hop MTU into the
/// ICMP error being built, fixes the checksums, and resumes.
fn frag_mtu(p: &PacketIn<'_>, h: &Headers) -> Result<Vec<Effect>, Skip> {
    let Some(mut resume) = p.raw.to_resume() else {
        return Err(Skip::WrongPacket(
            "frag_mtu action without a paused pipeline",
        ));
    };
    let mut pkt = p.packet.to_vec();
    let l4_at = h.l4_offset.unwrap_or(pkt.len());
    let patched = match (h.l3, h.ip_proto()) {
        (L3::Ipv4 { total_len, .. }, Some(packet::PROTO_ICMP)) => {
            match (p.payload.get(..2), pkt.len() >= l4_at + 8) {
                (Some(mtu), true) => {
                    pkt[l4_at + 6..l4_at + 8].copy_from_slice(mtu);
                    let end = (h.l3_offset + usize::from(total_len)).clamp(l4_at, pkt.len());
                    pkt[l4_at + 2..l4_at + 4].fill(0);
                    let c = ones_complement(&pkt[l4_at..end], 0);
                    pkt[l4_at + 2..l4_at + 4].copy_from_slice(&c.to_be_bytes());
                    let ihl = l4_at - h.l3_offset;
                    pkt[h.l3_offset + 10..h.l3_offset + 12].fill(0);
                    let c = ones_complement(&pkt[h.l3_offset..h.l3_offset + ihl], 0);
                    pkt[h.l3_offset + 10..h.l3_offset + 12].copy_from_slice(&c.to_be_bytes());
                    true
                }
                _ => false,
            }
        }
        (L3::Ipv6 { src, dst, .. }, Some(packet::PROTO_ICMPV6)) => {
            match (p.payload.get(..4), pkt.len() >= l4_at + 8) {
                (Some(mtu), true) => {
                    pkt[l4_at + 4..l4_at + 8].copy_from_slice(mtu);
                    pkt[l4_at + 2..l4_at + 4].fill(0);
                    let len = pkt.len() - l4_at;
                    let mut pseudo: u32 = 0;
                    for c in src.octets().chunks(2).chain(dst.octets().chunks(2)) {
                        pseudo += u32::from(u16::from_be_bytes([c[0], c[1]]));
                    }
                    pseudo += (len as u32 >> 16)
                        + (len as u32 & 0xffff)
                        + u32::from(packet::PROTO_ICMPV6);
                    let c = ones_complement(&pkt[l4_at..], pseudo);
                    pkt[l4_at + 2..l4_at + 4].copy_from_slice(&c.to_be_bytes());
                    true
                }
                _ => false,
            }
        }
        _ => false,
    };
    // Resumed in any case, unchanged if the packet was not an ICMP error (as OVN does).
    if patched {
        for prop in &mut resume.props {
            if let PacketInProp::Packet(b) = prop {
                b.clone_from(&pkt);
            }
        }
    }
    Ok(vec![Effect::Resume(resume)])
}
