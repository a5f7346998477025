//! Small helpers for backends that keep their state in a host directory
//! (records, claims, markers): random ids and atomic writes.

use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// 16 random hex digits (8 bytes from `/dev/urandom`), for ids and
/// temporary names.
pub fn random_hex() -> std::io::Result<String> {
    let mut bytes = [0u8; 8];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(hex::encode(bytes))
}

/// Writes `bytes` to `path` atomically: a temporary file beside it (mode
/// 0600), flushed to disk, then renamed over `path`. A reader sees the old
/// content or the new, never a torn one; on failure the temporary file is
/// removed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_via_temporary(path, bytes, true)
}

/// [`write_atomic`] without the flush to disk, for records of runtime state
/// (processes, mounts) that a reboot makes meaningless anyway: still never
/// torn for a reader, nor when the writer is killed mid-write.
pub fn write_atomic_unsynced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_via_temporary(path, bytes, false)
}

fn write_via_temporary(path: &Path, bytes: &[u8], sync: bool) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(".tmp-{}", random_hex()?));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        if sync {
            f.sync_all()?;
        }
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_whole_files_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("record.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "no temporary file is left");
        let a = random_hex().unwrap();
        assert_eq!(a.len(), 16);
        assert_ne!(a, random_hex().unwrap());
    }
}
