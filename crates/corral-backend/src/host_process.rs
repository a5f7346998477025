//! What `/proc/<pid>/stat` says about a host process: whether it still
//! runs, since when, and under which parent. A pid alone is not a
//! process (pids are reused); a pid with its start time is, so every
//! record of a host process corral keeps pairs the two, and every check
//! reads both through here.

/// The start time (field 22 of `/proc/<pid>/stat`, clock ticks since
/// boot) of a live process; `None` when it is gone, a zombie, or being
/// reaped.
pub fn process_start(pid: u32) -> Option<u64> {
    with_stat_fields(pid, start_of_live)
}

/// The parent pid (field 4 of `/proc/<pid>/stat`); `None` when it is gone.
pub fn parent_pid(pid: u32) -> Option<u32> {
    with_stat_fields(pid, |fields| fields.get(1)?.parse().ok())
}

/// `read` applied to the fields of `/proc/<pid>/stat` after the command
/// name, from field 3 (the state) on; `None` when the process is gone.
fn with_stat_fields<T>(pid: u32, read: impl FnOnce(&[&str]) -> Option<T>) -> Option<T> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    read(&fields_of(&stat)?)
}

/// The fields of a stat line after the command name. The name may hold
/// spaces and parentheses, so the split is after the last `)`.
fn fields_of(stat: &str) -> Option<Vec<&str>> {
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    Some(rest.split(' ').collect())
}

/// The start time in the stat `fields` (from the state on) of a process
/// that still runs. A dead process passes through two states before its
/// pid disappears: `Z` (exited, not yet reaped) and then, while its
/// parent reaps it, `X` (`x` on kernels before 4.14). Both are gone: a
/// caller that waited for a killed process must never see it come back.
fn start_of_live(fields: &[&str]) -> Option<u64> {
    if matches!(fields.first(), Some(&("Z" | "X" | "x"))) {
        return None;
    }
    fields.get(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stat line of a process named `name` in `state`, started at 4242.
    fn line(name: &str, state: &str) -> String {
        let mut rest = vec![state, "1"];
        rest.extend(std::iter::repeat_n("0", 17));
        rest.push("4242");
        rest.extend(["1000", "200"]); // fields after the start time, as on every kernel
        format!("77 ({name}) {}\n", rest.join(" "))
    }

    /// state of a dying process (or a hostile name) → what is read.
    #[test]
    fn a_process_being_reaped_reads_as_gone() {
        let table = [
            ("sleep", "R", Some(4242)),
            ("sleep", "S", Some(4242)),
            ("sleep", "D", Some(4242)),
            ("sleep", "T", Some(4242)),
            ("sleep", "Z", None),         // exited, its parent has not reaped it
            ("sleep", "X", None),         // its parent is reaping it right now
            ("sleep", "x", None),         // the same state on kernels before 4.14
            ("a) Z (b", "R", Some(4242)), // a name posing as a state
            (") X 1 ", "S", Some(4242)),
        ];
        for (name, state, want) in table {
            let stat = line(name, state);
            let fields = fields_of(&stat).expect("fields");
            assert_eq!(start_of_live(&fields), want, "{name:?} in state {state}");
        }
    }

    #[test]
    fn a_truncated_stat_line_reads_as_gone() {
        for stat in ["", "77 (sleep", "77 (sleep) R", "77 (sleep) R 1 0"] {
            let got = fields_of(stat).and_then(|f| start_of_live(&f));
            assert_eq!(got, None, "{stat:?}");
        }
    }

    #[test]
    fn this_process_runs_and_has_a_parent() {
        let me = std::process::id();
        assert!(process_start(me).is_some());
        assert!(parent_pid(me).is_some());
        assert_eq!(process_start(u32::MAX), None);
    }
}
