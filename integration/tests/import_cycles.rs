//! No import cycle among the modules of `agent` and `integration`: a module that uses
//! another (through `crate::`, `super::`, `self::` or a child's name) must not be used by
//! it, directly or around a circle. A parent's own `mod`/`pub use` of its children is
//! containment, not use, and is left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type ModPath = Vec<String>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            // Binaries are crates of their own.
            if path.file_name().is_some_and(|n| n != "bin") {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of each file under `src` (`lib.rs` is the root).
fn modules(src: &Path) -> BTreeMap<ModPath, PathBuf> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut out = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(src).expect("under src");
        let mut parts: ModPath = rel
            .iter()
            .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
            .collect();
        match parts.last().map(String::as_str) {
            Some("main") if parts.len() == 1 => continue,
            Some("lib" | "mod") => {
                parts.pop();
            }
            _ => {}
        }
        out.insert(parts, file);
    }
    out
}

/// The code without comments and string literals (their text names no module).
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '"' => {
                let mut escaped = false;
                for c in chars.by_ref() {
                    match c {
                        '\\' if !escaped => escaped = true,
                        '"' if !escaped => break,
                        _ => escaped = false,
                    }
                }
                out.push_str("\"\"");
            }
            c => out.push(c),
        }
    }
    out
}

/// Expands one `use` tree (`a::{b, c::{d, e}}`) into its paths.
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        return vec![tree.split(" as ").next().unwrap_or(tree).trim().to_owned()];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .flat_map(expand)
        .map(|p| format!("{prefix}{p}"))
        .collect()
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Every path the file's code names: `use` trees expanded, and inline
/// `crate::`/`super::`/`self::` paths.
fn paths(code: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let before_ok = rest[..at].chars().last().is_none_or(|c| !is_ident(c));
        let end = rest[at..].find(';').map_or(rest.len(), |e| at + e);
        if before_ok {
            let is_reexport =
                rest[..at].trim_end().ends_with("pub") || rest[..at].trim_end().ends_with(')');
            for p in expand(&rest[at + 4..end]) {
                out.push((p.split_whitespace().collect::<String>(), is_reexport));
            }
        }
        rest = &rest[(at + 4).min(rest.len())..];
    }
    for root in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(i) = code[from..].find(root) {
            let at = from + i;
            let before_ok = code[..at]
                .chars()
                .last()
                .is_none_or(|c| !is_ident(c) && c != ':');
            let end = code[at..]
                .find(|c: char| !(is_ident(c) || c == ':'))
                .map_or(code.len(), |e| at + e);
            if before_ok {
                out.push((code[at..end].to_owned(), false));
            }
            from = end.max(at + root.len());
        }
    }
    out
}

/// The module a path names: the longest module prefix of it, read from `module`.
fn resolve(path: &str, module: &ModPath, modules: &BTreeMap<ModPath, PathBuf>) -> Option<ModPath> {
    let mut segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let mut base: ModPath = match segs.first().copied() {
        Some("crate") => {
            segs.remove(0);
            Vec::new()
        }
        Some("self") => {
            segs.remove(0);
            module.clone()
        }
        Some("super") => {
            let mut b = module.clone();
            while segs.first() == Some(&"super") {
                segs.remove(0);
                b.pop();
            }
            b
        }
        Some(first) => {
            // A child module of this one, named without `self::`.
            let mut child = module.clone();
            child.push(first.to_owned());
            if !modules.contains_key(&child) {
                return None;
            }
            module.clone()
        }
        None => return None,
    };
    // The longest prefix that is a module (the path's base is one, or it names nothing).
    let mut found = modules.contains_key(&base).then(|| base.clone());
    for seg in segs {
        base.push(seg.to_owned());
        if !modules.contains_key(&base) {
            break;
        }
        found = Some(base.clone());
    }
    found
}

fn edges(
    src: &Path,
) -> (
    BTreeMap<ModPath, PathBuf>,
    BTreeMap<ModPath, BTreeSet<ModPath>>,
) {
    let modules = modules(src);
    let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for (module, file) in &modules {
        let code = code_only(&std::fs::read_to_string(file).expect("read"));
        for (path, reexport) in paths(&code) {
            let Some(target) = resolve(&path, module, &modules) else {
                continue;
            };
            // A module's own children (and a re-export of them) are containment.
            let contains = target.len() > module.len() && target.starts_with(module);
            if target != *module && !contains && !(reexport && target.starts_with(module)) {
                edges.entry(module.clone()).or_default().insert(target);
            }
        }
    }
    (modules, edges)
}

/// Strongly connected components of more than one module (Tarjan).
fn cycles(edges: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<Vec<ModPath>> {
    struct State<'a> {
        edges: &'a BTreeMap<ModPath, BTreeSet<ModPath>>,
        index: BTreeMap<&'a ModPath, usize>,
        low: BTreeMap<&'a ModPath, usize>,
        stack: Vec<&'a ModPath>,
        on_stack: BTreeSet<&'a ModPath>,
        out: Vec<Vec<ModPath>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a ModPath) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(next) = s.edges.get(v) {
            for w in next {
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let lw = s.low[w];
                    let lv = s.low.get_mut(v).expect("low");
                    *lv = (*lv).min(lw);
                } else if s.on_stack.contains(w) {
                    let iw = s.index[w];
                    let lv = s.low.get_mut(v).expect("low");
                    *lv = (*lv).min(iw);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut scc = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                scc.push(w.clone());
                if w == v {
                    break;
                }
            }
            if scc.len() > 1 {
                scc.sort();
                s.out.push(scc);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

fn report(krate: &str) -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(krate)
        .join("src");
    let (_, edges) = edges(&src);
    cycles(&edges)
        .into_iter()
        .map(|scc| {
            let names: Vec<String> = scc
                .iter()
                .map(|m| format!("{krate}::{}", m.join("::")))
                .collect();
            let ties: Vec<String> = scc
                .iter()
                .flat_map(|a| {
                    edges[a]
                        .iter()
                        .filter(|b| scc.contains(b))
                        .map(move |b| format!("{} -> {}", a.join("::"), b.join("::")))
                })
                .collect();
            format!("{} ({})", names.join(", "), ties.join("; "))
        })
        .collect()
}

#[test]
fn the_use_tree_is_expanded() {
    let mut got = expand("crate::pinctrl::{buffer::X, handlers::{A, B as C}}");
    got.sort();
    assert_eq!(
        got,
        [
            "crate::pinctrl::buffer::X",
            "crate::pinctrl::handlers::A",
            "crate::pinctrl::handlers::B"
        ]
    );
}

#[test]
fn a_cycle_is_found() {
    let m = |s: &str| s.split("::").map(str::to_owned).collect::<ModPath>();
    let edges: BTreeMap<ModPath, BTreeSet<ModPath>> = [
        (m("a"), [m("b")].into()),
        (m("b"), [m("c")].into()),
        (m("c"), [m("a")].into()),
        (m("d"), [m("a")].into()),
    ]
    .into();
    assert_eq!(cycles(&edges), vec![vec![m("a"), m("b"), m("c")]]);
}

#[test]
fn no_import_cycles_in_agent_and_integration() {
    let found: Vec<String> = ["agent", "integration"]
        .iter()
        .flat_map(|k| report(k))
        .collect();
    assert!(
        found.is_empty(),
        "{} import cycle(s):\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn known_imports_are_read() {
    // The check is only as good as the edges it reads: a few it must see.
    let m = |s: &str| s.split("::").map(str::to_owned).collect::<ModPath>();
    let src = |k: &str| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(k)
            .join("src")
    };
    let (_, agent) = edges(&src("agent"));
    assert!(agent[&m("engine::core")].contains(&m("engine::inputs")));
    assert!(agent[&m("pinctrl::dhcp")].contains(&m("pinctrl::packet_in")));
    let (_, integration) = edges(&src("integration"));
    assert!(integration[&m("lab")].contains(&m("central")));
    assert!(integration[&m("chassis")].contains(&m("ovs")));
}
