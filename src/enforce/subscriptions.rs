//! Subscriptions: `resources/subscribe` and `unsubscribe` (up to 2025-11-25),
//! `subscriptions/listen` (2026-07-28), and the server's `notifications/resources/updated`,
//! forwarded only for what the host subscribed to.

use std::collections::HashSet;
use std::sync::Mutex;

use serde_json::Value;

use super::{Ctx, Inner};
use crate::audit;
use crate::jsonrpc::Id;
use crate::mcp::uris::Shape;
use crate::relay::Action;
use crate::uri::FileUri;

/// What the host subscribed to: canonical `file:` URIs, or other URIs verbatim.
#[derive(Debug, Default)]
pub(super) struct Subscriptions(Mutex<HashSet<String>>);

impl Subscriptions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        crate::relock(&self.0)
    }

    /// Whether an update for `raw` (canonical: `canonical`) is for something subscribed:
    /// the URI itself, or for a `file:` URI, one inside a subscribed `file:` URI.
    fn covers(&self, canonical: Option<&FileUri>, raw: &str) -> bool {
        let subs = self.lock();
        match canonical {
            Some(uri) => subs
                .iter()
                .any(|s| FileUri::parse(s).is_ok_and(|sub| uri.starts_with(&sub)) || s == raw),
            None => subs.contains(raw),
        }
    }
}

/// The family's handlers: each takes the enforcer's shared parts (`core`: the policy, the
/// audit log, the URI checks every family uses) and keeps the family's own state here.
impl Subscriptions {
    /// A host request of the family: `resources/subscribe` and `unsubscribe` (up to
    /// 2025-11-25), or `subscriptions/listen` (2026-07-28).
    /// Which one it is, the URI table says (`shape`).
    pub(super) fn request(
        &self,
        core: &Inner,
        ctx: &Ctx<'_>,
        id: &Id,
        shape: Shape,
        message: Value,
    ) -> Action {
        if shape == Shape::Listen {
            self.listen(core, ctx, message)
        } else {
            self.subscribe(core, ctx, id, shape, message)
        }
    }

    /// 2026-07-28 `subscriptions/listen`: a refused URI is taken out of the list; the kept
    /// ones are remembered as subscribed.
    fn listen(&self, core: &Inner, ctx: &Ctx<'_>, mut message: Value) -> Action {
        if let Some(list) = message.pointer_mut("/params/notifications/resourceSubscriptions") {
            let field = "params.notifications.resourceSubscriptions";
            self.lock().extend(core.filter_list(ctx, field, list));
        }
        core.done_ctx(ctx, message)
    }

    /// `resources/subscribe` and `unsubscribe`: the URI judged like a read's; the
    /// subscription is remembered under its canonical name.
    fn subscribe(
        &self,
        core: &Inner,
        ctx: &Ctx<'_>,
        id: &Id,
        shape: Shape,
        mut message: Value,
    ) -> Action {
        let c = match core.request_uri(ctx, id, &message) {
            Ok(c) => c,
            Err(action) => return action,
        };
        let key = c.canonical.as_ref().map_or_else(
            || super::text(&message["params"]["uri"]),
            |u| u.as_str().to_owned(),
        );
        if let Some(canonical) = &c.canonical {
            ctx.set_uri(&mut message["params"]["uri"], canonical.as_str());
        }
        if shape == Shape::Subscribe {
            self.lock().insert(key);
        } else {
            self.lock().remove(&key);
        }
        core.done_ctx(ctx, message)
    }

    /// `notifications/resources/updated`: forwarded only for an allowed URI the host
    /// subscribed to (or one inside a subscribed `file:` URI).
    pub(super) fn updated(&self, core: &Inner, ctx: &Ctx<'_>, message: Value) -> Action {
        let raw = super::text(&message["params"]["uri"]);
        let mut c = core.live().uri(&raw, ctx.roots);
        if c.allow && !self.covers(c.canonical.as_ref(), &raw) {
            c.allow = false;
            c.reason = "not_subscribed".into();
            c.allowed = None;
        }
        if core.refuses(ctx, "params.uri", &raw, &c, audit::Action::Dropped) {
            return Action::Drop;
        }
        // (In audit mode a refused URI is forwarded as sent: `done_ctx` forwards the original.)
        let mut message = message;
        if let Some(canonical) = &c.canonical {
            ctx.set_uri(&mut message["params"]["uri"], canonical.as_str());
        }
        core.done_ctx(ctx, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_update_is_covered_by_its_own_subscription_or_a_file_uri_that_contains_it() {
        let subs = Subscriptions::default();
        subs.lock()
            .extend(["file:///srv/root/dir".to_owned(), "mem://note".to_owned()]);
        let inside = FileUri::parse("file:///srv/root/dir/a.txt").unwrap();
        let beside = FileUri::parse("file:///srv/root/dir2/a.txt").unwrap();
        assert!(subs.covers(Some(&inside), "file:///srv/root/dir/a.txt"));
        assert!(!subs.covers(Some(&beside), "file:///srv/root/dir2/a.txt"));
        assert!(subs.covers(None, "mem://note"));
        assert!(!subs.covers(None, "mem://other"));
        subs.lock().remove("mem://note");
        assert!(!subs.covers(None, "mem://note"));
    }
}
