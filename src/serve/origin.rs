//! Origin and Host validation against DNS rebinding.
//!
//! A web page can make a browser send requests to `127.0.0.1` by pointing a name it controls
//! there. Such a request names the page's host in `Host` and its origin in `Origin`; neither
//! is a name this server is reached by. So:
//!
//! - `Origin`, when present (browsers send it), must be one of the `--allowed-origin` values
//!   (`scheme://host[:port]`, compared case-insensitively): a refused origin gets 403, as the
//!   MCP transport requires. Non-browser clients send no `Origin` and are not affected.
//! - `Host` must be a name this server is reached by: on a loopback address, `localhost`,
//!   `127.0.0.1` or `[::1]` (any port) plus the `--allowed-host` values; on another address,
//!   the `--allowed-host` values when there are any (behind a load balancer the names are
//!   the operator's to give).

use std::net::IpAddr;

use axum::http::header::{HOST, ORIGIN};
use axum::http::{HeaderMap, Uri};

/// The Host and Origin rules.
#[derive(Clone, Debug)]
pub struct OriginRules {
    /// Allowed origins, lowercase, without a trailing slash.
    origins: Vec<String>,
    /// Allowed host names (lowercase; `host` or `host:port`). Empty: any.
    hosts: Vec<String>,
}

/// Why a request was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OriginError {
    /// An `Origin` not in the allowed list.
    #[error(
        "origin {0} is not allowed (DNS rebinding protection); if this web client is yours, start rootfence serve with --allowed-origin {0}"
    )]
    Origin(String),
    /// A `Host` that is not a name of this server.
    #[error(
        "host {0} is not a name this server is reached by (DNS rebinding protection); if it is, start rootfence serve with --allowed-host {0}"
    )]
    Host(String),
    /// No `Host` (HTTP/1.1 requires one; HTTP/2 sends `:authority`).
    #[error("the request names no host")]
    NoHost,
}

impl OriginRules {
    /// The rules for a server listening on `ip`, with the operator's allowed origins and hosts.
    pub fn new(ip: IpAddr, origins: &[String], hosts: &[String]) -> OriginRules {
        let mut allowed: Vec<String> = hosts.iter().map(|h| h.to_ascii_lowercase()).collect();
        // Not on a loopback address and no --allowed-host: no Host check at all.
        if ip.is_loopback() || !allowed.is_empty() {
            allowed.extend(["localhost", "127.0.0.1", "[::1]"].map(String::from));
        }
        OriginRules {
            origins: origins
                .iter()
                .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
                .collect(),
            hosts: allowed,
        }
    }

    /// Whether `origin` may use this server (for CORS answers).
    pub fn origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.trim_end_matches('/').to_ascii_lowercase();
        self.origins.contains(&origin)
    }

    /// Checks a request's `Origin` and `Host` (or the authority of its `uri`, which HTTP/2
    /// requests carry instead of a `Host` header).
    pub fn check(&self, headers: &HeaderMap, uri: &Uri) -> Result<(), OriginError> {
        if let Some(origin) = headers.get(ORIGIN) {
            let text = String::from_utf8_lossy(origin.as_bytes()).into_owned();
            if !self.origin_allowed(&text) {
                return Err(OriginError::Origin(text));
            }
        }
        if self.hosts.is_empty() {
            return Ok(());
        }
        let host = match headers.get(HOST) {
            Some(h) => String::from_utf8_lossy(h.as_bytes()).into_owned(),
            None => uri.authority().ok_or(OriginError::NoHost)?.to_string(),
        };
        let lower = host.to_ascii_lowercase();
        let name = strip_port(&lower);
        if self.hosts.iter().any(|h| *h == lower || *h == name) {
            Ok(())
        } else {
            Err(OriginError::Host(host))
        }
    }
}

/// `host:port` → `host`; `[::1]:8080` → `[::1]`; a name without a port is returned as it is.
fn strip_port(host: &str) -> &str {
    if let Some(end) = host.find(']') {
        return &host[..=end];
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn loopback_accepts_its_own_names_and_refuses_a_rebound_one() {
        let r = OriginRules::new("127.0.0.1".parse().unwrap(), &[], &[]);
        for ok in ["127.0.0.1:8080", "localhost:1", "LOCALHOST", "[::1]:9"] {
            assert_eq!(
                r.check(&headers(&[("host", ok)]), &Uri::default()),
                Ok(()),
                "{ok}"
            );
        }
        assert!(matches!(
            r.check(
                &headers(&[("host", "attacker.example:8080")]),
                &Uri::default()
            ),
            Err(OriginError::Host(_))
        ));
        assert!(matches!(
            r.check(
                &headers(&[("host", "localhost.attacker.example")]),
                &Uri::default()
            ),
            Err(OriginError::Host(_))
        ));
    }

    #[test]
    fn any_browser_origin_is_refused_unless_allowed() {
        let r = OriginRules::new(
            "127.0.0.1".parse().unwrap(),
            &["http://localhost:6274/".into()],
            &[],
        );
        let h = |o: &str| headers(&[("host", "localhost"), ("origin", o)]);
        assert_eq!(
            r.check(&h("http://localhost:6274"), &Uri::default()),
            Ok(())
        );
        assert_eq!(
            r.check(&h("HTTP://LOCALHOST:6274"), &Uri::default()),
            Ok(())
        );
        for bad in [
            "http://evil.example",
            "null",
            "http://localhost:6275",
            "http://localhost",
        ] {
            assert!(
                matches!(
                    r.check(&h(bad), &Uri::default()),
                    Err(OriginError::Origin(_))
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_public_listener_checks_hosts_only_when_told() {
        let any = OriginRules::new("0.0.0.0".parse().unwrap(), &[], &[]);
        assert!(
            any.hosts.is_empty(),
            "the Host header is not checked at all"
        );
        assert_eq!(
            any.check(&headers(&[("host", "mcp.example.com")]), &Uri::default()),
            Ok(())
        );
        let named = OriginRules::new("0.0.0.0".parse().unwrap(), &[], &["mcp.example.com".into()]);
        assert_eq!(
            named.check(
                &headers(&[("host", "mcp.example.com:443")]),
                &Uri::default()
            ),
            Ok(())
        );
        assert!(
            named
                .check(&headers(&[("host", "other.example.com")]), &Uri::default())
                .is_err()
        );
        assert_eq!(
            named.check(
                &HeaderMap::new(),
                &Uri::from_static("https://mcp.example.com/")
            ),
            Ok(())
        );
    }
}
