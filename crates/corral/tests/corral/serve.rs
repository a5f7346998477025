//! `corral serve`: the real binary hosting the memory backend; a
//! `WireProvider` under the runtime creates a sandbox through it; SIGTERM
//! shuts it down gracefully, destroying the sandbox it created.

use std::process::Command;

use crate::serve_support;
use serve_support::Served;

use corral_contract::*;
use corral_runtime::runtime::Runtime;
use corral_wire::{Token, WireProvider};

const TOKEN: &str = "serve-test-token-0123456789abcdef";

/// A provisioning request the memory backend admits, for `envelope`.
pub(crate) fn request(envelope: &SandboxProviderCapabilities) -> SandboxProvisionRequest {
    let now = Timestamp::from_system_time(std::time::SystemTime::now()).unwrap();
    SandboxProvisionRequest {
        provider: ProviderId::new("memory").unwrap(),
        placement: envelope.placement,
        workspace_id: WorkspaceId::new("workspace-1").unwrap(),
        session_id: SessionId::new("session-1").unwrap(),
        run_id: RunId::new("run-1").unwrap(),
        attempt_id: AttemptId::new("attempt-1").unwrap(),
        lease_id: LeaseId::new("lease-1").unwrap(),
        lease_epoch: LeaseEpoch::new(1).unwrap(),
        target: TargetId::new("target-1").unwrap(),
        profile: SandboxProfile {
            id: ProfileId::new("profile-1").unwrap(),
            version: ProfileVersion::new("1").unwrap(),
            digest: Digest::from_sha256_bytes([7; 32]),
            retention: RetentionMode::EphemeralZdr,
            network: NetworkPolicy::None,
            max_duration_seconds: DurationSeconds::new(600).unwrap(),
            packages: Vec::new(),
            resources: ResourceLimits::default(),
        },
        platform: envelope.platforms[0],
        root_image: corral_conformance::synthetic_root_image(),
        mounts: Mounts::new(Vec::new()).unwrap(),
        expires_at: now.checked_add_millis(3_600_000).unwrap(),
    }
}

#[test]
fn serve_hosts_a_backend_and_sigterm_destroys_what_it_created() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let mut served = Served::memory(&token_file);
    let endpoint = served.endpoint.clone();

    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let provider = WireProvider::connect(&endpoint, Token::new(TOKEN).unwrap())
            .await
            .unwrap();
        let runtime = Runtime::new(provider).unwrap();
        let provisioned = runtime
            .provision(request(runtime.capabilities()))
            .await
            .unwrap();
        let (instance, _) = provisioned.into_parts();
        assert_eq!(instance.state, InstanceState::Provisioning);
        let wrong =
            WireProvider::connect(&endpoint, Token::new("a-wrong-token-0123456").unwrap()).await;
        assert!(wrong.is_err(), "a wrong token is refused");
    });

    let (exit, rest) = served.terminate();
    assert!(exit.success(), "{exit:?}: {rest}");
    assert!(
        rest.contains("shut down: destroyed 1 sandboxes, kept 0 durable, ended 0 processes"),
        "{rest}"
    );
}

/// The ready line promises a server that a signal shuts down gracefully:
/// each ending signal sent the moment that line is read (the race a
/// supervisor runs) is a clean shutdown with its summary and status 0,
/// never death by the signal's default action with sandboxes still alive.
#[test]
fn an_ending_signal_sent_as_soon_as_the_ready_line_is_read_is_a_graceful_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    for signal in ["TERM", "INT", "HUP", "QUIT", "USR1", "ALRM"] {
        for _ in 0..3 {
            let mut served = Served::memory(&token_file);
            let (exit, rest) = served.end_with(signal);
            assert!(exit.success(), "SIG{signal}: {exit:?}: {rest}");
            assert!(
                rest.contains("shut down: destroyed 0 sandboxes"),
                "SIG{signal}: {rest}"
            );
        }
    }
}

/// Runs `corral serve` with `args` and `--token-file token_file`, which
/// must refuse with the usage exit code (2); returns its stderr.
fn refused(args: &[&str], token_file: &std::path::Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_corral"))
        .arg("serve")
        .args(args)
        .arg("--token-file")
        .arg(token_file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn serve_refuses_a_bad_token_file_and_a_bad_address_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let short = dir.path().join("short");
    std::fs::write(&short, "short\n").unwrap();
    let err = refused(&["--backend", "memory", "--listen", "127.0.0.1:0"], &short);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("the token is 5 bytes"), "{err}");

    let good = dir.path().join("good");
    std::fs::write(&good, TOKEN).unwrap();
    let err = refused(&["--backend", "memory", "--listen", "nowhere"], &good);
    assert!(
        err.contains("--listen \"nowhere\" is not an address"),
        "{err}"
    );

    let err = refused(&["--backend", "vmware", "--listen", "127.0.0.1:0"], &good);
    assert!(err.contains("unknown backend \"vmware\""), "{err}");
}

/// The state file of E2B's records (docs/e2b.md, "Across a restart")
/// tampered into garbage: serve starts over it, says so in one line on
/// stderr, and serves.
#[test]
fn serve_starts_over_a_tampered_e2b_state_file_saying_so_in_one_line() {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;

    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let file = corral_e2b::saved::file_in(&state, "local", &Token::new(TOKEN).unwrap());
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, b"\x00{ not the records").unwrap();

    let mut child = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["serve", "--backend", "local", "--listen", "127.0.0.1:0"])
        .arg("--token-file")
        .arg(&token_file)
        .env("CORRAL_STATE_DIR", &state)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdout.read_line(&mut first).unwrap();
    assert!(
        first.starts_with("corral: serving local on http://"),
        "{first:?}"
    );
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    // Read to the end: the shutdown line goes to stdout.
    stdout.read_to_string(&mut String::new()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("E2B state file"))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(said[0].contains("is not valid"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
