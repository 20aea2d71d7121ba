//! The quiesce gate on real loop filesystems: a short run stores one wait per repeat, a
//! hammered device makes the gate time out, and a timed-out gate becomes a report warning.

use crate::require_privileged;
use crate::util::{assert_no_leftovers, fs_variant, fsbench, scratch, text, write_suite, SuiteRun, TINY};
use fsbench::plan::min_image_bytes;
use fsbench::provision::{ImageProvisioner, Provisioner, RunState};
use fsbench::run::quiesce::{self, Gate, Outcome};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

#[test]
fn a_short_run_stores_the_quiesce_wait_of_every_repeat() {
    require_privileged!();
    let dir = scratch();
    let suite = write_suite(dir.path(), "suite.toml", TINY);
    let run = SuiteRun::in_dir(dir.path());
    let o = run.run(&suite, &["--label", "q"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_no_leftovers(&run.scratch);
    let db = run.db_str();
    let o = fsbench(&["--db", db, "report", "latest", "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("valid JSON");
    let samples = j["samples"].as_array().unwrap();
    assert!(samples.len() >= 3, "{}", samples.len());
    for s in samples {
        let waits: Vec<f64> = s["measurements"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["phase"] == quiesce::PHASE && m["metric"]["name"] == quiesce::METRIC)
            .map(|m| {
                assert_eq!(m["metric"]["unit"], "s", "{m}");
                m["value"].as_f64().unwrap()
            })
            .collect();
        assert_eq!(waits.len(), 1, "one wait per repeat in {s}");
        // At least the settle window, at most the timeout plus one interval of slack.
        let settle = quiesce::SAMPLE_INTERVAL.as_secs_f64() * quiesce::SETTLE_SAMPLES as f64;
        let max = (quiesce::TIMEOUT + 2 * quiesce::SAMPLE_INTERVAL).as_secs_f64();
        assert!((settle..=max).contains(&waits[0]), "wait {} s", waits[0]);
        eprintln!("ext4 quiesce wait: {:.3} s", waits[0]);
    }
    // The terminal table keeps to the ranked rows: the detail row is not in it.
    let o = fsbench(&["--db", db, "report", "latest"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!String::from_utf8_lossy(&o.stdout).contains("quiesce"), "{}", text(&o));
}

#[test]
fn a_device_kept_busy_makes_the_gate_time_out_with_a_note() {
    require_privileged!();
    let dir = scratch();
    let state = RunState::create(dir.path()).unwrap();
    let prov = ImageProvisioner::new(state);
    let m = prov
        .provision(&fs_variant("ext4", &[]), min_image_bytes("ext4"), "q-busy")
        .unwrap();
    let dev = m.device.clone().expect("loop device");
    let stop = AtomicBool::new(false);
    let never = AtomicBool::new(false);
    let gate = Gate {
        timeout: Duration::from_millis(1500),
        ..Gate::default()
    };
    let outcome = std::thread::scope(|sc| {
        sc.spawn(|| {
            // Small synced writes, one after another, until the gate has answered.
            let mut f = std::fs::File::create(m.workdir.join("hammer")).unwrap();
            let block = vec![0x5au8; 64 << 10];
            while !stop.load(Ordering::Relaxed) {
                f.write_all(&block).unwrap();
                f.sync_data().unwrap();
            }
        });
        let o = quiesce::wait_idle(&dev, &gate, &never);
        stop.store(true, Ordering::Relaxed);
        o
    })
    .unwrap();
    let Outcome::TimedOut(waited, last) = &outcome else {
        panic!("expected a timeout, got {outcome:?}");
    };
    assert!(*waited >= gate.timeout, "{waited:?}");
    assert!(last.sectors_written > 0, "{last:?}");
    let note = outcome.note(&dev).unwrap();
    assert!(note.contains(&format!("{dev} still busy after 1.")), "{note}");

    // Once the writer stopped, the same device settles within the default timeout.
    let o = quiesce::wait_idle(&dev, &Gate::default(), &never).unwrap();
    assert!(matches!(o, Outcome::Idle(_)), "{o:?}");
    m.teardown().unwrap();
}
