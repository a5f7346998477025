//! `create` end to end on a [`RecordingHost`], without root: its build
//! steps, in order, for a sandbox as root (with and without a user
//! namespace) and rootless; and for each step made to fail, the typed
//! error naming it, the pieces built before it, and the rollback that
//! undoes exactly those.
//!
//! The pool is the real one. The init it hands over is a stand-in — a
//! `cat` reading the startup socket, which exits when that socket closes,
//! as `corral-init` does — since every word to the init (its namespace's
//! maps, its go-ahead, its commit, its stop) is a host call. Nothing is
//! touched but a temporary state directory.

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use corral_backend::{
    BackendError, Capabilities, CreateError, CreateRequest, Network, PlatformError, SandboxInfo,
    SetupStep,
};

use super::attempt;
use crate::cgroup::CgroupLimits;
use crate::host::fixture::{Fixture, ID, KEY};
use crate::host::recording::INIT_PID;
use crate::host::{HostCall, HostStep, InitLink, InitModel, RecordingHost};
use crate::images::ImageRoot;
use crate::layers::{Layer, Layers};
use crate::protocol::{HostDir, InitConfig, RootlessLayer};
use crate::rollback::{Piece, Progress};
use crate::spawn::Started;
use crate::spawn::pool::{Pool, Warm};
use crate::userns::IdRange;

/// The index of the stand-in init's id range.
const RANGE: u32 = 3;
/// The disk the request asks for.
const DISK: u64 = 64 << 20;
/// The memory it asks for (as root).
const MEMORY: u64 = 256 << 20;
/// The port it publishes (as root).
const PORT: u16 = 8080;
/// Its lifetime.
const LIFETIME: Duration = Duration::from_secs(60);

/// How the sandbox is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// As root, its root a user namespace's (every layer on).
    Root,
    /// As root, without the user namespace layer (measuring).
    RootWithoutUserns,
    /// As an ordinary user.
    Rootless,
}

impl Mode {
    fn rootless(self) -> bool {
        self == Mode::Rootless
    }

    fn userns(self) -> bool {
        self == Mode::Root
    }
}

/// A state directory, and a pool holding one waiting (stand-in) init.
struct Setup {
    f: Fixture,
    pool: Pool,
    /// The stand-in init's pid.
    init: u32,
    mode: Mode,
}

/// A stand-in for a waiting init: a `cat` whose stdin is the far end of
/// the startup socket.
fn stand_in() -> InitLink {
    let (ours, theirs) = UnixStream::pair().expect("a socket pair");
    let child = Command::new("cat")
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("cat starts");
    InitLink::new(child, ours)
}

/// The situation of a create in `mode` on `host`: the pool holds an init
/// for [`ID`], in its cgroup and with its id range as the pool makes them
/// in that mode.
fn setup(host: RecordingHost, mode: Mode) -> Setup {
    let mut f = Fixture::open(host, mode.rootless(), !mode.rootless());
    if mode == Mode::RootWithoutUserns {
        f.state.layers = Layers::without(&[Layer::UserNamespace]);
    }
    let cgroup = f.state.cgroups.as_ref().map(|c| {
        std::fs::create_dir_all(c.parent_dir().join(ID)).expect("the cgroup's directory");
        c.open(ID).expect("a cgroup name").expect("the cgroup")
    });
    let link = stand_in();
    let init = link.pid();
    let range = mode.userns().then(|| IdRange::from_index(RANGE).unwrap());
    let pool = Pool::new(None);
    pool.give_back(Warm {
        id: ID.into(),
        cgroup,
        started: Started { link, range },
    });
    assert_eq!(pool.waiting(), 1, "the stand-in waits");
    Setup {
        f,
        pool,
        init,
        mode,
    }
}

/// What the sandbox asks for: everything its mode can hold.
fn request(mode: Mode) -> CreateRequest {
    let mut req = CreateRequest {
        key: Some(KEY.try_into().unwrap()),
        timeout: Some(LIFETIME),
        ..CreateRequest::default()
    };
    req.size.disk_bytes = Some(DISK);
    if !mode.rootless() {
        req.size.memory_bytes = Some(MEMORY);
        req.network = Network::Allowlist {
            destinations: Vec::new(),
        };
        req.ports = vec![PORT];
    }
    req
}

/// The capabilities of a host where everything is enforced.
fn caps() -> Capabilities {
    let mut caps = crate::LinuxBackend::CAPABILITIES;
    caps.enforces.memory = true;
    caps.enforces.network_allowlist = true;
    caps
}

/// Runs the create of `s`.
fn run(s: &Setup) -> (corral_backend::Result<SandboxInfo>, Option<Progress>) {
    attempt(&s.f.state, &s.pool, &caps(), request(s.mode))
}

/// The `host` image's directories, as the init is told them.
fn host_dirs() -> Vec<HostDir> {
    let ImageRoot::Host(dirs) = crate::images::host_image().root else {
        unreachable!("the host image is made of host directories")
    };
    dirs.into_iter()
        .map(|d| HostDir {
            path: d.path,
            symlink: d.symlink,
        })
        .collect()
}

/// Their paths.
fn paths(dirs: &[HostDir]) -> Vec<String> {
    dirs.iter().map(|d| d.path.clone()).collect()
}

/// The configuration the init of `s` is given with its go-ahead.
fn config(s: &Setup) -> InitConfig {
    let rootless = s.mode.rootless();
    InitConfig {
        root: s.f.state.root_dir(ID).to_string_lossy().into_owned(),
        hostname: ID.into(),
        host_dirs: if rootless { host_dirs() } else { Vec::new() },
        lifetime_ms: Some(LIFETIME.as_millis() as u64),
        bound_to_creator: false,
        rootless: rootless.then_some(RootlessLayer {
            disk_bytes: DISK,
            curated_etc: true,
        }),
    }
}

/// The calls of a successful create of `s`, in order.
fn built(s: &Setup) -> Vec<HostCall> {
    let state = &s.f.state;
    let (dir, root) = (state.sandbox_dir(ID), state.root_dir(ID));
    let dirs = host_dirs();
    let bound: Vec<HostDir> = dirs.iter().filter(|d| d.path != "/etc").cloned().collect();
    let mut calls = vec![
        HostCall::MakeSandboxDir(dir.clone()),
        HostCall::MakeMountPoint(state.fs_dir(ID)),
    ];
    match s.mode {
        Mode::Root => calls.extend([
            HostCall::MountWritableLayer(state.fs_dir(ID), DISK),
            HostCall::MakeSkeleton(root.clone(), paths(&dirs)),
            HostCall::MakeEtc(root.clone(), ID.into()),
            HostCall::PrepareUserNamespace(s.init, RANGE, root.clone()),
        ]),
        Mode::RootWithoutUserns => calls.extend([
            HostCall::MountWritableLayer(state.fs_dir(ID), DISK),
            HostCall::MakeSkeleton(root.clone(), paths(&dirs)),
            HostCall::BindHostDirs(root.clone(), paths(&bound)),
            HostCall::MakeEtc(root.clone(), ID.into()),
        ]),
        Mode::Rootless => calls.push(HostCall::MapRootlessNamespace(s.init)),
    }
    calls.push(HostCall::BindControl(dir.clone(), s.init));
    if !s.mode.rootless() {
        let limits = CgroupLimits {
            memory_bytes: Some(MEMORY),
            ..CgroupLimits::safe_defaults()
        };
        calls.push(HostCall::SetCgroupLimits(ID.into(), limits));
    }
    let ports = if s.mode.rootless() {
        vec![]
    } else {
        vec![PORT]
    };
    calls.extend([
        HostCall::StartInit(s.init, Box::new(config(s))),
        HostCall::ProcessStart(INIT_PID),
        HostCall::ApplyNetwork(dir.clone(), INIT_PID),
        HostCall::PublishPreviews(dir, ports),
        HostCall::WriteRecord(state.meta_path(ID)),
        HostCall::CommitInit(s.init),
    ]);
    calls
}

/// The step whose failure fails `call` (`None`: it cannot fail).
fn step_of(call: &HostCall) -> Option<HostStep> {
    Some(match call {
        HostCall::MakeSandboxDir(_) => HostStep::MakeSandboxDir,
        HostCall::MakeMountPoint(_) => HostStep::MakeMountPoint,
        HostCall::MountWritableLayer(..) => HostStep::MountWritableLayer,
        HostCall::MapRootlessNamespace(_) => HostStep::MapRootlessNamespace,
        HostCall::MakeSkeleton(..) => HostStep::MakeSkeleton,
        HostCall::MakeEtc(..) => HostStep::MakeEtc,
        HostCall::PrepareUserNamespace(..) => HostStep::PrepareUserNamespace,
        HostCall::BindHostDirs(..) => HostStep::BindHostDirs,
        HostCall::BindVolumes(..) => HostStep::BindVolumes,
        HostCall::BindControl(..) => HostStep::BindControl,
        HostCall::SetCgroupLimits(..) => HostStep::SetCgroupLimits,
        HostCall::StartInit(..) => HostStep::StartInit,
        HostCall::ProcessStart(_) => HostStep::ProcessStart,
        HostCall::ApplyNetwork(..) => HostStep::ApplyNetwork,
        HostCall::PublishPreviews(..) => HostStep::PublishPreviews,
        HostCall::WriteRecord(_) => HostStep::WriteRecord,
        HostCall::CommitInit(_) => HostStep::CommitInit,
        _ => return None,
    })
}

/// How a create's error names the step that failed.
#[derive(Debug, Clone, Copy)]
enum Named {
    /// `CreateError::Setup` of this step.
    Setup(SetupStep),
    /// A state directory error, `linux state: <this>…`.
    State(&'static str),
    /// The host's own typed error, passed on unchanged.
    Host,
    /// `CreateError::InitVanished`: PID 1 was gone at once.
    Vanished,
}

/// Checks that `err`, of a create whose `step` failed, is named as `named`.
fn assert_names(err: &BackendError, step: HostStep, named: Named) {
    let detail = step.injected_message();
    match (named, err) {
        (
            Named::Setup(want),
            BackendError::Create(CreateError::Setup {
                id,
                step,
                detail: d,
            }),
        ) => {
            assert_eq!((id.as_str(), *step), (ID, want), "{err}");
            assert!(d.contains(&detail), "{err}");
        }
        (
            Named::State(what),
            BackendError::Platform(PlatformError::Io {
                what: w, detail: d, ..
            }),
        ) => {
            assert!(w.starts_with(&format!("linux state: {what}")), "{err}");
            assert!(d.contains(&detail), "{err}");
        }
        (Named::Host, _) => assert_eq!(err.message(), detail, "{err}"),
        (Named::Vanished, BackendError::Create(CreateError::InitVanished { id, pid })) => {
            assert_eq!((id.as_str(), *pid), (ID, INIT_PID), "{err}");
        }
        _ => panic!("{step:?} fails with {err:?}, not {named:?}"),
    }
}

/// What a failed create left in the state directory that no call it
/// recorded removes: every entry below it but those `before` the create
/// and those a recorded removal names (a directory with all below it).
fn left_behind(f: &Fixture, before: &[PathBuf]) -> Vec<PathBuf> {
    let removed: Vec<PathBuf> = f
        .host
        .calls()
        .into_iter()
        .filter_map(|c| match c {
            HostCall::RemoveSandboxDir(p) | HostCall::RemoveRecord(p) => Some(p),
            HostCall::ReleaseKey(p, _) => Some(p),
            _ => None,
        })
        .collect();
    entries(f.state.dir())
        .into_iter()
        .filter(|p| !before.contains(p) && !removed.iter().any(|r| p.starts_with(r)))
        .collect()
}

/// Every entry below `dir`, depth first.
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            all.extend(entries(&path));
        }
        all.push(path);
    }
    all
}

/// The pieces a create in `mode` builds, in the order it builds them (the
/// pool's first: its cgroup and id range, where it makes them, and the
/// key claim).
fn pieces(mode: Mode) -> Vec<Piece> {
    use Piece::*;
    let mut pieces = match mode {
        Mode::Root => vec![Cgroup, IdRange, KeyClaim, Directory, WritableLayer],
        Mode::RootWithoutUserns => vec![Cgroup, KeyClaim, Directory, WritableLayer],
        Mode::Rootless => vec![KeyClaim, Directory],
    };
    pieces.extend([ImageRoot, ControlSocket, Init, Network, Previews, Record]);
    pieces
}

/// Rule: a create makes its build steps in one order — directory, mount
/// point, writable layer, the root (skeleton, `/etc`, the user namespace
/// or the binds; rootless, only the namespace's maps), control socket,
/// cgroup limits, the go-ahead, PID 1's start time, network, previews,
/// record, commit — and nothing else: no undo, no stop; it returns the
/// record it wrote, with every piece built.
#[test]
fn a_create_builds_in_order_and_only_what_it_asked_for() {
    for mode in [Mode::Root, Mode::RootWithoutUserns, Mode::Rootless] {
        let s = setup(RecordingHost::new(InitModel::Dead), mode);
        let (made, progress) = run(&s);
        let info = made.unwrap_or_else(|e| panic!("{mode:?}: {e}"));
        assert_eq!(s.f.host.calls(), built(&s), "{mode:?}");
        assert_eq!(progress.unwrap().pieces(), pieces(mode), "{mode:?}");
        assert_eq!(info.id, ID, "{mode:?}");
        let meta = crate::state::read_meta(&s.f.state, ID)
            .unwrap()
            .expect("the record is written");
        assert_eq!(meta.info(), info, "{mode:?}");
        assert_eq!(meta.init_pid, INIT_PID, "{mode:?}");
        assert_eq!(s.pool.waiting(), 0, "{mode:?}: the init was taken");
        assert_eq!(
            std::fs::read_to_string(s.f.state.key_path(KEY)).unwrap(),
            ID,
            "{mode:?}: the key is claimed"
        );
    }
}

/// Rule: failing at step k, a create returns a typed error naming k,
/// keeps as built exactly the pieces built before k, stops its init, and
/// its rollback makes exactly the undo calls of those pieces (those a
/// rollback of that progress makes, each piece's among them); nothing it
/// made is left — no record, no mount, no file no undo removes.
#[test]
fn each_failed_step_leaves_exactly_the_pieces_built_before_it_and_undoes_them() {
    use Named::*;
    use Piece::*;
    // (failing step, how the error names it, the last piece built before it)
    let rows: &[(HostStep, Named, Option<Piece>)] = &[
        (HostStep::MakeSandboxDir, State("creating sandbox"), None),
        (
            HostStep::MakeMountPoint,
            State("creating the tmpfs"),
            Some(Directory),
        ),
        (
            HostStep::MountWritableLayer,
            Setup(SetupStep::WritableLayer),
            Some(Directory),
        ),
        (
            HostStep::MapRootlessNamespace,
            Setup(SetupStep::UserNamespace),
            Some(ImageRoot),
        ),
        (
            HostStep::MakeSkeleton,
            State("building the sandbox root"),
            Some(ImageRoot),
        ),
        (HostStep::MakeEtc, Setup(SetupStep::Etc), Some(ImageRoot)),
        (HostStep::PrepareUserNamespace, Host, Some(ImageRoot)),
        (
            HostStep::BindHostDirs,
            Setup(SetupStep::ImageOverlay),
            Some(ImageRoot),
        ),
        (
            HostStep::BindControl,
            State("binding the control socket"),
            Some(ImageRoot),
        ),
        (
            HostStep::SetCgroupLimits,
            Setup(SetupStep::Cgroup),
            Some(ControlSocket),
        ),
        (
            HostStep::StartInit,
            Setup(SetupStep::Init),
            Some(ControlSocket),
        ),
        (HostStep::ProcessStart, Vanished, Some(Init)),
        (HostStep::ApplyNetwork, Host, Some(Network)),
        (HostStep::PublishPreviews, Host, Some(Previews)),
        (
            HostStep::WriteRecord,
            State("writing the record"),
            Some(Previews),
        ),
        (
            HostStep::CommitInit,
            Setup(SetupStep::CommitInit),
            Some(Record),
        ),
    ];
    let mut covered = Vec::new();
    for mode in [Mode::Root, Mode::RootWithoutUserns, Mode::Rootless] {
        for &(step, named, last) in rows {
            let s = setup(RecordingHost::new(InitModel::Dead).failing(step), mode);
            let steps = built(&s);
            let Some(at) = steps.iter().position(|c| step_of(c) == Some(step)) else {
                continue;
            };
            covered.push((mode, step));
            let case = format!("{mode:?}, {step:?} fails");
            let before = entries(s.f.state.dir());
            let (made, progress) = run(&s);
            let err = made.expect_err(&case);
            assert_names(&err, step, named);
            let progress = progress.expect("the init was taken");
            let all = pieces(mode);
            let n = last.map_or(0, |p| all.iter().position(|q| *q == p).unwrap() + 1);
            let pool = all.iter().take_while(|p| !matches!(p, Directory)).count();
            assert_eq!(progress.pieces(), &all[..n.max(pool)], "{case}");
            let mut expected = steps[..=at].to_vec();
            expected.push(HostCall::StopInit(s.init));
            expected.extend(s.f.rollback_of(&progress, mode.rootless()));
            let calls = s.f.host.calls();
            assert_eq!(calls, expected, "{case}");
            for piece in progress.pieces() {
                let undo = s.f.undo_of(*piece, mode.rootless());
                assert!(calls[at..].contains(&undo), "{case}: {piece:?} is left");
            }
            assert_eq!(left_behind(&s.f, &before), Vec::<PathBuf>::new(), "{case}");
            assert_eq!(s.f.host.mounts(), Vec::<PathBuf>::new(), "{case}");
            assert_eq!(s.pool.waiting(), 0, "{case}: the init is not given back");
        }
    }
    // Every step of every mode's create was made to fail.
    for mode in [Mode::Root, Mode::RootWithoutUserns, Mode::Rootless] {
        let s = setup(RecordingHost::new(InitModel::Dead), mode);
        for call in built(&s) {
            let step = step_of(&call).expect("every build step can fail");
            assert!(
                covered.contains(&(mode, step)),
                "{mode:?}: {step:?} untested"
            );
        }
    }
}

/// Rule: a create whose key another sandbox holds builds nothing,
/// touches nothing on the host, and gives the init it took back to the
/// pool.
#[test]
fn a_create_refused_at_its_key_touches_nothing_and_gives_its_init_back() {
    let s = setup(RecordingHost::new(InitModel::Dead), Mode::Root);
    let other = "lnx-00000000000000aa";
    std::fs::write(s.f.state.key_path(KEY), other).unwrap();
    std::fs::create_dir(s.f.state.sandbox_dir(other)).unwrap();
    let (made, progress) = run(&s);
    let err = made.expect_err("the key is taken");
    assert!(
        matches!(&err, BackendError::Create(CreateError::KeyTaken { owner: Some(o), .. }) if o == other),
        "{err:?}"
    );
    assert_eq!(progress, None);
    assert_eq!(s.f.host.calls(), Vec::new());
    assert_eq!(s.pool.waiting(), 1, "the init went back to the pool");
}

/// The request of `s` with one bind: a temporary directory at `/data`.
fn with_a_bind(s: &Setup, dir: &Path) -> CreateRequest {
    let target = corral_backend::sandbox_path("bind", "/data").unwrap();
    let bind = corral_backend::HostBind::new(dir, target, true).unwrap();
    CreateRequest {
        binds: corral_backend::HostBinds::new(vec![bind]).unwrap(),
        ..request(s.mode)
    }
}

/// The calls of a create of `s` with one bind at `/data`: those of one
/// without, the bind right after the root is complete (its binds and
/// `/etc`, or its user namespace) and before the control socket.
fn built_with_a_bind(s: &Setup) -> Vec<HostCall> {
    let mut calls = built(s);
    let at = calls
        .iter()
        .position(|c| matches!(c, HostCall::BindControl(..)))
        .unwrap();
    let bind = HostCall::BindVolumes(s.f.state.root_dir(ID), vec!["/data".into()]);
    calls.insert(at, bind);
    calls
}

/// Rule: a create with a bind makes one more step, in its place, and
/// nothing else differs; that step failing names it
/// ([`SetupStep::Binds`]), stops the init and undoes what came before it
/// (the root with what is mounted in it: nothing stays mounted).
#[test]
fn a_bind_is_one_step_after_the_root_and_its_failure_undoes_what_came_before() {
    let dir = tempfile::tempdir().unwrap();
    for mode in [Mode::Root, Mode::RootWithoutUserns] {
        let s = setup(RecordingHost::new(InitModel::Dead), mode);
        let (made, progress) = attempt(&s.f.state, &s.pool, &caps(), with_a_bind(&s, dir.path()));
        made.unwrap_or_else(|e| panic!("{mode:?}: {e}"));
        assert_eq!(s.f.host.calls(), built_with_a_bind(&s), "{mode:?}");
        assert_eq!(progress.unwrap().pieces(), pieces(mode), "{mode:?}");

        let failing = RecordingHost::new(InitModel::Dead).failing(HostStep::BindVolumes);
        let s = setup(failing, mode);
        let before = entries(s.f.state.dir());
        let (made, progress) = attempt(&s.f.state, &s.pool, &caps(), with_a_bind(&s, dir.path()));
        let err = made.expect_err("the bind fails");
        assert_names(&err, HostStep::BindVolumes, Named::Setup(SetupStep::Binds));
        let progress = progress.expect("the init was taken");
        let all = pieces(mode);
        let n = all.iter().position(|p| *p == Piece::ImageRoot).unwrap() + 1;
        assert_eq!(progress.pieces(), &all[..n], "{mode:?}");
        let steps = built_with_a_bind(&s);
        let at = steps
            .iter()
            .position(|c| step_of(c) == Some(HostStep::BindVolumes))
            .unwrap();
        let mut expected = steps[..=at].to_vec();
        expected.push(HostCall::StopInit(s.init));
        expected.extend(s.f.rollback_of(&progress, false));
        assert_eq!(s.f.host.calls(), expected, "{mode:?}");
        assert_eq!(
            left_behind(&s.f, &before),
            Vec::<PathBuf>::new(),
            "{mode:?}"
        );
        assert_eq!(s.f.host.mounts(), Vec::<PathBuf>::new(), "{mode:?}");
    }
}
