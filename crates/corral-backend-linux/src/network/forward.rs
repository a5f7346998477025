//! Letting a sandbox's allowed traffic through the host's `FORWARD` chain.
//!
//! A host whose iptables `FORWARD` policy is `DROP` — what Docker sets when
//! it starts — would silently drop everything a sandbox sends through its
//! veth, allowed or not. So, where `iptables` exists, each allowlisted
//! sandbox gets two rules at the top of `FORWARD`, both commented with
//! `corral <link>`: accept what enters from its host link (what may enter
//! is already limited to its destinations by the link's `netdev` ingress
//! filter, see [`super::ruleset`]), and accept replies going back out to
//! it. They are removed with the link ([`remove`]), and `gc` removes any
//! whose link is gone ([`sweep`]). Without `iptables` there is no such
//! chain to open and nothing is done.

use super::NetworkError;
use super::command::{Namespace, on_path, run};

const CHAIN: &str = "FORWARD";

/// The two rules of host link `link`, as `iptables` arguments after the
/// chain name.
fn rules(link: &str) -> [Vec<String>; 2] {
    let comment = format!("corral {link}");
    let tail = ["-m", "comment", "--comment", &comment, "-j", "ACCEPT"];
    let rule = |head: &[&str]| head.iter().chain(&tail).map(|a| a.to_string()).collect();
    [
        rule(&["-i", link]),
        rule(&[
            "-o",
            link,
            "-m",
            "conntrack",
            "--ctstate",
            "RELATED,ESTABLISHED",
        ]),
    ]
}

fn iptables(op: &str, rule: &[String]) -> Result<String, NetworkError> {
    let mut args: Vec<&str> = vec!["-w", "5", op, CHAIN];
    args.extend(rule.iter().map(String::as_str));
    run("iptables", &args, None, Namespace::Host)
}

/// Opens `FORWARD` to host link `link` (see the module docs); nothing to
/// do without `iptables`.
pub fn allow(link: &str) -> Result<(), NetworkError> {
    if !on_path("iptables") {
        return Ok(());
    }
    for rule in rules(link) {
        iptables("-I", &rule)?;
    }
    Ok(())
}

/// Removes what [`allow`] added for `link` (every copy). Idempotent.
pub fn remove(link: &str) -> Result<(), NetworkError> {
    if !on_path("iptables") {
        return Ok(());
    }
    for rule in rules(link) {
        // `-C` fails once no copy is left; a bounded loop never spins.
        // Another process (a `gc` sweep, a second destroy) may delete the
        // same rule between the check and the delete: a failed delete of a
        // rule that is gone is success, so removal stays idempotent.
        for _ in 0..16 {
            if iptables("-C", &rule).is_err() {
                break;
            }
            if let Err(e) = iptables("-D", &rule) {
                if iptables("-C", &rule).is_err() {
                    break;
                }
                return Err(e);
            }
        }
    }
    Ok(())
}

/// Removes the rules of corral links that no longer exist; returns the
/// links whose rules were removed.
pub fn sweep(link_exists: impl Fn(&str) -> bool) -> Result<Vec<String>, NetworkError> {
    if !on_path("iptables") {
        return Ok(Vec::new());
    }
    let listing = run("iptables", &["-w", "5", "-S", CHAIN], None, Namespace::Host)?;
    let mut links: Vec<String> = listing
        .lines()
        .filter_map(|l| l.split("--comment ").nth(1))
        .filter_map(|c| {
            c.trim_start_matches('"')
                .strip_prefix("corral ")
                .and_then(|rest| rest.split(['"', ' ']).next())
        })
        .filter(|l| super::is_link_name(l))
        .map(str::to_owned)
        .collect();
    links.sort();
    links.dedup();
    links.retain(|l| !link_exists(l));
    for l in &links {
        remove(l)?;
    }
    Ok(links)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_rules_name_the_link() {
        let [inbound, replies] = rules("crl0123456789ab");
        assert_eq!(&inbound[..2], ["-i", "crl0123456789ab"]);
        assert_eq!(&replies[..2], ["-o", "crl0123456789ab"]);
        for r in [&inbound, &replies] {
            assert!(r.contains(&"corral crl0123456789ab".to_string()));
            assert_eq!(r.last().map(String::as_str), Some("ACCEPT"));
        }
    }
}
