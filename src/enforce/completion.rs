//! Completion: a `completion/complete` request's resource reference, and the values that
//! come back (each judged by the URI the template expands to with it; the result's other
//! fields are walked in `fields.rs`).

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{Map, Value, json};

use super::decide::Verdict;
use super::walk::local_url;
use super::{Ctx, Inner, denial};
use crate::audit;
use crate::jsonrpc::{Id, IdKey};
use crate::relay::Action;

/// Completion requests remembered at most (more means answers that never came).
const COMPLETIONS: usize = 1024;

/// The completion family: its handlers and its state, what a `completion/complete` of a
/// `file:` template completes (by request id: the template and the argument), to judge each
/// value that comes back by the URI it expands to. Handlers take the enforcer's shared parts
/// as `core` (the policy, the audit log, the checks every family uses).
#[derive(Debug, Default)]
pub(super) struct Completions {
    pending: Mutex<HashMap<IdKey, (String, String)>>,
}

impl Completions {
    /// `completion/complete` of a resource reference: the reference is judged (a template
    /// like a listed template), and remembered to judge the values that come back
    /// (`fields.rs`).
    pub(super) fn request(&self, core: &Inner, ctx: &Ctx<'_>, id: &Id, message: Value) -> Action {
        if message.pointer("/params/ref/type") == Some(&json!("ref/resource")) {
            let raw = super::text(&message["params"]["ref"]["uri"]);
            // A URI or a URI template (a reference may be either).
            let live = core.live();
            let c = if raw.contains('{') {
                live.template(&raw, ctx.roots)
            } else {
                live.uri(&raw, ctx.roots)
            };
            let on_deny = audit::Action::AnsweredError;
            if core.refuses(ctx, "params.ref.uri", &raw, &c, on_deny) {
                return Action::Reply(denial(id, &raw, &c));
            }
            self.remember(id, &message);
        }
        core.done_ctx(ctx, message)
    }

    /// Remembers what a `completion/complete` of a `file:` template completes.
    fn remember(&self, id: &Id, message: &Value) {
        let template = message.pointer("/params/ref/uri").and_then(Value::as_str);
        let arg = message
            .pointer("/params/argument/name")
            .and_then(Value::as_str);
        let (Some(template), Some(arg)) = (template.filter(|t| local_url(t)), arg) else {
            return;
        };
        let mut kept = crate::relock(&self.pending);
        if kept.len() >= COMPLETIONS {
            kept.clear();
        }
        kept.insert(id.key().clone(), (template.to_owned(), arg.to_owned()));
    }

    /// Completion values of a `file:` template: each value is judged by the URI the
    /// template expands to with it, and one that would leave the roots is removed (a
    /// server cannot list outside names through completion). Every expansion is checked
    /// again when it is read.
    pub(super) fn values(&self, core: &Inner, ctx: &Ctx<'_>, result: &mut Map<String, Value>) {
        let Some(id) = ctx.id else { return };
        let remembered = crate::relock(&self.pending).remove(id.key());
        let Some((template, arg)) = remembered else {
            return;
        };
        let Some(values) = result
            .get_mut("completion")
            .and_then(|c| c.get_mut("values"))
            .and_then(Value::as_array_mut)
        else {
            return;
        };
        ctx.retain(values, |i, v| {
            let field = format!("result.completion.values[{i}]");
            let Some(value) = v.as_str() else {
                let c = Verdict::deny("not_a_string");
                return core.keep_after(ctx, &field, &v.to_string(), &c);
            };
            let uri = super::fields::expand(&template, &arg, value);
            let c = core.live().uri(&uri, ctx.roots);
            core.keep_after(ctx, &field, &uri, &c)
        });
    }
}
