//! `git-push`: a bare repository in the sandbox, cloned, committed to and
//! pushed to, all inside the sandbox.

use std::time::Duration;

use corral_sdk::RunOptions;

use crate::failure::{Failure, ensure, shown};
use crate::sdk::scope::{SdkScope, step};

/// The subject of the commit the check pushes.
const SUBJECT: &str = "corral sdk conformance commit";

/// Clones a bare repository made in the sandbox, commits, pushes, and finds
/// the commit in the bare repository's own log. Paths are relative to the
/// working directory, so the check holds on backends whose commands see
/// host paths.
pub(crate) async fn git_push(scope: &mut SdkScope) -> Result<(), Failure> {
    let sandbox = scope.sandbox().await?;
    let script = format!(
        "set -e\n\
         git init -q --bare origin.git\n\
         git clone -q origin.git work 2>/dev/null\n\
         cd work\n\
         printf 'pushed by the conformance suite\\n' > README\n\
         git add README\n\
         git -c user.name=corral -c user.email=conformance@corral.invalid commit -q -m '{SUBJECT}'\n\
         git push -q origin HEAD:refs/heads/conformance 2>/dev/null\n\
         cd ..\n\
         git --git-dir=origin.git log --format=%s conformance\n"
    );
    let result = step(
        "run git init, clone, commit, push",
        sandbox
            .run_with(
                script,
                RunOptions {
                    timeout: Some(Duration::from_secs(60)),
                    ..RunOptions::default()
                },
            )
            .await,
    )?;
    ensure(
        result.code() == 0 && result.stdout_text() == format!("{SUBJECT}\n"),
        || {
            format!(
                "git push: exit {} stdout {} stderr {}, expected the log of the bare repository to hold {SUBJECT:?}",
                result.code(),
                shown(&result.stdout),
                shown(&result.stderr)
            )
        },
    )
}
