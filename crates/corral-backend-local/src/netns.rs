//! `network: none` for host processes: each command of such a sandbox runs
//! in a fresh, empty network namespace (`unshare --net`), so the kernel
//! gives it no interface but a loopback that is down.
//!
//! What it holds against: any program that opens sockets — nothing outside
//! the namespace is reachable, not even the host's loopback. What it does
//! not: the local backend isolates nothing else, so a workload running as
//! root on the host can enter another namespace (`nsenter`, `setns` through
//! `/proc/1/ns/net`). The envelope grades it `best_effort` for that reason;
//! the linux backend enforces network policy for hostile workloads.
//!
//! Availability is probed once per process: the backend declares
//! `network_none` only when a probe command really ran in a new network
//! namespace (as root, or unprivileged with a user namespace).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use corral_backend::{DEFAULT_PATH, Result};

/// How to start a command without network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NoNetwork {
    /// The arguments placed before the command's own argv.
    prefix: Vec<String>,
}

impl NoNetwork {
    /// `argv` wrapped so that it runs in a new, empty network namespace.
    pub(crate) fn wrap(&self, argv: Vec<String>) -> Vec<String> {
        let mut out = self.prefix.clone();
        out.push("--".into());
        out.extend(argv);
        out
    }
}

/// The probed way to drop the network, if this host has one.
pub(crate) fn no_network() -> Option<&'static NoNetwork> {
    static PROBED: OnceLock<Option<NoNetwork>> = OnceLock::new();
    PROBED.get_or_init(probe).as_ref()
}

fn probe() -> Option<NoNetwork> {
    let unshare = DEFAULT_PATH
        .split(':')
        .map(|d| PathBuf::from(d).join("unshare"))
        .find(|p| p.is_file())?;
    let unshare = unshare.to_string_lossy().into_owned();
    let root = rustix::process::geteuid().is_root();
    let prefix = if root {
        vec![unshare, "--net".to_string()]
    } else {
        vec![unshare, "--map-root-user".to_string(), "--net".to_string()]
    };
    // The probe must show an isolated namespace, not just a zero exit: in it
    // the per-namespace interface table (`/proc/net/dev`, read by the probe
    // itself) lists only `lo`.
    let candidate = NoNetwork { prefix };
    let argv = candidate.wrap(vec!["cat".into(), "/proc/net/dev".into()]);
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .env_clear()
        .env("PATH", DEFAULT_PATH)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let table = String::from_utf8_lossy(&out.stdout);
    (out.status.success() && interfaces(&table) == ["lo"]).then_some(candidate)
}

/// Interface names of a `/proc/net/dev` table.
pub(crate) fn interfaces(table: &str) -> Vec<&str> {
    table
        .lines()
        .skip(2)
        .filter_map(|l| l.split_once(':').map(|(name, _)| name.trim()))
        .collect()
}

/// Refuses to run a command of a `network: none` sandbox when the host lost
/// the means to isolate it (fail closed).
pub(crate) fn require() -> Result<&'static NoNetwork> {
    no_network().ok_or_else(|| {
        corral_backend::BackendError::unsupported(
            crate::state::NAME,
            "enforce network: none on this host (no usable `unshare --net`)",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_interface_names_from_proc_net_dev() {
        let table = "Inter-|   Receive\n face |bytes\n    lo:       0 0\n  eth0: 1 2\n";
        assert_eq!(interfaces(table), vec!["lo", "eth0"]);
    }

    #[test]
    fn wrap_puts_the_command_after_a_separator() {
        let n = NoNetwork {
            prefix: vec!["/usr/bin/unshare".into(), "--net".into()],
        };
        assert_eq!(
            n.wrap(vec!["sh".into(), "-c".into(), "echo".into()]),
            vec!["/usr/bin/unshare", "--net", "--", "sh", "-c", "echo"]
        );
    }
}
