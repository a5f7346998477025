//! Atomic batch writes (`BatchWriteOps`): every file or none.
//!
//! 1. Every path and mode is checked before anything is touched.
//! 2. Missing parent directories are made (remembered), and every file is
//!    staged as a hidden temporary file in its target's own directory — the
//!    same file system as the target, the sandbox's tmpfs (or its overlay)
//!    — written, given its mode and `fsync`ed.
//! 3. Only then is each renamed into place; a file it replaces is first kept
//!    under a hidden name, so that a failed rename puts every replaced file
//!    back. On any failure everything staged and every directory made is
//!    removed again.

use std::io::Write;
use std::os::fd::OwnedFd;

use async_trait::async_trait;
use corral_backend::contained_fs::{ContainedFs, FileOp, FsCause, FsError, SplitPath};
use corral_backend::{BackendError, BatchFile, BatchWriteOps, ErrorCode, RequestError, Result};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::LinuxBackend;
use crate::files::sandbox_fs;
use crate::state::{State, random_hex};

/// One staged file.
struct Staged {
    dir: OwnedFd,
    temp: String,
    name: String,
    shown: String,
    /// Where the file it replaces is kept until the batch is published.
    kept: Option<String>,
}

fn temp_name(tag: &str) -> Result<String> {
    let hex = random_hex().map_err(|e| BackendError::from_io("random name", &e))?;
    Ok(format!(".corral-{tag}-{hex}"))
}

/// Everything a failed batch undoes.
#[derive(Default)]
struct Undo {
    staged: Vec<Staged>,
    /// Directories made, parent first: (parent descriptor, name).
    made: Vec<(OwnedFd, String)>,
}

impl Undo {
    fn roll_back(self) {
        for s in &self.staged {
            let _ = rustix::fs::unlinkat(&s.dir, s.temp.as_str(), AtFlags::empty());
        }
        for (dir, name) in self.made.iter().rev() {
            let _ = rustix::fs::unlinkat(dir, name.as_str(), AtFlags::REMOVEDIR);
        }
    }
}

/// The directory `parent` in `fs`, made (mode 0755) where missing.
fn parent_dir(
    fs: &ContainedFs,
    parent: &SplitPath,
    shown: &str,
    undo: &mut Undo,
) -> Result<OwnedFd> {
    let mut dir = fs.directory(FileOp::WriteBatch, &parent.prefix(0))?;
    for (i, c) in parent.comps().iter().enumerate() {
        match fs.directory(FileOp::WriteBatch, &parent.prefix(i + 1)) {
            Ok(fd) => dir = fd,
            Err(e) if e.code() == ErrorCode::NotFound => {
                rustix::fs::mkdirat(&dir, c.as_str(), Mode::from_raw_mode(0o755)).map_err(|e| {
                    BackendError::from(FsError::os(FileOp::WriteBatch, shown.to_string(), e))
                })?;
                let made = rustix::fs::openat(
                    &dir,
                    c.as_str(),
                    OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .map_err(|e| {
                    BackendError::from(FsError::os(FileOp::WriteBatch, shown.to_string(), e))
                })?;
                undo.made.push((dir, c.clone()));
                dir = made;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(dir)
}

/// Stages one file next to its target.
fn stage(
    fs: &ContainedFs,
    target: &SplitPath,
    f: &BatchFile,
    mode: u32,
    undo: &mut Undo,
) -> Result<()> {
    let shown = target.shown().to_owned();
    let Some((parent, name)) = target.split_last() else {
        return Err(FsError::new(FileOp::WriteBatch, "/", FsCause::RootItself).into());
    };
    let dir = parent_dir(fs, &parent, &shown, undo)?;
    match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Directory => {
            return Err(FsError::new(FileOp::WriteBatch, shown, FsCause::IsADirectory).into());
        }
        Ok(_) | Err(Errno::NOENT) => {}
        Err(e) => {
            return Err(BackendError::from(FsError::os(
                FileOp::WriteBatch,
                shown.to_string(),
                e,
            )));
        }
    }
    let temp = temp_name("batch")?;
    let fd = rustix::fs::openat(
        &dir,
        temp.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .map_err(|e| BackendError::from(FsError::os(FileOp::WriteBatch, shown.to_string(), e)))?;
    let dup = rustix::io::dup(&dir)
        .map_err(|e| BackendError::from(FsError::os(FileOp::WriteBatch, shown.to_string(), e)))?;
    undo.staged.push(Staged {
        dir: dup,
        temp,
        name: name.to_owned(),
        shown: shown.clone(),
        kept: None,
    });
    let mut file = std::fs::File::from(fd);
    file.write_all(&f.bytes)
        .map_err(|e| BackendError::from_io(format!("staging {shown}"), &e))?;
    rustix::fs::fchmod(&file, Mode::from_raw_mode(mode))
        .map_err(|e| BackendError::from(FsError::os(FileOp::WriteBatch, shown.to_string(), e)))?;
    file.sync_all()
        .map_err(|e| BackendError::from_io(format!("staging {shown}"), &e))?;
    Ok(())
}

/// Renames every staged file into place, or puts everything back.
fn publish(mut undo: Undo) -> Result<()> {
    let mut failed = None;
    for i in 0..undo.staged.len() {
        let s = &mut undo.staged[i];
        let kept = temp_name("kept")?;
        match rustix::fs::linkat(
            &s.dir,
            s.name.as_str(),
            &s.dir,
            kept.as_str(),
            AtFlags::empty(),
        ) {
            Ok(()) => s.kept = Some(kept),
            Err(Errno::NOENT) => {}
            Err(e) => {
                failed = Some((
                    i,
                    BackendError::from(FsError::os(FileOp::WriteBatch, s.shown.to_string(), e)),
                ));
                break;
            }
        }
        if let Err(e) = rustix::fs::renameat(&s.dir, s.temp.as_str(), &s.dir, s.name.as_str()) {
            failed = Some((
                i,
                BackendError::from(FsError::os(FileOp::WriteBatch, s.shown.to_string(), e)),
            ));
            break;
        }
    }
    let Some((upto, err)) = failed else {
        for s in &undo.staged {
            if let Some(kept) = &s.kept {
                let _ = rustix::fs::unlinkat(&s.dir, kept.as_str(), AtFlags::empty());
            }
        }
        return Ok(());
    };
    // Put back what was replaced, remove what was new, for every file
    // published so far (and the one that failed).
    for s in undo.staged.iter().take(upto + 1) {
        match &s.kept {
            Some(kept) => {
                let _ = rustix::fs::renameat(&s.dir, kept.as_str(), &s.dir, s.name.as_str());
            }
            None if rustix::fs::statat(&s.dir, s.temp.as_str(), AtFlags::SYMLINK_NOFOLLOW)
                .is_err() =>
            {
                let _ = rustix::fs::unlinkat(&s.dir, s.name.as_str(), AtFlags::empty());
            }
            None => {}
        }
    }
    undo.roll_back();
    Err(err)
}

fn write_batch(state: &State, id: &str, files: &[BatchFile]) -> Result<()> {
    let mut checked = Vec::with_capacity(files.len());
    let mut seen = std::collections::BTreeSet::new();
    for f in files {
        let target = SplitPath::from(&f.path);
        let mode = f.mode.unwrap_or(0o644);
        if mode > 0o7777 {
            return Err(RequestError::Mode {
                op: FileOp::WriteBatch,
                path: f.path.to_string(),
                mode,
            }
            .into());
        }
        if !seen.insert(target.shown().to_owned()) {
            return Err(RequestError::DuplicatePath {
                op: FileOp::WriteBatch,
                path: f.path.to_string(),
            }
            .into());
        }
        checked.push((target, mode, f));
    }
    let fs = sandbox_fs(state, id)?;
    let mut undo = Undo::default();
    for (target, mode, f) in &checked {
        if let Err(e) = stage(&fs, target, f, *mode, &mut undo) {
            undo.roll_back();
            return Err(e);
        }
    }
    publish(undo)
}

#[async_trait]
impl BatchWriteOps for LinuxBackend {
    async fn write_batch(&self, id: &str, files: Vec<BatchFile>) -> Result<()> {
        let (state, id) = (self.state().clone(), id.to_owned());
        crate::blocking::blocking(move || write_batch(&state, &id, &files)).await
    }
}
