//! Host directories bound into a sandbox ([`CreateRequest::binds`]): each
//! one checked where it is made ([`HostBind::new`], and again when decoded),
//! the list bounded and free of duplicate targets ([`HostBinds::new`]).
//!
//! The host side must be an existing directory, named by an absolute path,
//! resolved once (every symlink followed, so the bind is of what the path
//! names now), and never `/` nor the kernel's `/proc`, `/sys` or `/dev`.
//! The sandbox side must not be `/` nor lie under the curated system
//! ([`SYSTEM_TARGETS`]). Whether a backend can bind at all is
//! [`crate::Capabilities::binds`].
//!
//! [`CreateRequest::binds`]: crate::CreateRequest::binds

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::path::SandboxPath;

/// The most binds one sandbox may ask for.
pub const MAX_BINDS: usize = 16;

/// Host directories that are never bound (nor anything under them): the
/// kernel's views of processes, devices and itself.
pub const SYSTEM_SOURCES: [&str; 3] = ["/proc", "/sys", "/dev"];

/// Sandbox paths no bind may cover (nor anything under them): the kernel's
/// views and the curated system every sandbox starts with.
pub const SYSTEM_TARGETS: [&str; 10] = [
    "/proc", "/sys", "/dev", "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32",
];

/// Why a bind, or a list of them, is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindError {
    /// A host path that is not absolute.
    #[error("the host path {host:?} is not absolute")]
    SourceRelative {
        /// The host path as given.
        host: String,
    },
    /// A host path that cannot be resolved (missing, unreadable).
    #[error("the host path {host:?} cannot be resolved: {detail}")]
    SourceUnresolved {
        /// The host path as given.
        host: String,
        /// What the system said.
        detail: String,
    },
    /// A host path that names something other than a directory.
    #[error("the host path {host:?} is not a directory")]
    SourceNotDirectory {
        /// The host path as given.
        host: String,
    },
    /// A host path that resolves to `/` or under `/proc`, `/sys`, `/dev`.
    #[error("the host path {host:?} resolves to {resolved:?}, which is never bound")]
    SourceSystem {
        /// The host path as given.
        host: String,
        /// What it resolves to.
        resolved: String,
    },
    /// A sandbox path that is `/` or under the curated system.
    #[error("the sandbox path {target} is / or under {}, which no bind may cover", SYSTEM_TARGETS.join(", "))]
    TargetSystem {
        /// The sandbox path.
        target: String,
    },
    /// Two binds onto one sandbox path.
    #[error("the sandbox path {target} is bound twice")]
    DuplicateTarget {
        /// The sandbox path.
        target: String,
    },
    /// More binds than [`MAX_BINDS`].
    #[error("{count} binds asked for, at most {max} allowed")]
    TooMany {
        /// How many were asked for.
        count: usize,
        /// The most allowed.
        max: usize,
    },
}

/// One host directory bound into a sandbox: valid from the moment it
/// exists (its fields are private; decoding checks it again).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "HostBindFields", into = "HostBindFields")]
pub struct HostBind {
    source: PathBuf,
    target: SandboxPath,
    read_only: bool,
}

/// [`HostBind`] as it travels.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct HostBindFields {
    source: PathBuf,
    target: String,
    read_only: bool,
}

impl HostBind {
    /// Binds host directory `source` at `target`, read-only when
    /// `read_only`: `source` resolved (every symlink followed) and checked.
    ///
    /// # Errors
    ///
    /// A [`BindError`] naming what is wrong.
    pub fn new(source: &Path, target: SandboxPath, read_only: bool) -> Result<Self, BindError> {
        let shown = source.display().to_string();
        if !source.is_absolute() {
            return Err(BindError::SourceRelative { host: shown });
        }
        let resolved = std::fs::canonicalize(source).map_err(|e| BindError::SourceUnresolved {
            host: shown.clone(),
            detail: e.to_string(),
        })?;
        if resolved == Path::new("/") || SYSTEM_SOURCES.iter().any(|s| resolved.starts_with(s)) {
            return Err(BindError::SourceSystem {
                host: shown,
                resolved: resolved.display().to_string(),
            });
        }
        if !resolved.is_dir() {
            return Err(BindError::SourceNotDirectory { host: shown });
        }
        let system = SYSTEM_TARGETS
            .iter()
            .any(|s| SandboxPath::normalize_lexically(s).is_ok_and(|s| target.starts_with(&s)));
        if target.is_root() || system {
            return Err(BindError::TargetSystem {
                target: target.to_string(),
            });
        }
        Ok(HostBind {
            source: resolved,
            target,
            read_only,
        })
    }

    /// The host directory, absolute and resolved.
    #[must_use]
    pub fn source(&self) -> &Path {
        &self.source
    }

    /// Where it shows in the sandbox.
    #[must_use]
    pub const fn target(&self) -> &SandboxPath {
        &self.target
    }

    /// Whether it is bound read-only.
    #[must_use]
    pub const fn read_only(&self) -> bool {
        self.read_only
    }
}

impl TryFrom<HostBindFields> for HostBind {
    type Error = String;

    fn try_from(f: HostBindFields) -> Result<Self, String> {
        let target = SandboxPath::normalize_lexically(&f.target)
            .map_err(|e| format!("bind target {:?}: {}", f.target, e.broken_rule()))?;
        HostBind::new(&f.source, target, f.read_only).map_err(|e| e.to_string())
    }
}

impl From<HostBind> for HostBindFields {
    fn from(b: HostBind) -> Self {
        HostBindFields {
            source: b.source,
            target: b.target.to_string(),
            read_only: b.read_only,
        }
    }
}

/// The binds of one sandbox: at most [`MAX_BINDS`], no two onto one path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<HostBind>", into = "Vec<HostBind>")]
pub struct HostBinds(Vec<HostBind>);

impl HostBinds {
    /// The list `binds`, checked as a whole.
    ///
    /// # Errors
    ///
    /// [`BindError::TooMany`] past [`MAX_BINDS`];
    /// [`BindError::DuplicateTarget`] for a second bind onto one path.
    pub fn new(binds: Vec<HostBind>) -> Result<Self, BindError> {
        if binds.len() > MAX_BINDS {
            return Err(BindError::TooMany {
                count: binds.len(),
                max: MAX_BINDS,
            });
        }
        for (i, b) in binds.iter().enumerate() {
            if binds[..i].iter().any(|o| o.target == b.target) {
                return Err(BindError::DuplicateTarget {
                    target: b.target.to_string(),
                });
            }
        }
        Ok(HostBinds(binds))
    }

    /// Whether none is asked for.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The binds, in the order asked.
    #[must_use]
    pub fn as_slice(&self) -> &[HostBind] {
        &self.0
    }
}

impl TryFrom<Vec<HostBind>> for HostBinds {
    type Error = BindError;

    fn try_from(binds: Vec<HostBind>) -> Result<Self, BindError> {
        HostBinds::new(binds)
    }
}

impl From<HostBinds> for Vec<HostBind> {
    fn from(b: HostBinds) -> Self {
        b.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &str) -> SandboxPath {
        SandboxPath::normalize_lexically(p).unwrap()
    }

    /// Hostile or mistaken binds, one row per attack: the refusal each gets.
    #[test]
    fn hostile_binds_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_path_buf();
        let file = d.join("file");
        std::fs::write(&file, "x").unwrap();
        std::os::unix::fs::symlink("/proc/self", d.join("to-proc")).unwrap();
        type Want = fn(&BindError) -> bool;
        let rows: [(&str, PathBuf, &str, Want); 14] = [
            ("the host's /", "/".into(), "/data", |e| {
                matches!(e, BindError::SourceSystem { .. })
            }),
            ("/proc/self", "/proc/self".into(), "/data", |e| {
                matches!(e, BindError::SourceSystem { .. })
            }),
            ("/dev", "/dev".into(), "/data", |e| {
                matches!(e, BindError::SourceSystem { .. })
            }),
            ("/sys", "/sys".into(), "/data", |e| {
                matches!(e, BindError::SourceSystem { .. })
            }),
            ("a link into /proc", d.join("to-proc"), "/data", |e| {
                matches!(e, BindError::SourceSystem { .. })
            }),
            ("a file", file.clone(), "/data", |e| {
                matches!(e, BindError::SourceNotDirectory { .. })
            }),
            ("a relative path", "data".into(), "/data", |e| {
                matches!(e, BindError::SourceRelative { .. })
            }),
            ("a missing path", d.join("missing"), "/data", |e| {
                matches!(e, BindError::SourceUnresolved { .. })
            }),
            ("target /", d.clone(), "/", |e| {
                matches!(e, BindError::TargetSystem { .. })
            }),
            ("target /etc/x", d.clone(), "/etc/x", |e| {
                matches!(e, BindError::TargetSystem { .. })
            }),
            ("target /proc/x", d.clone(), "/proc/x", |e| {
                matches!(e, BindError::TargetSystem { .. })
            }),
            ("target /usr", d.clone(), "/usr", |e| {
                matches!(e, BindError::TargetSystem { .. })
            }),
            ("target /lib64/a", d.clone(), "/lib64/a", |e| {
                matches!(e, BindError::TargetSystem { .. })
            }),
            ("target /dev/../etc", d.clone(), "/dev/../etc", |e| {
                matches!(e, BindError::TargetSystem { .. })
            }),
        ];
        for (what, source, target, want) in rows {
            let err = HostBind::new(&source, path(target), false).expect_err(what);
            assert!(want(&err), "{what}: {err:?}");
        }
        // Lexically near the system, but not under it.
        assert!(HostBind::new(&d, path("/etcetera"), true).is_ok());
        assert!(HostBind::new(&d, path("/usr2/x"), true).is_ok());
    }

    #[test]
    fn the_list_is_bounded_and_targets_are_unique() {
        let dir = tempfile::tempdir().unwrap();
        let one = |t: &str| HostBind::new(dir.path(), path(t), false).unwrap();
        let many: Vec<_> = (0..=MAX_BINDS).map(|i| one(&format!("/d{i}"))).collect();
        assert_eq!(
            HostBinds::new(many.clone()),
            Err(BindError::TooMany {
                count: 17,
                max: MAX_BINDS
            })
        );
        assert!(HostBinds::new(many[..MAX_BINDS].to_vec()).is_ok());
        assert_eq!(
            HostBinds::new(vec![one("/data"), one("/x"), one("/data/")]),
            Err(BindError::DuplicateTarget {
                target: "/data".into()
            })
        );
    }

    #[test]
    fn decoding_checks_again() {
        let dir = tempfile::tempdir().unwrap();
        let b = HostBind::new(dir.path(), path("/data"), true).unwrap();
        let json = serde_json::to_value(HostBinds::new(vec![b.clone()]).unwrap()).unwrap();
        let back: HostBinds = serde_json::from_value(json).unwrap();
        assert_eq!(back.as_slice(), &[b]);
        let hostile =
            serde_json::json!([{"source": "/proc/1/root", "target": "/data", "read_only": false}]);
        assert!(serde_json::from_value::<HostBinds>(hostile).is_err());
        let hostile =
            serde_json::json!([{"source": dir.path(), "target": "/etc", "read_only": false}]);
        assert!(serde_json::from_value::<HostBinds>(hostile).is_err());
    }
}
