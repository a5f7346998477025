//! Redaction: every split offset of several secrets (overlapping, one a
//! prefix of another) gives the same bytes as the whole text, no secret
//! survives; runs, results, callbacks and errors are redacted.

use crate::sandbox_support;
use std::sync::{Arc, Mutex};

use corral_backend::ErrorCode;
use corral_sdk::{CreateOptions, OutputCallback, Redactor, RunOptions, Sandbox};
use sandbox_support::{all, memory};

const SECRETS: &[&str] = &["ghp_token123", "token", "hunter2", "abcd", "cdef", "é✓"];

const TEXTS: &[&str] = &[
    "x ghp_token123 y",
    "token tokentoken",
    "hunter2hunter2",
    "abcdef",
    "xxabcdxxcdefxx",
    "ab cd ef abc",
    "pre é✓ post",
    "nothing here",
    "ghp_token12",
    "hunter",
];

fn no_secret_left(out: &[u8]) {
    let text = String::from_utf8_lossy(out);
    for s in SECRETS {
        assert!(!text.contains(s), "{s:?} left in {text:?}");
    }
}

#[test]
fn whole_texts_lose_every_secret() {
    let r = Redactor::new(SECRETS.iter().copied());
    assert_eq!(r.redact("x ghp_token123 y"), "x [REDACTED] y");
    assert_eq!(r.redact("abcdef"), "[REDACTED]");
    assert_eq!(r.redact("tokentoken"), "[REDACTED][REDACTED]");
    for t in TEXTS {
        no_secret_left(r.redact(t).as_bytes());
    }
}

#[test]
fn every_single_split_offset_matches_the_whole_text() {
    let r = Redactor::new(SECRETS.iter().copied());
    for t in TEXTS {
        let bytes = t.as_bytes();
        let whole = r.redact_bytes(bytes);
        for cut in 0..=bytes.len() {
            let mut s = r.stream();
            let mut out = s.push(&bytes[..cut]);
            out.extend(s.push(&bytes[cut..]));
            out.extend(s.finish());
            assert_eq!(out, whole, "{t:?} cut at {cut}");
            no_secret_left(&out);
        }
    }
}

#[test]
fn every_pair_of_split_offsets_and_byte_by_byte() {
    let r = Redactor::new(SECRETS.iter().copied());
    for t in TEXTS {
        let bytes = t.as_bytes();
        let whole = r.redact_bytes(bytes);
        for i in 0..=bytes.len() {
            for j in i..=bytes.len() {
                let mut s = r.stream();
                let mut out = s.push(&bytes[..i]);
                out.extend(s.push(&bytes[i..j]));
                out.extend(s.push(&bytes[j..]));
                out.extend(s.finish());
                assert_eq!(out, whole, "{t:?} cut at {i} and {j}");
            }
        }
        let mut s = r.stream();
        let mut out = Vec::new();
        for b in bytes {
            out.extend(s.push(std::slice::from_ref(b)));
        }
        out.extend(s.finish());
        assert_eq!(out, whole, "{t:?} byte by byte");
    }
}

#[tokio::test]
async fn run_output_and_callbacks_are_redacted_across_chunks() {
    for t in all("run_output_and_callbacks_are_redacted") {
        let s = Sandbox::create(t.backend.clone(), CreateOptions::default())
            .await
            .unwrap();
        s.add_secret("supersecret");
        let seen: Arc<Mutex<Vec<u8>>> = Arc::default();
        let sink = seen.clone();
        // The secret is written in two pieces with a pause between, so it
        // arrives split across chunks.
        let r = s
            .run_with(
                "printf 'a super'; sleep 0.2; printf 'secret b'; printf 'supersecret' >&2",
                RunOptions {
                    on_output: Some(OutputCallback::new(move |_, b| {
                        sink.lock().unwrap().extend_from_slice(b)
                    })),
                    ..RunOptions::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(r.stdout_text(), "a [REDACTED] b", "{}", s.provider());
        assert_eq!(r.stderr_text(), "[REDACTED]");
        let seen = String::from_utf8(seen.lock().unwrap().clone()).unwrap();
        assert!(!seen.contains("supersecret"), "{seen}");
        assert!(!seen.contains("secret"), "{seen}");
        s.destroy().await.unwrap();
    }
}

#[tokio::test]
async fn secret_env_values_are_redacted_everywhere() {
    let t = memory();
    let mut opts = CreateOptions::default();
    opts.secret_env
        .insert(corral_backend::EnvKey::new("API_KEY").unwrap(), "k-123456")
        .unwrap();
    let s = Sandbox::create(t.backend.clone(), opts).await.unwrap();
    let r = s.run("echo \"$API_KEY\"").await.unwrap();
    assert_eq!(r.stdout_text(), "[REDACTED]\n");

    let mut run_opts = RunOptions::default();
    run_opts
        .secret_env
        .insert(corral_backend::EnvKey::new("PASS").unwrap(), "p@ss-w0rd")
        .unwrap();
    let r = s.run_with("echo \"$PASS\" >&2", run_opts).await.unwrap();
    assert_eq!(r.stderr_text(), "[REDACTED]\n");
    // Registered on the handle from now on.
    let r = s.run("echo p@ss-w0rd").await.unwrap();
    assert_eq!(r.stdout_text(), "[REDACTED]\n");

    // Error messages too: a cwd naming the secret.
    let err = s
        .run_with(
            "true",
            RunOptions {
                cwd: Some("relative-k-123456".into()),
                ..RunOptions::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert!(!err.to_string().contains("k-123456"), "{err}");
    assert!(err.to_string().contains("[REDACTED]"), "{err}");
    s.destroy().await.unwrap();
}

/// The stream redactor releases every byte that cannot begin a secret at
/// once, and holds back only a suffix that is a proper prefix of one (with
/// a match it could still extend): chunks in, bytes out at each push, then
/// what `finish` releases.
#[test]
fn a_stream_holds_back_only_what_could_begin_a_secret() {
    type Row = (
        &'static [&'static str],
        &'static [&'static str],
        &'static [&'static str],
        &'static str,
    );
    let table: &[Row] = &[
        // secrets, chunks, out after each push, out at finish
        (
            &["hunter2-long-secret"],
            &["tick 1\n", "tick 2\n"],
            &["tick 1\n", "tick 2\n"],
            "",
        ),
        (
            &["hunter2"],
            &["xx hun", "ter2 yy"],
            &["xx ", "[REDACTED] yy"],
            "",
        ),
        (&["hunter2"], &["xx hun", "gry\n"], &["xx ", "hungry\n"], ""),
        (&["hunter2"], &["ends in hunt"], &["ends in "], "hunt"),
        (
            &["hunter2"],
            &["h", "u", "n", "ter2", "!"],
            &["", "", "", "[REDACTED]", "!"],
            "",
        ),
        // a secret that is a prefix of another: `tok` may grow into `token123`
        (
            &["tok", "token123"],
            &["a tok", "en1", "23 b"],
            &["a ", "", "[REDACTED] b"],
            "",
        ),
        (
            &["tok", "token123"],
            &["a tok", "!"],
            &["a ", "[REDACTED]!"],
            "",
        ),
        (
            &["tok", "token123"],
            &["a tok", "en"],
            &["a ", ""],
            "[REDACTED]en",
        ),
        // overlapping secrets merge into one span
        (
            &["abcd", "cdef"],
            &["xab", "cd", "efy"],
            &["x", "", "[REDACTED]y"],
            "",
        ),
        (
            &["abcd", "cdef"],
            &["xabcd", "z"],
            &["x", "[REDACTED]z"],
            "",
        ),
        (
            &["abcd", "cdef"],
            &["xcde", "f", "g"],
            &["x", "[REDACTED]", "g"],
            "",
        ),
    ];
    for (secrets, chunks, outs, end) in table {
        let r = Redactor::new(secrets.iter().copied());
        let mut s = r.stream();
        for (chunk, want) in chunks.iter().zip(outs.iter()) {
            let got = s.push(chunk.as_bytes());
            assert_eq!(
                String::from_utf8_lossy(&got),
                *want,
                "secrets {secrets:?}, chunks {chunks:?}: after {chunk:?}"
            );
        }
        assert_eq!(
            String::from_utf8_lossy(&s.finish()),
            *end,
            "{secrets:?} {chunks:?}"
        );
    }
}
