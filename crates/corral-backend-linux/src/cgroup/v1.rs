//! cgroup v1: one directory per controller (memory, pids, cpu, cpuacct,
//! freezer), possibly shared when controllers are co-mounted.

use std::path::{Path, PathBuf};

use super::detect::{self, Membership, Mount};
use super::error::{CgroupError, Controller, Settle};
use super::{CgroupLimits, CgroupStats, PARENT, fs};

/// The controllers a v1 sandbox cgroup lives in.
const CONTROLLERS: [Controller; 5] = [
    Controller::Memory,
    Controller::Pids,
    Controller::Cpu,
    Controller::Cpuacct,
    Controller::Freezer,
];

/// One directory per controller: corral's parents, or one sandbox's cgroup.
#[derive(Debug, Clone)]
pub(crate) struct Dirs {
    memory: PathBuf,
    pids: PathBuf,
    cpu: PathBuf,
    cpuacct: PathBuf,
    freezer: PathBuf,
}

impl Dirs {
    /// corral's parent directories, below this process's cgroup in each
    /// controller's hierarchy.
    pub(crate) fn parents(
        mounts: &[Mount],
        memberships: &[Membership],
    ) -> Result<Self, CgroupError> {
        let dir = |controller| {
            detect::v1_dir(mounts, memberships, controller)
                .map(|own| own.join(PARENT))
                .ok_or(CgroupError::MissingController { controller })
        };
        Ok(Self {
            memory: dir(Controller::Memory)?,
            pids: dir(Controller::Pids)?,
            cpu: dir(Controller::Cpu)?,
            cpuacct: dir(Controller::Cpuacct)?,
            freezer: dir(Controller::Freezer)?,
        })
    }

    /// The same layout one level down (a sandbox named `name`).
    pub(crate) fn child(&self, name: &str) -> Self {
        Self {
            memory: self.memory.join(name),
            pids: self.pids.join(name),
            cpu: self.cpu.join(name),
            cpuacct: self.cpuacct.join(name),
            freezer: self.freezer.join(name),
        }
    }

    /// The directory of `controller`.
    pub(crate) fn get(&self, controller: Controller) -> &Path {
        match controller {
            Controller::Memory => &self.memory,
            Controller::Pids => &self.pids,
            Controller::Cpu => &self.cpu,
            Controller::Cpuacct => &self.cpuacct,
            Controller::Freezer => &self.freezer,
        }
    }

    /// The distinct directories (co-mounted controllers share one).
    pub(crate) fn unique(&self) -> Vec<&Path> {
        let mut out: Vec<&Path> = Vec::with_capacity(CONTROLLERS.len());
        for controller in CONTROLLERS {
            let dir = self.get(controller);
            if !out.contains(&dir) {
                out.push(dir);
            }
        }
        out
    }

    /// The freezer directory, used to name the cgroup in errors.
    pub(crate) fn primary(&self) -> &Path {
        &self.freezer
    }

    /// Creates every directory and writes the limits; on failure removes
    /// what it created.
    pub(crate) fn create(&self, parents: &Self, limits: &CgroupLimits) -> Result<(), CgroupError> {
        for parent in parents.unique() {
            fs::mkdir_all(parent)?;
        }
        let mut created = Vec::new();
        let result = self
            .unique()
            .into_iter()
            .try_for_each(|dir| {
                fs::mkdir(dir)?;
                created.push(dir);
                Ok(())
            })
            .and_then(|()| self.apply(limits));
        if result.is_err() {
            for dir in created {
                // Best effort: the error being returned is the one that matters.
                let _ = fs::rmdir_tree(dir);
            }
        }
        result
    }

    fn apply(&self, limits: &CgroupLimits) -> Result<(), CgroupError> {
        if let Some(bytes) = limits.memory_bytes {
            let value = bytes.to_string();
            fs::write(&self.memory.join("memory.limit_in_bytes"), &value)?;
            // Memory plus swap equal to memory: no swap. Absent when the
            // kernel does not account swap, in which case swappiness 0 is
            // what remains.
            fs::write_optional(&self.memory.join("memory.memsw.limit_in_bytes"), &value)?;
            fs::write_optional(&self.memory.join("memory.swappiness"), "0")?;
        }
        if let Some(pids) = limits.pids {
            fs::write(&self.pids.join("pids.max"), &pids.to_string())?;
        }
        if let Some(millicores) = limits.cpu_millicores {
            let period = super::CPU_PERIOD_US;
            fs::write(&self.cpu.join("cpu.cfs_period_us"), &period.to_string())?;
            let quota = super::quota_us(millicores);
            fs::write(&self.cpu.join("cpu.cfs_quota_us"), &quota.to_string())?;
        }
        Ok(())
    }

    /// Replaces every limit; a `None` field becomes unlimited (`-1`, `max`).
    pub(crate) fn set_limits(&self, limits: &CgroupLimits) -> Result<(), CgroupError> {
        let memory = limits
            .memory_bytes
            .map_or_else(|| "-1".to_owned(), |b| b.to_string());
        let limit = self.memory.join("memory.limit_in_bytes");
        let memsw = self.memory.join("memory.memsw.limit_in_bytes");
        // The kernel keeps memory <= memory+swap at every write: raising
        // needs memsw first, lowering the limit first. Trying memsw first
        // (refused when lowering) and again after covers both.
        let _ = fs::write_optional(&memsw, &memory);
        fs::write(&limit, &memory)?;
        fs::write_optional(&memsw, &memory)?;
        let pids = limits
            .pids
            .map_or_else(|| "max".to_owned(), |p| p.to_string());
        fs::write(&self.pids.join("pids.max"), &pids)?;
        let quota = limits
            .cpu_millicores
            .map_or_else(|| "-1".to_owned(), |m| super::quota_us(m).to_string());
        let period = super::CPU_PERIOD_US.to_string();
        fs::write(&self.cpu.join("cpu.cfs_period_us"), &period)?;
        fs::write(&self.cpu.join("cpu.cfs_quota_us"), &quota)
    }

    /// Whether any of the directories exists.
    pub(crate) fn exists(&self) -> bool {
        self.unique().into_iter().any(Path::is_dir)
    }

    /// Moves `pid` into every controller's directory.
    pub(crate) fn add_pid(&self, pid: u32) -> Result<(), CgroupError> {
        let pid = pid.to_string();
        for dir in self.unique() {
            fs::write(&dir.join("cgroup.procs"), &pid)?;
        }
        Ok(())
    }

    /// Freezes and waits until the freezer reports `FROZEN`.
    pub(crate) fn freeze(&self) -> Result<(), CgroupError> {
        self.set_freezer("FROZEN", Settle::Frozen)
    }

    /// Thaws and waits until the freezer reports `THAWED`.
    pub(crate) fn thaw(&self) -> Result<(), CgroupError> {
        self.set_freezer("THAWED", Settle::Thawed)
    }

    fn set_freezer(&self, state: &str, wait: Settle) -> Result<(), CgroupError> {
        let file = self.freezer.join("freezer.state");
        fs::write(&file, state)?;
        fs::wait_until(&self.freezer, wait, || {
            let now = fs::read(&file)?;
            if now.trim() == state {
                return Ok(true);
            }
            // A task in an uninterruptible sleep can leave the freezer in
            // FREEZING; writing again retries the tasks that were missed.
            fs::write(&file, state)?;
            Ok(false)
        })
    }

    /// Freezes, kills every process, thaws, and waits until empty.
    pub(crate) fn kill_all(&self) -> Result<(), CgroupError> {
        if !self.exists() {
            return Ok(());
        }
        // Nothing to freeze in an empty cgroup (the usual case after a
        // sandbox's PID 1 took its pid namespace down with it), and it stays
        // empty: only a process inside could fork a new member.
        if self.pids()?.is_empty() {
            return Ok(());
        }
        let has_freezer = self.freezer.is_dir();
        // A frozen cgroup cannot fork new members while we kill; if freezing
        // does not settle, the kill loop below still converges.
        let frozen = if has_freezer { self.freeze() } else { Ok(()) };
        let procs = self.primary().join("cgroup.procs");
        for pid in self.pids()? {
            fs::kill(&procs, pid)?;
        }
        if has_freezer {
            self.thaw()?;
        }
        match frozen {
            Ok(()) | Err(CgroupError::Timeout { .. }) => {}
            Err(other) => return Err(other),
        }
        fs::wait_until(self.primary(), Settle::Empty, || {
            let left = self.pids()?;
            for pid in &left {
                fs::kill(&procs, *pid)?;
            }
            Ok(left.is_empty())
        })
    }

    /// Every process in the cgroup (and below it), from every controller.
    pub(crate) fn pids(&self) -> Result<Vec<u32>, CgroupError> {
        let mut pids = Vec::new();
        for dir in self.unique() {
            pids.extend(fs::subtree_pids(dir)?);
        }
        pids.sort_unstable();
        pids.dedup();
        Ok(pids)
    }

    /// Usage counters.
    /// The memory controller's directory.
    pub(crate) fn memory_dir(&self) -> &Path {
        &self.memory
    }

    pub(crate) fn stats(&self) -> Result<CgroupStats, CgroupError> {
        let oom_file = self.memory.join("memory.oom_control");
        let oom_text = fs::read(&oom_file)?;
        Ok(CgroupStats {
            memory_bytes: fs::read_u64(&self.memory.join("memory.usage_in_bytes"))?,
            memory_peak_bytes: Some(fs::read_u64(
                &self.memory.join("memory.max_usage_in_bytes"),
            )?),
            oom_kills: fs::keyed_u64(&oom_file, &oom_text, "oom_kill")?,
            pids: fs::read_u64(&self.pids.join("pids.current"))?,
            cpu_usage_ns: fs::read_u64(&self.cpuacct.join("cpuacct.usage"))?,
        })
    }

    /// Kills everything, then removes every directory (missing is fine).
    pub(crate) fn destroy(&self) -> Result<(), CgroupError> {
        // The usual case first: empty, with no children, so every
        // directory goes in one call each. The first refusal (a process or
        // a child cgroup is left) takes the careful way.
        let mut busy = false;
        for dir in self.unique() {
            if !fs::remove_empty(dir)? {
                busy = true;
                break;
            }
        }
        if !busy {
            return Ok(());
        }
        self.kill_all()?;
        for dir in self.unique() {
            fs::rmdir_tree(dir)?;
        }
        Ok(())
    }
}
