//! The enforcer's audit calls: one record per decision (or one per list page for its allowed
//! entries). A denial's record is queued like any other (no I/O in the handler) and its
//! receipt noted in the message's evidence (`Ctx::evidence`), which the dispatch returns
//! with the action: `evidence.rs` holds the action until the record is durable.
//!
//! # List pages
//!
//! With `audit.allowed = "summary"` (the default), the allowed entries of a
//! `resources/list` or `resources/templates/list` page are counted into one
//! `decision_summary` record (by reason, rule, directory and scheme) instead of a record
//! each; every denied entry still has its own `decision` record.

use std::collections::HashMap;
use std::sync::Arc;

use super::decide::Verdict;
use super::{Ctx, Inner, direction};
use crate::audit::event::{MAX_SUMMARY_DIRS, MAX_SUMMARY_KEYS};
use crate::audit::{self, AllowedRecords, AuditUri, Event, RpcId};

/// A deciding rule: its layer and its text.
type RuleKey = (Option<String>, Option<String>);

/// The allowed entries of one list page, counted.
#[derive(Debug, Default)]
pub(super) struct PageAudit {
    field: String,
    allowed: u64,
    denied: u64,
    reasons: Vec<(String, u64)>,
    rules: Vec<(RuleKey, u64)>,
    dirs: HashMap<String, u64>,
    /// The directory of the latest entries and how many (a page lists a directory's entries
    /// together, so most entries only compare their directory with this one).
    run: Option<(String, u64)>,
    /// The latest allowed entry's reason and rule, and where they were counted: the next
    /// entry decided alike (a page's entries share the very same texts) counts there without
    /// comparing with every key.
    last: Option<Counted>,
    dirs_omitted: u64,
    other: Vec<(String, u64)>,
}

/// An allowed entry's reason and rule (held, so that the same strings are recognised by
/// address), and their places in [`PageAudit`]'s `reasons` and `rules`.
#[derive(Debug)]
struct Counted {
    reason: std::borrow::Cow<'static, str>,
    layer: Option<Arc<str>>,
    rule: Option<Arc<str>>,
    at: (usize, usize),
}

impl Counted {
    /// Whether `c` was decided with the same reason and rule.
    fn same(&self, c: &Verdict) -> bool {
        fn text(a: &str, b: &str) -> bool {
            std::ptr::eq(a, b) || a == b
        }
        fn shared(a: &Option<Arc<str>>, b: &Option<Arc<str>>) -> bool {
            match (a, b) {
                (None, None) => true,
                (Some(a), Some(b)) => text(a, b),
                _ => false,
            }
        }
        text(&self.reason, &c.reason)
            && shared(&self.layer, &c.layer)
            && shared(&self.rule, &c.rule)
    }
}

impl PageAudit {
    /// Nothing counted yet, for the page's `field`.
    fn new(field: &str) -> PageAudit {
        PageAudit {
            field: field.to_owned(),
            ..PageAudit::default()
        }
    }

    /// Counts `n` entries allowed alike (`c`), the first being `raw` with the canonical form
    /// `canonical` (the same directory for all: `n` is more than 1 only for a run of
    /// siblings).
    fn allowed(&mut self, raw: &str, canonical: Option<&str>, c: &Verdict, n: u64) {
        self.allowed += n;
        match &self.last {
            Some(last) if last.same(c) => {
                let (reason, rule) = last.at;
                self.reasons[reason].1 += n;
                self.rules[rule].1 += n;
            }
            _ => self.count_rule(c, n),
        }
        self.count_place(raw, canonical, n);
    }

    /// Counts `n` under `c`'s reason and rule, and remembers where.
    fn count_rule(&mut self, c: &Verdict, n: u64) {
        let reason = bump(
            &mut self.reasons,
            n,
            |r| *r == *c.reason,
            || c.reason.to_string(),
            || MORE.into(),
        );
        let rule = bump(
            &mut self.rules,
            n,
            |(l, r)| l.as_deref() == c.layer.as_deref() && r.as_deref() == c.rule.as_deref(),
            || {
                let owned = |s: &Option<Arc<str>>| s.as_deref().map(str::to_owned);
                (owned(&c.layer), owned(&c.rule))
            },
            || (None, Some(MORE.into())),
        );
        self.last = Some(Counted {
            reason: c.reason.clone(),
            layer: c.layer.clone(),
            rule: c.rule.clone(),
            at: (reason, rule),
        });
    }

    /// Counts `n` entries under their directory (a `file:` URI's `canonical` form) or
    /// their scheme.
    fn count_place(&mut self, raw: &str, canonical: Option<&str>, n: u64) {
        match canonical {
            Some(s) => {
                // The directory holding the entry: everything before its last name.
                let dir = match crate::uri::last_slash(s) {
                    Some(i) if i > "file://".len() => &s[..i],
                    _ => "file:///",
                };
                match &mut self.run {
                    Some((d, count)) if d == dir => *count += n,
                    run => {
                        if let Some((d, count)) = run.replace((dir.to_owned(), n)) {
                            self.count_dir(d, count);
                        }
                    }
                }
            }
            None => {
                let scheme = crate::uri::scheme_of(raw);
                let scheme = scheme.as_deref().unwrap_or("(none)");
                bump(
                    &mut self.other,
                    n,
                    |s| s == scheme,
                    || scheme.to_owned(),
                    || MORE.into(),
                );
            }
        }
    }

    fn count_dir(&mut self, dir: String, n: u64) {
        if let Some(c) = self.dirs.get_mut(&dir) {
            *c += n;
        } else if self.dirs.len() < MAX_SUMMARY_DIRS {
            self.dirs.insert(dir, n);
        } else {
            self.dirs_omitted += n;
        }
    }

    fn into_event(mut self, ctx: &Ctx<'_>) -> Event {
        if let Some((d, n)) = self.run.take() {
            self.count_dir(d, n);
        }
        let text = |m: Vec<(String, u64)>| m.into_iter().collect();
        let mut dirs: Vec<audit::DirCount> = self
            .dirs
            .into_iter()
            .map(|(dir, count)| audit::DirCount {
                dir: AuditUri::from(dir),
                count,
            })
            .collect();
        dirs.sort_by(|a, b| a.dir.cmp(&b.dir));
        Event::DecisionSummary(audit::DecisionSummary {
            direction: direction(ctx.from),
            method: ctx.method.to_owned(),
            id: ctx.id.and_then(|i| RpcId::from_json(i.raw())),
            request: ctx.request,
            field: self.field,
            allowed: self.allowed,
            denied: self.denied,
            reasons: text(self.reasons),
            rules: self
                .rules
                .into_iter()
                .map(|((layer, rule), n)| {
                    let key = match (layer, rule) {
                        (Some(l), Some(r)) => format!("{l}: {r}"),
                        (None, Some(r)) => r,
                        (Some(l), None) => l,
                        (None, None) => "(no rule)".into(),
                    };
                    (key, n)
                })
                .collect(),
            dirs,
            dirs_omitted: self.dirs_omitted,
            other: text(self.other),
        })
    }
}

/// Counts `n` more under the key `is` recognises (made by `make` when new); past
/// [`MAX_SUMMARY_KEYS`] distinct keys, under a last key made by `overflow`. Returns where it
/// counted.
fn bump<K>(
    v: &mut Vec<(K, u64)>,
    n: u64,
    is: impl Fn(&K) -> bool,
    make: impl FnOnce() -> K,
    overflow: impl FnOnce() -> K,
) -> usize {
    if let Some(i) = v.iter().position(|(k, _)| is(k)) {
        v[i].1 += n;
        i
    } else if v.len() + 1 < MAX_SUMMARY_KEYS {
        v.push((make(), n));
        v.len() - 1
    } else if let Some((_, count)) = v.get_mut(MAX_SUMMARY_KEYS - 1) {
        *count += n;
        MAX_SUMMARY_KEYS - 1
    } else {
        v.push((overflow(), n));
        v.len() - 1
    }
}

/// The key other keys are counted under past [`MAX_SUMMARY_KEYS`].
const MORE: &str = "…";

impl Inner {
    /// Records one decision; returns false when the record could not be written and the
    /// policy says to stop rather than run unaudited (the caller then refuses).
    pub(super) fn audit_decision(
        &self,
        ctx: &Ctx<'_>,
        field: &str,
        raw: &str,
        c: &Verdict,
        on_deny: audit::Action,
    ) -> bool {
        let canonical = c.canonical.as_ref().map(|u| u.as_str());
        self.record_decision(ctx, field, raw, canonical, c, on_deny)
    }

    /// [`audit_decision`](Self::audit_decision) of `c` on a URI whose canonical form is
    /// `canonical` (`c`'s own may be a page's shared decision, which holds none).
    pub(super) fn record_decision(
        &self,
        ctx: &Ctx<'_>,
        field: &str,
        raw: &str,
        canonical: Option<&str>,
        c: &Verdict,
        on_deny: audit::Action,
    ) -> bool {
        self.note_decision(ctx, raw, c, 1);
        let Some(auditor) = self.audit.get() else {
            return true;
        };
        if c.allow && !self.live().policy.audit().log_allowed {
            auditor.note_allowed(1);
            return true;
        }
        let action = if c.allow || !self.live().enforce {
            audit::Action::Forwarded
        } else {
            on_deny
        };
        let id = ctx.id.and_then(|i| RpcId::from_json(i.raw()));
        let record = audit::DecisionRef {
            direction: direction(ctx.from),
            method: ctx.method,
            id: id.as_ref(),
            request: ctx.request,
            principal: self.principal.get().map(String::as_str),
            tool: ctx.tool,
            field: Some(field),
            uri: raw,
            canonical,
            decision: if c.allow {
                audit::Verdict::Allow
            } else {
                audit::Verdict::Deny
            },
            reason: &c.reason,
            layer: c.layer.as_deref(),
            rule: c.rule.as_deref(),
            root: c.root.as_ref().map(|u| u.as_str()),
            action,
        };
        match auditor.submit_decision(&record, false) {
            Ok(receipt) => {
                if !c.allow {
                    ctx.evidence.note(receipt);
                }
                true
            }
            Err(e) => {
                tracing::error!("could not audit a decision: {e}");
                self.live().policy.audit().on_failure != audit::OnFailure::Stop
            }
        }
    }

    /// Tells telemetry (when on) about `count` decisions like `c` on `raw`.
    fn note_decision(&self, ctx: &Ctx<'_>, raw: &str, c: &Verdict, count: u64) {
        if let Some(t) = self.telemetry.get() {
            t.decision(&crate::telemetry::DecisionNote {
                request: ctx.host_request(),
                from: ctx.from,
                method: ctx.method,
                allow: c.allow,
                reason: &c.reason,
                rule: c.rule.as_deref(),
                uri: raw,
                count,
            });
        }
    }

    /// A page whose allowed entries are to be counted into one record, or `None` when each
    /// entry is logged on its own (`audit.allowed = "each"`) or allowed ones are not logged.
    pub(super) fn page_audit(&self, field: &str) -> Option<PageAudit> {
        self.audit.get()?;
        let live = self.live();
        let settings = live.policy.audit();
        let summary = settings.log_allowed && settings.allowed == AllowedRecords::Summary;
        summary.then(|| PageAudit::new(field))
    }

    /// Entries of a list page decided alike (`c`): `raws`, the first of which has the
    /// canonical form `canonical` (with more than one, each one's canonical form is its own
    /// text, all in one directory: a run of siblings). Allowed ones are counted at once into
    /// `page` when the page is summarized, else each is recorded on its own, with the field
    /// `field(i)` for the `i`th. `kept` hears, for each entry in order, whether its record
    /// could be written (see [`audit_decision`](Self::audit_decision)).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn audit_entries(
        &self,
        ctx: &Ctx<'_>,
        page: Option<&mut PageAudit>,
        field: impl Fn(usize) -> String,
        raws: &[&str],
        canonical: Option<&str>,
        c: &Verdict,
        on_deny: audit::Action,
        mut kept: impl FnMut(bool),
    ) {
        let Some(first) = raws.first() else {
            return;
        };
        match page {
            Some(page) if c.allow => {
                // Telemetry counts these from the page's summary (`finish_page`).
                page.allowed(first, canonical, c, raws.len() as u64);
                raws.iter().for_each(|_| kept(true));
            }
            None if c.allow && !self.live().policy.audit().log_allowed => {
                // Counted, not logged: no field name to build.
                for raw in raws {
                    self.note_decision(ctx, raw, c, 1);
                }
                if let Some(auditor) = self.audit.get() {
                    auditor.note_allowed(raws.len() as u64);
                }
                raws.iter().for_each(|_| kept(true));
            }
            page => {
                if let Some(page) = page {
                    page.denied += raws.len() as u64;
                }
                for (i, raw) in raws.iter().enumerate() {
                    let canonical = if i == 0 { canonical } else { Some(*raw) };
                    kept(self.record_decision(ctx, &field(i), raw, canonical, c, on_deny));
                }
            }
        }
    }

    /// Records a page's summary, if it allowed anything.
    pub(super) fn finish_page(&self, ctx: &Ctx<'_>, page: Option<PageAudit>) {
        if let (Some(_), Some(page)) = (self.telemetry.get(), &page) {
            // The page's allowed entries, by reason (denied ones were noted one by one).
            for (reason, n) in &page.reasons {
                let c = Verdict {
                    allow: true,
                    reason: reason.clone().into(),
                    ..Verdict::default()
                };
                self.note_decision(ctx, "", &c, *n);
            }
        }
        if let Some(page) = page.filter(|p| p.allowed > 0) {
            self.audit.record(page.into_event(ctx));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::uri::FileUri;

    fn allowed_at(uri: &str) -> Verdict {
        Verdict {
            allow: true,
            reason: "default_allow".into(),
            canonical: FileUri::parse(uri).ok(),
            rule: Some("default".into()),
            ..Verdict::deny("")
        }
    }

    #[test]
    fn a_page_counts_its_entries_by_directory_reason_and_scheme() {
        let mut page = PageAudit::new("result.resources");
        for uri in [
            "file:///r/a/1",
            "file:///r/a/2",
            "file:///r/b/1",
            "file:///r/a/3",
            "file:///top",
        ] {
            page.allowed(uri, Some(uri), &allowed_at(uri), 1);
        }
        let mut web = allowed_at("https://x/y");
        web.canonical = None;
        page.allowed("https://x/y", None, &web, 1);
        if let Some((d, n)) = page.run.take() {
            page.count_dir(d, n);
        }
        let mut dirs: Vec<(String, u64)> = page.dirs.into_iter().collect();
        dirs.sort();
        assert_eq!(
            dirs,
            [
                ("file:///".to_owned(), 1),
                ("file:///r/a".to_owned(), 3),
                ("file:///r/b".to_owned(), 1)
            ]
        );
        assert_eq!(page.allowed, 6);
        assert_eq!(page.reasons, [("default_allow".to_owned(), 6)]);
        assert_eq!(page.other, [("https".to_owned(), 1)]);
    }

    /// Entries decided alike are counted where the previous one was (recognised by the
    /// shared texts' addresses); entries decided otherwise, by equal texts in other
    /// allocations, or by the same reason under another rule, are counted by their keys.
    #[test]
    fn a_page_counts_alternating_rules_and_reasons_exactly() {
        let mut page = PageAudit::new("result.resources");
        let by_default = allowed_at("file:///r/a");
        let mut by_rule = allowed_at("file:///r/b");
        by_rule.reason = "policy_allow".into();
        by_rule.rule = Some("allow **".into());
        by_rule.layer = Some("org.toml".into());
        // The same texts as `by_default`'s, in allocations of their own.
        let mut default_again = allowed_at("file:///r/c");
        default_again.reason = String::from("default_allow").into();
        // The default's reason under the other rule's text, without a layer.
        let mut mixed = allowed_at("file:///r/d");
        mixed.rule = Some("allow **".into());
        let order = [
            &by_default,
            &by_default,
            &by_rule,
            &by_default,
            &default_again,
            &mixed,
            &by_rule,
            &by_rule,
            &mixed,
            &by_default,
        ];
        for c in order {
            let uri = c.canonical.as_ref().unwrap().as_str();
            page.allowed(uri, Some(uri), c, 1);
        }
        assert_eq!(page.allowed, 10);
        assert_eq!(
            page.reasons,
            [
                ("default_allow".to_owned(), 7),
                ("policy_allow".to_owned(), 3)
            ]
        );
        let rule = |l: Option<&str>, r: &str| (l.map(str::to_owned), Some(r.to_owned()));
        assert_eq!(
            page.rules,
            [
                (rule(None, "default"), 5),
                (rule(Some("org.toml"), "allow **"), 3),
                (rule(None, "allow **"), 2),
            ]
        );
    }
}
