//! Server results: each method's own items judged (resource lists, templates, tool and
//! prompt lists, tool, task and prompt results with their content blocks, 2026-07-28
//! `input_required` questions), then everything else walked as free-form fields, skipping the
//! keys the URI table says the method's handler judged.

use serde_json::Value;

use super::decide::Verdict;
use super::{Ctx, Inner, denial};
use crate::audit::{self, Event};
use crate::mcp::methods as m;
use crate::mcp::uris::{Family, Route};
use crate::relay::Action;

impl Inner {
    /// A server result: its family's own items judged (`route` is the message's, from the
    /// URI table), a result that is not the shape it must be refused whole, then the rest
    /// walked as free-form fields.
    pub(super) fn server_result(&self, ctx: &Ctx<'_>, route: &Route, mut message: Value) -> Action {
        let Some(result) = message.get_mut("result") else {
            return Action::Forward;
        };
        self.tools.learn_server_name(result);
        // Every checker returns false when a payload is not the shape it can check item by
        // item: then the whole result is refused rather than passed unchecked. The family is
        // the route's, so only a method a server-result row names reaches its family here.
        let shaped = match (route.family, ctx.method) {
            (Family::ResourcesRead, _) => return self.resources_read.result(self, ctx, message),
            (Family::List, _) => {
                self.filter_entries(ctx, "result.resources", result.get_mut("resources"), "uri")
            }
            (Family::Templates, _) => self.filter_entries(
                ctx,
                "result.resourceTemplates",
                result.get_mut("resourceTemplates"),
                "uriTemplate",
            ),
            (Family::Tools, m::TOOLS_LIST) => {
                self.tools.learn(result);
                self.filter_entries(ctx, "result.tools", result.get_mut("tools"), "")
            }
            (Family::Prompts, m::PROMPTS_LIST) => {
                self.filter_entries(ctx, "result.prompts", result.get_mut("prompts"), "")
            }
            // `tools/call`, `prompts/get`, `tasks/result`: content blocks and messages.
            (Family::Tools | Family::Prompts | Family::Tasks, _) => {
                self.input_required(ctx, result);
                let content_ok = match result.get_mut("content") {
                    // A result's content is a list of blocks; a single block is judged whole.
                    Some(content) => self.filter_content(ctx, "result.content", content),
                    None => true,
                };
                let messages_ok = match result.get_mut("messages") {
                    Some(messages) => self.filter_messages(ctx, "result.messages", messages),
                    None => true,
                };
                content_ok && messages_ok
            }
            // `serverInfo` (icons, `websiteUrl`) and 2026-07-28's `_meta` serverInfo are
            // walked with the rest of the result below, like any free-form result.
            _ => true,
        };
        if !shaped && self.live().enforce {
            return self.refuse_result(ctx, "malformed_result");
        }
        // Everything the method's own handler did not judge (`fields.rs`).
        if let Some(result) = message.get_mut("result") {
            self.walk_result(ctx, result, &route.result_keys);
        }
        self.done_ctx(ctx, message)
    }

    /// Replaces a result rootfence cannot pass with its denial error (the host's request
    /// still gets exactly one answer).
    pub(super) fn refuse_result(&self, ctx: &Ctx<'_>, reason: &'static str) -> Action {
        let c = Verdict::deny(reason);
        self.audit_decision(ctx, "result", "", &c, audit::Action::AnsweredError);
        match ctx.id {
            Some(id) => Action::Replace(denial(id, "", &c)),
            None => Action::Drop,
        }
    }

    pub(super) fn record_initialized(&self, result: &Value, client_info: Option<&Value>) {
        let peer = |v: Option<&Value>| {
            v.map(|info| audit::PeerInfo {
                name: info["name"].as_str().unwrap_or_default().to_owned(),
                version: info["version"].as_str().unwrap_or_default().to_owned(),
            })
        };
        let host = peer(client_info);
        // stdio: the host says who it is here; the claim becomes the session's principal
        // (a served session's was set, authenticated, when it opened).
        let principal = match &host {
            Some(h) if self.principal.get().is_none() => {
                let p = audit::Principal::claimed(h.clone());
                let _ = self.principal.set(p.subject.clone());
                Some(p)
            }
            // A pre-started `serve` session: its principal came when a client took it.
            _ => self.adopted.get().cloned(),
        };
        self.record(Event::Initialized(audit::Initialized {
            protocol_version: result["protocolVersion"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            host: host.clone(),
            server: peer(result.get("serverInfo")),
            principal,
        }));
    }

    /// 2026-07-28 `input_required`: note the server's `roots/list` input requests (their
    /// answers are filtered on the retry) and check the sampling ones.
    pub(super) fn input_required(&self, ctx: &Ctx<'_>, result: &mut Value) {
        if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
            return;
        }
        let mut refused = Vec::new();
        if let Some(requests) = result
            .get_mut("inputRequests")
            .and_then(Value::as_object_mut)
        {
            for (key, request) in requests.iter_mut() {
                if request.get("method").and_then(Value::as_str) == Some(m::SAMPLING_CREATE_MESSAGE)
                {
                    if let Some(messages) = request.pointer_mut("/params/messages") {
                        self.filter_messages(
                            ctx,
                            &format!("result.inputRequests.{key}.params.messages"),
                            messages,
                        );
                    }
                }
                if request.get("method").and_then(Value::as_str) == Some(m::ELICITATION_CREATE)
                    && !self.input_elicitation_ok(ctx, key, request)
                {
                    refused.push(key.clone());
                }
            }
            for key in &refused {
                requests.remove(key);
                ctx.mark();
            }
        }
        // A host without roots cannot answer the server's roots questions: rootfence does,
        // on the retry.
        if self.learner.note_input_required(result) {
            ctx.mark();
        }
    }
}
