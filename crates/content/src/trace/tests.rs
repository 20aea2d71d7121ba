use super::*;

fn sample() -> Trace {
    let text = std::fs::read_to_string(format!(
        "{}/../../tests/fixtures/replay/strace-6.1-threads.txt",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let t = Trace::from_strace_text(&text, std::path::Path::new("/tmp/fsbench-strace-root"), "threads").unwrap();
    Trace {
        header: Header {
            wall_s: 0.5,
            marks: vec![Mark {
                name: "second".into(),
                at_s: 0.01,
            }],
            ..t.header
        },
        tree: vec![Entry {
            path: "x".into(),
            kind: EntryKind::File,
            size: 10,
            mode: 0o644,
            target: None,
        }],
        calls: t.calls,
    }
}

#[test]
fn a_trace_reads_back_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.jsonl");
    let t = sample();
    t.write(&p).unwrap();
    assert_eq!(Trace::read(&p).unwrap(), t);
    assert_eq!(t.tree_bytes(), 10);
    assert_eq!(t.counts()[&Kind::Fsync], 20);
}

#[test]
fn truncated_foreign_and_damaged_traces_are_refused_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.jsonl");
    sample().write(&p).unwrap();
    let text = std::fs::read_to_string(&p).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let case = |body: String| {
        std::fs::write(&p, body).unwrap();
        Trace::read(&p).unwrap_err().to_string()
    };
    let e = case(lines[..lines.len() - 5].join("\n"));
    assert!(e.contains("truncated: no end line"), "{e}");
    let e = case(text[..text.len() - 40].to_string());
    assert!(e.contains("truncated: line"), "{e}");
    let e = case(format!(
        "{}\n{}",
        lines[..lines.len() - 1].join("\n"),
        "{\"end\":{\"entries\":1,\"calls\":3}}"
    ));
    assert!(e.contains("end line counts"), "{e}");
    let e = case("7 1.5 openat(AT_FDCWD</x>, \"a\", O_RDONLY) = 3</x/a> <0.1>\n".into());
    assert!(e.contains("not an fsbench trace"), "{e}");
    let e = case(String::new());
    assert!(e.contains("empty file"), "{e}");
    let now = format!("\"version\":{VERSION}");
    let e = case(text.replacen(&now, "\"version\":99", 1));
    assert!(e.contains("version 99"), "{e}");
    let e = case(text.replacen(&now, "\"version\":0", 1));
    assert!(
        e.contains(&format!("version 0 (this fsbench reads versions 1 to {VERSION})")),
        "{e}"
    );
    let e = case(text.replacen("\"path\":\"work\"", "\"path\":\"../work\"", 1));
    assert!(e.contains("not normalised"), "{e}");
    let e = case(text.replacen("\"path\":\"x\"", "\"path\":\"/etc/x\"", 1));
    assert!(e.contains("absolute"), "{e}");
    // A handle used before the open that makes it.
    let first_open = lines
        .iter()
        .position(|l| l.contains("\"kind\":\"open\"") && !l.contains("errno"))
        .unwrap();
    let mut moved: Vec<&str> = lines.clone();
    let l = moved.remove(first_open);
    let use_at = moved
        .iter()
        .position(|l| l.contains("\"handle\":0") && !l.contains("\"kind\":\"open\""))
        .unwrap();
    moved.insert(use_at + 1, l);
    let e = case(moved.join("\n"));
    assert!(e.contains("before it is opened") || e.contains("expected"), "{e}");
    let e = case(format!("{text}{{\"end\":{{\"entries\":1,\"calls\":3}}}}\n"));
    assert!(e.contains("after the end"), "{e}");
}

#[test]
fn a_captured_tree_lists_parents_first_and_keeps_only_safe_links() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::create_dir_all(r.join("a/b")).unwrap();
    std::fs::write(r.join("a/b/f"), b"12345").unwrap();
    std::os::unix::fs::symlink("b/f", r.join("a/in")).unwrap();
    std::os::unix::fs::symlink("../../etc", r.join("a/out")).unwrap();
    std::os::unix::fs::symlink("/etc", r.join("abs")).unwrap();
    std::fs::write(r.join("skip.me"), b"x").unwrap();
    let skip = r.join("skip.me");
    let t = tree::capture(r, &[skip.as_path()], false).unwrap();
    let paths: Vec<&str> = t.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["a", "a/b", "a/b/f", "a/in", "a/out", "abs"]);
    assert_eq!(t[2].size, 5);
    assert_eq!(t[3].target.as_deref(), Some("b/f"));
    assert_eq!(t[4].target, None, "escapes the root");
    assert_eq!(t[5].target, None, "absolute");
    let h = tree::capture(r, &[], true).unwrap();
    assert_eq!(h.len(), 7);
    let link = h
        .iter()
        .find(|e| e.kind == EntryKind::Symlink && e.target.is_some())
        .unwrap();
    assert_eq!(
        link.target.as_deref(),
        Some(format!("{}/{}", resolve::hash_name("b"), resolve::hash_name("f")).as_str())
    );
    assert!(h.iter().all(|e| !e.path.contains('a') || e.path.len() >= 16));
}

#[test]
fn a_version_1_trace_still_loads_without_the_in_call_overhead() {
    // Version 1 wrote no overhead_in_call_s; versions 2 and later do.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.jsonl");
    let mut t = sample();
    t.header.overhead_s = Some(3e-5);
    t.header.overhead_in_call_s = Some(1e-5);
    t.write(&p).unwrap();
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(
        text.contains(&format!("\"version\":{VERSION}")) && text.contains("\"overhead_in_call_s\":0.00001"),
        "{text}"
    );
    let v1 = text
        .replacen(&format!("\"version\":{VERSION}"), "\"version\":1", 1)
        .replacen(",\"overhead_in_call_s\":0.00001", "", 1);
    std::fs::write(&p, v1).unwrap();
    let back = Trace::read(&p).unwrap();
    assert_eq!((back.header.version, back.header.overhead_in_call_s), (1, None));
    assert_eq!(back.header.overhead_s, Some(3e-5));
    assert_eq!(back.calls, t.calls);
}
