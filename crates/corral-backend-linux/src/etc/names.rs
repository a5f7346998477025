//! The sandbox's names: `hostname` (its id), `hosts` (loopback and the
//! hostname), `resolv.conf` and `nsswitch.conf` (files, then DNS).

use super::{EtcError, EtcRoot};

/// `/etc/hosts`: loopback names and the sandbox's own name.
fn hosts(hostname: &str) -> String {
    format!(
        "127.0.0.1\tlocalhost\n\
         ::1\tlocalhost ip6-localhost ip6-loopback\n\
         127.0.1.1\t{hostname}\n"
    )
}

/// `/etc/nsswitch.conf`: every database from the files above; hosts from
/// them, then DNS.
const NSSWITCH: &str = "passwd: files\n\
group: files\n\
shadow: files\n\
hosts: files dns\n\
networks: files\n\
protocols: files\n\
services: files\n\
ethers: files\n\
rpc: files\n";

/// `/etc/resolv.conf` from the host's: its `nameserver`, `search`,
/// `domain` and `options` lines, except nameservers on loopback (the
/// sandbox's loopback is its own, with no resolver on it).
fn resolv_conf(host: &str) -> String {
    let mut out = String::from("# made by corral for this sandbox\n");
    for line in host.lines().map(str::trim) {
        let mut words = line.split_whitespace();
        let keep = match words.next() {
            Some("nameserver") => words
                .next()
                .and_then(|a| a.parse::<std::net::IpAddr>().ok())
                .is_some_and(|a| !a.is_loopback()),
            Some("search" | "domain" | "options") => true,
            _ => false,
        };
        if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Writes `hostname`, `hosts`, `resolv.conf` and `nsswitch.conf`.
pub(super) fn write(at: &EtcRoot<'_>, hostname: &str) -> Result<(), EtcError> {
    at.file("etc/hostname", format!("{hostname}\n").as_bytes())?;
    at.file("etc/hosts", hosts(hostname).as_bytes())?;
    at.file("etc/nsswitch.conf", NSSWITCH.as_bytes())?;
    let host = std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default();
    at.file("etc/resolv.conf", resolv_conf(&host).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolv_conf_drops_loopback_resolvers_and_comments() {
        let host = "# generated\nnameserver 127.0.0.53\nnameserver ::1\n\
                    nameserver 10.0.0.2\nsearch example.org\noptions edns0\nsortlist x\n";
        assert_eq!(
            resolv_conf(host),
            "# made by corral for this sandbox\nnameserver 10.0.0.2\n\
             search example.org\noptions edns0\n"
        );
    }

    #[test]
    fn hosts_names_the_sandbox() {
        assert!(hosts("sb-1").contains("127.0.1.1\tsb-1\n"));
    }
}
