//! Shell, job, environment and network built-ins: `sh`, script files,
//! `env`, `export`, `unset`, `setsid`, `kill`, `wait`, and the simulated `curl`.

use std::sync::Arc;

use corral_backend::Network;

use super::builtins::{self, out};
use super::io::Io;
use super::{Flow, Shell};
use crate::tree::Node;

fn is_name(s: &str) -> bool {
    let mut cs = s.chars();
    cs.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `sh [-cel] [SCRIPT|FILE] [ARGS…]` (also `bash`): a child shell in the
/// same task; `-l` (a login shell) reads no profile here.
pub(crate) async fn sh(sh: &Shell, io: &Io, args: &[String]) -> i32 {
    let mut i = 0;
    let mut command = false;
    let mut errexit = false;
    while let Some(a) = args.get(i) {
        if a == "--" {
            i += 1;
            break;
        }
        if a.len() < 2 || !a.starts_with('-') {
            break;
        }
        for c in a[1..].chars() {
            match c {
                'c' => command = true,
                'e' => errexit = true,
                // Tracing, nounset, a login shell and the like change no
                // result here.
                'x' | 'u' | 'v' | 'f' | 's' | 'l' => {}
                other => {
                    sh.err(io, &format!("sh: -{other}: invalid option\n")).await;
                    return 2;
                }
            }
        }
        i += 1;
    }
    let rest = &args[i..];
    let (script, params) = if command {
        let Some(script) = rest.first() else {
            sh.err(io, "sh: -c: option requires an argument\n").await;
            return 2;
        };
        let params = match rest.get(1..) {
            Some(p) if !p.is_empty() => p.to_vec(),
            _ => vec!["sh".to_string()],
        };
        (script.clone(), params)
    } else if let Some(file) = rest.first() {
        let text = sh.path(file).map_err(str::to_string).and_then(|c| {
            let tree = sh.sb.tree();
            tree.read(&c)
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .map_err(|e| e.strerror().to_string())
        });
        match text {
            Ok(t) => (t, rest.to_vec()),
            Err(e) => {
                sh.err(io, &format!("sh: cannot open {file}: {e}\n")).await;
                return 127;
            }
        }
    } else {
        let bytes = io.stdin.read_to_end().await;
        (
            String::from_utf8_lossy(&bytes).into_owned(),
            vec!["sh".into()],
        )
    };
    let mut child = sh.fork(io.clone());
    child.args = params;
    child.status = 0;
    child.errexit = errexit;
    child.last_bg = None;
    child.script(&script).await.code()
}

/// Runs `argv[0]` as a path: an executable file holding a shell script.
pub(crate) async fn script_file(sh: &Shell, argv: &[String], io: &Io) -> i32 {
    let argv0 = &argv[0];
    if !argv0.contains('/') {
        sh.err(io, &format!("sh: {argv0}: not found\n")).await;
        return 127;
    }
    let found = sh.path(argv0).ok().and_then(|c| {
        let tree = sh.sb.tree();
        tree.get(&c, true).ok().map(|(_, n)| match n {
            Node::File { data, mode, .. } if mode & 0o111 != 0 => {
                Ok(String::from_utf8_lossy(data).into_owned())
            }
            _ => Err(()),
        })
    });
    match found {
        None => {
            sh.err(io, &format!("sh: {argv0}: not found\n")).await;
            127
        }
        Some(Err(())) => {
            sh.err(io, &format!("sh: {argv0}: Permission denied\n"))
                .await;
            126
        }
        Some(Ok(text)) => {
            let mut child = sh.fork(io.clone());
            child.args = argv.to_vec();
            child.status = 0;
            child.last_bg = None;
            child.script(&text).await.code()
        }
    }
}

/// `env [-i] [NAME=VALUE…] [COMMAND…]`.
pub(crate) async fn env(sh: &mut Shell, io: &Io, args: &[String]) -> Flow {
    let mut i = 0;
    let mut vars = sh.vars.clone();
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "-i" | "-" => vars.clear(),
            "-u" => {
                i += 1;
                if let Some(n) = args.get(i) {
                    vars.remove(n);
                }
            }
            s => match s.split_once('=') {
                Some((k, v)) if is_name(k) => {
                    vars.insert(k.to_string(), v.to_string());
                }
                _ => break,
            },
        }
        i += 1;
    }
    if i == args.len() {
        let text: String = vars.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        return Flow::Next(sh.out(io, text.as_bytes()).await.err().unwrap_or(0));
    }
    let saved = std::mem::replace(&mut sh.vars, vars);
    let flow = builtins::run(sh, args[i..].to_vec(), io).await;
    sh.vars = saved;
    Flow::Next(flow.code())
}

pub(crate) async fn export(sh: &mut Shell, io: &Io, args: &[String]) -> i32 {
    let args: Vec<&String> = args.iter().filter(|a| *a != "-p").collect();
    if args.is_empty() {
        let text: String = sh
            .vars
            .iter()
            .map(|(k, v)| format!("export {k}='{}'\n", v.replace('\'', "'\\''")))
            .collect();
        out!(sh, io, text.as_bytes());
        return 0;
    }
    let mut status = 0;
    for a in args {
        let (name, value) = match a.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (a.as_str(), None),
        };
        if !is_name(name) {
            sh.err(io, &format!("sh: export: {a}: bad variable name\n"))
                .await;
            status = 1;
        } else if let Some(v) = value {
            sh.vars.insert(name.to_string(), v.to_string());
        }
    }
    status
}

pub(crate) fn unset(sh: &mut Shell, args: &[String]) -> i32 {
    for a in args.iter().filter(|a| !a.starts_with('-')) {
        sh.vars.remove(a);
    }
    0
}

fn signal_number(s: &str) -> Option<i32> {
    match s.parse::<i32>() {
        Ok(n) if (0..=64).contains(&n) => Some(n),
        Ok(_) => None,
        Err(_) => corral_backend::signal::number_of(&s.to_ascii_uppercase()),
    }
}

/// `kill [-s SIG | -SIG] PID…`: every signal but 0 ends the job (the
/// simulated processes install no handlers); 0 only checks it exists.
pub(crate) async fn kill(sh: &Shell, io: &Io, args: &[String]) -> i32 {
    let (sig, pids) = match args {
        [s, name, rest @ ..] if s == "-s" => (signal_number(name), rest),
        [flag, rest @ ..] if flag.len() > 1 && flag.starts_with('-') && flag != "--" => {
            (signal_number(&flag[1..]), rest)
        }
        rest => (Some(15), rest),
    };
    let pids = match pids {
        [dashes, rest @ ..] if dashes == "--" => rest,
        rest => rest,
    };
    let Some(sig) = sig else {
        sh.err(io, "sh: kill: invalid signal specification\n").await;
        return 1;
    };
    if pids.is_empty() {
        sh.err(io, "kill: usage: kill [-s sigspec | -signum] pid...\n")
            .await;
        return 2;
    }
    let mut status = 0;
    for p in pids {
        if let Some(pgid) = p.strip_prefix('-') {
            // A negative pid names a process group (a `setsid` session).
            match pgid
                .parse::<u32>()
                .ok()
                .and_then(|g| sh.sb.procs.group_of(g))
            {
                Some(g) if sig != 0 => g.abort(),
                Some(_) => {}
                None => {
                    sh.err(io, &format!("sh: kill: ({p}) - No such process\n"))
                        .await;
                    status = 1;
                }
            }
            continue;
        }
        let job = p.parse::<u32>().ok().and_then(|pid| sh.sb.procs.job(pid));
        match job {
            Some(j) if sig != 0 => j.kill(sig),
            Some(_) => {}
            None => {
                sh.err(io, &format!("sh: kill: ({p}) - No such process\n"))
                    .await;
                status = 1;
            }
        }
    }
    status
}

/// `setsid [-f] [-w] COMMAND [ARGS…]`: runs a command in a new process
/// group (its own session) that no exec owns, so it outlives the command
/// that started it; the group's id is the new task's pid (`$$` inside it).
/// It waits for the command unless `-f` is given; if the caller is killed
/// meanwhile, the new group runs on.
pub(crate) async fn setsid(sh: &Shell, io: &Io, args: &[String]) -> i32 {
    let mut i = 0;
    let mut fork = false;
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "-f" | "--fork" => fork = true,
            "-w" | "--wait" => {}
            "--" => {
                i += 1;
                break;
            }
            s if s.starts_with('-') => {
                sh.err(io, &format!("setsid: invalid option -- '{s}'\n"))
                    .await;
                return 1;
            }
            _ => break,
        }
        i += 1;
    }
    let argv = args[i..].to_vec();
    if argv.is_empty() {
        sh.err(io, "setsid: no command specified\n").await;
        return 1;
    }
    let group = sh.sb.procs.new_group();
    let mut child = sh.fork(io.clone());
    child.group = Arc::clone(&group);
    child.status = 0;
    child.last_bg = None;
    let spawned = group.spawn(move |pid| {
        child.pid = pid;
        async move {
            let io = child.io.clone();
            builtins::run(&mut child, argv, &io).await.code()
        }
    });
    match spawned {
        Ok(job) => {
            sh.sb.procs.set_leader(job.pid, &group);
            if fork { 0 } else { job.wait().await.code() }
        }
        Err(e) => {
            sh.err(io, &super::spawn_message(e)).await;
            1
        }
    }
}

/// `wait [PID…]`: waits for this shell's background jobs.
pub(crate) async fn wait(sh: &mut Shell, args: &[String]) -> i32 {
    if args.is_empty() {
        for job in std::mem::take(&mut sh.jobs) {
            job.wait().await;
        }
        return 0;
    }
    let mut status = 0;
    for a in args {
        let pos = a
            .parse::<u32>()
            .ok()
            .and_then(|pid| sh.jobs.iter().position(|j| j.pid == pid));
        status = match pos {
            Some(i) => sh.jobs.remove(i).wait().await.code(),
            None => 127,
        };
    }
    status
}

/// The host and port a URL names.
fn url_destination(url: &str) -> Option<(String, u16)> {
    let (default_port, rest) = match url.split_once("://") {
        Some((scheme, rest)) => match scheme.to_ascii_lowercase().as_str() {
            "http" => (80, rest),
            "https" => (443, rest),
            _ => return None,
        },
        None => (80, url),
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let authority = authority.rsplit('@').next().unwrap_or("");
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6.split_once(']')?;
        (h, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return None;
    }
    let port = match port {
        Some(p) => p.parse().ok()?,
        None => default_port,
    };
    Some((host.to_ascii_lowercase(), port))
}

/// The simulated `curl`: the sandbox's network policy decides whether the
/// destination is reachable; a reachable one answers with a fixed body
/// (the memory backend has no network at all).
pub(crate) async fn curl(sh: &Shell, io: &Io, args: &[String]) -> i32 {
    let mut url = None;
    let mut output = None;
    let mut write_out = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-o" | "--output" => output = it.next().cloned(),
            "-w" | "--write-out" => write_out = it.next().cloned(),
            "-H" | "-X" | "-d" | "--data" | "-m" | "--max-time" | "--connect-timeout" | "-u"
            | "-A" | "-e" => {
                it.next();
            }
            s if s.starts_with('-') => {}
            s => url = Some(s.to_string()),
        }
    }
    let Some(url) = url else {
        sh.err(io, "curl: no URL specified\n").await;
        return 2;
    };
    let Some((host, port)) = url_destination(&url) else {
        sh.err(io, &format!("curl: (3) URL rejected: {url}\n"))
            .await;
        return 3;
    };
    let refused = match &sh.sb.network {
        Network::None => Some("the sandbox's network is none"),
        Network::Allowlist { destinations }
            if !destinations
                .iter()
                .any(|d| d.host().eq_ignore_ascii_case(&host) && d.port() == port) =>
        {
            Some("not in the sandbox's network allowlist")
        }
        _ => None,
    };
    if let Some(why) = refused {
        let msg = format!("curl: (7) Failed to connect to {host} port {port}: {why}\n");
        if let Some(w) = &write_out {
            out!(sh, io, expand_write_out(w, "000").as_bytes());
        }
        sh.err(io, &msg).await;
        return 7;
    }
    let body = format!("memory backend: simulated response from {host}:{port}\n");
    match output {
        Some(path) if path == "/dev/null" => {}
        Some(path) => {
            let written = sh.path(&path).map_err(str::to_string).and_then(|c| {
                sh.sb
                    .write_file(&c, body.as_bytes(), None, false)
                    .map_err(|e| e.strerror().to_string())
            });
            if let Err(e) = written {
                sh.err(io, &format!("curl: (23) Failure writing {path}: {e}\n"))
                    .await;
                return 23;
            }
        }
        None => out!(sh, io, body.as_bytes()),
    }
    if let Some(w) = &write_out {
        out!(sh, io, expand_write_out(w, "200").as_bytes());
    }
    0
}

/// `curl -w FORMAT`: `%{http_code}` and `\n` are the variables it knows.
fn expand_write_out(format: &str, code: &str) -> String {
    format.replace("%{http_code}", code).replace("\\n", "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_destinations() {
        assert_eq!(
            url_destination("https://Example.com/x"),
            Some(("example.com".into(), 443))
        );
        assert_eq!(url_destination("http://h:8080?q"), Some(("h".into(), 8080)));
        assert_eq!(url_destination("u:p@h"), Some(("h".into(), 80)));
        assert_eq!(url_destination("http://[::1]:9/"), Some(("::1".into(), 9)));
        assert_eq!(url_destination("ftp://h"), None);
        assert_eq!(url_destination("http://:80"), None);
        assert_eq!(signal_number("KILL"), Some(9));
        assert_eq!(signal_number("term"), Some(15));
        assert_eq!(signal_number("0"), Some(0));
        assert_eq!(signal_number("NOPE"), None);
    }
}
