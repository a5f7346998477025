//! Helpers shared by the integration tests.

use std::path::PathBuf;

use corral_backend::{
    Backend, CollectedOutput, Command, CreateRequest, ExecRequest, ExitStatus, Labels, SandboxInfo,
};
use corral_backend_local::LocalBackend;
use tempfile::TempDir;

/// A backend on a fresh temporary state directory (removed when dropped).
pub fn backend() -> (TempDir, LocalBackend) {
    let dir = tempfile::tempdir().expect("tempdir");
    let b = LocalBackend::open(dir.path()).expect("open");
    corral_backend::verify(&b).expect("declared members exist");
    (dir, b)
}

/// Labels naming a test.
pub fn labels(test: &str) -> Labels {
    Labels::new().with("test", test).unwrap()
}

/// A plain sandbox.
pub async fn sandbox(b: &LocalBackend) -> SandboxInfo {
    b.create(CreateRequest::default()).await.expect("create")
}

/// The host directory behind sandbox `id`'s `/`.
pub fn host_root(state: &TempDir, id: &str) -> PathBuf {
    state.path().join("sandboxes").join(id).join("root")
}

/// Runs a shell script in the sandbox, returning its status and output.
pub async fn sh(b: &LocalBackend, id: &str, script: &str) -> (ExitStatus, CollectedOutput) {
    let mut out = CollectedOutput::default();
    let outcome = b
        .exec(
            id,
            ExecRequest::new(Command::shell(script).unwrap()),
            &mut out,
        )
        .await
        .unwrap_or_else(|e| panic!("exec {script:?}: {e}"));
    (outcome.status, out)
}

/// The names of the entries of the state's `sandboxes/` directory.
pub fn sandbox_dirs(state: &TempDir) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(state.path().join("sandboxes"))
        .expect("read sandboxes")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
