//! SB_Global options northd writes that change how logical flows compile.

/// SB_Global's `options:lb_hairpin_use_ct_mark`: true unless northd says otherwise.
pub fn lb_hairpin_use_ct_mark(replica: &sbclient::Replica) -> bool {
    northd_option(replica, "lb_hairpin_use_ct_mark", true)
}

/// A boolean of SB_Global's options, as ovn-controller reads it (`default` when absent; a
/// value other than true/false is `default`'s opposite only for the word itself).
pub fn northd_option(replica: &sbclient::Replica, key: &str, default: bool) -> bool {
    let value = replica
        .table::<sbclient::ovn_sb::SbGlobal>()
        .and_then(|t| t.iter().next().map(|(_, g)| g))
        .and_then(|g| g.options.get(key));
    match value {
        None => default,
        Some(v) if default => !v.eq_ignore_ascii_case("false"),
        Some(v) => v.eq_ignore_ascii_case("true"),
    }
}

/// The SB_Global options the compiled flows depend on: a change recompiles everything.
pub fn northd_flow_options(replica: &sbclient::Replica) -> (bool, bool) {
    (
        lb_hairpin_use_ct_mark(replica),
        northd_option(replica, "register_consolidation", false),
    )
}
