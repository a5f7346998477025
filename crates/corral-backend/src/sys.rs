//! The one place this crate needs `unsafe`: a hook that runs in a host
//! process's child between `fork` and `exec`.
//!
//! Whoever started corral may hold descriptors without `FD_CLOEXEC` (a shell's
//! `exec 7</`, a harness's sockets); a host process would inherit them all.
//! [`stdio_only`] marks every descriptor above stderr close-on-exec in the
//! child, so the program starts with exactly stdin, stdout and stderr. It
//! marks rather than closes so the standard library's own close-on-exec pipe,
//! on which it learns that `exec` failed, survives until `exec`.
#![allow(unsafe_code)]

/// Makes the command's child start with exactly descriptors 0, 1 and 2.
///
/// `close_range(3, ~0, CLOSE_RANGE_CLOEXEC)` needs Linux 5.11; on an older
/// kernel the child fails to start with the kernel's error rather than
/// running with the creator's descriptors.
pub fn stdio_only(cmd: &mut tokio::process::Command) {
    // SAFETY: the hook runs in the forked child before `exec`, where only
    // async-signal-safe calls are allowed: it makes one raw `close_range`
    // system call, allocates nothing, takes no lock and touches no memory
    // shared with the parent.
    unsafe {
        cmd.pre_exec(|| {
            // SAFETY: `close_range` takes plain integers; descriptors 3 and
            // up are only marked close-on-exec, none is closed under a
            // reader.
            let rc = libc::syscall(
                libc::SYS_close_range,
                3 as libc::c_uint,
                libc::c_uint::MAX,
                libc::CLOSE_RANGE_CLOEXEC as libc::c_uint,
            );
            if rc == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
}
