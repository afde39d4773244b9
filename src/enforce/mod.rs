//! The enforcement layer: the relay's interceptor that checks every URI crossing rootfence
//! against the effective roots and the policy, learns the host's roots, and audits every
//! decision. `docs/enforcement.md` is its contract; this module follows it field by field.
//!
//! Each handler works on the parsed message and returns the message it checked (forwarded as
//! exactly that value), an answer of rootfence's own, or a drop. In `mode = "audit"` every
//! decision is made and logged the same way, but the original message is forwarded.
//!
//! A `file:` decision needs the roots. While rootfence is asking the host for them, messages
//! that carry URIs wait (deferred, so the pumps keep running and the host's answer can
//! arrive), for at most `roots.list_timeout_ms`; when nobody is asking, an unknown root set
//! denies at once.

mod decide;
mod fields;
pub mod follow;
mod learn;
mod page;
mod paged;
mod read;
mod read_text;
mod recording;
pub mod roots;
#[cfg(test)]
mod testing;
mod tools;
mod walk;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::audit::{self, AuditUri, Auditor, Direction, DroppedRoot, Event, RpcId};
use crate::jsonrpc::error::{DENIED, INVALID_PARAMS};
use crate::jsonrpc::{Id, Kind};
use crate::mcp::methods as m;
use crate::policy::{Mode, Policy, ReadStance};
use crate::relay::{
    Action, Intercepted, Interceptor, Offered, ProtocolError, Screened, Session, Side,
};
use crate::roots::{RootSet, RootSpec};
use crate::tripwire::{Fingerprints, Hit, Tripwire};
use crate::uri::FileUri;

pub use decide::{Checked, Checker, rule_text};
pub use follow::{ReportSlot, ServerLauncher};
pub use paged::{PageCheck, PageChecks};

use follow::Follower;
use learn::Learner;
use roots::{OperatorRoots, RootsState};

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

/// Read verdicts kept for their results at most (more means results that never came).
const READ_VERDICTS: usize = 4096;

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

    fn uri(&self, raw: &str, roots: Option<&RootSet>) -> Checked {
        self.checker.uri(&self.policy, raw, roots)
    }

    fn uris<'a>(
        &self,
        raws: impl IntoIterator<Item = &'a str>,
        roots: Option<&RootSet>,
    ) -> Vec<Checked> {
        self.checker.uris(&self.policy, raws, roots)
    }

    fn page<'a>(&self, raws: &[&'a str], roots: Option<&RootSet>) -> PageChecks<'a> {
        self.checker.page(&self.policy, raws, roots)
    }

    fn path(&self, raw: &str, roots: Option<&RootSet>) -> Checked {
        self.checker.path(&self.policy, raw, roots)
    }

    fn template(&self, raw: &str, roots: Option<&RootSet>) -> Checked {
        walk::template(&self.checker, &self.policy, raw, roots)
    }

    fn verify(
        &self,
        roots: &RootSet,
        allowed: &crate::roots::Allowed,
        item: &Value,
    ) -> Option<Checked> {
        read::verify(&self.policy, self.checker.options(), roots, allowed, item)
    }
}

/// A read request's verdict and the root set it was made under, by request id.
type ReadVerdicts = std::collections::HashMap<
    crate::jsonrpc::IdKey,
    (Checked, Option<std::sync::Weak<RootSet>>),
    foldhash::fast::RandomState,
>;

struct Inner {
    /// The policy in force (swapped by [`Enforcer::reload`]).
    live: arc_swap::ArcSwap<Live>,
    operator: Arc<OperatorRoots>,
    /// The roots: learning them from the host, and the server generations that follow them.
    learner: Arc<Learner>,
    audit: Recorder,
    start: Mutex<Option<StartHook>>,
    fatal: watch::Sender<Option<String>>,
    /// The verdicts of forwarded `resources/read` requests, by request id, with the root set
    /// they were made under: a result item naming exactly the URI that was checked reuses
    /// its verdict instead of resolving the same path again, but only while the roots are
    /// that same set; after any change the result is judged again under the roots in force
    /// when it is delivered (issue 28: a slow answer must not bring a removed root's
    /// content). The `Weak` keeps the set's allocation, not its contents, so a new set can
    /// never share its address. Bounded: cleared when it grows past [`READ_VERDICTS`]. Keyed
    /// with foldhash, seeded per map: the host picks the ids, and the map is bounded, so
    /// SipHash's stronger guarantee is not worth its cost on every read.
    read_verdicts: Mutex<ReadVerdicts>,
    /// What the host subscribed to: canonical `file:` URIs, or other URIs verbatim.
    subscriptions: Mutex<HashSet<String>>,
    /// Operator roots dropped at start, audited once the log is open.
    dropped_at_start: Mutex<Vec<DroppedRoot>>,
    /// The server's `serverInfo.name`, once it gave one (see `tools.rs`).
    server_name: OnceLock<String>,
    /// What the server's `tools/list` results taught about its tools' path arguments
    /// (`crate::toolargs`; see `tools.rs`).
    tool_plans: Mutex<crate::toolargs::Learned>,
    /// What the field handlers remember (see `fields.rs`).
    fields: fields::FieldState,
    /// The content tripwire (`src/tripwire/`): fingerprints of the denied files inside
    /// the roots the server can reach.
    tripwire: Tripwire,
    /// The fingerprints in use, and the effective root set they were looked up for (`None`
    /// while unknown; `Some(None)` before the first lookup). The set is kept alive, so the
    /// hot path can compare one pointer without another set ever taking its address.
    fingerprints: Mutex<FingerprintCache>,
    /// OpenTelemetry, when on: told every decision (see `recording.rs`).
    telemetry: OnceLock<crate::telemetry::Telemetry>,
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
        if let Some(auditor) = self.0.get() {
            if let Err(e) = auditor.record(event) {
                tracing::error!("could not write an audit record: {e}");
            }
        }
    }

    /// Writes one record and waits until it is on disk (synced when the policy says so).
    /// Blocks the thread: for synchronous callers only.
    fn record_blocking(&self, event: Event) {
        if let Some(auditor) = self.0.get() {
            if let Err(e) = auditor.record_blocking(event) {
                tracing::error!("could not write an audit record: {e}");
            }
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
    /// An enforcer for `policy` with the operator's roots (`--root` plus `roots.static`).
    /// With a `launcher`, the enforcer starts the server itself once the roots to confine it
    /// to are known, and a new generation whenever they move (the relay then runs with
    /// [`crate::relay::RelayConfig::deferred`]). Returns the operator roots that were dropped
    /// (unopenable, or refused by the policy).
    pub fn new(
        policy: Arc<Policy>,
        operator_roots: Vec<RootSpec>,
        launcher: Option<Arc<dyn ServerLauncher>>,
    ) -> (Enforcer, Vec<DroppedRoot>) {
        Enforcer::with_command_roots(policy, operator_roots, Vec::new(), launcher)
    }

    /// [`Enforcer::new`], with the roots taken from the server's command line
    /// (`roots.from_command`): used only when the host declares no roots and there are no
    /// operator roots. The dropped roots returned include those of `command_roots`.
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
            format!("io.rootfence/roots-{:016x}", random_u64()),
        );
        let policy_deny_globs = policy.resources().deny_globs.clone();
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
            read_verdicts: Mutex::default(),
            subscriptions: Mutex::default(),
            dropped_at_start: Mutex::new(dropped.clone()),
            server_name: OnceLock::new(),
            tool_plans: Mutex::default(),
            fields: fields::FieldState::default(),
            tripwire: Tripwire::new(&policy_deny_globs),
            fingerprints: Mutex::new((None, Arc::new(Fingerprints::default()))),
            telemetry: OnceLock::new(),
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
        *self.inner.start.lock().unwrap_or_else(|e| e.into_inner()) = Some(hook);
        self
    }

    /// The operator roots as opened (for the sandbox and the session record).
    pub fn operator_roots(&self) -> &RootSet {
        self.inner.operator.set()
    }

    /// The roots as they stand now (`None` while unknown).
    pub fn effective_roots(&self) -> Option<Arc<RootSet>> {
        self.inner.learner.tracker.known()
    }

    /// The policy in force.
    pub fn policy(&self) -> Arc<Policy> {
        Arc::clone(&self.inner.live().policy)
    }

    /// Puts `policy` (already loaded and validated, as `Policy::load` does) in force for the
    /// decisions made from now on, and for the next effective roots computed from the
    /// host's roots. What the running session cannot change is not applied: see
    /// [`reload_deferred`] (the caller reports it). The audit record is the caller's, with
    /// [`Enforcer::record`].
    pub fn reload(&self, policy: Arc<Policy>) {
        let inner = &self.inner;
        let checker = inner.live().checker.reloaded(&policy);
        inner.learner.reload(Arc::clone(&policy));
        inner.live.store(Arc::new(Live::new(policy, checker)));
    }

    /// Writes one audit record (once the log is open; before that it is dropped).
    pub fn record(&self, event: Event) {
        self.inner.audit.record(event);
    }

    /// Records `event` and waits until it is written (and synced where the policy says so),
    /// for an event whose record must exist before its effect, such as a policy reload.
    /// Blocks the thread: never call it from inside an async task.
    pub fn record_durable_blocking(&self, event: Event) {
        self.inner.audit.record_blocking(event);
    }
}

/// The settings of `new` that differ from `old` but stay as they were for this session,
/// in words: the audit log's settings and the sandbox of the running server are fixed when
/// the session starts; the static roots, the roots timeouts and the sandbox when rootfence
/// starts again. Everything else applies to the next decision.
pub fn reload_deferred(old: &Policy, new: &Policy) -> Vec<String> {
    // Derived from each setting's declared reload behaviour (`policy::schema`).
    crate::policy::reload_deferred(old, new)
}

/// The message with every fingerprint in its strings redacted, when that leaves none in it
/// (checked again on the bytes that will be sent), with what was redacted.
fn redacted(fp: &Fingerprints, line: &[u8]) -> Option<(Value, Vec<Hit>)> {
    let mut message: Value = serde_json::from_slice(line).ok()?;
    let hits = fp.redact(&mut message);
    if hits.is_empty() {
        return None;
    }
    let bytes = serde_json::to_vec(&message).ok()?;
    fp.check(&bytes).is_none().then_some((message, hits))
}

/// What the enforcer wants to see: a static table, cheap on the hot path.
fn wanted(from: Side, kind: Kind, method: &str) -> bool {
    match (from, kind) {
        (Side::Host, Kind::Request) => matches!(
            method,
            m::INITIALIZE
                | m::RESOURCES_READ
                | m::RESOURCES_SUBSCRIBE
                | m::RESOURCES_UNSUBSCRIBE
                | m::SUBSCRIPTIONS_LISTEN
                | m::COMPLETION_COMPLETE
                | m::TOOLS_CALL
                | m::PROMPTS_GET
        ),
        (Side::Host, Kind::Notification) => {
            matches!(method, m::INITIALIZED | m::ROOTS_LIST_CHANGED)
        }
        (Side::Host, Kind::Response) => {
            matches!(method, m::ROOTS_LIST | m::SAMPLING_CREATE_MESSAGE)
        }
        (Side::Server, Kind::Request) => matches!(
            method,
            m::ROOTS_LIST | m::SAMPLING_CREATE_MESSAGE | m::ELICITATION_CREATE
        ),
        // Everything the server sends the host may carry a URI somewhere (`_meta`,
        // `error.data`, log data, ...): see `fields.rs`.
        (Side::Server, Kind::Notification | Kind::Response | Kind::ErrorResponse) => true,
        _ => false,
    }
}

/// Messages whose handling decides URIs, and so must wait for the roots while rootfence is
/// asking for them. (The roots answers themselves must never wait.)
fn needs_roots(msg: &Intercepted) -> bool {
    !matches!(
        &*msg.method,
        m::INITIALIZE | m::INITIALIZED | m::ROOTS_LIST | m::ROOTS_LIST_CHANGED | m::SERVER_DISCOVER
    )
}

impl Interceptor for Enforcer {
    fn wants(&self, from: Side, kind: Kind, method: &str) -> bool {
        wanted(from, kind, method)
    }

    fn screen(
        &self,
        from: Side,
        kind: Kind,
        id: Option<&Id>,
        method: &str,
        line: &[u8],
    ) -> Option<Screened> {
        if from != Side::Server {
            return None;
        }
        let fp = self.inner.fingerprints();
        let hit = fp.check(line)?;
        // The secret's spans are redacted when that leaves nothing of it (the rest of the
        // answer arrives, and what the server did is not hidden); otherwise the message
        // is withheld whole.
        if let Some((message, hits)) = redacted(&fp, line) {
            self.inner
                .record_tripwire(kind, id, method, &hits[0], hits.len(), true);
            return self
                .inner
                .live()
                .enforce
                .then_some(Screened::Rewrite(message));
        }
        self.inner
            .withhold(kind, id, method, &hit)
            .map(Screened::Act)
    }

    fn intercept(&self, session: &Arc<Session>, msg: Intercepted) -> Action {
        let inner = Arc::clone(&self.inner);
        if needs_roots(&msg) {
            if let RootsState::Unknown { asking: true } = inner.learner.tracker.state() {
                let session = Arc::clone(session);
                return Action::Defer(Box::pin(async move {
                    let limit = inner.live().policy.roots().list_timeout;
                    let roots = inner.learner.tracker.wait(limit).await;
                    recording::start_handling();
                    let action = inner.handle(&session, msg, roots);
                    recording::resolve(inner.hold_for_denials(action)).await
                }));
            }
        }
        let roots = inner.learner.tracker.known();
        recording::start_handling();
        let action = inner.handle(session, msg, roots);
        inner.hold_for_denials(action)
    }

    fn intercept_text(&self, session: &Arc<Session>, msg: &Offered<'_>) -> Option<Action> {
        // `resources/list` pages (`page.rs`) and `resources/read` requests and results
        // (`read_text.rs`) have a text path, and only when the roots need no waiting for.
        let route = (msg.from, msg.kind, msg.method);
        if !matches!(
            route,
            (
                Side::Server,
                Kind::Response,
                m::RESOURCES_LIST | m::RESOURCES_READ
            ) | (Side::Host, Kind::Request, m::RESOURCES_READ)
        ) {
            return None;
        }
        let inner = &self.inner;
        if let RootsState::Unknown { asking: true } = inner.learner.tracker.state() {
            return None;
        }
        let roots = inner.roots_for(session, inner.learner.tracker.known());
        let ctx = Ctx {
            from: msg.from,
            kind: msg.kind,
            method: msg.method,
            tool: None,
            id: msg.id,
            roots: roots.as_deref(),
            roots_arc: roots.as_ref(),
            changed: std::cell::Cell::new(false),
            stateless: session.revision().is_some_and(|r| r.is_stateless()),
        };
        recording::start_handling();
        let action = match route {
            (Side::Server, _, m::RESOURCES_LIST) => inner.list_page_text(&ctx, msg.text),
            (Side::Server, _, _) => inner.read_result_text(&ctx, msg.text),
            _ => inner.read_request_text(&ctx, msg.text),
        }?;
        Some(inner.hold_for_denials(action))
    }

    fn unlaunched_host_message(&self, session: &Arc<Session>, method: &str) {
        self.inner.learner.first_host_message(session, method);
    }

    fn on_start(&self, session: &Arc<Session>) {
        let inner = &self.inner;
        let hook = inner.start.lock().unwrap_or_else(|e| e.into_inner()).take();
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
        let dropped = std::mem::take(
            &mut *inner
                .dropped_at_start
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        );
        if !dropped.is_empty() {
            inner.audit.record(Event::RootsUpdate(audit::RootsUpdate {
                trigger: "start".into(),
                received: Vec::new(),
                dropped,
                narrowed: Vec::new(),
                effective: uris(inner.operator.set()),
                outside_sandbox: Vec::new(),
            }));
        }
        // A server that is not confined has no roots to wait for: it starts at once.
        let follow = &inner.learner.follow;
        if follow.launches() && !follow.waits_for_roots() {
            follow.launch_first(session, inner.operator.set(), "launch");
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
        let sha256 = error.line.as_ref().map(|l| {
            use sha2::Digest;
            sha2::Sha256::digest(l)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        });
        self.inner
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
            let reason = match rx.wait_for(Option::is_some).await {
                Ok(reason) => (*reason).clone(),
                Err(_) => None,
            };
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

fn uris(set: &RootSet) -> Vec<AuditUri> {
    set.roots()
        .iter()
        .map(|r| AuditUri::new(r.uri().as_str()))
        .collect()
}

/// The routing facts of the message being handled, for the audit records, and whether the
/// handler changed the message.
struct Ctx<'a> {
    from: Side,
    kind: Kind,
    method: &'a str,
    /// The tool of a `tools/call` request, for its decisions' audit records.
    tool: Option<&'a str>,
    id: Option<&'a Id>,
    roots: Option<&'a RootSet>,
    /// The same roots as shared: a verdict kept across the server's answer remembers which
    /// set it was made under (see `read_verdicts`).
    roots_arc: Option<&'a Arc<RootSet>>,
    changed: std::cell::Cell<bool>,
    /// The peers speak 2026-07-28 or later (results carry `resultType`, not-found is -32602).
    stateless: bool,
}

impl Ctx<'_> {
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
    fn roots_for(
        &self,
        session: &Arc<Session>,
        roots: Option<Arc<RootSet>>,
    ) -> Option<Arc<RootSet>> {
        let stateless = session.revision().is_some_and(|r| r.is_stateless());
        if stateless && self.learner.learn_stateless_host(session) {
            self.learner.tracker.known()
        } else {
            roots
        }
    }

    fn handle(
        self: &Arc<Self>,
        session: &Arc<Session>,
        msg: Intercepted,
        roots: Option<Arc<RootSet>>,
    ) -> Action {
        let Intercepted {
            from,
            kind,
            id,
            method,
            message,
            verbatim_ok,
        } = msg;
        let stateless = session.revision().is_some_and(|r| r.is_stateless());
        let roots = self.roots_for(session, roots);
        let ctx = Ctx {
            from,
            kind,
            method: &method,
            tool: None,
            id: id.as_ref(),
            roots: roots.as_deref(),
            roots_arc: roots.as_ref(),
            // When the original bytes could mean something else than the parsed value, the
            // checked value is always what gets forwarded.
            changed: std::cell::Cell::new(!verbatim_ok),
            stateless,
        };
        match (from, kind, &*method) {
            (Side::Host, Kind::Request, _) => self.host_request(session, &ctx, message),
            (Side::Host, Kind::Notification, m::INITIALIZED | m::ROOTS_LIST_CHANGED) => {
                self.learner.host_notified(session, &method);
                Action::Forward
            }
            (Side::Host, Kind::Response, m::ROOTS_LIST) => {
                let message = self.learner.host_answer(session, message);
                self.done(message)
            }
            (Side::Host, Kind::Response, m::SAMPLING_CREATE_MESSAGE) => {
                let mut message = message;
                let before = message["result"]["content"].clone();
                if let Some(content) = message.get_mut("result").and_then(|r| r.get_mut("content"))
                {
                    if !self.filter_content(&ctx, "result.content", content) && content.is_object()
                    {
                        return self.deny_reply(&ctx, &before, "content_removed");
                    }
                }
                self.done_ctx(&ctx, message)
            }
            (Side::Server, Kind::Request, m::ROOTS_LIST) => self.learner.server_asks(ctx.id),
            (Side::Server, Kind::Request, m::SAMPLING_CREATE_MESSAGE) => {
                let mut message = message;
                if let Some(messages) = message.pointer_mut("/params/messages") {
                    self.filter_messages(&ctx, "params.messages", messages);
                }
                if let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) {
                    self.walk_rest(&ctx, "params", params, &["messages"]);
                }
                self.done_ctx(&ctx, message)
            }
            (Side::Server, Kind::Notification, m::RESOURCES_UPDATED) => self.updated(&ctx, message),
            (Side::Server, Kind::Notification, m::TOOLS_LIST_CHANGED) => {
                self.forget_tools();
                self.server_notification(&ctx, message)
            }
            (Side::Server, Kind::Notification, _) => self.server_notification(&ctx, message),
            (Side::Server, Kind::ErrorResponse, _) => self.server_error(&ctx, message),
            (Side::Server, Kind::Request, m::ELICITATION_CREATE) => self.elicitation(&ctx, message),
            (Side::Server, Kind::Response, _) => {
                if &*method == m::INITIALIZE {
                    self.record_initialized(
                        &message["result"],
                        session.peers().client_info.as_ref(),
                    );
                }
                self.server_result(&ctx, message)
            }
            _ => Action::Forward,
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

    // ---- content tripwire ---------------------------------------------------------------------

    /// The fingerprints of the denied files inside the roots the server can reach now: the
    /// operator roots (granted at launch) and the effective roots. Built on first use after
    /// each change of the roots (or waited for, when a build is under way).
    fn fingerprints(&self) -> Arc<Fingerprints> {
        self.fingerprints_with(false)
    }

    /// [`Inner::fingerprints`], built again when `refresh` (denied files created since).
    fn fingerprints_with(&self, refresh: bool) -> Arc<Fingerprints> {
        let known = self.learner.tracker.known();
        if !refresh {
            let cached = self.fingerprints.lock().unwrap_or_else(|e| e.into_inner());
            let same = match (&cached.0, &known) {
                (Some(None), None) => true,
                (Some(Some(a)), Some(b)) => Arc::ptr_eq(a, b),
                _ => false,
            };
            if same {
                return Arc::clone(&cached.1);
            }
        }
        let reals: Vec<(&cap_std::fs::Dir, std::path::PathBuf)> = self
            .operator
            .set()
            .roots()
            .iter()
            .chain(known.iter().flat_map(|k| k.roots()))
            .map(|r| (r.dir(), std::path::PathBuf::from(r.real_uri().path())))
            .collect();
        let roots: Vec<(&cap_std::fs::Dir, &std::path::Path)> =
            reals.iter().map(|(d, p)| (*d, p.as_path())).collect();
        let fresh = self.tripwire.for_roots(&roots, refresh);
        drop(roots);
        *self.fingerprints.lock().unwrap_or_else(|e| e.into_inner()) =
            (Some(known.clone()), Arc::clone(&fresh));
        fresh
    }

    /// A server message holds a fingerprint: audit it, and (enforcing) withhold it. A
    /// response becomes an error for the host (every request gets its one answer), a
    /// request from the server is refused to the server, a notification is dropped.
    fn withhold(&self, kind: Kind, id: Option<&Id>, method: &str, hit: &Hit) -> Option<Action> {
        let (uri, what) = self.record_tripwire(kind, id, method, hit, 1, false);
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
        let error = |id: &Id| {
            json!({
                "jsonrpc": "2.0",
                "id": id.to_value(),
                "error": {
                    "code": DENIED,
                    "message": format!(
                        "rootfence: denied: the server's {noun} was withheld{done}: it holds \
                         text from {}, a file the policy denies (tripwire); ask for something \
                         that does not include it",
                        hit.file.display()
                    ),
                    "data": {"uri": uri, "reason": "tripwire", "rule": what},
                }
            })
        };
        match (kind, id) {
            (Kind::Notification, _) | (_, None) => Some(Action::Drop),
            (Kind::Request, Some(id)) => Some(Action::Reply(error(id))),
            (Kind::Response | Kind::ErrorResponse, Some(id)) => Some(Action::Replace(error(id))),
        }
    }

    /// Logs, counts and audits a tripwire hit: `redacted` (`spans` secrets replaced in a
    /// message that goes on) or withheld. Returns the file's URI and the hit's description.
    fn record_tripwire(
        &self,
        kind: Kind,
        id: Option<&Id>,
        method: &str,
        hit: &Hit,
        spans: usize,
        redacted: bool,
    ) -> (String, String) {
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
        if let Some(t) = self.telemetry.get() {
            t.decision(&crate::telemetry::DecisionNote {
                request: id.filter(|_| matches!(kind, Kind::Response | Kind::ErrorResponse)),
                from: Side::Server,
                method,
                allow: false,
                reason: "tripwire",
                rule: Some(&what),
                uri: &uri,
                count: 1,
            });
        }
        let action = match (self.live().enforce, kind) {
            (false, _) => audit::Action::Forwarded,
            (true, _) if redacted => audit::Action::Rewritten,
            (true, Kind::Notification) => audit::Action::Dropped,
            (true, _) => audit::Action::AnsweredError,
        };
        self.record(Event::Decision(audit::Decision {
            direction: Direction::ServerToHost,
            method: method.to_owned(),
            id: id.and_then(|i| RpcId::from_json(i.raw())),
            tool: None,
            field: Some("message".into()),
            uri: AuditUri::new(&uri),
            canonical: None,
            decision: audit::Verdict::Deny,
            reason: "tripwire".into(),
            layer: None,
            rule: Some(what.clone()),
            root: None,
            action,
        }));
        (uri, what)
    }

    // ---- host requests ----------------------------------------------------------------------

    fn host_request(
        self: &Arc<Self>,
        session: &Arc<Session>,
        ctx: &Ctx<'_>,
        mut message: Value,
    ) -> Action {
        let Some(id) = ctx.id else {
            return Action::Forward;
        };
        if ctx.method == m::INITIALIZE {
            return match self.learner.initialize(session, &mut message) {
                Some(changed) if self.live().enforce => Action::Replace(changed),
                _ => Action::Forward,
            };
        }
        let stateless = ctx.stateless;
        // 2026-07-28: answers to input requests ride in the retried request; roots answers
        // rootfence owes the server on behalf of a host without roots go in first.
        if stateless && self.learner.inject_roots(&mut message) {
            ctx.mark();
        }
        let mut roots_now: Option<Arc<RootSet>> = self.learner.tracker.known();
        if let Some(responses) = message
            .get_mut("params")
            .and_then(|p| p.get_mut("inputResponses"))
            .and_then(Value::as_object_mut)
        {
            if self.learner.input_responses(session, responses) {
                roots_now = self.learner.tracker.known();
                ctx.mark();
            }
            if responses.is_empty() {
                if let Some(p) = message.get_mut("params").and_then(Value::as_object_mut) {
                    p.remove("inputResponses");
                }
            }
        }
        let ctx = Ctx {
            from: ctx.from,
            kind: ctx.kind,
            method: ctx.method,
            tool: ctx.tool,
            id: ctx.id,
            roots: roots_now.as_deref(),
            roots_arc: roots_now.as_ref(),
            changed: std::cell::Cell::new(ctx.changed.get()),
            stateless: stateless || ctx.stateless,
        };
        // 2026-07-28 host that has roots we do not know yet: ask it, MRTR style.
        if stateless
            && self.live().enforce
            && ctx.roots.is_none()
            && self.learner.host_has_roots() == Some(true)
            && matches!(
                ctx.method,
                m::TOOLS_CALL | m::PROMPTS_GET | m::RESOURCES_READ
            )
        {
            return self.learner.mrtr_question(id);
        }
        match ctx.method {
            m::RESOURCES_READ => self.read_request(&ctx, id, message),
            m::RESOURCES_SUBSCRIBE | m::RESOURCES_UNSUBSCRIBE => {
                self.subscribe_request(&ctx, id, message)
            }
            m::SUBSCRIPTIONS_LISTEN => {
                if let Some(list) =
                    message.pointer_mut("/params/notifications/resourceSubscriptions")
                {
                    let kept = self.filter_list(
                        &ctx,
                        "params.notifications.resourceSubscriptions",
                        list,
                        |v| v.as_str().map(str::to_owned),
                    );
                    let mut subs = self.subscriptions.lock().unwrap_or_else(|e| e.into_inner());
                    subs.extend(kept);
                }
                self.done_ctx(&ctx, message)
            }
            m::COMPLETION_COMPLETE => {
                if message.pointer("/params/ref/type") == Some(&json!("ref/resource")) {
                    let raw = message
                        .pointer("/params/ref/uri")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    let c = self.template_or_uri(&ctx, &raw);
                    let ok = self.audit_decision(
                        &ctx,
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
                self.done_ctx(&ctx, message)
            }
            m::TOOLS_CALL => self.tools_call(&ctx, id, message),
            _ => self.done_ctx(&ctx, message),
        }
    }

    /// The `params.uri` of a request, checked and audited: its verdict if allowed, or what
    /// to do with the request (its denial, or, in audit mode, forwarding it).
    fn request_uri(&self, ctx: &Ctx<'_>, id: &Id, message: &Value) -> Result<Checked, Action> {
        // `get` twice, not `pointer`: a JSON pointer is parsed (and allocates) on every call.
        let raw = message.get("params").and_then(|p| p.get("uri"));
        let Some(raw) = raw.and_then(Value::as_str) else {
            let what = format!("`{}` needs a string `params.uri`", ctx.method);
            return Err(Action::Reply(invalid_params(id, &what)));
        };
        let c = self.live().uri(raw, ctx.roots);
        let ok = self.audit_decision(ctx, "params.uri", raw, &c, audit::Action::AnsweredError);
        match (c.allow && ok, self.live().enforce) {
            (true, _) => Ok(c),
            (false, true) => Err(Action::Reply(denial(id, raw, &c))),
            (false, false) => Err(Action::Forward),
        }
    }

    fn read_request(&self, ctx: &Ctx<'_>, id: &Id, mut message: Value) -> Action {
        let c = match self.request_uri(ctx, id, &message) {
            Ok(c) => c,
            Err(action) => return action,
        };
        if let Some(canonical) = &c.canonical {
            ctx.set_uri(&mut message["params"]["uri"], canonical.as_str());
            let live = self.live();
            if live.policy.resources().read == ReadStance::Serve && live.enforce {
                if let (Some(roots), Some(allowed)) = (ctx.roots, c.allowed.as_deref()) {
                    let (reply, refused) = read::serve(
                        &live.policy,
                        live.checker.options(),
                        roots,
                        allowed,
                        canonical,
                        id,
                        ctx.stateless,
                    );
                    if let Some(refused) = refused {
                        // The file opened was refused when judged again: say so in the log.
                        let raw = canonical.as_str();
                        self.audit_decision(
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
        }
        let mut kept = self.read_verdicts.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() >= READ_VERDICTS {
            kept.clear();
        }
        kept.insert(id.key().clone(), (c, ctx.roots_arc.map(Arc::downgrade)));
        drop(kept);
        self.done_ctx(ctx, message)
    }

    fn subscribe_request(&self, ctx: &Ctx<'_>, id: &Id, mut message: Value) -> Action {
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

    // ---- server messages --------------------------------------------------------------------

    fn updated(&self, ctx: &Ctx<'_>, message: Value) -> Action {
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

    fn server_result(&self, ctx: &Ctx<'_>, mut message: Value) -> Action {
        let Some(result) = message.get_mut("result") else {
            return Action::Forward;
        };
        self.learn_server_name(result);
        // Every checker returns false when a payload is not the shape it can check item by
        // item: then the whole result is refused rather than passed unchecked.
        let shaped = match ctx.method {
            // `serverInfo` (icons, `websiteUrl`) and 2026-07-28's `_meta` serverInfo are
            // walked with the rest of the result below.
            m::INITIALIZE | m::SERVER_DISCOVER => true,
            m::RESOURCES_LIST => {
                self.filter_entries(ctx, "result.resources", result.get_mut("resources"), "uri")
            }
            m::RESOURCES_TEMPLATES_LIST => self.filter_entries(
                ctx,
                "result.resourceTemplates",
                result.get_mut("resourceTemplates"),
                "uriTemplate",
            ),
            m::TOOLS_LIST => {
                self.learn_tools(result);
                self.filter_entries(ctx, "result.tools", result.get_mut("tools"), "")
            }
            m::PROMPTS_LIST => {
                self.filter_entries(ctx, "result.prompts", result.get_mut("prompts"), "")
            }
            m::RESOURCES_READ => return self.read_result(ctx, message),
            m::TOOLS_CALL | m::TASKS_RESULT | m::PROMPTS_GET => {
                self.input_required(ctx, result);
                let content_ok = match result.get_mut("content") {
                    // A result's content is a list of blocks; a single block is judged whole.
                    Some(content) => self.filter_content(ctx, "result.content", content),
                    None => true,
                };
                let messages_ok = match result.get_mut("messages") {
                    Some(messages) => self.filter_messages(ctx, "result.messages", messages),
                    None => true,
                };
                content_ok && messages_ok
            }
            _ => true,
        };
        if !shaped && self.live().enforce {
            return self.refuse_result(ctx, "malformed_result");
        }
        // Everything the method's own handler did not judge (`fields.rs`).
        let handled: &[&str] = match ctx.method {
            m::RESOURCES_LIST => &["resources"],
            m::RESOURCES_TEMPLATES_LIST => &["resourceTemplates"],
            m::TOOLS_LIST => &["tools"],
            m::PROMPTS_LIST => &["prompts"],
            m::TOOLS_CALL | m::TASKS_RESULT | m::PROMPTS_GET => {
                &["content", "messages", "inputRequests"]
            }
            _ => &[],
        };
        if let Some(result) = message.get_mut("result") {
            self.walk_result(ctx, result, handled);
        }
        self.done_ctx(ctx, message)
    }

    /// Replaces a result rootfence cannot pass with its denial error (the host's request
    /// still gets exactly one answer).
    fn refuse_result(&self, ctx: &Ctx<'_>, reason: &'static str) -> Action {
        let c = Checked::deny(reason);
        self.audit_decision(ctx, "result", "", &c, audit::Action::AnsweredError);
        match ctx.id {
            Some(id) => Action::Replace(denial(id, "", &c)),
            None => Action::Drop,
        }
    }

    fn record_initialized(&self, result: &Value, client_info: Option<&Value>) {
        let peer = |v: Option<&Value>| {
            v.map(|info| audit::PeerInfo {
                name: info["name"].as_str().unwrap_or_default().to_owned(),
                version: info["version"].as_str().unwrap_or_default().to_owned(),
            })
        };
        self.record(Event::Initialized(audit::Initialized {
            protocol_version: result["protocolVersion"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            host: peer(client_info),
            server: peer(result.get("serverInfo")),
        }));
    }

    /// 2026-07-28 `input_required`: note the server's `roots/list` input requests (their
    /// answers are filtered on the retry) and check the sampling ones.
    fn input_required(&self, ctx: &Ctx<'_>, result: &mut Value) {
        if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
            return;
        }
        let mut refused = Vec::new();
        if let Some(requests) = result
            .get_mut("inputRequests")
            .and_then(Value::as_object_mut)
        {
            for (key, request) in requests.iter_mut() {
                if request.get("method").and_then(Value::as_str) == Some(m::SAMPLING_CREATE_MESSAGE)
                {
                    if let Some(messages) = request.pointer_mut("/params/messages") {
                        self.filter_messages(
                            ctx,
                            &format!("result.inputRequests.{key}.params.messages"),
                            messages,
                        );
                    }
                }
                if request.get("method").and_then(Value::as_str) == Some(m::ELICITATION_CREATE)
                    && !self.input_elicitation_ok(ctx, key, request)
                {
                    refused.push(key.clone());
                }
            }
            for key in &refused {
                requests.remove(key);
                ctx.mark();
            }
        }
        // A host without roots cannot answer the server's roots questions: rootfence does,
        // on the retry.
        if self.learner.note_input_required(result) {
            ctx.mark();
        }
    }

    fn read_result(&self, ctx: &Ctx<'_>, mut message: Value) -> Action {
        // 2026-07-28: a read may come back `input_required` like a tool call.
        if let Some(result) = message.get_mut("result") {
            self.input_required(ctx, result);
        }
        let contents = match message
            .get_mut("result")
            .and_then(|r| r.get_mut("contents"))
        {
            None | Some(Value::Null) => return self.done_ctx(ctx, message),
            Some(Value::Array(contents)) => contents,
            Some(_) => {
                return if self.live().enforce {
                    self.refuse_result(ctx, "malformed_result")
                } else {
                    Action::Forward
                };
            }
        };
        if contents.is_empty() {
            return self.done_ctx(ctx, message);
        }
        let mut prior = ctx.id.and_then(|id| {
            let (verdict, made_under) = self
                .read_verdicts
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(id.key())?;
            // Made under the roots still in force, or judged again.
            let same = match (&made_under, ctx.roots_arc) {
                (Some(w), Some(now)) => std::ptr::eq(w.as_ptr(), Arc::as_ptr(now)),
                (None, None) => true,
                _ => false,
            };
            same.then_some(verdict)
        });
        let mut last_denied: Option<(String, Checked)> = None;
        let mut kept = Vec::with_capacity(contents.len());
        for (i, mut item) in std::mem::take(contents).into_iter().enumerate() {
            let raw = item
                .get("uri")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            // The item names exactly the URI checked on the way in: same verdict, and the
            // request's record is its record (one decision, not two).
            let reused = prior
                .as_ref()
                .is_some_and(|p| p.canonical.as_ref().is_some_and(|u| u.as_str() == raw));
            let mut c = match prior.take_if(|_| reused) {
                Some(p) => p,
                None => self.live().uri(&raw, ctx.roots),
            };
            if c.allow {
                if let Some(refusal) = read::content_refusal(&self.live().policy, &item) {
                    c = refusal;
                }
            }
            if c.allow && self.live().policy.resources().read == ReadStance::Verify {
                if let (Some(roots), Some(allowed)) = (ctx.roots, c.allowed.as_deref()) {
                    if let Some(refusal) = self.live().verify(roots, allowed, &item) {
                        c = refusal;
                    }
                }
            }
            // A reused verdict that still allows is already on record; anything that turned
            // it into a refusal is a new decision.
            let ok = (reused && c.allow)
                || self.audit_decision(
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
                        self.walk_rest(ctx, &format!("result.contents[{i}]"), obj, &["uri"]);
                    }
                }
                kept.push(item);
            } else if self.live().enforce {
                ctx.mark();
                last_denied = Some((raw, c));
            } else {
                kept.push(item);
            }
        }
        *contents = kept;
        if contents.is_empty() {
            if let (Some(id), Some((raw, c))) = (ctx.id, last_denied) {
                return Action::Replace(denial(id, &raw, &c));
            }
        }
        if let Some(result) = message.get_mut("result") {
            self.walk_result(ctx, result, &["contents", "inputRequests"]);
        }
        self.done_ctx(ctx, message)
    }

    /// A URI or a URI template (completion references may be either).
    fn template_or_uri(&self, ctx: &Ctx<'_>, raw: &str) -> Checked {
        if raw.contains('{') {
            self.live().template(raw, ctx.roots)
        } else {
            self.live().uri(raw, ctx.roots)
        }
    }

    fn deny_reply(&self, ctx: &Ctx<'_>, _what: &Value, reason: &str) -> Action {
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

/// The error rootfence answers a denied request with.
pub fn denial(id: &Id, raw: &str, c: &Checked) -> Value {
    let mut message = format!("rootfence: denied: {} ({})", shorten(raw), c.reason);
    let mut data = json!({"uri": raw, "reason": c.reason, "rule": c.rule.as_deref()});
    if let Some(hint) = &c.hint {
        message.push_str(": ");
        message.push_str(hint);
        data["hint"] = json!(hint);
    }
    json!({
        "jsonrpc": "2.0",
        "id": id.to_value(),
        "error": {"code": DENIED, "message": message, "data": data}
    })
}

/// A URI for an error message: whole when short, cut (at a character boundary) when long.
/// The full URI is in `data.uri`.
fn shorten(raw: &str) -> String {
    const MAX: usize = 200;
    if raw.len() <= MAX {
        return raw.to_owned();
    }
    let mut end = MAX;
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &raw[..end])
}

fn invalid_params(id: &Id, what: &str) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id.to_value(),
        "error": {"code": INVALID_PARAMS, "message": format!("rootfence: {what}")}
    })
}

fn random_u64() -> u64 {
    use std::hash::BuildHasher;
    std::collections::hash_map::RandomState::new().hash_one(std::process::id())
}
