//! The one-way house (issue 24): the layers of `doc/architecture.md`, enforced over `src/`.
//!
//! The layer map is read from the fenced block in `doc/architecture.md` that starts with
//! "```text layers", so the document and this test can never disagree. Each line
//! `L<n> <name> <module> <module> …` puts top-level modules (`src/X.rs` or `src/X/`) in layer n;
//! a line `never A -> B` forbids one edge within the rule. The rule, checked over the non-test
//! code of every file under `src/`:
//! - every top-level module is in exactly one layer;
//! - a module imports (`crate::x`, `use crate::{x, …}`, `super::…` that climbs to the crate root)
//!   only modules of its own layer or a lower one, and no `never` edge;
//! - the graph of top-level modules has no cycle (so same-layer imports go one way too).
//!
//! Comments, string and character literals are blanked before scanning (doc links such as
//! [`crate::cli`] are not imports), and an item behind `#[cfg(test)]` (a `mod tests { … }`, a
//! `mod tests;` file, a `use`, a `fn`) is left out: tests may reach anywhere. Fixtures under
//! `tests/fixtures/layers/` are small trees with a deliberate upward import, a cycle, and
//! imports that must not count, so each part of the rule is shown to fail.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layer map: module → (layer number, layer name); plus the forbidden edges.
struct Layers {
    of: BTreeMap<String, (u32, String)>,
    never: Vec<(String, String)>,
}

/// Reads the "```text layers" block of an architecture document.
fn read_layers(doc: &str) -> Layers {
    let start = doc
        .find("```text layers")
        .expect("a ```text layers block in the document");
    let block = &doc[start..];
    let body = &block[block.find('\n').unwrap() + 1..];
    let body = &body[..body.find("```").expect("the layers block closes")];
    let mut layers = Layers {
        of: BTreeMap::new(),
        never: Vec::new(),
    };
    for line in body.lines() {
        let words: Vec<&str> = line
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|w| !w.is_empty())
            .collect();
        match words.as_slice() {
            ["never", a, "->", b] => layers.never.push((a.to_string(), b.to_string())),
            [level, name, modules @ ..] if level.starts_with('L') => {
                let n: u32 = level[1..]
                    .parse()
                    .unwrap_or_else(|_| panic!("layer number in {line:?}"));
                for m in modules {
                    let m = m.trim_end_matches('/').to_string();
                    let before = layers.of.insert(m.clone(), (n, name.to_string()));
                    assert!(before.is_none(), "{m} is in two layers");
                }
            }
            [] => {}
            _ => panic!("unreadable line in the layers block: {line:?}"),
        }
    }
    layers
}

/// `text` with comments, string literals and character literals replaced by spaces (newlines
/// kept, so positions and lines survive).
fn blank_comments_and_strings(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_before(&b, i) {
            // A raw string: r"…", r#"…"#, …
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let close: String = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
            let rest: String = b[j + 1..].iter().collect();
            let len = rest
                .find(&close)
                .map(|k| rest[..k].chars().count())
                .unwrap_or(rest.chars().count());
            let end = (j + 1 + len + close.chars().count()).min(b.len());
            for &ch in &b[i..end] {
                out.push(blank(ch));
            }
            i = end;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < b.len() {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' && is_char_literal(&b, i) {
            out.push(' ');
            i += 1;
            while i < b.len() && b[i] != '\'' {
                if b[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                out.push(' ');
                i += 1;
            }
            out.push(' ');
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_before(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

/// A quote at `i` starts a character literal (`'x'`, `'\n'`, `'\u{1F600}'`), not a lifetime.
fn is_char_literal(b: &[char], i: usize) -> bool {
    matches!((b.get(i + 1), b.get(i + 2)), (Some('\\'), _) | (Some(_), Some('\'')))
}

/// The end (exclusive) of the item that starts at or after `from`: a `;` before any `{`, or the
/// brace that closes the first `{`.
fn item_end(code: &[char], from: usize) -> usize {
    let mut i = from;
    let mut depth = 0usize;
    while i < code.len() {
        match code[i] {
            ';' if depth == 0 => return i + 1,
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    code.len()
}

/// Blanked code without the items behind `#[cfg(test)]`, and the names of `mod x;` items that
/// were behind one (their files are test code too).
fn non_test_code(text: &str) -> (String, Vec<String>) {
    let code: Vec<char> = blank_comments_and_strings(text).chars().collect();
    let mut out = String::with_capacity(code.len());
    let mut test_mods = Vec::new();
    let marker: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut i = 0;
    while i < code.len() {
        if code[i..].starts_with(&marker) {
            let end = item_end(&code, i + marker.len());
            let item: String = code[i + marker.len()..end].iter().collect();
            let words: Vec<&str> = item.split_whitespace().collect();
            if let Some(p) = words.iter().position(|w| *w == "mod") {
                if let Some(name) = words.get(p + 1) {
                    if item.trim_end().ends_with(';') {
                        test_mods.push(name.trim_end_matches(';').to_string());
                    }
                }
            }
            out.extend(code[i..end].iter().map(|&c| if c == '\n' { '\n' } else { ' ' }));
            i = end;
        } else {
            out.push(code[i]);
            i += 1;
        }
    }
    (out, test_mods)
}

/// Every `.rs` file under `src` with its top-level module and its depth below `src`
/// (`src/x.rs` and `src/x/mod.rs` are depth 0 inside module x), test files left out.
fn source_files(src: &Path) -> Vec<(String, PathBuf, usize)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(src, &mut files);
    files.sort();
    // Files declared as `#[cfg(test)] mod x;` are test code.
    let mut test_files: BTreeSet<PathBuf> = BTreeSet::new();
    for f in &files {
        let (_, mods) = non_test_code(&std::fs::read_to_string(f).unwrap());
        let dir = if f.file_name().is_some_and(|n| n == "mod.rs" || n == "lib.rs") {
            f.parent().unwrap().to_path_buf()
        } else {
            f.with_extension("")
        };
        for m in mods {
            test_files.insert(dir.join(format!("{m}.rs")));
            test_files.insert(dir.join(&m).join("mod.rs"));
        }
    }
    files
        .into_iter()
        .filter(|f| !test_files.contains(f))
        .filter_map(|f| {
            let rel = f.strip_prefix(src).unwrap().to_path_buf();
            let parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            let top = parts[0].trim_end_matches(".rs").to_string();
            if parts.len() == 1 && (top == "lib" || top == "main") {
                return None;
            }
            let last_is_mod = parts.last().is_some_and(|p| p == "mod.rs");
            let depth = parts.len() - 1 - usize::from(last_is_mod);
            Some((top, f, depth))
        })
        .collect()
}

/// The first path segment after each `crate::` (braced groups expanded) and after each
/// `super::` chain that climbs to the crate root from a file `depth` modules below its top.
fn imported_tops(code: &str, depth: usize) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let ident_end = |s: &str| s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len());
    let mut take = |rest: &str| {
        let rest = rest.trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            // Top-level items of the group: split on commas outside nested braces.
            let mut depth = 0;
            let mut start = 0;
            let close = group.char_indices().find_map(|(k, c)| {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => return Some(k),
                    '}' => depth -= 1,
                    _ => {}
                }
                None
            });
            let group = &group[..close.unwrap_or(group.len())];
            depth = 0;
            let mut items = Vec::new();
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        items.push(&group[start..k]);
                        start = k + 1;
                    }
                    _ => {}
                }
            }
            items.push(&group[start..]);
            for item in items {
                let item = item.trim();
                let name = &item[..ident_end(item)];
                if !name.is_empty() && name != "self" {
                    out.insert(name.to_string());
                }
            }
        } else {
            let name = &rest[..ident_end(rest)];
            if !name.is_empty() {
                out.insert(name.to_string());
            }
        }
    };
    for (at, _) in code.match_indices("crate::") {
        if at > 0 && code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        take(&code[at + "crate::".len()..]);
    }
    // `super::` climbs one module; from depth d, d + 1 of them reach the crate root.
    let climb = "super::".repeat(depth + 1);
    for (at, _) in code.match_indices(&climb) {
        if at > 0 && code[..at].ends_with("super::") {
            continue;
        }
        take(&code[at + climb.len()..]);
    }
    out
}

/// The import graph between top-level modules of `src` (non-test code), with one file that
/// makes each edge.
fn import_graph(src: &Path) -> BTreeMap<String, BTreeMap<String, PathBuf>> {
    let files = source_files(src);
    let tops: BTreeSet<String> = files.iter().map(|(t, _, _)| t.clone()).collect();
    let mut graph: BTreeMap<String, BTreeMap<String, PathBuf>> = BTreeMap::new();
    for (top, file, depth) in &files {
        graph.entry(top.clone()).or_default();
        let (code, _) = non_test_code(&std::fs::read_to_string(file).unwrap());
        for to in imported_tops(&code, *depth) {
            if to != *top && tops.contains(&to) {
                graph.get_mut(top).unwrap().entry(to).or_insert_with(|| file.clone());
            }
        }
    }
    graph
}

/// Every violation of the rule, one sentence each (empty when the tree keeps it).
fn violations(src: &Path, layers: &Layers) -> Vec<String> {
    let graph = import_graph(src);
    let mut out = Vec::new();
    for m in graph.keys() {
        if !layers.of.contains_key(m) {
            out.push(format!("module {m} is in no layer of the map"));
        }
    }
    for m in layers.of.keys() {
        if !graph.contains_key(m) {
            out.push(format!("the map names {m}, which is not a module of src/"));
        }
    }
    for (from, edges) in &graph {
        for (to, file) in edges {
            if let (Some((a, an)), Some((b, bn))) = (layers.of.get(from), layers.of.get(to)) {
                if b > a {
                    out.push(format!(
                        "{from} (L{a} {an}) imports {to} (L{b} {bn}), a higher layer, in {}",
                        file.display()
                    ));
                }
            }
            if layers.never.iter().any(|(x, y)| x == from && y == to) {
                out.push(format!(
                    "{from} imports {to}, which the map forbids, in {}",
                    file.display()
                ));
            }
        }
    }
    out.extend(cycles(&graph));
    out
}

/// One sentence per cycle found by a depth-first search (each cycle reported once).
fn cycles(graph: &BTreeMap<String, BTreeMap<String, PathBuf>>) -> Vec<String> {
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeMap<String, PathBuf>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut BTreeSet<Vec<String>>,
    ) {
        if let Some(i) = path.iter().position(|p| p == m) {
            let mut cycle = path[i..].to_vec();
            let min = cycle
                .iter()
                .enumerate()
                .min_by_key(|(_, n)| *n)
                .map(|(k, _)| k)
                .unwrap();
            cycle.rotate_left(min);
            found.insert(cycle);
            return;
        }
        if done.contains(m) {
            return;
        }
        path.push(m.to_string());
        for next in graph.get(m).into_iter().flat_map(|e| e.keys()) {
            visit(next, graph, path, done, found);
        }
        path.pop();
        done.insert(m.to_string());
    }
    let mut found = BTreeSet::new();
    let mut done = BTreeSet::new();
    for m in graph.keys() {
        visit(m, graph, &mut Vec::new(), &mut done, &mut found);
    }
    found
        .into_iter()
        .map(|c| format!("import cycle: {} -> {}", c.join(" -> "), c[0]))
        .collect()
}

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> (PathBuf, Layers) {
    let dir = manifest().join("tests/fixtures/layers").join(name);
    let layers = read_layers(&std::fs::read_to_string(dir.join("architecture.md")).unwrap());
    (dir.join("src"), layers)
}

#[test]
fn every_import_in_src_goes_down_the_layers_of_architecture_md() {
    let doc = std::fs::read_to_string(manifest().join("doc/architecture.md")).unwrap();
    let layers = read_layers(&doc);
    let graph = import_graph(&manifest().join("src"));
    // The scan sees imports at all: the report is built on the store.
    assert!(graph["report"].contains_key("store"), "{graph:?}");
    let v = violations(&manifest().join("src"), &layers);
    assert!(
        v.is_empty(),
        "the layers of doc/architecture.md are broken:\n{}",
        v.join("\n")
    );
}

#[test]
fn a_deliberate_upward_import_fails() {
    let (src, layers) = fixture("upward");
    let v = violations(&src, &layers);
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].starts_with("metric (L0 foundation) imports report (L2 report)"),
        "{v:?}"
    );
}

#[test]
fn a_cycle_within_one_layer_and_a_forbidden_edge_fail() {
    let (src, layers) = fixture("cycle");
    let v = violations(&src, &layers);
    assert!(
        v.iter().any(|s| s == "import cycle: engine -> provision -> engine"),
        "{v:?}"
    );
    assert!(
        v.iter()
            .any(|s| s.starts_with("report imports config, which the map forbids")),
        "{v:?}"
    );
    assert!(v.iter().any(|s| s == "module stray is in no layer of the map"), "{v:?}");
    assert_eq!(v.len(), 3, "{v:?}");
}

#[test]
fn tests_comments_strings_and_inner_supers_are_not_imports_but_a_climbing_super_is() {
    let (src, layers) = fixture("quiet");
    let graph = import_graph(&src);
    // engine/workloads/deep.rs climbs with super::super::super:: to the crate root: an import of units.
    assert!(graph["engine"].contains_key("units"), "{graph:?}");
    // Everything else that names app (a doc link, a string, a test module, a test file, a
    // #[cfg(test)] use, super:: within the engine) is not an import.
    assert!(!graph["engine"].contains_key("app"), "{graph:?}");
    assert!(violations(&src, &layers).is_empty(), "{:?}", violations(&src, &layers));
}
