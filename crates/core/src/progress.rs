//! Progress of the long *untimed* steps of a run — mkfs of an image, laying out a data set or a
//! file set, the raw-device baseline, a database load — so the progress bar, `--events` and the
//! plain lines can show each with its own ETA.
//!
//! Code that does such a step calls [`step`] and updates the returned [`Step`] as it goes; the
//! runner installs a [`StepSink`] for the thread that runs the session ([`install`]) and turns
//! what arrives into [`crate::run::Observer`] calls. Without a sink (unit tests, `run_quiet`,
//! `fsbench dataset`) a step costs a thread-local read at its start and nothing else.
//!
//! Invariants:
//! - Never called from a timed loop: a step is preparation or a measurement that reports only
//!   between its timed halves (the baseline). [`Step::set`] forwards at most every
//!   [`TICK`]; observers throttle further for their output.
//! - Every [`StepEvent::Start`] is followed by exactly one [`StepEvent::End`] (on drop; `ok` is
//!   `true` only after [`Step::finish`]), from the same thread.
//! - A step's `name` identifies it across runs for the ETA of a step whose total is unknown:
//!   it names the work and its size (`mkfs.ext4 of a 64 MiB image`), not the device.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Smallest interval between two forwarded [`StepEvent::Progress`] of one step.
pub const TICK: Duration = Duration::from_millis(100);

/// What a step reports.
#[derive(Clone, Debug, PartialEq)]
pub enum StepEvent {
    /// The step begins; `total` is its amount of work in `unit`s, `None` when unknown (mkfs).
    Start {
        /// Amount of work, when known.
        total: Option<u64>,
        /// What `total` and `done` count: `"bytes"`, `"files"`, `"rows"`, `"steps"`.
        unit: &'static str,
    },
    /// `done` units of the total are done.
    Progress {
        /// Units done so far.
        done: u64,
    },
    /// The step is over after `seconds`; `ok` is `false` when it failed or was interrupted.
    End {
        /// Wall time of the step, in seconds.
        seconds: f64,
        /// It ran to its end.
        ok: bool,
    },
}

/// Receives the steps of the thread it is installed for.
pub trait StepSink: Send + Sync {
    /// One event of the step `name`.
    fn event(&self, name: &str, event: &StepEvent);
}

thread_local! {
    static SINK: RefCell<Option<Arc<dyn StepSink>>> = const { RefCell::new(None) };
}

/// Puts `sink` in place for this thread until the guard drops (which restores what was there).
pub fn install(sink: Arc<dyn StepSink>) -> Installed {
    let previous = SINK.with(|s| s.borrow_mut().replace(sink));
    Installed { previous }
}

/// Restores the previous sink when dropped.
pub struct Installed {
    previous: Option<Arc<dyn StepSink>>,
}

impl Drop for Installed {
    fn drop(&mut self) {
        let previous = self.previous.take();
        SINK.with(|s| *s.borrow_mut() = previous);
    }
}

/// The sink of this thread, to install in a thread it starts for a step.
pub fn current() -> Option<Arc<dyn StepSink>> {
    SINK.with(|s| s.borrow().clone())
}

/// Starts the step `name` with `total` units of `unit` (`None`: unknown).
pub fn step(name: impl Into<String>, total: Option<u64>, unit: &'static str) -> Step {
    let sink = current();
    let name = name.into();
    if let Some(s) = &sink {
        s.event(&name, &StepEvent::Start { total, unit });
    }
    let now = Instant::now();
    Step {
        sink,
        name,
        started: now,
        last: now,
        done: 0,
        ok: false,
    }
}

/// A running step; ends (not ok, unless [`Step::finish`]ed) when dropped.
pub struct Step {
    sink: Option<Arc<dyn StepSink>>,
    name: String,
    started: Instant,
    last: Instant,
    done: u64,
    ok: bool,
}

impl Step {
    /// `done` units are done (forwarded at most every [`TICK`]).
    pub fn set(&mut self, done: u64) {
        self.done = done;
        let Some(sink) = &self.sink else { return };
        let now = Instant::now();
        if now.duration_since(self.last) >= TICK {
            self.last = now;
            sink.event(&self.name, &StepEvent::Progress { done });
        }
    }

    /// `n` more units are done.
    pub fn add(&mut self, n: u64) {
        self.set(self.done + n);
    }

    /// The step ran to its end.
    pub fn finish(mut self) {
        self.ok = true;
    }
}

impl Drop for Step {
    fn drop(&mut self) {
        if let Some(sink) = &self.sink {
            sink.event(
                &self.name,
                &StepEvent::End {
                    seconds: self.started.elapsed().as_secs_f64(),
                    ok: self.ok,
                },
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Keep(Mutex<Vec<(String, StepEvent)>>);
    impl StepSink for Keep {
        fn event(&self, name: &str, e: &StepEvent) {
            self.0.lock().unwrap().push((name.to_string(), e.clone()));
        }
    }

    #[test]
    fn steps_reach_the_installed_sink_throttled_and_end_once() {
        // No sink: nothing happens, nothing fails.
        let mut s = step("quiet", Some(10), "files");
        s.set(5);
        s.finish();

        let keep = Arc::new(Keep::default());
        {
            let _g = install(keep.clone());
            let mut s = step("fill", Some(1000), "files");
            for i in 0..1000 {
                s.set(i);
            }
            std::thread::sleep(TICK);
            s.set(1000);
            s.finish();
            let failed = step("mkfs", None, "steps");
            drop(failed);
            // Another thread has no sink unless it installs the current one.
            let cur = current().unwrap();
            std::thread::spawn(move || {
                drop(step("elsewhere", None, "steps"));
                let _g = install(cur);
                step("inherited", None, "steps").finish();
            })
            .join()
            .unwrap();
        }
        drop(step("after the guard", None, "steps"));
        let ev = keep.0.lock().unwrap().clone();
        let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
        assert!(!names.contains(&"quiet") && !names.contains(&"elsewhere") && !names.contains(&"after the guard"));
        let fill: Vec<&StepEvent> = ev.iter().filter(|(n, _)| n == "fill").map(|(_, e)| e).collect();
        assert_eq!(
            fill[0],
            &StepEvent::Start {
                total: Some(1000),
                unit: "files"
            }
        );
        // 1000 updates within far less than a TICK, then one after it: one progress event.
        let progress = fill.iter().filter(|e| matches!(e, StepEvent::Progress { .. })).count();
        assert_eq!(progress, 1, "{fill:?}");
        assert!(matches!(fill[fill.len() - 2], StepEvent::Progress { done: 1000 }));
        assert!(matches!(fill.last(), Some(StepEvent::End { ok: true, .. })));
        let mkfs: Vec<&StepEvent> = ev.iter().filter(|(n, _)| n == "mkfs").map(|(_, e)| e).collect();
        assert!(matches!(
            mkfs[..],
            [StepEvent::Start { total: None, .. }, StepEvent::End { ok: false, .. }]
        ));
        assert_eq!(names.iter().filter(|n| **n == "inherited").count(), 2);
    }
}
