//! What the linux backend's integration tests share: a backend on a
//! temporary state directory that destroys everything a test left.

#![allow(dead_code)]

use corral_backend_linux::LinuxBackend;

/// The state directory of a test; whatever the test left is destroyed when
/// it drops, before the directory is removed.
pub struct StateDir(pub LinuxBackend, pub Option<tempfile::TempDir>);

impl Drop for StateDir {
    fn drop(&mut self) {
        let _ = self.0.destroy_all();
        drop(self.1.take());
    }
}

impl StateDir {
    /// The temporary state directory.
    pub fn path(&self) -> &std::path::Path {
        self.1
            .as_ref()
            .map_or(std::path::Path::new(""), |d| d.path())
    }
}

/// A backend on a fresh temporary state directory, or `None` (after
/// printing `SKIP <test>: <reason>`) where this host cannot run linux
/// sandboxes.
pub fn backend(test: &str) -> Option<(LinuxBackend, StateDir)> {
    // SAFETY: set before any sandbox is made; every test sets the same value.
    unsafe { std::env::set_var("CORRAL_INIT", env!("CARGO_BIN_EXE_corral-init")) };
    if let Err(reason) = LinuxBackend::available() {
        println!("SKIP {test}: {reason}");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let b = LinuxBackend::open(dir.path()).unwrap();
    Some((b.clone(), StateDir(b, Some(dir))))
}
