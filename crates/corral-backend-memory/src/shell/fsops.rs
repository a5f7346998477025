//! File built-ins: `cd`, `ls`, `mkdir`, `mkfifo`, `rm`, `touch`, `ln -s`,
//! and `test`/`[`.

use corral_backend::FileType;

use super::Shell;
use super::builtins::out;
use super::io::Io;
use crate::tree::{FsError, Node, SpecialKind};

/// Splits leading `-xyz` flags from operands (`--` ends flags).
fn flags(args: &[String]) -> (String, Vec<&String>) {
    let mut f = String::new();
    let mut rest = Vec::new();
    let mut done = false;
    for a in args {
        if !done && a == "--" {
            done = true;
        } else if !done && a.len() > 1 && a.starts_with('-') {
            f.push_str(&a[1..]);
        } else {
            done = true;
            rest.push(a);
        }
    }
    (f, rest)
}

fn unknown_flag(cmd: &str, flags: &str, known: &str) -> Option<String> {
    flags
        .chars()
        .find(|c| !known.contains(*c))
        .map(|c| format!("{cmd}: invalid option -- '{c}'\n"))
}

pub(crate) async fn cd(sh: &mut Shell, io: &Io, args: &[String]) -> i32 {
    let target = match args.first() {
        Some(t) => t.clone(),
        None => sh
            .vars
            .get("HOME")
            .cloned()
            .unwrap_or_else(|| "/".to_string()),
    };
    let comps = match sh.path(&target) {
        Ok(c) => c,
        Err(e) => {
            sh.err(io, &format!("sh: cd: {target}: {e}\n")).await;
            return 1;
        }
    };
    let kind = sh
        .sb
        .tree()
        .get(&comps, true)
        .map(|(_, n)| matches!(n, Node::Dir { .. }));
    match kind {
        Ok(true) => {
            sh.cwd = format!("/{}", comps.join("/"));
            sh.vars.insert("PWD".into(), sh.cwd.clone());
            0
        }
        Ok(false) => {
            let e = FsError::NotDir.strerror();
            sh.err(io, &format!("sh: cd: {target}: {e}\n")).await;
            1
        }
        Err(e) => {
            sh.err(io, &format!("sh: cd: {target}: {}\n", e.strerror()))
                .await;
            1
        }
    }
}

pub(crate) async fn ls(sh: &Shell, io: &Io, args: &[String]) -> i32 {
    let (f, paths) = flags(args);
    if let Some(msg) = unknown_flag("ls", &f, "aA1") {
        sh.err(io, &msg).await;
        return 2;
    }
    let dot = ".".to_string();
    let paths = if paths.is_empty() { vec![&dot] } else { paths };
    let mut status = 0;
    let mut text = String::new();
    for (i, p) in paths.iter().enumerate() {
        let listing = sh.path(p).map_err(|e| e.to_string()).and_then(|comps| {
            let tree = sh.sb.tree();
            match tree.get(&comps, true) {
                Ok((_, Node::Dir { entries, .. })) => {
                    let mut names: Vec<String> = Vec::new();
                    if f.contains('a') {
                        names.extend([".".to_string(), "..".to_string()]);
                    }
                    names.extend(
                        entries
                            .keys()
                            .filter(|n| f.contains('a') || f.contains('A') || !n.starts_with('.'))
                            .cloned(),
                    );
                    Ok(Some(names))
                }
                Ok(_) => Ok(None),
                Err(e) => Err(e.strerror().to_string()),
            }
        });
        match listing {
            Ok(Some(names)) => {
                if paths.len() > 1 {
                    if i > 0 {
                        text.push('\n');
                    }
                    text.push_str(&format!("{p}:\n"));
                }
                names.iter().for_each(|n| text.push_str(&format!("{n}\n")));
            }
            Ok(None) => text.push_str(&format!("{p}\n")),
            Err(e) => {
                out!(sh, io, std::mem::take(&mut text).as_bytes());
                sh.err(io, &format!("ls: cannot access '{p}': {e}\n")).await;
                status = 2;
            }
        }
    }
    out!(sh, io, text.as_bytes());
    status
}

/// Applies `op` to every operand, printing `what` diagnostics.
async fn each<F>(sh: &Shell, io: &Io, cmd: &str, what: &str, ops: &[&String], mut op: F) -> i32
where
    F: FnMut(&Shell, Vec<String>) -> Result<(), FsError>,
{
    if ops.is_empty() {
        sh.err(io, &format!("{cmd}: missing operand\n")).await;
        return 1;
    }
    let mut status = 0;
    for p in ops {
        let r = match sh.path(p) {
            Ok(comps) => op(sh, comps).map_err(FsError::strerror),
            Err(e) => Err(e),
        };
        if let Err(e) = r {
            sh.err(io, &format!("{cmd}: {what} '{p}': {e}\n")).await;
            status = 1;
        }
    }
    status
}

pub(crate) async fn mkdir(sh: &Shell, io: &Io, args: &[String]) -> i32 {
    let (f, ops) = flags(args);
    if let Some(msg) = unknown_flag("mkdir", &f, "p") {
        sh.err(io, &msg).await;
        return 1;
    }
    let parents = f.contains('p');
    each(sh, io, "mkdir", "cannot create directory", &ops, |sh, c| {
        let now = sh.sb.now();
        sh.sb.tree().mkdir(&c, parents, now)
    })
    .await
}

pub(crate) async fn mkfifo(sh: &Shell, io: &Io, args: &[String]) -> i32 {
    let (_, ops) = flags(args);
    each(sh, io, "mkfifo", "cannot create fifo", &ops, |sh, c| {
        let node = Node::Special {
            kind: SpecialKind::Fifo,
            mode: 0o644,
            mtime: sh.sb.now(),
        };
        sh.sb.create_node(&c, node)
    })
    .await
}

pub(crate) async fn rm(sh: &Shell, io: &Io, args: &[String]) -> i32 {
    let (f, ops) = flags(args);
    if let Some(msg) = unknown_flag("rm", &f, "rRf") {
        sh.err(io, &msg).await;
        return 1;
    }
    let recursive = f.contains('r') || f.contains('R');
    let force = f.contains('f');
    if ops.is_empty() && force {
        return 0;
    }
    each(sh, io, "rm", "cannot remove", &ops, |sh, c| {
        let now = sh.sb.now();
        let mut tree = sh.sb.tree();
        if !recursive && matches!(tree.get(&c, false), Ok((_, Node::Dir { .. }))) {
            return Err(FsError::IsDir);
        }
        match tree.remove(&c, recursive, now) {
            Err(FsError::NotFound) if force => Ok(()),
            r => r,
        }
    })
    .await
}

pub(crate) async fn touch(sh: &Shell, io: &Io, args: &[String]) -> i32 {
    let (_, ops) = flags(args);
    each(sh, io, "touch", "cannot touch", &ops, |sh, c| {
        let now = sh.sb.now();
        sh.sb.tree().touch(&c, now)
    })
    .await
}

pub(crate) async fn ln(sh: &Shell, io: &Io, args: &[String]) -> i32 {
    let (f, ops) = flags(args);
    if !f.contains('s') {
        sh.err(
            io,
            "ln: hard links are not supported by the memory shell (use ln -s)\n",
        )
        .await;
        return 1;
    }
    if let Some(msg) = unknown_flag("ln", &f, "sfn") {
        sh.err(io, &msg).await;
        return 1;
    }
    let (target, link) = match ops.as_slice() {
        [t] => ((*t).clone(), None),
        [t, l] => ((*t).clone(), Some((*l).clone())),
        _ => {
            sh.err(io, "ln: usage: ln -s TARGET [LINK]\n").await;
            return 1;
        }
    };
    let base = target
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or("")
        .to_string();
    let link = link.unwrap_or_else(|| base.clone());
    let Ok(mut comps) = sh.path(&link) else {
        sh.err(io, &format!("ln: invalid link name '{link}'\n"))
            .await;
        return 1;
    };
    let is_dir = matches!(sh.sb.tree().get(&comps, true), Ok((_, Node::Dir { .. })));
    if is_dir && !f.contains('n') {
        comps.push(base);
    }
    if f.contains('f') {
        let now = sh.sb.now();
        let _ = sh.sb.tree().remove(&comps, false, now);
    }
    let node = Node::Symlink {
        target,
        mtime: sh.sb.now(),
    };
    match sh.sb.create_node(&comps, node) {
        Ok(()) => 0,
        Err(e) => {
            let msg = format!(
                "ln: failed to create symbolic link '{link}': {}\n",
                e.strerror()
            );
            sh.err(io, &msg).await;
            1
        }
    }
}

/// `test`'s answer: true, false, or a usage error.
type TestResult = Result<bool, String>;

fn unary(sh: &Shell, op: &str, arg: &str) -> TestResult {
    let file = |follow: bool| -> Option<(FileType, u64, u32)> {
        let comps = sh.path(arg).ok()?;
        let tree = sh.sb.tree();
        let (_, n) = tree.get(&comps, follow).ok()?;
        Some((n.file_type(), n.size(), n.mode()))
    };
    let is = |follow: bool, t: FileType| file(follow).is_some_and(|f| f.0 == t);
    Ok(match op {
        "-n" => !arg.is_empty(),
        "-z" => arg.is_empty(),
        "-e" | "-r" | "-w" => file(true).is_some(),
        "-f" => is(true, FileType::File),
        "-d" => is(true, FileType::Directory),
        "-s" => file(true).is_some_and(|f| f.1 > 0),
        "-x" => file(true).is_some_and(|f| f.2 & 0o111 != 0),
        "-L" | "-h" => is(false, FileType::Symlink),
        "-p" => is(true, FileType::Fifo),
        other => return Err(format!("{other}: unary operator expected")),
    })
}

fn binary(a: &str, op: &str, b: &str) -> TestResult {
    let int = |s: &str| {
        s.trim()
            .parse::<i64>()
            .map_err(|_| format!("{s}: integer expression expected"))
    };
    Ok(match op {
        "=" | "==" => a == b,
        "!=" => a != b,
        "-eq" => int(a)? == int(b)?,
        "-ne" => int(a)? != int(b)?,
        "-lt" => int(a)? < int(b)?,
        "-le" => int(a)? <= int(b)?,
        "-gt" => int(a)? > int(b)?,
        "-ge" => int(a)? >= int(b)?,
        other => return Err(format!("{other}: binary operator expected")),
    })
}

fn eval(sh: &Shell, args: &[&str]) -> TestResult {
    match args {
        [] => Ok(false),
        [a] => Ok(!a.is_empty()),
        ["!", rest @ ..] if rest.len() != 2 || !is_binary(rest[0]) => Ok(!eval(sh, rest)?),
        [op, a] => unary(sh, op, a),
        [a, op, b] if is_binary(op) => binary(a, op, b),
        [_, op, _] => Err(format!("{op}: binary operator expected")),
        _ => Err("too many arguments".into()),
    }
}

fn is_binary(op: &str) -> bool {
    matches!(
        op,
        "=" | "==" | "!=" | "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge"
    )
}

pub(crate) async fn test(sh: &Shell, io: &Io, args: &[String], bracket: bool) -> i32 {
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    if bracket {
        if args.last() != Some(&"]") {
            sh.err(io, "sh: [: missing ]\n").await;
            return 2;
        }
        args.pop();
    }
    match eval(sh, &args) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(msg) => {
            let name = if bracket { "[" } else { "test" };
            sh.err(io, &format!("sh: {name}: {msg}\n")).await;
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_split_at_first_operand() {
        let args: Vec<String> = ["-rf", "-x", "a", "-b"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (f, ops) = flags(&args);
        assert_eq!(f, "rfx");
        assert_eq!(ops, vec!["a", "-b"]);
        assert!(unknown_flag("rm", "rq", "rRf").is_some());
    }

    #[test]
    fn string_and_integer_tests() {
        assert_eq!(binary("a", "=", "a"), Ok(true));
        assert_eq!(binary("a", "!=", "a"), Ok(false));
        assert_eq!(binary("3", "-lt", "10"), Ok(true));
        assert!(binary("x", "-eq", "1").is_err());
        assert!(is_binary("-ge") && !is_binary("-f"));
    }
}
