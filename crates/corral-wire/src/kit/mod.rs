//! The author kit: everything a writer of a provider or a client in another
//! language needs to check their JSON against corral, generated from the
//! Rust types so it cannot drift from them.
//!
//! - `schemas/<Type>.json`: JSON Schemas of the capabilities envelope, every
//!   request and result of the unary routes, the contract error and the
//!   `openProcess` control frame.
//! - `vectors/<route>.json`: for every unary route a valid body and invalid
//!   variations; `vectors/capabilities.json`, `vectors/frames.json`
//!   likewise. Each example carries its disposition, computed by running
//!   the decoder the server runs: `accepted`, or `refused` with the field
//!   the refusal names and the decoder's message.
//! - `README.md`: the contract revision and how to use the kit.
//!
//! [`write()`] generates the kit into a directory; [`check()`] compares a
//! directory with what would be generated and lists the differences.

mod capabilities;
pub mod decode;
mod disposition;
mod examples;
mod frames;
mod readme;
mod requests;
mod results;
mod schemas;

use std::fmt;
use std::path::{Path, PathBuf};

use corral_contract::InvalidValue;
use serde_json::Value;

/// The sub-directories of a kit whose `*.json` files are all generated.
const GENERATED_DIRS: [&str; 2] = ["schemas", "vectors"];

/// One generated file: its path relative to the kit directory and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KitFile {
    /// The path under the kit directory (`schemas/ExecuteRequest.json`).
    pub path: PathBuf,
    /// The exact contents (UTF-8, ends with a newline).
    pub contents: String,
}

/// Why the kit could not be generated, written or read.
#[derive(Debug, thiserror::Error)]
pub enum KitError {
    /// An example value was refused by the contract's own constructors.
    #[error("kit example refused by the contract: {0}")]
    Example(#[from] InvalidValue),
    /// A value could not be rendered as JSON.
    #[error("kit: cannot render JSON: {0}")]
    Json(serde_json::Error),
    /// A file or directory could not be read or written.
    #[error("kit: {path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// How a directory differs from the generated kit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference {
    /// A generated file is absent from the directory.
    Missing(PathBuf),
    /// The file's contents differ from the generated ones.
    Changed(PathBuf),
    /// A `*.json` file under `schemas/` or `vectors/` that is not generated.
    Unexpected(PathBuf),
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing(p) => write!(f, "missing: {}", p.display()),
            Self::Changed(p) => write!(f, "changed: {}", p.display()),
            Self::Unexpected(p) => write!(f, "not generated: {}", p.display()),
        }
    }
}

/// Renders a JSON value deterministically: keys sorted at every level,
/// two-space indentation, a trailing newline.
fn render(value: &Value) -> Result<String, KitError> {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&map[k])))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    let mut text = serde_json::to_string_pretty(&sorted(value)).map_err(KitError::Json)?;
    text.push('\n');
    Ok(text)
}

fn file(path: impl Into<PathBuf>, value: &Value) -> Result<KitFile, KitError> {
    Ok(KitFile {
        path: path.into(),
        contents: render(value)?,
    })
}

/// Generates the whole kit, in a stable order.
pub fn generate() -> Result<Vec<KitFile>, KitError> {
    let mut files = Vec::new();
    for (name, schema) in schemas::schemas() {
        files.push(file(
            Path::new("schemas").join(format!("{name}.json")),
            schema.as_value(),
        )?);
    }
    files.push(file(
        "vectors/capabilities.json",
        &capabilities::vectors()?,
    )?);
    for (name, vectors) in requests::vectors()? {
        files.push(file(
            Path::new("vectors").join(format!("{name}.json")),
            &vectors,
        )?);
    }
    files.push(file("vectors/frames.json", &frames::vectors()?)?);
    let readme = readme::text(&files);
    files.push(KitFile {
        path: PathBuf::from("README.md"),
        contents: readme,
    });
    Ok(files)
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> KitError + '_ {
    move |source| KitError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The `*.json` files under the generated sub-directories of `dir`,
/// relative to `dir`.
fn existing(dir: &Path) -> Result<Vec<PathBuf>, KitError> {
    let mut found = Vec::new();
    for sub in GENERATED_DIRS {
        let path = dir.join(sub);
        let entries = match std::fs::read_dir(&path) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io(&path)(e)),
        };
        for entry in entries {
            let entry = entry.map_err(io(&path))?;
            let name = entry.file_name();
            if Path::new(&name).extension().is_some_and(|e| e == "json") {
                found.push(Path::new(sub).join(name));
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Writes the kit into `dir` (created if absent) and removes `*.json`
/// files under its `schemas/` and `vectors/` that are no longer generated.
/// Returns the paths written, relative to `dir`.
pub fn write(dir: &Path) -> Result<Vec<PathBuf>, KitError> {
    let files = generate()?;
    for sub in GENERATED_DIRS {
        let path = dir.join(sub);
        std::fs::create_dir_all(&path).map_err(io(&path))?;
    }
    for stale in existing(dir)? {
        if !files.iter().any(|f| f.path == stale) {
            let path = dir.join(&stale);
            std::fs::remove_file(&path).map_err(io(&path))?;
        }
    }
    for f in &files {
        let path = dir.join(&f.path);
        std::fs::write(&path, &f.contents).map_err(io(&path))?;
    }
    Ok(files.into_iter().map(|f| f.path).collect())
}

/// Compares `dir` with the kit that would be generated, byte for byte.
/// An empty list means no drift.
pub fn check(dir: &Path) -> Result<Vec<Difference>, KitError> {
    let files = generate()?;
    let mut differences = Vec::new();
    for f in &files {
        let path = dir.join(&f.path);
        match std::fs::read(&path) {
            Ok(bytes) if bytes == f.contents.as_bytes() => {}
            Ok(_) => differences.push(Difference::Changed(f.path.clone())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                differences.push(Difference::Missing(f.path.clone()));
            }
            Err(e) => return Err(io(&path)(e)),
        }
    }
    for extra in existing(dir)? {
        if !files.iter().any(|f| f.path == extra) {
            differences.push(Difference::Unexpected(extra));
        }
    }
    Ok(differences)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_valid_body_is_accepted_and_every_variation_refused() {
        let mut wrong = Vec::new();
        for f in generate().unwrap() {
            if !f.path.starts_with("vectors") || f.path.ends_with("frames.json") {
                continue;
            }
            let value: Value = serde_json::from_str(&f.contents).unwrap();
            for example in value["examples"].as_array().unwrap() {
                let name = example["name"].as_str().unwrap();
                let expected = if name == "valid" {
                    "accepted"
                } else {
                    "refused"
                };
                let outcome = &example["disposition"]["outcome"];
                if outcome != expected {
                    wrong.push(format!("{}: {example}", f.path.display()));
                }
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    // Every route has its vectors, once, and every route a vector file
    // names is a route: a member added to the contract's table, or a
    // settlement route without a path, fails here.
    #[test]
    fn the_vector_files_name_every_route_once() {
        let mut named = Vec::new();
        for f in generate().unwrap() {
            if !f.path.starts_with("vectors") {
                continue;
            }
            let value: Value = serde_json::from_str(&f.contents).unwrap();
            let listed = value["routes"].as_array().into_iter().flatten();
            for route in std::iter::once(&value).chain(listed) {
                if let Some(path) = route["route"].as_str() {
                    named.push(path.to_owned());
                }
            }
        }
        named.sort();
        let mut routes: Vec<String> = crate::protocol::Route::ALL
            .iter()
            .map(|r| r.path().to_owned())
            .collect();
        routes.sort();
        assert_eq!(named, routes);
    }

    #[test]
    fn rendering_sorts_keys_and_ends_with_a_newline() {
        let text = render(&serde_json::json!({"b": 1, "a": {"d": 2, "c": 3}})).unwrap();
        assert_eq!(
            text,
            "{\n  \"a\": {\n    \"c\": 3,\n    \"d\": 2\n  },\n  \"b\": 1\n}\n"
        );
    }
}
