//! The built-ins and the interpreter, script by script.

use corral_backend::{
    Backend, CollectedOutput, Command, CreateRequest, ExecRequest, ExitStatus, Network,
};

use crate::MemoryBackend;
use corral_backend::rules::sp;

struct Run {
    code: i32,
    out: String,
    err: String,
}

async fn sandbox() -> (MemoryBackend, String) {
    let b = MemoryBackend::new();
    let id = b.create(CreateRequest::default()).await.unwrap().id;
    (b, id)
}

async fn run(b: &MemoryBackend, id: &str, req: ExecRequest) -> Run {
    let mut out = CollectedOutput::default();
    let outcome = b.exec(id, req, &mut out).await.unwrap();
    let code = match outcome.status {
        ExitStatus::Code(c) => c,
        ExitStatus::Signal(s) => panic!("killed by {s}"),
        ExitStatus::UnnamedSignal(n) => panic!("killed by signal {n}"),
        ExitStatus::OomKilled => panic!("killed by the OOM killer"),
    };
    Run {
        code,
        out: String::from_utf8(out.stdout).unwrap(),
        err: String::from_utf8(out.stderr).unwrap(),
    }
}

async fn sh(b: &MemoryBackend, id: &str, script: &str) -> Run {
    run(b, id, ExecRequest::new(Command::shell(script).unwrap())).await
}

/// (script, stdout, exit code)
const TABLE: &[(&str, &str, i32)] = &[
    ("echo a b  c", "a b c\n", 0),
    ("echo -n x; echo -n -n y", "xy", 0),
    ("printf '%s=%d\\n' a 1 b 2", "a=1\nb=2\n", 0),
    ("printf 'tab\\there %%\\n'", "tab\there %\n", 0),
    ("true && echo yes || echo no", "yes\n", 0),
    ("false && echo yes || echo no", "no\n", 0),
    ("false; echo $?", "1\n", 0),
    ("exit 7; echo never", "", 7),
    ("(exit 3); echo $?", "3\n", 0),
    ("! false && echo negated", "negated\n", 0),
    ("pwd; cd /tmp; pwd; cd ..; pwd", "/workspace\n/tmp\n/\n", 0),
    ("(cd /tmp); pwd", "/workspace\n", 0),
    ("{ cd /tmp; }; pwd", "/tmp\n", 0),
    ("X=1; echo $X ${X}y \"$X z\" '$X'", "1 1y 1 z $X\n", 0),
    ("X='a   b'; printf '[%s]' $X \"$X\"", "[a][b][a   b]", 0),
    ("X=1 env | grep -q X || echo $X", "\n", 0),
    ("export A=b; env | head -n 1 >/dev/null; echo $A", "b\n", 0),
    ("FOO=bar sh -c 'echo $FOO'; echo \"[$FOO]\"", "bar\n[]\n", 0),
    ("sh -c 'echo $0 $1 $#' name one", "name one 1\n", 0),
    ("echo hi | cat | wc -c", "3\n", 0),
    ("printf 'a\\nb\\nc\\n' | head -n 2", "a\nb\n", 0),
    ("yes | head -c 6", "y\ny\ny\n", 0),
    ("yes ab | head -n 2", "ab\nab\n", 0),
    (
        "echo abc > f; cat f; echo d >> f; cat f",
        "abc\nabc\nd\n",
        0,
    ),
    ("echo err >&2 2>/dev/null; echo x 2>&1", "x\n", 0),
    (
        "cat missing 2>&1; echo $?",
        "cat: missing: No such file or directory\n1\n",
        0,
    ),
    ("nosuch 2>&1; echo $?", "sh: nosuch: not found\n127\n", 0),
    ("echo in > i; cat < i; wc -c < i", "in\n3\n", 0),
    (
        "mkdir -p a/b && touch a/b/c && ls a/b && test -f a/b/c && echo file",
        "c\nfile\n",
        0,
    ),
    (
        "mkdir d; rm d 2>&1; rm -r d; test -e d || echo gone",
        "rm: cannot remove 'd': Is a directory\ngone\n",
        0,
    ),
    ("rm -f nothing; echo $?", "0\n", 0),
    (
        "[ a = a ] && [ 1 -lt 2 ] && [ ! -d /nope ] && echo ok",
        "ok\n",
        0,
    ),
    ("test x != x; echo $?", "1\n", 0),
    ("ln -s target link; test -L link && echo link", "link\n", 0),
    ("echo t > t; ln -s t l; cat l", "t\n", 0),
    ("ls -a /tmp", ".\n..\n", 0),
    ("ls /", "tmp\nworkspace\n", 0),
    ("read a b; echo \"$b-$a\"", "-\n", 0),
    (
        "echo 'x  y z' | { read a b; echo \"$b-$a\"; }",
        "y z-x\n",
        0,
    ),
    ("sleep 0.01 & wait; echo done", "done\n", 0),
    ("(sleep 0.01; echo bg) & wait $!; echo $?", "bg\n0\n", 0),
    ("sleep 10 & kill $!; wait $!; echo $?", "143\n", 0),
    ("echo a; # comment\necho b", "a\nb\n", 0),
    ("echo \"a\\\"b\" a\\ b", "a\"b a b\n", 0),
    ("printf '%5s|%-3d|\\n' ab 7", "   ab|7  |\n", 0),
    ("sh -c 'exit 4'; echo $?", "4\n", 0),
    ("echo 'echo from stdin' | sh", "from stdin\n", 0),
    (
        "echo 'echo script $1' > s.sh; sh s.sh arg",
        "script arg\n",
        0,
    ),
    ("sh -e -c 'false; echo no'; echo $?", "1\n", 0),
    ("sh -e -c 'false || true; echo yes'", "yes\n", 0),
    ("echo $(date)", "", 2),
    ("wc -l < /dev/null", "0\n", 0),
    ("mkfifo p; test -p p && echo fifo", "fifo\n", 0),
    ("/bin/echo abs", "abs\n", 0),
    (
        "curl -s http://example.com/",
        "memory backend: simulated response from example.com:80\n",
        0,
    ),
];

#[tokio::test]
async fn scripts_behave_like_a_shell() {
    for (script, want, code) in TABLE {
        let (b, id) = sandbox().await;
        let r = sh(&b, &id, script).await;
        assert_eq!(
            (r.out.as_str(), r.code),
            (*want, *code),
            "{script:?} (stderr {:?})",
            r.err
        );
    }
}

#[tokio::test]
async fn stdin_argv_and_env() {
    let (b, id) = sandbox().await;
    let r = run(
        &b,
        &id,
        ExecRequest::new(Command::argv(["cat"]).unwrap()).stdin(b"abc".to_vec()),
    )
    .await;
    assert_eq!(r.out, "abc");
    let r = run(&b, &id, ExecRequest::new(Command::argv(["cat"]).unwrap())).await;
    assert_eq!((r.out.as_str(), r.code), ("", 0));
    let r = run(
        &b,
        &id,
        ExecRequest::new(Command::argv(["nope", "x"]).unwrap()),
    )
    .await;
    assert_eq!((r.err.as_str(), r.code), ("sh: nope: not found\n", 127));
    let r = sh(&b, &id, "echo $HOME $PWD; echo $PATH").await;
    assert_eq!(
        r.out,
        format!("/workspace /workspace\n{}\n", corral_backend::DEFAULT_PATH)
    );
    let r = run(
        &b,
        &id,
        ExecRequest::new(Command::shell("echo $PWD $V").unwrap())
            .cwd(sp("/tmp"))
            .env(corral_backend::Environment::new().with("V", "v").unwrap()),
    )
    .await;
    assert_eq!(r.out, "/tmp v\n");
    let r = sh(&b, &id, "echo 'a  b'c\"d").await;
    assert_eq!((r.code, r.err.contains("unterminated")), (2, true));
}

#[tokio::test]
async fn scripts_as_files_need_the_exec_bit() {
    let (b, id) = sandbox().await;
    b.files()
        .write(
            &id,
            &sp("/workspace/run.sh"),
            b"#!/bin/sh\necho ran $1\n",
            Some(0o755),
        )
        .await
        .unwrap();
    b.files()
        .write(&id, &sp("/workspace/noexec.sh"), b"echo no\n", None)
        .await
        .unwrap();
    let r = sh(&b, &id, "./run.sh x; /workspace/run.sh y").await;
    assert_eq!(r.out, "ran x\nran y\n");
    let r = sh(&b, &id, "./noexec.sh").await;
    assert_eq!(
        (r.code, r.err.as_str()),
        (126, "sh: ./noexec.sh: Permission denied\n")
    );
    let r = sh(&b, &id, "./absent").await;
    assert_eq!(r.code, 127);
}

#[tokio::test]
async fn network_policy_reaches_the_builtin_curl() {
    let b = MemoryBackend::new();
    let none = CreateRequest {
        network: Network::None,
        ..CreateRequest::default()
    };
    let id = b.create(none).await.unwrap().id;
    let r = sh(&b, &id, "curl https://example.com").await;
    assert_eq!(r.code, 7);
    assert!(r.err.contains("network is none"), "{}", r.err);
    let allow = CreateRequest {
        network: Network::Allowlist {
            destinations: vec![corral_backend::Destination::new("api.example.com", 443).unwrap()],
        },
        ..CreateRequest::default()
    };
    let id = b.create(allow).await.unwrap().id;
    let r = sh(&b, &id, "curl https://api.example.com/v1 -o got; cat got").await;
    assert_eq!((r.code, r.out.contains("api.example.com:443")), (0, true));
    let r = sh(&b, &id, "curl http://api.example.com/v1").await;
    assert_eq!(r.code, 7, "port 80 is not allowed");
    assert!(r.err.contains("allowlist"));
}

#[tokio::test]
async fn disk_and_process_limits_are_enforced() {
    let b = MemoryBackend::new();
    let mut req = CreateRequest::default();
    req.size.disk_bytes = Some(10);
    req.limits.pids = Some(2);
    let id = b.create(req).await.unwrap().id;
    let r = sh(&b, &id, "echo 12345 > a; echo 123456 > b; echo $?").await;
    assert!(r.err.contains("No space left on device"), "{}", r.err);
    assert_eq!(r.out, "1\n");
    let err = b
        .files()
        .write(&id, &sp("/workspace/big"), &[0; 11], None)
        .await
        .unwrap_err();
    assert_eq!(err.code(), corral_backend::ErrorCode::Quota);
    // The leader is one process; a 2-stage pipeline needs two more.
    let r = sh(&b, &id, "echo x | cat; echo $?").await;
    assert!(
        r.err.contains("Resource temporarily unavailable"),
        "{}",
        r.err
    );
    assert_eq!(r.out.lines().last(), Some("2"));
    let r = sh(&b, &id, "sleep 0.01 & wait; echo ok").await;
    assert_eq!(r.out, "ok\n");
}

#[tokio::test]
async fn setsid_sessions_outlive_their_exec_and_die_by_group_kill() {
    let (b, id) = sandbox().await;
    // The session records its group id and keeps running after the exec.
    let r = sh(
        &b,
        &id,
        "setsid sh -c 'echo $$ > /tmp/pgid; sleep 0.05 & sleep 30' </dev/null >/dev/null 2>&1 &",
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.err);
    let mut pgid = String::new();
    for _ in 0..200 {
        if let Ok(bytes) = b.files().read(&id, &sp("/tmp/pgid")).await
            && bytes.ends_with(b"\n")
        {
            pgid = String::from_utf8(bytes).unwrap().trim().to_string();
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert!(!pgid.is_empty(), "the session never wrote its group id");
    let alive = format!("kill -0 -- -{pgid}; echo $?");
    assert_eq!(sh(&b, &id, &alive).await.out, "0\n");
    let r = sh(&b, &id, &format!("kill -TERM -- -{pgid}; echo $?")).await;
    assert_eq!(r.out, "0\n", "{}", r.err);
    let mut gone = false;
    for _ in 0..200 {
        let r = sh(&b, &id, &format!("kill -0 -- -{pgid} 2>/dev/null; echo $?")).await;
        if r.out == "1\n" {
            gone = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert!(gone, "the killed session is still running");
    let r = sh(&b, &id, "kill -TERM -- -999999").await;
    assert_eq!(r.code, 1);
    assert!(r.err.contains("No such process"), "{}", r.err);
    let r = sh(&b, &id, "setsid").await;
    assert_eq!(r.code, 1);
    assert!(r.err.contains("no command"), "{}", r.err);
    let r = sh(&b, &id, "setsid -w sh -c 'exit 4'; echo $?").await;
    assert_eq!(r.out, "4\n");
}

#[tokio::test]
async fn curl_write_out_reports_the_status() {
    let (b, id) = sandbox().await;
    let r = sh(
        &b,
        &id,
        "curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8080/x",
    )
    .await;
    assert_eq!((r.code, r.out.as_str()), (0, "200"));
    let b2 = MemoryBackend::new();
    let req = CreateRequest {
        network: Network::None,
        ..CreateRequest::default()
    };
    let id2 = b2.create(req).await.unwrap().id;
    let r = sh(
        &b2,
        &id2,
        "curl -s -o /dev/null -w '%{http_code}' http://h/",
    )
    .await;
    assert_eq!((r.code, r.out.as_str()), (7, "000"));
}
