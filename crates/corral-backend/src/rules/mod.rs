//! The backend rules of the SDK specification, as one reusable suite that
//! every backend's tests run.
//!
//! Each rule is an `async fn(&dyn Backend)` that panics with a message naming
//! the rule when the backend breaks it. A backend whose platform truly lacks
//! a feature a rule needs gets a printed skip with the reason (see
//! [`skip`]) — never a silent pass.
//!
//! Use it from a backend crate's `tests/rules.rs` (with
//! `corral-backend = { features = ["rules"] }` in its dev-dependencies):
//!
//! ```ignore
//! corral_backend::backend_rules!(|| {
//!     let dir = tempfile::tempdir().unwrap();
//!     let backend = MyBackend::open(dir.path()).unwrap();
//!     corral_backend::rules::Subject::new(std::sync::Arc::new(backend)).with_guard(dir)
//! });
//! ```
//!
//! which expands into one `#[tokio::test]` per rule.

mod create;
mod declared;
mod exec;
mod files;
mod lifecycle;

use std::any::Any;
use std::sync::Arc;

use crate::backend::Backend;
use crate::sandbox::{CreateRequest, Labels, SandboxInfo};

pub use create::*;
pub use declared::*;
pub use exec::*;
pub use files::*;
pub use lifecycle::*;

/// A backend under test, with whatever must live as long as it (a temporary
/// state directory) and be cleaned up after it.
pub struct Subject {
    /// The backend.
    pub backend: Arc<dyn Backend>,
    guard: Option<Box<dyn Any + Send>>,
}

impl Subject {
    /// A subject with nothing to keep alive.
    pub fn new(backend: Arc<dyn Backend>) -> Self {
        Subject {
            backend,
            guard: None,
        }
    }

    /// Keeps `guard` alive until the subject is dropped.
    pub fn with_guard(mut self, guard: impl Any + Send) -> Self {
        self.guard = Some(Box::new(guard));
        self
    }
}

impl std::fmt::Debug for Subject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subject")
            .field("backend", &self.backend.name())
            .field("guarded", &self.guard.is_some())
            .finish()
    }
}

/// The sandbox path `raw` names: a rule's own literal, known to be one.
///
/// # Panics
///
/// When `raw` is not an absolute path.
pub fn sp(raw: &str) -> crate::SandboxPath {
    crate::sandbox_path("path", raw).expect(raw)
}

/// Prints a skip line that test output shows, with the rule and the reason.
pub fn skip(rule: &str, backend: &dyn Backend, reason: &str) {
    println!("SKIP {rule} on {}: {reason}", backend.name());
}

/// The labels the rules put on every sandbox they create, so they can tell
/// theirs apart.
pub fn rule_labels(rule: &str) -> Labels {
    Labels::new()
        .with(crate::sandbox::CORRAL_LABEL, "rules")
        .and_then(|l| l.with("corral.rule", rule.replace('_', "-")))
        .unwrap_or_else(|e| panic!("{rule}: its labels: {e}"))
}

/// Creates a plain sandbox for `rule`, panicking with the rule's name on failure.
pub async fn fresh(backend: &dyn Backend, rule: &str) -> SandboxInfo {
    let req = CreateRequest {
        labels: rule_labels(rule),
        ..CreateRequest::default()
    };
    match backend.create(req).await {
        Ok(info) => info,
        Err(e) => panic!("{rule}: create failed on {}: {e}", backend.name()),
    }
}

/// Expands into one `#[tokio::test]` per backend rule.
///
/// - `backend_rules!(make)`: `make` is a closure returning a [`Subject`].
/// - `backend_rules!(skippable make)`: `make` is a closure taking the
///   rule's name and returning a future of `Option<Subject>`; `None` skips
///   the rule (the closure prints the skip and its reason), for backends
///   a host may lack (root, a daemon).
///
/// The list of rules is written once, here.
#[macro_export]
macro_rules! backend_rules {
    (skippable $make:expr) => {
        $crate::backend_rules!(@rules skippable $make);
    };
    ($make:expr) => {
        $crate::backend_rules!(@rules always $make);
    };
    (@rules $kind:ident $make:expr) => {
        $crate::backend_rules!(@each $kind $make;
            exec_closes_stdin_unless_given,
            exec_passes_stdin_then_eof,
            exec_delivers_chunks_in_arrival_order,
            exec_nonzero_exit_is_a_result,
            exec_honours_cwd_and_env,
            exec_refuses_malformed_commands,
            exec_timeout_kills_the_whole_group_before_settling,
            exec_abort_kills_the_whole_group_before_settling,
            exec_runs_as_the_user_only_where_declared,
            create_fails_closed_when_it_cannot_enforce,
            create_refuses_malformed_requests,
            files_whole_read_returns_every_byte,
            files_ranged_read_returns_bytes_up_to_eof,
            files_round_trip_write_stat_list_mkdir_remove,
            files_missing_is_not_found,
            lifecycle_find_list_connect_destroy,
            lifecycle_destroy_is_idempotent,
            declared_members_exist,
            declared_member_missing_is_refused_with_provider,
        );
    };
    (@each always $make:expr; $($rule:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $rule() {
                let make = $make;
                let subject: $crate::rules::Subject = make();
                $crate::rules::$rule(&*subject.backend).await;
                drop(subject);
            }
        )*
    };
    (@each skippable $make:expr; $($rule:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $rule() {
                let make = $make;
                let subject: Option<$crate::rules::Subject> = make(stringify!($rule)).await;
                let Some(subject) = subject else {
                    return;
                };
                $crate::rules::$rule(&*subject.backend).await;
                drop(subject);
            }
        )*
    };
}
