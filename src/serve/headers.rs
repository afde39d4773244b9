//! Header/body agreement (2026-07-28 Streamable HTTP, "Request Metadata"): the routing
//! headers a client mirrors from its body (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`)
//! must say what the body says.
//!
//! Load balancers, gateways, WAFs and rate limiters act on these headers without reading the
//! JSON. If rootfence executed the body while an intermediary allowed the request by its
//! headers, a request saying `Mcp-Method: tools/list` could call a tool the intermediary
//! forbids. So a disagreement is refused with `400` and `-32020` (`HeaderMismatch`) before
//! anything reaches a server, and audited.
//!
//! - 2026-07-28 requests must carry all three (`Mcp-Name` for `tools/call`, `prompts/get`
//!   and `resources/read`, from `params.name` or `params.uri`); a missing one is a mismatch.
//! - Earlier revisions do not define them: when a client sends them anyway, they must agree
//!   too (an intermediary may still act on them).
//! - `Mcp-Name` may be sent as `=?base64?…?=` and is decoded before comparing. A value with
//!   characters outside visible ASCII, space and tab, or a routing header sent twice, is a
//!   mismatch (two readers could take different copies).
//!
//! Only the body's top-level `method` (already scanned) and `params.name` / `params.uri` are
//! read; the rest of the body is skipped, never built.

use std::borrow::Cow;

use axum::http::HeaderMap;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::http::{Incoming, VERSION_HEADER};
use crate::jsonrpc::envelope::Kind;
use crate::mcp::methods as m;

/// `HeaderMismatch` (2026-07-28).
pub const HEADER_MISMATCH: i64 = -32020;
/// The method header.
pub const METHOD_HEADER: &str = "mcp-method";
/// The name header.
pub const NAME_HEADER: &str = "mcp-name";

/// Why the headers do not agree with the body: which header disagreed (all the audit log
/// says: it never holds message content), and how.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("header mismatch: {1}; send the routing headers mirrored from the body")]
pub struct Mismatch(pub &'static str, pub String);

/// The body parameter `Mcp-Name` mirrors for `method`, if it names one.
fn name_key(method: &str) -> Option<&'static str> {
    match method {
        m::TOOLS_CALL | m::PROMPTS_GET => Some("name"),
        m::RESOURCES_READ => Some("uri"),
        _ => None,
    }
}

/// Checks the routing headers of a POST against its scanned body. `modern` says the request
/// is a 2026-07-28 one, for which the headers are required.
pub fn check(headers: &HeaderMap, incoming: &Incoming, modern: bool) -> Result<(), Mismatch> {
    let version = single(headers, VERSION_HEADER)?;
    let method_h = single(headers, METHOD_HEADER)?;
    let name_h = single(headers, NAME_HEADER)?;
    if incoming.batch {
        if method_h.is_some() || name_h.is_some() {
            return Err(Mismatch(
                "Mcp-Method",
                "Mcp-Method and Mcp-Name cannot describe a batch".into(),
            ));
        }
        return Ok(());
    }
    let request = incoming.kind == Some(Kind::Request);
    if modern && request {
        // The body's `_meta` version is what the request is judged under.
        let wrong = match (version, incoming.meta_version.as_deref()) {
            (None, _) => Some("the MCP-Protocol-Version header is missing".to_owned()),
            (Some(h), Some(b)) if h != b => Some(format!(
                "MCP-Protocol-Version is {h:?} but the body's _meta says {b:?}"
            )),
            (Some(h), None) => Some(format!(
                "MCP-Protocol-Version is {h:?} but the body's _meta names no protocol version"
            )),
            _ => None,
        };
        if let Some(why) = wrong {
            return Err(Mismatch("MCP-Protocol-Version", why));
        }
    }
    let method = incoming.method.as_deref().unwrap_or("");
    let wrong = match method_h {
        Some(h) if h != method => {
            Some(format!("Mcp-Method is {h:?} but the body calls {method:?}"))
        }
        None if modern && request => Some("the Mcp-Method header is missing".to_owned()),
        _ => None,
    };
    if let Some(why) = wrong {
        return Err(Mismatch("Mcp-Method", why));
    }
    let key = name_key(method);
    let required = modern && request && key.is_some();
    if name_h.is_none() && !required {
        return Ok(());
    }
    let (name, uri) = body_names(&incoming.line)
        .ok_or_else(|| Mismatch("Mcp-Name", "the body's params could not be read".into()))?;
    // For a method that names nothing, a name header still has to match something named.
    let body_value = match key {
        Some("uri") => uri,
        Some(_) => name,
        None => name.or(uri),
    };
    let Some(h) = name_h else {
        return Err(Mismatch(
            "Mcp-Name",
            format!("the Mcp-Name header is missing (required for {method})"),
        ));
    };
    let decoded = decode(h)?;
    let named = match body_value {
        Some(b) if b == decoded => return Ok(()),
        Some(b) => format!("{b:?}"),
        None => "nothing".to_owned(),
    };
    let why = format!("Mcp-Name is {decoded:?} but the body names {named}");
    Err(Mismatch("Mcp-Name", why))
}

/// The header's one value; two copies, or characters outside visible ASCII, space and tab,
/// are a mismatch.
fn single<'h>(headers: &'h HeaderMap, name: &'static str) -> Result<Option<&'h str>, Mismatch> {
    let mut all = headers.get_all(name).iter();
    let Some(first) = all.next() else {
        return Ok(None);
    };
    if all.next().is_some() {
        return Err(Mismatch(
            name,
            format!("the {name} header is sent more than once"),
        ));
    }
    let bytes = first.as_bytes();
    if !bytes
        .iter()
        .all(|&b| b == b'\t' || (0x20..0x7f).contains(&b))
    {
        return Err(Mismatch(
            name,
            format!("the {name} header has characters outside visible ASCII (use =?base64?…?=)"),
        ));
    }
    // Checked above: ASCII.
    Ok(std::str::from_utf8(bytes).ok())
}

/// A header value, decoded from the `=?base64?…?=` sentinel form when it uses it.
fn decode(value: &str) -> Result<Cow<'_, str>, Mismatch> {
    let Some(inner) = value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    else {
        return Ok(Cow::Borrowed(value));
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(inner)
        .map_err(|_| Mismatch("Mcp-Name", "Mcp-Name is not valid =?base64?…?=".into()))?;
    String::from_utf8(bytes)
        .map(Cow::Owned)
        .map_err(|_| Mismatch("Mcp-Name", "Mcp-Name's base64 value is not UTF-8".into()))
}

/// `params.name` and `params.uri` of a body, each when it is a string. Only they are read:
/// every other member is skipped by the parser without being built. `None` when the body
/// cannot be read this way.
fn body_names(line: &[u8]) -> Option<(Option<String>, Option<String>)> {
    #[derive(Deserialize)]
    struct Body<'a> {
        #[serde(borrow, default)]
        params: Option<&'a RawValue>,
    }
    #[derive(Deserialize, Default)]
    struct Params<'a> {
        #[serde(borrow, default)]
        name: Option<&'a RawValue>,
        #[serde(borrow, default)]
        uri: Option<&'a RawValue>,
    }
    let body: Body<'_> = serde_json::from_slice(line).ok()?;
    // Params that are missing or not an object (an array) name nothing.
    let params = body
        .params
        .and_then(|p| serde_json::from_str::<Params<'_>>(p.get()).ok())
        .unwrap_or_default();
    let text =
        |raw: Option<&RawValue>| raw.and_then(|r| serde_json::from_str::<String>(r.get()).ok());
    Some((text(params.name), text(params.uri)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use bytes::Bytes;

    fn incoming(body: &str) -> Incoming {
        Incoming::parse(Bytes::from(body.to_owned())).expect("a valid message")
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    const CALL: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","arguments":{"a":[1,{"name":"x"}]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
    const READ: &str = r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///tmp/ü","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
    const LIST: &str = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
    const V: (&str, &str) = ("mcp-protocol-version", "2026-07-28");

    #[test]
    fn agreeing_headers_pass() {
        let ok = |h: HeaderMap, b: &str| check(&h, &incoming(b), true);
        assert_eq!(
            ok(
                headers(&[V, ("mcp-method", m::TOOLS_CALL), ("mcp-name", "write")]),
                CALL
            ),
            Ok(())
        );
        assert_eq!(
            ok(headers(&[V, ("mcp-method", m::TOOLS_LIST)]), LIST),
            Ok(())
        );
        let encoded = format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode("file:///tmp/ü")
        );
        assert_eq!(
            ok(
                headers(&[V, ("mcp-method", m::RESOURCES_READ), ("mcp-name", &encoded)]),
                READ
            ),
            Ok(())
        );
    }

    #[test]
    fn disagreeing_or_missing_headers_are_refused() {
        let bad = |h: HeaderMap, b: &str| check(&h, &incoming(b), true).unwrap_err().1;
        // The attack: the headers say tools/list, the body calls a tool.
        assert!(bad(headers(&[V, ("mcp-method", m::TOOLS_LIST)]), CALL).contains(m::TOOLS_CALL));
        assert!(
            bad(
                headers(&[V, ("mcp-method", m::TOOLS_CALL), ("mcp-name", "read_only")]),
                CALL
            )
            .contains("\"write\"")
        );
        assert!(bad(headers(&[V, ("mcp-method", m::TOOLS_CALL)]), CALL).contains("missing"));
        assert!(bad(headers(&[V]), LIST).contains("Mcp-Method"));
        assert!(
            bad(headers(&[("mcp-method", m::TOOLS_LIST)]), LIST).contains("MCP-Protocol-Version")
        );
        assert!(
            bad(
                headers(&[
                    ("mcp-protocol-version", "2025-11-25"),
                    ("mcp-method", m::TOOLS_LIST)
                ]),
                LIST
            )
            .contains("_meta")
        );
        // Two copies: a first-copy reader and a last-copy reader would disagree.
        assert!(
            bad(
                headers(&[
                    V,
                    ("mcp-method", m::TOOLS_LIST),
                    ("mcp-method", m::TOOLS_CALL)
                ]),
                CALL
            )
            .contains("more than once")
        );
        // A nested "name" is not params.name.
        assert!(
            bad(
                headers(&[V, ("mcp-method", m::TOOLS_CALL), ("mcp-name", "x")]),
                CALL
            )
            .contains("\"write\"")
        );
        // A name header on a method that names nothing.
        assert!(
            bad(
                headers(&[V, ("mcp-method", m::TOOLS_LIST), ("mcp-name", "write")]),
                LIST
            )
            .contains("names nothing")
        );
        assert!(
            bad(
                headers(&[
                    V,
                    ("mcp-method", m::TOOLS_CALL),
                    ("mcp-name", "=?base64?!!?=")
                ]),
                CALL
            )
            .contains("base64")
        );
    }

    #[test]
    fn earlier_revisions_need_no_headers_but_sent_ones_must_agree() {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write"}}"#;
        assert_eq!(check(&HeaderMap::new(), &incoming(body), false), Ok(()));
        assert!(
            check(
                &headers(&[("mcp-method", m::TOOLS_LIST)]),
                &incoming(body),
                false
            )
            .is_err()
        );
        assert!(check(&headers(&[("mcp-name", "other")]), &incoming(body), false).is_err());
        assert_eq!(
            check(
                &headers(&[("mcp-method", m::TOOLS_CALL), ("mcp-name", "write")]),
                &incoming(body),
                false
            ),
            Ok(())
        );
        let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#;
        assert!(
            check(
                &headers(&[("mcp-method", m::TOOLS_LIST)]),
                &incoming(batch),
                false
            )
            .is_err()
        );
    }
}
