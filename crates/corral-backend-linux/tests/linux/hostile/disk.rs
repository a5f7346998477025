//! Issue item 11, disk is not memory: the writable layer is ext4 in an
//! image on the host's disk, so filling it is `ENOSPC`, never an OOM kill,
//! and the memory limit is still there to use afterwards.
//!
//! Each row runs only where the sandbox got the ext4 layer (its record
//! says which); elsewhere it prints `SKIP` with the recorded reason.

use std::path::PathBuf;
use std::time::Duration;

use corral_backend::{Backend, CollectedOutput, Command, CreateRequest, ExecRequest};

use super::Host;

const MIB: u64 = 1 << 20;

/// A disk-filling attack and what must stop it.
struct Fill {
    /// The test row.
    name: &'static str,
    /// The sandbox's disk limit.
    disk: u64,
    /// Its memory limit.
    memory: u64,
    /// The attack: writes `/workspace/big` until the disk is full.
    attack: &'static str,
    /// `/workspace/big` ends within these bounds (MiB): the disk limit,
    /// less ext4's own metadata.
    size_mib: std::ops::RangeInclusive<u64>,
}

const FILLS: &[Fill] = &[
    Fill {
        name: "1200 MiB into a 1 GiB disk with 1 GiB of memory",
        disk: 1 << 30,
        memory: 1 << 30,
        attack: "dd if=/dev/zero of=/workspace/big bs=1M count=1200",
        size_mib: 900..=1024,
    },
    Fill {
        name: "100 MiB into a 64 MiB disk",
        disk: 64 * MIB,
        memory: 1 << 30,
        attack: "dd if=/dev/zero of=/workspace/big bs=1M count=100",
        size_mib: 48..=64,
    },
];

/// A real 100 MiB allocation: `tail -n 1` holds the whole newline-free
/// last line in memory.
const ALLOCATE_100_MIB: &str = "head -c 100M /dev/zero | tail -n 1 | wc -c";

impl Host {
    /// The record of sandbox `id`, as JSON.
    fn record(&self, id: &str) -> serde_json::Value {
        let path = self.sandbox_path(id).join("meta.json");
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
    }

    /// The host directory of sandbox `id`.
    fn sandbox_path(&self, id: &str) -> PathBuf {
        self._dir.path().join("linux/sandboxes").join(id)
    }

    /// Whether `id` got the ext4 layer; prints `SKIP` with the recorded
    /// reason when not.
    fn on_ext4(&self, test: &str, id: &str) -> bool {
        let record = self.record(id);
        if record["disk_layer"] == "ext4" {
            return true;
        }
        println!(
            "SKIP {test}: the writable layer is {} ({})",
            record["disk_layer"], record["disk_fallback"]
        );
        false
    }

    /// Runs `script` in `id` with a two-minute limit; returns (exit code,
    /// stdout, stderr).
    async fn sh_long(&self, id: &str, script: &str) -> (i32, String, String) {
        let mut out = CollectedOutput::default();
        let req =
            ExecRequest::new(Command::shell(script).unwrap()).timeout(Duration::from_secs(120));
        let outcome = self.backend.exec(id, req, &mut out).await.unwrap();
        (
            outcome.status.shell_code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

fn sized(disk: u64, memory: u64) -> CreateRequest {
    let mut req = CreateRequest::default();
    req.size.disk_bytes = Some(disk);
    req.size.memory_bytes = Some(memory);
    req
}

/// Issue item 11: filling the disk ends in `ENOSPC` (dd exits 1, "No space
/// left"), not an OOM kill (137), at about the disk limit; afterwards a
/// 100 MiB allocation still succeeds, and the neighbour answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_is_enospc_and_memory_is_left() {
    let test = "a_full_disk_is_enospc_and_memory_is_left";
    let Some(h) = Host::new(test).await else {
        return;
    };
    for row in FILLS {
        let id = h.sandbox(sized(row.disk, row.memory)).await;
        if !h.on_ext4(test, &id) {
            return;
        }
        let (code, _, err) = h.sh_long(&id, row.attack).await;
        assert_ne!(code, 137, "{}: OOM-killed instead of ENOSPC", row.name);
        assert_eq!(code, 1, "{}: {err}", row.name);
        assert!(err.contains("No space left"), "{}: {err}", row.name);
        let (_, size, _) = h.sh(&id, "stat -c %s /workspace/big").await;
        let mib = size.trim().parse::<u64>().unwrap() / MIB;
        assert!(row.size_mib.contains(&mib), "{}: {mib} MiB", row.name);
        let (code, out, err) = h.sh(&id, ALLOCATE_100_MIB).await;
        assert_eq!(
            (code, out.trim()),
            (0, "104857600"),
            "{}: the 100 MiB allocation after the fill: {err}",
            row.name
        );
        h.backend.destroy(&id).await.unwrap();
    }
    h.still_answers().await;
}

/// The loop devices bound to `image` (by `/sys/block/loop*/loop/backing_file`).
fn loops_of(image: &std::path::Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    let image = image.to_string_lossy().into_owned();
    entries
        .flatten()
        .filter(|e| {
            std::fs::read_to_string(e.path().join("loop/backing_file"))
                .is_ok_and(|b| b.trim_end().starts_with(&image))
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// Whether anything is mounted at or under `dir`.
fn mounted_under(dir: &std::path::Path) -> bool {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let dir = dir.to_string_lossy().into_owned();
    text.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .any(|p| p.starts_with(&dir))
}

/// Issue item 11: destroy leaves no loop device bound to the sandbox's
/// image and nothing mounted under its directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn destroy_leaves_no_loop_device_and_no_mount() {
    let test = "destroy_leaves_no_loop_device_and_no_mount";
    let Some(h) = Host::new(test).await else {
        return;
    };
    let id = h.sandbox(sized(64 * MIB, 1 << 30)).await;
    if !h.on_ext4(test, &id) {
        return;
    }
    let dir = h.sandbox_path(&id);
    let image = dir.join("disk.ext4");
    assert_eq!(loops_of(&image).len(), 1, "one loop device while it lives");
    assert!(mounted_under(&dir));
    let (_, fstype, _) = h.sh(&id, "stat -f -c %T /workspace").await;
    assert!(fstype.contains("ext"), "/workspace is on {fstype}");
    h.backend.destroy(&id).await.unwrap();
    // Its directory moved to `reaping/` when destroy answered; the layer,
    // the loop device and the image are its reaper's to remove.
    assert!(!dir.exists(), "the sandbox directory is left in sandboxes/");
    let entry = dir.parent().unwrap().with_file_name("reaping").join(&id);
    assert!(
        h.backend.wait_reaped(crate::common::REAPED),
        "the reaper finishes"
    );
    let image = entry.join("disk.ext4");
    assert!(!mounted_under(&dir), "a mount is left under {dir:?}");
    assert!(!mounted_under(&entry), "a mount is left under {entry:?}");
    assert!(!image.exists(), "the image is left");
    // The device unbinds when the last user of the detached mount lets go.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !loops_of(&image).is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        loops_of(&image),
        Vec::<String>::new(),
        "a loop device is left"
    );
    h.still_answers().await;
}

/// Issue item 11: a snapshot of a sandbox on the ext4 layer restores
/// (onto the ext4 layer again), with none of ext4's own files in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_of_an_ext4_layer_restores() {
    let test = "a_snapshot_of_an_ext4_layer_restores";
    let Some(h) = Host::new(test).await else {
        return;
    };
    let src = h.sandbox(CreateRequest::default()).await;
    if !h.on_ext4(test, &src) {
        return;
    }
    let (code, _, err) = h
        .sh(
            &src,
            "mkdir -p /workspace/d && printf kept > /workspace/d/f",
        )
        .await;
    assert_eq!(code, 0, "{err}");
    let ops = h.backend.snapshot_ops().unwrap();
    let snap = ops.snapshot(&src, &Default::default()).await.unwrap();
    h.backend.destroy(&src).await.unwrap();
    let restored = h
        .sandbox(CreateRequest {
            snapshot: Some(snap.id.clone()),
            ..CreateRequest::default()
        })
        .await;
    assert_eq!(h.record(&restored)["disk_layer"], "ext4");
    let (code, out, err) = h
        .sh(
            &restored,
            "cat /workspace/d/f; ls -a / | grep -c lost+found",
        )
        .await;
    assert_eq!(out, "kept0\n", "{err}");
    assert_eq!(code, 1, "grep finds no lost+found: {err}");
    ops.delete_snapshot(&snap.id).await.unwrap();
}

/// Issue item 11: a sandbox whose processes died without a destroy (a
/// crash) keeps its ext4 layer mounted only until `gc`, which detaches it
/// (freeing the loop device) and removes the image; `gc` also removes the
/// half-made disk templates of host processes that are gone, and keeps the
/// shared template every process copies from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gc_detaches_the_ext4_layer_of_a_crashed_sandbox() {
    let test = "gc_detaches_the_ext4_layer_of_a_crashed_sandbox";
    let Some(h) = Host::new(test).await else {
        return;
    };
    let id = h.sandbox(sized(64 * MIB, 1 << 30)).await;
    if !h.on_ext4(test, &id) {
        return;
    }
    let dir = h.sandbox_path(&id);
    let image = dir.join("disk.ext4");
    let templates = h._dir.path().join("linux/disk-templates");
    let shared = templates.join(format!("ext4-{}.img", 64 * MIB));
    assert!(shared.is_file(), "the shared template {shared:?}");
    // No pid is this large (pid_max is at most 2^22).
    let gone = templates.join(format!("ext4-{}-999999999.img.00ff.tmp", 64 * MIB));
    std::fs::write(&gone, b"").unwrap();
    let pid = h.record(&id)["init_pid"].as_i64().unwrap();
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while std::path::Path::new(&format!("/proc/{pid}")).exists()
        && std::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(mounted_under(&dir), "the crash left the layer mounted");
    let report = h.backend.gc().await.unwrap();
    assert!(report.sandboxes.contains(&id), "{report:?}");
    assert!(!mounted_under(&dir), "gc left a mount under {dir:?}");
    assert!(!image.exists(), "gc left the image");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !loops_of(&image).is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        loops_of(&image),
        Vec::<String>::new(),
        "a loop device is left"
    );
    assert!(
        !gone.exists(),
        "the half-made template of a gone process is left"
    );
    assert!(shared.is_file(), "gc removed the shared template");
    h.still_answers().await;
}

/// Issue item 11, the fallback: a state directory on a tmpfs (where an
/// image would be memory too) gives the tmpfs layer, says so and why in
/// the record, and the disk limit still holds (`ENOSPC` at 16 MiB).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_directory_on_tmpfs_falls_back_to_a_recorded_tmpfs_layer() {
    let test = "a_state_directory_on_tmpfs_falls_back_to_a_recorded_tmpfs_layer";
    // Sets up the init binary and checks the host, as every test does.
    let Some((_b, _dir)) = super::common::backend(test) else {
        return;
    };
    let mem = tempfile::tempdir().unwrap();
    if let Err(e) = rustix::mount::mount(
        "corral-test",
        mem.path(),
        "tmpfs",
        rustix::mount::MountFlags::empty(),
        Some(c"size=67108864"),
    ) {
        println!("SKIP {test}: mounting a tmpfs for the state directory: {e}");
        return;
    }
    let b = corral_backend_linux::LinuxBackend::open(mem.path()).unwrap();
    let made = async {
        let id = b.create(sized(16 * MIB, 1 << 30)).await.unwrap().id;
        let path = mem
            .path()
            .join("linux/sandboxes")
            .join(&id)
            .join("meta.json");
        let record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let (code, _, err) =
            super::common::run(&b, &id, "dd if=/dev/zero of=/workspace/big bs=1M count=32").await;
        (record, code, err)
    }
    .await;
    let _ = b.destroy_all();
    let _ = rustix::mount::unmount(mem.path(), rustix::mount::UnmountFlags::DETACH);
    let (record, code, err) = made;
    assert_eq!(record["disk_layer"], "tmpfs", "{record}");
    let why = record["disk_fallback"].as_str().unwrap_or_default();
    assert!(why.contains("memory file system"), "{record}");
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("No space left"), "{err}");
}
