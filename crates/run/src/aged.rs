//! Aged images kept and reused (issue 30, item 5): `--keep-aged DIR` saves the aged filesystem
//! of each `aging` case with `mode = "aged"`, and `--aged-from DIR` starts that case's repeats
//! from a copy of it, so a lab ages once and measures many times ([aging.md](../../doc/aging.md)).
//!
//! - A saved image is `DIR/VARIANT.img` (the variant's name made path-safe), a cleanly unmounted
//!   loop image saved by the first measured repeat of the case ([`crate::provision::Mounted::save_image`]),
//!   beside `DIR/VARIANT.json` ([`Saved`]): the filesystem type, the image size and the aging
//!   spec it was aged with.
//! - A run with `--aged-from` checks, before anything is made, that every aged case has its
//!   image, that `blkid -p` finds the variant's type in it, that its record exists and names the
//!   same aging spec (mode aside) and image size as the case: a mismatch is a usage error
//!   (exit 2), since the aged tree would not be the fresh case's. Each repeat then gets its own
//!   copy (`provision::image`); the original is never attached, mounted or written.
//! - Only loop images can keep or start from an image ([`super::Target::keeps_images`]), and
//!   only with one process (not `--ranks`); cases other than aged `aging` ones run as always.

use super::{RunError, RunOptions, Target};
use crate::engine::workloads::aging::{AgingMode, AgingSpec};
use crate::engine::WorkloadKind;
use crate::plan::{Case, Plan};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The record saved beside an image: how the filesystem in it was made and aged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Saved {
    /// The filesystem type (`ext4`).
    pub fs_type: String,
    /// The variant's name in the run that saved it.
    pub variant: String,
    /// Size of the image, bytes.
    pub image_bytes: u64,
    /// The aging spec the filesystem was aged with.
    pub workload: AgingSpec,
    /// When it was saved (RFC 3339, UTC).
    pub saved_at: String,
}

/// What one repeat starts from and keeps.
#[derive(Clone, Debug, Default)]
pub struct RepeatImages {
    /// Start from a copy of this image instead of a fresh mkfs.
    pub start: Option<PathBuf>,
    /// Save the filesystem's image here after the workload.
    pub keep: Option<PathBuf>,
}

/// The run's `--keep-aged` and `--aged-from` folders.
#[derive(Clone, Debug, Default)]
pub struct AgedImages {
    keep: Option<PathBuf>,
    from: Option<PathBuf>,
}

/// The aging spec of a case whose workload is `aging` in its aged mode.
fn aged_spec(case: &Case) -> Option<&AgingSpec> {
    match &case.workload.kind {
        WorkloadKind::Aging(s) if s.mode == AgingMode::Aged => Some(s),
        _ => None,
    }
}

/// `ext4.img` for variant `ext4`; any character but letters, digits, `-` and `_` becomes `-`.
pub fn image_name(variant: &str) -> String {
    let clean: String = variant
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '-' })
        .collect();
    format!("{clean}.img")
}

/// The record's path beside `image` (`ext4.img` → `ext4.json`).
fn record_path(image: &Path) -> PathBuf {
    image.with_extension("json")
}

impl AgedImages {
    /// The folders the options name.
    pub fn of(options: &RunOptions) -> AgedImages {
        AgedImages {
            keep: options.keep_aged.clone(),
            from: options.aged_from.clone(),
        }
    }

    /// Checks everything before anything is made (usage errors, exit 2): the target keeps
    /// images, the suite has an aged `aging` case, `--keep-aged`'s folder can be made and holds
    /// no image of this run's variants yet (unless the session is `resumed`), and every image
    /// `--aged-from` names exists, holds the variant's type and was aged like the case. `ranks`:
    /// how many ranks run it (one only).
    pub fn check(&self, target: &Target, plan: &Plan, resumed: bool, ranks: usize) -> Result<(), RunError> {
        let (flag, dir) = match (&self.keep, &self.from) {
            (None, None) => return Ok(()),
            (Some(_), Some(_)) => {
                return Err(RunError::Usage(
                    "--keep-aged and --aged-from together: an image started from a copy is saved already; give one"
                        .into(),
                ))
            }
            (Some(d), None) => ("--keep-aged", d),
            (None, Some(d)) => ("--aged-from", d),
        };
        target
            .keeps_images()
            .map_err(|e| RunError::Usage(format!("{flag}: {e}")))?;
        if ranks > 1 {
            return Err(RunError::Usage(format!(
                "{flag} with --ranks: every rank ages its own tree in its own folder, which a saved image cannot hand back; run it with one process"
            )));
        }
        let usage = |m: String| RunError::Usage(format!("{flag} {}: {m}", dir.display()));
        let cases: Vec<(&Case, &AgingSpec)> = plan
            .cases
            .iter()
            .filter(|c| c.unavailable.is_none())
            .filter_map(|c| aged_spec(c).map(|s| (c, s)))
            .collect();
        if cases.is_empty() {
            return Err(usage(
                "the suite has no `aging` workload with mode = \"aged\" that runs here".into(),
            ));
        }
        if let Some(c) = cases.iter().find(|(c, _)| c.variant.kernel.is_some()) {
            return Err(usage(format!(
                "{} runs in a guest kernel, which has no loop image here",
                c.0.variant.name
            )));
        }
        if self.keep.is_some() {
            std::fs::create_dir_all(dir).map_err(|e| usage(format!("cannot make the folder: {e}")))?;
            for (c, _) in &cases {
                let img = dir.join(image_name(&c.variant.name));
                if img.exists() && !resumed {
                    return Err(usage(format!(
                        "{} exists and fsbench does not overwrite a saved image: remove it or choose another folder",
                        img.display()
                    )));
                }
            }
            return Ok(());
        }
        for (c, spec) in &cases {
            let img = dir.join(image_name(&c.variant.name));
            check_saved(&img, c, spec).map_err(|e| usage(e.to_string()))?;
        }
        Ok(())
    }

    /// What repeat `warmup` of `case` starts from and keeps: only aged `aging` cases have
    /// either; an image is kept by the first measured repeat (while `DIR/VARIANT.img` does not
    /// exist).
    pub fn for_repeat(&self, case: &Case, warmup: bool) -> RepeatImages {
        if aged_spec(case).is_none() || case.variant.kernel.is_some() {
            return RepeatImages::default();
        }
        let path = |d: &PathBuf| d.join(image_name(&case.variant.name));
        RepeatImages {
            start: self.from.as_ref().map(path),
            keep: self.keep.as_ref().map(path).filter(|p| !warmup && !p.exists()),
        }
    }

    /// Writes the record beside the image just saved at `image` for `case`.
    pub fn record(case: &Case, image: &Path) -> std::io::Result<()> {
        let Some(spec) = aged_spec(case) else { return Ok(()) };
        let saved = Saved {
            fs_type: case.variant.fs_type.clone(),
            variant: case.variant.name.clone(),
            image_bytes: std::fs::metadata(image)?.len(),
            workload: spec.clone(),
            saved_at: crate::store::now_rfc3339(),
        };
        let text = serde_json::to_vec_pretty(&saved).map_err(std::io::Error::other)?;
        std::fs::write(record_path(image), text)
    }
}

/// Why the saved image `img` cannot be the aged state of `case` (aged with `spec`), if it cannot.
fn check_saved(img: &Path, case: &Case, spec: &AgingSpec) -> Result<(), NotSaved> {
    let found = crate::provision::image::image_type(img).map_err(NotSaved::Image)?;
    if found != case.variant.fs_type {
        return Err(NotSaved::Other(format!(
            "{} holds {found}, but variant {} is {}",
            img.display(),
            case.variant.name,
            case.variant.fs_type
        )));
    }
    let rec = record_path(img);
    let text = std::fs::read_to_string(&rec).map_err(|source| NotSaved::NoRecord {
        record: rec.clone(),
        source,
    })?;
    let saved: Saved = serde_json::from_str(&text).map_err(|source| NotSaved::BadRecord { record: rec, source })?;
    let asked = AgingSpec {
        mode: AgingMode::Aged,
        ..spec.clone()
    };
    if saved.workload != asked {
        return Err(NotSaved::Other(format!(
            "{} was aged with {}, but this suite's `{}` asks for {}: run the same suite and --scale, or save a new image",
            img.display(),
            serde_json::to_string(&saved.workload).unwrap_or_default(),
            case.workload.name,
            serde_json::to_string(&asked).unwrap_or_default()
        )));
    }
    let len = std::fs::metadata(img).map(|m| m.len()).unwrap_or(0);
    if len != case.image_bytes {
        return Err(NotSaved::Other(format!(
            "{} is {} bytes but this run's {} images are {}: the fresh case would not be comparable",
            img.display(),
            len,
            case.variant.name,
            case.image_bytes
        )));
    }
    Ok(())
}

/// Why a saved image cannot be a case's aged state ([`check_saved`]).
#[derive(Debug, thiserror::Error)]
enum NotSaved {
    /// Its filesystem cannot be told.
    #[error("{0}")]
    Image(crate::provision::ProvisionError),
    /// It has no record of how it was aged.
    #[error("{}: {source}: without the record of how the image was aged fsbench cannot tell it holds this suite's tree", record.display())]
    NoRecord { record: PathBuf, source: std::io::Error },
    /// Its record does not read.
    #[error("{}: {source}", record.display())]
    BadRecord { record: PathBuf, source: serde_json::Error },
    /// Another filesystem, ageing or size than the case's: the message says which.
    #[error("{0}")]
    Other(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_names_are_path_safe() {
        assert_eq!(image_name("ext4"), "ext4.img");
        assert_eq!(image_name("btrfs:compress=lzo"), "btrfs-compress-lzo.img");
        assert_eq!(image_name("../x"), "---x.img");
        assert_eq!(record_path(Path::new("/a/ext4.img")), PathBuf::from("/a/ext4.json"));
    }
}
