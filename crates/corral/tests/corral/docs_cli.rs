//! `corral completions SHELL` and `corral man DIR` through the binary: a
//! script for every shell clap knows, naming every command; a manual page
//! for the command line and for each command, each one well-formed roff;
//! a bad shell or an unwritable directory is one line.

use std::process::{Command, Output};

fn corral(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(args)
        .output()
        .expect("run corral")
}

/// The commands a person types, as `corral --help` lists them.
const COMMANDS: [&str; 17] = [
    "run",
    "create",
    "exec",
    "shell",
    "cp",
    "ls",
    "rm",
    "conformance",
    "evidence",
    "bench",
    "gc",
    "mcp",
    "serve",
    "image",
    "completions",
    "man",
    "kit",
];

fn has(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn every_shell_gets_a_script_naming_every_command() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = corral(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}: {:?}", out.stderr);
        let script = String::from_utf8(out.stdout).unwrap();
        for command in COMMANDS {
            assert!(script.contains(command), "{shell} lacks {command}");
        }
        // Where the shell itself is here, it must parse the script.
        let check = match shell {
            "bash" => Some(["bash", "-n"]),
            "zsh" => Some(["zsh", "-n"]),
            "fish" => Some(["fish", "--no-execute"]),
            _ => None,
        };
        let Some([program, flag]) = check else {
            continue;
        };
        if !has(program) {
            println!("skip: {program} is not installed, its script is not parsed");
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("corral.completion");
        std::fs::write(&path, &script).unwrap();
        let parsed = Command::new(program).arg(flag).arg(&path).output().unwrap();
        assert!(
            parsed.status.success(),
            "{shell}: {}",
            String::from_utf8_lossy(&parsed.stderr)
        );
    }
}

#[test]
fn the_manual_has_a_page_per_command_and_each_is_well_formed() {
    let dir = tempfile::tempdir().unwrap();
    let man = dir.path().join("man1");
    let out = corral(&["man", man.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{:?}", out.stderr);
    let said = String::from_utf8(out.stdout).unwrap();
    let mut pages: Vec<String> = std::fs::read_dir(&man)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    pages.sort();
    assert_eq!(
        said,
        format!(
            "corral: wrote {} manual pages to {} ({} new)\n",
            pages.len(),
            man.display(),
            pages.len()
        )
    );
    assert!(pages.contains(&"corral.1".to_string()), "{pages:?}");
    for command in COMMANDS {
        let page = format!("corral-{command}.1");
        assert!(pages.contains(&page), "no {page} in {pages:?}");
    }
    for page in &pages {
        let text = std::fs::read_to_string(man.join(page)).unwrap();
        let name = page.trim_end_matches(".1");
        assert!(text.contains(&format!("\n.TH {name} 1")), "{page}");
        assert!(text.contains(".SH NAME"), "{page}");
    }
    if !has("groff") {
        println!("skip: groff is not installed, the pages are not rendered");
        return;
    }
    for page in &pages {
        let render = Command::new("groff")
            .args(["-k", "-man", "-Tutf8", "-z", "-ww"])
            .arg(man.join(page))
            .output()
            .unwrap();
        assert!(render.status.success(), "{page}");
        assert!(
            render.stderr.is_empty(),
            "{page}: {}",
            String::from_utf8_lossy(&render.stderr)
        );
    }
    // A second run rewrites the same pages: none is new.
    let again = corral(&["man", man.to_str().unwrap()]);
    assert!(
        String::from_utf8(again.stdout)
            .unwrap()
            .ends_with("(0 new)\n"),
        "{:?}",
        again.stderr
    );
}

#[test]
fn a_bad_shell_or_directory_is_one_line() {
    let out = corral(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("tcsh"), "{stderr}");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let out = corral(&["man", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("corral: error: [io] making "),
        "{stderr}"
    );
}
