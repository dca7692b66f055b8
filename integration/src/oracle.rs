//! Runs a reference scenario with a real controller and captures what it installed: the
//! normalized flow table of the chassis under test (`hv1`) and its groups, for comparison with
//! what ovn-agent produces for the same Southbound content.

use std::time::Duration;

use crate::controller::Controller;
use crate::error::Result;
use crate::flows::{normalize_dump, NormalizedFlow, TableLayout};
use crate::lab::Lab;
use crate::reference::Scenario;
use crate::scenario::wait_port_up;

/// The chassis whose flows are captured.
pub const UNDER_TEST: &str = "hv1";

/// A lab running `scenario` with `controller` on `hv1` and `hv2`, its ports bound and every
/// chassis caught up with the Northbound database.
pub fn start_scenario(scenario: &Scenario, controller: &Controller) -> Result<Lab> {
    let mut lab = Lab::start()?;
    lab.add_chassis(UNDER_TEST, controller)?;
    lab.add_chassis("hv2", controller)?;
    (scenario.build)(lab.central())?;
    for (chassis, ports) in [
        (UNDER_TEST, scenario.local_ports),
        ("hv2", scenario.remote_ports),
    ] {
        let vifs: Vec<(String, &str)> = ports.iter().map(|p| (format!("vif-{p}"), *p)).collect();
        let pairs: Vec<(&str, &str)> = vifs.iter().map(|(v, p)| (v.as_str(), *p)).collect();
        if !pairs.is_empty() {
            lab.chassis(chassis)?.add_vifs(&pairs)?;
        }
    }
    for port in scenario.local_ports.iter().chain(scenario.remote_ports) {
        wait_port_up(lab.central(), port)?;
    }
    lab.central().wait_hv_sync()?;
    // Flows for port bindings land a moment after the ports are reported up; one more
    // round-trip through every chassis makes the table settle.
    std::thread::sleep(Duration::from_millis(200));
    lab.central().wait_hv_sync()?;
    Ok(lab)
}

/// What one chassis has installed, as text.
#[derive(Debug, Clone)]
pub struct Installed {
    pub flows: Vec<NormalizedFlow>,
    pub groups: Vec<String>,
    pub raw_flows: String,
}

/// Dumps `hv1`'s flows (normalized under `layout`) and groups.
pub fn installed(lab: &Lab, layout: TableLayout) -> Result<Installed> {
    installed_on(lab, UNDER_TEST, layout)
}

/// Dumps chassis `name`'s flows (normalized under `layout`) and groups.
pub fn installed_on(lab: &Lab, name: &str, layout: TableLayout) -> Result<Installed> {
    let chassis = lab.chassis(name)?;
    let raw_flows = chassis.ofctl(&["--no-stats", "dump-flows", "br-int"])?;
    let mut groups: Vec<String> = chassis
        .ofctl(&["dump-groups", "br-int"])?
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("group_id="))
        .map(str::to_owned)
        .collect();
    groups.sort();
    Ok(Installed {
        flows: normalize_dump(&raw_flows, layout),
        groups,
        raw_flows,
    })
}
