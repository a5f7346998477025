//! Programs that cannot start: each request gets the typed refusal that
//! names what was wrong, never a crashed child that looks like a run (an
//! exit of 134 from an abort in the init's forked child), and the sandbox
//! answers afterwards.

use corral_backend::{
    Backend, BackendError, CollectedOutput, Command, CreateRequest, ExecError, ExecRequest,
};

use super::Host;
use corral_backend::rules::sp;

/// What an exec request names and what must come back.
struct Row {
    attack: &'static str,
    /// A script run first to lay out the files the row needs.
    setup: &'static str,
    argv: &'static [&'static str],
    cwd: Option<&'static str>,
    expect: fn(&ExecError) -> bool,
}

const ROWS: &[Row] = &[
    Row {
        attack: "a regular file without the execute bit",
        setup: "",
        argv: &["/etc/hostname"],
        cwd: None,
        expect: |e| matches!(e, ExecError::NotExecutable { program } if program == "/etc/hostname"),
    },
    Row {
        attack: "a directory as the program",
        setup: "",
        argv: &["/tmp"],
        cwd: None,
        expect: |e| matches!(e, ExecError::NotExecutable { .. }),
    },
    Row {
        attack: "an executable file that is neither ELF nor a script",
        setup: "printf '\\000\\001garbage' > /tmp/junk && chmod 755 /tmp/junk",
        argv: &["/tmp/junk"],
        cwd: None,
        expect: |e| matches!(e, ExecError::NotExecutable { .. }),
    },
    Row {
        attack: "an absolute path that does not exist",
        setup: "",
        argv: &["/no/such/program"],
        cwd: None,
        expect: |e| matches!(e, ExecError::ProgramNotFound { .. }),
    },
    Row {
        attack: "a bare name on no directory of PATH",
        setup: "",
        argv: &["corral-no-such-program"],
        cwd: None,
        expect: |e| matches!(e, ExecError::ProgramNotFound { .. }),
    },
    Row {
        attack: "a working directory that does not exist",
        setup: "",
        argv: &["true"],
        cwd: Some("/no/such/dir"),
        expect: |e| matches!(e, ExecError::CwdNotFound { cwd } if cwd == "/no/such/dir"),
    },
    Row {
        attack: "a regular file as the working directory",
        setup: "",
        argv: &["true"],
        cwd: Some("/etc/hostname"),
        expect: |e| matches!(e, ExecError::CwdNotFound { .. }),
    },
];

/// Every row of [`ROWS`] is refused with its typed error, on stdin-less
/// and on stdin-fed requests (the two ways the init lays out stdin), and
/// the sandbox still runs a command after each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_that_cannot_start_is_a_typed_refusal_never_a_crash() {
    let test = "a_program_that_cannot_start_is_a_typed_refusal_never_a_crash";
    let Some(h) = Host::new(test).await else {
        return;
    };
    let id = h.sandbox(CreateRequest::default()).await;
    for row in ROWS {
        if !row.setup.is_empty() {
            let (code, _, err) = h.sh(&id, row.setup).await;
            assert_eq!(code, 0, "{}: setup: {err}", row.attack);
        }
        for stdin in [false, true] {
            let mut req = ExecRequest::new(Command::argv(row.argv.iter().copied()).unwrap());
            if let Some(cwd) = row.cwd {
                req = req.cwd(sp(cwd));
            }
            if stdin {
                req = req.stdin(b"input".to_vec());
            }
            let mut out = CollectedOutput::default();
            let got = h.backend.exec(&id, req, &mut out).await;
            match &got {
                Err(BackendError::Exec(e)) if (row.expect)(e) => {}
                other => panic!(
                    "{} (stdin {stdin}): {other:?}, stderr {:?}",
                    row.attack,
                    String::from_utf8_lossy(&out.stderr)
                ),
            }
            let (code, out, _) = h.sh(&id, "echo ok").await;
            assert_eq!((code, out.as_str()), (0, "ok\n"), "{}", row.attack);
        }
    }
    h.still_answers().await;
}
