//! Finding the host's cgroup hierarchies: the cgroup mounts from
//! `/proc/self/mountinfo` and this process's place in each from
//! `/proc/self/cgroup`.

use std::path::{Path, PathBuf};

use super::error::{CgroupError, Controller};
use super::fs;

/// The kind of a cgroup mount.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FsType {
    /// A v1 hierarchy (`cgroup`).
    V1,
    /// The unified hierarchy (`cgroup2`).
    V2,
}

/// One mounted cgroup hierarchy.
#[derive(Debug, Clone)]
pub(crate) struct Mount {
    /// Where it is mounted.
    pub(crate) point: PathBuf,
    /// The cgroup path of the mount's root (`/` unless bind-mounted).
    pub(crate) root: String,
    /// v1 or v2.
    pub(crate) fstype: FsType,
    /// Super-block options (v1: the controllers bound to it).
    pub(crate) options: Vec<String>,
}

/// One line of `/proc/self/cgroup`.
#[derive(Debug, Clone)]
pub(crate) struct Membership {
    /// The controllers of the hierarchy (empty for v2).
    pub(crate) controllers: Vec<String>,
    /// This process's cgroup path in that hierarchy.
    pub(crate) path: String,
}

/// Every cgroup mount visible to this process.
pub(crate) fn mounts() -> Result<Vec<Mount>, CgroupError> {
    let path = Path::new("/proc/self/mountinfo");
    let text = fs::read(path)?;
    Ok(parse_mountinfo(&text))
}

/// Parses mountinfo text, keeping cgroup mounts.
pub(crate) fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            let fields: Vec<&str> = before.split(' ').collect();
            let mut tail = after.split(' ');
            let fstype = match tail.next()? {
                "cgroup" => FsType::V1,
                "cgroup2" => FsType::V2,
                _ => return None,
            };
            let _source = tail.next()?;
            let options = tail.next()?.split(',').map(str::to_owned).collect();
            Some(Mount {
                root: unescape(fields.get(3)?),
                point: PathBuf::from(unescape(fields.get(4)?)),
                fstype,
                options,
            })
        })
        .collect()
}

/// Undoes mountinfo's octal escapes (`\040` for a space, ...).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|digits| {
            std::str::from_utf8(digits)
                .ok()
                .and_then(|s| u8::from_str_radix(s, 8).ok())
        });
        match (bytes[i], octal) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// This process's cgroups.
pub(crate) fn memberships() -> Result<Vec<Membership>, CgroupError> {
    let path = Path::new("/proc/self/cgroup");
    let text = fs::read(path)?;
    Ok(parse_cgroup(&text))
}

/// Parses `/proc/<pid>/cgroup` text.
pub(crate) fn parse_cgroup(text: &str) -> Vec<Membership> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let _id = parts.next()?;
            let controllers = parts.next()?;
            let path = parts.next()?;
            Some(Membership {
                controllers: controllers
                    .split(',')
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned)
                    .collect(),
                path: path.to_owned(),
            })
        })
        .collect()
}

/// The directory of this process's cgroup inside `mount`, given its cgroup
/// path. A path outside the mount's root (another cgroup namespace) falls
/// back to the mount point.
pub(crate) fn own_dir(mount: &Mount, path: &str) -> PathBuf {
    let root = mount.root.trim_end_matches('/');
    let relative = path.strip_prefix(root).unwrap_or("/");
    let relative = relative.trim_start_matches('/');
    if relative.is_empty() {
        mount.point.clone()
    } else {
        mount.point.join(relative)
    }
}

/// The v1 mount carrying `controller`, and this process's cgroup path in it.
pub(crate) fn v1_dir(
    mounts: &[Mount],
    memberships: &[Membership],
    controller: Controller,
) -> Option<PathBuf> {
    let name = controller.as_str();
    let mount = mounts
        .iter()
        .find(|m| m.fstype == FsType::V1 && m.options.iter().any(|o| o == name))?;
    let path = memberships
        .iter()
        .find(|m| m.controllers.iter().any(|c| c == name))
        .map_or("/", |m| m.path.as_str());
    Some(own_dir(mount, path))
}

/// The unified mount and this process's cgroup directory in it.
pub(crate) fn v2_dir(mounts: &[Mount], memberships: &[Membership]) -> Option<PathBuf> {
    let mount = mounts.iter().find(|m| m.fstype == FsType::V2)?;
    let path = memberships
        .iter()
        .find(|m| m.controllers.is_empty())
        .map_or("/", |m| m.path.as_str());
    Some(own_dir(mount, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
32 31 0:29 / /cg/cpu rw,relatime - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 / /cg/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /cg/unified rw,relatime - cgroup2 cgroup2 rw
50 23 0:40 / /mnt/with\\040space rw - tmpfs tmpfs rw
";
    const CGROUP: &str = "4:memory:/svc/a\n2:cpu,cpuacct:/\n0::/user.slice\n";

    #[test]
    fn finds_v1_and_v2_dirs() {
        let mounts = parse_mountinfo(MOUNTINFO);
        assert_eq!(mounts.len(), 3);
        let own = parse_cgroup(CGROUP);
        assert_eq!(
            v1_dir(&mounts, &own, Controller::Memory),
            Some(PathBuf::from("/cg/memory/svc/a"))
        );
        assert_eq!(
            v1_dir(&mounts, &own, Controller::Cpuacct),
            Some(PathBuf::from("/cg/cpu"))
        );
        assert_eq!(v1_dir(&mounts, &own, Controller::Pids), None);
        assert_eq!(
            v2_dir(&mounts, &own),
            Some(PathBuf::from("/cg/unified/user.slice"))
        );
    }

    #[test]
    fn unescapes_octal() {
        assert_eq!(unescape("/mnt/with\\040space"), "/mnt/with space");
        assert_eq!(unescape("/plain\\"), "/plain\\");
    }
}
