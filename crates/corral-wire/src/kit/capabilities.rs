//! Golden vectors of the capabilities envelope: a valid one and invalid
//! variations, each with the disposition the envelope's decoder gives it.

use corral_contract::SandboxProviderCapabilities;
use serde_json::{Value, json};

use super::KitError;
use super::disposition;
use super::examples;

/// The `capabilities.json` vector file.
pub(super) fn vectors() -> Result<Value, KitError> {
    let valid = serde_json::to_value(examples::capabilities()?).map_err(KitError::Json)?;
    let mut variations: Vec<(&str, Value)> = Vec::new();
    if let Value::Object(map) = &valid {
        let mut edit =
            |name: &'static str, change: &dyn Fn(&mut serde_json::Map<String, Value>)| {
                let mut copy = map.clone();
                change(&mut copy);
                variations.push((name, Value::Object(copy)));
            };
        edit("max_mounts_missing", &|m| {
            m.remove("max_mounts");
        });
        edit("max_mounts_zero", &|m| {
            m.insert("max_mounts".into(), json!(0));
        });
        edit("clone_without_snapshots", &|m| {
            m.insert("snapshots".into(), json!(false));
        });
        edit("placement_unknown", &|m| {
            m.insert("placement".into(), json!("orbit"));
        });
        edit("unknown_member", &|m| {
            m.insert("surplus".into(), json!(true));
        });
    }
    let mut examples = vec![json!({
        "name": "valid",
        "envelope": valid,
        "disposition": disposition::of_value::<SandboxProviderCapabilities>(&valid),
    })];
    for (name, envelope) in variations {
        examples.push(json!({
            "name": name,
            "envelope": envelope,
            "disposition": disposition::of_value::<SandboxProviderCapabilities>(&envelope),
        }));
    }
    Ok(json!({
        "route": crate::protocol::Route::Capabilities.path(),
        "result_type": "SandboxProviderCapabilities",
        "examples": examples,
        "result": { "type": "SandboxProviderCapabilities", "body": valid },
    }))
}
