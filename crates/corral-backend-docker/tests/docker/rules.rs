//! The shared backend-rule suite, run against the docker backend on a real
//! engine (a printed skip where none answers).

use crate::common;
corral_backend::backend_rules!(skippable |rule: &'static str| async move {
    common::backend(rule)
        .await
        .map(|backend| corral_backend::rules::Subject::new(std::sync::Arc::new(backend)))
});
