//! A loop device bound to a sandbox's disk image: taken free from
//! `/dev/loop-control`, configured in one call with autoclear (it unbinds
//! itself when the last user — the mount — lets go) and direct I/O.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsFd;
use std::path::PathBuf;

use crate::sys::loop_device;

/// How many times a free device is taken again when another process bound
/// it between `LOOP_CTL_GET_FREE` and `LOOP_CONFIGURE`.
const ATTEMPTS: usize = 8;

/// A loop device bound to an image. Dropping it closes the device; once it
/// is mounted, the mount holds it, and its detach unbinds the device.
#[derive(Debug)]
pub struct LoopDevice {
    /// `/dev/loopN`.
    pub path: PathBuf,
    _device: File,
}

/// Binds `image` to a free loop device.
pub fn attach(image: &File) -> io::Result<LoopDevice> {
    let control = OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/loop-control")?;
    let flags = loop_device::LO_FLAGS_AUTOCLEAR | loop_device::LO_FLAGS_DIRECT_IO;
    let mut last = io::Error::from_raw_os_error(libc::EBUSY);
    for _ in 0..ATTEMPTS {
        let n = loop_device::get_free(control.as_fd())?;
        let path = PathBuf::from(format!("/dev/loop{n}"));
        let device = OpenOptions::new().read(true).write(true).open(&path)?;
        match loop_device::configure(device.as_fd(), image.as_fd(), flags) {
            Ok(()) => {
                return Ok(LoopDevice {
                    path,
                    _device: device,
                });
            }
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}
