//! Background processes on memory, local and (where this host can run it)
//! linux: start, logs with cursors, attach from a new handle, list, kill of
//! the whole group, wait, and every error path.

use crate::processes_support;
use crate::sandbox_support;
use std::time::{Duration, Instant};

use corral_sdk::processes::{LogCursor, ProcessState, StartOptions};
use corral_sdk::{Command, ErrorCode, ExitStatus, Sandbox, SignalName, StreamKind};

const LONG: Duration = Duration::from_secs(60);

/// Polls logs until `stream` has shown `needle`; returns the text so far
/// and the cursor after it.
async fn logs_until(sb: &Sandbox, name: &str, needle: &str) -> (String, LogCursor) {
    let started = Instant::now();
    let mut cursor = LogCursor::default();
    let mut text = String::new();
    loop {
        let logs = sb.processes().logs(name, cursor).await.unwrap();
        text.push_str(&logs.text(StreamKind::Stdout));
        cursor = logs.next;
        if text.contains(needle) {
            return (text, cursor);
        }
        assert!(
            started.elapsed() < LONG,
            "{name}: {needle:?} never appeared in {text:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether pid `pid` is alive (a zombie counts as dead).
async fn alive(sb: &Sandbox, pid: &str) -> bool {
    let r = sb
        .run(format!("cat /proc/{pid}/stat 2>/dev/null").as_str())
        .await
        .unwrap();
    if r.success() {
        let stat = r.stdout_text();
        let after = stat.rsplit_once(") ").map_or("", |(_, s)| s);
        return !after.starts_with('Z');
    }
    sb.run(format!("kill -0 {pid} 2>/dev/null").as_str())
        .await
        .unwrap()
        .success()
}

// SDK spec, "What the core does for you": "Background processes, their logs
// and cursors, and reattach by name"; and "Keep policy out": process records belong to
// the core, built on exec and the file primitives.
#[tokio::test]
async fn start_logs_attach_list_kill_wait() {
    for target in sandbox_support::all("start_logs_attach_list_kill_wait") {
        let sb = processes_support::sandbox(&target).await;
        let p = sb.provider().to_string();
        let procs = sb.processes();
        let cmd =
            Command::shell("echo first; echo oops >&2; sleep 0.3; echo second; sleep 60").unwrap();
        let handle = procs.start("web-1", cmd.clone()).await.unwrap();
        assert_eq!(handle.name(), "web-1");

        // Logs continue from the cursor: nothing is returned twice.
        // On a loaded machine the first read may already hold both lines:
        // what is proven is that the reads from the cursor, joined, are the
        // log exactly once.
        let (text, cursor) = logs_until(&sb, "web-1", "first\n").await;
        assert!(text.starts_with("first\n"), "{p}: {text:?}");
        let (more, _) = {
            let started = Instant::now();
            let mut cursor = cursor;
            let mut more = String::new();
            while !format!("{text}{more}").contains("second") {
                let logs = procs.logs("web-1", cursor).await.unwrap();
                more.push_str(&logs.text(StreamKind::Stdout));
                cursor = logs.next;
                assert!(started.elapsed() < LONG, "{p}: no second line");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            (more, cursor)
        };
        assert_eq!(format!("{text}{more}"), "first\nsecond\n", "{p}");
        let all = procs.logs("web-1", LogCursor::default()).await.unwrap();
        assert_eq!(all.text(StreamKind::Stderr), "oops\n", "{p}");
        assert!(!all.ended);

        // Another handle on the same sandbox (as another program would make
        // from the locator) attaches by name.
        let other = Sandbox::connect_id(sb.backend().clone(), sb.id())
            .await
            .unwrap();
        let attached = other.processes().attach("web-1").await.unwrap();
        let info = attached.status().await.unwrap();
        assert_eq!(info.state, ProcessState::Running, "{p}");
        assert!(info.pid.is_some());
        assert_eq!(info.record.as_ref().unwrap().command, cmd);

        let listed = procs.list().await.unwrap();
        assert_eq!(listed.len(), 1, "{p}: {listed:?}");
        assert_eq!(listed[0].name, "web-1");

        // A running name cannot be started twice.
        let e = procs
            .start("web-1", Command::shell("true").unwrap())
            .await
            .unwrap_err();
        assert_eq!(
            (e.code, e.operation.as_str()),
            (ErrorCode::Conflict, "processes.start"),
            "{e}"
        );

        let state = attached.kill().await.unwrap();
        assert_eq!(
            state,
            ProcessState::Exited(ExitStatus::Signal(SignalName::Sigterm)),
            "{p}"
        );
        assert_eq!(
            procs.wait("web-1", LONG).await.unwrap(),
            ExitStatus::Signal(SignalName::Sigterm)
        );
        // Killing again changes nothing.
        assert_eq!(procs.kill("web-1").await.unwrap(), state);
        let ended = procs.logs("web-1", LogCursor::default()).await.unwrap();
        assert!(ended.ended);
        assert_eq!(ended.text(StreamKind::Stdout), "first\nsecond\n");

        // An ended name can be started again; wait returns its exit code.
        procs
            .start("web-1", Command::shell("echo again; exit 3").unwrap())
            .await
            .unwrap();
        assert_eq!(
            procs.wait("web-1", LONG).await.unwrap(),
            ExitStatus::Code(3),
            "{p}"
        );
        let logs = procs.logs("web-1", LogCursor::default()).await.unwrap();
        assert_eq!(logs.text(StreamKind::Stdout), "again\n");
        processes_support::cleanup(&sb).await;
    }
}

#[tokio::test]
async fn kill_ends_the_whole_process_group() {
    for target in sandbox_support::all("kill_ends_the_whole_process_group") {
        let sb = processes_support::sandbox(&target).await;
        let p = sb.provider().to_string();
        let procs = sb.processes();
        sb.files().mkdir("/workspace/k").await.unwrap();
        let opts = StartOptions {
            cwd: Some("/workspace/k".into()),
            ..StartOptions::default()
        };
        let cmd = Command::shell("sleep 60 & echo $! > child.pid; echo up; sleep 60").unwrap();
        procs.start_with("group", cmd, opts).await.unwrap();
        logs_until(&sb, "group", "up\n").await;
        let child = sb
            .files()
            .read_text("/workspace/k/child.pid")
            .await
            .unwrap();
        let child = child.trim().to_string();
        assert!(
            alive(&sb, &child).await,
            "{p}: the child runs before the kill"
        );
        let state = procs
            .kill_with_grace("group", Duration::from_secs(5))
            .await
            .unwrap();
        assert!(matches!(state, ProcessState::Exited(_)), "{p}: {state:?}");
        assert!(
            !alive(&sb, &child).await,
            "{p}: the child outlived the kill"
        );
        processes_support::cleanup(&sb).await;
    }
}

#[tokio::test]
async fn hostile_arguments_cwd_and_secrets() {
    for target in sandbox_support::all("hostile_arguments_cwd_and_secrets") {
        let sb = processes_support::sandbox(&target).await;
        let p = sb.provider().to_string();
        let procs = sb.processes();
        let dir = "/workspace/dir with 'quote' ü";
        sb.files().mkdir(dir).await.unwrap();
        let args = ["it's", "a \"b\"", "$(x) `y`", "-n", "ünï"];
        let mut argv = vec![
            "sh".to_string(),
            "-c".into(),
            "for a in \"$@\"; do echo \"[$a]\"; done; pwd".into(),
            "sh".into(),
        ];
        argv.extend(args.iter().map(|s| s.to_string()));
        let env = corral_backend::Environment::new()
            .with("GREETING", "hello s3cr3t")
            .unwrap();
        let opts = StartOptions {
            cwd: Some(dir.into()),
            env,
            ..StartOptions::default()
        };
        if p == "memory" {
            // The memory shell has no `for`: echo the arguments one by one.
            argv[2] =
                "echo \"[$1]\"; echo \"[$2]\"; echo \"[$3]\"; echo \"[$4]\"; echo \"[$5]\"; pwd"
                    .into();
        }
        procs
            .start_with("args", Command::argv(argv).unwrap(), opts)
            .await
            .unwrap();
        assert_eq!(
            procs.wait("args", LONG).await.unwrap(),
            ExitStatus::Code(0),
            "{p}"
        );
        let out = procs
            .logs("args", LogCursor::default())
            .await
            .unwrap()
            .text(StreamKind::Stdout);
        let lines: Vec<&str> = out.lines().collect();
        let want: Vec<String> = args.iter().map(|a| format!("[{a}]")).collect();
        assert_eq!(&lines[..5], want.as_slice(), "{p}: {out}");
        assert!(lines[5].ends_with("dir with 'quote' ü"), "{p}: {out}");

        // Secrets never show in logs or in the last lines an error quotes.
        sb.add_secret("s3cr3t");
        procs
            .start(
                "secret",
                Command::shell("echo \"$GREETING\"; echo \"$GREETING\" >&2; sleep 60").unwrap(),
            )
            .await
            .map(|_| ())
            .unwrap_or_else(|e| panic!("{p}: {e}"));
        let opts = StartOptions {
            env: corral_backend::Environment::new()
                .with("GREETING", "hi s3cr3t")
                .unwrap(),
            ..StartOptions::default()
        };
        procs.kill("secret").await.unwrap();
        procs
            .start_with(
                "secret",
                Command::shell("echo \"$GREETING\"; sleep 60").unwrap(),
                opts,
            )
            .await
            .unwrap();
        let (text, _) = logs_until(&sb, "secret", "hi").await;
        assert_eq!(text, "hi [REDACTED]\n", "{p}");
        let e = procs
            .wait("secret", Duration::from_millis(200))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::Timeout, "{p}: {e}");
        assert!(e.message.contains("hi [REDACTED]"), "{p}: {e}");
        assert!(!e.to_string().contains("s3cr3t"), "{e}");
        processes_support::cleanup(&sb).await;
    }
}

#[tokio::test]
async fn bad_names_and_unknown_processes_are_clear_errors() {
    for target in [sandbox_support::memory(), sandbox_support::local()] {
        let sb = processes_support::sandbox(&target).await;
        let procs = sb.processes();
        let long = "x".repeat(65);
        for bad in [
            "",
            "a/b",
            "-x",
            ".hidden",
            "with space",
            "ü",
            "..",
            long.as_str(),
        ] {
            let e = procs
                .start(bad, Command::shell("true").unwrap())
                .await
                .unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidInput, "{bad:?}: {e}");
            assert!(e.message.contains("process name"), "{e}");
        }
        for e in [
            procs.status("ghost").await.unwrap_err(),
            procs.logs("ghost", LogCursor::default()).await.unwrap_err(),
            procs.kill("ghost").await.unwrap_err(),
            procs.wait("ghost", LONG).await.unwrap_err(),
            procs.attach("ghost").await.map(|_| ()).unwrap_err(),
        ] {
            assert_eq!(e.code, ErrorCode::NotFound, "{e}");
            assert!(e.message.contains("\"ghost\""), "{e}");
        }
        let opts = StartOptions {
            cwd: Some("relative".into()),
            ..StartOptions::default()
        };
        let e = procs
            .start_with("p", Command::shell("true").unwrap(), opts)
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidInput, "{e}");
        // An empty argv is refused where the command is made, before any
        // start could see it.
        let e =
            corral_backend::BackendError::from(Command::argv(Vec::<String>::new()).unwrap_err());
        assert_eq!(e.code(), ErrorCode::InvalidInput, "{e}");
        // Nothing half-made was left behind.
        assert!(procs.list().await.unwrap().is_empty());
        assert!(procs.list().await.unwrap().is_empty());
        processes_support::cleanup(&sb).await;
    }
}

#[tokio::test]
async fn a_group_killed_from_outside_is_lost() {
    for target in [sandbox_support::memory(), sandbox_support::local()] {
        let sb = processes_support::sandbox(&target).await;
        let p = sb.provider().to_string();
        let procs = sb.processes();
        procs
            .start("victim", Command::shell("sleep 60").unwrap())
            .await
            .unwrap();
        let pid = procs.status("victim").await.unwrap().pid.unwrap();
        let r = sb.run(format!("kill -KILL -{pid}").as_str()).await.unwrap();
        assert!(r.success(), "{p}: {}", r.stderr_text());
        let started = Instant::now();
        loop {
            let state = procs.status("victim").await.unwrap().state;
            if state == ProcessState::Lost {
                break;
            }
            assert!(started.elapsed() < LONG, "{p}: still {state:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let e = procs.wait("victim", LONG).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::NotFound, "{p}: {e}");
        assert!(e.message.contains("without an exit record"), "{e}");
        processes_support::cleanup(&sb).await;
    }
}
