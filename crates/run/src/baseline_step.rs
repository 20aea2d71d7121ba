//! The baseline step of a run: measures the raw device under the target once, before the first
//! case ([`crate::baseline`]), for the report's cache-bound flag.
//!
//! Invariants: it never fails the run (a failure comes back as a failed baseline, which the
//! report turns into a warning); interrupted, it returns `None` so nothing is stored and a
//! resumed session measures again; whatever the provisioner made for the measurement is
//! released before this returns.

use super::observer::Observer;
use super::target::needs_block_device;
use crate::baseline::{self, BaselineError};
use crate::metric::Unit;
use crate::plan::Plan;
use crate::provision::Provisioner;
use crate::store::{BaselineStatus, BaselineValue, RawBaseline};
use std::sync::atomic::{AtomicBool, Ordering};

/// How the baseline is measured, for the report; `what` is the device (`a 512 MiB sparse image …`).
fn baseline_method(what: &str) -> String {
    format!(
        "sequential write (fdatasync included) then read of {what} in 1 MiB requests, before the first case; \
         each direction's rate is its fastest pass: O_DIRECT with {depth} requests in flight, and (read, three \
         times each) buffered with the device's readahead after dropping its page cache; random reads: \
         O_DIRECT {block} KiB requests at random offsets of the bytes written, {depth} in flight, three \
         passes of {ms} ms, the fastest",
        depth = baseline::DEPTH,
        block = baseline::RANDOM_BLOCK / 1024,
        ms = baseline::RANDOM_TIME.as_millis()
    )
}

/// Measures the raw device `provisioner` hands out, or says why there is none. `None` when
/// interrupted.
pub(super) fn measure_baseline(
    provisioner: &dyn Provisioner,
    plan: &Plan,
    interrupt: &AtomicBool,
    obs: &dyn Observer,
) -> Option<RawBaseline> {
    let interrupted = || interrupt.load(Ordering::Relaxed);
    if !needs_block_device(plan) {
        // What the host's block device would not measure: tmpfs lives in memory, and a guest
        // writes to its own virtio image under another kernel.
        let guest = plan.cases.iter().any(|c| c.variant.kernel.is_some());
        return Some(RawBaseline::no_device(if guest {
            "every filesystem of this run is tmpfs or runs in a guest, on the guest's own virtio disk"
        } else {
            "every filesystem of this run is tmpfs, which lives in memory"
        }));
    }
    let raw = match provisioner.raw_device(baseline::DEFAULT_BYTES) {
        Ok(Some(raw)) => raw,
        Ok(None) => {
            return Some(RawBaseline::no_device(format!(
                "{}: fsbench owns no block device there",
                provisioner.describe()
            )))
        }
        Err(_) if interrupted() => return None,
        Err(e) => {
            obs.warning(&format!(
                "raw-device baseline not measured: {e}; the run goes on without it"
            ));
            return Some(RawBaseline {
                status: BaselineStatus::Failed(e.to_string()),
                device: None,
                method: baseline_method("the target's device"),
                note: None,
                values: Vec::new(),
            });
        }
    };
    obs.baseline_started(&raw.path, raw.bytes);
    let result = baseline::measure(&raw.path, raw.bytes, interrupt);
    let mut b = RawBaseline {
        status: BaselineStatus::Measured,
        device: Some(raw.path.display().to_string()),
        method: baseline_method(&raw.what),
        note: raw.note.clone(),
        values: Vec::new(),
    };
    if let Err(e) = raw.release() {
        obs.warning(&format!(
            "cleanup after the raw-device baseline incomplete: {e}; run `fsbench cleanup`"
        ));
    }
    match result {
        Err(BaselineError::Interrupted) => None,
        Err(_) if interrupted() => None,
        Err(e) => {
            obs.warning(&format!("raw-device baseline failed: {e}; the run goes on without it"));
            b.status = BaselineStatus::Failed(e.to_string());
            Some(b)
        }
        Ok(rates) => {
            let value = |name: String, p: baseline::Pass| BaselineValue {
                name,
                value: p.mib_per_sec(),
                unit: Unit::MibPerSec,
                bytes: p.bytes,
                seconds: p.seconds,
            };
            // The two rates the report uses first, then every pass in the order measured.
            b.values = vec![
                value(RawBaseline::SEQ_WRITE.into(), rates.write()),
                value(RawBaseline::SEQ_READ.into(), rates.read()),
            ];
            for (dir, method) in baseline::PASSES {
                let name = match dir {
                    baseline::Dir::Write => format!("{}_{}", RawBaseline::SEQ_WRITE, method.suffix()),
                    baseline::Dir::Read => format!("{}_{}", RawBaseline::SEQ_READ, method.suffix()),
                    // One method: its rate is the one below.
                    baseline::Dir::RandomRead => continue,
                };
                if b.values.iter().all(|v| v.name != name) {
                    b.values.push(value(name, rates.best_of(dir, method)));
                }
            }
            let random = rates.random_read();
            b.values.push(BaselineValue {
                name: RawBaseline::RAND_READ.into(),
                value: rates.random_read_iops(),
                unit: Unit::OpsPerSec,
                bytes: random.bytes,
                seconds: random.seconds,
            });
            Some(b)
        }
    }
}
