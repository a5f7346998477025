//! Sandbox cgroups on cgroup v1 or v2: limits (memory without swap, pids,
//! CPU quota), membership, pause/resume, kill-all, usage, removal.
//!
//! # Which hierarchy
//!
//! [`Cgroups::detect`] picks **v2** when the unified hierarchy offers the
//! memory, pids and cpu controllers *and* they can be enabled for corral's
//! parent (`cgroup.subtree_control`); otherwise **v1** when every needed
//! controller (memory, pids, cpu, cpuacct, freezer) has a v1 mount. A
//! controller is bound to one hierarchy at a time, so on a *hybrid* host
//! (systemd's default for years: v1 controllers plus a controller-less
//! unified mount for process tracking) the unified hierarchy has no
//! controllers and v1 wins; v2 wins wherever the controllers actually live
//! there. When v2 is mounted with the controllers but cannot delegate them
//! (this process's cgroup is not the root and holds processes, the "no
//! internal processes" rule) and there is no complete v1, that delegation
//! error is reported: run corral in a leaf of a delegated cgroup.
//!
//! # Where
//!
//! Sandbox cgroups live in a `corral/` parent below **the cgroup this
//! process is in**, per hierarchy (so on v1 the memory parent may sit deeper
//! than the pids parent). Nesting under our own cgroup keeps every sandbox
//! inside whatever budget the operator gave corral itself and needs no write
//! access above it; a corral restarted in the same service cgroup finds the
//! orphans of its predecessor with [`Cgroups::list`]. Each sandbox cgroup is
//! named after the sandbox id, which is its label for garbage collection.

mod detect;
mod error;
mod fs;
mod v1;
mod v2;

use std::path::{Path, PathBuf};

pub use error::{CgroupError, CgroupOp, Controller, LimitField, Settle};

/// The name of corral's parent cgroup in each hierarchy.
pub const PARENT: &str = "corral";

/// The CFS period every CPU quota is expressed over: 100 ms.
pub const CPU_PERIOD_US: u64 = 100_000;

/// The quota (µs per [`CPU_PERIOD_US`]) for `millicores`.
fn quota_us(millicores: u64) -> u64 {
    millicores.saturating_mul(CPU_PERIOD_US) / 1000
}

/// Which cgroup interface the host offers corral.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupVersion {
    /// One hierarchy per controller.
    V1,
    /// The unified hierarchy.
    V2,
}

/// Limits for one sandbox; `None` leaves that resource unlimited by corral
/// (the parents' limits still apply).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CgroupLimits {
    /// Memory in bytes, with no swap on top.
    pub memory_bytes: Option<u64>,
    /// Maximum number of processes (threads count too).
    pub pids: Option<u64>,
    /// CPU in thousandths of a CPU (1000 = one CPU), as a quota over a
    /// 100 ms period.
    pub cpu_millicores: Option<u64>,
}

impl CgroupLimits {
    /// corral's safe defaults: 1 GiB memory, 512 processes, one CPU.
    pub const fn safe_defaults() -> Self {
        Self {
            memory_bytes: Some(1 << 30),
            pids: Some(512),
            cpu_millicores: Some(1000),
        }
    }

    fn validate(&self) -> Result<(), CgroupError> {
        let fields = [
            (LimitField::MemoryBytes, self.memory_bytes),
            (LimitField::Pids, self.pids),
            (LimitField::CpuMillicores, self.cpu_millicores),
        ];
        for (field, value) in fields {
            if let Some(value) = value.filter(|v| *v < field.minimum()) {
                return Err(CgroupError::InvalidLimit { field, value });
            }
        }
        Ok(())
    }
}

/// Usage counters of one sandbox cgroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CgroupStats {
    /// Memory in use now, in bytes.
    pub memory_bytes: u64,
    /// The most memory ever in use, when the kernel reports it (v2 needs
    /// Linux 5.19 for `memory.peak`).
    pub memory_peak_bytes: Option<u64>,
    /// How many processes the OOM killer has killed in this cgroup.
    pub oom_kills: u64,
    /// Processes (tasks) in the cgroup now.
    pub pids: u64,
    /// CPU time consumed, in nanoseconds.
    pub cpu_usage_ns: u64,
}

/// corral's parent cgroup(s) on the host.
#[derive(Debug, Clone)]
enum Parent {
    V1(v1::Dirs),
    V2(PathBuf),
}

/// The host's cgroup hierarchy as corral uses it, detected once.
#[derive(Debug, Clone)]
pub struct Cgroups {
    parent: Parent,
}

impl Cgroups {
    /// Detects the hierarchy (see the module documentation for which wins)
    /// and, on v2, delegates the controllers to corral's parent.
    pub fn detect() -> Result<Self, CgroupError> {
        let mounts = detect::mounts()?;
        let memberships = detect::memberships()?;
        let has_v2 = mounts.iter().any(|m| m.fstype == detect::FsType::V2);
        let v2 = has_v2.then(|| v2::delegate(&mounts, &memberships));
        if let Some(Ok(parent)) = v2 {
            return Ok(Self {
                parent: Parent::V2(parent),
            });
        }
        match (v1::Dirs::parents(&mounts, &memberships), v2) {
            (Ok(dirs), _) => Ok(Self {
                parent: Parent::V1(dirs),
            }),
            // A v2 host whose controllers exist but cannot be delegated:
            // that is the error worth reporting.
            (Err(_), Some(Err(v2_error @ CgroupError::Io { .. }))) => Err(v2_error),
            (Err(v1_error), _) => Err(v1_error),
        }
    }

    /// The interface in use.
    pub fn version(&self) -> CgroupVersion {
        match self.parent {
            Parent::V1(_) => CgroupVersion::V1,
            Parent::V2(_) => CgroupVersion::V2,
        }
    }

    /// corral's parent directory (on v1, the freezer hierarchy's one).
    pub fn parent_dir(&self) -> &Path {
        match &self.parent {
            Parent::V1(dirs) => dirs.primary(),
            Parent::V2(dir) => dir,
        }
    }

    /// Creates the cgroup `name` (the sandbox id) with `limits`. Fails with
    /// [`CgroupError::AlreadyExists`] when it exists; leaves nothing behind
    /// on failure.
    pub fn create(&self, name: &str, limits: &CgroupLimits) -> Result<Cgroup, CgroupError> {
        validate_name(name)?;
        limits.validate()?;
        let layout = match &self.parent {
            Parent::V1(parents) => {
                let dirs = parents.child(name);
                dirs.create(parents, limits)?;
                Layout::V1(dirs)
            }
            Parent::V2(parent) => {
                let dir = parent.join(name);
                v2::create(&dir, limits)?;
                Layout::V2(dir)
            }
        };
        Ok(Cgroup {
            name: name.to_owned(),
            layout,
        })
    }

    /// Opens the existing cgroup `name`, `None` when there is none.
    pub fn open(&self, name: &str) -> Result<Option<Cgroup>, CgroupError> {
        validate_name(name)?;
        let layout = match &self.parent {
            Parent::V1(parents) => Layout::V1(parents.child(name)),
            Parent::V2(parent) => Layout::V2(parent.join(name)),
        };
        let exists = match &layout {
            Layout::V1(dirs) => dirs.exists(),
            Layout::V2(dir) => dir.is_dir(),
        };
        Ok(exists.then(|| Cgroup {
            name: name.to_owned(),
            layout,
        }))
    }

    /// The names of every cgroup under corral's parent (in any controller
    /// on v1), sorted: the candidates for garbage collection.
    pub fn list(&self) -> Result<Vec<String>, CgroupError> {
        let parents: Vec<&Path> = match &self.parent {
            Parent::V1(dirs) => dirs.unique(),
            Parent::V2(dir) => vec![dir.as_path()],
        };
        let mut names = Vec::new();
        for parent in parents {
            for dir in fs::subdirs(parent)? {
                if let Some(name) = dir.file_name().and_then(|n| n.to_str())
                    && validate_name(name).is_ok()
                {
                    names.push(name.to_owned());
                }
            }
        }
        names.sort();
        names.dedup();
        Ok(names)
    }
}

#[cfg(test)]
impl Cgroups {
    /// A unified hierarchy whose corral parent is `dir`, for tests on a
    /// recording host (which never reads nor writes it).
    pub(crate) fn unified_at(dir: PathBuf) -> Self {
        Self {
            parent: Parent::V2(dir),
        }
    }
}

/// Where one sandbox's cgroup lives.
#[derive(Debug, Clone)]
enum Layout {
    V1(v1::Dirs),
    V2(PathBuf),
}

/// One sandbox's cgroup.
#[derive(Debug, Clone)]
pub struct Cgroup {
    name: String,
    layout: Layout,
}

impl Cgroup {
    /// The sandbox id it is named after.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its directory (on v1, the freezer hierarchy's one).
    pub fn dir(&self) -> &Path {
        match &self.layout {
            Layout::V1(dirs) => dirs.primary(),
            Layout::V2(dir) => dir,
        }
    }

    /// The directory holding `controller`'s files (on v2 the one directory;
    /// `Cpuacct` and `Freezer` map to the `cpu.stat` and `cgroup.freeze`
    /// files there).
    pub fn controller_dir(&self, controller: Controller) -> &Path {
        match &self.layout {
            Layout::V1(dirs) => dirs.get(controller),
            Layout::V2(dir) => dir,
        }
    }

    /// Replaces the limits it was created with by `limits` (a `None` field
    /// becomes unlimited).
    pub fn set_limits(&self, limits: &CgroupLimits) -> Result<(), CgroupError> {
        limits.validate()?;
        match &self.layout {
            Layout::V1(dirs) => dirs.set_limits(limits),
            Layout::V2(dir) => v2::set_limits(dir, limits),
        }
    }

    /// Moves process `pid` into the cgroup (every controller on v1).
    pub fn add_pid(&self, pid: u32) -> Result<(), CgroupError> {
        match &self.layout {
            Layout::V1(dirs) => dirs.add_pid(pid),
            Layout::V2(dir) => v2::add_pid(dir, pid),
        }
    }

    /// Freezes every process and waits until the kernel reports it frozen.
    pub fn freeze(&self) -> Result<(), CgroupError> {
        match &self.layout {
            Layout::V1(dirs) => dirs.freeze(),
            Layout::V2(dir) => v2::set_frozen(dir, true),
        }
    }

    /// Thaws and waits until the kernel reports it thawed.
    pub fn thaw(&self) -> Result<(), CgroupError> {
        match &self.layout {
            Layout::V1(dirs) => dirs.thaw(),
            Layout::V2(dir) => v2::set_frozen(dir, false),
        }
    }

    /// Kills every process in the cgroup and waits (bounded) until it is
    /// empty. A cgroup that no longer exists is already empty.
    pub fn kill_all(&self) -> Result<(), CgroupError> {
        match &self.layout {
            Layout::V1(dirs) => dirs.kill_all(),
            Layout::V2(dir) => v2::kill_all(dir),
        }
    }

    /// The processes in the cgroup (and in any cgroup below it).
    pub fn pids(&self) -> Result<Vec<u32>, CgroupError> {
        match &self.layout {
            Layout::V1(dirs) => dirs.pids(),
            Layout::V2(dir) => {
                let mut pids = fs::subtree_pids(dir)?;
                pids.sort_unstable();
                Ok(pids)
            }
        }
    }

    /// The out-of-memory kill counter alone: one file read (`stats` reads
    /// five), cheap enough to take around every exec.
    pub fn oom_kills(&self) -> Result<u64, CgroupError> {
        let file = match &self.layout {
            Layout::V1(dirs) => dirs.memory_dir().join("memory.oom_control"),
            Layout::V2(dir) => dir.join("memory.events"),
        };
        let text = fs::read(&file)?;
        fs::keyed_u64(&file, &text, "oom_kill")
    }

    /// Usage counters.
    pub fn stats(&self) -> Result<CgroupStats, CgroupError> {
        match &self.layout {
            Layout::V1(dirs) => dirs.stats(),
            Layout::V2(dir) => v2::stats(dir),
        }
    }

    /// Its distinct directories (one on v2; one per hierarchy on v1, where
    /// co-mounted controllers share one): what [`remove_emptied`] removes.
    pub fn dirs(&self) -> Vec<PathBuf> {
        match &self.layout {
            Layout::V1(dirs) => dirs.unique().into_iter().map(Path::to_path_buf).collect(),
            Layout::V2(dir) => vec![dir.clone()],
        }
    }

    /// Kills every process, then removes every directory. Safe to repeat
    /// (through [`Cgroups::open`] or a clone): what is gone stays gone.
    pub fn destroy(self) -> Result<(), CgroupError> {
        match &self.layout {
            Layout::V1(dirs) => dirs.destroy(),
            Layout::V2(dir) => v2::destroy(dir),
        }
    }
}

/// Removes the cgroup directories `dirs` of one sandbox ([`Cgroup::dirs`]),
/// emptied of processes before ([`Cgroup::kill_all`]): what is left of a
/// cgroup once its sandbox was destroyed, removed by whoever finishes the
/// sandbox without the hierarchy at hand. A directory already gone is not
/// an error; one still holding a process is refused (never killed here).
pub fn remove_emptied(dirs: &[PathBuf]) -> Result<(), CgroupError> {
    for dir in dirs {
        fs::rmdir_tree(dir)?;
    }
    Ok(())
}

/// A sandbox name is one path component: 1 to 64 of `[A-Za-z0-9._-]`,
/// not starting with `.`.
fn validate_name(name: &str) -> Result<(), CgroupError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(CgroupError::InvalidName {
            name: name.chars().take(80).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_single_components() {
        for good in ["sbx-1", "a", "A.b_c-9"] {
            assert!(validate_name(good).is_ok(), "{good}");
        }
        for bad in ["", ".", "..", ".hidden", "a/b", "a b", &"x".repeat(65)] {
            assert!(validate_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn errors_are_one_line_naming_file_and_errno() {
        let err = CgroupError::Io {
            op: CgroupOp::Write,
            path: PathBuf::from("/cg/corral/a/pids.max"),
            errno: libc::EBUSY,
        };
        let text = err.to_string();
        assert!(
            text.starts_with("cgroup write /cg/corral/a/pids.max: "),
            "{text}"
        );
        assert!(text.ends_with("(os error 16)"), "{text}");
        let parse = CgroupError::parse("/cg/x", "a\nb");
        assert!(!parse.to_string().contains('\n'));
    }

    #[test]
    fn limits_have_minimums() {
        assert!(CgroupLimits::safe_defaults().validate().is_ok());
        let err = CgroupLimits {
            cpu_millicores: Some(5),
            ..CgroupLimits::default()
        }
        .validate()
        .expect_err("5 millicores accepted");
        assert_eq!(
            err.to_string(),
            "invalid cgroup limit cpu_millicores = 5: the minimum is 10"
        );
        assert_eq!(quota_us(1000), 100_000);
        assert_eq!(quota_us(250), 25_000);
    }
}
