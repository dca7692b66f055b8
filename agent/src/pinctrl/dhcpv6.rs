//! `R = put_dhcpv6_opts(...)` (ACTION_OPCODE_PUT_DHCPV6_OPTS, paused): the DHCPv6 server of
//! a logical switch, as ovn-controller 23.03.1's `pinctrl_handle_put_dhcpv6_opts` answers.
//! SOLICIT gets an ADVERTISE; REQUEST, CONFIRM, DECLINE and INFORMATION-REQUEST get a
//! REPLY. RENEW, REBIND, RELEASE and the rest get nothing (23.03.1 does not answer them
//! either). The reply carries the client's identifier, then the userdata's options in
//! their order: the server identifier as a DUID-LL of `server_id`, the address in an IA_NA
//! with the client's IAID (left out when the client sent no IA_NA, as an
//! INFORMATION-REQUEST does, and absent from the userdata of a `dhcpv6_stateless` port),
//! the DNS servers and the domain search list.
//!
//! The request is read with dhcproto. The reply is written by hand to give
//! ovn-controller's bytes, including its quirks: the domain search list goes out as one
//! length-prefixed string with the dots kept (not RFC 1035 labels), and infinite T1, T2
//! and lifetimes.

use dhcproto::v6::{DhcpOption, Message, MessageType};
use dhcproto::{Decodable, Decoder};

use super::effect::Effect;
use super::packet::{Headers, L3};
use super::packet_in::{PacketIn, Skip};
use super::result_bit::{self, ResultBit};

const UDP_HEADER_LEN: usize = 8;

const OPT_CLIENT_ID: u16 = 1;
const OPT_SERVER_ID: u16 = 2;
const OPT_IA_NA: u16 = 3;
const OPT_IA_ADDR: u16 = 5;
const OPT_DNS_SERVERS: u16 = 23;
const OPT_DOMAIN_SEARCH: u16 = 24;
const DUID_LL: u16 = 3;
const HW_TYPE_ETHERNET: u16 = 1;

/// The handler: parses the userdata, answers, writes the result bit and resumes.
pub fn put_dhcpv6_opts(p: &PacketIn<'_>, h: &Headers) -> Result<Vec<Effect>, Skip> {
    let mut resume = p.raw.to_resume().ok_or(Skip::WrongPacket(
        "put_dhcpv6_opts action without a paused pipeline",
    ))?;
    let (bit, opts) = match ResultBit::parse(p.payload) {
        Ok(parsed) => parsed,
        Err(e) => return Ok(vec![Effect::Resume(resume), Effect::Rejected(e.into())]),
    };
    let answer = if opts.is_empty() {
        Err("DHCPv6 options not present in the userdata".to_owned())
    } else {
        answer(p.packet, h, opts)
    };
    match answer {
        Ok(Some(packet)) => {
            bit.write(&mut resume, true);
            result_bit::set_packet(&mut resume, packet);
            Ok(vec![Effect::Resume(resume)])
        }
        Ok(None) => {
            bit.write(&mut resume, false);
            Ok(vec![Effect::Resume(resume)])
        }
        Err(why) => {
            bit.write(&mut resume, false);
            Ok(vec![
                Effect::Resume(resume),
                Effect::Rejected(Skip::Malformed(why)),
            ])
        }
    }
}

/// The reply's message type for a request's, if it gets one.
fn reply_type(request: MessageType) -> Option<MessageType> {
    match request {
        MessageType::Solicit => Some(MessageType::Advertise),
        MessageType::Request
        | MessageType::Confirm
        | MessageType::Decline
        | MessageType::InformationRequest => Some(MessageType::Reply),
        _ => None,
    }
}

/// The reply options from the userdata (be16 code, be16 length, value each), for a client
/// that sent IAID `iaid` (0: none).
fn reply_options(mut userdata: &[u8], iaid: u32) -> Result<Vec<u8>, String> {
    let invalid = || "Invalid userdata".to_owned();
    let mut out = Vec::new();
    while !userdata.is_empty() {
        let head = userdata.get(..4).ok_or_else(invalid)?;
        let code = u16::from_be_bytes([head[0], head[1]]);
        let size = usize::from(u16::from_be_bytes([head[2], head[3]]));
        let value = userdata.get(4..4 + size).ok_or_else(invalid)?;
        userdata = &userdata[4 + size..];
        match code {
            OPT_SERVER_ID => {
                // DUID-LL (RFC 3315 9.4): type, hardware type, the MAC.
                out.extend_from_slice(&OPT_SERVER_ID.to_be_bytes());
                out.extend_from_slice(&((size + 4) as u16).to_be_bytes());
                out.extend_from_slice(&DUID_LL.to_be_bytes());
                out.extend_from_slice(&HW_TYPE_ETHERNET.to_be_bytes());
                let mut mac = [0u8; 6];
                let n = value.len().min(6);
                mac[..n].copy_from_slice(&value[..n]);
                out.extend_from_slice(&mac);
            }
            OPT_IA_ADDR => {
                if size != 16 {
                    return Err(invalid());
                }
                if iaid == 0 {
                    continue;
                }
                // IA_NA (RFC 3315 22.4) holding one IA Address (22.6), all times infinite.
                out.extend_from_slice(&OPT_IA_NA.to_be_bytes());
                out.extend_from_slice(&(12u16 + 28).to_be_bytes());
                out.extend_from_slice(&iaid.to_be_bytes());
                out.extend_from_slice(&[0xff; 8]);
                out.extend_from_slice(&OPT_IA_ADDR.to_be_bytes());
                out.extend_from_slice(&24u16.to_be_bytes());
                out.extend_from_slice(value);
                out.extend_from_slice(&[0xff; 8]);
            }
            OPT_DNS_SERVERS => {
                out.extend_from_slice(&OPT_DNS_SERVERS.to_be_bytes());
                out.extend_from_slice(&(size as u16).to_be_bytes());
                out.extend_from_slice(value);
            }
            OPT_DOMAIN_SEARCH => {
                out.extend_from_slice(&OPT_DOMAIN_SEARCH.to_be_bytes());
                out.extend_from_slice(&((size + 2) as u16).to_be_bytes());
                out.push(size as u8);
                out.extend_from_slice(value);
                out.push(0);
            }
            _ => return Err(invalid()),
        }
    }
    Ok(out)
}

/// The reply to the DHCPv6 request in `frame`, `None` for a message type that gets none,
/// or why the request cannot be answered.
pub fn answer(frame: &[u8], h: &Headers, userdata: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let truncated = || "truncated dhcpv6 packet".to_owned();
    let L3::Ipv6 {
        src,
        dst,
        next_header,
        payload_len,
    } = h.l3
    else {
        return Err(truncated());
    };
    let l4 = h.l4_offset.ok_or_else(truncated)?;
    let end = (h.l3_offset + 40 + usize::from(payload_len)).min(frame.len());
    if l4 + UDP_HEADER_LEN > end {
        return Err(truncated());
    }
    // Options run to the UDP length or the packet's end, whichever is first.
    let udp_len = usize::from(u16::from_be_bytes([frame[l4 + 4], frame[l4 + 5]]));
    let dhcp_end = (l4 + udp_len).min(end).max(l4 + UDP_HEADER_LEN);
    let dhcp = &frame[l4 + UDP_HEADER_LEN..dhcp_end];
    let msg = Message::decode(&mut Decoder::new(dhcp)).map_err(|_| truncated())?;
    let Some(out_type) = reply_type(msg.msg_type()) else {
        return Ok(None);
    };
    let mut iaid = 0;
    let mut client_id = None;
    for o in msg.opts().iter() {
        match o {
            DhcpOption::IANA(ia) => iaid = ia.id,
            DhcpOption::ClientId(id) => client_id = Some(id),
            _ => {}
        }
    }
    let client_id = client_id
        .ok_or("DHCPv6 option - Client id not present in the DHCPv6 packet")?
        .as_slice();
    if iaid == 0 && msg.msg_type() != MessageType::InformationRequest {
        return Err("DHCPv6 option - IA NA not present in the DHCPv6 packet".to_owned());
    }
    let opts = reply_options(userdata, iaid)?;

    let new_udp_len = UDP_HEADER_LEN + 4 + 4 + client_id.len() + opts.len();
    let Ok(udp_len16) = u16::try_from(new_udp_len) else {
        return Err(format!("DHCPv6 reply too large ({new_udp_len} bytes)"));
    };
    let mut out = Vec::with_capacity(l4 + new_udp_len);
    out.extend_from_slice(&frame[..l4 + UDP_HEADER_LEN]);
    out.push(u8::from(out_type));
    out.extend_from_slice(&msg.xid());
    out.extend_from_slice(&OPT_CLIENT_ID.to_be_bytes());
    out.extend_from_slice(&(client_id.len() as u16).to_be_bytes());
    out.extend_from_slice(client_id);
    out.extend_from_slice(&opts);
    out[l4 + 4..l4 + 6].copy_from_slice(&udp_len16.to_be_bytes());
    out[l4 + 6..l4 + 8].fill(0);
    let ip = h.l3_offset;
    out[ip + 4..ip + 6].copy_from_slice(&udp_len16.to_be_bytes());
    let sum = udp6_checksum(src.octets(), dst.octets(), next_header, &out[l4..]);
    out[l4 + 6..l4 + 8].copy_from_slice(&sum.to_be_bytes());
    Ok(Some(out))
}

/// The UDP checksum over the IPv6 pseudo-header (with the header's own next header, as
/// OVS's `packet_csum_pseudoheader6` takes it) and `udp`; 0 is sent as 0xffff.
fn udp6_checksum(src: [u8; 16], dst: [u8; 16], next_header: u8, udp: &[u8]) -> u16 {
    let mut sum: u64 = 0;
    for c in src.chunks(2).chain(dst.chunks(2)) {
        sum += u64::from(u16::from_be_bytes([c[0], c[1]]));
    }
    sum += udp.len() as u64 + u64::from(next_header);
    for c in udp.chunks(2) {
        sum += u64::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    match !(sum as u16) {
        0 => 0xffff,
        s => s,
    }
}
