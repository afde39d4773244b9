//! Session state shared by the pumps, the server generations and the interceptor: what was
//! negotiated, which requests are in flight in each direction (and on which server generation),
//! the requests rootfence itself sent, and the queues toward each side.
//!
//! Ids live in two independent spaces: requests from the host to the server, and requests
//! toward the host (from the server, or from rootfence). rootfence's own requests use string
//! ids with a random per-session prefix; a request from either side whose id falls in that
//! namespace is refused, so they can never collide. A server generation after the first
//! (see `generation.rs`) has its request ids rewritten into that namespace on the way to the
//! host, so two generations alive at once (the old one finishing while the new one starts)
//! never answer each other's requests; the first generation's ids pass untouched.
//!
//! The state sits behind a `std::sync::Mutex`: every critical section is a few map
//! operations and never spans an `.await`.
//!
//! This file holds the types and the session's life (launches, generations); its methods by
//! concern are in `session/`: `lanes.rs` (the queues), `output.rs` (sending and gates),
//! `requests.rs` (requests in flight and their answers), `replay.rs` (what a new generation
//! is told again).

mod lanes;
mod output;
mod replay;
mod requests;

pub(crate) use lanes::{GenLink, GenQueues, LaneReceivers, Lanes, Outgoing};

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::jsonrpc::{Id, IdKey};
use crate::mcp::Revision;

/// Ids remembered for dropping late messages about finished requests (answered by rootfence,
/// or cancelled), per kind: enough for any real burst, bounded against a flood.
const REMEMBERED_IDS: usize = 4096;

/// A server generation: 1 for the first server process of a session, then one more for each
/// restart under new grants.
pub type Gen = u32;

crate::coded::coded! {
    /// One side of the relay.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum Side {
        /// The MCP host (client), on rootfence's stdin/stdout.
        Host => "host",
        /// The wrapped MCP server, on the child's pipes.
        Server => "server",
    }
    /// `"host"` or `"server"`.
    pub fn as_str;
}

impl Side {
    /// The other side.
    pub fn other(self) -> Side {
        match self {
            Side::Host => Side::Server,
            Side::Server => Side::Host,
        }
    }
}

/// A request in flight.
#[derive(Clone, Debug)]
pub struct Pending {
    /// The request's id, as it arrived (echoed in any answer rootfence builds).
    pub id: Id,
    /// The request's method.
    pub method: Arc<str>,
    /// When rootfence forwarded it.
    pub started: Instant,
    /// The server generation it was sent to (host requests) or came from (server requests).
    pub generation: Gen,
    /// A host request's session-unique key (numbered by the relay in arrival order); `None` for a
    /// server's request.
    pub request: Option<u64>,
    /// Whether the relay's scan builds its answer's value (counted in
    /// [`Session::answers_built`]).
    pub(crate) answer_built: bool,
}

impl Pending {
    /// A request forwarded now.
    fn new(
        id: &Id,
        method: Arc<str>,
        generation: Gen,
        request: Option<u64>,
        answer_built: bool,
    ) -> Self {
        Pending {
            id: id.clone(),
            method,
            started: Instant::now(),
            generation,
            request,
            answer_built,
        }
    }
}

/// A server request as the host saw it: which generation sent it and under which id.
#[derive(Clone, Debug)]
struct ServerPending {
    pending: Pending,
    /// The server's own id, when the host saw another one (generations after the first).
    original: Option<Id>,
}

/// What a response id matched.
#[derive(Debug)]
pub enum Matched {
    /// A request forwarded from the other side. For a host response to a server request of a
    /// later generation, `restore` is the server's own id, to be put back before forwarding.
    Pending {
        /// The request.
        pending: Pending,
        /// The id to forward the response under, when it differs from the one it arrived with.
        restore: Option<Id>,
    },
    /// A request rootfence sent itself; its response is consumed here.
    Own(OwnRequest),
    /// A request the sender cancelled; a late response is dropped quietly.
    Cancelled,
    /// Nothing: the response is dropped and reported.
    Unmatched,
}

/// A request rootfence sent itself (to the host or to a server generation), waiting for its
/// response.
#[derive(Debug)]
pub struct OwnRequest {
    reply: oneshot::Sender<Value>,
}

impl OwnRequest {
    /// Hands the response message to whoever asked.
    pub fn deliver(self, response: Value) {
        // The asker may have given up (timeout); that is fine.
        let _ = self.reply.send(response);
    }
}

/// What the host and server said about themselves in `initialize` (2024-11-05 to 2025-11-25)
/// or, for 2026-07-28 peers, in each request's `_meta` and in `server/discover`.
#[derive(Clone, Debug, Default)]
pub struct PeerInfo {
    /// The version the host asked for in `initialize`.
    pub requested_version: Option<Revision>,
    /// The negotiated version (the server's answer), or the latest `_meta` version seen.
    pub version: Option<Revision>,
    /// `clientInfo`.
    pub client_info: Option<Value>,
    /// The host's capabilities (from `initialize`, or the latest `_meta` of a host request).
    pub client_capabilities: Option<Value>,
    /// `serverInfo`.
    pub server_info: Option<Value>,
    /// The server's capabilities.
    pub server_capabilities: Option<Value>,
}

/// What a new server generation must be told to stand where the last one stood: the host's
/// handshake and the live state the host set up, as forwarded (so, as checked).
#[derive(Clone, Debug, Default)]
pub struct Handshake {
    /// The host's `initialize` params.
    pub initialize: Option<Value>,
    /// The first generation's `initialize` result (what the host was told).
    pub first_result: Option<Value>,
    /// The host sent `notifications/initialized`.
    pub initialized: bool,
    /// The params of the host's latest `logging/setLevel`.
    pub log_level: Option<Value>,
    /// Live `resources/subscribe` subscriptions: URI → the request's params.
    pub subscriptions: BTreeMap<String, Value>,
    /// `subscriptions/listen` requests in flight (2026-07-28): the host's id and the line as
    /// forwarded.
    pub listens: Vec<(Id, Bytes)>,
}

/// Message counters for the end-of-session report.
#[derive(Debug, Default)]
pub struct Counters {
    /// Messages read from the host.
    pub from_host: AtomicU64,
    /// Messages read from the server (every generation).
    pub from_server: AtomicU64,
    /// Protocol errors (bad lines, invalid or unmatched messages), either side.
    pub protocol_errors: AtomicU64,
    /// Requests rootfence answered itself.
    pub answered_locally: AtomicU64,
    /// Server generations started (1 without a restart).
    pub generations: AtomicU64,
}

/// Where the first generation stands with the host's `initialize`, which must reach it
/// before anything else the host sends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum InitPhase {
    /// No `initialize` seen: the first generation's lane opens on the first other message.
    #[default]
    NotSeen,
    /// Seen and not yet decided (an interceptor may hold it until the roots are known).
    Held,
    /// Forwarded or answered: the lane is open.
    Done,
}

/// Something the relay's main loop must act on: a launch asked for, a destination that
/// stopped reading, and what a server generation's tasks report. (One channel: the loop
/// sees them in the order they happened.)
pub(crate) enum Event {
    /// A new server generation is asked for ([`Session::launch`]).
    Launch(Box<LaunchRequest>),
    /// A destination stopped reading: its priority lane overflowed.
    Stuck { side: Side, generation: Gen },
    /// The generation's process exited.
    Exited(Gen, std::io::Result<std::process::ExitStatus>),
    /// Its output closed, a moment ago (see the server pump's task).
    OutputClosed(Gen),
    /// It is up: brought to where the host stands.
    Up(Gen),
    /// It could not start or be brought up.
    Failed(Gen, String),
    /// It finished what it held, or its grace period is over.
    Retired(Gen),
}

/// A request for a new server generation, handled by the relay's main loop.
pub(crate) struct LaunchRequest {
    pub generation: Gen,
    pub launch: super::generation::Launch,
    /// The generation's queues (`None` when they were taken already).
    pub lanes: Option<GenQueues>,
    pub reply: oneshot::Sender<Result<super::generation::Launched, String>>,
}

#[derive(Debug, Default)]
struct State {
    peers: PeerInfo,
    handshake: Handshake,
    /// `resources/subscribe` requests forwarded and not yet answered: id → (URI, params).
    subscribing: HashMap<IdKey, (String, Value)>,
    /// Host → server requests awaiting the server's response.
    host_pending: HashMap<IdKey, Pending>,
    /// Server → host requests awaiting the host's response, by the id the host saw.
    server_pending: HashMap<IdKey, ServerPending>,
    /// rootfence → host requests.
    own_host: HashMap<IdKey, OwnRequest>,
    /// rootfence → server requests (the handshake replayed to a new generation).
    own_server: HashMap<IdKey, (Gen, OwnRequest)>,
    /// Host requests rootfence answered itself (their cancellations are dropped).
    answered_locally: Remembered,
    /// Requests their sender cancelled, per side of the sender.
    cancelled_by_host: Remembered,
    cancelled_by_server: Remembered,
    /// The generation host messages go to now, and every generation still alive.
    current: Gen,
    gens: BTreeMap<Gen, GenLink>,
    init: InitPhase,
    /// The newest generation asked for (0 until the first is launched).
    launched: Gen,
    /// The first generation's queues, until it is launched (host messages wait there).
    first: Option<GenQueues>,
    /// Why the server can no longer answer, once it cannot.
    server_gone: Option<String>,
}

impl State {
    /// What a response arriving from `from` (for the server: from `generation`) may answer:
    /// whether one of rootfence's own requests, and the request in flight from the other side.
    fn answered(&self, from: Side, generation: Gen, key: &IdKey) -> (bool, Option<&Pending>) {
        match from {
            Side::Host => (
                self.own_host.contains_key(key),
                self.server_pending.get(key).map(|sp| &sp.pending),
            ),
            Side::Server => (
                self.own_server
                    .get(key)
                    .is_some_and(|(g, _)| *g == generation),
                self.host_pending
                    .get(key)
                    .filter(|p| p.generation == generation),
            ),
        }
    }
}

/// A bounded set of ids: the oldest are forgotten first.
#[derive(Debug, Default)]
struct Remembered {
    set: HashSet<IdKey>,
    order: VecDeque<IdKey>,
}

impl Remembered {
    fn insert(&mut self, key: IdKey) {
        if self.set.insert(key.clone()) {
            self.order.push_back(key);
            if self.order.len() > REMEMBERED_IDS
                && let Some(old) = self.order.pop_front()
            {
                self.set.remove(&old);
            }
        }
    }

    fn contains(&self, key: &IdKey) -> bool {
        self.set.contains(key)
    }

    fn remove(&mut self, key: &IdKey) -> bool {
        // The order queue keeps the key until it ages out; it is only a bound.
        self.set.remove(key)
    }
}

/// The session: shared state plus the queues toward each side.
#[derive(Debug)]
pub struct Session {
    state: Mutex<State>,
    to_host: Lanes,
    events: mpsc::Sender<Event>,
    own_prefix: String,
    next_own: AtomicU64,
    /// The key of the last host request numbered ([`Session::number_host_request`]).
    last_request: AtomicU64,
    /// Message counters.
    pub counters: Counters,
    /// Requests in flight whose answer the scan builds, by the side that answers them
    /// ([`Session::answers_built`]): changed under the state lock, read without it.
    answers_built: [AtomicUsize; 2],
    /// Told about each host request's life (telemetry).
    observer: Option<Arc<dyn super::Observer>>,
}

impl Session {
    pub(crate) fn new(
        to_host: Lanes,
        events: mpsc::Sender<Event>,
        observer: Option<Arc<dyn super::Observer>>,
    ) -> Self {
        let (link, first) = GenLink::new();
        Session {
            state: Mutex::new(State {
                current: 1,
                gens: BTreeMap::from([(1, link)]),
                first: Some(first),
                ..State::default()
            }),
            to_host,
            events,
            own_prefix: format!("rootfence-{:016x}-", random_u64()),
            next_own: AtomicU64::new(1),
            last_request: AtomicU64::new(0),
            counters: Counters::default(),
            answers_built: Default::default(),
            observer,
        }
    }

    /// Numbers a host request the relay routes (1, 2, ... in the order they arrive): its
    /// session-unique key (issue 29). A JSON-RPC id does not name a request in a log (every
    /// session starts at `1`, and an id is used again once answered); the key does, and it
    /// travels with the request to its answer ([`Pending::request`]), so the interceptor
    /// keeps no table and takes no lock for it.
    pub(crate) fn number_host_request(&self) -> u64 {
        self.last_request.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Who is told about each host request's life, if anyone.
    pub(crate) fn observer(&self) -> Option<&dyn super::Observer> {
        self.observer.as_deref()
    }

    /// Tells the observer that these host requests lost their server.
    fn observe_gone(&self, taken: &[Pending]) {
        if let Some(o) = self.observer() {
            for p in taken {
                o.answered(&p.id, super::Answer::ServerGone);
            }
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock would be a bug; the maps stay consistent either way,
        // so keep serving rather than cascading the panic into every later message.
        crate::relock(&self.state)
    }

    /// What is known about the peers so far.
    pub fn peers(&self) -> PeerInfo {
        self.state().peers.clone()
    }

    /// The negotiated (or latest seen) protocol revision.
    pub fn revision(&self) -> Option<Revision> {
        self.state().peers.version.clone()
    }

    /// The server generation host messages go to now.
    pub fn generation(&self) -> Gen {
        self.state().current
    }

    /// The host's handshake and live subscriptions, for a new generation.
    pub fn handshake(&self) -> Handshake {
        self.state().handshake.clone()
    }

    /// Asks the relay for a new server generation (the first one, when the relay was started
    /// without a command, or the next one). From this call on, host messages go to the new
    /// generation, held until it is up; so a decision made under new roots is never carried
    /// out by a server confined to the old ones. The answer comes once the generation is
    /// running and has been brought to where the host stands (handshake replayed,
    /// subscriptions renewed), or with the reason it could not start.
    pub fn launch(
        &self,
        launch: super::generation::Launch,
    ) -> oneshot::Receiver<Result<super::generation::Launched, String>> {
        let (reply, rx) = oneshot::channel();
        let (generation, lanes) = {
            let mut st = self.state();
            if st.server_gone.is_some() {
                drop(st);
                let _ = reply.send(Err("the server is gone".into()));
                return rx;
            }
            st.launched += 1;
            let generation = st.launched;
            if generation == 1 {
                (1, st.first.take())
            } else {
                let (link, queues) = GenLink::new();
                st.gens.insert(generation, link);
                st.current = generation;
                (generation, Some(queues))
            }
        };
        self.counters.generations.fetch_add(1, Ordering::Relaxed);
        let request = LaunchRequest {
            generation,
            launch,
            lanes,
            reply,
        };
        if let Err(e) = self.events.try_send(Event::Launch(Box::new(request)))
            && let Event::Launch(request) = e.into_inner()
        {
            let _ = request
                .reply
                .send(Err("the relay cannot start a server now".into()));
        }
        rx
    }

    /// Whether the host sent anything meant for the server yet.
    pub(crate) fn host_spoke(&self) -> bool {
        self.state().init != InitPhase::NotSeen
    }

    /// Whether any server generation was asked for.
    pub fn launched(&self) -> bool {
        self.state().launched > 0
    }

    /// The live generations older than `generation`.
    pub(crate) fn older_than(&self, generation: Gen) -> Vec<Gen> {
        self.state()
            .gens
            .keys()
            .copied()
            .filter(|g| *g < generation)
            .collect()
    }

    /// Why the server can no longer answer, if it cannot.
    pub fn server_gone_cause(&self) -> Option<String> {
        self.state().server_gone.clone()
    }
}

/// 64 random bits without a dependency: std's `RandomState` is seeded from the OS's random
/// source. The value only has to be unguessable by the peers, which never see it anyway.
pub(crate) fn random_u64() -> u64 {
    use std::hash::BuildHasher;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    std::collections::hash_map::RandomState::new().hash_one((nanos, std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::methods as m;

    fn id(text: &str) -> Id {
        let raw: Box<serde_json::value::RawValue> = serde_json::from_str(text).unwrap();
        Id::from_raw(&raw).unwrap()
    }

    struct Fixture {
        s: Arc<Session>,
        host: LaneReceivers,
        _events: mpsc::Receiver<Event>,
    }

    fn session() -> Fixture {
        let (host, host_rx) = Lanes::new();
        let (events, events_rx) = mpsc::channel(8);
        Fixture {
            s: Arc::new(Session::new(host, events, None)),
            host: host_rx,
            _events: events_rx,
        }
    }

    fn pending_method(m: Matched) -> Option<String> {
        match m {
            Matched::Pending { pending, .. } => Some(pending.method.to_string()),
            _ => None,
        }
    }

    #[tokio::test]
    async fn id_spaces_are_independent_and_own_ids_are_reserved() {
        let mut f = session();
        let s = &f.s;
        s.track_host_request(&id("1"), m::TOOLS_CALL.into(), None, false);
        s.track_server_request(1, &id("1"), m::ROOTS_LIST.into(), false);
        // The host's response to the server's request 1 and the server's response to the
        // host's request 1 are different things.
        assert_eq!(
            pending_method(s.match_response(Side::Host, 0, &id("1"))).as_deref(),
            Some(m::ROOTS_LIST)
        );
        assert_eq!(
            pending_method(s.match_response(Side::Server, 1, &id("1"))).as_deref(),
            Some(m::TOOLS_CALL)
        );
        assert!(matches!(
            s.match_response(Side::Server, 1, &id("1")),
            Matched::Unmatched
        ));
        assert!(matches!(
            s.match_response(Side::Server, 1, &id("\"1\"")),
            Matched::Unmatched
        ));

        let rx = s.request_host(m::ROOTS_LIST, None);
        let Some(Outgoing::Line(line)) = f.host.prio.recv().await else {
            panic!("no request sent")
        };
        let sent: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(sent["method"], m::ROOTS_LIST);
        let own_id = id(&sent["id"].to_string());
        assert!(s.is_reserved_id(&own_id));
        assert!(!s.is_reserved_id(&id("\"rootfence-\"")));
        match s.match_response(Side::Host, 0, &own_id) {
            Matched::Own(own) => own.deliver(serde_json::json!({"result": {"roots": []}})),
            other => panic!("own response not matched: {other:?}"),
        }
        assert_eq!(rx.await.unwrap()["result"]["roots"], serde_json::json!([]));
    }

    #[test]
    fn later_generations_get_host_ids_of_their_own() {
        let f = session();
        let s = &f.s;
        // Two generations both use id 0 for a request to the host.
        let first = s.track_server_request(1, &id("0"), m::SAMPLING_CREATE_MESSAGE.into(), false);
        let second = s.track_server_request(2, &id("0"), m::ROOTS_LIST.into(), false);
        assert_eq!(
            first.raw(),
            "0",
            "the first generation's ids pass untouched"
        );
        assert!(s.is_reserved_id(&second));
        match s.match_response(Side::Host, 0, &second) {
            Matched::Pending { pending, restore } => {
                assert_eq!(pending.generation, 2);
                assert_eq!(restore.unwrap().raw(), "0");
            }
            other => panic!("{other:?}"),
        }
        match s.match_response(Side::Host, 0, &first) {
            Matched::Pending { pending, restore } => {
                assert_eq!(pending.generation, 1);
                assert!(restore.is_none());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_response_is_matched_only_from_the_generation_asked() {
        let f = session();
        let s = &f.s;
        s.track_host_request(&id("7"), m::TOOLS_CALL.into(), None, false);
        assert!(matches!(
            s.match_response(Side::Server, 2, &id("7")),
            Matched::Unmatched
        ));
        assert!(pending_method(s.match_response(Side::Server, 1, &id("7"))).is_some());
    }

    #[test]
    fn cancellation_of_locally_answered_requests_is_dropped() {
        let f = session();
        let s = &f.s;
        s.answered_locally(&id("5"));
        assert!(s.cancel(Side::Host, &id("5")).is_none());
        s.track_host_request(&id("6"), "x".into(), None, false);
        assert_eq!(s.cancel(Side::Host, &id("6")), Some(Some(1)));
        assert!(matches!(
            s.match_response(Side::Server, 1, &id("6")),
            Matched::Cancelled
        ));
    }

    /// The attack on the scan's guess for a response whose `result` comes before its `id`: a
    /// server leaves many requests to the host unanswered, so that a guess walking the requests
    /// in flight costs each host answer O(pending). The guess reads one count instead; the
    /// count follows the tables through every way a request leaves them.
    #[test]
    fn many_unanswered_server_requests_are_counted_not_walked_per_host_answer() {
        let f = session();
        let s = &f.s;
        for n in 0..10_000 {
            let built = n % 2 == 0;
            s.track_server_request(
                1,
                &id(&n.to_string()),
                m::SAMPLING_CREATE_MESSAGE.into(),
                built,
            );
        }
        assert_eq!(s.answers_built(Side::Host), 5_000);
        assert_eq!(s.answers_built(Side::Server), 0);
        assert!(pending_method(s.match_response(Side::Host, 0, &id("0"))).is_some());
        assert!(pending_method(s.match_response(Side::Host, 0, &id("1"))).is_some());
        assert_eq!(s.cancel(Side::Server, &id("2")), Some(None));
        assert_eq!(s.answers_built(Side::Host), 4_998);
        // A replaced entry leaves the count as it found it.
        s.track_server_request(1, &id("4"), m::SAMPLING_CREATE_MESSAGE.into(), false);
        assert_eq!(s.answers_built(Side::Host), 4_997);

        s.track_host_request(&id("1"), m::TOOLS_CALL.into(), None, true);
        s.track_host_request(&id("2"), m::TOOLS_CALL.into(), None, true);
        s.track_host_request(&id("3"), m::RESOURCES_READ.into(), None, false);
        assert_eq!(s.answers_built(Side::Server), 2);
        assert!(pending_method(s.match_response(Side::Server, 1, &id("1"))).is_some());
        assert_eq!(s.cancel(Side::Host, &id("3")), Some(Some(1)));
        assert_eq!(s.answers_built(Side::Server), 1);
        s.take_pending_of(1);
        assert_eq!(
            (s.answers_built(Side::Host), s.answers_built(Side::Server)),
            (0, 0)
        );
        s.track_host_request(&id("4"), m::TOOLS_CALL.into(), None, true);
        s.server_gone("exited");
        assert_eq!(s.answers_built(Side::Server), 0);
    }

    #[test]
    fn remembered_ids_are_bounded() {
        let mut r = Remembered::default();
        for n in 0..(REMEMBERED_IDS + 10) {
            r.insert(IdKey::Int(n.to_string().into()));
        }
        assert_eq!(r.set.len(), REMEMBERED_IDS);
        assert!(!r.contains(&IdKey::Int("0".into())));
        assert!(r.contains(&IdKey::Int((REMEMBERED_IDS + 9).to_string().into())));
    }

    #[test]
    fn server_gone_takes_every_pending_host_request() {
        let f = session();
        let s = &f.s;
        s.track_host_request(&id("1"), "a".into(), None, false);
        s.track_host_request(&id("2"), "b".into(), None, false);
        let gone = s.server_gone("exited");
        assert_eq!(gone.len(), 2);
        assert_eq!(s.pending_count(1), 0);
        assert_eq!(s.server_gone_cause().as_deref(), Some("exited"));
        // Once gone, a new host request is refused rather than left waiting forever.
        assert!(
            s.track_host_request(&id("3"), "c".into(), None, false)
                .is_none()
        );
        assert_eq!(s.pending_count(1), 0);
    }
}
