//! Test servers on this machine's loopback, for egress probes of backends
//! whose workloads would otherwise share the host's network. Each answers
//! HTTP with `200 OK` to a bounded number of connections and stops when
//! dropped.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use corral_contract::HostPort;

use crate::target::{EgressFixture, EgressProbe};

/// Most connections one server answers before it stops by itself.
const MAX_CONNECTIONS: usize = 256;

/// One HTTP server on `127.0.0.1`.
#[derive(Debug)]
pub struct LoopbackServer {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl LoopbackServer {
    /// Starts two servers, each on a free loopback port: the allowed and
    /// the denied destination of a curl egress fixture.
    pub fn pair() -> std::io::Result<[Self; 2]> {
        Ok([Self::start()?, Self::start()?])
    }

    /// Starts a server on a free loopback port.
    pub fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming().take(MAX_CONNECTIONS) {
                if flag.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(mut conn) = conn else { continue };
                let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
                let mut buf = [0u8; 2048];
                let _ = conn.read(&mut buf);
                let _ = conn.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nok\n");
            }
        });
        Ok(Self {
            port,
            stop,
            thread: Some(thread),
        })
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:PORT`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

/// The egress fixture of a target whose sandboxes have `curl`: `allowed`
/// and `denied` are `host:port` destinations the target serves.
pub(crate) fn curl_fixture([allowed, denied]: [String; 2]) -> Option<EgressFixture> {
    Some(EgressFixture {
        allowed: HostPort::new(allowed).ok()?,
        denied: HostPort::new(denied).ok()?,
        probe: EgressProbe::Curl,
    })
}

impl Drop for LoopbackServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees the flag and ends.
        let _ = TcpStream::connect_timeout(
            &std::net::SocketAddr::from(([127, 0, 0, 1], self.port)),
            Duration::from_secs(1),
        );
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_and_stops_when_dropped() {
        let server = LoopbackServer::start().unwrap();
        let mut conn = TcpStream::connect(server.address()).unwrap();
        conn.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
        let mut reply = String::new();
        conn.read_to_string(&mut reply).unwrap();
        assert!(reply.starts_with("HTTP/1.0 200 OK"), "{reply}");
        drop(server);
    }
}
