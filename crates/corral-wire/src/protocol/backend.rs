//! The backend primitives over the wire, for the `remote` backend: one
//! `POST /v1/backend/<member>` route per primitive, the `corral-backend`
//! serde forms as bodies (bytes in base64), a [`BackendError`] as an
//! [`ErrorBody`](super::ErrorBody) (HTTP 422) as the error body, and `exec` as a stream of newline-delimited JSON
//! [`ExecFrame`]s.
//!
//! A server serves these routes only when it was given the backend behind
//! its provider ([`crate::WireServer::serving_backend`]); otherwise they
//! are unknown routes (404).

use corral_backend::{
    BackendError, Capabilities, Command, ExecOutcome, KeyMode, Labels, SandboxKey, StreamKind,
};
use corral_contract::Octets;
use corral_contract::bounds::{MAX_FILE_CONTENT_BYTES, MIB};
use serde::{Deserialize, Serialize};

/// The path prefix of the backend routes.
pub const BACKEND_PREFIX: &str = "/v1/backend/";

macro_rules! backend_routes {
    ($($variant:ident => $name:literal, $doc:literal;)*) => {
        /// One backend route: `POST /v1/backend/<name>`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum BackendRoute {
            $(#[doc = $doc] $variant,)*
        }

        impl BackendRoute {
            /// Every route.
            pub const ALL: &'static [BackendRoute] = &[$(BackendRoute::$variant),*];

            /// The member's name, the last segment of the path.
            pub const fn name(self) -> &'static str {
                match self {
                    $(BackendRoute::$variant => $name,)*
                }
            }
        }
    };
}

backend_routes! {
    Describe => "describe", "`{}` → [`Description`]: name, key mode, capabilities.";
    Create => "create", "[`corral_backend::CreateRequest`] → [`corral_backend::SandboxInfo`].";
    Find => "find", "[`KeyBody`] → `SandboxInfo` or `null`.";
    Connect => "connect", "[`SandboxRef`] → `SandboxInfo`.";
    List => "list", "[`LabelsBody`] → `[SandboxInfo]`.";
    Destroy => "destroy", "[`SandboxRef`] → `null` (idempotent).";
    Exec => "exec", "[`ExecBody`] → a stream of [`ExecFrame`] lines.";
    AbortRun => "abort_run", "[`RunRef`] → `null`: aborts a streaming `exec`.";
    Read => "read", "[`PathBody`] → [`BytesBody`].";
    Write => "write", "[`WriteBody`] → `null`.";
    ListDir => "list_dir", "[`PathBody`] → `[DirEntry]`.";
    Stat => "stat", "[`PathBody`] → `FileStat`.";
    Remove => "remove", "[`RemoveBody`] → `null`.";
    Mkdir => "mkdir", "[`MkdirBody`] → `null`.";
    ReadRange => "read_range", "[`RangeBody`] → [`BytesBody`].";
    PreviewUrl => "preview_url", "[`PortBody`] → `PreviewUrl`.";
    Native => "native", "[`SandboxRef`] → the platform's JSON.";
    Pause => "pause", "[`SandboxRef`] → `null`.";
    Resume => "resume", "[`SandboxRef`] → `null`.";
    Snapshot => "snapshot", "[`SnapshotOf`] → `SnapshotInfo`.";
    DeleteSnapshot => "delete_snapshot", "[`SnapshotRef`] → `null`.";
    ListSnapshots => "list_snapshots", "[`LabelsBody`] → `[SnapshotInfo]`.";
    CloneSnapshot => "clone_snapshot", "[`SnapshotRef`] → `SnapshotInfo`.";
    Usage => "usage", "[`SandboxRef`] → `Usage`.";
    ListTree => "list_tree", "[`TreeBody`] → `TreeListing`.";
    WriteBatch => "write_batch", "[`BatchBody`] → `null`.";
}

impl BackendRoute {
    /// `/v1/backend/<name>`.
    pub fn path(self) -> String {
        format!("{BACKEND_PREFIX}{}", self.name())
    }

    /// The route of `path`, if it is one.
    pub fn from_path(path: &str) -> Option<Self> {
        let name = path.strip_prefix(BACKEND_PREFIX)?;
        Self::ALL.iter().copied().find(|r| r.name() == name)
    }

    /// Whether sending the route's request twice settles as sending it
    /// once, so a client may send it again after a connection broke with
    /// the request perhaps delivered: the reads, and the teardowns the
    /// backend trait documents as idempotent (`destroy`,
    /// `delete_snapshot`). `connect`, `preview_url` and every write, run or
    /// allocation are not.
    pub const fn idempotent(self) -> bool {
        matches!(
            self,
            Self::Describe
                | Self::Find
                | Self::List
                | Self::Destroy
                | Self::Read
                | Self::ListDir
                | Self::Stat
                | Self::ReadRange
                | Self::Native
                | Self::DeleteSnapshot
                | Self::ListSnapshots
                | Self::Usage
                | Self::ListTree
        )
    }

    /// The largest request body the server reads for this route: a whole
    /// file (or a batch of them, or stdin) in base64 and its envelope for
    /// the routes that carry bytes, 1 MiB for the others.
    pub const fn max_body_bytes(self) -> u64 {
        const ENVELOPE: u64 = MIB;
        match self {
            Self::Write | Self::WriteBatch | Self::Exec => {
                MAX_FILE_CONTENT_BYTES.div_ceil(3) * 4 + ENVELOPE
            }
            _ => ENVELOPE,
        }
    }
}

/// What `describe` returns: fixed for the server's lifetime.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Description {
    /// The served backend's name.
    pub name: String,
    /// Its key mode.
    pub key_mode: KeyMode,
    /// Its capabilities, less the members the wire does not carry.
    pub capabilities: Capabilities,
}

/// The members the backend routes do not carry: live process stdio and
/// terminals (the contract's `openProcess` socket carries processes), and
/// contained reads (the contract's reads carry them), reclaim (it is
/// the serving host's own housekeeping), port connections (a byte
/// stream into the sandbox has no route) and binds (a bind names the
/// serving host's own directories: see [`asks_for_binds`]). `describe`
/// clears them, so a remote backend never declares them.
pub fn carried(mut caps: Capabilities) -> Capabilities {
    caps.binds = false;
    caps.start_process = false;
    caps.terminal = false;
    caps.contained_read = false;
    caps.reclaim = false;
    caps.port_connect = false;
    caps
}

/// Whether a `create` body asks for binds (a `binds` field that is
/// neither absent, `null` nor empty). A server refuses such a body before
/// decoding it: a remote caller may not bind the serving host's
/// directories, nor learn which of them exist from a decoding error.
#[must_use]
pub fn asks_for_binds(body: &[u8]) -> bool {
    let Ok(serde_json::Value::Object(fields)) = serde_json::from_slice(body) else {
        // Not an object: the create's own decoding refuses it.
        return false;
    };
    match fields.get("binds") {
        None | Some(serde_json::Value::Null) => false,
        Some(serde_json::Value::Array(binds)) => !binds.is_empty(),
        Some(_) => true,
    }
}

/// One sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxRef {
    /// Its id.
    pub id: String,
}

/// A key to find.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyBody {
    /// The key (a bad one is refused at decode).
    pub key: SandboxKey,
}

/// A label filter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabelsBody {
    /// Every pair must match.
    pub labels: Labels,
}

/// One `exec`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecBody {
    /// The sandbox.
    pub id: String,
    /// What to run.
    pub command: Command,
    /// Working directory.
    pub cwd: Option<String>,
    /// Added environment.
    pub env: corral_backend::Environment,
    /// Stdin, then EOF; `None`: closed at once.
    pub stdin: Option<Octets>,
    /// The timeout, enforced by the server's backend.
    pub timeout_ms: Option<u64>,
    /// The SDK core's activity record path.
    pub activity_path: Option<String>,
    /// Whom the command runs as; absent from older bodies, which decode
    /// as `None` (the backend's default).
    #[serde(default)]
    pub run_as: Option<corral_backend::RunAs>,
}

/// One line of an `exec` response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecFrame {
    /// The first line: the run's id, for `abort_run`.
    Started {
        /// The id.
        run: u64,
    },
    /// A chunk of output, in arrival order.
    Output {
        /// Which stream.
        stream: StreamKind,
        /// The bytes.
        bytes: Octets,
    },
    /// The last line of a run that ended on its own.
    Outcome(ExecOutcome),
    /// The last line of a run that failed (timeout and abort included,
    /// sent only after the process group is dead), as an
    /// [`ErrorBody`](super::ErrorBody).
    Error(#[serde(with = "super::as_body")] BackendError),
}

/// A streaming `exec` to abort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRef {
    /// The id from its [`ExecFrame::Started`].
    pub run: u64,
}

/// A path in a sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathBody {
    /// The sandbox.
    pub id: String,
    /// The absolute path.
    pub path: String,
}

/// File bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BytesBody {
    /// The bytes.
    pub bytes: Octets,
}

/// A whole-file write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteBody {
    /// The sandbox.
    pub id: String,
    /// The absolute path.
    pub path: String,
    /// The content.
    pub bytes: Octets,
    /// Permission bits.
    pub mode: Option<u32>,
}

/// A removal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoveBody {
    /// The sandbox.
    pub id: String,
    /// The absolute path.
    pub path: String,
    /// Whole trees.
    pub recursive: bool,
}

/// A directory to make.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MkdirBody {
    /// The sandbox.
    pub id: String,
    /// The absolute path.
    pub path: String,
    /// With missing ancestors, and no error when it exists.
    pub parents: bool,
}

/// A ranged read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeBody {
    /// The sandbox.
    pub id: String,
    /// The absolute path.
    pub path: String,
    /// From this byte.
    pub offset: u64,
    /// At most this many bytes.
    pub len: u64,
}

/// A preview port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortBody {
    /// The sandbox.
    pub id: String,
    /// The port inside it.
    pub port: u16,
}

/// A snapshot to take.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotOf {
    /// The sandbox.
    pub id: String,
    /// The snapshot's labels.
    pub labels: Labels,
}

/// A snapshot to delete or clone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotRef {
    /// The snapshot.
    pub snapshot_id: String,
    /// The clone's labels (ignored by `delete_snapshot`).
    #[serde(default)]
    pub labels: Labels,
}

/// A complete leaf listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeBody {
    /// The sandbox.
    pub id: String,
    /// The root of the listing.
    pub root: String,
    /// At most this many entries.
    pub max_entries: u64,
}

/// One file of a batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchFileBody {
    /// The absolute path.
    pub path: String,
    /// The content.
    pub bytes: Octets,
    /// Permission bits.
    pub mode: Option<u32>,
}

/// An atomic batch write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchBody {
    /// The sandbox.
    pub id: String,
    /// The files.
    pub files: Vec<BatchFileBody>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_round_trips_through_its_path() {
        for route in BackendRoute::ALL {
            assert_eq!(BackendRoute::from_path(&route.path()), Some(*route));
        }
        assert_eq!(BackendRoute::from_path("/v1/backend/nope"), None);
        assert_eq!(BackendRoute::from_path("/v1/create"), None);
    }

    #[test]
    fn routes_that_carry_a_file_admit_a_whole_one_in_base64() {
        let whole = MAX_FILE_CONTENT_BYTES.div_ceil(3) * 4;
        assert!(BackendRoute::Write.max_body_bytes() > whole);
        assert!(BackendRoute::Stat.max_body_bytes() < whole);
    }

    /// A `describe` answer from an older server decodes: one that lacks
    /// the members added since (`reclaim`, `enforces.bound_to_creator`)
    /// declares them `false`, and one that still carries the SDK hints
    /// that left the capabilities (`write_creates_parents`,
    /// `inline_activity`) decodes with them ignored.
    #[test]
    fn older_descriptions_decode() {
        let current = Description {
            name: "memory".into(),
            key_mode: KeyMode::Exact,
            capabilities: Capabilities {
                pause: true,
                enforces: enforcing_timeouts(),
                ..Capabilities::default()
            },
        };
        type Edit = fn(&mut serde_json::Value);
        let rows: [(&str, Edit); 4] = [
            ("as written", |_| {}),
            ("without reclaim", |d| {
                d["capabilities"].as_object_mut().unwrap().remove("reclaim");
            }),
            ("without bound_to_creator", |d| {
                d["capabilities"]["enforces"]
                    .as_object_mut()
                    .unwrap()
                    .remove("bound_to_creator");
            }),
            ("with the retired SDK hints", |d| {
                let caps = d["capabilities"].as_object_mut().unwrap();
                caps.insert("write_creates_parents".into(), true.into());
                caps.insert("inline_activity".into(), true.into());
            }),
        ];
        for (what, edit) in rows {
            let mut json = serde_json::to_value(&current).unwrap();
            edit(&mut json);
            let decoded: Description = serde_json::from_value(json.clone())
                .unwrap_or_else(|e| panic!("{what}: {e}: {json}"));
            assert_eq!(decoded, current, "{what}");
        }
    }

    fn enforcing_timeouts() -> corral_backend::Enforceable {
        corral_backend::Enforceable {
            timeout: true,
            idle_timeout: true,
            ..corral_backend::Enforceable::default()
        }
    }

    #[test]
    fn exec_bodies_carry_whom_to_run_as_and_older_ones_decode() {
        let body = ExecBody {
            id: "sb".into(),
            command: Command::argv(["id", "-u"]).unwrap(),
            cwd: None,
            env: corral_backend::Environment::new(),
            stdin: None,
            timeout_ms: None,
            activity_path: None,
            run_as: Some(corral_backend::RunAs::User),
        };
        let json = serde_json::to_value(&body).unwrap();
        assert_eq!(json["run_as"], "user");
        let back: ExecBody = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back, body);
        let mut older = json;
        older.as_object_mut().unwrap().remove("run_as");
        let decoded: ExecBody = serde_json::from_value(older).unwrap();
        assert_eq!(decoded.run_as, None, "an older body runs as the default");
    }

    #[test]
    fn the_wire_never_declares_what_it_does_not_carry() {
        let all = Capabilities {
            start_process: true,
            terminal: true,
            contained_read: true,
            pause: true,
            reclaim: true,
            port_connect: true,
            ..Capabilities::default()
        };
        let carried = carried(all);
        assert!(!carried.start_process && !carried.terminal && !carried.contained_read);
        assert!(!carried.reclaim && !carried.port_connect);
        assert!(carried.pause);
    }

    // The backend primitives: the reads, and the two teardowns their trait
    // documents as idempotent (`destroy`, `delete_snapshot`).
    #[test]
    fn the_idempotent_backend_routes() {
        let idempotent: Vec<&str> = BackendRoute::ALL
            .iter()
            .filter(|r| r.idempotent())
            .map(|r| r.name())
            .collect();
        assert_eq!(
            idempotent,
            [
                "describe",
                "find",
                "list",
                "destroy",
                "read",
                "list_dir",
                "stat",
                "read_range",
                "native",
                "delete_snapshot",
                "list_snapshots",
                "usage",
                "list_tree",
            ]
        );
    }

    /// A remote caller's binds are refused before their paths are looked
    /// at, one row per body; a description never declares binds.
    #[test]
    fn binds_are_never_carried() {
        let rows: [(&str, bool); 6] = [
            ("{}", false),
            (r#"{"binds": null}"#, false),
            (r#"{"binds": []}"#, false),
            (
                r#"{"binds": [{"source": "/root", "target": "/data", "read_only": false}]}"#,
                true,
            ),
            (r#"{"binds": "anything"}"#, true),
            ("[1]", false),
        ];
        for (body, asks) in rows {
            assert_eq!(asks_for_binds(body.as_bytes()), asks, "{body}");
        }
        let all = Capabilities {
            binds: true,
            ..Capabilities::default()
        };
        assert!(!carried(all).binds);
    }
}
