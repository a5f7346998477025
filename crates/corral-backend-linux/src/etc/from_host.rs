//! What the curated `/etc` takes from the host's: the short list of files
//! and directories programs read to run (the dynamic loader's cache, CA
//! certificates, time zone, protocol and service names, …). Nothing else
//! of the host's `/etc` is ever visible: not `shadow`, `gshadow`, `ssh`,
//! `ssl/private`, `sudoers`, or any service's keys (`docker/key.json`).
//!
//! A host entry that is a symlink is recreated as the same symlink: it
//! resolves inside the sandbox (mostly into the read-only `/usr`), and at
//! worst dangles. A file is copied (up to [`MAX_COPY`] bytes); a directory
//! is bound read-only, never copied.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::{EtcError, EtcRoot};

/// What a listed entry is expected to be on the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A small file, copied.
    File,
    /// A directory, bound read-only.
    Dir,
}

/// One entry taken from the host's `/etc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FromHost {
    /// The path under `/etc`, e.g. `ssl/certs`.
    pub path: &'static str,
    /// File or directory.
    pub kind: Kind,
}

const fn file(path: &'static str) -> FromHost {
    FromHost {
        path,
        kind: Kind::File,
    }
}

const fn dir(path: &'static str) -> FromHost {
    FromHost {
        path,
        kind: Kind::Dir,
    }
}

/// Every entry taken from the host's `/etc`; those the host lacks are
/// left out.
pub const FROM_HOST: &[FromHost] = &[
    // The dynamic loader.
    file("ld.so.cache"),
    file("ld.so.conf"),
    dir("ld.so.conf.d"),
    file("ld.so.preload"),
    dir("alternatives"),
    // CA certificates (Debian, Fedora, Alpine layouts), never the keys.
    dir("ssl/certs"),
    file("ssl/openssl.cnf"),
    dir("pki/tls/certs"),
    dir("pki/ca-trust/extracted"),
    dir("ca-certificates"),
    // What the system is, and its time zone.
    file("os-release"),
    file("lsb-release"),
    file("debian_version"),
    file("alpine-release"),
    file("redhat-release"),
    file("localtime"),
    file("timezone"),
    // Name databases that carry no secret.
    file("protocols"),
    file("services"),
    file("rpc"),
    file("networks"),
    file("ethertypes"),
    file("mime.types"),
    file("host.conf"),
    file("gai.conf"),
    // Shells and their system-wide start-up files.
    file("shells"),
    file("profile"),
    dir("profile.d"),
    file("bash.bashrc"),
    file("inputrc"),
    dir("terminfo"),
];

/// Largest file copied; a larger one is left out.
pub const MAX_COPY: u64 = 8 << 20;

/// Copies or links every [`FROM_HOST`] entry that `host_etc` has into the
/// sandbox's `/etc`, and makes the mount points of its directories.
/// Returns the binds still to make: (host directory, sandbox path `etc/…`).
pub(super) fn write(at: &EtcRoot<'_>, host_etc: &Path) -> Result<Vec<(PathBuf, String)>, EtcError> {
    let mut binds = Vec::new();
    for entry in FROM_HOST {
        let source = host_etc.join(entry.path);
        let rel = format!("etc/{}", entry.path);
        let Ok(meta) = std::fs::symlink_metadata(&source) else {
            continue;
        };
        if let Some((parent, _)) = rel.rsplit_once('/') {
            at.dir(parent)?;
        }
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&source).map_err(EtcRoot::err(&rel))?;
            at.symlink(&rel, &target)?;
            continue;
        }
        match entry.kind {
            Kind::File if meta.is_file() => {
                if let Some(bytes) = read_small(&source).map_err(EtcRoot::err(&rel))? {
                    at.file(&rel, &bytes)?;
                }
            }
            Kind::Dir if meta.is_dir() => {
                at.dir(&rel)?;
                binds.push((source, rel));
            }
            // Not what it is expected to be: left out.
            _ => {}
        }
    }
    Ok(binds)
}

/// The content of host file `path` when it has at most [`MAX_COPY`] bytes.
fn read_small(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_COPY + 1)
        .read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= MAX_COPY).then_some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_holds_no_secret_and_stays_under_etc() {
        const NEVER: &[&str] = &[
            "shadow",
            "gshadow",
            "passwd",
            "group",
            "sudoers",
            "ssh",
            "ssl",
            "private",
            "docker",
            "pki/tls",
            "pki",
            "security",
            "hosts",
            "resolv.conf",
            "hostname",
        ];
        for e in FROM_HOST {
            assert!(!e.path.starts_with('/'), "{e:?}");
            assert!(
                e.path
                    .split('/')
                    .all(|c| !c.is_empty() && c != ".." && c != ".")
            );
            assert!(!NEVER.contains(&e.path), "{e:?}");
            assert!(
                !e.path.contains("private") && !e.path.contains("key"),
                "{e:?}"
            );
        }
    }

    #[test]
    fn copies_files_links_symlinks_and_lists_directories_to_bind() {
        let host = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        let h = host.path();
        std::fs::write(h.join("services"), "http 80/tcp\n").unwrap();
        std::fs::write(h.join("shadow"), "root:$6$secret\n").unwrap();
        std::os::unix::fs::symlink("/usr/share/zoneinfo/UTC", h.join("localtime")).unwrap();
        std::fs::create_dir_all(h.join("ssl/certs")).unwrap();
        std::fs::create_dir_all(h.join("ssl/private")).unwrap();
        // Listed as a file, but a directory here: left out.
        std::fs::create_dir(h.join("protocols")).unwrap();
        let at = EtcRoot { root: root.path() };
        at.dir("etc").unwrap();
        let binds = write(&at, h).unwrap();
        let etc = root.path().join("etc");
        assert_eq!(
            std::fs::read_to_string(etc.join("services")).unwrap(),
            "http 80/tcp\n"
        );
        assert_eq!(
            std::fs::read_link(etc.join("localtime")).unwrap(),
            Path::new("/usr/share/zoneinfo/UTC")
        );
        assert_eq!(binds, vec![(h.join("ssl/certs"), "etc/ssl/certs".into())]);
        assert!(etc.join("ssl/certs").is_dir());
        for absent in ["shadow", "ssl/private", "protocols"] {
            assert!(
                std::fs::symlink_metadata(etc.join(absent)).is_err(),
                "{absent}"
            );
        }
    }
}
