//! Whom a command runs as: root by default and when asked, the sandbox's
//! unprivileged user (uid and gid 1000, no capabilities) when asked.

use std::time::Duration;

use corral_backend::{
    Backend, CollectedOutput, Command, ErrorCode, ExecRequest, ProcessSpec, RunAs,
};
use tokio::io::AsyncReadExt;

use crate::common;

/// Runs `script` as `run_as`; returns (exit code, stdout, stderr).
async fn run_as(
    b: &corral_backend_linux::LinuxBackend,
    id: &str,
    run_as: Option<RunAs>,
    script: &str,
) -> (i32, String, String) {
    let mut req =
        ExecRequest::new(Command::shell(script).unwrap()).timeout(Duration::from_secs(30));
    req.run_as = run_as;
    let mut out = CollectedOutput::default();
    let outcome = b
        .exec(id, req, &mut out)
        .await
        .unwrap_or_else(|e| panic!("{script} as {run_as:?}: {e}"));
    (
        outcome.status.shell_code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A rootless backend does not declare the user: it refuses it, and the
/// test has nothing more to check.
async fn refused_where_undeclared(b: &corral_backend_linux::LinuxBackend, id: &str) -> bool {
    if b.capabilities().run_as_user {
        return false;
    }
    let mut req = ExecRequest::new(Command::argv(["true"]).unwrap());
    req.run_as = Some(RunAs::User);
    let err = b
        .exec(id, req, &mut CollectedOutput::default())
        .await
        .expect_err("the user is refused where undeclared");
    assert_eq!(err.code(), ErrorCode::Unsupported, "{err}");
    println!("SKIP the rest: this backend does not declare run_as_user (rootless)");
    true
}

/// What [`IDENTITY`] shows for one identity.
struct Seen {
    /// `id -u`, `id -g`, `id -G`.
    ids: [&'static str; 3],
    /// `$HOME`.
    home: &'static str,
    /// The default working directory.
    cwd: &'static str,
    /// `$USER:$LOGNAME`.
    names: &'static str,
    /// Whether the effective capabilities are empty.
    no_caps: bool,
}

const IDENTITY: &str = "id -u; id -g; id -G; echo \"$HOME\"; pwd; \
    echo \"${USER:-}:${LOGNAME:-}\"; grep CapEff /proc/self/status | cut -f2";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_run_as_whom_they_ask() {
    let test = "commands_run_as_whom_they_ask";
    let Some((b, _dir)) = common::backend(test) else {
        return;
    };
    let id = b.create(Default::default()).await.unwrap().id;
    if refused_where_undeclared(&b, &id).await {
        return;
    }
    let root = Seen {
        ids: ["0", "0", "0"],
        home: "/workspace",
        cwd: "/workspace",
        names: ":",
        no_caps: false,
    };
    let user = Seen {
        ids: ["1000", "1000", "1000"],
        home: "/home/user",
        cwd: "/home/user",
        names: "user:user",
        no_caps: true,
    };
    let rows = [
        (None, &root),
        (Some(RunAs::Root), &root),
        (Some(RunAs::User), &user),
    ];
    for (who, want) in rows {
        let (code, out, err) = run_as(&b, &id, who, IDENTITY).await;
        assert_eq!(code, 0, "{who:?}: {err}");
        let lines: Vec<&str> = out.lines().collect();
        let [uid, gid, groups] = want.ids;
        assert_eq!(
            &lines[..6],
            &[uid, gid, groups, want.home, want.cwd, want.names],
            "{who:?}: {out}"
        );
        let caps = lines[6];
        assert_eq!(
            caps == "0000000000000000",
            want.no_caps,
            "{who:?}: CapEff {caps}"
        );
    }
    // The user's workload is as exposed to the OOM killer as root's.
    let score = "cat /proc/self/oom_score_adj";
    let (_, as_root, _) = run_as(&b, &id, None, score).await;
    let (_, as_user, _) = run_as(&b, &id, Some(RunAs::User), score).await;
    assert_eq!(as_user, as_root, "oom_score_adj");
    b.destroy(&id).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_user_cannot_reach_what_is_roots() {
    let test = "the_user_cannot_reach_what_is_roots";
    let Some((b, _dir)) = common::backend(test) else {
        return;
    };
    let id = b.create(Default::default()).await.unwrap().id;
    if refused_where_undeclared(&b, &id).await {
        return;
    }
    let (code, _, err) = run_as(
        &b,
        &id,
        Some(RunAs::Root),
        "(umask 077; echo secret > /tmp/secret); echo ok > /workspace/roots",
    )
    .await;
    assert_eq!(code, 0, "{err}");
    // (what the user tries, whether it may)
    let rows: [(&str, bool); 6] = [
        ("cat /tmp/secret", false),
        ("touch /etc/owned", false),
        ("echo x >> /etc/passwd", false),
        ("cat /workspace/roots", true),
        ("echo mine > /home/user/mine && cat /home/user/mine", true),
        ("ls /root", false),
    ];
    for (script, allowed) in rows {
        let (code, out, err) = run_as(&b, &id, Some(RunAs::User), script).await;
        assert_eq!(code == 0, allowed, "{script}: exit {code}: {out} {err}");
    }
    let (_, out, _) = run_as(&b, &id, None, "stat -c %u:%g /home/user/mine").await;
    assert_eq!(out.trim(), "1000:1000", "the user's file is the user's");
    b.destroy(&id).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_process_runs_as_the_user() {
    let test = "a_background_process_runs_as_the_user";
    let Some((b, _dir)) = common::backend(test) else {
        return;
    };
    let id = b.create(Default::default()).await.unwrap().id;
    if refused_where_undeclared(&b, &id).await {
        return;
    }
    let rows: [(Option<RunAs>, &str); 3] = [
        (None, "0\n/workspace\n"),
        (Some(RunAs::Root), "0\n/workspace\n"),
        (Some(RunAs::User), "1000\n/home/user\n"),
    ];
    for (who, want) in rows {
        let spec = ProcessSpec {
            command: Command::shell("id -u; pwd").unwrap(),
            cwd: None,
            env: Default::default(),
            run_as: who,
        };
        let mut p = b
            .process_ops()
            .unwrap()
            .start_process(&id, spec)
            .await
            .unwrap();
        let mut out = String::new();
        tokio::time::timeout(Duration::from_secs(30), p.stdout.read_to_string(&mut out))
            .await
            .expect("the process ends")
            .unwrap();
        p.control.wait().await.unwrap();
        assert_eq!(out, want, "{who:?}");
    }
    b.destroy(&id).await.unwrap();
}

/// The owned writes: a file and the directories written for the user are
/// the user's inside (uid and gid 1000), so a command run as the user
/// rewrites them; written for root they are root's, and the user cannot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_written_for_the_user_are_the_users() {
    let test = "files_written_for_the_user_are_the_users";
    let Some((b, _dir)) = common::backend(test) else {
        return;
    };
    let id = b.create(Default::default()).await.unwrap().id;
    let Some(owned) = b.owned_write_ops() else {
        assert!(
            !b.capabilities().run_as_user,
            "declared without owned writes"
        );
        println!("SKIP: this backend does not declare run_as_user (rootless)");
        return;
    };
    let path = |p: &str| corral_backend::sandbox_path("path", p).unwrap();
    owned
        .mkdir_as(&id, &path("/tmp/mine/deep"), true, RunAs::User)
        .await
        .unwrap();
    owned
        .write_as(&id, &path("/tmp/mine/deep/f"), b"hi", None, RunAs::User)
        .await
        .unwrap();
    owned
        .write_as(&id, &path("/tmp/roots"), b"hi", None, RunAs::Root)
        .await
        .unwrap();
    let (code, out, err) = run_as(
        &b,
        &id,
        None,
        "stat -c %u:%g /tmp/mine /tmp/mine/deep /tmp/mine/deep/f /tmp/roots",
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let owners: Vec<&str> = out.lines().collect();
    assert_eq!(owners, ["1000:1000", "1000:1000", "1000:1000", "0:0"]);
    let (code, _, err) = run_as(
        &b,
        &id,
        Some(RunAs::User),
        "echo again > /tmp/mine/deep/f && cat /tmp/mine/deep/f",
    )
    .await;
    assert_eq!(code, 0, "the user could not rewrite its file: {err}");
    let (code, _, _) = run_as(&b, &id, Some(RunAs::User), "echo x > /tmp/roots").await;
    assert_ne!(code, 0, "the user rewrote root's file");
    b.destroy(&id).await.unwrap();
}
