//! `corral image pull|import|ls|inspect|rm`: the linux backend's image store.
//!
//! The store is the one the linux backend creates sandboxes from: the
//! state directory's `linux/images/` (`$CORRAL_STATE_DIR/linux/images`
//! when that is set). `pull` fetches from an OCI registry ([`pull`]).

mod credentials;
mod manifest;
mod progress;
pub mod pull;
pub mod pull_error;
pub mod target;

use std::path::PathBuf;

use clap::Subcommand;
use corral_backend_linux::images::{ImageError, ImageErrorCode, ImageInfo, ImageStore};

use crate::error::{CliError, CliResult, EXIT_FAILURE, EXIT_USAGE};
use pull_error::PullError;

/// The `corral image` subcommands.
#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum ImageCommand {
    /// Pull an image from an OCI registry (the distribution API) and print
    /// its name and digest. Credentials come from Docker's
    /// `~/.docker/config.json` (`auths.<registry>.auth`), else the pull is
    /// anonymous. Layers already stored are not fetched again.
    Pull {
        /// `[REGISTRY/]REPOSITORY[:TAG][@DIGEST]`, e.g.
        /// `127.0.0.1:5000/busybox:latest` or `busybox` (Docker Hub).
        /// HTTPS, except plain HTTP to a loopback registry.
        reference: String,
        /// The name to store it under (default: the reference, `:latest`
        /// added when it names no tag).
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
        /// Allow plain HTTP to a registry that is not on loopback.
        #[arg(long)]
        insecure: bool,
    },
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
        #[arg(long, conflicts_with = "quiet")]
        json: bool,
        /// Print only digests, one per image.
        #[arg(short, long)]
        quiet: bool,
    },
    /// Print a stored image as JSON: its digest, names, layers, size and
    /// what its config sets (env, cmd, entrypoint, user, workdir).
    Inspect {
        /// The image reference (`NAME`, `NAME@sha256:…`, `sha256:…` or `host`).
        reference: String,
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

async fn pull_command(
    store: ImageStore,
    reference: &str,
    name: Option<String>,
    insecure: bool,
) -> CliResult {
    let pulled = pull::pull(store, reference, name, insecure)
        .await
        .map_err(pull_cli_error)?;
    println!("{} {}", pulled.info.name, pulled.info.digest);
    eprintln!(
        "corral: pulled {reference}: {} layer(s) fetched, {} already stored",
        pulled.fetched, pulled.reused
    );
    Ok(0)
}

fn print_json<T: serde::Serialize>(value: &T) -> Result<(), CliError> {
    let json = serde_json::to_string_pretty(value)
        .map_err(|e| CliError::failure("io", format!("encoding JSON: {e}")))?;
    println!("{json}");
    Ok(())
}

fn run(cmd: ImageCommand) -> CliResult {
    let store = ImageStore::open(store_dir()).map_err(cli_error)?;
    match cmd {
        // The store's work is blocking; the registry's is not.
        ImageCommand::Pull {
            reference,
            name,
            insecure,
        } => {
            return tokio::runtime::Handle::current()
                .block_on(pull_command(store, &reference, name, insecure));
        }
        ImageCommand::Import { file, name } => {
            let progress = progress::Progress::new();
            let info = store
                .import_watched(&file, name.as_deref(), &progress)
                .map_err(cli_error)?;
            println!("{} {}", info.name, info.digest);
        }
        ImageCommand::Ls { json, quiet } => {
            let list = store.list().map_err(cli_error)?;
            if json {
                print_json(&list)?;
            } else if quiet {
                let mut seen = std::collections::BTreeSet::new();
                for i in list.iter().filter(|i| seen.insert(i.digest.clone())) {
                    println!("{}", i.digest);
                }
            } else {
                print!("{}", table(&list, corral_backend::now_ms()));
            }
        }
        ImageCommand::Inspect { reference } => {
            print_json(&store.inspect(&reference).map_err(cli_error)?)?;
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

/// Maps a pull's error onto the CLI's `[code] message` (bad input exits 2).
pub fn pull_cli_error(e: PullError) -> CliError {
    let code = e.code();
    let exit = match code {
        corral_backend::ErrorCode::InvalidInput => EXIT_USAGE,
        _ => EXIT_FAILURE,
    };
    CliError::failure(code.as_str(), e.to_string()).with_exit(exit)
}

/// The human table: name, short digest, layers, size, age.
pub fn table(list: &[ImageInfo], now_ms: u64) -> String {
    let rows = list.iter().map(|i| {
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
        vec![
            i.name.clone(),
            short,
            i.layers.to_string(),
            size(i.size_bytes),
            age,
        ]
    });
    super::table::render(&["NAME", "DIGEST", "LAYERS", "SIZE", "AGE"], rows)
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
