//! The shared results store on PostgreSQL (`--db postgres://user@host/dbname`, or
//! `FSBENCH_DB`): the same tables as the SQLite store (`pg_migrations/*.sql` are
//! `migrations/*.sql` translated where the SQL differs), written and read through the same
//! [`ResultStore`] methods, so `run`, `report`, `history` and `list sessions` work on either.
//!
//! Many machines write at once: every write is one transaction (a repeat and all its
//! measurements commit together, as in SQLite), and ids are server-assigned identities, so two
//! hosts' sessions never collide. Migrations run under a transaction-scoped advisory lock, so
//! two writers starting together on an empty database apply them once. The schema version is
//! the row of `fsbench_schema`; a newer one is refused.
//!
//! `fsbench push` ([`PgStore::push`]) copies a session read from SQLite with its `origin`
//! (`hostname:database path:local id:started_at`), unique in `sessions`: pushing it again finds
//! it and copies nothing.
//!
//! The client is the `postgres` crate (synchronous); the URL (or key=value string) is parsed by
//! it, so a unix socket is `postgresql:///db?host=/run/postgresql&user=me`.

use super::model::*;
use super::read;
use super::sqlite::StoreError;
use super::time::now_rfc3339;
use super::ResultStore;
use crate::metric::{Direction, Role, Unit};
use crate::policy::{Order, Policy};
use postgres::{Client, NoTls, Row, Transaction};
use std::collections::HashMap;
use std::sync::Mutex;

/// The PostgreSQL migrations: (schema version, SQL), each the PostgreSQL form of the SQLite
/// migration of the same number; PostgreSQL-only ones count from 1001 (`origin` of pushed
/// sessions), so SQLite's numbers stay shared. Ascending: the newest is the last.
const MIGRATIONS: &[(i32, &str)] = &[
    (1, include_str!("pg_migrations/001_init.sql")),
    (2, include_str!("pg_migrations/002_baselines.sql")),
    (3, include_str!("pg_migrations/003_metric_roles.sql")),
    (4, include_str!("pg_migrations/004_session_policy.sql")),
    (5, include_str!("pg_migrations/005_adaptive_policy.sql")),
    (6, include_str!("pg_migrations/006_latency_histograms.sql")),
    (7, include_str!("pg_migrations/007_throughput_series.sql")),
    (8, include_str!("pg_migrations/008_rank_hosts.sql")),
    (9, include_str!("pg_migrations/009_metric_rank.sql")),
    (10, include_str!("pg_migrations/010_run_options.sql")),
    (11, include_str!("pg_migrations/011_path_facts.sql")),
    (12, include_str!("pg_migrations/012_latency_windows.sql")),
    (13, include_str!("pg_migrations/013_noise_estimates.sql")),
    (1001, include_str!("pg_migrations/1001_origin.sql")),
];

/// Columns of `rank_hosts` (schema 8), in the order they are written and read.
const RANK_HOST_COLUMNS: &str = "session_id, rank, hostname, kernel, cpu_model, ncpu, mem_bytes, dir, \
     mount_point, mount_source, fs_type, mount_opts, super_opts, clock_offset_ns, clock_rtt_ns";

/// The first PostgreSQL-only migration number.
const PG_ONLY_FROM: i32 = 1001;

/// The newest shared migration when [`PG_ONLY_FROM`] was introduced: a database at a
/// PostgreSQL-only version from before `fsbench_migrations` existed had exactly the shared
/// ones up to this.
const SHARED_BEFORE_PG_ONLY: i32 = 7;

/// Key of the advisory lock that serialises migrations.
const MIGRATION_LOCK: i64 = 0x0066_7362_656e_6368; // "fsbench" in ASCII

const SESSION_COLUMNS: &str = "id, started_at, finished_at, status, label, suite_name, \
     suite_text, args_json, fsbench_version, hostname, kernel, cpu_model, ncpu, mem_bytes, target, \
     policy_repeats, policy_warmup, policy_order, policy_drop_caches, policy_trim, policy_confidence, \
     policy_memory_bytes, policy_precision_pct, policy_budget_s, policy_methodology, run_options_json";

/// Whether `db` names a PostgreSQL database rather than a SQLite file.
pub fn is_postgres_url(db: &str) -> bool {
    db.starts_with("postgres://") || db.starts_with("postgresql://")
}

/// `url` without its password, for messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let user = &url[s + 3..at];
            match user.find(':') {
                Some(c) => format!("{}{}:***{}", &url[..s + 3], &user[..c], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

/// One connection to a PostgreSQL results database.
pub struct PgStore {
    client: Mutex<Client>,
    url: String,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

type Bad = String;

impl PgStore {
    /// Connects to `url` and brings its schema up to date.
    pub fn open(url: &str) -> Result<PgStore, StoreError> {
        let shown = redact(url);
        let client = Client::connect(url, NoTls).map_err(|source| StoreError::Postgres {
            url: shown.clone(),
            action: "connecting".into(),
            source,
        })?;
        let store = PgStore {
            client: Mutex::new(client),
            url: shown,
        };
        store.migrate()?;
        Ok(store)
    }

    fn err(&self, action: impl Into<String>) -> impl FnOnce(postgres::Error) -> StoreError {
        let url = self.url.clone();
        let action = action.into();
        move |source| StoreError::Postgres { url, action, source }
    }

    fn bad(&self, action: &str) -> impl FnOnce(Bad) -> StoreError {
        let path = self.url.clone();
        let action = action.to_string();
        move |what| StoreError::Corrupt {
            path,
            what: format!("{action}: {what}"),
        }
    }

    fn client(&self) -> std::sync::MutexGuard<'_, Client> {
        self.client.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn migrate(&self) -> Result<(), StoreError> {
        let action = "applying schema migrations";
        let mut c = self.client();
        let mut tx = c.transaction().map_err(self.err(action))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .map_err(self.err(action))?;
        tx.batch_execute("CREATE TABLE IF NOT EXISTS fsbench_schema (version INTEGER NOT NULL)")
            .map_err(self.err(action))?;
        let found: Option<i32> = tx
            .query_opt("SELECT version FROM fsbench_schema", &[])
            .map_err(self.err(action))?
            .map(|r| r.get(0));
        let newest = MIGRATIONS.last().map_or(0, |m| m.0);
        let found = match found {
            Some(v) if v > newest => {
                return Err(StoreError::TooNew {
                    path: self.url.clone(),
                    found: v.into(),
                    supported: newest as u32,
                })
            }
            Some(v) => v,
            None => {
                tx.execute("INSERT INTO fsbench_schema (version) VALUES (0)", &[])
                    .map_err(self.err(action))?;
                0
            }
        };
        // Which migrations ran is kept per version: a shared migration numbered below the
        // PostgreSQL-only ones (008 after 1001) must still run on a database already at 1001.
        // A database from before this table had every migration up to its version, except
        // that one at a PostgreSQL-only version had the shared ones only up to
        // SHARED_BEFORE_PG_ONLY (the newest when 1001 came).
        tx.batch_execute("CREATE TABLE IF NOT EXISTS fsbench_migrations (version INTEGER PRIMARY KEY)")
            .map_err(self.err(action))?;
        let mut applied: Vec<i32> = tx
            .query("SELECT version FROM fsbench_migrations", &[])
            .map_err(self.err(action))?
            .iter()
            .map(|r| r.get(0))
            .collect();
        if applied.is_empty() {
            applied = MIGRATIONS
                .iter()
                .map(|m| m.0)
                .filter(|&v| v <= found && (v <= SHARED_BEFORE_PG_ONLY || v >= PG_ONLY_FROM || found < PG_ONLY_FROM))
                .collect();
            for v in &applied {
                tx.execute("INSERT INTO fsbench_migrations (version) VALUES ($1)", &[v])
                    .map_err(self.err(action))?;
            }
        }
        for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| !applied.contains(v)) {
            tx.batch_execute(sql)
                .map_err(self.err(format!("{action}: version {version}")))?;
            tx.execute("INSERT INTO fsbench_migrations (version) VALUES ($1)", &[version])
                .map_err(self.err(action))?;
            tx.execute("UPDATE fsbench_schema SET version = GREATEST(version, $1)", &[version])
                .map_err(self.err(action))?;
        }
        tx.commit().map_err(self.err(action))
    }

    /// Copies `data` (a session read from another store) unless a session with the same
    /// `origin` is already here; returns the id here and whether it was copied now.
    pub fn push(&self, origin: &str, data: &SessionData) -> Result<(i64, bool), StoreError> {
        let action = format!("pushing session {}", data.session.id);
        let mut c = self.client();
        let mut tx = c.transaction().map_err(self.err(action.as_str()))?;
        // Two pushes of the same session at once: the second waits here, then finds it.
        tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&origin])
            .map_err(self.err(action.as_str()))?;
        if let Some(r) = tx
            .query_opt("SELECT id FROM sessions WHERE origin = $1", &[&origin])
            .map_err(self.err(action.as_str()))?
        {
            return Ok((r.get(0), false));
        }
        let s = &data.session;
        let id = insert_session(
            &mut tx,
            &s.info,
            &s.started_at,
            s.finished_at.as_deref(),
            s.status,
            Some(origin),
        )
        .map_err(self.err(action.as_str()))?;
        for c in &data.cases {
            insert_case(&mut tx, id, c).map_err(self.err(action.as_str()))?;
        }
        for smp in &data.samples {
            insert_sample(&mut tx, id, &smp.sample).map_err(self.err(action.as_str()))?;
        }
        if let Some(b) = &data.baseline {
            insert_baseline(&mut tx, id, b).map_err(self.err(action.as_str()))?;
        }
        tx.commit().map_err(self.err(action.as_str()))?;
        Ok((id, true))
    }

    fn require_session(&self, tx: &mut Transaction, id: i64) -> Result<(), StoreError> {
        let found = tx
            .query_opt("SELECT 1 FROM sessions WHERE id = $1", &[&id])
            .map_err(self.err(format!("looking up session {id}")))?;
        found
            .map(|_| ())
            .ok_or_else(|| StoreError::NoSuchSession(id.to_string()))
    }

    fn check_finite(&self, value: f64, what: impl FnOnce() -> String) -> Result<(), StoreError> {
        if value.is_finite() {
            Ok(())
        } else {
            Err(StoreError::NonFinite {
                path: self.url.clone(),
                what: what(),
                value,
            })
        }
    }

    fn tool_versions(
        &self,
        c: &mut Client,
        session: Option<i64>,
    ) -> Result<HashMap<i64, Vec<(String, String)>>, StoreError> {
        let rows = c
            .query(
                "SELECT session_id, tool, version FROM tool_versions \
                 WHERE $1::BIGINT IS NULL OR session_id = $1 ORDER BY session_id, ord",
                &[&session],
            )
            .map_err(self.err("reading tool versions"))?;
        let mut out: HashMap<i64, Vec<(String, String)>> = HashMap::new();
        for r in rows {
            out.entry(r.get(0)).or_default().push((r.get(1), r.get(2)));
        }
        Ok(out)
    }

    /// The ranks of a many-rank session, in rank order (none for one rank).
    fn rank_hosts(&self, c: &mut Client, session: i64) -> Result<Vec<RankHost>, StoreError> {
        let rows = c
            .query(
                &format!("SELECT {RANK_HOST_COLUMNS} FROM rank_hosts WHERE session_id = $1 ORDER BY rank"),
                &[&session],
            )
            .map_err(self.err(format!("reading the ranks of session {session}")))?;
        Ok(rows
            .iter()
            .map(|r| RankHost {
                rank: r.get::<_, i32>(1) as u32,
                host: host_at(r, 2, r.get::<_, i32>(5) as u32),
                dir: r.get(7),
                mount_point: r.get(8),
                mount_source: r.get(9),
                fs_type: r.get(10),
                mount_opts: r.get(11),
                super_opts: r.get(12),
                clock_offset_ns: r.get(13),
                clock_rtt_ns: r.get(14),
            })
            .collect())
    }

    /// The cases of `session`, in the order they were recorded.
    fn load_cases(&self, tx: &mut Transaction, session: i64, action: &str) -> Result<Vec<CaseRecord>, StoreError> {
        let mut cases = Vec::new();
        for r in tx
            .query(&read::cases_query("$1"), &[&session])
            .map_err(self.err(action))?
        {
            let case_id: String = r.get(0);
            let availability =
                read::availability(&case_id, &r.get::<_, String>(8), r.get(9)).map_err(self.bad(action))?;
            cases.push(CaseRecord {
                variant: r.get(1),
                fs_type: r.get(2),
                mkfs_args: parse_json_strings(&r.get::<_, String>(3), "mkfs_args_json").map_err(self.bad(action))?,
                mount_opts: parse_json_strings(&r.get::<_, String>(4), "mount_opts_json").map_err(self.bad(action))?,
                workload: r.get(5),
                workload_kind: r.get(6),
                workload_json: r.get(7),
                availability,
                case_id,
            });
        }
        Ok(cases)
    }

    /// The samples of `session` in id order (measurements, histograms and series left empty)
    /// and the index of each sample id in them.
    fn load_samples(
        &self,
        tx: &mut Transaction,
        session: i64,
        action: &str,
    ) -> Result<(Vec<SampleRecord>, HashMap<i64, usize>), StoreError> {
        let mut samples: Vec<SampleRecord> = Vec::new();
        let mut index = HashMap::new();
        for r in tx
            .query(&read::samples_query("$1"), &[&session])
            .map_err(self.err(action))?
        {
            let id: i64 = r.get(0);
            let status = read::status(id, &r.get::<_, String>(6), r.get(7)).map_err(self.bad(action))?;
            index.insert(id, samples.len());
            samples.push(SampleRecord {
                id,
                sample: NewSample {
                    case_id: r.get(1),
                    repeat: r.get::<_, i64>(2) as u32,
                    is_warmup: r.get::<_, i32>(3) != 0,
                    started_at: r.get(4),
                    wall_s: r.get(5),
                    status,
                    device: r.get(8),
                    effective_mount_opts: r.get(9),
                    notes: parse_json_strings(&r.get::<_, String>(10), "notes_json").map_err(self.bad(action))?,
                    measurements: Vec::new(),
                    histograms: Vec::new(),
                    series: Vec::new(),
                    windows: Vec::new(),
                    path: read::path_facts(r.get::<_, Option<String>>(11).as_deref()),
                },
            });
        }
        Ok((samples, index))
    }

    /// Appends every stored measurement of `session` to its sample (`index`: sample id →
    /// position in `samples`).
    fn load_measurements(
        &self,
        tx: &mut Transaction,
        session: i64,
        action: &str,
        samples: &mut [SampleRecord],
        index: &HashMap<i64, usize>,
    ) -> Result<(), StoreError> {
        for r in tx
            .query(&read::metrics_query("$1"), &[&session])
            .map_err(self.err(action))?
        {
            let sample_id: i64 = r.get(0);
            let (phase, name): (String, String) = (r.get(1), r.get(2));
            let (u, d, ro): (String, String, String) = (r.get(3), r.get(4), r.get(6));
            let (Some(unit), Some(direction), Some(role)) = (Unit::parse(&u), Direction::parse(&d), Role::parse(&ro))
            else {
                return Err(self.bad(action)(format!(
                    "metric {phase}/{name} of sample {sample_id} has unit `{u}`, direction `{d}`, role `{ro}`"
                )));
            };
            if let Some(&i) = index.get(&sample_id) {
                let m = read::measurement((phase, rank_of(r.get(7))), name, (unit, direction, role), r.get(5));
                samples[i].sample.measurements.push(m);
            }
        }
        Ok(())
    }

    fn baseline(&self, c: &mut Client, session: i64) -> Result<Option<RawBaseline>, StoreError> {
        let action = format!("reading the raw-device baseline of session {session}");
        let Some(r) = c
            .query_opt(
                "SELECT state, device, method, note, error FROM baselines WHERE session_id = $1",
                &[&session],
            )
            .map_err(self.err(action.as_str()))?
        else {
            return Ok(None);
        };
        let state: String = r.get(0);
        let error: Option<String> = r.get(4);
        let status = match (state.as_str(), error) {
            ("measured", None) => BaselineStatus::Measured,
            ("failed", Some(e)) => BaselineStatus::Failed(e),
            ("no_device", None) => BaselineStatus::NoDevice,
            (state, error) => {
                return Err(self.bad(&action)(format!(
                    "baseline has state `{state}` with error {error:?}"
                )))
            }
        };
        let mut values = Vec::new();
        for v in c
            .query(
                "SELECT name, value, unit, bytes, seconds FROM baseline_values \
                 WHERE session_id = $1 ORDER BY ord",
                &[&session],
            )
            .map_err(self.err(action.as_str()))?
        {
            let name: String = v.get(0);
            let unit_text: String = v.get(2);
            let unit = Unit::parse(&unit_text)
                .ok_or_else(|| self.bad(&action)(format!("baseline value {name} has unknown unit `{unit_text}`")))?;
            values.push(BaselineValue {
                value: v.get(1),
                unit,
                bytes: v.get::<_, i64>(3) as u64,
                seconds: v.get(4),
                name,
            });
        }
        Ok(Some(RawBaseline {
            status,
            device: r.get(1),
            method: r.get(2),
            note: r.get(3),
            values,
        }))
    }
}

fn json_strings(items: &[String]) -> String {
    serde_json::Value::Array(items.iter().cloned().map(serde_json::Value::String).collect()).to_string()
}

fn parse_json_strings(text: &str, column: &str) -> Result<Vec<String>, Bad> {
    serde_json::from_str(text).map_err(|e| format!("{column} is not a JSON array of strings ({e})"))
}

fn insert_session(
    tx: &mut Transaction,
    s: &NewSession,
    started_at: &str,
    finished_at: Option<&str>,
    status: SessionStatus,
    origin: Option<&str>,
) -> Result<i64, postgres::Error> {
    let row = tx.query_one(
        "INSERT INTO sessions (started_at, finished_at, status, label, suite_name, suite_text, \
         args_json, fsbench_version, hostname, kernel, cpu_model, ncpu, mem_bytes, target, \
         policy_repeats, policy_warmup, policy_order, policy_drop_caches, policy_trim, \
         policy_confidence, policy_memory_bytes, policy_precision_pct, policy_budget_s, \
         policy_methodology, origin, run_options_json) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, \
         $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26) RETURNING id",
        &[
            &started_at,
            &finished_at,
            &status.as_str(),
            &s.label,
            &s.suite_name,
            &s.suite_text,
            &json_strings(&s.args),
            &s.fsbench_version,
            &s.host.hostname,
            &s.host.kernel,
            &s.host.cpu_model,
            &i64::from(s.host.ncpu),
            &(s.host.mem_bytes as i64),
            &s.target,
            &i64::from(s.policy.repeats),
            &i64::from(s.policy.warmup),
            &s.policy.order.as_str(),
            &i32::from(s.policy.drop_caches),
            &i64::from(s.policy.trim),
            &s.policy.confidence,
            &s.policy.memory.map(|b| b as i64),
            &s.policy.precision,
            &s.policy.budget_s,
            &i32::from(s.policy.methodology),
            &origin,
            &s.run_options,
        ],
    )?;
    let id: i64 = row.get(0);
    for (ord, (tool, version)) in s.tool_versions.iter().enumerate() {
        tx.execute(
            "INSERT INTO tool_versions (session_id, ord, tool, version) VALUES ($1, $2, $3, $4)",
            &[&id, &(ord as i32), tool, version],
        )?;
    }
    for r in &s.ranks {
        tx.execute(
            &format!(
                "INSERT INTO rank_hosts ({RANK_HOST_COLUMNS}) VALUES \
                 ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
            ),
            &[
                &id,
                &(r.rank as i32),
                &r.host.hostname,
                &r.host.kernel,
                &r.host.cpu_model,
                &(r.host.ncpu as i32),
                &(r.host.mem_bytes as i64),
                &r.dir,
                &r.mount_point,
                &r.mount_source,
                &r.fs_type,
                &r.mount_opts,
                &r.super_opts,
                &r.clock_offset_ns,
                &r.clock_rtt_ns,
            ],
        )?;
    }
    Ok(id)
}

fn insert_case(tx: &mut Transaction, session: i64, c: &CaseRecord) -> Result<u64, postgres::Error> {
    let (availability, reason) = match &c.availability {
        CaseAvailability::Available => ("available", None),
        CaseAvailability::Unavailable(why) => ("unavailable", Some(why.as_str())),
    };
    tx.execute(
        "INSERT INTO cases (session_id, case_id, ord, variant, fs_type, mkfs_args_json, \
         mount_opts_json, workload, workload_kind, workload_json, availability, unavailable_reason) \
         VALUES ($1, $2, (SELECT COALESCE(MAX(ord) + 1, 0) FROM cases WHERE session_id = $1), \
         $3, $4, $5, $6, $7, $8, $9, $10, $11) \
         ON CONFLICT (session_id, case_id) DO UPDATE SET variant = excluded.variant, \
         fs_type = excluded.fs_type, mkfs_args_json = excluded.mkfs_args_json, \
         mount_opts_json = excluded.mount_opts_json, workload = excluded.workload, \
         workload_kind = excluded.workload_kind, workload_json = excluded.workload_json, \
         availability = excluded.availability, unavailable_reason = excluded.unavailable_reason",
        &[
            &session,
            &c.case_id,
            &c.variant,
            &c.fs_type,
            &json_strings(&c.mkfs_args),
            &json_strings(&c.mount_opts),
            &c.workload,
            &c.workload_kind,
            &c.workload_json,
            &availability,
            &reason,
        ],
    )
}

fn insert_sample(tx: &mut Transaction, session: i64, s: &NewSample) -> Result<i64, postgres::Error> {
    tx.execute(
        "DELETE FROM samples WHERE session_id = $1 AND case_id = $2 AND repeat = $3",
        &[&session, &s.case_id, &i64::from(s.repeat)],
    )?;
    let (status, error) = match &s.status {
        SampleStatus::Ok => ("ok", None),
        SampleStatus::Failed(e) => ("failed", Some(e.as_str())),
    };
    let id: i64 = tx
        .query_one(
            "INSERT INTO samples (session_id, case_id, repeat, is_warmup, started_at, wall_s, \
             status, error, device, effective_mount_opts, notes_json, path_facts_json) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id",
            &[
                &session,
                &s.case_id,
                &i64::from(s.repeat),
                &i32::from(s.is_warmup),
                &s.started_at,
                &s.wall_s,
                &status,
                &error,
                &s.device,
                &s.effective_mount_opts,
                &json_strings(&s.notes),
                &read::path_facts_json(s.path.as_ref()),
            ],
        )?
        .get(0);
    let insert = tx.prepare(
        "INSERT INTO metrics (sample_id, ord, phase, metric, unit, direction, value, role, rank) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )?;
    for (ord, m) in s.measurements.iter().enumerate() {
        tx.execute(
            &insert,
            &[
                &id,
                &(ord as i32),
                &m.phase,
                &m.metric.name,
                &m.metric.unit.as_str(),
                &m.metric.direction.as_str(),
                &m.value,
                &m.metric.role.as_str(),
                &pg_rank(m.rank),
            ],
        )?;
    }
    for child in read::Child::ALL {
        let rows = child.rows(s);
        if rows.is_empty() {
            continue;
        }
        let insert = tx.prepare(&child.insert('$'))?;
        for (ord, (phase, json, rank, window_ms)) in rows.into_iter().enumerate() {
            let (ord, rank) = (ord as i32, pg_rank(rank));
            match window_ms {
                Some(ms) => tx.execute(&insert, &[&id, &ord, &phase, &json, &rank, &ms])?,
                None => tx.execute(&insert, &[&id, &ord, &phase, &json, &rank])?,
            };
        }
    }
    Ok(id)
}

/// A row's rank (schema 9) as the `INTEGER` column holds it.
fn pg_rank(rank: Option<u32>) -> Option<i32> {
    rank.and_then(|r| i32::try_from(r).ok())
}

/// A row's rank from its `INTEGER` column (`NULL`: the whole repeat's row).
fn rank_of(column: Option<i32>) -> Option<u32> {
    column.and_then(|r| u32::try_from(r).ok())
}

fn insert_baseline(tx: &mut Transaction, session: i64, b: &RawBaseline) -> Result<(), postgres::Error> {
    tx.execute("DELETE FROM baselines WHERE session_id = $1", &[&session])?;
    let (state, error) = match &b.status {
        BaselineStatus::Measured => ("measured", None),
        BaselineStatus::Failed(e) => ("failed", Some(e.as_str())),
        BaselineStatus::NoDevice => ("no_device", None),
    };
    tx.execute(
        "INSERT INTO baselines (session_id, state, device, method, note, error) VALUES ($1, $2, $3, $4, $5, $6)",
        &[&session, &state, &b.device, &b.method, &b.note, &error],
    )?;
    for (ord, v) in b.values.iter().enumerate() {
        tx.execute(
            "INSERT INTO baseline_values (session_id, ord, name, value, unit, bytes, seconds) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
            &[
                &session,
                &(ord as i32),
                &v.name,
                &v.value,
                &v.unit.as_str(),
                &(v.bytes as i64),
                &v.seconds,
            ],
        )?;
    }
    Ok(())
}

/// A host from the columns `hostname, kernel, cpu_model, ncpu, mem_bytes` of `r`, the first at
/// `at`; `ncpu` the caller read (an INTEGER in rank_hosts, a BIGINT in sessions).
fn host_at(r: &Row, at: usize, ncpu: u32) -> HostInfo {
    HostInfo {
        hostname: r.get(at),
        kernel: r.get(at + 1),
        cpu_model: r.get(at + 2),
        ncpu,
        mem_bytes: r.get::<_, i64>(at + 4) as u64,
    }
}

fn session_from_row(r: &Row) -> Result<SessionRecord, Bad> {
    let id: i64 = r.get(0);
    let status_text: String = r.get(3);
    let status =
        SessionStatus::parse(&status_text).ok_or_else(|| format!("session {id} has unknown status `{status_text}`"))?;
    let suite_text: String = r.get(6);
    let args_json: String = r.get(7);
    let policy = match (
        r.get::<_, Option<i64>>(15),
        r.get::<_, Option<i64>>(16),
        r.get::<_, Option<String>>(17),
        r.get::<_, Option<i32>>(18),
        r.get::<_, Option<i64>>(19),
        r.get::<_, Option<f64>>(20),
    ) {
        (Some(repeats), Some(warmup), Some(order), Some(drop_caches), Some(trim), Some(confidence)) => Policy {
            repeats: repeats as u32,
            warmup: warmup as u32,
            order: Order::parse(&order).ok_or_else(|| format!("session {id} has unknown slot order `{order}`"))?,
            drop_caches: drop_caches != 0,
            trim: trim as u32,
            confidence,
            memory: r.get::<_, Option<i64>>(21).map(|b| b as u64),
            precision: r.get(22),
            budget_s: r.get(23),
            methodology: r.get::<_, Option<i32>>(24).is_some_and(|m| m != 0),
        },
        _ => return Err(format!("session {id} has no complete run policy")),
    };
    Ok(SessionRecord {
        id,
        started_at: r.get(1),
        finished_at: r.get(2),
        status,
        info: NewSession {
            label: r.get(4),
            suite_name: r.get(5),
            suite_text,
            args: parse_json_strings(&args_json, &format!("args_json of session {id}"))?,
            run_options: r.get(25),
            fsbench_version: r.get(8),
            host: host_at(r, 9, r.get::<_, i64>(12) as u32),
            tool_versions: Vec::new(),
            target: r.get(14),
            ranks: Vec::new(),
            policy,
        },
    })
}

impl ResultStore for PgStore {
    fn location(&self) -> String {
        self.url.clone()
    }

    fn begin_session(&self, s: &NewSession) -> Result<i64, StoreError> {
        let action = "starting a session";
        let mut c = self.client();
        let mut tx = c.transaction().map_err(self.err(action))?;
        let id =
            insert_session(&mut tx, s, &now_rfc3339(), None, SessionStatus::Running, None).map_err(self.err(action))?;
        tx.commit().map_err(self.err(action))?;
        Ok(id)
    }

    fn record_case(&self, session: i64, case: &CaseRecord) -> Result<(), StoreError> {
        let action = format!("recording case {} of session {session}", case.case_id);
        let mut c = self.client();
        let mut tx = c.transaction().map_err(self.err(action.as_str()))?;
        self.require_session(&mut tx, session)?;
        insert_case(&mut tx, session, case).map_err(self.err(action.as_str()))?;
        tx.commit().map_err(self.err(action))
    }

    fn record_sample(&self, session: i64, s: &NewSample) -> Result<i64, StoreError> {
        s.check_values(|value, what| self.check_finite(value, what))?;
        let action = format!(
            "recording repeat {} of case {} in session {session}",
            s.repeat, s.case_id
        );
        let mut c = self.client();
        let mut tx = c.transaction().map_err(self.err(action.as_str()))?;
        let known = tx
            .query_opt(
                "SELECT 1 FROM cases WHERE session_id = $1 AND case_id = $2",
                &[&session, &s.case_id],
            )
            .map_err(self.err(action.as_str()))?;
        if known.is_none() {
            return Err(StoreError::NoSuchCase {
                path: self.url.clone(),
                session,
                case_id: s.case_id.clone(),
            });
        }
        let id = insert_sample(&mut tx, session, s).map_err(self.err(action.as_str()))?;
        tx.commit().map_err(self.err(format!("{action}: committing")))?;
        Ok(id)
    }

    fn finish_session(&self, session: i64, status: SessionStatus) -> Result<(), StoreError> {
        let finished_at = (status != SessionStatus::Running).then(now_rfc3339);
        let changed = self
            .client()
            .execute(
                "UPDATE sessions SET status = $1, finished_at = $2 WHERE id = $3",
                &[&status.as_str(), &finished_at, &session],
            )
            .map_err(self.err(format!("marking session {session} {}", status.as_str())))?;
        if changed == 0 {
            return Err(StoreError::NoSuchSession(session.to_string()));
        }
        Ok(())
    }

    fn update_run_options(&self, session: i64, json: &str) -> Result<(), StoreError> {
        let changed = self
            .client()
            .execute(
                "UPDATE sessions SET run_options_json = $1 WHERE id = $2",
                &[&json, &session],
            )
            .map_err(self.err(format!("storing the run options of session {session}")))?;
        if changed == 0 {
            return Err(StoreError::NoSuchSession(session.to_string()));
        }
        Ok(())
    }

    fn record_baseline(&self, session: i64, b: &RawBaseline) -> Result<(), StoreError> {
        for v in &b.values {
            self.check_finite(v.value, || format!("baseline {}", v.name))?;
            self.check_finite(v.seconds, || format!("baseline {} seconds", v.name))?;
        }
        let action = format!("recording the raw-device baseline of session {session}");
        let mut c = self.client();
        let mut tx = c.transaction().map_err(self.err(action.as_str()))?;
        self.require_session(&mut tx, session)?;
        insert_baseline(&mut tx, session, b).map_err(self.err(action.as_str()))?;
        tx.commit().map_err(self.err(action))
    }

    fn load_baseline(&self, session: i64) -> Result<Option<RawBaseline>, StoreError> {
        let mut c = self.client();
        let mut tx = c.transaction().map_err(self.err("loading a baseline"))?;
        self.require_session(&mut tx, session)?;
        tx.commit().map_err(self.err("loading a baseline"))?;
        self.baseline(&mut c, session)
    }

    fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError> {
        let action = "listing sessions";
        let mut c = self.client();
        let mut tools = self.tool_versions(&mut c, None)?;
        let rows = c
            .query(&format!("SELECT {SESSION_COLUMNS} FROM sessions ORDER BY id DESC"), &[])
            .map_err(self.err(action))?;
        let mut out = Vec::new();
        for r in rows {
            let mut rec = session_from_row(&r).map_err(self.bad(action))?;
            rec.info.tool_versions = tools.remove(&rec.id).unwrap_or_default();
            out.push(rec);
        }
        Ok(out)
    }

    fn resolve(&self, reference: &str) -> Result<i64, StoreError> {
        let action = format!("resolving session `{reference}`");
        let mut c = self.client();
        let newest = |c: &mut Client, label: Option<&str>| -> Result<Option<i64>, StoreError> {
            c.query_one(
                "SELECT MAX(id) FROM sessions WHERE $1::TEXT IS NULL OR label = $1",
                &[&label],
            )
            .map(|r| r.get(0))
            .map_err(self.err(action.as_str()))
        };
        if reference == "latest" {
            return newest(&mut c, None)?.ok_or_else(|| StoreError::NoSuchSession(reference.to_string()));
        }
        if let Ok(id) = reference.parse::<i64>() {
            if c.query_opt("SELECT 1 FROM sessions WHERE id = $1", &[&id])
                .map_err(self.err(action.as_str()))?
                .is_some()
            {
                return Ok(id);
            }
        }
        newest(&mut c, Some(reference))?.ok_or_else(|| StoreError::NoSuchSession(reference.to_string()))
    }

    fn load_session(&self, session: i64) -> Result<SessionData, StoreError> {
        let action = format!("reading session {session}");
        let mut c = self.client();
        // One snapshot for every query below.
        let mut tx = c
            .build_transaction()
            .isolation_level(postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .map_err(self.err(action.as_str()))?;
        let r = tx
            .query_opt(
                &format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = $1"),
                &[&session],
            )
            .map_err(self.err(action.as_str()))?
            .ok_or_else(|| StoreError::NoSuchSession(session.to_string()))?;
        let mut record = session_from_row(&r).map_err(self.bad(&action))?;
        let cases = self.load_cases(&mut tx, session, &action)?;
        let (mut samples, index) = self.load_samples(&mut tx, session, &action)?;
        self.load_measurements(&mut tx, session, &action, &mut samples, &index)?;
        for child in read::Child::ALL {
            for r in tx
                .query(&child.query("$1"), &[&session])
                .map_err(self.err(action.as_str()))?
            {
                child
                    .attach(
                        &mut samples,
                        &index,
                        read::ChildRow {
                            sample_id: r.get(0),
                            phase: r.get(1),
                            json: r.get(2),
                            rank: rank_of(r.get(3)),
                            window_ms: r.get(4),
                        },
                    )
                    .map_err(self.bad(&action))?;
            }
        }
        let mut noise = Vec::new();
        for r in tx
            .query(&read::noise::query("$1"), &[&session])
            .map_err(self.err(action.as_str()))?
        {
            let columns = read::noise::Columns {
                names: [r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)],
                between: r.get(5),
                count: i64::from(r.get::<_, i32>(6)),
                within: r.get(7),
                ids: r.get(8),
            };
            noise.push(read::noise::decode(columns).map_err(self.bad(&action))?);
        }
        tx.commit().map_err(self.err(action.as_str()))?;
        record.info.tool_versions = self
            .tool_versions(&mut c, Some(session))?
            .remove(&session)
            .unwrap_or_default();
        record.info.ranks = self.rank_hosts(&mut c, session)?;
        let baseline = self.baseline(&mut c, session)?;
        Ok(SessionData {
            session: record,
            cases,
            samples,
            baseline,
            noise,
        })
    }

    fn record_noise(&self, session: i64, rows: &[NoiseEstimate]) -> Result<(), StoreError> {
        for e in rows {
            for (value, what) in read::noise::numbers(e) {
                self.check_finite(value, || what)?;
            }
        }
        let action = format!("recording the session-to-session noise of session {session}");
        let mut c = self.client();
        let mut tx = c.transaction().map_err(self.err(action.as_str()))?;
        self.require_session(&mut tx, session)?;
        tx.execute(&read::noise::delete('$'), &[&session])
            .map_err(self.err(action.as_str()))?;
        let insert = tx
            .prepare(&read::noise::insert('$'))
            .map_err(self.err(action.as_str()))?;
        for (ord, e) in rows.iter().enumerate() {
            tx.execute(
                &insert,
                &[
                    &session,
                    &(ord as i32),
                    &e.workload,
                    &e.phase,
                    &e.metric,
                    &e.unit.as_str(),
                    &e.variant,
                    &e.between_sd_pct,
                    &(e.sessions.len() as i32),
                    &e.within_sd_pct,
                    &read::noise::ids_json(e),
                ],
            )
            .map_err(self.err(action.as_str()))?;
        }
        tx.commit().map_err(self.err(action))
    }
}
