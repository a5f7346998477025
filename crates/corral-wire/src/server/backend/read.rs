//! The `read` route: a whole-file read, bounded like the contract's reads
//! (`readFile.maximum_bytes` ≤ 16 MiB). A larger file is refused in one
//! line naming the bound and the ranged read that serves it, so a served
//! backend never holds a huge file, nor the server its encoding.

use corral_backend::{Backend, BackendError, FileType, RequestError, SandboxPath};
use corral_contract::bounds::MAX_READ_FILE_BYTES;

/// The largest file the `read` route returns whole.
pub(crate) const MAX_WHOLE_READ_BYTES: u64 = MAX_READ_FILE_BYTES;

fn too_large(path: &str) -> BackendError {
    RequestError::WholeReadTooLarge {
        path: path.to_string(),
        limit: MAX_WHOLE_READ_BYTES,
    }
    .into()
}

/// `path` of sandbox `id`, whole, when it is at most
/// [`MAX_WHOLE_READ_BYTES`]. With a ranged read the bound holds even for a
/// file growing meanwhile; without one, it is checked by `stat` first.
pub(crate) async fn bounded(
    b: &dyn Backend,
    id: &str,
    path: &SandboxPath,
) -> Result<Vec<u8>, BackendError> {
    let files = b.files();
    let stat = match files.stat(id, path).await {
        Ok(stat) => stat,
        // The read names what is wrong (missing, not a sandbox…) as it always has.
        Err(_) => return files.read(id, path).await,
    };
    if stat.file_type == FileType::Directory {
        return files.read(id, path).await;
    }
    if stat.file_type == FileType::File && stat.size > MAX_WHOLE_READ_BYTES {
        return Err(too_large(path.as_str()));
    }
    match files.ranged() {
        Some(ranged) => {
            let bytes = ranged
                .read_range(id, path, 0, MAX_WHOLE_READ_BYTES + 1)
                .await?;
            if bytes.len() as u64 > MAX_WHOLE_READ_BYTES {
                return Err(too_large(path.as_str()));
            }
            Ok(bytes)
        }
        None => files.read(id, path).await,
    }
}
