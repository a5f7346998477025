//! `K=V` arguments.

use std::collections::BTreeMap;

use corral_backend::{Environment, Labels};

use crate::error::CliError;

/// Parses repeated `K=V` options of flag `flag` into a map; refuses a
/// missing `=`, an empty key, and a repeated key.
pub fn parse(flag: &str, items: &[String]) -> Result<BTreeMap<String, String>, CliError> {
    let mut out = BTreeMap::new();
    for item in items {
        let Some((k, v)) = item.split_once('=') else {
            return Err(CliError::usage(format!("--{flag} {item:?}: expected K=V")));
        };
        if k.is_empty() {
            return Err(CliError::usage(format!(
                "--{flag} {item:?}: the key is empty"
            )));
        }
        if out.insert(k.to_string(), v.to_string()).is_some() {
            return Err(CliError::usage(format!("--{flag}: {k:?} is given twice")));
        }
    }
    Ok(out)
}

/// Parses `--env` values into the environment requests carry: each key and
/// value is checked here, once, where it is made.
pub fn parse_env(items: &[String]) -> Result<Environment, CliError> {
    Environment::try_from(parse("env", items)?).map_err(|e| CliError::usage(format!("--env: {e}")))
}

/// Parses `--label` values into the labels requests carry: each pair is
/// checked here, once, where the set is made.
pub fn parse_labels(items: &[String]) -> Result<Labels, CliError> {
    Labels::try_from(parse("label", items)?).map_err(|e| CliError::usage(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_bad_pairs() {
        assert!(parse("env", &["A".into()]).is_err());
        assert!(parse("env", &["=x".into()]).is_err());
        assert!(parse("env", &["A=1".into(), "A=2".into()]).is_err());
        assert_eq!(parse("env", &["A=b=c".into()]).unwrap()["A"], "b=c");
        assert!(parse_env(&["1A=x".into()]).is_err());
    }
}
