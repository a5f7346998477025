//! Issue 12, item 3: user namespaces by default. Sandbox root is root of a
//! user namespace of its own, mapped to an unprivileged host id range
//! (from 2^31, one per sandbox): root inside, never root on the host.

use std::time::Duration;

use corral_backend::{Backend, CollectedOutput, Command, CreateRequest, ExecRequest};

use super::Host;

/// The first host id corral hands to sandboxes.
const FIRST_HOST_ID: u64 = 1 << 31;

/// A row of [`INSIDE`]: (issue item, script, check of its stdout).
type Row = (&'static str, &'static str, fn(&str) -> bool);

/// Attacks and probes run inside a sandbox → what must come out.
const INSIDE: &[Row] = &[
    (
        "issue item 3: `id` says root inside",
        "id -u; id -g",
        |out| out == "0\n0\n",
    ),
    (
        "issue item 3: /proc/self/uid_map is not the identity map",
        "cat /proc/self/uid_map",
        |out| mapped_start(out).is_some_and(|s| s >= FIRST_HOST_ID),
    ),
    (
        "issue item 3: /proc/self/gid_map is not the identity map",
        "cat /proc/self/gid_map",
        |out| mapped_start(out).is_some_and(|s| s >= FIRST_HOST_ID),
    ),
    (
        "issue item 3: the writable root belongs to root inside",
        "stat -c '%u:%g' / /workspace /tmp /root; touch /workspace/f && stat -c '%u' /workspace/f",
        |out| out == "0:0\n0:0\n0:0\n0:0\n0\n",
    ),
    (
        "issue item 3: writing the kernel's hostname tunable fails",
        "echo evil > /proc/sys/kernel/hostname 2>/dev/null && echo WROTE; cat /proc/sys/kernel/hostname",
        |out| !out.contains("WROTE") && !out.contains("evil"),
    ),
    (
        "issue item 3: a nested user namespace is refused",
        "unshare -U -r true 2>/dev/null && echo NESTED || echo refused",
        |out| out == "refused\n",
    ),
    (
        "issue item 3: root inside holds no capability over the host's user namespace",
        "cat /proc/self/uid_map | awk '{print $1}'; grep -c . /proc/self/uid_map",
        |out| out == "0\n1\n",
    ),
];

/// `0 <start> <count>`: the host id sandbox 0 maps to, when the map is one
/// line that is not the identity.
fn mapped_start(map: &str) -> Option<u64> {
    let lines: Vec<&str> = map.lines().collect();
    let [line] = lines.as_slice() else {
        return None;
    };
    let f: Vec<u64> = line
        .split_whitespace()
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    match f.as_slice() {
        [0, 0, 4294967295] => None,
        [0, start, 65536] => Some(*start),
        _ => None,
    }
}

/// Every row of [`INSIDE`] in one sandbox.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inside_the_sandbox_root_is_root_of_its_own_user_namespace() {
    let Some(h) = Host::new("inside_the_sandbox_root_is_root_of_its_own_user_namespace").await
    else {
        return;
    };
    let id = h.sandbox(CreateRequest::default()).await;
    for (item, script, ok) in INSIDE {
        let (_, out, err) = h.sh(&id, script).await;
        assert!(
            ok(&out),
            "{item}: `{script}` printed {out:?} (stderr {err:?})"
        );
    }
    h.still_answers().await;
}

/// The host uids of process `pid` (real, effective, saved, fs).
fn host_uids(pid: u32) -> Vec<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    line.split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap())
        .collect()
}

fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    after.split_whitespace().nth(1)?.parse().ok()
}

fn record_pid(h: &Host, id: &str) -> u32 {
    let meta = h
        ._dir
        .path()
        .join(format!("linux/sandboxes/{id}/meta.json"));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(meta).unwrap()).unwrap();
    v["init_pid"].as_u64().unwrap() as u32
}

/// Issue item 3: on the host, PID 1, its outer init and an exec'd process
/// all run under the sandbox's mapped uid (≥ 2^31), never 0; a file
/// written inside is owned by that uid on the host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_host_every_sandbox_process_runs_under_the_mapped_uid() {
    let Some(h) = Host::new("on_the_host_every_sandbox_process_runs_under_the_mapped_uid").await
    else {
        return;
    };
    let id = h.sandbox(CreateRequest::default()).await;
    let (_, map, _) = h.sh(&id, "cat /proc/self/uid_map").await;
    let start = mapped_start(&map).expect("a mapped range");
    let pid1 = record_pid(&h, &id);
    let outer = parent_of(pid1).unwrap();
    for (what, pid) in [("PID 1", pid1), ("the outer init", outer)] {
        assert_eq!(host_uids(pid), vec![start; 4], "{what} ({pid})");
    }
    let b = h.backend.clone();
    let sid = id.clone();
    let sleeper = tokio::spawn(async move {
        let mut out = CollectedOutput::default();
        let req = ExecRequest::new(Command::shell("exec sleep 5").unwrap())
            .timeout(Duration::from_secs(10));
        b.exec(&sid, req, &mut out).await
    });
    let mut found = None;
    for _ in 0..100 {
        found = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .find(|p| {
                parent_of(*p) == Some(pid1)
                    && std::fs::read_to_string(format!("/proc/{p}/comm"))
                        .is_ok_and(|c| c == "sleep\n")
            });
        if found.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let exec = found.expect("the exec'd sleep on the host");
    assert_eq!(
        host_uids(exec),
        vec![start; 4],
        "the exec'd process ({exec})"
    );
    sleeper.abort();
    let (_, out, _) = h.sh(&id, "echo x > /workspace/owned; id -u").await;
    assert_eq!(out, "0\n");
    let file = h
        ._dir
        .path()
        .join(format!("linux/sandboxes/{id}/fs/root/workspace/owned"));
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(&file).unwrap();
    assert_eq!(
        (meta.uid() as u64, meta.gid() as u64),
        (start, start),
        "{}",
        file.display()
    );
    h.still_answers().await;
}

/// Issue item 3: two sandboxes get disjoint id ranges, and a destroyed
/// sandbox's range is released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sandboxes_get_disjoint_id_ranges() {
    let Some(h) = Host::new("two_sandboxes_get_disjoint_id_ranges").await else {
        return;
    };
    let a = h.sandbox(CreateRequest::default()).await;
    let b = h.sandbox(CreateRequest::default()).await;
    let start = |out: String| mapped_start(&out).expect("a mapped range");
    let sa = start(h.sh(&a, "cat /proc/self/uid_map").await.1);
    let sb = start(h.sh(&b, "cat /proc/self/uid_map").await.1);
    assert!(sa.abs_diff(sb) >= 65536, "ranges {sa} and {sb} overlap");
    // Destroyed, a sandbox's claim is gone (or already another's).
    h.backend.destroy(&a).await.unwrap();
    let claim = h
        ._dir
        .path()
        .join(format!("linux/id-ranges/{}", (sa - FIRST_HOST_ID) / 65536));
    let owner = std::fs::read_to_string(&claim).unwrap_or_default();
    assert_ne!(owner, a, "{} still names {a}", claim.display());
}

/// Issue item 3: a sandbox that takes every inotify instance its user may
/// have does not make host root's `inotify_init` fail (the kernel counts
/// them against the sandbox's host uid, not host root's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_exhausting_inotify_leaves_host_root_its_own() {
    let name = "a_sandbox_exhausting_inotify_leaves_host_root_its_own";
    let Some(h) = Host::new(name).await else {
        return;
    };
    let id = h.sandbox(CreateRequest::default()).await;
    let py = h.sh(&id, "command -v python3").await;
    if !super::has_python(&py) {
        println!("SKIP {name}: the host image has no python3 to call inotify_init");
        return;
    }
    let max: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_user_instances")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let script = format!(
        "python3 -c '
import ctypes, time
libc = ctypes.CDLL(None)
fds = [libc.inotify_init() for _ in range({n})]
open(\"/workspace/count\", \"w\").write(str(sum(1 for f in fds if f >= 0)))
time.sleep(4)
'",
        n = max + 16
    );
    let b = h.backend.clone();
    let sid = id.clone();
    let holder = tokio::spawn(async move {
        let mut out = CollectedOutput::default();
        let req =
            ExecRequest::new(Command::shell(&script).unwrap()).timeout(Duration::from_secs(20));
        b.exec(&sid, req, &mut out).await
    });
    let count = h
        ._dir
        .path()
        .join(format!("linux/sandboxes/{id}/fs/root/workspace/count"));
    let mut held = None;
    for _ in 0..200 {
        if let Ok(text) = std::fs::read_to_string(&count)
            && let Ok(n) = text.parse::<usize>()
        {
            held = Some(n);
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let held = held.expect("the sandbox reported its inotify instances");
    assert!(
        held < max + 16,
        "the sandbox's own per-user limit holds ({held})"
    );
    let mine = rustix::fs::inotify::init(rustix::fs::inotify::CreateFlags::CLOEXEC);
    assert!(
        mine.is_ok(),
        "host root's inotify_init while the sandbox holds {held}: {mine:?}"
    );
    let _ = holder.await;
    h.still_answers().await;
}

/// Issue item 3: files of the host's `/usr` show as owned by root inside
/// (idmapped mounts), where the kernel has idmapped mounts for that file
/// system; otherwise they show as `nobody` and stay readable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_usr_shows_root_as_owner_inside_where_idmapped_mounts_work() {
    let name = "host_usr_shows_root_as_owner_inside_where_idmapped_mounts_work";
    let Some(h) = Host::new(name).await else {
        return;
    };
    let id = h.sandbox(CreateRequest::default()).await;
    let (_, out, _) = h
        .sh(
            &id,
            "stat -c '%u' /usr/bin/env; test -r /usr/bin/env && echo readable",
        )
        .await;
    if out == "65534\nreadable\n" {
        println!(
            "SKIP {name}: the host's /usr does not take idmapped mounts (files show as nobody)"
        );
        return;
    }
    assert_eq!(out, "0\nreadable\n");
    let (code, _, _) = h.sh(&id, "touch /usr/bin/corral-probe").await;
    assert_ne!(code, 0, "root inside cannot write the host's /usr");
    assert!(!std::path::Path::new("/usr/bin/corral-probe").exists());
}

/// The switch for measuring: a backend opened without
/// `Layer::UserNamespace` (the bench's row only) runs sandboxes without a
/// user namespace — and every backend opened normally has one (the other
/// tests here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_layer_for_measuring_the_sandbox_has_no_user_namespace() {
    let name = "without_the_layer_for_measuring_the_sandbox_has_no_user_namespace";
    let Some((_, _normal)) = super::common::backend(name) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let b = corral_backend_linux::LinuxBackend::open_measuring(
        dir.path(),
        &[corral_backend_linux::layers::Layer::UserNamespace],
    )
    .unwrap();
    let _cleanup = super::common::StateDir(b.clone(), Some(dir));
    let id = b.create(CreateRequest::default()).await.unwrap().id;
    let map = super::common::sh(&b, &id, "cat /proc/self/uid_map").await;
    assert_eq!(
        map.split_whitespace().collect::<Vec<_>>(),
        ["0", "0", "4294967295"]
    );
}

/// Issue item 3: a layered image's files (owned by root in the image) show
/// as owned by root inside — on the host, through the sandbox's root, they
/// are owned by the range's first id — where the kernel has idmapped
/// mounts for the image store's file system.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layered_images_files_belong_to_root_inside() {
    use std::os::unix::fs::MetadataExt;
    let name = "a_layered_images_files_belong_to_root_inside";
    let Some(h) = Host::new(name).await else {
        return;
    };
    let mut layer = tar::Builder::new(Vec::new());
    let body = b"from the image\n";
    let mut hdr = tar::Header::new_gnu();
    hdr.set_size(body.len() as u64);
    hdr.set_mode(0o644);
    hdr.set_uid(0);
    hdr.set_gid(0);
    hdr.set_cksum();
    layer.append_data(&mut hdr, "hello.txt", &body[..]).unwrap();
    let src = tempfile::tempdir().unwrap();
    super::common::one_layer_oci_layout(src.path(), "owned", &layer.into_inner().unwrap());
    h.backend
        .images()
        .expect("the image store")
        .import(src.path(), Some("owned"))
        .unwrap();
    let id = h
        .sandbox(CreateRequest {
            image: Some("owned".into()),
            ..CreateRequest::default()
        })
        .await;
    let map = std::fs::read_to_string(format!("/proc/{}/uid_map", record_pid(&h, &id))).unwrap();
    let start = mapped_start(&map).expect("a mapped range");
    let root = h._dir.path().join(format!("linux/sandboxes/{id}/fs/root"));
    let owner = std::fs::metadata(root.join("hello.txt")).unwrap().uid() as u64;
    if owner == 0 {
        println!("SKIP {name}: the image store's file system takes no idmapped mounts");
        return;
    }
    assert_eq!(
        owner, start,
        "the image's root-owned file, seen from the host"
    );
    assert_eq!(
        std::fs::metadata(&root).unwrap().uid() as u64,
        start,
        "the image's /"
    );
}
