//! The disk image of a sandbox: a sparse file holding an empty ext4 file
//! system of the sandbox's disk limit.
//!
//! `mkfs.ext4` runs once per (size, host process), into a template under
//! `<state>/linux/disk-templates/`; each sandbox's image is a sparse copy
//! of it (a reflink where the host file system has them, else only its
//! data extents with `copy_file_range`) — about 2 ms instead of the 10 to
//! 40 ms of a `mkfs.ext4` run. Templates of processes that are gone are
//! removed whenever a template is made, and by `gc`.

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
/// copied from this process's template of that size in `templates`.
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

/// The template of `size` bytes of this process, made when missing.
fn template(templates: &Path, size: u64) -> io::Result<PathBuf> {
    let pid = std::process::id();
    let path = templates.join(format!("ext4-{size}-{pid}.img"));
    if path.is_file() {
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

/// Removes the templates (and half-made ones) of host processes that are
/// gone. A reused pid only keeps a stale template a while longer.
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

/// The pid in a template's name (`ext4-<size>-<pid>.img[.<hex>.tmp]`).
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
