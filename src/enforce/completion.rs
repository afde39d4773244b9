//! Completion: a `completion/complete` request's resource reference. The values that come
//! back are judged in `fields.rs`, by the URI the template expands to with each.

use serde_json::{Value, json};

use super::decide::Verdict;
use super::{Ctx, Inner, denial};
use crate::audit;
use crate::jsonrpc::Id;
use crate::relay::Action;

impl Inner {
    /// `completion/complete` of a resource reference: the reference is judged (a template
    /// like a listed template), and remembered to judge the values that come back
    /// (`fields.rs`).
    pub(super) fn completion_request(&self, ctx: &Ctx<'_>, id: &Id, message: Value) -> Action {
        if message.pointer("/params/ref/type") == Some(&json!("ref/resource")) {
            let raw = message
                .pointer("/params/ref/uri")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let c = self.template_or_uri(ctx, &raw);
            let ok = self.audit_decision(
                ctx,
                "params.ref.uri",
                &raw,
                &c,
                audit::Action::AnsweredError,
            );
            if !(c.allow && ok) && self.live().enforce {
                return Action::Reply(denial(id, &raw, &c));
            }
            self.remember_completion(id, &message);
        }
        self.done_ctx(ctx, message)
    }

    /// A URI or a URI template (completion references may be either).
    pub(super) fn template_or_uri(&self, ctx: &Ctx<'_>, raw: &str) -> Verdict {
        if raw.contains('{') {
            self.live().template(raw, ctx.roots)
        } else {
            self.live().uri(raw, ctx.roots)
        }
    }
}
