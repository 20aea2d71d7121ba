//! The `filecopy` workload: the 2009 desktop study's ISO test — copy one large file from one
//! directory to another on the same filesystem, delete it, copy it back, delete again.
//!
//! | phase | what is timed | metric |
//! |---|---|---|
//! | (untimed) | `bench1/image.iso` of `size` bytes written from a content pool, fsync, syncfs | |
//! | `copy1` | `bench1/image.iso` → `bench2/image.iso`, then `syncfs` | `throughput` (MiB/s, higher is better) |
//! | `delete1` | unlink `bench1/image.iso` (the original), then `syncfs` | `time` (s, lower is better) |
//! | `copy2` | `bench2/image.iso` → `bench1/image.iso` (the copy back), then `syncfs` | `throughput` |
//! | `delete2` | unlink `bench2/image.iso`, then `syncfs` | `time` |
//!
//! Caches are dropped before every phase (the suite's `drop_caches`), so each copy reads its
//! source from the disk. The `syncfs` at the end of each phase is counted unless
//! `fsync = false`. The copy is the treecopy workload's file copier (see
//! [`super::treecopy`]): `reflink = "never"` (default) copies the data with read/write and one
//! reused buffer; `"auto"` lets the filesystem clone. `method = "cp"` runs
//! `cp --reflink=… SRC DST` and `rm -f` instead.
//!
//! Everything created is removed at the end, also on error or interrupt. Errors name the
//! operation and the path; a full filesystem says so.

use crate::copy::{copy_data, fail, open_dir, timed_command, Method, Reflink, COPY_ERR};
use crate::datasets::content::MAX_SLICE;
use crate::datasets::{Content, ContentPool};
use crate::metric::{MetricId, RawSample, Unit};
use crate::phase::{Caches, Phases, Policy, Timed};
use crate::sysio::close_checked;
use crate::units::Bytes;
use crate::Invalid;
use crate::{EngineError, RunContext, Workload, WorkloadKind};
use rustix::fs::{Mode, OFlags};
use serde::{Deserialize, Serialize};
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

/// Phase: bench1 → bench2.
pub const COPY1: &str = "copy1";
/// Phase: delete the original in bench1.
pub const DELETE1: &str = "delete1";
/// Phase: bench2 → bench1.
pub const COPY2: &str = "copy2";
/// Phase: delete the file in bench2.
pub const DELETE2: &str = "delete2";
/// Name of the file in both directories.
const FILE: &str = "image.iso";
/// Smallest `size` after `--scale`.
const MIN_SIZE: u64 = 16 * Bytes::MIB;

copy_spec! {
/// Parameters of the filecopy workload: the file, then the copy options (`cp` and `rm -f` with
/// `method = "cp"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilecopySpec {
    /// Size of the file, bytes. Default 2 GiB (the study's ISO image).
    #[serde(default = "default_size")]
    pub size: Bytes,
    /// Contents: `random` (default, incompressible), `text` or `zeros`.
    #[serde(default)]
    pub content: Content,
    /// Seed of the contents. Default 0.
    #[serde(default)]
    pub seed: u64,
} {}
}

fn default_size() -> Bytes {
    Bytes(2 * Bytes::GIB)
}

impl Default for FilecopySpec {
    fn default() -> Self {
        super::serde_default()
    }
}

impl Workload for FilecopySpec {
    fn phases(&self) -> Vec<String> {
        [COPY1, DELETE1, COPY2, DELETE2].map(String::from).to_vec()
    }

    fn scaled(&self, factor: f64) -> WorkloadKind {
        WorkloadKind::Filecopy(FilecopySpec {
            size: self.size.scaled(factor, MIN_SIZE),
            ..self.clone()
        })
    }

    fn validate(&self) -> Result<(), Invalid> {
        if self.size.get() == 0 {
            return Err("size must be at least 1 byte (e.g. \"2GiB\")".into());
        }
        if self.buffer.get() == 0 || self.buffer.get() > 256 * Bytes::MIB {
            return Err(Invalid(format!(
                "buffer must be between 1 byte and 256MiB (is {})",
                self.buffer
            )));
        }
        Ok(())
    }

    fn footprint(&self) -> crate::fstype::Footprint {
        // Original and copy coexist after copy1, each in its directory.
        crate::fstype::Footprint::default()
            .dirs(1, 6)
            .files(1, self.size.get(), FILE.len() as u64)
            .growing()
            .twice()
    }

    fn content(&self) -> Option<crate::datasets::content::Content> {
        Some(self.content)
    }

    fn describe(&self) -> String {
        let how = match self.method {
            Method::Native => format!("method=native buffer={}", self.buffer),
            Method::Cp => "method=cp".to_string(),
        };
        format!(
            "filecopy size={} content={} {how} reflink={}{}",
            self.size,
            self.content,
            self.reflink.as_str(),
            if self.fsync { " fsync" } else { " no-fsync" }
        )
    }

    fn run(&self, ctx: &RunContext) -> Result<RawSample, EngineError> {
        self.validate()?;
        let b1 = ctx.dir.join("bench1");
        let b2 = ctx.dir.join("bench2");
        let result = run_phases(self, ctx, &b1, &b2);
        for d in [&b1, &b2] {
            let _ = std::fs::remove_file(d.join(FILE));
            let _ = std::fs::remove_dir(d);
        }
        result
    }
}

fn run_phases(spec: &FilecopySpec, ctx: &RunContext, b1: &Path, b2: &Path) -> Result<RawSample, EngineError> {
    let mut phases = Phases::new(ctx);
    phases.note(format!(
        "filecopy: {}, reflink={}; {}",
        match spec.method {
            Method::Native => format!("native copy, read/write with a {} buffer", spec.buffer),
            Method::Cp => "`cp` and `rm -f`".to_string(),
        },
        spec.reflink.as_str(),
        if spec.fsync { "syncfs counted" } else { "no sync" }
    ));
    for d in [b1, b2] {
        std::fs::create_dir(d).map_err(|e| COPY_ERR.io("mkdir", d, e))?;
    }
    lay_out(spec, &b1.join(FILE), ctx.interrupt)?;
    let sync_fd = open_dir(ctx.dir).map_err(|e| COPY_ERR.io("open directory", ctx.dir, e))?;
    rustix::fs::syncfs(&sync_fd).map_err(|e| COPY_ERR.io("syncfs", ctx.dir, e.into()))?;

    let policy = Policy::new();
    let mib = spec.size.get() as f64 / Bytes::MIB as f64;
    let mut buf = vec![0u8; spec.buffer.get() as usize];
    for (phase, from, to) in [(COPY1, b1, b2), (COPY2, b2, b1)] {
        // copy1, delete1, then copy2, delete2; each delete removes the copy's source.
        phases.begin(phase, Caches::DropIfAsked);
        let t = copy_phase(spec, &phases, &from.join(FILE), &to.join(FILE), &sync_fd, &mut buf)?;
        let throughput = mib / t.wall.as_secs_f64().max(1e-9);
        phases.record(
            phase,
            &t,
            vec![(MetricId::higher("throughput", Unit::MibPerSec), throughput)],
            &policy,
        );
        let del = if phase == COPY1 { DELETE1 } else { DELETE2 };
        phases.begin(del, Caches::DropIfAsked);
        let t = delete_phase(spec, &phases, &from.join(FILE), &sync_fd)?;
        phases.record(
            del,
            &t,
            vec![(MetricId::lower("time", Unit::Seconds), t.wall.as_secs_f64())],
            &policy,
        );
    }
    Ok(phases.finish())
}

/// Writes the source file (untimed) from a content pool in 1 MiB writes, then fsyncs it.
fn lay_out(spec: &FilecopySpec, path: &Path, interrupt: &AtomicBool) -> Result<(), EngineError> {
    let pool = ContentPool::new(spec.content, spec.seed);
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(path)
        .map_err(|e| COPY_ERR.io("create", path, e))?;
    let size = spec.size.get();
    let mut pos = 0u64;
    while pos < size {
        if interrupt.load(Ordering::Relaxed) {
            return Err(EngineError::Interrupted);
        }
        let chunk = pool.file_chunk(spec.seed, pos, (size - pos).min(MAX_SLICE as u64) as usize);
        f.write_all(chunk).map_err(|e| COPY_ERR.io("write", path, e))?;
        pos += chunk.len() as u64;
    }
    f.sync_all().map_err(|e| COPY_ERR.io("fsync", path, e))
}

/// The timed region of a copy phase: `cp` or the native copy, then `syncfs` when counted.
fn copy_phase(
    spec: &FilecopySpec,
    phases: &Phases,
    from: &Path,
    to: &Path,
    sync_fd: &std::os::fd::OwnedFd,
    buf: &mut [u8],
) -> Result<Timed<()>, EngineError> {
    let ctx = phases.ctx();
    match spec.method {
        Method::Cp => {
            let mut cmd = Command::new("cp");
            cmd.arg(format!("--reflink={}", spec.reflink.as_str()))
                .arg("--")
                .arg(from)
                .arg(to);
            timed_command(phases, cmd, spec.fsync.then_some(ctx.dir))
        }
        Method::Native => phases.region(|| {
            let src = rustix::fs::open(from, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())
                .map_err(|e| COPY_ERR.io("open", from, e.into()))?;
            let dst = rustix::fs::open(
                to,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o644),
            )
            .map_err(|e| COPY_ERR.io("create", to, e.into()))?;
            copy_data(&src, &dst, spec.size.get(), spec.reflink, buf, ctx.interrupt).map_err(|f| fail(f, to))?;
            drop(src);
            close_checked(dst).map_err(|e| COPY_ERR.io("close", to, e.into()))?;
            if spec.fsync {
                rustix::fs::syncfs(sync_fd).map_err(|e| COPY_ERR.io("syncfs", ctx.dir, e.into()))?;
            }
            Ok(())
        }),
    }
}

/// The timed region of a delete phase: `rm -f` or unlink, then `syncfs` when counted.
fn delete_phase(
    spec: &FilecopySpec,
    phases: &Phases,
    path: &Path,
    sync_fd: &std::os::fd::OwnedFd,
) -> Result<Timed<()>, EngineError> {
    let ctx = phases.ctx();
    if spec.method == Method::Cp {
        let mut cmd = Command::new("rm");
        cmd.arg("-f").arg("--").arg(path);
        return timed_command(phases, cmd, spec.fsync.then_some(ctx.dir));
    }
    phases.region(|| {
        rustix::fs::unlink(path).map_err(|e| COPY_ERR.io("unlink", path, e.into()))?;
        if spec.fsync {
            rustix::fs::syncfs(sync_fd).map_err(|e| COPY_ERR.io("syncfs", ctx.dir, e.into()))?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_phases_with_the_right_metrics_and_nothing_left() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        for method in [Method::Native, Method::Cp] {
            let spec = FilecopySpec {
                size: Bytes(3 * Bytes::MIB + 12345),
                method,
                buffer: Bytes(64 * Bytes::KIB),
                ..FilecopySpec::default()
            };
            let s = crate::run_quiet(&spec, tmp.path(), &flag).unwrap_or_else(|e| panic!("{method:?}: {e}"));
            let names: Vec<&str> = s.phases.iter().map(|p| p.phase.as_str()).collect();
            assert_eq!(names, [COPY1, DELETE1, COPY2, DELETE2]);
            for p in &s.phases {
                let (m, v) = &p.metrics[0];
                if p.phase.starts_with("copy") {
                    assert_eq!((m.name.as_str(), m.unit), ("throughput", Unit::MibPerSec));
                    let expect = spec.size.get() as f64 / Bytes::MIB as f64 / p.wall.as_secs_f64();
                    assert!((v - expect).abs() / expect < 1e-6);
                } else {
                    assert_eq!((m.name.as_str(), m.unit), ("time", Unit::Seconds));
                }
                assert!(*v > 0.0 && v.is_finite());
            }
            assert!(s.notes[0].contains("reflink=never"), "{:?}", s.notes);
            assert!(std::fs::read_dir(tmp.path()).expect("readdir").next().is_none());
        }
    }

    #[test]
    fn copy_data_copies_every_byte_with_any_buffer() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        let spec = FilecopySpec {
            size: Bytes(2 * Bytes::MIB + 3),
            content: Content::Text,
            ..FilecopySpec::default()
        };
        let src = tmp.path().join("src");
        lay_out(&spec, &src, &flag).expect("lay out");
        let want = std::fs::read(&src).expect("read");
        assert_eq!(want.len() as u64, spec.size.get());
        assert!(want.is_ascii());
        for (i, (reflink, buf)) in [(Reflink::Never, 1000), (Reflink::Never, 1 << 20), (Reflink::Auto, 4096)]
            .into_iter()
            .enumerate()
        {
            let dst = tmp.path().join(format!("dst{i}"));
            let s = rustix::fs::open(&src, OFlags::RDONLY, Mode::empty()).expect("open");
            let d =
                rustix::fs::open(&dst, OFlags::WRONLY | OFlags::CREATE, Mode::from_raw_mode(0o600)).expect("create");
            let mut b = vec![0u8; buf];
            assert!(copy_data(&s, &d, spec.size.get(), reflink, &mut b, &flag).is_ok());
            drop(d);
            assert!(std::fs::read(&dst).expect("read") == want, "{reflink:?} {buf}");
        }
    }

    #[test]
    fn spec_defaults_scaling_and_space() {
        let s: FilecopySpec = toml::from_str("").expect("empty");
        assert_eq!(s, FilecopySpec::default());
        assert_eq!(s.size, Bytes(2 * Bytes::GIB));
        assert!(s.footprint().block_bytes >= 4 * Bytes::GIB);
        let WorkloadKind::Filecopy(small) = s.scaled(0.05) else {
            panic!("filecopy scales to filecopy")
        };
        assert_eq!(small.size, Bytes((2.0 * Bytes::GIB as f64 * 0.05) as u64));
        let WorkloadKind::Filecopy(tiny) = s.scaled(1e-9) else {
            panic!("filecopy scales to filecopy")
        };
        assert_eq!(tiny.size, Bytes(MIN_SIZE));
        assert!(FilecopySpec {
            size: Bytes(0),
            ..s.clone()
        }
        .validate()
        .is_err());
        assert!(
            s.describe()
                .starts_with("filecopy size=2GiB content=random method=native"),
            "{}",
            s.describe()
        );
        let e = toml::from_str::<FilecopySpec>("sise = \"1G\"").expect_err("unknown key");
        assert!(e.to_string().contains("sise"));
        let flag = AtomicBool::new(true);
        let tmp = tempfile::tempdir().expect("tempdir");
        assert!(matches!(
            crate::run_quiet(&small, tmp.path(), &flag),
            Err(EngineError::Interrupted)
        ));
        assert!(std::fs::read_dir(tmp.path()).expect("readdir").next().is_none());
    }
}
