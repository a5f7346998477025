//! [`PullTarget`]: what `corral image pull REF` reaches, and how — a
//! reference of the distribution API, over HTTPS, or plain HTTP only for a
//! loopback registry or with `--insecure`.

use std::net::IpAddr;

use oci_client::Reference;
use oci_client::client::ClientProtocol;

use super::pull_error::PullError;

/// How a registry is spoken to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// TLS (the default).
    Https,
    /// Plain HTTP: a loopback registry, or `--insecure`.
    Http,
}

/// A parsed `corral image pull` reference.
#[derive(Debug, Clone)]
pub struct PullTarget {
    /// The reference as the user gave it.
    pub given: String,
    /// The reference, registry and repository resolved.
    pub reference: Reference,
    /// How to reach its registry.
    pub transport: Transport,
}

/// Whether `registry` (`host[:port]`, `[v6][:port]`) is this machine's
/// loopback: `localhost`, `127.0.0.0/8` or `::1`.
pub fn is_loopback(registry: &str) -> bool {
    let host = match registry.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => registry.split(':').next().unwrap_or(""),
    };
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Parses a reference without a scheme. oci-client's parser knows no
/// IPv6 literal, so a `[v6]:port` registry is split off here and the rest
/// parsed under a stand-in registry.
fn parse_reference(s: &str) -> Result<Reference, String> {
    if !s.starts_with('[') {
        return s.parse().map_err(|e| format!("{e}"));
    }
    let (registry, rest) = s
        .split_once('/')
        .ok_or_else(|| "a registry needs a repository after it".to_string())?;
    let inner: Reference = format!("registry.invalid/{rest}")
        .parse()
        .map_err(|e| format!("{e}"))?;
    let repository = inner.repository().to_string();
    Ok(match (inner.tag(), inner.digest()) {
        (Some(tag), Some(digest)) => Reference::with_tag_and_digest(
            registry.to_string(),
            repository,
            tag.to_string(),
            digest.to_string(),
        ),
        (None, Some(digest)) => {
            Reference::with_digest(registry.to_string(), repository, digest.to_string())
        }
        (tag, None) => Reference::with_tag(
            registry.to_string(),
            repository,
            tag.unwrap_or("latest").to_string(),
        ),
    })
}

impl PullTarget {
    /// Parses `REF` (`[http://|https://]REGISTRY/REPOSITORY[:TAG][@DIGEST]`,
    /// or a Docker Hub short name such as `busybox`). Without a scheme, a
    /// loopback registry is plain HTTP and any other HTTPS; `--insecure`
    /// allows plain HTTP to any registry; `http://` to a registry off
    /// loopback without it is refused.
    pub fn parse(given: &str, insecure: bool) -> Result<Self, PullError> {
        let bad = |reason: String| PullError::Reference {
            reference: given.to_string(),
            reason,
        };
        let (scheme, rest) = match given.split_once("://") {
            Some((s, rest)) => (Some(s), rest),
            None => (None, given),
        };
        let reference = parse_reference(rest).map_err(bad)?;
        let registry = reference.resolve_registry().to_string();
        let loopback = is_loopback(&registry);
        let transport = match scheme {
            Some("https") => Transport::Https,
            Some("http") if loopback || insecure => Transport::Http,
            Some("http") => return Err(PullError::PlainHttp { registry }),
            Some(other) => {
                return Err(bad(format!(
                    "the scheme {other:?} is neither http nor https"
                )));
            }
            None if loopback || insecure => Transport::Http,
            None => Transport::Https,
        };
        Ok(PullTarget {
            given: given.to_string(),
            reference,
            transport,
        })
    }

    /// The registry as requests address it.
    pub fn registry(&self) -> &str {
        self.reference.resolve_registry()
    }

    /// The client protocol for this target alone.
    pub fn protocol(&self) -> ClientProtocol {
        match self.transport {
            Transport::Https => ClientProtocol::Https,
            Transport::Http => ClientProtocol::HttpsExcept(vec![self.registry().to_string()]),
        }
    }

    /// The name the image is stored under by default: the reference
    /// without its scheme and digest, `:latest` when it names no tag.
    pub fn default_name(&self) -> String {
        let bare = self
            .given
            .split_once("://")
            .map_or(&*self.given, |(_, r)| r);
        let (name, digest) = match bare.split_once('@') {
            Some((name, _)) => (name, true),
            None => (bare, false),
        };
        let last = name.rsplit('/').next().unwrap_or(name);
        if last.contains(':') || digest {
            name.to_string()
        } else {
            format!("{name}:latest")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_told_by_host_alone() {
        for r in [
            "127.0.0.1:5000",
            "localhost:5000",
            "[::1]:5000",
            "127.1.2.3",
            "LOCALHOST",
        ] {
            assert!(is_loopback(r), "{r}");
        }
        for r in [
            "10.0.0.1:5000",
            "registry.example:5000",
            "[::2]:5000",
            "localhost.evil",
        ] {
            assert!(!is_loopback(r), "{r}");
        }
    }

    /// Hostile or mistaken references: (reference, --insecure, expected
    /// transport or refusal).
    #[test]
    fn transport_table() {
        let rows: [(&str, bool, Result<Transport, &str>); 9] = [
            ("127.0.0.1:5000/a:1", false, Ok(Transport::Http)),
            ("http://localhost:5000/a:1", false, Ok(Transport::Http)),
            ("[::1]:5000/a:1", false, Ok(Transport::Http)),
            ("https://127.0.0.1:5000/a:1", false, Ok(Transport::Https)),
            ("registry.example/a:1", false, Ok(Transport::Https)),
            ("registry.example/a:1", true, Ok(Transport::Http)),
            // attack: plain HTTP off loopback without --insecure.
            (
                "http://registry.example/a:1",
                false,
                Err("refusing plain http://"),
            ),
            (
                "ftp://registry.example/a:1",
                false,
                Err("neither http nor https"),
            ),
            ("127.0.0.1:5000/A B", false, Err("invalid image reference")),
        ];
        for (given, insecure, expected) in rows {
            let got = PullTarget::parse(given, insecure);
            match (got, expected) {
                (Ok(t), Ok(want)) => assert_eq!(t.transport, want, "{given}"),
                (Err(e), Err(want)) => {
                    let line = e.to_string();
                    assert!(line.contains(want), "{given}: {line}");
                    assert!(!line.contains('\n'), "{given}");
                }
                (got, want) => panic!("{given}: {got:?} where {want:?} was expected"),
            }
        }
    }

    #[test]
    fn default_names() {
        let name = |r: &str| PullTarget::parse(r, false).unwrap().default_name();
        assert_eq!(
            name("127.0.0.1:5000/busybox:v1"),
            "127.0.0.1:5000/busybox:v1"
        );
        assert_eq!(
            name("127.0.0.1:5000/busybox"),
            "127.0.0.1:5000/busybox:latest"
        );
        assert_eq!(name("busybox"), "busybox:latest");
        let d = format!("sha256:{}", "a".repeat(64));
        assert_eq!(name(&format!("localhost:5000/x@{d}")), "localhost:5000/x");
    }
}
