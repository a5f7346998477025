//! The memory shell's lexer: words (with their quoting and parameters),
//! operators, io numbers and newlines.

use super::parse::{Part, Word};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    Semi,
    Amp,
    AndIf,
    OrIf,
    Pipe,
    LParen,
    RParen,
    Great,
    DGreat,
    Less,
    GreatAnd,
    LessAnd,
}

impl Op {
    pub(super) fn text(self) -> &'static str {
        match self {
            Op::Semi => ";",
            Op::Amp => "&",
            Op::AndIf => "&&",
            Op::OrIf => "||",
            Op::Pipe => "|",
            Op::LParen => "(",
            Op::RParen => ")",
            Op::Great => ">",
            Op::DGreat => ">>",
            Op::Less => "<",
            Op::GreatAnd => ">&",
            Op::LessAnd => "<&",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Tok {
    Word(Word),
    Op(Op),
    IoNum(u32),
    Newline,
}

fn is_meta(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>'
    )
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

pub(super) fn is_name(s: &str) -> bool {
    let mut cs = s.chars();
    cs.next().is_some_and(is_name_start) && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_special_param(s: &str) -> bool {
    matches!(s, "?" | "#" | "@" | "*" | "$" | "!") || s.chars().all(|c| c.is_ascii_digit())
}

/// Reads a parameter after the `$` at `chars[i]`: its name and the index
/// after it, `None` for a lone `$`.
fn lex_param(chars: &[char], i: usize) -> Result<Option<(String, usize)>, String> {
    let Some(&c) = chars.get(i + 1) else {
        return Ok(None);
    };
    if c == '{' {
        let close = chars[i + 2..]
            .iter()
            .position(|&c| c == '}')
            .ok_or("unexpected end of file in ${")?;
        let name: String = chars[i + 2..i + 2 + close].iter().collect();
        if !(is_name(&name) || is_special_param(&name)) || name.is_empty() {
            return Err(format!("${{{name}}}: bad substitution"));
        }
        return Ok(Some((name, i + 3 + close)));
    }
    if c == '(' {
        return Err("command substitution $( ) is not supported by the memory shell".into());
    }
    if is_name_start(c) {
        let mut j = i + 1;
        while chars
            .get(j)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
        {
            j += 1;
        }
        return Ok(Some((chars[i + 1..j].iter().collect(), j)));
    }
    if c.is_ascii_digit() || matches!(c, '?' | '#' | '@' | '*' | '$' | '!') {
        return Ok(Some((c.to_string(), i + 2)));
    }
    Ok(None)
}

struct WordLexer {
    parts: Vec<Part>,
    lit: String,
}

impl WordLexer {
    fn flush(&mut self) {
        if !self.lit.is_empty() {
            self.parts.push(Part::Lit(std::mem::take(&mut self.lit)));
        }
    }

    fn push(&mut self, p: Part) {
        self.flush();
        self.parts.push(p);
    }
}

/// Lexes one word starting at `i`; returns it and the index after it.
fn lex_word(chars: &[char], mut i: usize) -> Result<(Word, usize), String> {
    let mut w = WordLexer {
        parts: Vec::new(),
        lit: String::new(),
    };
    while let Some(&c) = chars.get(i) {
        if is_meta(c) {
            break;
        }
        match c {
            '\'' => {
                let close = chars[i + 1..]
                    .iter()
                    .position(|&c| c == '\'')
                    .ok_or("unexpected end of file: unterminated '")?;
                w.push(Part::Quoted(chars[i + 1..i + 1 + close].iter().collect()));
                i += close + 2;
            }
            '"' => i = lex_dquote(chars, i + 1, &mut w)?,
            '\\' => match chars.get(i + 1) {
                Some('\n') => i += 2,
                Some(&n) => {
                    w.push(Part::Quoted(n.to_string()));
                    i += 2;
                }
                None => {
                    w.lit.push('\\');
                    i += 1;
                }
            },
            '$' => match lex_param(chars, i)? {
                Some((name, next)) => {
                    w.push(Part::Param(name));
                    i = next;
                }
                None => {
                    w.lit.push('$');
                    i += 1;
                }
            },
            '`' => {
                return Err("command substitution ` ` is not supported by the memory shell".into());
            }
            c => {
                w.lit.push(c);
                i += 1;
            }
        }
    }
    w.flush();
    Ok((Word(w.parts), i))
}

/// Lexes a double-quoted string whose content starts at `i`; returns the
/// index after the closing quote.
fn lex_dquote(chars: &[char], mut i: usize, w: &mut WordLexer) -> Result<usize, String> {
    w.flush();
    let mut text = String::new();
    let mut any = false;
    loop {
        let Some(&c) = chars.get(i) else {
            return Err("unexpected end of file: unterminated \"".into());
        };
        match c {
            '"' => break,
            '\\' => match chars.get(i + 1) {
                Some('\n') => i += 2,
                Some(&n) if matches!(n, '$' | '`' | '"' | '\\') => {
                    text.push(n);
                    i += 2;
                }
                _ => {
                    text.push('\\');
                    i += 1;
                }
            },
            '$' => match lex_param(chars, i)? {
                Some((name, next)) => {
                    if !text.is_empty() {
                        w.parts.push(Part::Quoted(std::mem::take(&mut text)));
                    }
                    w.parts.push(Part::QuotedParam(name));
                    any = true;
                    i = next;
                }
                None => {
                    text.push('$');
                    i += 1;
                }
            },
            '`' => {
                return Err("command substitution ` ` is not supported by the memory shell".into());
            }
            c => {
                text.push(c);
                i += 1;
            }
        }
    }
    if !text.is_empty() || !any {
        w.parts.push(Part::Quoted(text));
    }
    Ok(i + 1)
}

pub(super) fn lex(src: &str) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = src.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied();
    while let Some(c) = at(i) {
        let (tok, len) = match c {
            ' ' | '\t' => {
                i += 1;
                continue;
            }
            '#' => {
                while at(i).is_some_and(|c| c != '\n') {
                    i += 1;
                }
                continue;
            }
            '\n' => (Tok::Newline, 1),
            ';' if at(i + 1) == Some(';') => return Err("unexpected \";;\"".into()),
            ';' => (Tok::Op(Op::Semi), 1),
            '&' if at(i + 1) == Some('&') => (Tok::Op(Op::AndIf), 2),
            '&' => (Tok::Op(Op::Amp), 1),
            '|' if at(i + 1) == Some('|') => (Tok::Op(Op::OrIf), 2),
            '|' => (Tok::Op(Op::Pipe), 1),
            '(' => (Tok::Op(Op::LParen), 1),
            ')' => (Tok::Op(Op::RParen), 1),
            '<' if at(i + 1) == Some('<') => {
                return Err("here-documents are not supported by the memory shell".into());
            }
            '<' if at(i + 1) == Some('&') => (Tok::Op(Op::LessAnd), 2),
            '<' => (Tok::Op(Op::Less), 1),
            '>' if at(i + 1) == Some('>') => (Tok::Op(Op::DGreat), 2),
            '>' if at(i + 1) == Some('&') => (Tok::Op(Op::GreatAnd), 2),
            '>' if at(i + 1) == Some('|') => (Tok::Op(Op::Great), 2),
            '>' => (Tok::Op(Op::Great), 1),
            _ => {
                let (word, next) = lex_word(&chars, i)?;
                let io_number = match word.literal() {
                    Some(s) if matches!(at(next), Some('<' | '>')) => s.parse::<u32>().ok(),
                    _ => None,
                };
                toks.push(match io_number {
                    Some(n) => Tok::IoNum(n),
                    None => Tok::Word(word),
                });
                i = next;
                continue;
            }
        };
        toks.push(tok);
        i += len;
    }
    Ok(toks)
}
