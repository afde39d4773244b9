//! Bearer-token authentication of every MCP request.
//!
//! Two ways, chosen by the operator:
//!
//! - **A token file** (`--auth-token-file`): one secret token per line (blank lines and `#`
//!   comments ignored). A request must carry one of them as `Authorization: Bearer <token>`.
//!   Tokens are compared by their SHA-256 in constant time, so the comparison says nothing
//!   about how much of a guess was right.
//! - **OAuth 2.1 resource server** (`--auth-jwks`, `--auth-issuer`, `--auth-audience`): the
//!   bearer token must be a JWT signed by one of the issuer's keys (a JWK Set file), with an
//!   asymmetric algorithm the key allows (never `none`, never a shared secret), issued by
//!   the configured issuer, for this server's audience (RFC 8707 resource indicator: a token
//!   minted for another service is refused), unexpired (60 s leeway), and carrying every
//!   `--auth-scope`. The key set is read again when a token names a key it does not hold
//!   (key rotation), at most once every 30 s.
//!
//! Each authenticated request has a principal (a token's hash prefix, or the JWT's issuer
//! and subject): sessions and 2026-07-28 request state are bound to it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use jsonwebtoken::jwk::{AlgorithmParameters, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use sha2::{Digest, Sha256};

/// How often the key set may be read again because a token named an unknown key.
const KEY_REFRESH: Duration = Duration::from_secs(30);

/// How requests are authenticated.
#[derive(Debug)]
pub enum Auth {
    /// Not at all (loopback use, or an authenticating proxy in front).
    Open,
    /// One of the tokens in a file (their SHA-256).
    Tokens(Vec<[u8; 32]>),
    /// A JWT access token from an OAuth 2.1 authorization server.
    Jwt(Box<JwtCheck>),
}

/// Why a request was not authenticated.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// No `Authorization: Bearer` header.
    #[error("this server requires a bearer token (Authorization: Bearer <token>)")]
    Missing,
    /// A token that is not valid here.
    #[error("the bearer token is not valid here: {0}")]
    Invalid(String),
    /// A valid token without a scope the server requires.
    #[error("the bearer token lacks the scope {0}")]
    Scope(String),
}

impl AuthError {
    /// The `error` parameter of `WWW-Authenticate` (RFC 6750).
    pub fn code(&self) -> Option<&'static str> {
        match self {
            AuthError::Missing => None,
            AuthError::Invalid(_) => Some("invalid_token"),
            AuthError::Scope(_) => Some("insufficient_scope"),
        }
    }
}

/// Why the authentication settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum AuthSetupError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The token file holds no token.
    #[error("{0}: no token in the file (one token per line; # starts a comment)")]
    NoTokens(PathBuf),
    /// The key set is not a usable JWK Set.
    #[error("{path}: not a usable JWK Set: {reason}")]
    Keys {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

impl Auth {
    /// Token authentication from a token file.
    pub fn token_file(path: &Path) -> Result<Auth, AuthSetupError> {
        let text = std::fs::read_to_string(path).map_err(|source| AuthSetupError::Read {
            path: path.to_owned(),
            source,
        })?;
        let tokens: Vec<[u8; 32]> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|t| Sha256::digest(t.as_bytes()).into())
            .collect();
        if tokens.is_empty() {
            return Err(AuthSetupError::NoTokens(path.to_owned()));
        }
        Ok(Auth::Tokens(tokens))
    }

    /// Whether requests are authenticated at all.
    pub fn is_open(&self) -> bool {
        matches!(self, Auth::Open)
    }

    /// Authenticates a request; returns its principal (`None` when authentication is off).
    pub fn check(&self, headers: &HeaderMap) -> Result<Option<String>, AuthError> {
        if let Auth::Open = self {
            return Ok(None);
        }
        let token = bearer(headers).ok_or(AuthError::Missing)?;
        match self {
            Auth::Open => Ok(None),
            Auth::Tokens(known) => {
                let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
                // Every known token is compared, whatever matched, in constant time.
                let mut found = false;
                for k in known {
                    found |= constant_time_eq(k, &digest);
                }
                if found {
                    let id: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
                    Ok(Some(format!("token:{id}")))
                } else {
                    Err(AuthError::Invalid("unknown token".into()))
                }
            }
            Auth::Jwt(check) => check.check(token).map(Some),
        }
    }
}

/// The token of an `Authorization: Bearer <token>` header.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = token.trim();
    (!token.is_empty()).then_some(token)
}

fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The OAuth 2.1 resource-server check.
#[derive(Debug)]
pub struct JwtCheck {
    keys_path: PathBuf,
    keys: Mutex<(Arc<JwkSet>, Instant)>,
    /// The authorization server (`iss`).
    pub issuer: String,
    /// This server's audiences (`aud`): its resource identifier.
    pub audience: Vec<String>,
    /// Scopes every token must carry.
    pub scopes: Vec<String>,
}

/// The claims rootfence reads.
#[derive(Debug, serde::Deserialize)]
struct Claims {
    sub: Option<String>,
    iss: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    scp: Option<serde_json::Value>,
}

impl JwtCheck {
    /// A check against the keys in a JWK Set file.
    pub fn new(
        keys_path: &Path,
        issuer: String,
        audience: Vec<String>,
        scopes: Vec<String>,
    ) -> Result<JwtCheck, AuthSetupError> {
        let keys = read_keys(keys_path)?;
        Ok(JwtCheck {
            keys_path: keys_path.to_owned(),
            keys: Mutex::new((Arc::new(keys), Instant::now())),
            issuer,
            audience,
            scopes,
        })
    }

    fn key_set(&self) -> Arc<JwkSet> {
        Arc::clone(&self.keys.lock().unwrap_or_else(|e| e.into_inner()).0)
    }

    /// Reads the key set again, unless that was done less than [`KEY_REFRESH`] ago.
    fn refresh(&self) -> Option<Arc<JwkSet>> {
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        if keys.1.elapsed() < KEY_REFRESH {
            return None;
        }
        keys.1 = Instant::now();
        match read_keys(&self.keys_path) {
            Ok(set) => {
                keys.0 = Arc::new(set);
                Some(Arc::clone(&keys.0))
            }
            Err(e) => {
                tracing::warn!("could not read the key set again: {e}");
                None
            }
        }
    }

    fn check(&self, token: &str) -> Result<String, AuthError> {
        let invalid = |why: &str| AuthError::Invalid(why.to_owned());
        let header = jsonwebtoken::decode_header(token).map_err(|_| invalid("not a JWT"))?;
        if !asymmetric(header.alg) {
            return Err(invalid("its algorithm is not an asymmetric signature"));
        }
        let mut set = self.key_set();
        let find = |set: &JwkSet| match &header.kid {
            Some(kid) => set.find(kid).cloned(),
            None if set.keys.len() == 1 => set.keys.first().cloned(),
            None => None,
        };
        let jwk = match find(&set) {
            Some(k) => k,
            None => {
                set = self.refresh().ok_or_else(|| invalid("signed by an unknown key"))?;
                find(&set).ok_or_else(|| invalid("signed by an unknown key"))?
            }
        };
        if matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)) {
            return Err(invalid("signed with a shared secret"));
        }
        if let Some(declared) = jwk.common.key_algorithm {
            if format!("{declared:?}") != format!("{:?}", header.alg) {
                return Err(invalid("its algorithm is not the one its key is for"));
            }
        }
        let key = DecodingKey::from_jwk(&jwk).map_err(|_| invalid("its key is unusable"))?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&self.audience);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.validate_nbf = true;
        let data = jsonwebtoken::decode::<Claims>(token, &key, &validation).map_err(|e| {
            use jsonwebtoken::errors::ErrorKind as K;
            AuthError::Invalid(
                match e.kind() {
                    K::ExpiredSignature => "expired",
                    K::ImmatureSignature => "not valid yet",
                    K::InvalidAudience => "issued for another audience",
                    K::InvalidIssuer => "issued by another authorization server",
                    K::InvalidSignature => "its signature does not verify",
                    K::MissingRequiredClaim(_) => "a required claim (exp, iss, aud) is missing",
                    _ => "it cannot be verified",
                }
                .to_owned(),
            )
        })?;
        let claims = data.claims;
        let granted: Vec<String> = match (&claims.scope, &claims.scp) {
            (Some(s), _) => s.split_whitespace().map(str::to_owned).collect(),
            (None, Some(serde_json::Value::Array(a))) => a
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            (None, Some(serde_json::Value::String(s))) => {
                s.split_whitespace().map(str::to_owned).collect()
            }
            _ => Vec::new(),
        };
        if let Some(missing) = self.scopes.iter().find(|s| !granted.contains(s)) {
            return Err(AuthError::Scope(missing.clone()));
        }
        let sub = claims.sub.unwrap_or_default();
        Ok(format!("jwt:{}#{sub}", claims.iss.unwrap_or_default()))
    }
}

fn asymmetric(alg: Algorithm) -> bool {
    use Algorithm as A;
    matches!(
        alg,
        A::RS256 | A::RS384 | A::RS512 | A::PS256 | A::PS384 | A::PS512 | A::ES256 | A::ES384 | A::EdDSA
    )
}

fn read_keys(path: &Path) -> Result<JwkSet, AuthSetupError> {
    let text = std::fs::read_to_string(path).map_err(|source| AuthSetupError::Read {
        path: path.to_owned(),
        source,
    })?;
    let set: JwkSet = serde_json::from_str(&text).map_err(|e| AuthSetupError::Keys {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    let usable = set
        .keys
        .iter()
        .filter(|k| !matches!(k.algorithm, AlgorithmParameters::OctetKey(_)))
        .filter(|k| DecodingKey::from_jwk(k).is_ok())
        .count();
    if usable == 0 {
        return Err(AuthSetupError::Keys {
            path: path.to_owned(),
            reason: "no RSA, EC or Ed25519 public key".into(),
        });
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with_auth(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(AUTHORIZATION, HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn tokens_from_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("tokens");
        std::fs::write(&p, "# team tokens\n\nalpha-123\n  beta-456  \n").unwrap();
        let auth = Auth::token_file(&p).unwrap();
        let a = auth.check(&with_auth("Bearer alpha-123")).unwrap().unwrap();
        let b = auth.check(&with_auth("bearer beta-456")).unwrap().unwrap();
        assert_ne!(a, b, "each token is its own principal");
        assert!(matches!(auth.check(&HeaderMap::new()), Err(AuthError::Missing)));
        assert!(matches!(
            auth.check(&with_auth("Bearer alpha-12")),
            Err(AuthError::Invalid(_))
        ));
        assert!(matches!(
            auth.check(&with_auth("Basic alpha-123")),
            Err(AuthError::Missing)
        ));
        std::fs::write(&p, "# nothing\n").unwrap();
        assert!(matches!(Auth::token_file(&p), Err(AuthSetupError::NoTokens(_))));
    }
}
