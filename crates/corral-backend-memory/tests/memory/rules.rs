//! The shared backend-rule suite, run against the memory backend.

corral_backend::backend_rules!(|| corral_backend::rules::Subject::new(std::sync::Arc::new(
    corral_backend_memory::MemoryBackend::new()
)));
