//! The logical-flow language of each OVN release the agent speaks, as data: which symbols
//! exist in it and which it defines anew. One row per release; the compiler reads the row
//! of the release it compiles for (carried by its [`super::layout::TableLayout`]) and never
//! tests a version number.

use super::symtab::{symtab, Symbol};

#[derive(Debug, PartialEq, Eq)]
pub struct Dialect {
    /// `YY.MM`: symbols introduced by a later release do not exist in this one.
    pub release: &'static str,
    /// Symbols this release defines differently from the base: the name as written, and
    /// the table's name of this release's definition.
    pub redefined: &'static [(&'static str, &'static str)],
}

/// OVN 23.03 (Debian 12), the base.
pub static OVN_23_03: Dialect = Dialect {
    release: "23.03",
    redefined: &[],
};

/// OVN 25.03 (Debian 13).
pub static OVN_25_03: Dialect = Dialect {
    release: "25.03",
    redefined: &[
        ("igmp", "igmp@25.03"),
        ("mldv1", "mldv1@25.03"),
        ("mldv2", "mldv2@25.03"),
    ],
};

impl Dialect {
    /// The symbol `name` (as a match or action writes it) means in this release.
    pub fn symbol(&self, name: &str) -> Option<&'static Symbol> {
        let table_name = self
            .redefined
            .iter()
            .find(|(written, _)| *written == name)
            .map_or(name, |(_, t)| t);
        // Release names compare as text: YY.MM, zero-padded.
        symtab()
            .get(table_name)
            .filter(|s| s.since <= self.release && !(table_name == name && name.contains('@')))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_release_sees_its_own_symbols() {
        assert!(OVN_23_03.symbol("flags.tunnel_rx").is_none(), "25.03's");
        assert!(OVN_25_03.symbol("flags.tunnel_rx").is_some());
        let igmp = |d: &Dialect| match &d.symbol("igmp").unwrap().kind {
            super::super::symtab::SymKind::Predicate(text) => text.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(igmp(&OVN_23_03), "ip4 && ip.proto == 2");
        assert_eq!(igmp(&OVN_25_03), "ip4.mcast && ip.proto == 2");
        assert!(
            OVN_25_03.symbol("igmp@25.03").is_none(),
            "not a name to write"
        );
        assert!(OVN_23_03.symbol("reg0").is_some());
    }
}
