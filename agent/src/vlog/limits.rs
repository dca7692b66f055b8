//! The rate limits of the agent's warnings about bad input, one per kind, as OVS gives
//! each such message a `VLOG_RATE_LIMIT_INIT`: a burst of 20, then 5 a minute. What the
//! input was is counted elsewhere (`debug/engine-stats`); these count the log lines
//! they suppressed.

use super::RateLimit;

/// Southbound or local rows skipped as unusable: logical flows that do not compile, bad
/// Port_Bindings, interfaces with an iface-id already in use, physical-stage problems.
pub static BAD_ROW: RateLimit = RateLimit::new(5, 20);
/// Flows and groups the switch refused or that cannot be encoded.
pub static REFUSED_FLOW: RateLimit = RateLimit::new(5, 20);
/// Database updates that could not be applied to a replica.
pub static BAD_UPDATE: RateLimit = RateLimit::new(5, 20);
/// Columns that the Southbound server's schema lacks.
pub static MISSING_COLUMN: RateLimit = RateLimit::new(5, 20);
/// Southbound transactions the server refused (RBAC, constraints).
pub static REFUSED_TXN: RateLimit = RateLimit::new(5, 20);
/// Monitor-condition changes that could not be sent or that the server refused.
pub static CONDITION: RateLimit = RateLimit::new(5, 20);
/// Ports this chassis could bind but does not claim (`requested-chassis` names another
/// chassis, `iface-id-ver` differs): as ovn-controller, 5 a minute.
pub static BINDING_NOTE: RateLimit = RateLimit::new(5, 1);
/// ovn-northd's internal version differs from ours (`ovn-match-northd-version`): once a
/// second at most, as ovn-controller.
pub static NORTHD_VERSION: RateLimit = RateLimit::new(60, 1);

/// Log lines about bad input suppressed so far, all kinds together.
pub fn suppressed_total() -> u64 {
    [
        &BAD_ROW,
        &REFUSED_FLOW,
        &BAD_UPDATE,
        &MISSING_COLUMN,
        &CONDITION,
        &REFUSED_TXN,
        &NORTHD_VERSION,
    ]
    .iter()
    .map(|l| l.suppressed_total())
    .sum()
}
