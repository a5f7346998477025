//! A fault-injecting proxy on loopback, between a `WireProvider` and a
//! corral-wire server.
//!
//! Unary members pass one request at a time: a rule can send a request
//! upstream twice (the client gets the second reply), or drop the reply
//! after the server did the work. The `openProcess` WebSocket is relayed
//! message by message (the proxy is a WebSocket server to the client and a
//! WebSocket client to the server, after forwarding the upgrade as it
//! came), and a rule can act on one frame:
//!
//! - `Delay`: hold the frame (and, as on any ordered stream, everything
//!   behind it) for a while.
//! - `Duplicate`: forward it twice.
//! - `Swap`: forward it after the next frame of the same direction (or
//!   alone, if none follows within [`socket::HOLD`]).
//! - `Lose`: discard it and go on. A reliable transport never does that;
//!   it stands for a broken intermediary, and only the offsets of a later
//!   frame of the same stream can reveal it.
//! - `Drop`: discard it and every later frame of that direction for
//!   [`socket::LINGER`], then cut the connection. This is what a lost connection
//!   looks like: the sender believes those frames sent, they never
//!   arrive, and only a `replay` can recover them.
//! - `Cut`: cut the connection before the frame (both ends see the socket
//!   end without a WebSocket `Close`: lost, not closed).
//!
//! The first frame of each direction on a socket (`open`/`replay` and
//! `opened`/`resumed`/`error`) and `Close` frames are never touched: they
//! are the handshake and the goodbye, not the stream.
//!
//! Every rule fires once, at the `nth` (0-based) frame it matches counted
//! over the proxy's whole life, so a plan is deterministic in terms of
//! frames; [`Plan::seeded`] draws such rules from a seed so a failure
//! reproduces from the seed it prints. The proxy can also refuse every new
//! connection for a while (an outage), cut everything in flight, and
//! close its client connections as a server closes idle ones; it counts
//! the client connections it served, so a test sees whether a client
//! reused one.

mod socket;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use corral_wire::protocol::Stream;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{CONTENT_LENGTH, TRANSFER_ENCODING, UPGRADE};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{AbortHandle, JoinHandle};
use tokio_tungstenite::tungstenite::Message;

/// Which way a frame travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// Client to server (`open`, stdin, `ack`, …).
    Up,
    /// Server to client (`opened`, stdout, stderr, `credit`, `exit`, …).
    Down,
}

/// Which frames a rule counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// Binary `data` frames of this stream.
    Data(Stream),
    /// Control frames with this `frame` tag (`"ack"`, `"credit"`, …).
    Control(&'static str),
    /// Every frame.
    Any,
}

/// What happens to the frame a rule picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameFault {
    /// Held this long before it goes on.
    Delay(Duration),
    /// Forwarded twice.
    Duplicate,
    /// Forwarded after the next frame of its direction.
    Swap,
    /// Discarded; the connection goes on.
    Lose,
    /// Discarded with what follows for [`socket::LINGER`], then the connection is
    /// cut.
    Drop,
    /// The connection is cut before it.
    Cut,
}

/// One frame fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRule {
    /// The direction it watches.
    pub dir: Dir,
    /// The frames it counts.
    pub pick: Pick,
    /// It fires at the frame after `nth` matching ones.
    pub nth: usize,
    /// What it does.
    pub fault: FrameFault,
}

/// What happens to the unary request a rule picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryFault {
    /// Sent upstream twice, one after the other; the client gets the
    /// second reply.
    Duplicate,
    /// Sent upstream once; the reply is dropped and the client's
    /// connection closed without one.
    DropReply,
}

/// One unary fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnaryRule {
    /// The request path it watches (`/v1/destroy`).
    pub path: &'static str,
    /// It fires at the request after `nth` matching ones.
    pub nth: usize,
    /// What it does.
    pub fault: UnaryFault,
}

/// The faults a proxy injects.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Frame rules.
    pub frames: Vec<FrameRule>,
    /// Unary rules.
    pub unary: Vec<UnaryRule>,
}

/// A small deterministic generator (splitmix64): the same seed draws the
/// same plan.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n.max(1) as u64).unwrap_or(0)
    }
}

impl Plan {
    /// No faults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a frame rule.
    pub fn frame(mut self, dir: Dir, pick: Pick, nth: usize, fault: FrameFault) -> Self {
        self.frames.push(FrameRule {
            dir,
            pick,
            nth,
            fault,
        });
        self
    }

    /// Adds a unary rule.
    pub fn unary(mut self, path: &'static str, nth: usize, fault: UnaryFault) -> Self {
        self.unary.push(UnaryRule { path, nth, fault });
        self
    }

    /// `count` frame rules drawn from `seed`: each picks a direction, the
    /// data of that direction's main stream or any frame, an `nth` below
    /// `horizon`, and one of `faults`. A `Lose` always picks data: a
    /// control frame lost on a connection that stays up (a `credit`, an
    /// `exit`) has no offset after it to reveal the loss, and the run would
    /// wait for it forever.
    pub fn seeded(seed: u64, count: usize, horizon: usize, faults: &[FrameFault]) -> Self {
        let mut rng = SplitMix(seed);
        let mut plan = Self::new();
        for _ in 0..count {
            let dir = if rng.below(2) == 0 {
                Dir::Up
            } else {
                Dir::Down
            };
            let any = rng.below(3) == 0;
            let nth = rng.below(horizon);
            let fault = faults[rng.below(faults.len())];
            let pick = match dir {
                _ if any && fault != FrameFault::Lose => Pick::Any,
                Dir::Up => Pick::Data(Stream::Stdin),
                Dir::Down => Pick::Data(Stream::Stdout),
            };
            plan = plan.frame(dir, pick, nth, fault);
        }
        plan
    }
}

/// One reply the server gave to a unary request through the proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The request path.
    pub path: String,
    /// The HTTP status.
    pub status: u16,
    /// The body.
    pub body: Bytes,
}

/// A rule and how many matching things it has seen.
struct Armed<R> {
    rule: R,
    seen: usize,
    spent: bool,
}

fn arm<R: Copy>(rules: &[R]) -> Mutex<Vec<Armed<R>>> {
    Mutex::new(
        rules
            .iter()
            .map(|&rule| Armed {
                rule,
                seen: 0,
                spent: false,
            })
            .collect(),
    )
}

/// A rule that fires after `nth` matches.
trait Counted: Copy {
    fn nth(&self) -> usize;
}

impl Counted for FrameRule {
    fn nth(&self) -> usize {
        self.nth
    }
}

impl Counted for UnaryRule {
    fn nth(&self) -> usize {
        self.nth
    }
}

/// Counts a matching thing for every live rule and fires the first one
/// due.
fn fire<R: Counted>(rules: &mut [Armed<R>], matches: impl Fn(&R) -> bool) -> Option<R> {
    for armed in rules.iter_mut().filter(|a| !a.spent && matches(&a.rule)) {
        armed.seen += 1;
    }
    let due = rules
        .iter_mut()
        .find(|a| !a.spent && matches(&a.rule) && a.seen > a.rule.nth())?;
    due.spent = true;
    Some(due.rule)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What the proxy's tasks share.
pub(crate) struct State {
    upstream: SocketAddr,
    frames: Mutex<Vec<Armed<FrameRule>>>,
    unary: Mutex<Vec<Armed<UnaryRule>>>,
    fired: Mutex<Vec<String>>,
    replies: Mutex<Vec<Reply>>,
    sockets: AtomicUsize,
    outage: AtomicBool,
    live: Mutex<Vec<AbortHandle>>,
    /// Client connections served so far.
    served: AtomicUsize,
    /// The tasks serving client connections.
    connections: Mutex<Vec<JoinHandle<()>>>,
}

impl State {
    /// The fault for this frame, if a rule fires on it.
    fn decide(&self, dir: Dir, message: &Message) -> Option<FrameFault> {
        let matches = |rule: &FrameRule| {
            rule.dir == dir
                && match (rule.pick, message) {
                    (Pick::Any, _) => true,
                    (Pick::Data(stream), Message::Binary(b)) => b.first() == Some(&stream.tag()),
                    (Pick::Control(tag), Message::Text(t)) => {
                        serde_json::from_str::<serde_json::Value>(t)
                            .ok()
                            .and_then(|v| v.get("frame")?.as_str().map(|s| s == tag))
                            .unwrap_or(false)
                    }
                    _ => false,
                }
        };
        let rule = fire(&mut lock(&self.frames), matches)?;
        lock(&self.fired).push(format!("{rule:?}"));
        Some(rule.fault)
    }

    fn decide_unary(&self, path: &str) -> Option<UnaryFault> {
        let rule = fire(&mut lock(&self.unary), |r: &UnaryRule| r.path == path)?;
        lock(&self.fired).push(format!("{rule:?}"));
        Some(rule.fault)
    }

    fn track(&self, task: AbortHandle) {
        let mut live = lock(&self.live);
        live.retain(|t| !t.is_finished());
        live.push(task);
    }
}

/// The proxy. Dropping it cuts everything and stops accepting.
pub struct FaultProxy {
    /// Where it listens.
    pub addr: SocketAddr,
    state: Arc<State>,
    accept: AbortHandle,
}

impl FaultProxy {
    /// A proxy on `127.0.0.1:0` to `upstream`, injecting `plan`.
    pub async fn to(upstream: SocketAddr, plan: Plan) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State {
            upstream,
            frames: arm(&plan.frames),
            unary: arm(&plan.unary),
            fired: Mutex::default(),
            replies: Mutex::default(),
            sockets: AtomicUsize::new(0),
            outage: AtomicBool::new(false),
            live: Mutex::default(),
            served: AtomicUsize::new(0),
            connections: Mutex::default(),
        });
        let shared = Arc::clone(&state);
        let accept = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                if shared.outage.load(Ordering::SeqCst) {
                    continue;
                }
                shared.served.fetch_add(1, Ordering::SeqCst);
                let state = Arc::clone(&shared);
                let task = tokio::spawn(connection(tcp, state));
                shared.track(task.abort_handle());
                let mut connections = lock(&shared.connections);
                connections.retain(|t| !t.is_finished());
                connections.push(task);
            }
        })
        .abort_handle();
        Self {
            addr,
            state,
            accept,
        }
    }

    /// `http://ADDR`, for `WireProvider::connect`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Cuts every connection in flight: both ends see their socket end
    /// without a WebSocket `Close` (a reset or an EOF).
    pub fn cut(&self) {
        for task in lock(&self.state.live).drain(..) {
            task.abort();
        }
    }

    /// Closes every client connection, idle or not, as a server closes an
    /// idle connection: the socket ends, without a response or a
    /// `Connection: close`. Returns once every one is closed.
    pub async fn close_connections(&self) {
        let tasks: Vec<_> = lock(&self.state.connections).drain(..).collect();
        for task in tasks {
            task.abort();
            let _ = task.await;
        }
    }

    /// Client connections served so far (those an outage refused are not
    /// counted).
    pub fn connections(&self) -> usize {
        self.state.served.load(Ordering::SeqCst)
    }

    /// While on, every new connection is accepted and closed at once.
    pub fn outage(&self, on: bool) {
        self.state.outage.store(on, Ordering::SeqCst);
    }

    /// `openProcess` sockets relayed so far.
    pub fn sockets(&self) -> usize {
        self.state.sockets.load(Ordering::SeqCst)
    }

    /// Waits (at most ten seconds) until `n` sockets were relayed: the
    /// one a cut replaced has been replaced.
    pub async fn await_sockets(&self, n: usize) {
        let waited = tokio::time::timeout(Duration::from_secs(10), async {
            while self.sockets() < n {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
        assert!(waited.is_ok(), "{} sockets, awaited {n}", self.sockets());
    }

    /// The rules that fired, in order.
    pub fn fired(&self) -> Vec<String> {
        lock(&self.state.fired).clone()
    }

    /// The server's replies to requests for `path`, in order (a
    /// duplicated request has two).
    pub fn replies(&self, path: &str) -> Vec<Reply> {
        lock(&self.state.replies)
            .iter()
            .filter(|r| r.path == path)
            .cloned()
            .collect()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}

type Failure = Box<dyn std::error::Error + Send + Sync>;

/// Serves one client connection: requests are forwarded one by one.
async fn connection(tcp: TcpStream, state: Arc<State>) {
    let service = service_fn(move |request| handle(request, Arc::clone(&state)));
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(tcp), service)
        .with_upgrades()
        .await;
}

/// Sends one request upstream on a fresh connection.
async fn forward(
    state: &State,
    parts: &hyper::http::request::Parts,
    body: Bytes,
) -> Result<Response<Incoming>, Failure> {
    let tcp = TcpStream::connect(state.upstream).await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await?;
    tokio::spawn(conn.with_upgrades());
    let mut request = Request::builder()
        .method(parts.method.clone())
        .uri(parts.uri.clone())
        .body(Full::new(body))?;
    *request.headers_mut() = parts.headers.clone();
    Ok(sender.send_request(request).await?)
}

/// Reads a reply whole and records it.
async fn settle(
    state: &State,
    path: &str,
    response: Response<Incoming>,
) -> Result<Response<Full<Bytes>>, Failure> {
    let (mut parts, body) = response.into_parts();
    let body = body.collect().await?.to_bytes();
    lock(&state.replies).push(Reply {
        path: path.to_owned(),
        status: parts.status.as_u16(),
        body: body.clone(),
    });
    parts.headers.remove(CONTENT_LENGTH);
    parts.headers.remove(TRANSFER_ENCODING);
    Ok(Response::from_parts(parts, Full::new(body)))
}

async fn handle(
    mut request: Request<Incoming>,
    state: Arc<State>,
) -> Result<Response<Full<Bytes>>, Failure> {
    if request.headers().contains_key(UPGRADE) {
        let client = hyper::upgrade::on(&mut request);
        let (parts, _) = request.into_parts();
        let mut response = forward(&state, &parts, Bytes::new()).await?;
        if response.status() != StatusCode::SWITCHING_PROTOCOLS {
            return settle(&state, parts.uri.path(), response).await;
        }
        let server = hyper::upgrade::on(&mut response);
        let shared = Arc::clone(&state);
        let task = tokio::spawn(async move {
            if let (Ok(client), Ok(server)) = (client.await, server.await) {
                socket::relay(client, server, &shared).await;
            }
        });
        // Counted once a cut can reach it.
        state.track(task.abort_handle());
        state.sockets.fetch_add(1, Ordering::SeqCst);
        let (parts, _) = response.into_parts();
        return Ok(Response::from_parts(parts, Full::new(Bytes::new())));
    }
    let (parts, body) = request.into_parts();
    let body = body.collect().await?.to_bytes();
    let path = parts.uri.path().to_owned();
    let fault = state.decide_unary(&path);
    let mut reply = settle(&state, &path, forward(&state, &parts, body.clone()).await?).await?;
    match fault {
        Some(UnaryFault::Duplicate) => {
            reply = settle(&state, &path, forward(&state, &parts, body).await?).await?;
        }
        Some(UnaryFault::DropReply) => return Err("reply dropped".into()),
        _ => {}
    }
    Ok(reply)
}
