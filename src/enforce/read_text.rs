//! `resources/read` judged from its text (issue 14): the request and its result, in the
//! shape nearly every read has, without building a `serde_json::Value` of either.
//!
//! A read is the hot path of a resource server: its request holds one URI, and its result
//! one item naming that URI, with the file's text or base64 bytes, which can be megabytes.
//! The value path parses both whole (an ordered map per object, a copy of every string)
//! only to look at two strings and a length. Here they are not read again: the relay's strict
//! scan captured them (borrowed, in the same pass that checked the message, under
//! `page::RULES`: `jsonrpc::envelope::capture`, issue 25), and they are judged by the
//! same functions as the value path (`Checker::uri`, the read verdict kept by request id,
//! `read::item_refusal`), and when the value path would forward the message unchanged the
//! original bytes are forwarded (the relay's scan refused duplicate keys, invalid UTF-8,
//! lone surrogates and serde_json's private keys, so the bytes mean exactly what was
//! checked).
//!
//! Only what the value path would pass untouched, with no other field to walk, is taken (the
//! capture holds the request's `uri` and the result's item only in these shapes):
//!
//! - a request whose members are `jsonrpc`, `id`, `method` and `params`, whose `params`
//!   holds only a string `uri` that is allowed and already canonical (no `_meta`, no
//!   2026-07-28 `inputResponses`, not a stateless session, not the `serve` stance);
//! - a result whose members are `contents` (and a 2026-07-28 `resultType` of `"complete"`),
//!   holding exactly one item whose `uri` is a string equal to the canonical URI its request
//!   was allowed for, whose `mimeType`, `text` and `blob` are strings, and whose other
//!   members are scalars the field walk leaves alone (`name`, `title`, `size`: no `data`,
//!   no link key, no object such as `_meta` or `annotations`), within the policy's content
//!   limits, under the `forward` stance.
//!
//! Everything else is declined before anything is recorded, and takes the value path. A
//! decline is always safe; passing what the value path would change is the one thing this
//! module must never do, and its tests hold it to the value path's verdicts.

use super::{Ctx, Inner, read};
use crate::audit;
use crate::jsonrpc::Capture;
use crate::policy::ReadStance;
use crate::relay::Action;

impl super::resources_read::ResourcesRead {
    /// A host's `resources/read` request from its text; `None` declines it to the value
    /// path (see the module docs).
    pub(super) fn request_text(
        &self,
        core: &Inner,
        ctx: &Ctx<'_>,
        capture: &Capture<'_>,
    ) -> Option<Action> {
        let id = ctx.id?;
        if ctx.revision().has_input_required() {
            return None;
        }
        let live = core.live();
        if live.enforce && live.policy.resources().read == ReadStance::Serve {
            return None;
        }
        let raw = capture.uri.as_deref()?;
        let c = live.uri(raw, ctx.roots);
        if !c.allow || c.canonical.as_ref().is_some_and(|u| u.as_str() != raw) {
            return None;
        }
        if !core.audit_decision(ctx, "params.uri", raw, &c, audit::Action::AnsweredError) {
            // The record could not be written and the policy stops on that: the value path
            // would answer with the denial.
            return Some(if live.enforce {
                Action::Reply(super::denial(id, raw, &c))
            } else {
                Action::Forward
            });
        }
        self.verdicts.keep(id, c, ctx.roots_arc);
        Some(Action::Forward)
    }

    /// A server's `resources/read` result from its text; `None` declines it to the value
    /// path (see the module docs).
    pub(super) fn result_text(
        &self,
        core: &Inner,
        ctx: &Ctx<'_>,
        capture: &Capture<'_>,
    ) -> Option<Action> {
        let id = ctx.id?;
        let live = core.live();
        if live.policy.resources().read == ReadStance::Verify {
            return None;
        }
        let item = capture.item.as_ref()?;
        let uri = item.uri.as_deref()?;
        if read::item_refusal(
            &live.policy,
            item.mime_type.as_deref(),
            item.text.as_deref(),
            item.blob.as_deref(),
        )
        .is_some()
        {
            return None;
        }
        // The item names exactly the URI its request was allowed for: the request's record is
        // its record, as on the value path.
        // Anything else (another URI, a refusal, roots changed since the request): the value
        // path judges it again.
        self.verdicts
            .take_allowing(id, uri, ctx.roots_arc)
            .then_some(Action::Forward)
    }
}

#[cfg(test)]
mod tests;
