//! SB_Global options northd writes that change how logical flows compile.

/// SB_Global's `options:lb_hairpin_use_ct_mark`: true unless northd says otherwise.
pub fn lb_hairpin_use_ct_mark(replica: &sbclient::Replica) -> bool {
    northd_option(replica, "lb_hairpin_use_ct_mark", true)
}

/// SB_Global's `options:register_consolidation` (northd 24.09 on): the load balancers'
/// original destination and affinity backend are in the consolidated registers.
pub fn register_consolidation(replica: &sbclient::Replica) -> bool {
    northd_option(replica, "register_consolidation", false)
}

/// A boolean of SB_Global's options, as ovn-controller reads it (`default` when absent; a
/// value other than true/false is `default`'s opposite only for the word itself).
pub fn northd_option(replica: &sbclient::Replica, key: &str, default: bool) -> bool {
    match sb_global_option(replica, key) {
        None => default,
        Some(v) if default => !v.eq_ignore_ascii_case("false"),
        Some(v) => v.eq_ignore_ascii_case("true"),
    }
}

/// Option `key` of the SB_Global row, when there is one.
pub fn sb_global_option<'a>(replica: &'a sbclient::Replica, key: &str) -> Option<&'a str> {
    replica
        .table::<sbclient::ovn_sb::SbGlobal>()?
        .iter()
        .next()?
        .1
        .options
        .get(key)
        .map(String::as_str)
}

/// northd's internal version (`25.03.0-20.41.0-77.6`), which `ovn-match-northd-version`
/// compares and which names its release.
pub fn northd_internal_version(replica: &sbclient::Replica) -> Option<&str> {
    sb_global_option(replica, "northd_internal_version")
}

/// The SB_Global options the compiled flows depend on: a change recompiles everything.
pub fn northd_flow_options(replica: &sbclient::Replica) -> (bool, bool) {
    (
        lb_hairpin_use_ct_mark(replica),
        register_consolidation(replica),
    )
}

/// The release (`YY.MM`) of the northd that wrote the Southbound database, from
/// `SB_Global:options:northd_internal_version` (`25.03.0-20.41.0-76.8`).
pub fn northd_release(replica: &sbclient::Replica) -> Option<String> {
    let version = northd_internal_version(replica)?;
    let mut parts = version.split(['-', '.']);
    let (major, minor) = (parts.next()?, parts.next()?);
    let two_digits = |p: &str| p.len() == 2 && p.bytes().all(|b| b.is_ascii_digit());
    (two_digits(major) && two_digits(minor)).then(|| format!("{major}.{minor}"))
}

#[cfg(test)]
mod tests {
    fn release_of(version: &str) -> Option<String> {
        let mut sb = crate::southbound::Southbound::default();
        sb.load_json(&format!(
            r#"{{"caption":"SB_Global table","headings":["_uuid","options"],"data":[[["uuid","00000000-0000-4000-8000-000000000001"],["map",[["northd_internal_version","{version}"]]]]]}}"#
        ))
        .expect("loads");
        super::northd_release(&sb.replica)
    }

    #[test]
    fn the_release_is_read_from_the_internal_version() {
        assert_eq!(release_of("25.03.0-20.41.0-76.8").as_deref(), Some("25.03"));
        assert_eq!(release_of("23.03.1-20.27.0-70.6").as_deref(), Some("23.03"));
        assert_eq!(release_of("garbage"), None);
        let empty = crate::southbound::Southbound::default();
        assert_eq!(super::northd_release(&empty.replica), None);
    }
}
