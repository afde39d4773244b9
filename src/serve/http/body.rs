//! Reading a POST to `/mcp`: its headers (`Content-Type`, `Accept`), its body within the
//! message limit, and the JSON-RPC it carries, scanned once ([`Incoming`]); every refusal
//! with its status code.

#![allow(clippy::result_large_err)]

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::*;

/// A POST body, scanned.
#[derive(Debug, Default)]
pub struct Incoming {
    /// The message as forwarded: the body, with raw newlines (whitespace in valid JSON)
    /// replaced by spaces so it is one line.
    pub line: Bytes,
    /// The requests, in order: id and method.
    pub requests: Vec<(Id, String)>,
    /// Their progress tokens.
    pub tokens: Vec<Box<str>>,
    /// A batch (2025-03-26).
    pub batch: bool,
    /// The single message's method (requests and notifications).
    pub method: Option<String>,
    /// The single message's kind.
    pub kind: Option<Kind>,
    /// `params._meta` protocol version of the single message (2026-07-28 requests).
    pub meta_version: Option<String>,
    /// `params._meta` client capabilities of the single message (2026-07-28 requests).
    pub meta_capabilities: Option<Box<RawValue>>,
}

impl Incoming {
    /// Scans a body; a refusal is a 400 with the JSON-RPC error.
    pub fn parse(body: Bytes) -> Result<Incoming, Response> {
        let bad = |e: &crate::jsonrpc::ScanError| {
            rpc_error(StatusCode::BAD_REQUEST, e.id(), e.code(), &e.to_string())
        };
        let text = std::str::from_utf8(&body).map_err(|_| {
            rpc_error(
                StatusCode::BAD_REQUEST,
                None,
                PARSE_ERROR,
                "the body is not UTF-8 text",
            )
        })?;
        let mut incoming = Incoming::default();
        let mut note = |text: &str, env: &crate::jsonrpc::Envelope<'_>| {
            if env.kind == Kind::Request {
                if let Some(id) = &env.id {
                    let method = env.method.as_deref().unwrap_or("").to_owned();
                    incoming.requests.push((id.clone(), method));
                }
                if let Some(t) = progress_token(text, true) {
                    incoming.tokens.push(t);
                }
            }
        };
        match scan(text).map_err(|e| bad(&e))? {
            Scanned::Single(env) => {
                note(text, &env);
                incoming.method = env.method.as_deref().map(str::to_owned);
                incoming.kind = Some(env.kind);
                incoming.meta_version = env.meta_protocol_version.as_deref().map(str::to_owned);
                incoming.meta_capabilities = env.meta_client_capabilities.map(Cow::into_owned);
            }
            Scanned::Batch(elements) => {
                incoming.batch = true;
                for e in elements {
                    let env = scan_message(e.get()).map_err(|e| bad(&e))?;
                    if env.method.as_deref() == Some(m::INITIALIZE) {
                        return Err(refuse(
                            StatusCode::BAD_REQUEST,
                            "initialize must not be part of a batch",
                        ));
                    }
                    note(e.get(), &env);
                }
                let mut seen = HashSet::new();
                if let Some((dup, _)) = incoming
                    .requests
                    .iter()
                    .find(|(id, _)| !seen.insert(id.key().clone()))
                {
                    return Err(rpc_error(
                        StatusCode::BAD_REQUEST,
                        Some(dup),
                        INVALID_REQUEST,
                        "the batch uses the same request id twice",
                    ));
                }
            }
        }
        incoming.line = one_line(body);
        Ok(incoming)
    }

    /// Whether this is the client's `initialize`.
    pub fn is_initialize(&self) -> bool {
        !self.batch && self.method.as_deref() == Some(m::INITIALIZE)
    }

    /// The request ids, as keys.
    pub fn ids(&self) -> Vec<IdKey> {
        self.requests
            .iter()
            .map(|(id, _)| id.key().clone())
            .collect()
    }
}

/// The body as one line (the relay reads lines), the same value.
pub(super) use crate::serve::sse::sse_safe as one_line;

/// Whether the body is declared JSON.
pub(super) fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// Whether the client accepts `kind` (`application/json` or `text/event-stream`); a missing
/// Accept accepts everything.
pub(super) fn accepts(headers: &HeaderMap, kind: &str) -> bool {
    let Some(accept) = headers.get(ACCEPT).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    let (major, _) = kind.split_once('/').unwrap_or((kind, ""));
    accept.split(',').any(|item| {
        let t = item
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        t == kind || t == "*/*" || t == format!("{major}/*")
    })
}

/// Reads a body of at most `limit` bytes (413 beyond) and at most `max_values` JSON values
/// (413) nested at most [`limits::MAX_DEPTH`] deep (400), refusing as soon as a limit is
/// crossed (see `limits.rs`).
pub async fn read_body(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
    max_values: usize,
) -> Result<Bytes, Response> {
    let too_large = || {
        refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("the message is larger than the limit of {limit} bytes (--max-message-size)"),
        )
    };
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let mut shape = Shape::new(max_values);
    let mut body = http_body_util::Limited::new(body, limit);
    // One chunk (the usual case) is kept as it came; more are gathered.
    let mut first: Option<Bytes> = None;
    let mut gathered = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = match frame {
            Ok(f) => f,
            Err(e) if e.is::<http_body_util::LengthLimitError>() => return Err(too_large()),
            Err(e) => {
                return Err(refuse(
                    StatusCode::BAD_REQUEST,
                    &format!("the body could not be read: {e}"),
                ));
            }
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if let Err(e) = shape.feed(&data) {
            tracing::warn!(limit = ?e, "a body over the JSON shape limits was refused");
            return Err(match e {
                Exceeded::Depth => refuse(
                    StatusCode::BAD_REQUEST,
                    &format!(
                        "the message nests deeper than {} levels; no MCP message needs that",
                        limits::MAX_DEPTH
                    ),
                ),
                Exceeded::Values(max) => refuse(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!(
                        "the message holds more than {max} JSON values (--max-json-values); send large data as one string, or raise the limit"
                    ),
                ),
            });
        }
        match first.take() {
            None if gathered.is_empty() => first = Some(data),
            None => gathered.extend_from_slice(&data),
            Some(one) => {
                let want = declared
                    .and_then(|n| usize::try_from(n).ok())
                    .unwrap_or(one.len() + data.len())
                    .min(limit);
                gathered.reserve(want);
                gathered.extend_from_slice(&one);
                gathered.extend_from_slice(&data);
            }
        }
    }
    Ok(match first {
        Some(one) => one,
        None => gathered.freeze(),
    })
}
