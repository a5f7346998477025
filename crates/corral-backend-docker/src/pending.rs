//! Removals of destroyed sandboxes still in flight.
//!
//! `destroy` freezes the container (every process stops at once), renames
//! it out of the sandbox namespace (`dkr-gone-<hex>`: no lookup, list or
//! key finds it any more, and its key is free again), and removes it in
//! the background. [`crate::DockerBackend::close`] finishes every removal
//! still in flight, and so does dropping the last handle of the backend;
//! a process killed before either leaves renamed, frozen containers that
//! [`crate::DockerBackend::reap`] sweeps (they keep corral's labels).

use std::collections::BTreeSet;
use std::sync::Mutex;

use bollard::Docker;
use bollard::errors::Error;
use bollard::query_parameters::RemoveContainerOptions;
use corral_backend::Result;

use crate::error::map_error;

/// The prefix of a destroyed container's name.
pub(crate) const TOMBSTONE_PREFIX: &str = "dkr-gone-";

/// Tombstoned containers whose removal has not been confirmed.
#[derive(Debug)]
pub(crate) struct Pending {
    docker: Docker,
    names: Mutex<BTreeSet<String>>,
}

impl Pending {
    pub(crate) fn new(docker: Docker) -> Self {
        Pending {
            docker,
            names: Mutex::new(BTreeSet::new()),
        }
    }

    pub(crate) fn insert(&self, name: &str) {
        if let Ok(mut names) = self.names.lock() {
            names.insert(name.to_string());
        }
    }

    pub(crate) fn done(&self, name: &str) {
        if let Ok(mut names) = self.names.lock() {
            names.remove(name);
        }
    }

    fn take(&self) -> Vec<String> {
        self.names
            .lock()
            .map(|mut n| std::mem::take(&mut *n).into_iter().collect())
            .unwrap_or_default()
    }

    /// Removes every pending container now.
    pub(crate) async fn finish(&self) {
        for name in self.take() {
            let _ = remove(&self.docker, &name).await;
        }
    }
}

/// Removes container `name`, whatever its state, with its anonymous
/// volumes; a container already gone or already being removed is fine.
pub(crate) async fn remove(docker: &Docker, name: &str) -> Result<()> {
    let options = RemoveContainerOptions {
        force: true,
        v: true,
        ..RemoveContainerOptions::default()
    };
    match docker.remove_container(name, Some(options)).await {
        Ok(())
        | Err(Error::DockerResponseServerError {
            status_code: 404, ..
        }) => Ok(()),
        // A removal already in progress: the container is going away.
        Err(Error::DockerResponseServerError {
            status_code: 409,
            message,
        }) if message.contains("already in progress") => Ok(()),
        Err(e) => Err(map_error(&format!("remove {name}"), &e)),
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let names = self.take();
        if names.is_empty() {
            return;
        }
        // Drop cannot await and may run inside a runtime: finish on a
        // thread with a runtime of its own.
        let docker = self.docker.clone();
        let finisher = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            runtime.block_on(async {
                for name in names {
                    let _ = remove(&docker, &name).await;
                }
            });
        });
        let _ = finisher.join();
    }
}
