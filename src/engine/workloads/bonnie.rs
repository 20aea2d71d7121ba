//! bonnie++ 2.x semantics. (Skeleton: the engine helper fills this in.)

use crate::engine::{EngineError, RunContext, Workload, WorkloadKind};
use crate::metric::RawSample;
use crate::units::Bytes;
use serde::{Deserialize, Serialize};

/// Parameters of the bonnie workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BonnieSpec {
    /// Size of the sequential-I/O file (bonnie++ `-s`).
    #[serde(default = "default_file_size")]
    pub file_size: Bytes,
}

fn default_file_size() -> Bytes {
    Bytes(256 * Bytes::MIB)
}

impl Workload for BonnieSpec {
    fn kind(&self) -> &'static str {
        "bonnie"
    }
    fn phases(&self) -> Vec<String> {
        vec![]
    }
    fn scaled(&self, factor: f64) -> WorkloadKind {
        WorkloadKind::Bonnie(BonnieSpec { file_size: self.file_size.scaled(factor, Bytes::MIB) })
    }
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
    fn disk_bytes(&self) -> u64 {
        self.file_size.get()
    }
    fn describe(&self) -> String {
        format!("bonnie file_size={}", self.file_size)
    }
    fn run(&self, _ctx: &RunContext) -> Result<RawSample, EngineError> {
        unimplemented!()
    }
}
