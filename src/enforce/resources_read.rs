//! `resources/read`, on the value path: the request's `params.uri` and the result's
//! `contents[]`, with the verdict of the request kept for its result (`read_verdicts`). The
//! text path of the same messages is `read_text.rs`; the `serve` and `verify` stances'
//! own reads are `read.rs`.

use std::sync::{Arc, Mutex, Weak};

use serde_json::Value;

use super::decide::Verdict;
use super::{Ctx, Inner, denial, error_reply, read, route};
use crate::audit;
use crate::jsonrpc::Id;
use crate::jsonrpc::error::INVALID_PARAMS;
use crate::policy::ReadStance;
use crate::relay::Action;
use crate::roots::RootSet;

/// Read verdicts kept for their results at most (more means results that never came).
const READ_VERDICTS: usize = 4096;

/// The verdicts of forwarded `resources/read` requests, by request id, with the root set
/// they were made under: a result item naming exactly the URI that was checked reuses its
/// verdict instead of resolving the same path again, but only while the roots are that same
/// set; after any change the result is judged again under the roots in force when it is
/// delivered (issue 28: a slow answer must not bring a removed root's content). The `Weak`
/// keeps the set's allocation, not its contents, so a new set can never share its address.
/// Bounded: cleared when it grows past [`READ_VERDICTS`]. Keyed with foldhash, seeded per
/// map: the host picks the ids, and the map is bounded, so SipHash's stronger guarantee is
/// not worth its cost on every read.
#[derive(Debug, Default)]
pub(super) struct ReadVerdicts(Mutex<Verdicts>);

type Verdicts = std::collections::HashMap<
    crate::jsonrpc::IdKey,
    (Verdict, Option<Weak<RootSet>>),
    foldhash::fast::RandomState,
>;

/// Whether a verdict made under `made_under` still holds under `now`: the same set, by
/// address (the `Weak` keeps the address from being reused).
fn same_set(made_under: Option<&Weak<RootSet>>, now: Option<&Arc<RootSet>>) -> bool {
    match (made_under, now) {
        (Some(w), Some(now)) => std::ptr::eq(w.as_ptr(), Arc::as_ptr(now)),
        (None, None) => true,
        _ => false,
    }
}

impl ReadVerdicts {
    fn lock(&self) -> std::sync::MutexGuard<'_, Verdicts> {
        crate::relock(&self.0)
    }

    /// Keeps the verdict of request `id`, made under `roots`.
    pub(super) fn keep(&self, id: &Id, verdict: Verdict, roots: Option<&Arc<RootSet>>) {
        let mut kept = self.lock();
        if kept.len() >= READ_VERDICTS {
            kept.clear();
        }
        kept.insert(id.key().clone(), (verdict, roots.map(Arc::downgrade)));
    }

    /// Takes the verdict of request `id` out, and returns it if it was made under `now`.
    pub(super) fn take(&self, id: &Id, now: Option<&Arc<RootSet>>) -> Option<Verdict> {
        let (verdict, made_under) = self.lock().remove(id.key())?;
        same_set(made_under.as_ref(), now).then_some(verdict)
    }

    /// Takes the verdict of request `id` out if it allowed exactly `uri` under `now` (the
    /// text path's one reuse); otherwise leaves it for the value path.
    pub(super) fn take_allowing(&self, id: &Id, uri: &str, now: Option<&Arc<RootSet>>) -> bool {
        let mut kept = self.lock();
        let Some((prior, made_under)) = kept.get(id.key()) else {
            return false;
        };
        let reusable = prior.allow
            && prior.canonical.as_ref().map(|u| u.as_str()) == Some(uri)
            && same_set(made_under.as_ref(), now);
        if reusable {
            kept.remove(id.key());
        }
        reusable
    }
}

impl Inner {
    /// The `params.uri` of a request, checked and audited: its verdict if allowed, or what
    /// to do with the request (its denial, or, in audit mode, forwarding it).
    pub(super) fn request_uri(
        &self,
        ctx: &Ctx<'_>,
        id: &Id,
        message: &Value,
    ) -> Result<Verdict, Action> {
        // `get` twice, not `pointer`: a JSON pointer is parsed (and allocates) on every call.
        let raw = message.get("params").and_then(|p| p.get("uri"));
        let Some(raw) = raw.and_then(Value::as_str) else {
            let what = format!("rootfence: `{}` needs a string `params.uri`", ctx.method);
            return Err(Action::Reply(error_reply(id, INVALID_PARAMS, what, None)));
        };
        let c = self.live().uri(raw, ctx.roots);
        let ok = self.audit_decision(ctx, "params.uri", raw, &c, audit::Action::AnsweredError);
        match (c.allow && ok, self.live().enforce) {
            (true, _) => Ok(c),
            (false, true) => Err(Action::Reply(denial(id, raw, &c))),
            (false, false) => Err(Action::Forward),
        }
    }
}

/// The `resources/read` family: its handlers (value path here, text path in `read_text.rs`)
/// and its state, the verdicts of forwarded requests kept for their results. Each handler
/// takes the enforcer's shared parts (`core`: the policy, the audit log, the checks every
/// family uses).
#[derive(Debug, Default)]
pub(super) struct ResourcesRead {
    pub(super) verdicts: ReadVerdicts,
}

impl ResourcesRead {
    /// A `resources/read` request: its URI judged, forwarded in canonical form (or, under
    /// the `serve` stance, answered from rootfence's own read), its verdict kept for the
    /// result.
    pub(super) fn request(
        &self,
        core: &Inner,
        ctx: &Ctx<'_>,
        id: &Id,
        mut message: Value,
    ) -> Action {
        let c = match core.request_uri(ctx, id, &message) {
            Ok(c) => c,
            Err(action) => return action,
        };
        if let Some(canonical) = &c.canonical {
            ctx.set_uri(&mut message["params"]["uri"], canonical.as_str());
            let live = core.live();
            if live.policy.resources().read == ReadStance::Serve
                && live.enforce
                && let (Some(roots), Some(allowed)) = (ctx.roots, c.allowed.as_deref())
            {
                let (reply, refused) = read::serve(
                    &live.policy,
                    live.checker.options(),
                    roots,
                    allowed,
                    canonical,
                    id,
                    ctx.revision(),
                );
                if let Some(refused) = refused {
                    // The file opened was refused when judged again: say so in the log.
                    let raw = canonical.as_str();
                    core.audit_decision(
                        ctx,
                        "params.uri",
                        raw,
                        &refused,
                        audit::Action::AnsweredError,
                    );
                }
                return Action::Reply(reply);
            }
        }
        self.verdicts.keep(id, c, ctx.roots_arc);
        core.done_ctx(ctx, message)
    }

    /// A `resources/read` result: each item judged (reusing the request's verdict while the
    /// roots are the same set), a refused one removed; none left gives the denial error.
    pub(super) fn result(&self, core: &Inner, ctx: &Ctx<'_>, mut message: Value) -> Action {
        // 2026-07-28: a read may come back `input_required` like a tool call.
        if let Some(result) = message.get_mut("result") {
            core.input_required(ctx, result);
        }
        let contents = match message
            .get_mut("result")
            .and_then(|r| r.get_mut("contents"))
        {
            None | Some(Value::Null) => return core.done_ctx(ctx, message),
            Some(Value::Array(contents)) => contents,
            Some(_) => {
                return if core.live().enforce {
                    core.refuse_result(ctx, "malformed_result")
                } else {
                    Action::Forward
                };
            }
        };
        if contents.is_empty() {
            return core.done_ctx(ctx, message);
        }
        // Made under the roots still in force, or judged again.
        let mut prior = ctx.id.and_then(|id| self.verdicts.take(id, ctx.roots_arc));
        let mut last_denied: Option<(String, Verdict)> = None;
        let mut kept = Vec::with_capacity(contents.len());
        for (i, mut item) in std::mem::take(contents).into_iter().enumerate() {
            let raw = super::text(&item["uri"]);
            // The item names exactly the URI checked on the way in: same verdict, and the
            // request's record is its record (one decision, not two).
            let reused = prior
                .as_ref()
                .is_some_and(|p| p.canonical.as_ref().is_some_and(|u| u.as_str() == raw));
            let mut c = prior
                .take_if(|_| reused)
                .unwrap_or_else(|| core.live().uri(&raw, ctx.roots));
            if c.allow
                && let Some(refusal) = read::content_refusal(&core.live().policy, &item)
            {
                c = refusal;
            }
            if c.allow
                && core.live().policy.resources().read == ReadStance::Verify
                && let (Some(roots), Some(allowed)) = (ctx.roots, c.allowed.as_deref())
            {
                let live = core.live();
                let opts = live.checker.options();
                if let Some(refusal) = read::verify(&live.policy, opts, roots, allowed, &item) {
                    c = refusal;
                }
            }
            // A reused verdict that still allows is already on record; anything that turned
            // it into a refusal is a new decision.
            let ok = (reused && c.allow)
                || core.audit_decision(
                    ctx,
                    &format!("result.contents[{i}].uri"),
                    &raw,
                    &c,
                    audit::Action::Filtered,
                );
            if c.allow && ok {
                if let Some(canonical) = &c.canonical {
                    ctx.set_uri(&mut item["uri"], canonical.as_str());
                }
                if let Some(obj) = item.as_object_mut() {
                    // Text and blob items have nothing to walk: no field name is built.
                    if Inner::needs_walk(obj, &["uri"]) {
                        core.walk_rest(ctx, &format!("result.contents[{i}]"), obj, &["uri"]);
                    }
                }
                kept.push(item);
            } else if core.live().enforce {
                ctx.mark();
                last_denied = Some((raw, c));
            } else {
                kept.push(item);
            }
        }
        *contents = kept;
        if contents.is_empty()
            && let (Some(id), Some((raw, c))) = (ctx.id, last_denied)
        {
            return Action::Replace(denial(id, &raw, &c));
        }
        if let Some(result) = message.get_mut("result").and_then(Value::as_object_mut) {
            let handled = route(ctx.from, ctx.kind, ctx.method);
            core.walk_rest(ctx, "result", result, &handled.result_keys);
        }
        core.done_ctx(ctx, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the text path's tests look at (`read_text/tests.rs`).
    impl ReadVerdicts {
        /// The verdict kept for request `id`, as (allow, canonical).
        pub(in crate::enforce) fn peek(&self, id: &Id) -> Option<(bool, Option<String>)> {
            self.lock()
                .get(id.key())
                .map(|(c, _)| (c.allow, c.canonical.as_ref().map(|u| u.as_str().to_owned())))
        }

        /// Forgets every verdict.
        pub(in crate::enforce) fn clear(&self) {
            self.lock().clear();
        }
    }
}
