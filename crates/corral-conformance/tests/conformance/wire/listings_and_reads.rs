//! The optional read and listing members across the wire, under the
//! runtime: `list_dir`, `list_project_dir`, `read_files` and `read_file`
//! answer exactly what the same adapter answers in process.

use super::common;
use std::sync::Arc;

use common::{provision_request, runtime_over, with_project};
use corral_backend_memory::MemoryBackend;
use corral_contract::*;
use corral_registry::envelopes;
use corral_runtime::adapter::ContractAdapter;

fn path(text: &str) -> SandboxPath {
    SandboxPath::new(text).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_and_reads_cross_the_wire_unchanged() {
    let backend = Arc::new(MemoryBackend::new());
    let local = ContractAdapter::new(Arc::clone(&backend), envelopes::memory()).unwrap();
    let hosted = ContractAdapter::new(Arc::clone(&backend), envelopes::memory()).unwrap();
    let (runtime, server) = runtime_over(hosted).await;
    let request = provision_request(
        runtime.capabilities(),
        "memory",
        RetentionMode::EphemeralZdr,
    );
    let request = with_project(request);
    let (instance, _) = runtime.provision(request).await.unwrap().into_parts();
    let id = instance.instance_id.clone();
    for (at, content) in [
        ("/project/a.txt", &b"alpha\n"[..]),
        ("/project/sub/b.txt", b"beta\n"),
    ] {
        runtime
            .write_file(WriteFileRequest {
                instance_id: id.clone(),
                path: path(at),
                content: FileContent::new(content.to_vec()).unwrap(),
                mode: FileMode::DEFAULT,
            })
            .await
            .unwrap();
    }
    runtime.activate(id.clone()).await.unwrap();

    let list = ListDirRequest {
        instance_id: id.clone(),
        root: path("/project"),
        max_entries: MaxEntries::new(100).unwrap(),
    };
    let over_wire = runtime.list_dir(list.clone()).await.unwrap();
    assert_eq!(over_wire.entries.len(), 2);
    assert_eq!(over_wire, local.list_dir(list).await.unwrap());

    let project = ListProjectDirRequest {
        instance_id: id.clone(),
        root: path("/project"),
        max_entries: MaxEntries::new(100).unwrap(),
    };
    let over_wire = runtime.list_project_dir(project.clone()).await.unwrap();
    assert!(over_wire.complete);
    assert_eq!(over_wire, local.list_project_dir(project).await.unwrap());

    let max = MaximumBytes::new(1024).unwrap();
    let batch = ReadFilesRequest::new(
        id.clone(),
        path("/project"),
        vec![
            ReadFilesMember {
                path: path("/project/sub/b.txt"),
                maximum_bytes: max,
            },
            ReadFilesMember {
                path: path("/project/a.txt"),
                maximum_bytes: max,
            },
        ],
    )
    .unwrap();
    let over_wire = runtime.read_files(batch.clone()).await.unwrap();
    let paths: Vec<_> = over_wire.files.iter().map(|f| f.path().as_str()).collect();
    assert_eq!(paths, ["/project/sub/b.txt", "/project/a.txt"], "in order");
    assert_eq!(over_wire, local.read_files(batch).await.unwrap());

    let one =
        ReadFileRequest::new(id.clone(), path("/project/a.txt"), path("/project"), max).unwrap();
    let over_wire = runtime.read_file(one.clone()).await.unwrap();
    assert_eq!(&over_wire.content[..], b"alpha\n");
    assert_eq!(over_wire, local.read_file(one).await.unwrap());

    runtime.destroy(id).await.unwrap();
    server.shut_down().await;
}
