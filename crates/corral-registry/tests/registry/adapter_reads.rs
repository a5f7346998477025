//! `readFile`, `readFiles`, `listDir` and `listProjectDir` on both backends.

use crate::adapter_support;
use crate::sp;
use std::path::PathBuf;

use adapter_support::*;
use corral_backend::Backend;
use corral_backend_local::LocalBackend;
use corral_backend_memory::MemoryBackend;
use corral_contract::*;
use corral_runtime::adapter::ContractAdapter;

const OUT: &str = "/mnt/session/outputs";

fn op_failed(operation: Operation, reason: FailureReason) -> SandboxError {
    SandboxError::operation_failed(operation, reason)
}

/// Makes links and special files the file primitives cannot: one
/// implementation per backend.
trait Plant: Backend + Sized + 'static {
    async fn symlink(adapter: &ContractAdapter<Self>, id: &InstanceId, at: &str, target: &str);
    async fn fifo(adapter: &ContractAdapter<Self>, id: &InstanceId, at: &str);
}

impl Plant for MemoryBackend {
    async fn symlink(adapter: &ContractAdapter<Self>, id: &InstanceId, at: &str, target: &str) {
        let sandbox = sandbox_of(adapter, id).await;
        adapter
            .backend()
            .symlink(&sandbox, &sp(at), target)
            .unwrap();
    }

    async fn fifo(adapter: &ContractAdapter<Self>, id: &InstanceId, at: &str) {
        let sandbox = sandbox_of(adapter, id).await;
        adapter.backend().mkfifo(&sandbox, &sp(at)).unwrap();
    }
}

async fn host_path(adapter: &ContractAdapter<LocalBackend>, id: &InstanceId, at: &str) -> PathBuf {
    let sandbox = sandbox_of(adapter, id).await;
    let native = adapter.backend().native(&sandbox).await.unwrap();
    PathBuf::from(native["root"].as_str().unwrap()).join(at.trim_start_matches('/'))
}

impl Plant for LocalBackend {
    async fn symlink(adapter: &ContractAdapter<Self>, id: &InstanceId, at: &str, target: &str) {
        std::os::unix::fs::symlink(target, host_path(adapter, id, at).await).unwrap();
    }

    async fn fifo(adapter: &ContractAdapter<Self>, id: &InstanceId, at: &str) {
        let status = std::process::Command::new("mkfifo")
            .arg(host_path(adapter, id, at).await)
            .status()
            .unwrap();
        assert!(status.success());
    }
}

/// "Read one file, enforcing physical containment under the supplied
/// allowed_root": a round trip, and every closed refusal.
async fn read_file_is_contained<B: Plant>(adapter: &ContractAdapter<B>) {
    let (_, instance) = active(adapter, &Spec::default()).await;
    let id = &instance.instance_id;
    adapter
        .write_file(write(&instance, "/mnt/session/outputs/result.txt", b"42\n"))
        .await
        .unwrap();
    let got = adapter
        .read_file(read(&instance, OUT, "/mnt/session/outputs/result.txt", 16))
        .await
        .unwrap();
    assert_eq!(&got.content[..], b"42\n");
    // "a symlink escape is yours to refuse, and outside_root is the closed
    // reason for it" — absolute and relative.
    B::symlink(
        adapter,
        id,
        "/mnt/session/outputs/abs",
        "/workspace/.checkfu/instance.json",
    )
    .await;
    B::symlink(
        adapter,
        id,
        "/mnt/session/outputs/rel",
        "../../../workspace",
    )
    .await;
    for escape in [
        "/mnt/session/outputs/abs",
        "/mnt/session/outputs/rel/.checkfu/instance.json",
    ] {
        let err = adapter
            .read_file(read(&instance, OUT, escape, 1 << 20))
            .await
            .unwrap_err();
        assert_eq!(
            err,
            op_failed(Operation::ReadFile, FailureReason::OutsideRoot),
            "{escape}"
        );
    }
    // "content over the caller's maximum_bytes".
    let err = adapter
        .read_file(read(&instance, OUT, "/mnt/session/outputs/result.txt", 2))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        SandboxError::SandboxFileTooLarge {
            path: path("/mnt/session/outputs/result.txt"),
            limit: 2,
            actual: 3,
        }
    );
    let missing = adapter
        .read_file(read(&instance, OUT, "/mnt/session/outputs/none", 16))
        .await
        .unwrap_err();
    assert_eq!(
        missing,
        op_failed(Operation::ReadFile, FailureReason::NotFound)
    );
    B::fifo(adapter, id, "/mnt/session/outputs/pipe").await;
    let special = adapter
        .read_file(read(&instance, OUT, "/mnt/session/outputs/pipe", 16))
        .await
        .unwrap_err();
    assert_eq!(
        special,
        op_failed(Operation::ReadFile, FailureReason::NotRegularFile)
    );
    // A root that is not one of the instance's own: the control root.
    let control = adapter
        .read_file(read(
            &instance,
            "/workspace",
            "/workspace/.checkfu/instance.json",
            1 << 20,
        ))
        .await
        .unwrap_err();
    assert_eq!(
        control,
        op_failed(Operation::ReadFile, FailureReason::OutsideRoot)
    );
}

#[tokio::test]
async fn read_file_is_contained_on_memory() {
    read_file_is_contained(&memory()).await;
}

#[tokio::test]
async fn read_file_is_contained_on_local() {
    let (adapter, _dir) = local();
    read_file_is_contained(&adapter).await;
}

#[tokio::test]
async fn read_file_fails_closed_without_physically_contained_reads() {
    let adapter = memory_with(|d| {
        d.physically_contained_file_read = false;
        d.read_files = false;
    });
    let (_, instance) = active(&adapter, &Spec::default()).await;
    let err = adapter
        .read_file(read(&instance, OUT, "/mnt/session/outputs/x", 16))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        SandboxError::capability_unavailable(Requirement::PhysicallyContainedFileRead)
    );
}

/// `readFiles`: "the closed per-file union", in order, within the budget.
async fn read_files_is_the_closed_union_in_order<B: Plant>(adapter: &ContractAdapter<B>) {
    let (_, instance) = active(adapter, &Spec::default()).await;
    for (at, body) in [("a.txt", &b"alpha"[..]), ("big.txt", &[7u8; 64][..])] {
        adapter
            .write_file(write(&instance, &format!("{OUT}/{at}"), body))
            .await
            .unwrap();
    }
    B::symlink(
        adapter,
        &instance.instance_id,
        "/mnt/session/outputs/out",
        "/etc",
    )
    .await;
    let member = |at: &str, max: u64| ReadFilesMember {
        path: path(&format!("{OUT}/{at}")),
        maximum_bytes: MaximumBytes::new(max).unwrap(),
    };
    let request = ReadFilesRequest::new(
        instance.instance_id.clone(),
        path(OUT),
        vec![
            member("big.txt", 10),
            member("a.txt", 10),
            member("missing.txt", 10),
            member("out/hostname", 10),
        ],
    )
    .unwrap();
    let result = adapter.read_files(request.clone()).await.unwrap();
    result.validate_against(&request).unwrap();
    assert_eq!(
        result.files,
        vec![
            ReadFileOutcome::TooLarge {
                path: path("/mnt/session/outputs/big.txt"),
                size: FileSize::new(64).unwrap(),
                limit: MaximumBytes::new(10).unwrap(),
            },
            ReadFileOutcome::Ok {
                path: path("/mnt/session/outputs/a.txt"),
                content: FileContent::new(b"alpha".to_vec()).unwrap(),
                size: FileSize::new(5).unwrap(),
            },
            ReadFileOutcome::Missing {
                path: path("/mnt/session/outputs/missing.txt"),
            },
            ReadFileOutcome::Refused {
                path: path("/mnt/session/outputs/out/hostname"),
                reason: ReadRefusal::OutsideRoot,
            },
        ]
    );
}

#[tokio::test]
async fn read_files_is_the_closed_union_in_order_on_memory() {
    read_files_is_the_closed_union_in_order(&memory()).await;
}

#[tokio::test]
async fn read_files_is_the_closed_union_in_order_on_local() {
    let (adapter, _dir) = local();
    read_files_is_the_closed_union_in_order(&adapter).await;
}

/// `listDir`: "Enumerate regular files under a mount root with size and
/// SHA-256"; `listProjectDir`: "special files named, never omitted".
async fn listings_are_complete<B: Plant>(adapter: &ContractAdapter<B>) {
    let (_, instance) = provision(adapter, &Spec::default()).await;
    let id = instance.instance_id.clone();
    for (at, body) in [
        ("/project/src/main.rs", &b"fn main() {}\n"[..]),
        ("/project/README", &b"hi"[..]),
        (
            "/project/vendor/lib/.git",
            &b"gitdir: ../.git/modules/lib\n"[..],
        ),
    ] {
        adapter
            .write_file(write(&instance, at, body))
            .await
            .unwrap();
    }
    adapter.activate(id.clone()).await.unwrap();
    B::symlink(adapter, &id, "/project/link", "src/main.rs").await;
    B::fifo(adapter, &id, "/project/pipe").await;
    let list = ListDirRequest {
        instance_id: id.clone(),
        root: path("/project"),
        max_entries: MaxEntries::new(10).unwrap(),
    };
    let listed = adapter.list_dir(list.clone()).await.unwrap();
    listed.validate_against(&list).unwrap();
    let mut files: Vec<(String, u64, String)> = listed
        .entries
        .iter()
        .map(|e| (e.path.to_string(), e.size.get(), e.sha256.to_string()))
        .collect();
    files.sort();
    assert_eq!(
        files,
        vec![
            (
                "/project/README".to_owned(),
                2,
                // sha256("hi")
                "sha256:8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4"
                    .to_owned()
            ),
            (
                "/project/src/main.rs".to_owned(),
                13,
                Digest::from_sha256_bytes(sha256(b"fn main() {}\n")).to_string()
            ),
        ]
    );
    let project = ListProjectDirRequest {
        instance_id: id.clone(),
        root: path("/project"),
        max_entries: MaxEntries::new(10).unwrap(),
    };
    let listed = adapter.list_project_dir(project.clone()).await.unwrap();
    listed.validate_against(&project).unwrap();
    assert!(listed.complete);
    let mut kinds: Vec<(String, &'static str)> = listed
        .entries
        .iter()
        .map(|e| {
            let kind = match e {
                ProjectEntry::File { .. } => "file",
                ProjectEntry::Symlink { .. } => "symlink",
                ProjectEntry::Submodule { .. } => "submodule",
                ProjectEntry::Device { .. } => "device",
                ProjectEntry::Socket { .. } => "socket",
                ProjectEntry::Fifo { .. } => "fifo",
                ProjectEntry::Other { .. } => "other",
            };
            (e.path().to_string(), kind)
        })
        .collect();
    kinds.sort();
    assert_eq!(
        kinds,
        vec![
            ("/project/README".to_owned(), "file"),
            ("/project/link".to_owned(), "symlink"),
            ("/project/pipe".to_owned(), "fifo"),
            ("/project/src/main.rs".to_owned(), "file"),
            ("/project/vendor/lib".to_owned(), "submodule"),
        ]
    );
    // Over max_entries: refused, never a silently shortened listing.
    let small = ListProjectDirRequest {
        max_entries: MaxEntries::new(4).unwrap(),
        ..project
    };
    assert_eq!(
        adapter.list_project_dir(small).await.unwrap_err(),
        op_failed(Operation::ListProjectDir, FailureReason::TooManyEntries)
    );
    let small = ListDirRequest {
        max_entries: MaxEntries::new(1).unwrap(),
        ..list
    };
    assert_eq!(
        adapter.list_dir(small).await.unwrap_err(),
        op_failed(Operation::ListDir, FailureReason::TooManyEntries)
    );
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes).into()
}

#[tokio::test]
async fn listings_are_complete_on_memory() {
    listings_are_complete(&memory()).await;
}

#[tokio::test]
async fn listings_are_complete_on_local() {
    let (adapter, _dir) = local();
    listings_are_complete(&adapter).await;
}

#[tokio::test]
async fn absent_batch_reads_and_listings_are_typed_refusals() {
    let adapter = memory_with(|d| {
        d.read_files = false;
        d.list_dir = false;
        d.list_project_dir = false;
    });
    let (_, instance) = active(&adapter, &Spec::default()).await;
    let id = instance.instance_id.clone();
    let batch = ReadFilesRequest::new(id.clone(), path(OUT), vec![]).unwrap();
    assert_eq!(
        adapter.read_files(batch).await.unwrap_err(),
        Operation::ReadFiles.absent_refusal().unwrap()
    );
    let list = ListDirRequest {
        instance_id: id.clone(),
        root: path("/project"),
        max_entries: MaxEntries::new(10).unwrap(),
    };
    assert_eq!(
        adapter.list_dir(list).await.unwrap_err(),
        Operation::ListDir.absent_refusal().unwrap()
    );
    let project = ListProjectDirRequest {
        instance_id: id,
        root: path("/project"),
        max_entries: MaxEntries::new(10).unwrap(),
    };
    assert_eq!(
        adapter.list_project_dir(project).await.unwrap_err(),
        Operation::ListProjectDir.absent_refusal().unwrap()
    );
}
