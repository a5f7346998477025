//! A sandbox path split into its components, as the contained file
//! system walks it.

use crate::path::SandboxPath;

/// A [`SandboxPath`] (validated and normalized once, where it was made)
/// split into its components, with its text kept for errors.
///
/// Containment is not decided here: a symlink can still point anywhere, and
/// the kernel resolves it beneath the root ([`super::ContainedFs`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitPath {
    comps: Vec<String>,
    shown: String,
}

impl From<&SandboxPath> for SplitPath {
    fn from(path: &SandboxPath) -> Self {
        Self::from_comps(path.components().map(str::to_owned).collect())
    }
}

impl SplitPath {
    /// [`crate::path::sandbox_path`], split: for tests that start from text.
    #[cfg(test)]
    pub(crate) fn parse(field: &str, raw: &str) -> crate::error::Result<Self> {
        crate::path::sandbox_path(field, raw).map(|p| Self::from(&p))
    }

    /// The path made of already normalized components.
    pub(crate) fn from_comps(comps: Vec<String>) -> Self {
        let shown = format!("/{}", comps.join("/"));
        SplitPath { comps, shown }
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
    pub fn split_last(&self) -> Option<(SplitPath, &str)> {
        let (name, parent) = self.comps.split_last()?;
        Some((Self::from_comps(parent.to_vec()), name.as_str()))
    }

    /// The ancestor made of the first `n` components (`/` for 0; the path
    /// itself when `n` is its length or more).
    #[must_use]
    pub fn prefix(&self, n: usize) -> SplitPath {
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
    use super::SplitPath;
    use crate::path::sandbox_path;

    fn split(raw: &str) -> SplitPath {
        SplitPath::from(&sandbox_path("path", raw).unwrap())
    }

    #[test]
    fn split_from_a_normalized_path() {
        let p = split("/a/./b//../c/");
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
        let root = split("/../..");
        assert!(root.is_root() && root.split_last().is_none());
        assert_eq!(
            (root.shown(), root.relative(), root.join("x")),
            ("/", ".".to_owned(), "/x".to_owned())
        );
    }
}
