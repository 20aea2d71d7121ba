//! What the SQLite and PostgreSQL stores share when they read a session back: the queries of
//! its child tables (`{p}` stands for the backend's placeholder of the session id, `?1` or
//! `$1`), the decoding of a case's availability and a sample's status, and the JSON child rows
//! of a sample (latency histograms, throughput series, latency windows), which [`Child`] also
//! writes; and the session's noise estimates (schema 13), written and read through [`noise`].
//!
//! Invariant: both backends read the same rows in the same order and refuse the same
//! inconsistent values with the same words, so a session reads back the same from either.

use super::model::{CaseAvailability, NewSample, NoiseEstimate, SampleRecord, SampleStatus};
use crate::metric::{Direction, LatencyHistogram, LatencyWindows, Measurement, MetricId, Role, ThroughputSeries, Unit};
use std::collections::HashMap;

/// The cases of a session, in the order they were recorded.
pub(crate) fn cases_query(p: &str) -> String {
    format!(
        "SELECT case_id, variant, fs_type, mkfs_args_json, mount_opts_json, workload, \
         workload_kind, workload_json, availability, unavailable_reason \
         FROM cases WHERE session_id = {p} ORDER BY ord"
    )
}

/// The samples of a session, in id order.
pub(crate) fn samples_query(p: &str) -> String {
    format!(
        "SELECT id, case_id, repeat, is_warmup, started_at, wall_s, status, error, \
         device, effective_mount_opts, notes_json, path_facts_json \
         FROM samples WHERE session_id = {p} ORDER BY id"
    )
}

/// The measurements of every sample of a session, by sample and position.
pub(crate) fn metrics_query(p: &str) -> String {
    format!(
        "SELECT m.sample_id, m.phase, m.metric, m.unit, m.direction, m.value, m.role, m.rank \
         FROM metrics AS m JOIN samples AS s ON s.id = m.sample_id \
         WHERE s.session_id = {p} ORDER BY m.sample_id, m.ord"
    )
}

/// A stored measurement from its decoded columns (`rank`: a many-rank session's per-rank row,
/// schema 9).
pub(crate) fn measurement(
    (phase, rank): (String, Option<u32>),
    name: String,
    (unit, direction, role): (Unit, Direction, Role),
    value: f64,
) -> Measurement {
    Measurement {
        phase,
        rank,
        metric: MetricId {
            role,
            name,
            unit,
            direction,
        },
        value,
    }
}

/// A case's availability from its `availability` and `unavailable_reason` columns.
pub(crate) fn availability(case_id: &str, state: &str, reason: Option<String>) -> Result<CaseAvailability, String> {
    match (state, reason) {
        ("available", None) => Ok(CaseAvailability::Available),
        ("unavailable", Some(why)) => Ok(CaseAvailability::Unavailable(why)),
        (state, reason) => Err(format!(
            "case {case_id} has availability `{state}` with reason {reason:?}"
        )),
    }
}

/// A sample's status from its `status` and `error` columns.
pub(crate) fn status(id: i64, state: &str, error: Option<String>) -> Result<SampleStatus, String> {
    match (state, error) {
        ("ok", None) => Ok(SampleStatus::Ok),
        ("failed", Some(e)) => Ok(SampleStatus::Failed(e)),
        (state, error) => Err(format!("sample {id} has status `{state}` with error {error:?}")),
    }
}

/// One stored row of a child table of samples ([`Child`]), as both backends read it.
#[derive(Clone, Debug)]
pub(crate) struct ChildRow {
    /// The sample it belongs to.
    pub sample_id: i64,
    /// Its phase.
    pub phase: String,
    /// The JSON column (`bins_json`, `ops_json`).
    pub json: String,
    /// A many-rank session's per-rank row (schema 9); `None` for the whole repeat's.
    pub rank: Option<u32>,
    /// `latency_windows.window_ms` (milliseconds); `None` in the other tables.
    pub window_ms: Option<i64>,
}

/// One row of a child table ready to insert: `(phase, JSON, rank, window length in ms)`, the
/// last only for [`Child::Windows`].
pub(crate) type NewChildRow<'a> = (&'a str, String, Option<u32>, Option<i64>);

/// A child table of samples whose rows are (sample id, phase, JSON, rank); `rank` (schema 9) is
/// a many-rank session's per-rank row, `NULL` for the whole session's. `latency_windows`
/// (schema 12) has one more column, `window_ms`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Child {
    /// `latency_histograms`: a phase's histogram bins.
    Histograms,
    /// `throughput_series`: a phase's operations per second.
    Series,
    /// `latency_windows`: a phase's histogram of each window (schema 12).
    Windows,
}

impl Child {
    /// Every child table, in the order the stores read them.
    pub(crate) const ALL: [Child; 3] = [Child::Histograms, Child::Series, Child::Windows];

    /// `(alias, JSON column, table)`.
    fn names(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Child::Histograms => ("h", "bins_json", "latency_histograms"),
            Child::Series => ("t", "ops_json", "throughput_series"),
            Child::Windows => ("w", "bins_json", "latency_windows"),
        }
    }

    /// The rows of the table for every sample of a session, by sample and position: sample id,
    /// phase, JSON, rank, window length (`NULL` but in `latency_windows`).
    pub(crate) fn query(self, p: &str) -> String {
        let (alias, json, table) = self.names();
        let window = match self {
            Child::Windows => format!("{alias}.window_ms"),
            Child::Histograms | Child::Series => "CAST(NULL AS BIGINT)".into(),
        };
        format!(
            "SELECT {alias}.sample_id, {alias}.phase, {alias}.{json}, {alias}.rank, {window} \
             FROM {table} AS {alias} JOIN samples AS s ON s.id = {alias}.sample_id \
             WHERE s.session_id = {p} ORDER BY {alias}.sample_id, {alias}.ord"
        )
    }

    /// The insert of one row (`sample_id, ord, phase, json, rank`, and `window_ms` for
    /// [`Child::Windows`]), with the backend's placeholder prefix (`?` or `$`).
    pub(crate) fn insert(self, p: char) -> String {
        let (_, json, table) = self.names();
        match self {
            Child::Windows => format!(
                "INSERT INTO {table} (sample_id, ord, phase, {json}, rank, window_ms) \
                 VALUES ({p}1, {p}2, {p}3, {p}4, {p}5, {p}6)"
            ),
            Child::Histograms | Child::Series => format!(
                "INSERT INTO {table} (sample_id, ord, phase, {json}, rank) VALUES ({p}1, {p}2, {p}3, {p}4, {p}5)"
            ),
        }
    }

    /// The rows of `sample` in this table, in order.
    pub(crate) fn rows(self, sample: &NewSample) -> Vec<NewChildRow<'_>> {
        let json = |v: Result<String, serde_json::Error>| v.unwrap_or_else(|_| "[]".into());
        match self {
            Child::Histograms => sample
                .histograms
                .iter()
                .map(|h| (h.phase.as_str(), json(serde_json::to_string(&h.bins)), None, None))
                .collect(),
            Child::Series => sample
                .series
                .iter()
                .map(|t| (t.phase.as_str(), json(serde_json::to_string(&t.ops)), t.rank, None))
                .collect(),
            Child::Windows => sample
                .windows
                .iter()
                .map(|w| {
                    let ms = i64::try_from(w.window_ms).unwrap_or(i64::MAX);
                    (w.phase.as_str(), json(serde_json::to_string(&w.bins)), w.rank, Some(ms))
                })
                .collect(),
        }
    }

    /// What one row is, for the action of an error storing it (`the PHASE histogram`).
    pub(crate) fn one(self, phase: &str) -> String {
        match self {
            Child::Histograms => format!("the {phase} histogram"),
            Child::Series => format!("the {phase} series"),
            Child::Windows => format!("the {phase} latency windows"),
        }
    }

    /// What the table holds, in the plural (for the action of an error).
    pub(crate) fn plural(self) -> &'static str {
        match self {
            Child::Histograms => "latency histograms",
            Child::Series => "throughput series",
            Child::Windows => "latency windows",
        }
    }

    /// Decodes one row's JSON and appends it to its sample (`index`: sample id → position in
    /// `samples`; a row of a sample not in the index is skipped). The error says which row.
    pub(crate) fn attach(
        self,
        samples: &mut [SampleRecord],
        index: &HashMap<i64, usize>,
        row: ChildRow,
    ) -> Result<(), String> {
        let ChildRow {
            sample_id,
            phase,
            json,
            rank,
            window_ms,
        } = row;
        let sample = index.get(&sample_id).map(|&i| &mut samples[i].sample);
        match self {
            Child::Histograms => {
                let bins = serde_json::from_str(&json)
                    .map_err(|e| format!("latency histogram of sample {sample_id} phase {phase}: {e}"))?;
                if let Some(s) = sample {
                    s.histograms.push(LatencyHistogram { phase, bins });
                }
            }
            Child::Series => {
                let ops = serde_json::from_str(&json)
                    .map_err(|e| format!("throughput series of sample {sample_id} phase {phase}: {e}"))?;
                if let Some(s) = sample {
                    s.series.push(ThroughputSeries { phase, rank, ops });
                }
            }
            Child::Windows => {
                let what = || format!("latency windows of sample {sample_id} phase {phase}");
                let window_ms = window_ms
                    .and_then(|ms| u64::try_from(ms).ok())
                    .filter(|&ms| ms > 0)
                    .ok_or_else(|| format!("{}: window length {window_ms:?} ms", what()))?;
                let bins = serde_json::from_str(&json).map_err(|e| format!("{}: {e}", what()))?;
                if let Some(s) = sample {
                    s.windows.push(LatencyWindows {
                        phase,
                        rank,
                        window_ms,
                        bins,
                    });
                }
            }
        }
        Ok(())
    }
}

/// A sample's path facts as stored (`samples.path_facts_json`, schema 11).
pub(crate) fn path_facts_json(facts: Option<&crate::host::path::PathFacts>) -> Option<String> {
    facts.map(|f| serde_json::to_string(f).expect("path facts serialize"))
}

/// A stored `path_facts_json` read back; text this build cannot read is `None` (the facts are
/// what the report flags, never what it computes from).
pub(crate) fn path_facts(json: Option<&str>) -> Option<crate::host::path::PathFacts> {
    serde_json::from_str(json?).ok()
}

/// The session's noise estimates (schema 13): the SQL both backends run and the decoding of a
/// row, so both store and read them alike.
pub(crate) mod noise {
    use super::{NoiseEstimate, Unit};

    /// A session's rows, in report order.
    pub(crate) fn query(p: &str) -> String {
        format!(
            "SELECT workload, phase, metric, unit, variant, between_sd_pct, sessions, \
             within_sd_pct, session_ids_json FROM noise_estimates WHERE session_id = {p} ORDER BY ord"
        )
    }

    /// Removes a session's rows (before its new ones are inserted).
    pub(crate) fn delete(p: char) -> String {
        format!("DELETE FROM noise_estimates WHERE session_id = {p}1")
    }

    /// The insert of one row: session id, ord, then the columns of [`query`] in its order.
    pub(crate) fn insert(p: char) -> String {
        format!(
            "INSERT INTO noise_estimates (session_id, ord, workload, phase, metric, unit, variant, \
             between_sd_pct, sessions, within_sd_pct, session_ids_json) \
             VALUES ({p}1, {p}2, {p}3, {p}4, {p}5, {p}6, {p}7, {p}8, {p}9, {p}10, {p}11)"
        )
    }

    /// The `session_ids_json` of a row.
    pub(crate) fn ids_json(e: &NoiseEstimate) -> String {
        serde_json::to_string(&e.sessions).expect("ids serialize")
    }

    /// The numbers of `e` a store must refuse when not finite, each with what it is.
    pub(crate) fn numbers(e: &NoiseEstimate) -> impl Iterator<Item = (f64, String)> + '_ {
        let what = move |n: &str| {
            format!(
                "noise estimate {} / {} {} on {}: {n}",
                e.workload, e.phase, e.metric, e.variant
            )
        };
        [(e.between_sd_pct, "between_sd_pct"), (e.within_sd_pct, "within_sd_pct")]
            .into_iter()
            .filter_map(move |(v, n)| v.map(|v| (v, what(n))))
    }

    /// The decoded columns of one row, in [`query`]'s order.
    pub(crate) struct Columns {
        /// workload, phase, metric, unit, variant.
        pub names: [String; 5],
        /// between_sd_pct.
        pub between: Option<f64>,
        /// sessions.
        pub count: i64,
        /// within_sd_pct.
        pub within: Option<f64>,
        /// session_ids_json.
        pub ids: String,
    }

    /// A row read back; its unit, its id list and its count must agree, or the error says why.
    pub(crate) fn decode(c: Columns) -> Result<NoiseEstimate, String> {
        let [workload, phase, metric, unit, variant] = c.names;
        let what = || format!("noise estimate {workload} / {phase} {metric} on {variant}");
        let unit = Unit::parse(&unit).ok_or_else(|| format!("{} has unknown unit `{unit}`", what()))?;
        let sessions: Vec<i64> =
            serde_json::from_str(&c.ids).map_err(|e| format!("{}: session_ids_json ({e})", what()))?;
        if sessions.len() as i64 != c.count {
            return Err(format!(
                "{} counts {} sessions but lists {}",
                what(),
                c.count,
                sessions.len()
            ));
        }
        Ok(NoiseEstimate {
            workload,
            phase,
            metric,
            unit,
            variant,
            between_sd_pct: c.between,
            sessions,
            within_sd_pct: c.within,
        })
    }
}
