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

/// One test per backend rule (the list of `corral_backend::backend_rules!`),
/// each skipped with its reason where linux sandboxes cannot be made.
macro_rules! linux_rules {
    ($($rule:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $rule() {
                let Some(subject) = subject() else {
                    println!("SKIP {} on linux: the backend is unavailable here", stringify!($rule));
                    return;
                };
                corral_backend::rules::$rule(&*subject.backend).await;
                drop(subject);
            }
        )*
    };
}

linux_rules!(
    exec_closes_stdin_unless_given,
    exec_passes_stdin_then_eof,
    exec_delivers_chunks_in_arrival_order,
    exec_nonzero_exit_is_a_result,
    exec_honours_cwd_and_env,
    exec_refuses_malformed_commands,
    exec_timeout_kills_the_whole_group_before_settling,
    exec_abort_kills_the_whole_group_before_settling,
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
