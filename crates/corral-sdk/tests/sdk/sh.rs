//! `sh!`: hostile values reach the command as exactly one argument each,
//! through real runs on memory, local (the host's `sh`) and linux.

use crate::sandbox_support;
use corral_backend::ErrorCode;
use corral_sdk::{CreateOptions, Sandbox, sh};
use sandbox_support::{all, memory};

/// Values a shell would split, expand, glob or run if they were not quoted.
const HOSTILE: &[&str] = &[
    "it's",
    "'",
    "''",
    "\"double\"",
    "$HOME",
    "${PATH}",
    "$(echo pwned)",
    "`echo pwned`",
    "a\nb",
    "\n",
    "*",
    "/*",
    "?",
    "[a-z]*",
    "-n",
    "--help",
    "-e x",
    "héllo wörld ✓ 日本",
    "",
    " ",
    "a b\tc",
    "; touch pwned #",
    "a|b&c>d<e",
    "\\",
    "\\'",
    "'\\''",
    "~",
    "!",
    "{a,b}",
];

#[tokio::test]
async fn every_hostile_value_is_one_argument() {
    for t in all("every_hostile_value_is_one_argument") {
        let s = Sandbox::create(t.backend.clone(), CreateOptions::default())
            .await
            .unwrap();
        for value in HOSTILE {
            let value = *value;
            // `printf '<%s>'` repeats its format per argument: one argument
            // prints exactly one `<value>`.
            let r = s.run(sh!("printf '<%s>' {value}")).await.unwrap();
            assert!(
                r.success(),
                "{}: {value:?}: {}",
                s.provider(),
                r.stderr_text()
            );
            assert_eq!(
                r.stdout_text(),
                format!("<{value}>"),
                "{}: {value:?}",
                s.provider()
            );
            // And the count of arguments is one, also for the empty string.
            let r = s.run(sh!("sh -c 'echo $#' sh {value}")).await.unwrap();
            assert_eq!(r.stdout_text(), "1\n", "{}: {value:?}", s.provider());
        }
        // Nothing in any value ran as code.
        let r = s.run("test -e pwned; echo $?").await.unwrap();
        assert_eq!(r.stdout_text(), "1\n", "{}", s.provider());
        s.destroy().await.unwrap();
    }
}

#[tokio::test]
async fn positional_indexed_and_inline_forms() {
    for t in all("positional_indexed_and_inline_forms") {
        let s = Sandbox::create(t.backend.clone(), CreateOptions::default())
            .await
            .unwrap();
        let a = "first one";
        let b = String::from("$second");
        let n = 42;
        let r = s
            .run(sh!("printf '<%s>' {} {1} {0} {n} {{literal}}", a, b))
            .await
            .unwrap();
        assert_eq!(
            r.stdout_text(),
            "<first one><$second><first one><42><{literal}>",
            "{}",
            s.provider()
        );
        let msg = "it's done";
        let file = "my file.txt";
        let r = s
            .run(sh!("printf '%s' {msg} > {file} && cat {file}"))
            .await
            .unwrap();
        assert_eq!(r.stdout_text(), msg, "{}", s.provider());
        s.destroy().await.unwrap();
    }
}

#[tokio::test]
async fn a_nul_byte_is_refused_before_the_backend() {
    let t = memory();
    let s = Sandbox::create(t.backend.clone(), CreateOptions::default())
        .await
        .unwrap();
    let value = "a\0b";
    let script = sh!("echo {value}");
    assert!(script.script().is_err());
    let err = s.run(script).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert_eq!(
        err.to_string(),
        "SandboxError [invalid_input] memory.run: sh!: interpolated value 1 contains a NUL byte, which no command argument can hold"
    );
}

#[test]
fn the_script_text_is_single_quoted() {
    let msg = "it's $x";
    assert_eq!(
        sh!("git commit -m {msg}").script(),
        Ok(r"git commit -m 'it'\''s $x'")
    );
    assert_eq!(sh!("echo {}", "").script(), Ok("echo ''"));
}
