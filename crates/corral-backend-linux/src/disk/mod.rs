//! The sandbox's writable layer: where its `/workspace`, `/tmp` and every
//! other write land (for a layered image, its overlay's upper dir).
//!
//! It is an ext4 file system in a sparse image file of the sandbox's disk
//! limit (`<sandbox>/disk.ext4`, see [`image`]), bound to a loop device
//! (`loopdev`) and mounted `nosuid,nodev` at the sandbox's `fs/`. Its
//! pages are page cache, charged to the sandbox's memory cgroup but
//! reclaimable: a full disk is `ENOSPC`, with the memory limit untouched.
//! (A tmpfs of the same size would hold every byte written in memory, so
//! filling the disk would OOM-kill the sandbox instead.)
//!
//! Where it cannot be made — no `/dev/loop-control`, a refused ioctl, no
//! `mkfs.ext4`, a size ext4 refuses — or would not help (the state
//! directory is itself on a tmpfs, so the image would be memory), the
//! layer is a tmpfs of the disk limit, as before; which one a sandbox got
//! is recorded in its `meta.json` (`disk_layer`, and `disk_fallback` with
//! the reason).
//!
//! Teardown is the mount's detach (`destroy`, or `gc` for a crashed
//! sandbox): the loop device unbinds itself when the mount lets go of it,
//! and the image is removed with the sandbox directory.

pub mod image;
mod loopdev;

use std::fmt;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use rustix::mount::{MountFlags, mount};

use crate::state::State;

pub use crate::record::DiskLayer;

/// A step of making the ext4 layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ext4Step {
    /// Checking where the image would live: on a tmpfs or ramfs the image
    /// itself would be memory, and a tmpfs layer costs less.
    CheckingHost,
    /// Making the image file (running `mkfs.ext4` or copying its template).
    MakingImage,
    /// Binding a loop device to it.
    AttachingLoop,
    /// Mounting the loop device.
    Mounting,
}

impl fmt::Display for Ext4Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Ext4Step::CheckingHost => "placing the disk image",
            Ext4Step::MakingImage => "making the disk image",
            Ext4Step::AttachingLoop => "attaching a loop device",
            Ext4Step::Mounting => "mounting the disk image",
        })
    }
}

/// Why a sandbox's writable layer is not ext4: the step that failed and
/// its error.
#[derive(Debug)]
pub struct Ext4Unavailable {
    /// The step.
    pub step: Ext4Step,
    /// Its error.
    pub error: io::Error,
}

impl fmt::Display for Ext4Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.step, self.error)
    }
}

/// The writable layer a sandbox got.
#[derive(Debug)]
pub struct Mounted {
    /// Its file system.
    pub layer: DiskLayer,
    /// Why it is not ext4, when it is not.
    pub fallback: Option<Ext4Unavailable>,
}

/// The image file of the sandbox in `dir`.
fn image_path(dir: &Path) -> PathBuf {
    dir.join("disk.ext4")
}

/// Where the disk templates of `state` live.
pub fn templates_dir(state: &State) -> PathBuf {
    state.dir().join("disk-templates")
}

/// Mounts the writable layer of the sandbox in `dir` (`size_bytes` of
/// disk) at its mount point `fs`: ext4 when it can be made (its image in
/// `dir`, made from the empty images in `templates`), else a tmpfs. An
/// error only when neither could be mounted.
pub fn mount_writable_layer(
    dir: &Path,
    fs: &Path,
    templates: &Path,
    size_bytes: u64,
) -> io::Result<Mounted> {
    let mounted = match mount_ext4(dir, fs, templates, size_bytes) {
        Ok(()) => Mounted {
            layer: DiskLayer::Ext4,
            fallback: None,
        },
        Err(why) => {
            let _ = std::fs::remove_file(image_path(dir));
            crate::rootfs::mount_sandbox_tmpfs(fs, size_bytes)?;
            Mounted {
                layer: DiskLayer::Tmpfs,
                fallback: Some(why),
            }
        }
    };
    prepare_layer_root(fs)?;
    Ok(mounted)
}

/// Makes the image of the sandbox in `dir`, binds it to a loop device and
/// mounts it at `fs`.
fn mount_ext4(
    dir: &Path,
    fs: &Path,
    templates: &Path,
    size_bytes: u64,
) -> Result<(), Ext4Unavailable> {
    let fail = |step| move |error| Ext4Unavailable { step, error };
    if on_memory(dir).map_err(fail(Ext4Step::CheckingHost))? {
        return Err(fail(Ext4Step::CheckingHost)(io::Error::other(
            "the state directory is on a memory file system, where the image would be memory too",
        )));
    }
    let file = image::make(templates, &image_path(dir), size_bytes)
        .map_err(fail(Ext4Step::MakingImage))?;
    let device = loopdev::attach(&file).map_err(fail(Ext4Step::AttachingLoop))?;
    // `noinit_itable`: the kernel does not zero the inode tables mkfs left
    // (writing megabytes per sandbox in the background for nothing).
    mount(
        &device.path,
        fs,
        "ext4",
        MountFlags::NOSUID | MountFlags::NODEV,
        Some(c"noinit_itable"),
    )
    .map_err(|e| fail(Ext4Step::Mounting)(e.into()))?;
    // The mount now holds the device: closing ours arms the autoclear.
    drop(device);
    Ok(())
}

/// Whether `dir` is on a file system whose files are memory (tmpfs,
/// ramfs).
fn on_memory(dir: &Path) -> io::Result<bool> {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    let fs = rustix::fs::statfs(dir)?;
    // `f_type`'s integer type differs between architectures.
    #[allow(clippy::unnecessary_cast)]
    let kind = fs.f_type as i64;
    Ok(kind == TMPFS_MAGIC || kind == RAMFS_MAGIC)
}

/// The root directory of a fresh writable layer at `fs`, as the sandbox
/// root's parent needs it: mode 0755, and none of ext4's `lost+found`
/// (the layer never outlives its sandbox, so it is never checked).
pub fn prepare_layer_root(fs: &Path) -> io::Result<()> {
    match std::fs::remove_dir(fs.join("lost+found")) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    std::fs::set_permissions(fs, std::fs::Permissions::from_mode(0o755))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_file_systems_are_told_from_others() {
        assert!(!on_memory(Path::new("/proc")).unwrap(), "/proc is procfs");
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let shm_is_tmpfs = mountinfo.lines().any(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            f.get(4) == Some(&"/dev/shm") && l.contains(" - tmpfs ")
        });
        if shm_is_tmpfs {
            assert!(on_memory(Path::new("/dev/shm")).unwrap());
        }
    }
}
