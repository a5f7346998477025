//! `durable-round-trip`: "files survive snapshot → release → resume".
//!
//! A durable instance gets files three ways — staged into a read-write
//! mount while provisioning (when the target accepts mounts), uploaded into
//! the output tree with `writeFile`, and written by the workload (in a
//! directory it creates). It is checkpointed with `snapshot`, changed, and
//! released: a durable release must settle a snapshot (`released`), after
//! which the instance no longer runs. Resuming the released snapshot gives
//! an `active` instance in the same Session with every file in its final
//! state; resuming the checkpoint gives the state at the checkpoint. Where
//! the target reads physically contained files, `readFile` agrees.

use corral_contract::{
    InstanceId, MaximumBytes, MountAccess, ReadFileRequest, ReleaseDisposition, RetentionMode,
    SandboxPath, SandboxProvider,
};

use crate::failure::{Failure, ensure, expect_refused, shown};
use crate::request::{Plan, SNAPSHOT_RETENTION, internal, later, now, path};
use crate::scope::contract::ContractScope;
use crate::target::ConformanceTarget;

/// The read-write mount (when the target accepts mounts).
const STATE: &str = "/workspace/state";

pub(crate) async fn run<T: ConformanceTarget>(s: &mut ContractScope<'_, T>) -> Result<(), Failure> {
    let outputs = SandboxPath::output_path();
    let state = path(STATE)?;
    let with_mount = s.envelope().max_mounts.get() > 0;
    let plan = || {
        let plan = Plan::new(RetentionMode::Durable);
        if with_mount {
            plan.mount(&state, MountAccess::ReadWrite)
        } else {
            plan
        }
    };
    let request = s.request(plan())?;
    let session = request.session_id.clone();
    let id = s.provision(request).await?.instance_id;
    let staged = path("/workspace/state/staged.txt")?;
    let edited = path("/workspace/state/edited.txt")?;
    if with_mount {
        s.write(&id, &staged, b"staged before activate\n").await?;
    }
    s.activate(&id).await?;

    let uploaded = path("/mnt/session/outputs/uploaded.bin")?;
    let bytes: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
    s.write(&id, &uploaded, &bytes).await?;
    let version = path("/mnt/session/outputs/deep/dir/version.txt")?;
    s.run_ok(
        &id,
        Some(&outputs),
        "mkdir -p deep/dir && printf 'v1\\n' > deep/dir/version.txt",
    )
    .await?;
    if with_mount {
        s.run_ok(
            &id,
            Some(&state),
            "printf 'edited by the workload\\n' > edited.txt",
        )
        .await?;
    }
    let checkpoint = s.snapshot(&id, later(now()?, SNAPSHOT_RETENTION)?).await?;
    s.run_ok(&id, Some(&outputs), "printf 'v2\\n' > deep/dir/version.txt")
        .await?;

    let retention = later(now()?, SNAPSHOT_RETENTION)?;
    let settled = match s.release(&id, Some(retention)).await? {
        ReleaseDisposition::Released { snapshot } => *snapshot,
        ReleaseDisposition::Destroyed => {
            return Err(Failure::new(
                "release of a durable instance answered destroyed, expected released",
            ));
        }
    };
    ensure(settled.expires_at == retention, || {
        format!(
            "the released snapshot expires at {}, requested {retention}",
            settled.expires_at
        )
    })?;
    expect_refused(
        "execute on the released instance",
        s.try_execute(&id, None, "true", 16).await?,
    )?;

    let request = s.request(plan().session(&session))?;
    let resumed = s.resume(request, &settled).await?.instance_id;
    ensure(resumed != id, || {
        format!("resume reused the released instance id {id}")
    })?;
    s.expect_file(&resumed, &uploaded, &bytes).await?;
    s.expect_file(&resumed, &version, b"v2\n").await?;
    if with_mount {
        s.expect_file(&resumed, &staged, b"staged before activate\n")
            .await?;
        s.expect_file(&resumed, &edited, b"edited by the workload\n")
            .await?;
    }
    if s.envelope().physically_contained_file_read {
        read_back(s, &resumed, &uploaded, &bytes).await?;
    }

    let request = s.request(plan().session(&session))?;
    let at_checkpoint = s.resume(request, &checkpoint).await?.instance_id;
    s.expect_file(&at_checkpoint, &version, b"v1\n").await?;
    s.expect_file(&at_checkpoint, &uploaded, &bytes).await
}

/// `readFile` of `file` on the resumed instance returns `bytes`.
async fn read_back<T: ConformanceTarget>(
    s: &ContractScope<'_, T>,
    id: &InstanceId,
    file: &SandboxPath,
    bytes: &[u8],
) -> Result<(), Failure> {
    let request = ReadFileRequest::new(
        id.clone(),
        file.clone(),
        SandboxPath::output_path(),
        MaximumBytes::new(1 << 20).map_err(internal)?,
    )
    .map_err(internal)?;
    let got = s
        .rt()?
        .read_file(request)
        .await
        .map_err(|e| Failure::step(format_args!("readFile {file} after resume"), e))?;
    ensure(*got.content == *bytes, || {
        format!(
            "readFile {file} after resume: {} bytes {}, expected {} bytes",
            got.content.len(),
            shown(&got.content),
            bytes.len()
        )
    })
}
