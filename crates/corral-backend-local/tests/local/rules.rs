//! The shared backend-rule suite, run against the local backend.

corral_backend::backend_rules!(|| {
    let dir = tempfile::tempdir().unwrap();
    let backend = corral_backend_local::LocalBackend::open(dir.path()).unwrap();
    corral_backend::rules::Subject::new(std::sync::Arc::new(backend)).with_guard(dir)
});
