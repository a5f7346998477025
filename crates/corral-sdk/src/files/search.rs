//! `files.search`: lines matching a regular expression under a path.

use corral_backend::{ErrorCode, FileType};
use globset::{Glob, GlobMatcher};
use regex::Regex;

use super::Files;
use crate::Operation;
use crate::error::Result;

/// Default cap on the number of matches one search returns.
pub const DEFAULT_MAX_RESULTS: usize = 1000;
/// Files larger than this are not searched by default.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 8 << 20;
/// A file with a NUL byte in its first this many bytes is binary, and skipped.
const BINARY_SNIFF: usize = 8192;

/// How [`Files::search_with`] searches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchOptions {
    /// Only files whose path relative to the searched root matches this
    /// glob (`*.rs`, `src/**/*.toml`; `*` also crosses `/`).
    pub glob: Option<String>,
    /// Stop after this many matches (default [`DEFAULT_MAX_RESULTS`]).
    pub max_results: usize,
    /// Skip files larger than this (default [`DEFAULT_MAX_FILE_BYTES`]).
    pub max_file_bytes: u64,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            glob: None,
            max_results: DEFAULT_MAX_RESULTS,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
        }
    }
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SearchMatch {
    /// Absolute path of the file.
    pub path: String,
    /// 1-based line number.
    pub line_number: usize,
    /// The line, without its line ending (invalid UTF-8 replaced).
    pub line: String,
}

impl Files<'_> {
    /// Lines matching the regular expression `pattern` in the text files
    /// under `path` (a directory, searched recursively, or one file), in
    /// path order, at most [`DEFAULT_MAX_RESULTS`]. Binary files (a NUL
    /// byte near the start), symlinks and special files are skipped.
    pub async fn search(&self, pattern: &str, path: &str) -> Result<Vec<SearchMatch>> {
        self.search_with(pattern, path, SearchOptions::default())
            .await
    }

    /// [`search`](Self::search) with a glob filter and caps.
    pub async fn search_with(
        &self,
        pattern: &str,
        path: &str,
        options: SearchOptions,
    ) -> Result<Vec<SearchMatch>> {
        const OP: Operation = Operation::FilesSearch;
        let re = Regex::new(pattern).map_err(|e| {
            let first = e.to_string().lines().last().unwrap_or_default().to_string();
            self.sb.fail(
                ErrorCode::InvalidInput,
                OP,
                format!("pattern {pattern:?} is not a valid regular expression: {first}"),
            )
        })?;
        let glob: Option<GlobMatcher> = match &options.glob {
            None => None,
            Some(g) => Some(
                Glob::new(g)
                    .map_err(|e| {
                        self.sb
                            .fail(ErrorCode::InvalidInput, OP, format!("glob {g:?}: {e}"))
                    })?
                    .compile_matcher(),
            ),
        };
        let entries = self.walk(OP, path).await?;
        let mut out = Vec::new();
        let b = self.sb.backend();
        for e in entries {
            if e.file_type != FileType::File || e.size > options.max_file_bytes {
                continue;
            }
            if let Some(g) = &glob {
                let rel = if e.rel.is_empty() {
                    e.path.rsplit('/').next().unwrap_or_default()
                } else {
                    e.rel.as_str()
                };
                if !g.is_match(rel) {
                    continue;
                }
            }
            let at = corral_backend::sandbox_path("path", &e.path)
                .map_err(|err| self.sb.error(OP, err))?;
            let bytes = match b.files().read(self.sb.id(), &at).await {
                Ok(b) => b,
                Err(err) if err.code() == ErrorCode::NotFound => continue,
                Err(err) => return Err(self.sb.error(OP, err)),
            };
            if bytes[..bytes.len().min(BINARY_SNIFF)].contains(&0) {
                continue;
            }
            let text = String::from_utf8_lossy(&bytes);
            for (i, line) in text.lines().enumerate() {
                if re.is_match(line) {
                    out.push(SearchMatch {
                        path: e.path.clone(),
                        line_number: i + 1,
                        line: line.to_string(),
                    });
                    if out.len() >= options.max_results {
                        return Ok(out);
                    }
                }
            }
        }
        Ok(out)
    }
}
