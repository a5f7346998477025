//! `corral cp SRC DST`: one file between the host and a sandbox.
//!
//! `ID:/path` names a path in sandbox `ID` (the id is letters, digits, `-`
//! and `_`; the path is absolute). `-` is stdin as a source and stdout as a
//! destination. Anything else is a host path; write `./a:/b` to force a host
//! path that looks like a sandbox one. Reads out of a sandbox go through the
//! backend's physically contained read where it has one, so a symlink planted
//! by the workload cannot make corral read a host file.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use corral_backend::{Backend, ContainedReadFailure, FileType};

use crate::args::CpArgs;
use crate::backends;
use crate::error::{CliError, CliResult};

/// The most `cp` moves in one go.
pub const MAX_COPY_BYTES: u64 = 1 << 30;

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
            let bytes = read_from_sandbox(&*backend, &id, &path).await?;
            let name = file_name(&path);
            write_to_host(&dst, name.as_deref(), &bytes)?;
            Ok(0)
        }
        (src, Endpoint::Sandbox { id, path }) => {
            let HostFile { bytes, mode, name } = read_from_host(&src)?;
            let backend = backends::for_id(named, &id).await?;
            backend.connect(&id).await?;
            let target = sandbox_target(&*backend, &id, &path, name.as_deref()).await?;
            backend.files().write(&id, &target, &bytes, mode).await?;
            Ok(0)
        }
        (_, _) => Err(CliError::usage(
            "cp: one side must be a sandbox path (ID:/path)",
        )),
    }
}

async fn read_from_sandbox(
    backend: &dyn Backend,
    id: &str,
    path: &str,
) -> Result<Vec<u8>, CliError> {
    match backend.contained_read_ops() {
        Some(ops) => ops
            .read_contained(id, "/", path, MAX_COPY_BYTES)
            .await
            .map_err(|e| match e {
                ContainedReadFailure::Backend(b) => CliError::from(b),
                ContainedReadFailure::Refused(r) => {
                    CliError::failure(r.code(), format!("cp: {id}:{path}: {r}"))
                }
            }),
        None => Ok(backend.files().read(id, path).await?),
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
            backend.files().stat(id, path).await,
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

fn write_to_host(dst: &Endpoint, name: Option<&str>, bytes: &[u8]) -> Result<(), CliError> {
    match dst {
        Endpoint::Stdio => {
            let mut out = std::io::stdout().lock();
            out.write_all(bytes)
                .and_then(|()| out.flush())
                .map_err(|e| CliError::failure("io", format!("cp: writing stdout: {e}")))
        }
        Endpoint::Host(p) => {
            let target = if p.is_dir() {
                match name {
                    Some(n) => p.join(n),
                    None => p.clone(),
                }
            } else {
                p.clone()
            };
            std::fs::write(&target, bytes).map_err(|e| host_error("cp", &target, &e))
        }
        Endpoint::Sandbox { .. } => Err(CliError::usage("cp: unexpected sandbox destination")),
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
