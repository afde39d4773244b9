//! Sessions behind any load balancer: the session id names the replica that holds the
//! session, and a replica that receives a request, a GET stream or a DELETE for a session it
//! does not hold forwards it, whole, to that replica.
//!
//! With `--advertise ADDR` (the address peers reach this replica at; in Kubernetes the pod
//! IP), a session id is `<128 random bits, hex>.<ADDR, base64url>.<tag>`, the tag an
//! HMAC-SHA256 (first 128 bits, hex) of the rest under the key every replica shares
//! (`--state-key-file`). A replica forwards only to an owner whose tag verifies, so a client
//! cannot aim a replica at an address of its choosing; an id naming this replica that it
//! does not hold (ended, or from before a restart) is simply unknown (404).
//!
//! The forwarded request is the original: method, path, headers (its `Authorization`
//! included, which the owner checks again) and body, streamed; the owner's response, an SSE
//! stream included, is relayed back as it comes. A forwarded request is marked
//! (`x-rootfence-forwarded`) and never forwarded again. An owner that cannot be reached
//! within [`CONNECT_TIMEOUT`] gets the client a clean `404` (the session is gone with its
//! replica; start a new one), never a hang.

use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use hyper_util::rt::TokioIo;
use sha2::Sha256;

/// Marks a request one replica forwarded to another.
pub const FORWARDED: &str = "x-rootfence-forwarded";
/// How long connecting to the owner may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// A fresh session id: 128 random bits from the OS (hex), unguessable, naming this replica
/// when replicas share sessions (`owner`).
pub fn new_session_id(owner: Option<&Owner>) -> String {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes).expect("the OS random source is available");
    let random: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    match owner {
        Some(owner) => owner.session_id(&random),
        None => random,
    }
}

/// This replica's name in session ids, and the key that protects them.
#[derive(Clone)]
pub struct Owner {
    /// The address peers reach this replica at (`host:port`).
    pub(crate) advertise: String,
    /// The key every replica shares.
    pub(crate) key: Vec<u8>,
}

impl std::fmt::Debug for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Owner")
            .field("advertise", &self.advertise)
            .finish_non_exhaustive()
    }
}

impl Owner {
    fn tag(&self, body: &str) -> String {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes a key of any length");
        mac.update(b"rootfence session owner\0");
        mac.update(body.as_bytes());
        crate::audit::chain::hex(&mac.finalize().into_bytes()[..16])
    }

    /// A session id naming this replica, around `random` (hex).
    pub fn session_id(&self, random: &str) -> String {
        let body = format!("{random}.{}", URL_SAFE_NO_PAD.encode(&self.advertise));
        let tag = self.tag(&body);
        format!("{body}.{tag}")
    }

    /// The replica a session id names, if its tag verifies and it is not this one.
    pub fn elsewhere(&self, id: &str) -> Option<String> {
        let (body, tag) = id.rsplit_once('.')?;
        // Compared in constant time: the tag is a MAC.
        if !super::auth::constant_time_eq(tag.as_bytes(), self.tag(body).as_bytes()) {
            tracing::warn!("a session id with a bad owner tag was refused");
            return None;
        }
        let (_, owner) = body.split_once('.')?;
        let owner = String::from_utf8(URL_SAFE_NO_PAD.decode(owner).ok()?).ok()?;
        (owner != self.advertise).then_some(owner)
    }
}

/// Forwards `request` to the replica at `owner` and relays its response.
pub async fn forward(owner: &str, request: Request) -> Response {
    let gone = |why: String| {
        tracing::warn!(owner, "forwarding to the session's replica failed: {why}");
        super::http::refuse(
            StatusCode::NOT_FOUND,
            "session not found: the replica holding it cannot be reached; start a new session with initialize",
        )
    };
    let stream =
        match tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(owner)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return gone(e.to_string()),
            Err(_) => return gone("connecting timed out".into()),
        };
    let _ = stream.set_nodelay(true);
    let (mut sender, conn) = match hyper::client::conn::http1::handshake(TokioIo::new(stream)).await
    {
        Ok(pair) => pair,
        Err(e) => return gone(e.to_string()),
    };
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!("a forwarded connection ended: {e}");
        }
    });
    let (mut parts, body) = request.into_parts();
    parts
        .headers
        .insert(FORWARDED, HeaderValue::from_static("1"));
    // HTTP/1 to the owner whatever the client spoke: the path alone, plus Host.
    let path = parts.uri.path_and_query().map_or("/mcp", |p| p.as_str());
    let Ok(path) = path.parse::<axum::http::Uri>() else {
        return gone("the request's path".into());
    };
    if let Some(authority) = parts.uri.authority().cloned()
        && !parts.headers.contains_key(axum::http::header::HOST)
        && let Ok(v) = HeaderValue::from_str(authority.as_str())
    {
        parts.headers.insert(axum::http::header::HOST, v);
    }
    parts.uri = path;
    parts.version = axum::http::Version::HTTP_11;
    let request = hyper::Request::from_parts(parts, body);
    match sender.send_request(request).await {
        Ok(resp) => resp.map(Body::new).into_response(),
        Err(e) => gone(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_128_random_bits_in_hex() {
        let a = new_session_id(None);
        let b = new_session_id(None);
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn ids_name_their_owner_and_cannot_be_forged() {
        let a = Owner {
            advertise: "10.0.0.1:8080".into(),
            key: b"k".repeat(32),
        };
        let b = Owner {
            advertise: "10.0.0.2:8080".into(),
            key: b"k".repeat(32),
        };
        let id = a.session_id("00ff");
        assert!(id.bytes().all(|c| c.is_ascii_graphic()));
        assert_eq!(b.elsewhere(&id).as_deref(), Some("10.0.0.1:8080"));
        assert_eq!(a.elsewhere(&id), None, "its own");
        // Another owner spliced in, or another key: refused.
        let forged = id.replace(
            &URL_SAFE_NO_PAD.encode("10.0.0.1:8080"),
            &URL_SAFE_NO_PAD.encode("169.254.169.254:80"),
        );
        assert_eq!(b.elsewhere(&forged), None);
        let other = Owner {
            advertise: "10.0.0.3:8080".into(),
            key: b"x".repeat(32),
        };
        assert_eq!(other.elsewhere(&id), None);
        assert_eq!(b.elsewhere("0123456789abcdef"), None);
    }
}
