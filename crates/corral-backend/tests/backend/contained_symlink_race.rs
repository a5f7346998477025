//! A hostile workload swaps names inside the root as fast as it can while the
//! host reads through the contained helper. No read may ever return the
//! outside bytes, and no read may block.
//!
//! Swaps are atomic (`symlink` or `mknod` to a temporary name, then `rename`
//! over the target), so at every instant the name exists and is either benign
//! or hostile.

use corral_backend::contained::{ContainedRoot, FileKind, Strategy};
use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

const READS: usize = 10_000;
/// Keep reading past `READS` until the workload has swapped this often, so a
/// slow swapper still interleaves with the reads.
const MIN_FLIPS: u64 = 200;
const SECRET: &[u8] = b"OUTSIDE-SECRET";
const INSIDE: &[u8] = b"INSIDE";

fn strategies() -> Vec<Strategy> {
    match Strategy::detect() {
        Strategy::Openat2 => vec![Strategy::Openat2, Strategy::NoFollowWalk],
        Strategy::NoFollowWalk => {
            println!("skip strategy openat2: openat2 is unavailable in this process");
            vec![Strategy::NoFollowWalk]
        }
    }
}

/// One way of replacing `name` inside the root atomically.
#[derive(Clone)]
enum Swap {
    /// A symlink with this target.
    Link(&'static str),
    /// A regular file with this content.
    File(&'static [u8]),
    /// A fifo.
    Fifo,
}

fn install(root: &Path, name: &str, tmp: &str, swap: &Swap) {
    let tmp = root.join(tmp);
    let _ = std::fs::remove_file(&tmp);
    match swap {
        Swap::Link(target) => symlink(target, &tmp).expect("symlink"),
        Swap::File(bytes) => std::fs::write(&tmp, bytes).expect("write"),
        Swap::Fifo => rustix::fs::mknodat(
            rustix::fs::CWD,
            &tmp,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .expect("mkfifo"),
    }
    std::fs::rename(&tmp, root.join(name)).expect("rename over");
}

struct Tally {
    reads: usize,
    inside: usize,
    refused: BTreeMap<String, usize>,
    leaked: usize,
    flips: u64,
}

/// Reads `path` at least `READS` times while another thread alternates `name` between
/// `benign` and `hostile`. Returns the tally; fails on a leak or a hang.
fn race(
    strategy: Strategy,
    root_dir: &Path,
    name: &str,
    benign: Swap,
    hostile: Swap,
    path: &str,
) -> Tally {
    let hostile_label = match &hostile {
        Swap::Link(target) if target.starts_with('/') => "absolute symlink".to_owned(),
        Swap::Link(target) => format!("symlink -> {target}"),
        Swap::File(_) => "regular file".to_owned(),
        Swap::Fifo => "fifo".to_owned(),
    };
    install(root_dir, name, "swap.tmp", &benign);
    let root = Arc::new(
        ContainedRoot::open(root_dir)
            .expect("open root")
            .with_strategy(strategy),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let flips = Arc::new(AtomicU64::new(0));
    let flipper = {
        let (stop, flips) = (Arc::clone(&stop), Arc::clone(&flips));
        let (dir, name) = (root_dir.to_path_buf(), name.to_owned());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                for swap in [&hostile, &benign] {
                    install(&dir, &name, "swap.tmp", swap);
                    flips.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    };

    let (tx, rx) = mpsc::channel();
    let reader = {
        let (root, path) = (Arc::clone(&root), path.to_owned());
        let flips_seen = Arc::clone(&flips);
        std::thread::spawn(move || {
            let mut tally = Tally {
                reads: 0,
                inside: 0,
                refused: BTreeMap::new(),
                leaked: 0,
                flips: 0,
            };
            // Start once the workload is really swapping.
            while flips_seen.load(Ordering::Relaxed) == 0 {
                std::thread::yield_now();
            }
            while tally.reads < READS || flips_seen.load(Ordering::Relaxed) < MIN_FLIPS {
                tally.reads += 1;
                match root.read(&path, 1024) {
                    Ok(bytes) if bytes == INSIDE => tally.inside += 1,
                    Ok(bytes) => {
                        if bytes.windows(SECRET.len()).any(|w| w == SECRET) {
                            tally.leaked += 1;
                        }
                        *tally
                            .refused
                            .entry(format!("unexpected bytes {bytes:?}"))
                            .or_default() += 1;
                    }
                    Err(err) => *tally.refused.entry(err.reason.to_string()).or_default() += 1,
                }
            }
            let _ = tx.send(tally);
        })
    };
    let outcome = rx.recv_timeout(Duration::from_secs(120));
    stop.store(true, Ordering::Relaxed);
    flipper.join().expect("flipper");
    let mut tally = outcome.expect("reader finished (no read may block)");
    reader.join().expect("reader");
    tally.flips = flips.load(Ordering::Relaxed);
    assert!(tally.flips >= MIN_FLIPS, "the workload barely swapped");
    println!(
        "[{}] {path} (hostile: {}): {} reads, {} inside, refused {:?}, {} leaked, {} flips",
        strategy.as_str(),
        hostile_label,
        tally.reads,
        tally.inside,
        tally.refused,
        tally.leaked,
        tally.flips
    );
    tally
}

fn fixture() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("root");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(root.join("inside_dir")).expect("mkdir");
    std::fs::create_dir_all(outside.join("outside_dir")).expect("mkdir");
    std::fs::write(root.join("inside.txt"), INSIDE).expect("write");
    std::fs::write(root.join("inside_dir/file"), INSIDE).expect("write");
    std::fs::write(outside.join("secret.txt"), SECRET).expect("write");
    std::fs::write(outside.join("outside_dir/file"), SECRET).expect("write");
    (tmp, root)
}

fn assert_only(tally: &Tally, allowed: &[&str]) {
    assert_eq!(tally.leaked, 0, "outside bytes were read");
    for (reason, count) in &tally.refused {
        assert!(
            allowed.iter().any(|code| reason.starts_with(code)),
            "unexpected outcome {reason} ({count} times)"
        );
    }
}

#[test]
fn final_symlink_flip_never_leaks() {
    let (_tmp, root) = fixture();
    for strategy in strategies() {
        let tally = race(
            strategy,
            &root,
            "target",
            Swap::Link("inside.txt"),
            Swap::Link("../outside/secret.txt"),
            "target",
        );
        assert_only(&tally, &["outside_root"]);
        assert_eq!(
            tally.inside + tally.refused.values().sum::<usize>(),
            tally.reads
        );
    }
}

#[test]
fn intermediate_directory_flip_never_leaks() {
    let (_tmp, root) = fixture();
    for strategy in strategies() {
        let tally = race(
            strategy,
            &root,
            "d",
            Swap::Link("inside_dir"),
            Swap::Link("../outside/outside_dir"),
            "d/file",
        );
        assert_only(&tally, &["outside_root"]);
    }
}

#[test]
fn absolute_symlink_flip_never_leaks() {
    let (tmp, root) = fixture();
    // Leak the absolute outside path for the lifetime of the test binary: the
    // swap needs a `'static` target.
    let outside: &'static str = Box::leak(
        tmp.path()
            .join("outside/secret.txt")
            .to_str()
            .expect("utf8")
            .to_owned()
            .into_boxed_str(),
    );
    for strategy in strategies() {
        let tally = race(
            strategy,
            &root,
            "target",
            Swap::Link("inside.txt"),
            Swap::Link(outside),
            "target",
        );
        assert_only(&tally, &["outside_root"]);
    }
}

/// A regular file and a fifo alternate under one name: the reader must never
/// open the fifo (it would block) and never report it as a regular file.
#[test]
fn file_fifo_flip_never_blocks() {
    let (_tmp, root) = fixture();
    for strategy in strategies() {
        let tally = race(
            strategy,
            &root,
            "pipe",
            Swap::File(INSIDE),
            Swap::Fifo,
            "pipe",
        );
        let fifo = format!(
            "{}",
            corral_backend::contained::ContainmentReason::NotRegularFile {
                kind: FileKind::Fifo
            }
        );
        assert_only(&tally, &[fifo.as_str()]);
    }
}
