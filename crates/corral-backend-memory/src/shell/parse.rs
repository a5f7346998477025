//! The memory shell's lexer and parser: lists with `;`, `&`, `&&`, `||`,
//! pipelines (with `!`), `( … )` subshells, `{ …; }` groups, redirections
//! (`[n]>`, `[n]>>`, `[n]<`, `[n]>&m`, `[n]<&m`), single and double quotes,
//! backslash escapes, `$NAME`/`${NAME}`/`$?`-style parameters, and `#`
//! comments. Command substitution, here-documents and control structures
//! (`if`, `for`, `while`) are refused as syntax errors.

use super::lex::{Op, Tok, is_name, lex};

/// One piece of a word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    /// Unquoted text.
    Lit(String),
    /// Quoted (or escaped) text: never split.
    Quoted(String),
    /// An unquoted parameter: its value is split into fields.
    Param(String),
    /// A parameter inside double quotes: one field.
    QuotedParam(String),
}

/// A shell word, before expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word(pub(crate) Vec<Part>);

impl Word {
    /// The word's text when it is a plain unquoted literal.
    pub(super) fn literal(&self) -> Option<&str> {
        match self.0.as_slice() {
            [Part::Lit(s)] => Some(s),
            _ => None,
        }
    }
}

/// A redirection operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RedirOp {
    /// `>`: create or truncate.
    Out,
    /// `>>`: create or append.
    Append,
    /// `<`: read a file.
    In,
    /// `>&m`: duplicate output descriptor `m`.
    DupOut,
    /// `<&m`: duplicate input descriptor `m`.
    DupIn,
}

/// One redirection: descriptor `fd`, operator, target word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Redir {
    pub(crate) fd: u32,
    pub(crate) op: RedirOp,
    pub(crate) target: Word,
}

/// One command of a pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cmd {
    /// `NAME=value… word… redirections…`.
    Simple {
        assigns: Vec<(String, Word)>,
        words: Vec<Word>,
        redirs: Vec<Redir>,
    },
    /// `( list )`: runs in a copy of the shell.
    Subshell { body: List, redirs: Vec<Redir> },
    /// `{ list; }`: runs in the shell itself.
    Group { body: List, redirs: Vec<Redir> },
}

/// `[!] cmd | cmd | …`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pipeline {
    pub(crate) negate: bool,
    pub(crate) cmds: Vec<Cmd>,
}

/// `&&` or `||`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Connector {
    And,
    Or,
}

/// Pipelines joined by `&&` and `||`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AndOr {
    pub(crate) first: Pipeline,
    pub(crate) rest: Vec<(Connector, Pipeline)>,
}

/// One element of a list, run in the background when it ended with `&`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Item {
    pub(crate) and_or: AndOr,
    pub(crate) background: bool,
}

/// A command list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct List(pub(crate) Vec<Item>);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Eof,
    Paren,
    Brace,
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
}

fn describe(t: Option<&Tok>) -> String {
    match t {
        None => "end of file".into(),
        Some(Tok::Newline) => "newline".into(),
        Some(Tok::Op(op)) => format!("\"{}\"", op.text()),
        Some(Tok::IoNum(n)) => format!("\"{n}\""),
        Some(Tok::Word(w)) => format!("\"{}\"", w.literal().unwrap_or("word")),
    }
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn peek_op(&self) -> Option<Op> {
        match self.peek() {
            Some(Tok::Op(op)) => Some(*op),
            _ => None,
        }
    }

    fn peek_reserved(&self, word: &str) -> bool {
        matches!(self.peek(), Some(Tok::Word(w)) if w.literal() == Some(word))
    }

    fn unexpected<T>(&self) -> Result<T, String> {
        Err(format!(
            "syntax error: unexpected {}",
            describe(self.peek())
        ))
    }

    fn skip_newlines(&mut self) {
        while self.peek() == Some(&Tok::Newline) {
            self.pos += 1;
        }
    }

    fn at_end(&self, end: End) -> bool {
        match end {
            End::Eof => self.peek().is_none(),
            End::Paren => self.peek_op() == Some(Op::RParen) || self.peek().is_none(),
            End::Brace => self.peek_reserved("}") || self.peek().is_none(),
        }
    }

    fn list(&mut self, end: End) -> Result<List, String> {
        let mut items = Vec::new();
        loop {
            self.skip_newlines();
            if self.at_end(end) {
                break;
            }
            let and_or = self.and_or()?;
            let (background, separated) = match self.peek() {
                Some(Tok::Op(Op::Amp)) => (true, true),
                Some(Tok::Op(Op::Semi)) | Some(Tok::Newline) => (false, true),
                _ => (false, false),
            };
            if separated {
                self.pos += 1;
            }
            items.push(Item { and_or, background });
            if !separated && !self.at_end(end) {
                return self.unexpected();
            }
        }
        Ok(List(items))
    }

    fn and_or(&mut self) -> Result<AndOr, String> {
        let first = self.pipeline()?;
        let mut rest = Vec::new();
        loop {
            let conn = match self.peek_op() {
                Some(Op::AndIf) => Connector::And,
                Some(Op::OrIf) => Connector::Or,
                _ => break,
            };
            self.pos += 1;
            self.skip_newlines();
            rest.push((conn, self.pipeline()?));
        }
        Ok(AndOr { first, rest })
    }

    fn pipeline(&mut self) -> Result<Pipeline, String> {
        let negate = self.peek_reserved("!");
        if negate {
            self.pos += 1;
        }
        let mut cmds = vec![self.command()?];
        while self.peek_op() == Some(Op::Pipe) {
            self.pos += 1;
            self.skip_newlines();
            cmds.push(self.command()?);
        }
        Ok(Pipeline { negate, cmds })
    }

    fn redirs(&mut self) -> Result<Vec<Redir>, String> {
        let mut out = Vec::new();
        while let Some(r) = self.redir()? {
            out.push(r);
        }
        Ok(out)
    }

    fn redir(&mut self) -> Result<Option<Redir>, String> {
        let start = self.pos;
        let fd = match self.peek() {
            Some(Tok::IoNum(n)) => Some(*n),
            _ => None,
        };
        if fd.is_some() {
            self.pos += 1;
        }
        let op = match self.peek_op() {
            Some(Op::Great) => RedirOp::Out,
            Some(Op::DGreat) => RedirOp::Append,
            Some(Op::Less) => RedirOp::In,
            Some(Op::GreatAnd) => RedirOp::DupOut,
            Some(Op::LessAnd) => RedirOp::DupIn,
            _ => {
                self.pos = start;
                return Ok(None);
            }
        };
        self.pos += 1;
        let Some(Tok::Word(target)) = self.peek().cloned() else {
            return self.unexpected();
        };
        self.pos += 1;
        let fd = fd.unwrap_or(match op {
            RedirOp::In | RedirOp::DupIn => 0,
            _ => 1,
        });
        Ok(Some(Redir { fd, op, target }))
    }

    fn command(&mut self) -> Result<Cmd, String> {
        if self.peek_op() == Some(Op::LParen) {
            self.pos += 1;
            let body = self.list(End::Paren)?;
            if self.peek_op() != Some(Op::RParen) {
                return self.unexpected();
            }
            self.pos += 1;
            let redirs = self.redirs()?;
            return Ok(Cmd::Subshell { body, redirs });
        }
        if self.peek_reserved("{") {
            self.pos += 1;
            let body = self.list(End::Brace)?;
            if !self.peek_reserved("}") {
                return self.unexpected();
            }
            self.pos += 1;
            let redirs = self.redirs()?;
            return Ok(Cmd::Group { body, redirs });
        }
        let mut assigns = Vec::new();
        let mut words = Vec::new();
        let mut redirs = Vec::new();
        loop {
            if let Some(r) = self.redir()? {
                redirs.push(r);
                continue;
            }
            let Some(Tok::Word(w)) = self.peek().cloned() else {
                break;
            };
            self.pos += 1;
            match assignment(&w) {
                Some(a) if words.is_empty() => assigns.push(a),
                _ => words.push(w),
            }
        }
        if assigns.is_empty() && words.is_empty() && redirs.is_empty() {
            return self.unexpected();
        }
        Ok(Cmd::Simple {
            assigns,
            words,
            redirs,
        })
    }
}

/// `NAME=value` as an assignment.
fn assignment(w: &Word) -> Option<(String, Word)> {
    let Some(Part::Lit(first)) = w.0.first() else {
        return None;
    };
    let (name, value) = first.split_once('=')?;
    if !is_name(name) {
        return None;
    }
    let mut parts = Vec::with_capacity(w.0.len());
    if !value.is_empty() {
        parts.push(Part::Lit(value.to_string()));
    }
    parts.extend(w.0[1..].iter().cloned());
    Some((name.to_string(), Word(parts)))
}

/// Parses a whole script.
pub(crate) fn parse(src: &str) -> Result<List, String> {
    let mut p = Parser {
        toks: lex(src)?,
        pos: 0,
    };
    let list = p.list(End::Eof)?;
    if p.peek().is_some() {
        return p.unexpected();
    }
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> Word {
        Word(vec![Part::Lit(s.into())])
    }

    fn simple(list: &List, item: usize) -> (&Vec<(String, Word)>, &Vec<Word>, &Vec<Redir>) {
        match &list.0[item].and_or.first.cmds[0] {
            Cmd::Simple {
                assigns,
                words,
                redirs,
            } => (assigns, words, redirs),
            other => panic!("not simple: {other:?}"),
        }
    }

    #[test]
    fn lists_and_connectors() {
        let l = parse("a; b && c || d & e\nf").unwrap();
        assert_eq!(l.0.len(), 4);
        assert!(l.0[1].background);
        assert_eq!(l.0[1].and_or.rest.len(), 2);
        assert_eq!(l.0[1].and_or.rest[0].0, Connector::And);
        assert_eq!(l.0[1].and_or.rest[1].0, Connector::Or);
        assert_eq!(simple(&l, 3).1, &vec![lit("f")]);
        assert_eq!(parse("").unwrap(), List::default());
        assert_eq!(parse("  # only a comment\n").unwrap(), List::default());
    }

    #[test]
    fn quotes_escapes_and_params() {
        let l = parse(r#"echo 'a $b' "c $d e" \$f $g${h}x "" a#b # c"#).unwrap();
        let words = simple(&l, 0).1;
        assert_eq!(words[1], Word(vec![Part::Quoted("a $b".into())]));
        assert_eq!(
            words[2],
            Word(vec![
                Part::Quoted("c ".into()),
                Part::QuotedParam("d".into()),
                Part::Quoted(" e".into())
            ])
        );
        assert_eq!(
            words[3],
            Word(vec![Part::Quoted("$".into()), Part::Lit("f".into())])
        );
        assert_eq!(
            words[4],
            Word(vec![
                Part::Param("g".into()),
                Part::Param("h".into()),
                Part::Lit("x".into())
            ])
        );
        assert_eq!(words[5], Word(vec![Part::Quoted(String::new())]));
        assert_eq!(words[6], lit("a#b"));
        assert_eq!(words.len(), 7);
        let l = parse("echo $? $1 $ \"$#\"").unwrap();
        let words = simple(&l, 0).1;
        assert_eq!(words[1], Word(vec![Part::Param("?".into())]));
        assert_eq!(words[2], Word(vec![Part::Param("1".into())]));
        assert_eq!(words[3], lit("$"));
        assert_eq!(words[4], Word(vec![Part::QuotedParam("#".into())]));
    }

    #[test]
    fn redirections_and_assignments() {
        let l = parse("A=1 B=\"x y\" cmd arg >out 2>&1 <in 2>>err >&2 C=3").unwrap();
        let (assigns, words, redirs) = simple(&l, 0);
        assert_eq!(assigns[0], ("A".into(), lit("1")));
        assert_eq!(assigns[1].0, "B");
        assert_eq!(words, &vec![lit("cmd"), lit("arg"), lit("C=3")]);
        let ops: Vec<(u32, RedirOp)> = redirs.iter().map(|r| (r.fd, r.op)).collect();
        assert_eq!(
            ops,
            vec![
                (1, RedirOp::Out),
                (2, RedirOp::DupOut),
                (0, RedirOp::In),
                (2, RedirOp::Append),
                (1, RedirOp::DupOut)
            ]
        );
        assert_eq!(redirs[1].target, lit("1"));
    }

    #[test]
    fn pipelines_subshells_and_groups() {
        let l = parse("! a | b | c; (d; e) > f & { g; h; }").unwrap();
        assert!(l.0[0].and_or.first.negate);
        assert_eq!(l.0[0].and_or.first.cmds.len(), 3);
        match &l.0[1].and_or.first.cmds[0] {
            Cmd::Subshell { body, redirs } => {
                assert_eq!(body.0.len(), 2);
                assert_eq!(redirs.len(), 1);
            }
            other => panic!("{other:?}"),
        }
        assert!(l.0[1].background);
        assert!(
            matches!(&l.0[2].and_or.first.cmds[0], Cmd::Group { body, .. } if body.0.len() == 2)
        );
        let l = parse("a |\n b &&\n c").unwrap();
        assert_eq!(l.0.len(), 1);
    }

    #[test]
    fn syntax_errors() {
        for bad in [
            "echo 'open",
            "echo \"open",
            "a &&",
            "| a",
            "(a",
            "a)",
            "{ a",
            "a >",
            "echo $(date)",
            "echo `date`",
            "cat <<EOF",
            "a ;; b",
            "echo ${a-b}",
            ";",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} parsed");
        }
        assert_eq!(parse("a )").unwrap_err(), "syntax error: unexpected \")\"");
    }
}
