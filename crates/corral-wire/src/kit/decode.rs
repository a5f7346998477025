//! The body decoder the server runs on every request and the kit runs on
//! every example: `serde_json` over the compact bytes, with the path of the
//! member that failed tracked by `serde_path_to_error`, so a refusal names
//! the field as the request spells it.
//!
//! Notation: member names joined by `.`, array indexes in brackets —
//! `expires_at`, `profile.digest`, `mounts[0].path`, `command.timeout_seconds`.
//! A refusal of the body as a whole (not an object, trailing bytes) names
//! no field.
//!
//! Public so that a test outside the server, such as the fuzz target of the
//! request decoders (`fuzz/`), runs exactly the decoder the server runs.

use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_path_to_error::Segment;

/// Why a body was refused: the field the refusal names and the decoder's
/// one-line message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyRefusal {
    /// The field path (see the module notes); `None` when the refusal
    /// concerns the body as a whole.
    pub field: Option<String>,
    /// The decoder's message (`serde_json`'s, with its position).
    pub message: String,
}

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Member(String),
    Index(usize),
}

/// Decodes `bytes` as `T`, exactly as `serde_json::from_slice` does
/// (trailing bytes refused), naming the failing field on refusal.
///
/// # Errors
///
/// A [`BodyRefusal`] when `bytes` is not a `T` in JSON.
pub fn decode_body<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, BodyRefusal> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    match serde_path_to_error::deserialize::<_, T>(&mut deserializer) {
        Ok(value) => match deserializer.end() {
            Ok(()) => Ok(value),
            Err(e) => Err(BodyRefusal {
                field: None,
                message: e.to_string(),
            }),
        },
        Err(e) => {
            let steps = steps(e.path());
            let message = e.into_inner().to_string();
            Err(BodyRefusal {
                field: named_field(bytes, steps, &message),
                message,
            })
        }
    }
}

fn steps(path: &serde_path_to_error::Path) -> Vec<Step> {
    path.iter()
        .map(|segment| match segment {
            Segment::Seq { index } => Step::Index(*index),
            Segment::Map { key } => Step::Member(key.clone()),
            Segment::Enum { variant } => Step::Member(variant.clone()),
            Segment::Unknown => Step::Member("?".to_owned()),
        })
        .collect()
}

fn render(steps: &[Step]) -> String {
    let mut out = String::new();
    for step in steps {
        match step {
            Step::Member(name) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(name);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// `steps` followed by `relative` (a member path as a contract refusal
/// spells it, relative to the value at `steps`).
fn joined(steps: &[Step], relative: &str) -> String {
    let base = render(steps);
    if base.is_empty() {
        relative.to_owned()
    } else {
        format!("{base}.{relative}")
    }
}

/// The field a refusal names, from where the decoder stopped (`steps`) and
/// its message:
///
/// - serde's `missing field `x`` names `x` inside the object at `steps`;
///   `unknown field` and `duplicate field` name the member itself;
/// - a contract refusal (`name: value rule`) of a value names the value by
///   its type (`timestamp`, `path`, `digest`) or by its member: the field is
///   where the decoder stopped (`expires_at`, `mounts[0].path`);
/// - a contract refusal of an object's cross-field rule names a member
///   relative to that object (`files[0].path`, `network.destinations`): it
///   is appended to the object's path (or replaces its last step when it
///   starts with that step's name);
/// - any other refusal (a wrong JSON type, an unknown variant) names where
///   the decoder stopped, or nothing at the top level.
fn named_field(bytes: &[u8], mut steps: Vec<Step>, message: &str) -> Option<String> {
    let core = match message.rfind(" at line ") {
        Some(at) => &message[..at],
        None => message,
    };
    if let Some(name) = quoted(core, "missing field `") {
        return Some(joined(&steps, name));
    }
    for lead in ["unknown field `", "duplicate field `"] {
        if let Some(name) = quoted(core, lead) {
            if steps.last() == Some(&Step::Member(name.to_owned())) {
                steps.pop();
            }
            return Some(joined(&steps, name));
        }
    }
    let at = (!steps.is_empty()).then(|| render(&steps));
    let Some(name) = contract_field(core) else {
        return at;
    };
    if name.contains(' ') {
        // A type's name (`enforcement level`): the value where it stopped.
        return at;
    }
    if steps.is_empty() {
        return Some(name.to_owned());
    }
    if let Some(Step::Member(last)) = steps.last()
        && (name == last
            || name
                .strip_prefix(last.as_str())
                .is_some_and(|rest| rest.starts_with(['.', '['])))
    {
        steps.pop();
        return Some(joined(&steps, name));
    }
    let document: Option<Value> = serde_json::from_slice(bytes).ok();
    let object = document
        .as_ref()
        .and_then(|d| value_at(d, &steps))
        .is_some_and(Value::is_object);
    if object {
        Some(joined(&steps, name))
    } else {
        at
    }
}

fn quoted<'a>(message: &'a str, lead: &str) -> Option<&'a str> {
    message
        .strip_prefix(lead)
        .and_then(|rest| rest.split_once('`'))
        .map(|(name, _)| name)
}

/// The field a contract refusal (`InvalidValue`, `name: …`) starts with: a
/// member path (`files[0].path`, `environment.LANG`) or a type's name in
/// words (`enforcement level`). `None` for serde's own messages.
fn contract_field(message: &str) -> Option<&str> {
    let (name, _) = message.split_once(": ")?;
    if name.is_empty() || name.starts_with("invalid ") {
        return None;
    }
    let words = name.chars().all(|c| c.is_ascii_lowercase() || c == ' ');
    let path = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '[' | ']'));
    (words || path).then_some(name)
}

fn value_at<'a>(value: &'a Value, steps: &[Step]) -> Option<&'a Value> {
    steps.iter().try_fold(value, |v, step| match step {
        Step::Member(name) => v.get(name),
        Step::Index(i) => v.get(i),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use corral_contract::{ExecuteRequest, ReadFilesRequest, SandboxProvisionRequest};

    fn field<T: DeserializeOwned + std::fmt::Debug>(body: &str) -> Option<String> {
        decode_body::<T>(body.as_bytes()).unwrap_err().field
    }

    #[test]
    fn paths_join_members_with_dots_and_indexes_in_brackets() {
        let steps = vec![
            Step::Member("mounts".into()),
            Step::Index(0),
            Step::Member("path".into()),
        ];
        assert_eq!(render(&steps), "mounts[0].path");
        assert_eq!(joined(&steps[..2], "access"), "mounts[0].access");
        assert_eq!(joined(&[], "now"), "now");
    }

    #[test]
    fn serde_and_contract_messages_name_the_request_field() {
        // A leaf refused under its type's name is named by where it sits.
        assert_eq!(
            field::<ExecuteRequest>(
                r#"{"instance_id":"i","command":{"argv":["a"],"timeout_seconds":0,"output_limit_bytes":1}}"#
            )
            .as_deref(),
            Some("command.timeout_seconds")
        );
        // A missing member of a nested object.
        assert_eq!(
            field::<ExecuteRequest>(r#"{"instance_id":"i","command":{"argv":["a"]}}"#).as_deref(),
            Some("command.timeout_seconds")
        );
        // An unknown member.
        assert_eq!(
            field::<ExecuteRequest>(r#"{"surplus":1}"#).as_deref(),
            Some("surplus")
        );
        // A wrong JSON type.
        assert_eq!(
            field::<ExecuteRequest>(r#"{"instance_id":7}"#).as_deref(),
            Some("instance_id")
        );
        // A top-level cross-field rule names its member.
        assert_eq!(
            field::<ReadFilesRequest>(
                r#"{"instance_id":"i","allowed_root":"/w","files":[{"path":"/etc/x","maximum_bytes":1}],"aggregate_budget_bytes":1}"#
            )
            .as_deref(),
            Some("files[0].path")
        );
        // Not an object at all.
        assert_eq!(field::<SandboxProvisionRequest>("[]"), None);
        assert_eq!(field::<Value>("{} x"), None);
        assert_eq!(
            field::<SandboxProvisionRequest>("{}").as_deref(),
            Some("provider")
        );
    }

    #[test]
    fn contract_fields_are_told_from_serde_messages() {
        assert_eq!(contract_field(r#"path: "a" is not absolute"#), Some("path"));
        assert_eq!(
            contract_field("files[0].path: is requested twice"),
            Some("files[0].path")
        );
        assert_eq!(
            contract_field(r#"enforcement level: "x" is not one of"#),
            Some("enforcement level")
        );
        assert_eq!(
            contract_field("invalid type: string \"a\", expected u64"),
            None
        );
        assert_eq!(contract_field("unknown variant `x`, expected `a`"), None);
    }
}
