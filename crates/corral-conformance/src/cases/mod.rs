//! The nine cases of the contract's conformance table, one file each.
//!
//! A case is a [`ConformanceCase`] (its name and the tokens it requires come
//! from the contract crate) plus the `run` in its file, which drives a
//! [`ContractScope`](crate::scope::contract::ContractScope) — a runtime over a fresh provider of the target — through the
//! scenario and fails with one precise line.

mod allowlist_egress;
mod checkpoint_clone;
mod durable_round_trip;
mod none_egress;
mod orphan_reclaim;
mod pause_pinning;
mod stage_git_project;
mod stage_seal_execute;
mod zdr_release;

use corral_contract::ConformanceCase;

use crate::failure::Failure;
use crate::scope::contract::ContractScope;
use crate::target::ConformanceTarget;

/// Runs `case` in `scope`.
pub(crate) async fn run<T: ConformanceTarget>(
    case: ConformanceCase,
    scope: &mut ContractScope<'_, T>,
) -> Result<(), Failure> {
    match case {
        ConformanceCase::StageSealExecute => stage_seal_execute::run(scope).await,
        ConformanceCase::StageGitProject => stage_git_project::run(scope).await,
        ConformanceCase::CheckpointClone => checkpoint_clone::run(scope).await,
        ConformanceCase::AllowlistEgress => allowlist_egress::run(scope).await,
        ConformanceCase::DurableRoundTrip => durable_round_trip::run(scope).await,
        ConformanceCase::NoneEgress => none_egress::run(scope).await,
        ConformanceCase::ZdrRelease => zdr_release::run(scope).await,
        ConformanceCase::OrphanReclaim => orphan_reclaim::run(scope).await,
        ConformanceCase::PausePinning => pause_pinning::run(scope).await,
    }
}
