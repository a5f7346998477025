//! `corral rm ID…`.

use crate::args::RmArgs;
use crate::backends;
use crate::error::{CliError, CliResult};

/// Runs `corral rm`: each id must exist; all existing ones are destroyed
/// even when one is unknown, and the first failure is reported.
pub async fn rm(args: RmArgs) -> CliResult {
    let mut first_error: Option<CliError> = None;
    for id in &args.ids {
        let outcome = async {
            let backend = backends::for_id(args.backend.backend.as_deref(), id).await?;
            backend.connect(id).await?;
            backend.destroy(id).await?;
            Ok::<(), CliError>(())
        }
        .await;
        match outcome {
            Ok(()) => println!("{id}"),
            Err(e) => {
                if first_error.is_none() {
                    first_error = Some(e);
                } else {
                    eprintln!("{e}");
                }
            }
        }
    }
    match first_error {
        None => Ok(0),
        Some(e) => Err(e),
    }
}
