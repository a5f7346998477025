//! Bearer-token authentication, compared in constant time.

use std::fmt;
use std::path::Path;

use sha2::{Digest, Sha256};

/// The shortest token the server accepts, in bytes.
pub const MIN_TOKEN_BYTES: usize = 16;

/// The longest token, in bytes.
pub const MAX_TOKEN_BYTES: usize = 4096;

/// A bearer token. Never printed: `Debug` shows its length only.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

/// Why a token was refused.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The token file could not be read.
    #[error("reading the token file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// Shorter than [`MIN_TOKEN_BYTES`] or longer than [`MAX_TOKEN_BYTES`].
    #[error("the token is {0} bytes; it must be {MIN_TOKEN_BYTES} to {MAX_TOKEN_BYTES} bytes")]
    Length(usize),
    /// A character outside visible ASCII (an HTTP header cannot carry it).
    #[error("the token has a character outside visible ASCII (0x21..=0x7e)")]
    Charset,
}

impl Token {
    /// Validates a token: 16 to 4096 bytes of visible ASCII.
    pub fn new(text: impl Into<String>) -> Result<Self, TokenError> {
        let text = text.into();
        if !(MIN_TOKEN_BYTES..=MAX_TOKEN_BYTES).contains(&text.len()) {
            return Err(TokenError::Length(text.len()));
        }
        if !text.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
            return Err(TokenError::Charset);
        }
        Ok(Self(text))
    }

    /// Reads a token file; surrounding whitespace (a trailing newline) is
    /// not part of the token.
    pub fn from_file(path: &Path) -> Result<Self, TokenError> {
        let text = std::fs::read_to_string(path).map_err(|source| TokenError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::new(text.trim())
    }

    /// The `Authorization` header value.
    pub fn header_value(&self) -> String {
        format!("Bearer {}", self.0)
    }

    /// Whether an `Authorization` header value presents this token. The
    /// comparison takes the same time whatever the presented value: both
    /// sides are hashed to 32 bytes and compared without an early exit, so
    /// neither the content nor the length of the token leaks.
    pub fn admits(&self, header: Option<&[u8]>) -> bool {
        let presented = header
            .and_then(|h| h.strip_prefix(b"Bearer "))
            .unwrap_or(b"");
        let ours: [u8; 32] = Sha256::digest(self.0.as_bytes()).into();
        let theirs: [u8; 32] = Sha256::digest(presented).into();
        let diff = ours
            .iter()
            .zip(theirs.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        // Keep the optimiser from turning the fold into an early exit.
        std::hint::black_box(diff) == 0 && !presented.is_empty()
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token({} bytes)", self.0.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_only_the_exact_bearer_token() {
        let token = Token::new("0123456789abcdef-secret").unwrap();
        assert!(token.admits(Some(b"Bearer 0123456789abcdef-secret")));
        assert!(!token.admits(Some(b"Bearer 0123456789abcdef-secreT")));
        assert!(!token.admits(Some(b"Bearer 0123456789abcdef-secret ")));
        assert!(!token.admits(Some(b"bearer 0123456789abcdef-secret")));
        assert!(!token.admits(Some(b"0123456789abcdef-secret")));
        assert!(!token.admits(Some(b"Bearer ")));
        assert!(!token.admits(None));
        assert_eq!(format!("{token:?}"), "Token(23 bytes)");
    }

    #[test]
    fn refuses_short_long_and_unprintable_tokens() {
        assert_eq!(
            Token::new("short").unwrap_err().to_string(),
            "the token is 5 bytes; it must be 16 to 4096 bytes"
        );
        assert!(matches!(
            Token::new("x".repeat(5000)),
            Err(TokenError::Length(5000))
        ));
        assert!(matches!(
            Token::new("0123456789 abcdef"),
            Err(TokenError::Charset)
        ));
    }

    #[test]
    fn a_token_file_is_trimmed() {
        let dir = std::env::temp_dir().join(format!("corral-wire-token-{}", std::process::id()));
        std::fs::write(&dir, "0123456789abcdef\n").unwrap();
        let token = Token::from_file(&dir).unwrap();
        std::fs::remove_file(&dir).unwrap();
        assert!(token.admits(Some(b"Bearer 0123456789abcdef")));
        assert!(matches!(
            Token::from_file(Path::new("/nonexistent/token")),
            Err(TokenError::Read { .. })
        ));
    }
}
