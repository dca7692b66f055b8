//! Packets through a multi-chassis lab: what a VM sends must arrive, changed exactly as the
//! logical topology says, on the right VM of the right chassis, and nowhere else.

use std::net::Ipv4Addr;
use std::time::Duration;

use integration::packet::{icmp4_echo, ipv4_summary, Mac};
use integration::scenario::{add_router, add_switch, wait_port_up, RouterPort, VmPort};
use integration::{Controller, Lab, Vif};

const DELIVERY_TIMEOUT: Duration = Duration::from_secs(10);

fn mac(s: &str) -> Mac {
    s.parse().expect("valid MAC literal")
}

fn vm(name: &str, mac_text: &str, ip: [u8; 4]) -> VmPort {
    VmPort {
        name: name.to_owned(),
        mac: mac(mac_text),
        ip: Ipv4Addr::from(ip),
    }
}

/// A lab with chassis hv1 and hv2 running the controller chosen by `OVNRS_SUBJECT`.
fn two_chassis_lab() -> Lab {
    let controller = Controller::from_env().expect("controller selection");
    let mut lab = Lab::start().expect("start central and network");
    for name in ["hv1", "hv2"] {
        lab.add_chassis(name, &controller).expect("start chassis");
    }
    lab
}

/// Plugs `port` into `chassis` as VIF `vif` and waits until it is up.
fn plug(lab: &Lab, chassis: &str, vif: &str, port: &VmPort) -> Vif {
    let vif = lab
        .chassis(chassis)
        .and_then(|c| c.add_vif(vif, &port.name))
        .expect("add VIF");
    wait_port_up(lab.central(), &port.name).expect("port comes up");
    vif
}

#[test]
fn switched_packet_crosses_chassis_unchanged() {
    let lab = two_chassis_lab();
    let (vm1, vm2) = (
        vm("vm1", "50:54:00:00:00:01", [10, 0, 0, 1]),
        vm("vm2", "50:54:00:00:00:02", [10, 0, 0, 2]),
    );
    add_switch(lab.central(), "sw0", &[vm1.clone(), vm2.clone()]).unwrap();
    let vif1 = plug(&lab, "hv1", "vif1", &vm1);
    let vif2 = plug(&lab, "hv2", "vif2", &vm2);
    lab.central().wait_hv_sync().unwrap();
    assert_eq!(
        lab.central()
            .port_binding_chassis("vm1")
            .unwrap()
            .as_deref(),
        Some("hv1")
    );
    assert_eq!(
        lab.central()
            .port_binding_chassis("vm2")
            .unwrap()
            .as_deref(),
        Some("hv2")
    );

    let frame = icmp4_echo(vm1.mac, vm2.mac, vm1.ip, vm2.ip, 64, 56);
    lab.chassis("hv1").unwrap().inject(&vif1, &frame).unwrap();
    let got = vif2.wait_for_packet(DELIVERY_TIMEOUT, |p| p == frame.as_slice());
    assert!(
        got.is_ok(),
        "echo request did not reach vm2 on hv2: {got:?}"
    );
    assert!(
        vif1.transmitted().unwrap().iter().all(|p| p != &frame),
        "echo reflected to vm1"
    );
}

#[test]
fn routed_packet_crosses_chassis_with_new_macs_and_ttl() {
    let lab = two_chassis_lab();
    let vm1 = vm("vm1", "50:54:00:00:00:01", [10, 0, 0, 1]);
    let vm2 = vm("vm2", "50:54:00:00:01:02", [10, 0, 1, 2]);
    let lrp_sw0 = RouterPort {
        switch: "sw0",
        mac: mac("00:00:00:00:ff:01"),
        ip: Ipv4Addr::new(10, 0, 0, 254),
        prefix: 24,
    };
    let lrp_sw1 = RouterPort {
        switch: "sw1",
        mac: mac("00:00:00:00:ff:02"),
        ip: Ipv4Addr::new(10, 0, 1, 254),
        prefix: 24,
    };
    add_switch(lab.central(), "sw0", std::slice::from_ref(&vm1)).unwrap();
    add_switch(lab.central(), "sw1", std::slice::from_ref(&vm2)).unwrap();
    add_router(lab.central(), "lr0", &[lrp_sw0, lrp_sw1]).unwrap();
    let vif1 = plug(&lab, "hv1", "vif1", &vm1);
    let vif2 = plug(&lab, "hv2", "vif2", &vm2);
    lab.central().wait_hv_sync().unwrap();

    let frame = icmp4_echo(vm1.mac, lrp_sw0.mac, vm1.ip, vm2.ip, 64, 56);
    lab.chassis("hv1").unwrap().inject(&vif1, &frame).unwrap();
    let got = vif2
        .wait_for_packet(DELIVERY_TIMEOUT, |p| {
            ipv4_summary(p).is_some_and(|s| s.src == vm1.ip && s.dst == vm2.ip)
        })
        .expect("routed echo request reaches vm2 on hv2");
    // The router rewrites the Ethernet header and decrements the TTL; nothing else changes.
    let expected = icmp4_echo(lrp_sw1.mac, vm2.mac, vm1.ip, vm2.ip, 63, 56);
    assert_eq!(hex::encode(&got), hex::encode(&expected));
}

#[test]
fn packet_to_unknown_mac_arrives_nowhere() {
    let lab = two_chassis_lab();
    let vm1 = vm("vm1", "50:54:00:00:00:01", [10, 0, 0, 1]);
    let vm2 = vm("vm2", "50:54:00:00:00:02", [10, 0, 0, 2]);
    let vm3 = vm("vm3", "50:54:00:00:00:03", [10, 0, 0, 3]);
    add_switch(
        lab.central(),
        "sw0",
        &[vm1.clone(), vm2.clone(), vm3.clone()],
    )
    .unwrap();
    let vif1 = plug(&lab, "hv1", "vif1", &vm1);
    let vif2 = plug(&lab, "hv2", "vif2", &vm2);
    let vif3 = plug(&lab, "hv1", "vif3", &vm3);
    lab.central().wait_hv_sync().unwrap();

    let nowhere = mac("50:54:00:00:00:99");
    let lost = icmp4_echo(
        vm1.mac,
        nowhere,
        vm1.ip,
        Ipv4Addr::new(10, 0, 0, 99),
        64,
        56,
    );
    let marker = icmp4_echo(vm1.mac, vm2.mac, vm1.ip, vm2.ip, 64, 56);
    let hv1 = lab.chassis("hv1").unwrap();
    hv1.inject(&vif1, &lost).unwrap();
    // The marker enters on the same queue after the lost packet, so once it has been delivered
    // the lost packet has been fully processed too.
    hv1.inject(&vif1, &marker).unwrap();
    vif2.wait_for_packet(DELIVERY_TIMEOUT, |p| p == marker.as_slice())
        .expect("marker reaches vm2");
    for vif in [&vif1, &vif2, &vif3] {
        let packets = vif.transmitted().unwrap();
        assert!(
            packets.iter().all(|p| !p.starts_with(&nowhere.0)),
            "packet to an unknown MAC was delivered to {}",
            vif.name
        );
    }
}
