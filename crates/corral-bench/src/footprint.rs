//! The idle-sandbox footprint: how much host memory each sandbox kept alive
//! and idle holds — this process's resident set, plus the proportional set
//! (PSS) of every process it started (a backend's helpers, sandbox inits).
//!
//! Setup creates and destroys one sandbox (so one-time allocations are not
//! counted), then reads `VmRSS` and the summed PSS of this process's
//! descendants; each timed iteration creates one more sandbox and keeps it;
//! after the last one both are read again and the growth divided by the
//! count. Memory the kernel holds for a sandbox (its namespaces, mounts,
//! cgroups) shows in neither. The figure is reported, never asserted.

use crate::backend::{Opened, Opener, create, destroy};
use crate::error::BenchError;
use crate::host::{descendants_pss_bytes, rss_bytes};
use crate::measure::{BoxFuture, Group, Measure, Metric, Setup};
use crate::stats::Summary;

/// The footprint row of one backend.
pub struct IdleFootprint {
    name: String,
    opener: Opener,
    count: u32,
    opened: Option<Opened>,
    baseline: Option<u64>,
    growth: Option<i64>,
    /// The descendants' summed PSS at setup, where the kernel reports it.
    helpers_baseline: Option<u64>,
    /// Their PSS growth and how many there are at the end.
    helpers_growth: Option<(i64, usize)>,
    sandboxes: Vec<String>,
}

impl IdleFootprint {
    /// A row keeping `count` idle sandboxes of the backend `opener` opens.
    pub fn new(label: &str, opener: Opener, count: u32) -> Self {
        IdleFootprint {
            name: format!("{label} idle sandbox memory"),
            opener,
            count: count.max(1),
            opened: None,
            baseline: None,
            growth: None,
            helpers_baseline: None,
            helpers_growth: None,
            sandboxes: Vec::new(),
        }
    }
}

impl Measure for IdleFootprint {
    fn name(&self) -> &str {
        &self.name
    }

    fn group(&self) -> Group {
        Group::Footprint
    }

    fn default_iterations(&self) -> u32 {
        self.count
    }

    /// Always the configured count: the figure is per sandbox of that many.
    fn iterations(&self, _requested: Option<u32>) -> u32 {
        self.count
    }

    fn warmups(&self) -> u32 {
        0
    }

    fn setup(&mut self) -> BoxFuture<'_, Result<Setup, BenchError>> {
        Box::pin(async move {
            let opened = (self.opener)().await?;
            let backend = opened.backend.clone();
            self.opened = Some(opened);
            let id = create(&*backend).await?;
            destroy(&*backend, &id).await?;
            self.baseline = rss_bytes();
            self.helpers_baseline = descendants_pss_bytes().map(|(bytes, _)| bytes);
            if self.baseline.is_none() {
                return Ok(Setup::Skip("/proc/self/status has no VmRSS here".into()));
            }
            Ok(Setup::Ready)
        })
    }

    fn iteration(&mut self) -> BoxFuture<'_, Result<(), BenchError>> {
        Box::pin(async move {
            let backend = self
                .opened
                .as_ref()
                .map(|o| o.backend.clone())
                .ok_or_else(|| BenchError::io(self.name.clone(), "iteration before setup"))?;
            let id = create(&*backend).await?;
            self.sandboxes.push(id);
            Ok(())
        })
    }

    fn metric(&mut self, _summary: &Summary) -> Option<Metric> {
        let (now, before) = (rss_bytes()?, self.baseline?);
        let growth = now as i64 - before as i64;
        self.growth = Some(growth);
        let n = self.sandboxes.len().max(1) as f64;
        let helpers = self.helpers_baseline.zip(descendants_pss_bytes());
        self.helpers_growth =
            helpers.map(|(before, (now, count))| (now as i64 - before as i64, count));
        Some(match self.helpers_growth {
            Some((pss, _)) => Metric::HostBytesPerSandbox((growth + pss) as f64 / n),
            None => Metric::RssBytesPerSandbox(growth as f64 / n),
        })
    }

    fn note(&self) -> Option<String> {
        let growth = self.growth?;
        let helpers = match self.helpers_growth {
            Some((pss, count)) => format!(
                ", PSS of the {count} processes it started {:+.1} KiB",
                pss as f64 / 1024.0
            ),
            None => " (this process only: no smaps_rollup here)".to_owned(),
        };
        Some(format!(
            "{} idle sandboxes: this process's RSS {:+.1} KiB in all{helpers}; times are per create",
            self.sandboxes.len(),
            growth as f64 / 1024.0,
        ))
    }

    fn teardown(&mut self) -> BoxFuture<'_, Result<(), BenchError>> {
        Box::pin(async move {
            let Some(opened) = self.opened.take() else {
                return Ok(());
            };
            let mut first_error = Ok(());
            for id in self.sandboxes.drain(..) {
                let r = destroy(&*opened.backend, &id).await;
                if first_error.is_ok() {
                    first_error = r;
                }
            }
            let closed = opened.close().await;
            first_error.and(closed)
        })
    }
}
