//! Locators: a string that names one sandbox of one backend, so another
//! process can reattach to it with [`Sandbox::connect`](crate::Sandbox::connect).
//!
//! Format: `corral:<backend>/<id>`, e.g. `corral:local/loc-1a2b…`. The
//! backend name is the backend's [`name`](corral_backend::Backend::name);
//! the id is the sandbox id exactly as the backend assigned it. Neither may
//! be empty or hold whitespace or control characters; the backend name
//! holds no `/` (the id may).

/// The scheme every locator starts with.
pub const LOCATOR_SCHEME: &str = "corral:";

/// A parsed locator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locator {
    /// The backend's name.
    pub backend: String,
    /// The sandbox id.
    pub id: String,
}

impl Locator {
    /// The locator of sandbox `id` of `backend`.
    pub fn new(backend: impl Into<String>, id: impl Into<String>) -> Locator {
        Locator {
            backend: backend.into(),
            id: id.into(),
        }
    }

    /// Parses `corral:<backend>/<id>`; the error says what was wrong.
    pub fn parse(text: &str) -> Result<Locator, String> {
        let Some(rest) = text.strip_prefix(LOCATOR_SCHEME) else {
            return Err(format!(
                "locator {text:?} does not start with {LOCATOR_SCHEME:?} (expected corral:<backend>/<id>)"
            ));
        };
        let Some((backend, id)) = rest.split_once('/') else {
            return Err(format!(
                "locator {text:?} has no '/' between backend and id (expected corral:<backend>/<id>)"
            ));
        };
        check_part(text, "backend", backend)?;
        check_part(text, "id", id)?;
        Ok(Locator::new(backend, id))
    }
}

fn check_part(text: &str, what: &str, part: &str) -> Result<(), String> {
    if part.is_empty() {
        return Err(format!("locator {text:?} has an empty {what}"));
    }
    if part.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "locator {text:?}: the {what} holds whitespace or a control character"
        ));
    }
    Ok(())
}

impl std::fmt::Display for Locator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{LOCATOR_SCHEME}{}/{}", self.backend, self.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_malformed() {
        let l = Locator::new("local", "loc-1");
        assert_eq!(l.to_string(), "corral:local/loc-1");
        assert_eq!(Locator::parse("corral:local/loc-1").unwrap(), l);
        assert_eq!(Locator::parse("corral:x/a/b").unwrap().id, "a/b");
        for bad in [
            "",
            "local/loc-1",
            "corral:local",
            "corral:/id",
            "corral:local/",
            "corral:lo cal/x",
            "corral:local/x\n",
        ] {
            assert!(Locator::parse(bad).is_err(), "{bad:?}");
        }
    }
}
