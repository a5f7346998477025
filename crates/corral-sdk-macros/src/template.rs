//! Parsing the template: the string literal's value, then its pieces.

/// One piece of a template.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Piece {
    /// Literal shell text, inserted as written.
    Text(String),
    /// `{name}`: a variable in scope.
    Named(String),
    /// `{}` (next) or `{N}` (by index): a positional argument.
    Positional(Option<usize>),
}

/// The value of a string literal given as its source text (`"…"`, `r"…"`,
/// `r#"…"#`); byte strings and C strings are refused.
pub(crate) fn literal_value(src: &str) -> Result<String, String> {
    if let Some(rest) = src.strip_prefix('r') {
        let hashes = rest.len() - rest.trim_start_matches('#').len();
        let inner = &rest[hashes..];
        let closing = format!("\"{}", "#".repeat(hashes));
        return inner
            .strip_prefix('"')
            .and_then(|s| s.strip_suffix(closing.as_str()))
            .map(str::to_string)
            .ok_or_else(|| "sh!: expected a string literal template".to_string());
    }
    let Some(body) = src.strip_prefix('"').and_then(|s| s.strip_suffix('"')) else {
        return Err("sh!: expected a string literal template".into());
    };
    unescape(body)
}

/// Resolves the escapes of a normal string literal's body.
fn unescape(body: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('0') => out.push('\0'),
            Some('\\') => out.push('\\'),
            Some('"') => out.push('"'),
            Some('\'') => out.push('\''),
            Some('x') => {
                let hex: String = chars.by_ref().take(2).collect();
                let v = u8::from_str_radix(&hex, 16)
                    .map_err(|_| format!("sh!: bad escape \\x{hex}"))?;
                out.push(char::from(v));
            }
            Some('u') => {
                if chars.next() != Some('{') {
                    return Err("sh!: bad \\u escape".into());
                }
                let hex: String = chars.by_ref().take_while(|c| *c != '}').collect();
                let v = u32::from_str_radix(&hex.replace('_', ""), 16)
                    .ok()
                    .and_then(char::from_u32)
                    .ok_or_else(|| format!("sh!: bad escape \\u{{{hex}}}"))?;
                out.push(v);
            }
            Some('\n') => {
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
            }
            Some(other) => return Err(format!("sh!: unknown escape \\{other}")),
            None => return Err("sh!: unterminated escape".into()),
        }
    }
    Ok(out)
}

/// Splits a template into text and interpolations.
pub(crate) fn parse_template(t: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut chars = t.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                text.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                text.push('}');
            }
            '}' => return Err("unmatched `}` in the template (write `}}` for a brace)".into()),
            '{' => {
                let mut inner = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(c) => inner.push(c),
                        None => {
                            return Err(
                                "unclosed `{` in the template (write `{{` for a brace)".into()
                            );
                        }
                    }
                }
                if !text.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                }
                pieces.push(interpolation(inner.trim())?);
            }
            c => text.push(c),
        }
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Ok(pieces)
}

fn interpolation(inner: &str) -> Result<Piece, String> {
    if inner.is_empty() {
        return Ok(Piece::Positional(None));
    }
    if inner.contains(':') {
        return Err(format!(
            "`{{{inner}}}`: format specs are not supported; every value is inserted as one quoted word"
        ));
    }
    if inner.chars().all(|c| c.is_ascii_digit()) {
        return inner
            .parse()
            .map(|i| Piece::Positional(Some(i)))
            .map_err(|_| format!("`{{{inner}}}`: bad argument index"));
    }
    let mut cs = inner.chars();
    let first_ok = cs.next().is_some_and(|c| c == '_' || c.is_alphabetic());
    if first_ok && cs.all(|c| c == '_' || c.is_alphanumeric()) {
        return Ok(Piece::Named(inner.to_string()));
    }
    Err(format!(
        "`{{{inner}}}`: expected `{{}}`, `{{N}}` or `{{variable}}`"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_unescape() {
        assert_eq!(literal_value(r#""a\nb\"c""#).unwrap(), "a\nb\"c");
        assert_eq!(literal_value(r##"r#"x"y"#"##).unwrap(), "x\"y");
        assert_eq!(literal_value(r#""\u{e9}\x41""#).unwrap(), "éA");
        assert!(literal_value("b\"x\"").is_err());
    }

    #[test]
    fn templates_split() {
        assert_eq!(
            parse_template("git commit -m {msg} {{}} {} {1}").unwrap(),
            vec![
                Piece::Text("git commit -m ".into()),
                Piece::Named("msg".into()),
                Piece::Text(" {} ".into()),
                Piece::Positional(None),
                Piece::Text(" ".into()),
                Piece::Positional(Some(1)),
            ]
        );
        assert!(parse_template("{x:?}").is_err());
        assert!(parse_template("{a b}").is_err());
        assert!(parse_template("{").is_err());
        assert!(parse_template("}").is_err());
    }
}
