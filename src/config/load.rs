//! Loading and validating suite files. (Skeleton: the config helper fills this in.)

use super::{Overrides, Suite};
use std::path::Path;

/// A suite that cannot be used, with where and what to do.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Anything wrong in the text, with file:line:col when known.
    #[error("{0}")]
    Invalid(String),
}

/// Loads a suite file and applies the overrides.
pub fn load_file(_path: &Path, _o: &Overrides) -> Result<Suite, ConfigError> {
    unimplemented!()
}
/// Loads a built-in preset by name and applies the overrides.
pub fn load_preset(_name: &str, _o: &Overrides) -> Result<Suite, ConfigError> {
    unimplemented!()
}
/// Loads suite text; `origin` names it in errors (a path or `preset quick`).
pub fn load_str(_text: &str, _origin: &str, _o: &Overrides) -> Result<Suite, ConfigError> {
    unimplemented!()
}
/// Names of the built-in presets.
pub fn preset_names() -> Vec<&'static str> {
    vec![]
}
/// The TOML text of a built-in preset.
pub fn preset_text(_name: &str) -> Option<&'static str> {
    None
}
