//! Inits started ahead of demand: each waits for its go-ahead in its own
//! cgroup, already made (with the safe default limits) and already joined.
//!
//! Joining a cgroup is the slowest step of a start (moving a process
//! between cgroups waits for an RCU grace period, milliseconds on a busy
//! host; on cgroup v1 that is per hierarchy), and fork+exec of the init
//! costs a millisecond more: a create that takes a waiting init skips both.
//!
//! Each waiting init is named by the sandbox id it will serve: its cgroup
//! is `corral/<id>`, and the create that takes it uses that id. Nothing
//! leaks when this process dies: a waiting init exits when its startup
//! socket closes, and its then-empty cgroup is reclaimed by `gc` like any
//! orphaned sandbox cgroup. Dropping the pool (the backend) stops every
//! waiting init and removes its cgroup.
//!
//! The pool fills only once a backend has created a sandbox before, so a
//! process that makes one sandbox and exits starts nothing ahead; then,
//! whenever fewer than [`LOW_WATER`] wait, a background thread tops it up
//! to [`TARGET`], starting the missing ones together so their cgroup moves
//! share one grace period.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use corral_backend::{BackendError, CreateError, PlatformError, Result, SetupStep};

use super::{Started, init_binary, start};
use crate::cgroup::{Cgroup, CgroupLimits, Cgroups};
use crate::state::{SANDBOX_PREFIX, random_hex, state_error};

/// How many inits wait ahead of demand once the pool is filled.
pub const TARGET: usize = 6;

/// The pool is topped up when fewer than this many wait, so that each
/// refill starts several inits and their cgroup moves share one grace
/// period.
pub const LOW_WATER: usize = 3;

/// An init waiting for its go-ahead, in the cgroup of the sandbox `id`.
#[derive(Debug)]
pub struct Warm {
    /// The id of the sandbox it will serve (its cgroup's name).
    pub id: String,
    /// Its cgroup, with [`CgroupLimits::safe_defaults`], when cgroups are used.
    pub cgroup: Option<Cgroup>,
    /// The started init.
    pub started: Started,
}

impl Warm {
    /// Stops the init and removes its cgroup.
    pub fn discard(self) {
        self.started.stop();
        if let Some(cg) = self.cgroup {
            let _ = cg.destroy();
        }
    }
}

/// The waiting inits of one backend.
#[derive(Debug)]
pub struct Pool {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    cgroups: Option<Cgroups>,
    waiting: Mutex<Vec<Warm>>,
    /// Whether a refill thread runs.
    refilling: AtomicBool,
    /// Creates so far: the pool fills from the second on.
    takes: AtomicU64,
    /// Whether inits start with descriptor hygiene (see [`super::start`]).
    hygiene: AtomicBool,
    /// Where id ranges are claimed, when inits make a user namespace
    /// (every backend's do; not only when measuring).
    ranges: Mutex<Option<PathBuf>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let waiting = match self.waiting.get_mut() {
            Ok(v) => std::mem::take(v),
            Err(poisoned) => std::mem::take(poisoned.into_inner()),
        };
        for warm in waiting {
            warm.discard();
        }
    }
}

impl Pool {
    /// An empty pool making its cgroups under `cgroups`.
    pub fn new(cgroups: Option<Cgroups>) -> Self {
        Pool {
            inner: Arc::new(Inner {
                cgroups,
                waiting: Mutex::new(Vec::new()),
                refilling: AtomicBool::new(false),
                takes: AtomicU64::new(0),
                hygiene: AtomicBool::new(true),
                ranges: Mutex::new(None),
            }),
        }
    }

    /// Whether the inits started from now on get descriptor hygiene: on
    /// unless a backend is opened for measuring without
    /// [`crate::layers::Layer::DescriptorHygiene`]; set before the first create.
    pub fn set_descriptor_hygiene(&self, on: bool) {
        self.inner.hygiene.store(on, Ordering::Release);
    }

    /// A waiting init, or one started now when none waits; the pool is
    /// refilled in the background.
    pub fn take(&self) -> Result<Warm> {
        let taken = loop {
            let Some(mut warm) = self.lock().pop() else {
                break None;
            };
            if warm.started.waiting() {
                break Some(warm);
            }
            // Killed meanwhile (by an operator or an OOM kill).
            warm.discard();
        };
        if self.inner.takes.fetch_add(1, Ordering::Relaxed) > 0 && self.waiting() < LOW_WATER {
            self.refill();
        }
        match taken {
            Some(warm) => Ok(warm),
            None => make(
                self.inner.cgroups.as_ref(),
                &binary()?,
                self.hygiene(),
                self.ranges().as_deref(),
            ),
        }
    }

    /// Makes the inits started from now on make a user namespace, each with
    /// an id range claimed in `ranges` (`None`: no user namespace, for
    /// measuring only).
    pub fn set_user_namespace(&self, ranges: Option<PathBuf>) {
        *lock_ranges(&self.inner) = ranges;
    }

    /// Where the inits this pool starts claim their id ranges (`None`: they
    /// make no user namespace).
    pub fn ranges(&self) -> Option<PathBuf> {
        lock_ranges(&self.inner).clone()
    }

    /// Returns an init a create did not use (it still waits).
    pub fn give_back(&self, mut warm: Warm) {
        if warm.started.waiting() {
            self.lock().push(warm);
        } else {
            warm.discard();
        }
    }

    fn hygiene(&self) -> bool {
        self.inner.hygiene.load(Ordering::Acquire)
    }

    /// How many inits wait now.
    pub fn waiting(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Warm>> {
        lock(&self.inner)
    }

    /// Starts a refill thread unless one runs.
    fn refill(&self) {
        if self.inner.refilling.swap(true, Ordering::AcqRel) {
            return;
        }
        let weak = Arc::downgrade(&self.inner);
        let spawned = std::thread::Builder::new()
            .name("corral-init-pool".into())
            .spawn(move || refill_loop(&weak));
        if spawned.is_err() {
            self.inner.refilling.store(false, Ordering::Release);
        }
    }
}

/// Tops the pool up until it holds [`TARGET`] inits, while the pool lives;
/// stops at the first failure (the next take retries).
fn refill_loop(weak: &Weak<Inner>) {
    let Ok(binary) = binary() else {
        if let Some(inner) = weak.upgrade() {
            inner.refilling.store(false, Ordering::Release);
        }
        return;
    };
    loop {
        let Some(inner) = weak.upgrade() else {
            return;
        };
        let missing = TARGET.saturating_sub(lock(&inner).len());
        let batch = if missing == 0 {
            Vec::new()
        } else {
            make_batch(
                inner.cgroups.as_ref(),
                &binary,
                missing,
                inner.hygiene.load(Ordering::Acquire),
                lock_ranges(&inner).clone().as_deref(),
            )
        };
        if batch.is_empty() {
            inner.refilling.store(false, Ordering::Release);
            return;
        }
        lock(&inner).extend(batch);
    }
}

fn lock_ranges(inner: &Inner) -> std::sync::MutexGuard<'_, Option<PathBuf>> {
    match inner.ranges.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

fn lock(inner: &Inner) -> std::sync::MutexGuard<'_, Vec<Warm>> {
    inner
        .waiting
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn binary() -> Result<PathBuf> {
    init_binary().ok_or_else(|| {
        PlatformError::Unavailable {
            what: "the corral-init binary".into(),
            detail: "it was not found (set CORRAL_INIT)".into(),
        }
        .into()
    })
}

fn new_id() -> Result<String> {
    Ok(format!(
        "{SANDBOX_PREFIX}{}",
        random_hex().map_err(|e| state_error("random id", &e))?
    ))
}

/// Starts one init in a new cgroup (blocking); `hygiene` as in [`start`],
/// with a user namespace when `ranges` says where to claim its id range.
pub fn make(
    cgroups: Option<&Cgroups>,
    binary: &std::path::Path,
    hygiene: bool,
    ranges: Option<&std::path::Path>,
) -> Result<Warm> {
    join(unjoined(cgroups, binary, hygiene, ranges)?)
}

/// Makes a new cgroup and starts one init, not yet moved into it; on
/// failure nothing is left.
fn unjoined(
    cgroups: Option<&Cgroups>,
    binary: &std::path::Path,
    hygiene: bool,
    ranges: Option<&std::path::Path>,
) -> Result<Warm> {
    let id = new_id()?;
    let claim = match ranges {
        Some(dir) => Some(crate::userns::ranges::claim(dir, &id).map_err(|e| {
            setup(
                &id,
                SetupStep::UserNamespace,
                format!("claiming an id range: {e}"),
            )
        })?),
        None => None,
    };
    let cgroup = match cgroups {
        Some(c) => Some(
            c.create(&id, &CgroupLimits::safe_defaults())
                .map_err(|e| setup(&id, SetupStep::Cgroup, e))?,
        ),
        None => None,
    };
    match start(binary, hygiene, claim) {
        Ok(started) => Ok(Warm {
            id,
            cgroup,
            started,
        }),
        Err(e) => {
            if let Some(cg) = cgroup {
                let _ = cg.destroy();
            }
            Err(setup(
                &id,
                SetupStep::Init,
                format!("starting corral-init: {e}"),
            ))
        }
    }
}

/// Moves the init into its cgroup; on failure stops it and removes the cgroup.
fn join(warm: Warm) -> Result<Warm> {
    let joined = match &warm.cgroup {
        Some(cg) => cg.add_pid(warm.started.pid()),
        None => Ok(()),
    };
    match joined {
        Ok(()) => Ok(warm),
        Err(e) => {
            let err = setup(&warm.id, SetupStep::Cgroup, e);
            warm.discard();
            Err(err)
        }
    }
}

/// Starts up to `n` inits: every cgroup and process first, then the moves
/// back to back (they share a grace period). Returns those that made it.
fn make_batch(
    cgroups: Option<&Cgroups>,
    binary: &std::path::Path,
    n: usize,
    hygiene: bool,
    ranges: Option<&std::path::Path>,
) -> Vec<Warm> {
    let started: Vec<Warm> = (0..n)
        .map_while(|_| unjoined(cgroups, binary, hygiene, ranges).ok())
        .collect();
    started.into_iter().filter_map(|w| join(w).ok()).collect()
}

/// Step `step` of readying the init of sandbox `id` failed with `e`.
fn setup(id: &str, step: SetupStep, e: impl std::fmt::Display) -> BackendError {
    CreateError::Setup {
        id: id.into(),
        step,
        detail: e.to_string(),
    }
    .into()
}
