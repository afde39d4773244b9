//! Deciding one routed message: the interceptor's screen, text path or value path, and the
//! relay's own records (`initialize`, the server's info), then the action turned into a
//! [`Step`] with the pending tables kept right ([`finish`]) and the observer told.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value};

use super::super::intercept::{Action, Drain, Intercepted, Interceptor, Offered, Screened};
use super::super::session::{Session, Side};
use super::{Dest, Internal, Observed, Routed, Router, Step, server_gone_error};
use crate::jsonrpc::envelope::{self, Kind};
use crate::jsonrpc::error::{self as rpc_error, error_response};
use crate::jsonrpc::{Capture, Id};
use crate::mcp::methods;

impl<I: Interceptor> Router<'_, I> {
    /// Asks the interceptor (when it wants the message) and turns its action into a step.
    /// `capture` is what the scan read for the text path (see [`Offered::capture`]), `value`
    /// the message's value when the scan built it (see [`crate::jsonrpc::Build`]).
    pub(super) fn decide(
        &self,
        mut routed: Routed,
        text: &str,
        capture: &Capture<'_>,
        value: Option<Box<Map<String, Value>>>,
        internal: Internal,
    ) -> Step {
        let mut value = value.map(|m| Value::Object(*m));
        let screened = self.icpt.screen(
            routed.origin.side,
            routed.kind,
            routed.id.as_ref(),
            routed.request,
            &routed.method,
            text.as_bytes(),
        );
        match screened {
            Some(Screened::Act(action)) => return finish(routed, action, self.session),
            Some(Screened::Rewrite { message, after }) => {
                return self.decide_value(routed, message, internal, after);
            }
            None => {}
        }
        // A host request whose trace context the observer continues: its `traceparent` is
        // rewritten, and the message is then a checked one, forwarded as exactly the value
        // built (the interceptor sees that value, never the original bytes).
        let traced = routed
            .observed
            .as_mut()
            .and_then(|o| o.traceparent.take())
            .and_then(|traceparent| with_traceparent(value.take(), text, traceparent));
        if let Some(message) = traced {
            return self.decide_value(routed, message, internal, None);
        }
        let wants = self
            .icpt
            .wants(routed.origin.side, routed.kind, &routed.method);
        if !wants && internal == Internal::None {
            return finish(routed, Action::Forward, self.session);
        }
        // serde_json's private marker keys make the text mean something else to serde_json
        // than to the peer: only the re-serialized value may stand for it then.
        // (A value the scan built is of a text without them.)
        let verbatim_ok = value.is_some() || !envelope::has_private_marker(text);
        if wants && internal == Internal::None && verbatim_ok {
            let offered = Offered {
                from: routed.origin.side,
                kind: routed.kind,
                id: routed.id.as_ref(),
                request: routed.request,
                method: &routed.method,
                text,
                capture,
            };
            if let Some(action) = self.icpt.intercept_text(self.session, &offered) {
                return finish(routed, action, self.session);
            }
        }
        // The scan already validated this text, so this parse only fails on a bug; then the
        // message is refused, never forwarded unchecked.
        let message = match value.map_or_else(|| serde_json::from_str(text), Ok) {
            Ok(v) => v,
            Err(e) => {
                tracing::error!("a scanned message failed to parse: {e}");
                return finish(routed, Action::Drop, self.session);
            }
        };
        self.record(&routed, internal, &message);
        if !wants {
            return finish(routed, Action::Forward, self.session);
        }
        let action = self.intercept(&routed, message, verbatim_ok);
        finish(routed, action, self.session)
    }

    /// What the relay records of a message it must know itself.
    fn record(&self, routed: &Routed, internal: Internal, message: &Value) {
        match internal {
            Internal::RecordInitialize => self.session.record_initialize(message),
            Internal::RecordServerInfo => self
                .session
                .record_server_info(message, routed.origin.generation),
            Internal::None => {}
        }
    }

    /// Hands the message's value to [`Interceptor::intercept`].
    fn intercept(&self, routed: &Routed, message: Value, verbatim_ok: bool) -> Action {
        self.icpt.intercept(
            self.session,
            Intercepted {
                from: routed.origin.side,
                kind: routed.kind,
                id: routed.id.clone(),
                request: routed.request,
                method: Arc::clone(&routed.method),
                message,
                verbatim_ok,
            },
        )
    }

    /// [`Self::decide`] for a message rewritten before the interceptor's decision (`message`
    /// is the value built): a host request whose `params._meta.traceparent` was replaced,
    /// a server message whose secret the screen redacted.
    pub(super) fn decide_value(
        &self,
        routed: Routed,
        message: Value,
        internal: Internal,
        after: Option<Drain>,
    ) -> Step {
        self.record(&routed, internal, &message);
        if !self
            .icpt
            .wants(routed.origin.side, routed.kind, &routed.method)
        {
            let action = waiting_for(after, Action::Replace(message));
            return finish(routed, action, self.session);
        }
        let built = message.clone();
        let action = self.intercept(&routed, message, false);
        // "Forward" means the bytes that came in; here that is the value built.
        let action = match action {
            Action::Forward => Action::Replace(built),
            Action::Defer(fut) => Action::Defer(Box::pin(async move {
                match settled(fut.await).await {
                    Action::Forward => Action::Replace(built),
                    other => other,
                }
            })),
            other => other,
        };
        finish(routed, waiting_for(after, action), self.session)
    }
}

/// `action`, taking effect only once `after` is done (when given); a deferred action within
/// is resolved by [`finish`], like any other.
fn waiting_for(after: Option<Drain>, action: Action) -> Action {
    match after {
        None => action,
        Some(after) => Action::Defer(Box::pin(async move {
            after.await;
            action
        })),
    }
}

/// `action`, once every deferral in it is resolved.
async fn settled(mut action: Action) -> Action {
    while let Action::Defer(next) = action {
        action = next.await;
    }
    action
}

/// Turns a final (or deferred) action into a step, keeping the pending tables right: a request
/// is tracked only when it is actually forwarded, and a request is never left unanswered.
fn finish(mut routed: Routed, action: Action, session: &Arc<Session>) -> Step {
    let to_bytes = |v: &Value| -> Bytes {
        serde_json::to_vec(v)
            .expect("a JSON value always serializes")
            .into()
    };
    let from = routed.origin.side;
    let is_initialize = from == Side::Host && &*routed.method == methods::INITIALIZE;
    // A server's answer that rootfence replaced is observed once its bytes are built (what
    // was withheld is measured on them); every other final action, here.
    let replaced_answer = from == Side::Server && matches!(action, Action::Replace(_));
    if let (Some(observed), Some(id), Some(o)) = (&routed.observed, &routed.id, session.observer())
        && !matches!(action, Action::Defer(_))
        && !replaced_answer
    {
        observe(o, from, id, observed, &action);
    }
    match action {
        Action::Forward | Action::Replace(_) => {
            if let (Kind::Request, Some(id)) = (routed.kind, &routed.id) {
                match from {
                    Side::Host => {
                        let Some(generation) = session.track_host_request(
                            id,
                            Arc::clone(&routed.method),
                            routed.request,
                            routed.answer_built,
                        ) else {
                            let cause = session.server_gone_cause().unwrap_or_default();
                            if is_initialize {
                                session.initialize_decided();
                            }
                            if let Some(o) = session.observer() {
                                o.answered(id, super::super::Answer::ServerGone);
                            }
                            return Step::Reply(server_gone_error(id, &routed.method, &cause));
                        };
                        if let Dest::Server { generation: g, .. } = &mut routed.to {
                            *g = generation;
                        }
                        if let Some(o) = session.observer() {
                            o.forwarded(id);
                        }
                    }
                    Side::Server => {
                        let host_id = session.track_server_request(
                            routed.origin.generation,
                            id,
                            Arc::clone(&routed.method),
                            routed.answer_built,
                        );
                        if routed.origin.generation > 1 {
                            routed.forward_id = Some(host_id);
                        }
                    }
                }
            } else if let Dest::Server { generation: 0, .. } = routed.to {
                // A host notification goes to the generation host messages go to now.
                routed.to = Dest::Server {
                    generation: session.generation(),
                    prio: false,
                };
            }
            let note =
                (from == Side::Host).then(|| (Arc::clone(&routed.method), routed.id.clone()));
            let bytes = match action {
                Action::Replace(v) => {
                    let bytes = to_bytes(&v);
                    if let (true, Some(observed), Some(id), Some(o)) = (
                        replaced_answer,
                        &routed.observed,
                        &routed.id,
                        session.observer(),
                    ) {
                        o.answered(
                            id,
                            super::super::Answer::Server {
                                error: v.get("error").and_then(|e| e.get("code")?.as_i64()),
                                withheld: (observed.len as u64).saturating_sub(bytes.len() as u64),
                            },
                        );
                    }
                    Some(bytes)
                }
                _ => None,
            };
            Step::Send {
                to: routed.to,
                bytes,
                id: routed.forward_id,
                note,
            }
        }
        Action::Reply(_) | Action::Drop => {
            if is_initialize {
                session.initialize_decided();
            }
            let request = routed.id.as_ref().filter(|_| routed.kind == Kind::Request);
            if let (Some(id), Side::Host) = (request, from) {
                session.answered_locally(id);
            }
            match (action, request) {
                (Action::Reply(v), _) => Step::Reply(to_bytes(&v)),
                // A request dropped is still answered.
                (_, Some(id)) => {
                    let msg = format!(
                        "rootfence: the `{}` request was not forwarded",
                        routed.method
                    );
                    Step::Reply(
                        error_response(Some(id), rpc_error::INTERNAL_ERROR, &msg, None).into(),
                    )
                }
                _ => Step::Nothing,
            }
        }
        Action::Defer(fut) => {
            let session = Arc::clone(session);
            Step::Later(Box::pin(async move {
                finish(routed, settled(fut.await).await, &session)
            }))
        }
    }
}

/// Tells the observer how a host request was answered, from the final action on it (a host
/// request) or on its answer (a server response). (A host request that is forwarded is
/// answered later, by the server; a server answer rootfence replaced is told in `finish`.)
fn observe(
    o: &dyn super::super::Observer,
    from: Side,
    id: &Id,
    observed: &Observed,
    action: &Action,
) {
    use super::super::Answer;
    let error_of = |v: &Value| v.get("error")?.get("code")?.as_i64();
    let len = observed.len as u64;
    let answer = match (from, action) {
        (Side::Host, Action::Forward | Action::Replace(_) | Action::Defer(_)) => return,
        (Side::Host, Action::Reply(v)) => Answer::Local {
            error: error_of(v),
            withheld: len,
        },
        (Side::Host, Action::Drop) => Answer::Local {
            error: Some(rpc_error::INTERNAL_ERROR),
            withheld: len,
        },
        (Side::Server, Action::Forward) => Answer::Server {
            error: observed.error,
            withheld: 0,
        },
        (Side::Server, Action::Replace(_) | Action::Defer(_)) => return,
        (Side::Server, Action::Reply(_) | Action::Drop) => Answer::Server {
            error: None,
            withheld: len,
        },
    };
    o.answered(id, answer);
}

/// The message (`text`, or its `value` when built) with its `params._meta.traceparent` (a
/// string) replaced; `None` when it has no such field (the observer only continues a trace
/// it read there, so a value built is not worth keeping then: the text is parsed again).
fn with_traceparent(value: Option<Value>, text: &str, traceparent: String) -> Option<Value> {
    let mut message = value.map_or_else(|| serde_json::from_str(text).ok(), Some)?;
    let slot = message
        .get_mut("params")?
        .get_mut("_meta")?
        .get_mut("traceparent")
        .filter(|t| t.is_string())?;
    *slot = Value::String(traceparent);
    Some(message)
}

/// The `error.code` of an error response's text.
pub(super) fn error_code(text: &str) -> Option<i64> {
    #[derive(serde::Deserialize)]
    struct Response {
        error: Option<ErrorObject>,
    }
    #[derive(serde::Deserialize)]
    struct ErrorObject {
        code: Option<i64>,
    }
    serde_json::from_str::<Response>(text).ok()?.error?.code
}
