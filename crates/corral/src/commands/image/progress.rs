//! A progress bar per layer (indicatif) while a pull runs on a terminal;
//! nothing at all when stderr is not one.

use std::io::IsTerminal;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The bars of one pull.
pub struct Progress {
    multi: MultiProgress,
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
        }
    }

    /// A bar for fetching `size` bytes of the blob `digest`.
    pub fn fetching(&self, digest: &str, size: u64) -> ProgressBar {
        let bar = self.multi.add(ProgressBar::new(size));
        let style = ProgressStyle::with_template(
            "{msg:12} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_message(short(digest));
        bar
    }

    /// Says that the blob `digest` is already stored.
    pub fn stored(&self, digest: &str) {
        let _ = self
            .multi
            .println(format!("{}  already stored", short(digest)));
    }
}
