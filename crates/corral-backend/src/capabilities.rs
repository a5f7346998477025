//! What a backend declares: its optional members and what it can enforce.

use serde::{Deserialize, Serialize};

use crate::error::{BackendError, Result};
use crate::exec::RunAs;
use crate::sandbox::{CreateRequest, Network};

/// The optional members a backend implements. A declared member whose
/// accessor returns `None` is a defect refused at construction
/// ([`crate::verify`]); an undeclared member is never called.
///
/// Hints that only spare the SDK core calls (a `write` that creates
/// parents, an `exec` that keeps the run's activity record) are not
/// members: the SDK takes them when it opens a backend
/// (`corral_sdk::ProviderHints`). Older descriptions that still carry
/// `write_creates_parents` and `inline_activity` decode, the two fields
/// ignored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    /// `pause` and `resume`.
    pub pause: bool,
    /// `snapshot`, `delete_snapshot`, `list_snapshots`, and `create` from a snapshot.
    pub snapshot: bool,
    /// `clone_snapshot`.
    pub snapshot_clone: bool,
    /// `open_terminal`.
    pub terminal: bool,
    /// `start_process`.
    pub start_process: bool,
    /// `usage`.
    pub usage: bool,
    /// `files.read_range`.
    pub read_range: bool,
    /// `read_contained`: physically contained reads.
    pub contained_read: bool,
    /// `list_tree`: complete leaf listings.
    pub list_tree: bool,
    /// `write_batch`: atomic batch publication.
    pub write_batch: bool,
    /// `preview_url` works for the ports asked for at create.
    pub previews: bool,
    /// `reclaim`: taking back what crashed processes left. Absent from
    /// older descriptions, which decode as `false`.
    #[serde(default)]
    pub reclaim: bool,
    /// `connect_port`: a connection to any port on the sandbox's own
    /// loopback. Absent from older descriptions, which decode as `false`.
    #[serde(default)]
    pub port_connect: bool,
    /// Commands, processes and terminals run as the sandbox's unprivileged
    /// user ([`RunAs::User`]) when asked. A backend without it refuses
    /// such a request with `unsupported` ([`check_run_as`]). Absent from
    /// older descriptions, which decode as `false`.
    #[serde(default)]
    pub run_as_user: bool,
    /// `create` binds host directories into the sandbox
    /// ([`CreateRequest::binds`]) with their containment kept; a backend
    /// without it refuses binds with `unsupported`
    /// ([`check_enforceable`]). Absent from older descriptions, which
    /// decode as `false`.
    #[serde(default)]
    pub binds: bool,
    /// What `create` can enforce.
    pub enforces: Enforceable,
}

/// Which fields of a create request the backend can enforce. A request for
/// anything marked `false` fails with `unsupported` before anything is
/// allocated (the SDK's fail-closed rule). Not the contract's enforcement
/// axes (`corral_contract::Enforcement`, how strongly an isolation axis
/// holds), which the registry derives from this per backend.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Enforceable {
    /// `network: none`.
    pub network_none: bool,
    /// `network: allowlist`.
    pub network_allowlist: bool,
    /// `size.cpus`.
    pub cpu: bool,
    /// `size.memory_bytes`.
    pub memory: bool,
    /// `size.disk_bytes`.
    pub disk: bool,
    /// `limits.pids`.
    pub pids: bool,
    /// `idle_timeout`.
    pub idle_timeout: bool,
    /// `timeout` (the sandbox's lifetime).
    pub timeout: bool,
    /// `bound_to_creator`: the sandbox dies with the process that created it.
    #[serde(default)]
    pub bound_to_creator: bool,
}

impl Enforceable {
    /// Everything enforced.
    pub const ALL: Enforceable = Enforceable {
        network_none: true,
        network_allowlist: true,
        cpu: true,
        memory: true,
        disk: true,
        pids: true,
        idle_timeout: true,
        timeout: true,
        bound_to_creator: true,
    };
}

/// The SDK's fail-closed rule for `create`: refuses with `unsupported`,
/// naming the first request field the backend cannot enforce.
pub fn check_enforceable(backend: &str, caps: &Capabilities, req: &CreateRequest) -> Result<()> {
    let e = &caps.enforces;
    let refuse = |what: &str| {
        Err(BackendError::unsupported(
            backend,
            format!("enforce {what}"),
        ))
    };
    match &req.network {
        Network::Default => {}
        Network::None if !e.network_none => return refuse("network: none"),
        Network::Allowlist { .. } if !e.network_allowlist => return refuse("a network allowlist"),
        Network::None | Network::Allowlist { .. } => {}
    }
    if req.size.cpus.is_some() && !e.cpu {
        return refuse("a CPU limit (size.cpus)");
    }
    if req.size.memory_bytes.is_some() && !e.memory {
        return refuse("a memory limit (size.memory_bytes)");
    }
    if req.size.disk_bytes.is_some() && !e.disk {
        return refuse("a disk limit (size.disk_bytes)");
    }
    if req.limits.pids.is_some() && !e.pids {
        return refuse("a process limit (limits.pids)");
    }
    if req.idle_timeout.is_some() && !e.idle_timeout {
        return refuse("an idle timeout");
    }
    if req.timeout.is_some() && !e.timeout {
        return refuse("a sandbox timeout");
    }
    if req.bound_to_creator && !e.bound_to_creator {
        return refuse("a lifetime bound to its creator (bound_to_creator)");
    }
    if !req.ports.is_empty() && !caps.previews {
        return refuse("publish ports (previews)");
    }
    if req.snapshot.is_some() && !caps.snapshot {
        return refuse("restore from a snapshot");
    }
    if !req.binds.is_empty() && !caps.binds {
        return Err(BackendError::unsupported(
            backend,
            "bind host directories into a sandbox (binds, -v/--volume)",
        ));
    }
    Ok(())
}

/// The fail-closed rule for whom a command runs as: refuses
/// [`RunAs::User`] with `unsupported` unless the backend declares
/// [`Capabilities::run_as_user`]. Root, and no identity asked for, are what
/// every backend runs. Backends call it where they validate an `exec`,
/// `start_process` or `open_terminal` request, before anything runs.
pub fn check_run_as(backend: &str, caps: &Capabilities, run_as: Option<RunAs>) -> Result<()> {
    match run_as {
        None | Some(RunAs::Root) => Ok(()),
        Some(RunAs::User) if caps.run_as_user => Ok(()),
        Some(RunAs::User) => Err(BackendError::unsupported(
            backend,
            "run commands as the sandbox's unprivileged user",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn run_as_user_needs_the_declaration() {
        let declared = Capabilities {
            run_as_user: true,
            ..Capabilities::default()
        };
        let undeclared = Capabilities::default();
        let rows: [(Option<RunAs>, &Capabilities, Option<ErrorCode>); 6] = [
            (None, &undeclared, None),
            (Some(RunAs::Root), &undeclared, None),
            (Some(RunAs::User), &undeclared, Some(ErrorCode::Unsupported)),
            (None, &declared, None),
            (Some(RunAs::Root), &declared, None),
            (Some(RunAs::User), &declared, None),
        ];
        for (run_as, caps, want) in rows {
            let got = check_run_as("test", caps, run_as).err().map(|e| e.code());
            assert_eq!(
                got, want,
                "{run_as:?} with run_as_user {}",
                caps.run_as_user
            );
        }
        let old = serde_json::to_value(Capabilities::default()).unwrap();
        let mut old = old.as_object().unwrap().clone();
        old.remove("run_as_user");
        let decoded: Capabilities = serde_json::from_value(old.into()).unwrap();
        assert!(!decoded.run_as_user, "older descriptions decode without it");
    }

    /// SDK spec: "**Fail closed.** If `create` can't enforce a requested
    /// `size`, `network`, `idleTimeoutMs`, or `timeoutMs`, throw
    /// `SandboxError` with code `unsupported`. Never create a sandbox that's
    /// more open than requested." A request for binds fails with
    /// `unsupported`, naming `-v`, on a backend that does not declare
    /// [`Capabilities::binds`]; older requests and descriptions decode
    /// without binds.
    #[test]
    fn binds_need_the_declaration() {
        let dir = tempfile::tempdir().unwrap();
        let target = crate::sandbox_path("bind", "/data").unwrap();
        let bind = crate::HostBind::new(dir.path(), target, true).unwrap();
        let req = CreateRequest {
            binds: crate::HostBinds::new(vec![bind]).unwrap(),
            ..CreateRequest::default()
        };
        let err = check_enforceable("memory", &Capabilities::default(), &req).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Unsupported);
        assert!(err.to_string().contains("-v/--volume"), "{err}");
        let declared = Capabilities {
            binds: true,
            ..Capabilities::default()
        };
        assert!(check_enforceable("linux", &declared, &req).is_ok());
        let mut old = serde_json::to_value(CreateRequest::default()).unwrap();
        old.as_object_mut().unwrap().remove("binds");
        let decoded: CreateRequest = serde_json::from_value(old).unwrap();
        assert!(
            decoded.binds.is_empty(),
            "older requests decode without binds"
        );
        let mut old = serde_json::to_value(Capabilities::default()).unwrap();
        old.as_object_mut().unwrap().remove("binds");
        let decoded: Capabilities = serde_json::from_value(old).unwrap();
        assert!(!decoded.binds, "older descriptions decode without binds");
    }

    /// What older descriptions decode as: each row edits the description
    /// of `pause` and `reclaim` declared, then says what must come out.
    #[test]
    fn older_descriptions_decode() {
        type Edit = fn(&mut serde_json::Map<String, serde_json::Value>);
        let rows: [(&str, Edit, bool); 3] = [
            ("as written", |_| {}, true),
            (
                "without reclaim: not declaring it",
                |o| {
                    o.remove("reclaim");
                },
                false,
            ),
            (
                "with the retired SDK hints: ignored",
                |o| {
                    o.insert("write_creates_parents".into(), true.into());
                    o.insert("inline_activity".into(), true.into());
                },
                true,
            ),
        ];
        for (what, edit, reclaim) in rows {
            let mut json = serde_json::to_value(Capabilities {
                reclaim: true,
                pause: true,
                ..Capabilities::default()
            })
            .unwrap();
            edit(json.as_object_mut().unwrap());
            let decoded: Capabilities =
                serde_json::from_value(json).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(decoded.reclaim, reclaim, "{what}");
            assert!(decoded.pause, "{what}");
            assert_eq!(
                decoded,
                Capabilities {
                    reclaim,
                    pause: true,
                    ..Capabilities::default()
                },
                "{what}: nothing else declared"
            );
        }
    }
}
