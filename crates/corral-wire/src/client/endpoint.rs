//! [`Endpoint`]: a server's address, `http://HOST:PORT` or
//! `https://HOST:PORT`, checked once when it is parsed: for `https://`
//! the host must be a name a certificate can carry (a DNS name or an IP
//! address), since the server's certificate is verified against it.

use std::fmt;

use rustls::pki_types::ServerName;

/// How a client speaks to its server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Plain HTTP (`http://`).
    Http,
    /// HTTP over TLS, the server verified (`https://`).
    Https,
}

impl Scheme {
    /// `http` or `https`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// A server address: `http://HOST:PORT` or `https://HOST:PORT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    scheme: Scheme,
    authority: String,
    /// The name the server's certificate must carry (`https://` only).
    server_name: Option<ServerName<'static>>,
}

/// Why an endpoint was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    /// Neither `http://` nor `https://`.
    #[error("endpoint {0:?}: only http://HOST:PORT or https://HOST:PORT is supported")]
    Scheme(String),
    /// No `HOST:PORT`, a bad port, or a path.
    #[error("endpoint {0:?}: expected http(s)://HOST:PORT with a port from 1 to 65535 and no path")]
    Authority(String),
    /// An `https://` host that no certificate can name.
    #[error(
        "endpoint {0:?}: the host is neither a DNS name nor an IP address, so no certificate can name it"
    )]
    ServerName(String),
}

impl Endpoint {
    /// Parses `http://HOST:PORT` or `https://HOST:PORT` (a trailing `/` is
    /// allowed).
    pub fn parse(text: &str) -> Result<Self, EndpointError> {
        let (scheme, rest) = if let Some(rest) = text.strip_prefix("http://") {
            (Scheme::Http, rest)
        } else if let Some(rest) = text.strip_prefix("https://") {
            (Scheme::Https, rest)
        } else {
            return Err(EndpointError::Scheme(text.into()));
        };
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        let bad = || EndpointError::Authority(text.into());
        let (host, port) = authority.rsplit_once(':').ok_or_else(bad)?;
        let port: u16 = port.parse().map_err(|_| bad())?;
        let host_ok = !host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-.[]:".contains(&b));
        if port == 0 || !host_ok {
            return Err(bad());
        }
        let server_name = match scheme {
            Scheme::Http => None,
            Scheme::Https => {
                let bare = host
                    .strip_prefix('[')
                    .and_then(|h| h.strip_suffix(']'))
                    .unwrap_or(host);
                let name = ServerName::try_from(bare.to_string())
                    .map_err(|_| EndpointError::ServerName(text.into()))?;
                Some(name)
            }
        };
        Ok(Self {
            scheme,
            authority: authority.into(),
            server_name,
        })
    }

    /// `HOST:PORT`.
    pub fn authority(&self) -> &str {
        &self.authority
    }

    /// `http` or `https`.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The name the server's certificate must carry, for `https://`.
    pub(crate) fn server_name(&self) -> Option<&ServerName<'static>> {
        self.server_name.as_ref()
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.scheme.as_str(), self.authority)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_http_or_https_host_port() {
        let e = Endpoint::parse("http://127.0.0.1:8080/").unwrap();
        assert_eq!(e.authority(), "127.0.0.1:8080");
        assert_eq!(e.to_string(), "http://127.0.0.1:8080");
        assert!(e.server_name().is_none());
        assert!(Endpoint::parse("http://[::1]:9").is_ok());
        let s = Endpoint::parse("https://corral.example:7443").unwrap();
        assert_eq!(s.scheme(), Scheme::Https);
        assert_eq!(s.to_string(), "https://corral.example:7443");
        assert!(
            Endpoint::parse("https://[::1]:9")
                .unwrap()
                .server_name()
                .is_some()
        );
        assert!(Endpoint::parse("https://127.0.0.1:9").is_ok());
    }

    /// Hostile or malformed endpoints, one row each, and the refusal.
    #[test]
    fn malformed_endpoints_are_refused_by_kind() {
        type Is = fn(&EndpointError) -> bool;
        let scheme: Is = |e| matches!(e, EndpointError::Scheme(_));
        let authority: Is = |e| matches!(e, EndpointError::Authority(_));
        let name: Is = |e| matches!(e, EndpointError::ServerName(_));
        let table: &[(&str, Is)] = &[
            ("ftp://h:1", scheme),
            ("HTTPS://h:1", scheme),
            ("ws://h:1", scheme),
            ("h:1", scheme),
            ("http://h", authority),
            ("http://h:0", authority),
            ("http://h:99999", authority),
            ("http://:80", authority),
            ("http://h:80/x", authority),
            ("https://h:80/x", authority),
            ("https://user@h:1", authority),
            ("https://h_x:1", authority),
            ("https://a..b:1", name),
            ("https://[:1", name),
        ];
        for (text, is) in table {
            let refused = Endpoint::parse(text).expect_err(text);
            assert!(is(&refused), "{text}: {refused:?}");
        }
    }
}
