//! `R = put_dhcp_opts(offerip = A, ...)` (ACTION_OPCODE_PUT_DHCP_OPTS, paused): the DHCPv4
//! server of a logical switch, as ovn-controller 23.03.1's `pinctrl_handle_put_dhcp_opts`
//! answers. DISCOVER gets an OFFER, REQUEST an ACK (a NAK if it asks for another address
//! than the offer), INFORM an ACK without the lease options; RELEASE and DECLINE are only
//! logged. The reply replaces the request in the paused pipeline, `R` says whether there is
//! one, and the flows after the action address and send it.
//!
//! The request is read with dhcproto. The reply is written by hand: it keeps the request's
//! fixed header byte for byte (only op, yiaddr and siaddr change) and the options in the
//! order the userdata lists them, followed by ovn-controller's own padding (four zero bytes
//! before END and four after), which an encoder that sorts options and pads its own way
//! (dhcproto's) cannot give.

use std::net::Ipv4Addr;

use dhcproto::v4::borrowed::Message;
use dhcproto::v4::OptionCode;

use super::effect::Effect;
use super::packet::{mac_text, Headers, L3};
use super::packet_in::{PacketIn, Skip};
use super::result_bit::{self, ResultBit};

/// Fixed BOOTP header before the magic cookie (`op` .. `file`).
pub const HEADER_LEN: usize = 236;
pub const MAGIC: [u8; 4] = [99, 130, 83, 99];
const UDP_HEADER_LEN: usize = 8;
const BROADCAST_FLAG: u16 = 0x8000;

const OP_REQUEST: u8 = 1;
const OP_REPLY: u8 = 2;

/// DHCP message types (option 53).
pub mod msg {
    pub const DISCOVER: u8 = 1;
    pub const OFFER: u8 = 2;
    pub const REQUEST: u8 = 3;
    pub const DECLINE: u8 = 4;
    pub const ACK: u8 = 5;
    pub const NAK: u8 = 6;
    pub const RELEASE: u8 = 7;
    pub const INFORM: u8 = 8;
}

const OPT_NETMASK: u8 = 1;
const OPT_LEASE_TIME: u8 = 51;
const OPT_T1: u8 = 58;
const OPT_T2: u8 = 59;
const OPT_BOOTFILE: u8 = 67;
/// iPXE clients send it; they get `bootfile_name` rather than `bootfile_name_alt`.
const OPT_ETHERBOOT: u8 = 175;
const OPT_NEXT_SERVER: u8 = 253;
const OPT_BOOTFILE_ALT: u8 = 254;

/// What the request asks for, once read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A reply packet, and the line ovn-controller logs for it.
    Reply { packet: Vec<u8>, log: String },
    /// No reply (RELEASE, DECLINE); maybe a log line.
    Silent(Option<String>),
}

/// The handler: parses the userdata, answers, writes the result bit and resumes.
pub fn put_dhcp_opts(p: &PacketIn<'_>, h: &Headers) -> Result<Vec<Effect>, Skip> {
    let mut resume = p.raw.to_resume().ok_or(Skip::WrongPacket(
        "put_dhcp_opts action without a paused pipeline",
    ))?;
    let (bit, rest) = match ResultBit::parse(p.payload) {
        Ok(parsed) => parsed,
        Err(e) => return Ok(vec![Effect::Resume(resume), Effect::Rejected(e.into())]),
    };
    let answer = match (rest.get(..4), rest.get(4..)) {
        (Some(offer), Some(opts)) if !opts.is_empty() => {
            let offer = Ipv4Addr::new(offer[0], offer[1], offer[2], offer[3]);
            answer(p.packet, h, offer, opts)
        }
        (Some(_), _) => Err("DHCP options not present in the userdata".to_owned()),
        _ => Err("offset or offer_ip not present in the userdata".to_owned()),
    };
    match answer {
        Ok(Answer::Reply { packet, log }) => {
            bit.write(&mut resume, true);
            result_bit::set_packet(&mut resume, packet);
            Ok(vec![Effect::Info(log), Effect::Resume(resume)])
        }
        Ok(Answer::Silent(log)) => {
            bit.write(&mut resume, false);
            let mut out: Vec<Effect> = log.into_iter().map(Effect::Info).collect();
            out.push(Effect::Resume(resume));
            Ok(out)
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

/// The request's options that matter: message type (53), requested address (50), iPXE.
struct Request {
    msg_type: Option<u8>,
    requested: Ipv4Addr,
    ipxe: bool,
}

fn read_request(dhcp: &[u8]) -> Result<Request, String> {
    // At least the header and the cookie, as `Message::new` needs.
    if dhcp.len() < HEADER_LEN {
        return Err("Invalid or incomplete DHCP packet received, bad data length".to_owned());
    }
    if dhcp[0] != OP_REQUEST {
        return Err(format!("Invalid opcode in the DHCP packet: {}", dhcp[0]));
    }
    if dhcp.get(HEADER_LEN..HEADER_LEN + 4) != Some(&MAGIC[..]) {
        return Err("DHCP magic cookie not present in the DHCP packet".to_owned());
    }
    let m = Message::new(dhcp).map_err(|e| format!("Invalid DHCP packet: {e}"))?;
    let mut req = Request {
        msg_type: None,
        requested: m.ciaddr(),
        ipxe: false,
    };
    // Options are read until END or the first one that runs past the packet, as
    // ovn-controller reads them; a value of the wrong length is ignored.
    for o in m.opts() {
        match (o.code(), o.data()) {
            (OptionCode::MessageType, [t]) => req.msg_type = Some(*t),
            (OptionCode::RequestedIpAddress, &[a, b, c, d]) => {
                req.requested = Ipv4Addr::new(a, b, c, d);
            }
            (code, _) if u8::from(code) == OPT_ETHERBOOT => req.ipxe = true,
            _ => {}
        }
    }
    Ok(req)
}

/// The options of an INFORM's ACK: the userdata's, less the address and lease ones (RFC
/// 2131 3.4).
fn inform_options(opts: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(opts.len());
    let mut at = 0;
    while at < opts.len() {
        let code = opts[at];
        let len = opts.get(at + 1).copied().map_or(0, usize::from);
        let whole = opts.get(at..(at + 2 + len).min(opts.len())).unwrap_or(&[]);
        if !matches!(code, OPT_NETMASK | OPT_LEASE_TIME | OPT_T1 | OPT_T2) {
            out.extend_from_slice(whole);
        }
        at += 2 + len;
    }
    out
}

/// `bootfile_name` (67) and `bootfile_name_alt` (254), which the userdata lists first: an
/// iPXE client gets 67, any other gets 254 renamed 67; only one of them stays. Also reads
/// `next_server` (253), the reply's siaddr. This walks and edits the options in place the
/// way ovn-controller does, so that odd combinations give the same bytes; returns the
/// offset where the options now start.
fn choose_bootfile(opts: &mut [u8], ipxe: bool) -> (usize, Option<Ipv4Addr>) {
    let end = opts.len();
    let mut start = 0;
    let mut next_server = None;
    let mut bootfile_set = false;
    let mut at = 0;
    while at < end {
        let code = opts[at];
        let len = opts.get(at + 1).copied().map_or(0, usize::from);
        match code {
            OPT_NEXT_SERVER => {
                if let Some(&[a, b, c, d]) = opts.get(at + 2..at + 6) {
                    next_server = Some(Ipv4Addr::new(a, b, c, d));
                }
            }
            OPT_BOOTFILE => {
                let own = 2 + len;
                let next = at + own;
                if opts.get(next) == Some(&OPT_BOOTFILE_ALT) {
                    if ipxe {
                        // Drop 254 by moving 67 over it.
                        let alt = 2 + opts.get(next + 1).copied().map_or(0, usize::from);
                        let copy = opts.get(at..at + own).map(<[u8]>::to_vec);
                        start += alt;
                        if let (Some(copy), Some(dst)) = (copy, opts.get_mut(start..start + own)) {
                            dst.copy_from_slice(&copy);
                        }
                    } else {
                        start += own;
                        opts[next] = OPT_BOOTFILE;
                    }
                }
                bootfile_set = true;
            }
            OPT_BOOTFILE_ALT if !bootfile_set => opts[at] = OPT_BOOTFILE,
            _ => {}
        }
        at += 2 + len;
    }
    (start.min(end), next_server)
}

/// The reply to the DHCP request in `frame` (headers `h`), with the userdata's `offer`
/// and options, or why there is none.
pub fn answer(frame: &[u8], h: &Headers, offer: Ipv4Addr, opts: &[u8]) -> Result<Answer, String> {
    let incomplete = || "Invalid or incomplete DHCP packet received".to_owned();
    let L3::Ipv4 { total_len, .. } = h.l3 else {
        return Err(incomplete());
    };
    let l4 = h.l4_offset.ok_or_else(incomplete)?;
    // The end of the IP packet: Ethernet padding is not DHCP data.
    let end = h.l3_offset + usize::from(total_len);
    if end > frame.len() || l4 + UDP_HEADER_LEN > end {
        return Err(incomplete());
    }
    let dhcp = &frame[l4 + UDP_HEADER_LEN..end];
    let req = read_request(dhcp)?;
    let msg_type = req.msg_type.ok_or("Missing DHCP message type")?;
    let eth_src = mac_text(&frame[6..12]);
    let mut reply_opts = opts.to_vec();
    let reply_type = match msg_type {
        msg::DISCOVER => msg::OFFER,
        msg::REQUEST if req.requested == offer => msg::ACK,
        // ovn-controller logs this at WARN; a client asking for an old address is a normal
        // event, not a fault here.
        msg::REQUEST => msg::NAK,
        msg::RELEASE => {
            let ciaddr = Ipv4Addr::new(dhcp[12], dhcp[13], dhcp[14], dhcp[15]);
            return Ok(Answer::Silent(Some(format!(
                "DHCPRELEASE {eth_src} {ciaddr}"
            ))));
        }
        msg::INFORM => {
            reply_opts = inform_options(opts);
            msg::ACK
        }
        msg::DECLINE => {
            return Ok(Answer::Silent((req.requested == offer).then(|| {
                format!("DHCPDECLINE from {eth_src}, {offer} duplicated")
            })));
        }
        other => return Err(format!("Invalid DHCP message type: {other}")),
    };
    let (start, next_server) = choose_bootfile(&mut reply_opts, req.ipxe);
    let reply_opts = &reply_opts[start..];
    let nak = reply_type == msg::NAK;
    let body = if nak { &[][..] } else { reply_opts };

    let udp_len = UDP_HEADER_LEN + HEADER_LEN + 16 + body.len();
    let ip_len = l4 - h.l3_offset + udp_len;
    let (Ok(udp_len16), Ok(ip_len16)) = (u16::try_from(udp_len), u16::try_from(ip_len)) else {
        return Err(format!("DHCP reply too large ({udp_len} bytes)"));
    };
    let mut out = Vec::with_capacity(l4 + udp_len);
    out.extend_from_slice(&frame[..l4 + UDP_HEADER_LEN]);
    let d = out.len();
    out.extend_from_slice(&dhcp[..HEADER_LEN]);
    out[d] = OP_REPLY;
    if msg_type == msg::INFORM {
        out[d + 16..d + 20].fill(0);
    } else {
        let yiaddr = if nak { [0; 4] } else { offer.octets() };
        let siaddr = match (nak, next_server) {
            (true, _) => [0; 4],
            (false, Some(s)) => s.octets(),
            (false, None) => [dhcp[20], dhcp[21], dhcp[22], dhcp[23]],
        };
        out[d + 16..d + 20].copy_from_slice(&yiaddr);
        out[d + 20..d + 24].copy_from_slice(&siaddr);
    }
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&[53, 1, reply_type]);
    out.extend_from_slice(body);
    out.extend_from_slice(&[0, 0, 0, 0, 255, 0, 0, 0, 0]);

    out[l4 + 4..l4 + 6].copy_from_slice(&udp_len16.to_be_bytes());
    out[l4 + 6..l4 + 8].fill(0);
    let flags = u16::from_be_bytes([dhcp[10], dhcp[11]]);
    let ip_dst = if flags & BROADCAST_FLAG != 0 {
        Ipv4Addr::BROADCAST
    } else {
        offer
    };
    let ip = h.l3_offset;
    out[ip + 2..ip + 4].copy_from_slice(&ip_len16.to_be_bytes());
    out[ip + 16..ip + 20].copy_from_slice(&ip_dst.octets());
    // Over the fixed 20 bytes only, as ovn-controller computes it.
    out[ip + 10..ip + 12].fill(0);
    let sum = ipv4_checksum(&out[ip..ip + 20]);
    out[ip + 10..ip + 12].copy_from_slice(&sum.to_be_bytes());

    let name = match reply_type {
        msg::OFFER => "OFFER",
        msg::ACK => "ACK",
        _ => "NAK",
    };
    let log = if nak {
        format!(
            "DHCPNAK {eth_src} {offer} (DHCPREQUEST requested IP {} does not match offer {offer})",
            req.requested
        )
    } else {
        format!("DHCP{name} {eth_src} {offer}")
    };
    Ok(Answer::Reply { packet: out, log })
}

fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}
