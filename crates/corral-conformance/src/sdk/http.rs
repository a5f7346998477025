//! The smallest HTTP client the `http-probe` case needs: one HTTP/1.0 `GET`
//! over a plain TCP connection, reading the whole response.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Most response bytes kept.
const MAX_RESPONSE: usize = 1 << 20;

/// A parsed `http://host:port/path` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HttpUrl {
    /// Host name or address (IPv6 without brackets).
    pub(crate) host: String,
    /// Port (80 when the URL names none).
    pub(crate) port: u16,
    /// Path and query, at least `/`.
    pub(crate) path: String,
}

impl HttpUrl {
    /// Parses `url`; only `http://` is understood.
    pub(crate) fn parse(url: &str) -> Result<HttpUrl, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("{url:?} is not an http:// URL"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.contains('@') {
            return Err(format!("{url:?} carries credentials"));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, after) = v6
                .split_once(']')
                .ok_or_else(|| format!("{url:?}: unclosed '['"))?;
            (host, after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(format!("{url:?} names no host"));
        }
        let port = match port {
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| format!("{url:?}: port {p:?} is not a port"))?,
            None => 80,
        };
        if path.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!(
                "{url:?}: the path holds blanks or control characters"
            ));
        }
        Ok(HttpUrl {
            host: host.to_string(),
            port,
            path: path.to_string(),
        })
    }

    /// Whether the host is this machine's loopback.
    pub(crate) fn is_loopback(&self) -> bool {
        match self.host.parse::<std::net::IpAddr>() {
            Ok(ip) => ip.is_loopback(),
            Err(_) => self.host.eq_ignore_ascii_case("localhost"),
        }
    }
}

/// A response: its status code and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HttpResponse {
    /// The status code.
    pub(crate) status: u16,
    /// The body (at most 1 MiB).
    pub(crate) body: Vec<u8>,
}

/// One `GET` of `url` with `headers`, bounded by `bound`.
pub(crate) async fn get(
    url: &HttpUrl,
    headers: &BTreeMap<String, String>,
    bound: Duration,
) -> Result<HttpResponse, String> {
    let exchange = async {
        let mut stream = TcpStream::connect((url.host.as_str(), url.port))
            .await
            .map_err(|e| format!("connecting to {}:{}: {e}", url.host, url.port))?;
        let host = if url.host.contains(':') {
            format!("[{}]:{}", url.host, url.port)
        } else {
            format!("{}:{}", url.host, url.port)
        };
        let mut request = format!("GET {} HTTP/1.0\r\nHost: {host}\r\n", url.path);
        for (k, v) in headers {
            if [k, v].iter().any(|s| s.contains(['\r', '\n'])) {
                return Err(format!("header {k:?} holds a line break"));
            }
            request.push_str(&format!("{k}: {v}\r\n"));
        }
        request.push_str("Connection: close\r\n\r\n");
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| format!("sending the request: {e}"))?;
        let mut raw = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            let n = stream
                .read(&mut buf)
                .await
                .map_err(|e| format!("reading the response: {e}"))?;
            if n == 0 || raw.len() >= MAX_RESPONSE {
                break;
            }
            raw.extend_from_slice(&buf[..n]);
        }
        parse_response(&raw)
    };
    tokio::time::timeout(bound, exchange)
        .await
        .map_err(|_| format!("no complete response within {} s", bound.as_secs()))?
}

/// Splits a raw HTTP/1.x response into status and body.
fn parse_response(raw: &[u8]) -> Result<HttpResponse, String> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("a response without a header end ({} bytes)", raw.len()))?;
    let head = String::from_utf8_lossy(&raw[..end]);
    let status_line = head.lines().next().unwrap_or_default();
    let mut parts = status_line.split(' ');
    let version = parts.next().unwrap_or_default();
    let status = parts.next().and_then(|s| s.parse::<u16>().ok());
    match status {
        Some(status) if version.starts_with("HTTP/1.") => Ok(HttpResponse {
            status,
            body: raw[end + 4..].to_vec(),
        }),
        _ => Err(format!("a malformed status line {status_line:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_or_say_what_is_wrong() {
        let u = HttpUrl::parse("http://127.0.0.1:8080").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("127.0.0.1", 8080, "/")
        );
        assert!(u.is_loopback());
        let u = HttpUrl::parse("http://[::1]:9/x?y=1").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("::1", 9, "/x?y=1")
        );
        assert!(u.is_loopback());
        let u = HttpUrl::parse("http://example.com/").unwrap();
        assert_eq!(u.port, 80);
        assert!(!u.is_loopback());
        for bad in [
            "https://127.0.0.1/",
            "memory://mem-1:80",
            "http://:80/",
            "http://h:0/",
            "http://h:99999/",
            "http://u:p@h/",
            "http://h/a b",
        ] {
            assert!(HttpUrl::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn responses_split_into_status_and_body() {
        let r = parse_response(b"HTTP/1.0 200 OK\r\nA: b\r\n\r\nbody").unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, &b"body"[..]));
        assert!(parse_response(b"HTTP/1.0 200 OK\r\n").is_err());
        assert!(parse_response(b"SSH-2.0\r\n\r\n").is_err());
    }

    #[tokio::test]
    async fn get_reads_a_loopback_server() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut conn, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let n = conn.read(&mut buf).await.unwrap();
            let request = String::from_utf8_lossy(&buf[..n]).into_owned();
            conn.write_all(b"HTTP/1.0 404 Not Found\r\n\r\nnope")
                .await
                .unwrap();
            request
        });
        let url = HttpUrl::parse(&format!("http://127.0.0.1:{port}/p")).unwrap();
        let mut headers = BTreeMap::new();
        headers.insert("X-Token".to_string(), "t".to_string());
        let r = get(&url, &headers, Duration::from_secs(10)).await.unwrap();
        assert_eq!((r.status, r.body.as_slice()), (404, &b"nope"[..]));
        let request = server.await.unwrap();
        assert!(request.starts_with("GET /p HTTP/1.0\r\n"), "{request}");
        assert!(request.contains("X-Token: t\r\n"), "{request}");
    }
}
