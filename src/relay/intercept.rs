//! The interception point: where policy plugs into the relay without touching the pumps.
//!
//! For every message the pumps first call [`Interceptor::screen`] on its raw text (the
//! content tripwire), then ask [`Interceptor::wants`] (a cheap test on side, kind and
//! method, on the hot path). Only when it says yes is the message parsed into a full
//! [`Value`] and handed to [`Interceptor::intercept`], which returns an [`Action`]. Everything
//! else is forwarded byte for byte.
//!
//! An interceptor that *checked* a message should return [`Action::Replace`] with the value
//! it checked, even when it changed nothing: then the bytes forwarded are exactly the value
//! that was checked, whatever the original text looked like.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use super::session::{Session, Side};
use crate::jsonrpc::{Capture, Id, Kind, Rules};

/// A message handed to an interceptor.
#[derive(Debug)]
pub struct Intercepted {
    /// Where it came from.
    pub from: Side,
    /// Request, notification or response.
    pub kind: Kind,
    /// The id (requests and responses).
    pub id: Option<Id>,
    /// The session-unique key of the host request this message is or answers (1, 2, ... in
    /// the order the host's requests arrived; issue 29): what names one request in a log,
    /// where ids repeat. `None` for everything else.
    pub request: Option<u64>,
    /// For requests and notifications, their method; for responses, the method of the request
    /// they answer.
    pub method: Arc<str>,
    /// The whole message.
    pub message: Value,
    /// Whether the original bytes may stand for `message` when the interceptor changes
    /// nothing. False when the text holds serde_json's private marker keys
    /// (`$serde_json::private::Number`, `…::RawValue`): with the features rootfence builds
    /// serde_json with, `Value` reads an object with such a key as a number or as embedded
    /// JSON, while every other parser sees an object, so only the re-serialized value means
    /// the same thing to rootfence and to the peer.
    pub verbatim_ok: bool,
}

/// A message [`Interceptor::wants`] asked for, offered as its text before it is parsed (see
/// [`Interceptor::intercept_text`]). The text passed the strict scan (valid UTF-8 JSON, no
/// duplicate keys at any depth) and holds none of serde_json's private marker keys, so it
/// means to every parser exactly what it means to serde_json.
#[derive(Debug)]
pub struct Offered<'a> {
    /// Where it came from.
    pub from: Side,
    /// Request, notification or response.
    pub kind: Kind,
    /// The id (requests and responses).
    pub id: Option<&'a Id>,
    /// As in [`Intercepted::request`].
    pub request: Option<u64>,
    /// As in [`Intercepted::method`].
    pub method: &'a str,
    /// The message's text, as it came.
    pub text: &'a str,
    /// What the relay's strict scan read for the text path in its one pass, under
    /// [`Interceptor::capture_rules`] (issue 25): the text path reads this, not `text` again.
    pub capture: &'a Capture<'a>,
}

/// A future that decides later, for checks that must wait (for roots, for a file read).
pub type Deferred = Pin<Box<dyn Future<Output = Action> + Send + 'static>>;

/// A wait a pump finishes before it reads on (see [`Interceptor::backlog`]).
pub type Drain = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// What to do with an intercepted message.
pub enum Action {
    /// Forward the original bytes unchanged.
    Forward,
    /// Forward this message instead.
    Replace(Value),
    /// Do not forward; answer the sender with this message (for a request: its response).
    Reply(Value),
    /// Do not forward. A request is never dropped silently: the relay answers it with an
    /// internal error, so every request gets exactly one response.
    Drop,
    /// Decide later. The pump carries on with the next message meanwhile, so responses may
    /// overtake each other, which JSON-RPC allows (they are matched by id).
    Defer(Deferred),
}

impl fmt::Debug for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Forward => f.write_str("Forward"),
            Action::Replace(v) => f.debug_tuple("Replace").field(v).finish(),
            Action::Reply(v) => f.debug_tuple("Reply").field(v).finish(),
            Action::Drop => f.write_str("Drop"),
            Action::Defer(_) => f.write_str("Defer(..)"),
        }
    }
}

/// What [`Interceptor::screen`] decided about a message.
pub enum Screened {
    /// This action replaces whatever would have happened to the message.
    Act(Action),
    /// Go on with this value instead of the message's text: [`Interceptor::wants`] and
    /// [`Interceptor::intercept`] see it as for any message, and "forward" then means this
    /// value, never the original bytes. What is decided about it takes effect only after
    /// `after` (the rewrite's own evidence reaching the disk), when given.
    Rewrite {
        /// The value in the message's place.
        message: Value,
        /// A wait before the rewritten message takes effect.
        after: Option<Drain>,
    },
}

impl fmt::Debug for Screened {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Screened::Act(a) => f.debug_tuple("Act").field(a).finish(),
            Screened::Rewrite { message, after } => f
                .debug_struct("Rewrite")
                .field("message", message)
                .field("after", &after.as_ref().map(|_| ".."))
                .finish(),
        }
    }
}

/// A protocol problem the relay met, reported to the interceptor (for the audit log).
#[derive(Clone, Debug)]
pub struct ProtocolError {
    /// The side whose input was at fault.
    pub from: Side,
    /// A stable code: `bad_json`, `invalid_message`, `too_long`, `bad_utf8`,
    /// `unmatched_response`, `reserved_id`, `duplicate_id`.
    pub code: &'static str,
    /// Human detail.
    pub detail: String,
    /// The offending message's id, when known.
    pub id: Option<Id>,
    /// What the relay did: `answered_with_error` or `dropped`.
    pub action: &'static str,
    /// The offending line's length in bytes.
    pub len: u64,
    /// The offending line, when it was read whole (not for oversized lines). For hashing in
    /// the audit log; never to be logged as it is.
    pub line: Option<bytes::Bytes>,
}

/// Policy hooks. Every method has a do-nothing default.
pub trait Interceptor: Send + Sync + 'static {
    /// Whether to intercept a message. Called for every message: keep it cheap.
    fn wants(&self, from: Side, kind: Kind, method: &str) -> bool {
        let _ = (from, kind, method);
        false
    }

    /// Screens the raw text of every message before [`Interceptor::wants`] is asked (the
    /// content tripwire). [`Screened::Act`] replaces whatever would have happened to it (a
    /// response must then get an answer, [`Action::Replace`] with an error, never a drop);
    /// [`Screened::Rewrite`] goes on with a value in its place (a secret redacted), which
    /// is then handled as any checked message. Called for every message: keep it cheap
    /// when there is nothing to find. `request` is as in [`Intercepted::request`].
    fn screen(
        &self,
        from: Side,
        kind: Kind,
        id: Option<&Id>,
        request: Option<u64>,
        method: &str,
        line: &[u8],
    ) -> Option<Screened> {
        let _ = (from, kind, id, request, method, line);
        None
    }

    /// Decides what happens to a message [`Interceptor::wants`] asked for.
    fn intercept(&self, session: &Arc<Session>, msg: Intercepted) -> Action {
        let _ = (session, msg);
        Action::Forward
    }

    /// Decides a message [`Interceptor::wants`] asked for from its text, before any value is
    /// built: a fast path for large messages of a known shape. `None` (the default) passes
    /// it on to [`Interceptor::intercept`] as a parsed value; an interceptor returns `None`
    /// for anything its fast path does not fully understand. "Forward" means the bytes
    /// offered.
    fn intercept_text(&self, session: &Arc<Session>, msg: &Offered<'_>) -> Option<Action> {
        let _ = (session, msg);
        None
    }

    /// The rules under which the relay's strict scan captures, in the same pass, what
    /// [`Interceptor::intercept_text`] reads ([`Offered::capture`]). `None` (the default):
    /// the scan captures nothing.
    fn capture_rules(&self) -> Option<&'static Rules> {
        None
    }

    /// Which messages take the value path ([`Interceptor::wants`] them and no text path takes
    /// them): the relay's strict scan builds their [`Intercepted::message`] in its one pass
    /// instead of parsing them again (issue 25). `None` (the default): the scan builds no
    /// value, and a message wanted is parsed after it.
    fn value_path(&self) -> Option<fn(Side, Kind, &str) -> bool> {
        None
    }

    /// Called by a pump right after it held a message back ([`Action::Defer`]): when the
    /// interceptor's own bound on what waits is reached, a wait for the pump to finish before
    /// it reads its next message (backpressure on that side's sender, instead of blocking a
    /// thread or refusing messages). `None` (the default): read on.
    fn backlog(&self, from: Side) -> Option<Drain> {
        let _ = from;
        None
    }

    /// Called for each message from the host while no server generation was asked for yet
    /// ([`Session::launch`]), before it is routed: an interceptor that starts the server
    /// itself ([`crate::relay::RelayConfig::deferred`]) decides here when to.
    fn unlaunched_host_message(&self, session: &Arc<Session>, method: &str) {
        let _ = (session, method);
    }

    /// Called once the session is set up, before any message is relayed.
    fn on_start(&self, session: &Arc<Session>) {
        let _ = session;
    }

    /// Called for every protocol error the relay handled.
    fn on_protocol_error(&self, error: &ProtocolError) {
        let _ = error;
    }

    /// Resolves, with the reason, when the session must stop (e.g. the audit log failed and
    /// policy says to stop rather than continue unaudited). The relay then answers every
    /// waiting and every later host request with an error and shuts the server down.
    fn fatal(&self) -> impl Future<Output = String> + Send + 'static {
        std::future::pending()
    }
}

/// The default: intercept nothing, so every message passes byte for byte.
#[derive(Clone, Copy, Debug, Default)]
pub struct PassThrough;

impl Interceptor for PassThrough {}
