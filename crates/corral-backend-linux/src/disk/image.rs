//! The disk image of a sandbox: a sparse file holding an empty ext4 file
//! system of the sandbox's disk limit.
//!
//! `mkfs.ext4` runs once per size and state directory, into a template
//! `<state>/linux/disk-templates/ext4-<size>.img` that every host process
//! shares; each sandbox's image is a sparse copy of it (a reflink where
//! the host file system has them, else only its data extents with
//! `copy_file_range`) — about 2 ms instead of the 10 to 40 ms of a
//! `mkfs.ext4` run. Shared, the template serves a short-lived process too:
//! a `corral run` makes one sandbox, and with a template per process each
//! one ran `mkfs.ext4` on its path.
//!
//! A template is made aside (`ext4-<size>-<pid>.img.<hex>.tmp`, by the
//! process `<pid>`) and renamed into place, so a reader sees no template
//! or a whole one; two processes that make it at once each rename a whole
//! one. It is never mounted or written after the rename: every copy starts
//! from the same empty file system. One whose length is not its size (cut
//! short by hand, say) is made again. Half-made templates of processes
//! that are gone, and the per-process templates of earlier versions, are
//! removed whenever a template is made, and by `gc`; the shared one of
//! each size stays, as small as an empty file system's metadata.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rustix::fs::SeekFrom;

/// Where `mkfs.ext4` is looked for, in order.
const MKFS: &[&str] = &[
    "/usr/sbin/mkfs.ext4",
    "/sbin/mkfs.ext4",
    "/usr/bin/mkfs.ext4",
];

/// Flags that make `mkfs.ext4` fast and the file system fit a throwaway
/// layer: no journal (it dies with the sandbox), inode tables left for
/// the kernel (the mount's `noinit_itable` keeps it from zeroing them), no
/// discard of the fresh file, and no blocks reserved for root (the
/// sandbox's root is its only user).
const MKFS_FLAGS: &[&str] = &[
    "-q",
    "-F",
    "-O",
    "^has_journal",
    "-E",
    "lazy_itable_init=1,lazy_journal_init=1,nodiscard",
    "-m",
    "0",
];

/// `mkfs.ext4`, or `None` when it is not installed.
pub fn mkfs_path() -> Option<&'static Path> {
    MKFS.iter().map(Path::new).find(|p| p.is_file())
}

/// Makes `image` (a new file): an empty ext4 file system of `size` bytes,
/// copied from the template of that size in `templates`.
pub fn make(templates: &Path, image: &Path, size: u64) -> io::Result<File> {
    let template = template(templates, size)?;
    let src = File::open(&template)?;
    let dst = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(image)?;
    copy_sparse(&src, &dst, size)?;
    Ok(dst)
}

/// The shared template of `size` bytes, made when missing (or not of
/// that length).
fn template(templates: &Path, size: u64) -> io::Result<PathBuf> {
    let pid = std::process::id();
    let path = templates.join(format!("ext4-{size}.img"));
    if std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() == size) {
        return Ok(path);
    }
    std::fs::create_dir_all(templates)?;
    sweep(templates);
    // Made aside and renamed into place: a concurrent create sees either
    // no template or a complete one.
    let aside = templates.join(format!(
        "ext4-{size}-{pid}.img.{}.tmp",
        crate::state::random_hex()?
    ));
    let made = mkfs(&aside, size).and_then(|()| std::fs::rename(&aside, &path));
    if made.is_err() {
        let _ = std::fs::remove_file(&aside);
    }
    made.map(|()| path)
}

/// Runs `mkfs.ext4` on a new sparse file `path` of `size` bytes.
fn mkfs(path: &Path, size: u64) -> io::Result<()> {
    let mkfs = mkfs_path()
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "mkfs.ext4 is not installed"))?;
    File::create_new(path)?.set_len(size)?;
    let out = Command::new(mkfs)
        .args(MKFS_FLAGS)
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    Err(io::Error::other(format!(
        "mkfs.ext4 {}: {}",
        out.status,
        stderr.lines().next().unwrap_or("").trim()
    )))
}

/// Copies `src` into the empty `dst` without filling its holes: a reflink
/// where the file system has them, else each data extent with
/// `copy_file_range`; `dst` ends `size` bytes long.
fn copy_sparse(src: &File, dst: &File, size: u64) -> io::Result<()> {
    if rustix::fs::ioctl_ficlone(dst, src).is_ok() {
        return Ok(());
    }
    let mut at = 0u64;
    while at < size {
        let start = match rustix::fs::seek(src, SeekFrom::Data(at)) {
            Ok(s) => s,
            // No data past `at`.
            Err(rustix::io::Errno::NXIO) => break,
            Err(e) => return Err(e.into()),
        };
        let end = rustix::fs::seek(src, SeekFrom::Hole(start))?.min(size);
        let (mut from, mut to) = (start, start);
        while from < end {
            let len = usize::try_from(end - from).unwrap_or(usize::MAX);
            let n = rustix::fs::copy_file_range(src, Some(&mut from), dst, Some(&mut to), len)?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the disk template shrank while copied",
                ));
            }
        }
        at = end;
    }
    dst.set_len(size)
}

/// Removes the half-made templates (and the per-process templates of
/// earlier versions) of host processes that are gone; the shared template
/// of each size (no pid in its name) stays. A reused pid only keeps a
/// stale file a while longer.
pub fn sweep(templates: &Path) {
    let Ok(entries) = std::fs::read_dir(templates) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(template_pid) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The pid in a half-made or per-process template's name
/// (`ext4-<size>-<pid>.img[.<hex>.tmp]`); `None` for the shared template
/// (`ext4-<size>.img`) and any other name.
fn template_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("ext4-")?;
    let (_size, rest) = rest.split_once('-')?;
    let (pid, _) = rest.split_once(".img")?;
    pid.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_names_give_their_pid() {
        assert_eq!(template_pid("ext4-1073741824-42.img"), Some(42));
        assert_eq!(template_pid("ext4-16-7.img.00ff.tmp"), Some(7));
        assert_eq!(template_pid("ext4-16.img"), None);
        assert_eq!(template_pid("other-1-2.img"), None);
    }

    /// The template is one file per size, with no pid in its name, so a
    /// later process finds it; one of the wrong length is made again, and
    /// a sweep keeps it while it removes a gone process's half-made one.
    #[test]
    fn the_template_is_shared_remade_when_cut_short_and_kept_by_sweep() {
        if mkfs_path().is_none() {
            eprintln!("skipped: mkfs.ext4 is not installed");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let size = 8 << 20;
        let path = template(dir.path(), size).unwrap();
        assert_eq!(path, dir.path().join(format!("ext4-{size}.img")));
        assert_eq!(template(dir.path(), size).unwrap(), path);
        std::fs::write(&path, b"cut short").unwrap();
        assert_eq!(template(dir.path(), size).unwrap(), path);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), size);
        // No pid is this large (pid_max is at most 2^22).
        let half_made = dir
            .path()
            .join(format!("ext4-{size}-999999999.img.00ff.tmp"));
        std::fs::write(&half_made, b"").unwrap();
        sweep(dir.path());
        assert!(!half_made.exists(), "a gone process's half-made template");
        assert!(path.is_file(), "the shared template");
    }

    #[test]
    fn a_sparse_copy_keeps_data_and_holes() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let src = File::create_new(&a).unwrap();
        src.set_len(8 << 20).unwrap();
        use std::os::unix::fs::FileExt;
        src.write_all_at(b"head", 0).unwrap();
        src.write_all_at(b"tail", (6 << 20) + 3).unwrap();
        let dst = File::create_new(&b).unwrap();
        copy_sparse(&File::open(&a).unwrap(), &dst, 8 << 20).unwrap();
        let bytes = std::fs::read(&b).unwrap();
        assert_eq!(bytes.len(), 8 << 20);
        assert_eq!(&bytes[..4], b"head");
        assert_eq!(&bytes[(6 << 20) + 3..(6 << 20) + 7], b"tail");
        assert!(bytes[4..(6 << 20) + 3].iter().all(|&x| x == 0));
    }
}
