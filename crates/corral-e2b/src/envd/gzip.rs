//! gzip on `/files`: an upload with `Content-Encoding: gzip` is inflated
//! (to no more than a plain body may hold, so a gzip bomb is refused once
//! it passes that bound), and a download asked for with
//! `Accept-Encoding: gzip` is answered compressed.

use std::io::{Read, Write};

use bytes::Bytes;
use flate2::Compression;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use hyper::Request;
use hyper::header::{ACCEPT_ENCODING, CONTENT_ENCODING};

use crate::error::{E2bError, E2bResult};

/// How a request body is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyEncoding {
    /// As sent (no `Content-Encoding`, or `identity`).
    Identity,
    /// `gzip` (or `x-gzip`).
    Gzip,
}

impl BodyEncoding {
    /// The encoding a request's `Content-Encoding` names; any other than
    /// gzip and identity is refused.
    pub fn of<B>(req: &Request<B>) -> E2bResult<Self> {
        let Some(value) = req.headers().get(CONTENT_ENCODING) else {
            return Ok(BodyEncoding::Identity);
        };
        let text = value
            .to_str()
            .map_err(|_| E2bError::invalid("Content-Encoding", "is not text"))?;
        match text.trim().to_ascii_lowercase().as_str() {
            "" | "identity" => Ok(BodyEncoding::Identity),
            "gzip" | "x-gzip" => Ok(BodyEncoding::Gzip),
            other => Err(E2bError::NotServed {
                what: format!("Content-Encoding {other:?} on uploads (gzip is)"),
            }),
        }
    }
}

/// Whether `Accept-Encoding` takes gzip (named, or `*`, with a non-zero `q`).
pub fn accepts_gzip<B>(req: &Request<B>) -> bool {
    let Some(text) = req
        .headers()
        .get(ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    text.split(',').any(|item| {
        let mut fields = item.split(';');
        let coding = fields.next().unwrap_or("").trim().to_ascii_lowercase();
        let refused = fields.any(|p| {
            p.trim()
                .strip_prefix("q=")
                .and_then(|q| q.trim().parse::<f32>().ok())
                .is_some_and(|q| q <= 0.0)
        });
        matches!(coding.as_str(), "gzip" | "x-gzip" | "*") && !refused
    })
}

/// The inflated bytes of a gzip body (every member, as concatenated gzip
/// streams are one file), at most `limit` of them.
pub fn inflate(body: &[u8], limit: u64) -> E2bResult<Vec<u8>> {
    let mut out = Vec::new();
    MultiGzDecoder::new(body)
        .take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| E2bError::BadGzip {
            detail: e.to_string(),
        })?;
    if out.len() as u64 > limit {
        return Err(E2bError::InflatedTooLarge { limit });
    }
    Ok(out)
}

/// `body` as sent with `encoding`, inflated off the async workers.
pub async fn decode(body: Bytes, encoding: BodyEncoding, limit: u64) -> E2bResult<Bytes> {
    match encoding {
        BodyEncoding::Identity => Ok(body),
        BodyEncoding::Gzip => tokio::task::spawn_blocking(move || inflate(&body, limit))
            .await
            .map_err(|e| E2bError::BadGzip {
                detail: e.to_string(),
            })?
            .map(Bytes::from),
    }
}

/// `bytes` gzip-compressed, off the async workers.
pub async fn compress(bytes: Vec<u8>) -> Vec<u8> {
    let squeezed = tokio::task::spawn_blocking(move || {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
        encoder.write_all(&bytes)?;
        encoder.finish()
    })
    .await;
    // Writing into memory cannot fail; a panicked task is the only way here.
    squeezed.ok().and_then(Result::ok).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gz(bytes: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn inflates_members_within_the_bound() {
        let mut two = gz(b"hello ");
        two.extend(gz(b"world"));
        assert_eq!(inflate(&two, 11).unwrap(), b"hello world");
        assert!(matches!(
            inflate(&two, 10),
            Err(E2bError::InflatedTooLarge { limit: 10 })
        ));
        assert!(matches!(
            inflate(b"nope", 10),
            Err(E2bError::BadGzip { .. })
        ));
    }

    #[test]
    fn accept_encoding_is_read_with_its_weights() {
        let with = |v: &str| {
            let req = Request::builder()
                .header(ACCEPT_ENCODING, v)
                .body(())
                .unwrap();
            accepts_gzip(&req)
        };
        assert!(with("gzip, deflate"));
        assert!(with("br;q=1.0, gzip;q=0.5"));
        assert!(!with("gzip;q=0"));
        assert!(!with("deflate, br"));
        assert!(with("*"));
    }
}
