//! Rows of corral's docker backend: create→exec→destroy and exec alone,
//! through one engine connection the backend keeps, beside the docker
//! CLI's `docker run --rm` and `docker exec` rows of the same run (see
//! [`crate::DockerMeasure`]). They run where an engine answers; the image
//! is the one asked for, else corral's test image, imported at setup when
//! missing (never pulled). Sandboxes carry [`crate::BENCH_LABEL`] through
//! the shared backend rows.

use std::sync::Arc;

use corral_backend::{Backend, Command};
use corral_backend_docker::DEFAULT_IMAGE;
use corral_registry::{BackendKind, Scratch};

use crate::backend::{BackendMeasure, BackendOp, Opened, Opener};
use crate::error::BenchError;
use crate::measure::{BoxFuture, Group, Measure, Setup};
use crate::stats::Summary;

/// One docker-backend row: connects at setup (a skip where no engine
/// answers), then is the shared backend row over that connection.
pub struct DockerBackendMeasure {
    name: String,
    op: BackendOp,
    image: Option<String>,
    inner: Option<BackendMeasure>,
}

impl std::fmt::Debug for DockerBackendMeasure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DockerBackendMeasure")
            .field("name", &self.name)
            .field("image", &self.image)
            .finish()
    }
}

impl DockerBackendMeasure {
    /// The row timing `op` on `image` (else corral's test image).
    pub fn new(op: BackendOp, image: Option<String>) -> Self {
        let what = match op {
            BackendOp::Cycle => "create+exec+destroy",
            BackendOp::Exec => "exec",
        };
        DockerBackendMeasure {
            name: format!("{} {what}", label()),
            op,
            image,
            inner: None,
        }
    }

    async fn connect(&self) -> Result<Arc<dyn Backend>, String> {
        let scratch = match &self.image {
            Some(image) => Scratch::docker_on(image).await,
            None => BackendKind::Docker.open_scratch().await,
        };
        scratch
            .map(|scratch| scratch.backend.into_dyn())
            .map_err(|e| e.to_string())
    }
}

/// The beginning of the rows' names: `docker backend`, beside the docker
/// CLI's rows.
fn label() -> String {
    format!("{} backend", BackendKind::Docker)
}

/// The docker backend's two rows.
pub fn docker_backend_measures(image: Option<String>) -> Vec<Box<dyn Measure>> {
    vec![
        Box::new(DockerBackendMeasure::new(BackendOp::Cycle, image.clone())),
        Box::new(DockerBackendMeasure::new(BackendOp::Exec, image)),
    ]
}

impl Measure for DockerBackendMeasure {
    fn name(&self) -> &str {
        &self.name
    }

    fn group(&self) -> Group {
        Group::Start
    }

    fn default_iterations(&self) -> u32 {
        match self.op {
            BackendOp::Cycle => 20,
            BackendOp::Exec => 50,
        }
    }

    fn setup(&mut self) -> BoxFuture<'_, Result<Setup, BenchError>> {
        Box::pin(async move {
            let backend = match self.connect().await {
                Ok(b) => b,
                Err(reason) => return Ok(Setup::Skip(reason)),
            };
            let opener: Opener = Arc::new(move || {
                let backend = Arc::clone(&backend);
                Box::pin(async move {
                    Ok(Opened {
                        backend,
                        state_dir: None,
                    })
                })
            });
            let inner = self.inner.insert(BackendMeasure::new(
                &label(),
                self.op,
                opener,
                Command::argv(["true"]).expect("a fixed, valid command"),
            ));
            inner.setup().await
        })
    }

    fn iteration(&mut self) -> BoxFuture<'_, Result<(), BenchError>> {
        Box::pin(async move {
            match self.inner.as_mut() {
                Some(inner) => inner.iteration().await,
                None => Err(BenchError::io(label(), "iterated before setup")),
            }
        })
    }

    fn metric(&mut self, summary: &Summary) -> Option<crate::measure::Metric> {
        self.inner.as_mut()?.metric(summary)
    }

    fn note(&self) -> Option<String> {
        let image = self.image.as_deref().unwrap_or(DEFAULT_IMAGE);
        Some(format!("true, in {image}, one engine connection"))
    }

    fn teardown(&mut self) -> BoxFuture<'_, Result<(), BenchError>> {
        Box::pin(async move {
            match self.inner.as_mut() {
                Some(inner) => inner.teardown().await,
                None => Ok(()),
            }
        })
    }
}
