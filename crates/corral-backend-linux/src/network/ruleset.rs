//! The two nftables rulesets of an allowlisted sandbox, as `nft -f` text
//! built only from parsed addresses, numbers and names this module made
//! (never from a user's string).

use std::fmt::Write;
use std::net::Ipv4Addr;

use super::{Endpoint, Link};

/// The table inside the sandbox's network namespace.
pub const SANDBOX_TABLE: &str = "corral";

/// The ruleset loaded inside the sandbox's network namespace: output is
/// refused except loopback, replies of allowed flows, and TCP/UDP to each
/// endpoint; input is dropped except loopback and replies. It covers IPv4
/// and IPv6 (family `inet`), so IPv6 egress is refused entirely.
///
/// A refused packet is rejected, not dropped, so a denied connection fails
/// at once instead of waiting for TCP's timeout: TCP gets a reset (the
/// workload sees `ECONNREFUSED`), anything else an ICMP "administratively
/// prohibited". The rejects are the chain's last rules; the `drop` policy
/// stays behind them.
pub fn sandbox_ruleset(endpoints: &[Endpoint]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "table inet {SANDBOX_TABLE} {{");
    s.push_str("  chain output {\n    type filter hook output priority 0; policy drop;\n");
    s.push_str("    oifname \"lo\" accept\n    ct state established,related accept\n");
    for e in endpoints {
        push_allow(&mut s, None, e);
    }
    s.push_str(REJECT_REST);
    s.push_str("  }\n  chain input {\n    type filter hook input priority 0; policy drop;\n");
    s.push_str("    iifname \"lo\" accept\n    ct state established,related accept\n  }\n}\n");
    s
}

/// The last rules of the sandbox's output chain: whatever no rule above
/// accepted is refused loudly (a TCP reset, else ICMP administratively
/// prohibited).
const REJECT_REST: &str =
    "    meta l4proto tcp reject with tcp reset\n    reject with icmpx type admin-prohibited\n";

/// The ruleset of the host side: a `netdev` table named after the host
/// link whose ingress chain (every frame the sandbox sends, before routing
/// and whatever socket type made it — raw and packet sockets included)
/// drops all but ARP for the sandbox's own address and TCP/UDP from the
/// sandbox's address to each endpoint.
pub fn host_ruleset(link: &Link, endpoints: &[Endpoint]) -> String {
    let name = &link.host_name;
    let mut s = String::new();
    let _ = writeln!(s, "table netdev {name} {{");
    let _ = writeln!(
        s,
        "  chain ingress {{\n    type filter hook ingress device \"{name}\" priority 0; policy drop;"
    );
    let _ = writeln!(s, "    arp saddr ip {} accept", link.sandbox_addr);
    for e in endpoints {
        push_allow(&mut s, Some(link.sandbox_addr), e);
    }
    s.push_str("  }\n}\n");
    s
}

fn push_allow(s: &mut String, from: Option<Ipv4Addr>, e: &Endpoint) {
    let from = from.map(|a| format!("ip saddr {a} ")).unwrap_or_default();
    for proto in ["tcp", "udp"] {
        let _ = writeln!(
            s,
            "    {from}ip daddr {} {proto} dport {} accept",
            e.daddr(),
            e.port
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link() -> Link {
        Link::for_index("0123456789ab", 5)
    }

    #[test]
    fn sandbox_rules_allow_only_the_endpoints() {
        let text = sandbox_ruleset(&[
            Endpoint::host(Ipv4Addr::new(10, 1, 2, 3), 8080),
            Endpoint {
                addr: Ipv4Addr::new(10, 233, 0, 0),
                prefix: 16,
                port: 80,
            },
        ]);
        assert!(text.contains("policy drop;"));
        assert!(text.contains("ip daddr 10.1.2.3 tcp dport 8080 accept"));
        assert!(text.contains("ip daddr 10.1.2.3 udp dport 8080 accept"));
        assert!(text.contains("ip daddr 10.233.0.0/16 tcp dport 80 accept"));
        assert_eq!(text.matches("dport").count(), 4);
    }

    #[test]
    fn sandbox_rules_reject_what_they_do_not_accept() {
        let text = sandbox_ruleset(&[Endpoint::host(Ipv4Addr::new(10, 1, 2, 3), 80)]);
        let output = &text[..text.find("chain input").unwrap()];
        let tcp = output
            .find("meta l4proto tcp reject with tcp reset")
            .unwrap();
        let other = output
            .find("reject with icmpx type admin-prohibited")
            .unwrap();
        let last_accept = output.rfind("accept").unwrap();
        assert!(
            last_accept < tcp && tcp < other,
            "the rejects come last:\n{text}"
        );
        assert!(!text[text.find("chain input").unwrap()..].contains("reject"));
    }

    #[test]
    fn host_rules_pin_the_source_address() {
        let l = link();
        let text = host_ruleset(&l, &[Endpoint::host(Ipv4Addr::new(10, 9, 9, 9), 53)]);
        assert!(text.starts_with("table netdev crl0123456789ab {"));
        assert!(text.contains("device \"crl0123456789ab\""));
        assert!(text.contains(&format!(
            "ip saddr {} ip daddr 10.9.9.9 udp dport 53 accept",
            l.sandbox_addr
        )));
        assert!(text.contains(&format!("arp saddr ip {} accept", l.sandbox_addr)));
    }
}
