//! The concurrent-exec row: M execs at once in one sandbox, sent through
//! corral-wire's backend routes (what `corral serve` runs) to a server on
//! `127.0.0.1`, by one [`RemoteBackend`] client.
//!
//! Setup opens the backend on a fresh state directory, serves it on
//! loopback and creates one sandbox through the client. Each timed
//! iteration is one burst: M execs started together, each timed from its
//! start to its settlement. The row's times are of whole bursts; its
//! figure is the median and 95th percentile of every exec's own latency
//! over all timed bursts, and the throughput (M divided by the median
//! burst). Figures are reported, never asserted.

use std::sync::Arc;
use std::time::Instant;

use corral_backend::{Backend, Command, ExecRequest, StreamKind, Verified};
use corral_registry::{BackendKind, BackendVisitor, Enveloped, OpenError};
use corral_wire::{RemoteBackend, RunningServer, WireServer};

use crate::backend::bench_request;
use crate::error::BenchError;
use crate::measure::{BoxFuture, Group, Measure, Metric, Setup};
use crate::stats::{Summary, median, percentile};

/// Execs each burst starts unless told otherwise (`corral bench
/// --concurrent-execs M`).
pub const DEFAULT_CONCURRENT_EXECS: u32 = 100;

/// What the concurrent-exec row found.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Concurrency {
    /// Execs started together in each burst.
    pub execs: u32,
    /// Median latency of one exec, start to settlement, µs.
    pub median_us: f64,
    /// Its 95th percentile, µs.
    pub p95_us: f64,
    /// Execs settled per second: M over the median burst.
    pub execs_per_s: f64,
}

/// The server, the client and the sandbox one row stands on.
struct Served {
    remote: Option<Arc<RemoteBackend>>,
    server: Option<RunningServer>,
    backend: Arc<dyn Backend>,
    state_dir: Option<tempfile::TempDir>,
    sandbox: Option<String>,
}

/// Serves a verified backend on `127.0.0.1:0` with its backend routes.
struct Serve;

impl BackendVisitor for Serve {
    type Output = Result<(RunningServer, Arc<dyn Backend>), BenchError>;

    async fn visit<B: Enveloped>(self, backend: Verified<B>) -> Self::Output {
        let backend = backend.into_shared();
        let adapter = corral_registry::adapter(&backend)
            .map_err(|e| BenchError::backend(B::KIND.name(), "adapter", e))?;
        let backend: Arc<dyn Backend> = backend.into_inner();
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        let server = WireServer::bind(addr, adapter, crate::wire_bed::token()?)
            .await
            .map(|s| s.serving_backend(Arc::clone(&backend)))
            .and_then(WireServer::spawn)
            .map_err(|e| BenchError::io("starting the wire server on 127.0.0.1", e))?;
        Ok((server, backend))
    }
}

/// The concurrent-exec row of one backend.
pub struct ConcurrentExecs {
    name: String,
    kind: BackendKind,
    command: Command,
    execs: u32,
    served: Option<Served>,
    latencies_us: Vec<f64>,
    bursts_us: Vec<f64>,
    warm: bool,
    found: Option<Concurrency>,
}

impl ConcurrentExecs {
    /// A row starting `execs` (at least 1) execs of `command` at once in a
    /// sandbox of `kind`, served on loopback. Its name starts with the
    /// group, not the backend, so `--only memory` keeps only the memory
    /// backend's own rows.
    pub fn new(kind: BackendKind, command: Command, execs: u32) -> Self {
        let execs = execs.max(1);
        ConcurrentExecs {
            name: format!(
                "density: {execs} concurrent execs through corral serve, {}, 127.0.0.1",
                kind.name()
            ),
            kind,
            command,
            execs,
            served: None,
            latencies_us: Vec::new(),
            bursts_us: Vec::new(),
            warm: false,
            found: None,
        }
    }
}

/// Runs `command` in `id` through `remote`; its latency, µs, when it
/// exits 0.
async fn one_exec(remote: Arc<RemoteBackend>, id: String, command: Command) -> Result<f64, String> {
    let start = Instant::now();
    let mut discard = |_: StreamKind, _: &[u8]| {};
    let outcome = remote
        .exec(&id, ExecRequest::new(command.clone()), &mut discard)
        .await
        .map_err(|e| e.to_string())?;
    if !outcome.status.success() {
        return Err(format!(
            "{} exited unsuccessfully ({:?})",
            command.to_argv().join(" "),
            outcome.status
        ));
    }
    Ok(start.elapsed().as_secs_f64() * 1e6)
}

impl Measure for ConcurrentExecs {
    fn name(&self) -> &str {
        &self.name
    }

    fn group(&self) -> Group {
        Group::Density
    }

    fn default_iterations(&self) -> u32 {
        5
    }

    fn warmups(&self) -> u32 {
        1
    }

    fn setup(&mut self) -> BoxFuture<'_, Result<Setup, BenchError>> {
        Box::pin(async move {
            let name = self.kind.name();
            let scratch = self.kind.open_scratch().await.map_err(|e| match e {
                OpenError::StateDir { .. } => {
                    BenchError::io("creating a temporary state directory", e)
                }
                e => BenchError::backend(name, "open", e),
            })?;
            let (server, backend) = scratch.backend.visit(Serve).await?;
            let endpoint = server.endpoint();
            // Held from here on, so that teardown releases it whatever fails.
            let served = self.served.insert(Served {
                remote: None,
                server: Some(server),
                backend,
                state_dir: scratch.state_dir,
                sandbox: None,
            });
            let remote = RemoteBackend::connect(&endpoint, crate::wire_bed::token()?)
                .await
                .map_err(|e| BenchError::backend("remote", "connect", e))?;
            let remote = Arc::new(remote);
            served.remote = Some(Arc::clone(&remote));
            let info = remote
                .create(bench_request())
                .await
                .map_err(|e| BenchError::backend("remote", "create", e))?;
            served.sandbox = Some(info.id);
            Ok(Setup::Ready)
        })
    }

    fn iteration(&mut self) -> BoxFuture<'_, Result<(), BenchError>> {
        Box::pin(async move {
            let served = self
                .served
                .as_ref()
                .ok_or_else(|| BenchError::io(self.name.clone(), "iteration before setup"))?;
            let (Some(remote), Some(id)) = (served.remote.clone(), served.sandbox.clone()) else {
                return Err(BenchError::io(self.name.clone(), "no sandbox to exec in"));
            };
            let start = Instant::now();
            let mut burst = tokio::task::JoinSet::new();
            for _ in 0..self.execs {
                burst.spawn(one_exec(
                    Arc::clone(&remote),
                    id.clone(),
                    self.command.clone(),
                ));
            }
            let mut latencies = Vec::with_capacity(self.execs as usize);
            while let Some(joined) = burst.join_next().await {
                let latency = joined
                    .map_err(|e| BenchError::io("an exec task", e))?
                    .map_err(|e| BenchError::backend("remote", "exec", e))?;
                latencies.push(latency);
            }
            let took = start.elapsed().as_secs_f64() * 1e6;
            // The first call is the warm-up: not counted.
            if self.warm {
                self.latencies_us.extend(latencies);
                self.bursts_us.push(took);
            }
            self.warm = true;
            Ok(())
        })
    }

    fn metric(&mut self, _summary: &Summary) -> Option<Metric> {
        let burst = median(&self.bursts_us)?;
        let found = Concurrency {
            execs: self.execs,
            median_us: median(&self.latencies_us)?,
            p95_us: percentile(&self.latencies_us, 95.0)?,
            execs_per_s: f64::from(self.execs) / (burst / 1e6).max(f64::MIN_POSITIVE),
        };
        self.found = Some(found);
        Some(Metric::Concurrency(found))
    }

    fn note(&self) -> Option<String> {
        let c = self.found?;
        Some(format!(
            "{} execs at once, {} timed bursts: one exec's latency median {:.2} ms, p95 {:.2} ms; {:.0} execs/s",
            c.execs,
            self.bursts_us.len(),
            c.median_us / 1000.0,
            c.p95_us / 1000.0,
            c.execs_per_s,
        ))
    }

    fn teardown(&mut self) -> BoxFuture<'_, Result<(), BenchError>> {
        Box::pin(async move {
            let Some(served) = self.served.take() else {
                return Ok(());
            };
            let mut first: Option<BenchError> = None;
            if let (Some(remote), Some(id)) = (&served.remote, &served.sandbox)
                && let Err(e) = remote.destroy(id).await
            {
                first.get_or_insert(BenchError::backend("remote", "destroy", e));
            }
            drop(served.remote);
            if let Some(server) = served.server {
                server.shut_down().await;
            }
            if let Err(e) = served.backend.close().await {
                first.get_or_insert(BenchError::backend(self.kind.name(), "close", e));
            }
            if let Some(dir) = served.state_dir
                && let Err(e) = dir.close()
            {
                first.get_or_insert(BenchError::io("removing the bench state directory", e));
            }
            first.map_or(Ok(()), Err)
        })
    }
}
