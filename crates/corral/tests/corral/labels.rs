//! The `corral` label each front writes, as documented: `corral=cli` for
//! what the command line makes (`run`, `create`); `corral=mcp` for an MCP
//! session's sandbox is in `mcp.rs`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use crate::cli::{Cli, text};

/// The `corral` label of every sandbox `cli` lists.
fn corral_labels(cli: &Cli) -> Vec<String> {
    cli.listed()
        .iter()
        .map(|s| {
            s["labels"]["corral"]
                .as_str()
                .unwrap_or("(none)")
                .to_string()
        })
        .collect()
}

#[test]
fn run_and_create_label_their_sandboxes_corral_cli() {
    let cli = Cli::new();
    let mut run = cli
        .cmd(&["run", "--", "sh", "-c", "echo started; sleep 30"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn corral run");
    let mut stdout = BufReader::new(run.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).expect("reading stdout");
    let during_run = corral_labels(&cli);
    let _ = Command::new("kill")
        .args(["-TERM", &run.id().to_string()])
        .status();
    let _ = run.wait();
    assert_eq!(line, "started\n");
    assert_eq!(during_run, ["cli"], "corral run's sandbox");

    let out = cli.run(&["create"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let id = text(&out.stdout).trim().to_string();
    let created = corral_labels(&cli);
    cli.run(&["rm", &id]);
    assert_eq!(created, ["cli"], "corral create's sandbox");
}
