//! `files.edit`: replace an exact piece of text in a file.

use corral_backend::{ErrorCode, FileType};

use super::Files;
use crate::Operation;
use crate::error::Result;

/// How [`Files::edit_with`] replaces.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EditOptions {
    /// Replace every occurrence; without it `old` must occur exactly once.
    pub replace_all: bool,
}

/// What an edit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EditOutcome {
    /// How many occurrences were replaced.
    pub replacements: usize,
}

/// The largest file [`Files::edit_with`] reads: 16 MiB, the contract's
/// bound on any file content. A larger one is refused after a `stat`,
/// before a byte of it is read.
pub const MAX_EDIT_BYTES: u64 = 16 * 1024 * 1024;

/// At most this many characters of `old` are quoted in an error.
const EXCERPT_CHARS: usize = 60;

fn excerpt(text: &str) -> String {
    let mut short: String = text.chars().take(EXCERPT_CHARS).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    format!("{short:?}")
}

impl Files<'_> {
    /// Replaces the one occurrence of `old` in the text file at `path` with
    /// `new`. Zero occurrences fail with `not_found`, several with
    /// `conflict` (use [`edit_with`](Self::edit_with) and `replace_all`).
    /// The file keeps its permission bits.
    pub async fn edit(&self, path: &str, old: &str, new: &str) -> Result<EditOutcome> {
        self.edit_with(path, old, new, EditOptions::default()).await
    }

    /// [`edit`](Self::edit) with options.
    pub async fn edit_with(
        &self,
        path: &str,
        old: &str,
        new: &str,
        options: EditOptions,
    ) -> Result<EditOutcome> {
        const OP: Operation = Operation::FilesEdit;
        let fail = |code, msg: String| self.sb.fail(code, OP, msg);
        if old.is_empty() {
            return Err(fail(
                ErrorCode::InvalidInput,
                format!("{path}: the text to replace is empty"),
            ));
        }
        let b = self.sb.backend();
        let st = b
            .files()
            .stat(
                self.sb.id(),
                &corral_backend::sandbox_path("path", path).map_err(|e| self.sb.error(OP, e))?,
            )
            .await
            .map_err(|e| self.sb.error(OP, e))?;
        if st.file_type != FileType::File {
            return Err(fail(
                ErrorCode::InvalidInput,
                format!("{path}: not a regular file"),
            ));
        }
        let too_large = || {
            fail(
                ErrorCode::InvalidInput,
                format!("{path}: larger than the {MAX_EDIT_BYTES} bytes files.edit edits"),
            )
        };
        if st.size > MAX_EDIT_BYTES {
            return Err(too_large());
        }
        // Bounded even if the file grows after the stat, where ranged reads exist.
        let bytes = match b.files().ranged() {
            Some(ranged) => ranged
                .read_range(
                    self.sb.id(),
                    &corral_backend::sandbox_path("path", path)
                        .map_err(|e| self.sb.error(OP, e))?,
                    0,
                    MAX_EDIT_BYTES + 1,
                )
                .await
                .map_err(|e| self.sb.error(OP, e))?,
            None => b
                .files()
                .read(
                    self.sb.id(),
                    &corral_backend::sandbox_path("path", path)
                        .map_err(|e| self.sb.error(OP, e))?,
                )
                .await
                .map_err(|e| self.sb.error(OP, e))?,
        };
        if bytes.len() as u64 > MAX_EDIT_BYTES {
            return Err(too_large());
        }
        let Ok(text) = String::from_utf8(bytes) else {
            return Err(fail(
                ErrorCode::InvalidInput,
                format!("{path}: not UTF-8 text"),
            ));
        };
        let count = text.matches(old).count();
        match count {
            0 => {
                return Err(fail(
                    ErrorCode::NotFound,
                    format!("{path}: no occurrence of {}", excerpt(old)),
                ));
            }
            1 => {}
            n if !options.replace_all => {
                return Err(fail(
                    ErrorCode::Conflict,
                    format!(
                        "{path}: {n} occurrences of {}; give more context to make it unique, or replace_all",
                        excerpt(old)
                    ),
                ));
            }
            _ => {}
        }
        let edited = text.replace(old, new);
        self.write_op(OP, path, edited.as_bytes(), st.mode & 0o7777)
            .await?;
        Ok(EditOutcome {
            replacements: count,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::excerpt;

    #[test]
    fn excerpts_are_short_and_quoted() {
        assert_eq!(excerpt("a\"b"), "\"a\\\"b\"");
        let long = "x".repeat(100);
        assert_eq!(excerpt(&long).chars().count(), 60 + 3);
    }
}
