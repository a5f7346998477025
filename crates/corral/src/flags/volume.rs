//! `-v/--volume HOST:PATH[:ro]`: a host directory bound into the sandbox.

use std::path::Path;

use corral_backend::{BindError, HostBind, HostBinds};

use crate::error::CliError;

/// One `-v` value: the bind it asks for (checked where it is made, by
/// [`HostBind::new`]: the host directory resolved, so the bind is of what
/// the path names now, not of what a later swap of a link would name),
/// and the text given, to name in a refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Volume {
    /// The value as given.
    pub text: String,
    /// The bind.
    pub bind: HostBind,
}

/// Parses `HOST:PATH`, `HOST:PATH:ro` or `HOST:PATH:rw` into a checked
/// bind; a refusal names the value (clap adds the flag).
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
    let target = corral_backend::sandbox_path("--volume", target).map_err(|e| e.message())?;
    let bind =
        HostBind::new(Path::new(host), target, read_only).map_err(|e| format!("{text:?}: {e}"))?;
    Ok(Volume {
        text: text.to_string(),
        bind,
    })
}

/// The binds of all of `volumes`, checked as a whole (how many, no two
/// onto one path); a refusal names the `-v` value it is about.
pub fn binds(volumes: &[Volume]) -> Result<HostBinds, CliError> {
    HostBinds::new(volumes.iter().map(|v| v.bind.clone()).collect()).map_err(|e| {
        let value = match &e {
            BindError::DuplicateTarget { target } => volumes
                .iter()
                .filter(|v| v.bind.target().to_string() == *target)
                .nth(1)
                .map(|v| v.text.as_str()),
            _ => volumes.last().map(|v| v.text.as_str()),
        };
        CliError::usage(format!("-v/--volume {:?}: {e}", value.unwrap_or_default()))
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
        assert_eq!(v.bind.source(), std::fs::canonicalize(&real).unwrap());
        assert_eq!(v.bind.target().to_string(), "/data");
        assert!(v.bind.read_only());
        let v = parse(&format!("{}:/w/x/../y", real.display())).unwrap();
        assert_eq!(v.bind.target().to_string(), "/w/y");
        assert!(!v.bind.read_only());
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
            assert!(!err.contains('\n'), "{text}: one line: {err}");
        }
    }

    /// The list as a whole: a duplicate target, or a 17th bind, refused
    /// naming the `-v` value.
    #[test]
    fn the_binds_are_bounded_and_their_targets_unique() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        let vols = |targets: &[String]| -> Vec<Volume> {
            targets
                .iter()
                .map(|t| parse(&format!("{d}:{t}")).unwrap())
                .collect()
        };
        let dup = vols(&["/data".into(), "/x".into(), "/data/.".into()]);
        let err = binds(&dup).unwrap_err().to_string();
        assert!(
            err.contains(&format!("{d}:/data/.")) && err.contains("bound twice"),
            "{err}"
        );
        let many: Vec<String> = (0..17).map(|i| format!("/d{i}")).collect();
        let err = binds(&vols(&many)).unwrap_err().to_string();
        assert!(err.contains("17 binds") && err.contains("/d16"), "{err}");
        assert_eq!(binds(&vols(&many[..16])).unwrap().as_slice().len(), 16);
    }
}
