//! "`capabilities` | Advertise one honest envelope, unchanging for this
//! revision | Runtime rejects: a cross-field violation at decode."

use crate::common_runtime;
use common_runtime::*;
use corral_contract::*;
use corral_runtime::runtime::Runtime;

#[tokio::test]
async fn the_runtime_advertises_the_providers_envelope_decoded_again() {
    let rt = Runtime::new(Fake::new(full_caps())).unwrap();
    assert_eq!(rt.capabilities(), &full_caps());
    assert_eq!(rt.capabilities(), rt.provider().capabilities());
}

#[tokio::test]
async fn an_envelope_that_changes_after_construction_is_refused_before_calling_provider() {
    let mut later = full_declaration();
    later.egress_certification = EgressCertification::AdvisoryFilter;
    let fake = Fake::new(full_caps()).with_later_envelope(caps(later));
    let rt = Runtime::new(fake).unwrap();
    let id = provisioned(&rt, zdr_request()).await;
    rt.provider().switch_envelope();
    let err = rt.activate(id.clone()).await.unwrap_err();
    let (expected, actual) =
        protocol_invalid(&err, Operation::Capabilities, "egress_certification");
    assert_eq!(
        (expected.as_str(), actual.as_str()),
        ("\"kernel_enforced\"", "\"advisory_filter\"")
    );
    assert_eq!(rt.provider().log.calls(Operation::Activate), 0);
    // Teardown claims nothing and stays possible, so nothing is stranded.
    rt.destroy(id.clone()).await.unwrap();
    assert!(!rt.provider().has_instance(&id));
    // The runtime keeps advertising the envelope it decoded.
    assert_eq!(rt.capabilities(), &full_caps());
}

#[tokio::test]
async fn the_default_rollback_bound_is_the_contracts_thirty_seconds() {
    let rt = Runtime::new(Fake::new(full_caps())).unwrap();
    assert_eq!(
        rt.rollback_bound(),
        std::time::Duration::from_secs(bounds::ROLLBACK_BOUND_SECONDS)
    );
    assert_eq!(bounds::ROLLBACK_BOUND_SECONDS, 30);
}
