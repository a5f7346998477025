//! [`Route`]: the paths of the contract's members and of the settlement of
//! the live objects they return. The members' routes are declared from the
//! contract's operations table ([`corral_contract::contract_members!`]), so
//! a member cannot lack its route, and a route's name is its member's.

use std::collections::HashMap;
use std::sync::LazyLock;

use corral_contract::bounds::{MAX_ACTIVE_WRITE_AGGREGATE_BYTES, MAX_FILE_CONTENT_BYTES, MIB};
use corral_contract::{HandoffMember, Operation};

/// Declares [`Route`] from the operations table's rows: one route per
/// member, then the settlement routes.
macro_rules! declare_routes {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// One route: `POST /v1/<name>` (and `GET /v1/open_process`, the
        /// WebSocket): one for each of the eighteen contract members, named
        /// as the member, then the settlement routes of the live objects
        /// (twelve for the six handoffs, two for active-write
        /// transactions). `docs/wire.md` gives each route's request and
        /// reply bodies.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Route {
            $(
                #[doc = concat!("`/v1/", $name, "`: [`Operation::", stringify!($variant), "`].")]
                $variant,
            )*
            /// `<member>/rollback`: `HandoffTicket` → `null` (runs the
            /// compensation at most once; asked again, `null`).
            HandoffRollback(HandoffMember),
            /// `<member>/settle`: `HandoffTicket` → `null` (the caller took
            /// the value; the compensation is dropped).
            HandoffSettle(HandoffMember),
            /// `active_write/commit`: `TransactionTicket` → `TransactionReply`.
            ActiveWriteCommit,
            /// `active_write/rollback`: `TransactionTicket` → `TransactionReply`.
            ActiveWriteRollback,
        }

        impl Route {
            /// Every route: the members in the operations table's order,
            /// each handoff's rollback, each handoff's settle, then the
            /// active-write commit and rollback.
            pub const ALL: [Route; ROUTES] = {
                let members = [$(Route::$variant),*];
                let handoffs = HandoffMember::ALL;
                let mut all = [Route::ActiveWriteRollback; ROUTES];
                let mut i = 0;
                while i < members.len() {
                    all[i] = members[i];
                    i += 1;
                }
                let mut h = 0;
                while h < handoffs.len() {
                    all[i + h] = Route::HandoffRollback(handoffs[h]);
                    all[i + handoffs.len() + h] = Route::HandoffSettle(handoffs[h]);
                    h += 1;
                }
                all[ROUTES - 2] = Route::ActiveWriteCommit;
                all
            };

            /// The contract operation errors on this route name.
            pub const fn operation(self) -> Operation {
                match self {
                    $(Self::$variant => Operation::$variant,)*
                    Self::HandoffRollback(member) => Operation::Rollback(member.compensated()),
                    Self::HandoffSettle(member) => member.member(),
                    Self::ActiveWriteCommit | Self::ActiveWriteRollback => {
                        Operation::BeginActiveWrite
                    }
                }
            }
        }
    };
}

/// How many routes there are: one per member, two per handoff member, and
/// the active-write commit and rollback.
const ROUTES: usize = Operation::MEMBERS.len() + 2 * HandoffMember::ALL.len() + 2;

corral_contract::contract_members!(declare_routes);

impl Route {
    /// The path, `/v1/<name>`: a member's name is the contract's wire
    /// spelling of its operation, a handoff's settlement routes hang off
    /// the handoff member's name.
    pub fn path(self) -> &'static str {
        static PATHS: LazyLock<HashMap<Route, String>> = LazyLock::new(|| {
            Route::ALL
                .into_iter()
                .map(|route| (route, route.derive_path()))
                .collect()
        });
        PATHS.get(&self).map_or("", String::as_str)
    }

    fn derive_path(self) -> String {
        match self {
            Self::HandoffRollback(member) => format!("/v1/{member}/rollback"),
            Self::HandoffSettle(member) => format!("/v1/{member}/settle"),
            Self::ActiveWriteCommit => "/v1/active_write/commit".into(),
            Self::ActiveWriteRollback => "/v1/active_write/rollback".into(),
            member => format!("/v1/{}", member.operation()),
        }
    }

    /// The route that calls a handoff member.
    pub const fn of_handoff(member: HandoffMember) -> Self {
        match member {
            HandoffMember::Provision => Self::Provision,
            HandoffMember::Activate => Self::Activate,
            HandoffMember::Snapshot => Self::Snapshot,
            HandoffMember::CloneSnapshot => Self::CloneSnapshot,
            HandoffMember::Release => Self::Release,
            HandoffMember::Resume => Self::Resume,
        }
    }

    /// The route at `path`.
    pub fn from_path(path: &str) -> Option<Self> {
        static ROUTES: LazyLock<HashMap<&'static str, Route>> = LazyLock::new(|| {
            Route::ALL
                .into_iter()
                .map(|route| (route.path(), route))
                .collect()
        });
        ROUTES.get(path).copied()
    }

    /// Whether sending the route's request twice settles as sending it
    /// once, so a client may send it again after a connection broke with
    /// the request perhaps delivered. From the contract spec: `destroy` and
    /// `destroySnapshot` are "Idempotent teardown", and "destroy,
    /// destroySnapshot, and rollback may all be invoked again after a lost
    /// response; each must settle the same way" (a handoff's rollback
    /// route runs the compensation at most once and answers `null` when
    /// asked again); `capabilities` is "unchanging for this revision" and
    /// the reads (`readFile`, `readFiles`, `listDir`, `listProjectDir`)
    /// change nothing. Every other route is not: the spec does not say it
    /// is, and most allocate, run or write.
    pub const fn idempotent(self) -> bool {
        matches!(
            self,
            Self::Capabilities
                | Self::ReadFile
                | Self::ReadFiles
                | Self::ListDir
                | Self::ListProjectDir
                | Self::Destroy
                | Self::DestroySnapshot
                | Self::HandoffRollback(_)
        )
    }

    /// The largest request body the route accepts, in bytes: the
    /// contract's bounds in base64 JSON, plus room for the envelope.
    /// `write_file` carries one file (16 MiB), `execute` its stdin (16 MiB),
    /// `begin_active_write` a batch (128 MiB); every other request is small.
    pub const fn max_body_bytes(self) -> u64 {
        const ENVELOPE: u64 = 4 * MIB;
        const fn base64(bytes: u64) -> u64 {
            bytes.div_ceil(3) * 4
        }
        match self {
            Self::WriteFile | Self::Execute => base64(MAX_FILE_CONTENT_BYTES) + ENVELOPE,
            Self::BeginActiveWrite => base64(MAX_ACTIVE_WRITE_AGGREGATE_BYTES) + 2 * ENVELOPE,
            _ => ENVELOPE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_has_one_path_and_back() {
        for route in Route::ALL {
            assert_eq!(Route::from_path(route.path()), Some(route));
        }
        assert_eq!(Route::from_path("/v1/nope"), None);
        let mut paths: Vec<_> = Route::ALL.iter().map(|r| r.path()).collect();
        paths.sort();
        paths.dedup();
        assert_eq!(paths.len(), Route::ALL.len());
        assert_eq!(Route::ListProjectDir.path(), "/v1/list_project_dir");
        assert_eq!(
            Route::HandoffSettle(HandoffMember::CloneSnapshot).path(),
            "/v1/clone_snapshot/settle"
        );
        assert_eq!(Route::ActiveWriteCommit.path(), "/v1/active_write/commit");
    }

    // Every member has its route, named as the member, in table order; no
    // route is without a path.
    #[test]
    fn the_member_routes_are_the_operations_table() {
        assert_eq!(Route::ALL.len(), 32);
        for (route, member) in Route::ALL.iter().zip(Operation::MEMBERS) {
            assert_eq!(route.operation(), member);
            assert_eq!(route.path(), format!("/v1/{member}"));
        }
        assert!(Route::ALL.iter().all(|r| !r.path().is_empty()));
        assert_eq!(
            Route::ALL[Operation::MEMBERS.len()..Operation::MEMBERS.len() + 6],
            HandoffMember::ALL.map(Route::HandoffRollback)
        );
        assert_eq!(Route::ALL[31], Route::ActiveWriteRollback);
        for member in HandoffMember::ALL {
            assert_eq!(Route::of_handoff(member).operation(), member.member());
        }
    }

    // Contract spec, "Bounds": any file content is up to 16 MiB (and corral
    // mirrors the 128 MiB readFiles aggregate for an active-write batch);
    // the wire's body bounds admit the largest legal request in base64.
    #[test]
    fn bulk_routes_admit_their_largest_legal_body() {
        assert!(Route::WriteFile.max_body_bytes() > MAX_FILE_CONTENT_BYTES / 3 * 4);
        assert!(
            Route::BeginActiveWrite.max_body_bytes() > MAX_ACTIVE_WRITE_AGGREGATE_BYTES / 3 * 4
        );
        assert_eq!(Route::Destroy.max_body_bytes(), 4 * MIB);
    }

    // Contract spec, "The operations": `destroy` and `destroySnapshot` are
    // "Idempotent teardown"; "Allocation handoff": "destroy,
    // destroySnapshot, and rollback may all be invoked again after a lost
    // response; each must settle the same way". `capabilities` and the
    // reads change nothing. Every other route is sent once.
    #[test]
    fn the_idempotent_routes() {
        let idempotent: Vec<Route> = Route::ALL.into_iter().filter(|r| r.idempotent()).collect();
        let mut expected = vec![
            Route::Capabilities,
            Route::ReadFile,
            Route::ReadFiles,
            Route::ListDir,
            Route::ListProjectDir,
            Route::Destroy,
            Route::DestroySnapshot,
        ];
        expected.extend(HandoffMember::ALL.map(Route::HandoffRollback));
        assert_eq!(idempotent, expected);
        for once in [
            Route::Provision,
            Route::Execute,
            Route::WriteFile,
            Route::BeginActiveWrite,
            Route::Cleanup,
            Route::ActiveWriteCommit,
            Route::ActiveWriteRollback,
            Route::HandoffSettle(HandoffMember::Provision),
        ] {
            assert!(!once.idempotent(), "{once:?}");
        }
    }
}
