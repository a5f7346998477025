//! The backend-rule suite on `LinuxBackend` (each rule prints a skip with
//! the reason where the host cannot make linux sandboxes).

use std::sync::Arc;

use corral_backend_linux::LinuxBackend;

/// Destroys whatever a rule left (a failed rule panics before its destroy),
/// then removes the state directory.
struct Cleanup(LinuxBackend, Option<tempfile::TempDir>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = self.0.destroy_all();
        drop(self.1.take());
    }
}

fn subject() -> Option<corral_backend::rules::Subject> {
    // SAFETY: every test sets the same value before any sandbox exists.
    unsafe { std::env::set_var("CORRAL_INIT", env!("CARGO_BIN_EXE_corral-init")) };
    if let Err(reason) = LinuxBackend::available() {
        println!("SKIP rules on linux: {reason}");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let backend = LinuxBackend::open(dir.path()).unwrap();
    let guard = Cleanup(backend.clone(), Some(dir));
    Some(corral_backend::rules::Subject::new(Arc::new(backend)).with_guard(guard))
}

// One test per backend rule, each skipped with its reason where linux
// sandboxes cannot be made.
corral_backend::backend_rules!(skippable |rule: &'static str| async move {
    let subject = subject();
    if subject.is_none() {
        println!("SKIP {rule} on linux: the backend is unavailable here");
    }
    subject
});
