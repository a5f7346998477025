//! envd's plane: the `process.Process` and `filesystem.Filesystem` Connect
//! services, `/files` and `/health`, each routed to its sandbox and
//! authenticated by the sandbox's access token.

pub mod connect;
pub mod entry;
pub mod files;
pub mod filesystem;
pub mod fs_move;
pub mod gzip;
pub mod live;
pub mod multipart;
pub mod owned;
pub mod process;
pub mod pty;
pub mod rpc;
pub mod tree_walk;
pub mod unserved;
pub mod watch;

use std::sync::Arc;

use corral_backend::{SandboxPath, sandbox_path};
use hyper::Request;
use hyper::header::{AUTHORIZATION, HOST};

use crate::control::presents;
use crate::error::{E2bError, E2bResult};
use crate::state::Record;
use crate::{Inner, USER_HOME};

/// The header naming the sandbox (the SDK sends it with `E2B_SANDBOX_URL`).
pub const SANDBOX_ID_HEADER: &str = "E2b-Sandbox-Id";

/// The header carrying the sandbox's access token.
pub const ACCESS_TOKEN_HEADER: &str = "X-Access-Token";

/// The port envd listens on in an E2B sandbox.
pub const ENVD_PORT: u16 = 49983;

/// The sandbox a request names: its `E2b-Sandbox-Id` header, else a Host
/// of the form `<port>-<id>.<domain>`.
pub fn sandbox_id<B>(req: &Request<B>) -> Option<String> {
    if let Some(id) = req.headers().get(SANDBOX_ID_HEADER) {
        return id.to_str().ok().map(str::to_string);
    }
    let host = req.headers().get(HOST)?.to_str().ok()?;
    let (label, _domain) = host.split_once('.')?;
    let (port, id) = label.split_once('-')?;
    (port.parse::<u16>() == Ok(ENVD_PORT) && !id.is_empty()).then(|| id.to_string())
}

/// The sandbox a request names, once its access token is checked. A
/// request naming none (e2b 2.8's `Sandbox.connect` sends only the token)
/// is routed by its token, and refused as unrouted when no sandbox has it.
pub fn authorized<B>(inner: &Inner, req: &Request<B>) -> E2bResult<Arc<Record>> {
    let token = req.headers().get(ACCESS_TOKEN_HEADER).map(|v| v.as_bytes());
    let Some(id) = sandbox_id(req) else {
        return token
            .and_then(|t| inner.sandboxes.by_token(t))
            .ok_or(E2bError::Unrouted);
    };
    let record = inner.sandboxes.get(&id).ok_or(E2bError::NoSandbox { id })?;
    if !presents(&record.access_check, token) {
        return Err(E2bError::Unauthenticated {
            header: ACCESS_TOKEN_HEADER,
        });
    }
    Ok(record)
}

/// Who a call acts as: envd's users.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvdUser {
    /// `user`, the default.
    User,
    /// `root`.
    Root,
}

impl EnvdUser {
    /// The user a name names.
    pub fn from_name(name: &str) -> E2bResult<Self> {
        match name {
            "" | "user" => Ok(EnvdUser::User),
            "root" => Ok(EnvdUser::Root),
            other => Err(E2bError::invalid(
                "user",
                format!("{other:?} is not a user of this sandbox (root or user)"),
            )),
        }
    }

    /// The user of an `Authorization: Basic <base64 of "name:">` header
    /// (`user` without one).
    pub fn of<B>(req: &Request<B>) -> E2bResult<Self> {
        let Some(value) = req.headers().get(AUTHORIZATION) else {
            return Ok(EnvdUser::User);
        };
        let malformed = || E2bError::invalid("Authorization", "is not Basic <base64 of user:>");
        let text = value.to_str().map_err(|_| malformed())?;
        let encoded = text.strip_prefix("Basic ").ok_or_else(malformed)?;
        let decoded = corral_contract::base64_decode(encoded.trim()).map_err(|_| malformed())?;
        let decoded = String::from_utf8(decoded).map_err(|_| malformed())?;
        let name = decoded.split_once(':').map_or(decoded.as_str(), |(n, _)| n);
        Self::from_name(name)
    }

    /// Whom a command asked for as this user runs as on a backend
    /// declaring `caps`: `root` as root; `user` as the sandbox's
    /// unprivileged user where the backend declares `run_as_user`, else as
    /// the backend's default (root on every backend), since the SDK's
    /// default user is `user` and refusing it would refuse every command.
    pub fn run_as(self, caps: &corral_backend::Capabilities) -> Option<corral_backend::RunAs> {
        match self {
            EnvdUser::Root => Some(corral_backend::RunAs::Root),
            EnvdUser::User if caps.run_as_user => Some(corral_backend::RunAs::User),
            EnvdUser::User => None,
        }
    }
}

/// `path` made absolute (a relative path is under `/home/user`, `~` is
/// `/home/user`) and normalized; `field` names it in the refusal.
pub fn resolve(field: &str, path: &str) -> E2bResult<SandboxPath> {
    let absolute = if path == "~" {
        USER_HOME.to_string()
    } else if let Some(rest) = path.strip_prefix("~/") {
        format!("{USER_HOME}/{rest}")
    } else if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{USER_HOME}/{path}")
    };
    sandbox_path(field, &absolute).map_err(|e| E2bError::invalid(field, e.message()))
}

/// The decoded value of query parameter `name`, if present.
pub fn query_param<B>(req: &Request<B>, name: &str) -> E2bResult<Option<String>> {
    let pairs = crate::control::query::form_pairs(req.uri().query().unwrap_or(""))
        .ok_or_else(|| E2bError::invalid("query", "is not form-encoded"))?;
    Ok(pairs.into_iter().find(|(k, _)| k == name).map(|(_, v)| v))
}

#[cfg(test)]
mod tests {
    use super::EnvdUser;
    use corral_backend::{Capabilities, RunAs};

    #[test]
    fn envd_users_map_to_whom_the_backend_can_run() {
        let declared = Capabilities {
            run_as_user: true,
            ..Capabilities::default()
        };
        let undeclared = Capabilities::default();
        let rows: [(EnvdUser, &Capabilities, Option<RunAs>); 4] = [
            (EnvdUser::Root, &declared, Some(RunAs::Root)),
            (EnvdUser::Root, &undeclared, Some(RunAs::Root)),
            (EnvdUser::User, &declared, Some(RunAs::User)),
            (EnvdUser::User, &undeclared, None),
        ];
        for (user, caps, want) in rows {
            assert_eq!(
                user.run_as(caps),
                want,
                "{user:?} with run_as_user {}",
                caps.run_as_user
            );
        }
    }
}
