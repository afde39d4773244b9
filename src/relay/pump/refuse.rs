//! What a pump does with what it cannot forward: a line that is not a message, a server's
//! answer that cannot be read (the host request it answered still gets one), a refused
//! request, too many held decisions; each reported as a protocol error.

use std::sync::atomic::Ordering;
use std::time::Instant;

use bytes::Bytes;

use super::super::intercept::{Interceptor, ProtocolError};
use super::super::session::{Matched, Pending, Side};
use super::{Offending, Router, Step};
use crate::jsonrpc::Id;
use crate::jsonrpc::envelope::{self, Kind, ScanError};
use crate::jsonrpc::error::{self as rpc_error, error_response};
use crate::jsonrpc::salvage::salvage;
use crate::mcp::methods;

impl<I: Interceptor> Router<'_, I> {
    /// Handles a message that failed the scan: the host gets an error response; the server's
    /// message is dropped, and the host request it may have answered is answered with an
    /// error so it does not wait forever. Returns the reply for the sender.
    pub(super) fn invalid(
        &self,
        e: &ScanError,
        offending: Offending,
        line: &Bytes,
    ) -> Option<Bytes> {
        let code = match e {
            ScanError::Parse(_) => "bad_json",
            ScanError::Invalid { .. } => "invalid_message",
        };
        let id = e.id().cloned();
        match self.from {
            Side::Host => {
                self.report(
                    code,
                    e.to_string(),
                    id.clone(),
                    "answered_with_error",
                    offending,
                );
                if id
                    .as_ref()
                    .is_some_and(|id| self.session.is_reserved_id(id))
                {
                    // An invalid answer to one of rootfence's own requests: no error for it.
                    return None;
                }
                Some(error_response(id.as_ref(), e.code(), &format!("rootfence: {e}"), None).into())
            }
            Side::Server => {
                self.report(code, e.to_string(), id.clone(), "dropped", offending);
                let (id, has_method, maybe_answer) = match e {
                    // JSON, but not a valid message: an answer whose id is not a valid id
                    // (`[5]`, `null`) still held some request's answer.
                    ScanError::Invalid { has_method, .. } => {
                        let maybe_answer = id.is_none() && salvage(line).has_outcome;
                        (id, *has_method, maybe_answer)
                    }
                    ScanError::Parse(_) => {
                        let found = salvage(line);
                        (found.id, found.has_method, found.has_outcome)
                    }
                };
                self.answer_unreadable(id, has_method, maybe_answer, &e.to_string());
                None
            }
        }
    }

    /// A line that is not even text (too long, not UTF-8): the host's gets an error response;
    /// a server's is dropped, and the host request it may have answered gets an error.
    pub(super) fn unreadable(
        &self,
        code: &'static str,
        detail: String,
        offending: Offending,
        head: &[u8],
        rpc_code: i64,
    ) {
        let found = salvage(head);
        match self.from {
            Side::Host => {
                let line = error_response(
                    found.id.as_ref(),
                    rpc_code,
                    &format!("rootfence: {detail}"),
                    None,
                );
                self.report(code, detail, found.id, "answered_with_error", offending);
                self.reply(line.into());
            }
            Side::Server => {
                self.report(code, detail.clone(), found.id.clone(), "dropped", offending);
                // An oversized line's answer key may lie past the head kept: an object
                // without a method may be an answer.
                let maybe_answer = found.has_outcome || head.first() == Some(&b'{');
                self.answer_unreadable(found.id, found.has_method, maybe_answer, &detail);
            }
        }
    }

    /// A server generation sent something rootfence cannot read. If it names the request it
    /// answers, that request gets an error; if it is a request or notification, or does not
    /// look like an answer at all (a stray log line on stdout), nothing is owed; if it looks
    /// like an answer but its id cannot be read, every host request that generation had in
    /// hand when the line arrived gets an error (one of them lost its answer, and which cannot
    /// be known; later answers to the others are then dropped as unmatched). The session
    /// goes on.
    pub(super) fn answer_unreadable(
        &self,
        id: Option<Id>,
        has_method: bool,
        maybe_answer: bool,
        why: &str,
    ) {
        let generation = self.origin.generation;
        let pending: Vec<Pending> = match id {
            Some(id) => match self.session.match_response(Side::Server, generation, &id) {
                Matched::Pending { pending, .. } => {
                    if let Some(o) = self.session.observer() {
                        o.answered(
                            &pending.id,
                            super::super::Answer::Server {
                                error: Some(rpc_error::BAD_SERVER_RESPONSE),
                                withheld: 0,
                            },
                        );
                    }
                    vec![pending]
                }
                Matched::Own(own) => {
                    own.deliver(serde_json::json!({"error": {"code": rpc_error::BAD_SERVER_RESPONSE, "message": why}}));
                    Vec::new()
                }
                _ => Vec::new(),
            },
            None if has_method || !maybe_answer => Vec::new(),
            None => self.session.take_pending_before(generation, Instant::now()),
        };
        for p in pending {
            let msg = format!(
                "rootfence: the server's response to `{}` was malformed and withheld ({why})",
                p.method
            );
            let line = error_response(Some(&p.id), rpc_error::BAD_SERVER_RESPONSE, &msg, None);
            self.session.send_detached(line.into());
        }
    }

    /// Refuses a request (as an invalid request) with an error to its sender, and reports it.
    pub(super) fn refuse(&self, code: &'static str, detail: String, id: Id, bytes: &Bytes) -> Step {
        let msg = format!("rootfence: {detail}");
        let line = error_response(Some(&id), rpc_error::INVALID_REQUEST, &msg, None);
        let offending = Offending::line(bytes);
        self.report(code, detail, Some(id), "answered_with_error", offending);
        Step::Reply(line.into())
    }

    /// Too many messages are waiting for a decision: a request is answered at once (retry
    /// later), a notification is dropped; both are reported.
    pub(super) fn too_many_held(&self, text: &str, line: &Bytes) {
        let reply = match self.held_refusal(text) {
            Step::Reply(reply) => Some(reply),
            _ => None,
        };
        let action = if reply.is_some() {
            "answered_with_error"
        } else {
            "dropped"
        };
        let detail = "too many messages are waiting for a decision".into();
        self.report("too_many_held", detail, None, action, Offending::line(line));
        if let Some(reply) = reply {
            self.reply(reply);
        }
    }

    pub(super) fn held_refusal(&self, text: &str) -> Step {
        let Ok(env) = envelope::scan_message(text) else {
            return Step::Nothing;
        };
        if self.from == Side::Host && env.method.as_deref() == Some(methods::INITIALIZE) {
            self.session.initialize_decided();
        }
        let (Kind::Request, Some(id)) = (env.kind, env.id) else {
            return Step::Nothing;
        };
        // Not tracked yet (that happens when it is forwarded): answered here instead.
        if self.from == Side::Host {
            self.session.answered_locally(&id);
            if let Some(o) = self.session.observer() {
                o.answered(
                    &id,
                    super::super::Answer::Local {
                        error: Some(rpc_error::SERVER_GONE),
                        withheld: text.len() as u64,
                    },
                );
            }
        }
        let msg = "rootfence: too many messages are waiting for a decision; send this request again shortly";
        Step::Reply(error_response(Some(&id), rpc_error::SERVER_GONE, msg, None).into())
    }

    /// Reports a problem with a frame that is not even a message.
    pub(super) fn report(
        &self,
        code: &'static str,
        detail: String,
        id: Option<Id>,
        action: &'static str,
        offending: Offending,
    ) {
        self.session
            .counters
            .protocol_errors
            .fetch_add(1, Ordering::Relaxed);
        tracing::warn!(side = self.from.as_str(), code, action, "{detail}");
        self.icpt.on_protocol_error(&ProtocolError {
            from: self.from,
            code,
            detail,
            id,
            action,
            len: offending.len,
            line: offending.line,
        });
    }
}
