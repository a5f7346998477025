//! `files`, `file-helpers` and `file-modes`, through `sandbox.files()`.

use corral_backend::{ErrorCode, FileType};

use crate::failure::{Failure, ensure, shown};
use crate::sdk::scope::{SdkScope, expect_code, step};

/// The directory every file check works in.
const DIR: &str = "/workspace/conformance-files";

/// Write, read, list, stat, mkdir, ranged read, exists and remove, each
/// checked against what was written.
pub(crate) async fn files(scope: &mut SdkScope) -> Result<(), Failure> {
    let sandbox = scope.sandbox().await?;
    let fs = sandbox.files();
    step(
        "files.mkdir",
        fs.mkdir(&format!("{DIR}/nested/deeper")).await,
    )?;
    let path = format!("{DIR}/hello.txt");
    let content = b"hello, files\nsecond line\n";
    step("files.write", fs.write(&path, content).await)?;
    let read = step("files.read", fs.read(&path).await)?;
    ensure(read == content, || {
        format!(
            "files.read {path}: {}, wrote {}",
            shown(&read),
            shown(content)
        )
    })?;
    let binary: Vec<u8> = (0..=255u8).rev().collect();
    let bin_path = format!("{DIR}/made/by/write/binary.bin");
    step(
        "files.write (missing parents)",
        fs.write(&bin_path, &binary).await,
    )?;
    let back = step("files.read (binary)", fs.read(&bin_path).await)?;
    ensure(back == binary, || {
        format!(
            "files.read {bin_path}: the 256 bytes written came back as {} bytes, or changed",
            back.len()
        )
    })?;

    let stat = step("files.stat", fs.stat(&path).await)?;
    ensure(
        stat.file_type == FileType::File && stat.size == content.len() as u64,
        || {
            format!(
                "files.stat {path}: {:?} of {} bytes, expected a file of {}",
                stat.file_type,
                stat.size,
                content.len()
            )
        },
    )?;
    let dir_stat = step("files.stat (directory)", fs.stat(DIR).await)?;
    ensure(dir_stat.file_type == FileType::Directory, || {
        format!(
            "files.stat {DIR}: {:?}, expected a directory",
            dir_stat.file_type
        )
    })?;

    let entries = step("files.list", fs.list(DIR).await)?;
    let names: Vec<(&str, FileType)> = entries
        .iter()
        .map(|e| (e.name.as_str(), e.file_type))
        .collect();
    let expected = [
        ("hello.txt", FileType::File),
        ("made", FileType::Directory),
        ("nested", FileType::Directory),
    ];
    ensure(names == expected, || {
        format!("files.list {DIR}: {names:?}, expected {expected:?}")
    })?;

    let part = step("files.read_range", fs.read_range(&path, 7, 5).await)?;
    ensure(part == b"files", || {
        format!(
            "files.read_range {path} 7+5: {}, expected \"files\"",
            shown(&part)
        )
    })?;
    let tail = step(
        "files.read_range (past EOF)",
        fs.read_range(&path, 20, 100).await,
    )?;
    ensure(tail == content[20..], || {
        format!(
            "files.read_range {path} 20+100: {}, expected the rest up to EOF",
            shown(&tail)
        )
    })?;

    step("files.remove", fs.remove(&path, false).await)?;
    let exists = step("files.exists", fs.exists(&path).await)?;
    ensure(!exists, || {
        format!("files.exists {path}: true after remove")
    })?;
    expect_code(
        "files.read after remove",
        fs.read(&path).await,
        ErrorCode::NotFound,
    )?;
    expect_code(
        "files.remove of nothing",
        fs.remove(&path, false).await,
        ErrorCode::NotFound,
    )?;
    step("files.remove (recursive)", fs.remove(DIR, true).await)?;
    let exists = step("files.exists", fs.exists(DIR).await)?;
    ensure(!exists, || {
        format!("files.remove {DIR} recursive: it still exists")
    })
}

/// The helpers the core builds on the primitives: `edit` (one occurrence
/// replaced, none and several refused), `search`, and `mark`/`changes`.
pub(crate) async fn file_helpers(scope: &mut SdkScope) -> Result<(), Failure> {
    let sandbox = scope.sandbox().await?;
    let fs = sandbox.files();
    let main = format!("{DIR}/src/main.txt");
    let notes = format!("{DIR}/notes.txt");
    let gone = format!("{DIR}/gone.txt");
    step(
        "files.write",
        fs.write(&main, "fn main() {\n    greet(\"world\");\n}\n")
            .await,
    )?;
    step(
        "files.write",
        fs.write(&notes, "greet twice\ngreet\n").await,
    )?;
    step("files.write", fs.write(&gone, "to be removed\n").await)?;
    let mark = step("files.mark", fs.mark(DIR).await)?;

    let edited = step(
        "files.edit",
        fs.edit(&main, "greet(\"world\")", "greet(\"corral\")")
            .await,
    )?;
    ensure(edited.replacements == 1, || {
        format!(
            "files.edit: {} replacements, expected 1",
            edited.replacements
        )
    })?;
    let text = step("files.read_text", fs.read_text(&main).await)?;
    ensure(text == "fn main() {\n    greet(\"corral\");\n}\n", || {
        format!("files.edit left {text:?}")
    })?;
    expect_code(
        "files.edit of a missing string",
        fs.edit(&main, "not in the file", "x").await,
        ErrorCode::NotFound,
    )?;
    expect_code(
        "files.edit of a string found twice",
        fs.edit(&notes, "greet", "x").await,
        ErrorCode::Conflict,
    )?;

    let found = step("files.search", fs.search("greet\\(", DIR).await)?;
    let hits: Vec<(&str, usize, &str)> = found
        .iter()
        .map(|m| (m.path.as_str(), m.line_number, m.line.as_str()))
        .collect();
    ensure(
        hits == [(main.as_str(), 2, "    greet(\"corral\");")],
        || format!("files.search greet\\( in {DIR}: {hits:?}, expected line 2 of {main}"),
    )?;

    step("files.remove", fs.remove(&gone, false).await)?;
    let added = format!("{DIR}/added.txt");
    step("files.write", fs.write(&added, "new\n").await)?;
    let changes = step("files.changes", fs.changes(&mark).await)?;
    ensure(
        changes.added == [added.clone()]
            && changes.modified == [main.clone()]
            && changes.removed == [gone.clone()],
        || {
            format!(
                "files.changes: added {:?} modified {:?} removed {:?}, expected [{added}] [{main}] [{gone}]",
                changes.added, changes.modified, changes.removed
            )
        },
    )
}

/// A file written with mode `0o755` reads back as `0o755` (and one
/// rewritten with `0o600` as `0o600`), its content intact.
pub(crate) async fn file_modes(scope: &mut SdkScope) -> Result<(), Failure> {
    let sandbox = scope.sandbox().await?;
    let fs = sandbox.files();
    let path = "/workspace/run-me.sh";
    let content = b"#!/bin/sh\necho ran\n";
    for mode in [0o755, 0o600] {
        step(
            &format!("files.write with mode {mode:o}"),
            fs.write_with_mode(path, content, mode).await,
        )?;
        let stat = step("files.stat", fs.stat(path).await)?;
        ensure(stat.mode & 0o7777 == mode, || {
            format!(
                "files.stat {path}: mode {:o}, written as {mode:o}",
                stat.mode & 0o7777
            )
        })?;
    }
    let back = step("files.read", fs.read(path).await)?;
    ensure(back == content, || {
        format!("files.read {path}: {}", shown(&back))
    })
}
