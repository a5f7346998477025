//! Read rows: a 16 MiB file read through
//! [`corral_backend::contained::ContainedRoot`] against `std::fs::read` of
//! the same file (the floor). Both read a warm page cache after the
//! warm-ups, so the difference is the containment's own cost. Reads run on
//! the calling thread, as the process rows do.

use corral_backend::contained::ContainedRoot;

use crate::error::BenchError;
use crate::measure::{BoxFuture, Group, Measure, Metric, Role, Setup};
use crate::stats::Summary;

/// Bytes read per iteration.
pub const READ_BYTES: u64 = 16 * 1024 * 1024;
/// The file's name inside its temporary directory.
const FILE: &str = "data.bin";

/// How a [`ReadMeasure`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadWay {
    /// `std::fs::read` of the host path: the floor.
    Std,
    /// `ContainedRoot::read` beneath the temporary directory.
    Contained,
}

/// A read row; each measure writes and removes its own file.
pub struct ReadMeasure {
    way: ReadWay,
    dir: Option<tempfile::TempDir>,
    root: Option<ContainedRoot>,
}

impl ReadMeasure {
    /// A row reading the way `way`.
    pub fn new(way: ReadWay) -> Self {
        ReadMeasure {
            way,
            dir: None,
            root: None,
        }
    }
}

/// `n` bytes of a fixed pseudo-random sequence (xorshift), so that no
/// file system can store them as holes or compress them away.
fn content(n: u64) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut v = Vec::with_capacity(n as usize);
    while (v.len() as u64) < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(n as usize);
    v
}

impl Measure for ReadMeasure {
    fn name(&self) -> &str {
        match self.way {
            ReadWay::Std => "std::fs::read 16 MiB",
            ReadWay::Contained => "contained read 16 MiB",
        }
    }

    fn group(&self) -> Group {
        Group::Read
    }

    fn role(&self) -> Role {
        match self.way {
            ReadWay::Std => Role::Floor,
            ReadWay::Contained => Role::Compared,
        }
    }

    fn default_iterations(&self) -> u32 {
        50
    }

    fn setup(&mut self) -> BoxFuture<'_, Result<Setup, BenchError>> {
        Box::pin(async move {
            let dir = tempfile::Builder::new()
                .prefix("corral-bench-read-")
                .tempdir()
                .map_err(|e| BenchError::io("creating a temporary directory", e))?;
            std::fs::write(dir.path().join(FILE), content(READ_BYTES))
                .map_err(|e| BenchError::io("writing the 16 MiB file", e))?;
            if self.way == ReadWay::Contained {
                let root = ContainedRoot::open(dir.path())
                    .map_err(|e| BenchError::io("opening the contained root", e))?;
                self.root = Some(root);
            }
            self.dir = Some(dir);
            Ok(Setup::Ready)
        })
    }

    fn iteration(&mut self) -> BoxFuture<'_, Result<(), BenchError>> {
        Box::pin(async move {
            let bytes = match (self.way, &self.root, &self.dir) {
                (ReadWay::Contained, Some(root), _) => root
                    .read(FILE, READ_BYTES)
                    .map_err(|e| BenchError::io("contained read", e))?,
                (ReadWay::Std, _, Some(dir)) => std::fs::read(dir.path().join(FILE))
                    .map_err(|e| BenchError::io("std::fs::read", e))?,
                _ => return Err(BenchError::io(self.name(), "iteration before setup")),
            };
            if bytes.len() as u64 != READ_BYTES {
                return Err(BenchError::io(
                    self.name(),
                    format!("read {} bytes, wanted {READ_BYTES}", bytes.len()),
                ));
            }
            Ok(())
        })
    }

    fn metric(&mut self, summary: &Summary) -> Option<Metric> {
        (summary.median > 0.0).then(|| {
            let mib = READ_BYTES as f64 / (1024.0 * 1024.0);
            Metric::ThroughputMibPerS(mib / (summary.median / 1e6))
        })
    }

    fn note(&self) -> Option<String> {
        self.root
            .as_ref()
            .map(|r| format!("strategy {}", r.strategy().as_str()))
    }

    fn teardown(&mut self) -> BoxFuture<'_, Result<(), BenchError>> {
        Box::pin(async move {
            self.root = None;
            match self.dir.take() {
                Some(dir) => dir
                    .close()
                    .map_err(|e| BenchError::io("removing the temporary directory", e)),
                None => Ok(()),
            }
        })
    }
}
