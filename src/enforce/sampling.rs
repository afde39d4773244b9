//! Sampling: the server's `sampling/createMessage` requests and the host's answers, whose
//! content blocks are judged like a tool result's (rows of `crate::mcp::uris`).

use serde_json::{Value, json};

use super::{Ctx, Inner};
use crate::jsonrpc::error::DENIED;
use crate::relay::Action;

impl Inner {
    /// The host's answer to the server's `sampling/createMessage`: its `content` blocks are
    /// judged; a single block refused answers the server with the denial error.
    pub(super) fn sampling_result(&self, ctx: &Ctx<'_>, mut message: Value) -> Action {
        if let Some(content) = message.get_mut("result").and_then(|r| r.get_mut("content"))
            && !self.filter_content(ctx, "result.content", content)
            && content.is_object()
        {
            return self.deny_reply(ctx, "content_removed");
        }
        self.done_ctx(ctx, message)
    }

    /// The server's `sampling/createMessage`: its messages' blocks are judged, the rest of
    /// its `params` walked as free-form fields.
    pub(super) fn sampling_request(&self, ctx: &Ctx<'_>, mut message: Value) -> Action {
        if let Some(messages) = message.pointer_mut("/params/messages") {
            self.filter_messages(ctx, "params.messages", messages);
        }
        if let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) {
            self.walk_rest(ctx, "params", params, &["messages"]);
        }
        self.done_ctx(ctx, message)
    }

    /// Replaces the host's answer with a denial error for the server (no URI to name).
    fn deny_reply(&self, ctx: &Ctx<'_>, reason: &str) -> Action {
        match ctx.id {
            Some(id) => Action::Replace(json!({
                "jsonrpc": "2.0", "id": id.to_value(),
                "error": {"code": DENIED, "message": format!("rootfence: denied: {reason}"),
                          "data": {"uri": null, "reason": reason, "rule": null}}
            })),
            None => Action::Drop,
        }
    }
}
