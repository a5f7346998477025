//! A case's working context, whatever the suite: a [`Scope`] holds what the
//! case works on (its [`Subject`]) and every allocation the case received,
//! and [`Scope::finish`] gives back what is left — also after a failed or
//! timed-out case. The contract suite's subject is a runtime over a fresh
//! provider of the target ([`contract`]); the SDK suite's is a backend with
//! the run's labels (`crate::sdk::scope`).

pub(crate) mod contract;

use std::future::{Future, ready};

use crate::case::SuiteCase;
use crate::failure::Failure;

/// What one suite's cases work on: where their allocations come from, and
/// how each is given back.
pub(crate) trait Subject {
    /// The suite's case.
    type Case: SuiteCase;
    /// One thing a case allocated and must give back.
    type Allocation;

    /// Makes the subject able to give allocations back again (a case may
    /// have left it unable to).
    fn ready(&mut self) -> Result<(), Failure> {
        Ok(())
    }

    /// Gives `allocation` back; one that is already gone is settled.
    fn give_back(
        &self,
        allocation: &Self::Allocation,
    ) -> impl Future<Output = Result<(), Failure>> + Send;

    /// Gives back what the case allocated without the scope learning of it
    /// (one that finished after the case was cut off by its bound).
    fn sweep(&self, case: Self::Case) -> impl Future<Output = Result<(), Failure>> + Send {
        let _ = case;
        ready(Ok(()))
    }
}

/// One case's context: its subject, the case, and what it owns, in the
/// order [`Scope::finish`] gives it back.
pub(crate) struct Scope<S: Subject> {
    /// What the case works on.
    pub(crate) subject: S,
    /// The case.
    pub(crate) case: S::Case,
    /// What the case allocated and has not given back, in the order it is
    /// to be given back.
    pub(crate) owned: Vec<S::Allocation>,
}

impl<S: Subject> Scope<S> {
    /// A scope of `case` on `subject`, owning nothing yet.
    pub(crate) fn on(subject: S, case: S::Case) -> Self {
        Self {
            subject,
            case,
            owned: Vec::new(),
        }
    }

    /// Gives back every allocation the case still owns, in order, then
    /// sweeps what it allocated unseen. Whatever is already gone is
    /// settled; the first other refusal fails the case.
    pub(crate) async fn finish(mut self) -> Result<(), Failure> {
        self.subject.ready()?;
        let mut first = None;
        for allocation in &self.owned {
            if let Err(f) = self.subject.give_back(allocation).await {
                first.get_or_insert(f);
            }
        }
        if let Err(f) = self.subject.sweep(self.case).await {
            first.get_or_insert(f);
        }
        first.map_or(Ok(()), Err)
    }
}
