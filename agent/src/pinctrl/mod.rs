//! pinctrl: the packet-ins that OVN's logical flows send to the controller. The handlers
//! ([`handlers`]) are pure functions of the packet-in and a small context, returning
//! effects; the [`driver`] task owns the OpenFlow connection and carries them out; the
//! main loop feeds it a [`view::View`] of the Southbound bindings and turns the MAC
//! bindings it learns into transactions ([`sb_write`]).
//!
//! Handled: `arp {}` and `nd_ns {}` (with the original packet buffered until its next hop
//! resolves), `put_arp` / `put_nd` / `put_fdb`, `nd_na {}` / `nd_na_router {}`, `icmp4 {}` /
//! `icmp6 {}` / `icmp4_error {}` / `icmp6_error {}`, `icmp4.frag_mtu` / `icmp6.frag_mtu`,
//! `tcp_reset {}`, `sctp_abort {}`, `reject {}`, and ACL `log`; gratuitous ARPs for
//! localnet VIFs and gateway NAT addresses ([`announce`], [`garp`]); `dns_lookup`
//! ([`dns`]), `put_nd_ra_opts` and periodic router advertisements ([`ra`],
//! [`ra_schedule`]).
//! Load balancer health checks ([`svc_monitor`], `handle_svc_check`), controller events
//! ([`events`], `trigger_event`) and virtual port claims ([`vport`], `bind_vport`).
//! `put_dhcp_opts` / `put_dhcpv6_opts`: DHCPv4 and DHCPv6 replies ([`dhcp`], [`dhcpv6`]).
//! `igmp`: IGMP/MLD snooping written to `IGMP_Group`, and the IGMP/MLD querier
//! ([`igmp`], [`igmp_query`]).

pub mod acl_log;
pub mod activation;
pub mod announce;
pub mod bfd;
pub mod buffer;
pub mod csum;
pub mod dhcp;
pub mod dhcpv6;
pub mod dns;
pub mod driver;
pub mod effect;
pub mod events;
pub mod garp;
pub mod handlers;
pub mod igmp;
mod igmp_parse;
pub mod igmp_query;
pub mod inject;
pub mod metadata;
pub mod packet;
pub mod packet_in;
pub mod prefixd;
pub mod ra;
pub mod ra_schedule;
pub mod result_bit;
pub mod sb_write;
pub mod stats;
pub mod svc_monitor;
pub mod view;
pub mod vport;

#[cfg(test)]
mod dhcp_tests;
#[cfg(test)]
mod dns_ra_tests;
#[cfg(test)]
mod tests;

pub use driver::{spawn, Pinctrl};
pub use stats::Stats;
pub use view::View;
