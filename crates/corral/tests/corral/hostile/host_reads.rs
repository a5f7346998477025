//! `corral cp` out of a sandbox streams: a huge file costs the host one
//! chunk, not the file.

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::{Cli, linux_available, text};

/// The peak resident set (`VmHWM`) of process `pid`, in bytes, while it runs.
fn peak_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Issue item 16: `corral cp ID:/workspace/sparse -` of a 1 GiB sparse file
/// streams all of it while the `corral` process's peak RSS stays under
/// 64 MiB (it held the whole file before).
#[test]
fn cp_of_a_1_gib_sparse_file_keeps_host_rss_bounded() {
    let test = "cp_of_a_1_gib_sparse_file_keeps_host_rss_bounded";
    if !linux_available(test) {
        return;
    }
    let cli = Cli::new();
    let out = cli.run(&["create", "--backend", "linux"]);
    assert!(out.status.success(), "create: {}", text(&out.stderr));
    let id = text(&out.stdout).trim().to_string();
    let make = "truncate -s 1G /workspace/sparse \
        && printf end | dd of=/workspace/sparse bs=1 seek=1073741821 conv=notrunc status=none";
    let out = cli.run(&["exec", &id, "--", "sh", "-c", make]);
    assert!(out.status.success(), "exec: {}", text(&out.stderr));

    let mut child = cli
        .cmd(&["cp", &format!("{id}:/workspace/sparse"), "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let drain = std::thread::spawn(move || {
        let (mut total, mut last, mut buf) = (0u64, Vec::new(), vec![0u8; 1 << 16]);
        loop {
            let n = stdout.read(&mut buf).unwrap();
            if n == 0 {
                return (total, last);
            }
            total += n as u64;
            last = buf[..n].to_vec();
        }
    });
    let (mut peak, started) = (0u64, Instant::now());
    let status = loop {
        if let Some(rss) = peak_rss(child.id()) {
            peak = peak.max(rss);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(300), "cp finishes");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "cp: {err}");
    let (total, last) = drain.join().unwrap();
    assert_eq!(total, 1 << 30, "every byte came out");
    assert!(last.ends_with(b"end"), "the data at the end came out");
    println!("corral cp peak RSS: {} KiB", peak >> 10);
    assert!(peak > 0, "the peak RSS was measured");
    assert!(peak < 64 << 20, "corral cp peaked at {} MiB", peak >> 20);
    let out = cli.run(&["rm", &id]);
    assert!(out.status.success(), "rm: {}", text(&out.stderr));
}
