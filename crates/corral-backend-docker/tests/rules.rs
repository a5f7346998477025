//! The shared backend-rule suite, run against the docker backend on a real
//! engine (a printed skip where none answers).

mod common;

macro_rules! docker_rules {
    ($($rule:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $rule() {
                let Some(backend) = common::backend(stringify!($rule)).await else {
                    return;
                };
                corral_backend::rules::$rule(&backend).await;
            }
        )*
    };
}

docker_rules!(
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
