//! # corral-bench
//!
//! `corral bench`: what starting a sandbox, running a command in it and
//! reading out of it costs, measured **side by side in one run** with what
//! it is compared with, and reported as medians (with p10 and p90) and as
//! ratios to a floor.
//!
//! | group | floor | rows |
//! |---|---|---|
//! | `start` | `fork+exec /bin/true` | `unshare` of five namespaces (root only), `bwrap --unshare-all` (where installed), `corral run -- /bin/true` (the whole command line, on a state directory of its own), `docker run --rm` and `docker exec` (where an engine answers and an image is present — never pulled), memory, local, linux and docker backends: create→exec→destroy and exec alone (the docker backend through one engine connection, beside the CLI rows), and beside the `linux` rows the same two as `linux without userns`, `linux without curated-etc` and `linux without fd-hygiene` (a backend opened without that one layer: the difference is what the layer costs) |
//! | `read` | `std::fs::read` of a 16 MiB file | the same file through [`corral_backend::contained::ContainedRoot`] (with MiB/s) |
//! | `footprint` | none | host memory per idle local and linux sandbox (200 of them): growth of this process's RSS plus the PSS of every process it started (helpers, sandbox inits); reported, never asserted |
//! | `unary` | `read_file` of 1 KiB in process | the same call over the wire to a server on `127.0.0.1` (memory backend) |
//! | `stream` | `openProcess` stdout of 128 MiB in process | the same over the wire, with MiB/s and the 1 GB/s target met or missed (linux backend where available, else local) |
//! | `density` | none | N idle linux sandboxes (`--density N`, default 100): host memory each, each one's own memory by the backend's usage hook (its cgroup's charge), and the median create over the first tenth beside the last; M execs at once (`--concurrent-execs M`, default 100) in one sandbox through corral-wire's backend routes on `127.0.0.1` (linux where available, else memory): one exec's median and p95 latency and the throughput (see [`IdleDensity`], [`ConcurrentExecs`]) |
//! | `e2b` | the backend's create→exec→destroy in process (linux where available, else memory) | E2B's Python SDK, unmodified: `Sandbox.create()` → `commands.run("true")` → `kill()` through a real `corral serve` on `127.0.0.1` over the same backend (skipped without the `corral` binary or a Python with `e2b`; see [`E2bSdkMeasure`]) |
//!
//! Each row is a [`Measure`]: set up once, warm-up iterations (not
//! recorded), timed iterations, teardown that releases everything (bench
//! sandboxes carry the label `corral.bench=1`; state directories and files
//! are temporary). A row that cannot run here is *skipped* with a one-line
//! reason; one that breaks is *failed* with the error, and the bench goes
//! on. A backend adds its rows with its arm of [`backend_rows`].
//!
//! Default iteration counts keep the whole run under a minute on a small
//! machine; `iterations` overrides them for every row but the footprint,
//! whose count is part of its meaning.

mod backend;
mod concurrent;
mod density;
mod docker;
mod docker_backend;
mod e2b;
mod error;
mod footprint;
pub mod host;
mod measure;
mod process;
mod read;
mod report;
mod runner;
pub mod stats;
mod wire;
mod wire_bed;

pub use backend::{
    BENCH_LABEL, BackendMeasure, BackendOp, Opened, Opener, backend_measures, linux_opener_without,
    scratch_opener,
};
pub use concurrent::{Concurrency, ConcurrentExecs, DEFAULT_CONCURRENT_EXECS};
pub use density::{DEFAULT_DENSITY, Density, IdleDensity, first_and_last_tenth};
pub use docker::{DockerMeasure, DockerOp, pick_image};
pub use docker_backend::{DockerBackendMeasure, docker_backend_measures};
pub use e2b::{E2B_PYTHON_VAR, E2bSdkMeasure};
pub use error::BenchError;
pub use footprint::IdleFootprint;
pub use host::Host;
pub use measure::{BoxFuture, Group, Measure, Metric, Role, Setup};
pub use process::ProcessMeasure;
pub use read::{READ_BYTES, ReadMeasure, ReadWay};
pub use report::{Report, time_text};
pub use runner::{Outcome, Row, RunOptions, fill_ratios, run_measures, select};
pub use stats::Summary;
pub use wire::{
    STREAM_BYTES, STREAM_TARGET_MB_PER_S, StreamMeasure, UNARY_FILE_BYTES, UnaryMeasure,
    target_verdict, wire_measures,
};
pub use wire_bed::{BedBackend, Way};

use corral_backend::Command;
use corral_registry::BackendKind;

/// Idle sandboxes each footprint row keeps.
pub const IDLE_SANDBOXES: u32 = 200;

/// What `corral bench` was asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BenchConfig {
    /// Timed iterations per row (`None`: each row's default).
    pub iterations: Option<u32>,
    /// Row-name prefixes or group names to keep (empty: all rows).
    pub only: Vec<String>,
    /// The image for the docker rows (`None`: one already present).
    pub docker_image: Option<String>,
    /// The `corral` binary the `e2b` row serves with (`None`: that row is
    /// skipped).
    pub corral_bin: Option<std::path::PathBuf>,
    /// The Python that has E2B's `e2b` package (`None`: `python3`).
    pub e2b_python: Option<std::path::PathBuf>,
    /// Idle sandboxes of the density row (`None`: [`DEFAULT_DENSITY`]).
    pub density: Option<u32>,
    /// Execs at once in the concurrent-exec row (`None`:
    /// [`DEFAULT_CONCURRENT_EXECS`]).
    pub concurrent_execs: Option<u32>,
}

/// Every row of the standard bench, in table order. A backend joins with
/// its arm in [`backend_rows`], e.g. `backend_measures(kind.name(),
/// scratch_opener(kind), Command::argv(["/bin/true"])?, Some(IDLE_SANDBOXES))`.
pub fn standard_measures(config: &BenchConfig) -> Vec<Box<dyn Measure>> {
    let mut v: Vec<Box<dyn Measure>> = vec![
        Box::new(ProcessMeasure::fork_exec()),
        Box::new(ProcessMeasure::unshare()),
        Box::new(ProcessMeasure::bwrap()),
        Box::new(ProcessMeasure::corral_run(config.corral_bin.clone())),
        Box::new(DockerMeasure::new(
            DockerOp::Run,
            config.docker_image.clone(),
        )),
        Box::new(DockerMeasure::new(
            DockerOp::Exec,
            config.docker_image.clone(),
        )),
    ];
    let mut kinds = BackendKind::ALL;
    kinds.sort_by_key(|kind| table_position(*kind));
    for kind in kinds {
        v.extend(backend_rows(kind, config));
    }
    v.push(Box::new(ReadMeasure::new(ReadWay::Std)));
    v.push(Box::new(ReadMeasure::new(ReadWay::Contained)));
    // The network hop: corral-wire over loopback beside the same calls in process.
    v.extend(wire_measures());
    v.extend(e2b_measures(config));
    v.extend(density_measures(config));
    v
}

/// The `density` group: N idle linux sandboxes (skipped, with the reason,
/// where this host cannot run linux sandboxes), and M concurrent execs
/// through a server on loopback over the linux backend where available,
/// else the memory backend.
pub fn density_measures(config: &BenchConfig) -> Vec<Box<dyn Measure>> {
    let n = config.density.unwrap_or(DEFAULT_DENSITY);
    let m = config.concurrent_execs.unwrap_or(DEFAULT_CONCURRENT_EXECS);
    let linux = BackendKind::Linux;
    let idle = IdleDensity::new(linux.name(), scratch_opener(linux), n);
    let idle = match linux.available() {
        Ok(()) => idle,
        Err(reason) => idle.skipped_because(format!("the linux backend cannot run here: {reason}")),
    };
    let (kind, command) = if linux.available().is_ok() {
        (linux, Command::argv(["/bin/true"]))
    } else {
        (BackendKind::Memory, Command::argv(["true"]))
    };
    let command = command.expect("a fixed, valid command");
    vec![
        Box::new(idle),
        Box::new(ConcurrentExecs::new(kind, command, m)),
    ]
}

/// The `e2b` group: the SDK's cycle through `corral serve` beside the
/// same backend's cycle in process — linux where this host runs it, else
/// memory.
pub fn e2b_measures(config: &BenchConfig) -> Vec<Box<dyn Measure>> {
    let (kind, command) = if BackendKind::Linux.available().is_ok() {
        (
            BackendKind::Linux,
            Command::argv(["/bin/true"]).expect("a fixed, valid command"),
        )
    } else {
        (
            BackendKind::Memory,
            Command::argv(["true"]).expect("a fixed, valid command"),
        )
    };
    let floor = BackendMeasure::new(kind.name(), BackendOp::Cycle, scratch_opener(kind), command)
        .floor_of(
            Group::E2b,
            format!("in-process {} create+exec+destroy", kind.name()),
        );
    vec![
        Box::new(floor),
        Box::new(E2bSdkMeasure::new(
            kind,
            config.corral_bin.clone(),
            config.e2b_python.clone(),
        )),
    ]
}

/// Where a backend's rows stand in the table: corral's docker backend
/// right after the docker CLI rows it is compared with, then the others
/// from the least isolating to the most.
const fn table_position(kind: BackendKind) -> u8 {
    match kind {
        BackendKind::Docker => 0,
        BackendKind::Memory => 1,
        BackendKind::Local => 2,
        BackendKind::Linux => 3,
    }
}

/// The rows of backend `kind`.
pub fn backend_rows(kind: BackendKind, config: &BenchConfig) -> Vec<Box<dyn Measure>> {
    let host_true = Command::argv(["/bin/true"]).expect("a fixed, valid command");
    match kind {
        // Through one engine connection, beside the docker CLI rows.
        BackendKind::Docker => docker_backend_measures(config.docker_image.clone()),
        // The built-in shell's `true`; no host memory to speak of.
        BackendKind::Memory => backend_measures(
            kind.name(),
            scratch_opener(kind),
            Command::argv(["true"]).expect("a fixed, valid command"),
            None,
        ),
        BackendKind::Local => backend_measures(
            kind.name(),
            scratch_opener(kind),
            host_true,
            Some(IDLE_SANDBOXES),
        ),
        // Where this host runs it. Its idle footprint lives mostly in its
        // init processes, which the footprint row counts (PSS).
        BackendKind::Linux if kind.available().is_err() => Vec::new(),
        BackendKind::Linux => {
            let mut v = backend_measures(
                kind.name(),
                scratch_opener(kind),
                host_true.clone(),
                Some(IDLE_SANDBOXES),
            );
            // Beside them, the same rows without each layer that has a
            // switch for measuring: the difference is what the layer costs.
            for layer in corral_backend_linux::layers::Layer::ALL {
                v.extend(backend_measures(
                    &format!("{kind} without {}", layer.name()),
                    linux_opener_without(layer),
                    host_true.clone(),
                    None,
                ));
            }
            v
        }
    }
}

/// Runs `measures` as `config` asks and reports on this host.
pub async fn run_with(
    measures: Vec<Box<dyn Measure>>,
    config: &BenchConfig,
) -> Result<Report, BenchError> {
    if config.iterations == Some(0) {
        return Err(BenchError::io("iterations", "must be at least 1"));
    }
    if config.density == Some(0) {
        return Err(BenchError::io("density", "must be at least 1"));
    }
    if config.concurrent_execs == Some(0) {
        return Err(BenchError::io("concurrent execs", "must be at least 1"));
    }
    let measures = select(measures, &config.only)?;
    let options = RunOptions {
        iterations: config.iterations,
        ..RunOptions::default()
    };
    let rows = run_measures(measures, &options).await;
    Ok(Report {
        host: Host::current(),
        iterations_requested: config.iterations,
        only: config.only.clone(),
        rows,
    })
}

/// Runs the standard bench as `config` asks.
pub async fn run(config: &BenchConfig) -> Result<Report, BenchError> {
    run_with(standard_measures(config), config).await
}
