//! BFD on a router port (the Southbound `BFD` table), with ovn-controller (the oracle) and
//! with ovn-agent on three chassis, in the same run: lr0's gateway port `lr0-public` is on
//! hv3, and a static route with BFD (`lr-route-add --bfd`) names the external host
//! 172.16.0.100 as its next hop and BFD peer. The test plays
//! the peer from the host's interface: the controller on hv3 must send control packets
//! from the row's source port and discriminator, come up through init as the peer answers
//! (RFC 5880's three-way handshake), write each state to the row's `status`, and go down
//! when the peer falls silent. Only facts are compared (discriminators and ports are
//! northd's random picks, and the packets' count follows the clock).

mod common;

use std::time::{Duration, Instant};

use common::{Net, Setup};
use integration::observe::{Outcome, Probe};
use integration::packet::ipv4_summary;
use integration::scenario::SnatGateway;
use integration::Result;

const GATEWAY: SnatGateway = SnatGateway::LAB;
const BFD_PORT: u16 = 3784;
const PEER_DISC: u32 = 0x99;

/// The Southbound row's `column`.
fn sb_bfd(net: &Net, column: &str) -> Result<String> {
    Ok(net
        .lab
        .central()
        .sbctl(&["--bare", &format!("--columns={column}"), "list", "BFD"])?
        .trim()
        .to_owned())
}

fn wait_status(net: &Net, want: &str, within: Duration) -> std::result::Result<(), String> {
    let deadline = Instant::now() + within;
    loop {
        let now = sb_bfd(net, "status").unwrap_or_default();
        if now == want {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "BFD status {now:?}, not {want:?}, after {within:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The peer's control packet: `state` (0 admin down .. 3 up), our discriminator `your`.
fn peer_packet(state: u8, your: u32, src_port: u16) -> Vec<u8> {
    let mut bfd = vec![0u8; 24];
    bfd[0] = 1 << 5;
    bfd[1] = state << 6;
    bfd[2] = 3;
    bfd[3] = 24;
    bfd[4..8].copy_from_slice(&PEER_DISC.to_be_bytes());
    bfd[8..12].copy_from_slice(&your.to_be_bytes());
    bfd[12..16].copy_from_slice(&100_000u32.to_be_bytes());
    bfd[16..20].copy_from_slice(&100_000u32.to_be_bytes());
    integration::packet::udp4(
        GATEWAY.host_mac,
        GATEWAY.router_mac,
        GATEWAY.host_ip,
        GATEWAY.router_ip,
        255,
        src_port,
        BFD_PORT,
        &bfd,
    )
}

/// The control packets the host received from the router: (source port, state, my_disc).
fn received(net: &Net) -> Vec<(u16, u8, u32)> {
    let Some((_, host)) = net.extra.first() else {
        return Vec::new();
    };
    host.transmitted()
        .unwrap_or_default()
        .iter()
        .filter_map(|f| {
            let s = ipv4_summary(f)?;
            if s.src != GATEWAY.router_ip || s.dst != GATEWAY.host_ip {
                return None;
            }
            let udp = f.get(34..)?;
            let (sport, dport) = (
                u16::from_be_bytes([udp[0], udp[1]]),
                u16::from_be_bytes([udp[2], udp[3]]),
            );
            let msg = udp.get(8..32)?;
            (dport == BFD_PORT).then(|| {
                (
                    sport,
                    msg[1] >> 6,
                    u32::from_be_bytes([msg[4], msg[5], msg[6], msg[7]]),
                )
            })
        })
        .collect()
}

fn session_follows_the_peer(net: &Net) -> Outcome {
    let mut p = Probe::start(&net.lab, &[]);
    // A static route with BFD: northd brings the session out of admin_down.
    let host = GATEWAY.host_ip.to_string();
    p.nbctl(&[
        "--bfd",
        "lr-route-add",
        "lr0",
        "192.168.50.0/24",
        &host,
        "lr0-public",
    ]);
    p.nbctl(&[
        "set",
        "BFD",
        ".",
        "min_tx=100",
        "min_rx=100",
        "detect_mult=3",
    ]);
    p.wait_hv("BFD row created");
    let disc: u32 = sb_bfd(net, "disc")
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(0);
    let src_port: u16 = sb_bfd(net, "src_port")
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(0);
    p.fact(
        "row has a discriminator and source port",
        (disc != 0 && src_port != 0).to_string(),
    );

    // The router speaks first: down, from the row's port and discriminator.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut seen = Vec::new();
    while Instant::now() < deadline && seen.is_empty() {
        seen = received(net);
        std::thread::sleep(Duration::from_millis(50));
    }
    match seen.first() {
        Some(&(sport, state, my_disc)) => {
            p.fact("first control packet: state", state.to_string());
            p.fact(
                "first control packet: row's port and discriminator",
                (sport == src_port && my_disc == disc).to_string(),
            );
        }
        None => p.fail("no BFD control packet reached the peer within 5 s"),
    }

    // The peer keeps sending (every 100 ms, its min_tx) until the row shows the state.
    let host = net.extra.first().map(|(_, v)| v.clone());
    let hold = |state: u8, want: &str| -> std::result::Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let (Some(h), Ok(hv3)) = (&host, net.lab.chassis("hv3")) {
                let _ = hv3.inject(h, &peer_packet(state, disc, 49200));
            }
            if sb_bfd(net, "status").is_ok_and(|s| s == want) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "BFD status {:?}, not {want:?}, after 15 s of the peer sending state {state}",
                    sb_bfd(net, "status").unwrap_or_default()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    for (state, want, fact) in [
        (1, "init", "after the peer's down"),
        (3, "up", "after the peer's up"),
    ] {
        let reached = hold(state, want);
        p.fact(fact, sb_bfd(net, "status").unwrap_or_default());
        if let Err(e) = reached {
            p.fail(e);
        }
    }
    // Silence: down after the detection time (3 x 100 ms), within a few seconds.
    let down = wait_status(net, "down", Duration::from_secs(15));
    p.fact(
        "after the peer fell silent",
        sb_bfd(net, "status").unwrap_or_default(),
    );
    if let Err(e) = down {
        p.fail(e);
    }
    let outcome = p.finish(&[]);
    let _ = net
        .lab
        .central()
        .nbctl(&["lr-route-del", "lr0", "192.168.50.0/24"]);
    let _ = net.lab.central().nbctl(&["--all", "destroy", "BFD"]);
    let _ = net.lab.central().wait_hv_sync();
    outcome
}

#[test]
fn bfd_as_ovn_controller() {
    let setups = Setup::oracle_and_agent(&["hv1", "hv2", "hv3"]);
    let (nets, report) = common::run_all(
        &setups,
        common::gateway_lab,
        &[("BFD session follows the peer", session_follows_the_peer)],
    );
    common::conclude_healthy(nets, &report);
}
