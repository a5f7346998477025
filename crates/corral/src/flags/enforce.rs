//! What a backend cannot enforce, refused before anything is created, in
//! one line naming the flag that asked for it — the SDK's fail-closed rule
//! (`corral_backend::check_enforceable`) as a person at a shell meets it.

use corral_backend::{Capabilities, CreateRequest, Network, RunAs};

use crate::error::CliError;

/// What the command line asks beyond the create request.
#[derive(Debug, Clone, Copy, Default)]
pub struct Asked {
    /// Whom the command runs as (`--user`).
    pub run_as: Option<RunAs>,
}

/// Refuses with `unsupported`, naming the flag, the first thing of `req`
/// and `asked` that the backend `name` with `caps` cannot do. A backend
/// refuses the same request itself (fail closed); this only words it.
pub fn check(
    name: &str,
    caps: &Capabilities,
    req: &CreateRequest,
    asked: Asked,
) -> Result<(), CliError> {
    let e = &caps.enforces;
    let rows: [(&str, bool, bool, &str); 11] = [
        (
            "--memory",
            req.size.memory_bytes.is_some(),
            e.memory,
            "enforce a memory limit",
        ),
        (
            "--cpus",
            req.size.cpus.is_some(),
            e.cpu,
            "enforce a CPU limit",
        ),
        (
            "--pids",
            req.limits.pids.is_some(),
            e.pids,
            "enforce a process limit",
        ),
        (
            "--disk",
            req.size.disk_bytes.is_some(),
            e.disk,
            "enforce a disk limit",
        ),
        (
            "--network none",
            req.network == Network::None,
            e.network_none,
            "cut a sandbox off the network",
        ),
        (
            "--network allow=",
            matches!(req.network, Network::Allowlist { .. }),
            e.network_allowlist,
            "enforce a network allowlist",
        ),
        (
            "--port",
            !req.ports.is_empty(),
            caps.previews,
            "publish ports through preview URLs",
        ),
        (
            "--timeout",
            req.timeout.is_some(),
            e.timeout,
            "destroy a sandbox after a lifetime",
        ),
        (
            "--snapshot",
            req.snapshot.is_some(),
            caps.snapshot,
            "start a sandbox from a snapshot",
        ),
        (
            "--volume",
            !req.binds.is_empty(),
            caps.binds,
            "bind host directories into a sandbox",
        ),
        (
            "--user user",
            asked.run_as == Some(RunAs::User),
            caps.run_as_user,
            "run commands as the sandbox's unprivileged user",
        ),
    ];
    for (flag, asked, can, what) in rows {
        if asked && !can {
            let why = lacking(name, flag)
                .map(|w| format!(": {w}"))
                .unwrap_or_default();
            return Err(CliError::failure(
                "unsupported",
                format!("{flag}: the {name} backend cannot {what} here{why}"),
            ));
        }
    }
    Ok(())
}

/// What this host lacks for `flag` on backend `name`, where the backend
/// can say: the linux backend's allowlist needs `ip` and nftables.
fn lacking(name: &str, flag: &str) -> Option<String> {
    if name == "linux" && flag == "--network allow=" {
        return corral_backend_linux::network::available().err();
    }
    None
}
