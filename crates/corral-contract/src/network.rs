//! Network policies: `none`, or an allowlist of `host:port` destinations.

use std::net::{Ipv4Addr, Ipv6Addr};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::InvalidValue;
use crate::bounds::MAX_ALLOWLIST_DESTINATIONS;
use crate::capabilities::NetworkMode;
use crate::macros::string_newtype;

/// One allowlisted destination, `host:port`, in canonical form so that two
/// equal destinations have equal strings.
///
/// `host` is a lowercase DNS name (labels of 1–63 bytes of `a-z 0-9 -`, not
/// starting or ending with `-`, at most 253 bytes, last label not all digits),
/// a dotted IPv4 address in its canonical form, or a bracketed IPv6 address in
/// its canonical (RFC 5952) form. `port` is 1–65535 without leading zeros.
/// Wildcards are not accepted.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostPort(String);

/// Whether `host` is a lowercase DNS name as allowlists take it: labels of
/// 1–63 bytes of `a-z 0-9 -`, not starting or ending with `-`, at most 253
/// bytes in all, the last label not all digits (so that no malformed IPv4
/// address passes for a name). Wildcards are not names.
pub fn valid_dns_name(host: &str) -> bool {
    if host.is_empty() || host.len() > 253 {
        return false;
    }
    let labels: Vec<&str> = host.split('.').collect();
    let label_ok = |l: &&str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    labels.iter().all(label_ok)
        && !labels
            .last()
            .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()))
}

impl HostPort {
    fn validate(value: &str) -> Result<(), InvalidValue> {
        let refuse = |rule: &'static str| Err(InvalidValue::string("destination", value, rule));
        let Some((host, port)) = value.rsplit_once(':') else {
            return refuse("is not host:port");
        };
        let port_ok = !port.is_empty()
            && !port.starts_with('0')
            && port.len() <= 5
            && port.bytes().all(|b| b.is_ascii_digit())
            && port.parse::<u32>().is_ok_and(|p| (1..=65_535).contains(&p));
        if !port_ok {
            return refuse("has a port outside 1..=65535 (or with a leading zero)");
        }
        if let Some(inner) = host.strip_prefix('[') {
            let Some(inner) = inner.strip_suffix(']') else {
                return refuse("has an unterminated [IPv6] host");
            };
            return match inner.parse::<Ipv6Addr>() {
                Ok(ip) if ip.to_string() == inner => Ok(()),
                Ok(_) => refuse("has an IPv6 host not in canonical (RFC 5952) form"),
                Err(_) => refuse("has an invalid IPv6 host"),
            };
        }
        if host.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return match host.parse::<Ipv4Addr>() {
                Ok(ip) if ip.to_string() == host => Ok(()),
                _ => refuse("has an invalid IPv4 host"),
            };
        }
        if valid_dns_name(host) {
            Ok(())
        } else {
            refuse("has a host that is not a lowercase DNS name, IPv4 address or [IPv6] address")
        }
    }

    /// The host part (brackets kept for IPv6).
    pub fn host(&self) -> &str {
        self.0.rsplit_once(':').map_or("", |(h, _)| h)
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.0
            .rsplit_once(':')
            .and_then(|(_, p)| p.parse().ok())
            .unwrap_or(0)
    }
}

string_newtype!(HostPort, "HostPort", {
    "type": "string",
    "pattern": "^(?:[a-z0-9.-]+|\\[[0-9a-f:.]+\\]):[1-9][0-9]{0,4}$",
    "maxLength": 263,
    "description": "host:port; host a lowercase DNS name, IPv4, or [IPv6], all canonical.",
});

/// The destinations of an `allowlist` policy: 1 to 256 distinct
/// [`HostPort`]s (corral's bounds; an empty allowlist is spelled `none`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "Vec<HostPort>", into = "Vec<HostPort>")]
pub struct Destinations(Vec<HostPort>);

impl Destinations {
    /// Validates the list: non-empty, at most 256, no duplicate.
    pub fn new(items: Vec<HostPort>) -> Result<Self, InvalidValue> {
        if items.is_empty() {
            return Err(InvalidValue::rule(
                "destinations",
                "is empty (an allowlist names at least one destination; use mode none)",
            ));
        }
        if items.len() > MAX_ALLOWLIST_DESTINATIONS {
            return Err(InvalidValue::value(
                "destinations",
                format_args!("of {} entries", items.len()),
                format!("exceeds {MAX_ALLOWLIST_DESTINATIONS} entries"),
            ));
        }
        for (i, item) in items.iter().enumerate() {
            if items[..i].contains(item) {
                return Err(InvalidValue::string(
                    "destinations",
                    item.as_str(),
                    "is listed twice",
                ));
            }
        }
        Ok(Self(items))
    }

    /// The destinations, in declared order.
    pub fn as_slice(&self) -> &[HostPort] {
        &self.0
    }
}

impl TryFrom<Vec<HostPort>> for Destinations {
    type Error = InvalidValue;
    fn try_from(value: Vec<HostPort>) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl From<Destinations> for Vec<HostPort> {
    fn from(value: Destinations) -> Self {
        value.0
    }
}

impl JsonSchema for Destinations {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Destinations".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_ALLOWLIST_DESTINATIONS,
            "uniqueItems": true,
            "items": generator.subschema_for::<HostPort>(),
        })
    }
}

/// A profile's network policy. The wire form is tagged by `mode`:
/// `{"mode":"none"}` or `{"mode":"allowlist","destinations":["host:443"]}`.
///
/// `destinations` with mode `none` (or any other unknown key) is refused.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, JsonSchema)]
#[serde(tag = "mode", rename_all = "snake_case", deny_unknown_fields)]
pub enum NetworkPolicy {
    /// No workload destinations: outbound traffic is denied.
    None,
    /// Only the listed destinations are reachable.
    Allowlist {
        /// The reachable destinations.
        destinations: Destinations,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNetworkPolicy {
    mode: NetworkMode,
    #[serde(default)]
    destinations: Option<Destinations>,
}

impl<'de> Deserialize<'de> for NetworkPolicy {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let raw = RawNetworkPolicy::deserialize(deserializer)?;
        match (raw.mode, raw.destinations) {
            (NetworkMode::None, None) => Ok(Self::None),
            (NetworkMode::Allowlist, Some(destinations)) => Ok(Self::Allowlist { destinations }),
            (NetworkMode::None, Some(_)) => Err(D::Error::custom(InvalidValue::rule(
                "network.destinations",
                "is present but mode is none",
            ))),
            (NetworkMode::Allowlist, None) => Err(D::Error::custom(InvalidValue::rule(
                "network.destinations",
                "is missing (mode allowlist names its destinations)",
            ))),
        }
    }
}

impl NetworkPolicy {
    /// The network mode this policy needs a provider to advertise.
    pub fn mode(&self) -> NetworkMode {
        match self {
            NetworkPolicy::None => NetworkMode::None,
            NetworkPolicy::Allowlist { .. } => NetworkMode::Allowlist,
        }
    }
}
