//! `previews` and `http-probe`.

use std::time::Duration;

use corral_backend::{CancellationToken, ErrorCode, PreviewUrl};
use corral_sdk::{RunOptions, RunResult, Sandbox, SandboxError};

use crate::failure::{Failure, ensure, shown};
use crate::sdk::http::{self, HttpUrl};
use crate::sdk::options::Check;
use crate::sdk::scope::SdkScope;

/// The port a sandbox asks for when the backend does not care which.
const FALLBACK_PORT: u16 = 8000;

/// How long the server in the sandbox has to answer (a bound against
/// hangs, never a measurement).
const SERVE_BOUND: Duration = Duration::from_secs(60);

/// A TCP port free on this machine's loopback right now. Backends that
/// isolate nothing publish a sandbox port as the same host port, so the
/// suite asks for one nobody holds.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_or(FALLBACK_PORT, |a| a.port())
}

/// The preview URL of `port` of `sandbox`.
async fn preview(sandbox: &Sandbox, port: u16) -> Result<PreviewUrl, SandboxError> {
    sandbox.preview(port).await
}

/// With previews: one URL for a port given at create, and a refusal for a
/// port that was not. With `previews` declared unsupported: the preview is
/// refused with `unsupported`.
pub(crate) async fn previews(scope: &mut SdkScope) -> Result<(), Failure> {
    if scope.options().reason(Check::Previews).is_some() {
        let sandbox = scope.sandbox().await?;
        return match preview(&sandbox, FALLBACK_PORT).await {
            Err(e) if e.code == ErrorCode::Unsupported => Ok(()),
            Err(e) => Err(Failure::step(
                format_args!(
                    "preview {FALLBACK_PORT} (previews unsupported): expected unsupported"
                ),
                e,
            )),
            Ok(p) => Err(Failure::new(format_args!(
                "preview {FALLBACK_PORT}: gave {:?}, but previews are declared unsupported",
                p.url
            ))),
        };
    }
    let port = free_port();
    let mut options = scope.create_options();
    options.ports = vec![port];
    let sandbox = scope.create(options).await?;
    let url = preview(&sandbox, port)
        .await
        .map_err(|e| Failure::step(format_args!("preview {port}"), e))?;
    ensure(
        !url.url.trim().is_empty() && !url.url.contains(char::is_whitespace),
        || format!("preview {port}: {:?} is not a URL", url.url),
    )?;
    let again = preview(&sandbox, port)
        .await
        .map_err(|e| Failure::step(format_args!("preview {port} (again)"), e))?;
    ensure(again.url == url.url, || {
        format!(
            "preview {port}: {:?} then {:?}, expected one URL per port",
            url.url, again.url
        )
    })?;
    // Fail closed: a port nobody asked for is not published.
    let other = if port == u16::MAX { port - 1 } else { port + 1 };
    match preview(&sandbox, other).await {
        Err(_) => Ok(()),
        Ok(p) => Err(Failure::new(format_args!(
            "preview {other}: gave {:?} for a port not asked for at create",
            p.url
        ))),
    }
}

/// A server in the sandbox on a port given at create answers a real HTTP
/// GET from this machine at the port's preview URL with `200` and the
/// file it serves.
pub(crate) async fn http_probe(
    scope: &mut SdkScope,
    server: &(dyn Fn(u16) -> corral_backend::Command + Send + Sync),
) -> Result<(), Failure> {
    let port = free_port();
    let mut options = scope.create_options();
    options.ports = vec![port];
    let sandbox = scope.create(options).await?;
    let token = format!("corral-sdk-conformance-{port}\n");
    sandbox
        .files()
        .write("/workspace/index.html", &token)
        .await
        .map_err(|e| Failure::step("files.write /workspace/index.html", e))?;
    let preview = preview(&sandbox, port)
        .await
        .map_err(|e| Failure::step(format_args!("preview {port}"), e))?;
    let url = HttpUrl::parse(&preview.url)
        .map_err(|e| Failure::new(format_args!("preview {port}: {e}")))?;
    if !scope.options().live && !url.is_loopback() {
        return Err(Failure::new(format_args!(
            "preview {port}: {:?} is not on this machine's loopback, and an offline run never leaves it",
            preview.url
        )));
    }

    let stop = CancellationToken::new();
    let options = RunOptions {
        cwd: Some("/workspace".to_string()),
        timeout: Some(SERVE_BOUND + Duration::from_secs(30)),
        abort: Some(stop.clone()),
        ..RunOptions::default()
    };
    let command = server(port);
    let runner = sandbox.clone();
    let serving = tokio::spawn(async move { runner.run_with(command, options).await });

    let probed = probe(&url, &preview, &token, &serving).await;
    stop.cancel();
    let ended = serving
        .await
        .map_err(|e| Failure::new(format_args!("the server task: {e}")))?;
    match probed {
        Ok(()) => Ok(()),
        Err(f) => Err(Failure::new(format_args!(
            "{f} (server: {})",
            match ended {
                Ok(r) => format!("exit {} stderr {}", r.code(), shown(&r.stderr)),
                Err(e) => e.to_string(),
            }
        ))),
    }
}

/// GETs `url` until the server answers, then checks the answer.
async fn probe(
    url: &HttpUrl,
    preview: &PreviewUrl,
    token: &str,
    serving: &tokio::task::JoinHandle<Result<RunResult, SandboxError>>,
) -> Result<(), Failure> {
    let deadline = tokio::time::Instant::now() + SERVE_BOUND;
    let mut last = String::from("no attempt");
    loop {
        if serving.is_finished() {
            return Err(Failure::new(format_args!(
                "GET {}: the server ended before answering (last attempt: {last})",
                preview.url
            )));
        }
        match http::get(url, &preview.headers, Duration::from_secs(10)).await {
            Ok(r) => {
                return ensure(r.status == 200 && r.body == token.as_bytes(), || {
                    format!(
                        "GET {}: status {} body {}, expected 200 with {}",
                        preview.url,
                        r.status,
                        shown(&r.body),
                        shown(token.as_bytes())
                    )
                });
            }
            Err(e) => last = e,
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(Failure::new(format_args!(
                "GET {}: no answer within {} s: {last}",
                preview.url,
                SERVE_BOUND.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
