//! The HTTP client the `http-probe` case needs: one `GET` with hyper over a
//! plain TCP connection, bounded in time and in the body it keeps.

use std::collections::BTreeMap;
use std::error::Error as _;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::header::{CONNECTION, HOST, HeaderName, HeaderValue};
use hyper::{Method, Request, Uri, Version};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// Most response body bytes kept.
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
        let raw_authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        if raw_authority.contains('@') {
            return Err(format!("{url:?} carries credentials"));
        }
        let uri: Uri = url.parse().map_err(|e| format!("{url:?}: {e}"))?;
        let authority = uri
            .authority()
            .ok_or_else(|| format!("{url:?} names no host"))?;
        // The port as written: `Authority::port` would hide one that is
        // out of range behind the default.
        let written_port = authority
            .as_str()
            .strip_prefix(authority.host())
            .and_then(|after| after.strip_prefix(':'));
        let host = authority.host();
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        if host.is_empty() {
            return Err(format!("{url:?} names no host"));
        }
        let port = match written_port {
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| format!("{url:?}: port {p:?} is not a port"))?,
            None => 80,
        };
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        Ok(HttpUrl {
            host: host.to_string(),
            port,
            path: if path.is_empty() { "/" } else { path }.to_string(),
        })
    }

    /// Whether the host is this machine's loopback.
    pub(crate) fn is_loopback(&self) -> bool {
        match self.host.parse::<std::net::IpAddr>() {
            Ok(ip) => ip.is_loopback(),
            Err(_) => self.host.eq_ignore_ascii_case("localhost"),
        }
    }

    /// The `Host` header's value: `host:port`, an IPv6 host in brackets.
    fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// A response: its status code and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HttpResponse {
    /// The status code.
    pub(crate) status: u16,
    /// The body (at most 1 MiB; the rest is not read).
    pub(crate) body: Vec<u8>,
}

/// `error` and its causes on one line.
fn one_line(error: &hyper::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text.replace(['\r', '\n'], " ")
}

/// One HTTP/1.0 `GET` of `url` with `headers`, bounded by `bound`.
pub(crate) async fn get(
    url: &HttpUrl,
    headers: &BTreeMap<String, String>,
    bound: Duration,
) -> Result<HttpResponse, String> {
    let exchange = async {
        let mut request = Request::builder()
            .method(Method::GET)
            .version(Version::HTTP_10)
            .uri(url.path.as_str())
            .header(HOST, url.authority())
            .header(CONNECTION, "close");
        for (k, v) in headers {
            let name = HeaderName::try_from(k.as_str())
                .map_err(|_| format!("header {k:?} is not a header name"))?;
            let value = HeaderValue::try_from(v.as_str())
                .map_err(|_| format!("header {k:?} holds a line break or a control character"))?;
            request = request.header(name, value);
        }
        let request = request
            .body(Empty::<Bytes>::new())
            .map_err(|e| format!("building the request: {e}"))?;
        let stream = TcpStream::connect((url.host.as_str(), url.port))
            .await
            .map_err(|e| format!("connecting to {}: {e}", url.authority()))?;
        let (mut sender, connection) = hyper::client::conn::http1::Builder::new()
            .title_case_headers(true)
            .handshake(TokioIo::new(stream))
            .await
            .map_err(|e| format!("opening the connection: {}", one_line(&e)))?;
        let connection = tokio::spawn(connection);
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| format!("reading the response: {}", one_line(&e)));
        let read = match response {
            Ok(response) => read_body(response).await,
            Err(e) => Err(e),
        };
        connection.abort();
        read
    };
    tokio::time::timeout(bound, exchange)
        .await
        .map_err(|_| format!("no complete response within {} s", bound.as_secs()))?
}

/// The status and at most [`MAX_RESPONSE`] bytes of the body of `response`.
async fn read_body(
    response: hyper::Response<hyper::body::Incoming>,
) -> Result<HttpResponse, String> {
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut kept = Vec::new();
    while kept.len() < MAX_RESPONSE {
        let Some(frame) = body.frame().await else {
            break;
        };
        let frame = frame.map_err(|e| format!("reading the response body: {}", one_line(&e)))?;
        if let Ok(data) = frame.into_data() {
            kept.extend_from_slice(&data);
        }
    }
    kept.truncate(MAX_RESPONSE);
    Ok(HttpResponse { status, body: kept })
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

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
            let e = HttpUrl::parse(bad).unwrap_err();
            assert!(!e.contains('\n') && e.contains(bad), "{bad}: {e}");
        }
    }

    /// A server on the loopback that reads one request, answers `reply`
    /// and closes; it hands back the request it read.
    async fn answering(reply: &'static [u8]) -> (HttpUrl, tokio::task::JoinHandle<String>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut conn, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let n = conn.read(&mut buf).await.unwrap();
            conn.write_all(reply).await.unwrap();
            String::from_utf8_lossy(&buf[..n]).into_owned()
        });
        let url = HttpUrl::parse(&format!("http://127.0.0.1:{port}/p")).unwrap();
        (url, server)
    }

    #[tokio::test]
    async fn responses_split_into_status_and_body() {
        let bound = Duration::from_secs(10);
        let (url, _server) = answering(b"HTTP/1.0 200 OK\r\nA: b\r\n\r\nbody").await;
        let r = get(&url, &BTreeMap::new(), bound).await.unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, &b"body"[..]));
        for (answer, broken) in [
            (
                &b"HTTP/1.0 200 OK\r\n"[..],
                "a response without a header end",
            ),
            (&b"SSH-2.0\r\n\r\n"[..], "a malformed status line"),
        ] {
            let (url, _server) = answering(answer).await;
            let e = get(&url, &BTreeMap::new(), bound).await.unwrap_err();
            assert!(
                e.starts_with("reading the response: ") && !e.contains('\n'),
                "{broken}: {e}"
            );
        }
    }

    #[tokio::test]
    async fn get_reads_a_loopback_server() {
        let (url, server) = answering(b"HTTP/1.0 404 Not Found\r\n\r\nnope").await;
        let mut headers = BTreeMap::new();
        headers.insert("X-Token".to_string(), "t".to_string());
        let r = get(&url, &headers, Duration::from_secs(10)).await.unwrap();
        assert_eq!((r.status, r.body.as_slice()), (404, &b"nope"[..]));
        let request = server.await.unwrap();
        assert!(request.starts_with("GET /p HTTP/1.0\r\n"), "{request}");
        assert!(request.contains("X-Token: t\r\n"), "{request}");
    }

    #[tokio::test]
    async fn a_silent_server_is_cut_off_at_the_bound_and_a_closed_port_refused() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let url = HttpUrl::parse(&format!("http://127.0.0.1:{port}/")).unwrap();
        let e = get(&url, &BTreeMap::new(), Duration::from_millis(200))
            .await
            .unwrap_err();
        assert_eq!(e, "no complete response within 0 s");
        drop(listener);
        let e = get(&url, &BTreeMap::new(), Duration::from_secs(10))
            .await
            .unwrap_err();
        assert!(
            e.starts_with(&format!("connecting to 127.0.0.1:{port}: ")),
            "{e}"
        );
    }

    /// A flooding server (a preview's workload is untrusted): the body is
    /// kept up to its bound and the exchange ends there, never reading on.
    #[tokio::test]
    async fn a_flooding_server_is_cut_at_the_body_bound() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut conn, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let _ = conn.read(&mut buf).await;
            let _ = conn.write_all(b"HTTP/1.0 200 OK\r\n\r\n").await;
            let chunk = vec![b'x'; 64 * 1024];
            while conn.write_all(&chunk).await.is_ok() {}
        });
        let url = HttpUrl::parse(&format!("http://127.0.0.1:{port}/")).unwrap();
        let r = get(&url, &BTreeMap::new(), Duration::from_secs(30))
            .await
            .unwrap();
        assert_eq!((r.status, r.body.len()), (200, MAX_RESPONSE));
    }

    #[tokio::test]
    async fn a_header_with_a_line_break_is_refused_before_anything_is_sent() {
        let url = HttpUrl::parse("http://127.0.0.1:9/").unwrap();
        let mut headers = BTreeMap::new();
        headers.insert("X-Token".to_string(), "t\r\nX-Evil: 1".to_string());
        let e = get(&url, &headers, Duration::from_secs(10))
            .await
            .unwrap_err();
        assert_eq!(
            e,
            "header \"X-Token\" holds a line break or a control character"
        );
    }
}
