//! `stage-seal-execute`: "declared mounts stage, read-only data seals,
//! command output is bounded" — and a `readFile` round trip through the
//! output tree.
//!
//! 1. Files are staged with `writeFile` while provisioning into a read-only
//!    mount (nested paths and all 256 byte values included), a read-write
//!    mount when the target accepts two, and the output tree; a path outside
//!    every mount is refused.
//! 2. After `activate` the workload sees every staged byte; `writeFile` into
//!    a mount is refused and changes nothing ("once active, only the output
//!    tree remains writable"). Where the envelope claims `read_only_mounts`,
//!    the workload itself cannot modify the read-only mount either.
//! 3. `execute` keeps at most `output_limit_bytes` per stream: a flood comes
//!    back truncated to exactly the limit (its first bytes), on stdout and
//!    on stderr; output under the limit comes back whole.
//! 4. `readFile` returns what `writeFile` and the workload put in the output
//!    tree, and refuses a file over `maximum_bytes` with
//!    `SandboxFileTooLarge`.

use corral_contract::{
    EnforcementLevel, ErrorKind, InstanceId, MaximumBytes, MountAccess, ReadFileRequest,
    SandboxPath, SandboxProvider,
};

use crate::exec::exit_code;
use crate::failure::{Failure, ensure, expect_refusal, expect_refused, shown};
use crate::request::{Plan, disposable_retention, internal, path};
use crate::scope::contract::ContractScope;
use crate::target::ConformanceTarget;

/// The read-only mount.
const DATA: &str = "/workspace/data";
/// The read-write mount (when the target accepts two mounts).
const WORK: &str = "/workspace/work";
/// The output bound the flood is held to.
const FLOOD_LIMIT: u64 = 1024;
/// How much the flood writes.
const FLOOD_BYTES: u64 = 5000;

/// The files staged into the read-only mount.
fn staged() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("/workspace/data/input.txt", b"staged input\n".to_vec()),
        (
            "/workspace/data/nested/deeper/leaf.txt",
            b"a nested leaf\n".to_vec(),
        ),
        ("/workspace/data/all-bytes.bin", (0..=255u8).collect()),
    ]
}

pub(crate) async fn run<T: ConformanceTarget>(s: &mut ContractScope<'_, T>) -> Result<(), Failure> {
    let (data, work) = (path(DATA)?, path(WORK)?);
    let outputs = SandboxPath::output_path();
    let two_mounts = s.envelope().max_mounts.get() >= 2;
    let mut plan =
        Plan::new(disposable_retention(s.envelope())).mount(&data, MountAccess::ReadOnly);
    if two_mounts {
        plan = plan.mount(&work, MountAccess::ReadWrite);
    }
    let request = s.request(plan)?;
    let id = s.provision(request).await?.instance_id;

    // 1. Stage while provisioning.
    for (file, bytes) in staged() {
        s.write(&id, &path(file)?, &bytes).await?;
    }
    let notes = path("/workspace/work/notes.txt")?;
    if two_mounts {
        s.write(&id, &notes, b"read-write notes\n").await?;
    }
    let early = path("/mnt/session/outputs/staged-early.txt")?;
    s.write(&id, &early, b"written while provisioning\n")
        .await?;
    let undeclared = path("/workspace/undeclared.txt")?;
    expect_refused(
        "writeFile /workspace/undeclared.txt (outside every mount) while provisioning",
        s.try_write(&id, &undeclared, b"x").await?,
    )?;

    s.activate(&id).await?;

    // 2. Staged bytes are there; the mounts are sealed.
    for (file, bytes) in staged() {
        s.expect_file(&id, &path(file)?, &bytes).await?;
    }
    s.expect_file(&id, &early, b"written while provisioning\n")
        .await?;
    seal(s, &id, two_mounts.then_some(&notes)).await?;

    // 3. Output is bounded.
    bounded_output(s, &id).await?;

    // 4. readFile round trip through the output tree.
    read_round_trip(s, &id, &outputs).await
}

/// The read-only mount refuses writes once active.
async fn seal<T: ConformanceTarget>(
    s: &ContractScope<'_, T>,
    id: &InstanceId,
    read_write: Option<&SandboxPath>,
) -> Result<(), Failure> {
    let input = path("/workspace/data/input.txt")?;
    let original = b"staged input\n";
    expect_refused(
        "writeFile /workspace/data/input.txt (read-only mount) after activate",
        s.try_write(id, &input, b"overwritten").await?,
    )?;
    s.expect_file(id, &input, original).await?;
    let planted = path("/workspace/data/planted.txt")?;
    expect_refused(
        "writeFile /workspace/data/planted.txt (read-only mount) after activate",
        s.try_write(id, &planted, b"planted").await?,
    )?;
    ensure(!s.exists(id, &planted).await?, || {
        "a refused writeFile left /workspace/data/planted.txt behind".into()
    })?;
    if let Some(notes) = read_write {
        expect_refused(
            "writeFile /workspace/work/notes.txt (a mount, not the output tree) after activate",
            s.try_write(id, notes, b"overwritten").await?,
        )?;
        s.expect_file(id, notes, b"read-write notes\n").await?;
        let work = path(WORK)?;
        s.run_ok(
            id,
            Some(&work),
            "printf 'changed by the workload' > notes.txt",
        )
        .await?;
        s.expect_file(id, notes, b"changed by the workload").await?;
    }
    let claimed = s.envelope().enforcement.read_only_mounts;
    if matches!(
        claimed,
        EnforcementLevel::BestEffort | EnforcementLevel::ProviderEnforced
    ) {
        let data = path(DATA)?;
        s.execute(id, Some(&data), "printf tampered > input.txt", 4096)
            .await?;
        s.execute(id, Some(&data), "touch planted.txt", 4096)
            .await?;
        let kept = s.cat(id, &input).await?;
        ensure(kept == original, || {
            format!(
                "read_only_mounts is {claimed} but the workload changed /workspace/data/input.txt to {}",
                shown(&kept)
            )
        })?;
        ensure(!s.exists(id, &planted).await?, || {
            format!(
                "read_only_mounts is {claimed} but the workload created /workspace/data/planted.txt"
            )
        })?;
    }
    Ok(())
}

/// A flood is truncated to exactly the limit on each stream; output under
/// the limit is whole.
async fn bounded_output<T: ConformanceTarget>(
    s: &ContractScope<'_, T>,
    id: &InstanceId,
) -> Result<(), Failure> {
    let expected: Vec<u8> = b"corral\n"
        .iter()
        .copied()
        .cycle()
        .take(FLOOD_LIMIT as usize)
        .collect();
    for (to_stderr, script) in [
        (false, format!("yes corral | head -c {FLOOD_BYTES}")),
        (true, format!("yes corral | head -c {FLOOD_BYTES} >&2")),
    ] {
        let r = s.execute(id, None, &script, FLOOD_LIMIT).await?;
        let step = format!("execute `{script}` with output_limit_bytes {FLOOD_LIMIT}");
        ensure(exit_code(&r) == Ok(0), || {
            format!("{step}: exit {}", r.exit)
        })?;
        let (flooded, quiet) = if to_stderr {
            (&r.stderr, &r.stdout)
        } else {
            (&r.stdout, &r.stderr)
        };
        ensure(flooded.truncated, || {
            format!("{step}: the flooded stream is not marked truncated")
        })?;
        ensure(*flooded.content == *expected, || {
            format!(
                "{step}: kept {} bytes {}, expected the first {FLOOD_LIMIT} bytes",
                flooded.content.len(),
                shown(&flooded.content)
            )
        })?;
        ensure(!quiet.truncated && quiet.content.is_empty(), || {
            format!("{step}: the quiet stream holds {}", shown(&quiet.content))
        })?;
    }
    let r = s
        .execute(id, None, "printf 'within the limit'", FLOOD_LIMIT)
        .await?;
    ensure(
        !r.stdout.truncated && *r.stdout.content == *b"within the limit",
        || {
            format!(
                "execute `printf 'within the limit'`: stdout {} (truncated {})",
                shown(&r.stdout.content),
                r.stdout.truncated
            )
        },
    )
}

/// `readFile` of what `writeFile` and the workload wrote into the outputs.
async fn read_round_trip<T: ConformanceTarget>(
    s: &ContractScope<'_, T>,
    id: &InstanceId,
    outputs: &SandboxPath,
) -> Result<(), Failure> {
    let read = |file: SandboxPath, max: u64| async move {
        let request = ReadFileRequest::new(
            id.clone(),
            file,
            outputs.clone(),
            MaximumBytes::new(max).map_err(internal)?,
        )
        .map_err(internal)?;
        Ok::<_, Failure>(s.rt()?.read_file(request).await)
    };
    let written: Vec<u8> = (0..=255u8).rev().collect();
    let uploaded = path("/mnt/session/outputs/round-trip.bin")?;
    s.write(id, &uploaded, &written).await?;
    s.expect_file(id, &uploaded, &written).await?;
    s.run_ok(
        id,
        Some(outputs),
        "printf 'computed in the sandbox\\n' > result.txt",
    )
    .await?;
    let cases: [(&str, &[u8]); 3] = [
        ("/mnt/session/outputs/round-trip.bin", &written),
        (
            "/mnt/session/outputs/result.txt",
            b"computed in the sandbox\n",
        ),
        (
            "/mnt/session/outputs/staged-early.txt",
            b"written while provisioning\n",
        ),
    ];
    for (file, expected) in cases {
        let got = read(path(file)?, 1 << 20)
            .await?
            .map_err(|e| Failure::step(format_args!("readFile {file}"), e))?;
        ensure(*got.content == *expected, || {
            format!(
                "readFile {file}: {} bytes {}, expected {} bytes {}",
                got.content.len(),
                shown(&got.content),
                expected.len(),
                shown(expected)
            )
        })?;
    }
    expect_refusal(
        "readFile /mnt/session/outputs/round-trip.bin with maximum_bytes 16",
        read(uploaded, 16).await?,
        ErrorKind::SandboxFileTooLarge,
    )?;
    Ok(())
}
