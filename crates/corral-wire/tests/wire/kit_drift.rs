//! The checked-in author kit (`kit/` at the repository root) is exactly what
//! the code generates: a change to a type, a schema, an example or a
//! decoder's disposition fails here until the kit is regenerated.

use std::path::Path;

use corral_wire::kit;

#[test]
fn checked_in_kit_matches_the_generated_one() {
    let checked_in = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kit");
    let differences = kit::check(&checked_in).expect("read the checked-in kit");
    let listed: Vec<String> = differences.iter().map(ToString::to_string).collect();
    assert!(
        differences.is_empty(),
        "the checked-in kit differs from the generated one ({}); run `corral kit write kit` \
         and review the diff",
        listed.join("; ")
    );
}

#[test]
fn writing_into_a_fresh_directory_then_checking_finds_no_difference_byte_for_byte() {
    let dir = std::env::temp_dir().join(format!("corral-kit-drift-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let written = kit::write(&dir).expect("write the kit");
    assert!(written.iter().any(|p| p.ends_with("frames.json")));
    let checked_in = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kit");
    for path in &written {
        let fresh = std::fs::read(dir.join(path)).unwrap();
        let theirs = std::fs::read(checked_in.join(path)).unwrap_or_default();
        assert!(
            fresh == theirs,
            "{} differs from the generated one; run `corral kit write kit`",
            path.display()
        );
    }
    assert_eq!(kit::check(&dir).unwrap(), Vec::new());
    // A stale file and an edited file are both reported.
    std::fs::write(dir.join("vectors/stale.json"), "{}\n").unwrap();
    std::fs::write(dir.join("vectors/frames.json"), "{}\n").unwrap();
    let differences = kit::check(&dir).unwrap();
    assert_eq!(
        differences,
        vec![
            kit::Difference::Changed("vectors/frames.json".into()),
            kit::Difference::Unexpected("vectors/stale.json".into()),
        ]
    );
    // Writing again repairs both.
    kit::write(&dir).unwrap();
    assert_eq!(kit::check(&dir).unwrap(), Vec::new());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A validator of the JSON Schema (draft 2020-12) keywords the kit's
/// schemas use. A keyword it does not know is an error, so a schema that
/// starts using one cannot pass unchecked.
mod schema {
    use serde_json::Value;

    /// Keywords that only annotate.
    const ANNOTATIONS: [&str; 8] = [
        "$schema",
        "$defs",
        "title",
        "description",
        "default",
        "format",
        "contentEncoding",
        "examples",
    ];

    /// The violations of `value` against `schema` (whose `$defs` are in
    /// `root`), each as `<json pointer>: <what>`.
    pub fn violations(root: &Value, schema: &Value, value: &Value, at: &str) -> Vec<String> {
        let mut out = Vec::new();
        check(root, schema, value, at, &mut out);
        out
    }

    fn type_matches(name: &str, value: &Value) -> bool {
        match name {
            "null" => value.is_null(),
            "boolean" => value.is_boolean(),
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "number" => value.is_number(),
            "integer" => {
                value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        }
    }

    fn check(root: &Value, schema: &Value, value: &Value, at: &str, out: &mut Vec<String>) {
        let map = match schema {
            Value::Bool(true) => return,
            Value::Bool(false) => return out.push(format!("{at}: no value is allowed")),
            Value::Object(map) => map,
            other => return out.push(format!("{at}: not a schema: {other}")),
        };
        for (keyword, arg) in map {
            let keyword = keyword.as_str();
            if ANNOTATIONS.contains(&keyword) {
                continue;
            }
            match keyword {
                "$ref" => {
                    let target = arg
                        .as_str()
                        .and_then(|r| r.strip_prefix('#'))
                        .and_then(|pointer| root.pointer(pointer));
                    match target {
                        Some(target) => check(root, target, value, at, out),
                        None => out.push(format!("{at}: unresolved $ref {arg}")),
                    }
                }
                "type" => {
                    let names: Vec<&str> = match arg {
                        Value::String(s) => vec![s.as_str()],
                        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                        _ => Vec::new(),
                    };
                    if !names.iter().any(|n| type_matches(n, value)) {
                        out.push(format!("{at}: {value} is not of type {arg}"));
                    }
                }
                "enum" => {
                    if !arg.as_array().is_some_and(|a| a.contains(value)) {
                        out.push(format!("{at}: {value} is not one of {arg}"));
                    }
                }
                "const" => {
                    if arg != value {
                        out.push(format!("{at}: {value} is not {arg}"));
                    }
                }
                "properties" | "required" | "additionalProperties" | "propertyNames" => {
                    if let Value::Object(object) = value {
                        object_keyword(root, map, keyword, arg, object, at, out);
                    }
                }
                "items" | "minItems" | "maxItems" | "uniqueItems" => {
                    if let Value::Array(items) = value {
                        array_keyword(root, keyword, arg, items, at, out);
                    }
                }
                "pattern" | "minLength" | "maxLength" => {
                    if let Value::String(text) = value {
                        string_keyword(keyword, arg, text, at, out);
                    }
                }
                "minimum" | "maximum" => {
                    if let (Some(bound), Some(n)) = (arg.as_f64(), value.as_f64()) {
                        let ok = if keyword == "minimum" {
                            n >= bound
                        } else {
                            n <= bound
                        };
                        if !ok {
                            out.push(format!("{at}: {n} breaks {keyword} {bound}"));
                        }
                    }
                }
                "anyOf" | "oneOf" | "allOf" => {
                    let branches = arg.as_array().map(Vec::as_slice).unwrap_or_default();
                    let passing = branches
                        .iter()
                        .filter(|b| violations(root, b, value, at).is_empty())
                        .count();
                    let ok = match keyword {
                        "anyOf" => passing >= 1,
                        "oneOf" => passing == 1,
                        _ => passing == branches.len(),
                    };
                    if !ok {
                        out.push(format!("{at}: {passing} branches of {keyword} match"));
                    }
                }
                other => out.push(format!("{at}: unknown keyword {other}")),
            }
        }
    }

    fn object_keyword(
        root: &Value,
        schema: &serde_json::Map<String, Value>,
        keyword: &str,
        arg: &Value,
        object: &serde_json::Map<String, Value>,
        at: &str,
        out: &mut Vec<String>,
    ) {
        let properties = schema.get("properties").and_then(Value::as_object);
        match keyword {
            "properties" => {
                for (name, sub) in properties.into_iter().flatten() {
                    if let Some(member) = object.get(name) {
                        check(root, sub, member, &format!("{at}/{name}"), out);
                    }
                }
            }
            "required" => {
                for name in arg
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    if !object.contains_key(name) {
                        out.push(format!("{at}: lacks required {name}"));
                    }
                }
            }
            "additionalProperties" => {
                for (name, member) in object {
                    if !properties.is_some_and(|p| p.contains_key(name)) {
                        check(root, arg, member, &format!("{at}/{name}"), out);
                    }
                }
            }
            _ => {
                for name in object.keys() {
                    check(root, arg, &Value::String(name.clone()), at, out);
                }
            }
        }
    }

    fn array_keyword(
        root: &Value,
        keyword: &str,
        arg: &Value,
        items: &[Value],
        at: &str,
        out: &mut Vec<String>,
    ) {
        let bound = arg.as_u64().unwrap_or(0) as usize;
        match keyword {
            "items" => {
                for (i, item) in items.iter().enumerate() {
                    check(root, arg, item, &format!("{at}/{i}"), out);
                }
            }
            "minItems" if items.len() < bound => out.push(format!("{at}: under {bound} items")),
            "maxItems" if items.len() > bound => out.push(format!("{at}: over {bound} items")),
            "uniqueItems" if arg == &Value::Bool(true) => {
                for (i, item) in items.iter().enumerate() {
                    if items[..i].contains(item) {
                        out.push(format!("{at}/{i}: repeats an earlier item"));
                    }
                }
            }
            _ => {}
        }
    }

    fn string_keyword(keyword: &str, arg: &Value, text: &str, at: &str, out: &mut Vec<String>) {
        let length = text.chars().count() as u64;
        match keyword {
            "pattern" => match arg.as_str().map(regex::Regex::new) {
                Some(Ok(re)) if re.is_match(text) => {}
                Some(Ok(_)) => out.push(format!("{at}: {text:?} does not match {arg}")),
                _ => out.push(format!("{at}: unusable pattern {arg}")),
            },
            "minLength" if arg.as_u64().is_some_and(|min| length < min) => {
                out.push(format!("{at}: shorter than {arg}"));
            }
            "maxLength" if arg.as_u64().is_some_and(|max| length > max) => {
                out.push(format!("{at}: longer than {arg}"));
            }
            _ => {}
        }
    }
}

fn kit_json(path: &str) -> serde_json::Value {
    let full = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../kit")
        .join(path);
    let text = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every vector file of the checked-in kit, by name.
fn vector_files() -> Vec<(String, serde_json::Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kit/vectors");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let v = kit_json(&format!("vectors/{n}"));
            (n, v)
        })
        .collect()
}

fn against(schema_name: &str, value: &serde_json::Value) -> Vec<String> {
    let schema = kit_json(&format!("schemas/{schema_name}.json"));
    schema::violations(&schema, &schema, value, "")
}

/// Every route's file carries one valid result, the reply a conforming
/// server returns, and it validates against the schema it names (a route
/// replying `null` names none).
#[test]
fn every_example_result_validates_against_its_schema() {
    let mut checked = 0;
    for (name, file) in vector_files() {
        if name == "frames.json" {
            continue;
        }
        let result = &file["result"];
        assert!(result.is_object(), "{name} has no result");
        match result["type"].as_str() {
            Some(schema_name) => {
                let violations = against(schema_name, &result["body"]);
                assert!(violations.is_empty(), "{name}: {violations:#?}");
                checked += 1;
            }
            None => assert!(
                result["body"].is_null(),
                "{name}: a result without a schema"
            ),
        }
    }
    // Every route but the null replies (write_file, destroy,
    // destroy_snapshot and the handoff settlements).
    assert_eq!(checked, 16);
}

/// The valid example of every request type validates against that type's
/// schema.
#[test]
fn every_valid_request_validates_against_its_schema() {
    for (name, file) in vector_files() {
        let Some(request_type) = file["request_type"].as_str() else {
            continue;
        };
        let valid = &file["examples"][0];
        assert_eq!(valid["name"], "valid", "{name}");
        let violations = against(request_type, &valid["body"]);
        assert!(violations.is_empty(), "{name}: {violations:#?}");
    }
}

/// The validator is not vacuous: a surplus member, a missing member, a
/// broken pattern, a value out of an enum and a number over its bound are
/// each reported.
#[test]
fn the_schema_check_reports_what_breaks_a_schema() {
    let execute = kit_json("vectors/execute.json")["result"]["body"].clone();
    let instance = kit_json("vectors/provision.json")["result"]["body"].clone();
    let cases: Vec<(&str, serde_json::Value, &str)> = vec![
        (
            "SandboxExecutionResult",
            {
                let mut v = execute.clone();
                v["surplus"] = serde_json::json!(1);
                v
            },
            "/surplus",
        ),
        (
            "SandboxExecutionResult",
            {
                let mut v = execute.clone();
                v.as_object_mut().unwrap().remove("interval");
                v
            },
            "lacks required interval",
        ),
        (
            "HandoffReply_SandboxInstance",
            {
                let mut v = instance.clone();
                v["value"]["materialization"]["image_digest"] = serde_json::json!("sha256:zz");
                v
            },
            "does not match",
        ),
        (
            "HandoffReply_SandboxInstance",
            {
                let mut v = instance.clone();
                v["value"]["state"] = serde_json::json!("paused");
                v
            },
            "is not one of",
        ),
        (
            "HandoffReply_SandboxInstance",
            {
                let mut v = instance;
                v["value"]["lease_epoch"] = serde_json::json!(9_007_199_254_740_992_u64);
                v
            },
            "breaks maximum",
        ),
    ];
    for (schema_name, value, expected) in cases {
        let violations = against(schema_name, &value);
        assert!(
            violations.iter().any(|v| v.contains(expected)),
            "{schema_name}: expected {expected:?} among {violations:#?}"
        );
    }
}
