//! Writing a sandbox's id maps, from the host, into the user namespace its
//! init made: sandbox ids `0..RANGE_SIZE` are host ids `start..`.
//!
//! The host is privileged in the parent namespace, so it writes a map of
//! the whole range and leaves `setgroups` allowed (the init drops its
//! supplementary groups itself; workloads may set their own, all within
//! the range).

use std::io::{self, Write};

use super::{IdRange, RANGE_SIZE};

/// The map line of `range`: sandbox 0 is the range's first host id.
pub fn line(range: IdRange) -> String {
    format!("0 {} {RANGE_SIZE}\n", range.start())
}

/// Writes `uid_map` and `gid_map` of process `pid`'s user namespace.
pub fn write(pid: u32, range: IdRange) -> io::Result<()> {
    let line = line(range);
    for file in ["uid_map", "gid_map"] {
        let path = format!("/proc/{pid}/{file}");
        // The kernel takes a map in one write.
        let mut f = std::fs::OpenOptions::new().write(true).open(&path)?;
        let n = f.write(line.as_bytes())?;
        if n != line.len() {
            return Err(io::Error::other(format!("{path}: short write")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_map_sends_sandbox_root_to_the_range_start() {
        let r = IdRange::from_index(2).unwrap();
        assert_eq!(line(r), format!("0 {} 65536\n", (1u32 << 31) + 2 * 65536));
    }
}
