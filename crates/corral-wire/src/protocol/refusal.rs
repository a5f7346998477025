//! [`Refusal`]: why the server refused a request before the provider saw
//! it. One table gives each refusal its header value, its HTTP status and
//! the contract failure reason its body names.

use corral_contract::FailureReason;

macro_rules! refusals {
    ($($(#[$doc:meta])* $variant:ident => $name:literal, $status:literal, $reason:ident;)*) => {
        /// Why the server refused a request before the provider saw it (the
        /// value of [`REFUSAL_HEADER`](super::REFUSAL_HEADER)). The body is
        /// still a contract error.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Refusal {
            $($(#[$doc])* $variant,)*
        }

        impl Refusal {
            /// Every refusal.
            pub const ALL: &'static [Refusal] = &[$(Refusal::$variant),*];

            /// The header value.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)*
                }
            }

            /// The HTTP status.
            pub const fn status(self) -> u16 {
                match self {
                    $(Self::$variant => $status,)*
                }
            }

            /// The reason of the `SandboxOperationFailed` body that names
            /// the route's member.
            pub const fn reason(self) -> FailureReason {
                match self {
                    $(Self::$variant => FailureReason::$reason,)*
                }
            }
        }
    };
}

refusals! {
    /// No `Authorization: Bearer` header, or the wrong token (401).
    Unauthenticated => "unauthenticated", 401, PermissionDenied;
    /// The body exceeds the route's bound (413).
    BodyTooLarge => "body_too_large", 413, PlatformRejected;
    /// The body is not the route's request type (400).
    MalformedBody => "malformed_body", 400, PlatformRejected;
    /// The request names another
    /// [`CONTRACT_REVISION`](super::CONTRACT_REVISION) (400).
    RevisionMismatch => "revision_mismatch", 400, PlatformRejected;
    /// No such route, or not `POST` (404).
    UnknownRoute => "unknown_route", 404, PlatformRejected;
    /// The handoff or transaction id is unknown (404).
    UnknownTicket => "unknown_ticket", 404, NotFound;
}

impl Refusal {
    /// Parses a header value.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|r| r.as_str() == text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_round_trip_their_header() {
        for r in [
            Refusal::Unauthenticated,
            Refusal::BodyTooLarge,
            Refusal::MalformedBody,
            Refusal::RevisionMismatch,
            Refusal::UnknownRoute,
            Refusal::UnknownTicket,
        ] {
            assert_eq!(Refusal::parse(r.as_str()), Some(r));
        }
        assert_eq!(Refusal::ALL.len(), 6);
        assert_eq!(Refusal::Unauthenticated.status(), 401);
        assert_eq!(Refusal::parse("nope"), None);
    }

    // docs/wire.md, "Errors and refusals": the body of a refusal names the
    // route's member and this reason.
    #[test]
    fn each_refusal_names_its_reason() {
        let table = [
            (Refusal::Unauthenticated, FailureReason::PermissionDenied),
            (Refusal::BodyTooLarge, FailureReason::PlatformRejected),
            (Refusal::MalformedBody, FailureReason::PlatformRejected),
            (Refusal::RevisionMismatch, FailureReason::PlatformRejected),
            (Refusal::UnknownRoute, FailureReason::PlatformRejected),
            (Refusal::UnknownTicket, FailureReason::NotFound),
        ];
        for (refusal, reason) in table {
            assert_eq!(refusal.reason(), reason, "{refusal:?}");
        }
    }
}
