//! The built-in commands, and how a command name is found.
//!
//! Text commands live here; file commands in [`super::fsops`]; shells,
//! jobs, environment and network in [`super::procops`].

use super::io::Io;
use super::{BoxFut, Flow, Shell, fsops, procops};

/// Every command the memory shell knows.
pub(crate) const BUILTINS: &[&str] = &[
    ":", "[", "bash", "cat", "cd", "curl", "echo", "env", "exit", "export", "false", "head",
    "kill", "ln", "ls", "mkdir", "mkfifo", "printf", "pwd", "read", "rm", "setsid", "sh", "sleep",
    "test", "touch", "true", "unset", "wait", "wc", "yes",
];

/// Directories whose commands are the built-ins (`/bin/echo` is `echo`).
const BIN_DIRS: &[&str] = &[
    "/bin",
    "/usr/bin",
    "/usr/local/bin",
    "/sbin",
    "/usr/sbin",
    "/usr/local/sbin",
];

/// The built-in `argv0` names, if any.
fn builtin_name(argv0: &str) -> Option<&'static str> {
    let name = match argv0.rsplit_once('/') {
        Some((dir, base)) if BIN_DIRS.contains(&dir) => base,
        Some(_) => return None,
        None => argv0,
    };
    BUILTINS.iter().copied().find(|b| *b == name)
}

/// Runs one command: a built-in, or a script file given by path.
pub(crate) fn run<'a>(sh: &'a mut Shell, argv: Vec<String>, io: &'a Io) -> BoxFut<'a, Flow> {
    Box::pin(async move {
        let Some(argv0) = argv.first() else {
            return Flow::Next(0);
        };
        let args = &argv[1..];
        let Some(name) = builtin_name(argv0) else {
            return Flow::Next(procops::script_file(sh, &argv, io).await);
        };
        let code = match name {
            ":" | "true" => 0,
            "false" => 1,
            "echo" => echo(sh, io, args).await,
            "printf" => printf(sh, io, args).await,
            "cat" => cat(sh, io, args).await,
            "head" => head(sh, io, args).await,
            "wc" => wc(sh, io, args).await,
            "yes" => yes(sh, io, args).await,
            "read" => read(sh, io, args).await,
            "pwd" => sh
                .out(io, format!("{}\n", sh.cwd).as_bytes())
                .await
                .err()
                .unwrap_or(0),
            "sleep" => sleep(sh, io, args).await,
            "exit" => return exit(sh, io, args).await,
            "cd" => fsops::cd(sh, io, args).await,
            "ls" => fsops::ls(sh, io, args).await,
            "mkdir" => fsops::mkdir(sh, io, args).await,
            "mkfifo" => fsops::mkfifo(sh, io, args).await,
            "rm" => fsops::rm(sh, io, args).await,
            "touch" => fsops::touch(sh, io, args).await,
            "ln" => fsops::ln(sh, io, args).await,
            "test" => fsops::test(sh, io, args, false).await,
            "[" => fsops::test(sh, io, args, true).await,
            // `bash` is this shell too: programs that spell their shell
            // `/bin/bash -l -c …` (E2B's SDKs do) run here unchanged.
            "sh" | "bash" => procops::sh(sh, io, args).await,
            "env" => return procops::env(sh, io, args).await,
            "export" => procops::export(sh, io, args).await,
            "unset" => procops::unset(sh, args),
            "kill" => procops::kill(sh, io, args).await,
            "setsid" => procops::setsid(sh, io, args).await,
            "wait" => procops::wait(sh, args).await,
            "curl" => procops::curl(sh, io, args).await,
            other => {
                sh.err(io, &format!("sh: {other}: not found\n")).await;
                127
            }
        };
        Flow::Next(code)
    })
}

/// Writes to stdout or returns the status the command stops with.
macro_rules! out {
    ($sh:expr, $io:expr, $bytes:expr) => {
        if let Err(code) = $sh.out($io, $bytes).await {
            return code;
        }
    };
}
pub(crate) use out;

async fn echo(sh: &Shell, io: &Io, args: &[String]) -> i32 {
    let mut i = 0;
    let mut newline = true;
    while args.get(i).is_some_and(|a| a == "-n") {
        newline = false;
        i += 1;
    }
    let mut s = args[i..].join(" ");
    if newline {
        s.push('\n');
    }
    out!(sh, io, s.as_bytes());
    0
}

/// Interprets `printf`'s backslash escapes in `s` into `out`.
fn escape(c: char, out: &mut String) {
    match c {
        'n' => out.push('\n'),
        't' => out.push('\t'),
        'r' => out.push('\r'),
        'a' => out.push('\x07'),
        'b' => out.push('\x08'),
        'f' => out.push('\x0c'),
        'v' => out.push('\x0b'),
        '\\' => out.push('\\'),
        '"' => out.push('"'),
        '\'' => out.push('\''),
        other => {
            out.push('\\');
            out.push(other);
        }
    }
}

fn pad(s: &str, width: usize, left: bool, zero: bool) -> String {
    let len = s.chars().count();
    if len >= width {
        return s.to_string();
    }
    let fill = width - len;
    if left {
        format!("{s}{}", " ".repeat(fill))
    } else if zero {
        match s.strip_prefix('-') {
            Some(digits) => format!("-{}{digits}", "0".repeat(fill)),
            None => format!("{}{s}", "0".repeat(fill)),
        }
    } else {
        format!("{}{s}", " ".repeat(fill))
    }
}

/// Formats `fmt` once, consuming arguments; returns whether any
/// conversion consumed one, and the diagnostics.
pub(crate) fn format_once(
    fmt: &str,
    args: &mut std::slice::Iter<'_, String>,
    out: &mut String,
    errors: &mut Vec<String>,
) -> Result<bool, String> {
    let mut consumed = false;
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e) => escape(e, out),
                None => out.push('\\'),
            },
            '%' => {
                let mut left = false;
                let mut zero = false;
                while let Some(&f) = chars.peek() {
                    match f {
                        '-' => left = true,
                        '0' => zero = true,
                        '+' | ' ' | '#' => {}
                        _ => break,
                    }
                    chars.next();
                }
                let mut width = 0usize;
                while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
                    width = width * 10 + d as usize;
                    chars.next();
                }
                let conv = chars.next().ok_or("%: missing conversion")?;
                match conv {
                    '%' => out.push('%'),
                    's' | 'b' => {
                        consumed = true;
                        let arg = args.next().map(String::as_str).unwrap_or("");
                        out.push_str(&pad(arg, width, left, false));
                    }
                    'c' => {
                        consumed = true;
                        let arg = args.next().map(String::as_str).unwrap_or("");
                        let first: String = arg.chars().take(1).collect();
                        out.push_str(&pad(&first, width, left, false));
                    }
                    'd' | 'i' | 'u' | 'x' | 'X' | 'o' => {
                        consumed = true;
                        let arg = args.next().map(String::as_str).unwrap_or("");
                        let text = arg.trim();
                        let n = if text.is_empty() {
                            0
                        } else {
                            text.trim_start_matches('+')
                                .parse::<i64>()
                                .unwrap_or_else(|_| {
                                    errors.push(format!(
                                        "printf: '{arg}': expected a numeric value\n"
                                    ));
                                    0
                                })
                        };
                        let s = match conv {
                            'x' => format!("{n:x}"),
                            'X' => format!("{n:X}"),
                            'o' => format!("{n:o}"),
                            _ => n.to_string(),
                        };
                        out.push_str(&pad(&s, width, left, zero && !left));
                    }
                    other => return Err(format!("%{other}: invalid directive")),
                }
            }
            c => out.push(c),
        }
    }
    Ok(consumed)
}

async fn printf(sh: &Shell, io: &Io, args: &[String]) -> i32 {
    let Some((fmt, rest)) = args.split_first() else {
        sh.err(io, "printf: usage: printf format [arguments]\n")
            .await;
        return 2;
    };
    let mut it = rest.iter();
    let mut text = String::new();
    let mut errors = Vec::new();
    loop {
        match format_once(fmt, &mut it, &mut text, &mut errors) {
            Ok(consumed) if consumed && it.len() > 0 => continue,
            Ok(_) => break,
            Err(msg) => {
                out!(sh, io, text.as_bytes());
                sh.err(io, &format!("printf: {msg}\n")).await;
                return 1;
            }
        }
    }
    out!(sh, io, text.as_bytes());
    for e in &errors {
        sh.err(io, e).await;
    }
    i32::from(!errors.is_empty())
}

/// A file's bytes for a text command, or the diagnostic to print.
fn read_file(sh: &Shell, cmd: &str, path: &str) -> Result<Vec<u8>, String> {
    if path == "/dev/null" {
        return Ok(Vec::new());
    }
    let comps = sh.path(path).map_err(|e| format!("{cmd}: {path}: {e}\n"))?;
    sh.sb
        .tree()
        .read(&comps)
        .map(<[u8]>::to_vec)
        .map_err(|e| format!("{cmd}: {path}: {}\n", e.strerror()))
}

async fn cat(sh: &Shell, io: &Io, args: &[String]) -> i32 {
    let files: Vec<&String> = args
        .iter()
        .filter(|a| *a == "-" || !a.starts_with('-'))
        .collect();
    let mut status = 0;
    if files.is_empty() {
        while let Some(chunk) = io.stdin.read_chunk().await {
            out!(sh, io, &chunk);
        }
        return 0;
    }
    for f in files {
        if f == "-" {
            while let Some(chunk) = io.stdin.read_chunk().await {
                out!(sh, io, &chunk);
            }
            continue;
        }
        match read_file(sh, "cat", f) {
            Ok(bytes) => out!(sh, io, &bytes),
            Err(msg) => {
                sh.err(io, &msg).await;
                status = 1;
            }
        }
    }
    status
}

/// Parses `-c N` / `-n N` / `-N` style options; returns (bytes?, count, files).
fn head_opts(args: &[String]) -> Result<(bool, usize, Vec<&String>), String> {
    let mut bytes = false;
    let mut count = 10usize;
    let mut files = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let value = match a.as_str() {
            "-c" | "-n" => {
                bytes = a == "-c";
                it.next().ok_or(format!(
                    "head: option requires an argument -- '{}'",
                    &a[1..]
                ))?
            }
            s if s.starts_with("-c") || s.starts_with("-n") => {
                bytes = s.starts_with("-c");
                &s[2..]
            }
            s if s.len() > 1 && s.starts_with('-') => &s[1..],
            _ => {
                files.push(a);
                continue;
            }
        };
        count = value
            .parse()
            .map_err(|_| format!("head: invalid number: '{value}'"))?;
    }
    Ok((bytes, count, files))
}

fn head_of(data: &[u8], bytes: bool, count: usize) -> &[u8] {
    if bytes {
        return &data[..count.min(data.len())];
    }
    let mut end = 0;
    for _ in 0..count {
        match data[end..].iter().position(|&b| b == b'\n') {
            Some(i) => end += i + 1,
            None => return data,
        }
    }
    &data[..end]
}

async fn head(sh: &Shell, io: &Io, args: &[String]) -> i32 {
    let (bytes, count, files) = match head_opts(args) {
        Ok(o) => o,
        Err(msg) => {
            sh.err(io, &format!("{msg}\n")).await;
            return 1;
        }
    };
    if files.is_empty() {
        if bytes {
            let data = io.stdin.read_up_to(count).await;
            out!(sh, io, &data);
        } else {
            for _ in 0..count {
                let Some(line) = io.stdin.read_line().await else {
                    break;
                };
                out!(sh, io, &line);
            }
        }
        return 0;
    }
    let mut status = 0;
    for f in files {
        match read_file(sh, "head", f) {
            Ok(data) => out!(sh, io, head_of(&data, bytes, count)),
            Err(msg) => {
                sh.err(io, &msg).await;
                status = 1;
            }
        }
    }
    status
}

fn counts(data: &[u8]) -> [usize; 3] {
    let lines = data.iter().filter(|&&b| b == b'\n').count();
    let words = data
        .split(|b| b.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
        .count();
    [lines, words, data.len()]
}

async fn wc(sh: &Shell, io: &Io, args: &[String]) -> i32 {
    let mut which = [false; 3];
    let mut files = Vec::new();
    for a in args {
        match a.strip_prefix('-').filter(|f| !f.is_empty()) {
            Some(flags) => {
                for f in flags.chars() {
                    match f {
                        'l' => which[0] = true,
                        'w' => which[1] = true,
                        'c' | 'm' => which[2] = true,
                        other => {
                            sh.err(io, &format!("wc: invalid option -- '{other}'\n"))
                                .await;
                            return 1;
                        }
                    }
                }
            }
            None => files.push(a),
        }
    }
    if which == [false; 3] {
        which = [true; 3];
    }
    let render = |c: [usize; 3], name: Option<&str>| {
        let mut fields: Vec<String> = (0..3)
            .filter(|&i| which[i])
            .map(|i| c[i].to_string())
            .collect();
        fields.extend(name.map(str::to_string));
        format!("{}\n", fields.join(" "))
    };
    if files.is_empty() {
        let data = io.stdin.read_to_end().await;
        out!(sh, io, render(counts(&data), None).as_bytes());
        return 0;
    }
    let mut status = 0;
    let mut total = [0usize; 3];
    for f in &files {
        match read_file(sh, "wc", f) {
            Ok(data) => {
                let c = counts(&data);
                (0..3).for_each(|i| total[i] += c[i]);
                out!(sh, io, render(c, Some(f)).as_bytes());
            }
            Err(msg) => {
                sh.err(io, &msg).await;
                status = 1;
            }
        }
    }
    if files.len() > 1 {
        out!(sh, io, render(total, Some("total")).as_bytes());
    }
    status
}

async fn yes(sh: &Shell, io: &Io, args: &[String]) -> i32 {
    let line = if args.is_empty() {
        "y\n".to_string()
    } else {
        format!("{}\n", args.join(" "))
    };
    let block = line.repeat(4096 / line.len() + 1);
    loop {
        out!(sh, io, block.as_bytes());
        tokio::task::yield_now().await;
    }
}

async fn read(sh: &mut Shell, io: &Io, args: &[String]) -> i32 {
    let raw = args.first().is_some_and(|a| a == "-r");
    let names: Vec<String> = args.iter().filter(|a| *a != "-r").cloned().collect();
    let names = if names.is_empty() {
        vec!["REPLY".to_string()]
    } else {
        names
    };
    let line = io.stdin.read_line().await;
    let found = line.is_some();
    let mut text = String::from_utf8_lossy(&line.unwrap_or_default()).into_owned();
    if text.ends_with('\n') {
        text.pop();
    }
    if !raw {
        let mut unescaped = String::new();
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => unescaped.extend(chars.next()),
                c => unescaped.push(c),
            }
        }
        text = unescaped;
    }
    let mut rest = text.trim_start();
    for (i, name) in names.iter().enumerate() {
        let value = if i + 1 == names.len() {
            std::mem::take(&mut rest).trim_end()
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            let (v, r) = rest.split_at(end);
            rest = r.trim_start();
            v
        };
        sh.vars.insert(name.clone(), value.to_string());
    }
    i32::from(!found)
}

async fn sleep(sh: &Shell, io: &Io, args: &[String]) -> i32 {
    if args.is_empty() {
        sh.err(io, "sleep: missing operand\n").await;
        return 1;
    }
    let mut total = 0f64;
    for a in args {
        let secs = a.strip_suffix('s').unwrap_or(a);
        match secs.parse::<f64>() {
            Ok(s) if s.is_finite() && s >= 0.0 => total += s,
            _ => {
                sh.err(io, &format!("sleep: invalid time interval '{a}'\n"))
                    .await;
                return 1;
            }
        }
    }
    tokio::time::sleep(std::time::Duration::from_secs_f64(total.min(1e9))).await;
    sh.sb.wait_unpaused().await;
    0
}

async fn exit(sh: &Shell, io: &Io, args: &[String]) -> Flow {
    match args.first() {
        None => Flow::Exit(sh.status),
        Some(a) => match a.parse::<i64>() {
            Ok(n) => Flow::Exit((n & 0xff) as i32),
            Err(_) => {
                sh.err(io, &format!("sh: exit: {a}: numeric argument required\n"))
                    .await;
                Flow::Exit(2)
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(f: &str, args: &[&str]) -> (String, usize) {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let mut it = args.iter();
        let mut out = String::new();
        let mut errors = Vec::new();
        loop {
            let consumed = format_once(f, &mut it, &mut out, &mut errors).unwrap();
            if !(consumed && it.len() > 0) {
                break;
            }
        }
        (out, errors.len())
    }

    #[test]
    fn printf_formats() {
        assert_eq!(fmt("%s-%d\\n", &["a", "42"]).0, "a-42\n");
        assert_eq!(fmt("%s\\t%%\\n", &["x"]).0, "x\t%\n");
        assert_eq!(fmt("<%s>", &["a", "b", "c"]).0, "<a><b><c>");
        assert_eq!(fmt("%5d|%-3s|%03d", &["7", "a", "5"]).0, "    7|a  |005");
        assert_eq!(fmt("%d", &["nope"]), ("0".to_string(), 1));
        assert_eq!(fmt("no args %s.", &[]).0, "no args .");
        assert_eq!(fmt("%x %c", &["255", "hello"]).0, "ff h");
        let mut out = String::new();
        assert!(format_once("%z", &mut [].iter(), &mut out, &mut Vec::new()).is_err());
    }

    #[test]
    fn names_and_heads() {
        assert_eq!(builtin_name("/bin/echo"), Some("echo"));
        assert_eq!(builtin_name("echo"), Some("echo"));
        assert_eq!(builtin_name("/workspace/echo"), None);
        assert_eq!(builtin_name("nope"), None);
        assert_eq!(head_of(b"a\nb\nc\n", false, 2), b"a\nb\n");
        assert_eq!(head_of(b"abc", true, 2), b"ab");
        assert_eq!(head_of(b"abc", true, 9), b"abc");
        let args: Vec<String> = ["-c", "3", "f"].iter().map(|s| s.to_string()).collect();
        let (bytes, n, files) = head_opts(&args).unwrap();
        assert!(bytes && n == 3 && files.len() == 1);
        assert_eq!(counts(b"a b\nc\n"), [2, 3, 6]);
    }
}
