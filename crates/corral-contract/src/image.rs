//! Image references pinned by digest: `name@sha256:<64 hex>`.

use crate::bounds::DIGEST_PATTERN;
use crate::macros::string_newtype;
use crate::{Digest, InvalidValue};

/// A root image reference pinned by digest, `name@sha256:<64 hex>`, e.g.
/// `docker.io/library/alpine:3.20@sha256:…`.
///
/// `name` is a repository (lowercase `a-z 0-9 . _ -` components separated by
/// `/`, each starting and ending with a letter or digit, the first optionally
/// carrying a registry `:port`) with an optional `:tag`
/// (`[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`); at most 512 bytes before the `@`.
/// The digest suffix is what an instance's `materialization.image_digest`
/// must equal ([`ImageReference::digest`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ImageReference(String);

const MAX_NAME_BYTES: usize = 512;

fn valid_component(c: &str) -> bool {
    let edge = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let (Some(&first), Some(&last)) = (c.as_bytes().first(), c.as_bytes().last()) else {
        return false;
    };
    edge(first)
        && edge(last)
        && c.bytes()
            .all(|b| edge(b) || matches!(b, b'.' | b'_' | b'-'))
}

fn valid_tag(t: &str) -> bool {
    let b = t.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && (b[0].is_ascii_alphanumeric() || b[0] == b'_')
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
}

fn valid_name(name: &str) -> bool {
    if name.is_empty() || name.len() > MAX_NAME_BYTES {
        return false;
    }
    // A tag is a `:` after the last `/`.
    let last_slash = name.rfind('/').map_or(0, |i| i + 1);
    let (repository, tag) = match name[last_slash..].find(':') {
        Some(i) => (&name[..last_slash + i], Some(&name[last_slash + i + 1..])),
        None => (name, None),
    };
    if tag.is_some_and(|t| !valid_tag(t)) {
        return false;
    }
    repository.split('/').enumerate().all(|(i, component)| {
        // The first component may be a registry with a port.
        match component.split_once(':') {
            Some((host, port)) if i == 0 => {
                valid_component(host)
                    && !port.is_empty()
                    && port.len() <= 5
                    && port.bytes().all(|b| b.is_ascii_digit())
            }
            Some(_) => false,
            None => valid_component(component),
        }
    })
}

impl ImageReference {
    fn validate(value: &str) -> Result<(), InvalidValue> {
        let ok = value
            .rsplit_once('@')
            .is_some_and(|(name, digest)| valid_name(name) && Digest::new(digest).is_ok());
        if ok {
            Ok(())
        } else {
            Err(InvalidValue::string(
                "root_image",
                value,
                format!(
                    "is not name@digest (a lowercase repository with optional :tag, then @ and a digest matching {DIGEST_PATTERN})"
                ),
            ))
        }
    }

    /// The `name` part, before `@`.
    pub fn name(&self) -> &str {
        self.0.rsplit_once('@').map_or("", |(n, _)| n)
    }

    /// The digest suffix, after `@`.
    pub fn digest(&self) -> Digest {
        let suffix = self.0.rsplit_once('@').map_or("", |(_, d)| d);
        Digest::new(suffix).unwrap_or_else(|_| unreachable!("validated at construction"))
    }

    /// Builds `name@digest`, validating `name`.
    pub fn from_parts(name: &str, digest: &Digest) -> Result<Self, InvalidValue> {
        Self::new(format!("{name}@{digest}"))
    }
}

string_newtype!(ImageReference, "ImageReference", {
    "type": "string",
    "pattern": "^[a-z0-9][A-Za-z0-9._/:-]*@sha256:[0-9a-f]{64}$",
    "description": "A repository name (optional :tag) pinned by digest: name@sha256:<64 hex>.",
});
