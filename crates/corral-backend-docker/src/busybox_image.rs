//! The busybox image, built without any registry: a root file system made
//! of the host's static busybox (Debian's `busybox-static`) with one link
//! per applet, plus the host's own `curl` with the shared libraries it
//! loads (the conformance suite's egress probe), imported into the engine
//! as [`crate::DEFAULT_IMAGE`] (the engine's `docker import`). It is the
//! image of a scratch docker backend: the registry's scratch opener (which
//! the bench and the tests use), the conformance target and the tests
//! connect with [`connect`], which calls [`ensure`].

use std::path::Path;

use bollard::Docker;
use bollard::query_parameters::CreateImageOptions;
use futures_util::TryStreamExt;

/// Where Debian's `busybox-static` installs its binary.
pub const BUSYBOX: &str = "/bin/busybox";

/// The host's curl, copied in with its libraries when present.
pub const CURL: &str = "/usr/bin/curl";

/// Why [`connect`] gave no backend.
#[derive(Debug, thiserror::Error)]
pub enum BusyboxBackendError {
    /// No usable engine here: none answers, its API version is unusable,
    /// or the busybox image cannot be made (the reason says which).
    #[error("{0}")]
    NoEngine(String),
    /// The engine answers and has the busybox image, but the backend could
    /// not connect.
    #[error("the engine answers but connect failed: {0}")]
    Connect(#[source] corral_backend::BackendError),
}

/// A scratch docker backend: the engine of `DOCKER_HOST` (the local socket
/// by default) with the busybox image [`crate::DEFAULT_IMAGE`], imported
/// when missing ([`ensure`]).
pub async fn connect() -> Result<crate::DockerBackend, BusyboxBackendError> {
    let no_engine = |what: &str, e: &dyn std::fmt::Display| {
        BusyboxBackendError::NoEngine(format!("{what}: {e}"))
    };
    let docker =
        Docker::connect_with_defaults().map_err(|e| no_engine("no Docker Engine client", &e))?;
    docker
        .ping()
        .await
        .map_err(|e| no_engine("no Docker Engine answers", &e))?;
    let docker = docker
        .negotiate_version()
        .await
        .map_err(|e| no_engine("the Docker Engine's API version", &e))?;
    ensure(&docker, crate::DEFAULT_IMAGE)
        .await
        .map_err(|e| BusyboxBackendError::NoEngine(e.to_string()))?;
    crate::DockerBackend::connect()
        .await
        .map_err(BusyboxBackendError::Connect)
}

/// Why the busybox image could not be made.
#[derive(Debug, thiserror::Error)]
pub enum BusyboxImageError {
    /// The host has no static busybox to build it from.
    #[error("{BUSYBOX} is missing (install Debian's busybox-static)")]
    NoBusybox,
    /// Reading busybox or listing its applets failed.
    #[error("reading {BUSYBOX}: {0}")]
    Host(#[source] std::io::Error),
    /// The engine refused the import.
    #[error("importing the busybox image: {0}")]
    Engine(#[source] bollard::errors::Error),
}

/// Makes sure `reference` (`repo:tag`) is in the engine, importing the
/// busybox root file system under that name when it is missing.
pub async fn ensure(docker: &Docker, reference: &str) -> Result<(), BusyboxImageError> {
    if docker.inspect_image(reference).await.is_ok() {
        return Ok(());
    }
    // One importer at a time on this host (tests start in parallel); the
    // others find the image made when they get the lock.
    let _lock = tokio::task::spawn_blocking(lock_host)
        .await
        .map_err(|e| BusyboxImageError::Host(std::io::Error::other(e)))??;
    if docker.inspect_image(reference).await.is_ok() {
        return Ok(());
    }
    let rootfs = tokio::task::spawn_blocking(build_rootfs)
        .await
        .map_err(|e| BusyboxImageError::Host(std::io::Error::other(e)))??;
    let (repo, tag) = reference.rsplit_once(':').unwrap_or((reference, "latest"));
    let options = CreateImageOptions {
        from_src: Some("-".into()),
        repo: Some(repo.into()),
        tag: Some(tag.into()),
        ..CreateImageOptions::default()
    };
    docker
        .create_image(Some(options), Some(bollard::body_full(rootfs.into())), None)
        .try_collect::<Vec<_>>()
        .await
        .map_err(BusyboxImageError::Engine)?;
    Ok(())
}

fn dir(builder: &mut tar::Builder<Vec<u8>>, name: &str, mode: u32) -> std::io::Result<()> {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Directory);
    h.set_mode(mode);
    h.set_size(0);
    builder.append_data(&mut h, name, std::io::empty())
}

fn file(
    builder: &mut tar::Builder<Vec<u8>>,
    name: &str,
    mode: u32,
    bytes: &[u8],
) -> std::io::Result<()> {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Regular);
    h.set_mode(mode);
    h.set_size(bytes.len() as u64);
    builder.append_data(&mut h, name, bytes)
}

fn build_rootfs() -> Result<Vec<u8>, BusyboxImageError> {
    if !Path::new(BUSYBOX).is_file() {
        return Err(BusyboxImageError::NoBusybox);
    }
    let binary = std::fs::read(BUSYBOX).map_err(BusyboxImageError::Host)?;
    let listed = std::process::Command::new(BUSYBOX)
        .arg("--list")
        .output()
        .map_err(BusyboxImageError::Host)?;
    let applets = String::from_utf8_lossy(&listed.stdout).to_string();
    let curl = curl_with_libraries().map_err(BusyboxImageError::Host)?;
    let build = || -> std::io::Result<Vec<u8>> {
        let mut b = tar::Builder::new(Vec::new());
        for d in [
            "bin",
            "sbin",
            "usr",
            "usr/bin",
            "usr/sbin",
            "etc",
            "proc",
            "sys",
            "dev",
            "root",
            "workspace",
        ] {
            dir(&mut b, d, 0o755)?;
        }
        dir(&mut b, "tmp", 0o1777)?;
        file(&mut b, "bin/busybox", 0o755, &binary)?;
        file(
            &mut b,
            "etc/passwd",
            0o644,
            b"root:x:0:0:root:/root:/bin/sh\n",
        )?;
        file(&mut b, "etc/group", 0o644, b"root:x:0:\n")?;
        file(&mut b, "etc/hosts", 0o644, b"127.0.0.1 localhost\n")?;
        let mut made: Vec<String> = Vec::new();
        for host_path in &curl {
            let rel = host_path.trim_start_matches('/');
            let mut at = String::new();
            for comp in rel
                .split('/')
                .collect::<Vec<_>>()
                .split_last()
                .map(|(_, d)| d)
                .unwrap_or(&[])
            {
                at = if at.is_empty() {
                    comp.to_string()
                } else {
                    format!("{at}/{comp}")
                };
                if !made.contains(&at) && !["bin", "usr", "usr/bin", "etc"].contains(&at.as_str()) {
                    dir(&mut b, &at, 0o755)?;
                    made.push(at.clone());
                }
            }
            file(&mut b, rel, 0o755, &std::fs::read(host_path)?)?;
        }
        for applet in applets.lines().map(str::trim) {
            if applet.is_empty() || applet == "busybox" || applet.contains('/') {
                continue;
            }
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_mode(0o777);
            h.set_size(0);
            b.append_link(&mut h, format!("bin/{applet}"), "busybox")?;
        }
        b.into_inner()
    };
    build().map_err(BusyboxImageError::Host)
}

/// The host's curl and every shared object `ldd` says it loads (resolved
/// to real files), or nothing when the host has no curl.
fn curl_with_libraries() -> std::io::Result<Vec<String>> {
    if !Path::new(CURL).is_file() {
        return Ok(Vec::new());
    }
    let ldd = std::process::Command::new("ldd").arg(CURL).output()?;
    let mut files = vec![CURL.to_string()];
    for line in String::from_utf8_lossy(&ldd.stdout).lines() {
        let candidate = match line.split_once("=>") {
            Some((_, right)) => right.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        if let Some(p) = candidate.filter(|p| p.starts_with('/')) {
            let real = std::fs::canonicalize(p)?;
            files.push(real.to_string_lossy().to_string());
            if real != Path::new(p) {
                // Keep the name the loader asks for, too.
                files.push(p.to_string());
            }
        }
    }
    files.sort();
    files.dedup();
    Ok(files)
}

/// An exclusive lock on a file of this host's temporary directory, held
/// until the returned descriptor is dropped.
fn lock_host() -> Result<std::fs::File, BusyboxImageError> {
    let path = std::env::temp_dir().join("corral-docker-testimage.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(BusyboxImageError::Host)?;
    rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
        .map_err(|e| BusyboxImageError::Host(e.into()))?;
    Ok(file)
}
