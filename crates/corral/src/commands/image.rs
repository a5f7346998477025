//! `corral image import|ls|rm`: the linux backend's image store.
//!
//! The store is the one the linux backend creates sandboxes from: the
//! state directory's `linux/images/` (`$CORRAL_STATE_DIR/linux/images`
//! when that is set).

use std::path::PathBuf;

use clap::Subcommand;
use corral_backend_linux::images::{ImageError, ImageErrorCode, ImageInfo, ImageStore};

use crate::error::{CliError, CliResult, EXIT_FAILURE, EXIT_USAGE};

/// The `corral image` subcommands.
#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum ImageCommand {
    /// Import an OCI image layout (directory or tar) or a `docker save`
    /// archive (tar, optionally gzip'd) and print its name and digest.
    Import {
        /// The layout directory or archive file.
        file: PathBuf,
        /// The name to store it under (default: the name in the archive,
        /// else the first 12 hex digits of its digest). An image already
        /// under this name keeps existing, unnamed.
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
    },
    /// List images: the built-in `host` and the stored ones.
    Ls {
        /// Print JSON (one array) instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Remove a stored image (`NAME`, `NAME@sha256:…` or `sha256:…`) and the
    /// layers no other image uses. Removing one of several names of an
    /// image removes only that name; an image a live sandbox runs on is
    /// refused (`conflict`, naming the sandboxes).
    Rm {
        /// The image reference.
        reference: String,
    },
}

/// Runs `corral image …`.
pub async fn image(cmd: ImageCommand) -> CliResult {
    let joined = tokio::task::spawn_blocking(move || run(cmd)).await;
    joined.map_err(|e| CliError::failure("io", format!("the image task failed: {e}")))?
}

fn run(cmd: ImageCommand) -> CliResult {
    let store = ImageStore::open(store_dir()).map_err(cli_error)?;
    match cmd {
        ImageCommand::Import { file, name } => {
            let info = store.import(&file, name.as_deref()).map_err(cli_error)?;
            println!("{} {}", info.name, info.digest);
        }
        ImageCommand::Ls { json } => {
            let list = store.list().map_err(cli_error)?;
            if json {
                let json = serde_json::to_string_pretty(&list)
                    .map_err(|e| CliError::failure("io", format!("encoding JSON: {e}")))?;
                println!("{json}");
            } else {
                print!("{}", table(&list, corral_backend::now_ms()));
            }
        }
        ImageCommand::Rm { reference } => {
            let info = store.remove(&reference).map_err(cli_error)?;
            println!("{} {}", info.name, info.digest);
        }
    }
    Ok(0)
}

/// The store directory: the linux backend's, under the state directory
/// every backend of the CLI shares (`<state>/linux/images`).
pub fn store_dir() -> PathBuf {
    corral_backend_linux::images::store_dir(&corral_backend_local::LocalBackend::default_state_dir())
}

/// Maps a store error onto the CLI's `[code] message` (bad input exits 2).
pub fn cli_error(e: ImageError) -> CliError {
    let exit = match e.code() {
        ImageErrorCode::InvalidInput => EXIT_USAGE,
        ImageErrorCode::NotFound | ImageErrorCode::Io | ImageErrorCode::Conflict => EXIT_FAILURE,
    };
    CliError::failure(e.code().as_str(), e.to_string()).with_exit(exit)
}

/// The human table: name, short digest, layers, size, age.
pub fn table(list: &[ImageInfo], now_ms: u64) -> String {
    let mut rows = vec![[
        "NAME".to_string(),
        "DIGEST".into(),
        "LAYERS".into(),
        "SIZE".into(),
        "AGE".into(),
    ]];
    for i in list {
        let short: String = i
            .digest
            .trim_start_matches("sha256:")
            .chars()
            .take(12)
            .collect();
        let age = if i.created_at_ms == 0 {
            "-".to_string()
        } else {
            age(now_ms.saturating_sub(i.created_at_ms))
        };
        rows.push([
            i.name.clone(),
            short,
            i.layers.to_string(),
            size(i.size_bytes),
            age,
        ]);
    }
    let mut widths = [0usize; 5];
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r.iter()) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in &rows {
        let line: Vec<String> = r
            .iter()
            .zip(widths.iter())
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes}B");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1}{}", UNITS[unit])
}

fn age(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        3600..=86_399 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_shows_short_digest_size_and_age() {
        let list = vec![
            ImageInfo {
                name: "host".into(),
                digest: format!("sha256:{}", "a".repeat(64)),
                size_bytes: 0,
                layers: 0,
                created_at_ms: 0,
            },
            ImageInfo {
                name: "demo:1".into(),
                digest: format!("sha256:{}", "b".repeat(64)),
                size_bytes: 3 * 1024 * 1024 + 512 * 1024,
                layers: 2,
                created_at_ms: 1_000,
            },
        ];
        let t = table(&list, 121_000);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "NAME    DIGEST        LAYERS  SIZE    AGE");
        assert_eq!(lines[1], "host    aaaaaaaaaaaa  0       0B      -");
        assert_eq!(lines[2], "demo:1  bbbbbbbbbbbb  2       3.5MiB  2m");
    }

    #[test]
    fn bad_input_exits_2_and_others_1() {
        let e = cli_error(ImageError::NotFound {
            reference: "x".into(),
        });
        assert_eq!((e.code.as_str(), e.exit), ("not_found", EXIT_FAILURE));
        let e = cli_error(ImageError::archive("no index.json"));
        assert_eq!((e.code.as_str(), e.exit), ("invalid_input", EXIT_USAGE));
        assert_eq!(
            e.to_string(),
            "corral: error: [invalid_input] invalid image archive: no index.json"
        );
    }
}
