//! Simulated processes: every "process" is a tokio task, and every exec,
//! live process or terminal owns a [`Group`] of them, the equivalent of a
//! process group. Killing a group aborts every task in it and waits until
//! each one has been dropped, so nothing it started can touch the sandbox
//! afterwards.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use tokio::sync::oneshot;
use tokio::task::{AbortHandle, JoinHandle};

/// Locks a std mutex, ignoring poisoning (no invariant spans a panic here).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The first pid handed out in a sandbox (1 is the sandbox's own "init").
const FIRST_PID: u32 = 2;

/// The processes of one sandbox.
#[derive(Debug)]
pub(crate) struct Procs {
    next_pid: AtomicU32,
    /// `limits.pids`: tasks alive at once.
    limit: Option<u64>,
    inner: Mutex<ProcsInner>,
}

#[derive(Debug, Default)]
struct ProcsInner {
    groups: Vec<Weak<Group>>,
    jobs: BTreeMap<u32, Weak<JobEntry>>,
    /// Sessions started by `setsid`: leader pid (= the group's id) → group.
    leaders: BTreeMap<u32, Weak<Group>>,
}

/// Why a task could not be started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SpawnError {
    /// Its group has been killed.
    Killed,
    /// `limits.pids` tasks are alive already.
    Limit(u64),
}

impl Procs {
    pub(crate) fn new(limit: Option<u64>) -> Arc<Procs> {
        Arc::new(Procs {
            next_pid: AtomicU32::new(FIRST_PID),
            limit,
            inner: Mutex::new(ProcsInner::default()),
        })
    }

    /// A new, empty process group.
    pub(crate) fn new_group(self: &Arc<Self>) -> Arc<Group> {
        let group = Arc::new(Group {
            procs: Arc::clone(self),
            inner: Mutex::new(GroupInner::default()),
        });
        let mut inner = lock(&self.inner);
        inner.groups.retain(|g| g.strong_count() > 0);
        inner.groups.push(Arc::downgrade(&group));
        group
    }

    fn running_locked(inner: &ProcsInner) -> u64 {
        inner
            .groups
            .iter()
            .filter_map(Weak::upgrade)
            .map(|g| g.running())
            .sum()
    }

    /// Tasks alive now, in every group.
    pub(crate) fn running(&self) -> u64 {
        Self::running_locked(&lock(&self.inner))
    }

    /// The job with `pid`, while it runs.
    pub(crate) fn job(&self, pid: u32) -> Option<Arc<JobEntry>> {
        let inner = lock(&self.inner);
        inner
            .jobs
            .get(&pid)
            .and_then(Weak::upgrade)
            .filter(|j| !j.abort.is_finished())
    }

    /// Records `group` as the process group whose id is `pgid` (its leader's pid).
    pub(crate) fn set_leader(&self, pgid: u32, group: &Arc<Group>) {
        let mut inner = lock(&self.inner);
        inner.leaders.retain(|_, g| g.strong_count() > 0);
        inner.leaders.insert(pgid, Arc::downgrade(group));
    }

    /// The process group `pgid`, while any of its tasks runs.
    pub(crate) fn group_of(&self, pgid: u32) -> Option<Arc<Group>> {
        let inner = lock(&self.inner);
        inner
            .leaders
            .get(&pgid)
            .and_then(Weak::upgrade)
            .filter(|g| g.running() > 0)
    }

    /// Aborts every task of every group without waiting (sandbox destroyed).
    pub(crate) fn abort_all(&self) {
        let groups: Vec<Arc<Group>> = lock(&self.inner)
            .groups
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for g in groups {
            g.abort();
        }
    }

    /// Kills every group and waits for all of their tasks to be gone.
    pub(crate) async fn kill_all(&self) {
        let groups: Vec<Arc<Group>> = lock(&self.inner)
            .groups
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for g in groups {
            g.kill().await;
        }
    }
}

/// One process group.
#[derive(Debug)]
pub(crate) struct Group {
    procs: Arc<Procs>,
    inner: Mutex<GroupInner>,
}

#[derive(Debug, Default)]
struct GroupInner {
    killed: bool,
    tasks: Vec<JoinHandle<()>>,
}

/// A started task: its pid and its exit.
#[derive(Debug)]
pub(crate) struct Job {
    pub(crate) pid: u32,
    rx: oneshot::Receiver<i32>,
    entry: Arc<JobEntry>,
}

/// What the registry keeps of a job, for `kill PID`.
#[derive(Debug)]
pub(crate) struct JobEntry {
    abort: AbortHandle,
    signal: Mutex<Option<i32>>,
}

impl JobEntry {
    /// Whether the job's task has ended.
    pub(crate) fn is_finished(&self) -> bool {
        self.abort.is_finished()
    }

    /// Delivers `signal` (a signal number): the job dies of it.
    pub(crate) fn kill(&self, signal: i32) {
        lock(&self.signal).get_or_insert(signal);
        self.abort.abort();
    }
}

/// How a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JobExit {
    /// It returned this status.
    Code(i32),
    /// It was killed by this signal number.
    Signal(i32),
}

impl JobExit {
    /// The status a shell reports for it.
    pub(crate) fn code(self) -> i32 {
        match self {
            JobExit::Code(c) => c,
            JobExit::Signal(s) => 128 + s,
        }
    }

    /// As the backend reports it.
    pub(crate) fn status(self) -> corral_backend::ExitStatus {
        match self {
            JobExit::Code(c) => corral_backend::ExitStatus::Code(c),
            JobExit::Signal(s) => corral_backend::signal::exit_status(s),
        }
    }
}

impl Job {
    /// Waits for the job to end.
    pub(crate) async fn wait(self) -> JobExit {
        match self.rx.await {
            Ok(code) => JobExit::Code(code),
            Err(_) => JobExit::Signal(lock(&self.entry.signal).unwrap_or(9)),
        }
    }

    /// The registry entry (to signal the job).
    pub(crate) fn entry(&self) -> Arc<JobEntry> {
        Arc::clone(&self.entry)
    }
}

impl Group {
    /// Tasks of this group still alive.
    pub(crate) fn running(&self) -> u64 {
        lock(&self.inner)
            .tasks
            .iter()
            .filter(|t| !t.is_finished())
            .count() as u64
    }

    /// Starts `make(pid)` as a new task of this group.
    pub(crate) fn spawn<F>(&self, make: impl FnOnce(u32) -> F) -> Result<Job, SpawnError>
    where
        F: Future<Output = i32> + Send + 'static,
    {
        let mut procs = lock(&self.procs.inner);
        if let Some(limit) = self.procs.limit
            && Procs::running_locked(&procs) >= limit
        {
            return Err(SpawnError::Limit(limit));
        }
        let mut inner = lock(&self.inner);
        if inner.killed {
            return Err(SpawnError::Killed);
        }
        inner.tasks.retain(|t| !t.is_finished());
        let pid = self.procs.next_pid.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = oneshot::channel();
        let fut = make(pid);
        let handle = tokio::spawn(async move {
            let code = fut.await;
            let _ = tx.send(code);
        });
        let entry = Arc::new(JobEntry {
            abort: handle.abort_handle(),
            signal: Mutex::new(None),
        });
        inner.tasks.push(handle);
        procs.jobs.retain(|_, j| j.strong_count() > 0);
        procs.jobs.insert(pid, Arc::downgrade(&entry));
        Ok(Job { pid, rx, entry })
    }

    /// Aborts every task without waiting; later spawns are refused.
    pub(crate) fn abort(&self) {
        let mut inner = lock(&self.inner);
        inner.killed = true;
        for t in &inner.tasks {
            t.abort();
        }
    }

    /// Kills the group: aborts every task and waits until each is gone.
    /// Never call it from a task of the same group.
    pub(crate) async fn kill(&self) {
        let tasks = {
            let mut inner = lock(&self.inner);
            inner.killed = true;
            std::mem::take(&mut inner.tasks)
        };
        for t in &tasks {
            t.abort();
        }
        for t in tasks {
            let _ = t.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn kill_waits_for_every_task_and_refuses_new_ones() {
        let procs = Procs::new(None);
        let g = procs.new_group();
        let hits = Arc::new(AtomicU32::new(0));
        let h = Arc::clone(&hits);
        let job = g
            .spawn(|_| async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                h.fetch_add(1, Ordering::SeqCst);
                0
            })
            .unwrap();
        assert_eq!(job.pid, FIRST_PID);
        assert_eq!(procs.running(), 1);
        g.kill().await;
        assert_eq!(job.wait().await, JobExit::Signal(9));
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(hits.load(Ordering::SeqCst), 0);
        assert_eq!(g.spawn(|_| async { 0 }).unwrap_err(), SpawnError::Killed);
        assert_eq!(procs.running(), 0);
    }

    #[tokio::test]
    async fn pid_limit_and_signals() {
        let procs = Procs::new(Some(1));
        let g = procs.new_group();
        let job = g.spawn(|_| std::future::pending()).unwrap();
        assert_eq!(g.spawn(|_| async { 0 }).unwrap_err(), SpawnError::Limit(1));
        procs.job(job.pid).unwrap().kill(15);
        assert_eq!(job.wait().await, JobExit::Signal(15));
        assert_eq!(JobExit::Signal(15).code(), 143);
        let ok = g.spawn(|_| async { 3 }).unwrap();
        assert_eq!(ok.wait().await, JobExit::Code(3));
    }
}
