//! The parts of a `multipart/form-data` body (what `POST /files` is sent
//! by the SDK): each part's file name and bytes.

use crate::error::{E2bError, E2bResult};

/// One part.
#[derive(Debug, PartialEq, Eq)]
pub struct Part {
    /// Its `filename` (the path to write), if it has one.
    pub filename: Option<String>,
    /// Its bytes.
    pub data: Vec<u8>,
}

/// The boundary of a `multipart/form-data` content type.
pub fn boundary(content_type: &str) -> Option<String> {
    let (kind, params) = content_type.split_once(';')?;
    if !kind.trim().eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    params.split(';').find_map(|p| {
        let (k, v) = p.trim().split_once('=')?;
        k.eq_ignore_ascii_case("boundary")
            .then(|| v.trim_matches('"').to_string())
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The parts of `body`.
pub fn parts(body: &[u8], boundary: &str) -> E2bResult<Vec<Part>> {
    let bad = |why: &str| E2bError::invalid("multipart body", why.to_string());
    let delimiter = format!("--{boundary}");
    let start = find(body, delimiter.as_bytes()).ok_or_else(|| bad("no boundary"))?;
    let mut rest = &body[start + delimiter.len()..];
    let mut parts = Vec::new();
    let next = format!("\r\n--{boundary}");
    loop {
        if rest.starts_with(b"--") {
            return Ok(parts);
        }
        rest = rest
            .strip_prefix(b"\r\n")
            .ok_or_else(|| bad("a boundary is not followed by a line end"))?;
        let head_end = find(rest, b"\r\n\r\n").ok_or_else(|| bad("a part has no header end"))?;
        let head = String::from_utf8_lossy(&rest[..head_end]).to_string();
        let after = &rest[head_end + 4..];
        let end =
            find(after, next.as_bytes()).ok_or_else(|| bad("a part has no closing boundary"))?;
        let filename = head.lines().find_map(|l| {
            let i = l.find("filename=\"")?;
            let v = &l[i + 10..];
            Some(v[..v.find('"')?].to_string())
        });
        parts.push(Part {
            filename,
            data: after[..end].to_vec(),
        });
        rest = &after[end + next.len()..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_sdk_shape() {
        let body = b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nContent-Type: application/octet-stream\r\n\r\nhello\r\n--b--\r\n";
        assert_eq!(
            boundary("multipart/form-data; boundary=b").as_deref(),
            Some("b")
        );
        let got = parts(body, "b").unwrap();
        assert_eq!(
            got,
            vec![Part {
                filename: Some("a.txt".into()),
                data: b"hello".to_vec()
            }]
        );
        assert!(parts(b"garbage", "b").is_err());
    }
}
