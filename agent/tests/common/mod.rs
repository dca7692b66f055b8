//! Helpers shared by the compiler's tests: the reference data loaded into the typed
//! Southbound replica, and compiling it.
#![allow(dead_code)]

use agent::compile::{compile_all, CompileReport, Context};
use agent::lflow::flows::MatchCache;
use agent::lflow::layout::TableLayout;
use agent::southbound::Southbound;
use agent::view::{Ids, SbView};

pub const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");

/// The reference sandbox (tests/data/sandbox/*.json), with or without its logical flows.
pub fn sandbox(with_lflows: bool) -> Southbound {
    let mut sb = Southbound::default();
    let mut files: Vec<_> = std::fs::read_dir(format!("{DATA}/sandbox"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    if with_lflows {
        files.push(format!("{DATA}/lflows_final.json").into());
    }
    for f in files {
        sb.load_json(&std::fs::read_to_string(&f).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    }
    sb
}

/// JSON test input whose row ids are short names (`["uuid","c1"]`) with the names turned
/// into uuids (the name's bytes as the last hex digits), then loaded.
pub fn load_short(text: &str) -> Southbound {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(r#"["uuid",""#) {
        let start = i + r#"["uuid",""#.len();
        out.push_str(&rest[..start]);
        let end = start + rest[start..].find('"').unwrap();
        out.push_str(&short_uuid(&rest[start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    let mut sb = Southbound::default();
    sb.load_json(&out).unwrap();
    sb
}

/// The uuid `load_short` gives a short name (a real uuid is kept).
pub fn short_uuid(name: &str) -> String {
    if name.len() == 36 {
        return name.to_owned();
    }
    let hex = hex::encode(name);
    format!("00000000-0000-0000-0000-{hex:0>12}")
}

/// Everything the chassis installs, compiled on one thread.
pub fn compile(
    sb: &Southbound,
    chassis: &str,
    ids: &Ids,
    layout: &TableLayout,
    limit: usize,
) -> CompileReport {
    let view = SbView::new(sb, chassis, ids);
    let cache = MatchCache::default();
    let cx = Context {
        view: &view,
        layout,
        cache: &cache,
        only_dp: None,
        limit,
    };
    compile_all(&cx, 1)
}

/// The flows of the report as `ovs-ofctl` lines without the leading space.
pub fn lines(r: &CompileReport) -> Vec<String> {
    r.flows()
        .iter()
        .map(|f| f.to_string().trim().to_owned())
        .collect()
}
