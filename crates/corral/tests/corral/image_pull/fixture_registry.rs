//! A registry of the tests' own on loopback: the distribution API's GETs
//! served from a table the test fills (and may make lie), with optional
//! Basic or Docker Hub-style Bearer token auth, counting every request.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use base64::Engine as _;

use super::test_image::{Blob, MANIFEST_TYPE, TestImage};

/// One answer of the table.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
    /// Close the connection after this many body bytes (a cut transfer).
    pub cut_after: Option<usize>,
}

/// What the registry asks of a client.
#[derive(Debug, Clone)]
pub enum Auth {
    /// Nothing.
    Open,
    /// HTTP Basic with this user and password.
    Basic(String, String),
    /// A token from `/token`, given for Basic credentials (Docker Hub's way).
    Bearer(String, String),
}

const TOKEN: &str = "fixture-token";

struct State {
    answers: HashMap<String, Answer>,
    hits: Vec<String>,
    auth: Auth,
    /// Whether `Range: bytes=N-` gets a 206 of the rest (else the whole).
    ranges: bool,
}

/// The running registry; it stops serving when dropped (its thread ends at
/// the next connection, which drop makes).
pub struct FixtureRegistry {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl FixtureRegistry {
    pub fn start(auth: Auth) -> Self {
        Self::start_on(TcpListener::bind("127.0.0.1:0").unwrap(), auth)
    }

    /// Serves on `listener` (e.g. one on `[::1]`).
    pub fn start_on(listener: TcpListener, auth: Auth) -> Self {
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State {
            answers: HashMap::new(),
            hits: Vec::new(),
            auth,
            ranges: true,
        }));
        let shared = state.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                if Arc::strong_count(&shared) == 1 {
                    return; // the test dropped its handle
                }
                let shared = shared.clone();
                std::thread::spawn(move || serve(conn, addr, &shared));
            }
        });
        FixtureRegistry { addr, state }
    }

    /// `host:port` (`[v6]:port` on IPv6).
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    pub fn set(&self, path: &str, answer: Answer) {
        self.state
            .lock()
            .unwrap()
            .answers
            .insert(path.to_string(), answer);
    }

    /// Serves `image` as `repo:tag`, its manifest by tag and by digest.
    pub fn serve_image(&self, repo: &str, tag: &str, image: &TestImage) {
        let manifest = ok(MANIFEST_TYPE, &image.manifest.bytes);
        self.set(&format!("/v2/{repo}/manifests/{tag}"), manifest.clone());
        self.set(
            &format!("/v2/{repo}/manifests/{}", image.manifest.digest),
            manifest,
        );
        for b in std::iter::once(&image.config).chain(&image.layers) {
            self.serve_blob(repo, b);
        }
    }

    pub fn serve_blob(&self, repo: &str, b: &Blob) {
        self.set(
            &format!("/v2/{repo}/blobs/{}", b.digest),
            ok("application/octet-stream", &b.bytes),
        );
    }

    /// Whether ranges are honoured (they are by default).
    pub fn honour_ranges(&self, on: bool) {
        self.state.lock().unwrap().ranges = on;
    }

    /// The blob GETs so far (`GET /v2/…/blobs/sha256:…`).
    pub fn blob_hits(&self) -> Vec<String> {
        self.hits()
            .into_iter()
            .filter(|h| h.starts_with("GET ") && h.contains("/blobs/"))
            .collect()
    }

    pub fn hits(&self) -> Vec<String> {
        self.state.lock().unwrap().hits.clone()
    }

    pub fn clear_hits(&self) {
        self.state.lock().unwrap().hits.clear();
    }
}

impl Drop for FixtureRegistry {
    fn drop(&mut self) {
        let _ = TcpStream::connect(self.addr);
    }
}

pub fn ok(content_type: &str, body: &[u8]) -> Answer {
    Answer {
        status: 200,
        content_type: content_type.to_string(),
        body: body.to_vec(),
        cut_after: None,
    }
}

fn not_found(code: &str) -> Answer {
    let body =
        serde_json::json!({"errors": [{"code": code, "message": "unknown", "detail": null}]});
    Answer {
        status: 404,
        content_type: "application/json".into(),
        body: body.to_string().into_bytes(),
        cut_after: None,
    }
}

fn basic(user: &str, password: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Basic {encoded}")
}

fn serve(conn: TcpStream, addr: SocketAddr, state: &Mutex<State>) {
    let _ = conn.set_read_timeout(Some(std::time::Duration::from_secs(10)));
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("").to_string();
    let mut authorization = None;
    let mut range: Option<usize> = None;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("authorization") {
                authorization = Some(v.trim().to_string());
            } else if k.eq_ignore_ascii_case("range") {
                range = v
                    .trim()
                    .strip_prefix("bytes=")
                    .and_then(|r| r.strip_suffix('-'))
                    .and_then(|n| n.parse().ok());
            }
        }
    }
    let (answer, challenge, ranges) = {
        let mut s = state.lock().unwrap();
        s.hits.push(match range {
            Some(n) => format!("{method} {path} from {n}"),
            None => format!("{method} {path}"),
        });
        let (answer, challenge) = decide(&s, &path, authorization.as_deref(), addr);
        (answer, challenge, s.ranges)
    };
    match range {
        Some(n) if ranges && answer.status == 200 && n < answer.body.len() => {
            respond_range(conn, &answer, n)
        }
        _ => respond(conn, method == "HEAD", &answer, challenge.as_deref()),
    }
}

fn decide(
    s: &State,
    path: &str,
    authorization: Option<&str>,
    addr: SocketAddr,
) -> (Answer, Option<String>) {
    let unauthorized = |challenge: String| {
        let body = serde_json::json!({"errors": [{"code": "UNAUTHORIZED", "message": "authentication required", "detail": null}]});
        (
            Answer {
                status: 401,
                content_type: "application/json".into(),
                body: body.to_string().into_bytes(),
                cut_after: None,
            },
            Some(challenge),
        )
    };
    match &s.auth {
        Auth::Open => {}
        Auth::Basic(u, p) => {
            if authorization != Some(basic(u, p).as_str()) {
                return unauthorized("Basic realm=\"fixture\"".into());
            }
        }
        Auth::Bearer(u, p) => {
            if path == "/token" {
                if authorization == Some(basic(u, p).as_str()) {
                    let body = serde_json::json!({"token": TOKEN});
                    return (ok("application/json", body.to_string().as_bytes()), None);
                }
                return unauthorized("Basic realm=\"fixture\"".into());
            }
            if authorization != Some(format!("Bearer {TOKEN}").as_str()) {
                return unauthorized(format!(
                    "Bearer realm=\"http://{addr}/token\",service=\"fixture\""
                ));
            }
        }
    }
    if path == "/v2/" {
        return (ok("application/json", b"{}"), None);
    }
    let answer = s.answers.get(path).cloned().unwrap_or_else(|| {
        not_found(if path.contains("/manifests/") {
            "MANIFEST_UNKNOWN"
        } else {
            "BLOB_UNKNOWN"
        })
    });
    (answer, None)
}

/// A 206 of `a`'s body from byte `from`.
fn respond_range(mut conn: TcpStream, a: &Answer, from: usize) {
    let len = a.body.len();
    let head = format!(
        "HTTP/1.1 206 Partial Content\r\nContent-Type: {}\r\nContent-Length: {}\r\nContent-Range: bytes {from}-{}/{len}\r\nConnection: close\r\n\r\n",
        a.content_type,
        len - from,
        len - 1
    );
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(&a.body[from..]);
    let _ = conn.flush();
    let _ = conn.shutdown(std::net::Shutdown::Write);
    let _ = conn.read(&mut [0u8; 1]);
}

fn respond(mut conn: TcpStream, head_only: bool, a: &Answer, challenge: Option<&str>) {
    let reason = match a.status {
        200 => "OK",
        401 => "Unauthorized",
        404 => "Not Found",
        _ => "Status",
    };
    let mut head = format!(
        "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        a.status,
        a.content_type,
        a.body.len()
    );
    if let Some(c) = challenge {
        head.push_str(&format!("WWW-Authenticate: {c}\r\n"));
    }
    head.push_str("\r\n");
    if conn.write_all(head.as_bytes()).is_err() || head_only {
        return;
    }
    let body = match a.cut_after {
        Some(n) => &a.body[..n.min(a.body.len())],
        None => &a.body[..],
    };
    let _ = conn.write_all(body);
    let _ = conn.flush();
    // Drain what the client may still send, then close.
    let _ = conn.shutdown(std::net::Shutdown::Write);
    let _ = conn.read(&mut [0u8; 1]);
}
