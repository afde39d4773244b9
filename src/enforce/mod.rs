//! The enforcement layer: the relay's interceptor that checks every URI crossing rootfence
//! against the effective roots and the policy, learns the host's roots, and audits every
//! decision. `docs/enforcement.md` is its contract; this module follows it field by field.
//!
//! Each handler works on the parsed message and returns the message it checked (forwarded as
//! exactly that value), an answer of rootfence's own, or a drop. In `mode = "audit"` every
//! decision is made and logged the same way, but the original message is forwarded.
//!
//! What the enforcer looks at, what waits for the roots, what has a text path and which
//! result keys a method's handler judges come from the one table of URI positions,
//! `crate::mcp::uris`; `dispatch.rs` hands each message to its method family's handler (the
//! files are listed there). This file holds the interceptor, the session state and the
//! helpers every family shares.
//!
//! A `file:` decision needs the roots. While rootfence is asking the host for them, messages
//! that carry URIs wait (deferred, so the pumps keep running and the host's answer can
//! arrive), for at most `roots.list_timeout_ms`; when nobody is asking, an unknown root set
//! denies at once.

mod completion;
mod decide;
mod dispatch;
mod evidence;
mod fields;
pub mod follow;
mod learn;
mod page;
mod paged;
mod read;
mod read_text;
mod recording;
mod requests;
mod resources_read;
pub mod roots;
mod sampling;
mod screen;
mod subscriptions;
#[cfg(test)]
mod testing;
mod tools;
mod walk;

use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::audit::{self, AuditUri, Auditor, Direction, DroppedRoot, Event, RpcId};
use crate::jsonrpc::error::DENIED;
use crate::jsonrpc::{Id, Kind};
use crate::mcp::{Revision, uris};
use crate::policy::{Mode, Policy};
use crate::relay::{
    Action, Intercepted, Interceptor, Offered, ProtocolError, Screened, Session, Side,
};
use crate::roots::{RootSet, RootSpec};
use crate::tripwire::{Fingerprints, Tripwire};

/// What a policy reload cannot change in a running session: derived from each setting's
/// declared reload behaviour (`policy::schema`).
pub use crate::policy::reload_deferred;
pub use decide::{Checker, Verdict};
pub use follow::{ReportSlot, ServerLauncher};
pub use paged::{PageCheck, PageChecks};

use follow::Follower;
use learn::Learner;
use roots::{OperatorRoots, RootsState};
use screen::redacted;

/// Called once the session is set up, before any message is relayed: opens the audit log
/// and hands it over, or gives the reason the session must not go on.
pub type StartHook = Box<dyn FnOnce(&Arc<Session>) -> Result<Started, String> + Send>;

/// What the start hook hands to the enforcer.
#[derive(Debug, Default)]
pub struct Started {
    /// The audit log's handle.
    pub auditor: Option<Auditor>,
}

/// How often the tripwire's fingerprints are built again during a session.
const TRIPWIRE_REFRESH: std::time::Duration = std::time::Duration::from_secs(30);

/// The fingerprints in use and the effective root set they were looked up for.
type FingerprintCache = (Option<Option<Arc<RootSet>>>, Arc<Fingerprints>);

/// The enforcement interceptor.
#[derive(Clone, Debug)]
pub struct Enforcer {
    inner: Arc<Inner>,
}

/// What a policy reload swaps: the policy and what is derived from it, read together
/// (one load per use, a few nanoseconds: `arc-swap`), so a decision never mixes two
/// policies' parts.
pub(crate) struct Live {
    pub(crate) policy: Arc<Policy>,
    pub(crate) enforce: bool,
    pub(crate) checker: Checker,
}

impl Live {
    fn new(policy: Arc<Policy>, checker: Checker) -> Live {
        Live {
            enforce: policy.mode() == Mode::Enforce,
            checker,
            policy,
        }
    }

    fn uri(&self, raw: &str, roots: Option<&RootSet>) -> Verdict {
        self.checker.uri(&self.policy, raw, roots)
    }

    fn page<'a>(&self, raws: &[&'a str], roots: Option<&RootSet>) -> PageChecks<'a> {
        self.checker.page(&self.policy, raws, roots)
    }

    fn path(&self, raw: &str, roots: Option<&RootSet>) -> Verdict {
        self.checker.path(&self.policy, raw, roots)
    }

    fn template(&self, raw: &str, roots: Option<&RootSet>) -> Verdict {
        walk::template(&self.checker, &self.policy, raw, roots)
    }
}

struct Inner {
    /// The policy in force (swapped by [`Enforcer::reload`]).
    live: arc_swap::ArcSwap<Live>,
    operator: Arc<OperatorRoots>,
    /// The roots: learning them from the host, and the server generations that follow them.
    learner: Arc<Learner>,
    audit: Recorder,
    start: Mutex<Option<StartHook>>,
    fatal: watch::Sender<Option<String>>,
    /// The actions waiting for their decisions' records, this session's own
    /// (`evidence.rs`).
    backlog: evidence::Backlog,
    /// The `resources/read` family, with the verdicts of forwarded requests kept for their
    /// results (`resources_read.rs`).
    resources_read: resources_read::ResourcesRead,
    /// The subscriptions family, with what the host subscribed to (`subscriptions.rs`).
    subscriptions: subscriptions::Subscriptions,
    /// Operator roots dropped at start, audited once the log is open.
    dropped_at_start: Mutex<Vec<DroppedRoot>>,
    /// The `tools/call` family, with what it learned about the server and its tools
    /// (`tools.rs`).
    tools: tools::Tools,
    /// The completion family, with the completions it waits for (`completion.rs`).
    completions: completion::Completions,
    /// The content tripwire (`src/tripwire/`): fingerprints of the denied files inside
    /// the roots the server can reach.
    tripwire: Tripwire,
    /// The fingerprints in use, and the effective root set they were looked up for (`None`
    /// while unknown; `Some(None)` before the first lookup). The set is kept alive, so the
    /// hot path can compare one pointer without another set ever taking its address.
    fingerprints: Mutex<FingerprintCache>,
    /// OpenTelemetry, when on: told every decision (see `recording.rs`).
    telemetry: OnceLock<crate::telemetry::Telemetry>,
    /// Start the first server generation when the relay starts, under the roots of a host
    /// without roots ([`Enforcer::prestarted`]).
    prestart: std::sync::atomic::AtomicBool,
    /// The tool of each `tools/call` in flight, until its answer (`requests.rs`).
    tool_calls: requests::ToolCalls,
    /// The subject every decision record names (`principal`): set when the session opens
    /// (`rootfence serve`) or from the host's `clientInfo` (stdio, as claimed).
    principal: OnceLock<String>,
    /// The whole principal of a pre-started session, given when a client took it
    /// ([`Enforcer::adopt_principal`]): written on its `initialized` record.
    adopted: OnceLock<crate::audit::Principal>,
}

/// The audit log, once open: shared by the enforcer's parts.
#[derive(Clone, Default, Debug)]
pub(crate) struct Recorder(Arc<OnceLock<Auditor>>);

impl Recorder {
    fn get(&self) -> Option<&Auditor> {
        self.0.get()
    }

    fn set(&self, auditor: Auditor) {
        let _ = self.0.set(auditor);
    }

    /// Writes one record (a failure is logged; decisions use their own path).
    pub(crate) fn record(&self, event: Event) {
        if let Some(Err(e)) = self.0.get().map(|auditor| auditor.record(event)) {
            tracing::error!("could not write an audit record: {e}");
        }
    }

    /// Writes one record and waits until it is on disk (synced when the policy says so).
    /// Blocks the thread: for synchronous callers only.
    fn record_blocking(&self, event: Event) {
        if let Some(Err(e)) = self.0.get().map(|auditor| auditor.record_blocking(event)) {
            tracing::error!("could not write an audit record: {e}");
        }
    }
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Enforcer")
            .field("enforce", &self.live().enforce)
            .field("roots", &self.learner.tracker.state())
            .finish_non_exhaustive()
    }
}

impl Enforcer {
    /// An enforcer for `policy` with the operator's roots (`--root` plus `roots.static`),
    /// and the roots taken from the server's command line (`roots.from_command`), used only
    /// when the host declares no roots and there are no operator roots.
    /// With a `launcher`, the enforcer starts the server itself once the roots to confine it
    /// to are known, and a new generation whenever they move (the relay then runs with
    /// [`crate::relay::RelayConfig::deferred`]). Returns the roots of either kind that were
    /// dropped (unopenable, or refused by the policy).
    pub fn with_command_roots(
        policy: Arc<Policy>,
        operator_roots: Vec<RootSpec>,
        command_roots: Vec<RootSpec>,
        launcher: Option<Arc<dyn ServerLauncher>>,
    ) -> (Enforcer, Vec<DroppedRoot>) {
        let (operator, mut dropped) = OperatorRoots::open(operator_roots, &policy);
        let (operator, more) = operator.with_command_roots(command_roots, &policy);
        dropped.extend(more);
        let operator = Arc::new(operator);
        let audit = Recorder::default();
        let fatal = watch::Sender::new(None);
        let follow = Follower::new(
            launcher,
            policy.sandbox().follow_roots,
            audit.clone(),
            fatal.clone(),
        );
        let learner = Learner::new(
            Arc::clone(&policy),
            Arc::clone(&operator),
            follow,
            audit.clone(),
            format!(
                "io.rootfence/roots-{:016x}",
                crate::relay::session::random_u64()
            ),
        );
        let inner = Inner {
            live: arc_swap::ArcSwap::from_pointee(Live::new(
                Arc::clone(&policy),
                Checker::new(&policy),
            )),
            operator,
            learner: Arc::new(learner),
            audit,
            start: Mutex::new(None),
            fatal,
            backlog: evidence::Backlog::default(),
            resources_read: resources_read::ResourcesRead::default(),
            subscriptions: subscriptions::Subscriptions::default(),
            dropped_at_start: Mutex::new(dropped.clone()),
            tools: tools::Tools::default(),
            completions: completion::Completions::default(),
            tripwire: Tripwire::new(&policy.resources().deny_globs),
            fingerprints: Mutex::new((None, Arc::new(Fingerprints::default()))),
            telemetry: OnceLock::new(),
            prestart: std::sync::atomic::AtomicBool::new(false),
            tool_calls: requests::ToolCalls::default(),
            principal: OnceLock::new(),
            adopted: OnceLock::new(),
        };
        (
            Enforcer {
                inner: Arc::new(inner),
            },
            dropped,
        )
    }

    /// Tells `telemetry` every decision (its spans carry them; see `crate::telemetry`).
    pub fn with_telemetry(self, telemetry: crate::telemetry::Telemetry) -> Enforcer {
        let _ = self.inner.telemetry.set(telemetry);
        self
    }

    /// Starts the first server generation as soon as the relay starts, confined to the roots
    /// a host without roots gets (the operator's), instead of waiting for the host: for a
    /// server pre-started before any client (`rootfence serve --session-pool`). Only sound
    /// when the client that takes the session declares no roots, so its roots, and the
    /// grants, are those same ones (the pool checks that); a client with roots would move
    /// the server to a new generation under its own grants. The `server_start` record's
    /// trigger is `pool`.
    pub fn prestarted(self) -> Enforcer {
        self.inner
            .prestart
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self
    }

    /// Names the principal the session acts for on every decision record (its `subject`);
    /// without it, a stdio session's principal is the host's `clientInfo`, as claimed.
    pub fn with_principal(self, subject: String) -> Enforcer {
        let _ = self.inner.principal.set(subject);
        self
    }

    /// Names the principal of a session that was started before anyone took it (`rootfence
    /// serve --session-pool`): decisions name its subject from now on, and the `initialized`
    /// record gives it whole (its `session_start` was written before it was known).
    pub fn adopt_principal(&self, who: crate::audit::Principal) {
        let _ = self.inner.principal.set(who.subject.clone());
        let _ = self.inner.adopted.set(who);
    }

    /// The relay observer for this enforcer's session: its telemetry, when on (set it as
    /// [`crate::relay::RelayConfig::observer`]).
    pub fn observer(&self) -> Option<Arc<dyn crate::relay::Observer>> {
        self.inner
            .telemetry
            .get()
            .map(|t| Arc::new(t.clone()) as Arc<dyn crate::relay::Observer>)
    }

    /// Sets the hook that runs once the server is running (see [`StartHook`]).
    pub fn with_start(self, hook: StartHook) -> Enforcer {
        *crate::relock(&self.inner.start) = Some(hook);
        self
    }

    /// The operator roots as opened (for the sandbox and the session record).
    pub fn operator_roots(&self) -> &RootSet {
        self.inner.operator.set()
    }

    /// The policy in force.
    pub fn policy(&self) -> Arc<Policy> {
        Arc::clone(&self.inner.live().policy)
    }

    /// Puts `policy` (already loaded and validated, as `Policy::load` does) in force for the
    /// decisions made from now on, and for the next effective roots computed from the
    /// host's roots. What the running session cannot change is not applied: see
    /// [`reload_deferred`] (the caller reports it). The audit record is the caller's, with
    /// [`Enforcer::record_durable_blocking`].
    pub fn reload(&self, policy: Arc<Policy>) {
        let inner = &self.inner;
        let checker = inner.live().checker.reloaded(&policy);
        inner.learner.reload(Arc::clone(&policy));
        inner.live.store(Arc::new(Live::new(policy, checker)));
    }

    /// Records `event` and waits until it is written (and synced where the policy says so),
    /// for an event whose record must exist before its effect, such as a policy reload.
    /// Blocks the thread: never call it from inside an async task.
    pub fn record_durable_blocking(&self, event: Event) {
        self.inner.audit.record_blocking(event);
    }
}

/// What the URI table (`crate::mcp::uris`) says of a message: whether the enforcer looks at
/// it, whether it waits for the roots, whether it has a text path, which result keys its
/// handler judges.
fn route(from: Side, kind: Kind, method: &str) -> &'static uris::Route {
    let sender = match from {
        Side::Host => uris::Peer::Host,
        Side::Server => uris::Peer::Server,
    };
    uris::route(sender, uris::Part::of(kind), method)
}

impl Interceptor for Enforcer {
    fn wants(&self, from: Side, kind: Kind, method: &str) -> bool {
        route(from, kind, method).intercepted
    }

    fn screen(
        &self,
        from: Side,
        kind: Kind,
        id: Option<&Id>,
        request: Option<u64>,
        method: &str,
        line: &[u8],
    ) -> Option<Screened> {
        if from != Side::Server {
            return None;
        }
        let inner = &self.inner;
        let fp = inner.fingerprints_with(false);
        let hit = fp.check(line)?;
        // A hit is recorded as any denial of a server message is (`screen.rs`).
        let evidence = evidence::Evidence::default();
        let ctx = Ctx {
            from,
            kind,
            method,
            tool: None,
            request,
            id,
            roots: None,
            roots_arc: None,
            changed: std::cell::Cell::new(false),
            revision: None,
            evidence: &evidence,
        };
        // The secret's spans are redacted when that leaves nothing of it (the rest of the
        // answer arrives, and what the server did is not hidden); otherwise the message
        // is withheld whole.
        if let Some((message, hits)) = redacted(&fp, line) {
            inner.record_tripwire(&ctx, &hits[0], hits.len(), true);
            if !inner.live().enforce {
                return None;
            }
            // Like every denial, the redaction takes effect once its record is durable: the
            // session's backlog holds it (and counts it against the server side's bound).
            let after = inner
                .backlog
                .wait(inner.audit.get(), from, evidence.receipt());
            return Some(Screened::Rewrite { message, after });
        }
        inner.withhold(&ctx, &hit).map(Screened::Act)
    }

    fn intercept(&self, session: &Arc<Session>, msg: Intercepted) -> Action {
        let inner = Arc::clone(&self.inner);
        let route = route(msg.from, msg.kind, &msg.method);
        if route.waits_for_roots
            && let RootsState::Unknown { asking: true } = inner.learner.tracker.state()
        {
            let session = Arc::clone(session);
            return Action::Defer(Box::pin(async move {
                let limit = inner.live().policy.roots().list_timeout;
                let roots = inner.learner.tracker.wait(limit).await;
                let from = msg.from;
                let outcome = inner.handle(&session, msg, route, roots);
                evidence::resolve(inner.backlog.hold(inner.audit.get(), from, outcome)).await
            }));
        }
        let roots = inner.learner.tracker.known();
        let from = msg.from;
        let outcome = inner.handle(session, msg, route, roots);
        inner.backlog.hold(inner.audit.get(), from, outcome)
    }

    fn intercept_text(&self, session: &Arc<Session>, msg: &Offered<'_>) -> Option<Action> {
        // The messages the URI table gives a text path: `resources/list` pages (`page.rs`),
        // `resources/read` requests and results (`read_text.rs`); only when the roots need
        // no waiting for.
        let route = route(msg.from, msg.kind, msg.method);
        if !route.text_path {
            return None;
        }
        let inner = &self.inner;
        if let RootsState::Unknown { asking: true } = inner.learner.tracker.state() {
            return None;
        }
        let revision = session.revision();
        let roots = inner.roots_for(session, revision.as_ref(), inner.learner.tracker.known());
        // No text path is a `tools/call`'s: no tool to name.
        let evidence = evidence::Evidence::default();
        let ctx = Ctx {
            from: msg.from,
            kind: msg.kind,
            method: msg.method,
            tool: None,
            request: msg.request,
            id: msg.id,
            roots: roots.as_deref(),
            roots_arc: roots.as_ref(),
            changed: std::cell::Cell::new(false),
            revision,
            evidence: &evidence,
        };
        let action = match (route.family, msg.from) {
            (uris::Family::List, _) => inner.list_page_text(&ctx, msg.text, msg.capture),
            (_, Side::Server) => inner.resources_read.result_text(inner, &ctx, msg.capture),
            _ => inner.resources_read.request_text(inner, &ctx, msg.capture),
        };
        let outcome = evidence::Outcome {
            action: action?,
            evidence: evidence.receipt(),
        };
        Some(inner.backlog.hold(inner.audit.get(), msg.from, outcome))
    }

    fn value_path(&self) -> Option<fn(Side, Kind, &str) -> bool> {
        Some(|from, kind, method| {
            let route = route(from, kind, method);
            route.intercepted && !route.text_path
        })
    }

    fn capture_rules(&self) -> Option<&'static crate::jsonrpc::Rules> {
        // What the text paths read is captured by the relay's scan, in its one pass.
        Some(&page::RULES)
    }

    fn backlog(&self, from: Side) -> Option<crate::relay::Drain> {
        let inner = &self.inner;
        inner.backlog.backpressure(inner.audit.get(), from)
    }

    fn unlaunched_host_message(&self, session: &Arc<Session>, method: &str) {
        self.inner.learner.first_host_message(session, method);
    }

    fn on_start(&self, session: &Arc<Session>) {
        let inner = &self.inner;
        let hook = crate::relock(&inner.start).take();
        if let Some(hook) = hook {
            match hook(session) {
                Ok(Started { auditor }) => {
                    if let Some(auditor) = auditor {
                        inner.audit.set(auditor.clone());
                        if inner.live().policy.audit().on_failure == audit::OnFailure::Stop {
                            let fatal = inner.fatal.clone();
                            tokio::spawn(async move {
                                let e = auditor.failure().await;
                                fatal.send_replace(Some(format!("the audit log failed: {e}")));
                            });
                        }
                    }
                }
                Err(reason) => {
                    inner.fatal.send_replace(Some(reason));
                }
            }
        }
        // The fingerprints follow the roots: built ahead, off the relay's thread, each
        // time they change (a message that arrives first waits for the build).
        // Every TRIPWIRE_REFRESH they are built again, so a denied file created during the
        // session (a new `.env`) is fingerprinted too.
        let mut changes = inner.learner.tracker.subscribe();
        let weak = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            loop {
                let refresh = tokio::select! {
                    changed = changes.changed() => {
                        if changed.is_err() {
                            break;
                        }
                        false
                    }
                    () = tokio::time::sleep(TRIPWIRE_REFRESH) => true,
                };
                let Some(inner) = weak.upgrade() else { break };
                let _ = tokio::task::spawn_blocking(move || inner.fingerprints_with(refresh)).await;
            }
        });
        let dropped = std::mem::take(&mut *crate::relock(&inner.dropped_at_start));
        if !dropped.is_empty() {
            inner.audit.record(Event::RootsUpdate(audit::RootsUpdate {
                trigger: "start".into(),
                dropped,
                effective: uris(inner.operator.set()),
                ..audit::RootsUpdate::default()
            }));
        }
        // A server that is not confined has no roots to wait for: it starts at once.
        let follow = &inner.learner.follow;
        if follow.launches() && !follow.waits_for_roots() {
            follow.launch_first(session, inner.operator.set(), "launch");
        } else if follow.launches() && inner.prestart.load(std::sync::atomic::Ordering::Relaxed) {
            follow.launch_first(session, inner.operator.without_host(), "pool");
        }
    }

    fn on_protocol_error(&self, error: &ProtocolError) {
        use audit::ProtocolErrorKind as K;
        let kind = match error.code {
            "bad_json" | "bad_utf8" => K::InvalidJson,
            "invalid_message" => K::InvalidMessage,
            "too_long" => K::Oversized,
            "unmatched_response" => K::UnmatchedResponse,
            "duplicate_id" => K::DuplicateId,
            _ => K::Other,
        };
        let sha256 = error.line.as_deref().map(crate::audit::chain::sha256_hex);
        self.inner
            .audit
            .record(Event::ProtocolError(audit::ProtocolError {
                direction: direction(error.from),
                kind,
                detail: format!("{}: {}", error.code, error.detail),
                len: error.len,
                sha256,
                id: error.id.as_ref().and_then(|i| RpcId::from_json(i.raw())),
            }));
    }

    fn fatal(&self) -> impl std::future::Future<Output = String> + Send + 'static {
        let mut rx = self.inner.fatal.subscribe();
        async move {
            let reason = rx
                .wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|r| r.clone());
            match reason {
                Some(reason) => reason,
                None => std::future::pending().await,
            }
        }
    }
}

fn direction(from: Side) -> Direction {
    match from {
        Side::Host => Direction::HostToServer,
        Side::Server => Direction::ServerToHost,
    }
}

/// The roots of `set` as the audit records name them.
fn uris(set: &RootSet) -> Vec<AuditUri> {
    set.roots()
        .iter()
        .map(|r| AuditUri::new(r.uri().as_str()))
        .collect()
}

/// The directories of `set`, as messages to the user name them.
fn paths(set: &RootSet) -> Vec<String> {
    set.roots()
        .iter()
        .map(|r| r.uri().path().to_owned())
        .collect()
}

/// The routing facts of the message being handled, for the audit records, and whether the
/// handler changed the message.
#[derive(Clone)]
struct Ctx<'a> {
    from: Side,
    kind: Kind,
    method: &'a str,
    /// The tool of a `tools/call` request or result, for its decisions' audit records.
    tool: Option<&'a str>,
    /// The session-unique key of the host request this message is or answers (the relay's,
    /// `Intercepted::request`), for its decisions' audit records.
    request: Option<u64>,
    id: Option<&'a Id>,
    roots: Option<&'a RootSet>,
    /// The same roots as shared: a verdict kept across the server's answer remembers which
    /// set it was made under (see `resources_read.rs`).
    roots_arc: Option<&'a Arc<RootSet>>,
    changed: std::cell::Cell<bool>,
    /// The revision the peers speak (`None` before they agreed on one): what differs between
    /// revisions is asked of it (`Ctx::revision`), never tested inline.
    revision: Option<Revision>,
    /// The records of the denials decided on this message, which must be durable before
    /// its action takes effect: returned with the action (`evidence.rs`), shared by every
    /// context derived from this one.
    evidence: &'a evidence::Evidence,
}

/// The revision a message is judged under before the peers agreed on one: the facts of the
/// oldest (no `resultType`, no `input_required`).
static UNNEGOTIATED: Revision = Revision::V2024_11_05;

impl Ctx<'_> {
    /// The revision the peers speak, for its facts ([`Revision`]'s methods).
    fn revision(&self) -> &Revision {
        self.revision.as_ref().unwrap_or(&UNNEGOTIATED)
    }

    /// The host request this message is or answers (the span its decisions belong to).
    fn host_request(&self) -> Option<&Id> {
        match (self.from, self.kind) {
            (Side::Host, Kind::Request) | (Side::Server, Kind::Response | Kind::ErrorResponse) => {
                self.id
            }
            _ => None,
        }
    }

    /// Notes that the message was changed (an item removed, a value rewritten).
    fn mark(&self) {
        self.changed.set(true);
    }

    /// Keeps the items `keep` (told each one's index) lets stay, noting a change when one
    /// goes.
    fn retain(&self, items: &mut Vec<Value>, mut keep: impl FnMut(usize, &mut Value) -> bool) {
        let mut index = 0;
        items.retain_mut(|item| {
            index += 1;
            let kept = keep(index - 1, item);
            if !kept {
                self.mark();
            }
            kept
        });
    }

    /// Writes a canonical URI into `slot`, noting a change only if it differs.
    fn set_uri(&self, slot: &mut Value, canonical: &str) {
        if slot.as_str() != Some(canonical) {
            *slot = json!(canonical);
            self.mark();
        }
    }
}

impl Inner {
    /// The policy in force, for one decision.
    fn live(&self) -> arc_swap::Guard<Arc<Live>> {
        self.live.load()
    }

    /// The roots a message is judged against: `roots`, or for a 2026-07-28 host that says
    /// (in every request's `_meta`, the relay keeps the latest) it has no roots, the operator
    /// roots, known at once, even for the result of a request rootfence did not look at (a
    /// first `resources/list`).
    /// `revision` is the session's (read once per message by the caller).
    fn roots_for(
        &self,
        session: &Arc<Session>,
        revision: Option<&Revision>,
        roots: Option<Arc<RootSet>>,
    ) -> Option<Arc<RootSet>> {
        let per_request = revision.is_some_and(Revision::capabilities_per_request);
        if per_request && self.learner.learn_stateless_host(session) {
            self.learner.tracker.known()
        } else {
            roots
        }
    }

    /// The checked message, forwarded as exactly that value (or, in audit mode, the
    /// original bytes).
    fn done(&self, message: Value) -> Action {
        if self.live().enforce {
            Action::Replace(message)
        } else {
            Action::Forward
        }
    }

    /// The checked message: when the check changed nothing, the original bytes are exactly the
    /// value that was checked (the scan refused duplicate keys, invalid UTF-8 and lone
    /// surrogates, and unchanged bytes keep every number's text), so they are forwarded as
    /// they came and a large payload is not serialized again.
    fn done_ctx(&self, ctx: &Ctx<'_>, message: Value) -> Action {
        if ctx.changed.get() {
            self.done(message)
        } else {
            Action::Forward
        }
    }
}

/// A string member's text; `""` when it is absent or not a string (no check allows that).
fn text(value: &Value) -> String {
    value.as_str().unwrap_or("").to_owned()
}

/// The error rootfence answers a denied request with.
pub fn denial(id: &Id, raw: &str, c: &Verdict) -> Value {
    let mut message = format!("rootfence: denied: {} ({})", shorten(raw, 200), c.reason);
    let mut data = json!({"uri": raw, "reason": c.reason, "rule": c.rule.as_deref()});
    if let Some(hint) = &c.hint {
        message.push_str(": ");
        message.push_str(hint);
        data["hint"] = json!(hint);
    }
    error_reply(id, DENIED, message, Some(data))
}

/// A JSON-RPC error answer to `id` of rootfence's own (`data` only when given).
fn error_reply(id: &Id, code: i64, message: String, data: Option<Value>) -> Value {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    json!({"jsonrpc": "2.0", "id": id.to_value(), "error": error})
}

/// A URI or a path for a message: whole when at most `max` bytes, else cut (at a character
/// boundary) with an ellipsis. A denial's full URI is in `data.uri`.
fn shorten(raw: &str, max: usize) -> String {
    if raw.len() <= max {
        return raw.to_owned();
    }
    let mut end = max;
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &raw[..end])
}
