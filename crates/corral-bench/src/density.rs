//! The density row: N idle sandboxes of one backend on this host — what
//! each holds in memory, and how the cost of a create grows with the
//! count already alive.
//!
//! Setup creates and destroys one sandbox (one-time allocations are not
//! counted), then reads this process's `VmRSS` and the summed PSS of its
//! descendants (a backend's helpers, the sandboxes' inits). Each timed
//! iteration creates one more sandbox and keeps it. After the last, the
//! growth of both is divided by N (the host memory per sandbox), each
//! sandbox's own memory is read through the backend's usage hook (for the
//! linux backend its cgroup's charge) and averaged, and the median create
//! time of the first tenth of the creates is set beside that of the last
//! tenth. The row's own times are of each iteration (the last one also
//! reads the usage, after its create was timed); the tenths are of the
//! creates alone. Figures are reported, never asserted.

use std::sync::Arc;
use std::time::Instant;

use corral_backend::Backend;

use crate::backend::{Opened, Opener, create, destroy};
use crate::error::BenchError;
use crate::host::{descendants_pss_bytes, rss_bytes};
use crate::measure::{BoxFuture, Group, Measure, Metric, Setup};
use crate::stats::{Summary, median};

/// Idle sandboxes the density row keeps unless told otherwise
/// (`corral bench --density N`).
pub const DEFAULT_DENSITY: u32 = 100;

/// What the density row found.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Density {
    /// Idle sandboxes alive at the end.
    pub sandboxes: u32,
    /// Host memory per sandbox, bytes: the growth of this process's RSS
    /// plus that of its descendants' PSS (RSS alone where the kernel has
    /// no `smaps_rollup`), divided by the count.
    pub host_bytes_per_sandbox: f64,
    /// The sandboxes' own memory as the backend reports it (its usage
    /// hook: for the linux backend, the cgroup's charge), averaged; `None`
    /// where the backend reports none.
    pub sandbox_bytes_per_sandbox: Option<f64>,
    /// Median create time of the first tenth of the creates, µs.
    pub first_tenth_create_us: f64,
    /// Median create time of the last tenth of the creates, µs.
    pub last_tenth_create_us: f64,
}

/// The density row of one backend.
pub struct IdleDensity {
    name: String,
    opener: Opener,
    count: u32,
    opened: Option<Opened>,
    baseline: Option<(u64, Option<u64>)>,
    creates_us: Vec<f64>,
    sandboxes: Vec<String>,
    sandbox_memory: Option<f64>,
    found: Option<Density>,
    skip: Option<String>,
}

impl IdleDensity {
    /// A row keeping `count` (at least 1) idle sandboxes of the backend
    /// `opener` opens, named after `label`. Its name starts with the group
    /// (`density: …`), not the backend, so `--only linux` does not pull
    /// in a hundred sandboxes.
    pub fn new(label: &str, opener: Opener, count: u32) -> Self {
        let count = count.max(1);
        IdleDensity {
            name: format!("density: {count} idle {label} sandboxes"),
            opener,
            count,
            opened: None,
            baseline: None,
            creates_us: Vec::new(),
            sandboxes: Vec::new(),
            sandbox_memory: None,
            found: None,
            skip: None,
        }
    }

    /// The same row, skipped with `reason` (the backend cannot run here).
    pub fn skipped_because(mut self, reason: impl Into<String>) -> Self {
        self.skip = Some(reason.into());
        self
    }

    fn backend(&self) -> Result<Arc<dyn Backend>, BenchError> {
        self.opened
            .as_ref()
            .map(|o| o.backend.clone())
            .ok_or_else(|| BenchError::io(self.name.clone(), "iteration before setup"))
    }
}

/// The median of the first and of the last tenth (at least one sample
/// each) of `samples`, in order.
pub fn first_and_last_tenth(samples: &[f64]) -> Option<(f64, f64)> {
    let tenth = samples.len().div_ceil(10).max(1);
    let first = median(samples.get(..tenth)?)?;
    let last = median(samples.get(samples.len().checked_sub(tenth)?..)?)?;
    Some((first, last))
}

/// The sandboxes' own memory, averaged over those the backend reports it
/// for; `None` when it reports it for none.
async fn sandbox_memory(backend: &dyn Backend, ids: &[String]) -> Option<f64> {
    let usage = backend.usage_ops()?;
    let mut total = 0u64;
    let mut counted = 0u32;
    for id in ids {
        if let Ok(Some(bytes)) = usage.usage(id).await.map(|u| u.memory_bytes) {
            total += bytes;
            counted += 1;
        }
    }
    (counted > 0).then(|| total as f64 / f64::from(counted))
}

impl Measure for IdleDensity {
    fn name(&self) -> &str {
        &self.name
    }

    fn group(&self) -> Group {
        Group::Density
    }

    fn default_iterations(&self) -> u32 {
        self.count
    }

    /// Always the configured count: the figures are per sandbox of that
    /// many.
    fn iterations(&self, _requested: Option<u32>) -> u32 {
        self.count
    }

    fn warmups(&self) -> u32 {
        0
    }

    fn setup(&mut self) -> BoxFuture<'_, Result<Setup, BenchError>> {
        Box::pin(async move {
            if let Some(reason) = &self.skip {
                return Ok(Setup::Skip(reason.clone()));
            }
            let opened = (self.opener)().await?;
            let backend = opened.backend.clone();
            self.opened = Some(opened);
            let id = create(&*backend).await?;
            destroy(&*backend, &id).await?;
            let Some(rss) = rss_bytes() else {
                return Ok(Setup::Skip("/proc/self/status has no VmRSS here".into()));
            };
            self.baseline = Some((rss, descendants_pss_bytes().map(|(bytes, _)| bytes)));
            Ok(Setup::Ready)
        })
    }

    fn iteration(&mut self) -> BoxFuture<'_, Result<(), BenchError>> {
        Box::pin(async move {
            let backend = self.backend()?;
            let start = Instant::now();
            let id = create(&*backend).await?;
            self.creates_us.push(start.elapsed().as_secs_f64() * 1e6);
            self.sandboxes.push(id);
            if self.sandboxes.len() == self.count as usize {
                // After the last create: its own time is already taken.
                self.sandbox_memory = sandbox_memory(&*backend, &self.sandboxes).await;
            }
            Ok(())
        })
    }

    fn metric(&mut self, _summary: &Summary) -> Option<Metric> {
        let (rss_before, pss_before) = self.baseline?;
        let n = self.sandboxes.len().max(1) as f64;
        let rss = rss_bytes()? as f64 - rss_before as f64;
        let pss = pss_before
            .zip(descendants_pss_bytes())
            .map_or(0.0, |(before, (now, _))| now as f64 - before as f64);
        let (first, last) = first_and_last_tenth(&self.creates_us)?;
        let found = Density {
            sandboxes: self.sandboxes.len() as u32,
            host_bytes_per_sandbox: (rss + pss) / n,
            sandbox_bytes_per_sandbox: self.sandbox_memory,
            first_tenth_create_us: first,
            last_tenth_create_us: last,
        };
        self.found = Some(found);
        Some(Metric::Density(found))
    }

    fn note(&self) -> Option<String> {
        let d = self.found?;
        let own = d.sandbox_bytes_per_sandbox.map_or_else(
            || "the backend reports no per-sandbox memory".to_owned(),
            |b| format!("{:.1} KiB each by the backend's usage", b / 1024.0),
        );
        Some(format!(
            "{} idle: {:.1} KiB of host memory each, {own}; create median {:.2} ms over the first tenth, {:.2} ms over the last ({:.2}×)",
            d.sandboxes,
            d.host_bytes_per_sandbox / 1024.0,
            d.first_tenth_create_us / 1000.0,
            d.last_tenth_create_us / 1000.0,
            d.last_tenth_create_us / d.first_tenth_create_us.max(f64::MIN_POSITIVE),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenths_take_at_least_one_sample_each() {
        assert_eq!(first_and_last_tenth(&[5.0]), Some((5.0, 5.0)));
        assert_eq!(first_and_last_tenth(&[1.0, 9.0]), Some((1.0, 9.0)));
        let twenty: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(first_and_last_tenth(&twenty), Some((1.5, 19.5)));
        assert_eq!(first_and_last_tenth(&[]), None);
    }
}
