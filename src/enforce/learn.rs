//! Learning the host's roots: asking the host (its own `roots/list`, before the `initialize`
//! answer when it declared roots, and again on `notifications/roots/list_changed`; or MRTR
//! `input_required` in 2026-07-28), taking the answers the server asked for, the fallback when
//! the host does not answer, and what the server is told. Each change of the effective roots
//! is handed to the [`Follower`] first (which may start a new server generation under the new
//! grants) and only then published, so no decision under new roots is ever carried out by a
//! server confined to old ones. The `initialize` result's record (what the server says it
//! is, who the host says it is) is here too.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};

use super::Recorder;
use super::follow::Follower;
use super::roots::{self, HostRoot, OperatorRoots, Tracker};
use crate::audit::{self, Event};
use crate::jsonrpc::Id;
use crate::jsonrpc::error::METHOD_NOT_FOUND;
use crate::mcp::methods as m;
use crate::policy::{Policy, RootsFallback};
use crate::relay::{Action, Session};
use crate::roots::RootSet;

/// MRTR retries rootfence remembers a roots answer for (more means retries that never came).
const INJECTIONS: usize = 1024;

/// Learns, tracks and hands out the roots.
pub(super) struct Learner {
    /// Swapped by a policy reload: the next effective roots follow the new roots rules.
    policy: arc_swap::ArcSwap<Policy>,
    enforce: bool,
    operator: Arc<OperatorRoots>,
    pub(super) tracker: Tracker,
    pub(super) follow: Follower,
    audit: Recorder,
    /// The `inputRequests` key of rootfence's own MRTR `roots/list` (2026-07-28).
    mrtr_key: String,
    /// Whether the host supports roots (`None` until it says).
    host_roots: Mutex<Option<bool>>,
    /// `inputRequests` keys under which the server asked for roots (2026-07-28).
    server_roots_keys: Mutex<HashSet<String>>,
    /// Roots answers rootfence gives on behalf of a host without roots (2026-07-28): by the
    /// `requestState` of the retry, the `inputResponses` keys to fill, and whether the state
    /// is rootfence's own marker (taken out before the server sees the retry). Bounded.
    injections: Mutex<Injections>,
    next_state: AtomicU64,
    /// One question to the host at a time; a change noticed meanwhile asks once more after.
    asking: Mutex<Asking>,
    /// The host answered a roots question (not just the fallback).
    host_answered: std::sync::atomic::AtomicBool,
    /// The last line said on stderr about missing roots (said again only when it changes).
    said: Mutex<Option<String>>,
}

/// Roots answers owed on MRTR retries, by `requestState`: the keys to fill and whether the
/// state is rootfence's own marker; with their insertion order, for the bound.
type Injections = (HashMap<String, (Vec<String>, bool)>, VecDeque<String>);

#[derive(Default)]
struct Asking {
    outstanding: bool,
    /// Ask once more when the outstanding question is done.
    again: Option<String>,
    /// Ask once more when the outstanding question is done without an answer.
    unless_answered: bool,
}

impl Learner {
    pub(super) fn new(
        policy: Arc<Policy>,
        operator: Arc<OperatorRoots>,
        follow: Follower,
        audit: Recorder,
        mrtr_key: String,
    ) -> Learner {
        Learner {
            enforce: policy.mode() == crate::policy::Mode::Enforce,
            policy: arc_swap::ArcSwap::new(policy),
            operator,
            tracker: Tracker::default(),
            follow,
            audit,
            mrtr_key,
            host_roots: Mutex::new(None),
            server_roots_keys: Mutex::default(),
            injections: Mutex::default(),
            next_state: AtomicU64::new(1),
            asking: Mutex::default(),
            host_answered: std::sync::atomic::AtomicBool::new(false),
            said: Mutex::new(None),
        }
    }

    /// The roots of a host that declares none: the operator's, or the server's command
    /// line's (`roots.from_command`), said on stderr when they are used.
    fn operator_set_without_host(&self, trigger: &str) -> (RootSet, audit::RootsUpdate) {
        let out = roots::effective_without_host(&self.operator, &self.policy.load(), trigger);
        if self.operator.uses_command_roots() {
            let dirs = super::paths(self.operator.without_host());
            self.say(format!(
                "rootfence: the host declares no roots and no --root was given: the \
                 directories on the server's command line are its roots: {} (the policy's \
                 `roots.from_command = \"off\"` turns this off)",
                dirs.join(", ")
            ));
        }
        out
    }

    /// Says on stderr what is missing when an update leaves the server without roots.
    fn say_missing(&self, update: &audit::RootsUpdate) {
        let has = self.host_has_roots() == Some(true);
        if let Some(line) = roots::missing(update, &self.operator, has) {
            self.say(line);
        } else {
            *crate::relock(&self.said) = None;
        }
    }

    /// One line on stderr, unless it is the last one said.
    fn say(&self, line: String) {
        let mut said = crate::relock(&self.said);
        if said.as_deref() != Some(line.as_str()) {
            crate::stderr_line!("{line}");
            *said = Some(line);
        }
    }

    /// A reloaded policy: its roots rules bound the next effective roots. (Whether rootfence
    /// answers roots requests itself follows the mode the session started in.)
    pub(super) fn reload(&self, policy: Arc<Policy>) {
        self.policy.store(policy);
    }

    pub(super) fn host_has_roots(&self) -> Option<bool> {
        *crate::relock(&self.host_roots)
    }

    fn set_host_has_roots(&self, has: bool) {
        *crate::relock(&self.host_roots) = Some(has);
    }

    /// The operator's roots as the effective roots (a host without roots, a fallback).
    fn operator_set(&self, trigger: &str) -> (RootSet, audit::RootsUpdate) {
        roots::effective(&[], &self.operator, &self.policy.load(), trigger)
    }

    /// The roots are settled without the host (it has none): the operator's, if nothing was
    /// known yet; the first server generation starts under them.
    fn settle_without_host(&self, session: &Arc<Session>, trigger: &str) {
        if self.tracker.known().is_none() {
            let (set, update) = self.operator_set_without_host(trigger);
            self.say_missing(&update);
            self.settle(session, set, update);
        }
        if let Some(set) = self.tracker.known() {
            self.follow.launch_first(session, &set, "launch");
        }
    }

    /// Roots settled without the host's answer: the first server generation starts under
    /// them, and they are published and audited unless roots became known meanwhile.
    /// Returns whether they were published.
    fn settle(&self, session: &Arc<Session>, set: RootSet, update: audit::RootsUpdate) -> bool {
        self.follow.launch_first(session, &set, "launch");
        let published = self.tracker.set_if_unknown(set);
        if published {
            self.audit.record(Event::RootsUpdate(update));
        }
        published
    }

    /// The roots known, else the operator's (computed for `trigger`, as [`Self::operator_set`]).
    fn known_or_operator(&self, trigger: &str) -> Arc<RootSet> {
        self.tracker
            .known()
            .unwrap_or_else(|| Arc::new(self.operator_set(trigger).0))
    }

    /// The host's first message, while no server runs yet. `initialize` is handled when it
    /// is intercepted; a 2026-07-28 request rootfence will answer with an MRTR roots question
    /// waits for that answer; anything else starts the server under what is known now.
    pub(super) fn first_host_message(&self, session: &Arc<Session>, method: &str) {
        if method == m::INITIALIZE || !self.follow.unlaunched() {
            return;
        }
        let mrtr = session.revision().is_some_and(|r| r.has_input_required());
        if mrtr {
            self.learn_stateless_host(session);
            let asks = self.enforce
                && self.host_has_roots() == Some(true)
                && crate::mcp::uris::ASKS_FOR_ROOTS_FIRST.contains(&method);
            if asks {
                return;
            }
        }
        let set = self.known_or_operator("launch");
        self.follow.launch_first(session, &set, "launch");
    }

    /// Learns whether a 2026-07-28 host supports roots (from the latest `_meta`), and gives
    /// the operator roots when it does not. Returns whether the roots became known.
    pub(super) fn learn_stateless_host(&self, session: &Arc<Session>) -> bool {
        if self.host_has_roots().is_none()
            && let Some(caps) = session.peers().client_capabilities
        {
            self.set_host_has_roots(caps.get("roots").is_some());
        }
        if self.tracker.known().is_none() && self.host_has_roots() == Some(false) {
            let (set, update) = self.operator_set_without_host("host_without_roots");
            self.say_missing(&update);
            return self.settle(session, set, update);
        }
        false
    }

    /// The host's `initialize` (up to 2025-11-25). A host with roots is asked for them at
    /// once — SDK clients answer while they wait for the `initialize` answer — and the server
    /// starts when they arrive (or when the wait ends), confined to them; the `initialize`
    /// itself goes ahead to the server's queue meanwhile. A host without roots leaves the
    /// operator roots, and the server is told it may ask for them.
    pub(super) fn initialize(
        self: &Arc<Self>,
        session: &Arc<Session>,
        message: &mut Value,
    ) -> Option<Value> {
        let has = message.pointer("/params/capabilities/roots").is_some();
        self.set_host_has_roots(has);
        if has {
            // The answer starts a server that waits for it. Some hosts answer only once their
            // `initialize` is answered: past `launch_wait`, the server starts under the
            // operator roots, and the answer, when it comes, moves it to a new generation.
            self.ask_host(session, m::INITIALIZE);
            if self.follow.waits_for_roots() {
                let me = Arc::clone(self);
                let session = Arc::clone(session);
                let wait = self.policy.load().roots().launch_wait;
                tokio::spawn(async move {
                    tokio::time::sleep(wait).await;
                    if me.follow.unlaunched() {
                        tracing::info!(
                            "the host did not answer the roots question within {wait:?}; \
                             starting the server under the operator roots"
                        );
                        let set = me.known_or_operator("launch_wait");
                        me.follow.launch_first(&session, &set, "launch_wait");
                    }
                });
            } else {
                self.follow
                    .launch_first(session, &self.operator_set("launch").0, "launch");
            }
            return None;
        }
        self.settle_without_host(session, "host_without_roots");
        if self.operator.without_host().is_empty() || !self.enforce {
            return None;
        }
        let caps = message
            .pointer_mut("/params/capabilities")
            .and_then(Value::as_object_mut)?;
        caps.insert("roots".into(), json!({"listChanged": false}));
        Some(message.take())
    }

    /// The host said it is initialized, or that its roots changed: ask it (again). After an
    /// answer to the early question, `initialized` needs no second one; a host that did not
    /// answer early (some answer only once initialized) is asked again, even if the fallback
    /// roots stand meanwhile.
    pub(super) fn host_notified(self: &Arc<Self>, session: &Arc<Session>, method: &str) {
        if self.host_has_roots() != Some(true) {
            return;
        }
        if method == m::INITIALIZED {
            if self.host_answered.load(Ordering::Relaxed) {
                return;
            }
            let mut a = crate::relock(&self.asking);
            if a.outstanding {
                // The early question is still out: ask again only if it goes unanswered.
                a.unless_answered = true;
                return;
            }
        }
        self.ask_host(session, method);
    }

    /// Sends rootfence's own `roots/list` to the host (up to 2025-11-25) and applies the
    /// answer whenever it comes; the policy's fallback applies if it does not come in time.
    /// One question at a time: a change noticed while one is out is asked about once after.
    pub(super) fn ask_host(self: &Arc<Self>, session: &Arc<Session>, trigger: &str) {
        {
            let mut a = crate::relock(&self.asking);
            if a.outstanding {
                a.again = Some(trigger.to_owned());
                return;
            }
            a.outstanding = true;
        }
        self.tracker.asking();
        let answer = session.request_host(m::ROOTS_LIST, None);
        let me = Arc::clone(self);
        let session = Arc::clone(session);
        let trigger = trigger.to_owned();
        let limit = self.policy.load().roots().list_timeout;
        tokio::spawn(async move {
            match tokio::time::timeout(limit, answer).await {
                Ok(Ok(response)) => match parse_roots(&response["result"]) {
                    Some(roots) => me.update_host_roots(&session, roots, &trigger),
                    None => {
                        tracing::warn!("the host's roots/list answer is unusable: {response}");
                        me.fallback(&session, "host_error");
                    }
                },
                Ok(Err(_)) => {}
                Err(_) => me.fallback(&session, "timeout"),
            }
            let again = {
                let mut a = crate::relock(&me.asking);
                a.outstanding = false;
                let unanswered = std::mem::take(&mut a.unless_answered)
                    && !me.host_answered.load(Ordering::Relaxed);
                a.again
                    .take()
                    .or_else(|| unanswered.then(|| m::INITIALIZED.to_owned()))
            };
            if let Some(trigger) = again {
                me.ask_host(&session, &trigger);
            }
        });
    }

    /// The roots when the host does not answer: the operator's, or none.
    pub(super) fn fallback(&self, session: &Arc<Session>, trigger: &str) {
        if self.tracker.known().is_some() {
            return;
        }
        let set = match self.policy.load().roots().on_timeout {
            RootsFallback::Static => self.operator_set(trigger).0,
            RootsFallback::Deny => RootSet::empty(),
        };
        let effective = super::uris(&set);
        if set.is_empty() {
            self.say(format!(
                "rootfence: warning: the host did not give its roots ({trigger}) and there is \
                 no --root to fall back on: the server has no roots, so every file request is \
                 refused; add `--root DIR` before `--` in this server's entry, DIR being the \
                 project it should work in"
            ));
        }
        let update = audit::RootsUpdate {
            trigger: trigger.into(),
            effective,
            ..audit::RootsUpdate::default()
        };
        if self.settle(session, set, update) {
            tracing::warn!("the host did not give its roots ({trigger}); using the fallback roots");
        }
    }

    /// New host roots: recompute; let the server follow (a new generation, if the grants
    /// change); then publish and audit.
    pub(super) fn update_host_roots(
        &self,
        session: &Arc<Session>,
        host: Vec<HostRoot>,
        trigger: &str,
    ) {
        self.host_answered.store(true, Ordering::Relaxed);
        let (set, mut update) = if host.is_empty() {
            // An empty list declares no roots: as for a host without roots.
            self.operator_set_without_host(trigger)
        } else {
            roots::effective(&host, &self.operator, &self.policy.load(), trigger)
        };
        self.say_missing(&update);
        update.outside_sandbox = self.follow.follow(session, &set, trigger);
        self.tracker.set(set);
        self.audit.record(Event::RootsUpdate(update));
    }

    /// The roots as the server may see them.
    pub(super) fn roots_result(&self) -> Value {
        let set = self.known_or_operator("server");
        let list: Vec<Value> = set
            .roots()
            .iter()
            .map(|r| {
                let mut v = json!({ "uri": r.uri().as_str() });
                if let Some(name) = r.name() {
                    v["name"] = json!(name);
                }
                v
            })
            .collect();
        json!({ "roots": list })
    }

    /// The server asks for roots (up to 2025-11-25): the host answers (its answer is replaced
    /// on the way back), or rootfence does for a host without roots.
    pub(super) fn server_asks(&self, id: Option<&Id>) -> Action {
        let Some(id) = id else {
            return Action::Forward;
        };
        if self.host_has_roots() == Some(true) {
            return Action::Forward;
        }
        if !self.operator.without_host().is_empty() {
            return Action::Reply(
                json!({"jsonrpc": "2.0", "id": id.to_value(), "result": self.roots_result()}),
            );
        }
        let message = "rootfence: the host does not provide roots".into();
        Action::Reply(super::error_reply(id, METHOD_NOT_FOUND, message, None))
    }

    /// The host answers the server's `roots/list`: learn from it; the server gets the
    /// effective roots only (never the host's text unchecked). Returns the message to forward.
    pub(super) fn host_answer(&self, session: &Arc<Session>, mut message: Value) -> Value {
        if let Some(roots) = parse_roots(&message["result"]) {
            self.update_host_roots(session, roots, "server_request");
        }
        if self.enforce {
            message["result"] = self.roots_result();
        }
        message
    }

    /// A 2026-07-28 host with roots whose roots are not known yet: the request is answered
    /// with rootfence's own MRTR roots question.
    pub(super) fn mrtr_question(&self, id: &Id) -> Action {
        let requests = json!({&self.mrtr_key: {"method": m::ROOTS_LIST}});
        Action::Reply(json!({
            "jsonrpc": "2.0", "id": id.to_value(),
            "result": {"resultType": "input_required", "inputRequests": requests}
        }))
    }

    /// On a retried request whose `requestState` rootfence recorded, fills in the roots
    /// answers it owes the server (and takes its own state marker out). Returns whether the
    /// message changed.
    pub(super) fn inject_roots(&self, message: &mut Value) -> bool {
        let Some(state) = message
            .pointer("/params/requestState")
            .and_then(Value::as_str)
        else {
            return false;
        };
        let Some((keys, own)) = crate::relock(&self.injections).0.remove(state) else {
            return false;
        };
        let roots = self.roots_result();
        let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) else {
            return false;
        };
        if own {
            params.remove("requestState");
        }
        let responses = params.entry("inputResponses").or_insert_with(|| json!({}));
        if let Some(responses) = responses.as_object_mut() {
            for key in keys {
                responses.insert(key, roots.clone());
            }
        }
        true
    }

    /// Takes rootfence's own roots answer out of `inputResponses`, and filters the answers
    /// to the server's own roots requests. Returns whether the roots changed.
    pub(super) fn input_responses(
        &self,
        session: &Arc<Session>,
        responses: &mut Map<String, Value>,
    ) -> bool {
        let mut changed = false;
        if let Some(answer) = responses.remove(&self.mrtr_key) {
            match parse_roots(&answer) {
                Some(roots) => self.update_host_roots(session, roots, "input_response"),
                None => self.fallback(session, "host_error"),
            }
            changed = true;
        }
        let server_keys: Vec<String> = {
            let keys = crate::relock(&self.server_roots_keys);
            responses
                .keys()
                .filter(|k| keys.contains(*k))
                .cloned()
                .collect()
        };
        for key in server_keys {
            if let Some(roots) = responses.get(&key).and_then(parse_roots) {
                self.update_host_roots(session, roots, "input_response");
                changed = true;
                if self.enforce {
                    responses.insert(key, self.roots_result());
                }
            }
        }
        changed
    }

    /// A 2026-07-28 `input_required` result's roots questions: the host answers those it can
    /// (rootfence filters the answers on the retry); those a host without roots cannot,
    /// rootfence answers itself on the retry. Returns whether the result changed.
    pub(super) fn note_input_required(&self, result: &mut Value) -> bool {
        let answer_ourselves = self.enforce && self.host_has_roots() != Some(true);
        let mut ours = Vec::new();
        let Some(requests) = result
            .get_mut("inputRequests")
            .and_then(Value::as_object_mut)
        else {
            return false;
        };
        for (key, request) in requests.iter() {
            if request.get("method").and_then(Value::as_str) == Some(m::ROOTS_LIST) {
                if answer_ourselves {
                    ours.push(key.clone());
                } else {
                    crate::relock(&self.server_roots_keys).insert(key.clone());
                }
            }
        }
        if ours.is_empty() {
            return false;
        }
        for key in &ours {
            requests.remove(key);
        }
        if requests.is_empty()
            && let Some(r) = result.as_object_mut()
        {
            r.remove("inputRequests");
        }
        // The retry is recognised by its requestState; without one, rootfence adds a marker
        // of its own (a result needs inputRequests or requestState).
        let (state, own) = match result.get("requestState").and_then(Value::as_str) {
            Some(s) => (s.to_owned(), false),
            None => {
                let n = self.next_state.fetch_add(1, Ordering::Relaxed);
                let marker = format!("{}-state-{n}", self.mrtr_key);
                result["requestState"] = json!(marker);
                (marker, true)
            }
        };
        let mut inj = crate::relock(&self.injections);
        let (map, order) = &mut *inj;
        if map.insert(state.clone(), (ours, own)).is_none() {
            order.push_back(state);
            if order.len() > INJECTIONS
                && let Some(old) = order.pop_front()
            {
                map.remove(&old);
            }
        }
        true
    }
}

/// The roots in a `roots/list` result (`None` if it is not one).
pub(super) fn parse_roots(result: &Value) -> Option<Vec<HostRoot>> {
    let list = result.get("roots")?.as_array()?;
    Some(
        list.iter()
            .map(|r| HostRoot {
                uri: super::text(&r["uri"]),
                name: r.get("name").and_then(Value::as_str).map(str::to_owned),
            })
            .collect(),
    )
}

/// The initialize family's result: what the server says it is.
impl super::Inner {
    /// Records the session's `initialized` event: the agreed revision, who the host and the
    /// server say they are, and the principal the session acts for.
    pub(super) fn record_initialized(&self, result: &Value, client_info: Option<&Value>) {
        let peer = |v: Option<&Value>| {
            v.map(|info| audit::PeerInfo {
                name: info["name"].as_str().unwrap_or_default().to_owned(),
                version: info["version"].as_str().unwrap_or_default().to_owned(),
            })
        };
        let host = peer(client_info);
        // stdio: the host says who it is here; the claim becomes the session's principal
        // (a served session's was set, authenticated, when it opened).
        let principal = match &host {
            Some(h) if self.principal.get().is_none() => {
                let p = audit::Principal::claimed(h.clone());
                let _ = self.principal.set(p.subject.clone());
                Some(p)
            }
            // A pre-started `serve` session: its principal came when a client took it.
            _ => self.adopted.get().cloned(),
        };
        self.audit.record(Event::Initialized(audit::Initialized {
            protocol_version: super::text(&result["protocolVersion"]),
            host: host.clone(),
            server: peer(result.get("serverInfo")),
            principal,
        }));
    }
}
