//! A backend's inventory, read through its own primitives.

use corral_backend::{Backend, BackendError, Labels};

use crate::target::Inventory;

/// Every sandbox `backend` lists and every snapshot it lists (when it
/// declares snapshots), whatever their labels.
pub async fn backend_inventory<B: Backend + ?Sized>(
    backend: &B,
) -> Result<Inventory, BackendError> {
    let everything = Labels::new();
    let sandboxes = backend
        .list(&everything)
        .await?
        .into_iter()
        .map(|s| s.id)
        .collect();
    let snapshots = match backend.snapshot_ops() {
        Some(ops) => ops
            .list_snapshots(&everything)
            .await?
            .into_iter()
            .map(|s| s.id)
            .collect(),
        None => Default::default(),
    };
    Ok(Inventory {
        sandboxes,
        snapshots,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use corral_backend::CreateRequest;
    use corral_backend_memory::MemoryBackend;

    #[tokio::test]
    async fn the_inventory_lists_sandboxes_and_snapshots() {
        let backend = MemoryBackend::new();
        assert!(backend_inventory(&backend).await.unwrap().is_empty());
        let id = backend.create(CreateRequest::default()).await.unwrap().id;
        let ops = backend.snapshot_ops().unwrap();
        let snap = ops.snapshot(&id, &Labels::new()).await.unwrap().id;
        let inventory = backend_inventory(&backend).await.unwrap();
        assert!(inventory.sandboxes.contains(&id));
        assert!(inventory.snapshots.contains(&snap));
    }
}
