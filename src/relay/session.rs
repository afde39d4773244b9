//! Session state shared by the two pumps and the interceptor: what was negotiated, which
//! requests are in flight in each direction, and the requests rootfence itself sent to the
//! host.
//!
//! Ids live in two independent spaces: requests from the host to the server, and requests
//! toward the host (from the server, or from rootfence). rootfence's own requests use string
//! ids with a random per-session prefix; a server request whose id falls in that namespace is
//! refused, so the two can never collide.
//!
//! The state sits behind a `std::sync::Mutex`: every critical section is a few map
//! operations and never spans an `.await`.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::jsonrpc::{Id, IdKey};
use crate::mcp::Revision;

/// One side of the relay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The MCP host (client), on rootfence's stdin/stdout.
    Host,
    /// The wrapped MCP server, on the child's pipes.
    Server,
}

impl Side {
    /// The other side.
    pub fn other(self) -> Side {
        match self {
            Side::Host => Side::Server,
            Side::Server => Side::Host,
        }
    }

    /// `"host"` or `"server"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Host => "host",
            Side::Server => "server",
        }
    }
}

/// A request in flight.
#[derive(Clone, Debug)]
pub struct Pending {
    /// The request's id, as it arrived (echoed in any answer rootfence builds).
    pub id: Id,
    /// The request's method.
    pub method: Arc<str>,
    /// When rootfence forwarded it.
    pub started: Instant,
}

/// What a response id matched.
#[derive(Debug)]
pub enum Matched {
    /// A request forwarded from the other side.
    Pending(Pending),
    /// A request rootfence sent to the host itself; its response is consumed here.
    Own(OwnRequest),
    /// A request the sender cancelled; a late response is dropped quietly.
    Cancelled,
    /// Nothing: the response is dropped and reported.
    Unmatched,
}

/// A request rootfence sent to the host itself, waiting for its response.
#[derive(Debug)]
pub struct OwnRequest {
    /// The request's method.
    pub method: Arc<str>,
    /// When it was sent.
    pub started: Instant,
    reply: oneshot::Sender<Value>,
}

impl OwnRequest {
    /// Hands the response message to whoever asked.
    pub fn deliver(self, response: Value) {
        // The asker may have given up (timeout); that is fine.
        let _ = self.reply.send(response);
    }
}

/// What the host and server said about themselves in `initialize` (2024-11-05 to 2025-11-25)
/// or, for 2026-07-28 peers, in each request's `_meta` and in `server/discover`.
#[derive(Clone, Debug, Default)]
pub struct PeerInfo {
    /// The version the host asked for in `initialize`.
    pub requested_version: Option<Revision>,
    /// The negotiated version (the server's answer), or the latest `_meta` version seen.
    pub version: Option<Revision>,
    /// `clientInfo`.
    pub client_info: Option<Value>,
    /// The host's capabilities (from `initialize`, or the latest `_meta` of a request).
    pub client_capabilities: Option<Value>,
    /// `serverInfo`.
    pub server_info: Option<Value>,
    /// The server's capabilities.
    pub server_capabilities: Option<Value>,
}

/// Message counters for the end-of-session report.
#[derive(Debug, Default)]
pub struct Counters {
    /// Messages read from the host.
    pub from_host: AtomicU64,
    /// Messages read from the server.
    pub from_server: AtomicU64,
    /// Protocol errors (bad lines, invalid or unmatched messages), either side.
    pub protocol_errors: AtomicU64,
    /// Requests rootfence answered itself.
    pub answered_locally: AtomicU64,
}

/// An item for one of the two writer tasks.
#[derive(Debug)]
pub(crate) enum Outgoing {
    /// One message, without its newline.
    Line(Bytes),
    /// Flush and close the stream (the child's stdin, at shutdown).
    Close,
}

#[derive(Debug, Default)]
struct State {
    peers: PeerInfo,
    /// Host → server requests awaiting the server's response.
    host_pending: HashMap<IdKey, Pending>,
    /// Server → host requests awaiting the host's response.
    server_pending: HashMap<IdKey, Pending>,
    /// rootfence → host requests.
    own_pending: HashMap<IdKey, OwnRequest>,
    /// Host requests rootfence answered itself (their cancellations are dropped).
    answered_locally: HashSet<IdKey>,
    /// Requests their sender cancelled, per side of the sender.
    cancelled_by_host: HashSet<IdKey>,
    cancelled_by_server: HashSet<IdKey>,
    /// Why the server can no longer answer, once it cannot.
    server_gone: Option<String>,
}

/// Why a message could not be sent.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The writer for that side has stopped (the peer closed its end).
    #[error("the {0} side is closed")]
    Closed(&'static str),
}

/// The session: shared state plus the two outgoing queues.
#[derive(Debug)]
pub struct Session {
    state: Mutex<State>,
    to_host: mpsc::Sender<Outgoing>,
    to_server: mpsc::Sender<Outgoing>,
    own_prefix: String,
    next_own: AtomicU64,
    /// Message counters.
    pub counters: Counters,
}

impl Session {
    pub(crate) fn new(to_host: mpsc::Sender<Outgoing>, to_server: mpsc::Sender<Outgoing>) -> Self {
        Session {
            state: Mutex::default(),
            to_host,
            to_server,
            own_prefix: format!("rootfence-{:016x}-", random_u64()),
            next_own: AtomicU64::new(1),
            counters: Counters::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock would be a bug; the maps stay consistent either way,
        // so keep serving rather than cascading the panic into every later message.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What is known about the peers so far.
    pub fn peers(&self) -> PeerInfo {
        self.state().peers.clone()
    }

    /// The negotiated (or latest seen) protocol revision.
    pub fn revision(&self) -> Option<Revision> {
        self.state().peers.version.clone()
    }

    /// Sends a message to one side, waiting while that side's queue is full. Used for
    /// forwarding, so a slow reader slows down the writer on the other side (flow control).
    pub async fn send(&self, to: Side, line: Bytes) -> Result<(), SendError> {
        self.queue(to)
            .send(Outgoing::Line(line))
            .await
            .map_err(|_| SendError::Closed(to.as_str()))
    }

    /// Sends a message to one side without ever waiting: used when a pump answers the side it
    /// reads from, which must not block on that side's input (a server that is blocked writing
    /// its output does not read its input, and waiting for it would deadlock).
    pub fn send_detached(self: &Arc<Self>, to: Side, line: Bytes) {
        match self.queue(to).try_send(Outgoing::Line(line)) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(item)) => {
                let session = Arc::clone(self);
                tokio::spawn(async move {
                    let _ = session.queue(to).send(item).await;
                });
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                tracing::debug!(
                    "dropping a message for the {} side: it is closed",
                    to.as_str()
                );
            }
        }
    }

    /// Closes the server's input (its stdin) after everything queued so far.
    pub(crate) async fn close_server_input(&self) {
        let _ = self.to_server.send(Outgoing::Close).await;
    }

    /// Closes the host's output (rootfence's stdout) after everything queued so far.
    pub(crate) async fn close_host_output(&self) {
        let _ = self.to_host.send(Outgoing::Close).await;
    }

    fn queue(&self, to: Side) -> &mpsc::Sender<Outgoing> {
        match to {
            Side::Host => &self.to_host,
            Side::Server => &self.to_server,
        }
    }

    /// Sends a request of rootfence's own to the host; the returned receiver yields the
    /// host's whole response message. The id can never collide with a server's request id.
    pub fn request_host(
        self: &Arc<Self>,
        method: &str,
        params: Option<Value>,
    ) -> oneshot::Receiver<Value> {
        let n = self.next_own.fetch_add(1, Ordering::Relaxed);
        let id = Id::from_string(&format!("{}{n}", self.own_prefix));
        let (reply, rx) = oneshot::channel();
        let method: Arc<str> = method.into();
        let mut msg =
            serde_json::json!({ "jsonrpc": "2.0", "id": id.to_value(), "method": &*method });
        if let Some(params) = params {
            msg["params"] = params;
        }
        self.state().own_pending.insert(
            id.key().clone(),
            OwnRequest {
                method,
                started: Instant::now(),
                reply,
            },
        );
        let line = serde_json::to_vec(&msg).expect("a JSON value always serializes");
        self.send_detached(Side::Host, line.into());
        rx
    }

    /// True if `id` lies in rootfence's own id namespace. A server request with such an id is
    /// refused: the server could otherwise steal the host's answer to rootfence.
    pub fn is_reserved_id(&self, id: &Id) -> bool {
        matches!(id.key(), IdKey::Str(s) if s.starts_with(&self.own_prefix))
    }

    /// True if a request with this id from `from` is still in flight.
    pub fn is_in_flight(&self, from: Side, id: &Id) -> bool {
        let st = self.state();
        match from {
            Side::Host => st.host_pending.contains_key(id.key()),
            Side::Server => st.server_pending.contains_key(id.key()),
        }
    }

    /// Records a request from `from` as forwarded and awaiting the other side's response.
    /// Returns false for a host request once the server is gone: nobody would answer it, and
    /// the caller must answer it instead. (Checked under the same lock as [`Self::server_gone`]
    /// drains the table, so no request can slip in between and wait forever.)
    pub(crate) fn track_request(&self, from: Side, id: &Id, method: Arc<str>) -> bool {
        let pending = Pending {
            id: id.clone(),
            method,
            started: Instant::now(),
        };
        let mut st = self.state();
        match from {
            Side::Host => {
                if st.server_gone.is_some() {
                    return false;
                }
                st.cancelled_by_host.remove(id.key());
                st.host_pending.insert(id.key().clone(), pending);
            }
            Side::Server => {
                st.cancelled_by_server.remove(id.key());
                st.server_pending.insert(id.key().clone(), pending);
            }
        }
        true
    }

    /// Records that rootfence answered a host request itself.
    pub(crate) fn answered_locally(&self, id: &Id) {
        self.counters
            .answered_locally
            .fetch_add(1, Ordering::Relaxed);
        self.state().answered_locally.insert(id.key().clone());
    }

    /// Matches a response arriving from `from` to the request it answers.
    pub(crate) fn match_response(&self, from: Side, id: &Id) -> Matched {
        let mut st = self.state();
        match from {
            Side::Host => {
                if let Some(own) = st.own_pending.remove(id.key()) {
                    return Matched::Own(own);
                }
                if let Some(p) = st.server_pending.remove(id.key()) {
                    return Matched::Pending(p);
                }
                if st.cancelled_by_server.remove(id.key()) {
                    return Matched::Cancelled;
                }
            }
            Side::Server => {
                if let Some(p) = st.host_pending.remove(id.key()) {
                    return Matched::Pending(p);
                }
                if st.cancelled_by_host.remove(id.key()) {
                    return Matched::Cancelled;
                }
            }
        }
        Matched::Unmatched
    }

    /// Handles `notifications/cancelled` from `from` for `request_id`. Returns false when the
    /// notification must be dropped: the request was answered by rootfence, so the other side
    /// never saw it.
    pub(crate) fn cancel(&self, from: Side, request_id: &Id) -> bool {
        let mut st = self.state();
        match from {
            Side::Host => {
                if st.answered_locally.contains(request_id.key()) {
                    return false;
                }
                if st.host_pending.remove(request_id.key()).is_some() {
                    st.cancelled_by_host.insert(request_id.key().clone());
                }
            }
            Side::Server => {
                if st.server_pending.remove(request_id.key()).is_some() {
                    st.cancelled_by_server.insert(request_id.key().clone());
                }
            }
        }
        true
    }

    /// Records the host's `initialize` request.
    pub(crate) fn record_initialize(&self, msg: &Value) {
        let params = &msg["params"];
        let mut st = self.state();
        st.peers.requested_version = params["protocolVersion"].as_str().map(Revision::parse);
        st.peers.client_info = params.get("clientInfo").cloned();
        st.peers.client_capabilities = params.get("capabilities").cloned();
    }

    /// Records the server's answer to `initialize` or `server/discover`.
    pub(crate) fn record_server_info(&self, msg: &Value) {
        let result = &msg["result"];
        let mut st = self.state();
        if let Some(v) = result["protocolVersion"].as_str() {
            st.peers.version = Some(Revision::parse(v));
        }
        if let Some(info) = result.get("serverInfo") {
            st.peers.server_info = Some(info.clone());
        }
        if let Some(caps) = result.get("capabilities") {
            st.peers.server_capabilities = Some(caps.clone());
        }
    }

    /// Records the `_meta` protocol version and client capabilities of a 2026-07-28 request.
    pub(crate) fn record_meta(&self, version: &str, caps: Option<&serde_json::value::RawValue>) {
        let mut st = self.state();
        if st.peers.version.as_ref().map(Revision::as_str) != Some(version) {
            st.peers.version = Some(Revision::parse(version));
        }
        if let Some(caps) = caps.and_then(|raw| serde_json::from_str(raw.get()).ok()) {
            st.peers.client_capabilities = Some(caps);
        }
    }

    /// Marks the server as unable to answer (exited or closed its output) and takes every
    /// host request still waiting for it, so each can be answered with an error.
    pub(crate) fn server_gone(&self, cause: &str) -> Vec<Pending> {
        let mut st = self.state();
        st.server_gone.get_or_insert_with(|| cause.to_owned());
        st.server_pending.clear();
        st.host_pending.drain().map(|(_, p)| p).collect()
    }

    /// Why the server can no longer answer, if it cannot.
    pub fn server_gone_cause(&self) -> Option<String> {
        self.state().server_gone.clone()
    }

    /// The requests in flight in one direction, for diagnostics and tests.
    pub fn in_flight(&self, from: Side) -> Vec<Pending> {
        let st = self.state();
        let map = match from {
            Side::Host => &st.host_pending,
            Side::Server => &st.server_pending,
        };
        map.values().cloned().collect()
    }
}

/// 64 random bits without a dependency: std's `RandomState` is seeded from the OS's random
/// source. The value only has to be unguessable by the server, which never sees it anyway.
fn random_u64() -> u64 {
    use std::hash::BuildHasher;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    std::collections::hash_map::RandomState::new().hash_one((nanos, std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> Id {
        let raw: Box<serde_json::value::RawValue> = serde_json::from_str(text).unwrap();
        Id::from_raw(&raw).unwrap()
    }

    fn session() -> (
        Arc<Session>,
        mpsc::Receiver<Outgoing>,
        mpsc::Receiver<Outgoing>,
    ) {
        let (th, rh) = mpsc::channel(8);
        let (ts, rs) = mpsc::channel(8);
        (Arc::new(Session::new(th, ts)), rh, rs)
    }

    #[tokio::test]
    async fn id_spaces_are_independent_and_own_ids_are_reserved() {
        let (s, mut to_host, _to_server) = session();
        s.track_request(Side::Host, &id("1"), "tools/call".into());
        s.track_request(Side::Server, &id("1"), "roots/list".into());
        // The host's response to the server's request 1 and the server's response to the
        // host's request 1 are different things.
        assert!(
            matches!(s.match_response(Side::Host, &id("1")), Matched::Pending(p) if &*p.method == "roots/list")
        );
        assert!(
            matches!(s.match_response(Side::Server, &id("1")), Matched::Pending(p) if &*p.method == "tools/call")
        );
        assert!(matches!(
            s.match_response(Side::Server, &id("1")),
            Matched::Unmatched
        ));
        assert!(matches!(
            s.match_response(Side::Server, &id("\"1\"")),
            Matched::Unmatched
        ));

        let rx = s.request_host("roots/list", None);
        let Some(Outgoing::Line(line)) = to_host.recv().await else {
            panic!("no request sent")
        };
        let sent: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(sent["method"], "roots/list");
        let own_id = id(&sent["id"].to_string());
        assert!(s.is_reserved_id(&own_id));
        assert!(!s.is_reserved_id(&id("\"rootfence-\"")));
        match s.match_response(Side::Host, &own_id) {
            Matched::Own(own) => own.deliver(serde_json::json!({"result": {"roots": []}})),
            other => panic!("own response not matched: {other:?}"),
        }
        assert_eq!(rx.await.unwrap()["result"]["roots"], serde_json::json!([]));
    }

    #[test]
    fn cancellation_of_locally_answered_requests_is_dropped() {
        let (s, _h, _s) = session();
        s.answered_locally(&id("5"));
        assert!(!s.cancel(Side::Host, &id("5")));
        s.track_request(Side::Host, &id("6"), "x".into());
        assert!(s.cancel(Side::Host, &id("6")));
        assert!(matches!(
            s.match_response(Side::Server, &id("6")),
            Matched::Cancelled
        ));
    }

    #[test]
    fn server_gone_takes_every_pending_host_request() {
        let (s, _h, _s) = session();
        s.track_request(Side::Host, &id("1"), "a".into());
        s.track_request(Side::Host, &id("2"), "b".into());
        let gone = s.server_gone("exited");
        assert_eq!(gone.len(), 2);
        assert!(s.in_flight(Side::Host).is_empty());
        assert_eq!(s.server_gone_cause().as_deref(), Some("exited"));
        // Once gone, a new host request is refused rather than left waiting forever.
        assert!(!s.track_request(Side::Host, &id("3"), "c".into()));
        assert!(s.in_flight(Side::Host).is_empty());
    }
}
