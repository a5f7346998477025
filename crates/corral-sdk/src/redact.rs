//! Secret redaction: a multi-pattern matcher over every registered secret,
//! for whole texts ([`Redactor`]) and for streams cut into arbitrary chunks
//! ([`StreamRedactor`]).
//!
//! Every occurrence of a secret is replaced by [`REDACTED`]. Occurrences
//! that overlap (two secrets sharing bytes, one secret a prefix of another)
//! are merged into one span and replaced once, so no fragment of any secret
//! survives. A stream gives exactly the bytes the whole text would give,
//! wherever the chunk boundaries fall. The stream redactor holds back only
//! what the next chunk could still change: a suffix that is a proper
//! prefix of some secret (at most `longest secret − 1` bytes), with a match
//! it could extend; everything before it is released at once, so output
//! without a secret's beginning at its end is never delayed.

use std::sync::Arc;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

/// What replaces a secret.
pub const REDACTED: &str = "[REDACTED]";

/// An immutable set of secrets and its matcher. Cheap to clone.
#[derive(Clone, Default)]
pub struct Redactor {
    inner: Option<Arc<Matcher>>,
}

struct Matcher {
    secrets: Vec<String>,
    /// `None` only past the automaton's size limits: then a plain search.
    automaton: Option<AhoCorasick>,
    longest: usize,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secrets themselves.
        f.debug_struct("Redactor")
            .field("secrets", &self.len())
            .finish()
    }
}

impl Redactor {
    /// A redactor for `secrets`; empty strings are ignored.
    pub fn new<I, S>(secrets: I) -> Redactor
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut list: Vec<String> = Vec::new();
        for s in secrets {
            let s = s.into();
            if !s.is_empty() && !list.contains(&s) {
                list.push(s);
            }
        }
        Redactor::from_list(list)
    }

    fn from_list(secrets: Vec<String>) -> Redactor {
        if secrets.is_empty() {
            return Redactor { inner: None };
        }
        // Standard semantics: overlapping search finds every occurrence.
        let automaton = AhoCorasickBuilder::new()
            .match_kind(MatchKind::Standard)
            .build(&secrets);
        let longest = secrets.iter().map(String::len).max().unwrap_or(0);
        Redactor {
            inner: Some(Arc::new(Matcher {
                secrets,
                automaton: automaton.ok(),
                longest,
            })),
        }
    }

    /// This redactor plus `secret` (unchanged if empty or already known).
    pub fn with(&self, secret: impl Into<String>) -> Redactor {
        let secret = secret.into();
        let mut list = self.secrets().to_vec();
        if secret.is_empty() || list.contains(&secret) {
            return self.clone();
        }
        list.push(secret);
        Redactor::from_list(list)
    }

    /// How many secrets it knows.
    pub fn len(&self) -> usize {
        self.secrets().len()
    }

    /// True when it knows no secret (and so changes nothing).
    pub fn is_empty(&self) -> bool {
        self.inner.is_none()
    }

    fn secrets(&self) -> &[String] {
        self.inner.as_ref().map_or(&[], |m| &m.secrets)
    }

    /// `bytes` with every secret replaced.
    pub fn redact_bytes(&self, bytes: &[u8]) -> Vec<u8> {
        let Some(m) = &self.inner else {
            return bytes.to_vec();
        };
        let mut out = Vec::with_capacity(bytes.len());
        let spans = m.spans(bytes);
        let mut cursor = 0;
        for (s, e) in spans {
            out.extend_from_slice(&bytes[cursor..s]);
            out.extend_from_slice(REDACTED.as_bytes());
            cursor = e;
        }
        out.extend_from_slice(&bytes[cursor..]);
        out
    }

    /// `text` with every secret replaced.
    pub fn redact(&self, text: &str) -> String {
        if self.is_empty() {
            return text.to_string();
        }
        // Secrets are whole strings, so a span never splits a character.
        String::from_utf8_lossy(&self.redact_bytes(text.as_bytes())).into_owned()
    }

    /// A redactor for one stream of chunks.
    pub fn stream(&self) -> StreamRedactor {
        StreamRedactor {
            redactor: self.clone(),
            pending: Vec::new(),
        }
    }
}

impl Matcher {
    /// The first offset of `hay` from which the rest is a proper prefix of
    /// some secret (a secret the next bytes could complete); `hay.len()`
    /// when no suffix is.
    fn first_open_prefix(&self, hay: &[u8]) -> usize {
        let from = hay.len().saturating_sub(self.longest - 1);
        (from..hay.len())
            .find(|&p| {
                let rest = &hay[p..];
                self.secrets
                    .iter()
                    .any(|s| s.len() > rest.len() && s.as_bytes().starts_with(rest))
            })
            .unwrap_or(hay.len())
    }

    /// Every occurrence, merged into disjoint spans sorted by start.
    fn spans(&self, hay: &[u8]) -> Vec<(usize, usize)> {
        let mut found: Vec<(usize, usize)> = Vec::new();
        if let Some(automaton) = &self.automaton {
            for m in automaton.find_overlapping_iter(hay) {
                found.push((m.start(), m.end()));
            }
        } else {
            for s in &self.secrets {
                let s = s.as_bytes();
                if s.len() > hay.len() {
                    continue;
                }
                for i in 0..=hay.len() - s.len() {
                    if &hay[i..i + s.len()] == s {
                        found.push((i, i + s.len()));
                    }
                }
            }
        }
        found.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::new();
        for (s, e) in found {
            match merged.last_mut() {
                Some(last) if s < last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        merged
    }
}

/// Redacts one stream chunk by chunk: [`push`](Self::push) each chunk and
/// send what it returns, then send what [`finish`](Self::finish) returns.
/// The concatenated output equals [`Redactor::redact_bytes`] of the
/// concatenated input, wherever the chunks were cut.
#[derive(Debug, Clone)]
pub struct StreamRedactor {
    redactor: Redactor,
    pending: Vec<u8>,
}

impl StreamRedactor {
    /// Takes one chunk; returns the bytes that are now decided. Only a
    /// suffix that could begin a secret is held back — one that is a
    /// proper prefix of a secret — with any match it may still extend
    /// (a secret that is a prefix of another, or overlapping ones); every
    /// byte before it is returned at once.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        let Some(m) = self.redactor.inner.clone() else {
            return chunk.to_vec();
        };
        self.pending.extend_from_slice(chunk);
        // A match not wholly in the buffer starts where the buffer's
        // suffix is a proper prefix of a secret: at `hold` or later.
        let hold = m.first_open_prefix(&self.pending);
        let mut out = Vec::new();
        let mut cursor = 0;
        for (s, e) in m.spans(&self.pending) {
            if e > hold {
                // A later match starting at `hold` or after could overlap
                // this one and extend it: undecided.
                let keep_from = s.min(hold);
                out.extend_from_slice(&self.pending[cursor..keep_from]);
                self.pending.drain(..keep_from);
                return out;
            }
            out.extend_from_slice(&self.pending[cursor..s]);
            out.extend_from_slice(REDACTED.as_bytes());
            cursor = e;
        }
        let keep_from = cursor.max(hold);
        out.extend_from_slice(&self.pending[cursor..keep_from]);
        self.pending.drain(..keep_from);
        out
    }

    /// The end of the stream: returns the held-back bytes, redacted.
    pub fn finish(&mut self) -> Vec<u8> {
        let rest = std::mem::take(&mut self.pending);
        self.redactor.redact_bytes(&rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_secrets_changes_nothing() {
        let r = Redactor::default();
        assert_eq!(r.redact("abc"), "abc");
        let mut s = r.stream();
        assert_eq!(s.push(b"abc"), b"abc");
        assert!(s.finish().is_empty());
    }

    #[test]
    fn overlapping_secrets_merge_into_one_span() {
        let r = Redactor::new(["abcd", "cdef"]);
        assert_eq!(r.redact("xabcdefy"), "x[REDACTED]y");
        let r = Redactor::new(["tok", "token123"]);
        assert_eq!(r.redact("a token123 tok"), "a [REDACTED] [REDACTED]");
    }

    #[test]
    fn debug_never_shows_secrets() {
        let r = Redactor::new(["hunter2"]);
        assert!(!format!("{r:?}").contains("hunter2"));
    }
}
