//! The two loop-device calls neither rustix nor libc wraps:
//! `LOOP_CTL_GET_FREE` on `/dev/loop-control` and `LOOP_CONFIGURE` on a
//! loop device (`<linux/loop.h>`).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// `LOOP_CTL_GET_FREE`: the number of a free loop device (allocating one).
const LOOP_CTL_GET_FREE: libc::Ioctl = 0x4C82;
/// `LOOP_CONFIGURE`: binds a backing file and sets the flags in one call.
const LOOP_CONFIGURE: libc::Ioctl = 0x4C0A;

/// `LO_FLAGS_AUTOCLEAR`: the device unbinds itself at its last close.
pub const LO_FLAGS_AUTOCLEAR: u32 = 4;
/// `LO_FLAGS_DIRECT_IO`: the backing file is read and written with direct
/// I/O, so its pages are not cached a second time.
pub const LO_FLAGS_DIRECT_IO: u32 = 16;

/// `struct loop_info64`.
#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

/// `struct loop_config`.
#[repr(C)]
struct LoopConfig {
    fd: u32,
    block_size: u32,
    info: LoopInfo64,
    reserved: [u64; 8],
}

/// The number of a free loop device, from an open `/dev/loop-control`.
pub fn get_free(control: BorrowedFd<'_>) -> io::Result<u32> {
    // SAFETY: LOOP_CTL_GET_FREE takes no argument and only returns a
    // number; `control` is an open descriptor for the duration of the call.
    let n = unsafe { libc::ioctl(control.as_raw_fd(), LOOP_CTL_GET_FREE) };
    u32::try_from(n).map_err(|_| io::Error::last_os_error())
}

/// Binds `backing` to the loop device open at `device`, with `flags`
/// (`LO_FLAGS_*`). `EBUSY` when another process bound it first.
pub fn configure(device: BorrowedFd<'_>, backing: BorrowedFd<'_>, flags: u32) -> io::Result<()> {
    let fd = u32::try_from(backing.as_raw_fd()).map_err(io::Error::other)?;
    let config = LoopConfig {
        fd,
        block_size: 0,
        info: LoopInfo64 {
            lo_device: 0,
            lo_inode: 0,
            lo_rdevice: 0,
            lo_offset: 0,
            lo_sizelimit: 0,
            lo_number: 0,
            lo_encrypt_type: 0,
            lo_encrypt_key_size: 0,
            lo_flags: flags,
            lo_file_name: [0; 64],
            lo_crypt_name: [0; 64],
            lo_encrypt_key: [0; 32],
            lo_init: [0; 2],
        },
        reserved: [0; 8],
    };
    // SAFETY: `config` is a fully initialised `struct loop_config` that
    // outlives the call, which only reads it; both descriptors are open.
    let r = unsafe {
        libc::ioctl(
            device.as_raw_fd(),
            LOOP_CONFIGURE,
            &config as *const LoopConfig,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_structs_have_the_kernels_sizes() {
        assert_eq!(std::mem::size_of::<LoopInfo64>(), 232);
        assert_eq!(std::mem::size_of::<LoopConfig>(), 304);
    }
}
