//! The records of sandboxes as last read, kept by the version of their
//! `meta.json` ([`FileVersion`]): a call on a sandbox looks at its record
//! file (one `stat`) and reads and parses it only when it changed. A
//! destroyed sandbox's record is gone, so it is refused as before; pause,
//! death and expiry are not in the record and are checked on every call as
//! before.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::file_version::FileVersion;
use crate::record::Meta;

/// How many records are kept before the cache starts afresh.
const MAX_KEPT: usize = 4096;

#[cfg(test)]
thread_local! {
    /// How many times this thread read a record from disk.
    static READ: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The records last read, by sandbox id.
#[derive(Debug, Clone, Default)]
pub struct MetaCache {
    kept: Arc<Mutex<HashMap<String, (FileVersion, Meta)>>>,
}

impl MetaCache {
    fn kept(&self) -> std::sync::MutexGuard<'_, HashMap<String, (FileVersion, Meta)>> {
        self.kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The record of `id` whose file is at `path`: the one kept when the
    /// file is unchanged, else what `read` gives (kept when there is one).
    /// The file is looked at before it is read, so a change during the
    /// read is seen by the next call.
    pub fn get<E>(
        &self,
        id: &str,
        path: &std::path::Path,
        read: impl FnOnce() -> Result<Option<Meta>, E>,
    ) -> Result<Option<Meta>, E> {
        let Some(version) = FileVersion::at(path) else {
            self.kept().remove(id);
            return read();
        };
        if let Some((kept, meta)) = self.kept().get(id)
            && *kept == version
        {
            return Ok(Some(meta.clone()));
        }
        #[cfg(test)]
        READ.with(|n| n.set(n.get() + 1));
        let meta = read()?;
        let mut kept = self.kept();
        match &meta {
            Some(m) => {
                if kept.len() >= MAX_KEPT {
                    kept.clear();
                }
                kept.insert(id.to_string(), (version, m.clone()));
            }
            None => {
                kept.remove(id);
            }
        }
        Ok(meta)
    }
}

#[cfg(test)]
mod tests {
    use corral_backend::{ErrorCode, Labels};

    use crate::state::{Meta, State, read_meta, require_meta};

    fn read_from_disk() -> usize {
        super::READ.with(std::cell::Cell::get)
    }

    fn record(id: &str, label: &str) -> Meta {
        Meta {
            id: id.into(),
            key: None,
            labels: Labels::new().with("v", label).unwrap(),
            created_at_ms: corral_backend::now_ms(),
            env: corral_backend::Environment::new(),
            network_none: true,
            init_pid: std::process::id(),
            init_start: 0,
            disk_bytes: 1,
            disk_layer: crate::disk::DiskLayer::default(),
            disk_fallback: None,
            image: String::new(),
            expires_at_ms: None,
        }
    }

    fn write(state: &State, meta: &Meta) {
        std::fs::create_dir_all(state.sandbox_dir(&meta.id)).unwrap();
        let bytes = serde_json::to_vec(meta).unwrap();
        corral_backend::statefile::write_atomic_unsynced(&state.meta_path(&meta.id), &bytes)
            .unwrap();
    }

    /// An unchanged record is read once; a rewritten one is read again at
    /// the next call, and a destroyed sandbox is refused.
    #[test]
    fn an_unchanged_record_is_read_once_and_a_changed_or_gone_one_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let state = State::open(
            dir.path(),
            None,
            std::sync::Arc::new(crate::real_host::RealHost),
        )
        .unwrap();
        let id = "lnx-00000000000000c1";
        write(&state, &record(id, "one"));
        let start = read_from_disk();
        for _ in 0..3 {
            let meta = require_meta(&state, id).unwrap();
            assert_eq!(meta.labels["v"], "one");
        }
        assert_eq!(read_from_disk(), start + 1, "read once while unchanged");
        write(&state, &record(id, "two"));
        assert_eq!(require_meta(&state, id).unwrap().labels["v"], "two");
        assert_eq!(read_from_disk(), start + 2);
        // Rewritten in place, same size: the change time tells.
        let bytes = serde_json::to_vec(&record(id, "six")).unwrap();
        std::fs::write(state.meta_path(id), bytes).unwrap();
        assert_eq!(require_meta(&state, id).unwrap().labels["v"], "six");
        std::fs::remove_dir_all(state.sandbox_dir(id)).unwrap();
        assert!(read_meta(&state, id).unwrap().is_none());
        let e = require_meta(&state, id).unwrap_err();
        assert_eq!(e.code(), ErrorCode::NotFound, "a destroyed sandbox: {e}");
        // Another sandbox's record is its own.
        let other = "lnx-00000000000000c2";
        write(&state, &record(other, "other"));
        assert_eq!(require_meta(&state, other).unwrap().labels["v"], "other");
        assert!(read_meta(&state, id).unwrap().is_none());
    }
}
