//! `corral ls`: every backend's sandboxes on this host (linux, local,
//! docker: the registry's backends whose sandboxes outlive a process), or
//! one backend's with `--backend`; a table, JSON for machines, or ids
//! alone with `-q`. A backend that cannot open here is skipped with one
//! line on stderr saying why.

use std::sync::Arc;

use corral_backend::{Backend, Labels, SandboxInfo};
use corral_registry::BackendKind;

use crate::args::LsArgs;
use crate::backends;
use crate::error::{CliError, CliResult};
use crate::kv;

/// Runs `corral ls`.
pub async fn ls(args: LsArgs) -> CliResult {
    let labels = kv::parse_labels(&args.labels)?;
    let mut list = match args.backend.backend.as_deref() {
        Some(name) => backends::open(Some(name)).await?.list(&labels).await?,
        None => every_backend(&labels).await?,
    };
    list.sort_by(|a, b| a.created_at_ms.cmp(&b.created_at_ms).then(a.id.cmp(&b.id)));
    if args.quiet {
        for s in &list {
            println!("{}", s.id);
        }
    } else if args.json {
        let json = serde_json::to_string_pretty(&list)
            .map_err(|e| CliError::failure("io", format!("encoding JSON: {e}")))?;
        println!("{json}");
    } else {
        print!("{}", table(&list));
    }
    Ok(0)
}

/// The sandboxes of every backend that opens here and whose sandboxes
/// outlive the process that made them; the others are named on stderr.
async fn every_backend(labels: &Labels) -> Result<Vec<SandboxInfo>, CliError> {
    let mut all = Vec::new();
    for kind in BackendKind::ALL {
        if !kind.outlives_its_process() {
            continue;
        }
        let backend: Arc<dyn Backend> = match kind.open_to_sweep().await {
            Ok(opened) => opened.into_dyn(),
            Err(e) => {
                eprintln!(
                    "corral: notice: not listing {kind} sandboxes: {}",
                    one_line(&e.to_string())
                );
                continue;
            }
        };
        all.extend(backend.list(labels).await?);
    }
    Ok(all)
}

fn one_line(text: &str) -> String {
    text.replace(['\r', '\n'], " ")
}

/// The human table: id, backend, status, age, key, labels.
pub fn table(list: &[SandboxInfo]) -> String {
    let now = corral_backend::now_ms();
    let rows = list.iter().map(|s| {
        let labels = s
            .labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",");
        let status = serde_json::to_value(s.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        vec![
            s.id.clone(),
            s.backend.clone(),
            status,
            age(now.saturating_sub(s.created_at_ms)),
            s.key.as_deref().unwrap_or("-").to_string(),
            labels,
        ]
    });
    super::table::render(&["ID", "BACKEND", "STATUS", "AGE", "KEY", "LABELS"], rows)
}

/// `ms` as the largest whole unit: `42s`, `3m`, `5h`, `2d`.
pub fn age(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        3600..=86_399 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}
