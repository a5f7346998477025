//! # corral-sdk-macros
//!
//! The `sh!` macro behind `corral_sdk::sh!`. Use it through `corral_sdk`;
//! this crate only parses the template at compile time and expands to calls
//! into `corral_sdk::ShellScript`, which quotes every value when the program
//! runs.
//!
//! The template is a string literal. `{name}` interpolates the variable
//! `name` in scope, `{}` the next positional argument, `{0}` the positional
//! argument by index, `{{` and `}}` are literal braces. Format specs
//! (`{x:?}`) are refused at compile time: a value is always inserted as one
//! single-quoted shell word.

mod template;

use proc_macro::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};

use template::{Piece, parse_template};

/// Builds a `corral_sdk::ShellScript` from a template whose every
/// interpolation becomes one single-quoted POSIX `sh` word. See the
/// `corral_sdk::sh!` documentation.
#[proc_macro]
pub fn sh(input: TokenStream) -> TokenStream {
    match expand(input) {
        Ok(ts) => ts,
        Err((msg, span)) => compile_error(&msg, span),
    }
}

/// The template literal and the positional argument expressions.
fn split_input(input: TokenStream) -> Result<(Literal, Vec<TokenStream>), (String, Span)> {
    let mut iter = input.into_iter();
    let lit = match iter.next() {
        Some(TokenTree::Literal(l)) => l,
        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::None => {
            match g.stream().into_iter().next() {
                Some(TokenTree::Literal(l)) => l,
                _ => return Err(("sh!: expected a string literal template".into(), g.span())),
            }
        }
        Some(other) => {
            return Err((
                "sh!: expected a string literal template".into(),
                other.span(),
            ));
        }
        None => {
            return Err((
                "sh!: expected a string literal template".into(),
                Span::call_site(),
            ));
        }
    };
    let mut args = Vec::new();
    let mut current = Vec::new();
    let mut seen_comma = false;
    for tt in iter {
        match &tt {
            TokenTree::Punct(p) if p.as_char() == ',' && p.spacing() == Spacing::Alone => {
                if seen_comma {
                    if current.is_empty() {
                        return Err(("sh!: empty argument".into(), p.span()));
                    }
                    args.push(current.drain(..).collect());
                }
                seen_comma = true;
            }
            _ => {
                if !seen_comma {
                    return Err(("sh!: expected `,` after the template".into(), tt.span()));
                }
                current.push(tt);
            }
        }
    }
    if !current.is_empty() {
        args.push(current.into_iter().collect());
    }
    Ok((lit, args))
}

fn expand(input: TokenStream) -> Result<TokenStream, (String, Span)> {
    let (lit, args) = split_input(input)?;
    let span = lit.span();
    let template = template::literal_value(&lit.to_string()).map_err(|m| (m, span))?;
    let pieces = parse_template(&template).map_err(|m| (format!("sh!: {m}"), span))?;
    let mut next_positional = 0usize;
    let mut used = vec![false; args.len()];
    // ::corral_sdk::ShellScript::builder()
    let mut body: Vec<TokenTree> = Vec::new();
    body.extend(path(&["corral_sdk", "ShellScript", "builder"]));
    body.push(group(Delimiter::Parenthesis, TokenStream::new()));
    for piece in pieces {
        let (method, arg): (&str, TokenStream) = match piece {
            Piece::Text(t) => ("text", TokenTree::Literal(Literal::string(&t)).into()),
            Piece::Named(name) => {
                let mut ts = TokenStream::new();
                ts.extend([
                    TokenTree::Punct(Punct::new('&', Spacing::Alone)),
                    TokenTree::Ident(Ident::new(&name, span)),
                ]);
                ("arg", ts)
            }
            Piece::Positional(index) => {
                let i = match index {
                    Some(i) => i,
                    None => {
                        let i = next_positional;
                        next_positional += 1;
                        i
                    }
                };
                let Some(expr) = args.get(i) else {
                    return Err((
                        format!(
                            "sh!: the template refers to argument {i}, but {} argument(s) were given",
                            args.len()
                        ),
                        span,
                    ));
                };
                used[i] = true;
                let mut ts = TokenStream::new();
                ts.extend([
                    TokenTree::Punct(Punct::new('&', Spacing::Alone)),
                    group(Delimiter::Parenthesis, expr.clone()),
                ]);
                ("arg", ts)
            }
        };
        body.push(TokenTree::Punct(Punct::new('.', Spacing::Alone)));
        body.push(TokenTree::Ident(Ident::new(method, Span::call_site())));
        body.push(group(Delimiter::Parenthesis, arg));
    }
    if let Some(i) = used.iter().position(|u| !u) {
        return Err((
            format!("sh!: argument {i} is never used in the template"),
            span,
        ));
    }
    body.push(TokenTree::Punct(Punct::new('.', Spacing::Alone)));
    body.push(TokenTree::Ident(Ident::new("build", Span::call_site())));
    body.push(group(Delimiter::Parenthesis, TokenStream::new()));
    Ok(TokenStream::from(group(
        Delimiter::Brace,
        body.into_iter().collect(),
    )))
}

/// `::a::b::c` as tokens.
fn path(segments: &[&str]) -> Vec<TokenTree> {
    let mut out = Vec::new();
    for s in segments {
        out.push(TokenTree::Punct(Punct::new(':', Spacing::Joint)));
        out.push(TokenTree::Punct(Punct::new(':', Spacing::Alone)));
        out.push(TokenTree::Ident(Ident::new(s, Span::call_site())));
    }
    out
}

fn group(delim: Delimiter, ts: TokenStream) -> TokenTree {
    TokenTree::Group(Group::new(delim, ts))
}

/// `compile_error!("msg")` at `span`.
fn compile_error(msg: &str, span: Span) -> TokenStream {
    let mut bang = Punct::new('!', Spacing::Alone);
    bang.set_span(span);
    let mut lit = Literal::string(msg);
    lit.set_span(span);
    let mut args = Group::new(Delimiter::Parenthesis, TokenTree::Literal(lit).into());
    args.set_span(span);
    let mut out: Vec<TokenTree> = path(&["core", "compile_error"]);
    for t in &mut out {
        t.set_span(span);
    }
    out.push(TokenTree::Punct(bang));
    out.push(TokenTree::Group(args));
    out.into_iter().collect()
}
