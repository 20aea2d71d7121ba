//! `aging`: what an aged filesystem costs against a fresh one holding the same files (issue 30,
//! "aged filesystems"). A benchmark on a freshly made filesystem measures its best day; after
//! months of creates, appends, overwrites, renames and deletes the free space is scattered and
//! files are laid out in pieces.
//!
//! The workload has two modes, run as two cases of one suite (the runner gives a workload one
//! fresh filesystem per repeat, so the fresh copy cannot live beside the aged one):
//!
//! - `mode = "aged"`: the seeded op stream of [`ops`] is applied to the runner's fresh
//!   filesystem (phase `age`), then the kept tree is measured;
//! - `mode = "fresh"`: the same seed's *final* tree ([`final_tree`]) is written directly, file by
//!   file in id order (phase `populate`), then measured the same way.
//!
//! Same seed and spec → the same files, directories, sizes and bytes in both modes (every byte
//! of file `id` at offset `o` is a fixed function of `(id, o)`, so overwriting rewrites the same
//! content), and the same tree on every filesystem type. The report's aging section
//! (`sections::aging`) divides the aged by the fresh figures per filesystem.
//!
//! | phase | mode | what is timed | metrics |
//! |---|---|---|---|
//! | `age` | aged | the whole op stream, with a `syncfs` every 32 MiB written and at the end | `time` (s), `fullness` (%, detail: statvfs used / total after it) |
//! | `populate` | fresh | writing the final tree, `syncfs` at the end | `time` (s), `fullness` (%, detail) |
//! | `read` | both | after drop caches: every kept file read whole in 1 MiB reads, in path order | `throughput` (MiB/s, higher is better), `time` (s, detail) |
//! | `layout` | both | `FS_IOC_FIEMAP` of every kept file (the measurement itself is not the point) | `extents` (mean extent records per non-empty file, lower is better), `fragmented` (% of non-empty files in more than one physical piece) |
//!
//! `age` and `populate` are timed whole, with the progress bar (a total in MiB, so it has an
//! ETA) moved only every 32 MiB written: these loops open and write files by path, nothing like
//! a hot loop of short operations, and their times are context, not the measurement.
//!
//! **The profile** ([`ops`]): file sizes are lognormal with μ = 9.48, σ = 2.46 (natural log of
//! bytes; median 13 KiB), the body of the file-size-by-count fit of Impressions (Agrawal,
//! Arpaci-Dusseau, Arpaci-Dusseau, FAST '09), itself fitted to the metadata of the five-year
//! study of Agrawal, Bolosky, Douceur, Lorch (FAST '07); the Pareto tail is replaced by a cap
//! (`max_file`). A size is drawn through statrs' normal quantile of a uniform. Files live in
//! `dirs` flat directories. Until the live bytes reach `fullness` × `capacity` an op is a create
//! (45 %), an append of a lognormal length (15 %), an overwrite of a lognormal range at a uniform
//! offset (15 %), a rename to a random directory (5 %) or a delete (20 %); from there on the
//! deletes rise to 50 % and creates fall to 25 % (appends 5 %), which holds the fullness while the
//! written bytes reach `churn` × `capacity`. A delete picks, half of the time, one of the newest
//! tenth of the files (most files die young) and otherwise any live file. No op may take the live
//! bytes above `fullness` + a quarter of the rest (a create or append that would is a delete).
//! At the end files are deleted or created until the live bytes are at the target. The mix and
//! lifetimes are this workload's simple choice in the spirit of Geriatrix (Kadekodi et al., ATC
//! '18), not a fitted profile.
//!
//! The fullness is of `capacity`, a logical size (default 1 GiB) independent of the filesystem,
//! so every filesystem ages with the same stream; set the image to it (`image_size`, as the
//! `aging` preset does) to make `fullness` the filesystem's own. The tree is removed at the end,
//! untimed: the run directory is left empty.

use crate::fiemap::Mapper;
use crate::metric::{MetricId, RawSample, Role, Unit};
use crate::phase::{Caches, Phases, Policy};
use crate::units::Bytes;
use crate::Invalid;
use crate::{EngineError, ErrHint, RunContext, Workload, WorkloadKind};
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

pub mod measured;

/// Phase of the aged mode: the op stream.
pub const AGE: &str = "age";
/// Phase of the fresh mode: the final tree written directly.
pub const POPULATE: &str = "populate";
/// The measured cold read of the kept tree.
pub const READ: &str = "read";
/// The layout of the kept tree.
pub const LAYOUT: &str = "layout";
/// Metric: wall time, seconds.
pub const TIME: &str = "time";
/// Metric of `read`: MiB/s.
pub const THROUGHPUT: &str = "throughput";
/// Metric of `layout`: mean extent records per non-empty file.
pub const EXTENTS: &str = "extents";
/// Metric of `layout`: percent of non-empty files in more than one physical piece.
pub const FRAGMENTED: &str = "fragmented";
/// Detail metric of `age`/`populate`: statvfs used / total, percent.
pub const FULLNESS: &str = "fullness";

/// μ of the lognormal file size (natural log of bytes), Impressions FAST '09.
pub const SIZE_MU: f64 = 9.48;
/// σ of the lognormal file size.
pub const SIZE_SIGMA: f64 = 2.46;

/// The workload's directory in the run directory.
const TOP: &str = "aging";
/// Largest write request, bytes.
const CHUNK: usize = 1 << 20;
/// A `syncfs` after this many bytes written during `age` (writeback between rounds).
const SYNC_EVERY: u64 = 32 << 20;
/// Smallest `capacity`.
const MIN_CAPACITY: u64 = 8 << 20;
const ERR: ErrHint = ErrHint("lower capacity or fullness, or use a larger image");
const POLICY: Policy = Policy::new();

/// Which tree the workload measures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgingMode {
    /// The op stream applied, then measured.
    #[default]
    Aged,
    /// The stream's final tree written directly, then measured.
    Fresh,
}

/// Parameters of the `aging` workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgingSpec {
    /// `aged` or `fresh`. Default `aged`.
    #[serde(default)]
    pub mode: AgingMode,
    /// Logical size the fullness and churn are fractions of, bytes. Default 1 GiB.
    #[serde(default = "default_capacity")]
    pub capacity: Bytes,
    /// Live bytes at the end, as a fraction of `capacity` (0.05..=0.9). Default 0.7.
    #[serde(default = "default_fullness")]
    pub fullness: f64,
    /// Bytes written by the op stream, as a multiple of `capacity` (≥ `fullness`, ≤ 50).
    /// Default 2.
    #[serde(default = "default_churn")]
    pub churn: f64,
    /// Seed of the op stream. Default 30.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Directories the files live in (1..=10000). Default 64.
    #[serde(default = "default_dirs")]
    pub dirs: u32,
    /// Largest file, bytes (the lognormal is capped here). Default 64 MiB.
    #[serde(default = "default_max_file")]
    pub max_file: Bytes,
}

fn default_capacity() -> Bytes {
    Bytes(Bytes::GIB)
}
fn default_fullness() -> f64 {
    0.7
}
fn default_churn() -> f64 {
    2.0
}
fn default_seed() -> u64 {
    30
}
fn default_dirs() -> u32 {
    64
}
fn default_max_file() -> Bytes {
    Bytes(64 * Bytes::MIB)
}

impl Default for AgingSpec {
    fn default() -> Self {
        AgingSpec {
            mode: AgingMode::Aged,
            capacity: default_capacity(),
            fullness: default_fullness(),
            churn: default_churn(),
            seed: default_seed(),
            dirs: default_dirs(),
            max_file: default_max_file(),
        }
    }
}

/// One operation of the stream. Files are named by their id, directories by their index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Create file `id` in directory `dir` with `size` bytes.
    Create {
        /// File id.
        id: u64,
        /// Directory index.
        dir: u32,
        /// Bytes.
        size: u64,
    },
    /// Append `len` bytes to file `id`.
    Append {
        /// File id.
        id: u64,
        /// Bytes.
        len: u64,
    },
    /// Rewrite `len` bytes of file `id` at byte `off`.
    Overwrite {
        /// File id.
        id: u64,
        /// Byte offset.
        off: u64,
        /// Bytes.
        len: u64,
    },
    /// Move file `id` to directory `to`.
    Rename {
        /// File id.
        id: u64,
        /// Directory index it leaves.
        from: u32,
        /// Directory index it goes to.
        to: u32,
    },
    /// Delete file `id`.
    Delete {
        /// File id.
        id: u64,
        /// Its directory index.
        dir: u32,
    },
}

/// One live file of the tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveFile {
    /// File id (creation order).
    pub id: u64,
    /// Directory index.
    pub dir: u32,
    /// Bytes.
    pub size: u64,
}

/// SplitMix64: a tiny generator whose stream is fixed by this code, not by a crate version.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in (0, 1).
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    /// Uniform in `0..n` (`n` > 0).
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
}

/// The op stream and final tree of a spec, computed without touching a filesystem.
struct Gen<'a> {
    spec: &'a AgingSpec,
    rng: Rng,
    normal: Normal,
    /// Live files sorted by id (oldest first).
    live: Vec<LiveFile>,
    live_bytes: u64,
    next_id: u64,
}

impl<'a> Gen<'a> {
    fn new(spec: &'a AgingSpec) -> Self {
        Gen {
            spec,
            rng: Rng(spec.seed ^ 0x5EED_A61E_0000_0030),
            normal: Normal::new(SIZE_MU, SIZE_SIGMA).expect("valid normal"),
            live: Vec::new(),
            live_bytes: 0,
            next_id: 0,
        }
    }

    /// A lognormal size in `1..=max_file`.
    fn size(&mut self) -> u64 {
        let u = self.rng.unit();
        let v = self.normal.inverse_cdf(u).exp();
        (v.round() as u64).clamp(1, self.spec.max_file.get().max(1))
    }

    fn target(&self) -> u64 {
        (self.spec.capacity.get() as f64 * self.spec.fullness) as u64
    }

    fn ceiling(&self) -> u64 {
        let t = self.target();
        t + self.spec.capacity.get().saturating_sub(t) / 4
    }

    /// Index of a victim: half of the time one of the newest tenth, else any.
    fn victim(&mut self) -> usize {
        let n = self.live.len() as u64;
        let young = (n / 10).max(1);
        if self.rng.unit() < 0.5 {
            (n - 1 - self.rng.below(young)) as usize
        } else {
            self.rng.below(n) as usize
        }
    }

    fn create(&mut self, size: u64) -> Op {
        let id = self.next_id;
        self.next_id += 1;
        let dir = self.rng.below(u64::from(self.spec.dirs)) as u32;
        self.live.push(LiveFile { id, dir, size });
        self.live_bytes += size;
        Op::Create { id, dir, size }
    }

    fn delete(&mut self) -> Op {
        let i = self.victim();
        let f = self.live.remove(i);
        self.live_bytes -= f.size;
        Op::Delete { id: f.id, dir: f.dir }
    }

    /// Every op in order, each with the bytes it writes; `visit` returns false to stop.
    fn run(mut self, mut visit: impl FnMut(&Op) -> bool) -> Vec<LiveFile> {
        let budget = (self.spec.capacity.get() as f64 * self.spec.churn) as u64;
        let (target, ceiling) = (self.target(), self.ceiling());
        let mut written = 0u64;
        while written < budget {
            let below = self.live_bytes < target;
            // create, append, overwrite, rename, delete
            let w: [f64; 5] = if below {
                [0.45, 0.15, 0.15, 0.05, 0.20]
            } else {
                [0.25, 0.05, 0.15, 0.05, 0.50]
            };
            let u = self.rng.unit();
            let mut pick = 0;
            let mut acc = w[0];
            while u >= acc && pick < 4 {
                pick += 1;
                acc += w[pick];
            }
            if self.live.is_empty() {
                pick = 0;
            }
            let op = match pick {
                0 | 1 => {
                    let len = self.size();
                    if self.live_bytes + len > ceiling {
                        if self.live.is_empty() {
                            // A single file larger than the room: take what fits.
                            self.create((ceiling - self.live_bytes).max(1))
                        } else {
                            self.delete()
                        }
                    } else if pick == 0 {
                        self.create(len)
                    } else {
                        let i = self.rng.below(self.live.len() as u64) as usize;
                        let len = len.min(self.spec.max_file.get().saturating_sub(self.live[i].size));
                        if len == 0 {
                            self.delete()
                        } else {
                            self.live[i].size += len;
                            self.live_bytes += len;
                            Op::Append {
                                id: self.live[i].id,
                                len,
                            }
                        }
                    }
                }
                2 => {
                    let i = self.rng.below(self.live.len() as u64) as usize;
                    let f = self.live[i];
                    let off = self.rng.below(f.size);
                    let len = self.size().min(f.size - off);
                    Op::Overwrite { id: f.id, off, len }
                }
                3 => {
                    let i = self.rng.below(self.live.len() as u64) as usize;
                    let to = self.rng.below(u64::from(self.spec.dirs)) as u32;
                    let from = self.live[i].dir;
                    self.live[i].dir = to;
                    Op::Rename {
                        id: self.live[i].id,
                        from,
                        to,
                    }
                }
                _ => self.delete(),
            };
            written += op_bytes(&op);
            if !visit(&op) {
                return self.live;
            }
        }
        while self.live_bytes > target && !self.live.is_empty() {
            let op = self.delete();
            if !visit(&op) {
                return self.live;
            }
        }
        while self.live_bytes < target {
            let size = self.size().min(target - self.live_bytes).max(1);
            let op = self.create(size);
            if !visit(&op) {
                return self.live;
            }
        }
        self.live
    }
}

/// Bytes an op writes.
pub fn op_bytes(op: &Op) -> u64 {
    match *op {
        Op::Create { size, .. } => size,
        Op::Append { len, .. } | Op::Overwrite { len, .. } => len,
        Op::Rename { .. } | Op::Delete { .. } => 0,
    }
}

/// The op stream of `spec` (same spec → the same stream).
pub fn ops(spec: &AgingSpec) -> Vec<Op> {
    let mut out = Vec::new();
    Gen::new(spec).run(|op| {
        out.push(*op);
        true
    });
    out
}

/// The tree the op stream of `spec` leaves, oldest file first.
pub fn final_tree(spec: &AgingSpec) -> Vec<LiveFile> {
    Gen::new(spec).run(|_| true)
}

/// `d0042`.
fn dir_name(d: u32) -> String {
    format!("d{d:04}")
}

/// `f00000042`.
fn file_name(id: u64) -> String {
    format!("f{id:08}")
}

/// The 1 MiB pattern (twice, so any 1 MiB window starting in the first copy is one slice).
fn pattern() -> Vec<u8> {
    let mut rng = Rng(0xDA7A);
    let mut p = Vec::with_capacity(2 * CHUNK);
    while p.len() < CHUNK {
        p.extend_from_slice(&rng.next().to_le_bytes());
    }
    p.extend_from_within(..CHUNK);
    p
}

/// The bytes of file `id` at `off`, at most 1 MiB: a fixed function of `(id, off)`.
fn content(pat: &[u8], id: u64, off: u64, len: usize) -> &[u8] {
    let start = ((off + id.wrapping_mul(4099)) % CHUNK as u64) as usize;
    &pat[start..start + len.min(CHUNK)]
}

/// Writes `len` bytes of file `id`'s content at `off`.
fn write_range(fd: &std::fs::File, pat: &[u8], id: u64, off: u64, len: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut done = 0;
    while done < len {
        let n = (len - done).min(CHUNK as u64) as usize;
        fd.write_all_at(content(pat, id, off + done, n), off + done)?;
        done += n as u64;
    }
    Ok(())
}

fn syncfs(top: &Path) -> Result<(), EngineError> {
    let f = std::fs::File::open(top).map_err(|e| EngineError::io(format!("open {}", top.display()), e))?;
    rustix::fs::syncfs(&f).map_err(|e| ERR.io("syncfs", top, e.into()))
}

/// The headline of a read phase: `bytes` in `secs`, MiB/s.
fn throughput(bytes: u64, secs: f64) -> (MetricId, f64) {
    (
        MetricId::higher(THROUGHPUT, Unit::MibPerSec),
        bytes as f64 / Bytes::MIB as f64 / secs.max(1e-9),
    )
}

/// statvfs used / total of the filesystem holding `p`, percent.
fn fullness_pct(p: &Path) -> f64 {
    match rustix::fs::statvfs(p) {
        Ok(s) if s.f_blocks > 0 => 100.0 * (s.f_blocks - s.f_bfree) as f64 / s.f_blocks as f64,
        _ => f64::NAN,
    }
}

impl AgingSpec {
    fn path(&self, top: &Path, dir: u32, id: u64) -> PathBuf {
        top.join(dir_name(dir)).join(file_name(id))
    }

    fn make_dirs(&self, top: &Path) -> Result<(), EngineError> {
        std::fs::create_dir(top).map_err(|e| ERR.io("mkdir", top, e))?;
        for d in 0..self.dirs {
            let p = top.join(dir_name(d));
            std::fs::create_dir(&p).map_err(|e| ERR.io("mkdir", &p, e))?;
        }
        Ok(())
    }

    /// Applies one op under `top`.
    fn apply(
        &self,
        top: &Path,
        pat: &[u8],
        op: &Op,
        dirs: &std::collections::HashMap<u64, u32>,
    ) -> std::io::Result<()> {
        let open = |id: u64| {
            std::fs::OpenOptions::new()
                .write(true)
                .open(self.path(top, dirs.get(&id).copied().unwrap_or(0), id))
        };
        match *op {
            Op::Create { id, dir, size } => {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(self.path(top, dir, id))?;
                write_range(&f, pat, id, 0, size)
            }
            Op::Append { id, len } => {
                let f = open(id)?;
                let size = f.metadata()?.len();
                write_range(&f, pat, id, size, len)
            }
            Op::Overwrite { id, off, len } => write_range(&open(id)?, pat, id, off, len),
            Op::Rename { id, from, to } => std::fs::rename(self.path(top, from, id), self.path(top, to, id)),
            Op::Delete { id, dir } => std::fs::remove_file(self.path(top, dir, id)),
        }
    }

    /// Phase `age`: the whole stream, syncfs every [`SYNC_EVERY`] bytes and at the end.
    fn age(&self, ctx: &RunContext, top: &Path) -> Result<Vec<LiveFile>, EngineError> {
        let stream = ops(self);
        let total: u64 = stream.iter().map(op_bytes).sum();
        let pat = pattern();
        let mut step = crate::progress::step("aging: the op stream", Some(total >> 20), "MiB");
        let mut dirs: std::collections::HashMap<u64, u32> = std::collections::HashMap::new();
        let (mut written, mut since_sync) = (0u64, 0u64);
        for (n, op) in stream.iter().enumerate() {
            if n % 64 == 0 && ctx.interrupt.load(Ordering::Relaxed) {
                return Err(EngineError::Interrupted);
            }
            self.apply(top, &pat, op, &dirs)
                .map_err(|e| ERR.io(&format!("{op:?}"), top, e))?;
            match *op {
                Op::Create { id, dir, .. } => {
                    dirs.insert(id, dir);
                }
                Op::Rename { id, to, .. } => {
                    dirs.insert(id, to);
                }
                Op::Delete { id, .. } => {
                    dirs.remove(&id);
                }
                _ => {}
            }
            let b = op_bytes(op);
            written += b;
            since_sync += b;
            if since_sync >= SYNC_EVERY {
                syncfs(top)?;
                since_sync = 0;
                step.set(written >> 20);
            }
        }
        syncfs(top)?;
        step.finish();
        Ok(final_tree(self))
    }

    /// Phase `populate`: the final tree written directly, oldest file first.
    fn populate(&self, ctx: &RunContext, top: &Path) -> Result<Vec<LiveFile>, EngineError> {
        let tree = final_tree(self);
        let total: u64 = tree.iter().map(|f| f.size).sum();
        let pat = pattern();
        let mut step = crate::progress::step("aging: the fresh tree", Some(total >> 20), "MiB");
        let mut written = 0;
        for (n, f) in tree.iter().enumerate() {
            if n % 64 == 0 && ctx.interrupt.load(Ordering::Relaxed) {
                return Err(EngineError::Interrupted);
            }
            let op = Op::Create {
                id: f.id,
                dir: f.dir,
                size: f.size,
            };
            self.apply(top, &pat, &op, &Default::default())
                .map_err(|e| ERR.io("create", &self.path(top, f.dir, f.id), e))?;
            written += f.size;
            if written >> 25 != (written - f.size) >> 25 {
                step.set(written >> 20);
            }
        }
        syncfs(top)?;
        step.finish();
        Ok(tree)
    }

    /// The kept files in path order.
    fn read_order(&self, top: &Path, tree: &[LiveFile]) -> Vec<PathBuf> {
        let mut files: Vec<(u32, u64)> = tree.iter().map(|f| (f.dir, f.id)).collect();
        files.sort_unstable();
        files.into_iter().map(|(d, id)| self.path(top, d, id)).collect()
    }

    /// Mean extents per non-empty file and the percent of them in more than one piece; `None`
    /// where the filesystem has no FIEMAP.
    fn layout(paths: &[PathBuf]) -> Result<Option<(f64, f64)>, EngineError> {
        let mut mapper = Mapper::new().with_sync();
        let (mut files, mut extents, mut split) = (0u64, 0u64, 0u64);
        for p in paths {
            let m = match mapper.map_path(p) {
                Ok(m) => m,
                Err(e) if crate::fiemap::is_unsupported(&e) => return Ok(None),
                Err(e) => return Err(EngineError::io(format!("FIEMAP {}", p.display()), e)),
            };
            if m.extents == 0 {
                continue;
            }
            files += 1;
            extents += m.extents;
            split += u64::from(m.fragments > 1);
        }
        if files == 0 {
            return Ok(Some((f64::NAN, f64::NAN)));
        }
        Ok(Some((
            extents as f64 / files as f64,
            100.0 * split as f64 / files as f64,
        )))
    }

    /// Checks that `top`, found on the filesystem (a copy of a saved aged image), holds exactly
    /// the final tree of this spec: the same files in the same directories with the same sizes.
    fn check_kept(&self, top: &Path) -> Result<Vec<LiveFile>, EngineError> {
        let want = final_tree(self);
        let mut expect: Vec<(u32, u64, u64)> = want.iter().map(|f| (f.dir, f.id, f.size)).collect();
        expect.sort_unstable();
        let mut found = Vec::with_capacity(expect.len());
        for d in 0..self.dirs {
            let p = top.join(dir_name(d));
            for e in std::fs::read_dir(&p).map_err(|e| ERR.io("read the kept tree", &p, e))? {
                let e = e.map_err(|e| ERR.io("read the kept tree", &p, e))?;
                let name = e.file_name().to_string_lossy().into_owned();
                let id = name.strip_prefix('f').and_then(|n| n.parse::<u64>().ok());
                let size = e.metadata().map_err(|err| ERR.io("stat", &e.path(), err))?.len();
                match id {
                    Some(id) => found.push((d, id, size)),
                    None => {
                        return Err(EngineError::Invalid(format!(
                            "the filesystem holds {} where the aged tree has no such file: it is not this spec's aged image",
                            e.path().display()
                        )))
                    }
                }
            }
        }
        found.sort_unstable();
        if found != expect {
            return Err(EngineError::Invalid(format!(
                "the filesystem holds an aging tree of {} files, not this spec's {} (seed {}): it is not this spec's aged image",
                found.len(),
                expect.len(),
                self.seed
            )));
        }
        Ok(want)
    }

    /// The measured workloads after the cold read ([`measured`]): `grep`, `seqread`,
    /// `statread`, each after its own drop of the caches.
    fn measure_more(
        &self,
        ctx: &RunContext,
        phases: &mut Phases,
        top: &Path,
        tree: &[LiveFile],
        paths: &[PathBuf],
    ) -> Result<(), EngineError> {
        phases.begin(measured::GREP, Caches::DropIfAsked);
        let t = phases.region(|| measured::grep(top, ctx.interrupt))?;
        let secs = t.wall.as_secs_f64();
        phases.record(
            measured::GREP,
            &t,
            vec![
                throughput(t.value.bytes, secs),
                (MetricId::lower(TIME, Unit::Seconds).with_role(Role::Detail), secs),
            ],
            &POLICY,
        );
        if let Some(big) = measured::largest(tree) {
            phases.begin(measured::SEQREAD, Caches::DropIfAsked);
            let p = self.path(top, big.dir, big.id);
            let t = phases.region(|| measured::seqread(&p, ctx.interrupt))?;
            let secs = t.value.reading.as_secs_f64();
            phases.record(
                measured::SEQREAD,
                &t,
                vec![
                    throughput(t.value.bytes, secs),
                    (
                        MetricId::higher(measured::FILE_MIB, Unit::Mib).with_role(Role::Detail),
                        big.size as f64 / Bytes::MIB as f64,
                    ),
                    (
                        MetricId::higher(measured::PASSES, Unit::Count).with_role(Role::Detail),
                        f64::from(t.value.passes),
                    ),
                ],
                &POLICY,
            );
        }
        let order = measured::shuffled(paths.to_vec(), self.seed);
        phases.begin(measured::STATREAD, Caches::DropIfAsked);
        let t = phases.region(|| measured::statread(&order, ctx.interrupt))?;
        let secs = t.wall.as_secs_f64();
        phases.record(
            measured::STATREAD,
            &t,
            vec![
                (
                    MetricId::higher(measured::RATE, Unit::OpsPerSec),
                    t.value as f64 / secs.max(1e-9),
                ),
                (MetricId::lower(TIME, Unit::Seconds).with_role(Role::Detail), secs),
            ],
            &POLICY,
        );
        Ok(())
    }

    fn measure(&self, ctx: &RunContext, phases: &mut Phases, top: &Path, kept: bool) -> Result<(), EngineError> {
        let tree = if kept {
            let tree = self.check_kept(top)?;
            phases.note(format!(
                "{AGE}: not run in this repeat: the filesystem is a copy of a saved aged image holding this spec's tree ({} files)",
                tree.len()
            ));
            tree
        } else {
            let (first, tree) = match self.mode {
                AgingMode::Aged => {
                    phases.begin(AGE, Caches::DropIfAsked);
                    (AGE, phases.region(|| self.age(ctx, top))?)
                }
                AgingMode::Fresh => {
                    phases.begin(POPULATE, Caches::DropIfAsked);
                    (POPULATE, phases.region(|| self.populate(ctx, top))?)
                }
            };
            let full = fullness_pct(top);
            phases.record(
                first,
                &tree,
                vec![
                    (MetricId::lower(TIME, Unit::Seconds), tree.wall.as_secs_f64()),
                    (MetricId::higher(FULLNESS, Unit::Percent).with_role(Role::Detail), full),
                ],
                &POLICY,
            );
            tree.value
        };
        let paths = self.read_order(top, &tree);
        phases.begin(READ, Caches::DropIfAsked);
        let t = phases.region(|| measured::read_all(&paths, ctx.interrupt))?;
        let secs = t.wall.as_secs_f64();
        phases.record(
            READ,
            &t,
            vec![
                throughput(t.value, secs),
                (MetricId::lower(TIME, Unit::Seconds).with_role(Role::Detail), secs),
            ],
            &POLICY,
        );
        self.measure_more(ctx, phases, top, &tree, &paths)?;
        phases.begin(LAYOUT, Caches::Keep);
        let t = phases.region(|| Self::layout(&paths))?;
        match t.value {
            Some((ext, frag)) => phases.record(
                LAYOUT,
                &t,
                vec![
                    (MetricId::lower(EXTENTS, Unit::Ratio), ext),
                    (MetricId::lower(FRAGMENTED, Unit::Percent), frag),
                ],
                &POLICY,
            ),
            None => phases.note(format!("{LAYOUT}: not measured, the filesystem has no FIEMAP")),
        }
        Ok(())
    }
}

impl Workload for AgingSpec {
    fn phases(&self) -> Vec<String> {
        let first = match self.mode {
            AgingMode::Aged => AGE,
            AgingMode::Fresh => POPULATE,
        };
        vec![
            first.into(),
            READ.into(),
            measured::GREP.into(),
            measured::SEQREAD.into(),
            measured::STATREAD.into(),
            LAYOUT.into(),
        ]
    }

    /// `capacity` times `factor` (at least 8 MiB), `max_file` with it (at least 1 MiB): the
    /// tree grows, the profile's shape stays.
    fn scaled(&self, factor: f64) -> WorkloadKind {
        WorkloadKind::Aging(AgingSpec {
            capacity: self.capacity.scaled(factor, MIN_CAPACITY),
            max_file: self.max_file.scaled(factor, Bytes::MIB),
            ..self.clone()
        })
    }

    fn validate(&self) -> Result<(), Invalid> {
        if self.capacity.get() < MIN_CAPACITY {
            return Err(Invalid(format!(
                "capacity must be at least {} (is {})",
                Bytes(MIN_CAPACITY),
                self.capacity
            )));
        }
        if !(0.05..=0.9).contains(&self.fullness) {
            return Err(Invalid(format!(
                "fullness must be between 0.05 and 0.9 (is {})",
                self.fullness
            )));
        }
        if !(self.churn >= self.fullness && self.churn <= 50.0) {
            return Err(Invalid(format!(
                "churn must be between fullness ({}) and 50 (is {}): the stream must at least fill the target",
                self.fullness, self.churn
            )));
        }
        if self.dirs == 0 || self.dirs > 10_000 {
            return Err(Invalid(format!("dirs must be between 1 and 10000 (is {})", self.dirs)));
        }
        if self.max_file.get() == 0 || self.max_file.get() > self.capacity.get() / 4 {
            return Err(Invalid(format!(
                "max_file must be between 1 byte and a quarter of capacity ({}) (is {})",
                Bytes(self.capacity.get() / 4),
                self.max_file
            )));
        }
        Ok(())
    }

    /// `capacity` (95 % of it as data in files of the profile's capped mean size), so that an
    /// image sized from the footprint (no `image_size`, or `--fs`) is about `capacity` and
    /// `fullness` stays the filesystem's own; it holds the ceiling of the live bytes
    /// (`fullness` plus a quarter of the rest).
    fn footprint(&self) -> crate::fstype::Footprint {
        let data = self.capacity.get() / 20 * 19;
        let mean = ((SIZE_MU + SIZE_SIGMA * SIZE_SIGMA / 2.0).exp() as u64).clamp(4096, self.max_file.get().max(4096));
        let files = (data / mean).max(1) * 2;
        crate::fstype::Footprint::default()
            .dirs(1 + u64::from(self.dirs), 5)
            .files(files, data / files, 9)
    }

    fn describe(&self) -> String {
        format!(
            "aging mode={} capacity={} fullness={} churn={}× seed={}: lognormal sizes (μ {SIZE_MU}, σ {SIZE_SIGMA}, cap {}), {} directories; then a cold read of the kept tree and its FIEMAP layout",
            match self.mode {
                AgingMode::Aged => "aged",
                AgingMode::Fresh => "fresh",
            },
            self.capacity,
            self.fullness,
            self.churn,
            self.seed,
            self.max_file,
            self.dirs
        )
    }

    fn run(&self, ctx: &RunContext) -> Result<RawSample, EngineError> {
        self.validate()?;
        if ctx.interrupt.load(Ordering::Relaxed) {
            return Err(EngineError::Interrupted);
        }
        let top = ctx.dir.join(TOP);
        let mut phases = Phases::new(ctx);
        let tree = final_tree(self);
        let mib = |b: u64| b as f64 / Bytes::MIB as f64;
        phases.note(format!(
            "aging profile: seed {}, {:.0} MiB written for {:.0} MiB live in {} files",
            self.seed,
            mib(ops(self).iter().map(op_bytes).sum()),
            mib(tree.iter().map(|f| f.size).sum()),
            tree.len()
        ));
        // A copy of a saved aged image (`--aged-from`) already holds the tree.
        let kept = self.mode == AgingMode::Aged && top.is_dir();
        let made = if kept { Ok(()) } else { self.make_dirs(&top) };
        let result = made.and_then(|()| self.measure(ctx, &mut phases, &top, kept));
        // With `ctx.keep` the runner saves the filesystem's image: the aged tree stays.
        let keep = ctx.keep && self.mode == AgingMode::Aged && result.is_ok();
        let removed = if top.exists() && !keep {
            let step = crate::progress::step("aging: removing the tree", None, "");
            let r = std::fs::remove_dir_all(&top).map_err(|e| EngineError::io(format!("remove {}", top.display()), e));
            step.finish();
            r
        } else {
            Ok(())
        };
        result?;
        removed?;
        Ok(phases.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An 8 MiB capacity in 4 directories: a tree that ages in well under a second.
    fn tiny() -> AgingSpec {
        AgingSpec {
            capacity: Bytes(8 * Bytes::MIB),
            max_file: Bytes(Bytes::MIB),
            dirs: 4,
            ..Default::default()
        }
    }

    fn small() -> AgingSpec {
        AgingSpec {
            capacity: Bytes(16 * Bytes::MIB),
            max_file: Bytes(2 * Bytes::MIB),
            dirs: 8,
            ..Default::default()
        }
    }

    #[test]
    fn the_stream_is_fixed_by_the_seed() {
        let s = small();
        let a = ops(&s);
        assert_eq!(a, ops(&s), "same seed, same stream");
        let other = ops(&AgingSpec { seed: 31, ..s.clone() });
        assert_ne!(a, other, "another seed, another stream");
        let written: u64 = a.iter().map(op_bytes).sum();
        assert!(written as f64 >= 2.0 * s.capacity.get() as f64, "{written}");
        let kinds = |f: fn(&Op) -> bool| a.iter().filter(|o| f(o)).count();
        assert!(kinds(|o| matches!(o, Op::Append { .. })) > 0);
        assert!(kinds(|o| matches!(o, Op::Overwrite { .. })) > 0);
        assert!(kinds(|o| matches!(o, Op::Rename { .. })) > 0);
        assert!(kinds(|o| matches!(o, Op::Delete { .. })) > 0);
    }

    #[test]
    fn the_final_tree_is_at_the_target_fullness() {
        let s = small();
        let tree = final_tree(&s);
        let live: u64 = tree.iter().map(|f| f.size).sum();
        let target = (s.capacity.get() as f64 * s.fullness) as u64;
        assert!(
            live >= target && live <= target + s.max_file.get(),
            "{live} vs {target}"
        );
        assert!(tree.windows(2).all(|w| w[0].id < w[1].id));
        assert!(tree.iter().all(|f| f.size >= 1 && f.size <= s.max_file.get()));
    }

    /// Aging one directory and writing the fresh tree into another give the same tree, byte
    /// for byte; a second aging with the same seed gives it too.
    #[test]
    fn aged_and_fresh_trees_are_the_same_files() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = std::sync::atomic::AtomicBool::new(false);
        let s = tiny();
        let mut lists = Vec::new();
        for (name, mode) in [("a", AgingMode::Aged), ("b", AgingMode::Aged), ("c", AgingMode::Fresh)] {
            let root = tmp.path().join(name);
            std::fs::create_dir(&root).expect("mkdir");
            let ctx = RunContext::quiet(&root, &flag);
            let spec = AgingSpec { mode, ..s.clone() };
            let top = root.join(TOP);
            spec.make_dirs(&top).expect("dirs");
            match mode {
                AgingMode::Aged => spec.age(&ctx, &top).expect("age"),
                AgingMode::Fresh => spec.populate(&ctx, &top).expect("populate"),
            };
            // What the tree holds: path, type, size and content hash (not the times).
            let list = crate::datasets::tree::list_tree(&top).expect("list");
            lists.push(
                list.into_iter()
                    .map(|e| (e.path, e.kind, e.size, e.content))
                    .collect::<Vec<_>>(),
            );
        }
        assert!(lists[0].len() > 4, "files were kept");
        assert_eq!(lists[0], lists[1], "same seed, same aged tree");
        assert_eq!(lists[0], lists[2], "the fresh tree is the aged one");
    }

    /// A tree found on the filesystem (a saved image's copy) is measured only if it is this
    /// spec's final tree: another seed's tree, a missing file or a stray file is refused.
    #[test]
    fn a_kept_tree_must_be_this_specs() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = std::sync::atomic::AtomicBool::new(false);
        let s = tiny();
        let ctx = RunContext::quiet(tmp.path(), &flag);
        let top = tmp.path().join(TOP);
        s.make_dirs(&top).expect("dirs");
        s.age(&ctx, &top).expect("age");
        assert_eq!(s.check_kept(&top).expect("its own tree"), final_tree(&s));
        let other = AgingSpec { seed: 31, ..s.clone() };
        let e = other.check_kept(&top).unwrap_err().to_string();
        assert!(e.contains("not this spec's aged image"), "{e}");
        let stray = top.join(dir_name(0)).join("notes.txt");
        std::fs::write(&stray, b"x").expect("stray");
        let e = s.check_kept(&top).unwrap_err().to_string();
        assert!(e.contains("notes.txt"), "{e}");
        std::fs::remove_file(&stray).expect("rm");
        let f = final_tree(&s)[0];
        std::fs::remove_file(s.path(&top, f.dir, f.id)).expect("rm a kept file");
        assert!(s.check_kept(&top).is_err(), "a missing file");
    }

    /// With `keep` (the runner saves the image), the aged tree stays after the run; a second
    /// run on it measures the kept tree without ageing again and then removes it.
    #[test]
    fn keep_leaves_the_aged_tree_and_a_rerun_measures_it() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = std::sync::atomic::AtomicBool::new(false);
        let s = tiny();
        let ctx = RunContext {
            mkfs_args: &[],
            keep: true,
            ..RunContext::quiet(tmp.path(), &flag)
        };
        let first = s.run(&ctx).expect("aged run");
        assert!(first.phases.iter().any(|p| p.phase == AGE));
        assert!(tmp.path().join(TOP).is_dir(), "the aged tree was kept");
        let again = crate::run_quiet(&s, tmp.path(), &flag).expect("rerun");
        assert!(again.phases.iter().all(|p| p.phase != AGE), "aged again");
        assert!(again.phases.iter().any(|p| p.phase == READ));
        assert!(again.notes.iter().any(|n| n.contains("saved aged image")));
        assert!(crate::dir_is_empty(tmp.path()));
    }

    #[test]
    fn a_run_measures_and_leaves_nothing() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let flag = std::sync::atomic::AtomicBool::new(false);
        let s = tiny();
        let sample = crate::run_quiet(&s, tmp.path(), &flag).expect("run");
        for (phase, metric) in [
            (READ, THROUGHPUT),
            (measured::GREP, THROUGHPUT),
            (measured::SEQREAD, THROUGHPUT),
            (measured::STATREAD, measured::RATE),
        ] {
            let v = sample
                .phases
                .iter()
                .find(|p| p.phase == phase)
                .and_then(|p| p.metrics.iter().find(|(m, _)| m.name == metric))
                .unwrap_or_else(|| panic!("no {phase} {metric}"));
            assert!(v.1 > 0.0 && v.1.is_finite(), "{phase}: {}", v.1);
        }
        assert!(crate::dir_is_empty(tmp.path()));
    }

    #[test]
    fn bad_specs_are_refused_and_scale_grows_capacity() {
        for (s, want) in [
            (
                AgingSpec {
                    fullness: 0.95,
                    ..Default::default()
                },
                "fullness",
            ),
            (
                AgingSpec {
                    churn: 0.5,
                    ..Default::default()
                },
                "churn",
            ),
            (
                AgingSpec {
                    dirs: 0,
                    ..Default::default()
                },
                "dirs",
            ),
            (
                AgingSpec {
                    capacity: Bytes(Bytes::MIB),
                    ..Default::default()
                },
                "capacity",
            ),
        ] {
            let e = s.validate().unwrap_err();
            assert!(e.0.contains(want), "{e}");
        }
        let WorkloadKind::Aging(up) = AgingSpec::default().scaled(4.0) else {
            panic!()
        };
        assert_eq!(up.capacity, Bytes(4 * Bytes::GIB));
        assert!(up.validate().is_ok());
        assert!(toml::from_str::<WorkloadKind>("kind = \"aging\"\nmode = \"fresh\"").is_ok());
        assert!(toml::from_str::<WorkloadKind>("kind = \"aging\"\nmode = \"old\"").is_err());
    }
}
