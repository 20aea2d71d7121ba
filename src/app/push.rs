//! `fsbench push`: copies local sessions into the shared PostgreSQL store
//! ([`crate::store::pg`]), each once.

use std::io::Write;
use std::path::Path;

/// Why `fsbench push` refused (the user's to fix: exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// A bad `--to`, `--db` or session reference.
    #[error("{0}")]
    Usage(String),
}

/// `fsbench push [SESSION…] --to URL`: copies each named (default: every finished) session of
/// the SQLite database `db` into the PostgreSQL store at `to`, once: a session's origin
/// (hostname, database file, local id, start time) is unique there, so pushing again copies
/// nothing. Running sessions are skipped (push them when they end). Exit 0; usage errors 2.
pub fn cmd_push(db: &Path, sessions: &[String], to: &str) -> anyhow::Result<i32> {
    use crate::store::{pg, SessionStatus, Store};
    if !pg::is_postgres_url(to) {
        return Err(PushError::Usage(format!(
            "--to {to}: give a PostgreSQL URL such as postgres://user@host/dbname"
        ))
        .into());
    }
    if crate::store::is_postgres(db) || !db.exists() {
        return Err(PushError::Usage(format!(
            "push copies from a local SQLite database; {} is not one (pass --db PATH)",
            db.display()
        ))
        .into());
    }
    let local = Store::open(db)?.with_suite_reader(crate::config::stored_suite_policy);
    let ids: Vec<i64> = if sessions.is_empty() {
        local.list_sessions()?.iter().rev().map(|s| s.id).collect()
    } else {
        sessions
            .iter()
            .map(|r| local.resolve(r).map_err(|e| PushError::Usage(e.to_string())))
            .collect::<Result<_, _>>()?
    };
    let remote = pg::PgStore::open(to)?;
    let file = std::fs::canonicalize(db).unwrap_or_else(|_| db.to_path_buf());
    let (mut copied, mut present) = (0, 0);
    let mut out = std::io::stdout().lock();
    for id in ids {
        let data = local.load_session(id)?;
        let s = &data.session;
        if s.status == SessionStatus::Running {
            writeln!(out, "session {id}: still running, skipped")?;
            continue;
        }
        let origin = format!("{}:{}:{id}:{}", s.info.host.hostname, file.display(), s.started_at);
        let (there, new) = remote.push(&origin, &data)?;
        if new {
            copied += 1;
            writeln!(out, "session {id} → session {there}: copied")?;
        } else {
            present += 1;
            writeln!(out, "session {id} → session {there}: already there")?;
        }
    }
    writeln!(out, "{copied} copied, {present} already there ({})", pg::redact(to))?;
    Ok(0)
}
