//! Progress bars (indicatif) while a pull or an import runs on a terminal:
//! one per layer a pull fetches, and one for the archive an import reads
//! with a line per layer it stores; nothing at all when stderr is not one.

use std::io::IsTerminal;

use corral_backend_linux::images::ImportProgress;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The bars of one pull or import.
pub struct Progress {
    multi: MultiProgress,
    /// The bar of the archive an import reads, once it said its size.
    archive: std::sync::OnceLock<ProgressBar>,
}

fn short(digest: &str) -> String {
    digest
        .trim_start_matches("sha256:")
        .chars()
        .take(12)
        .collect()
}

impl Progress {
    /// Bars on stderr when it is a terminal, hidden otherwise.
    pub fn new() -> Self {
        let target = if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        Progress {
            multi: MultiProgress::with_draw_target(target),
            archive: std::sync::OnceLock::new(),
        }
    }

    /// A bar for fetching `size` bytes of the blob `digest`.
    pub fn fetching(&self, digest: &str, size: u64) -> ProgressBar {
        self.bar(short(digest), size)
    }

    /// A bar of `size` bytes labelled `label`.
    fn bar(&self, label: String, size: u64) -> ProgressBar {
        let bar = self.multi.add(ProgressBar::new(size));
        let style = ProgressStyle::with_template(
            "{msg:12} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_message(label);
        bar
    }

    /// Says that the blob `digest` is already stored.
    pub fn stored(&self, digest: &str) {
        let _ = self
            .multi
            .println(format!("{}  already stored", short(digest)));
    }
}

impl ImportProgress for Progress {
    fn reading(&self, total: u64) {
        let _ = self.archive.set(self.bar("archive".into(), total));
    }

    fn read(&self, bytes: u64) {
        if let Some(bar) = self.archive.get() {
            bar.inc(bytes);
        }
    }

    fn layer(&self, index: usize, count: usize, diff_id: &str) {
        if index == 1
            && let Some(bar) = self.archive.get()
        {
            bar.finish();
        }
        let _ = self
            .multi
            .println(format!("{}  layer {index}/{count}", short(diff_id)));
    }
}
