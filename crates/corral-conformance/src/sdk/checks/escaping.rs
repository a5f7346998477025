//! `dollar-escaping`: hostile values interpolated with `sh!` arrive as
//! exactly one argument each, byte for byte.

use corral_sdk::sh;

use crate::failure::{Failure, ensure, shown};
use crate::sdk::scope::{SdkScope, step};

/// Values a careless interpolation would split, expand or execute.
pub(crate) const HOSTILE: &[&str] = &[
    "it's",
    "'",
    "'\\''",
    "\"double\" quotes",
    "$HOME ${PATH} $(echo expanded) $((1+1))",
    "`echo executed`",
    "$",
    "line one\nline two\n",
    "*",
    "?[a-z]* /etc/*",
    "-n",
    "--help",
    "-e \\n",
    "a\\b\\\\c",
    "tab\tand  spaces ",
    "; echo injected | cat && false || true & wait",
    "> redirected-file",
    "{a,b} ~ ~root #comment",
    "h\u{e9}llo w\u{f6}rld \u{2713} \u{65e5}\u{672c} \u{1f980}",
    "",
];

/// Each hostile value alone, then all of them in one command: `printf`
/// reuses its format for every argument, so `<value>` per argument proves
/// both the count and the bytes.
pub(crate) async fn dollar_escaping(scope: &mut SdkScope) -> Result<(), Failure> {
    let sandbox = scope.sandbox().await?;
    for value in HOSTILE {
        let result = step(
            &format!("run sh!(\"printf '<%s>' {{value}}\") with {value:?}"),
            sandbox.run(sh!("printf '<%s>' {value}")).await,
        )?;
        let expected = format!("<{value}>");
        ensure(
            result.code() == 0 && result.stdout == expected.as_bytes(),
            || {
                format!(
                    "{value:?} did not arrive as one argument: exit {} stdout {} stderr {}, expected {}",
                    result.code(),
                    shown(&result.stdout),
                    shown(&result.stderr),
                    shown(expected.as_bytes())
                )
            },
        )?;
    }
    let [a, b, c, d] = [HOSTILE[0], HOSTILE[4], HOSTILE[7], HOSTILE[10]];
    let result = step(
        "run sh! with four values",
        sandbox.run(sh!("printf '<%s>' {a} {b} {c} {d}")).await,
    )?;
    let expected = format!("<{a}><{b}><{c}><{d}>");
    ensure(
        result.code() == 0 && result.stdout == expected.as_bytes(),
        || {
            format!(
                "four values: exit {} stdout {}, expected {}",
                result.code(),
                shown(&result.stdout),
                shown(expected.as_bytes())
            )
        },
    )?;
    let nul = sandbox.run(sh!("printf '<%s>' {}", "a\0b")).await;
    match nul {
        Err(e) if e.code == corral_backend::ErrorCode::InvalidInput => Ok(()),
        Err(e) => Err(Failure::new(format_args!(
            "a value with a NUL byte: expected invalid_input, got {e}"
        ))),
        Ok(r) => Err(Failure::new(format_args!(
            "a value with a NUL byte ran (exit {}), expected invalid_input",
            r.code()
        ))),
    }
}
