//! `corral serve --backend NAME --listen ADDR [--token-file FILE]
//! [--tls-cert FILE --tls-key FILE | --insecure-plain-http]`: host a
//! backend behind the contract adapter over corral-wire, for programs on
//! other machines (`WireProvider`).
//!
//! With `--tls-cert` and `--tls-key` everything on the listener is served
//! over TLS; without them only a loopback address is served (plain HTTP),
//! unless `--insecure-plain-http` asks for plain HTTP elsewhere, with a
//! warning ([`super::serve_security`]). The certificate and key are loaded
//! and checked before anything listens.
//!
//! Prints `corral: serving BACKEND on http://ADDR` (`https://` with TLS) on
//! stdout once it listens (with the port chosen when ADDR names port 0);
//! without `--token-file` it generates a token shaped as an E2B API key
//! (`e2b_` and 40 hex digits, a shape some E2B SDK versions check) and
//! prints `corral: token TOKEN (generated: no --token-file)` next. On
//! SIGINT, SIGTERM or any of the other ending signals it shuts down
//! gracefully: live processes are destroyed, and so is every sandbox it
//! created that is not durable; it then prints what it destroyed and kept.
//! The exit status is 0 unless a destroy failed.
//!
//! Beside the contract provider it serves the backend's own primitives
//! (the same backend the adapter holds), under the same token, and E2B's
//! protocol (`corral-e2b`, see `docs/e2b.md`) on every path not under
//! `/v1/`, with the same token as its API key.
//!
//! Without a token a client still costs it something, so its connections
//! are bounded ([`ConnectionLimits`]: `--max-connections`,
//! `--max-per-peer`, `--head-deadline`), and it raises its soft
//! `RLIMIT_NOFILE` to the hard limit at start so that the cap, not the
//! descriptor limit, is what a flood meets.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use corral_backend::{Backend, Verified};
use corral_contract::SandboxError;
use corral_registry::{BackendKind, BackendVisitor, Enveloped, adapter};
use corral_wire::{ConnectionLimits, ShutdownReport, Token, WireServer};

use super::serve_security::{self, Security};
use crate::args::ServeArgs;
use crate::backends;
use crate::error::{CliError, CliResult, EXIT_FAILURE};

/// The connection bounds `args` ask for (the defaults but for the flags).
fn limits(args: &ServeArgs) -> Result<ConnectionLimits, CliError> {
    if args.max_connections == 0 || args.max_per_peer == 0 || args.head_deadline == 0 {
        return Err(CliError::usage(
            "--max-connections, --max-per-peer and --head-deadline must be at least 1",
        ));
    }
    Ok(ConnectionLimits {
        max_connections: args.max_connections,
        max_per_peer: args.max_per_peer,
        head_deadline: Duration::from_secs(args.head_deadline),
        ..ConnectionLimits::default()
    })
}

/// Runs `corral serve`.
pub async fn serve(args: ServeArgs) -> CliResult {
    let limits = limits(&args)?;
    let ServeArgs {
        backend,
        listen,
        token_file,
        tls_cert,
        tls_key,
        insecure_plain_http,
        ..
    } = args;
    let (token, generated) = match token_file {
        Some(file) => (
            Token::from_file(&file).map_err(|e| CliError::usage(e.to_string()))?,
            None,
        ),
        None => {
            let text = generated_token()?;
            let token =
                Token::new(text.clone()).map_err(|e| CliError::failure("token", e.to_string()))?;
            (token, Some(text))
        }
    };
    let addr: SocketAddr = listen.parse().map_err(|_| {
        CliError::usage(format!(
            "--listen {listen:?} is not an address (HOST:PORT, e.g. 127.0.0.1:7070)"
        ))
    })?;
    let security = serve_security::decide(addr, tls_cert, tls_key, insecure_plain_http)?;
    let Some(kind) = BackendKind::from_name(&backend) else {
        return Err(CliError::usage(format!(
            "unknown backend {backend:?}; corral serve hosts: {}",
            BackendKind::names()
        )));
    };
    backends::open_kind(kind)
        .await?
        .visit(Host {
            addr,
            token,
            generated,
            limits,
            security,
        })
        .await
}

/// The digits of a generated token, after its `e2b_`.
const GENERATED_HEX_DIGITS: usize = 40;

/// A fresh token shaped as an E2B API key: `e2b_` and 40 hex digits.
fn generated_token() -> Result<String, CliError> {
    let hex = corral_backend::statefile::random_hex_of(GENERATED_HEX_DIGITS / 2)
        .map_err(|e| CliError::failure("io", format!("reading random bytes for a token: {e}")))?;
    Ok(format!("e2b_{hex}"))
}

/// Where and how a backend is served.
struct Host {
    addr: SocketAddr,
    token: Token,
    /// The token's text when it was generated, to be printed.
    generated: Option<String>,
    limits: ConnectionLimits,
    security: Security,
}

impl BackendVisitor for Host {
    type Output = CliResult;

    /// Serves `backend`: the contract adapter over it under its envelope,
    /// and the backend's own primitives beside it (the same backend the
    /// adapter holds). The backend was verified when it was opened, and
    /// is not checked again.
    async fn visit<B: Enveloped>(self, backend: Verified<B>) -> CliResult {
        let Host {
            addr,
            token,
            generated,
            limits,
            security,
        } = self;
        corral_wire::server::raise_descriptor_limit();
        let backend = backend.into_shared();
        let provider = adapter(&backend).map_err(|e: SandboxError| {
            CliError::failure(
                "provider",
                format!("the contract adapter refused the backend: {e}"),
            )
        })?;
        let backend = backend.into_inner();
        // The records of E2B's sandboxes outlive a restart where the
        // sandboxes do.
        let state_file = B::KIND.outlives_its_process().then(|| {
            corral_e2b::saved::file_in(
                &corral_backend_local::LocalBackend::default_state_dir(),
                B::KIND.name(),
                &token,
            )
        });
        let e2b = corral_e2b::E2bService::new(
            Arc::clone(&backend) as Arc<dyn Backend>,
            token.clone(),
            corral_e2b::E2bConfig {
                state_file,
                ..corral_e2b::E2bConfig::default()
            },
        );
        if let Err(e) = e2b.restore().await {
            eprintln!("corral: warning: {e}");
        }
        if let Some(warning) = security.warning(addr) {
            eprintln!("{warning}");
        }
        let mut server = WireServer::bind(addr, provider, token)
            .await
            .map_err(|e| CliError::failure("io", format!("listening on {addr}: {e}")))?
            .serving_backend(backend as Arc<dyn Backend>)
            .with_limits(limits)
            .with_fallback(Arc::new(e2b));
        if let Security::Tls(tls) = security {
            server = server.with_tls(tls);
        }
        let bound = server
            .local_addr()
            .map_err(|e| CliError::failure("io", format!("listening on {addr}: {e}")))?;
        // Caught before the ready line: a supervisor's SIGTERM that follows
        // that line at once is a graceful shutdown, never the default
        // action that would kill the server with its sandboxes alive.
        let ending = super::ending_signals::listen();
        println!(
            "corral: serving {} on {}://{bound}",
            B::KIND,
            server.scheme().as_str()
        );
        if let Some(text) = &generated {
            println!("corral: token {text} (generated: no --token-file)");
        }
        let report = server.serve(async move { ending.wait().await }).await;
        println!("corral: {}", summary(&report));
        for (id, error) in &report.failed {
            eprintln!("corral: error: [shutdown] destroying {id}: {error}");
        }
        Ok(if report.failed.is_empty() {
            0
        } else {
            EXIT_FAILURE
        })
    }
}

/// `shut down: destroyed N sandboxes, kept N durable, ended N processes`.
fn summary(report: &ShutdownReport) -> String {
    format!(
        "shut down: destroyed {} sandboxes, kept {} durable, ended {} processes",
        report.destroyed.len(),
        report.kept.len(),
        report.processes
    )
}
