//! Bearer-token authentication of every MCP request.
//!
//! A token file (`--auth-token-file`) holds one secret token per line (blank lines and `#`
//! comments ignored). A request must carry one of them as `Authorization: Bearer <token>`.
//! Tokens are compared by their SHA-256 in constant time, so the comparison says nothing
//! about how much of a guess was right. (An OAuth 2.1 resource-server check of JWTs is not
//! built in: put an authenticating proxy in front, see `docs/serve.md`.)
//!
//! Each authenticated request has a principal (a token's hash prefix): sessions and
//! 2026-07-28 request state are bound to it.

use std::path::{Path, PathBuf};

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use sha2::{Digest, Sha256};

/// How requests are authenticated.
#[derive(Debug)]
pub enum Auth {
    /// Not at all (loopback use, or an authenticating proxy in front).
    Open,
    /// One of the tokens in a file (their SHA-256).
    Tokens(Vec<[u8; 32]>),
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
}

impl AuthError {
    /// The `error` parameter of `WWW-Authenticate` (RFC 6750).
    pub fn code(&self) -> Option<&'static str> {
        match self {
            AuthError::Missing => None,
            AuthError::Invalid(_) => Some("invalid_token"),
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

    /// How many principals there can be (tokens in the file; 0 when authentication is off,
    /// every request being the same anonymous principal).
    pub fn principals(&self) -> usize {
        match self {
            Auth::Open => 0,
            Auth::Tokens(t) => t.len(),
        }
    }

    /// Authenticates a request; returns its principal (`None` when authentication is off).
    pub fn check(&self, headers: &HeaderMap) -> Result<Option<String>, AuthError> {
        let Auth::Tokens(known) = self else {
            return Ok(None);
        };
        let token = bearer(headers).ok_or(AuthError::Missing)?;
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        // Every known token is compared, whatever matched, in constant time.
        let found = known
            .iter()
            .fold(false, |found, k| found | constant_time_eq(k, &digest));
        if !found {
            return Err(AuthError::Invalid("unknown token".into()));
        }
        let id: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
        Ok(Some(format!("token:{id}")))
    }
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = token.trim();
    (!token.is_empty()).then_some(token)
}

/// Whether `a` and `b` are equal, in a time that depends on their lengths only (for secrets:
/// token digests, MAC tags).
pub(super) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
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
        assert!(matches!(
            auth.check(&HeaderMap::new()),
            Err(AuthError::Missing)
        ));
        assert!(matches!(
            auth.check(&with_auth("Bearer alpha-12")),
            Err(AuthError::Invalid(_))
        ));
        assert!(matches!(
            auth.check(&with_auth("Basic alpha-123")),
            Err(AuthError::Missing)
        ));
        std::fs::write(&p, "# nothing\n").unwrap();
        assert!(matches!(
            Auth::token_file(&p),
            Err(AuthSetupError::NoTokens(_))
        ));
    }
}
