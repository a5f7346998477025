//! Hostile environments, labels and keys a client may send to the backend
//! routes, and what the server's decoder makes of each: refused at decode,
//! before any backend sees the request, in one line that names the field
//! and the rule. The wire shape of a valid one is a plain JSON object.

use corral_backend::CreateRequest;

use super::decode;
use crate::protocol::backend::{ExecBody, KeyBody, LabelsBody};

/// An `exec` body whose `env` is `env` (raw JSON).
fn exec_body(env: &str) -> String {
    format!(
        r#"{{"id":"s","command":{{"argv":["true"]}},"cwd":null,"env":{env},"stdin":null,"timeout_ms":null,"activity_path":null}}"#
    )
}

/// Refuses `body` as `T` and returns the one line.
fn refused<T: serde::de::DeserializeOwned>(attack: &str, body: &str) -> String {
    let Err(malformed) = decode::<T>(body.as_bytes()) else {
        panic!("{attack}: accepted {body}");
    };
    let line = malformed.line();
    assert!(!line.contains(['\n', '\r']), "{attack}: {line:?}");
    line
}

/// Rule (bounds table): environment keys match `^[A-Za-z_][A-Za-z0-9_]*$`,
/// values carry no NUL, a key appears once.
#[test]
fn hostile_environment_keys_are_refused_at_decode_in_one_line() {
    let rows = [
        ("empty key", r#"{"":"x"}"#, "does not match"),
        ("'=' in the key", r#"{"A=B":"x"}"#, "does not match"),
        ("NUL in the key", r#"{"A\u0000":"x"}"#, "does not match"),
        ("a leading digit", r#"{"1A":"x"}"#, "does not match"),
        ("a dash", r#"{"A-B":"x"}"#, "does not match"),
        (
            "a line break in the key",
            r#"{"A\nB":"x"}"#,
            "does not match",
        ),
        ("a non-ASCII key", r#"{"É":"x"}"#, "does not match"),
        ("NUL in the value", r#"{"A":"x\u0000y"}"#, "contains NUL"),
        ("a key twice", r#"{"A":"1","A":"2"}"#, "duplicated key"),
        ("a value that is not a string", r#"{"A":1}"#, "invalid type"),
    ];
    for (attack, env, rule) in rows {
        let line = refused::<ExecBody>(attack, &exec_body(env));
        assert!(line.starts_with("env"), "{attack}: {line}");
        assert!(line.contains(rule), "{attack}: {line}");
        let create = format!(
            r#"{{"size":{{}},"env":{env},"network":{{"mode":"default"}},"ports":[],"limits":{{}},"labels":{{}},"snapshot":null,"idle_timeout":null,"timeout":null,"key":null,"image":null}}"#
        );
        let line = refused::<CreateRequest>(attack, &create);
        assert!(line.starts_with("env"), "{attack}: {line}");
        assert!(line.contains(rule), "{attack}: {line}");
    }
}

/// Rule: a label key is 1-128 bytes of `[A-Za-z0-9._/-]`, a value at most
/// 1024 bytes without control characters, a key once.
#[test]
fn hostile_labels_are_refused_at_decode_in_one_line() {
    let long_key = format!(r#"{{"{}":"x"}}"#, "k".repeat(129));
    let long_value = format!(r#"{{"k":"{}"}}"#, "v".repeat(1025));
    let rows = [
        ("empty key", r#"{"":"x"}"#.to_string(), "label key"),
        (
            "a space in the key",
            r#"{"a b":"x"}"#.to_string(),
            "label key",
        ),
        ("'=' in the key", r#"{"a=b":"x"}"#.to_string(), "label key"),
        ("an over-long key", long_key, "label key"),
        (
            "a line break in the value",
            r#"{"k":"a\nb"}"#.to_string(),
            "value",
        ),
        ("an over-long value", long_value, "value"),
        (
            "a key twice",
            r#"{"k":"1","k":"2"}"#.to_string(),
            "appears twice",
        ),
    ];
    for (attack, labels, rule) in rows {
        let line = refused::<LabelsBody>(attack, &format!(r#"{{"labels":{labels}}}"#));
        assert!(line.starts_with("labels"), "{attack}: {line}");
        assert!(line.contains(rule), "{attack}: {line}");
    }
}

/// Rule: a get-or-create key is 1-256 bytes with no control character.
#[test]
fn hostile_keys_are_refused_at_decode_in_one_line() {
    let long = format!(r#""{}""#, "k".repeat(257));
    let rows = [
        ("an empty key", r#""""#.to_string()),
        ("an over-long key", long),
        ("NUL in the key", r#""a\u0000b""#.to_string()),
        ("a line break in the key", r#""a\nb""#.to_string()),
        ("an escape in the key", r#""\u001b[2J""#.to_string()),
        ("DEL in the key", r#""a\u007fb""#.to_string()),
    ];
    for (attack, key) in rows {
        let line = refused::<KeyBody>(attack, &format!(r#"{{"key":{key}}}"#));
        assert!(line.starts_with("key"), "{attack}: {line}");
        assert!(line.contains("1-256"), "{attack}: {line}");
    }
    let Ok(decoded) = decode::<KeyBody>(br#"{"key":"team/a key \u00e9"}"#) else {
        panic!("refused a valid key");
    };
    assert_eq!(decoded.key.as_str(), "team/a key \u{e9}");
}

/// The environment's wire shape did not change: a plain object of strings.
#[test]
fn a_valid_environment_is_a_plain_object_on_the_wire() {
    let body = exec_body(r#"{"LANG":"C.UTF-8","_A1":""}"#);
    let Ok(decoded) = decode::<ExecBody>(body.as_bytes()) else {
        panic!("refused {body}");
    };
    assert_eq!(decoded.env.get("LANG"), Some("C.UTF-8"));
    let json = serde_json::to_value(&decoded).unwrap();
    assert_eq!(
        json["env"],
        serde_json::json!({"LANG": "C.UTF-8", "_A1": ""})
    );
}

/// Rule: a command is checked where it is made, and decoding makes it: an
/// empty argv or program, a blank script, a NUL byte, too many or too long
/// arguments are refused at decode, in one line naming the command and the
/// rule, before any backend sees the run.
#[test]
fn malformed_commands_are_refused_at_decode_in_one_line() {
    let body = |command: &str| {
        format!(
            r#"{{"id":"s","command":{command},"cwd":null,"env":{{}},"stdin":null,"timeout_ms":null,"activity_path":null}}"#
        )
    };
    let many = format!(r#"{{"argv":[{}]}}"#, vec![r#""x""#; 257].join(","));
    let long = format!(r#"{{"argv":["echo","{}"]}}"#, "x".repeat(65_537));
    let rows = [
        (
            "an empty argv",
            r#"{"argv":[]}"#.to_string(),
            "argv is empty",
        ),
        (
            "an empty program",
            r#"{"argv":[""]}"#.to_string(),
            "argv[0] is empty",
        ),
        (
            "a NUL byte",
            r#"{"argv":["echo","a\u0000b"]}"#.to_string(),
            "argument 1 contains a NUL byte",
        ),
        ("257 arguments", many, "257 arguments, at most 256"),
        ("an over-long argument", long, "argument 1 is 65537 bytes"),
        (
            "a blank script",
            r#"{"shell":" \n"}"#.to_string(),
            "shell script is empty",
        ),
    ];
    for (attack, command, rule) in rows {
        let line = refused::<ExecBody>(attack, &body(&command));
        assert!(line.starts_with("command"), "{attack}: {line}");
        assert!(line.contains(rule), "{attack}: {line}");
    }
    let Ok(decoded) = decode::<ExecBody>(body(r#"{"shell":"echo hi"}"#).as_bytes()) else {
        panic!("refused a valid command");
    };
    assert_eq!(
        serde_json::to_value(&decoded).unwrap()["command"],
        serde_json::json!({"shell": "echo hi"})
    );
}
