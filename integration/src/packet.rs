//! Test packets: builders for what VMs send and a one-line summary of what they receive.

use std::fmt::Write as _;
use std::net::Ipv4Addr;

use etherparse::{NetSlice, PacketBuilder, SlicedPacket, TransportSlice};

/// A MAC address in its usual text form, as OVN's `addresses` columns hold it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mac(pub [u8; 6]);

impl std::fmt::Display for Mac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

impl std::str::FromStr for Mac {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut out = [0u8; 6];
        let mut parts = s.split(':');
        for byte in &mut out {
            let part = parts.next().ok_or_else(|| format!("short MAC {s:?}"))?;
            *byte = u8::from_str_radix(part, 16).map_err(|e| format!("bad MAC {s:?}: {e}"))?;
        }
        if parts.next().is_some() {
            return Err(format!("long MAC {s:?}"));
        }
        Ok(Self(out))
    }
}

/// An ICMPv4 echo request of `payload_len` bytes of payload.
pub fn icmp4_echo(
    src_mac: Mac,
    dst_mac: Mac,
    src_ip: Ipv4Addr,
    dst_ip: Ipv4Addr,
    ttl: u8,
    payload_len: usize,
) -> Vec<u8> {
    let payload: Vec<u8> = (0..payload_len).map(|i| i as u8).collect();
    let builder = PacketBuilder::ethernet2(src_mac.0, dst_mac.0)
        .ipv4(src_ip.octets(), dst_ip.octets(), ttl)
        .icmpv4_echo_request(0x1234, 1);
    let mut out = Vec::with_capacity(builder.size(payload.len()));
    // Writing into a Vec cannot fail for I/O reasons, and the builder's sizes are valid.
    builder
        .write(&mut out, &payload)
        .expect("ICMP echo request fits in memory");
    out
}

/// Source MAC, destination MAC, IPv4 source, destination and TTL of an Ethernet/IPv4 frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv4Summary {
    pub src_mac: Mac,
    pub dst_mac: Mac,
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub ttl: u8,
    pub icmp_echo_request: bool,
}

pub fn ipv4_summary(frame: &[u8]) -> Option<Ipv4Summary> {
    let sliced = SlicedPacket::from_ethernet(frame).ok()?;
    let etherparse::LinkSlice::Ethernet2(eth) = sliced.link? else {
        return None;
    };
    let Some(NetSlice::Ipv4(ip)) = sliced.net else {
        return None;
    };
    let header = ip.header();
    let icmp_echo_request = matches!(
        &sliced.transport,
        Some(TransportSlice::Icmpv4(icmp)) if icmp.type_u8() == 8
    );
    Some(Ipv4Summary {
        src_mac: Mac(eth.source()),
        dst_mac: Mac(eth.destination()),
        src: header.source_addr(),
        dst: header.destination_addr(),
        ttl: header.ttl(),
        icmp_echo_request,
    })
}

/// One line describing a frame, for logs and the lab's output.
pub fn describe(frame: &[u8]) -> String {
    match ipv4_summary(frame) {
        Some(s) => {
            let mut line = format!(
                "{} > {}, IPv4 {} > {} ttl {}",
                s.src_mac, s.dst_mac, s.src, s.dst, s.ttl
            );
            if s.icmp_echo_request {
                line.push_str(", ICMP echo request");
            }
            let _ = write!(line, ", {} bytes", frame.len());
            line
        }
        None => format!("{} bytes: {}", frame.len(), hex::encode(frame)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_request_round_trips_through_the_summary() {
        let src: Mac = "50:54:00:00:00:01".parse().unwrap();
        let dst: Mac = "50:54:00:00:00:02".parse().unwrap();
        let frame = icmp4_echo(
            src,
            dst,
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(10, 0, 0, 2),
            64,
            56,
        );
        assert_eq!(frame.len(), 14 + 20 + 8 + 56);
        let s = ipv4_summary(&frame).unwrap();
        assert_eq!((s.src_mac, s.dst_mac, s.ttl), (src, dst, 64));
        assert_eq!(
            (s.src, s.dst),
            (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2))
        );
        assert!(s.icmp_echo_request);
        assert_eq!(src.to_string(), "50:54:00:00:00:01");
        assert!("50:54:00:00:00".parse::<Mac>().is_err());
    }
}
