//! Who a session acts for (issue 29): the [`Principal`] of a `session_start` (`rootfence
//! serve`: the bearer token, the client's address, the HTTP session) or of an `initialized`
//! record (stdio: the host's `clientInfo`, as claimed), and the compact reference every
//! decision record carries so that one decision names its principal on its own.
//!
//! The reference is one short string, the principal's `subject`, because a decision record
//! is written on the relay's hot path and a SIEM rule matches one field best:
//! `token:<12 hex>` (which token of the token file, never the token), `anonymous` (serve
//! without authentication) or `claimed:<clientInfo.name>`. The `claimed:` prefix says on the
//! decision itself that nobody checked the name; the rest (address, session, version) is in
//! the session's `session_start` or `initialized` record, joined by `session`.

use serde::{Deserialize, Serialize};

use super::event::{MAX_TEXT_BYTES, PeerInfo, head};

/// How a principal was established.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrincipalSource {
    /// `rootfence serve` with `--auth-token-file`: a bearer token of the file (authenticated).
    Token,
    /// `rootfence serve` without authentication: every client is the same anonymous principal.
    Open,
    /// stdio: the host's `clientInfo` in `initialize`, as claimed (not authenticated).
    ClientInfo,
}

/// The principal a session acts for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    /// How it was established.
    pub source: PrincipalSource,
    /// Whether rootfence authenticated it: true only for a token. A `clientInfo` is what the
    /// host says it is; any local process can say the same.
    pub authenticated: bool,
    /// The reference each decision record carries (`principal`): `token:<12 hex of the
    /// token's SHA-256>`, `anonymous` or `claimed:<clientInfo.name>`.
    pub subject: String,
    /// serve: the address (`ip:port`) of the connection that opened the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_address: Option<String>,
    /// serve: the session's `Mcp-Session-Id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_session: Option<String>,
    /// stdio: the host's `clientInfo` (name, version) as it claimed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_info: Option<PeerInfo>,
}

impl Principal {
    /// The principal of a `rootfence serve` session: `token` is the authenticated token's
    /// reference (`token:<hex>`), `None` when authentication is off.
    pub fn served(
        token: Option<&str>,
        client_address: Option<String>,
        http_session: Option<String>,
    ) -> Principal {
        Principal {
            source: match token {
                Some(_) => PrincipalSource::Token,
                None => PrincipalSource::Open,
            },
            authenticated: token.is_some(),
            subject: token.unwrap_or("anonymous").to_owned(),
            client_address,
            http_session,
            client_info: None,
        }
    }

    /// The principal of a stdio session: the host's `clientInfo`, as claimed.
    pub fn claimed(client_info: PeerInfo) -> Principal {
        Principal {
            source: PrincipalSource::ClientInfo,
            authenticated: false,
            // Cut like every free text: a host chooses it.
            subject: format!("claimed:{}", head(&client_info.name, MAX_TEXT_BYTES)),
            client_address: None,
            http_session: None,
            client_info: Some(client_info),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_say_how_they_were_established() {
        let t = Principal::served(Some("token:0a1b2c3d4e5f"), Some("127.0.0.1:5".into()), None);
        assert!(t.authenticated);
        assert_eq!(t.subject, "token:0a1b2c3d4e5f");
        let o = Principal::served(None, None, Some("s1".into()));
        assert!(!o.authenticated);
        assert_eq!(
            (o.source, o.subject.as_str()),
            (PrincipalSource::Open, "anonymous")
        );
        let c = Principal::claimed(PeerInfo {
            name: "é".repeat(600),
            version: "1".into(),
        });
        assert!(!c.authenticated);
        assert!(c.subject.starts_with("claimed:é"));
        assert!(c.subject.len() <= "claimed:".len() + MAX_TEXT_BYTES);
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(
            json,
            r#"{"source":"token","authenticated":true,"subject":"token:0a1b2c3d4e5f","client_address":"127.0.0.1:5"}"#
        );
    }
}
