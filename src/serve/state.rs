//! Signed state for 2026-07-28 requests: what rootfence needs back on a client's retry (the
//! roots the client declared, the server's own `requestState`) travels in the `requestState`
//! the protocol already echoes, so any replica holding the same key can serve the retry.
//!
//! A token is `rf1.<payload>.<mac>`: the payload is base64url JSON, the MAC is HMAC-SHA256
//! over `rf1.<payload>` with the operator's key. A token is valid only with that key, for
//! the principal it was issued to, and until it expires; anything else is refused, never
//! trusted in part. The roots it carries are the client's own declaration: they are still
//! intersected with `--root` and the policy by the enforcer, exactly as on stdio.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The prefix of rootfence's tokens (versioned, so the format can change).
pub const PREFIX: &str = "rf1.";

/// What a token carries.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct State {
    /// The principal it was issued to.
    pub p: Option<String>,
    /// The client's `roots/list` result, once known.
    pub r: Option<Value>,
    /// The server's own `requestState`, restored on the retry.
    pub s: Option<Value>,
    /// Expiry, in seconds since the epoch.
    pub e: u64,
}

/// Why a token was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// Not of rootfence's form, or its signature does not verify (tampered, or another key).
    #[error("the requestState was not issued by this deployment or was altered")]
    Forged,
    /// Past its expiry.
    #[error("the requestState has expired")]
    Expired,
    /// Issued to another principal.
    #[error("the requestState was issued to another client")]
    Principal,
}

/// Signs and checks tokens with one key.
#[derive(Clone)]
pub struct Signer {
    key: Vec<u8>,
    ttl: Duration,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Signer {
    /// A signer with `key` whose tokens live for `ttl`.
    pub fn new(key: Vec<u8>, ttl: Duration) -> Signer {
        Signer { key, ttl }
    }

    /// The MAC of a token's signed part, `signed`.
    fn mac(&self, signed: &str) -> Hmac<Sha256> {
        Hmac::<Sha256>::new_from_slice(&self.key)
            .expect("HMAC takes a key of any length")
            .chain_update(signed)
    }

    /// A token for `principal` carrying `roots` and the server's `inner` state.
    pub fn sign(
        &self,
        principal: Option<&str>,
        roots: Option<&Value>,
        inner: Option<Value>,
    ) -> String {
        let state = State {
            p: principal.map(str::to_owned),
            r: roots.cloned(),
            s: inner,
            e: now() + self.ttl.as_secs(),
        };
        let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&state).unwrap_or_default());
        let signed = format!("{PREFIX}{payload}");
        let tag = URL_SAFE_NO_PAD.encode(self.mac(&signed).finalize().into_bytes());
        format!("{signed}.{tag}")
    }

    /// Checks a token for `principal`.
    pub fn verify(&self, token: &str, principal: Option<&str>) -> Result<State, StateError> {
        let (signed, tag) = token.rsplit_once('.').ok_or(StateError::Forged)?;
        let payload = signed.strip_prefix(PREFIX).ok_or(StateError::Forged)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| StateError::Forged)?;
        // Constant time: the comparison says nothing about how much of a guess was right.
        self.mac(signed)
            .verify_slice(&tag)
            .map_err(|_| StateError::Forged)?;
        let bytes = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| StateError::Forged)?;
        let state: State = serde_json::from_slice(&bytes).map_err(|_| StateError::Forged)?;
        if state.e < now() {
            return Err(StateError::Expired);
        }
        if state.p.as_deref() != principal {
            return Err(StateError::Principal);
        }
        Ok(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn signer(key: &[u8]) -> Signer {
        Signer::new(key.to_vec(), Duration::from_secs(60))
    }

    #[test]
    fn a_token_round_trips_for_its_principal_only() {
        let s = signer(b"0123456789abcdef0123456789abcdef");
        let roots = json!({"roots":[{"uri":"file:///a"}]});
        let t = s.sign(Some("token:ab"), Some(&roots), Some(json!("server-state")));
        let st = s.verify(&t, Some("token:ab")).unwrap();
        assert_eq!(st.r, Some(roots));
        assert_eq!(st.s, Some(json!("server-state")));
        assert_eq!(s.verify(&t, Some("token:cd")), Err(StateError::Principal));
        assert_eq!(s.verify(&t, None), Err(StateError::Principal));
    }

    #[test]
    fn tampering_or_another_key_is_refused() {
        let s = signer(b"0123456789abcdef0123456789abcdef");
        let t = s.sign(None, Some(&json!({"roots":[{"uri":"file:///a"}]})), None);
        let other = signer(b"another key, just as long as the first");
        assert_eq!(other.verify(&t, None), Err(StateError::Forged));
        // Swap in a payload that widens the roots, keeping the tag.
        let (_, tag) = t.rsplit_once('.').unwrap();
        let evil = URL_SAFE_NO_PAD.encode(
            serde_json::to_vec(&State {
                p: None,
                r: Some(json!({"roots":[{"uri":"file:///"}]})),
                s: None,
                e: u64::MAX,
            })
            .unwrap(),
        );
        assert_eq!(
            s.verify(&format!("{PREFIX}{evil}.{tag}"), None),
            Err(StateError::Forged)
        );
        for junk in ["", "rf1.", "rf1..", "nope", "rf1.e30.AAAA"] {
            assert_eq!(s.verify(junk, None), Err(StateError::Forged), "{junk:?}");
        }
    }

    #[test]
    fn expired_tokens_are_refused() {
        let s = Signer::new(b"0123456789abcdef0123456789abcdef".to_vec(), Duration::ZERO);
        // Sign a payload that expired a minute ago.
        let past = URL_SAFE_NO_PAD.encode(
            serde_json::to_vec(&State {
                p: None,
                r: None,
                s: None,
                e: now() - 60,
            })
            .unwrap(),
        );
        let signed = format!("{PREFIX}{past}");
        let t = format!(
            "{signed}.{}",
            URL_SAFE_NO_PAD.encode(s.mac(&signed).finalize().into_bytes())
        );
        assert_eq!(s.verify(&t, None), Err(StateError::Expired));
    }
}
