//! strace 6.x output, as `fsbench record` runs it: `strace -f -ttt -T -y -qq -s 0 -o FILE`.
//!
//! One line per system call, `TID  SECONDS.MICROS name(args) = RESULT <DURATION>`:
//!
//! - `-f` prefixes every line with the thread id; a call another thread interrupts is split
//!   into `name(args <unfinished ...>` and, later, `<... name resumed>rest) = …`; [`parse`]
//!   joins the two halves (start time from the first, result and duration from the second);
//! - `-ttt` gives the start as seconds since the epoch with microseconds, `-T` the time spent in
//!   the call (`<0.000012>`), missing for calls that do not return (`exit_group(0) = ?`);
//! - `-y` annotates every descriptor argument and descriptor result with its path:
//!   `3</tmp/x/a>`, `AT_FDCWD</tmp/x>`, `4<socket:[123]>`;
//! - `-s 0` prints no data (`""...`), so the trace never holds file contents;
//! - `-qq` leaves out attach and exit messages; signal lines (`--- SIGCHLD … ---`) are skipped;
//! - `-n` (optional) prints the system call number after the time stamp, `[ 257] openat(…)`, on
//!   the resumption too ([`Syscall::nr`]), which ties each line to the kernel's record of the
//!   call (`crate::trace::timing`).
//!
//! Arguments are kept as the top-level text strstrace printed ([`Syscall::args`]); the helpers
//! [`unquote`] and [`fd_arg`] read a quoted string and an annotated descriptor. The parser is
//! pure and never panics: a line that is not a call (nor a signal, exit or blank line) is a
//! [`ParseError`] naming the line, so a foreign file or another tool's format is refused, not
//! read as nothing. An unfinished call whose resumption never came (the trace ends, or the
//! thread was killed) is kept with result [`Ret::Unknown`].
//!
//! Reference: strace(1), 6.1; the fixtures in `tests/fixtures/replay/` are real runs.

use super::ParseError;
use std::collections::HashMap;

const TOOL: &str = "strace";

/// What a call returned.
#[derive(Clone, Debug, PartialEq)]
pub enum Ret {
    /// A value (`= 3`, `= 0x7f…`), with the path `-y` printed after a descriptor result.
    Value {
        /// The number.
        value: i64,
        /// `3</tmp/x/a>`'s `/tmp/x/a`.
        path: Option<String>,
    },
    /// `= -1 ENOENT (No such file or directory)`: the error name.
    Error(String),
    /// `= ?`, or a call whose end is not in the trace.
    Unknown,
}

/// One system call of one thread.
#[derive(Clone, Debug, PartialEq)]
pub struct Syscall {
    /// The thread id strace printed.
    pub tid: u32,
    /// Start, seconds since the epoch (`-ttt`).
    pub start: f64,
    /// Time in the call, seconds (`-T`); 0 when strace printed none.
    pub duration: f64,
    /// The call's name (`openat`, `newfstatat`).
    pub name: String,
    /// Top-level arguments as printed.
    pub args: Vec<String>,
    /// The result.
    pub ret: Ret,
    /// The system call number `-n` printed.
    pub nr: Option<u32>,
    /// The tracer's time on this thread (and on the threads that made it, up to its creation)
    /// before this call started, seconds, when measured (`crate::trace::timing`); then
    /// `start` and `duration` are the kernel's too.
    pub tracer: Option<f64>,
    /// Its start and end on the clock of a second run without the tracer, perf's cost taken out
    /// (`crate::trace::untraced`), seconds, when there was one.
    pub untraced_run: Option<(f64, f64)>,
}

/// Parses a whole strace output; calls in the order they started.
pub fn parse(text: &str) -> Result<Vec<Syscall>, ParseError> {
    let mut out: Vec<Syscall> = Vec::new();
    // Per thread: the index in `out` of its unfinished call and the text of its arguments.
    let mut pending: HashMap<u32, (usize, String)> = HashMap::new();
    let mut lines = 0usize;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        let bad = |what: &str| ParseError::BadValue {
            tool: TOOL,
            field: "line",
            value: format!("line {}: {what}: {}", i + 1, line.chars().take(120).collect::<String>()),
        };
        let (tid, rest) = split_word(line).ok_or_else(|| bad("no thread id"))?;
        let tid: u32 = tid.parse().map_err(|_| bad("no thread id"))?;
        let (ts, body) = split_word(rest).ok_or_else(|| bad("no time stamp"))?;
        let start: f64 = ts
            .parse()
            .ok()
            .filter(|t: &f64| t.is_finite())
            .ok_or_else(|| bad("no -ttt time stamp"))?;
        lines += 1;
        let (nr, body) = match body.strip_prefix('[') {
            Some(rest) => {
                let (n, rest) = rest.split_once(']').ok_or_else(|| bad("unreadable -n number"))?;
                (
                    Some(n.trim().parse::<u32>().map_err(|_| bad("unreadable -n number"))?),
                    rest.trim_start(),
                )
            }
            None => (None, body),
        };
        if body.starts_with("---") || body.starts_with("+++") {
            continue;
        }
        if let Some(resumed) = body.strip_prefix("<... ") {
            let (name, tail) = resumed
                .split_once(" resumed>")
                .ok_or_else(|| bad("unreadable resumption"))?;
            let Some((idx, head)) = pending.remove(&tid) else {
                // Its start came before the trace did (strace attached mid-call): skip it.
                continue;
            };
            if out[idx].name != name {
                return Err(bad("resumes a call the thread did not start"));
            }
            let (args, ret, duration) = finish(&format!("{head}{tail}")).ok_or_else(|| bad("unreadable result"))?;
            out[idx].args = args;
            out[idx].ret = ret;
            out[idx].duration = duration;
            continue;
        }
        let open = body.find('(').ok_or_else(|| bad("no call"))?;
        let name = &body[..open];
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(bad("no call name"));
        }
        let after = &body[open + 1..];
        if let Some(head) = after.strip_suffix("<unfinished ...>") {
            out.push(Syscall {
                tid,
                start,
                duration: 0.0,
                name: name.to_string(),
                args: Vec::new(),
                ret: Ret::Unknown,
                nr,
                tracer: None,
                untraced_run: None,
            });
            pending.insert(tid, (out.len() - 1, head.to_string()));
            continue;
        }
        let (args, ret, duration) = finish(after).ok_or_else(|| bad("unreadable result"))?;
        out.push(Syscall {
            tid,
            start,
            duration,
            name: name.to_string(),
            args,
            ret,
            nr,
            tracer: None,
            untraced_run: None,
        });
    }
    if lines == 0 {
        return Err(ParseError::missing(TOOL, "TID SECONDS call(…) = result", text));
    }
    // Unfinished calls never resumed keep their arguments, result unknown.
    for (_, (idx, head)) in pending {
        out[idx].args = split_args(head.trim_end().trim_end_matches(','));
    }
    out.sort_by(|a, b| a.start.total_cmp(&b.start));
    Ok(out)
}

/// The first whitespace-delimited word of `s` and the rest, trimmed.
fn split_word(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start();
    let end = s.find(char::is_whitespace)?;
    Some((&s[..end], s[end..].trim_start()))
}

/// `args) = RESULT <DUR>` → the arguments, the result and the duration.
fn finish(s: &str) -> Option<(Vec<String>, Ret, f64)> {
    let close = matching_paren(s)?;
    let args = split_args(&s[..close]);
    let tail = s[close + 1..].trim_start().strip_prefix('=')?.trim();
    let (result, duration) = match tail.rfind(" <") {
        Some(i) if tail.ends_with('>') && !tail[i + 2..].contains('<') => {
            let d: f64 = tail[i + 2..tail.len() - 1].parse().ok()?;
            (tail[..i].trim(), d)
        }
        _ => (tail, 0.0),
    };
    Some((args, ret_of(result)?, duration))
}

/// The result text (`3</x>`, `-1 ENOENT (…)`, `0x7f00`, `?`) as a [`Ret`].
fn ret_of(s: &str) -> Option<Ret> {
    if s.starts_with('?') {
        return Some(Ret::Unknown);
    }
    if let Some(rest) = s.strip_prefix("-1 ") {
        let errno = rest.split_whitespace().next()?;
        if errno.starts_with('E') {
            return Some(Ret::Error(errno.to_string()));
        }
    }
    let (num, path) = match s.find('<') {
        Some(i) => (&s[..i], Some(unescape(s[i + 1..].split('>').next().unwrap_or("")))),
        None => (s.split_whitespace().next()?, None),
    };
    let value = match num.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok()? as i64,
        None => num.parse().ok()?,
    };
    Some(Ret::Value { value, path })
}

/// The index of the `)` closing the argument list that `s` starts inside.
fn matching_paren(s: &str) -> Option<usize> {
    let mut depth = 0i32;
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if quoted {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => quoted = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => quoted = true,
            '(' | '[' | '{' => depth += 1,
            ')' if depth == 0 => return Some(i),
            ')' | ']' | '}' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// Splits an argument list at its top-level commas (not inside quotes, brackets, braces or a
/// descriptor's `<path>`).
pub fn split_args(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut depth, mut quoted, mut escaped, mut angle) = (0i32, false, false, false);
    for c in s.chars() {
        if quoted {
            cur.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => quoted = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => quoted = true,
            '<' if cur
                .trim_start()
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_digit() || b == b'A') =>
            {
                angle = true
            }
            '>' if angle => angle = false,
            '(' | '[' | '{' if !angle => depth += 1,
            ')' | ']' | '}' if !angle => depth -= 1,
            ',' if depth == 0 && !angle => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// Undoes strace's escapes in a path (`\"`, `\\`, `\n`, `\t`, octal `\33`, hex `\x1b`).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' || i + 1 == b.len() {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let c = b[i + 1];
        i += 2;
        match c {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'v' => out.push(0x0b),
            b'f' => out.push(0x0c),
            b'x' => {
                let end = (i + 2).min(b.len());
                let v = std::str::from_utf8(&b[i..end])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                out.push(v.unwrap_or(b'?'));
                i = end;
            }
            b'0'..=b'7' => {
                let mut v = u32::from(c - b'0');
                let mut n = 1;
                while n < 3 && i < b.len() && (b'0'..=b'7').contains(&b[i]) {
                    v = v * 8 + u32::from(b[i] - b'0');
                    i += 1;
                    n += 1;
                }
                out.push(v as u8);
            }
            other => out.push(other),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A quoted string argument (`"work/f01"`) without its quotes and escapes; `None` for an
/// argument that is not a complete string (an address, or data cut by `-s`: `""...`).
pub fn unquote(arg: &str) -> Option<String> {
    let inner = arg.strip_prefix('"')?.strip_suffix('"')?;
    Some(unescape(inner))
}

/// A descriptor argument with `-y`'s path: `3</tmp/x>` → `(3, Some("/tmp/x"))`,
/// `AT_FDCWD</tmp/x>` → `(AT_FDCWD, Some("/tmp/x"))`, `-1` → `(-1, None)`.
pub fn fd_arg(arg: &str) -> Option<(i32, Option<String>)> {
    let (num, path) = match arg.find('<') {
        Some(i) => (&arg[..i], Some(unescape(arg[i + 1..].strip_suffix('>')?))),
        None => (arg, None),
    };
    let fd = if num == "AT_FDCWD" {
        libc::AT_FDCWD
    } else {
        num.trim().parse().ok()?
    };
    Some((fd, path))
}

/// An integer argument (`65536`, `0x2000`, `0644` octal as strace prints modes).
pub fn int_arg(arg: &str) -> Option<i64> {
    let a = arg.trim();
    if let Some(h) = a.strip_prefix("0x") {
        return u64::from_str_radix(h, 16).ok().map(|v| v as i64);
    }
    if a.len() > 1 && a.starts_with('0') && a.bytes().all(|b| b.is_ascii_digit()) {
        return i64::from_str_radix(&a[1..], 8).ok();
    }
    a.parse().ok()
}

/// The strace version from `strace -V`'s first line (`strace -- version 6.1`).
pub fn version(first_line: &str) -> Option<String> {
    let v = first_line.trim().strip_prefix("strace -- version ")?;
    Some(v.split_whitespace().next()?.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let p = format!("{}/../../tests/fixtures/replay/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    #[test]
    fn a_real_tar_run_parses_with_paths_results_and_durations() {
        let calls = parse(&fixture("strace-6.1-tar-x.txt")).unwrap();
        assert!(calls.len() > 150, "{}", calls.len());
        let create = calls
            .iter()
            .find(|c| c.name == "openat" && c.args.get(1).map(String::as_str) == Some("\"src/b\""))
            .expect("tar creates src/b");
        assert_eq!(
            fd_arg(&create.args[0]).unwrap().1.as_deref(),
            Some("/tmp/fsbench-strace-root")
        );
        assert!(create.args[2].contains("O_CREAT|O_EXCL"), "{:?}", create.args);
        assert_eq!(int_arg(&create.args[3]), Some(0o600));
        match &create.ret {
            Ret::Value { value, path } => {
                assert!(*value >= 3);
                assert_eq!(path.as_deref(), Some("/tmp/fsbench-strace-root/src/b"));
            }
            other => panic!("{other:?}"),
        }
        assert!(create.duration > 0.0 && create.duration < 1.0);
        let probe = calls.iter().find(|c| matches!(&c.ret, Ret::Error(e) if e == "ENOENT"));
        assert!(probe.is_some(), "tar's locale probes fail with ENOENT");
        let exit = calls.iter().find(|c| c.name == "exit_group").unwrap();
        assert_eq!(exit.ret, Ret::Unknown);
        assert!(calls.windows(2).all(|w| w[0].start <= w[1].start));
    }

    #[test]
    fn unfinished_and_resumed_halves_of_threads_are_joined() {
        let text = fixture("strace-6.1-threads.txt");
        assert!(text.contains("<unfinished ...>") && text.contains("resumed>"));
        let calls = parse(&text).unwrap();
        let tids: std::collections::BTreeSet<u32> = calls.iter().map(|c| c.tid).collect();
        assert_eq!(tids.len(), 3, "main, producer, consumer");
        // Every fsync of the producer returned 0 with its duration, even those interrupted.
        let fsyncs: Vec<&Syscall> = calls.iter().filter(|c| c.name == "fsync").collect();
        assert_eq!(fsyncs.len(), 20);
        for f in fsyncs {
            assert_eq!(f.ret, Ret::Value { value: 0, path: None }, "{f:?}");
            assert!(f.duration > 0.0);
            assert!(fd_arg(&f.args[0]).unwrap().1.unwrap().contains("/work/tmp"));
        }
        let writes = calls.iter().filter(|c| c.name == "write" && c.args.len() == 3).count();
        assert_eq!(writes, 20);
    }

    #[test]
    fn foreign_and_damaged_text_is_refused_with_the_line() {
        assert!(matches!(parse(""), Err(ParseError::Missing { .. })));
        let e = parse("{\"fsbench_trace\": 1}\n").unwrap_err().to_string();
        assert!(e.contains("line 1"), "{e}");
        let e = parse("123 1795876290.9 openat(AT_FDCWD</x>, \"a\", O_RDONLY\n").unwrap_err();
        assert!(e.to_string().contains("unreadable result"), "{e}");
        // A resumption of a call the thread never started is skipped, not invented.
        let calls = parse("7 1.5 <... read resumed>\"\"..., 5) = 5 <0.1>\n7 1.6 close(3</x>) = 0 <0.1>\n").unwrap();
        assert_eq!(calls.len(), 1);
    }

    #[test]
    fn helpers_read_quoted_paths_descriptors_and_numbers() {
        assert_eq!(unquote("\"a\\\"b\\n\\33c\"").as_deref(), Some("a\"b\n\x1bc"));
        assert_eq!(unquote("\"\"..."), None);
        assert_eq!(
            fd_arg("AT_FDCWD</tmp/x>"),
            Some((libc::AT_FDCWD, Some("/tmp/x".into())))
        );
        assert_eq!(
            fd_arg("4<socket:[4153745]>"),
            Some((4, Some("socket:[4153745]".into())))
        );
        assert_eq!(int_arg("0x2000"), Some(0x2000));
        assert_eq!(int_arg("0755"), Some(0o755));
        assert_eq!(int_arg("65536"), Some(65536));
        assert_eq!(
            split_args("3</a,b>, \"x,y\", {st_mode=S_IFREG, st_size=1}, [1, 2], 0"),
            vec!["3</a,b>", "\"x,y\"", "{st_mode=S_IFREG, st_size=1}", "[1, 2]", "0"]
        );
        assert_eq!(version("strace -- version 6.1"), Some("6.1".into()));
    }
}
