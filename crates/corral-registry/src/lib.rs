//! # corral-registry
//!
//! The one registry of corral's backends. [`BackendKind`] is the closed
//! list of the in-tree backends, and its table says, for each one:
//!
//! | row | what |
//! |---|---|
//! | [`BackendKind::name`] | the name a user types, and the backend's own |
//! | [`BackendKind::id_prefix`] | what its sandbox ids start with (the backend crate's constant), so the CLI finds a sandbox's backend from its id ([`BackendKind::issuer_of`]) |
//! | [`BackendKind::open`] | its opener on the user's state directory; linux refuses with the host's reason where it cannot run |
//! | [`Enveloped::envelope`] | the envelope the contract adapter presents it under ([`envelopes`]) |
//! | [`BackendKind::conformance_targets`] | the names of its conformance targets ([`ConformanceTarget`]) |
//! | [`BackendKind::open_scratch`] | its bench opener: the backend holding nothing of the user's |
//!
//! Beside them, [`BackendName`] parses what `--backend NAME` names — an
//! in-tree backend or `remote+http(s)://HOST:PORT`, a `corral serve`
//! reached over corral-wire ([`open_remote`]) — and [`open_default`]
//! holds the default rule: `linux` wherever this host allows it, else
//! `local`, with the reason.
//!
//! A new backend is one more [`BackendKind`] variant and its row; every
//! `match` on the kind (here, and wherever a caller decides something per
//! backend) has no wildcard, so the compiler names each place still to
//! decide.
//!
//! ```
//! use corral_registry::{BackendKind, BackendName};
//!
//! assert_eq!(BackendKind::issuer_of("mem-1"), Some(BackendKind::Memory));
//! let name: BackendName = "local".parse()?;
//! assert_eq!(name, BackendName::InTree(BackendKind::Local));
//! # Ok::<(), corral_registry::UnknownBackend>(())
//! ```

pub mod envelopes;
mod kind;
mod name;
mod open;
mod opened;
mod scratch;
mod target;

pub use kind::BackendKind;
pub use name::{BackendName, UnknownBackend};
pub use open::{
    DOCKER_IMAGE_ENV, OpenError, REMOTE_PREFIX, TOKEN_FILE_ENV, docker_image, open_default,
    open_remote,
};
pub use opened::{BackendVisitor, Enveloped, OpenedBackend, adapter};
pub use scratch::Scratch;
pub use target::ConformanceTarget;
