//! `fsbench verify --bias-native PAIR/PHASE/METRIC=FACTOR` (hidden, **test-only**): a native
//! workload made wrong on purpose, so a test can show that verify fails when a native metric
//! is off (issue 42, item 7). Every stored sample of the pair's native side gets the compared
//! metric multiplied by `FACTOR` before it is stored, and a note saying so: the session, its
//! report, the verify table and the forest plot all carry the biased value, and nobody can take
//! it for a measurement.
//!
//! Invariants:
//! - Only a metric the pair compares on its native side can be biased (anything else would
//!   change nothing the check reads); an unknown pair or metric, or a factor that is not a
//!   positive finite number, is a usage error (exit 2) before anything runs.
//! - The referee is never touched; `--mismatch` is the referee's counterpart.

use super::pairs;
use crate::plan::Case;
use crate::store::NewSample;

/// One `--bias-native` value: multiply the native `phase metric` of `pair` by `factor`.
#[derive(Clone, Debug, PartialEq)]
pub struct Bias {
    /// Pair id (`treecopy`).
    pub pair: String,
    /// Native phase (`copy`).
    pub phase: String,
    /// Native metric (`device_read_mib`).
    pub metric: String,
    /// The factor every stored value is multiplied by (> 0).
    pub factor: f64,
}

impl std::str::FromStr for Bias {
    type Err = String;

    /// `PAIR/PHASE/METRIC=FACTOR`, e.g. `treecopy/copy/device_read_mib=1.5`; the error says
    /// what is expected.
    fn from_str(s: &str) -> Result<Bias, String> {
        let form = || {
            format!("--bias-native {s:?}: expected PAIR/PHASE/METRIC=FACTOR, e.g. treecopy/copy/device_read_mib=1.5")
        };
        let (what, factor) = s.split_once('=').ok_or_else(form)?;
        let factor: f64 = factor.trim().parse().map_err(|_| form())?;
        let mut parts = what.split('/');
        let (Some(pair), Some(phase), Some(metric), None) = (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(form());
        };
        if !(factor.is_finite() && factor > 0.0) {
            return Err(format!("--bias-native {s:?}: the factor is a positive number"));
        }
        let Some(p) = pairs::pair(pair) else {
            return Err(format!("--bias-native {s:?}: no pair {pair}"));
        };
        if !p.metrics.iter().any(|m| m.native == (phase, metric)) {
            let compared: Vec<String> = p
                .metrics
                .iter()
                .map(|m| format!("{}/{}", m.native.0, m.native.1))
                .collect();
            return Err(format!(
                "--bias-native {s:?}: the {pair} pair compares no native {phase}/{metric}; it compares {}",
                compared.join(", ")
            ));
        }
        Ok(Bias {
            pair: pair.into(),
            phase: phase.into(),
            metric: metric.into(),
            factor,
        })
    }
}

impl Bias {
    /// The note a biased sample carries.
    pub fn note(&self) -> String {
        format!(
            "test-only --bias-native: {} {} of {} multiplied by {} before it was stored (not what was measured)",
            self.phase,
            self.metric,
            self.native_name(),
            self.factor
        )
    }

    fn native_name(&self) -> String {
        pairs::pair(&self.pair).map(pairs::native_name).unwrap_or_default()
    }

    /// Multiplies the metric in `sample` of a repeat of the workload `workload` when it is the
    /// pair's native side; `true` when a value changed (the note is added then).
    pub fn apply(&self, workload: &str, sample: &mut NewSample) -> bool {
        if workload != self.native_name() {
            return false;
        }
        let mut changed = false;
        for m in sample
            .measurements
            .iter_mut()
            .filter(|m| m.rank.is_none() && m.phase == self.phase && m.metric.name == self.metric)
        {
            m.value *= self.factor;
            changed = true;
        }
        if changed {
            sample.notes.push(self.note());
        }
        changed
    }
}

/// The runner's hook of a verify run with `--bias-native` values.
pub struct BiasNative(pub Vec<Bias>);

impl crate::run::SampleHook for BiasNative {
    fn before_store(&self, case: &Case, sample: &mut NewSample) {
        for b in &self.0 {
            b.apply(&case.workload.name, sample);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::{Measurement, MetricId, Unit};

    #[test]
    fn a_bias_multiplies_the_named_native_metric_and_says_so() {
        let b: Bias = "treecopy/copy/device_read_mib=1.5".parse().unwrap();
        assert_eq!((b.pair.as_str(), b.phase.as_str(), b.factor), ("treecopy", "copy", 1.5));
        let mut s = NewSample::new("c".into(), 0, false);
        for (phase, metric, v) in [
            ("copy", "device_read_mib", 20.0),
            ("copy", "time", 2.0),
            ("delete", "device_read_mib", 1.0),
        ] {
            s.measurements.push(Measurement {
                phase: phase.into(),
                rank: None,
                metric: MetricId::lower(metric, Unit::Mib),
                value: v,
            });
        }
        // The referee is never touched.
        assert!(!b.apply("treecopy:cp", &mut s));
        assert!(s.notes.is_empty());
        assert!(b.apply("treecopy:native", &mut s));
        let values: Vec<f64> = s.measurements.iter().map(|m| m.value).collect();
        assert_eq!(values, [30.0, 2.0, 1.0]);
        assert_eq!(
            s.notes,
            ["test-only --bias-native: copy device_read_mib of treecopy:native multiplied by 1.5 before it was stored (not what was measured)"]
        );
    }

    #[test]
    fn a_bias_of_nothing_compared_is_refused() {
        for (bad, says) in [
            ("treecopy/copy/device_read_mib", "expected PAIR/PHASE/METRIC=FACTOR"),
            ("treecopy/copy=2", "expected PAIR/PHASE/METRIC=FACTOR"),
            ("nope/copy/time=2", "no pair nope"),
            (
                "treecopy/copy/nothing=2",
                "compares no native copy/nothing; it compares copy/time",
            ),
            ("treecopy/copy/time=0", "positive"),
            ("treecopy/copy/time=NaN", "positive"),
        ] {
            let e = bad.parse::<Bias>().unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
