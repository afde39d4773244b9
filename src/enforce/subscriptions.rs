//! Subscriptions: `resources/subscribe` and `unsubscribe` (up to 2025-11-25),
//! `subscriptions/listen` (2026-07-28), and the server's `notifications/resources/updated`,
//! forwarded only for what the host subscribed to.

use serde_json::Value;

use super::{Ctx, Inner};
use crate::audit;
use crate::jsonrpc::Id;
use crate::mcp::methods as m;
use crate::relay::Action;
use crate::uri::FileUri;

impl Inner {
    /// 2026-07-28 `subscriptions/listen`: a refused URI is taken out of the list; the kept
    /// ones are remembered as subscribed.
    pub(super) fn listen_request(&self, ctx: &Ctx<'_>, mut message: Value) -> Action {
        if let Some(list) = message.pointer_mut("/params/notifications/resourceSubscriptions") {
            let kept = self.filter_list(
                ctx,
                "params.notifications.resourceSubscriptions",
                list,
                |v| v.as_str().map(str::to_owned),
            );
            let mut subs = self.subscriptions.lock().unwrap_or_else(|e| e.into_inner());
            subs.extend(kept);
        }
        self.done_ctx(ctx, message)
    }

    /// `resources/subscribe` and `unsubscribe`: the URI judged like a read's; the
    /// subscription is remembered under its canonical name.
    pub(super) fn subscribe_request(&self, ctx: &Ctx<'_>, id: &Id, mut message: Value) -> Action {
        let c = match self.request_uri(ctx, id, &message) {
            Ok(c) => c,
            Err(action) => return action,
        };
        let raw = message["params"]["uri"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let key = c
            .canonical
            .as_ref()
            .map_or(raw.clone(), |u| u.as_str().to_owned());
        if let Some(canonical) = &c.canonical {
            ctx.set_uri(&mut message["params"]["uri"], canonical.as_str());
        }
        let mut subs = self.subscriptions.lock().unwrap_or_else(|e| e.into_inner());
        if ctx.method == m::RESOURCES_SUBSCRIBE {
            subs.insert(key);
        } else {
            subs.remove(&key);
        }
        drop(subs);
        self.done_ctx(ctx, message)
    }

    /// `notifications/resources/updated`: forwarded only for an allowed URI the host
    /// subscribed to (or one inside a subscribed `file:` URI).
    pub(super) fn updated(&self, ctx: &Ctx<'_>, message: Value) -> Action {
        let raw = message
            .pointer("/params/uri")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let mut c = self.live().uri(&raw, ctx.roots);
        if c.allow {
            let subs = self.subscriptions.lock().unwrap_or_else(|e| e.into_inner());
            let subscribed = match &c.canonical {
                Some(uri) => subs
                    .iter()
                    .any(|s| FileUri::parse(s).is_ok_and(|sub| uri.starts_with(&sub)) || s == &raw),
                None => subs.contains(&raw),
            };
            if !subscribed {
                c.allow = false;
                c.reason = "not_subscribed".into();
                c.allowed = None;
            }
        }
        let ok = self.audit_decision(ctx, "params.uri", &raw, &c, audit::Action::Dropped);
        if !(c.allow && ok) {
            return if self.live().enforce {
                Action::Drop
            } else {
                Action::Forward
            };
        }
        let mut message = message;
        if let Some(canonical) = &c.canonical {
            ctx.set_uri(&mut message["params"]["uri"], canonical.as_str());
        }
        self.done_ctx(ctx, message)
    }
}
