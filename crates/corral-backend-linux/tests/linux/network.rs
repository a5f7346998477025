//! `network: allowlist` against test hosts in network namespaces this test
//! makes (private addresses on this machine's veths only): an allowlisted
//! sandbox reaches exactly its destinations, a `none` sandbox nothing, and
//! nothing (veth, namespace, table) outlives destroy or the test.

use std::io::Write;
use std::net::Ipv4Addr;
use std::process::Command as Proc;
use std::time::Duration;

use corral_backend::{
    Backend, CollectedOutput, Command, CreateRequest, Destination, ExecRequest, ExitStatus, Network,
};
use corral_backend_linux::LinuxBackend;
use corral_backend_linux::network::link_name;
use corral_testkit::testhost::TestHost;

use crate::common;
use common::StateDir;

fn backend(test: &str) -> Option<(LinuxBackend, StateDir)> {
    let (b, guard) = common::backend(test)?;
    if let Err(reason) = corral_backend_linux::network::available() {
        println!("SKIP {test}: {reason}");
        return None;
    }
    assert!(b.capabilities().enforces.network_allowlist);
    Some((b, guard))
}

fn ip(args: &[&str]) -> bool {
    Proc::new("ip")
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

fn rand_hex(n: usize) -> String {
    corral_backend::statefile::random_hex().unwrap()[..n].to_string()
}

/// What `curl http://addr:port/` prints inside the sandbox (`None` when it
/// fails: refused, dropped, timed out).
async fn fetch(b: &LinuxBackend, id: &str, addr: Ipv4Addr, port: u16) -> Option<String> {
    let mut out = CollectedOutput::default();
    let url = format!("http://{addr}:{port}/");
    let outcome = b
        .exec(
            id,
            ExecRequest::new(Command::argv(["curl", "-s", "-m", "3", &url]).unwrap())
                .timeout(Duration::from_secs(20)),
            &mut out,
        )
        .await
        .unwrap();
    (outcome.status == ExitStatus::Code(0)).then(|| String::from_utf8_lossy(&out.stdout).into())
}

fn host_table_exists(name: &str) -> bool {
    Proc::new("nft")
        .args(["list", "table", "netdev", name])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The host's `FORWARD` rules naming `link` (none without `iptables`).
fn forward_rules(link: &str) -> usize {
    Proc::new("iptables")
        .args(["-w", "5", "-S", "FORWARD"])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|l| l.contains(&format!("corral {link}")))
                .count()
        })
        .unwrap_or(0)
}

fn has_iptables() -> bool {
    Proc::new("iptables")
        .args(["-w", "5", "-S", "FORWARD"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn no_curl(test: &str) -> bool {
    let missing = !std::path::Path::new("/usr/bin/curl").exists();
    if missing {
        println!("SKIP {test}: curl is not installed in /usr/bin (the host image's)");
    }
    missing
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowlist_reaches_only_its_destination_and_leaves_nothing() {
    let test = "allowlist_reaches_only_its_destination_and_leaves_nothing";
    let Some((b, _dir)) = backend(test) else {
        return;
    };
    if no_curl(test) {
        return;
    }
    let (mut a, mut other) = (
        TestHost::new().expect("a test host"),
        TestHost::new().expect("a test host"),
    );
    a.serve(8080, "hello-a").expect("serving on the test host");
    a.serve(8081, "hello-a-other-port")
        .expect("serving on the test host");
    other
        .serve(8080, "hello-b")
        .expect("serving on the test host");
    let req = CreateRequest {
        network: Network::Allowlist {
            destinations: vec![Destination::new(&a.addr().to_string(), 8080).unwrap()],
        },
        ..CreateRequest::default()
    };
    let info = b.create(req).await.unwrap();
    let link = link_name(&info.id);
    assert!(std::path::Path::new("/sys/class/net").join(&link).exists());
    assert!(host_table_exists(&link), "the host-side table exists");
    if has_iptables() {
        assert_eq!(forward_rules(&link), 2, "FORWARD lets the link through");
    }

    // What the allowlist lets through: (destination, port, answer, what).
    let reach: [(Ipv4Addr, u16, Option<&str>, &str); 3] = [
        (a.addr(), 8080, Some("hello-a"), "A, the allowed port"),
        (a.addr(), 8081, None, "A, other port"),
        (other.addr(), 8080, None, "host B"),
    ];
    for (addr, port, answer, what) in reach {
        let got = fetch(&b, &info.id, addr, port).await;
        assert_eq!(got.as_deref(), answer, "{what}");
    }

    // The workload cannot lift the filter: no CAP_NET_ADMIN anywhere.
    let mut out = CollectedOutput::default();
    let outcome = b
        .exec(
            &info.id,
            ExecRequest::new(
                Command::shell("grep CapBnd /proc/self/status; nft flush ruleset").unwrap(),
            ),
            &mut out,
        )
        .await
        .unwrap();
    assert_ne!(outcome.status, ExitStatus::Code(0), "nft flush is refused");
    let bnd = String::from_utf8_lossy(&out.stdout);
    let mask = u64::from_str_radix(bnd.split_whitespace().nth(1).unwrap(), 16).unwrap();
    assert_eq!(
        mask & (1 << 12),
        0,
        "CAP_NET_ADMIN is not in the bounding set"
    );
    assert_eq!(
        fetch(&b, &info.id, other.addr(), 8080).await,
        None,
        "still filtered"
    );

    // The host-side filter holds alone: with the namespace's table removed
    // (by the host; the workload cannot), B stays out of reach.
    let init_pid = b.native(&info.id).await.unwrap()["init_pid"]
        .as_u64()
        .unwrap();
    let removed = Proc::new("nsenter")
        .arg(format!("--net=/proc/{init_pid}/ns/net"))
        .args(["nft", "delete", "table", "inet", "corral"])
        .status()
        .unwrap();
    assert!(removed.success(), "the sandbox's table existed");
    for (addr, port, answer, what) in reach {
        let got = fetch(&b, &info.id, addr, port).await;
        assert_eq!(got.as_deref(), answer, "host filter alone: {what}");
    }

    b.destroy(&info.id).await.unwrap();
    assert!(!std::path::Path::new("/sys/class/net").join(&link).exists());
    assert!(!host_table_exists(&link), "the host-side table is gone");
    assert_eq!(forward_rules(&link), 0, "the FORWARD rules are gone");
    let (na, nb) = (a.netns().to_string(), other.netns().to_string());
    drop((a, other));
    let left = Proc::new("ip").args(["netns", "list"]).output().unwrap();
    let left = String::from_utf8_lossy(&left.stdout);
    assert!(
        !left.contains(&na) && !left.contains(&nb),
        "test namespaces are gone"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn none_reaches_no_test_host() {
    let test = "none_reaches_no_test_host";
    let Some((b, _dir)) = backend(test) else {
        return;
    };
    if no_curl(test) {
        return;
    }
    let mut a = TestHost::new().expect("a test host");
    a.serve(8080, "hello-a").expect("serving on the test host");
    let info = b
        .create(CreateRequest {
            network: Network::None,
            ..CreateRequest::default()
        })
        .await
        .unwrap();
    assert!(
        !std::path::Path::new("/sys/class/net")
            .join(link_name(&info.id))
            .exists()
    );
    assert_eq!(fetch(&b, &info.id, a.addr(), 8080).await, None);
    b.destroy(&info.id).await.unwrap();
}

// SDK spec, "Rules an adapter must follow": fail closed — never create a
// sandbox that is more open than requested (a destination the allowlist
// cannot enforce is refused and nothing is made).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ipv6_destination_is_refused_and_leaves_nothing() {
    let Some((b, dir)) = backend("an_ipv6_destination_is_refused_and_leaves_nothing") else {
        return;
    };
    let err = b
        .create(CreateRequest {
            network: Network::Allowlist {
                destinations: vec![Destination::new("[fd00::1]", 80).unwrap()],
            },
            ..CreateRequest::default()
        })
        .await
        .unwrap_err();
    assert!(err.to_string().contains("IPv6"), "{err}");
    let sandboxes = dir.path().join("linux/sandboxes");
    assert_eq!(std::fs::read_dir(sandboxes).unwrap().count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_table_whose_link_is_gone_is_swept() {
    let Some((_b, _dir)) = backend("a_host_table_whose_link_is_gone_is_swept") else {
        return;
    };
    // A table left as a crash would leave it: its link deleted under it.
    let name = format!("crl{}", rand_hex(12));
    let peer = format!("ctt{}", &name[3..9]);
    assert!(ip(&[
        "link", "add", &name, "type", "veth", "peer", "name", &peer
    ]));
    let rules = format!(
        "table netdev {name} {{\n chain ingress {{\n  type filter hook ingress device \"{name}\" priority 0; policy drop;\n }}\n}}\n"
    );
    let mut nft = Proc::new("nft")
        .args(["-f", "-"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    nft.stdin
        .take()
        .unwrap()
        .write_all(rules.as_bytes())
        .unwrap();
    let made = nft.wait().unwrap().success();
    assert!(ip(&["link", "del", &name]));
    assert!(made, "the table was made");
    assert!(host_table_exists(&name), "the table outlives its link");
    // And FORWARD rules a crash left for a link that is gone.
    let stray = format!("crl{}", rand_hex(12));
    let iptables = has_iptables();
    if iptables {
        let comment = format!("corral {stray}");
        assert!(
            Proc::new("iptables")
                .args(["-w", "5", "-I", "FORWARD", "-i", &stray, "-m", "comment"])
                .args(["--comment", &comment, "-j", "ACCEPT"])
                .status()
                .unwrap()
                .success()
        );
        assert_eq!(forward_rules(&stray), 1);
    }
    // A concurrent `gc` (which sweeps too) may get there first.
    let removed = corral_backend_linux::network::sweep_tables().unwrap();
    assert!(
        !host_table_exists(&name),
        "the table is swept ({removed:?})"
    );
    if iptables {
        assert_eq!(forward_rules(&stray), 0, "the rule is swept ({removed:?})");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_allowlisted_sandboxes_each_reach_only_their_own_destination() {
    let test = "two_allowlisted_sandboxes_each_reach_only_their_own_destination";
    let Some((b, _dir)) = backend(test) else {
        return;
    };
    if no_curl(test) {
        return;
    }
    let (mut a, mut other) = (
        TestHost::new().expect("a test host"),
        TestHost::new().expect("a test host"),
    );
    a.serve(8080, "hello-a").expect("serving on the test host");
    other
        .serve(8080, "hello-b")
        .expect("serving on the test host");
    let allow = |addr: Ipv4Addr| CreateRequest {
        network: Network::Allowlist {
            destinations: vec![Destination::new(&addr.to_string(), 8080).unwrap()],
        },
        ..CreateRequest::default()
    };
    let (x, y) = tokio::join!(b.create(allow(a.addr())), b.create(allow(other.addr())));
    let (x, y) = (x.unwrap(), y.unwrap());
    assert_eq!(
        fetch(&b, &x.id, a.addr(), 8080).await.as_deref(),
        Some("hello-a")
    );
    assert_eq!(fetch(&b, &x.id, other.addr(), 8080).await, None);
    assert_eq!(
        fetch(&b, &y.id, other.addr(), 8080).await.as_deref(),
        Some("hello-b")
    );
    assert_eq!(fetch(&b, &y.id, a.addr(), 8080).await, None);
    for info in [&x, &y] {
        b.destroy(&info.id).await.unwrap();
        let link = link_name(&info.id);
        assert!(!std::path::Path::new("/sys/class/net").join(&link).exists());
        assert!(!host_table_exists(&link));
    }
}

/// The /30 of `a` as a CIDR with its host bits set (they are cleared).
fn block_of(a: Ipv4Addr) -> String {
    format!("{a}/30")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cidr_destination_admits_exactly_the_hosts_inside_it() {
    let test = "a_cidr_destination_admits_exactly_the_hosts_inside_it";
    let Some((b, _dir)) = backend(test) else {
        return;
    };
    if no_curl(test) {
        return;
    }
    let mut a = TestHost::new().expect("a test host");
    let mut other = TestHost::new().expect("a test host");
    // Two test hosts in one /30 would make "outside" meaningless: retry.
    while u32::from(other.addr()) & !3 == u32::from(a.addr()) & !3 {
        other = TestHost::new().expect("a test host");
    }
    a.serve(8080, "hello-a").expect("serving on the test host");
    a.serve(8081, "hello-a-other-port")
        .expect("serving on the test host");
    other
        .serve(8080, "hello-b")
        .expect("serving on the test host");
    let allow = |host: String| CreateRequest {
        network: Network::Allowlist {
            destinations: vec![Destination::new(&host, 8080).unwrap()],
        },
        ..CreateRequest::default()
    };

    // A's /30: A inside, B outside.
    let narrow = b.create(allow(block_of(a.addr()))).await.unwrap();
    assert_eq!(
        fetch(&b, &narrow.id, a.addr(), 8080).await.as_deref(),
        Some("hello-a"),
        "inside the block"
    );
    assert_eq!(
        fetch(&b, &narrow.id, other.addr(), 8080).await,
        None,
        "outside the block"
    );
    assert_eq!(
        fetch(&b, &narrow.id, a.addr(), 8081).await,
        None,
        "inside the block, another port"
    );

    // The whole test range: both inside, the port still pinned.
    let wide = b.create(allow("10.233.0.0/16".to_string())).await.unwrap();
    assert_eq!(
        fetch(&b, &wide.id, a.addr(), 8080).await.as_deref(),
        Some("hello-a")
    );
    assert_eq!(
        fetch(&b, &wide.id, other.addr(), 8080).await.as_deref(),
        Some("hello-b")
    );
    assert_eq!(fetch(&b, &wide.id, a.addr(), 8081).await, None);

    // Malformed and IPv6 blocks are refused before anything is made.
    let before = b.list(&Default::default()).await.unwrap().len();
    // (A malformed block cannot be made a destination at all; an IPv6 one
    // can, and the backend refuses it.)
    for bad in ["10.233.0.0/40", "fd00::/8", "10.233.0.0/"] {
        let err = match Destination::new(bad, 8080) {
            Err(refused) => corral_backend::BackendError::from(refused),
            Ok(_) => b.create(allow(bad.to_string())).await.unwrap_err(),
        };
        assert_eq!(
            err.code(),
            corral_backend::ErrorCode::InvalidInput,
            "{bad}: {err}"
        );
        assert!(err.message().contains(bad), "{err}");
    }
    assert_eq!(b.list(&Default::default()).await.unwrap().len(), before);
    b.destroy(&narrow.id).await.unwrap();
    b.destroy(&wide.id).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preview_reaches_an_allowlisted_sandbox() {
    let test = "a_preview_reaches_an_allowlisted_sandbox";
    let Some((b, _dir)) = backend(test) else {
        return;
    };
    let req = CreateRequest {
        network: Network::Allowlist {
            destinations: vec![Destination::new("10.233.0.1", 9).unwrap()],
        },
        ports: vec![7000],
        ..CreateRequest::default()
    };
    let info = b.create(req).await.unwrap();
    let url = b.preview_url(&info.id, 7000).await.unwrap().url;
    let port: u16 = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    // A one-shot server inside (the input filter admits loopback).
    let ops = b.process_ops().unwrap();
    let server = ops
        .start_process(
            &info.id,
            corral_backend::ProcessSpec {
                command: Command::argv([
                    "python3",
                    "-c",
                    "import socket\ns = socket.socket()\n\
                     s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n\
                     s.bind(('127.0.0.1', 7000)); s.listen(1)\n\
                     c, _ = s.accept(); c.sendall(b'through-the-filter'); c.close()\n",
                ])
                .unwrap(),
                cwd: None,
                env: Default::default(),
                run_as: None,
            },
        )
        .await;
    if server.is_err() {
        println!("SKIP {test}: no python3 in the host image");
        return;
    }
    let mut got = None;
    for _ in 0..150 {
        let r = tokio::task::spawn_blocking(move || {
            let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
            s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
            let mut text = String::new();
            std::io::Read::read_to_string(&mut s, &mut text).ok()?;
            (!text.is_empty()).then_some(text)
        })
        .await
        .unwrap();
        if r.is_some() {
            got = r;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(got.as_deref(), Some("through-the-filter"));
    b.destroy(&info.id).await.unwrap();
}
