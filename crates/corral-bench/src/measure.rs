//! The [`Measure`] trait: one row of the bench — its name, its group, how to
//! set it up, one timed iteration, and how to tear it down.

use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};

use crate::error::BenchError;
use crate::stats::Summary;

/// A boxed, sendable future: what the [`Measure`] methods return, so that
/// measures can be held as `Box<dyn Measure>`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Which rows a row is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    /// Starting something and running `true` in it (floor: fork+exec).
    Start,
    /// Reading a 16 MiB file (floor: `std::fs::read`).
    Read,
    /// Host memory held per idle sandbox (no floor).
    Footprint,
    /// One cheap unary contract call (floor: the call in process).
    Unary,
    /// `openProcess` stdout read to its end (floor: the same in process).
    Stream,
    /// E2B's SDK creating a sandbox, running `true` and killing it through
    /// `corral serve` (floor: the backend's cycle in process).
    E2b,
    /// Many sandboxes or calls at once: idle sandboxes held, concurrent
    /// execs through a server (no floor: each row reports its figures).
    Density,
}

impl Group {
    /// Every group, in table order.
    pub const ALL: [Group; 7] = [
        Group::Start,
        Group::Read,
        Group::Footprint,
        Group::Unary,
        Group::Stream,
        Group::E2b,
        Group::Density,
    ];

    /// The stable snake_case name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Group::Start => "start",
            Group::Read => "read",
            Group::Footprint => "footprint",
            Group::Unary => "unary",
            Group::Stream => "stream",
            Group::E2b => "e2b",
            Group::Density => "density",
        }
    }
}

/// Whether a row is the floor its group is divided by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The cheapest way to do the thing: other rows' ratios are to this one.
    Floor,
    /// Compared with the floor.
    Compared,
}

/// What setup found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Setup {
    /// Ready to iterate.
    Ready,
    /// Cannot run here (a tool is absent, no engine answers, not root); the
    /// reason is shown as the row's note.
    Skip(String),
}

/// A figure a row reports besides its times.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum Metric {
    /// Bytes moved per second at the median time, in MiB/s.
    ThroughputMibPerS(f64),
    /// Growth of this process's resident set per sandbox kept idle, in bytes.
    RssBytesPerSandbox(f64),
    /// Host memory per sandbox kept idle, in bytes: the growth of this
    /// process's resident set plus that of the proportional sets of every
    /// process it started (a backend's helpers and sandbox inits).
    HostBytesPerSandbox(f64),
    /// N idle sandboxes: memory each and how a create's cost grew.
    Density(crate::density::Density),
    /// M execs at once through a server: latency and throughput.
    Concurrency(crate::concurrent::Concurrency),
}

/// One thing the bench measures. The runner calls [`Measure::setup`] once,
/// then [`Measure::iteration`] for the warm-ups (not recorded) and the timed
/// iterations, then [`Measure::metric`] and [`Measure::note`], and always
/// [`Measure::teardown`] — after a skip, a failed setup or a failed
/// iteration too — so a teardown must release whatever part was allocated.
///
/// A backend adds its rows by handing the runner more measures; see
/// [`crate::backend_measures`].
pub trait Measure: Send {
    /// The row's name; `only` filters match its beginning.
    fn name(&self) -> &str;

    /// The group whose floor this row is compared with.
    fn group(&self) -> Group;

    /// Whether this row is its group's floor.
    fn role(&self) -> Role {
        Role::Compared
    }

    /// Timed iterations when the caller asks for none in particular, sized so
    /// that the whole bench stays under a minute.
    fn default_iterations(&self) -> u32;

    /// Timed iterations for a caller asking for `requested` (`None`: the
    /// default). Measures whose meaning needs a fixed count override this.
    fn iterations(&self, requested: Option<u32>) -> u32 {
        requested.unwrap_or_else(|| self.default_iterations())
    }

    /// Iterations run before timing starts (excluded from the statistics).
    fn warmups(&self) -> u32 {
        2
    }

    /// Prepares everything the iterations need, or says why it cannot run here.
    fn setup(&mut self) -> BoxFuture<'_, Result<Setup, BenchError>>;

    /// One iteration: the timed operation, nothing else.
    fn iteration(&mut self) -> BoxFuture<'_, Result<(), BenchError>>;

    /// A figure derived after the timed iterations (`summary` is of their
    /// times, in microseconds).
    fn metric(&mut self, summary: &Summary) -> Option<Metric> {
        let _ = summary;
        None
    }

    /// A note shown with the row when it was measured (what exactly ran).
    fn note(&self) -> Option<String> {
        None
    }

    /// Releases everything setup and the iterations allocated.
    fn teardown(&mut self) -> BoxFuture<'_, Result<(), BenchError>>;
}
