//! What a suite's case is, whatever the suite: [`SuiteCase`], implemented
//! by the contract's [`ConformanceCase`] and by the SDK's
//! [`SdkCase`](crate::sdk::SdkCase). One [`Report`](crate::Report) type
//! serves both suites through it.

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::hash::Hash;

use corral_contract::{CapabilityToken, ConformanceCase, SandboxProviderCapabilities};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// A case of one of the suites: one line of its report.
pub trait SuiteCase:
    Copy + Eq + Hash + Debug + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// What a report records of the run beside the target's name and the
    /// cases, as fields of the report itself.
    type Run: Clone + Debug + Eq + Serialize + DeserializeOwned;

    /// What a report line records of the case beside its name, outcome,
    /// reason and duration, as fields of the line itself.
    type Detail: Clone + Debug + Eq + Serialize + DeserializeOwned;

    /// Every case of the suite, in its order.
    fn all() -> &'static [Self];

    /// The case's name in reports.
    fn name(self) -> &'static str;

    /// What the case's line records beside its outcome.
    fn detail(self) -> Self::Detail;

    /// The first line of a report's table, naming `target` and what
    /// matters of `run`.
    fn heading(target: &str, run: &Self::Run) -> String;
}

/// What a contract report records of its run: the envelope the target's
/// provider advertised and the tokens derived from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContractRun {
    /// The envelope the target's provider advertised.
    pub envelope: SandboxProviderCapabilities,
    /// The tokens derived from it.
    pub tokens: BTreeSet<CapabilityToken>,
}

/// What a contract report line records of its case: the tokens it
/// requires.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequiredTokens {
    /// The tokens the case requires.
    pub required: Vec<CapabilityToken>,
}

/// What a line records of a case whose suite records nothing beyond its
/// outcome (the SDK suite's).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoDetail {}

impl SuiteCase for ConformanceCase {
    type Run = ContractRun;
    type Detail = RequiredTokens;

    fn all() -> &'static [Self] {
        ConformanceCase::ALL
    }

    fn name(self) -> &'static str {
        self.as_str()
    }

    fn detail(self) -> RequiredTokens {
        RequiredTokens {
            required: self.required_tokens().to_vec(),
        }
    }

    fn heading(target: &str, run: &ContractRun) -> String {
        let tokens: Vec<&str> = run.tokens.iter().map(|t| t.as_str()).collect();
        format!(
            "conformance: target {target} (tokens: {})",
            tokens.join(", ")
        )
    }
}
