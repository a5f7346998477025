//! The SDK in one page: create a sandbox, run a command, edit a file, start
//! a server, wait for its port, and read its preview URL.
//!
//! Runs on the linux backend where this host allows it (root), else on the
//! local backend (which isolates nothing):
//! `cargo run -p corral-sdk --example quickstart`.

use std::sync::Arc;
use std::time::Duration;

use corral_backend_linux::LinuxBackend;
use corral_backend_local::LocalBackend;
use corral_sdk::processes::ReadyCheck;
use corral_sdk::{Backend, Command, CreateOptions, Sandbox, SandboxError, sh};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let state = tempfile::tempdir()?;
    let backend: Arc<dyn Backend> = match LinuxBackend::available() {
        Ok(()) => Arc::new(LinuxBackend::open(state.path())?),
        Err(_) => Arc::new(LocalBackend::open(state.path())?),
    };

    // A sandbox with port 8000 reachable through a preview URL.
    let options = CreateOptions {
        ports: vec![8000],
        ..CreateOptions::default()
    };
    let sandbox = Sandbox::create(backend, options).await?;
    let outcome = demo(&sandbox).await;
    // `destroy` is explicit (and idempotent): dropping a handle never destroys.
    sandbox.destroy().await?;
    outcome?;
    Ok(())
}

async fn demo(sandbox: &Sandbox) -> Result<(), SandboxError> {
    // Run a command; a non-zero exit is a result, not an error.
    let name = "world; rm -rf / #";
    let greeting = sandbox.run(sh!("echo hello {name}")).await?;
    println!("{}", greeting.stdout_text().trim_end());

    // Write a file, then edit it in place (the match must be unique).
    let files = sandbox.files();
    files
        .write("/workspace/index.html", "<h1>hello</h1>\n")
        .await?;
    files
        .edit("/workspace/index.html", "hello", "hello from corral")
        .await?;

    // Start a server in the background and wait until its port listens.
    let server = sandbox
        .processes()
        .start(
            "web",
            Command::argv([
                "python3",
                "-m",
                "http.server",
                "8000",
                "--bind",
                "127.0.0.1",
            ])
            .expect("a fixed, valid argv"),
        )
        .await?;
    server
        .wait_ready(&ReadyCheck::Port(8000), Duration::from_secs(20))
        .await?;

    // The URL through which the host reaches the server.
    let preview = sandbox.preview(8000).await?;
    println!("preview: {}", preview.url);
    server.kill().await?;
    Ok(())
}
