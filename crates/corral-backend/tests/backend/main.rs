//! The primitives crate's integration tests, one binary: the contained
//! host-directory file system against hostile paths, reads beneath a root, and
//! symlink races.

mod contained_hostile_paths;
mod contained_read_under;
mod contained_symlink_race;

/// The sandbox path `raw` names: a test's own literal, known to be one.
fn sp(raw: &str) -> corral_backend::SandboxPath {
    corral_backend::sandbox_path("path", raw).expect(raw)
}
