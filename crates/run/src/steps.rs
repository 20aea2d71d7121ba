//! The runner's side of [`crate::progress`]: while a session runs, the long untimed steps its
//! thread reports (mkfs, data sets, the baseline, database loads) become [`Observer`] calls,
//! with the seconds the same step took last time as the ETA of a step without a total.
//!
//! The observers borrow from the caller, so they cannot live in the thread-local sink as they
//! are: the sink holds the observer with its lifetime erased, and [`relayed`] takes it out again
//! before it returns (also when `f` panics), so a sink that outlives the call forwards nothing.
//! Each event is forwarded on the thread that reports it, before the step goes on, so steps keep
//! their order with the runner's own events (a `step_finished` of mkfs comes before the repeat's
//! first `phase_started`). No thread is started: a single-worker phase then runs in a process of
//! one thread, whose descriptor table the kernel does not have to reference-count on every
//! `*at()` call (about 30 ns of a 1 µs `stat` on tmpfs; bench/README.md, issue 29).
//!
//! The durations outlive the run in a small per-machine cache file ([`durations_file`]:
//! `$XDG_CACHE_HOME/fsbench/step-durations.json`, else `~/.cache/…`): how long mkfs takes is a
//! fact of this machine and its disks, not of a results database that many machines share. A
//! missing or unreadable cache only means no ETA for a spinner's first run.
//!
//! Invariants: nothing reaches the observer after [`relayed`] has returned; an event an
//! observer reports while it handles another (on the same thread) is dropped, not deadlocked on;
//! step durations learnt are those of steps that ran to their end.

use super::observer::{Observer, StepStart};
use crate::progress::{self, StepEvent, StepSink};
use std::cell::Cell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// The observer of a running [`relayed`] call and what it learnt; `None` once the call returned.
type Target = Option<(&'static dyn Observer, Durations)>;

/// The sink [`relayed`] installs: it forwards each event to the observer on the reporting thread.
struct Relay {
    target: Mutex<Target>,
}

thread_local! {
    /// This thread is inside an observer call of a [`Relay`] (an event reported from there is
    /// dropped instead of waiting for the lock this thread holds).
    static FORWARDING: Cell<bool> = const { Cell::new(false) };
}

impl Relay {
    fn target(&self) -> MutexGuard<'_, Target> {
        // An observer that panicked leaves the durations as they were: still usable.
        self.target.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl StepSink for Relay {
    fn event(&self, name: &str, event: &StepEvent) {
        if FORWARDING.with(Cell::get) {
            return;
        }
        let mut target = self.target();
        if let Some((obs, durations)) = target.as_mut() {
            FORWARDING.with(|f| f.set(true));
            durations.forward(*obs, name, event);
            FORWARDING.with(|f| f.set(false));
        }
    }
}

/// Takes the observer out of the relay when [`relayed`] ends, by return or by panic.
struct Detach<'r>(&'r Relay);

impl Detach<'_> {
    fn durations(self) -> HashMap<String, f64> {
        self.0.target().take().map(|(_, d)| d.last).unwrap_or_default()
    }
}

impl Drop for Detach<'_> {
    fn drop(&mut self) {
        self.0.target().take();
    }
}

/// What the relay keeps: each step's total and the last duration of each name.
#[derive(Default)]
pub struct Durations {
    totals: HashMap<String, Option<u64>>,
    /// Seconds of the last complete run of each step name.
    pub last: HashMap<String, f64>,
}

impl Durations {
    fn forward(&mut self, obs: &dyn Observer, name: &str, event: &StepEvent) {
        match *event {
            StepEvent::Start { total, unit } => {
                self.totals.insert(name.to_string(), total);
                obs.step_started(&StepStart {
                    name,
                    total,
                    unit,
                    expected_s: self.last.get(name).copied(),
                });
            }
            StepEvent::Progress { done } => {
                obs.step_progress(name, done, self.totals.get(name).copied().flatten());
            }
            StepEvent::End { seconds, ok } => {
                self.totals.remove(name);
                if ok {
                    self.last.insert(name.to_string(), seconds);
                }
                obs.step_finished(name, seconds, ok);
            }
        }
    }
}

/// Runs `f` with the steps of this thread forwarded to `obs`; `known` seeds the durations of
/// earlier runs (name → seconds). Returns `f`'s result and every duration known at the end.
pub fn relayed<R>(obs: &dyn Observer, known: HashMap<String, f64>, f: impl FnOnce() -> R) -> (R, HashMap<String, f64>) {
    // SAFETY: the relay holds `obs` only until `detach` drops or is consumed, both before this
    // function returns (unwinding included), and every use of it is under the relay's lock, so
    // no use outlives the borrow even when a clone of the sink is kept past this call.
    let obs: &'static dyn Observer = unsafe { std::mem::transmute::<&dyn Observer, &'static dyn Observer>(obs) };
    let durations = Durations {
        last: known,
        ..Durations::default()
    };
    let relay = Arc::new(Relay {
        target: Mutex::new(Some((obs, durations))),
    });
    let detach = Detach(&relay);
    let result = {
        let _sink = progress::install(relay.clone());
        f()
    };
    (result, detach.durations())
}

/// Where step durations are kept between runs: `$XDG_CACHE_HOME/fsbench/step-durations.json`,
/// else `$HOME/.cache/fsbench/step-durations.json`; `None` when neither is set.
pub fn durations_file() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(x) => PathBuf::from(x),
        None => PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?).join(".cache"),
    };
    Some(base.join("fsbench").join("step-durations.json"))
}

/// The stored durations (name → seconds); empty when there are none or the file is unreadable.
pub fn load_durations(file: Option<&Path>) -> HashMap<String, f64> {
    file.and_then(|f| std::fs::read(f).ok())
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Writes `durations` (complete: what [`relayed`] returns, the loaded ones included) to `file`
/// through a temporary file and a rename, so a reader never sees half a file. Errors are
/// returned for the caller to ignore or report; the cache is never needed.
pub fn save_durations(file: &Path, durations: &HashMap<String, f64>) -> std::io::Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let sorted: std::collections::BTreeMap<&String, &f64> = durations.iter().collect();
    let tmp = file.with_extension(format!("json.{}", std::process::id()));
    std::fs::write(&tmp, serde_json::to_vec_pretty(&sorted).map_err(std::io::Error::other)?)?;
    std::fs::rename(&tmp, file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Event, Recorder};

    /// Steps reach the observer in order with the runner thread's own events, the second run of
    /// a name gets the first one's duration as its expectation, and a failed step teaches
    /// nothing.
    #[test]
    fn steps_are_forwarded_in_order_with_the_last_duration() {
        let rec = Recorder::default();
        let known = HashMap::from([("mkfs.xfs (1 GiB)".to_string(), 12.5)]);
        let ((), last) = relayed(&rec, known, || {
            progress::step("mkfs.ext4 (64 MiB)", None, "steps").finish();
            rec.warning("between");
            progress::step("mkfs.ext4 (64 MiB)", None, "steps").finish();
            drop(progress::step("load", Some(10), "rows"));
            progress::step("mkfs.xfs (1 GiB)", None, "steps").finish();
        });
        let ev = rec.events();
        let m = "mkfs.ext4 (64 MiB)".to_string();
        assert_eq!(
            ev[..3],
            [
                Event::StepStarted(m.clone(), None),
                Event::StepFinished(m.clone(), true),
                Event::Warning("between".into()),
            ]
        );
        // The second mkfs expects the first one's duration.
        assert!(
            matches!(&ev[3], Event::StepStarted(n, Some(s)) if *n == m && *s >= 0.0),
            "{:?}",
            ev[3]
        );
        assert_eq!(
            ev[4..6],
            [
                Event::StepFinished(m.clone(), true),
                Event::StepStarted("load".into(), None)
            ]
        );
        assert_eq!(ev[6], Event::StepFinished("load".into(), false));
        assert_eq!(ev[7], Event::StepStarted("mkfs.xfs (1 GiB)".into(), Some(12.5)));
        assert!(!last.contains_key("load"), "a failed step sets no expectation");
        assert_ne!(
            last["mkfs.xfs (1 GiB)"], 12.5,
            "the new duration replaces the stored one"
        );
        // Outside `relayed`, nothing is installed any more.
        assert!(progress::current().is_none());
    }

    /// What [`relayed`] must hold beyond ordering: the observer runs on the thread that
    /// reported the step (no thread is started: a phase's process stays one thread), a step the
    /// observer reports while handling one is dropped rather than deadlocking, and a sink kept
    /// past the call forwards nothing to the observer that is gone.
    #[test]
    fn steps_reach_the_observer_on_the_reporting_thread_and_never_after_the_call() {
        #[derive(Default)]
        struct Nested {
            seen: Mutex<Vec<(String, std::thread::ThreadId)>>,
        }
        impl Observer for Nested {
            fn step_started(&self, s: &StepStart) {
                self.seen
                    .lock()
                    .unwrap()
                    .push((s.name.to_string(), std::thread::current().id()));
                // An observer that itself reports a step: dropped, not a deadlock.
                progress::step("inside the observer", None, "steps").finish();
            }
        }
        let obs = Nested::default();
        let (kept, _) = relayed(&obs, HashMap::new(), || {
            progress::step("mkfs", None, "steps").finish();
            progress::current().expect("a sink is installed")
        });
        let seen = obs.seen.lock().unwrap().clone();
        assert_eq!(seen, [("mkfs".to_string(), std::thread::current().id())]);
        // The kept sink outlives the call: its events go nowhere.
        kept.event(
            "late",
            &StepEvent::Start {
                total: None,
                unit: "steps",
            },
        );
        assert_eq!(obs.seen.lock().unwrap().len(), 1);
    }

    /// Durations survive in the cache file; a missing or broken file gives none.
    #[test]
    fn durations_round_trip_through_the_cache_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("sub").join("step-durations.json");
        assert!(load_durations(Some(&f)).is_empty());
        assert!(load_durations(None).is_empty());
        let d = HashMap::from([("mkfs.ext4 (64 MiB)".to_string(), 0.25), ("b".to_string(), 3.0)]);
        save_durations(&f, &d).unwrap();
        assert_eq!(load_durations(Some(&f)), d);
        std::fs::write(&f, "{not json").unwrap();
        assert!(load_durations(Some(&f)).is_empty());
        assert_eq!(
            std::fs::read_dir(f.parent().unwrap()).unwrap().count(),
            1,
            "no temporary file left"
        );
    }
}
