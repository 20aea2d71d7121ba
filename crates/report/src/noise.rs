//! Session-to-session noise as a measured quantity (issue 41, item 1): which stored sessions
//! are of one configuration, the between-session sd of every report row estimated from them,
//! computed and stored when a session completes, and the report's section that shows it.
//!
//! **One configuration** ([`same_configuration`]): complete sessions of the same host name,
//! suite name and suite text, with no set-up difference
//! ([`super::methodology::fingerprint_differences`]: kernel, CPU model, CPU count, memory,
//! fsbench and tool versions, target, memory limit, each variant's mkfs and mount options, the
//! I/O path read back) and the same cases: the same variants (name, type, mkfs arguments, mount
//! options) with the same workloads and their parameters after `--scale` (each case's
//! `workload_json`: the sizes). `--fs`, `--only` and `--scale` are not in the suite text, so the
//! cases are what tells `run --scale 0.1` from `run`. The label, the order's seed, the number
//! of repeats and the date are not part of it. `fsbench compare` takes its reference sessions
//! by the same rule ([`references`]), so compare, `report` and `history` mean one thing by
//! "this configuration".
//!
//! **The estimate** ([`estimates`]): per row (workload, phase, metric, variant) of the session,
//! [`crate::stats::sessions::estimate`] from that row's summary in the session and in the
//! newest [`MAX_SESSIONS`] − 1 earlier complete sessions of its configuration: the
//! random-effects (method-of-moments) estimate of τ, the sd of a session mean's ln, about the
//! session-to-session relative sd (doc/statistics.md, "Between sessions"). With fewer than
//! [`MIN_SESSIONS`] usable sessions there is none, and the row keeps how many there were. The
//! repeats' own spread over the same sessions ([`crate::stats::sessions::within_sd_pct`]) is
//! kept beside it, and the ids of the sessions it came from.
//!
//! **When**: computed when a session completes and stored with it ([`record`], called by
//! `run::Runner` as it closes a complete session: `fsbench run`, `noise`, `verify`, and a
//! resumed session once it completes), never by `report` or `history`, which show what is
//! stored. Three reasons: it is a fact about the configuration as of that session (only earlier
//! sessions count), so what a session's report says does not change with what ran after it;
//! the reading commands stay read-only, so a shared PostgreSQL store can be read by users who
//! cannot write and two readers never race to write the same rows; and `history` shows a series'
//! estimate by reading one session instead of rebuilding twenty reports per point. The price:
//! sessions stored before schema 13, interrupted or failed ones and pushed ones (their ids are
//! the local database's) have none, and nothing recomputes them; their reports say nothing of
//! it. The one estimator is `stats::sessions`'; this module only chooses the sessions.
//!
//! **Shown** ([`NoiseSection`]): per headline row and variant, the between-session sd with the
//! number of sessions, or "– (N of 5)" without an estimate; a session whose rows have none says
//! so in one paragraph with the assumed 6 % `compare` then uses and how to measure it (`fsbench
//! noise`, with its cost from this session's wall time). The JSON export carries every row under
//! `session_noise`.
//!
//! Invariants: nothing here changes a stored sample; [`estimates`] is a pure function of the
//! models it is given; a model without stored rows renders "" in every format.

use super::block::{self, Block, Table, Tone};
use super::{role, ReportModel, Section};
use crate::metric::MetricId;
use crate::stats::sessions::{self, ASSUMED_SESSION_SD_PCT, MIN_SESSIONS};
use crate::stats::two_sample::Sample;
use crate::store::{NoiseEstimate, ResultStore, SessionData, SessionRecord, SessionStatus, StoreError};

/// Most sessions an estimate comes from, the session itself counted, and most reference
/// sessions `compare` reads: the newest 20 of the configuration.
pub const MAX_SESSIONS: usize = 20;

/// The target with the run's private folder (`run-<pid>-<secs>`, different every run) made
/// generic, as [`super::methodology::fingerprint_differences`] compares it.
fn target_pattern(t: &str) -> String {
    t.split('/')
        .map(|p| if p.starts_with("run-") { "run-*" } else { p })
        .collect::<Vec<_>>()
        .join("/")
}

/// What two session records already tell of one configuration, before their data is read: the
/// same host (name, kernel, CPU, memory), suite name and text, fsbench version, target, memory
/// limit, and the same versions of the tools both recorded. Necessary, not sufficient: the
/// cases and the I/O path need the sessions' data ([`same_configuration`]).
fn may_share(a: &SessionRecord, b: &SessionRecord) -> bool {
    let (x, y) = (&a.info, &b.info);
    x.host == y.host
        && x.suite_name == y.suite_name
        && x.suite_text == y.suite_text
        && x.fsbench_version == y.fsbench_version
        && target_pattern(&x.target) == target_pattern(&y.target)
        && x.policy.memory == y.policy.memory
        && x.tool_versions
            .iter()
            .all(|(tool, version)| y.tool_versions.iter().all(|(other, v)| other != tool || v == version))
}

/// The cases of `m` as the configuration sees them: variant, type, mkfs arguments, mount
/// options, workload, kind and parameters, in a fixed order.
fn case_keys(m: &ReportModel) -> Vec<[String; 7]> {
    let mut keys: Vec<[String; 7]> = m
        .cases
        .iter()
        .map(|c| {
            [
                c.variant.clone(),
                c.fs_type.clone(),
                c.mkfs_args.join("\u{1f}"),
                c.mount_opts.join("\u{1f}"),
                c.workload.clone(),
                c.workload_kind.clone(),
                c.workload_json.clone(),
            ]
        })
        .collect();
    keys.sort();
    keys
}

/// Whether `a` and `b` are sessions of one configuration (see the module docs): the same host
/// and suite, no set-up difference, the same variants, workloads and sizes. Their status is not
/// looked at.
pub fn same_configuration(a: &ReportModel, b: &ReportModel) -> bool {
    a.session.info.host.hostname == b.session.info.host.hostname
        && may_share(&a.session, &b.session)
        && case_keys(a) == case_keys(b)
        && super::methodology::fingerprint_differences(a, b).is_empty()
}

/// How a stored session is read into a report model: its data through `load`, summarised with
/// its own policy's trim and confidence.
fn model_of(load: &dyn Fn(i64) -> Result<SessionData, StoreError>, id: i64) -> Result<ReportModel, StoreError> {
    let data = load(id)?;
    let policy = &data.session.info.policy;
    Ok(super::build(&data, policy.trim as usize, policy.confidence))
}

/// The complete sessions of `base`'s configuration among `sessions` for which `take` holds,
/// newest first (by start time, then id), at most `limit`, read through `load`. Only records
/// that [`may_share`] the base's are read.
pub fn configuration_sessions(
    sessions: &[SessionRecord],
    load: &dyn Fn(i64) -> Result<SessionData, StoreError>,
    base: &ReportModel,
    take: &dyn Fn(&SessionRecord) -> bool,
    limit: usize,
) -> Result<Vec<ReportModel>, StoreError> {
    let mut candidates: Vec<&SessionRecord> = sessions
        .iter()
        .filter(|s| s.status == SessionStatus::Complete && may_share(&base.session, s) && take(s))
        .collect();
    candidates.sort_by(|x, y| (&y.started_at, y.id).cmp(&(&x.started_at, x.id)));
    let mut out = Vec::new();
    for s in candidates {
        if out.len() == limit {
            break;
        }
        let model = model_of(load, s.id)?;
        if same_configuration(base, &model) {
            out.push(model);
        }
    }
    Ok(out)
}

/// `compare`'s reference sessions: the other complete sessions of `base`'s configuration in
/// `store`, newest first, at most [`MAX_SESSIONS`]; never the base or the candidate `cand`.
pub fn references(store: &dyn ResultStore, base: &ReportModel, cand: i64) -> Result<Vec<ReportModel>, StoreError> {
    let sessions = store.list_sessions()?;
    let base_id = base.session.id;
    configuration_sessions(
        &sessions,
        &|id| store.load_session(id),
        base,
        &|s| s.id != base_id && s.id != cand,
        MAX_SESSIONS,
    )
}

/// One row of a model, flattened: ((workload, phase, metric), variant) → summary as a sample.
type Flat<'a> = Vec<((&'a str, &'a str, &'a MetricId, &'a str), Sample)>;

fn flatten(model: &ReportModel) -> Flat<'_> {
    let mut out = Vec::new();
    for t in &model.workloads {
        for r in &t.rows {
            for c in r.cells.iter().filter(|c| c.summary.n > 0) {
                out.push((
                    (t.workload.as_str(), r.phase.as_str(), &r.metric, c.variant.as_str()),
                    Sample::from(&c.summary),
                ));
            }
        }
    }
    out
}

/// The noise estimate of every row of `session` (every cell with a measured repeat, in the
/// report's order) from it and `earlier`, the earlier sessions of its configuration, newest
/// first (see the module docs). Pure: the sessions are the caller's choice.
pub fn estimates(session: &ReportModel, earlier: &[ReportModel]) -> Vec<NoiseEstimate> {
    let others: Vec<(i64, Flat<'_>)> = earlier.iter().map(|m| (m.session.id, flatten(m))).collect();
    flatten(session)
        .into_iter()
        .map(|(key, own)| {
            let (workload, phase, metric, variant) = key;
            let mut used: Vec<(i64, Sample)> = std::iter::once((session.session.id, own))
                .chain(
                    others
                        .iter()
                        .filter_map(|(id, rows)| rows.iter().find(|(k, _)| *k == key).map(|(_, s)| (*id, *s))),
                )
                .collect();
            used.retain(|(_, s)| sessions::usable(&[*s]) == 1);
            let samples: Vec<Sample> = used.iter().map(|(_, s)| *s).collect();
            NoiseEstimate {
                workload: workload.to_string(),
                phase: phase.to_string(),
                metric: metric.name.clone(),
                unit: metric.unit,
                variant: variant.to_string(),
                between_sd_pct: sessions::estimate(&samples).map(|b| b.sd_pct()),
                sessions: used.iter().map(|(id, _)| *id).collect(),
                within_sd_pct: sessions::within_sd_pct(&samples),
            }
        })
        .collect()
}

/// Computes the noise estimates of stored session `session` from it and the earlier complete
/// sessions of its configuration in `store` (the newest [`MAX_SESSIONS`] − 1 that started
/// before it), stores them with it ([`ResultStore::record_noise`], replacing any) and returns
/// them. What the runner calls when a session completes.
pub fn record(store: &dyn ResultStore, session: i64) -> Result<Vec<NoiseEstimate>, StoreError> {
    let sessions = store.list_sessions()?;
    let load = |id| store.load_session(id);
    let model = model_of(&load, session)?;
    let me = (model.session.started_at.clone(), model.session.id);
    let earlier = configuration_sessions(
        &sessions,
        &load,
        &model,
        &|s| (s.started_at.clone(), s.id) < me,
        MAX_SESSIONS - 1,
    )?;
    let rows = estimates(&model, &earlier);
    store.record_noise(session, &rows)?;
    Ok(rows)
}

/// A session's wall time in seconds (`finished_at − started_at`), when it has both.
pub fn wall_s(s: &SessionRecord) -> Option<i64> {
    let start = crate::store::parse_rfc3339(&s.started_at)?;
    let end = crate::store::parse_rfc3339(s.finished_at.as_deref()?)?;
    (end >= start).then_some(end - start)
}

/// `2.4 s`, `45 s`, `3 min 20 s`, `2 h 05 min`: a wall time for a reader.
pub fn duration_text(seconds: f64) -> String {
    if seconds < 9.95 {
        return format!("{:.1} s", seconds.max(0.0));
    }
    let s = seconds.round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, s % 3600 / 60),
    }
}

/// A percentage of the section: one decimal (`2.1 %`), as compare's `between_sd_pct` reads.
pub fn pct_text(x: f64) -> String {
    format!("{x:.1} %")
}

/// One cell of the section: `2.1 % (6)`, or `– (3 of 5)` without an estimate.
pub fn cell_text(e: &NoiseEstimate) -> String {
    match e.between_sd_pct {
        Some(sd) => format!("{} ({})", pct_text(sd), e.sessions.len()),
        None => format!("– ({} of {MIN_SESSIONS})", e.sessions.len()),
    }
}

/// The tooltip of a cell: what it came from.
fn cell_title(e: &NoiseEstimate) -> String {
    let ids: Vec<String> = e.sessions.iter().map(i64::to_string).collect();
    let from = if ids.is_empty() {
        "no usable session (fewer than two measured repeats)".to_string()
    } else {
        format!("sessions {}", ids.join(", "))
    };
    let within = e
        .within_sd_pct
        .map(|w| format!("; the repeats' own sd {}", pct_text(w)))
        .unwrap_or_default();
    match e.between_sd_pct {
        Some(sd) => format!("between-session sd {} from {from}{within}", pct_text(sd)),
        None => format!(
            "not measured: {} of the {MIN_SESSIONS} sessions an estimate needs ({from}){within}",
            e.sessions.len()
        ),
    }
}

/// The noise rows of `model`'s headline rows, in its order.
fn headline(model: &ReportModel) -> Vec<&NoiseEstimate> {
    model
        .session_noise
        .iter()
        .filter(|e| {
            model.workloads.iter().any(|t| {
                t.workload == e.workload
                    && t.rows.iter().any(|r| {
                        r.phase == e.phase
                            && r.metric.name == e.metric
                            && r.metric.unit == e.unit
                            && role::is_headline(&r.metric)
                    })
            })
        })
        .collect()
}

/// The session-to-session noise section of a session's report (see the module docs).
pub struct NoiseSection;

/// Its heading, in every format.
pub const HEADING: &str = "Session-to-session noise";

impl NoiseSection {
    /// The paragraph of a session whose headline rows have no estimate: how many sessions the
    /// configuration has, the assumed sd `compare` uses until then, and how to measure it.
    fn not_measured(model: &ReportModel, rows: &[&NoiseEstimate]) -> String {
        let have = rows.iter().map(|e| e.sessions.len()).max().unwrap_or(0);
        let missing = MIN_SESSIONS.saturating_sub(have).max(2);
        let cost = wall_s(&model.session)
            .filter(|&s| s > 0)
            .map(|s| {
                format!(
                    " (about {missing} × {}, this session's wall time)",
                    duration_text(s as f64)
                )
            })
            .unwrap_or_default();
        format!(
            "Not measured: this configuration (host, kernel, suite, variants and sizes) has {have} of the {MIN_SESSIONS} complete sessions an estimate needs. Until it has them, `fsbench compare` assumes each session carries its own {ASSUMED_SESSION_SD_PCT} % (sd) on every row, so it calls only drops of about 20 % on every row, or 30 % on one, worse. `fsbench noise --sessions {missing}` with this session's suite and options measures it{cost}: A/A sessions of the same suite, each stored, then the estimate per row."
        )
    }
}

impl Section for NoiseSection {
    fn blocks(&self, model: &ReportModel) -> Vec<Block> {
        let rows = headline(model);
        if rows.is_empty() {
            return Vec::new();
        }
        let mut out = vec![Block::Heading {
            level: 2,
            text: HEADING.into(),
            id: Some("session-noise".into()),
        }];
        if rows.iter().all(|e| e.between_sd_pct.is_none()) {
            out.push(Block::paragraph(Self::not_measured(model, &rows)));
            return out;
        }
        out.push(Block::paragraph(format!(
            "How far a session's mean moves from one session of this configuration (host, kernel, suite, variants and sizes) to the next, beyond what its repeats say: the between-session sd of each headline row, percent, estimated when this session completed from it and the earlier complete sessions of its configuration (random effects on the session means, doc/statistics.md), with the number of sessions in brackets; 0.0 %: the sessions differ no more than their repeats say. `fsbench compare` counts it in every test; a row marked – (N of {MIN_SESSIONS}) has too few sessions and takes the assumed {ASSUMED_SESSION_SD_PCT} %."
        )));
        // One row per headline (workload, phase, metric), one column per variant.
        let mut keys: Vec<(&str, &str, &str, &str)> = Vec::new();
        for e in &rows {
            let k = (
                e.workload.as_str(),
                e.phase.as_str(),
                e.metric.as_str(),
                e.unit.as_str(),
            );
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        let variants: Vec<&String> = model
            .variants
            .iter()
            .filter(|v| rows.iter().any(|e| &e.variant == *v))
            .collect();
        let table_rows = keys
            .iter()
            .map(|&(w, p, m, u)| {
                let mut cells: Vec<block::Cell> = vec![w.into(), p.into(), format!("{m} ({u})").into()];
                for v in &variants {
                    let e = rows.iter().find(|e| {
                        (
                            e.workload.as_str(),
                            e.phase.as_str(),
                            e.metric.as_str(),
                            e.unit.as_str(),
                        ) == (w, p, m, u)
                            && &e.variant == *v
                    });
                    cells.push(match e {
                        Some(e) => block::Cell {
                            text: cell_text(e),
                            tone: e.between_sd_pct.is_none().then_some(Tone::Grey),
                            title: Some(cell_title(e)),
                            heat: None,
                        },
                        None => "".into(),
                    });
                }
                cells
            })
            .collect();
        let mut head: Vec<String> = vec!["workload".into(), "phase".into(), "metric".into()];
        head.extend(variants.iter().map(|v| v.to_string()));
        out.push(Block::Table(Table {
            class: Some("noise".into()),
            head,
            rows: table_rows,
            numeric_from: Some(3),
            ..Table::default()
        }));
        out
    }

    fn text(&self, model: &ReportModel) -> String {
        block::text(&self.blocks(model))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::session_data;

    /// The fixture as session `id`, started `minute` minutes past 10, with every measured value
    /// of ext4's bonnie rows times `factor`.
    fn session(id: i64, minute: u32, factor: f64) -> SessionData {
        let mut d = session_data();
        d.session.id = id;
        d.session.started_at = format!("2026-03-01T10:{minute:02}:00Z");
        d.session.finished_at = Some(format!("2026-03-01T10:{minute:02}:45Z"));
        d.session.info.target = format!("loop images in /var/tmp/fsbench/run-{id}-{minute}");
        for s in &mut d.samples {
            if s.sample.case_id == "ext4-bonnie" {
                for m in &mut s.sample.measurements {
                    m.value *= factor;
                }
            }
        }
        d
    }

    fn model(d: &SessionData) -> ReportModel {
        super::super::build(d, 1, 0.95)
    }

    #[test]
    fn the_configuration_is_host_suite_setup_variants_and_sizes() {
        let base = model(&session(1, 0, 1.0));
        let same = model(&session(2, 1, 1.3));
        assert!(
            same_configuration(&base, &same),
            "values, id and date are not the configuration"
        );
        let mut labelled = session(3, 2, 1.0);
        labelled.session.info.label = Some("aa-3".into());
        labelled.session.info.policy.repeats = 9;
        labelled.session.info.target = "loop images in /var/tmp/fsbench/run-99-1".into();
        assert_ne!(labelled.session.info.target, base.session.info.target);
        assert!(
            same_configuration(&base, &model(&labelled)),
            "label, repeats, run folder"
        );
        let differs = |edit: &dyn Fn(&mut SessionData)| {
            let mut d = session(4, 3, 1.0);
            edit(&mut d);
            !same_configuration(&base, &model(&d))
        };
        assert!(differs(&|d| d.session.info.host.hostname = "bench-2".into()));
        assert!(differs(&|d| d.session.info.host.kernel = "6.12.0".into()));
        assert!(differs(&|d| d.session.info.host.mem_bytes = 4 << 30));
        assert!(differs(&|d| d.session.info.suite_text.push_str("# edited\n")));
        assert!(differs(&|d| d.session.info.suite_name = "other".into()));
        assert!(differs(&|d| d.session.info.tool_versions[0].1 = "1.47.2".into()));
        assert!(differs(&|d| d.session.info.policy.memory = Some(1 << 30)));
        assert!(differs(&|d| d.session.info.target = "directory /mnt/x".into()));
        // Sizes: the same workload scaled (its parameters after --scale).
        assert!(differs(
            &|d| d.cases[0].workload_json = r#"{"file_size":"16MiB"}"#.into()
        ));
        // Variants: one left out (--fs), or mounted otherwise.
        assert!(differs(&|d| d.cases.retain(|c| c.variant != "xfs")));
        assert!(differs(&|d| d.cases[0].mount_opts.push("discard".into())));
    }

    /// `load` over `datas` for the store-shaped functions.
    fn loader(datas: &[SessionData]) -> impl Fn(i64) -> Result<SessionData, StoreError> + '_ {
        move |id| {
            datas
                .iter()
                .find(|d| d.session.id == id)
                .cloned()
                .ok_or_else(|| StoreError::NoSuchSession(id.to_string()))
        }
    }

    #[test]
    fn sessions_of_the_configuration_are_complete_ones_newest_first_within_the_limit() {
        let mut datas: Vec<SessionData> = (1..=6).map(|i| session(i, i as u32, 1.0)).collect();
        datas[1].session.status = SessionStatus::Interrupted;
        datas[2].session.info.host.kernel = "6.12.0".into();
        // Session 6 started before session 5 (a clock set back, a pushed session).
        datas[5].session.started_at = "2026-03-01T09:00:00Z".into();
        let records: Vec<SessionRecord> = datas.iter().map(|d| d.session.clone()).collect();
        let base = model(&datas[0]);
        let load = loader(&datas);
        let ids = |take: &dyn Fn(&SessionRecord) -> bool, limit| -> Vec<i64> {
            configuration_sessions(&records, &load, &base, take, limit)
                .unwrap()
                .iter()
                .map(|m| m.session.id)
                .collect()
        };
        assert_eq!(ids(&|_| true, 20), [5, 4, 1, 6]);
        assert_eq!(ids(&|s| s.id != 1, 2), [5, 4]);
    }

    #[test]
    fn estimates_per_row_come_from_the_usable_sessions_and_need_five() {
        // Five sessions whose ext4 bonnie rows sit 0, +4, −3, +1, +10 % from the first.
        let factors = [1.0, 1.04, 0.97, 1.01, 1.10];
        let datas: Vec<SessionData> = factors
            .iter()
            .enumerate()
            .map(|(i, &f)| session(i as i64 + 1, i as u32, f))
            .collect();
        let models: Vec<ReportModel> = datas.iter().map(model).collect();
        let newest = &models[4];
        let earlier: Vec<ReportModel> = models[..4].iter().rev().cloned().collect();
        let rows = estimates(newest, &earlier);
        let row = |phase: &str, metric: &str, variant: &str| {
            rows.iter()
                .find(|e| e.phase == phase && e.metric == metric && e.variant == variant)
                .unwrap_or_else(|| panic!("{phase} {metric} {variant}: {rows:?}"))
        };
        let tput = row("seq_write_block", "throughput", "ext4");
        assert_eq!(tput.sessions, [5, 4, 3, 2, 1]);
        // The one estimator: stats::sessions::estimate of the five summaries.
        let samples: Vec<Sample> = models
            .iter()
            .rev()
            .map(|m| {
                let c = &m.workloads[0].rows[0].cells[0];
                assert_eq!(
                    (c.variant.as_str(), m.workloads[0].rows[0].phase.as_str()),
                    ("ext4", "seq_write_block")
                );
                Sample::from(&c.summary)
            })
            .collect();
        let expected = sessions::estimate(&samples).unwrap().sd_pct();
        assert_eq!(tput.between_sd_pct, Some(expected));
        assert!(expected > 2.0, "the +10 % session shows: {expected}");
        assert_eq!(tput.within_sd_pct, sessions::within_sd_pct(&samples));
        // xfs is the same in every session: an estimate of 0.
        assert_eq!(row("seq_write_block", "throughput", "xfs").between_sd_pct, Some(0.0));
        // Four sessions: no estimate, and the count says so.
        let four = estimates(newest, &earlier[..3]);
        let t4 = four
            .iter()
            .find(|e| e.phase == "seq_write_block" && e.metric == "throughput" && e.variant == "ext4")
            .unwrap();
        assert_eq!((t4.between_sd_pct, t4.sessions.len()), (None, 4));
        assert_eq!(cell_text(t4), "– (4 of 5)");
        assert_eq!(cell_text(tput), format!("{expected:.1} % (5)"));
    }

    /// A store over `datas` that keeps what `record_noise` writes.
    struct Memory {
        datas: std::sync::Mutex<Vec<SessionData>>,
    }

    impl ResultStore for Memory {
        fn location(&self) -> String {
            "memory".into()
        }
        fn begin_session(&self, _: &crate::store::NewSession) -> Result<i64, StoreError> {
            unimplemented!()
        }
        fn record_case(&self, _: i64, _: &crate::store::CaseRecord) -> Result<(), StoreError> {
            unimplemented!()
        }
        fn record_sample(&self, _: i64, _: &crate::store::NewSample) -> Result<i64, StoreError> {
            unimplemented!()
        }
        fn update_run_options(&self, _: i64, _: &str) -> Result<(), StoreError> {
            unimplemented!()
        }
        fn finish_session(&self, _: i64, _: SessionStatus) -> Result<(), StoreError> {
            unimplemented!()
        }
        fn record_baseline(&self, _: i64, _: &crate::store::RawBaseline) -> Result<(), StoreError> {
            unimplemented!()
        }
        fn load_baseline(&self, _: i64) -> Result<Option<crate::store::RawBaseline>, StoreError> {
            unimplemented!()
        }
        fn record_noise(&self, session: i64, rows: &[NoiseEstimate]) -> Result<(), StoreError> {
            let mut datas = self.datas.lock().unwrap();
            let d = datas.iter_mut().find(|d| d.session.id == session).unwrap();
            d.noise = rows.to_vec();
            Ok(())
        }
        fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError> {
            let datas = self.datas.lock().unwrap();
            Ok(datas.iter().rev().map(|d| d.session.clone()).collect())
        }
        fn resolve(&self, r: &str) -> Result<i64, StoreError> {
            r.parse().map_err(|_| StoreError::NoSuchSession(r.into()))
        }
        fn load_session(&self, id: i64) -> Result<SessionData, StoreError> {
            loader(&self.datas.lock().unwrap())(id)
        }
    }

    #[test]
    fn record_uses_earlier_sessions_only_and_the_section_shows_what_is_stored() {
        let factors = [1.0, 1.04, 0.97, 1.01, 1.10, 0.9];
        let store = Memory {
            datas: std::sync::Mutex::new(
                factors
                    .iter()
                    .enumerate()
                    .map(|(i, &f)| session(i as i64 + 1, i as u32, f))
                    .collect(),
            ),
        };
        // Session 3 of six: itself and the two before it, never the later ones.
        let rows = record(&store, 3).unwrap();
        assert!(rows.iter().all(|e| e.sessions.iter().all(|&s| s <= 3)), "{rows:?}");
        let stored = store.load_session(3).unwrap();
        assert_eq!(stored.noise, rows);
        let m3 = model(&stored);
        assert_eq!(m3.session_noise, rows, "the model carries what is stored");
        let md = NoiseSection.markdown(&m3).replace('\\', "");
        assert!(md.contains("## Session-to-session noise"), "{md}");
        assert!(md.contains("has 3 of the 5 complete sessions"), "{md}");
        assert!(md.contains("assumes each session carries its own 6 % (sd)"), "{md}");
        assert!(md.contains("`fsbench noise --sessions 2`"), "{md}");
        assert!(md.contains("about 2 × 45 s, this session's wall time"), "{md}");
        // Session 5: five sessions, an estimate per row in a table, variants as columns.
        record(&store, 5).unwrap();
        let m5 = model(&store.load_session(5).unwrap());
        let text = NoiseSection.text(&m5);
        assert!(text.contains("Session-to-session noise"), "{text}");
        let line = text
            .lines()
            .find(|l| l.contains("seq_write_block"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(line.contains("throughput (MiB/s)") && line.contains("% (5)"), "{line}");
        let html = NoiseSection.html(&m5);
        assert!(html.contains("<h2 id=\"session-noise\">"), "{html}");
        assert!(html.contains("title=\"between-session sd "), "{html}");
        // Only headline rows: no CPU or latency row in the section.
        assert!(!text.contains("cpu_process") && !text.contains("lat_p99"), "{text}");
        // The JSON export carries every stored row, CPU and latency ones too.
        let json: serde_json::Value = serde_json::from_str(&crate::render(&m5, crate::Format::Json, &[])).unwrap();
        let exported = json["session_noise"].as_array().unwrap();
        assert_eq!(exported.len(), m5.session_noise.len());
        assert!(exported.iter().any(|e| e["metric"] == "cpu_process"));
        // A session without stored rows (before schema 13, interrupted): nothing, in every
        // format, and no `session_noise` in its export.
        let old = model(&session_data());
        assert_eq!(NoiseSection.markdown(&old), "");
        assert_eq!(NoiseSection.text(&old), "");
        assert!(!crate::render(&old, crate::Format::Json, &[]).contains("session_noise"));
    }

    #[test]
    fn wall_times_read_from_the_session_and_durations_read_well() {
        let d = session(1, 5, 1.0);
        assert_eq!(wall_s(&d.session), Some(45));
        let mut running = d.session.clone();
        running.finished_at = None;
        assert_eq!(wall_s(&running), None);
        assert_eq!(duration_text(45.4), "45 s");
        assert_eq!(duration_text(2.44), "2.4 s");
        assert_eq!(duration_text(9.96), "10 s");
        assert_eq!(duration_text(200.0), "3 min 20 s");
        assert_eq!(duration_text(7500.0), "2 h 05 min");
    }
}
