//! A served E2bService on loopback and a small HTTP/1 client.

use std::sync::Arc;

use bytes::Bytes;
use corral_backend_memory::MemoryBackend;
use corral_e2b::{E2bConfig, E2bService};
use corral_wire::Token;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};

pub const KEY: &str = "e2b_0123456789abcdef0123456789abcdef";

/// The lifetime, in seconds, of a sandbox a row creates without a `timeout`.
pub const TEST_LIFETIME_S: u64 = 300;

/// A served service's address.
pub struct Served {
    pub addr: std::net::SocketAddr,
}

/// The service over a fresh memory backend, on loopback.
pub async fn serve() -> Served {
    serve_backend(Arc::new(MemoryBackend::new())).await
}

/// The service over `backend`, on loopback.
pub async fn serve_backend(backend: Arc<dyn corral_backend::Backend>) -> Served {
    serve_with(backend, E2bConfig::default()).await
}

/// The service over `backend` with `config`, on loopback.
pub async fn serve_with(backend: Arc<dyn corral_backend::Backend>, config: E2bConfig) -> Served {
    let service = E2bService::new(backend, Token::new(KEY).unwrap(), config);
    serve_service(service).await.0
}

/// `service` on loopback, and the task accepting its connections (abort
/// it to stop serving).
pub async fn serve_service(service: E2bService) -> (Served, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = service_fn(move |req| {
        let service = service.clone();
        async move { Ok::<_, std::convert::Infallible>(service.handle(req).await) }
    });
    let accepting = serve_connections(listener, service);
    (Served { addr }, accepting)
}

/// Serves HTTP/1, upgrades allowed, on each connection `listener` accepts;
/// the task accepting them.
pub fn serve_connections<S, B>(listener: TcpListener, service: S) -> tokio::task::JoinHandle<()>
where
    S: hyper::service::Service<
            hyper::Request<hyper::body::Incoming>,
            Response = hyper::Response<B>,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let service = service.clone();
            tokio::spawn(async move {
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .with_upgrades()
                    .await;
            });
        }
    })
}

/// A whole answer: status, headers and body.
pub struct Answer {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as JSON (null when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

impl Served {
    /// Sends a request and leaves its answer's body unread, to be read as
    /// it arrives.
    pub async fn open(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> hyper::Response<hyper::body::Incoming> {
        let stream = TcpStream::connect(self.addr).await.unwrap();
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(conn);
        let mut req = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("host", "localhost");
        for (k, v) in headers {
            req = req.header(*k, v.as_str());
        }
        sender
            .send_request(req.body(Full::new(Bytes::from(body))).unwrap())
            .await
            .unwrap()
    }

    /// Sends a request and reads its whole answer.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> Answer {
        let res = self.open(method, path, headers, body).await;
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        let body = res.into_body().collect().await.unwrap().to_bytes().to_vec();
        Answer {
            status,
            headers,
            body,
        }
    }

    /// A control-plane call with the API key.
    pub async fn api(&self, method: &str, path: &str, body: Value) -> Answer {
        let body = if body.is_null() {
            Vec::new()
        } else {
            serde_json::to_vec(&body).unwrap()
        };
        self.send(
            method,
            path,
            &[
                ("X-API-KEY", KEY.to_string()),
                ("content-type", "application/json".into()),
            ],
            body,
        )
        .await
    }

    /// A sandbox: its id and access token. A body without `timeout` gets
    /// [`TEST_LIFETIME_S`] rather than E2B's default of 15 s, which a heavy
    /// row on a loaded machine can outlive; rows about lifetimes set their own.
    pub async fn create(&self, mut body: Value) -> (String, String) {
        if let Some(fields) = body.as_object_mut() {
            fields
                .entry("timeout")
                .or_insert_with(|| Value::from(TEST_LIFETIME_S));
        }
        let a = self.api("POST", "/v2/sandboxes", body).await;
        assert_eq!(a.status, 201, "{}", String::from_utf8_lossy(&a.body));
        let v = a.json();
        (
            v["sandboxID"].as_str().unwrap().into(),
            v["envdAccessToken"].as_str().unwrap().into(),
        )
    }

    /// An envd call on sandbox `id`.
    pub async fn envd(
        &self,
        id: &str,
        token: &str,
        method: &str,
        path: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> Answer {
        let headers = sandbox_headers(id, token, &[("content-type", content_type)]);
        self.send(method, path, &headers, body).await
    }
}

/// The headers naming sandbox `id` with its access token, then `extra`.
pub fn sandbox_headers(
    id: &str,
    token: &str,
    extra: &[(&'static str, &str)],
) -> Vec<(&'static str, String)> {
    let mut headers = vec![
        ("E2b-Sandbox-Id", id.to_string()),
        ("X-Access-Token", token.to_string()),
    ];
    headers.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
    headers
}

/// The frames of a Connect stream: (flags, JSON).
pub fn frames(mut body: &[u8]) -> Vec<(u8, Value)> {
    let mut out = Vec::new();
    while body.len() >= 5 {
        let len = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
        out.push((body[0], serde_json::from_slice(&body[5..5 + len]).unwrap()));
        body = &body[5 + len..];
    }
    assert!(body.is_empty(), "a partial frame is left");
    out
}

/// One enveloped request message.
pub fn enveloped(value: &Value) -> Vec<u8> {
    let payload = serde_json::to_vec(value).unwrap();
    let mut v = vec![0u8];
    v.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    v.extend_from_slice(&payload);
    v
}

impl Served {
    /// A unary Connect call on sandbox `id` (JSON in, JSON out).
    pub async fn rpc(&self, id: &str, token: &str, procedure: &str, body: Value) -> Answer {
        self.envd(
            id,
            token,
            "POST",
            &format!("/{procedure}"),
            "application/json",
            serde_json::to_vec(&body).unwrap(),
        )
        .await
    }

    /// A `filesystem.Filesystem` unary call on sandbox `id`: `method`'s answer.
    pub async fn filesystem(&self, id: &str, token: &str, method: &str, body: Value) -> Answer {
        let procedure = format!("filesystem.Filesystem/{method}");
        self.rpc(id, token, &procedure, body).await
    }

    /// A streaming Connect call on sandbox `id` with the (enveloped) `body`.
    pub async fn stream(&self, id: &str, token: &str, procedure: &str, body: Vec<u8>) -> Answer {
        let path = format!("/{procedure}");
        self.envd(id, token, "POST", &path, "application/connect+json", body)
            .await
    }

    /// The answer to a download of `path`.
    pub async fn get_file(&self, id: &str, token: &str, path: &str) -> Answer {
        let path = format!("/files?path={path}");
        self.envd(id, token, "GET", &path, "", Vec::new()).await
    }

    /// Writes `bytes` to `path` with a raw upload.
    pub async fn put(&self, id: &str, token: &str, path: &str, bytes: &[u8]) {
        let a = self
            .envd(
                id,
                token,
                "POST",
                &format!("/files?path={path}"),
                "application/octet-stream",
                bytes.to_vec(),
            )
            .await;
        assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    }
}
