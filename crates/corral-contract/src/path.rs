//! Absolute, normalized paths inside a sandbox.

use crate::InvalidValue;
use crate::bounds::{MAX_PATH_BYTES, MAX_PATH_COMPONENT_BYTES, OUTPUT_PATH, RESERVED_ROOTS};
use crate::macros::string_newtype;

/// The schema pattern of a [`SandboxPath`] (the length limits are separate).
pub const SANDBOX_PATH_PATTERN: &str = "^/$|^(/[^/\\u0000]+)+$";

/// An absolute, normalized path inside a sandbox.
///
/// Rules: starts with `/`; no empty, `.` or `..` component (so no `//`); no
/// trailing `/` except the root `/` itself; no NUL; at most 4,096 bytes, each
/// component at most 255 bytes (corral's bounds, Linux `PATH_MAX` and
/// `NAME_MAX`). Because the form is normalized, two paths name the same
/// location exactly when their strings are equal, and prefix tests are done
/// component-wise ([`SandboxPath::starts_with`]), never on raw strings.
///
/// This is a *textual* guarantee only; physical containment (symlinks) is the
/// provider's job at read time.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SandboxPath(String);

impl SandboxPath {
    fn validate(value: &str) -> Result<(), InvalidValue> {
        let refuse = |rule: String| Err(InvalidValue::string("path", value, rule));
        if !value.starts_with('/') {
            return refuse("is not absolute (must start with /)".into());
        }
        if value.len() > MAX_PATH_BYTES {
            return refuse(format!("exceeds {MAX_PATH_BYTES} bytes"));
        }
        if value.contains('\0') {
            return refuse("contains NUL".into());
        }
        if value == "/" {
            return Ok(());
        }
        if value.ends_with('/') {
            return refuse("has a trailing / (only the root / may end with /)".into());
        }
        for component in value[1..].split('/') {
            match component {
                "" => return refuse("has an empty component (//)".into()),
                "." => return refuse("has a . component (not normalized)".into()),
                ".." => return refuse("has a .. component (not normalized)".into()),
                c if c.len() > MAX_PATH_COMPONENT_BYTES => {
                    return refuse(format!(
                        "has a component longer than {MAX_PATH_COMPONENT_BYTES} bytes"
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Normalizes an absolute path lexically, then validates it strictly:
    /// the one constructor for edges that accept a user's path (a CLI flag,
    /// an SDK argument, a wire field). A relative or empty path and a NUL are
    /// refused; empty (`//`, trailing `/`) and `.` components are dropped;
    /// `..` pops a component and never climbs above `/`. The result must then
    /// pass the [`SandboxPath::new`] rules, including the length limits.
    ///
    /// The refusal names the field `path`; an edge renames it with
    /// [`InvalidValue::in_field`].
    ///
    /// # Errors
    ///
    /// [`InvalidValue`] for an empty or relative path, a NUL, or a path or
    /// component longer than the limits once normalized.
    pub fn normalize_lexically(raw: &str) -> Result<SandboxPath, InvalidValue> {
        let refuse = |rule: &'static str| Err(InvalidValue::string("path", raw, rule));
        if raw.is_empty() {
            return refuse("is empty (must be an absolute path)");
        }
        if !raw.starts_with('/') {
            return refuse("is not absolute (must start with /)");
        }
        if raw.contains('\0') {
            return refuse("contains NUL");
        }
        let mut kept: Vec<&str> = Vec::new();
        for component in raw.split('/') {
            match component {
                "" | "." => {}
                ".." => {
                    kept.pop();
                }
                c => kept.push(c),
            }
        }
        let normalized = format!("/{}", kept.join("/"));
        SandboxPath::validate(&normalized)
            .map_err(|e| InvalidValue::string("path", raw, e.broken_rule().to_owned()))?;
        Ok(Self(normalized))
    }

    /// The root, `/`.
    pub fn root() -> Self {
        Self("/".to_owned())
    }

    /// The fixed output tree, `/mnt/session/outputs` ([`OUTPUT_PATH`]).
    pub fn output_path() -> Self {
        Self(OUTPUT_PATH.to_owned())
    }

    /// The reserved roots no mount may overlap ([`RESERVED_ROOTS`]).
    pub fn reserved_roots() -> Vec<Self> {
        RESERVED_ROOTS
            .iter()
            .map(|r| Self((*r).to_owned()))
            .collect()
    }

    /// Whether this is the root `/`.
    pub fn is_root(&self) -> bool {
        self.0 == "/"
    }

    /// The components, root first excluded: `/a/b` yields `a`, `b`; `/`
    /// yields nothing.
    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.0[1..].split('/').filter(|c| !c.is_empty())
    }

    /// Whether `base` is this path or one of its ancestors, compared
    /// component-wise (`/ab` does not start with `/a`).
    pub fn starts_with(&self, base: &SandboxPath) -> bool {
        base.is_root()
            || self.0 == base.0
            || (self.0.starts_with(&base.0) && self.0.as_bytes()[base.0.len()] == b'/')
    }

    /// The remainder of this path below `base` (`""` when equal), or `None`
    /// when `base` is not an ancestor-or-self.
    pub fn strip_prefix(&self, base: &SandboxPath) -> Option<&str> {
        if !self.starts_with(base) {
            None
        } else if base.is_root() {
            Some(&self.0[1..])
        } else if self.0.len() == base.0.len() {
            Some("")
        } else {
            Some(&self.0[base.0.len() + 1..])
        }
    }

    /// Whether one of the two paths contains the other.
    pub fn overlaps(&self, other: &SandboxPath) -> bool {
        self.starts_with(other) || other.starts_with(self)
    }

    /// The first reserved root this path overlaps, if any.
    pub fn overlapped_reserved_root(&self) -> Option<&'static str> {
        RESERVED_ROOTS
            .iter()
            .copied()
            .find(|root| self.overlaps(&SandboxPath((*root).to_owned())))
    }

    /// Appends a relative, normalized path (`a/b`; no leading or trailing
    /// `/`, no empty, `.` or `..` component). The result is validated again.
    pub fn join(&self, relative: &str) -> Result<SandboxPath, InvalidValue> {
        if relative.starts_with('/') || relative.is_empty() {
            return Err(InvalidValue::string(
                "relative path",
                relative,
                "is empty or absolute (join takes a non-empty relative path)",
            ));
        }
        let joined = if self.is_root() {
            format!("/{relative}")
        } else {
            format!("{}/{relative}", self.0)
        };
        SandboxPath::new(joined)
    }

    /// The parent directory; `None` for the root.
    pub fn parent(&self) -> Option<SandboxPath> {
        if self.is_root() {
            return None;
        }
        let cut = self.0.rfind('/').unwrap_or(0);
        Some(if cut == 0 {
            Self::root()
        } else {
            Self(self.0[..cut].to_owned())
        })
    }

    /// The last component; `None` for the root.
    pub fn file_name(&self) -> Option<&str> {
        self.components().last()
    }
}

string_newtype!(SandboxPath, "SandboxPath", {
    "type": "string",
    "pattern": SANDBOX_PATH_PATTERN,
    "minLength": 1,
    "maxLength": MAX_PATH_BYTES,
    "description": "Absolute, normalized: starts with /, no empty, . or .. component, no trailing / except the root, no NUL.",
});

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> SandboxPath {
        SandboxPath::new(s).unwrap()
    }

    /// Spec, "Paths, mounts, and what the Runner admits first": "You never
    /// have to decide whether a path is legal. The Runner admits it before
    /// you are called" — and "Paths are absolute POSIX paths". Each hostile
    /// input is normalized once, here, or refused with one line naming the
    /// field and the broken rule.
    #[test]
    fn normalize_lexically_admits_or_refuses_hostile_paths() {
        let long_component = format!("/{}", "c".repeat(256));
        let long_path = "/d".repeat(2_049);
        let cases: [(&str, &str, Result<&str, &str>); 12] = [
            ("relative", "etc/passwd", Err("is not absolute")),
            ("empty string", "", Err("is empty")),
            ("NUL", "/a\0b", Err("contains NUL")),
            (".. above root", "/../../etc", Ok("/etc")),
            (".. only", "/..", Ok("/")),
            ("// collapses", "//a//b", Ok("/a/b")),
            ("/./ drops", "/a/./b/.", Ok("/a/b")),
            ("trailing /", "/a/b/", Ok("/a/b")),
            ("mixed", "/a/./b//c/../d/", Ok("/a/b/d")),
            (
                "over-long component",
                &long_component,
                Err("longer than 255"),
            ),
            ("over-long path", &long_path, Err("exceeds 4096")),
            ("root", "/", Ok("/")),
        ];
        for (attack, raw, want) in cases {
            let got = SandboxPath::normalize_lexically(raw);
            match (want, got) {
                (Ok(path), Ok(got)) => assert_eq!(got.as_str(), path, "{attack}"),
                (Err(rule), Err(e)) => {
                    let line = e.in_field("cwd").to_string();
                    assert!(line.starts_with("cwd: "), "{attack}: {line}");
                    assert!(line.contains(rule), "{attack}: {line}");
                    assert!(!line.contains('\0') && !line.contains('\n'), "{attack}");
                }
                (want, got) => panic!("{attack}: wanted {want:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn prefixes_are_component_wise() {
        assert!(p("/a/b").starts_with(&p("/a")));
        assert!(p("/a").starts_with(&p("/a")));
        assert!(p("/a").starts_with(&p("/")));
        assert!(!p("/ab").starts_with(&p("/a")));
        assert!(!p("/a").starts_with(&p("/a/b")));
        assert_eq!(p("/a/b/c").strip_prefix(&p("/a")), Some("b/c"));
        assert_eq!(p("/a").strip_prefix(&p("/a")), Some(""));
        assert_eq!(p("/a").strip_prefix(&p("/")), Some("a"));
        assert_eq!(p("/ab").strip_prefix(&p("/a")), None);
    }

    #[test]
    fn join_parent_file_name() {
        assert_eq!(p("/").join("a/b").unwrap(), p("/a/b"));
        assert_eq!(p("/w").join("x").unwrap(), p("/w/x"));
        assert!(p("/w").join("../x").is_err());
        assert!(p("/w").join("/x").is_err());
        assert!(p("/w").join("x/").is_err());
        assert_eq!(p("/a/b").parent(), Some(p("/a")));
        assert_eq!(p("/a").parent(), Some(p("/")));
        assert_eq!(p("/").parent(), None);
        assert_eq!(p("/a/b").file_name(), Some("b"));
        assert_eq!(p("/").components().count(), 0);
    }

    #[test]
    fn reserved_roots_overlap_both_ways() {
        assert_eq!(p("/tmp/x").overlapped_reserved_root(), Some("/tmp"));
        assert_eq!(
            p("/workspace").overlapped_reserved_root(),
            Some("/workspace/.checkfu")
        );
        assert_eq!(p("/").overlapped_reserved_root(), Some("/dev"));
        assert_eq!(p("/workspace/app").overlapped_reserved_root(), None);
        assert_eq!(p("/tmpfoo").overlapped_reserved_root(), None);
    }
}
