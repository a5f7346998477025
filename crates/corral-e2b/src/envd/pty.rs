//! Terminals of `process.Process`: a `Start` with a `pty` opens the
//! process on a terminal of the backend's (`Backend::terminal_ops`), whose
//! output is `pty` data events and whose keystrokes are `SendInput`'s
//! `input.pty`; `Update` with `pty.size` resizes it. A backend without
//! terminals refuses both as `unimplemented`.

use corral_backend::TerminalOps;
use serde::Deserialize;
use serde_json::{Value, json};

use super::process::{Selector, select};
use crate::Inner;
use crate::error::{E2bError, E2bResult};
use crate::state::Record;

/// `PTY` as the client sends it.
#[derive(Debug, Deserialize)]
pub struct PtyBody {
    size: Option<SizeBody>,
}

/// `PTY.Size`. proto3 JSON leaves out a field that is 0, so an absent one
/// is 0 (and refused); wider integers than a terminal takes are read here
/// so that the refusal can name them.
#[derive(Debug, Deserialize)]
struct SizeBody {
    #[serde(default)]
    cols: i64,
    #[serde(default)]
    rows: i64,
}

/// A terminal's window size: columns and rows, each from 1 to 65535.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PtySize {
    /// Columns.
    pub cols: u16,
    /// Rows.
    pub rows: u16,
}

impl PtySize {
    /// The size `pty` asks for, checked once, here; `field` names it in the
    /// refusal (`pty` of `Start`, of `Update`).
    pub fn of(field: &str, pty: Option<&PtyBody>) -> E2bResult<Self> {
        let Some(pty) = pty else {
            return Err(E2bError::invalid(field, "is missing"));
        };
        let Some(size) = &pty.size else {
            return Err(E2bError::invalid(format!("{field}.size"), "is missing"));
        };
        let dimension = |name: &str, n: i64| {
            u16::try_from(n).ok().filter(|n| *n > 0).ok_or_else(|| {
                E2bError::invalid(
                    format!("{field}.size.{name}"),
                    format!("{n} is not from 1 to {}", u16::MAX),
                )
            })
        };
        Ok(PtySize {
            cols: dimension("cols", size.cols)?,
            rows: dimension("rows", size.rows)?,
        })
    }
}

/// `UpdateRequest`.
#[derive(Debug, Deserialize)]
pub struct UpdateRequest {
    process: Selector,
    pty: Option<PtyBody>,
}

/// `Update`: resizes the terminal of a `pty` process.
pub async fn update(inner: &Inner, record: &Record, req: &UpdateRequest) -> E2bResult<Value> {
    terminals(inner)?;
    let size = PtySize::of("pty", req.pty.as_ref())?;
    let entry = select(record, &req.process)?;
    let Some(terminal) = &entry.terminal else {
        return Err(E2bError::NoTerminal {
            pid: entry.pid,
            call: "Update",
        });
    };
    terminal.resize(size.cols, size.rows).await?;
    Ok(json!({}))
}

/// The backend's terminals; on a backend that has none, the honest
/// refusal.
pub fn terminals(inner: &Inner) -> E2bResult<&dyn TerminalOps> {
    inner
        .backend
        .terminal_ops()
        .ok_or_else(|| E2bError::NotServed {
            what: format!("a pty (terminals) on the {} backend", inner.backend.name()),
        })
}

#[cfg(test)]
mod tests {
    use super::{PtyBody, PtySize};

    /// Each size a client could send, and whether it is taken.
    #[test]
    fn a_pty_size_is_from_1_to_65535_both_ways() {
        let rows: [(&str, Option<(u16, u16)>); 9] = [
            (r#"{"size":{"cols":80,"rows":24}}"#, Some((80, 24))),
            (r#"{"size":{"cols":65535,"rows":1}}"#, Some((65535, 1))),
            (r#"{"size":{"cols":0,"rows":24}}"#, None),
            (r#"{"size":{"cols":80}}"#, None),
            (r#"{"size":{"cols":65536,"rows":24}}"#, None),
            (r#"{"size":{"cols":80,"rows":65536}}"#, None),
            (r#"{"size":{"cols":-1,"rows":24}}"#, None),
            (r#"{"size":{}}"#, None),
            (r#"{}"#, None),
        ];
        for (body, want) in rows {
            let pty: PtyBody = serde_json::from_str(body).unwrap();
            let got = PtySize::of("pty", Some(&pty)).map(|s| (s.cols, s.rows));
            match want {
                Some(size) => assert_eq!(got.unwrap(), size, "{body}"),
                None => {
                    let e = got.unwrap_err().to_string();
                    assert!(e.starts_with("pty"), "{body}: {e}");
                }
            }
        }
        assert!(PtySize::of("pty", None).is_err());
    }
}
