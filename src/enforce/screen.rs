//! The content tripwire on the relay's screen: a server message that holds text of a
//! denied file inside the roots (`crate::tripwire`) is redacted, or withheld, and audited.

use std::sync::Arc;

use serde_json::{Value, json};

use super::decide::Verdict;
use super::evidence::Outcome;
use super::{Ctx, Inner};
use crate::audit;
use crate::jsonrpc::error::DENIED;
use crate::jsonrpc::{Id, Kind};
use crate::relay::{Action, Side};
use crate::tripwire::{Fingerprints, Hit};
use crate::uri::FileUri;

impl Inner {
    /// The fingerprints of the denied files inside the roots the server can reach now: the
    /// operator roots (granted at launch) and the effective roots. Built on first use after
    /// each change of the roots (or waited for, when a build is under way), and built again
    /// when `refresh` (denied files created since).
    pub(super) fn fingerprints_with(&self, refresh: bool) -> Arc<Fingerprints> {
        let known = self.learner.tracker.known();
        if !refresh {
            let cached = crate::relock(&self.fingerprints);
            let same = match (&cached.0, &known) {
                (Some(None), None) => true,
                (Some(Some(a)), Some(b)) => Arc::ptr_eq(a, b),
                _ => false,
            };
            if same {
                return Arc::clone(&cached.1);
            }
        }
        let roots: Vec<(&cap_std::fs::Dir, &std::path::Path)> = (self.operator.set().roots())
            .iter()
            .chain(known.iter().flat_map(|k| k.roots()))
            .map(|r| (r.dir(), std::path::Path::new(r.real_uri().path())))
            .collect();
        let fresh = self.tripwire.for_roots(&roots, refresh);
        *crate::relock(&self.fingerprints) = (Some(known.clone()), Arc::clone(&fresh));
        fresh
    }

    /// A server message holds a fingerprint: audit it, and (enforcing) withhold it. A
    /// response becomes an error for the host (every request gets its one answer), a
    /// request from the server is refused to the server, a notification is dropped.
    pub(super) fn withhold(&self, ctx: &Ctx<'_>, hit: &Hit) -> Option<Action> {
        let (kind, method) = (ctx.kind, ctx.method);
        let (uri, what) = self.record_tripwire(ctx, hit, 1, false);
        if !self.live().enforce {
            return None;
        }
        let noun = match kind {
            Kind::Request => format!("`{method}` request"),
            Kind::Notification => format!("`{method}` notification"),
            Kind::Response | Kind::ErrorResponse => format!("answer to `{method}`"),
        };
        // An answer withheld is still an answer: the request was carried out, and the model
        // must not take the error for a failure and do it again (a write that happened).
        let done = if matches!(kind, Kind::Response | Kind::ErrorResponse) {
            " (the request itself was carried out; do not repeat it)"
        } else {
            ""
        };
        let message = format!(
            "rootfence: denied: the server's {noun} was withheld{done}: it holds text from {}, a \
             file the policy denies (tripwire); ask for something that does not include it",
            hit.file.display()
        );
        let data = json!({"uri": uri, "reason": "tripwire", "rule": what});
        let error = |id: &Id| super::error_reply(id, DENIED, message.clone(), Some(data.clone()));
        let action = match (kind, ctx.id) {
            (Kind::Notification, _) | (_, None) => Action::Drop,
            (Kind::Request, Some(id)) => Action::Reply(error(id)),
            (Kind::Response | Kind::ErrorResponse, Some(id)) => Action::Replace(error(id)),
        };
        // Like every denial, the withholding takes effect once its record is durable.
        let outcome = Outcome {
            action,
            evidence: ctx.evidence.receipt(),
        };
        Some(self.backlog.hold(self.audit.get(), Side::Server, outcome))
    }

    /// Logs, counts and audits a tripwire hit: `redacted` (`spans` secrets replaced in a
    /// message that goes on) or withheld, its record's receipt noted in `ctx`'s evidence.
    /// Returns the file's URI and the hit's description.
    pub(super) fn record_tripwire(
        &self,
        ctx: &Ctx<'_>,
        hit: &Hit,
        spans: usize,
        redacted: bool,
    ) -> (String, String) {
        let method = ctx.method;
        let uri = FileUri::from_path(&hit.file)
            .map(|u| u.as_str().to_owned())
            .unwrap_or_else(|_| hit.file.display().to_string());
        let mut what = hit.describe();
        if redacted {
            what.push_str(&format!("; {spans} span(s) redacted, the rest forwarded"));
            tracing::warn!("redacted a secret in a message from the server (`{method}`): {what}");
        } else {
            tracing::warn!("withheld a message from the server (`{method}`): it holds {what}");
        }
        let c = Verdict {
            rule: Some(what.as_str().into()),
            ..Verdict::deny("tripwire")
        };
        let on_deny = match ctx.kind {
            _ if redacted => audit::Action::Rewritten,
            Kind::Notification => audit::Action::Dropped,
            _ => audit::Action::AnsweredError,
        };
        self.record_decision(ctx, "message", &uri, None, &c, on_deny);
        (uri, what)
    }
}

/// The message with every fingerprint in its strings redacted, when that leaves none in it
/// (checked again on the bytes that will be sent), with what was redacted.
pub(super) fn redacted(fp: &Fingerprints, line: &[u8]) -> Option<(Value, Vec<Hit>)> {
    let mut message: Value = serde_json::from_slice(line).ok()?;
    let hits = fp.redact(&mut message);
    if hits.is_empty() {
        return None;
    }
    let bytes = serde_json::to_vec(&message).ok()?;
    fp.check(&bytes).is_none().then_some((message, hits))
}
