//! Arguments a shell cannot pass (a NUL byte, invalid UTF-8) are refused by
//! the same entry point the binary uses, with one line and exit status 2.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

#[test]
fn an_argument_with_a_nul_byte_is_refused() {
    let args: Vec<OsString> = ["corral", "run", "--backend", "memory", "--", "echo", "a\0b"]
        .iter()
        .map(OsString::from)
        .collect();
    assert_eq!(corral::main_with_args(args), 2);
}

#[test]
fn an_argument_that_is_not_utf8_is_refused() {
    let args = vec![
        OsString::from("corral"),
        OsString::from("run"),
        OsString::from("--"),
        OsString::from_vec(vec![0xff, 0xfe]),
    ];
    assert_eq!(corral::main_with_args(args), 2);
}

#[test]
fn the_error_line_names_the_argument() {
    let e = corral::error::CliError::usage("argument 6 (\"a\\\\0b\") contains a NUL byte");
    assert_eq!(
        e.to_string(),
        "corral: error: [usage] argument 6 (\"a\\\\0b\") contains a NUL byte"
    );
}
