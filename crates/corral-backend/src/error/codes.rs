//! The code table: one row per error variant, the value built and the SDK's
//! closed code it must report. A changed code fails its row.
//!
//! SDK specification, "Write a provider": "**Translate errors.** Map the
//! service's failures to `SandboxError` codes such as `auth`, `not_found`,
//! `quota`, and `unavailable`. Don't attach the native error object, since
//! it can hold credentials." Each row checks the code, and that the message
//! is the variant's one line (nothing but the values it names).

use std::io::ErrorKind;
use std::time::Duration;

use rustix::io::Errno;

use super::{
    BackendError, CreateError, ErrorCode, ExecError, FileOp, FsCause, FsError, PlatformError,
    PreviewError, RequestError, SandboxError, SetupStep, SnapshotError, TimeoutLimit,
};
use crate::contained::ContainmentReason;

/// Checks every row: the code, the code through [`BackendError`], and that
/// the message is one non-empty line.
fn check(rows: Vec<(BackendError, ErrorCode)>) {
    for (e, code) in rows {
        assert_eq!(e.code(), code, "{e:?}");
        let line = e.message();
        assert!(!line.is_empty() && !line.contains('\n'), "{e:?}: {line:?}");
        assert_eq!(e.to_string(), format!("[{code}] {line}"), "{e:?}");
    }
}

fn s(text: &str) -> String {
    text.to_string()
}

#[test]
fn request_errors_are_invalid_input() {
    use RequestError as R;
    let rows: Vec<RequestError> = vec![
        R::EmptyArgv,
        R::EmptyProgram,
        R::EmptyScript,
        R::TooManyArguments { count: 9, max: 8 },
        R::ArgumentNul { index: 1 },
        R::ArgumentTooLong {
            index: 1,
            len: 9,
            max: 8,
        },
        R::Cpus { cpus: s("-1") },
        R::PortZero,
        R::TooManyPorts { count: 9, max: 8 },
        R::LabelKey { key: s("a b") },
        R::LabelValue { key: s("k") },
        R::Key { key: s("") },
        R::Path {
            field: s("path"),
            path: s("a"),
            rule: s("is not absolute (must start with /)"),
        },
        R::DuplicatePath {
            op: FileOp::WriteBatch,
            path: s("/a"),
        },
        R::Mode {
            op: FileOp::Write,
            path: s("/a"),
            mode: 0o10000,
        },
        R::SymlinkTarget { target: s("") },
        R::ProcessGroup { pgid: 0 },
        R::Signal { signal: 0 },
        R::Setting {
            name: s("CORRAL_X"),
            value: s("y"),
            why: s("it is not a number"),
        },
    ];
    check(
        rows.into_iter()
            .map(|e| (e.into(), ErrorCode::InvalidInput))
            .collect(),
    );
}

#[test]
fn sandbox_errors() {
    let id = || s("sb-1");
    check(vec![
        (
            SandboxError::NotFound { id: id() }.into(),
            ErrorCode::NotFound,
        ),
        (
            SandboxError::Paused { id: id() }.into(),
            ErrorCode::Conflict,
        ),
        (
            SandboxError::Dead {
                id: id(),
                init_pid: 7,
            }
            .into(),
            ErrorCode::Unavailable,
        ),
        (
            SandboxError::InitGone { id: id() }.into(),
            ErrorCode::Unavailable,
        ),
        (
            SandboxError::InitUnreachable {
                id: id(),
                detail: s("no answer"),
            }
            .into(),
            ErrorCode::Unavailable,
        ),
        (
            SandboxError::LifetimeEnded { id: id() }.into(),
            ErrorCode::Timeout,
        ),
        (BackendError::sandbox_not_found("sb-1"), ErrorCode::NotFound),
    ]);
}

#[test]
fn create_errors() {
    check(vec![
        (
            CreateError::KeyTaken {
                key: s("k"),
                owner: Some(s("sb-1")),
            }
            .into(),
            ErrorCode::Conflict,
        ),
        (
            CreateError::KeyTaken {
                key: s("k"),
                owner: None,
            }
            .into(),
            ErrorCode::Conflict,
        ),
        (
            CreateError::KeyBeingClaimed { key: s("k") }.into(),
            ErrorCode::Conflict,
        ),
        (
            CreateError::ImageNotFound {
                image: s("alpine"),
                hint: s("load it first"),
            }
            .into(),
            ErrorCode::NotFound,
        ),
        (
            CreateError::SnapshotImageMismatch {
                snapshot: s("s-1"),
                image: s("a"),
                asked: s("b"),
            }
            .into(),
            ErrorCode::InvalidInput,
        ),
        (
            CreateError::SnapshotTooLarge {
                snapshot: s("s-1"),
                limit: 1,
            }
            .into(),
            ErrorCode::Quota,
        ),
        (
            CreateError::Setup {
                id: s("sb-1"),
                step: SetupStep::Cgroup,
                detail: s("denied"),
            }
            .into(),
            ErrorCode::Unavailable,
        ),
        (
            CreateError::InitVanished {
                id: s("sb-1"),
                pid: 7,
            }
            .into(),
            ErrorCode::Provider,
        ),
    ]);
}

#[test]
fn exec_errors() {
    let program = || s("ls");
    let second = Duration::from_secs(1);
    check(vec![
        (
            ExecError::ProgramNotFound { program: program() }.into(),
            ErrorCode::NotFound,
        ),
        (
            ExecError::NotExecutable { program: program() }.into(),
            ErrorCode::InvalidInput,
        ),
        (
            ExecError::CwdNotFound { cwd: s("/nope") }.into(),
            ErrorCode::NotFound,
        ),
        (
            ExecError::Malformed { program: program() }.into(),
            ErrorCode::InvalidInput,
        ),
        (
            ExecError::StartFailed {
                program: program(),
                detail: s("out of memory"),
            }
            .into(),
            ErrorCode::Io,
        ),
        (
            ExecError::TimedOut {
                after: second,
                limit: TimeoutLimit::Requested,
            }
            .into(),
            ErrorCode::Timeout,
        ),
        (
            ExecError::TimedOut {
                after: second,
                limit: TimeoutLimit::BackendDefault {
                    setting: s("CORRAL_EXEC_TIMEOUT"),
                },
            }
            .into(),
            ErrorCode::Timeout,
        ),
        (ExecError::Aborted.into(), ErrorCode::Aborted),
        (
            ExecError::OutputOverrun { bound: 1 }.into(),
            ErrorCode::Quota,
        ),
        (ExecError::ProcessLimit { pids: 1 }.into(), ErrorCode::Quota),
        (ExecError::GroupDying.into(), ErrorCode::Conflict),
        (
            ExecError::KillUnconfirmed {
                what: s("process 7"),
                within: second,
            }
            .into(),
            ErrorCode::Timeout,
        ),
        (
            ExecError::NoExitStatus {
                what: s("process 7"),
            }
            .into(),
            ErrorCode::Provider,
        ),
        (
            ExecError::ShellMissing {
                shell: s("sh"),
                code: 127,
            }
            .into(),
            ErrorCode::Unavailable,
        ),
        (
            ExecError::UnexpectedReply {
                what: s("exec"),
                detail: s("?"),
            }
            .into(),
            ErrorCode::Provider,
        ),
    ]);
}

#[test]
fn file_errors() {
    let e = |cause| BackendError::from(FsError::new(FileOp::Read, "/a", cause));
    check(vec![
        (e(FsCause::Os(Errno::NOENT)), ErrorCode::NotFound),
        (e(FsCause::Os(Errno::EXIST)), ErrorCode::Conflict),
        (e(FsCause::Os(Errno::NOSPC)), ErrorCode::Quota),
        (e(FsCause::Os(Errno::ACCESS)), ErrorCode::Io),
        (
            e(FsCause::Refused(ContainmentReason::OutsideRoot)),
            ErrorCode::InvalidInput,
        ),
        (e(FsCause::NotADirectory), ErrorCode::InvalidInput),
        (e(FsCause::IsADirectory), ErrorCode::InvalidInput),
        (e(FsCause::RootItself), ErrorCode::InvalidInput),
        (e(FsCause::ExistsNotDirectory), ErrorCode::Conflict),
        (
            e(FsCause::BadMode { mode: 0o10000 }),
            ErrorCode::InvalidInput,
        ),
        (e(FsCause::TooLarge { limit: 1 }), ErrorCode::Quota),
        (
            FsError::os(FileOp::Write, "/a", Errno::NOTDIR).into(),
            ErrorCode::InvalidInput,
        ),
    ]);
}

#[test]
fn snapshot_errors() {
    check(vec![
        (
            SnapshotError::NotFound { snapshot: s("s-1") }.into(),
            ErrorCode::NotFound,
        ),
        (
            SnapshotError::Corrupted {
                snapshot: s("s-1"),
                why: s("bad digest"),
            }
            .into(),
            ErrorCode::Provider,
        ),
        (
            SnapshotError::OverBudget {
                what: s("snapshot of sb-1"),
                detail: s("more than 1 byte"),
            }
            .into(),
            ErrorCode::Quota,
        ),
        (
            SnapshotError::TimedOut {
                what: s("snapshot of sb-1"),
                detail: s("past 1s"),
            }
            .into(),
            ErrorCode::Timeout,
        ),
    ]);
}

#[test]
fn preview_errors() {
    check(vec![
        (
            PreviewError::PortNotDeclared {
                id: s("sb-1"),
                port: 8080,
                declared: vec![3000],
            }
            .into(),
            ErrorCode::NotFound,
        ),
        (
            PreviewError::ForwarderFailed {
                detail: s("no socket"),
            }
            .into(),
            ErrorCode::Unavailable,
        ),
        (
            PreviewError::ForwarderGone { id: s("sb-1") }.into(),
            ErrorCode::Unavailable,
        ),
        (
            PreviewError::ForwarderUnkillable {
                pid: 7,
                within: Duration::from_secs(1),
            }
            .into(),
            ErrorCode::Io,
        ),
        (
            PreviewError::NothingListening {
                id: s("sb-1"),
                port: 8080,
            }
            .into(),
            ErrorCode::Unavailable,
        ),
        (
            PreviewError::ConnectFailed {
                id: s("sb-1"),
                port: 8080,
                detail: s("timed out\nafter 10s"),
            }
            .into(),
            ErrorCode::Unavailable,
        ),
    ]);
}

#[test]
fn platform_errors() {
    let answered = |status| {
        BackendError::from(PlatformError::Answered {
            what: s("GET /x"),
            status,
            detail: s("no"),
        })
    };
    let io = |kind| BackendError::from(PlatformError::io("a step", &std::io::Error::from(kind)));
    check(vec![
        (
            BackendError::unsupported("memory", "pin cpus"),
            ErrorCode::Unsupported,
        ),
        (
            PlatformError::Unavailable {
                what: s("the engine"),
                detail: s("down"),
            }
            .into(),
            ErrorCode::Unavailable,
        ),
        (answered(401), ErrorCode::Auth),
        (answered(404), ErrorCode::NotFound),
        (answered(500), ErrorCode::Provider),
        (
            PlatformError::Malformed {
                what: s("a record"),
                detail: s("not JSON"),
            }
            .into(),
            ErrorCode::Provider,
        ),
        (
            PlatformError::Defective {
                what: s("a broken invariant"),
            }
            .into(),
            ErrorCode::Provider,
        ),
        (io(ErrorKind::NotFound), ErrorCode::NotFound),
        (io(ErrorKind::PermissionDenied), ErrorCode::Io),
        (io(ErrorKind::StorageFull), ErrorCode::Quota),
        (
            BackendError::from_io("a step", &std::io::Error::from(ErrorKind::Other)),
            ErrorCode::Io,
        ),
    ]);
}

#[test]
fn relayed_errors_keep_their_code() {
    check(vec![
        (
            BackendError::relayed(ErrorCode::Auth, "refused"),
            ErrorCode::Auth,
        ),
        (
            BackendError::relayed(ErrorCode::Quota, "full"),
            ErrorCode::Quota,
        ),
    ]);
}
