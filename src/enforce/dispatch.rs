//! The one dispatch of the enforcement layer: a message the URI table (`crate::mcp::uris`)
//! routes to the enforcer goes to its method family's handler from here. Host requests first
//! pass the 2026-07-28 preamble (roots answers rootfence owes, `inputResponses`, the MRTR roots
//! question), which every family shares.
//!
//! The families and their files: `resources/read` (`resources_read.rs`, `read.rs`,
//! `read_text.rs`), resource lists and templates (`results.rs`, `page.rs`, `paged.rs`,
//! `walk.rs`), subscriptions (`subscriptions.rs`), `tools/call` (`tools.rs`), prompts and
//! tool results (`results.rs`), sampling (`sampling.rs`), elicitation and free-form fields
//! (`fields.rs`), completion (`completion.rs`), roots and `initialize` (`learn.rs`,
//! `roots.rs`).

use std::sync::Arc;

use serde_json::Value;

use super::evidence::{Evidence, Outcome};
use super::{Ctx, Inner};
use crate::jsonrpc::Kind;
use crate::mcp::methods as m;
use crate::mcp::uris;
use crate::relay::{Action, Intercepted, Session, Side};
use crate::roots::RootSet;

impl Inner {
    /// Hands one intercepted message to its family's handler, judged under `roots` (or,
    /// for a 2026-07-28 host without roots, the operator roots).
    pub(super) fn handle(
        self: &Arc<Self>,
        session: &Arc<Session>,
        msg: Intercepted,
        roots: Option<Arc<RootSet>>,
    ) -> Outcome {
        let Intercepted {
            from,
            kind,
            id,
            request,
            method,
            message,
            verbatim_ok,
        } = msg;
        let revision = session.revision();
        let roots = self.roots_for(session, revision.as_ref(), roots);
        let evidence = Evidence::default();
        let tool = self
            .tool_calls
            .on_message(from, kind, request, &method, &message);
        let ctx = Ctx {
            from,
            kind,
            method: &method,
            tool: tool.as_deref(),
            request,
            id: id.as_ref(),
            roots: roots.as_deref(),
            roots_arc: roots.as_ref(),
            // When the original bytes could mean something else than the parsed value, the
            // checked value is always what gets forwarded.
            changed: std::cell::Cell::new(!verbatim_ok),
            revision,
            evidence: &evidence,
        };
        let action = match (from, kind, &*method) {
            (Side::Host, Kind::Request, _) => self.host_request(session, &ctx, message),
            (Side::Host, Kind::Notification, m::INITIALIZED | m::ROOTS_LIST_CHANGED) => {
                self.learner.host_notified(session, &method);
                Action::Forward
            }
            (Side::Host, Kind::Response, m::ROOTS_LIST) => {
                let message = self.learner.host_answer(session, message);
                self.done(message)
            }
            (Side::Host, Kind::Response, m::SAMPLING_CREATE_MESSAGE) => {
                self.sampling_result(&ctx, message)
            }
            (Side::Server, Kind::Request, m::ROOTS_LIST) => self.learner.server_asks(ctx.id),
            (Side::Server, Kind::Request, m::SAMPLING_CREATE_MESSAGE) => {
                self.sampling_request(&ctx, message)
            }
            (Side::Server, Kind::Notification, m::RESOURCES_UPDATED) => {
                self.subscriptions.updated(self, &ctx, message)
            }
            (Side::Server, Kind::Notification, m::TOOLS_LIST_CHANGED) => {
                self.tools.forget();
                self.server_notification(&ctx, message)
            }
            (Side::Server, Kind::Notification, _) => self.server_notification(&ctx, message),
            (Side::Server, Kind::ErrorResponse, _) => self.server_error(&ctx, message),
            (Side::Server, Kind::Request, m::ELICITATION_CREATE) => self.elicitation(&ctx, message),
            (Side::Server, Kind::Response, _) => {
                if &*method == m::INITIALIZE {
                    self.record_initialized(
                        &message["result"],
                        session.peers().client_info.as_ref(),
                    );
                }
                self.server_result(&ctx, message)
            }
            _ => Action::Forward,
        };
        Outcome {
            action,
            evidence: evidence.receipt(),
        }
    }

    /// A host request: the 2026-07-28 preamble every family shares, then its family's
    /// handler.
    pub(super) fn host_request(
        self: &Arc<Self>,
        session: &Arc<Session>,
        ctx: &Ctx<'_>,
        mut message: Value,
    ) -> Action {
        let Some(id) = ctx.id else {
            return Action::Forward;
        };
        if ctx.method == m::INITIALIZE {
            return match self.learner.initialize(session, &mut message) {
                Some(changed) if self.live().enforce => Action::Replace(changed),
                _ => Action::Forward,
            };
        }
        let mrtr = ctx.revision().has_input_required();
        // 2026-07-28: answers to input requests ride in the retried request; roots answers
        // rootfence owes the server on behalf of a host without roots go in first.
        if mrtr && self.learner.inject_roots(&mut message) {
            ctx.mark();
        }
        let mut roots_now: Option<Arc<RootSet>> = self.learner.tracker.known();
        if let Some(responses) = message
            .get_mut("params")
            .and_then(|p| p.get_mut("inputResponses"))
            .and_then(Value::as_object_mut)
        {
            if self.learner.input_responses(session, responses) {
                roots_now = self.learner.tracker.known();
                ctx.mark();
            }
            if responses.is_empty() {
                if let Some(p) = message.get_mut("params").and_then(Value::as_object_mut) {
                    p.remove("inputResponses");
                }
            }
        }
        let ctx = Ctx {
            from: ctx.from,
            kind: ctx.kind,
            method: ctx.method,
            tool: ctx.tool,
            request: ctx.request,
            id: ctx.id,
            roots: roots_now.as_deref(),
            roots_arc: roots_now.as_ref(),
            changed: std::cell::Cell::new(ctx.changed.get()),
            revision: ctx.revision.clone(),
            evidence: ctx.evidence,
        };
        // 2026-07-28 host that has roots we do not know yet: ask it, MRTR style.
        if mrtr
            && self.live().enforce
            && ctx.roots.is_none()
            && self.learner.host_has_roots() == Some(true)
            && uris::ASKS_FOR_ROOTS_FIRST.contains(&ctx.method)
        {
            return self.learner.mrtr_question(id);
        }
        match ctx.method {
            m::RESOURCES_READ => self.resources_read.request(self, &ctx, id, message),
            m::RESOURCES_SUBSCRIBE | m::RESOURCES_UNSUBSCRIBE => {
                self.subscriptions.subscribe(self, &ctx, id, message)
            }
            m::SUBSCRIPTIONS_LISTEN => self.subscriptions.listen(self, &ctx, message),
            m::COMPLETION_COMPLETE => self.completions.request(self, &ctx, id, message),
            m::TOOLS_CALL => self.tools.call(self, &ctx, id, message),
            _ => self.done_ctx(&ctx, message),
        }
    }
}
