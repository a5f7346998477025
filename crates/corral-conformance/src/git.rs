//! Git blob ids and the small object store the Git staging case resolves
//! from, the way the Runner resolves mount files from Git: by id, verified
//! against the bytes before anything is written.

use std::collections::BTreeMap;
use std::fmt;

use sha1::{Digest as _, Sha1};

/// A Git blob object id: `sha1("blob <len>\0" + content)`, 40 lowercase hex.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct BlobId(String);

impl BlobId {
    /// The id of a blob holding `content`.
    pub(crate) fn of(content: &[u8]) -> Self {
        let mut hasher = Sha1::new();
        hasher.update(format!("blob {}\0", content.len()).as_bytes());
        hasher.update(content);
        Self(hex::encode(hasher.finalize()))
    }
}

impl fmt::Display for BlobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Blobs by id; reads are verified, so a corrupted object is refused
/// rather than staged.
#[derive(Debug, Default)]
pub(crate) struct ObjectStore {
    blobs: BTreeMap<BlobId, Vec<u8>>,
}

impl ObjectStore {
    /// Stores `content`, returning its id.
    pub(crate) fn insert(&mut self, content: &[u8]) -> BlobId {
        let id = BlobId::of(content);
        self.blobs.insert(id.clone(), content.to_vec());
        id
    }

    /// The bytes of blob `id`, verified to hash to `id`.
    pub(crate) fn resolve(&self, id: &BlobId) -> Result<&[u8], String> {
        let bytes = self
            .blobs
            .get(id)
            .ok_or_else(|| format!("blob {id} is not in the object store"))?;
        let actual = BlobId::of(bytes);
        if actual == *id {
            Ok(bytes)
        } else {
            Err(format!("blob {id} holds bytes whose id is {actual}"))
        }
    }

    /// Replaces the bytes stored under `id` (to prove verification).
    #[cfg(test)]
    fn corrupt(&mut self, id: &BlobId, bytes: &[u8]) {
        self.blobs.insert(id.clone(), bytes.to_vec());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_ids_are_gits() {
        // `git hash-object /dev/null` and `echo 'hello world' | git hash-object --stdin`.
        assert_eq!(
            BlobId::of(b"").to_string(),
            "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
        );
        assert_eq!(
            BlobId::of(b"hello world\n").to_string(),
            "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"
        );
    }

    #[test]
    fn the_store_verifies_what_it_resolves() {
        let mut store = ObjectStore::default();
        let id = store.insert(b"content\n");
        assert_eq!(store.resolve(&id), Ok(&b"content\n"[..]));
        store.corrupt(&id, b"tampered\n");
        let err = store.resolve(&id).unwrap_err();
        assert!(err.contains("whose id is"), "{err}");
        assert!(store.resolve(&BlobId::of(b"absent")).is_err());
    }
}
