//! corral backend rows, for any [`Backend`]: create→exec→destroy, and exec
//! alone in one sandbox created at setup.
//!
//! A backend joins the bench with one line:
//! `measures.extend(backend_measures("name", opener, command, Some(200)))`.

use std::sync::Arc;

use corral_backend::{Backend, Command, CreateRequest, ExecRequest, Labels, StreamKind};
use corral_backend_linux::layers::Layer;
use corral_registry::{BackendKind, OpenError, Scratch};

use crate::error::BenchError;
use crate::footprint::IdleFootprint;
use crate::measure::{BoxFuture, Group, Measure, Role, Setup};

/// The label every sandbox the bench creates carries (value `1`).
pub const BENCH_LABEL: &str = "corral.bench";

/// A backend opened for one measure, with whatever must outlive it.
pub struct Opened {
    /// The backend.
    pub backend: Arc<dyn Backend>,
    /// A temporary state directory, removed at teardown.
    pub state_dir: Option<tempfile::TempDir>,
}

impl Opened {
    /// Closes the backend and removes its temporary state directory.
    pub async fn close(self) -> Result<(), BenchError> {
        let name = self.backend.name().to_owned();
        let closed = self.backend.close().await;
        if let Some(dir) = self.state_dir {
            dir.close()
                .map_err(|e| BenchError::io("removing the bench state directory", e))?;
        }
        closed.map_err(|e| BenchError::backend(&name, "close", e))
    }
}

/// Opens a fresh backend; called once per measure, at setup.
pub type Opener = Arc<dyn Fn() -> BoxFuture<'static, Result<Opened, BenchError>> + Send + Sync>;

/// Opens `kind` holding nothing of the user's: the registry's scratch
/// opener (a new memory backend; local and linux on a new temporary state
/// directory, never the user's own; docker with corral's test image).
pub fn scratch_opener(kind: BackendKind) -> Opener {
    Arc::new(move || Box::pin(async move { opened(kind, kind.open_scratch().await) }))
}

/// Opens a linux backend on a fresh temporary state directory without
/// the isolation layer `layer` (the registry's [`Scratch::linux_without`]):
/// the bench's `linux without <layer>` rows, which show what each layer
/// costs.
pub fn linux_opener_without(layer: Layer) -> Opener {
    Arc::new(move || {
        Box::pin(async move { opened(BackendKind::Linux, Scratch::linux_without(layer)) })
    })
}

/// What the registry opened, as the bench holds it, or the one line
/// saying why it could not.
pub(crate) fn opened(
    kind: BackendKind,
    scratch: Result<Scratch, OpenError>,
) -> Result<Opened, BenchError> {
    let scratch = scratch.map_err(|e| match e {
        OpenError::StateDir { .. } => BenchError::io("creating a temporary state directory", e),
        e => BenchError::backend(kind.name(), "open", e),
    })?;
    Ok(Opened {
        backend: scratch.backend.into_dyn(),
        state_dir: scratch.state_dir,
    })
}

/// The rows of one backend: create→exec→destroy, exec alone, and (with
/// `idle_sandboxes`) the idle-sandbox footprint. `command` is what each
/// exec runs; it must exit 0.
pub fn backend_measures(
    label: &str,
    opener: Opener,
    command: Command,
    idle_sandboxes: Option<u32>,
) -> Vec<Box<dyn Measure>> {
    let mut v: Vec<Box<dyn Measure>> = vec![
        Box::new(BackendMeasure::new(
            label,
            BackendOp::Cycle,
            opener.clone(),
            command.clone(),
        )),
        Box::new(BackendMeasure::new(
            label,
            BackendOp::Exec,
            opener.clone(),
            command,
        )),
    ];
    if let Some(n) = idle_sandboxes {
        v.push(Box::new(IdleFootprint::new(label, opener, n)));
    }
    v
}

/// The create request of every bench sandbox: defaults, labelled.
pub(crate) fn bench_request() -> CreateRequest {
    CreateRequest {
        labels: Labels::new()
            .with(BENCH_LABEL, "1")
            .expect("the bench label is a label"),
        ..CreateRequest::default()
    }
}

/// Creates one bench sandbox, returning its id.
pub(crate) async fn create(backend: &dyn Backend) -> Result<String, BenchError> {
    backend
        .create(bench_request())
        .await
        .map(|info| info.id)
        .map_err(|e| BenchError::backend(backend.name(), "create", e))
}

/// Destroys sandbox `id`.
pub(crate) async fn destroy(backend: &dyn Backend, id: &str) -> Result<(), BenchError> {
    backend
        .destroy(id)
        .await
        .map_err(|e| BenchError::backend(backend.name(), "destroy", e))
}

/// Runs `command` in sandbox `id`, discarding its output; it must exit 0.
async fn exec(backend: &dyn Backend, id: &str, command: &Command) -> Result<(), BenchError> {
    let mut discard = |_: StreamKind, _: &[u8]| {};
    let outcome = backend
        .exec(id, ExecRequest::new(command.clone()), &mut discard)
        .await
        .map_err(|e| BenchError::backend(backend.name(), "exec", e))?;
    if outcome.status.success() {
        return Ok(());
    }
    Err(BenchError::CommandFailed {
        command: command.to_argv().join(" "),
        status: format!("{:?}", outcome.status),
    })
}

/// Which backend operation a [`BackendMeasure`] times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendOp {
    /// create → exec → destroy, all timed.
    Cycle,
    /// exec alone, in a sandbox created at setup.
    Exec,
}

/// A backend row.
pub struct BackendMeasure {
    name: String,
    group: Group,
    role: Role,
    op: BackendOp,
    opener: Opener,
    command: Command,
    opened: Option<Opened>,
    sandbox: Option<String>,
}

impl BackendMeasure {
    /// A row named after `label` timing `op` with `command`.
    pub fn new(label: &str, op: BackendOp, opener: Opener, command: Command) -> Self {
        let what = match op {
            BackendOp::Cycle => "create+exec+destroy",
            BackendOp::Exec => "exec",
        };
        BackendMeasure {
            name: format!("{label} {what}"),
            group: Group::Start,
            role: Role::Compared,
            op,
            opener,
            command,
            opened: None,
            sandbox: None,
        }
    }

    /// The same row as the floor of `group`, named `name` (a group whose
    /// rows reach the backend some other way is compared with it).
    #[must_use]
    pub fn floor_of(mut self, group: Group, name: impl Into<String>) -> Self {
        self.group = group;
        self.role = Role::Floor;
        self.name = name.into();
        self
    }

    fn backend(&self) -> Result<Arc<dyn Backend>, BenchError> {
        self.opened
            .as_ref()
            .map(|o| o.backend.clone())
            .ok_or_else(|| BenchError::io(self.name.clone(), "iteration before a successful setup"))
    }
}

impl Measure for BackendMeasure {
    fn name(&self) -> &str {
        &self.name
    }

    fn group(&self) -> Group {
        self.group
    }

    fn role(&self) -> Role {
        self.role
    }

    fn default_iterations(&self) -> u32 {
        200
    }

    fn setup(&mut self) -> BoxFuture<'_, Result<Setup, BenchError>> {
        Box::pin(async move {
            let opened = (self.opener)().await?;
            let backend = opened.backend.clone();
            self.opened = Some(opened);
            if self.op == BackendOp::Exec {
                self.sandbox = Some(create(&*backend).await?);
            }
            Ok(Setup::Ready)
        })
    }

    fn iteration(&mut self) -> BoxFuture<'_, Result<(), BenchError>> {
        Box::pin(async move {
            let backend = self.backend()?;
            match (self.op, &self.sandbox) {
                (BackendOp::Cycle, _) => {
                    let id = create(&*backend).await?;
                    let ran = exec(&*backend, &id, &self.command).await;
                    let destroyed = destroy(&*backend, &id).await;
                    ran.and(destroyed)
                }
                (BackendOp::Exec, Some(id)) => exec(&*backend, id, &self.command).await,
                (BackendOp::Exec, None) => Err(BenchError::io(self.name.clone(), "no sandbox")),
            }
        })
    }

    fn note(&self) -> Option<String> {
        Some(self.command.to_argv().join(" "))
    }

    fn teardown(&mut self) -> BoxFuture<'_, Result<(), BenchError>> {
        Box::pin(async move {
            let Some(opened) = self.opened.take() else {
                return Ok(());
            };
            let destroyed = match self.sandbox.take() {
                Some(id) => destroy(&*opened.backend, &id).await,
                None => Ok(()),
            };
            let closed = opened.close().await;
            destroyed.and(closed)
        })
    }
}
