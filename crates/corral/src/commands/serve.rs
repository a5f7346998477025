//! `corral serve --backend NAME --listen ADDR --token-file FILE`: host a
//! backend behind the contract adapter over corral-wire, for programs on
//! other machines (`WireProvider`).
//!
//! Prints `corral: serving BACKEND on http://ADDR` on stdout once it
//! listens (with the port chosen when ADDR names port 0). On SIGINT or
//! SIGTERM it shuts down gracefully: live processes are destroyed, and so is
//! every sandbox it created that is not durable; it then prints what it
//! destroyed and kept. The exit status is 0 unless a destroy failed.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use corral_backend::Backend;
use corral_backend_docker::DockerBackend;
use corral_backend_linux::LinuxBackend;
use corral_backend_local::LocalBackend;
use corral_backend_memory::MemoryBackend;
use corral_contract::{SandboxError, SandboxProvider, SandboxProviderCapabilities};
use corral_runtime::adapter::{ContractAdapter, envelopes};
use corral_wire::{ShutdownReport, Token, WireServer};

use crate::error::{CliError, CliResult, EXIT_FAILURE};

/// Runs `corral serve`.
pub async fn serve(backend: String, listen: String, token_file: PathBuf) -> CliResult {
    let token = Token::from_file(&token_file).map_err(|e| CliError::usage(e.to_string()))?;
    let addr: SocketAddr = listen.parse().map_err(|_| {
        CliError::usage(format!(
            "--listen {listen:?} is not an address (HOST:PORT, e.g. 127.0.0.1:7070)"
        ))
    })?;
    match backend.as_str() {
        "memory" => {
            let backend = Arc::new(MemoryBackend::new());
            host(
                "memory",
                adapter(backend, envelopes::memory())?,
                addr,
                token,
            )
            .await
        }
        "local" => {
            let backend = Arc::new(LocalBackend::open(LocalBackend::default_state_dir())?);
            let envelope = envelopes::local_for(&backend.capabilities());
            host("local", adapter(backend, envelope)?, addr, token).await
        }
        "linux" => {
            LinuxBackend::available().map_err(|why| {
                CliError::failure(
                    "unavailable",
                    format!("the linux backend cannot run here: {why}"),
                )
            })?;
            let backend = Arc::new(LinuxBackend::open(LocalBackend::default_state_dir())?);
            let envelope = envelopes::linux_for(&backend.capabilities());
            host("linux", adapter(backend, envelope)?, addr, token).await
        }
        "docker" => {
            let image = std::env::var("CORRAL_DOCKER_IMAGE")
                .unwrap_or_else(|_| corral_backend_docker::DEFAULT_IMAGE.to_string());
            let backend = Arc::new(DockerBackend::connect_with_image(&image).await?);
            let envelope = envelopes::docker_for(&backend.capabilities());
            host("docker", adapter(backend, envelope)?, addr, token).await
        }
        other => Err(CliError::usage(format!(
            "unknown backend {other:?}; corral serve hosts: {}",
            crate::backends::KNOWN.join(", ")
        ))),
    }
}

fn adapter<B: Backend>(
    backend: Arc<B>,
    envelope: SandboxProviderCapabilities,
) -> Result<ContractAdapter<B>, CliError> {
    ContractAdapter::new(backend, envelope).map_err(|e: SandboxError| {
        CliError::failure(
            "provider",
            format!("the contract adapter refused the backend: {e}"),
        )
    })
}

async fn host<P: SandboxProvider + 'static>(
    name: &str,
    provider: P,
    addr: SocketAddr,
    token: Token,
) -> CliResult {
    let server = WireServer::bind(addr, provider, token)
        .await
        .map_err(|e| CliError::failure("io", format!("listening on {addr}: {e}")))?;
    let bound = server
        .local_addr()
        .map_err(|e| CliError::failure("io", format!("listening on {addr}: {e}")))?;
    println!("corral: serving {name} on http://{bound}");
    let report = server.serve(stop_signal()).await;
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

/// `shut down: destroyed N sandboxes, kept N durable, ended N processes`.
fn summary(report: &ShutdownReport) -> String {
    format!(
        "shut down: destroyed {} sandboxes, kept {} durable, ended {} processes",
        report.destroyed.len(),
        report.kept.len(),
        report.processes
    )
}

/// Resolves on SIGINT or SIGTERM (or never, where neither can be
/// watched: the process is then stopped by other means).
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(mut int), Ok(mut term)) => {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        }
        _ => std::future::pending().await,
    }
}
