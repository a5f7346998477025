//! `-v/--volume HOST:PATH[:ro]`: a host directory bound into the sandbox.

use std::path::PathBuf;

use corral_backend::SandboxPath;

/// One bind, checked where it is made: the host directory resolved (every
/// symlink followed, so the bind is of what the path names now, not of
/// what a later swap of a link would name), the sandbox path normalized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Volume {
    /// The host directory, absolute and resolved.
    pub host: PathBuf,
    /// Where it appears in the sandbox.
    pub target: SandboxPath,
    /// Bound read-only (`:ro`).
    pub read_only: bool,
}

/// Parses `HOST:PATH`, `HOST:PATH:ro` or `HOST:PATH:rw`. The host path must
/// be absolute and name an existing directory; a relative one, a missing
/// one, or a file is refused naming it (clap adds the flag).
pub fn parse(text: &str) -> Result<Volume, String> {
    let (rest, read_only) = if let Some(r) = text.strip_suffix(":ro") {
        (r, true)
    } else if let Some(r) = text.strip_suffix(":rw") {
        (r, false)
    } else {
        (text, false)
    };
    let Some((host, target)) = rest.split_once(':') else {
        return Err(format!("{text:?}: expected HOST:PATH[:ro]"));
    };
    if !host.starts_with('/') {
        return Err(format!(
            "{text:?}: the host path {host:?} is not absolute (write $PWD/{host} for one \
             under this directory)"
        ));
    }
    let resolved = std::fs::canonicalize(host)
        .map_err(|e| format!("{text:?}: the host path {host:?}: {e}"))?;
    if !resolved.is_dir() {
        return Err(format!(
            "{text:?}: the host path {host:?} is not a directory"
        ));
    }
    let target = corral_backend::sandbox_path("--volume", target).map_err(|e| e.message())?;
    Ok(Volume {
        host: resolved,
        target,
        read_only,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_binds_and_its_links_are_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join("link")).unwrap();
        let v = parse(&format!("{}:/data:ro", dir.path().join("link").display())).unwrap();
        assert_eq!(v.host, std::fs::canonicalize(&real).unwrap());
        assert_eq!(v.target.to_string(), "/data");
        assert!(v.read_only);
        let v = parse(&format!("{}:/w/x/../y", real.display())).unwrap();
        assert_eq!(v.target.to_string(), "/w/y");
        assert!(!v.read_only);
    }

    /// Hostile or mistaken binds: each refused, naming what is wrong.
    #[test]
    fn bad_volumes_are_refused_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "x").unwrap();
        let d = dir.path().display();
        for (text, needle) in [
            ("data".to_string(), "expected HOST:PATH"),
            ("data:/data".into(), "is not absolute"),
            ("../etc:/data".into(), "is not absolute"),
            (format!("{d}/missing:/data"), "missing"),
            (format!("{}:/data", file.display()), "is not a directory"),
            (format!("{d}:relative"), "absolute"),
            (format!("{d}:"), "--volume"),
        ] {
            let err = parse(&text).expect_err(&text);
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}
