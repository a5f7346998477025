//! `corral gc`, driven as a user drives it: the real binary on a private
//! state directory holding what a crash left — a sandbox whose PID 1 died
//! and a half-made sandbox whose creator is gone — next to a live sandbox.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use corral_backend::{Backend, CreateRequest};
use corral_backend_linux::LinuxBackend;

fn gc(state: &std::path::Path, json: bool) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_corral"));
    c.arg("gc");
    if json {
        c.arg("--json");
    }
    c.env("CORRAL_STATE_DIR", state)
        .stdin(Stdio::null())
        .output()
        .expect("spawn corral")
}

fn json_of(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "corral gc: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("gc --json is JSON")
}

fn ids(v: &serde_json::Value) -> Vec<String> {
    let mut ids: Vec<String> = v
        .as_array()
        .expect("an array of ids")
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

/// Destroys every linux sandbox of the directory when dropped.
struct Cleanup(Option<LinuxBackend>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some(b) = &self.0 {
            let _ = b.destroy_all();
        }
    }
}

#[test]
fn gc_on_an_empty_state_dir_reclaims_nothing() {
    let state = tempfile::tempdir().unwrap();
    let v = json_of(&gc(state.path(), true));
    assert_eq!(ids(&v["local"]["sandboxes"]), Vec::<String>::new());
    match (&v["linux"]["swept"], &v["linux"]["skipped"]) {
        (swept, serde_json::Value::Null) => {
            assert_eq!(ids(&swept["sandboxes"]), Vec::<String>::new());
            assert_eq!(swept["processes_killed"], 0);
        }
        (_, why) => println!("SKIP gc_on_an_empty_state_dir_reclaims_nothing (linux part): {why}"),
    }
    let human = gc(state.path(), false);
    assert!(human.status.success());
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.lines().any(|l| l.starts_with("linux: ")), "{text}");
    assert!(
        text.lines()
            .any(|l| l == "local: reclaimed 0 half-created sandbox(es)"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gc_reclaims_crash_leftovers_and_spares_the_live() {
    let test = "gc_reclaims_crash_leftovers_and_spares_the_live";
    // The corral binary finds corral-init next to itself; this test finds
    // it in the same directory (the parent of its own).
    let init: PathBuf = PathBuf::from(env!("CARGO_BIN_EXE_corral")).with_file_name("corral-init");
    if !init.is_file() {
        println!("SKIP {test}: corral-init is not built next to corral");
        return;
    }
    if let Err(why) = LinuxBackend::available() {
        println!("SKIP {test}: {why}");
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let b = LinuxBackend::open(state.path()).unwrap();
    let _cleanup = Cleanup(Some(b.clone()));
    let live = b.create(CreateRequest::default()).await.unwrap().id;
    let dead = b.create(CreateRequest::default()).await.unwrap().id;
    let pid = b.native(&dead).await.unwrap()["init_pid"].as_u64().unwrap() as u32;
    let killed = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success(), "kill -9 PID 1 of {dead}");
    for _ in 0..500 {
        let gone = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.contains(") Z "))
            .unwrap_or(true);
        if gone {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // A half-made sandbox whose creator (no such process) is gone.
    let half = "lnx-00000000000000ff".to_string();
    let half_dir = state.path().join("linux/sandboxes").join(&half);
    std::fs::create_dir(&half_dir).unwrap();
    std::fs::write(half_dir.join("creator"), "4294967295 1").unwrap();

    let v = json_of(&gc(state.path(), true));
    let swept = &v["linux"]["swept"];
    let mut expected = vec![dead.clone(), half.clone()];
    expected.sort();
    assert_eq!(ids(&swept["sandboxes"]), expected, "{v}");
    assert_eq!(ids(&swept["spared"]), vec![live.clone()], "{v}");
    assert!(!half_dir.exists());
    assert!(b.connect(&live).await.is_ok(), "the live sandbox stays");

    let again = json_of(&gc(state.path(), true));
    assert_eq!(
        ids(&again["linux"]["swept"]["sandboxes"]),
        Vec::<String>::new()
    );
    b.destroy(&live).await.unwrap();
}

/// `gc --idle` "never [destroys] one with a run in progress": a sandbox
/// with a `corral exec` running in it is spared, however long ago it was
/// used before; once the exec ended, the same sweep destroys it.
#[test]
fn gc_idle_spares_a_sandbox_while_corral_exec_runs_in_it() {
    let cli = crate::cli::Cli::new();
    let ok = |args: &[&str]| {
        let out = cli.run(args);
        assert!(
            out.status.success(),
            "corral {args:?}: {}",
            crate::cli::text(&out.stderr)
        );
        crate::cli::text(&out.stdout)
    };
    let id = ok(&["create", "--backend", "local"]).trim().to_string();
    assert!(!id.is_empty(), "create printed no id");
    let mut exec = cli
        .cmd(&["exec", "--backend", "local", &id, "--", "sleep", "4"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn corral exec");
    let sweep = ["gc", "--idle", "1s", "--backend", "local", "--json"];
    let listed = ["ls", "--backend", "local", "--json"];
    // Older than the idle bound by the time gc looks, with the exec running.
    std::thread::sleep(std::time::Duration::from_millis(2_000));
    ok(&sweep);
    let now = ok(&listed);
    assert!(
        now.contains(&id),
        "a sandbox with an exec running was reaped: {now}"
    );
    assert!(
        exec.wait().unwrap().success(),
        "the exec finished its command"
    );
    std::thread::sleep(std::time::Duration::from_millis(1_500));
    ok(&sweep);
    let now = ok(&listed);
    assert!(
        !now.contains(&id),
        "idle once the exec ended, and reaped: {now}"
    );
}
