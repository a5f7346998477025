//! `sha256:` digests: parsing, hashing while reading, and transparent
//! decompression of layers (gzip, zstd or plain tar, told by magic bytes).

use std::io::{self, BufRead, BufReader, Read};

use sha2::{Digest as _, Sha256};

use super::error::ImageError;

/// The prefix of every digest this store knows.
pub const SHA256_PREFIX: &str = "sha256:";

/// The lowercase hex of a `sha256:<64 hex>` digest, or `None` if `s` is not one.
pub fn parse_digest(s: &str) -> Option<&str> {
    let hex = s.strip_prefix(SHA256_PREFIX)?;
    let ok = hex.len() == 64
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    ok.then_some(hex)
}

/// The `sha256:<hex>` digest of `bytes`.
pub fn digest_of(bytes: &[u8]) -> String {
    format!("{SHA256_PREFIX}{}", hex::encode(Sha256::digest(bytes)))
}

/// A reader that hashes and counts everything read through it.
pub struct HashingReader<R> {
    inner: R,
    hasher: Sha256,
    count: u64,
}

impl<R: Read> HashingReader<R> {
    /// Wraps `inner`.
    pub fn new(inner: R) -> Self {
        HashingReader {
            inner,
            hasher: Sha256::new(),
            count: 0,
        }
    }

    /// Reads `inner` to its end (so that the digest covers all of it).
    pub fn drain(&mut self) -> io::Result<()> {
        io::copy(self, &mut io::sink()).map(|_| ())
    }

    /// The `sha256:` digest and the byte count of what was read so far.
    pub fn finish(self) -> (String, u64) {
        let hex = hex::encode(self.hasher.finalize());
        (format!("{SHA256_PREFIX}{hex}"), self.count)
    }
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }
}

/// How a layer stream is compressed, told by its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// A plain tar stream.
    None,
    /// gzip (`1f 8b`).
    Gzip,
    /// zstd (`28 b5 2f fd`).
    Zstd,
}

/// Wraps `reader` in the decompressor its magic bytes call for.
pub fn decompress<'a, R: Read + 'a>(reader: R) -> Result<Box<dyn Read + 'a>, ImageError> {
    let mut buf = BufReader::with_capacity(64 * 1024, reader);
    let head = buf
        .fill_buf()
        .map_err(|e| ImageError::io("reading a layer", e))?;
    let kind = if head.starts_with(&[0x1f, 0x8b]) {
        Compression::Gzip
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Compression::Zstd
    } else {
        Compression::None
    };
    Ok(match kind {
        Compression::None => Box::new(buf),
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(buf)),
        Compression::Zstd => Box::new(
            zstd::stream::read::Decoder::with_buffer(buf)
                .map_err(|e| ImageError::io("starting zstd decompression", e))?,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_only_full_lowercase_sha256() {
        let hex = "a".repeat(64);
        assert_eq!(parse_digest(&format!("sha256:{hex}")), Some(hex.as_str()));
        assert_eq!(parse_digest(&format!("sha256:{}", "A".repeat(64))), None);
        assert_eq!(parse_digest("sha256:abc"), None);
        assert_eq!(parse_digest(&format!("sha512:{hex}")), None);
    }

    #[test]
    fn hashing_reader_matches_digest_of() {
        let data = b"hello layers".to_vec();
        let mut r = HashingReader::new(&data[..]);
        r.drain().unwrap();
        let (d, n) = r.finish();
        assert_eq!(d, digest_of(&data));
        assert_eq!(n, data.len() as u64);
    }
}
