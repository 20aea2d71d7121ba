//! `fsbench run --events FILE|-`: the run as a stream of JSON objects, one per line, for
//! dashboards and CI jobs that follow a run while it happens. It is one more
//! [`crate::Observer`]; the runner does not know it exists.
//!
//! Every line is an object with `"event"` (one of the names below), `"time"` (RFC 3339 UTC) and
//! `"session"`; the rest depends on the event:
//!
//! | event | fields |
//! |---|---|
//! | `session_start` | `resumed`, `repeats` (this run), `repeats_total` (the plan) |
//! | `case_unavailable` | `variant`, `workload`, `reason` |
//! | `case_start` | `case`, `variant`, `workload` (at its first repeat in this run) |
//! | `repeat_start` | `case`, `variant`, `workload`, `repeat` (0-based, warm-ups first), `of`, `warmup` |
//! | `phase_start` | `case`, `repeat`, `phase` |
//! | `phase_end` | `case`, `repeat`, `phase`, `seconds` (wall time until the next phase or the end) |
//! | `repeat_end` | `case`, `repeat`, `status` (`ok`/`failed`), `error`, `wall_s`, `results`: `[{phase, metric, unit, value}]` |
//! | `case_end` | `case`, `variant`, `workload` (after its last repeat) |
//! | `step_start` | `step`, `total` (null when unknown), `unit`, `expected_s` (the same step's last duration, or null), `case`, `repeat` |
//! | `step_progress` | `step`, `done`, `total`, `eta_s` (from the rate so far; null without a total), at most every [`STEP_EVERY`] per step |
//! | `step_end` | `step`, `seconds`, `status` (`ok`/`failed`) |
//! | `warning` | `message` |
//! | `sizes_set` | `workload`, `changes` (one line each), `spec` (the spec its measured repeats run), once per resized workload after the warm-ups |
//! | `session_end` | `status` (`complete`/`interrupted`) |
//!
//! Invariants: a `repeat_end` line is written only after the repeat is committed to the store
//! (the runner's order), and each line is flushed as it is written, so a reader tailing the
//! file sees every stored repeat. An interrupted repeat has a `repeat_start` and no
//! `repeat_end`; its case gets no `case_end`. Writing never stops the run: the first write
//! error is reported once as a warning on standard error and the stream goes quiet.

use crate::plan::Case;
use crate::store::{now_rfc3339, NewSample};
use crate::{Observer, RepeatEnd, RepeatOutcome, RepeatStart, SessionEnd, SessionStart, StepStart};
use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

/// Smallest interval between two `step_progress` lines of one step.
pub const STEP_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// Writes the events of one run as JSON lines.
pub struct EventStream {
    inner: Mutex<Inner>,
}

struct Inner {
    out: Option<Box<dyn Write + Send>>,
    session: Option<i64>,
    /// The running repeat: case id, variant, workload, repeat index, last repeat of the case.
    repeat: Option<(String, String, String, u32, bool)>,
    /// The running phase and when it started.
    phase: Option<(String, Instant)>,
    /// Cases whose `case_start` was written.
    started: Vec<String>,
    /// Results of the repeat that is about to finish.
    results: Vec<Value>,
    /// Running steps: when each started and when its last `step_progress` was written.
    steps: Vec<(String, Instant, Option<Instant>)>,
}

impl EventStream {
    /// A stream to `path`, or to standard output when `path` is `-`. The file is created (or
    /// truncated).
    pub fn open(path: &Path) -> std::io::Result<EventStream> {
        let out: Box<dyn Write + Send> = if path == Path::new("-") {
            Box::new(std::io::stdout())
        } else {
            Box::new(std::io::BufWriter::new(std::fs::File::create(path)?))
        };
        Ok(EventStream::to_writer(out))
    }

    /// A stream to any writer (tests).
    pub fn to_writer(out: Box<dyn Write + Send>) -> EventStream {
        EventStream {
            inner: Mutex::new(Inner {
                out: Some(out),
                session: None,
                repeat: None,
                phase: None,
                started: vec![],
                results: vec![],
                steps: vec![],
            }),
        }
    }

    fn with(&self, f: impl FnOnce(&mut Inner)) {
        if let Ok(mut g) = self.inner.lock() {
            f(&mut g);
        }
    }
}

impl Inner {
    fn emit(&mut self, event: &str, fields: Value) {
        let mut obj = Map::new();
        obj.insert("event".into(), Value::from(event));
        obj.insert("time".into(), Value::from(now_rfc3339()));
        obj.insert("session".into(), self.session.map(Value::from).unwrap_or(Value::Null));
        if let Value::Object(m) = fields {
            obj.extend(m);
        }
        let Some(out) = self.out.as_mut() else { return };
        let line = Value::Object(obj).to_string();
        if let Err(e) = writeln!(out, "{line}").and_then(|_| out.flush()) {
            eprintln!("fsbench: --events: {e}; no more events are written");
            self.out = None;
        }
    }

    fn end_phase(&mut self) {
        if let Some((phase, t0)) = self.phase.take() {
            let (case, repeat) = match &self.repeat {
                Some((c, _, _, r, _)) => (Value::from(c.as_str()), Value::from(*r)),
                None => (Value::Null, Value::Null),
            };
            let seconds = t0.elapsed().as_secs_f64();
            self.emit(
                "phase_end",
                json!({"case": case, "repeat": repeat, "phase": phase, "seconds": seconds}),
            );
        }
    }
}

impl Observer for EventStream {
    fn case_unavailable(&self, c: &Case) {
        self.with(|s| {
            s.emit(
                "case_unavailable",
                json!({"case": c.id.0, "variant": c.variant.name, "workload": c.workload.name,
                       "reason": c.unavailable}),
            )
        });
    }

    fn warning(&self, message: &str) {
        self.with(|s| s.emit("warning", json!({ "message": message })));
    }

    fn sizes_set(&self, resized: &[crate::sizing::ResizedWorkload]) {
        for r in resized {
            self.with(|s| {
                s.emit(
                    "sizes_set",
                    json!({"workload": r.workload, "changes": r.changes, "spec": r.kind}),
                )
            });
        }
    }

    fn session_started(&self, st: &SessionStart) {
        self.with(|s| {
            s.session = Some(st.session);
            s.emit(
                "session_start",
                json!({"resumed": st.resumed, "repeats": st.repeats_left, "repeats_total": st.repeats_total}),
            )
        });
    }

    fn repeat_started(&self, r: &RepeatStart) {
        self.with(|s| {
            let c = r.case;
            let ids = json!({"case": c.id.0, "variant": c.variant.name, "workload": c.workload.name});
            if !s.started.contains(&c.id.0) {
                s.started.push(c.id.0.clone());
                s.emit("case_start", ids.clone());
            }
            let last = r.repeat + 1 >= r.repeats_per_case;
            s.repeat = Some((
                c.id.0.clone(),
                c.variant.name.clone(),
                c.workload.name.clone(),
                r.repeat,
                last,
            ));
            s.results.clear();
            let mut f = ids;
            f["repeat"] = Value::from(r.repeat);
            f["of"] = Value::from(r.repeats_per_case);
            f["warmup"] = Value::from(r.warmup);
            s.emit("repeat_start", f);
        });
    }

    fn phase_started(&self, _what: &str, phase: &str) {
        self.with(|s| {
            s.end_phase();
            s.phase = Some((phase.to_string(), Instant::now()));
            let (case, repeat) = match &s.repeat {
                Some((c, _, _, r, _)) => (Value::from(c.as_str()), Value::from(*r)),
                None => (Value::Null, Value::Null),
            };
            s.emit("phase_start", json!({"case": case, "repeat": repeat, "phase": phase}));
        });
    }

    fn repeat_result(&self, _what: &str, sample: &NewSample) {
        self.with(|s| {
            s.results = sample
                .measurements
                .iter()
                .map(|m| json!({"phase": m.row(), "metric": m.metric.name, "unit": m.metric.unit, "value": m.value}))
                .collect();
        });
    }

    fn repeat_finished(&self, e: &RepeatEnd) {
        self.with(|s| {
            s.end_phase();
            let Some((case, variant, workload, repeat, last)) = s.repeat.take() else {
                return;
            };
            let (status, error, wall_s) = match e.outcome {
                RepeatOutcome::Done { wall_s } => ("ok", Value::Null, Value::from(*wall_s)),
                RepeatOutcome::Failed(err) => ("failed", Value::from(err.as_str()), Value::Null),
            };
            let results = Value::Array(std::mem::take(&mut s.results));
            s.emit(
                "repeat_end",
                json!({"case": case, "repeat": repeat, "status": status, "error": error,
                       "wall_s": wall_s, "results": results}),
            );
            if last {
                s.emit(
                    "case_end",
                    json!({"case": case, "variant": variant, "workload": workload}),
                );
            }
        });
    }

    fn step_started(&self, st: &StepStart) {
        self.with(|s| {
            s.steps.retain(|(n, _, _)| n != st.name);
            s.steps.push((st.name.to_string(), Instant::now(), None));
            let (case, repeat) = match &s.repeat {
                Some((c, _, _, r, _)) => (Value::from(c.as_str()), Value::from(*r)),
                None => (Value::Null, Value::Null),
            };
            s.emit(
                "step_start",
                json!({"step": st.name, "total": st.total, "unit": st.unit, "expected_s": st.expected_s,
                       "case": case, "repeat": repeat}),
            );
        });
    }

    fn step_progress(&self, name: &str, done: u64, total: Option<u64>) {
        self.with(|s| {
            let now = Instant::now();
            let Some(entry) = s.steps.iter_mut().find(|(n, _, _)| n == name) else {
                return;
            };
            if entry.2.is_some_and(|t| now.duration_since(t) < STEP_EVERY) {
                return;
            }
            entry.2 = Some(now);
            let elapsed = now.duration_since(entry.1).as_secs_f64();
            let eta = total
                .filter(|_| done > 0)
                .map(|t| elapsed * t.saturating_sub(done) as f64 / done as f64);
            s.emit(
                "step_progress",
                json!({"step": name, "done": done, "total": total, "eta_s": eta}),
            );
        });
    }

    fn step_finished(&self, name: &str, seconds: f64, ok: bool) {
        self.with(|s| {
            s.steps.retain(|(n, _, _)| n != name);
            let status = if ok { "ok" } else { "failed" };
            s.emit("step_end", json!({"step": name, "seconds": seconds, "status": status}));
        });
    }

    fn session_finished(&self, end: SessionEnd) {
        self.with(|s| {
            s.phase = None;
            let status = match end {
                SessionEnd::Complete => "complete",
                SessionEnd::Interrupted => "interrupted",
            };
            s.emit("session_end", json!({ "status": status }));
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A writer tests can read back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// A writer that always fails.
    struct Broken;
    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk full"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_line_is_one_json_object_with_event_time_and_session() {
        let buf = Shared::default();
        let ev = EventStream::to_writer(Box::new(buf.clone()));
        ev.warning("before the session");
        ev.session_started(&SessionStart {
            session: 7,
            resumed: false,
            repeats_left: 1,
            repeats_total: 1,
            db: Path::new("x.db"),
        });
        ev.session_finished(SessionEnd::Interrupted);
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0]["event"], "warning");
        assert_eq!(lines[0]["session"], Value::Null);
        assert_eq!(lines[1]["event"], "session_start");
        assert_eq!(lines[2]["session"], 7);
        assert_eq!(lines[2]["status"], "interrupted");
        assert!(lines
            .iter()
            .all(|l| l["time"].as_str().is_some_and(|t| t.ends_with('Z'))));
    }

    #[test]
    fn a_failing_writer_goes_quiet_instead_of_failing_the_run() {
        let ev = EventStream::to_writer(Box::new(Broken));
        ev.warning("one");
        ev.warning("two");
        assert!(ev.inner.lock().unwrap().out.is_none());
    }

    /// A step writes start, throttled progress (at most one per STEP_EVERY) and end lines.
    #[test]
    fn steps_write_start_throttled_progress_and_end() {
        let buf = Shared::default();
        let ev = EventStream::to_writer(Box::new(buf.clone()));
        ev.step_started(&StepStart {
            name: "fileio prepare (4 files, 8.0 MiB)",
            total: Some(100),
            unit: "bytes",
            expected_s: None,
        });
        for done in 1..=50 {
            ev.step_progress("fileio prepare (4 files, 8.0 MiB)", done, Some(100));
        }
        std::thread::sleep(STEP_EVERY);
        ev.step_progress("fileio prepare (4 files, 8.0 MiB)", 100, Some(100));
        ev.step_progress("not running", 1, None);
        ev.step_finished("fileio prepare (4 files, 8.0 MiB)", 1.5, true);
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let kinds: Vec<&str> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            ["step_start", "step_progress", "step_progress", "step_end"],
            "{text}"
        );
        assert_eq!(lines[0]["total"], 100);
        assert_eq!(lines[0]["expected_s"], Value::Null);
        assert_eq!(lines[1]["done"], 1);
        assert!(lines[1]["eta_s"].as_f64().unwrap() >= 0.0);
        assert_eq!(lines[2]["done"], 100);
        assert_eq!(lines[3]["status"], "ok");
        assert_eq!(lines[3]["seconds"], 1.5);
    }
}
