//! The one dispatch of the enforcement layer: a message the URI table (`crate::mcp::uris`)
//! routes to the enforcer goes to its method family's handler from here, chosen by the
//! family its route names ([`uris::Family`]), who sent it and what it is ([`handler`]). A
//! family tells its own messages apart by the route's shape (`uris::Shape`, a column of the
//! table: a list result, a content result, a subscription, ...), never by their method. Host
//! requests first pass the 2026-07-28 preamble (roots answers rootfence owes,
//! `inputResponses`, the MRTR roots question), which every family shares.
//!
//! To add a method: a row in the URI table (with its shape when its family must tell it
//! apart), the method in its family there (`uris::FAMILIES`), and its handling in the
//! family's handler.
//!
//! The families and their files: resources read (`resources_read.rs`, `read.rs`,
//! `read_text.rs`), list and templates (their entries `walk.rs`, from the row's shape;
//! `page.rs`, `paged.rs` for the list's text path), subscriptions (`subscriptions.rs`),
//! tools (`tools.rs`), prompts and tasks (their rows' shapes alone: list entries and content
//! blocks, `walk.rs`), sampling (`sampling.rs`), elicitation and free-form fields
//! (`fields.rs`, with the shared server result), completion (`completion.rs`), roots and
//! initialize (`learn.rs`, `roots.rs`).

use std::sync::Arc;

use serde_json::Value;

use super::evidence::{Evidence, Outcome};
use super::{Ctx, Inner};
use crate::jsonrpc::Kind;
use crate::mcp::uris::{self, Family, Route, Shape};
use crate::relay::{Action, Intercepted, Session, Side};
use crate::roots::RootSet;

/// Which handler takes a message (only messages the table intercepts get here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Handler {
    /// A host request: the shared preamble, then its family's ([`Inner::host_request`]).
    HostRequest,
    /// The host's roots may have changed: they are asked for again (`learn.rs`).
    RootsChanged,
    /// The host's roots (`learn.rs`).
    RootsAnswer,
    /// The server asks for the roots (`learn.rs`).
    RootsAsked,
    /// The host's sampling answer (`sampling.rs`).
    SamplingResult,
    /// The server's sampling request (`sampling.rs`).
    SamplingRequest,
    /// The server's elicitation request (`fields.rs`).
    Elicitation,
    /// A subscribed resource's update (`subscriptions.rs`).
    Updated,
    /// The tool list changed: what it taught is forgotten, then the notification is walked.
    ToolsChanged,
    /// Any other server notification, walked as free-form fields (`fields.rs`).
    Notification,
    /// A server error response (`fields.rs`).
    ServerError,
    /// What the server says it is, recorded (`learn.rs`), then judged as a result.
    Initialized,
    /// A server result: its family's items, then free-form fields (`fields.rs`).
    ServerResult,
    /// Nothing to judge.
    Forward,
}

/// The dispatch table: a message's handler, by its family, who sent it and what it is.
fn handler(family: Family, from: Side, kind: Kind) -> Handler {
    use Family as F;
    use Handler as H;
    use Kind::{ErrorResponse, Notification, Request, Response};
    use Side::{Host, Server};
    match (family, from, kind) {
        (_, Host, Request) => H::HostRequest,
        (F::Roots, Host, Notification) => H::RootsChanged,
        (F::Roots, Host, Response) => H::RootsAnswer,
        (F::Sampling, Host, Response) => H::SamplingResult,
        (F::Roots, Server, Request) => H::RootsAsked,
        (F::Sampling, Server, Request) => H::SamplingRequest,
        (F::Elicitation, Server, Request) => H::Elicitation,
        (F::Subscriptions, Server, Notification) => H::Updated,
        (F::Tools, Server, Notification) => H::ToolsChanged,
        (_, Server, Notification) => H::Notification,
        (_, Server, ErrorResponse) => H::ServerError,
        (F::Initialize, Server, Response) => H::Initialized,
        (_, Server, Response) => H::ServerResult,
        _ => H::Forward,
    }
}

impl Inner {
    /// Hands one intercepted message to its family's handler (`route` is the table's, looked
    /// up by the caller), judged under `roots` (or, for a 2026-07-28 host without roots, the
    /// operator roots).
    pub(super) fn handle(
        self: &Arc<Self>,
        session: &Arc<Session>,
        msg: Intercepted,
        route: &'static Route,
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
        let action = match handler(route.family, from, kind) {
            Handler::HostRequest => self.host_request(session, &ctx, route, message),
            Handler::RootsChanged => {
                self.learner.host_notified(session, &method);
                Action::Forward
            }
            Handler::RootsAnswer => {
                let message = self.learner.host_answer(session, message);
                self.done(message)
            }
            Handler::SamplingResult => self.sampling_result(&ctx, message),
            Handler::RootsAsked => self.learner.server_asks(ctx.id),
            Handler::SamplingRequest => self.sampling_request(&ctx, message),
            Handler::Elicitation => self.elicitation(&ctx, message),
            Handler::Updated => self.subscriptions.updated(self, &ctx, message),
            Handler::ToolsChanged => {
                self.tools.forget();
                self.server_notification(&ctx, message)
            }
            Handler::Notification => self.server_notification(&ctx, message),
            Handler::ServerError => self.server_error(&ctx, message),
            Handler::Initialized => {
                // `server/discover` (2026-07-28) is in the family, but only `initialize`
                // opens a session.
                if route.shape == Shape::Opens {
                    self.record_initialized(
                        &message["result"],
                        session.peers().client_info.as_ref(),
                    );
                }
                self.server_result(&ctx, route, message)
            }
            Handler::ServerResult => self.server_result(&ctx, route, message),
            Handler::Forward => Action::Forward,
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
        route: &Route,
        mut message: Value,
    ) -> Action {
        let Some(id) = ctx.id else {
            return Action::Forward;
        };
        if route.family == Family::Initialize {
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
            if responses.is_empty()
                && let Some(p) = message.get_mut("params").and_then(Value::as_object_mut)
            {
                p.remove("inputResponses");
            }
        }
        let ctx = Ctx {
            roots: roots_now.as_deref(),
            roots_arc: roots_now.as_ref(),
            ..ctx.clone()
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
        match route.family {
            Family::ResourcesRead => self.resources_read.request(self, &ctx, id, message),
            Family::Subscriptions => {
                self.subscriptions
                    .request(self, &ctx, id, route.shape, message)
            }
            Family::Completion => self.completions.request(self, &ctx, id, message),
            // The one host request of the family a row names is `tools/call`.
            Family::Tools => self.tools.call(self, &ctx, id, message),
            _ => self.done_ctx(&ctx, message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::methods as m;
    use crate::mcp::uris::{Part, Peer};

    /// The dispatch the family table replaced (the `match` on side, kind and method of
    /// `handle` before), kept as the specification: every message the table intercepts goes
    /// to the handler it went to.
    fn dispatched_before(from: Side, kind: Kind, method: &str) -> Handler {
        use Handler as H;
        use Kind::{ErrorResponse, Notification, Request, Response};
        use Side::{Host, Server};
        match (from, kind, method) {
            (Host, Request, _) => H::HostRequest,
            (Host, Notification, m::INITIALIZED | m::ROOTS_LIST_CHANGED) => H::RootsChanged,
            (Host, Response, m::ROOTS_LIST) => H::RootsAnswer,
            (Host, Response, m::SAMPLING_CREATE_MESSAGE) => H::SamplingResult,
            (Server, Request, m::ROOTS_LIST) => H::RootsAsked,
            (Server, Request, m::SAMPLING_CREATE_MESSAGE) => H::SamplingRequest,
            (Server, Notification, m::RESOURCES_UPDATED) => H::Updated,
            (Server, Notification, m::TOOLS_LIST_CHANGED) => H::ToolsChanged,
            (Server, Notification, _) => H::Notification,
            (Server, ErrorResponse, _) => H::ServerError,
            (Server, Request, m::ELICITATION_CREATE) => H::Elicitation,
            // `Initialized` records only an `initialize` result; `server/discover`'s is a
            // plain result, as before.
            (Server, Response, m::INITIALIZE | m::SERVER_DISCOVER) => H::Initialized,
            (Server, Response, _) => H::ServerResult,
            _ => H::Forward,
        }
    }

    /// The host request handler before, by method (`host_request`'s last `match`).
    fn requested_before(method: &str) -> Option<Family> {
        match method {
            m::INITIALIZE => Some(Family::Initialize),
            m::RESOURCES_READ => Some(Family::ResourcesRead),
            m::RESOURCES_SUBSCRIBE | m::RESOURCES_UNSUBSCRIBE | m::SUBSCRIPTIONS_LISTEN => {
                Some(Family::Subscriptions)
            }
            m::COMPLETION_COMPLETE => Some(Family::Completion),
            m::TOOLS_CALL => Some(Family::Tools),
            _ => None,
        }
    }

    #[test]
    fn every_intercepted_message_goes_to_the_handler_the_method_match_chose() {
        let sides = [(Side::Host, Peer::Host), (Side::Server, Peer::Server)];
        let kinds = [
            Kind::Request,
            Kind::Response,
            Kind::ErrorResponse,
            Kind::Notification,
        ];
        for method in m::ALL.iter().copied().chain(["x/unknown"]) {
            for (from, peer) in sides {
                for kind in kinds {
                    let route = uris::route(peer, Part::of(kind), method);
                    if !route.intercepted {
                        continue;
                    }
                    assert_eq!(
                        handler(route.family, from, kind),
                        dispatched_before(from, kind, method),
                        "{from:?} {kind:?} {method}"
                    );
                    if (from, kind) == (Side::Host, Kind::Request) {
                        let family = match route.family {
                            f @ (Family::Initialize
                            | Family::ResourcesRead
                            | Family::Subscriptions
                            | Family::Completion
                            | Family::Tools) => Some(f),
                            _ => None,
                        };
                        assert_eq!(family, requested_before(method), "{method}");
                    }
                }
            }
        }
    }
}
