//! `corral ls`: a table, or JSON for machines.

use corral_backend::SandboxInfo;

use crate::args::LsArgs;
use crate::backends;
use crate::error::{CliError, CliResult};
use crate::kv;

/// Runs `corral ls`.
pub async fn ls(args: LsArgs) -> CliResult {
    let labels = kv::parse_labels(&args.labels)?;
    let backend = backends::open(args.backend.backend.as_deref()).await?;
    let mut list = backend.list(&labels).await?;
    list.sort_by(|a, b| a.created_at_ms.cmp(&b.created_at_ms).then(a.id.cmp(&b.id)));
    if args.json {
        let json = serde_json::to_string_pretty(&list)
            .map_err(|e| CliError::failure("io", format!("encoding JSON: {e}")))?;
        println!("{json}");
    } else {
        print!("{}", table(&list));
    }
    Ok(0)
}

/// The human table: id, backend, status, age, key, labels.
pub fn table(list: &[SandboxInfo]) -> String {
    let now = corral_backend::now_ms();
    let mut rows = vec![[
        "ID".to_string(),
        "BACKEND".into(),
        "STATUS".into(),
        "AGE".into(),
        "KEY".into(),
        "LABELS".into(),
    ]];
    for s in list {
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
        rows.push([
            s.id.clone(),
            s.backend.clone(),
            status,
            age(now.saturating_sub(s.created_at_ms)),
            s.key.as_deref().unwrap_or("-").to_string(),
            labels,
        ]);
    }
    let mut widths = [0usize; 6];
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

fn age(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        3600..=86_399 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}
