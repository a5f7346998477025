//! The fake's in-memory world and its log of every call and compensation.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use corral_contract::*;

use super::process::ProcessLog;

/// One path inside a fake instance.
#[derive(Debug, Clone)]
pub enum Entry {
    /// A regular file.
    File(Vec<u8>),
    /// A symlink whose target escapes its root.
    Escape,
    /// A directory.
    Directory,
}

/// What a compensation undoes, known without looking at the value.
#[derive(Debug, Clone)]
pub enum Undo {
    Instance(InstanceId),
    Snapshot(SnapshotId),
    Nothing,
}

#[derive(Default)]
pub struct World {
    pub instances: HashMap<InstanceId, SandboxInstance>,
    pub files: HashMap<(InstanceId, SandboxPath), Entry>,
    pub snapshots: HashMap<SnapshotId, SnapshotRef>,
    next: u64,
}

impl World {
    pub(crate) fn next(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}-{}", self.next)
    }

    pub fn undo(&mut self, undo: &Undo) {
        match undo {
            Undo::Instance(id) => {
                self.instances.remove(id);
            }
            Undo::Snapshot(id) => {
                self.snapshots.remove(id);
            }
            Undo::Nothing => {}
        }
    }
}

/// Every call, read batch and compensation the fake saw.
#[derive(Default)]
pub struct Log {
    calls: Mutex<Vec<Operation>>,
    pub(crate) read_batches: Mutex<Vec<ReadFilesRequest>>,
    pub(crate) reads: Mutex<Vec<ReadFileRequest>>,
    invoked: Mutex<Vec<Compensated>>,
    completed: Mutex<Vec<Compensated>>,
    pub process: Arc<ProcessLog>,
}

impl Log {
    pub(crate) fn call(&self, operation: Operation) {
        self.calls.lock().unwrap().push(operation);
    }

    /// Calls of `operation`.
    pub fn calls(&self, operation: Operation) -> usize {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|o| **o == operation)
            .count()
    }

    /// Every call, in order.
    pub fn all_calls(&self) -> Vec<Operation> {
        self.calls.lock().unwrap().clone()
    }

    /// The `readFiles` requests received, in order.
    pub fn read_batches(&self) -> Vec<ReadFilesRequest> {
        self.read_batches.lock().unwrap().clone()
    }

    /// The `readFile` requests received, in order.
    pub fn reads(&self) -> Vec<ReadFileRequest> {
        self.reads.lock().unwrap().clone()
    }

    pub fn rollback_invoked(&self, operation: Compensated) {
        self.invoked.lock().unwrap().push(operation);
    }

    pub fn rollback_completed(&self, operation: Compensated) {
        self.completed.lock().unwrap().push(operation);
    }

    /// Invocations of `operation`'s rollback.
    pub fn rollbacks(&self, operation: Compensated) -> usize {
        self.invoked
            .lock()
            .unwrap()
            .iter()
            .filter(|o| **o == operation)
            .count()
    }

    /// Rollback invocations of any operation.
    pub fn all_rollbacks(&self) -> usize {
        self.invoked.lock().unwrap().len()
    }

    /// Completions of `operation`'s rollback.
    pub fn rollbacks_completed(&self, operation: Compensated) -> usize {
        self.completed
            .lock()
            .unwrap()
            .iter()
            .filter(|o| **o == operation)
            .count()
    }
}
