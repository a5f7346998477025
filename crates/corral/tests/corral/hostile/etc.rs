//! Issue items 2 and 10 through the command line: the host's `/etc` does
//! not show, `corral cp` sees the tree the commands see, and a copy into a
//! read-only part fails in one line.

use super::harness::{Cli, text};

/// Issue item 2: `corral run -- cat /etc/shadow` fails and prints nothing
/// of the host's file.
#[test]
fn issue_2_run_cat_etc_shadow_fails() {
    let Some(cli) = Cli::linux("issue_2_run_cat_etc_shadow_fails") else {
        return;
    };
    for path in ["/etc/shadow", "/etc/gshadow", "/etc/ssl/private"] {
        let out = cli.run(&["run", "--backend", "linux", "--", "cat", path]);
        assert_ne!(out.status.code(), Some(0), "cat {path} succeeded");
        assert!(out.stdout.is_empty(), "cat {path}: {}", text(&out.stdout));
    }
}

/// Issue item 10: `corral cp ID:/etc/passwd -` prints what `corral exec ID
/// -- cat /etc/passwd` prints (the curated file, with `user`).
#[test]
fn issue_10_cp_out_of_etc_reads_what_exec_reads() {
    let Some(cli) = Cli::linux("issue_10_cp_out_of_etc_reads_what_exec_reads") else {
        return;
    };
    let id = cli.create();
    for path in ["/etc/passwd", "/etc/hostname", "/usr/bin/env"] {
        let copied = cli.run(&["cp", &format!("{id}:{path}"), "-"]);
        assert!(
            copied.status.success(),
            "cp {path}: {}",
            text(&copied.stderr)
        );
        let cat = cli.run(&["exec", &id, "--", "cat", path]);
        assert!(cat.status.success(), "cat {path}: {}", text(&cat.stderr));
        assert_eq!(copied.stdout, cat.stdout, "{path}");
    }
    let passwd = text(&cli.run(&["cp", &format!("{id}:/etc/passwd"), "-"]).stdout);
    assert!(passwd.contains("user:x:1000:1000:"), "{passwd}");
}

/// Issue item 10: `echo x | corral cp - ID:/etc/x` (and into
/// `/usr/local/bin`) exits non-zero with one line saying it is read-only,
/// and nothing appears inside.
#[test]
fn issue_10_cp_into_read_only_parts_fails_in_one_line() {
    let Some(cli) = Cli::linux("issue_10_cp_into_read_only_parts_fails_in_one_line") else {
        return;
    };
    let id = cli.create();
    for path in ["/etc/x", "/usr/local/bin/x", "/usr/x"] {
        let out = cli.run_with_stdin(&["cp", "-", &format!("{id}:{path}")], b"x\n");
        let err = text(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "cp into {path} succeeded");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "one line for {path}: {err:?}");
        assert!(
            lines[0].starts_with("corral: error: [invalid_input] ")
                && lines[0].contains("read-only"),
            "{path}: {err}"
        );
        let inside = cli.run(&["exec", &id, "--", "test", "-e", path]);
        assert_ne!(inside.status.code(), Some(0), "{path} appeared inside");
    }
    // The writable parts still take a copy.
    let out = cli.run_with_stdin(&["cp", "-", &format!("{id}:/workspace/x")], b"x\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let cat = cli.run(&["exec", &id, "--", "cat", "/workspace/x"]);
    assert_eq!(text(&cat.stdout), "x\n");
}
