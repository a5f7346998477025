//! Which live sandboxes run on an image: the store refuses to remove the
//! layers under a running sandbox's `/`.
//!
//! The store lives in `<state>/linux/images` (see [`store_dir`]); the
//! sandboxes of the same state directory are its siblings in
//! `<state>/linux/sandboxes`, each with a `meta.json` naming the digest of
//! the image it runs. A sandbox counts while its PID 1 lives (pid and
//! start time both match), so a crashed sandbox's leftovers block nothing.

use std::path::{Path, PathBuf};

use corral_backend::host_process::process_start;

use crate::record::Meta;

/// The image store of state directory `state_dir`: `<state_dir>/linux/images`,
/// the one path both the backend and `corral image` use.
pub fn store_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("linux").join("images")
}

/// The ids of the live sandboxes beside the store in `store` that run the
/// image `digest`, sorted. A store outside a state directory has none.
pub fn live_users(store: &Path, digest: &str) -> Vec<String> {
    let Some(sandboxes) = store.parent().map(|linux| linux.join("sandboxes")) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(sandboxes) else {
        return Vec::new();
    };
    let mut ids: Vec<String> = entries
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("meta.json")).ok())
        .filter_map(|bytes| serde_json::from_slice::<Meta>(&bytes).ok())
        .filter(|m| m.image == digest && process_start(m.init_pid) == Some(m.init_start))
        .map(|m| m.id)
        .collect();
    ids.sort();
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_outside_a_state_directory_has_no_users() {
        let dir = tempfile::tempdir().unwrap();
        assert!(live_users(&dir.path().join("images"), "sha256:00").is_empty());
        assert_eq!(store_dir(Path::new("/s")), PathBuf::from("/s/linux/images"));
    }
}
