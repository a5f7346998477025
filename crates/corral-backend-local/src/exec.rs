//! Running commands: host processes in their own process group.
//!
//! **Nothing is isolated.** A command is an ordinary host process running as
//! the calling user, with the host's file system, network and process table.
//! The sandbox's path namespace applies only to the file primitives and to
//! the working directory: `cwd: /workspace/src` runs in
//! `<sandbox>/root/workspace/src`, but an absolute path *inside a command*
//! (`cat /etc/hosts`, `cd /`) is a host path. `HOME` is the host path of the
//! sandbox's `/workspace`, so `~` and relative paths stay in the sandbox.
//!
//! The environment is cleared and rebuilt from, in order of precedence
//! (later wins): `PATH` (the shared default), `HOME`, `PWD`, the sandbox's
//! create-time environment, the request's environment; then, over all of
//! them, `CORRAL_SANDBOX=<id>`, the marker by which `destroy` finds every
//! process the sandbox started (see the `reap` module): a caller's own
//! `CORRAL_SANDBOX` is replaced, never honoured. Nothing of the calling
//! process's environment leaks in.

use std::collections::BTreeMap;
use std::path::PathBuf;

use corral_backend::Environment;
use corral_backend::SandboxPath;
use corral_backend::contained_fs::{FileOp, SplitPath};
use corral_backend::host_exec::{self, HostCommand};
use corral_backend::{
    DEFAULT_PATH, ExecError, ExecOutcome, ExecRequest, OutputSink, Result, WORKSPACE_DIR,
};
use rustix::fs::OFlags;
use rustix::io::Errno;

use crate::files::sandbox_root;
use crate::state::{Meta, State, require_meta};

/// A command's working directory and environment, resolved on the host.
pub(crate) struct Placement {
    /// Host working directory.
    pub(crate) cwd: PathBuf,
    /// The complete environment.
    pub(crate) env: BTreeMap<String, String>,
    /// Set when the sandbox has no network: wraps the command's argv.
    pub(crate) no_network: Option<&'static crate::netns::NoNetwork>,
}

impl Placement {
    /// The argv to start: `argv` itself, or wrapped into a network-less namespace.
    pub(crate) fn argv(&self, argv: Vec<String>) -> Vec<String> {
        match self.no_network {
            Some(n) => n.wrap(argv),
            None => argv,
        }
    }
}

/// Resolves `cwd` (default [`WORKSPACE_DIR`]) beneath the sandbox root and
/// builds the environment. `not_found` for a missing or non-directory
/// working directory; `invalid_input` for one that resolves outside the
/// sandbox.
pub(crate) fn place(
    state: &State,
    id: &str,
    cwd: Option<&SandboxPath>,
    extra_env: &Environment,
) -> Result<Placement> {
    let meta: Meta = require_meta(state, id)?;
    let t = match cwd {
        Some(cwd) => SplitPath::from(cwd),
        None => SplitPath::from(&corral_backend::sandbox_path("cwd", WORKSPACE_DIR)?),
    };
    let root = sandbox_root(state, id)?;
    match root.open_at(t.comps(), OFlags::PATH | OFlags::DIRECTORY, true) {
        Ok(_) => {}
        Err(Errno::NOENT | Errno::NOTDIR) => {
            return Err(ExecError::CwdNotFound {
                cwd: t.shown().to_owned(),
            }
            .into());
        }
        Err(e) => return Err(crate::beneath::fs_error(FileOp::OpenDir, t.shown(), e)),
    }
    let host_root = state.root_dir(id);
    let mut host_cwd = host_root.clone();
    host_cwd.extend(t.comps());
    let home = host_root.join(WORKSPACE_DIR.trim_start_matches('/'));
    let mut env = BTreeMap::new();
    env.insert("PATH".to_string(), DEFAULT_PATH.to_string());
    env.insert("HOME".to_string(), home.to_string_lossy().into_owned());
    env.insert("PWD".to_string(), host_cwd.to_string_lossy().into_owned());
    env.extend(
        meta.env
            .iter()
            .chain(extra_env.iter())
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    // Last, so that nothing the caller sets can hide the process from `destroy`.
    env.insert(crate::reap::MARKER.to_string(), id.to_owned());
    let no_network = if meta.network_none {
        Some(crate::netns::require()?)
    } else {
        None
    };
    Ok(Placement {
        cwd: host_cwd,
        env,
        no_network,
    })
}

/// `exec`: validates, places, and runs through the shared host runner.
pub(crate) async fn exec(
    state: &State,
    id: &str,
    req: ExecRequest,
    sink: &mut dyn OutputSink,
) -> Result<ExecOutcome> {
    corral_backend::check_run_as(
        crate::state::NAME,
        &crate::LocalBackend::CAPABILITIES,
        req.run_as,
    )?;
    let placement = {
        let (state, id, cwd, env) = (
            state.clone(),
            id.to_owned(),
            req.cwd.clone(),
            req.env.clone(),
        );
        crate::blocking(move || place(&state, &id, cwd.as_ref(), &env)).await?
    };
    let cmd = HostCommand {
        argv: placement.argv(req.command.to_argv()),
        cwd: placement.cwd,
        env: placement.env,
        stdin: req.stdin,
        timeout: req.timeout,
        abort: req.abort,
    };
    host_exec::run(cmd, sink).await
}
