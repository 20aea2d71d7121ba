//! The one-way house (issues 24 and 40): the crate graph of the workspace is the layer map of
//! `doc/architecture.md`.
//!
//! The layers are crates, so the compiler already refuses a lower crate naming a higher one that
//! it does not depend on; what this test holds is that the dependencies *declared* in the
//! manifests are the documented ones. The map is read from the fenced block in
//! `doc/architecture.md` that starts with "```text layers", so the document and this test can
//! never disagree. Each line `L<n> <name> <crate> <crate> …` puts workspace crates in layer n;
//! `never A -> B` forbids one edge within the rule; `only A uses X Y …` keeps the external
//! crates X, Y … (clap, anyhow) out of every crate but A. The rule, checked over the graph
//! `cargo metadata --no-deps` reads from the manifests (dependencies, build- and
//! dev-dependencies alike, so no test climbs either):
//! - every workspace crate is in exactly one layer, and every crate of the map is one;
//! - a crate depends only on crates of a lower layer or of its own, and on no `never` edge;
//! - the graph has no cycle (so same-layer edges go one way too);
//! - an `only` dependency appears in no other crate.
//!
//! Fixtures under `tests/fixtures/layers/` are small real workspaces (never built, only read by
//! `cargo metadata`) with a deliberate upward edge, a forbidden edge, a test-only edge that
//! climbs, an unmapped crate and a misplaced external crate, so each part of the rule is shown
//! to fail; one keeps the rule and shows it passing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The layer map: crate → (layer number, layer name); the forbidden edges; the external crates
/// only one crate may use.
struct Layers {
    of: BTreeMap<String, (u32, String)>,
    never: Vec<(String, String)>,
    only: Vec<(String, String)>,
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
        only: Vec::new(),
    };
    for line in body.lines() {
        let words: Vec<&str> = line
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|w| !w.is_empty())
            .collect();
        match words.as_slice() {
            ["never", a, "->", b] => layers.never.push((a.to_string(), b.to_string())),
            ["only", a, "uses", deps @ ..] if !deps.is_empty() => {
                layers.only.extend(deps.iter().map(|d| (a.to_string(), d.to_string())))
            }
            [level, name, crates @ ..] if level.starts_with('L') => {
                let n: u32 = level[1..]
                    .parse()
                    .unwrap_or_else(|_| panic!("layer number in {line:?}"));
                for c in crates {
                    let before = layers.of.insert(c.to_string(), (n, name.to_string()));
                    assert!(before.is_none(), "{c} is in two layers");
                }
            }
            [] => {}
            _ => panic!("unreadable line in the layers block: {line:?}"),
        }
    }
    layers
}

/// One declared dependency of a workspace crate.
struct Dep {
    name: String,
    /// "normal", "dev" or "build".
    kind: String,
    /// Whether it is another crate of the same workspace (a path dependency).
    local: bool,
}

/// The workspace crates under `root` and their declared dependencies, from
/// `cargo metadata --no-deps` (reads manifests only: no build, no registry).
fn crate_graph(root: &Path) -> BTreeMap<String, Vec<Dep>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--no-deps", "--offline", "--format-version", "1"])
        .current_dir(root)
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata in {}: {}",
        root.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let members: BTreeSet<&str> = meta["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    let mut graph = BTreeMap::new();
    for p in meta["packages"].as_array().unwrap() {
        if !members.contains(p["id"].as_str().unwrap()) {
            continue;
        }
        let deps = p["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| Dep {
                name: d["name"].as_str().unwrap().to_string(),
                kind: d["kind"].as_str().unwrap_or("normal").to_string(),
                local: d.get("path").is_some_and(|p| p.is_string()),
            })
            .collect();
        graph.insert(p["name"].as_str().unwrap().to_string(), deps);
    }
    graph
}

/// Every violation of the rule, one sentence each (empty when the workspace keeps it).
fn violations(root: &Path, layers: &Layers) -> Vec<String> {
    let graph = crate_graph(root);
    let mut out = Vec::new();
    for c in graph.keys() {
        if !layers.of.contains_key(c) {
            out.push(format!("crate {c} is in no layer of the map"));
        }
    }
    for c in layers.of.keys() {
        if !graph.contains_key(c) {
            out.push(format!("the map names {c}, which is not a crate of the workspace"));
        }
    }
    for (from, deps) in &graph {
        for d in deps {
            let to = &d.name;
            if d.local {
                if let (Some((a, an)), Some((b, bn))) = (layers.of.get(from), layers.of.get(to)) {
                    if b > a {
                        out.push(format!(
                            "{from} (L{a} {an}) depends on {to} (L{b} {bn}), a higher layer ({} dependency)",
                            d.kind
                        ));
                    }
                }
                if layers.never.iter().any(|(x, y)| x == from && y == to) {
                    out.push(format!("{from} depends on {to}, which the map forbids"));
                }
            }
            if let Some((owner, _)) = layers.only.iter().find(|(o, x)| x == to && o != from) {
                out.push(format!("{from} depends on {to}, which only {owner} may use"));
            }
        }
    }
    out.extend(cycles(&graph));
    out
}

/// One sentence per cycle among the workspace's crates (each cycle reported once).
fn cycles(graph: &BTreeMap<String, Vec<Dep>>) -> Vec<String> {
    fn visit(
        c: &str,
        graph: &BTreeMap<String, Vec<Dep>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut BTreeSet<Vec<String>>,
    ) {
        if let Some(i) = path.iter().position(|p| p == c) {
            let mut cycle = path[i..].to_vec();
            let min = (0..cycle.len()).min_by_key(|&k| cycle[k].clone()).unwrap();
            cycle.rotate_left(min);
            found.insert(cycle);
            return;
        }
        if done.contains(c) {
            return;
        }
        path.push(c.to_string());
        for d in graph.get(c).into_iter().flatten().filter(|d| d.local) {
            visit(&d.name, graph, path, done, found);
        }
        path.pop();
        done.insert(c.to_string());
    }
    let mut found = BTreeSet::new();
    let mut done = BTreeSet::new();
    for c in graph.keys() {
        visit(c, graph, &mut Vec::new(), &mut done, &mut found);
    }
    found
        .into_iter()
        .map(|c| format!("cycle: {} -> {}", c.join(" -> "), c[0]))
        .collect()
}

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> (PathBuf, Layers) {
    let dir = manifest().join("tests/fixtures/layers").join(name);
    let doc = std::fs::read_to_string(dir.join("architecture.md")).unwrap();
    (dir, read_layers(&doc))
}

#[test]
fn the_workspace_crate_graph_is_the_layer_map_of_architecture_md() {
    let doc = std::fs::read_to_string(manifest().join("doc/architecture.md")).unwrap();
    let layers = read_layers(&doc);
    assert!(layers.of.len() >= 5, "at least five crates in the map");
    let v = violations(&manifest(), &layers);
    assert!(v.is_empty(), "the crate graph breaks the layer map:\n{}", v.join("\n"));
}

#[test]
fn a_deliberate_upward_edge_and_an_unmapped_crate_fail() {
    let (dir, layers) = fixture("upward");
    let v = violations(&dir, &layers);
    assert!(
        v.iter()
            .any(|s| s == "low (L0 bottom) depends on high (L2 top), a higher layer (normal dependency)"),
        "{v:?}"
    );
    assert!(v.iter().any(|s| s == "crate stray is in no layer of the map"), "{v:?}");
    assert_eq!(v.len(), 2, "only the two planted faults: {v:?}");
}

#[test]
fn a_forbidden_edge_a_climbing_dev_dependency_and_a_misplaced_external_crate_fail() {
    let (dir, layers) = fixture("never");
    let v = violations(&dir, &layers);
    assert!(
        v.iter().any(|s| s == "report depends on suites, which the map forbids"),
        "{v:?}"
    );
    assert!(
        v.iter()
            .any(|s| s == "store (L1 middle) depends on report (L2 top), a higher layer (dev dependency)"),
        "{v:?}"
    );
    assert!(
        v.iter().any(|s| s == "report depends on clap, which only core may use"),
        "{v:?}"
    );
    // store -> report (dev) and report -> store make a cycle, which is reported too.
    assert!(v.iter().any(|s| s == "cycle: report -> store -> report"), "{v:?}");
    assert_eq!(v.len(), 4, "{v:?}");
}

#[test]
fn a_workspace_that_keeps_the_map_passes() {
    let (dir, layers) = fixture("quiet");
    let v = violations(&dir, &layers);
    assert!(v.is_empty(), "{v:?}");
}
