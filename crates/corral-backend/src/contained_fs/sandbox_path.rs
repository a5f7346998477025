//! A sandbox path, validated and normalized once, where it is made.

use crate::error::Result;
use crate::path;

/// An absolute sandbox path without NUL bytes, normalized lexically (`.`
/// and empty components dropped, `..` popped, never above `/`).
///
/// Containment is not decided here: a symlink can still point anywhere, and
/// the kernel resolves it beneath the root ([`super::ContainedFs`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPath {
    comps: Vec<String>,
    shown: String,
}

impl SandboxPath {
    /// Validates and normalizes `path`; `field` names it in the error
    /// (`invalid_input`).
    ///
    /// # Errors
    ///
    /// `invalid_input` for a relative path or one holding a NUL byte.
    pub fn parse(field: &str, path: &str) -> Result<Self> {
        Ok(Self::from_comps(path::normalize(field, path)?))
    }

    /// The path made of already normalized components.
    pub(crate) fn from_comps(comps: Vec<String>) -> Self {
        let shown = format!("/{}", comps.join("/"));
        SandboxPath { comps, shown }
    }

    /// Its components, none of them empty, `.` or `..`.
    #[must_use]
    pub fn comps(&self) -> &[String] {
        &self.comps
    }

    /// Its normalized text, `/` for the root: what errors show.
    #[must_use]
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Whether it is the root itself.
    #[must_use]
    pub fn is_root(&self) -> bool {
        self.comps.is_empty()
    }

    /// The parent directory and the final name; `None` for the root.
    #[must_use]
    pub fn split_last(&self) -> Option<(SandboxPath, &str)> {
        let (name, parent) = self.comps.split_last()?;
        Some((Self::from_comps(parent.to_vec()), name.as_str()))
    }

    /// The ancestor made of the first `n` components (`/` for 0; the path
    /// itself when `n` is its length or more).
    #[must_use]
    pub fn prefix(&self, n: usize) -> SandboxPath {
        Self::from_comps(self.comps[..n.min(self.comps.len())].to_vec())
    }

    /// The path of entry `name` of this directory.
    #[must_use]
    pub fn join(&self, name: &str) -> String {
        if self.is_root() {
            format!("/{name}")
        } else {
            format!("{}/{name}", self.shown)
        }
    }

    /// The path relative to the root, `.` for the root itself.
    pub(crate) fn relative(&self) -> String {
        if self.is_root() {
            ".".to_owned()
        } else {
            self.comps.join("/")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SandboxPath;
    use crate::ErrorCode;

    #[test]
    fn parsed_once_normalized_and_split() {
        let p = SandboxPath::parse("path", "/a/./b//../c/").unwrap();
        assert_eq!(
            (p.comps(), p.shown()),
            (&["a".to_owned(), "c".to_owned()][..], "/a/c")
        );
        let (parent, name) = p.split_last().unwrap();
        assert_eq!((parent.shown(), name), ("/a", "c"));
        assert_eq!(parent.join("x"), "/a/x");
        assert_eq!(
            (
                p.prefix(0).shown(),
                p.prefix(1).shown(),
                p.prefix(9).shown()
            ),
            ("/", "/a", "/a/c")
        );
        let root = SandboxPath::parse("path", "/../..").unwrap();
        assert!(root.is_root() && root.split_last().is_none());
        assert_eq!(
            (root.shown(), root.relative(), root.join("x")),
            ("/", ".".to_owned(), "/x".to_owned())
        );
        for bad in ["rel", "/a\0b", ""] {
            let e = SandboxPath::parse("path", bad).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidInput, "{bad:?}");
        }
    }
}
