//! Test hosts for egress tests and conformance fixtures: each is a network
//! namespace this process creates (`corral-t-<rand>`), joined to the host by
//! a veth (`ctt<rand>`) on a private /30 of `10.233.0.0/16` — an address of
//! this machine only, never routed anywhere else — serving a fixed HTTP
//! answer on the ports asked for, until dropped. Dropping it stops the
//! servers and deletes the veth and the namespace.
//!
//! Forwarding is enabled only on the test host's own veth, never host-wide;
//! a sandbox reaches it only through its own allowlist (see
//! `corral_backend_linux::network`).

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// Why a test host could not be made.
#[derive(Debug, thiserror::Error)]
#[error("test host: {what}: {detail}")]
pub struct TestHostError {
    what: String,
    detail: String,
}

impl TestHostError {
    fn new(what: impl Into<String>, detail: impl std::fmt::Display) -> Self {
        Self {
            what: what.into(),
            detail: detail.to_string().replace('\n', " "),
        }
    }
}

/// One test host. See the module documentation.
#[derive(Debug)]
pub struct TestHost {
    netns: String,
    link: String,
    addr: Ipv4Addr,
    stop: Arc<AtomicBool>,
    servers: Vec<JoinHandle<()>>,
}

fn ip(args: &[&str]) -> Result<(), TestHostError> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| TestHostError::new(format!("ip {}", args.join(" ")), e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(TestHostError::new(
            format!("ip {}", args.join(" ")),
            String::from_utf8_lossy(&out.stderr).trim(),
        ))
    }
}

fn random_tag() -> Result<String, TestHostError> {
    let mut b = [0u8; 3];
    getrandom::fill(&mut b).map_err(|e| TestHostError::new("reading random bytes", e))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

impl TestHost {
    /// Makes a new test host (root, `ip` from iproute2, veth support).
    pub fn new() -> Result<TestHost, TestHostError> {
        let tag = random_tag()?;
        let netns = format!("corral-t-{tag}");
        let link = format!("ctt{tag}");
        let n = u32::from_str_radix(&tag[..4], 16).unwrap_or(1) % 16_383 + 1;
        let base = u32::from(Ipv4Addr::new(10, 233, 0, 0)) + n * 4;
        let host = TestHost {
            netns: netns.clone(),
            link: link.clone(),
            addr: Ipv4Addr::from(base + 2),
            stop: Arc::new(AtomicBool::new(false)),
            servers: Vec::new(),
        };
        // From here on, `host`'s Drop removes whatever was made.
        let gw = Ipv4Addr::from(base + 1).to_string();
        let inner = format!("{}/30", host.addr);
        ip(&["netns", "add", &netns])?;
        ip(&[
            "link", "add", &link, "type", "veth", "peer", "name", "eth0", "netns", &netns,
        ])?;
        ip(&["addr", "add", &format!("{gw}/30"), "dev", &link])?;
        ip(&["link", "set", &link, "up"])?;
        std::fs::write(format!("/proc/sys/net/ipv4/conf/{link}/forwarding"), "1")
            .map_err(|e| TestHostError::new(format!("enabling forwarding on {link}"), e))?;
        for args in [
            vec!["addr", "add", &inner, "dev", "eth0"],
            vec!["link", "set", "eth0", "up"],
            vec!["link", "set", "lo", "up"],
            vec!["route", "add", "default", "via", &gw],
        ] {
            let mut full = vec!["-n", netns.as_str()];
            full.extend(args);
            ip(&full)?;
        }
        Ok(host)
    }

    /// The test host's address.
    pub fn addr(&self) -> Ipv4Addr {
        self.addr
    }

    /// The name of its network namespace.
    pub fn netns(&self) -> &str {
        &self.netns
    }

    /// Serves `answer` over HTTP on `port`, from a listener made inside the
    /// namespace by a thread that entered it.
    pub fn serve(&mut self, port: u16, answer: &'static str) -> Result<(), TestHostError> {
        let path = format!("/run/netns/{}", self.netns);
        let addr = self.addr;
        let listener = std::thread::spawn(move || -> Result<TcpListener, TestHostError> {
            let ns = std::fs::File::open(&path).map_err(|e| TestHostError::new(&path, e))?;
            rustix::thread::move_into_link_name_space(
                std::os::fd::AsFd::as_fd(&ns),
                Some(rustix::thread::LinkNameSpaceType::Network),
            )
            .map_err(|e| TestHostError::new(format!("entering {path}"), e))?;
            TcpListener::bind((addr, port))
                .map_err(|e| TestHostError::new(format!("binding {addr}:{port}"), e))
        })
        .join()
        .map_err(|_| TestHostError::new("the listener thread", "panicked"))??;
        listener
            .set_nonblocking(true)
            .map_err(|e| TestHostError::new("a non-blocking listener", e))?;
        let stop = self.stop.clone();
        self.servers.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((s, _)) => answer_one(s, answer),
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        }));
        Ok(())
    }
}

/// Reads one request, answers it, and closes only after the client did
/// (closing with unread input would reset the connection and could lose
/// the answer).
fn answer_one(mut s: TcpStream, answer: &str) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_read_timeout(Some(Duration::from_secs(3)));
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let _ = write!(
        s,
        "HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{answer}",
        answer.len()
    );
    let _ = s.shutdown(std::net::Shutdown::Write);
    while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
}

impl Drop for TestHost {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for s in self.servers.drain(..) {
            let _ = s.join();
        }
        let _ = ip(&["link", "del", &self.link]);
        let _ = ip(&["netns", "del", &self.netns]);
    }
}
