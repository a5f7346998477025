//! The primitives crate's integration tests, one binary: the contained
//! host-directory file system against hostile paths, reads beneath a root, and
//! symlink races.

mod contained_hostile_paths;
mod contained_read_under;
mod contained_symlink_race;
