//! A file tree laid out beneath a root from the lines of a fuzzer-chosen
//! script: directories, regular files, fifos and symlinks whose targets
//! climb with `..`, point into a directory outside the root, into procfs
//! (magic links among them), or anywhere at all.
//!
//! ```text
//! dir a/b
//! file a/b/f some bytes
//! fifo a/p
//! link a/up ../..
//! link a/out @outside/f
//! ```
//!
//! `@outside` at the start of a link target stands for the absolute path
//! of the directory outside the root. Every other line is left to the
//! target, which reads its own verbs from it.
//!
//! The layout is made by this harness, not by the code under test, so it
//! must itself never write outside the root: an entry is made only where
//! every component before its last is a real directory (never a symlink)
//! and each component is one directory entry's name; any other entry is
//! skipped.

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::{Path, PathBuf};

/// At most this many entries are made per input.
const MAX_ENTRIES: usize = 32;
/// At most this many components per entry path.
const MAX_DEPTH: usize = 8;
/// Every regular file the layout makes starts with these bytes, and the
/// files outside the root do not: no content inside can equal theirs.
pub const INSIDE_PREFIX: &[u8] = b"inside:";
/// The content of the files outside the root.
pub const OUTSIDE_SECRET: &[u8] = b"OUTSIDE-SECRET";
/// What a link target starts with to point into the outside directory.
const OUTSIDE_MARK: &str = "@outside";

/// One entry of the tree, by its path beneath the root.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    Dir(String),
    File(String, String),
    Fifo(String),
    Symlink(String, String),
}

/// A tree to lay out, and the lines of the script that are not entries.
#[derive(Debug, Clone, Default)]
pub struct Script {
    entries: Vec<Entry>,
    /// The lines whose verb is not `dir`, `file`, `fifo` or `link`, in order.
    pub actions: Vec<String>,
}

/// The first word of `line` and the rest after one space.
pub fn verb(line: &str) -> (&str, &str) {
    line.split_once(' ').unwrap_or((line, ""))
}

impl Script {
    /// Reads a script: bytes that are not UTF-8 are replaced, lines are
    /// split on `\n`.
    pub fn parse(bytes: &[u8]) -> Self {
        let mut script = Self::default();
        for line in String::from_utf8_lossy(bytes).split('\n') {
            let (verb, rest) = verb(line);
            let (path, arg) = verb_arg(rest);
            let entry = match verb {
                "dir" => Entry::Dir(rest.to_owned()),
                "fifo" => Entry::Fifo(rest.to_owned()),
                "file" => Entry::File(path.to_owned(), arg.to_owned()),
                "link" => Entry::Symlink(path.to_owned(), arg.to_owned()),
                _ => {
                    script.actions.push(line.to_owned());
                    continue;
                }
            };
            script.entries.push(entry);
        }
        script
    }

    /// Makes the entries beneath `root` (which must exist and be empty),
    /// with `outside` as the directory `@outside` names. An entry that
    /// cannot be made safely, or at all, is skipped.
    pub fn lay_out(&self, root: &Path, outside: &Path) {
        for entry in self.entries.iter().take(MAX_ENTRIES) {
            let path = match entry {
                Entry::Dir(p) | Entry::File(p, _) | Entry::Fifo(p) | Entry::Symlink(p, _) => p,
            };
            let Some(host) = place(root, path) else {
                continue;
            };
            // A failure (a target too long, …) only skips the entry.
            let _ = match entry {
                Entry::Dir(_) => fs::create_dir(&host),
                Entry::File(_, text) => fs::write(&host, [INSIDE_PREFIX, text.as_bytes()].concat()),
                Entry::Symlink(_, target) => symlink(link_target(target, outside), &host),
                Entry::Fifo(_) => rustix::fs::mknodat(
                    rustix::fs::CWD,
                    &host,
                    rustix::fs::FileType::Fifo,
                    rustix::fs::Mode::from_raw_mode(0o600),
                    0,
                )
                .map_err(std::io::Error::from),
            };
        }
    }
}

/// `PATH REST` split at the first space.
fn verb_arg(rest: &str) -> (&str, &str) {
    rest.split_once(' ').unwrap_or((rest, ""))
}

fn link_target(target: &str, outside: &Path) -> PathBuf {
    match target.strip_prefix(OUTSIDE_MARK) {
        Some(rest) => PathBuf::from(format!("{}{rest}", outside.display())),
        None => PathBuf::from(target),
    }
}

/// Whether `name` is one directory entry's name: not empty, not `.` or
/// `..`, no NUL, at most 255 bytes (a `/` cannot occur: paths are split on
/// it).
fn is_entry_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && name.len() <= 255 && !name.contains('\0')
}

/// The host path of `path` beneath `root`, its missing directories made,
/// when every component is an entry name, every component before the last
/// is a real directory (made here when missing) and the last does not
/// exist.
fn place(root: &Path, path: &str) -> Option<PathBuf> {
    let names: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    let (last, dirs) = names.split_last()?;
    if names.len() > MAX_DEPTH || !names.iter().all(|n| is_entry_name(n)) {
        return None;
    }
    let mut host = root.to_path_buf();
    for dir in dirs {
        host.push(dir);
        match fs::symlink_metadata(&host) {
            Ok(meta) if meta.file_type().is_dir() => {}
            Ok(_) => return None,
            Err(_) => fs::create_dir(&host).ok()?,
        }
    }
    host.push(last);
    fs::symlink_metadata(&host).is_err().then_some(host)
}

/// Removes everything beneath `root`, never following a symlink.
pub fn clear(root: &Path) {
    let Ok(children) = fs::read_dir(root) else {
        return;
    };
    for child in children.flatten() {
        let path = child.path();
        let is_dir = fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_dir());
        // `remove_dir_all` removes a symlink it meets, never its target.
        let _ = if is_dir {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
    }
}

/// What an inode beneath the root is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Object {
    /// A directory.
    Dir,
    /// A regular file and its bytes.
    File(Vec<u8>),
    /// A symlink, a fifo, a socket, a device.
    Other,
}

/// Every inode beneath a root (the root included), by `(st_dev, st_ino)`,
/// found without following any symlink.
#[derive(Debug, Default)]
pub struct Objects(HashMap<(u64, u64), Object>);

impl Objects {
    /// Records the tree beneath `root`.
    pub fn of(root: &Path) -> Self {
        let mut objects = Self::default();
        objects.visit(root);
        objects
    }

    fn visit(&mut self, path: &Path) {
        let Ok(meta) = fs::symlink_metadata(path) else {
            return;
        };
        let object = if meta.file_type().is_dir() {
            Object::Dir
        } else if meta.file_type().is_file() {
            Object::File(fs::read(path).unwrap_or_default())
        } else {
            Object::Other
        };
        let is_dir = object == Object::Dir;
        self.0.insert((meta.dev(), meta.ino()), object);
        if is_dir && let Ok(children) = fs::read_dir(path) {
            for child in children.flatten() {
                self.visit(&child.path());
            }
        }
    }

    /// The object with this identity, if it lies beneath the root.
    pub fn get(&self, dev: u64, ino: u64) -> Option<&Object> {
        self.0.get(&(dev, ino))
    }

    /// Whether a regular file beneath the root holds exactly `bytes`.
    pub fn holds_file_with(&self, bytes: &[u8]) -> bool {
        self.0
            .values()
            .any(|o| matches!(o, Object::File(b) if b == bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_splits_into_entries_and_actions() {
        let script = Script::parse(b"dir a\nfile a/f x y\nlink l @outside/f\nopen /a/f\nfifo p");
        assert_eq!(
            script.entries,
            [
                Entry::Dir("a".into()),
                Entry::File("a/f".into(), "x y".into()),
                Entry::Symlink("l".into(), "@outside/f".into()),
                Entry::Fifo("p".into()),
            ]
        );
        assert_eq!(script.actions, ["open /a/f"]);
    }

    #[test]
    fn the_layout_never_makes_an_entry_through_a_symlink_or_above_the_root() {
        let tmp = tempfile::tempdir().unwrap();
        let (root, outside) = (tmp.path().join("root"), tmp.path().join("outside"));
        fs::create_dir_all(&root).unwrap();
        fs::create_dir_all(&outside).unwrap();
        Script::parse(
            b"link l @outside\nfile l/x 1\ndir ../up\nfile ./dot 1\nfile f 1\nlink f/x y",
        )
        .lay_out(&root, &outside);
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
        assert!(!tmp.path().join("up").exists());
        assert_eq!(fs::read_link(root.join("l")).unwrap(), outside);
        assert_eq!(fs::read(root.join("f")).unwrap(), b"inside:1");
        let names = fs::read_dir(&root).unwrap().count();
        assert_eq!(names, 2, "only l and f were made");
    }
}
