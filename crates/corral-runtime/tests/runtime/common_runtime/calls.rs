//! One ordinary request per operation, for the tables that prove the runtime
//! refuses an operation before the provider hears of it.

use corral_contract::*;
use corral_runtime::runtime::Runtime;

use super::{Fake, command, path, ts};

/// Asks `rt` for `operation` on `id` with an ordinary request whose paths lie
/// under `root`, and returns the refusal; panics if the runtime accepted it.
pub async fn refusal_of(
    rt: &Runtime<Fake>,
    id: InstanceId,
    operation: Operation,
    root: &str,
) -> SandboxError {
    let root = path(root);
    let expires_at = ts("2026-12-29T00:00:00.000Z");
    let refusal = match operation {
        Operation::Execute => rt
            .execute(ExecuteRequest {
                instance_id: id,
                command: command(30, 1024),
            })
            .await
            .err(),
        Operation::Activate => rt.activate(id).await.err(),
        Operation::ReadFile => {
            let file = path(&format!("{root}/a"));
            let read = ReadFileRequest::new(id, file, root, MaximumBytes::new(8).unwrap()).unwrap();
            rt.read_file(read).await.err()
        }
        Operation::ReadFiles => {
            let batch = ReadFilesRequest::new(id, root, vec![]).unwrap();
            rt.read_files(batch).await.err()
        }
        Operation::ListDir => rt
            .list_dir(ListDirRequest {
                instance_id: id,
                root,
                max_entries: MaxEntries::MAX,
            })
            .await
            .err(),
        Operation::ListProjectDir => rt
            .list_project_dir(ListProjectDirRequest {
                instance_id: id,
                root,
                max_entries: MaxEntries::MAX,
            })
            .await
            .err(),
        Operation::Snapshot => rt
            .snapshot(SnapshotRequest {
                instance_id: id,
                expires_at,
            })
            .await
            .err(),
        Operation::Release => rt
            .release(ReleaseRequest {
                instance_id: id,
                snapshot_expires_at: Some(expires_at),
            })
            .await
            .err(),
        Operation::OpenProcess => rt
            .open_process(OpenProcessRequest {
                instance_id: id,
                process: SandboxProcessRequest {
                    executable: Executable::new("agent").unwrap(),
                    arguments: Arguments::default(),
                    working_directory: None,
                    environment: Environment::new(),
                },
            })
            .await
            .err(),
        Operation::BeginActiveWrite => rt
            .begin_active_write(ActiveWriteRequest {
                instance_id: id,
                batch: ActiveWriteBatch::new(vec![ActiveWriteFile {
                    path: path("/workspace/app/a"),
                    content: FileContent::new(b"x".to_vec()).unwrap(),
                    mode: FileMode::DEFAULT,
                }])
                .unwrap(),
            })
            .await
            .err(),
        other => panic!("no ordinary request is written for {other}"),
    };
    refusal.unwrap_or_else(|| panic!("{operation} was accepted"))
}
