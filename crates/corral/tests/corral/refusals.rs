//! Bad input on the command line gets one line naming what was wrong.
//!
//! | input                                  | expected refusal                                                       |
//! |----------------------------------------|------------------------------------------------------------------------|
//! | `corral run`                           | `missing required argument: <CMD>... (see corral run --help)`          |
//! | `corral exec`                          | `missing required arguments: <ID>, <CMD>... (see corral exec --help)`  |
//! | `corral cp a`                          | `missing required argument: <DST> (see corral cp --help)`              |
//! | `corral rm`                            | `missing required argument: <ID>... (see corral rm --help)`            |
//! | `corral serve --backend memory`        | `missing required argument: --listen <ADDR> (see corral serve --help)` |
//! | `corral image import`                  | `missing required argument: <FILE> (see corral image import --help)`   |
//! | `corral evidence verify F`             | `missing required argument: --key <PUBFILE> (see corral evidence verify --help)` |
//! | `corral create --backend memory`       | `--backend memory: its sandboxes live only inside one process, …`      |
//! | `corral image import PROGRAM` (no tar) | `invalid image archive: PROGRAM: not a tar archive (plain, gzip or zstd)` |
//! | `corral run --memory 0 -- true`        | `invalid value '0' for '--memory <SIZE>': … (see corral run --help)`  |
//! | `corral create --cpus 0`               | `--cpus: size.cpus must be a positive number, got 0`                   |

use crate::cli::{Cli, one_error_line};

#[test]
fn a_missing_argument_is_named_with_where_help_is() {
    let cli = Cli::new();
    for (args, expected) in [
        (
            &["run"][..],
            "missing required argument: <CMD>... (see corral run --help)",
        ),
        (
            &["exec"],
            "missing required arguments: <ID>, <CMD>... (see corral exec --help)",
        ),
        (
            &["cp", "a"],
            "missing required argument: <DST> (see corral cp --help)",
        ),
        (
            &["rm"],
            "missing required argument: <ID>... (see corral rm --help)",
        ),
        (
            &["serve", "--backend", "memory"],
            "missing required argument: --listen <ADDR> (see corral serve --help)",
        ),
        (
            &["image", "import"],
            "missing required argument: <FILE> (see corral image import --help)",
        ),
        (
            &["evidence", "verify", "evidence.json"],
            "missing required argument: --key <PUBFILE> (see corral evidence verify --help)",
        ),
    ] {
        let line = one_error_line(&cli.run(args), "usage", 2);
        assert_eq!(
            line,
            format!("corral: error: [usage] {expected}"),
            "corral {args:?}"
        );
    }
}

#[test]
fn create_refuses_a_backend_whose_sandboxes_end_with_the_process() {
    let cli = Cli::new();
    let out = cli.run(&["create", "--backend", "memory"]);
    let line = one_error_line(&out, "usage", 2);
    assert_eq!(
        line,
        "corral: error: [usage] --backend memory: its sandboxes live only inside one \
         process, so this one would be gone when create exits; use it with `corral run`"
    );
    assert!(out.stdout.is_empty(), "no id of a sandbox that is gone");
}

#[test]
fn importing_a_file_that_is_not_an_archive_names_it_without_its_bytes() {
    let cli = Cli::new();
    let dir = tempfile::tempdir().unwrap();
    let mut elf = b"\x7fELF\x02\x01\x01\x00".to_vec();
    elf.extend((0..4096u32).map(|i| (i * 7 % 256) as u8));
    let text: String = (1..2000).map(|n| format!("{n}\n")).collect();
    for (name, bytes) in [("program", elf), ("notes.txt", text.into_bytes())] {
        let file = dir.path().join(name);
        std::fs::write(&file, bytes).unwrap();
        let out = cli.run(&["image", "import", file.to_str().unwrap()]);
        let line = one_error_line(&out, "invalid_input", 2);
        assert_eq!(
            line,
            format!(
                "corral: error: [invalid_input] invalid image archive: {}: not a tar \
                 archive (plain, gzip or zstd)",
                file.display()
            ),
            "{name}"
        );
    }
}

#[test]
fn a_bad_value_names_its_flag_and_where_help_is() {
    let cli = Cli::new();
    for (args, expected) in [
        (
            &["run", "--memory", "0", "--", "true"][..],
            "invalid value '0' for '--memory <SIZE>': \"0\": a size must be more than 0 \
             bytes (see corral run --help)",
        ),
        (
            &["run", "--timeout", "soon", "--", "true"],
            "invalid value 'soon' for '--timeout <SECS>': invalid float literal (see corral \
             run --help)",
        ),
        (
            &["create", "--cpus", "0"],
            "--cpus: size.cpus must be a positive number, got 0",
        ),
        (
            &["create", "-p", "0"],
            "--port: ports: port 0 is not a port",
        ),
    ] {
        let line = one_error_line(&cli.run(args), "usage", 2);
        assert_eq!(
            line,
            format!("corral: error: [usage] {expected}"),
            "corral {args:?}"
        );
    }
}
