//! The IGMP / MLD querier's frames, byte for byte as ovn-controller 23.03.1 builds them
//! (`ip_mcast_querier_send_igmp` / `_mld`), and the packet-out that floods them to the
//! switch's local ports. The schedule lives in [`super::igmp::Snooping::queries`].
//!
//! Two intended differences, both 23.03.1 bugs (DESIGN: do the right thing):
//! - the MLD query goes to `33:33:00:00:00:01`, the MAC of `ff02::1` (RFC 2464);
//!   ovn-controller sends it to `33:33:00:00:00:00`, which hosts that filter multicast
//!   MACs drop;
//! - `MLF_LOCAL_ONLY` is bit 4 of the flags register; ovn-controller loads bit 16 (the
//!   mask used as an offset). Injected into the local output stage either way, the
//!   query reaches the same ports.

use std::net::{Ipv4Addr, Ipv6Addr};

use openflow::wire::PacketOut;

use super::packet::Mac;

/// `OVN_MCAST_FLOOD_TUNNEL_KEY`: every port of the datapath (`_MC_flood`).
pub const FLOOD_KEY: u32 = 32768;

const IGMP_ALL_HOSTS_MAC: Mac = [0x01, 0x00, 0x5e, 0, 0, 1];
const MLD_ALL_HOSTS_MAC: Mac = [0x33, 0x33, 0, 0, 0, 1];
const IP_DF: u16 = 0x4000;
/// The router alert hop-by-hop option (RFC 2711, MLD).
const ROUTER_ALERT: [u8; 4] = [0x05, 0x02, 0x00, 0x00];

/// `recalc_csum16` (RFC 1624), exactly as OVS computes it: the IGMP checksum is built
/// incrementally from a zero field.
fn recalc_csum16(old_csum: u16, old: u16, new: u16) -> u16 {
    let mut sum = u32::from(!old_csum) + u32::from(!old) + u32::from(new);
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn csum(data: &[u8], initial: u32) -> u16 {
    let mut sum = initial;
    for c in data.chunks(2) {
        sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An IGMPv3 general query from `src` to 224.0.0.1: TTL 1, don't fragment, max response
/// `max_resp_s` in tenths of seconds and QQIC the same byte (as 23.03.1 fills it), S and
/// QRV zero.
pub fn igmp_query(eth_src: Mac, src: Ipv4Addr, max_resp_s: u32) -> Vec<u8> {
    let dst = Ipv4Addr::new(224, 0, 0, 1);
    let mut out = Vec::with_capacity(14 + 20 + 12);
    out.extend_from_slice(&IGMP_ALL_HOSTS_MAC);
    out.extend_from_slice(&eth_src);
    out.extend_from_slice(&0x0800u16.to_be_bytes());
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&32u16.to_be_bytes());
    ip[6..8].copy_from_slice(&IP_DF.to_be_bytes());
    ip[8] = 1;
    ip[9] = 2;
    ip[12..16].copy_from_slice(&src.octets());
    ip[16..20].copy_from_slice(&dst.octets());
    let c = csum(&ip, 0);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    out.extend_from_slice(&ip);
    // Truncated to a byte, as the C code stores it.
    let max_resp = (max_resp_s.wrapping_mul(10)) as u8;
    let qqic = max_resp;
    let mut igmp = [0u8; 12];
    let mut c = recalc_csum16(0, 0, u16::from_be_bytes([0x11, max_resp]));
    igmp[0] = 0x11;
    igmp[1] = max_resp;
    if qqic != 0 {
        c = recalc_csum16(c, 0, u16::from(qqic));
        igmp[9] = qqic;
    }
    igmp[2..4].copy_from_slice(&c.to_be_bytes());
    out.extend_from_slice(&igmp);
    out
}

/// An MLDv2 general query from `src` to ff02::1 with a router alert hop-by-hop header:
/// hop limit 1, maximum response `max_resp_s` seconds (in ms), QQIC `max_resp_s`.
pub fn mld_query(eth_src: Mac, src: Ipv6Addr, max_resp_s: u32) -> Vec<u8> {
    let dst: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
    let mut out = Vec::with_capacity(14 + 40 + 8 + 28);
    out.extend_from_slice(&MLD_ALL_HOSTS_MAC);
    out.extend_from_slice(&eth_src);
    out.extend_from_slice(&0x86ddu16.to_be_bytes());
    out.extend_from_slice(&[0x60, 0, 0, 0]);
    out.extend_from_slice(&36u16.to_be_bytes());
    out.push(0); // hop-by-hop options
    out.push(1);
    out.extend_from_slice(&src.octets());
    out.extend_from_slice(&dst.octets());
    out.extend_from_slice(&[58, 0]);
    out.extend_from_slice(&ROUTER_ALERT);
    out.extend_from_slice(&[0, 0]);
    let mut mld = [0u8; 28];
    mld[0] = 130;
    mld[4..6].copy_from_slice(&(max_resp_s.wrapping_mul(1000) as u16).to_be_bytes());
    mld[25] = max_resp_s as u8;
    let len = mld.len() as u32;
    let mut pseudo = 0u32;
    for c in src.octets().chunks(2).chain(dst.octets().chunks(2)) {
        pseudo += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    pseudo += len + 58;
    let c = csum(&mld, pseudo);
    mld[2..4].copy_from_slice(&c.to_be_bytes());
    out.extend_from_slice(&mld);
    out
}

/// The packet-out of a query: datapath `dp`, outport the flood group, local only, into
/// the local output stage.
pub fn packet_out(dp: u32, frame: Vec<u8>, local_output: u8) -> PacketOut {
    let at = super::packet_in::Entry {
        datapath: dp,
        outport: Some(FLOOD_KEY),
        local_only: true,
        table: local_output,
        ..Default::default()
    };
    super::packet_in::into_pipeline(at, frame)
}
