//! `writeFile`: bytes at a path the Runner already admitted.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::lifecycle::InstanceState;
use crate::{FileContent, FileMode, InstanceId, Mounts, SandboxPath};

/// `writeFile`: write one regular file.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileRequest {
    /// The instance.
    pub instance_id: InstanceId,
    /// Where to write.
    pub path: SandboxPath,
    /// What to write (at most 16 MiB).
    pub content: FileContent,
    /// Permission bits (default `0o644`).
    #[serde(default)]
    pub mode: FileMode,
}

/// The Runner's write admission: "During `provisioning`, `writeFile` may
/// target any declared mount or the output tree. Once `active`, only the
/// output tree remains writable through this trusted port." A path equal to a
/// mount root or the output tree itself is not a file inside it and is
/// refused.
pub fn write_admitted(state: InstanceState, mounts: &Mounts, path: &SandboxPath) -> bool {
    let strictly_under = |root: &SandboxPath| path.starts_with(root) && path != root;
    if strictly_under(&SandboxPath::output_path()) {
        return true;
    }
    state == InstanceState::Provisioning
        && mounts.as_slice().iter().any(|m| strictly_under(&m.path))
}
