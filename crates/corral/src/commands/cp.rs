//! `corral cp SRC DST`: one file between the host and a sandbox.
//!
//! `ID:/path` names a path in sandbox `ID` (the id is letters, digits, `-`
//! and `_`; the path is absolute). `-` is stdin as a source and stdout as a
//! destination. Anything else is a host path; write `./a:/b` to force a host
//! path that looks like a sandbox one. Reads out of a sandbox go through the
//! backend's physically contained read where it has one, so a symlink planted
//! by the workload cannot make corral read a host file. A file larger than
//! [`CHUNK_BYTES`] is streamed out in ranged reads of that size, so `cp`
//! holds one chunk at a time whatever the file's size (a 1 GiB sparse file
//! costs the host no more than a small one).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use corral_backend::contained::ContainmentReason;
use corral_backend::{Backend, ContainedReadFailure, FileType};

use crate::args::CpArgs;
use crate::backends;
use crate::error::{CliError, CliResult};

/// The most `cp` moves in one go.
pub const MAX_COPY_BYTES: u64 = 1 << 30;

/// The bytes one ranged read out of a sandbox asks for: the most `cp`
/// holds of a file being copied out.
pub const CHUNK_BYTES: u64 = 1 << 20;

/// One side of a copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// Standard input or output.
    Stdio,
    /// A host path.
    Host(PathBuf),
    /// A path inside a sandbox.
    Sandbox {
        /// The sandbox id.
        id: String,
        /// The absolute path inside it.
        path: String,
    },
}

/// Parses one endpoint.
pub fn parse_endpoint(s: &str) -> Result<Endpoint, CliError> {
    if s == "-" {
        return Ok(Endpoint::Stdio);
    }
    if s.is_empty() {
        return Err(CliError::usage("cp: an empty path"));
    }
    if let Some((id, path)) = s.split_once(':')
        && !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        if !path.starts_with('/') {
            return Err(CliError::usage(format!(
                "cp: {s:?}: the sandbox path after ':' must be absolute"
            )));
        }
        return Ok(Endpoint::Sandbox {
            id: id.to_string(),
            path: path.to_string(),
        });
    }
    Ok(Endpoint::Host(PathBuf::from(s)))
}

/// Runs `corral cp`.
pub async fn cp(args: CpArgs) -> CliResult {
    let src = parse_endpoint(&args.src)?;
    let dst = parse_endpoint(&args.dst)?;
    let named = args.backend.backend.as_deref();
    match (src, dst) {
        (Endpoint::Sandbox { .. }, Endpoint::Sandbox { .. }) => Err(CliError::usage(
            "cp: copy between two sandboxes through the host (one side must be a host path or -)",
        )),
        (Endpoint::Sandbox { id, path }, dst) => {
            let backend = backends::for_id(named, &id).await?;
            backend.connect(&id).await?;
            let name = file_name(&path);
            copy_out(&*backend, &id, &path, &dst, name.as_deref()).await?;
            Ok(0)
        }
        (src, Endpoint::Sandbox { id, path }) => {
            let HostFile { bytes, mode, name } = read_from_host(&src)?;
            let backend = backends::for_id(named, &id).await?;
            backend.connect(&id).await?;
            let target = sandbox_target(&*backend, &id, &path, name.as_deref()).await?;
            let target = corral_backend::sandbox_path("path", &target)?;
            backend.files().write(&id, &target, &bytes, mode).await?;
            Ok(0)
        }
        (_, _) => Err(CliError::usage(
            "cp: one side must be a sandbox path (ID:/path)",
        )),
    }
}

/// What the first read out of a sandbox found.
enum Head {
    /// The whole file (at most [`CHUNK_BYTES`], or read whole by a backend
    /// without ranged reads).
    Whole(Vec<u8>),
    /// A larger regular file, at least this many bytes, to stream.
    Larger(u64),
}

fn too_large(id: &str, path: &str) -> CliError {
    CliError::failure(
        "quota",
        format!("cp: {id}:{path} is larger than {MAX_COPY_BYTES} bytes"),
    )
}

/// The first read: through the contained read where the backend has one
/// (which also proves the path stays inside the sandbox), one chunk at most.
async fn read_head(backend: &dyn Backend, id: &str, path: &str) -> Result<Head, CliError> {
    let at = corral_backend::sandbox_path("path", path)?;
    let ranged = backend.files().ranged().is_some();
    let Some(ops) = backend.contained_read_ops() else {
        return Ok(if ranged {
            Head::Larger(0)
        } else {
            Head::Whole(backend.files().read(id, &at).await?)
        });
    };
    let max = if ranged { CHUNK_BYTES } else { MAX_COPY_BYTES };
    match ops
        .read_contained(id, &corral_backend::SandboxPath::root(), &at, max)
        .await
    {
        Ok(bytes) => Ok(Head::Whole(bytes)),
        Err(ContainedReadFailure::Refused(r)) => match r.reason {
            ContainmentReason::TooLarge { actual, .. } if ranged => Ok(Head::Larger(actual)),
            _ => Err(CliError::failure(r.code(), format!("cp: {id}:{path}: {r}"))),
        },
        Err(ContainedReadFailure::Backend(b)) => Err(CliError::from(b)),
    }
}

/// Copies sandbox file `id:path` to `dst`, streaming a large one in
/// ranged reads of [`CHUNK_BYTES`].
async fn copy_out(
    backend: &dyn Backend,
    id: &str,
    path: &str,
    dst: &Endpoint,
    name: Option<&str>,
) -> Result<(), CliError> {
    let at_least = match read_head(backend, id, path).await? {
        Head::Whole(bytes) => {
            let mut sink = Sink::open(dst, name)?;
            sink.write(&bytes)?;
            return sink.finish();
        }
        Head::Larger(at_least) => at_least,
    };
    if at_least > MAX_COPY_BYTES {
        return Err(too_large(id, path));
    }
    let Some(ranged) = backend.files().ranged() else {
        return Err(CliError::failure(
            "provider",
            format!("cp: {id}:{path}: the backend lost its ranged read"),
        ));
    };
    let at = corral_backend::sandbox_path("path", path)?;
    let mut sink = Sink::open(dst, name)?;
    let mut offset = 0u64;
    loop {
        let chunk = match ranged.read_range(id, &at, offset, CHUNK_BYTES).await {
            Ok(chunk) => chunk,
            Err(e) => return Err(sink.abandon(CliError::from(e))),
        };
        offset += chunk.len() as u64;
        if offset > MAX_COPY_BYTES {
            return Err(sink.abandon(too_large(id, path)));
        }
        if let Err(e) = sink.write(&chunk) {
            return Err(sink.abandon(e));
        }
        if (chunk.len() as u64) < CHUNK_BYTES {
            return sink.finish();
        }
    }
}

/// Where a copy out of a sandbox goes.
enum Sink {
    /// Standard output.
    Stdout(std::io::StdoutLock<'static>),
    /// A host file, created (or truncated) for the copy.
    File(std::fs::File, PathBuf),
}

impl Sink {
    /// Opens `dst` (a host directory gets the file `name` in it).
    fn open(dst: &Endpoint, name: Option<&str>) -> Result<Sink, CliError> {
        match dst {
            Endpoint::Stdio => Ok(Sink::Stdout(std::io::stdout().lock())),
            Endpoint::Host(p) => {
                let target = match name {
                    Some(n) if p.is_dir() => p.join(n),
                    _ => p.clone(),
                };
                let file =
                    std::fs::File::create(&target).map_err(|e| host_error("cp", &target, &e))?;
                Ok(Sink::File(file, target))
            }
            Endpoint::Sandbox { .. } => Err(CliError::usage("cp: unexpected sandbox destination")),
        }
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), CliError> {
        match self {
            Sink::Stdout(out) => out
                .write_all(bytes)
                .map_err(|e| CliError::failure("io", format!("cp: writing stdout: {e}"))),
            Sink::File(f, p) => f.write_all(bytes).map_err(|e| host_error("cp", p, &e)),
        }
    }

    fn finish(self) -> Result<(), CliError> {
        match self {
            Sink::Stdout(mut out) => out
                .flush()
                .map_err(|e| CliError::failure("io", format!("cp: writing stdout: {e}"))),
            Sink::File(f, p) => f.sync_all().map_err(|e| host_error("cp", &p, &e)),
        }
    }

    /// Gives up on the copy: a host file half written is removed.
    fn abandon(self, why: CliError) -> CliError {
        if let Sink::File(f, p) = self {
            drop(f);
            let _ = std::fs::remove_file(p);
        }
        why
    }
}

fn file_name(path: &str) -> Option<String> {
    Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
}

/// What a host source yields: the bytes, the permission bits, the file name.
struct HostFile {
    bytes: Vec<u8>,
    mode: Option<u32>,
    name: Option<String>,
}

fn read_from_host(src: &Endpoint) -> Result<HostFile, CliError> {
    match src {
        Endpoint::Stdio => {
            let mut buf = Vec::new();
            std::io::stdin()
                .lock()
                .take(MAX_COPY_BYTES + 1)
                .read_to_end(&mut buf)
                .map_err(|e| CliError::failure("io", format!("cp: reading stdin: {e}")))?;
            if buf.len() as u64 > MAX_COPY_BYTES {
                return Err(CliError::failure(
                    "quota",
                    format!("cp: stdin is larger than {MAX_COPY_BYTES} bytes"),
                ));
            }
            Ok(HostFile {
                bytes: buf,
                mode: None,
                name: None,
            })
        }
        Endpoint::Host(p) => {
            use std::os::unix::fs::PermissionsExt;
            let meta = std::fs::metadata(p).map_err(|e| host_error("cp", p, &e))?;
            if meta.is_dir() {
                return Err(CliError::usage(format!(
                    "cp: {} is a directory; cp copies single files",
                    p.display()
                )));
            }
            if meta.len() > MAX_COPY_BYTES {
                return Err(CliError::failure(
                    "quota",
                    format!("cp: {} is larger than {MAX_COPY_BYTES} bytes", p.display()),
                ));
            }
            let bytes = std::fs::read(p).map_err(|e| host_error("cp", p, &e))?;
            Ok(HostFile {
                bytes,
                mode: Some(meta.permissions().mode() & 0o7777),
                name: file_name(&p.to_string_lossy()),
            })
        }
        Endpoint::Sandbox { .. } => Err(CliError::usage("cp: unexpected sandbox source")),
    }
}

async fn sandbox_target(
    backend: &dyn Backend,
    id: &str,
    path: &str,
    name: Option<&str>,
) -> Result<String, CliError> {
    let is_dir = path.ends_with('/')
        || matches!(
            backend.files().stat(id, &corral_backend::sandbox_path("path", path)?).await,
            Ok(st) if st.file_type == FileType::Directory
        );
    if !is_dir {
        return Ok(path.to_string());
    }
    match name {
        Some(n) => Ok(format!("{}/{n}", path.trim_end_matches('/'))),
        None => Err(CliError::usage(format!(
            "cp: {id}:{path} is a directory; name the destination file"
        ))),
    }
}

fn host_error(op: &str, p: &Path, e: &std::io::Error) -> CliError {
    let code = match e.kind() {
        std::io::ErrorKind::NotFound => "not_found",
        _ => "io",
    };
    CliError::failure(code, format!("{op}: {}: {e}", p.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_endpoints() {
        assert_eq!(parse_endpoint("-").unwrap(), Endpoint::Stdio);
        assert_eq!(
            parse_endpoint("loc-ab12:/workspace/x").unwrap(),
            Endpoint::Sandbox {
                id: "loc-ab12".into(),
                path: "/workspace/x".into()
            }
        );
        assert_eq!(
            parse_endpoint("./a:/b").unwrap(),
            Endpoint::Host(PathBuf::from("./a:/b"))
        );
        assert!(parse_endpoint("loc-ab12:relative").is_err());
        assert!(parse_endpoint("").is_err());
    }
}
