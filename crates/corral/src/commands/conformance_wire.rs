//! `corral conformance --provider http(s)://HOST:PORT --token-file FILE`: the
//! contract's nine cases against any corral-wire provider (a `corral serve`,
//! or another implementation of the protocol), through `WireProvider` under
//! the corral runtime.
//!
//! The provider's envelope decides which cases run; what the suite cannot
//! observe on another machine is not assumed: the egress cases need
//! `--egress-allowed HOST:PORT` and `--egress-denied HOST:PORT`, two
//! destinations the remote sandbox can and must not reach, and fail without
//! them when the envelope declares a network restriction. Leak checks need a
//! view of the backend, which a remote provider does not give, so they are
//! left to the server's operator.
//!
//! `--json FILE` writes the report; with `--sign KEYFILE` it writes signed
//! [`Evidence`] instead (the report, the provider, the contract revision,
//! the signer's public key and an ed25519 signature), which `corral
//! evidence verify` checks.

use std::path::Path;

use corral_conformance::{
    ConformanceTarget, EgressFixture, EgressProbe, Evidence, SecretKey, Suite, Target, run_observed,
};
use corral_contract::{FailureReason, HostPort, SandboxError};
use corral_wire::protocol::CONTRACT_REVISION;
use corral_wire::{Endpoint, Token, WireError, WireProvider};

use crate::args::ConformanceArgs;
use crate::commands::conformance::{LiveTable, emit};
use crate::error::{CliError, CliResult, EXIT_FAILURE};

/// The name remote targets go by in reports (the evidence names the
/// provider's address).
const TARGET_NAME: &str = "remote";

/// A `WireProvider` as a conformance target.
struct RemoteTarget {
    client: WireProvider,
    egress: Option<EgressFixture>,
}

impl Target for RemoteTarget {
    fn name(&self) -> String {
        TARGET_NAME.into()
    }
}

impl ConformanceTarget for RemoteTarget {
    type Provider = WireProvider;

    fn provider(&self) -> Result<WireProvider, SandboxError> {
        Ok(self.client.clone())
    }

    fn egress(&self) -> Option<EgressFixture> {
        self.egress.clone()
    }
}

/// Runs `corral conformance`: against the provider when `--provider` is
/// given, otherwise against the backend; the flags that only make sense
/// with a provider are refused without one.
pub async fn dispatch(a: ConformanceArgs) -> CliResult {
    let Some(provider) = a.provider.clone() else {
        let stray = [
            ("--token-file", a.token_file.is_some()),
            ("--sign", a.sign.is_some()),
        ];
        if let Some((flag, _)) = stray.iter().find(|(_, given)| *given) {
            return Err(CliError::usage(format!(
                "{flag} goes with --provider http://HOST:PORT"
            )));
        }
        let egress = egress_fixture(a.egress_allowed.as_deref(), a.egress_denied.as_deref())?;
        return crate::commands::conformance::conformance(a.backend, a.suite, a.json, egress).await;
    };
    conformance_wire(&provider, a).await
}

/// Runs `corral conformance --provider`: the contract suite against
/// `provider` (`http(s)://HOST:PORT`), with the rest of `args` (`--backend`
/// is not read).
pub async fn conformance_wire(provider: &str, args: ConformanceArgs) -> CliResult {
    if let Some(suite) = args.suite.as_deref()
        && suite != Suite::Contract.as_str()
    {
        return Err(CliError::usage(format!(
            "--provider runs the contract suite only, not {suite:?}; the SDK suite runs with --backend"
        )));
    }
    let endpoint =
        Endpoint::parse(provider).map_err(|e| CliError::usage(format!("--provider: {e}")))?;
    let token = read_token(args.token_file.as_deref())?;
    let key = match &args.sign {
        Some(path) => {
            if args.json.is_none() {
                return Err(CliError::usage(
                    "--sign needs --json FILE to write the signed evidence to",
                ));
            }
            Some(SecretKey::from_file(path).map_err(|e| CliError::usage(format!("--sign: {e}")))?)
        }
        None => None,
    };
    let egress = egress_fixture(
        args.egress_allowed.as_deref(),
        args.egress_denied.as_deref(),
    )?;
    let client = WireProvider::connect(&endpoint.to_string(), token)
        .await
        .map_err(|e| connect_error(&endpoint, e))?;
    let target = RemoteTarget { client, egress };
    let mut live = LiveTable::for_json(args.json.as_deref());
    let report = run_observed(&target, &mut live)
        .await
        .map_err(|e| CliError::failure("provider", format!("provider {endpoint}: {e}")))?;
    emit(&report.summary(), args.json.as_deref(), || match &key {
        Some(key) => Evidence::sign(&report, &endpoint.to_string(), CONTRACT_REVISION, key)
            .and_then(|e| e.to_json())
            .map_err(|e| CliError::failure("io", e.to_string())),
        None => report
            .to_json()
            .map_err(|e| CliError::failure("io", format!("encoding the report as JSON: {e}"))),
    })?;
    Ok(if report.succeeded() { 0 } else { EXIT_FAILURE })
}

/// The token in `path`: the file must exist and hold a token.
fn read_token(path: Option<&Path>) -> Result<Token, CliError> {
    let Some(path) = path else {
        return Err(CliError::usage(
            "--provider needs --token-file FILE (the bearer token the server admits)",
        ));
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError::usage(format!(
            "--token-file {}: cannot read it: {e}",
            path.display()
        ))
    })?;
    if text.trim().is_empty() {
        return Err(CliError::usage(format!(
            "--token-file {} is empty",
            path.display()
        )));
    }
    Token::new(text.trim())
        .map_err(|e| CliError::usage(format!("--token-file {}: {e}", path.display())))
}

/// The egress fixture from `--egress-allowed` and `--egress-denied`: both
/// or neither.
pub(crate) fn egress_fixture(
    allowed: Option<&str>,
    denied: Option<&str>,
) -> Result<Option<EgressFixture>, CliError> {
    let parse = |flag: &str, text: &str| {
        HostPort::new(text).map_err(|e| CliError::usage(format!("{flag} {text:?}: {e}")))
    };
    match (allowed, denied) {
        (None, None) => Ok(None),
        (Some(allowed), Some(denied)) => Ok(Some(EgressFixture {
            allowed: parse("--egress-allowed", allowed)?,
            denied: parse("--egress-denied", denied)?,
            probe: EgressProbe::Curl,
        })),
        _ => Err(CliError::usage(
            "--egress-allowed and --egress-denied go together: name both destinations or neither",
        )),
    }
}

/// A refused connection as one line: `[auth]` when the server refused the
/// token, `[tls]` when its certificate (or `CORRAL_CA_FILE`) was,
/// `[unavailable]` otherwise.
fn connect_error(endpoint: &Endpoint, e: WireError) -> CliError {
    match &e {
        WireError::Capabilities {
            error:
                SandboxError::SandboxOperationFailed {
                    reason: FailureReason::PermissionDenied,
                    ..
                },
            ..
        } => CliError::failure("auth", format!("{endpoint} refused the token: {e}")),
        WireError::Tls { .. } | WireError::Trust { .. } => CliError::failure("tls", e.to_string()),
        WireError::Capabilities { .. } | WireError::Endpoint(_) => {
            CliError::failure("unavailable", e.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(provider: &str) -> (&str, ConformanceArgs) {
        (provider, ConformanceArgs::default())
    }

    #[tokio::test]
    async fn bad_input_is_a_one_line_usage_error() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty");
        std::fs::write(&empty, "\n").unwrap();
        let missing = dir.path().join("missing");
        let cases = [
            (
                wire("ftp://x:1"),
                "--provider: endpoint \"ftp://x:1\": only http://HOST:PORT or https://HOST:PORT is supported",
            ),
            (
                wire("http://127.0.0.1:9"),
                "--provider needs --token-file FILE (the bearer token the server admits)",
            ),
            (
                (
                    "http://127.0.0.1:9",
                    ConformanceArgs {
                        token_file: Some(empty.clone()),
                        ..ConformanceArgs::default()
                    },
                ),
                &format!("--token-file {} is empty", empty.display()),
            ),
            (
                (
                    "http://127.0.0.1:9",
                    ConformanceArgs {
                        suite: Some("sdk".into()),
                        ..ConformanceArgs::default()
                    },
                ),
                "--provider runs the contract suite only, not \"sdk\"; the SDK suite runs with --backend",
            ),
        ];
        for ((provider, args), message) in cases {
            let e = conformance_wire(provider, args).await.unwrap_err();
            assert_eq!(e.message, message);
            assert_eq!(e.exit, crate::error::EXIT_USAGE);
        }
        let e = conformance_wire(
            "http://127.0.0.1:9",
            ConformanceArgs {
                token_file: Some(missing.clone()),
                ..ConformanceArgs::default()
            },
        )
        .await
        .unwrap_err();
        assert!(
            e.message.starts_with(&format!(
                "--token-file {}: cannot read it: ",
                missing.display()
            )),
            "{e}"
        );
    }

    #[test]
    fn the_egress_destinations_go_together() {
        assert_eq!(egress_fixture(None, None).unwrap(), None);
        let fixture = egress_fixture(Some("a.test:80"), Some("b.test:80"))
            .unwrap()
            .unwrap();
        assert_eq!(fixture.allowed.to_string(), "a.test:80");
        let e = egress_fixture(Some("a.test:80"), None).unwrap_err();
        assert!(e.message.contains("go together"), "{e}");
        let e = egress_fixture(Some("nope"), Some("b.test:80")).unwrap_err();
        assert!(e.message.starts_with("--egress-allowed \"nope\": "), "{e}");
    }
}
