//! Sandboxes: create with the corral label, locators, connect, find, list,
//! destroy, get-or-create in both key modes, and error translation.

use crate::sandbox_support;
use std::sync::Arc;
use std::time::Duration;

use corral_backend::{Backend, CORRAL_LABEL, ErrorCode, KeyMode, Labels, Network};
use corral_backend_local::LocalBackend;
use corral_sdk::{CreateOptions, Sandbox, SandboxError};
use sandbox_support::{Wrapped, all, local, memory};

fn labels(pairs: &[(&str, &str)]) -> Labels {
    Labels::from_pairs(pairs.iter().copied()).unwrap()
}

/// SDK spec, "What the core does for you": "Get-or-create by key, `locator`,
/// and the `sandbox-sdk` label" — here the label (`corral`) and find by key.
#[tokio::test]
async fn create_labels_corral_and_list_find_destroy() {
    for t in all("create_labels_corral_and_list_find_destroy") {
        let b = t.backend.clone();
        let opts = CreateOptions {
            labels: labels(&[("team", "a")]),
            key: Some("k1".try_into().unwrap()),
            ..CreateOptions::default()
        };
        let s = Sandbox::create(b.clone(), opts).await.unwrap();
        assert_eq!(
            s.info().labels.get(CORRAL_LABEL).map(String::as_str),
            Some("1")
        );
        assert_eq!(s.provider(), b.name());

        let listed = Sandbox::list(b.clone(), &labels(&[("team", "a")]))
            .await
            .unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].id(), s.id());
        assert!(
            Sandbox::list(b.clone(), &labels(&[("team", "b")]))
                .await
                .unwrap()
                .is_empty()
        );

        let found = Sandbox::find(b.clone(), "k1").await.unwrap().unwrap();
        assert_eq!(found.id(), s.id());
        assert!(Sandbox::find(b.clone(), "nope").await.unwrap().is_none());

        s.destroy().await.unwrap();
        // Idempotent, also through another handle.
        s.destroy().await.unwrap();
        found.destroy().await.unwrap();
        let err = Sandbox::connect_id(b.clone(), s.id()).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::NotFound, "{err}");
    }
}

/// SDK spec, "What the core does for you": "… `locator` …" — another
/// process reattaches with it.
#[tokio::test]
async fn locator_reattaches_from_another_backend_instance() {
    let t = local();
    let dir = t.dir.as_ref().unwrap().path().to_path_buf();
    let s = Sandbox::create(t.backend.clone(), CreateOptions::default())
        .await
        .unwrap();
    let locator = s.locator();
    assert_eq!(locator, format!("corral:local/{}", s.id()));
    s.run("echo kept > \"$HOME/mark.txt\"").await.unwrap();

    // A fresh backend on the same state, as another process would open it.
    let other: Arc<dyn Backend> = Arc::new(LocalBackend::open(&dir).unwrap());
    let again = Sandbox::connect(other, &locator).await.unwrap();
    assert_eq!(again.id(), s.id());
    let r = again.run("cat \"$HOME/mark.txt\"").await.unwrap();
    assert_eq!(r.stdout_text(), "kept\n");
    s.destroy().await.unwrap();
}

#[tokio::test]
async fn malformed_or_foreign_locators_are_invalid_input() {
    let t = memory();
    let s = Sandbox::create(t.backend.clone(), CreateOptions::default())
        .await
        .unwrap();
    for bad in [
        "".to_string(),
        s.id().to_string(),
        "corral:memory".to_string(),
        "corral:memory/".to_string(),
        "corral:/x".to_string(),
        format!("corral:local/{}", s.id()),
        format!("corral:memory/{} x", s.id()),
    ] {
        let err = Sandbox::connect(t.backend.clone(), &bad).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidInput, "{bad:?}: {err}");
        assert_eq!(err.operation, "connect");
    }
    let gone = Sandbox::connect(t.backend.clone(), "corral:memory/mem-999")
        .await
        .unwrap_err();
    assert_eq!(gone.code, ErrorCode::NotFound);
    let ok = Sandbox::connect(t.backend.clone(), &s.locator())
        .await
        .unwrap();
    assert_eq!(ok.id(), s.id());
}

/// SDK spec, "What the core does for you": "Get-or-create by key", with a
/// backend whose `keyMode` is `"exact"`.
#[tokio::test]
async fn get_or_create_exact_returns_one_sandbox_even_when_racing() {
    for t in all("get_or_create_exact_returns_one_sandbox_even_when_racing") {
        assert_eq!(t.backend.key_mode(), KeyMode::Exact);
        let mut tasks = Vec::new();
        for _ in 0..6 {
            let b = t.backend.clone();
            tasks.push(tokio::spawn(async move {
                Sandbox::get_or_create(b, "shared", CreateOptions::default()).await
            }));
        }
        let mut ids = Vec::new();
        for task in tasks {
            ids.push(task.await.unwrap().unwrap().id().to_string());
        }
        ids.dedup();
        assert_eq!(ids.len(), 1, "{ids:?}");
        let all = Sandbox::list(t.backend.clone(), &Labels::new())
            .await
            .unwrap();
        assert_eq!(all.len(), 1);
    }
}

/// SDK spec, "What the core does for you": "Get-or-create by key", with a
/// backend whose `keyMode` is `"best-effort"`.
#[tokio::test]
async fn get_or_create_best_effort_finds_then_creates() {
    let t = memory();
    let b: Arc<dyn Backend> =
        Arc::new(Wrapped::new(t.backend.clone()).key_mode(KeyMode::BestEffort));
    let first = Sandbox::get_or_create(b.clone(), "be", CreateOptions::default())
        .await
        .unwrap();
    let second = Sandbox::get_or_create(b.clone(), "be", CreateOptions::default())
        .await
        .unwrap();
    assert_eq!(first.id(), second.id());
    let other = Sandbox::get_or_create(b.clone(), "be2", CreateOptions::default())
        .await
        .unwrap();
    assert_ne!(other.id(), first.id());
    // Once the keyed sandbox is gone, get-or-create makes a new one.
    first.destroy().await.unwrap();
    let third = Sandbox::get_or_create(b, "be", CreateOptions::default())
        .await
        .unwrap();
    assert_ne!(third.id(), first.id());
}

#[tokio::test]
async fn get_or_create_refuses_a_bad_key() {
    let t = memory();
    let err = Sandbox::get_or_create(t.backend.clone(), "", CreateOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert!(
        Sandbox::list(t.backend.clone(), &Labels::new())
            .await
            .unwrap()
            .is_empty()
    );
}

/// SDK spec: the core does "the `SandboxError` message format", and
/// "Translate errors" — a refusal keeps its code, one line, no secret.
#[tokio::test]
async fn create_errors_are_translated_one_line_and_redacted() {
    let t = memory();
    let mut opts = CreateOptions::default();
    opts.env
        .insert(corral_backend::EnvKey::new("TOKEN").unwrap(), "x")
        .unwrap();
    opts.secret_env
        .insert(corral_backend::EnvKey::new("TOKEN").unwrap(), "s3cr3t")
        .unwrap();
    let err = Sandbox::create(t.backend.clone(), opts).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert_eq!(
        err.to_string(),
        "SandboxError [invalid_input] memory.create: environment variable \"TOKEN\" is in both env and secret_env"
    );

    // A bad variable name is refused where the environment is made, before
    // a backend is asked for anything: the message names it in one line,
    // and no secret value can be in it.
    let err = corral_backend::Environment::new()
        .with("1BAD", "hunter2")
        .unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("env_key: \"1BAD\""), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
    assert!(!text.contains('\n'));
    assert!(
        Sandbox::list(t.backend.clone(), &Labels::new())
            .await
            .unwrap()
            .is_empty(),
        "nothing half-created"
    );
}

/// SDK spec, "Rules an adapter must follow": "Translate errors. … Don't
/// attach the native error object, since it can hold credentials" — a
/// backend failure reaches the caller as code and message only, with no
/// error source behind it.
#[tokio::test]
async fn backend_errors_carry_no_native_error_object() {
    for t in all("backend_errors_carry_no_native_error_object") {
        let err = Sandbox::connect_id(t.backend.clone(), "no-such-sandbox")
            .await
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::NotFound, "{err}");
        assert!(std::error::Error::source(&err).is_none(), "{err}");
        let s = Sandbox::create(t.backend.clone(), CreateOptions::default())
            .await
            .unwrap();
        s.destroy().await.unwrap();
        let err = s.run("true").await.unwrap_err();
        assert!(std::error::Error::source(&err).is_none(), "{err}");
    }
}

/// SDK spec, "Rules an adapter must follow": "Fail closed. If `create`
/// can't enforce a requested `size`, `network`, `idleTimeoutMs`, or
/// `timeoutMs`, throw `SandboxError` with code `unsupported`. Never create a
/// sandbox that's more open than requested." — through `Sandbox::create`,
/// for every such request the backend declares it cannot enforce.
#[tokio::test]
async fn create_fails_closed_on_what_the_backend_cannot_enforce() {
    for t in all("create_fails_closed_on_what_the_backend_cannot_enforce") {
        let e = t.backend.capabilities().enforces;
        let mut refused = Vec::new();
        let mut ask = |enforced: bool, what: &str, set: fn(&mut CreateOptions)| {
            if !enforced {
                let mut opts = CreateOptions::default();
                set(&mut opts);
                refused.push((what.to_string(), opts));
            }
        };
        ask(e.cpu, "size.cpus", |o| o.size.cpus = Some(1.0));
        ask(e.memory, "size.memory_bytes", |o| {
            o.size.memory_bytes = Some(256 << 20)
        });
        ask(e.disk, "size.disk_bytes", |o| {
            o.size.disk_bytes = Some(1 << 30)
        });
        ask(e.network_none, "network: none", |o| {
            o.network = Network::None
        });
        ask(e.idle_timeout, "idle_timeout", |o| {
            o.idle_timeout = Some(Duration::from_secs(60))
        });
        ask(e.timeout, "timeout", |o| {
            o.timeout = Some(Duration::from_secs(60))
        });
        for (what, opts) in refused {
            let err = Sandbox::create(t.backend.clone(), opts)
                .await
                .expect_err(&format!("{}: {what} was not refused", t.backend.name()));
            assert_eq!(err.code, ErrorCode::Unsupported, "{what}: {err}");
            assert_eq!(err.operation, "create");
        }
        assert!(
            Sandbox::list(t.backend.clone(), &Labels::new())
                .await
                .unwrap()
                .is_empty(),
            "{}: a refused create left a sandbox",
            t.backend.name()
        );
    }
}

#[test]
fn sandbox_error_display_format() {
    let e = SandboxError::new(
        ErrorCode::Timeout,
        "local",
        corral_sdk::Operation::Run,
        "took\nlong",
    );
    assert_eq!(e.to_string(), "SandboxError [timeout] local.run: took long");
}

#[tokio::test]
async fn preview_tokens_are_registered_as_secrets() {
    let t = memory();
    let mut wrapped = Wrapped::new(t.backend.clone());
    wrapped.preview_token = Some("pv-9f8e7d".into());
    let b: Arc<dyn Backend> = Arc::new(wrapped);
    let s = Sandbox::create(
        b,
        CreateOptions {
            ports: vec![8080],
            ..CreateOptions::default()
        },
    )
    .await
    .unwrap();
    let url = s.preview(8080).await.unwrap();
    assert!(
        url.url.ends_with("?port=8080&token=pv-9f8e7d"),
        "{}",
        url.url
    );
    let r = s.run("echo pv-9f8e7d on 8080").await.unwrap();
    assert_eq!(r.stdout_text(), "[REDACTED] on 8080\n");
    let err = s.preview(9).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound, "{err}");
    assert_eq!(err.operation, "preview");
}
