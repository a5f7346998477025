//! The seams to the parts of this crate written alongside this one
//! (seccomp, cgroups): small private functions, so the core works and is
//! tested before they are wired.

/// The compiled seccomp program every spawned process gets: compiled once
/// per host process, shared by every sandbox.
pub fn seccomp_program() -> &'static [u8] {
    crate::seccomp::program_bytes()
}
