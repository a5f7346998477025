//! Whether allowlists can be enforced on this host: `ip` and `nft` are on
//! `PATH`, and a veth pair and both rulesets can be made in a throwaway
//! network namespace.
//!
//! The probe starts three processes and makes two network namespaces:
//! about half of the CPU a short-lived `corral` process spends opening the
//! linux backend. Its answer depends on the kernel and on the two tools,
//! so a success is remembered for the boot, in [`REMEMBERED`] on `/run`
//! (a tmpfs, emptied by every boot), beside the fingerprint it holds for:
//! the kernel's boot id and each tool's path, inode, size and change time.
//! A later process whose fingerprint is the same skips the probe; one
//! whose tools moved or changed probes again. A failure is never
//! remembered: whoever installs the missing tool sees it work at once.
//!
//! Only root remembers (an ordinary user cannot enforce allowlists, and
//! `/run` is root's): the file is read only when it is a regular file, not
//! a link, owned by the reading user, so no other user can plant an answer.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::command::{Namespace, find_on_path, run};
use super::{Endpoint, Link, ruleset};

/// Where a successful probe is remembered until the next boot.
pub const REMEMBERED: &str = "/run/corral/network-probe";

/// The tools an allowlist needs.
const TOOLS: [&str; 2] = ["ip", "nft"];

/// Whether allowlists can be enforced here, as the module says: probed
/// once per process, and at most once per boot while the tools stay the
/// same.
pub fn available() -> Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE
        .get_or_init(|| available_remembering(Path::new(REMEMBERED)))
        .clone()
}

/// [`available`] with its memory at `remembered`.
fn available_remembering(remembered: &Path) -> Result<(), String> {
    let mut tools = Vec::with_capacity(TOOLS.len());
    for tool in TOOLS {
        tools.push(find_on_path(tool).ok_or_else(|| format!("`{tool}` is not on PATH"))?);
    }
    let remembers = rustix::process::geteuid().is_root();
    let print = fingerprint(&tools);
    if remembers && print.as_deref().is_some_and(|p| recalled(remembered, p)) {
        return Ok(());
    }
    probe()?;
    if let (true, Some(print)) = (remembers, print) {
        // Only a cost saved if it fails: the next process probes again.
        let _ = remember(remembered, &print);
    }
    Ok(())
}

/// What a remembered answer holds for: the boot and each tool's identity;
/// `None` when any of it cannot be read (nothing is then remembered).
fn fingerprint(tools: &[PathBuf]) -> Option<String> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let mut print = format!("boot {}\n", boot.trim());
    for tool in tools {
        let m = std::fs::metadata(tool).ok()?;
        print.push_str(&format!(
            "tool {} {} {} {} {}.{}\n",
            tool.display(),
            m.dev(),
            m.ino(),
            m.size(),
            m.ctime(),
            m.ctime_nsec()
        ));
    }
    Some(print)
}

/// Whether `remembered` is this user's regular file (never followed
/// through a link) holding exactly `print`.
fn recalled(remembered: &Path, print: &str) -> bool {
    let Ok(mut file) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(remembered)
    else {
        return false;
    };
    let owned = file.metadata().is_ok_and(|m| {
        m.is_file() && m.uid() == rustix::process::geteuid().as_raw() && m.len() <= 4096
    });
    let mut held = String::new();
    owned && file.read_to_string(&mut held).is_ok() && held == print
}

/// Writes `print` to `remembered` atomically, making its directory.
fn remember(remembered: &Path, print: &str) -> std::io::Result<()> {
    if let Some(dir) = remembered.parent() {
        std::fs::create_dir_all(dir)?;
    }
    corral_backend::statefile::write_atomic_unsynced(remembered, print.as_bytes())
}

fn probe() -> Result<(), String> {
    // The two checks are independent (each in a throwaway namespace of its
    // own), and every backend open waits for them: run them side by side.
    let (veth, rules) = std::thread::scope(|scope| {
        let veth = scope.spawn(probe_veth);
        let rules = probe_rulesets();
        let veth = veth
            .join()
            .unwrap_or_else(|_| Err("the veth probe panicked".into()));
        (veth, rules)
    });
    veth.and(rules)
}

/// A veth pair can be made.
fn probe_veth() -> Result<(), String> {
    run(
        "ip",
        &[
            "link",
            "add",
            "crlprobe0",
            "type",
            "veth",
            "peer",
            "name",
            "crlprobe1",
        ],
        None,
        Namespace::Throwaway,
    )
    .map(drop)
    .map_err(|e| format!("veth pairs are unavailable: {e}"))
}

/// Both rulesets load into nf_tables.
fn probe_rulesets() -> Result<(), String> {
    let endpoint = [Endpoint::host(std::net::Ipv4Addr::LOCALHOST, 1)];
    let mut rules = ruleset::sandbox_ruleset(&endpoint);
    rules.push_str(&ruleset::host_ruleset(
        &Link {
            host_name: "lo".into(),
            host_addr: std::net::Ipv4Addr::LOCALHOST,
            sandbox_addr: std::net::Ipv4Addr::LOCALHOST,
        },
        &endpoint,
    ));
    run("nft", &["-f", "-"], Some(&rules), Namespace::Throwaway)
        .map(drop)
        .map_err(|e| format!("nf_tables is unavailable: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hostile or stale memories → the probe runs again (the answer is
    /// never taken from them).
    #[test]
    fn a_memory_is_taken_only_when_it_is_ours_and_holds_this_fingerprint() {
        let dir = tempfile::tempdir().unwrap();
        let print = "boot b\ntool /usr/sbin/nft 1 2 3 4.5\n";
        let file = dir.path().join("network-probe");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, print).unwrap();
        type Plant = fn(&Path, &Path, &str);
        let rows: [(&str, Plant, bool); 5] = [
            ("nothing remembered", |_, _, _| {}, false),
            (
                "the same fingerprint",
                |f, _, p| std::fs::write(f, p).unwrap(),
                true,
            ),
            (
                "another boot's",
                |f, _, p| std::fs::write(f, p.replace("boot b", "boot c")).unwrap(),
                false,
            ),
            (
                "a link to a matching file",
                |f, e, _| std::os::unix::fs::symlink(e, f).unwrap(),
                false,
            ),
            (
                "a directory",
                |f, _, _| std::fs::create_dir(f).unwrap(),
                false,
            ),
        ];
        for (attack, plant, taken) in rows {
            let _ = std::fs::remove_file(&file);
            let _ = std::fs::remove_dir(&file);
            plant(&file, &elsewhere, print);
            assert_eq!(recalled(&file, print), taken, "{attack}");
        }
    }

    /// What is remembered is read back as the same fingerprint.
    #[test]
    fn a_remembered_fingerprint_is_recalled() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("corral").join("network-probe");
        remember(&file, "boot x\n").unwrap();
        assert!(recalled(&file, "boot x\n"));
        assert!(!recalled(&file, "boot y\n"));
    }
}
