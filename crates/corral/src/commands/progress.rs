//! Progress of long work on a terminal: one line on stderr, rewritten in
//! place with the time spent (`corral: taking a snapshot of ID… 3s`), and
//! erased when the work ends. When stderr is not a terminal nothing is
//! printed: a pipe or a log gets only the result.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

/// How often the line is rewritten.
const TICK: Duration = Duration::from_millis(500);

/// A progress line while it lives; [`Progress::done`] erases it.
#[derive(Debug)]
pub struct Progress {
    ticker: Option<JoinHandle<()>>,
}

impl Progress {
    /// Shows `what` with the time spent on a terminal stderr; nothing
    /// otherwise.
    pub fn start(what: String) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress { ticker: None };
        }
        let began = Instant::now();
        show(&what, began);
        let ticker = tokio::spawn(async move {
            loop {
                tokio::time::sleep(TICK).await;
                show(&what, began);
            }
        });
        Progress {
            ticker: Some(ticker),
        }
    }

    /// Stops the line and erases it.
    pub fn done(self) {
        if let Some(ticker) = self.ticker {
            ticker.abort();
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
            let _ = std::io::stderr().flush();
        }
    }
}

/// Rewrites the line: `what` and the whole seconds since `began`.
fn show(what: &str, began: Instant) {
    let secs = began.elapsed().as_secs();
    let _ = write!(std::io::stderr(), "\r\x1b[2Kcorral: {what}… {secs}s");
    let _ = std::io::stderr().flush();
}
