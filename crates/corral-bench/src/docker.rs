//! Docker rows: `docker run --rm IMAGE true` and `docker exec CONTAINER true`.
//!
//! They run only where an engine answers and an image is already present:
//! the bench **never pulls** (`--pull=never`). The image is the one asked
//! for, else the first present of `busybox`, `alpine`, `debian`, `ubuntu`,
//! else the first tagged image; an image without `true` is a skip with the
//! engine's reason. Containers carry the label `corral.bench=1`.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use crate::error::BenchError;
use crate::host::find_program;
use crate::measure::{BoxFuture, Group, Measure, Setup};

/// How long one docker client call may take before it counts as hung.
const CALL_LIMIT: Duration = Duration::from_secs(60);
/// How long the engine may take to answer the first question.
const PROBE_LIMIT: Duration = Duration::from_secs(10);
/// Images preferred, in order, when none is asked for.
const PREFERRED: [&str; 4] = ["busybox", "alpine", "debian", "ubuntu"];

/// Which docker operation a [`DockerMeasure`] times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DockerOp {
    /// `docker run --rm IMAGE true`: a whole container per iteration.
    Run,
    /// `docker exec CONTAINER true` in one container started at setup.
    Exec,
}

/// A docker row.
#[derive(Debug, Clone)]
pub struct DockerMeasure {
    op: DockerOp,
    image: Option<String>,
    docker: Option<PathBuf>,
    container: Option<String>,
}

impl DockerMeasure {
    /// A row timing `op`, on `image` when given (else one already present).
    pub fn new(op: DockerOp, image: Option<String>) -> Self {
        DockerMeasure {
            op,
            image,
            docker: None,
            container: None,
        }
    }

    async fn prepare(&mut self) -> Result<Setup, BenchError> {
        let Some(docker) = find_program("docker") else {
            return Ok(Setup::Skip("docker not found on PATH".into()));
        };
        let server = match call(
            &docker,
            &["version", "--format", "{{.Server.Version}}"],
            PROBE_LIMIT,
        )
        .await
        {
            Ok(v) => v,
            Err(e) => {
                return Ok(Setup::Skip(format!(
                    "no Docker engine answers: {}",
                    reason(&e)
                )));
            }
        };
        let image = match &self.image {
            Some(i) => i.clone(),
            None => {
                let listed = call(
                    &docker,
                    &["image", "ls", "--format", "{{.Repository}}:{{.Tag}}"],
                    CALL_LIMIT,
                )
                .await?;
                match pick_image(&listed) {
                    Some(i) => i,
                    None => {
                        return Ok(Setup::Skip(format!(
                            "Docker {} has no image present and the bench never pulls",
                            server.trim()
                        )));
                    }
                }
            }
        };
        let probe = match self.op {
            DockerOp::Run => call(&docker, &run_args(&image, &["true"]), CALL_LIMIT)
                .await
                .map(|_| ()),
            DockerOp::Exec => {
                let mut args = run_args(&image, &["sleep", "3600"]);
                args.insert(1, "-d".into());
                match call(&docker, &args, CALL_LIMIT).await {
                    Ok(id) => {
                        let id = id.trim().to_owned();
                        self.container = Some(id.clone());
                        call(&docker, &["exec", &id, "true"], CALL_LIMIT)
                            .await
                            .map(|_| ())
                    }
                    Err(e) => Err(e),
                }
            }
        };
        self.image = Some(image.clone());
        self.docker = Some(docker);
        match probe {
            Ok(()) => Ok(Setup::Ready),
            Err(e) => Ok(Setup::Skip(format!(
                "image {image} cannot run `true`: {}",
                reason(&e)
            ))),
        }
    }
}

/// `run --rm --pull=never --label corral.bench=1 IMAGE CMD…`.
fn run_args(image: &str, cmd: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "run",
        "--rm",
        "--pull=never",
        "--label",
        "corral.bench=1",
        image,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    v.extend(cmd.iter().map(|s| (*s).to_owned()));
    v
}

/// The image to use from `docker image ls` output (`REPO:TAG` lines).
pub fn pick_image(listed: &str) -> Option<String> {
    let tagged: Vec<&str> = listed
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.contains("<none>"))
        .collect();
    PREFERRED
        .iter()
        .find_map(|want| {
            tagged.iter().find(|i| {
                let repo = i.rsplit_once(':').map_or(**i, |(r, _)| r);
                repo == *want || repo.ends_with(&format!("/{want}"))
            })
        })
        .or_else(|| tagged.first())
        .map(|s| (*s).to_owned())
}

/// The engine's own words for a failed call, without the command line.
fn reason(e: &BenchError) -> String {
    match e {
        // `exit status: N: WORDS` (or `signal: N (NAME): WORDS`).
        BenchError::CommandFailed { status, .. } => status
            .splitn(3, ": ")
            .nth(2)
            .map_or(status.clone(), str::to_owned),
        other => other.to_string(),
    }
}

/// Runs `docker ARGS…`, returning its stdout; killed after `limit`.
async fn call<S: AsRef<str>>(
    docker: &PathBuf,
    args: &[S],
    limit: Duration,
) -> Result<String, BenchError> {
    let line = args.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(" ");
    let child = Command::new(docker)
        .args(args.iter().map(AsRef::as_ref))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(limit, child)
        .await
        .map_err(|_| BenchError::Timeout {
            seconds: limit.as_secs(),
        })?
        .map_err(|e| BenchError::io(format!("starting docker {line}"), e))?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let first = stderr
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    Err(BenchError::CommandFailed {
        command: format!("docker {line}"),
        status: format!("{}: {first}", out.status),
    })
}

impl Measure for DockerMeasure {
    fn name(&self) -> &str {
        match self.op {
            DockerOp::Run => "docker run --rm",
            DockerOp::Exec => "docker exec",
        }
    }

    fn group(&self) -> Group {
        Group::Start
    }

    fn default_iterations(&self) -> u32 {
        match self.op {
            DockerOp::Run => 10,
            DockerOp::Exec => 20,
        }
    }

    fn warmups(&self) -> u32 {
        1
    }

    fn setup(&mut self) -> BoxFuture<'_, Result<Setup, BenchError>> {
        Box::pin(self.prepare())
    }

    fn iteration(&mut self) -> BoxFuture<'_, Result<(), BenchError>> {
        Box::pin(async move {
            let (Some(docker), Some(image)) = (&self.docker, &self.image) else {
                return Err(BenchError::io(
                    "docker",
                    "iteration before a successful setup",
                ));
            };
            match (self.op, &self.container) {
                (DockerOp::Run, _) => call(docker, &run_args(image, &["true"]), CALL_LIMIT).await?,
                (DockerOp::Exec, Some(id)) => {
                    call(docker, &["exec", id, "true"], CALL_LIMIT).await?
                }
                (DockerOp::Exec, None) => {
                    return Err(BenchError::io("docker exec", "no container was started"));
                }
            };
            Ok(())
        })
    }

    fn note(&self) -> Option<String> {
        self.image
            .as_ref()
            .map(|i| format!("image {i}, --pull=never"))
    }

    fn teardown(&mut self) -> BoxFuture<'_, Result<(), BenchError>> {
        Box::pin(async move {
            if let (Some(docker), Some(id)) = (&self.docker, self.container.take()) {
                call(docker, &["rm", "-f", &id], CALL_LIMIT).await?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_reasons_are_the_engine_own_words() {
        let e = BenchError::CommandFailed {
            command: "docker version".into(),
            status: "exit status: 1: Cannot connect to the Docker daemon".into(),
        };
        assert_eq!(reason(&e), "Cannot connect to the Docker daemon");
        let t = BenchError::Timeout { seconds: 10 };
        assert_eq!(reason(&t), "took longer than 10 s");
    }

    #[test]
    fn images_are_picked_by_preference_and_never_untagged() {
        let listed = "<none>:<none>\nmyapp:1\nlibrary/alpine:3.20\nbusybox:latest\n";
        assert_eq!(pick_image(listed).as_deref(), Some("busybox:latest"));
        assert_eq!(pick_image("myapp:1\n").as_deref(), Some("myapp:1"));
        assert_eq!(pick_image("<none>:<none>\n\n"), None);
        assert_eq!(
            pick_image("library/alpine:3.20\n").as_deref(),
            Some("library/alpine:3.20")
        );
    }
}
