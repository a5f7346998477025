//! git inside a real linux sandbox (namespaces, overlay root, no network):
//! the sandbox's own git (the `host` image carries the host's /usr).

use crate::sandbox_support;
use crate::sp;
use corral_sdk::git::{CloneOptions, CommitOptions, GitAuth, LogOptions, PushOptions, Signature};
use corral_sdk::{Command, CreateOptions, RunOptions, Sandbox};
use sandbox_support::Target;

/// A linux sandbox with git, and what keeps its backend alive (dropping it
/// destroys whatever the test left); `None` after a skip line.
async fn sandbox(test: &str) -> Option<(Target, Sandbox)> {
    let target = sandbox_support::linux(test)?;
    let sb = Sandbox::create(target.backend.clone(), CreateOptions::default())
        .await
        .unwrap();
    let has_git = sb
        .run_with(
            Command::argv(["git", "--version"]).unwrap(),
            RunOptions::default(),
        )
        .await
        .is_ok_and(|r| r.success());
    if !has_git {
        eprintln!("skip: {test}: no git inside the linux sandbox's image");
        sb.destroy().await.unwrap();
        return None;
    }
    Some((target, sb))
}

#[tokio::test]
async fn clone_commit_push_in_a_linux_sandbox() {
    let Some((_state, sb)) = sandbox("clone_commit_push_in_a_linux_sandbox").await else {
        return;
    };
    let init = sb
        .run_with(
            Command::argv(
                ["git", "init", "--quiet", "--bare", "/workspace/origin.git"]
                    .map(String::from)
                    .to_vec(),
            )
            .unwrap(),
            RunOptions::default(),
        )
        .await
        .unwrap();
    assert!(init.success(), "{}", init.stderr_text());
    let git = sb.git();
    // Credentials wait in a pipe even when the remote never asks; no file.
    let options = CloneOptions {
        auth: Some(GitAuth::token("linux-token-never-asked")),
        ..CloneOptions::default()
    };
    git.clone("file:///workspace/origin.git", "/workspace/app", options)
        .await
        .unwrap();
    let left = sb
        .backend()
        .files()
        .list(sb.id(), &sp("/.corral/git"))
        .await
        .unwrap_or_default();
    assert!(left.is_empty(), "credential files: {left:?}");

    sb.backend()
        .files()
        .write(sb.id(), &sp("/workspace/app/README"), b"linux\n", None)
        .await
        .unwrap();
    git.add("/workspace/app", &["README"]).await.unwrap();
    let author = Signature {
        name: "Linux Tester".into(),
        email: "lt@example.invalid".into(),
    };
    let hash = git
        .commit(
            "/workspace/app",
            "in a sandbox",
            CommitOptions {
                author: Some(author),
                ..CommitOptions::default()
            },
        )
        .await
        .unwrap();
    let branch = git
        .branches("/workspace/app")
        .await
        .unwrap()
        .current
        .unwrap();
    git.push(
        "/workspace/app",
        PushOptions {
            branch: Some(branch),
            set_upstream: true,
            ..PushOptions::default()
        },
    )
    .await
    .unwrap();
    let log = git
        .log("/workspace/origin.git", LogOptions::default())
        .await
        .unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].hash, hash);
    assert!(git.status("/workspace/app").await.unwrap().is_clean());
    sb.destroy().await.unwrap();
}

/// The HTTP server the next test runs inside the sandbox, on loopback: 401
/// without credentials; with them, it notes whether they were the expected
/// ones (never the credentials themselves) and holds the request until the
/// test releases it.
const SERVER: &str = r#"
import base64, os, socket, sys, time
want = sys.argv[2]
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
open("/tmp/listening", "w").close()
while True:
    c, _ = s.accept()
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = c.recv(4096)
        if not chunk: break
        head += chunk
    auth = [l for l in head.decode("latin-1").split("\r\n") if l.lower().startswith("authorization: basic ")]
    if not auth:
        c.sendall(b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"t\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        c.close(); continue
    got = base64.b64decode(auth[0].split()[-1]).decode()
    with open("/tmp/asked", "w") as f: f.write("match" if got == want else "other")
    for _ in range(600):
        if os.path.exists("/tmp/release"): break
        time.sleep(0.1)
    c.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    c.close(); break
"#;

/// issue 12 item 9: while git holds a token (a clone waiting on a server
/// that got it), no file in the sandbox holds it — nothing under
/// `/.corral`, and a concurrent workload that greps every file of every
/// writable file system (the only places a file could have been written;
/// `grep -r /` itself never ends on the `/proc` files it reaches) finds
/// nothing — yet the server received it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_is_never_a_file_a_concurrent_workload_can_find() {
    let test = "a_token_is_never_a_file_a_concurrent_workload_can_find";
    let Some((_state, sb)) = sandbox(test).await else {
        return;
    };
    let has_python = sb
        .run("python3 -c 'print(1)'")
        .await
        .is_ok_and(|r| r.success());
    if !has_python {
        println!("SKIP {test}: no python3 inside the linux sandbox's image");
        return;
    }
    // Made at run time, so no binary or source file holds it either.
    let token = format!(
        "tok{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    sb.files()
        .write("/tmp/server.py", SERVER.as_bytes())
        .await
        .unwrap();
    let port = "8391";
    let server = sb.run_with(
        Command::argv(
            ["python3", "/tmp/server.py", port, &format!("robot:{token}")]
                .map(String::from)
                .to_vec(),
        )
        .unwrap(),
        RunOptions::default(),
    );
    let exists = |path: &'static str| {
        let sb = sb.clone();
        async move { sb.files().read(path).await.ok() }
    };
    let probe = async {
        while exists("/tmp/listening").await.is_none() {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let git = sb.git().with_timeout(std::time::Duration::from_secs(60));
        let url = format!("http://127.0.0.1:{port}/r.git");
        let clone = git.clone(
            &url,
            "/workspace/r",
            CloneOptions {
                auth: Some(GitAuth::token(token.clone()).with_username("robot")),
                ..CloneOptions::default()
            },
        );
        let watch = async {
            let asked = loop {
                if let Some(asked) = exists("/tmp/asked").await {
                    break asked;
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            };
            // attack: while git waits with the token, look for it.
            let grep = sb
                .run(format!(
                    "for m in $(awk '$4 ~ /^rw/ && $2 !~ /^\\/(proc|sys|dev)(\\/|$)/ {{print $2}}' /proc/mounts); \
                     do echo \"mount $m\"; find \"$m\" -xdev -type f -exec grep -ls -- {token} {{}} + ; done \
                     | sed 's/^\\//found: \\//'; echo searched; ls -A /.corral 2>/dev/null"
                ))
                .await
                .unwrap();
            sb.files().write("/tmp/release", b"").await.unwrap();
            (asked, grep)
        };
        let (cloned, (asked, grep)) = tokio::join!(clone, watch);
        (cloned, asked, grep)
    };
    let (served, (cloned, asked, grep)) = tokio::join!(server, probe);
    assert!(served.is_ok_and(|r| r.success()), "the server ran");
    assert_eq!(asked, b"match", "the server got the token");
    assert!(cloned.is_err(), "the server refused the clone");
    let out = grep.stdout_text();
    assert!(out.contains("searched") && out.contains("mount /"), "{out}");
    assert!(!out.contains("found: "), "a file holds the token: {out}");
    assert!(!out.contains(&token), "{out}");
    assert!(
        !out.contains("askpass"),
        "a credential directory under /.corral: {out}"
    );
}
