//! Installing the sandbox's seccomp program (compiled by the host once,
//! [`crate::seccomp`]) on the calling thread: what PID 1 does once, on
//! itself, before its first spawn (`super::inherited`), so every process
//! of the sandbox inherits one filter through `fork`.

use std::io;

/// Installs a serialized filter (as from [`crate::seccomp::program_bytes`]) on the calling
/// thread: `PR_SET_NO_NEW_PRIVS`, then `SECCOMP_SET_MODE_FILTER`.
///
/// Does not allocate, so it may also be called in a child between `fork`
/// and `exec`. Fails with `EINVAL` when `program` is empty, not a whole number of
/// instructions, or longer than the kernel's 4096-instruction limit.
pub fn install(program: &[u8]) -> io::Result<()> {
    const INSN: usize = 8;
    const MAX_INSNS: usize = 4096;
    let count = program.len() / INSN;
    if program.is_empty() || !program.len().is_multiple_of(INSN) || count > MAX_INSNS {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    rustix::thread::set_no_new_privs(true)?;
    super::sys::set_seccomp_filter(program)
}
