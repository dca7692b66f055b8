//! Reading the packet of a packet-in and building the packets the handlers send, with
//! etherparse. The fields and their defaults are those ovn-controller 23.03.1 writes
//! (`pinctrl.c`, OVS `lib/packets.c`): the differential tests compare the bytes.

use std::net::{Ipv4Addr, Ipv6Addr};

use etherparse::{
    ArpEthIpv4Packet, ArpOperation, ArpPacket, EtherType, Ethernet2Header, Ethernet2HeaderSlice,
    Icmpv4Header, Icmpv4Type, Icmpv6Header, Icmpv6Type, IpNumber, Ipv4Header, Ipv4HeaderSlice,
    Ipv6FlowLabel, Ipv6Header, SingleVlanHeaderSlice, TcpHeader, TcpHeaderSlice,
};

/// Why a packet could not be read or built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PacketError {
    #[error("truncated or malformed {0} header")]
    Malformed(&'static str),
    #[error("packet too large to answer ({0} bytes)")]
    TooLarge(usize),
}

pub type Mac = [u8; 6];

/// The network layer of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L3 {
    Ipv4 {
        src: Ipv4Addr,
        dst: Ipv4Addr,
        proto: u8,
        /// `ip_tot_len` as the header says.
        total_len: u16,
    },
    Ipv6 {
        src: Ipv6Addr,
        dst: Ipv6Addr,
        next_header: u8,
        payload_len: u16,
    },
    Other,
}

impl L3 {
    /// The same header with source and destination exchanged (a reply's).
    pub fn swapped(self) -> Self {
        match self {
            L3::Ipv4 {
                src,
                dst,
                proto,
                total_len,
            } => L3::Ipv4 {
                src: dst,
                dst: src,
                proto,
                total_len,
            },
            L3::Ipv6 {
                src,
                dst,
                next_header,
                payload_len,
            } => L3::Ipv6 {
                src: dst,
                dst: src,
                next_header,
                payload_len,
            },
            L3::Other => L3::Other,
        }
    }
}

/// What the handlers read of a packet (OVS's `flow_extract`, the parts pinctrl uses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Headers {
    pub eth_src: Mac,
    pub eth_dst: Mac,
    /// The first 802.1Q tag's TCI, if tagged.
    pub vlan_tci: Option<u16>,
    pub eth_type: u16,
    pub l3_offset: usize,
    pub l3: L3,
    /// Offset of the transport header (IPv4 options and IPv6 extension headers are not
    /// walked: the next header of the fixed IPv6 header is taken as L4, as northd's
    /// matches assume).
    pub l4_offset: Option<usize>,
}

pub const ETH_TYPE_IPV4: u16 = 0x0800;
pub const ETH_TYPE_IPV6: u16 = 0x86dd;
pub const ETH_TYPE_ARP: u16 = 0x0806;
const ETH_TYPE_VLAN: u16 = 0x8100;
pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;
pub const PROTO_ICMP: u8 = 1;
pub const PROTO_ICMPV6: u8 = 58;
pub const PROTO_SCTP: u8 = 132;

/// Parses the Ethernet, VLAN and IP headers of `frame`.
pub fn parse(frame: &[u8]) -> Result<Headers, PacketError> {
    let eth =
        Ethernet2HeaderSlice::from_slice(frame).map_err(|_| PacketError::Malformed("Ethernet"))?;
    let mut offset = eth.slice().len();
    let mut eth_type = eth.ether_type().0;
    let mut vlan_tci = None;
    if eth_type == ETH_TYPE_VLAN {
        let vlan = SingleVlanHeaderSlice::from_slice(&frame[offset..])
            .map_err(|_| PacketError::Malformed("802.1Q"))?;
        let raw = vlan.slice();
        vlan_tci = Some(u16::from_be_bytes([raw[0], raw[1]]));
        eth_type = vlan.ether_type().0;
        offset += raw.len();
    }
    let rest = &frame[offset..];
    let (l3, l4_offset) = match eth_type {
        ETH_TYPE_IPV4 => {
            let ip =
                Ipv4HeaderSlice::from_slice(rest).map_err(|_| PacketError::Malformed("IPv4"))?;
            (
                L3::Ipv4 {
                    src: ip.source_addr(),
                    dst: ip.destination_addr(),
                    proto: ip.protocol().0,
                    total_len: ip.total_len(),
                },
                Some(offset + ip.slice().len()),
            )
        }
        ETH_TYPE_IPV6 => {
            // The fixed header read field by field: as OVS's flow extraction, the version
            // nibble is not checked (OVN's tests send DHCPv6 requests with version 0, and
            // the switch matched them as ipv6).
            let ip = rest
                .get(..Ipv6Header::LEN)
                .ok_or(PacketError::Malformed("IPv6"))?;
            let addr = |at: usize| {
                let mut a = [0u8; 16];
                a.copy_from_slice(&ip[at..at + 16]);
                Ipv6Addr::from(a)
            };
            (
                L3::Ipv6 {
                    src: addr(8),
                    dst: addr(24),
                    next_header: ip[6],
                    payload_len: u16::from_be_bytes([ip[4], ip[5]]),
                },
                Some(offset + Ipv6Header::LEN),
            )
        }
        _ => (L3::Other, None),
    };
    Ok(Headers {
        eth_src: eth.source(),
        eth_dst: eth.destination(),
        vlan_tci,
        eth_type,
        l3_offset: offset,
        l3,
        l4_offset,
    })
}

impl Headers {
    pub fn ip_proto(&self) -> Option<u8> {
        match self.l3 {
            L3::Ipv4 { proto, .. } => Some(proto),
            L3::Ipv6 { next_header, .. } => Some(next_header),
            L3::Other => None,
        }
    }

    /// The transport bytes of `frame` (to its end).
    pub fn l4<'a>(&self, frame: &'a [u8]) -> Option<&'a [u8]> {
        frame.get(self.l4_offset?..)
    }

    /// The target address of a neighbor solicitation or advertisement.
    pub fn nd_target(&self, frame: &[u8]) -> Option<Ipv6Addr> {
        if self.ip_proto() != Some(PROTO_ICMPV6) {
            return None;
        }
        let l4 = self.l4(frame)?;
        if !matches!(l4.first(), Some(135 | 136)) {
            return None;
        }
        let t: [u8; 16] = l4.get(8..24)?.try_into().ok()?;
        Some(Ipv6Addr::from(t))
    }
}

fn eth_header(dst: Mac, src: Mac, eth_type: u16, vlan_tci: Option<u16>) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    match vlan_tci {
        // The tag goes between the addresses and the payload's Ethertype, as
        // `eth_push_vlan` inserts it.
        Some(tci) => {
            out.extend_from_slice(
                &Ethernet2Header {
                    destination: dst,
                    source: src,
                    ether_type: EtherType(ETH_TYPE_VLAN),
                }
                .to_bytes(),
            );
            out.extend_from_slice(&tci.to_be_bytes());
            out.extend_from_slice(&eth_type.to_be_bytes());
        }
        None => out.extend_from_slice(
            &Ethernet2Header {
                destination: dst,
                source: src,
                ether_type: EtherType(eth_type),
            }
            .to_bytes(),
        ),
    }
    out
}

/// An ARP request from `sha`/`spa` for `tpa`, in a frame from `eth_src` to `eth_dst`.
pub fn arp_request(
    eth_src: Mac,
    eth_dst: Mac,
    spa: Ipv4Addr,
    tpa: Ipv4Addr,
    vlan_tci: Option<u16>,
) -> Vec<u8> {
    let mut out = eth_header(eth_dst, eth_src, ETH_TYPE_ARP, vlan_tci);
    let arp = ArpPacket::from(ArpEthIpv4Packet {
        operation: ArpOperation::REQUEST,
        sender_mac: eth_src,
        sender_ipv4: spa.octets(),
        target_mac: [0; 6],
        target_ipv4: tpa.octets(),
    });
    out.extend_from_slice(&arp.to_bytes());
    out
}

/// The IPv4 header pinctrl composes: DF set, identification 0, TOS 0.
fn ipv4_header(
    src: Ipv4Addr,
    dst: Ipv4Addr,
    proto: u8,
    ttl: u8,
    payload_len: usize,
) -> Result<Ipv4Header, PacketError> {
    let len = u16::try_from(payload_len).map_err(|_| PacketError::TooLarge(payload_len))?;
    let mut ip = Ipv4Header::new(len, ttl, IpNumber(proto), src.octets(), dst.octets())
        .map_err(|_| PacketError::TooLarge(payload_len))?;
    ip.dont_fragment = true;
    ip.header_checksum = ip.calc_header_checksum();
    Ok(ip)
}

fn ipv6_header(
    src: Ipv6Addr,
    dst: Ipv6Addr,
    next: u8,
    hop_limit: u8,
    payload_len: usize,
) -> Result<Ipv6Header, PacketError> {
    Ok(Ipv6Header {
        traffic_class: 0,
        flow_label: Ipv6FlowLabel::ZERO,
        payload_length: u16::try_from(payload_len)
            .map_err(|_| PacketError::TooLarge(payload_len))?,
        next_header: IpNumber(next),
        hop_limit,
        source: src.octets(),
        destination: dst.octets(),
    })
}

/// An ICMPv4 message of `icmp_type`/`code` quoting `quoted` (the original IP header and
/// data), from `src` to `dst`, TTL 255.
#[allow(clippy::too_many_arguments)]
pub fn icmp4(
    eth_src: Mac,
    eth_dst: Mac,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    icmp_type: u8,
    code: u8,
    quoted: &[u8],
    vlan_tci: Option<u16>,
) -> Result<Vec<u8>, PacketError> {
    let icmp = Icmpv4Header::with_checksum(
        Icmpv4Type::Unknown {
            type_u8: icmp_type,
            code_u8: code,
            bytes5to8: [0; 4],
        },
        quoted,
    );
    let ip = ipv4_header(src, dst, PROTO_ICMP, 255, icmp.header_len() + quoted.len())?;
    let mut out = eth_header(eth_dst, eth_src, ETH_TYPE_IPV4, vlan_tci);
    out.extend_from_slice(&ip.to_bytes());
    out.extend_from_slice(&icmp.to_bytes());
    out.extend_from_slice(quoted);
    Ok(out)
}

/// An ICMPv6 message (4 bytes of `data` after type/code/checksum, then `body`), hop limit
/// `hop_limit`.
#[allow(clippy::too_many_arguments)]
pub fn icmp6(
    eth_src: Mac,
    eth_dst: Mac,
    src: Ipv6Addr,
    dst: Ipv6Addr,
    hop_limit: u8,
    (icmp_type, code, data): (u8, u8, [u8; 4]),
    body: &[u8],
    vlan_tci: Option<u16>,
) -> Result<Vec<u8>, PacketError> {
    let icmp = Icmpv6Header::with_checksum(
        Icmpv6Type::Unknown {
            type_u8: icmp_type,
            code_u8: code,
            bytes5to8: data,
        },
        src.octets(),
        dst.octets(),
        body,
    )
    .map_err(|_| PacketError::TooLarge(body.len()))?;
    let ip = ipv6_header(
        src,
        dst,
        PROTO_ICMPV6,
        hop_limit,
        icmp.header_len() + body.len(),
    )?;
    let mut out = eth_header(eth_dst, eth_src, ETH_TYPE_IPV6, vlan_tci);
    out.extend_from_slice(&ip.to_bytes());
    out.extend_from_slice(&icmp.to_bytes());
    out.extend_from_slice(body);
    Ok(out)
}

/// `ff02::1:ffXX:XXXX` for `addr`.
pub fn solicited_node(addr: Ipv6Addr) -> Ipv6Addr {
    let o = addr.octets();
    Ipv6Addr::from([
        0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, o[13], o[14], o[15],
    ])
}

/// The Ethernet address of an IPv6 multicast group (`33:33` and its low 32 bits).
pub fn multicast_mac(group: Ipv6Addr) -> Mac {
    let o = group.octets();
    [0x33, 0x33, o[12], o[13], o[14], o[15]]
}

/// The EUI-64 link-local address of `mac` (`fe80::` with the U/L bit flipped).
pub fn link_local(mac: Mac) -> Ipv6Addr {
    Ipv6Addr::from([
        0xfe,
        0x80,
        0,
        0,
        0,
        0,
        0,
        0,
        mac[0] ^ 2,
        mac[1],
        mac[2],
        0xff,
        0xfe,
        mac[3],
        mac[4],
        mac[5],
    ])
}

/// A neighbor solicitation for `target` from `eth_src`/`ip_src` (to the solicited-node
/// group, with the source link-layer address option).
pub fn nd_ns(eth_src: Mac, ip_src: Ipv6Addr, target: Ipv6Addr) -> Result<Vec<u8>, PacketError> {
    let group = solicited_node(target);
    let mut body = target.octets().to_vec();
    body.extend_from_slice(&[1, 1]);
    body.extend_from_slice(&eth_src);
    icmp6(
        eth_src,
        multicast_mac(group),
        ip_src,
        group,
        255,
        (135, 0, [0; 4]),
        &body,
        None,
    )
}

/// A neighbor advertisement for `target` with `flags` (R 0x80, S 0x40, O 0x20 in the first
/// byte) and the target link-layer address option (`eth_src`).
pub fn nd_na(
    eth_src: Mac,
    eth_dst: Mac,
    target: Ipv6Addr,
    ip_dst: Ipv6Addr,
    flags: u8,
) -> Result<Vec<u8>, PacketError> {
    let mut body = target.octets().to_vec();
    body.extend_from_slice(&[2, 1]);
    body.extend_from_slice(&eth_src);
    icmp6(
        eth_src,
        eth_dst,
        target,
        ip_dst,
        255,
        (136, 0, [flags, 0, 0, 0]),
        &body,
        None,
    )
}

/// Addresses of a TCP RST or SCTP ABORT.
pub struct Endpoints {
    pub eth_src: Mac,
    pub eth_dst: Mac,
    pub l3: L3,
}

/// A TCP RST+ACK: `src_port`->`dst_port`, seq 0, `ack`, TTL/hop limit 63, no window.
pub fn tcp_reset(
    e: &Endpoints,
    src_port: u16,
    dst_port: u16,
    ack: u32,
) -> Result<Vec<u8>, PacketError> {
    let mut tcp = TcpHeader::new(src_port, dst_port, 0, 0);
    tcp.rst = true;
    tcp.ack = true;
    tcp.acknowledgment_number = ack;
    match e.l3 {
        L3::Ipv4 { src, dst, .. } => {
            let ip = ipv4_header(src, dst, PROTO_TCP, 63, tcp.header_len())?;
            tcp.checksum = tcp
                .calc_checksum_ipv4(&ip, &[])
                .map_err(|_| PacketError::TooLarge(0))?;
            let mut out = eth_header(e.eth_dst, e.eth_src, ETH_TYPE_IPV4, None);
            out.extend_from_slice(&ip.to_bytes());
            out.extend_from_slice(&tcp.to_bytes());
            Ok(out)
        }
        L3::Ipv6 { src, dst, .. } => {
            let ip = ipv6_header(src, dst, PROTO_TCP, 63, tcp.header_len())?;
            tcp.checksum = tcp
                .calc_checksum_ipv6(&ip, &[])
                .map_err(|_| PacketError::TooLarge(0))?;
            let mut out = eth_header(e.eth_dst, e.eth_src, ETH_TYPE_IPV6, None);
            out.extend_from_slice(&ip.to_bytes());
            out.extend_from_slice(&tcp.to_bytes());
            Ok(out)
        }
        L3::Other => Err(PacketError::Malformed("IP")),
    }
}

/// The TCP header of a segment: (source port, destination port, sequence, RST set).
pub fn tcp_fields(l4: &[u8]) -> Option<(u16, u16, u32, bool)> {
    let t = TcpHeaderSlice::from_slice(l4).ok()?;
    Some((
        t.source_port(),
        t.destination_port(),
        t.sequence_number(),
        t.rst(),
    ))
}

/// CRC-32C (Castagnoli), the SCTP checksum (RFC 4960 appendix B), bitwise: the packets
/// are a few bytes long and rare.
pub fn crc32c(data: &[u8]) -> u32 {
    let mut crc = u32::MAX;
    for b in data {
        crc ^= u32::from(*b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82f6_3b78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// An SCTP ABORT (one chunk, `t_bit`: the tag is reflected) from `src_port` to
/// `dst_port` with verification tag `vtag`, TTL/hop limit 63.
pub fn sctp_abort(
    e: &Endpoints,
    src_port: u16,
    dst_port: u16,
    vtag: u32,
    t_bit: bool,
) -> Result<Vec<u8>, PacketError> {
    let mut sctp = Vec::with_capacity(16);
    sctp.extend_from_slice(&src_port.to_be_bytes());
    sctp.extend_from_slice(&dst_port.to_be_bytes());
    sctp.extend_from_slice(&vtag.to_be_bytes());
    sctp.extend_from_slice(&[0; 4]);
    sctp.extend_from_slice(&[6, u8::from(t_bit), 0, 4]);
    // The checksum goes on the wire least significant byte first.
    let crc = crc32c(&sctp);
    sctp[8..12].copy_from_slice(&crc.to_le_bytes());
    let mut out;
    match e.l3 {
        L3::Ipv4 { src, dst, .. } => {
            let ip = ipv4_header(src, dst, PROTO_SCTP, 63, sctp.len())?;
            out = eth_header(e.eth_dst, e.eth_src, ETH_TYPE_IPV4, None);
            out.extend_from_slice(&ip.to_bytes());
        }
        L3::Ipv6 { src, dst, .. } => {
            let ip = ipv6_header(src, dst, PROTO_SCTP, 63, sctp.len())?;
            out = eth_header(e.eth_dst, e.eth_src, ETH_TYPE_IPV6, None);
            out.extend_from_slice(&ip.to_bytes());
        }
        L3::Other => return Err(PacketError::Malformed("IP")),
    }
    out.extend_from_slice(&sctp);
    Ok(out)
}

/// Ethernet, IP and UDP around `payload`, as pinctrl composes its own datagrams: IPv4 with
/// DF set, identification and TOS 0 and no UDP checksum; IPv6 (an IPv4 address mapped
/// when the other is IPv6) with one.
pub fn udp_datagram(
    macs: (Mac, Mac),
    ips: (std::net::IpAddr, std::net::IpAddr),
    ttl: u8,
    ports: (u16, u16),
    payload: &[u8],
) -> Vec<u8> {
    use super::csum::{fold, sum16};
    let (src_mac, dst_mac) = macs;
    let l4_len = 8 + payload.len();
    let mut out = Vec::with_capacity(14 + 40 + l4_len);
    out.extend_from_slice(&dst_mac);
    out.extend_from_slice(&src_mac);
    let mut udp = Vec::with_capacity(l4_len);
    udp.extend_from_slice(&ports.0.to_be_bytes());
    udp.extend_from_slice(&ports.1.to_be_bytes());
    udp.extend_from_slice(&(l4_len as u16).to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(payload);
    match ips {
        (std::net::IpAddr::V4(src), std::net::IpAddr::V4(dst)) => {
            out.extend_from_slice(&ETH_TYPE_IPV4.to_be_bytes());
            let mut ip = [0u8; 20];
            ip[0] = 0x45;
            ip[2..4].copy_from_slice(&((20 + l4_len) as u16).to_be_bytes());
            ip[6] = 0x40;
            ip[8] = ttl;
            ip[9] = PROTO_UDP;
            ip[12..16].copy_from_slice(&src.octets());
            ip[16..20].copy_from_slice(&dst.octets());
            let c = fold(sum16(&ip, 0));
            ip[10..12].copy_from_slice(&c.to_be_bytes());
            out.extend_from_slice(&ip);
        }
        (src, dst) => {
            let v6 = |a: std::net::IpAddr| match a {
                std::net::IpAddr::V6(a) => a,
                std::net::IpAddr::V4(a) => a.to_ipv6_mapped(),
            };
            let (src, dst) = (v6(src), v6(dst));
            out.extend_from_slice(&ETH_TYPE_IPV6.to_be_bytes());
            out.extend_from_slice(&[0x60, 0, 0, 0]);
            out.extend_from_slice(&(l4_len as u16).to_be_bytes());
            out.push(PROTO_UDP);
            out.push(ttl);
            out.extend_from_slice(&src.octets());
            out.extend_from_slice(&dst.octets());
            let pseudo = sum16(&src.octets(), 0)
                + sum16(&dst.octets(), 0)
                + u32::from(PROTO_UDP)
                + l4_len as u32;
            let c = match fold(sum16(&udp, pseudo)) {
                0 => 0xffff,
                c => c,
            };
            udp[6..8].copy_from_slice(&c.to_be_bytes());
        }
    }
    out.extend_from_slice(&udp);
    out
}

/// Lower-case hex of `bytes` (log lines; tests' golden vectors).
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// A MAC as text, `xx:xx:xx:xx:xx:xx`.
pub fn mac_text(m: &[u8]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// A MAC in `xx:xx:xx:xx:xx:xx` form.
pub fn parse_mac(s: &str) -> Option<Mac> {
    let mut out = [0u8; 6];
    let mut parts = s.split(':');
    for b in &mut out {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(out)
}
