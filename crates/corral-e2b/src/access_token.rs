//! A sandbox's envd access token (`envdAccessToken`), derived from the
//! served API key and the sandbox's id with HMAC-SHA256, so that it is
//! never stored: a restarted server with the same key knows every token it
//! gave, and a token is no other sandbox's, nor any other key's.

use corral_wire::Token;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// What the MAC covers before the id: the purpose, so that this key's MAC
/// of an id is never reused for anything else.
const PURPOSE: &[u8] = b"corral-e2b envd access token\n";

/// The access token of sandbox `id` under `api_key`: 64 hex digits.
pub fn derive(api_key: &Token, id: &str) -> String {
    // The key is the token's text (its header value carries it whole).
    let key = api_key.header_value();
    let mut mac =
        Hmac::<Sha256>::new_from_slice(key.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(PURPOSE);
    mac.update(id.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_the_same_for_its_key_and_id_and_differs_otherwise() {
        let key = Token::new("e2b_0123456789abcdef0123").unwrap();
        let other = Token::new("e2b_0123456789abcdef0124").unwrap();
        let token = derive(&key, "sb-1");
        assert_eq!(token.len(), 64);
        assert_eq!(token, derive(&key, "sb-1"));
        assert_ne!(token, derive(&key, "sb-2"));
        assert_ne!(token, derive(&other, "sb-1"));
        assert!(Token::new(token).is_ok());
    }
}
