use super::*;
use crate::parsers::strace::parse;

const ROOT: &str = "/tmp/fsbench-strace-root";

fn fixture(name: &str) -> Vec<Syscall> {
    let p = format!("{}/../../tests/fixtures/replay/{name}", env!("CARGO_MANIFEST_DIR"));
    parse(&std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))).unwrap()
}

fn resolve(name: &str, hash: bool) -> Resolver {
    Resolver::new(Path::new(ROOT), Path::new(ROOT), hash).run(&fixture(name))
}

fn kinds(r: &Resolver) -> BTreeMap<Kind, u64> {
    let mut m = BTreeMap::new();
    for c in &r.calls {
        *m.entry(c.kind).or_insert(0) += 1;
    }
    m
}

#[test]
fn tar_extraction_resolves_to_its_creates_writes_and_closes() {
    let r = resolve("strace-6.1-tar-x.txt", false);
    let k = kinds(&r);
    assert_eq!(k.get(&Kind::Mkdir), Some(&1), "{k:?}");
    assert_eq!(k.get(&Kind::Write), Some(&2), "{k:?}");
    let creates: Vec<&Call> = r
        .calls
        .iter()
        .filter(|c| c.kind == Kind::Open && c.flags.contains("O_CREAT"))
        .collect();
    assert_eq!(creates.len(), 2);
    assert_eq!(creates[0].path.as_deref(), Some("src/b"));
    assert_eq!(creates[0].mode, Some(0o600));
    let w = r.calls.iter().find(|c| c.kind == Kind::Write).unwrap();
    assert_eq!((w.handle, w.len, w.result), (creates[0].handle, Some(6), 6));
    // Libraries, locales and /etc are outside the root.
    assert!(r.dropped["outside root"] > 50, "{:?}", r.dropped);
    // utimensat, fchown, fchmod on the new files are not in the trace, but counted.
    assert!(
        r.dropped.keys().any(|k| k.starts_with("unsupported ")),
        "{:?}",
        r.dropped
    );
    assert!(r.calls.windows(2).all(|w| w[0].start_s <= w[1].start_s));
    let closes = r.calls.iter().filter(|c| c.kind == Kind::Close).count();
    assert_eq!(closes, 3, "src/b, src/a and the O_PATH open of src");
    assert!(r.calls.iter().filter(|c| c.kind == Kind::Close).all(|c| c.last));
}

#[test]
fn threads_share_descriptors_and_paths_resolve_against_the_working_directory() {
    let r = resolve("strace-6.1-threads.txt", false);
    let k = kinds(&r);
    assert_eq!(k.get(&Kind::Fsync), Some(&20), "{k:?}");
    assert_eq!(k.get(&Kind::Rename), Some(&40), "{k:?}");
    assert_eq!(k.get(&Kind::Unlink), Some(&20), "{k:?}");
    assert_eq!(k.get(&Kind::Rmdir), Some(&1), "{k:?}");
    assert_eq!(k.get(&Kind::Mkdir), Some(&1), "{k:?}");
    let tids: std::collections::BTreeSet<u32> = r.calls.iter().map(|c| c.tid).collect();
    assert_eq!(tids.len(), 3);
    let rn = r.calls.iter().find(|c| c.kind == Kind::Rename).unwrap();
    assert_eq!(rn.path.as_deref(), Some("work/tmp00"));
    assert_eq!(rn.path2.as_deref(), Some("work/f00"));
    // The consumer's probes before each file exists failed and are kept as such.
    assert!(r
        .calls
        .iter()
        .any(|c| c.kind == Kind::Stat && c.errno.as_deref() == Some("ENOENT")));
    assert_eq!(r.dropped.get("unknown descriptor"), None, "{:?}", r.dropped);
}

#[test]
fn a_forked_child_inherits_the_redirection_and_closes_it_last() {
    let r = resolve("strace-6.1-sh-fork.txt", false);
    let open = r
        .calls
        .iter()
        .find(|c| c.kind == Kind::Open && c.path.as_deref() == Some("out.txt"))
        .unwrap();
    let h = open.handle;
    // cat (a vfork child) writes into out.txt through the shell's dup2'd descriptor 1.
    let cp: Vec<&Call> = r.calls.iter().filter(|c| c.kind == Kind::CopyFileRange).collect();
    assert_eq!(cp.len(), 2, "cat copies in.txt to out.txt with copy_file_range");
    assert_eq!((cp[0].handle2, cp[0].result, cp[1].result), (h, 5, 0));
    let closes: Vec<&Call> = r
        .calls
        .iter()
        .filter(|c| c.kind == Kind::Close && c.handle == h)
        .collect();
    assert!(closes.len() >= 2, "{closes:?}");
    assert_eq!(closes.iter().filter(|c| c.last).count(), 1, "{closes:?}");
    assert!(closes.last().unwrap().last);
    // `cd d && rm out.txt` resolves against the new working directory.
    assert!(r
        .calls
        .iter()
        .any(|c| c.kind == Kind::Unlink && c.path.as_deref() == Some("d/out.txt")));
    assert!(r
        .calls
        .iter()
        .any(|c| c.kind == Kind::Rename && c.path2.as_deref() == Some("d/out.txt")));
}

#[test]
fn hashed_names_keep_the_shape_and_hide_the_names() {
    let r = resolve("strace-6.1-threads.txt", true);
    let rn = r.calls.iter().find(|c| c.kind == Kind::Rename).unwrap();
    let (p, p2) = (rn.path.as_deref().unwrap(), rn.path2.as_deref().unwrap());
    assert_eq!(p.split('/').next(), p2.split('/').next(), "same directory");
    assert!(!p.contains("work") && !p.contains("tmp"));
    assert_eq!(p.split('/').next().unwrap(), hash_name("work"));
}

#[test]
fn normalise_never_climbs_above_the_root_directory() {
    assert_eq!(normalise(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
    assert_eq!(normalise(Path::new("/../..")), PathBuf::from("/"));
    let r = Resolver::new(Path::new("/r"), Path::new("/r"), false);
    assert_eq!(r.rel(Path::new("/r/x"), "../y"), Some("y".into()));
    assert_eq!(r.rel(Path::new("/r"), ".."), None);
    assert_eq!(r.rel(Path::new("/r"), "."), Some(".".into()));
    assert_eq!(
        r.rel(Path::new("/rx"), "a"),
        None,
        "a sibling with the root's prefix is outside"
    );
}

/// A real recording where the consumer's close of descriptor 3 started after the producer's
/// open started and before it returned 3: the open takes effect when it returns, so the close
/// is the old file's and every write and fsync of the new one keeps its handle.
#[test]
fn a_descriptor_freed_while_another_thread_opens_goes_to_the_new_file() {
    let syscalls = fixture("strace-6.1-threads-fdreuse.txt");
    let r = Resolver::new(Path::new(ROOT), Path::new(ROOT), false).run(&syscalls);
    let k = kinds(&r);
    assert_eq!(r.dropped.get("unknown descriptor"), None, "{:?}", r.dropped);
    assert_eq!(
        (k.get(&Kind::Write), k.get(&Kind::Fsync)),
        (Some(&20), Some(&20)),
        "{k:?}"
    );
    assert_eq!(k.get(&Kind::Read), Some(&40), "{k:?}");
    let t = crate::trace::Trace {
        header: crate::trace::Header {
            version: crate::trace::VERSION,
            tool: "strace 6.1".into(),
            command: vec![],
            root: ROOT.into(),
            wall_s: 0.1,
            overhead_s: None,
            overhead_in_call_s: None,
            timing: None,
            hashed_names: false,
            dropped: r.dropped.clone(),
            marks: vec![],
        },
        tree: vec![],
        calls: r.calls,
    };
    let dir = tempfile::tempdir().unwrap();
    t.write(&dir.path().join("t")).unwrap();
    crate::trace::Trace::read(&dir.path().join("t")).expect("handles numbered in open order");
}

/// A real recording of `tests/fixtures/replay/openat2.c`: an `openat2` that creates `sub/f`
/// (flags, mode and resolve in its `struct open_how`), a write and close through it, and one
/// that finds no `nope`.
#[test]
fn openat2_opens_with_the_flags_and_mode_of_its_open_how() {
    let r = resolve("strace-6.1-openat2.txt", false);
    let opens: Vec<&Call> = r.calls.iter().filter(|c| c.kind == Kind::Open).collect();
    assert_eq!(opens.len(), 2, "{:?}", r.calls);
    let (f, nope) = (opens[0], opens[1]);
    assert_eq!(
        (
            f.syscall.as_str(),
            f.path.as_deref(),
            f.flags.as_str(),
            f.mode,
            f.handle
        ),
        (
            "openat2",
            Some("sub/f"),
            "O_WRONLY|O_CREAT|O_CLOEXEC",
            Some(0o644),
            Some(0)
        )
    );
    let w = r
        .calls
        .iter()
        .find(|c| c.kind == Kind::Write)
        .expect("the write through it");
    assert_eq!((w.handle, w.len, w.result), (Some(0), Some(5), 5));
    assert_eq!(r.dropped.get("unknown descriptor"), None, "{:?}", r.dropped);
    assert_eq!(
        (
            nope.path.as_deref(),
            nope.flags.as_str(),
            nope.mode,
            nope.errno.as_deref()
        ),
        (Some("nope"), "O_RDONLY", None, Some("ENOENT"))
    );
    assert_eq!(open_how("{flags=O_RDONLY, resolve=0}"), ("O_RDONLY".into(), None));
}

/// A real recording of `sh -c 'echo a > one; cat one > two; test -e /tmp/fsbench-marks/second;
/// cp two three; stat -c %s three'`: every call names the program that made it, and the
/// shell's probe of the mark directory is one mark, between cat's calls and cp's.
#[test]
fn calls_name_their_program_and_a_probe_of_the_mark_directory_is_a_mark() {
    let syscalls = fixture("strace-6.1-sh-marks.txt");
    let plain = Resolver::new(Path::new(ROOT), Path::new(ROOT), false).run(&syscalls);
    assert!(plain.marks.is_empty(), "no mark directory, no marks");
    let r = Resolver::new(Path::new(ROOT), Path::new(ROOT), false)
        .mark_on(Path::new("/tmp/fsbench-marks"))
        .run(&syscalls);
    assert_eq!(r.calls, plain.calls, "marking changes no call");
    let program = |p: &str, kind: Kind| {
        r.calls
            .iter()
            .find(|c| c.kind == kind && c.path.as_deref() == Some(p))
            .and_then(|c| c.program.clone())
    };
    assert_eq!(program("one", Kind::Open).as_deref(), Some("sh"));
    let cat = r.calls.iter().find(|c| c.kind == Kind::CopyFileRange).unwrap();
    assert_eq!(cat.program.as_deref(), Some("cat"));
    assert_eq!(program("three", Kind::Stat).as_deref(), Some("stat"));
    let cp_open = r
        .calls
        .iter()
        .find(|c| c.program.as_deref() == Some("cp") && c.path.as_deref() == Some("three"))
        .expect("cp creates three");
    assert_eq!(r.marks.len(), 1, "{:?}", r.marks);
    let m = &r.marks[0];
    assert_eq!(m.name, "second");
    assert!(cat.start_s < m.at_s && m.at_s < cp_open.start_s, "{m:?}");
    let programs: std::collections::BTreeSet<&str> = r.calls.iter().filter_map(|c| c.program.as_deref()).collect();
    assert_eq!(programs.into_iter().collect::<Vec<_>>(), ["cat", "cp", "sh", "stat"]);
}
