//! The agent: the same fsbench binary, started inside the guest as `fsbench guest-agent`, and
//! the framed protocol that carries its answer back to the host.
//!
//! The host puts a [`Job`] (the variant, the workload, the disk) into the initramfs as
//! `/job.json`; the guest's init copies it to `/run` of the host root it mounted read-only over
//! 9p (a tmpfs there) and runs the agent in that root. The agent makes the filesystem
//! with the normal provisioner code ([`crate::provision::provision_device`]), runs the workload
//! through the normal engine ([`crate::engine::run`], the one phase driver), tears down, and
//! writes one [`Reply`] to the guest's second serial port, which QEMU writes to a file on the
//! host:
//!
//! ```text
//! FSBENCH-AGENT-BEGIN <length of the JSON in bytes>
//! {"kernel": "...", "effective_mount_opts": "...", "result": {"Ok": {"sample": {"phases": [...], ...}, "roles": [[...]]}}}
//! FSBENCH-AGENT-END
//! ```
//!
//! Invariant: [`decode`] accepts a reply only when the length, the JSON and the end marker all
//! agree (a serial line may add `\r`, which JSON never contains unescaped, so it is dropped); a
//! truncated or garbled reply is an error, never a partial sample.

use crate::config::FsVariant;
use crate::engine::{RunContext, WorkloadKind};
use crate::metric::{RawSample, Role};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::atomic::AtomicBool;

/// Marks the start of a reply.
pub const BEGIN: &str = "FSBENCH-AGENT-BEGIN";
/// Marks the end of a reply.
pub const END: &str = "FSBENCH-AGENT-END";

/// What the host asks the agent to do: one repeat of one case.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Job {
    /// The filesystem variant (its `kernel` is ignored inside the guest).
    pub variant: FsVariant,
    /// The workload and its parameters.
    pub workload: WorkloadKind,
    /// The disk under test inside the guest (`/dev/vda`).
    pub device: String,
    /// Sync and drop the guest's caches before each timed phase.
    pub drop_caches: bool,
    /// For a workload that copies its filesystem's loop image
    /// ([`crate::engine::Workload::needs_loop_image`]): the image's size in bytes. The agent
    /// then makes a staging filesystem ([`crate::fstype::STAGING`]) on `device` and puts the
    /// filesystem under test on a loop image of this size in a run folder there, with the normal
    /// image provisioner, so the workload finds what it finds on the host (a loop device over an
    /// image, its run folder beside the mount). `None`: the filesystem goes on `device` itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_image: Option<u64>,
}

/// What the agent answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// `uname -r` of the guest.
    pub kernel: String,
    /// Mount options as the guest's /proc/mounts shows them.
    pub effective_mount_opts: Option<String>,
    /// The repeat's sample, or why it failed.
    #[serde(with = "wire")]
    pub result: Result<RawSample, AgentFailure>,
}

/// Why the agent has no sample for the repeat (the workload's error, a provisioning or
/// teardown failure in the guest). On the wire it is the message itself, a JSON string.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(transparent)]
#[error("{0}")]
pub struct AgentFailure(pub String);

impl From<String> for AgentFailure {
    fn from(s: String) -> Self {
        AgentFailure(s)
    }
}

impl From<&str> for AgentFailure {
    fn from(s: &str) -> Self {
        AgentFailure(s.to_string())
    }
}

/// Why the agent's serial output holds no reply fsbench can read ([`decode`]).
#[derive(Debug, thiserror::Error)]
pub enum BadReply {
    /// No reply began.
    #[error("the guest sent no reply (no FSBENCH-AGENT-BEGIN)")]
    NoBegin,
    /// The header has no length.
    #[error("the reply's length is missing")]
    NoLength,
    /// Nothing follows the header.
    #[error("the reply ends after its header")]
    NoJson,
    /// The JSON is not as long as the header says.
    #[error("the reply is garbled: {got} bytes of JSON where the header announced {announced}")]
    Garbled {
        /// Bytes of JSON received.
        got: usize,
        /// Bytes the header announced.
        announced: usize,
    },
    /// The reply does not end.
    #[error("the reply has no FSBENCH-AGENT-END")]
    NoEnd,
    /// The JSON is not a [`Reply`].
    #[error("the reply is not valid: {0}")]
    Json(#[source] serde_json::Error),
}

/// How a repeat's [`RawSample`] crosses the serial line: its own serde form plus each metric's
/// role (which [`crate::metric::MetricId`]'s serde form leaves out), phase by phase in metric
/// order. Only [`Reply`]'s serde form uses it; the sample itself stays a [`RawSample`].
mod wire {
    use super::{AgentFailure, RawSample, Role};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Sample {
        sample: RawSample,
        /// `roles[p][m]`: the role of metric `m` of phase `p`.
        roles: Vec<Vec<Role>>,
    }

    pub fn serialize<S: Serializer>(r: &Result<RawSample, AgentFailure>, s: S) -> Result<S::Ok, S::Error> {
        let r = r.as_ref().map(|raw| Sample {
            roles: raw
                .phases
                .iter()
                .map(|p| p.metrics.iter().map(|(m, _)| m.role).collect())
                .collect(),
            sample: raw.clone(),
        });
        r.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Result<RawSample, AgentFailure>, D::Error> {
        let r = Result::<Sample, AgentFailure>::deserialize(d)?;
        Ok(r.map(|Sample { mut sample, roles }| {
            for (phase, roles) in sample.phases.iter_mut().zip(roles) {
                for ((metric, _), role) in phase.metrics.iter_mut().zip(roles) {
                    metric.role = role;
                }
            }
            sample
        }))
    }
}

/// The framed form of `reply`.
pub fn encode(reply: &Reply) -> String {
    let json = serde_json::to_string(reply).unwrap_or_else(|e| {
        serde_json::to_string(&Reply {
            kernel: reply.kernel.clone(),
            effective_mount_opts: None,
            result: Err(format!("the agent could not encode its sample: {e}").into()),
        })
        .unwrap_or_default()
    });
    format!("\n{BEGIN} {}\n{json}\n{END}\n", json.len())
}

/// The last complete reply in `text` (the agent's serial output).
pub fn decode(text: &str) -> Result<Reply, BadReply> {
    let text = text.replace('\r', "");
    let at = text.rfind(BEGIN).ok_or(BadReply::NoBegin)?;
    let mut lines = text[at + BEGIN.len()..].splitn(3, '\n');
    let len: usize = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or(BadReply::NoLength)?;
    let json = lines.next().ok_or(BadReply::NoJson)?;
    if json.len() != len {
        return Err(BadReply::Garbled {
            got: json.len(),
            announced: len,
        });
    }
    if !lines.next().is_some_and(|rest| rest.starts_with(END)) {
        return Err(BadReply::NoEnd);
    }
    serde_json::from_str(json).map_err(BadReply::Json)
}

/// The guest's kernel release.
fn uname_release() -> String {
    rustix::system::uname().release().to_string_lossy().into_owned()
}

/// Runs the job in `job_path` and writes the framed reply to `out` (the guest's serial port).
/// Returns the process exit code (0 also when the workload failed: the reply says so).
pub fn main(job_path: &Path, out: &Path) -> i32 {
    let reply = match std::fs::read_to_string(job_path)
        .map_err(|e| format!("read {}: {e}", job_path.display()))
        .and_then(|t| serde_json::from_str::<Job>(&t).map_err(|e| format!("parse {}: {e}", job_path.display())))
    {
        Ok(job) => run_job(&job),
        Err(e) => Reply {
            kernel: uname_release(),
            effective_mount_opts: None,
            result: Err(e.into()),
        },
    };
    let framed = encode(&reply);
    match std::fs::OpenOptions::new().write(true).open(out) {
        Ok(mut f) => {
            use std::io::Write;
            if f.write_all(framed.as_bytes()).and_then(|_| f.flush()).is_err() {
                return 1;
            }
            0
        }
        Err(e) => {
            eprintln!("fsbench guest-agent: open {}: {e}", out.display());
            1
        }
    }
}

/// The filesystem under test in the guest: on the job's device, or (`loop_image`) on a loop
/// image in a run folder of its own on a staging filesystem on the device; with that run
/// folder's state and the staging mount, to finish and tear down after the filesystem.
fn provision(
    state: &crate::provision::RunState,
    variant: &FsVariant,
    job: &Job,
) -> Result<
    (
        crate::provision::Mounted,
        Option<(crate::provision::RunState, crate::provision::Mounted)>,
    ),
    String,
> {
    use crate::provision::{provision_device, ImageProvisioner, Provisioner, RunState};
    let Some(bytes) = job.loop_image else {
        return provision_device(state, variant, &job.device, "guest")
            .map(|m| (m, None))
            .map_err(|e| e.to_string());
    };
    let staging = FsVariant::with_type(format!("{}-staging", variant.name), crate::fstype::STAGING);
    let stage = provision_device(state, &staging, &job.device, "staging")
        .map_err(|e| format!("the staging {}: {e}", crate::fstype::STAGING))?;
    let inner = match RunState::create(&stage.workdir) {
        Ok(s) => s,
        Err(e) => {
            let _ = stage.teardown();
            return Err(format!("run folder on the staging filesystem: {e}"));
        }
    };
    match ImageProvisioner::new(inner.clone()).provision(variant, bytes, "guest") {
        Ok(m) => Ok((m, Some((inner, stage)))),
        Err(e) => {
            inner.finish();
            let _ = stage.teardown();
            Err(e.to_string())
        }
    }
}

fn run_job(job: &Job) -> Reply {
    let kernel = uname_release();
    let fail = |e: String| Reply {
        kernel: kernel.clone(),
        effective_mount_opts: None,
        result: Err(e.into()),
    };
    let state = match crate::provision::RunState::create(Path::new("/tmp/fsbench-agent")) {
        Ok(s) => s,
        Err(e) => return fail(format!("guest run folder: {e}")),
    };
    let mut variant = job.variant.clone();
    variant.kernel = None;
    let (mounted, staging) = match provision(&state, &variant, job) {
        Ok(m) => m,
        Err(e) => {
            state.finish();
            return fail(format!("provisioning {} in the guest: {e}", variant.name));
        }
    };
    let interrupt = AtomicBool::new(false);
    let no_phase = |_: &str| {};
    let ctx = RunContext {
        dir: &mounted.workdir,
        drop_caches: job.drop_caches,
        interrupt: &interrupt,
        sync: &crate::engine::sync::Solo,
        on_phase: &no_phase,
        state: Some(&state),
        fs: Some(variant.fs()),
        mkfs_args: &variant.mkfs_args,
        keep: false,
    };
    let result = crate::engine::run(job.workload.workload(), &ctx).map_err(|e| AgentFailure(e.to_string()));
    let effective_mount_opts = mounted.effective_opts.clone();
    let mut teardown = mounted.teardown();
    if let Some((inner, stage)) = staging {
        inner.finish();
        let t = stage.teardown();
        teardown = teardown.and(t);
    }
    state.finish();
    let result = match (result, teardown) {
        (Ok(_), Err(e)) => Err(format!("teardown in the guest: {e}").into()),
        (r, _) => r,
    };
    Reply {
        kernel,
        effective_mount_opts,
        result,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply() -> Reply {
        Reply {
            kernel: "6.1.0-56-amd64".into(),
            effective_mount_opts: Some("rw,relatime".into()),
            result: Err("no space".into()),
        }
    }

    #[test]
    fn a_framed_reply_survives_a_serial_line_and_console_noise() {
        let framed = encode(&reply());
        let noisy = format!("[    3.1] random: crng init done\r\n{}", framed.replace('\n', "\r\n"));
        assert_eq!(decode(&noisy).unwrap(), reply());
    }

    #[test]
    fn roles_survive_the_wire() {
        use crate::metric::{MetricId, PhaseResult, Unit};
        let raw = RawSample {
            phases: vec![PhaseResult {
                phase: "seq_write_block".into(),
                rank: None,
                wall: std::time::Duration::from_secs(1),
                cpu: Default::default(),
                metrics: vec![
                    (MetricId::higher("throughput", Unit::MibPerSec), 12.5),
                    (MetricId::latency("lat_p99"), 80.0),
                ],
            }],
            notes: vec!["n".into()],
            histograms: vec![],
            series: Vec::new(),
            windows: Vec::new(),
        };
        let reply = Reply {
            kernel: "k".into(),
            effective_mount_opts: None,
            result: Ok(raw.clone()),
        };
        let back = decode(&encode(&reply)).unwrap().result.unwrap();
        assert_eq!(back.measurements(), raw.measurements());
        let roles: Vec<Role> = back.measurements().iter().map(|m| m.metric.role).collect();
        assert_eq!(
            roles,
            [Role::Headline, Role::Latency, Role::ProcessCpu, Role::SystemCpu]
        );
        // Through MetricId's own serde form, the latency role would come back as a headline.
        let plain: RawSample = serde_json::from_str(&serde_json::to_string(&raw).unwrap()).unwrap();
        assert_ne!(plain.measurements()[1].metric.role, Role::Latency);
    }

    #[test]
    fn a_job_without_a_loop_image_goes_on_the_disk_itself() {
        let job = Job {
            variant: FsVariant::with_type("f2fs", "f2fs"),
            workload: WorkloadKind::Bonnie(Default::default()),
            device: "/dev/vda".into(),
            drop_caches: false,
            loop_image: None,
        };
        let text = serde_json::to_string(&job).unwrap();
        assert!(!text.contains("loop_image"), "{text}");
        let back: Job = serde_json::from_str(&text).unwrap();
        assert_eq!(back.loop_image, None);
        let looped = Job {
            loop_image: Some(64 << 20),
            ..job
        };
        let back: Job = serde_json::from_str(&serde_json::to_string(&looped).unwrap()).unwrap();
        assert_eq!(back.loop_image, Some(64 << 20));
    }

    #[test]
    fn a_truncated_or_garbled_reply_is_refused() {
        let framed = encode(&reply());
        let cut = &framed[..framed.len() - 10];
        let err = |t: &str| decode(t).unwrap_err().to_string();
        assert!(err(cut).contains("END"), "{}", err(cut));
        let garbled = framed.replacen("no space", "no spac", 1);
        assert!(err(&garbled).contains("garbled"));
        assert!(err("booted, then nothing").contains("no reply"));
        let bad_len = framed.replacen(&format!("{BEGIN} "), &format!("{BEGIN} x"), 1);
        assert!(err(&bad_len).contains("length"));
    }
}
