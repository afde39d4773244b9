//! HTTP routing: the MCP endpoint (`POST`, `GET`, `DELETE` on `/mcp`), health and
//! readiness, and the status code of every refusal.
//!
//! Every request to `/mcp` passes, in order: Host and Origin (403), authentication (401, or
//! 403 for a missing scope), then its method's own checks. A POST body must be JSON
//! (`Content-Type`, 415), at most the message limit (413), valid UTF-8 JSON-RPC without
//! duplicate keys (400 with a JSON-RPC error: `-32700` not JSON, `-32600` not a message).
//! Nothing refused here reaches the server.
//!
//! Sessions (2025-03-26 to 2025-11-25): `initialize` without `Mcp-Session-Id` opens one (503
//! at the cap or while draining); every other message needs the id (400 without, 404 for an
//! unknown or ended session, or one opened by another principal). A request's answer comes
//! as `application/json` when the response is the first thing for it, else as an SSE stream
//! carrying what comes before it. Notifications and responses get 202. 2026-07-28 requests
//! (no session, `_meta` protocol version) go to the stateless handler.

// A refusal is a whole `Response`, built once per refused request and returned at once: boxing
// it would buy nothing on the path that matters (accepted requests carry no `Response`).
#![allow(clippy::result_large_err)]

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{ACCEPT, CONTENT_LENGTH, CONTENT_TYPE, ORIGIN, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, HeaderValue, StatusCode, request::Parts};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;

use super::auth::Auth;
use super::capacity::Capacity;
use super::headers::{self, HEADER_MISMATCH};
use super::limits::{self, Exceeded, Shape};
use super::origin::OriginRules;
use super::refusals::Refusals;
use super::router::{Out, RegisterError, Stream, progress_token};
use super::session::HttpSession;
use super::sse::SseBody;
use super::stateless::Stateless;
use crate::jsonrpc::envelope::{Kind, Scanned, scan, scan_message};
use crate::jsonrpc::error::{INVALID_REQUEST, PARSE_ERROR, SERVER_GONE, error_response};
use crate::jsonrpc::{Id, IdKey};
use crate::mcp::Revision;
use crate::mcp::methods as m;
use crate::setup::Setup;

mod body;

pub use body::{Incoming, read_body};
use body::{accepts, is_json};

/// The session id header (case-insensitive; 2025-11-25 spells it `MCP-Session-Id`).
pub const SESSION_HEADER: &str = "mcp-session-id";
/// The protocol version header (2025-06-18 and later).
pub const VERSION_HEADER: &str = "mcp-protocol-version";

/// Everything the handlers share.
#[derive(Debug)]
pub struct App {
    /// What each session is built from.
    pub setup: Setup,
    /// The live sessions.
    pub table: Arc<Capacity<String>>,
    /// When replicas share sessions: session ids name this replica.
    pub owner: Option<super::owner::Owner>,
    /// Host and Origin rules.
    pub origin: OriginRules,
    /// Authentication.
    pub auth: Auth,
    /// How long a stream may go unread before it is closed.
    pub stall: Duration,
    /// Set when the server is shutting down: no new sessions, not ready.
    pub draining: AtomicBool,
    /// 2026-07-28 requests.
    pub stateless: Stateless,
    /// The audit session of requests refused before any session sees them.
    pub refusals: Refusals,
    /// Most JSON values in one POST body.
    pub max_values: usize,
    /// The open connections.
    pub conns: Arc<super::conns::Conns>,
    /// Pre-started sessions (`--session-pool`).
    pub pool: Arc<super::pool::SessionPool>,
}

/// The axum router for `app`.
pub fn routes(app: Arc<App>) -> Router {
    Router::new()
        .route(
            "/mcp",
            get(|State(app), r| endpoint(app, r, get_inner))
                .post(|State(app), r| endpoint(app, r, post_inner))
                .delete(|State(app), r| endpoint(app, r, delete_inner))
                .options(options_mcp),
        )
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/capacity", get(capacity))
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .with_state(app)
}

// ---- responses ------------------------------------------------------------------------------

/// A JSON-RPC error body (id `null` unless known) with an HTTP status.
pub fn rpc_error(status: StatusCode, id: Option<&Id>, code: i64, message: &str) -> Response {
    let body = error_response(id, code, &format!("rootfence: {message}"), None);
    (status, [(CONTENT_TYPE, "application/json")], body).into_response()
}

/// A 200 with a JSON body.
pub fn json_response(body: impl Into<Body>) -> Response {
    ([(CONTENT_TYPE, "application/json")], body.into()).into_response()
}

/// What a draining replica answers a new session or stateless request.
pub const DRAINING: &str = "the server is shutting down; try another replica or again shortly";

/// A 503 (`-32600`): the replica is draining, or has no room (then with `Retry-After`).
pub fn unavailable(id: Option<&Id>, message: &str, retry_after: Option<&'static str>) -> Response {
    let mut resp = rpc_error(
        StatusCode::SERVICE_UNAVAILABLE,
        id,
        INVALID_REQUEST,
        message,
    );
    if let Some(secs) = retry_after {
        resp.headers_mut()
            .insert("retry-after", HeaderValue::from_static(secs));
    }
    resp
}

/// A plain refusal with a JSON-RPC error body (`-32600`, no id).
pub(super) fn refuse(status: StatusCode, message: &str) -> Response {
    rpc_error(status, None, INVALID_REQUEST, message)
}

async fn not_found() -> impl IntoResponse {
    (
        StatusCode::NOT_FOUND,
        "rootfence serve: the MCP endpoint is /mcp\n",
    )
}

/// Ready means "can serve its sessions": only a drain makes it 503. Full is a separate
/// signal (`/capacity`, `/metrics`, and 503 with `Retry-After` for a new session), so a full
/// replica stays in its Service and keeps serving the sessions it holds.
async fn readyz(State(app): State<Arc<App>>) -> Response {
    if app.draining.load(Ordering::Relaxed) {
        return (StatusCode::SERVICE_UNAVAILABLE, "draining\n").into_response();
    }
    if app.table.len() >= app.table.max {
        return (StatusCode::OK, "ready (full: new sessions get 503)\n").into_response();
    }
    (StatusCode::OK, "ready\n").into_response()
}

/// What this replica holds and can still take: the JSON of `/capacity`, and the values of
/// `/metrics` (read from it, so the two never disagree).
fn snapshot(app: &App) -> serde_json::Value {
    let sessions = app.table.len();
    serde_json::json!({
        "draining": app.draining.load(Ordering::Relaxed),
        "full": sessions >= app.table.max,
        "sessions": sessions,
        "max_sessions": app.table.max,
        "max_sessions_per_token": app.table.per_principal,
        "pooled_servers": app.stateless.pool.len(),
        "pool_size": app.stateless.pool.max,
        "connections": app.conns.len(),
        "max_connections": app.conns.max,
        "connections_shed": app.conns.shed.load(Ordering::Relaxed),
        "session_pool": {
            "size": app.pool.size,
            "ready": app.pool.ready(),
            "off_because": app.pool.off_because,
            "started": app.pool.started.load(Ordering::Relaxed),
            "taken": app.pool.taken.load(Ordering::Relaxed),
            "discarded": app.pool.discarded.load(Ordering::Relaxed),
            "bypassed": app.pool.bypassed.load(Ordering::Relaxed),
        },
    })
}

async fn capacity(State(app): State<Arc<App>>) -> Response {
    json_response(snapshot(&app).to_string())
}

/// The metrics of `/metrics`, one a line: name, type, where [`snapshot`] holds the value (a
/// JSON pointer; `true` is 1), and the help text.
const METRICS: &str = "\
rootfence_sessions gauge /sessions Sessions open.
rootfence_sessions_max gauge /max_sessions The session cap (--max-sessions).
rootfence_full gauge /full 1 when new sessions are refused for lack of room.
rootfence_draining gauge /draining 1 while shutting down.
rootfence_pooled_servers gauge /pooled_servers Pooled server processes for 2026-07-28 requests.
rootfence_connections gauge /connections Open connections.
rootfence_connections_shed_total counter /connections_shed Connections closed, or refused, at the connection cap.
rootfence_session_pool_size gauge /session_pool/size Pre-started session servers kept ready (--session-pool; 0 when off).
rootfence_session_pool_ready gauge /session_pool/ready Pre-started session servers ready now.
rootfence_session_pool_started_total counter /session_pool/started Pre-started session servers started.
rootfence_session_pool_taken_total counter /session_pool/taken Sessions opened on a pre-started server.
rootfence_session_pool_discarded_total counter /session_pool/discarded Pre-started servers that ended before use, discarded.
rootfence_session_pool_bypassed_total counter /session_pool/bypassed Sessions that started their own server because their client declares roots.";

/// The same, in the Prometheus text format.
async fn metrics(State(app): State<Arc<App>>) -> Response {
    let now = snapshot(&app);
    let mut out = String::new();
    for row in METRICS.lines() {
        let mut cols = row.splitn(4, ' ');
        let mut col = || cols.next().unwrap_or_default();
        let (name, kind, at, help) = (col(), col(), col(), col());
        let v = match now.pointer(at) {
            Some(serde_json::Value::Bool(b)) => u64::from(*b),
            v => v.and_then(serde_json::Value::as_u64).unwrap_or_default(),
        };
        // A row naming no number of the snapshot would read 0 for ever: the test builds,
        // which request /metrics through the real binary, fail on it instead.
        debug_assert!(
            now.pointer(at)
                .is_some_and(|v| v.is_u64() || v.is_boolean()),
            "/metrics row {name}: {at} is not a number of /capacity"
        );
        out.push_str(&format!(
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}\n"
        ));
    }
    ([(CONTENT_TYPE, "text/plain; version=0.0.4")], out).into_response()
}

// ---- the gate -------------------------------------------------------------------------------

/// Host, Origin and authentication; the principal, or the refusal.
fn admit(app: &App, parts: &Parts) -> Result<Option<String>, Response> {
    if let Err(e) = app.origin.check(&parts.headers, &parts.uri) {
        tracing::warn!(refused = %e, "request refused");
        return Err(refuse(StatusCode::FORBIDDEN, &e.to_string()));
    }
    app.auth.check(&parts.headers).map_err(|e| {
        tracing::info!(refused = %e, "request not authenticated");
        let mut challenge = String::from("Bearer realm=\"rootfence\"");
        if let Some(code) = e.code() {
            challenge.push_str(&format!(", error=\"{code}\""));
        }
        let mut resp = refuse(StatusCode::UNAUTHORIZED, &e.to_string());
        if let Ok(v) = HeaderValue::from_str(&challenge) {
            resp.headers_mut().insert(WWW_AUTHENTICATE, v);
        }
        resp
    })
}

/// CORS for an allowed browser origin (the request's `Origin` header): what it may read of
/// the response.
fn cors_for(app: &App, origin: Option<&HeaderValue>, mut resp: Response) -> Response {
    if let Some(origin) = origin
        && app
            .origin
            .origin_allowed(&String::from_utf8_lossy(origin.as_bytes()))
    {
        let h = resp.headers_mut();
        h.insert("access-control-allow-origin", origin.clone());
        h.insert("vary", HeaderValue::from_static("Origin"));
        h.insert(
            "access-control-expose-headers",
            HeaderValue::from_static("Mcp-Session-Id, WWW-Authenticate"),
        );
    }
    resp
}

async fn options_mcp(State(app): State<Arc<App>>, parts: Parts) -> Response {
    if let Err(e) = app.origin.check(&parts.headers, &parts.uri) {
        return refuse(StatusCode::FORBIDDEN, &e.to_string());
    }
    let mut resp = StatusCode::NO_CONTENT.into_response();
    let h = resp.headers_mut();
    h.insert(
        "access-control-allow-methods",
        HeaderValue::from_static("GET, POST, DELETE"),
    );
    h.insert(
        "access-control-allow-headers",
        HeaderValue::from_static(
            "Authorization, Content-Type, Accept, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID, Mcp-Method, Mcp-Name",
        ),
    );
    h.insert("access-control-max-age", HeaderValue::from_static("600"));
    cors_for(&app, parts.headers.get(ORIGIN), resp)
}

// ---- POST -----------------------------------------------------------------------------------

/// The session id header's value.
fn session_id(headers: &HeaderMap) -> Option<&str> {
    headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok())
}

/// Checks `MCP-Protocol-Version` when present: a revision rootfence knows.
fn check_version_header(headers: &HeaderMap) -> Result<Option<Revision>, Response> {
    let Some(v) = headers.get(VERSION_HEADER) else {
        return Ok(None);
    };
    let text = v.to_str().unwrap_or("");
    let rev = Revision::parse(text);
    if Revision::KNOWN.contains(&rev) {
        Ok(Some(rev))
    } else {
        Err(refuse(
            StatusCode::BAD_REQUEST,
            &format!(
                "unsupported MCP-Protocol-Version {text:?}; supported: 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28"
            ),
        ))
    }
}

/// Looks up the session a request names, for its principal.
fn find_session(
    app: &App,
    headers: &HeaderMap,
    principal: &Option<String>,
) -> Result<Arc<HttpSession>, Response> {
    let Some(id) = session_id(headers) else {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "this request needs an Mcp-Session-Id header; start a session with initialize first",
        ));
    };
    match app.table.get(id) {
        // Another principal's session is as unknown as a session that never existed.
        Some(s) if s.principal == *principal => Ok(s),
        _ => Err(refuse(
            StatusCode::NOT_FOUND,
            "session not found (it ended or never existed); start a new session with initialize",
        )),
    }
}

/// A request for a session another replica holds, forwarded there whole (`owner.rs`); the
/// request back when it is this replica's to answer. Host, Origin and authentication are
/// checked here first (and again by the owner).
async fn to_owner(app: &App, request: Request) -> Result<Request, Response> {
    let headers = request.headers();
    let elsewhere = match (&app.owner, session_id(headers)) {
        (Some(owner), Some(id))
            if !headers.contains_key(super::owner::FORWARDED) && app.table.get(id).is_none() =>
        {
            owner.elsewhere(id)
        }
        _ => None,
    };
    let Some(addr) = elsewhere else {
        return Ok(request);
    };
    let (parts, body) = request.into_parts();
    admit(app, &parts)?;
    Err(super::owner::forward(&addr, Request::from_parts(parts, body)).await)
}

/// What every method of `/mcp` does around its own handler: a request for a session another
/// replica holds goes there; any other is answered by `handle` (a refusal too), with CORS
/// for an allowed browser origin.
async fn endpoint<F: Future<Output = Result<Response, Response>>>(
    app: Arc<App>,
    request: Request,
    handle: impl FnOnce(Arc<App>, Parts, Body) -> F,
) -> Response {
    let request = match to_owner(&app, request).await {
        Ok(r) => r,
        Err(forwarded) => return forwarded,
    };
    let (parts, body) = request.into_parts();
    // Only the Origin is needed after the request is consumed (not a copy of every header).
    let origin = parts.headers.get(ORIGIN).cloned();
    let response = handle(Arc::clone(&app), parts, body)
        .await
        .unwrap_or_else(|r| r);
    cors_for(&app, origin.as_ref(), response)
}

/// The POST's answer; `Err` for a refusal (a response too, returned at once).
async fn post_inner(app: Arc<App>, parts: Parts, body: Body) -> Result<Response, Response> {
    let app = &app;
    let principal = admit(app, &parts)?;
    let headers = &parts.headers;
    if !is_json(headers) {
        return Ok(refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "the body must be a JSON-RPC message with Content-Type: application/json",
        ));
    }
    if !accepts(headers, "application/json") && !accepts(headers, "text/event-stream") {
        return Ok(refuse(
            StatusCode::NOT_ACCEPTABLE,
            "the client must accept application/json and text/event-stream",
        ));
    }
    let version = check_version_header(headers)?;
    let body = read_body(headers, body, app.setup.max_message, app.max_values).await?;
    let incoming = Incoming::parse(body)?;
    let stateless = session_id(headers).is_none()
        && (incoming
            .meta_version
            .as_deref()
            .is_some_and(|v| Revision::parse(v).is_stateless())
            || version.as_ref().is_some_and(Revision::is_stateless));
    if let Err(mismatch) = headers::check(headers, &incoming, stateless) {
        tracing::warn!(refused = %mismatch, "request refused");
        let id = incoming.requests.first().map(|(id, _)| id);
        let message = mismatch.to_string();
        // The audit log never holds message content: only which header disagreed.
        let detail = format!(
            "header mismatch: the {} header does not agree with the body; refused before any session",
            mismatch.0
        );
        app.refusals
            .refused(&app.setup, &incoming.line, id, HEADER_MISMATCH, &detail);
        return Ok(rpc_error(
            StatusCode::BAD_REQUEST,
            id,
            HEADER_MISMATCH,
            &message,
        ));
    }
    if stateless {
        return Ok(app.stateless.handle(app, principal, incoming).await);
    }
    if incoming.is_initialize() {
        if session_id(headers).is_some() {
            return Ok(refuse(
                StatusCode::BAD_REQUEST,
                "initialize starts a new session; send it without Mcp-Session-Id",
            ));
        }
        let client = parts
            .extensions
            .get::<super::session::ClientAddr>()
            .copied();
        return Ok(initialize(app, principal, client, incoming).await);
    }
    let session = find_session(app, headers, &principal)?;
    app.pool.saw_request();
    Ok(forward(&session, incoming).await)
}

/// Opens a session for an `initialize` and answers it.
async fn initialize(
    app: &Arc<App>,
    principal: Option<String>,
    client: Option<super::session::ClientAddr>,
    incoming: Incoming,
) -> Response {
    if app.draining.load(Ordering::Relaxed) {
        return unavailable(None, DRAINING, None);
    }
    let opened = app.table.open(&principal, None, || {
        let id = super::owner::new_session_id(app.owner.as_ref());
        let session = app
            .pool
            .take(&incoming.line, &id, &principal, client)
            .unwrap_or_else(|| {
                let principal = principal.clone();
                HttpSession::start(&app.setup, id.clone(), principal, client, app.stall, false)
            });
        (id, session)
    });
    let session = match opened {
        Ok(s) => s,
        Err(full) => return unavailable(None, &full.to_string(), Some("5")),
    };
    tracing::info!(session = %session.id, principal = principal.as_deref().unwrap_or("-"), "session opened");
    forward(&session, incoming).await
}

/// Sends a message into a session and answers the POST (an `initialize` is always the first
/// message of the session it opened: its answer names the session).
async fn forward(session: &Arc<HttpSession>, incoming: Incoming) -> Response {
    if incoming.requests.is_empty() {
        if session.send(incoming.line).await.is_err() {
            return session_ended();
        }
        return StatusCode::ACCEPTED.into_response();
    }
    let stream = match session
        .router
        .register_post(incoming.ids(), incoming.tokens.clone())
    {
        Ok(s) => s,
        Err(e @ RegisterError::DuplicateId(_)) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                incoming.requests.first().map(|(id, _)| id),
                INVALID_REQUEST,
                &e.to_string(),
            );
        }
        Err(RegisterError::Ended) => return session_ended(),
    };
    if session.send(incoming.line.clone()).await.is_err() {
        return session_ended();
    }
    let (mut resp, refused) = answer(stream, &incoming).await;
    if incoming.is_initialize() && resp.status() == StatusCode::OK {
        if refused {
            // A refused initialize opens nothing.
            session.close();
            return resp;
        }
        if let Ok(v) = HeaderValue::from_str(&session.id) {
            resp.headers_mut().insert(SESSION_HEADER, v);
        }
    }
    resp
}

fn session_ended() -> Response {
    refuse(
        StatusCode::NOT_FOUND,
        "session not found (it ended); start a new session with initialize",
    )
}

/// The answers for requests a session ended without answering.
pub fn ended_answers(requests: &[(Id, String)], waiting: &HashSet<IdKey>) -> Vec<Bytes> {
    requests
        .iter()
        .filter(|(id, _)| waiting.contains(id.key()))
        .map(|(id, method)| {
            Bytes::from(error_response(
                Some(id),
                SERVER_GONE,
                &format!(
                    "rootfence: the session ended before `{method}` was answered; start a new session and send it again"
                ),
                Some(serde_json::json!({"method": method})),
            ))
        })
        .collect()
}

/// Waits for what the POST's requests bring: their responses alone as JSON, or an SSE
/// stream when something else comes first; and whether it answers `initialize` with an error
/// (known only in JSON: an SSE answer is taken as a success).
pub async fn answer(mut stream: Stream, incoming: &Incoming) -> (Response, bool) {
    let mut waiting: HashSet<IdKey> = incoming.ids().into_iter().collect();
    let mut responses: Vec<Bytes> = Vec::new();
    loop {
        match stream.rx.recv().await {
            Some(Out { line, answers }) => {
                responses.push(line);
                let Some(id) = answers else {
                    // Something before the response: stream it all as SSE.
                    let requests = incoming.requests.clone();
                    let body = SseBody::post(
                        responses,
                        stream,
                        waiting,
                        Box::new(move |w| ended_answers(&requests, w)),
                    );
                    return (sse_response(body), false);
                };
                waiting.remove(&id);
                if waiting.is_empty() {
                    return json_answer(responses, incoming);
                }
            }
            None => {
                responses.extend(ended_answers(&incoming.requests, &waiting));
                return json_answer(responses, incoming);
            }
        }
    }
}

fn json_answer(mut responses: Vec<Bytes>, incoming: &Incoming) -> (Response, bool) {
    let refused = incoming.is_initialize()
        && !responses.first().is_some_and(|r| {
            scan_message(crate::jsonrpc::framing::line_str(r))
                .is_ok_and(|env| env.kind == Kind::Response)
        });
    let body = if incoming.batch {
        Bytes::from([b"[".as_slice(), &responses.join(b",".as_slice()), b"]"].concat())
    } else {
        responses.pop().unwrap_or_default()
    };
    (json_response(body), refused)
}

/// An SSE response.
pub fn sse_response(body: SseBody) -> Response {
    let mut resp = Response::new(Body::new(body));
    let h = resp.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert("cache-control", HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    resp
}

// ---- GET and DELETE -------------------------------------------------------------------------

/// The GET's event stream; `Err` for a refusal.
async fn get_inner(app: Arc<App>, parts: Parts, _: Body) -> Result<Response, Response> {
    let principal = admit(&app, &parts)?;
    if !accepts(&parts.headers, "text/event-stream") {
        return Err(refuse(
            StatusCode::NOT_ACCEPTABLE,
            "GET opens the session's event stream: send Accept: text/event-stream",
        ));
    }
    if session_id(&parts.headers).is_none() {
        // 2026-07-28 has no GET stream; older clients always name their session.
        let mut resp = refuse(
            StatusCode::METHOD_NOT_ALLOWED,
            "GET needs an Mcp-Session-Id (2026-07-28 has no GET stream: use POST)",
        );
        resp.headers_mut()
            .insert("allow", HeaderValue::from_static("POST"));
        return Err(resp);
    }
    let session = find_session(&app, &parts.headers, &principal)?;
    let stream = session.router.open_get().map_err(|_| session_ended())?;
    Ok(sse_response(SseBody::get(stream)))
}

async fn delete_inner(app: Arc<App>, parts: Parts, _: Body) -> Result<Response, Response> {
    let principal = admit(&app, &parts)?;
    let session = find_session(&app, &parts.headers, &principal)?;
    app.table.remove(&session.id);
    session.close();
    tracing::info!(session = %session.id, "session deleted by the client");
    // Its relay shuts the server down and closes the audit session in the background.
    tokio::spawn(async move { session.wait().await });
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[cfg(test)]
mod tests {
    use super::body::one_line;
    use super::*;

    #[test]
    fn pretty_printed_bodies_become_one_line_with_the_same_value() {
        let body = Bytes::from_static(b"{\n  \"jsonrpc\": \"2.0\",\r\n  \"method\": \"x\"\n}");
        let line = one_line(body.clone());
        assert!(!line.contains(&b'\n') && !line.contains(&b'\r'));
        let a: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let b: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn bodies_are_scanned_before_anything_is_sent() {
        let status = |b: &'static [u8]| match Incoming::parse(Bytes::from_static(b)) {
            Ok(_) => StatusCode::OK,
            Err(r) => r.status(),
        };
        assert_eq!(
            status(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            StatusCode::OK
        );
        assert_eq!(status(b"{not json"), StatusCode::BAD_REQUEST);
        assert_eq!(status(b"\xff\xfe"), StatusCode::BAD_REQUEST);
        assert_eq!(
            status(br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(status(br#"{"jsonrpc":"2.0"}"#), StatusCode::BAD_REQUEST);
        assert_eq!(
            status(br#"[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}]"#),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            status(
                br#"[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":1,"method":"b"}]"#
            ),
            StatusCode::BAD_REQUEST
        );
    }

    #[test]
    fn every_metric_has_a_type_a_pointer_and_help() {
        for row in METRICS.lines() {
            let cols: Vec<&str> = row.splitn(4, ' ').collect();
            assert_eq!(cols.len(), 4, "{row}");
            assert!(["gauge", "counter"].contains(&cols[1]), "{row}");
            assert!(
                cols[2].starts_with('/') && cols[0].starts_with("rootfence_"),
                "{row}"
            );
        }
    }

    #[test]
    fn accept_headers() {
        let mut h = HeaderMap::new();
        assert!(accepts(&h, "text/event-stream"));
        h.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        assert!(accepts(&h, "text/event-stream") && accepts(&h, "application/json"));
        h.insert(ACCEPT, HeaderValue::from_static("text/html"));
        assert!(!accepts(&h, "text/event-stream") && !accepts(&h, "application/json"));
        h.insert(ACCEPT, HeaderValue::from_static("*/*"));
        assert!(accepts(&h, "application/json"));
    }
}
