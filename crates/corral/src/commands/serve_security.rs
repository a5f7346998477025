//! How `corral serve` protects its listener, decided from its flags before
//! anything listens: TLS with `--tls-cert` and `--tls-key` (both or
//! neither); plain HTTP on a loopback address (`127.0.0.0/8`, `::1`); plain
//! HTTP on any other address only with `--insecure-plain-http`, and then
//! with a warning on stderr. `0.0.0.0` and `::` are not loopback: they
//! listen on every interface.

use std::net::SocketAddr;
use std::path::PathBuf;

use corral_wire::ServerTls;

use crate::error::CliError;

/// How the listener is served.
#[derive(Debug)]
pub enum Security {
    /// Over TLS with this certificate and key.
    Tls(ServerTls),
    /// Plain HTTP on a loopback address: only this host reaches it.
    PlainLoopback,
    /// Plain HTTP on an address other hosts reach, as asked: the warning
    /// is printed before it listens.
    PlainExposed,
}

impl Security {
    /// The one-line warning plain HTTP off loopback is served with.
    pub fn warning(&self, addr: SocketAddr) -> Option<String> {
        matches!(self, Security::PlainExposed).then(|| {
            format!(
                "corral: warning: serving plain HTTP on {addr}, which is not a loopback \
                 address (--insecure-plain-http): the token and every request cross the \
                 network in clear"
            )
        })
    }
}

/// Whether `addr` reaches only this host: `127.0.0.0/8`, `::1`, or either
/// mapped into IPv6.
pub fn is_loopback(addr: SocketAddr) -> bool {
    addr.ip().to_canonical().is_loopback()
}

/// How `addr` is served given the flags: the certificate and key loaded
/// and checked against each other, or plain HTTP where that is allowed.
/// Every refusal is one line naming the flag or the file.
pub fn decide(
    addr: SocketAddr,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    insecure_plain_http: bool,
) -> Result<Security, CliError> {
    match (cert, key) {
        (Some(cert), Some(key)) => {
            if insecure_plain_http {
                return Err(CliError::usage(
                    "--insecure-plain-http contradicts --tls-cert and --tls-key; give one or the other",
                ));
            }
            let tls = ServerTls::from_pem_files(&cert, &key)
                .map_err(|e| CliError::usage(format!("--tls-cert/--tls-key: {e}")))?;
            Ok(Security::Tls(tls))
        }
        (Some(_), None) => Err(CliError::usage(
            "--tls-cert needs --tls-key FILE (the certificate's private key, PEM)",
        )),
        (None, Some(_)) => Err(CliError::usage(
            "--tls-key needs --tls-cert FILE (the certificate chain, PEM)",
        )),
        (None, None) if is_loopback(addr) => Ok(Security::PlainLoopback),
        (None, None) if insecure_plain_http => Ok(Security::PlainExposed),
        (None, None) => Err(CliError::usage(format!(
            "--listen {addr} is not a loopback address and plain HTTP would send the token in \
             clear: give --tls-cert FILE --tls-key FILE, or --insecure-plain-http to serve \
             plain HTTP anyway"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_127_slash_8_and_colon_colon_1_only() {
        let table = [
            ("127.0.0.1:1", true),
            ("127.255.0.9:1", true),
            ("[::1]:1", true),
            ("[::ffff:127.0.0.1]:1", true),
            ("0.0.0.0:1", false),
            ("[::]:1", false),
            ("10.0.0.1:1", false),
            ("[::ffff:10.0.0.1]:1", false),
            ("[fe80::1]:1", false),
            ("128.0.0.1:1", false),
        ];
        for (addr, loopback) in table {
            assert_eq!(is_loopback(addr.parse().unwrap()), loopback, "{addr}");
        }
    }
}
