//! The registry's table, over every in-tree backend: each one opens as
//! itself, issues ids with its own prefix, and is paired with an envelope
//! its own adapter accepts; names and ids find their backend again.

use std::sync::Arc;

use corral_backend::{Backend, CreateRequest, Verified};
use corral_contract::SandboxProviderCapabilities;
use corral_registry::{
    BackendKind, BackendName, BackendVisitor, ConformanceTarget, Enveloped, OpenError,
    UnknownBackend, adapter, envelopes,
};

/// The envelope `kind` must be paired with, from what `backend` declares.
fn expected_envelope(kind: BackendKind, backend: &dyn Backend) -> SandboxProviderCapabilities {
    let declared = backend.capabilities();
    match kind {
        BackendKind::Memory => envelopes::memory(),
        BackendKind::Local => envelopes::local_for(&declared),
        BackendKind::Linux => envelopes::linux_for(&declared),
        BackendKind::Docker => envelopes::docker_for(&declared),
    }
}

/// What must hold of every in-tree backend, checked on the backend as
/// its own type: it reports its registry name, it is paired with the
/// envelope its kind's row names (`envelope`, the one
/// `OpenedBackend::envelope` gave), its own adapter accepts that envelope
/// (the adapter refuses "an envelope that overclaims the backend"), and the
/// ids it issues start with its registry prefix.
struct Holds {
    envelope: SandboxProviderCapabilities,
}

impl BackendVisitor for Holds {
    type Output = ();

    async fn visit<B: Enveloped>(self, backend: Verified<B>) {
        let kind = B::KIND;
        let verified = backend.into_shared();
        let backend = Arc::clone(verified.get());
        assert_eq!(backend.name(), kind.name());
        assert_eq!(backend.envelope(), self.envelope, "{kind}");
        assert_eq!(self.envelope, expected_envelope(kind, &*backend), "{kind}");
        if let Err(e) = adapter(&verified) {
            panic!("the adapter refused the envelope paired with {kind}: {e}");
        }
        let info = backend
            .create(CreateRequest::default())
            .await
            .unwrap_or_else(|e| panic!("creating a {kind} sandbox: {e}"));
        assert!(
            info.id.starts_with(kind.id_prefix()),
            "{kind} issued {:?}, not under {:?}",
            info.id,
            kind.id_prefix()
        );
        assert_eq!(BackendKind::issuer_of(&info.id), Some(kind));
        backend.destroy(&info.id).await.unwrap();
    }
}

#[tokio::test]
async fn every_backend_is_itself_issues_its_prefix_and_is_paired_with_an_envelope_it_accepts() {
    let mut checked = Vec::new();
    for kind in BackendKind::ALL {
        let scratch = match kind.open_scratch().await {
            Ok(scratch) => scratch,
            Err(OpenError::Unavailable { backend, why }) => {
                assert_eq!(backend, kind);
                eprintln!("skip: the {kind} backend is unavailable here: {why}");
                continue;
            }
            Err(OpenError::ScratchEngine(why)) if kind == BackendKind::Docker => {
                eprintln!("skip: no Docker Engine for the docker backend here: {why}");
                continue;
            }
            Err(e) => panic!("opening {kind}: {e}"),
        };
        let opened = scratch.backend;
        assert_eq!(opened.kind(), kind);
        let envelope = opened.envelope();
        opened.visit(Holds { envelope }).await;
        checked.push(kind);
    }
    // Memory and local run on every host.
    assert!(checked.contains(&BackendKind::Memory), "{checked:?}");
    assert!(checked.contains(&BackendKind::Local), "{checked:?}");
}

#[test]
fn names_and_prefixes_find_their_backend_and_each_is_spelled_once() {
    for kind in BackendKind::ALL {
        assert_eq!(BackendKind::from_name(kind.name()), Some(kind));
        assert_eq!(
            kind.name().parse::<BackendName>(),
            Ok(BackendName::InTree(kind))
        );
        assert_eq!(kind.to_string(), kind.name());
        let id = format!("{}0123", kind.id_prefix());
        assert_eq!(BackendKind::issuer_of(&id), Some(kind));
        for other in BackendKind::ALL.into_iter().filter(|o| *o != kind) {
            assert_ne!(kind.name(), other.name());
            assert!(
                !kind.id_prefix().starts_with(other.id_prefix()),
                "{kind}'s prefix is under {other}'s"
            );
        }
    }
    assert_eq!(BackendKind::issuer_of("abc-1"), None);
    assert_eq!(BackendKind::names(), "linux, local, memory, docker");
}

#[test]
fn the_remote_form_and_unknown_names_parse_as_the_cli_says() {
    assert_eq!(
        "remote+http://127.0.0.1:7070".parse::<BackendName>(),
        Ok(BackendName::Remote {
            endpoint: "http://127.0.0.1:7070".into()
        })
    );
    let unknown = "vmware".parse::<BackendName>().unwrap_err();
    assert_eq!(
        unknown,
        UnknownBackend {
            name: "vmware".into()
        }
    );
    assert_eq!(
        unknown.to_string(),
        "unknown backend \"vmware\"; known backends: linux, local, memory, docker, remote+http(s)://HOST:PORT"
    );
}

#[test]
fn every_backend_has_conformance_targets_and_minimal_is_the_memory_oracle() {
    for kind in BackendKind::ALL {
        let targets: Vec<_> = kind.conformance_targets().collect();
        assert!(!targets.is_empty(), "{kind} has no conformance target");
        assert!(targets.iter().all(|t| t.backend() == kind));
    }
    assert_eq!(
        BackendKind::Memory
            .conformance_targets()
            .collect::<Vec<_>>(),
        [ConformanceTarget::Memory, ConformanceTarget::Minimal]
    );
    assert_eq!(
        ConformanceTarget::ALL.map(ConformanceTarget::name),
        ["memory", "minimal", "local", "linux", "docker"]
    );
    for target in ConformanceTarget::ALL {
        assert_eq!(ConformanceTarget::from_name(target.name()), Some(target));
    }
}

#[test]
fn only_memory_sandboxes_die_with_their_process() {
    for kind in BackendKind::ALL {
        assert_eq!(
            kind.outlives_its_process(),
            kind != BackendKind::Memory,
            "{kind}"
        );
    }
}
