//! The agent's feature probe connection against a real `ovs-vswitchd` (dummy datapath):
//! it reads the switch's meter features and reports meter support, as ovn-controller's
//! third OpenFlow connection does.

use std::time::Duration;

use integration::Chassis;

#[test]
fn the_feature_probe_reports_meter_support() {
    let dir = tempfile::tempdir().unwrap();
    let chassis = Chassis::start_bare(dir.path(), "hv1").unwrap();
    let target = format!("unix:{}", chassis.br_int_mgmt().display());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let supported = rt.block_on(async {
        let probe = agent::ofctrl::features::spawn(&target).expect("connects");
        let mut rx = probe.meter_support.clone();
        let answer = tokio::time::timeout(Duration::from_secs(20), rx.wait_for(Option::is_some))
            .await
            .expect("an answer within 20 s")
            .expect("the probe runs")
            .expect("answered");
        drop(probe);
        answer
    });
    // The userspace (dummy) datapath has meters.
    assert!(supported);
}
