//! Wire rows: what the network hop of `corral-wire` costs, each measured
//! beside the same call on the same kind of provider in process.
//!
//! - `unary` group: one `read_file` of a 1 KiB file on an active memory
//!   instance — in process (the floor) and through the wire client to a
//!   server on `127.0.0.1` (one HTTP request and its JSON both ways). The
//!   memory backend keeps the provider's own cost small, so the difference
//!   is the hop.
//! - `stream` group: `openProcess` of `dd` writing [`STREAM_BYTES`] to
//!   stdout in 1 MiB writes, read to EOF and waited for — in process (the floor) and
//!   through the wire (the WebSocket's data frames, acknowledgements and
//!   replay buffer). On the linux backend where this host runs it, else
//!   the local one. The wire row's note checks the throughput against
//!   [`STREAM_TARGET_MB_PER_S`]: reported as met or missed, never asserted.
//!
//! Every row opens its own backend, adapter (and, over the wire, server
//! and client) at setup, so the two sides of a group stand on identical,
//! independent beds; teardown destroys the instance, stops the server and
//! removes the state directory.

use corral_contract::{MaximumBytes, ReadFileRequest};

use crate::error::BenchError;
use crate::measure::{BoxFuture, Group, Measure, Metric, Role, Setup};
use crate::stats::Summary;
use crate::wire_bed::{Bed, BedBackend, Way, sandbox_path};

/// Bytes of the file each unary iteration reads.
pub const UNARY_FILE_BYTES: usize = 1024;
/// Bytes the stream rows' process writes to stdout per iteration.
pub const STREAM_BYTES: u64 = 128 * 1024 * 1024;
/// The wire's stdout throughput target on loopback, in MB/s (10⁶ bytes):
/// 1 GB/s, the performance issue's target for `openProcess` over the wire.
pub const STREAM_TARGET_MB_PER_S: f64 = 1000.0;
/// Bytes asked of the output stream per read.
const READ_BUFFER: usize = 256 * 1024;
/// Where the unary file lives.
const UNARY_FILE: &str = "/project/bench.txt";

/// The four wire rows, in table order.
pub fn wire_measures() -> Vec<Box<dyn Measure>> {
    vec![
        Box::new(UnaryMeasure::new(Way::InProcess)),
        Box::new(UnaryMeasure::new(Way::Loopback)),
        Box::new(StreamMeasure::new(Way::InProcess)),
        Box::new(StreamMeasure::new(Way::Loopback)),
    ]
}

/// `read_file` of a 1 KiB file, in process or over loopback.
pub struct UnaryMeasure {
    way: Way,
    name: String,
    bed: Option<Bed>,
    request: Option<ReadFileRequest>,
}

impl UnaryMeasure {
    /// The row reaching its provider `way`.
    pub fn new(way: Way) -> Self {
        UnaryMeasure {
            way,
            name: format!("{} read_file 1 KiB", way.prefix()),
            bed: None,
            request: None,
        }
    }

    async fn prepare(&mut self) -> Result<(), BenchError> {
        let bed = Bed::open(BedBackend::Memory, self.way, true).await?;
        // Kept before anything else can fail, so that teardown releases it.
        let bed = self.bed.insert(bed);
        let path = sandbox_path(UNARY_FILE)?;
        let content: Vec<u8> = (0..UNARY_FILE_BYTES)
            .map(|i| b'a' + (i % 26) as u8)
            .collect();
        bed.write_file(&path, content).await?;
        bed.activate().await?;
        let max = MaximumBytes::new(UNARY_FILE_BYTES as u64)
            .map_err(|e| BenchError::io("maximum bytes", e))?;
        let request = ReadFileRequest::new(
            bed.instance()?.clone(),
            path,
            sandbox_path("/project")?,
            max,
        )
        .map_err(|e| BenchError::io("read_file request", e))?;
        self.request = Some(request);
        Ok(())
    }
}

impl Measure for UnaryMeasure {
    fn name(&self) -> &str {
        &self.name
    }

    fn group(&self) -> Group {
        Group::Unary
    }

    fn role(&self) -> Role {
        self.way.role()
    }

    fn default_iterations(&self) -> u32 {
        1000
    }

    fn warmups(&self) -> u32 {
        20
    }

    fn setup(&mut self) -> BoxFuture<'_, Result<Setup, BenchError>> {
        Box::pin(async move {
            self.prepare().await?;
            Ok(Setup::Ready)
        })
    }

    fn iteration(&mut self) -> BoxFuture<'_, Result<(), BenchError>> {
        Box::pin(async move {
            let (Some(bed), Some(request)) = (&self.bed, &self.request) else {
                return Err(BenchError::io(self.name.clone(), "iteration before setup"));
            };
            let read = bed.read_file(request.clone()).await?;
            if read.content.len() != UNARY_FILE_BYTES {
                return Err(BenchError::io(
                    self.name.clone(),
                    format!(
                        "read {} bytes, wanted {UNARY_FILE_BYTES}",
                        read.content.len()
                    ),
                ));
            }
            Ok(())
        })
    }

    fn note(&self) -> Option<String> {
        Some(match self.way {
            Way::InProcess => "memory backend, the adapter called directly".into(),
            Way::Loopback => "memory backend, wire client → server on 127.0.0.1".into(),
        })
    }

    fn teardown(&mut self) -> BoxFuture<'_, Result<(), BenchError>> {
        Box::pin(async move {
            self.request = None;
            match self.bed.take() {
                Some(bed) => bed.close().await,
                None => Ok(()),
            }
        })
    }
}

/// `openProcess` stdout throughput, in process or over loopback.
pub struct StreamMeasure {
    way: Way,
    name: String,
    backend: BedBackend,
    bytes: u64,
    bed: Option<Bed>,
    mb_per_s: Option<f64>,
}

impl StreamMeasure {
    /// The row reaching its provider `way`, on the linux backend where
    /// this host runs it, else the local one.
    pub fn new(way: Way) -> Self {
        Self::on(way, BedBackend::for_processes(), STREAM_BYTES >> 20)
    }

    /// The row reaching its provider `way` on `backend`, the process
    /// writing `mib` MiB (at least 1).
    pub fn on(way: Way, backend: BedBackend, mib: u64) -> Self {
        let mib = mib.max(1);
        StreamMeasure {
            way,
            name: format!("{} openProcess stdout {mib} MiB", way.prefix()),
            backend,
            bytes: mib << 20,
            bed: None,
            mb_per_s: None,
        }
    }

    /// The command writing the row's bytes (zeros) to stdout, in writes
    /// of 1 MiB (`head -c` writes 4 KiB at a time, which measures the
    /// pipe's wake-ups more than the stream).
    fn command(&self) -> [String; 5] {
        [
            "dd".into(),
            "if=/dev/zero".into(),
            "bs=1M".into(),
            format!("count={}", self.bytes >> 20),
            "status=none".into(),
        ]
    }

    async fn run_once(&self) -> Result<(), BenchError> {
        let bed = self
            .bed
            .as_ref()
            .ok_or_else(|| BenchError::io(self.name.clone(), "iteration before setup"))?;
        let command = self.command();
        let argv: Vec<&str> = command.iter().map(String::as_str).collect();
        let got = bed.stdout_of(&argv, READ_BUFFER).await?;
        if got != self.bytes {
            return Err(BenchError::io(
                self.name.clone(),
                format!("stdout carried {got} bytes, wanted {}", self.bytes),
            ));
        }
        Ok(())
    }
}

impl Measure for StreamMeasure {
    fn name(&self) -> &str {
        &self.name
    }

    fn group(&self) -> Group {
        Group::Stream
    }

    fn role(&self) -> Role {
        self.way.role()
    }

    fn default_iterations(&self) -> u32 {
        10
    }

    fn setup(&mut self) -> BoxFuture<'_, Result<Setup, BenchError>> {
        Box::pin(async move {
            let bed = Bed::open(self.backend, self.way, false).await?;
            self.bed.insert(bed).activate().await?;
            Ok(Setup::Ready)
        })
    }

    fn iteration(&mut self) -> BoxFuture<'_, Result<(), BenchError>> {
        Box::pin(async move { self.run_once().await })
    }

    fn metric(&mut self, summary: &Summary) -> Option<Metric> {
        if summary.median <= 0.0 {
            return None;
        }
        let seconds = summary.median / 1e6;
        self.mb_per_s = Some(self.bytes as f64 / 1e6 / seconds);
        Some(Metric::ThroughputMibPerS(
            self.bytes as f64 / (1024.0 * 1024.0) / seconds,
        ))
    }

    fn note(&self) -> Option<String> {
        let mut note = format!(
            "{} backend, `{}` to EOF",
            self.backend.as_str(),
            self.command().join(" ")
        );
        if let (Way::Loopback, Some(mb)) = (self.way, self.mb_per_s) {
            note.push_str(&format!(
                "; {mb:.0} MB/s, target ≥ {STREAM_TARGET_MB_PER_S:.0} MB/s: {}",
                target_verdict(mb)
            ));
        }
        Some(note)
    }

    fn teardown(&mut self) -> BoxFuture<'_, Result<(), BenchError>> {
        Box::pin(async move {
            match self.bed.take() {
                Some(bed) => bed.close().await,
                None => Ok(()),
            }
        })
    }
}

/// `met` when `mb_per_s` reaches [`STREAM_TARGET_MB_PER_S`], else `missed`.
pub fn target_verdict(mb_per_s: f64) -> &'static str {
    if mb_per_s >= STREAM_TARGET_MB_PER_S {
        "met"
    } else {
        "missed"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_is_met_at_or_above_1_gb_per_s() {
        assert_eq!(target_verdict(1000.0), "met");
        assert_eq!(target_verdict(1200.0), "met");
        assert_eq!(target_verdict(999.9), "missed");
        assert_eq!(target_verdict(500.0), "missed");
        assert_eq!(target_verdict(f64::NAN), "missed");
    }

    #[test]
    fn rows_are_named_by_way_and_grouped_with_their_floor() {
        let rows = wire_measures();
        let names: Vec<&str> = rows.iter().map(|m| m.name()).collect();
        assert_eq!(
            names,
            [
                "in-process read_file 1 KiB",
                "wire read_file 1 KiB",
                "in-process openProcess stdout 128 MiB",
                "wire openProcess stdout 128 MiB",
            ]
        );
        let shape: Vec<(Group, Role)> = rows.iter().map(|m| (m.group(), m.role())).collect();
        assert_eq!(
            shape,
            [
                (Group::Unary, Role::Floor),
                (Group::Unary, Role::Compared),
                (Group::Stream, Role::Floor),
                (Group::Stream, Role::Compared),
            ]
        );
    }
}
