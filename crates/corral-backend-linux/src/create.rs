//! `create`: refuse what cannot be enforced, then allocate in an order
//! where every piece is owned by the sandbox directory (named by the id)
//! from the moment it exists, and write the record last. A failure at any
//! step tears down everything allocated so far ([`crate::rollback`], over
//! the pieces built). Each step's effect on the host goes through the
//! state's [`crate::host::Build`], so that the order of the steps, and
//! what a failure at each one leaves to the rollback, are tested without
//! root (`create_tests.rs`).
//!
//! The init (already in its cgroup `corral/<id>`, which names the id) is
//! taken from the backend's pool of inits started ahead of demand
//! ([`crate::spawn::pool`]); it builds the sandbox on the go-ahead, and
//! stays bound to this process until the record is written and committed:
//! a creator killed at any point leaves no process behind.
//!
//! A key held by an expired sandbox is free: that sandbox is gone to every
//! caller (`find` did not return it), so its remains are reclaimed first
//! ([`crate::gc::free_expired_key`]).

use corral_backend::{
    BackendError, Capabilities, CreateError, CreateRequest, PlatformError, Result, SandboxInfo,
    SetupStep, check_enforceable, now_ms,
};

use crate::binds::OpenBind;
use crate::cgroup::CgroupLimits;
use crate::host::WritableLayer;
use crate::images::{Image, ImageRoot, ImageStore};
use crate::protocol::{HostDir, InitConfig};
use crate::record::DiskLayer;
use crate::rollback::{Piece, Progress, rollback};
use crate::snapshot::Restore;
use crate::spawn::{
    self, Started,
    pool::{Pool, Warm},
};
use crate::state::{Meta, NAME, State, state_error};

/// The upper tmpfs size when the request sets none: 1 GiB.
pub const DEFAULT_DISK_BYTES: u64 = 1 << 30;

pub use crate::record::HOST_IMAGE;

/// Creates a sandbox (blocking), with an init from `pool`.
pub fn create(
    state: &State,
    pool: &Pool,
    caps: &Capabilities,
    req: CreateRequest,
) -> Result<SandboxInfo> {
    attempt(state, pool, caps, req).0
}

/// [`create`], and what it built: `None` when it built nothing (it was
/// refused, or its key was taken); all of it when it succeeded; what its
/// rollback undid when it failed after.
pub(crate) fn attempt(
    state: &State,
    pool: &Pool,
    caps: &Capabilities,
    req: CreateRequest,
) -> (Result<SandboxInfo>, Option<Progress>) {
    let admitted = admit(state, caps, &req);
    let taken = admitted.and_then(|admitted| Ok((admitted, take(state, pool, &req)?)));
    match taken {
        Ok((admitted, warm)) => {
            let (made, progress) = build(state, warm, &req, admitted);
            (made, Some(progress))
        }
        Err(e) => (Err(e), None),
    }
}

/// What a request admitted is built from.
struct Admitted {
    /// The image to run.
    image: Image,
    /// The snapshot to restore, verified.
    restore: Option<Restore>,
    /// The host directories to bind, held open from admission on.
    binds: Vec<OpenBind>,
}

/// Refuses what cannot be enforced, before anything is allocated: what
/// the sandbox is built from, when the request can be met.
fn admit(state: &State, caps: &Capabilities, req: &CreateRequest) -> Result<Admitted> {
    req.validate()?;
    if state.rootless {
        crate::userns::rootless::refuse_limits(req)?;
    }
    check_enforceable(NAME, caps, req)?;
    // A restore is verified (digest) before anything is allocated, and runs
    // on the image its snapshot was captured from.
    let restore = match req.snapshot.as_deref() {
        Some(snap) => Some(crate::snapshot::open_for_restore(state, snap)?),
        None => None,
    };
    let reference = match (&restore, req.image.as_deref()) {
        (Some(r), Some(asked)) if asked != r.image => {
            return Err(CreateError::SnapshotImageMismatch {
                snapshot: r.snapshot_id.clone(),
                image: r.image.clone(),
                asked: asked.into(),
            }
            .into());
        }
        (Some(r), _) => Some(r.image.as_str()),
        (None, asked) => asked,
    };
    let image = resolve_image(state, reference)?;
    if state.rootless {
        crate::userns::rootless::refuse(req, &image)?;
    }
    let binds = crate::binds::open_sources(&req.binds)?;
    if let Some(key) = &req.key {
        crate::gc::free_expired_key(state, key)?;
    }
    Ok(Admitted {
        image,
        restore,
        binds,
    })
}

/// A waiting init from `pool`, with the request's key claimed for the
/// sandbox it will serve; on failure the init goes back to the pool.
fn take(state: &State, pool: &Pool, req: &CreateRequest) -> Result<Warm> {
    let warm = pool.take()?;
    if let Some(key) = &req.key
        && let Err(e) = crate::keys::claim(state, key, &warm.id)
    {
        pool.give_back(warm);
        return Err(e);
    }
    Ok(warm)
}

/// Builds the sandbox of `warm` (its init, cgroup and id range, and its
/// key claimed) and commits its init; on failure, stops the init and rolls
/// back what was built. What was built, either way.
fn build(
    state: &State,
    warm: Warm,
    req: &CreateRequest,
    admitted: Admitted,
) -> (Result<SandboxInfo>, Progress) {
    let Warm {
        id,
        cgroup,
        mut started,
    } = warm;
    let mut progress = Progress::new(&id);
    if cgroup.is_some() {
        progress.built(Piece::Cgroup);
    }
    if started.range.is_some() {
        progress.built(Piece::IdRange);
    }
    if let Some(key) = &req.key {
        progress.claimed(key);
    }
    let made = allocate(
        state,
        &mut progress,
        cgroup.is_some(),
        &mut started,
        req,
        admitted,
    );
    let committed = made.and_then(|info| {
        // From here on the sandbox outlives this process.
        state
            .build
            .commit_init(&mut started.link)
            .map(|()| info)
            .map_err(|e| setup(&id, SetupStep::CommitInit, e))
    });
    match committed {
        Ok(info) => {
            spawn::reap_in_background(started);
            (Ok(info), progress)
        }
        Err(e) => {
            state.build.stop_init(started.link);
            rollback(state, &progress);
            (Err(e), progress)
        }
    }
}

/// The image a request names (`host` when none).
fn resolve_image(state: &State, reference: Option<&str>) -> Result<Image> {
    let reference = reference.unwrap_or(HOST_IMAGE);
    let resolved = match &state.images {
        Some(store) => store.resolve(reference),
        None if reference == HOST_IMAGE => Ok(ImageStore::host_image()),
        None => {
            return Err(PlatformError::Unavailable {
                what: format!("image {reference:?}"),
                detail: "the image store could not be opened".into(),
            }
            .into());
        }
    };
    Ok(resolved?)
}

/// Step `step` of building sandbox `id` failed with `e`.
fn setup(id: &str, step: SetupStep, e: impl std::fmt::Display) -> BackendError {
    CreateError::Setup {
        id: id.into(),
        step,
        detail: e.to_string(),
    }
    .into()
}

/// Builds sandbox `id` around its waiting init `started` (in a cgroup of
/// its own when `cgroup`), each step through the state's
/// [`crate::host::Build`], marking in `progress` what it built.
fn allocate(
    state: &State,
    progress: &mut Progress,
    cgroup: bool,
    started: &mut Started,
    req: &CreateRequest,
    admitted: Admitted,
) -> Result<SandboxInfo> {
    let Admitted {
        image,
        restore,
        binds,
    } = admitted;
    let image = &image;
    let build = state.build.as_ref();
    let id = progress.id().to_string();
    let id = id.as_str();
    let dir = state.sandbox_dir(id);
    build
        .make_sandbox_dir(&dir)
        .map_err(|e| state_error(format_args!("creating sandbox {id}"), &e))?;
    progress.built(Piece::Directory);
    crate::gc::mark_creator(state, id);
    let fs = state.fs_dir(id);
    build
        .make_mount_point(&fs)
        .map_err(|e| state_error("creating the tmpfs mount point", &e))?;
    let disk_bytes = req.size.disk_bytes.unwrap_or(DEFAULT_DISK_BYTES);
    // Rootless, the init mounts the tmpfs inside its own namespaces.
    let layer = match state.rootless {
        true => WritableLayer {
            layer: DiskLayer::Tmpfs,
            fallback: None,
        },
        false => {
            let templates = crate::disk::templates_dir(state);
            let mounted = build
                .mount_writable_layer(&dir, &fs, &templates, disk_bytes)
                .map_err(|e| setup(id, SetupStep::WritableLayer, e))?;
            progress.built(Piece::WritableLayer);
            mounted
        }
    };
    // From here on, what is mounted or made for the root is below `fs`.
    progress.built(Piece::ImageRoot);
    let root = state.root_dir(id);
    let host_dirs: Vec<HostDir> = match &image.root {
        ImageRoot::Host(dirs) => dirs
            .iter()
            .map(|d| HostDir {
                path: d.path.clone(),
                symlink: d.symlink.clone(),
            })
            .collect(),
        ImageRoot::Layers(layers) => {
            build
                .mount_image_overlay(&root, layers, &fs.join("upper"), &fs.join("work"))
                .map_err(|e| {
                    setup(
                        id,
                        SetupStep::ImageOverlay,
                        format_args!("image {}: {e}", image.name),
                    )
                })?;
            Vec::new()
        }
    };
    if state.rootless {
        build
            .map_rootless_namespace(&mut started.link)
            .map_err(|e| setup(id, SetupStep::UserNamespace, e))?;
    } else {
        build
            .make_skeleton(&root, &host_dirs)
            .map_err(|e| state_error("building the sandbox root", &e))?;
        if let Some(restore) = restore {
            let snapshot = restore.snapshot_id.clone();
            let (archive, layout) = restore.into_archive();
            build.restore_snapshot(&snapshot, archive, layout, &root)?;
        }
        bind_image(state, id, started, &image.root, &host_dirs)?;
        if !binds.is_empty() {
            let userns = state.layers.on(crate::layers::Layer::UserNamespace);
            build
                .bind_volumes(&root, &binds, userns.then_some(&started.link))
                .map_err(|e| setup(id, SetupStep::Binds, e))?;
        }
    }
    build
        .bind_control(&dir, &mut started.link)
        .map_err(|e| state_error("binding the control socket", &e))?;
    progress.built(Piece::ControlSocket);
    let cfg = InitConfig {
        root: root.to_string_lossy().into_owned(),
        hostname: id.to_string(),
        // Bound by the host already (`bind_image`): the init's mount
        // namespace is a copy of the host's, binds included.
        // (Rootless, the init binds them itself.)
        host_dirs: if state.rootless {
            host_dirs.clone()
        } else {
            Vec::new()
        },
        lifetime_ms: req.timeout.map(|t| t.as_millis() as u64),
        bound_to_creator: req.bound_to_creator,
        rootless: state.rootless.then(|| crate::protocol::RootlessLayer {
            disk_bytes,
            curated_etc: state.layers.on(crate::layers::Layer::CuratedEtc),
        }),
    };
    let expires_at_ms = req
        .timeout
        .map(|t| now_ms().saturating_add(t.as_millis() as u64));
    let wanted = limits(req);
    if cgroup && wanted != CgroupLimits::safe_defaults() {
        build
            .set_cgroup_limits(state.cgroups.as_ref(), id, &wanted)
            .map_err(|e| setup(id, SetupStep::Cgroup, e))?;
    }
    let init_pid = build
        .start_init(&mut started.link, &cfg)
        .map_err(|e| setup(id, SetupStep::Init, e))?;
    progress.built(Piece::Init);
    let init_start =
        state
            .host
            .process_start(init_pid)
            .ok_or_else(|| CreateError::InitVanished {
                id: id.into(),
                pid: init_pid,
            })?;
    // Marked before each is made: a half-made one is torn down too.
    progress.built(Piece::Network);
    build.apply_network(&dir, id, init_pid, &req.network)?;
    progress.built(Piece::Previews);
    build.publish_previews(&dir, init_pid, init_start, &req.ports)?;
    let meta = Meta {
        id: id.to_string(),
        key: req.key.clone(),
        labels: req.labels.clone(),
        created_at_ms: now_ms(),
        env: req.env.clone(),
        network_none: matches!(req.network, corral_backend::Network::None),
        init_pid,
        init_start,
        disk_bytes,
        disk_layer: layer.layer,
        disk_fallback: layer.fallback,
        image: image.digest.clone(),
        expires_at_ms,
    };
    let bytes = serde_json::to_vec_pretty(&meta).map_err(|e| PlatformError::Defective {
        what: format!("sandbox {id}: encoding the record: {e}"),
    })?;
    build
        .write_record(&state.meta_path(id), &bytes)
        .map_err(|e| state_error("writing the record", &e))?;
    progress.built(Piece::Record);
    Ok(meta.info())
}

/// Binds the `host` image's directories `host_dirs` read-only onto the
/// root of sandbox `id` in the host's mount namespace, where the file
/// primitives see them too; with the curated `/etc` layer on (always, but
/// when measuring), `/etc` is made for the sandbox instead of bound. With
/// a user namespace, the root is then given to the init's id range.
fn bind_image(
    state: &State,
    id: &str,
    started: &mut Started,
    image_root: &ImageRoot,
    host_dirs: &[HostDir],
) -> Result<()> {
    let build = state.build.as_ref();
    let root = state.root_dir(id);
    let curated = state.layers.on(crate::layers::Layer::CuratedEtc) && !host_dirs.is_empty();
    let bound: Vec<HostDir> = host_dirs
        .iter()
        .filter(|d| !(curated && d.path == "/etc"))
        .cloned()
        .collect();
    if state.layers.on(crate::layers::Layer::UserNamespace) {
        // The curated /etc first: the range then takes the root (its own
        // mounts left as they are), and the binds are made idmapped.
        if curated {
            build
                .make_etc(&root, id)
                .map_err(|e| setup(id, SetupStep::Etc, e))?;
        }
        let layers = match image_root {
            ImageRoot::Layers(layers) => layers.as_slice(),
            ImageRoot::Host(_) => &[],
        };
        let Some(range) = started.range else {
            return Err(setup(
                id,
                SetupStep::UserNamespace,
                "starting its init: the init was started without an id range",
            ));
        };
        return build.prepare_user_namespace(
            id,
            &mut started.link,
            range.index(),
            &root,
            layers,
            &bound,
        );
    }
    build
        .bind_host_dirs(&root, &bound)
        .map_err(|e| setup(id, SetupStep::ImageOverlay, e))?;
    if curated {
        build
            .make_etc(&root, id)
            .map_err(|e| setup(id, SetupStep::Etc, e))?;
    }
    Ok(())
}

/// The cgroup limits of a request: what it asks for, else the safe
/// defaults (1 GiB memory, 512 processes, one CPU).
fn limits(req: &CreateRequest) -> CgroupLimits {
    let defaults = CgroupLimits::safe_defaults();
    CgroupLimits {
        memory_bytes: req.size.memory_bytes.or(defaults.memory_bytes),
        pids: req.limits.pids.or(defaults.pids),
        cpu_millicores: req
            .size
            .cpus
            .map(|c| ((c * 1000.0).round() as u64).max(1))
            .or(defaults.cpu_millicores),
    }
}

#[cfg(test)]
#[path = "create_tests.rs"]
mod tests;
