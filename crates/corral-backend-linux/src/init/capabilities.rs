//! The capability bounding set of every process of a sandbox: Docker's
//! default set without `CAP_MKNOD`. PID 1 narrows its own bounding set once
//! ([`super::inherited`]); `fork` copies it to every child, and a root
//! process's permitted set after `execve` is its bounding set, so every
//! workload starts with at most these.

use rustix::io::Errno;

/// Capabilities a sandboxed process keeps (Docker's default set minus
/// `CAP_MKNOD`, since no device cgroup restricts device nodes here).
const KEPT_CAPS: &[u32] = &[
    0,  // CHOWN
    1,  // DAC_OVERRIDE
    3,  // FOWNER
    4,  // FSETID
    5,  // KILL
    6,  // SETGID
    7,  // SETUID
    8,  // SETPCAP
    10, // NET_BIND_SERVICE
    13, // NET_RAW
    18, // SYS_CHROOT
    29, // AUDIT_WRITE
    31, // SETFCAP
];

/// Drops every other capability from the calling process's bounding set:
/// `CAP_SYS_ADMIN` (mount, unshare, …), `CAP_MKNOD`, `CAP_SYS_PTRACE`,
/// `CAP_NET_ADMIN` and the rest are gone for everything it starts. The
/// ambient set is cleared too.
///
/// Needs `CAP_SETPCAP`. The effective and permitted sets are left as they
/// are: the caller (PID 1, and a child of it until `execve`) still changes
/// ids with them; the bounding set only limits what an `execve` grants.
pub fn drop_bounding_set() -> std::io::Result<()> {
    for cap in 0..64u32 {
        if KEPT_CAPS.contains(&cap) {
            continue;
        }
        let one = rustix::thread::CapabilitySet::from_bits_retain(1 << cap);
        match rustix::thread::remove_capability_from_bounding_set(one) {
            Ok(()) => {}
            // EINVAL: past the kernel's last capability.
            Err(Errno::INVAL) => break,
            Err(e) => return Err(e.into()),
        }
    }
    // As before rustix offered it safely, a failure here is not fatal.
    let _ = rustix::thread::clear_ambient_capability_set();
    Ok(())
}
