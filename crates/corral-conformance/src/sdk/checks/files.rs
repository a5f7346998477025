//! `files` and `file-modes`.

use corral_backend::{ErrorCode, FileType};

use crate::failure::{Failure, ensure, shown};
use crate::sdk::scope::SdkScope;

/// The directory every file check works in.
const DIR: &str = "/workspace/conformance-files";

/// Write, read, list, stat, mkdir, ranged read and remove, each checked
/// against what was written.
pub(crate) async fn files(scope: &mut SdkScope) -> Result<(), Failure> {
    let sandbox = scope.sandbox().await?;
    let id = sandbox.id().to_string();
    let fs = sandbox.backend().files();
    let fail = |what: &str| {
        let what = what.to_string();
        move |e| Failure::step(format_args!("files.{what}"), e)
    };
    fs.mkdir(&id, &format!("{DIR}/nested/deeper"), true)
        .await
        .map_err(fail("mkdir (parents)"))?;
    let path = format!("{DIR}/hello.txt");
    let content = b"hello, files\nsecond line\n";
    fs.write(&id, &path, content, None)
        .await
        .map_err(fail("write"))?;
    let read = fs.read(&id, &path).await.map_err(fail("read"))?;
    ensure(read == content, || {
        format!(
            "files.read {path}: {}, wrote {}",
            shown(&read),
            shown(content)
        )
    })?;
    let binary: Vec<u8> = (0..=255u8).collect();
    let bin_path = format!("{DIR}/nested/binary.bin");
    fs.write(&id, &bin_path, &binary, None)
        .await
        .map_err(fail("write (binary)"))?;
    let back = fs
        .read(&id, &bin_path)
        .await
        .map_err(fail("read (binary)"))?;
    ensure(back == binary, || {
        format!(
            "files.read {bin_path}: 256 bytes written, {} differ",
            back.len()
        )
    })?;

    let stat = fs.stat(&id, &path).await.map_err(fail("stat"))?;
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
    let dir_stat = fs.stat(&id, DIR).await.map_err(fail("stat (directory)"))?;
    ensure(dir_stat.file_type == FileType::Directory, || {
        format!(
            "files.stat {DIR}: {:?}, expected a directory",
            dir_stat.file_type
        )
    })?;

    let entries = fs.list(&id, DIR).await.map_err(fail("list"))?;
    let names: Vec<(&str, FileType)> = entries
        .iter()
        .map(|e| (e.name.as_str(), e.file_type))
        .collect();
    ensure(
        names
            == [
                ("hello.txt", FileType::File),
                ("nested", FileType::Directory),
            ],
        || format!("files.list {DIR}: {names:?}, expected hello.txt (file) and nested (directory)"),
    )?;

    if let Some(ranged) = fs.ranged() {
        let part = ranged
            .read_range(&id, &path, 7, 5)
            .await
            .map_err(fail("read_range"))?;
        ensure(part == b"files", || {
            format!(
                "files.read_range {path} 7+5: {}, expected \"files\"",
                shown(&part)
            )
        })?;
        let tail = ranged
            .read_range(&id, &path, 20, 100)
            .await
            .map_err(fail("read_range (past EOF)"))?;
        ensure(tail == content[20..], || {
            format!(
                "files.read_range {path} 20+100: {}, expected the rest up to EOF",
                shown(&tail)
            )
        })?;
    }

    fs.remove(&id, &path, false).await.map_err(fail("remove"))?;
    match fs.stat(&id, &path).await {
        Err(e) if e.code == ErrorCode::NotFound => {}
        Err(e) => {
            return Err(Failure::step(
                "files.stat after remove: expected not_found",
                e,
            ));
        }
        Ok(s) => {
            return Err(Failure::new(format_args!(
                "files.stat after remove: {path} still exists ({:?})",
                s.file_type
            )));
        }
    }
    match fs.read(&id, &path).await {
        Err(e) if e.code == ErrorCode::NotFound => {}
        Err(e) => {
            return Err(Failure::step(
                "files.read after remove: expected not_found",
                e,
            ));
        }
        Ok(_) => {
            return Err(Failure::new(
                "files.read after remove: the file is still readable",
            ));
        }
    }
    fs.remove(&id, DIR, true)
        .await
        .map_err(fail("remove (recursive)"))?;
    let left = fs.list(&id, "/workspace").await.map_err(fail("list"))?;
    ensure(!left.iter().any(|e| e.name == "conformance-files"), || {
        format!("files.remove {DIR} recursive: still listed in /workspace")
    })
}

/// A file written with mode `0o755` reads back as `0o755`, and its content
/// is intact.
pub(crate) async fn file_modes(scope: &mut SdkScope) -> Result<(), Failure> {
    let sandbox = scope.sandbox().await?;
    let id = sandbox.id().to_string();
    let fs = sandbox.backend().files();
    let path = "/workspace/run-me.sh";
    let content = b"#!/bin/sh\necho ran\n";
    fs.write(&id, path, content, Some(0o755))
        .await
        .map_err(|e| Failure::step("files.write (mode 0o755)", e))?;
    let stat = fs
        .stat(&id, path)
        .await
        .map_err(|e| Failure::step("files.stat", e))?;
    ensure(stat.mode & 0o7777 == 0o755, || {
        format!(
            "files.stat {path}: mode {:o}, written as 755",
            stat.mode & 0o7777
        )
    })?;
    fs.write(&id, path, content, Some(0o600))
        .await
        .map_err(|e| Failure::step("files.write (mode 0o600)", e))?;
    let stat = fs
        .stat(&id, path)
        .await
        .map_err(|e| Failure::step("files.stat", e))?;
    ensure(stat.mode & 0o7777 == 0o600, || {
        format!(
            "files.stat {path}: mode {:o}, rewritten as 600",
            stat.mode & 0o7777
        )
    })
}
