//! Routing one valid message: where it goes and under which id. [`Router::route`] reads as
//! the forwarding decision per kind (request, notification, response); the bookkeeping a
//! message needs on the way (the host's first words, `_meta` facts, a launch not yet made,
//! cancellations followed to the right generation and id, answers matched to their
//! requests, the observer's span) is a named step of its own below it.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;
use serde_json::value::RawValue;

use super::super::intercept::Interceptor;
use super::super::session::{Gen, Matched, Pending, Side};
use super::{
    Dest, Internal, Observed, Offending, Routed, Router, Step, answer_built, server_gone_error,
};
use crate::jsonrpc::Id;
use crate::jsonrpc::envelope::{Capture, Envelope, Kind};
use crate::jsonrpc::framing;
use crate::mcp::methods;

impl<I: Interceptor> Router<'_, I> {
    /// Routes one valid message (`bytes` is `text` as bytes, for error reports).
    pub(super) fn route(&self, env: Envelope<'_>, text: &str, bytes: &Bytes) -> Step {
        match env.kind {
            Kind::Request => self.request(env, text, bytes),
            Kind::Notification => self.notification(env, text),
            Kind::Response | Kind::ErrorResponse => self.response(env, text, bytes),
        }
    }

    /// A request goes to the other side unless its id is refused or the server is gone (a
    /// host request's generation is decided when it is forwarded).
    fn request(&self, env: Envelope<'_>, text: &str, bytes: &Bytes) -> Step {
        let id = env.id.expect("the scan gives every request an id");
        let method = method_name(env.method.as_deref().unwrap_or_default());
        let is_initialize = &*method == methods::INITIALIZE;
        if let Some(refused) = self.admit_request(&id, &method, is_initialize, bytes) {
            return refused;
        }
        // Only the host speaks for the host: a server's request carrying the same `_meta`
        // keys says nothing about the host's version or capabilities.
        if self.from == Side::Host {
            if let Some(version) = &env.meta_protocol_version {
                self.session
                    .record_meta(version, env.meta_client_capabilities.as_deref());
            }
            self.note_unlaunched(&method);
        }
        let internal = if self.from == Side::Host && is_initialize {
            Internal::RecordInitialize
        } else {
            Internal::None
        };
        let observed = self.observe_request(&id, &method, text);
        let request = (self.from == Side::Host).then(|| self.session.number_host_request());
        let answer_built = self
            .icpt
            .value_path()
            .is_some_and(|vp| answer_built(vp, self.from.other(), &method));
        // (A host request's generation is decided when it is forwarded.)
        let to = self.toward(0, is_initialize);
        let routed = Routed {
            request,
            observed,
            answer_built,
            ..self.routed(Kind::Request, Some(id), method, to)
        };
        self.decide(routed, text, &env.capture, env.value, internal)
    }

    /// The checks a request's id must pass, with the host's first words noted on the way;
    /// the refusal when one fails.
    fn admit_request(
        &self,
        id: &Id,
        method: &str,
        is_initialize: bool,
        bytes: &Bytes,
    ) -> Option<Step> {
        let session = self.session;
        if session.is_reserved_id(id) {
            return Some(self.refuse(
                "reserved_id",
                format!("request id {id} lies in rootfence's own id namespace"),
                id.clone(),
                bytes,
            ));
        }
        if self.from == Side::Host {
            session.host_message_seen(is_initialize);
            if let Some(cause) = session.server_gone_cause() {
                return Some(Step::Reply(server_gone_error(id, method, &cause)));
            }
        }
        if session.is_in_flight(self.from, id) {
            return Some(self.refuse(
                "duplicate_id",
                format!("request id {id} is already in flight"),
                id.clone(),
                bytes,
            ));
        }
        None
    }

    /// A host message before the server is launched: the interceptor may launch it now.
    fn note_unlaunched(&self, method: &str) {
        if !self.session.launched() {
            self.icpt.unlaunched_host_message(self.session, method);
        }
    }

    /// A host request's span: the observer is told of it, and may continue its trace.
    fn observe_request(&self, id: &Id, method: &str, text: &str) -> Option<Box<Observed>> {
        match self.session.observer() {
            Some(o) if self.from == Side::Host => Some(Box::new(Observed {
                len: text.len(),
                traceparent: o.request(id, method, text),
                error: None,
            })),
            _ => None,
        }
    }

    /// A notification goes to the other side; a cancellation goes where its request went,
    /// under the id its receiver knows it by.
    fn notification(&self, env: Envelope<'_>, text: &str) -> Step {
        let method = method_name(env.method.as_deref().unwrap_or_default());
        if self.from == Side::Host {
            self.session.host_message_seen(false);
            self.note_unlaunched(&method);
        }
        let mut to = self.toward(0, false);
        let mut bytes_override = None;
        if &*method == methods::CANCELLED {
            match self.follow_cancellation(text, &mut to) {
                Some(rewritten) => bytes_override = rewritten,
                None => return Step::Nothing,
            }
        }
        let routed = self.routed(Kind::Notification, None, method, to);
        match bytes_override {
            Some(b) => {
                let text = framing::line_str(&b).to_owned();
                let mut step =
                    self.decide(routed, &text, &Capture::default(), None, Internal::None);
                if let Step::Send {
                    bytes: bytes @ None,
                    ..
                } = &mut step
                {
                    *bytes = Some(b);
                }
                step
            }
            None => self.decide(routed, text, &env.capture, env.value, Internal::None),
        }
    }

    /// Follows a `notifications/cancelled` to its request: `None` when it is to be dropped
    /// (its request was answered by rootfence, or its id is unknown to the host); otherwise
    /// the rewritten bytes when the host knows the request by another id. `to` becomes the
    /// generation a host's cancelled request went to.
    fn follow_cancellation(&self, text: &str, to: &mut Dest) -> Option<Option<Bytes>> {
        let Some(request_id) = cancelled_request_id(text) else {
            return Some(None);
        };
        match self.session.cancel(self.from, &request_id) {
            None => {
                tracing::debug!(id = %request_id, "dropping a cancellation for a request rootfence answered");
                return None;
            }
            // The cancellation goes where the request went.
            Some(Some(generation)) => *to = self.toward(generation, false),
            _ => {}
        }
        if self.from == Side::Server && self.origin.generation > 1 {
            // The host knows this generation's requests by other ids.
            return self
                .session
                .host_id_of_server_request(self.origin.generation, &request_id)
                .map(|host_id| with_cancelled_id(text, &host_id));
        }
        Some(None)
    }

    /// A response goes back to whoever sent its request; one to rootfence's own request is
    /// delivered, one to a cancelled request or to none is dropped.
    fn response(&self, mut env: Envelope<'_>, text: &str, bytes: &Bytes) -> Step {
        let Some(id) = env.id.take() else {
            self.report(
                "unmatched_response",
                "an error response without an id cannot be routed".into(),
                None,
                "dropped",
                Offending::line(bytes),
            );
            return Step::Nothing;
        };
        match self
            .session
            .match_response(self.from, self.origin.generation, &id)
        {
            Matched::Own(own) => {
                match env.value.map_or_else(
                    || serde_json::from_str::<Value>(text),
                    |m| Ok(Value::Object(*m)),
                ) {
                    Ok(value) => own.deliver(value),
                    Err(e) => tracing::warn!("a response to rootfence is unreadable: {e}"),
                }
                Step::Nothing
            }
            Matched::Cancelled => {
                tracing::debug!(%id, "dropping a late response to a cancelled request");
                Step::Nothing
            }
            Matched::Unmatched => {
                self.report(
                    "unmatched_response",
                    format!("a response with id {id} matches no request in flight"),
                    Some(id),
                    "dropped",
                    Offending::line(bytes),
                );
                Step::Nothing
            }
            Matched::Pending { pending, restore } => self.answer(env, id, pending, restore, text),
        }
    }

    /// The answer to a request in flight: to its sender, under the id it was sent with.
    fn answer(
        &self,
        env: Envelope<'_>,
        id: Id,
        pending: Pending,
        restore: Option<Id>,
        text: &str,
    ) -> Step {
        let kind = env.kind;
        let from = self.from;
        let internal = if from == Side::Server
            && kind == Kind::Response
            && matches!(
                &*pending.method,
                methods::INITIALIZE | methods::SERVER_DISCOVER
            ) {
            Internal::RecordServerInfo
        } else {
            Internal::None
        };
        if from == Side::Server {
            self.session
                .record_answered(&pending.method, &id, kind == Kind::Response);
        }
        let to = self.toward(pending.generation, true);
        let observed = (from == Side::Server && self.session.observer().is_some()).then(|| {
            Box::new(Observed {
                len: text.len(),
                traceparent: None,
                error: (kind == Kind::ErrorResponse)
                    .then(|| super::decide::error_code(text))
                    .flatten(),
            })
        });
        let routed = Routed {
            forward_id: restore,
            request: pending.request,
            observed,
            ..self.routed(kind, Some(id), pending.method, to)
        };
        self.decide(routed, text, &env.capture, env.value, internal)
    }

    /// Where a message from this pump goes: to the host, or to server `generation` on the
    /// lane `prio` says.
    fn toward(&self, generation: Gen, prio: bool) -> Dest {
        match self.from {
            Side::Host => Dest::Server { generation, prio },
            Side::Server => Dest::Host,
        }
    }

    /// A message's routing identity, with nothing to note on the way.
    fn routed(&self, kind: Kind, id: Option<Id>, method: Arc<str>, to: Dest) -> Routed {
        Routed {
            origin: self.origin,
            kind,
            id,
            method,
            to,
            forward_id: None,
            request: None,
            answer_built: false,
            observed: None,
        }
    }
}

/// A message's method as the relay keeps it (with its request, for the answer): a method
/// rootfence knows shares one allocation made once per process, so a message allocates no
/// name of its own; any other is copied.
fn method_name(name: &str) -> Arc<str> {
    static KNOWN: std::sync::LazyLock<Vec<Arc<str>>> =
        std::sync::LazyLock::new(|| methods::ALL.iter().map(|m| Arc::from(*m)).collect());
    match methods::index(name) {
        Some(i) => Arc::clone(&KNOWN[i]),
        None => name.into(),
    }
}

/// A `notifications/cancelled` with `params.requestId` replaced.
fn with_cancelled_id(text: &str, id: &Id) -> Option<Bytes> {
    let mut v: Value = serde_json::from_str(text).ok()?;
    *v.pointer_mut("/params/requestId")? = id.to_value();
    Some(serde_json::to_vec(&v).ok()?.into())
}

/// `params.requestId` of a `notifications/cancelled`, if present and valid.
pub(super) fn cancelled_request_id(text: &str) -> Option<Id> {
    #[derive(serde::Deserialize)]
    struct Cancelled<'a> {
        #[serde(borrow)]
        params: Option<CancelledParams<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct CancelledParams<'a> {
        #[serde(borrow, rename = "requestId")]
        request_id: Option<&'a RawValue>,
    }
    let msg: Cancelled<'_> = serde_json::from_str(text).ok()?;
    Id::from_raw(msg.params?.request_id?).ok()
}
