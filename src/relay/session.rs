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

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};

use crate::jsonrpc::{Id, IdKey};
use crate::mcp::Revision;

/// A server generation: 1 for the first server process of a session, then one more for each
/// restart under new grants.
pub type Gen = u32;

/// One side of the relay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The MCP host (client), on rootfence's stdin/stdout.
    Host,
    /// The wrapped MCP server, on the child's pipes.
    Server,
}

impl Side {
    /// The other side.
    pub fn other(self) -> Side {
        match self {
            Side::Host => Side::Server,
            Side::Server => Side::Host,
        }
    }

    /// `"host"` or `"server"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Host => "host",
            Side::Server => "server",
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
    /// The request's method.
    pub method: Arc<str>,
    /// When it was sent.
    pub started: Instant,
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

/// An item for a writer task.
#[derive(Debug)]
pub(crate) enum Outgoing {
    /// One message, without its newline.
    Line(Bytes),
    /// Flush and close the stream (the child's stdin, at shutdown).
    Close,
}

/// Messages a side may have queued on its priority lane before rootfence concludes that it
/// does not read at all.
const PRIO_MESSAGES: usize = 4096;
/// Bytes likewise.
const PRIO_BYTES: usize = 64 << 20;
/// Messages queued per lane for forwarding before the forwarder waits (flow control).
pub(crate) const MAIN_QUEUE: usize = 1024;
/// Ids remembered for dropping late messages about finished requests (answered by rootfence,
/// or cancelled), per kind: enough for any real burst, bounded against a flood.
const REMEMBERED_IDS: usize = 4096;

/// The queues toward one destination (the host, or one server generation).
///
/// `main` carries forwarded messages: a forwarder waits while it is full, which slows the
/// side it reads from (flow control). `prio` carries what rootfence itself says to this
/// destination (answers to its requests, rootfence's own requests, the handshake replayed to a
/// new generation): it is never waited on, so a pump answering the side it reads from cannot
/// deadlock with a peer blocked on its own output — but it is bounded, and a peer that lets it
/// fill up does not read at all (see [`Session::stuck`]).
#[derive(Debug, Clone)]
pub(crate) struct Lanes {
    main: mpsc::Sender<Outgoing>,
    prio: mpsc::Sender<Outgoing>,
    prio_bytes: Arc<AtomicUsize>,
}

/// The receiving ends of [`Lanes`], for the writer task.
#[derive(Debug)]
pub(crate) struct LaneReceivers {
    pub main: mpsc::Receiver<Outgoing>,
    pub prio: mpsc::Receiver<Outgoing>,
    pub prio_bytes: Arc<AtomicUsize>,
}

impl Lanes {
    pub(crate) fn new() -> (Lanes, LaneReceivers) {
        let (main, main_rx) = mpsc::channel(MAIN_QUEUE);
        let (prio, prio_rx) = mpsc::channel(PRIO_MESSAGES);
        let bytes = Arc::new(AtomicUsize::new(0));
        (
            Lanes {
                main,
                prio,
                prio_bytes: Arc::clone(&bytes),
            },
            LaneReceivers {
                main: main_rx,
                prio: prio_rx,
                prio_bytes: bytes,
            },
        )
    }

    #[cfg(test)]
    pub(crate) fn main_for_test(&self) -> &mpsc::Sender<Outgoing> {
        &self.main
    }

    #[cfg(test)]
    pub(crate) fn prio_for_test(&self, line: Bytes) {
        assert!(matches!(self.try_prio(line), Ok(true)));
    }

    /// Queues on the priority lane without waiting. `Err` means the lane is full (the peer
    /// does not read); `Ok(false)` that the writer is gone.
    fn try_prio(&self, line: Bytes) -> Result<bool, ()> {
        let len = line.len();
        if self.prio_bytes.load(Ordering::Relaxed) + len > PRIO_BYTES {
            return Err(());
        }
        match self.prio.try_send(Outgoing::Line(line)) {
            Ok(()) => {
                self.prio_bytes.fetch_add(len, Ordering::Relaxed);
                Ok(true)
            }
            Err(mpsc::error::TrySendError::Full(_)) => Err(()),
            Err(mpsc::error::TrySendError::Closed(_)) => Ok(false),
        }
    }
}

/// A live server generation, as the router sees it.
#[derive(Debug)]
pub(crate) struct GenLink {
    lanes: Lanes,
    /// Opens the generation's `main` lane: closed while the handshake is replayed to it (or,
    /// for the first generation, until the host's `initialize` went ahead of everything).
    gate: watch::Sender<bool>,
}

impl GenLink {
    pub(crate) fn new(lanes: Lanes, gate: watch::Sender<bool>) -> GenLink {
        GenLink { lanes, gate }
    }
}

/// Where the first generation stands with the host's `initialize`, which must reach it
/// before anything else the host sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum InitPhase {
    /// No `initialize` seen: the first generation's lane opens on the first other message.
    NotSeen,
    /// Seen and not yet decided (an interceptor may hold it until the roots are known).
    Held,
    /// Forwarded or answered: the lane is open.
    Done,
}

/// Something the relay's main loop must act on.
#[derive(Debug)]
pub(crate) enum Event {
    /// A destination stopped reading: its priority lane overflowed.
    Stuck { side: Side, generation: Gen },
}

/// A request for a new server generation, handled by the relay's main loop.
pub(crate) struct LaunchRequest {
    pub generation: Gen,
    pub launch: super::generation::Launch,
    /// The generation's queues (`None` for the first generation: the relay holds them).
    pub lanes: Option<(LaneReceivers, watch::Receiver<bool>)>,
    pub reply: oneshot::Sender<Result<super::generation::Launched, String>>,
}

impl std::fmt::Debug for LaunchRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LaunchRequest").finish_non_exhaustive()
    }
}

#[derive(Debug)]
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
    /// Why the server can no longer answer, once it cannot.
    server_gone: Option<String>,
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
            if self.order.len() > REMEMBERED_IDS {
                if let Some(old) = self.order.pop_front() {
                    self.set.remove(&old);
                }
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

/// Why a message could not be sent.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The writer for that side has stopped (the peer closed its end).
    #[error("the {0} side is closed")]
    Closed(&'static str),
}

/// The session: shared state plus the queues toward each side.
#[derive(Debug)]
pub struct Session {
    state: Mutex<State>,
    to_host: Lanes,
    events: mpsc::Sender<Event>,
    launches: mpsc::Sender<LaunchRequest>,
    own_prefix: String,
    next_own: AtomicU64,
    /// Message counters.
    pub counters: Counters,
    /// Told about each host request's life (telemetry).
    observer: Option<Arc<dyn super::Observer>>,
}

impl Session {
    pub(crate) fn new(
        to_host: Lanes,
        first: GenLink,
        events: mpsc::Sender<Event>,
        launches: mpsc::Sender<LaunchRequest>,
        observer: Option<Arc<dyn super::Observer>>,
    ) -> Self {
        let mut gens = BTreeMap::new();
        gens.insert(1, first);
        Session {
            state: Mutex::new(State {
                peers: PeerInfo::default(),
                handshake: Handshake::default(),
                subscribing: HashMap::new(),
                host_pending: HashMap::new(),
                server_pending: HashMap::new(),
                own_host: HashMap::new(),
                own_server: HashMap::new(),
                answered_locally: Remembered::default(),
                cancelled_by_host: Remembered::default(),
                cancelled_by_server: Remembered::default(),
                current: 1,
                gens,
                init: InitPhase::NotSeen,
                launched: 0,
                server_gone: None,
            }),
            to_host,
            events,
            launches,
            own_prefix: format!("rootfence-{:016x}-", random_u64()),
            next_own: AtomicU64::new(1),
            counters: Counters::default(),
            observer,
        }
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
        self.state.lock().unwrap_or_else(|e| e.into_inner())
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
            if st.launched == 0 {
                st.launched = 1;
                (1, None)
            } else {
                let generation = st.launched + 1;
                st.launched = generation;
                let (lanes, receivers) = Lanes::new();
                let (gate, gate_rx) = watch::channel(false);
                st.gens.insert(generation, GenLink::new(lanes, gate));
                st.current = generation;
                (generation, Some((receivers, gate_rx)))
            }
        };
        self.counters.generations.fetch_add(1, Ordering::Relaxed);
        let request = LaunchRequest {
            generation,
            launch,
            lanes,
            reply,
        };
        if let Err(e) = self.launches.try_send(request) {
            let request = match e {
                mpsc::error::TrySendError::Full(r) | mpsc::error::TrySendError::Closed(r) => r,
            };
            let _ = request
                .reply
                .send(Err("the relay cannot start a server now".into()));
        }
        rx
    }

    /// Notes that the first generation was started by the relay itself (a command given up
    /// front).
    pub(crate) fn mark_launched(&self) {
        let mut st = self.state();
        st.launched = st.launched.max(1);
        drop(st);
        self.counters.generations.fetch_add(1, Ordering::Relaxed);
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

    /// Forwards a message from the other side, waiting while the destination's queue is full
    /// (flow control). Toward the server it goes to the current generation.
    pub async fn send(&self, to: Side, line: Bytes) -> Result<(), SendError> {
        let lanes = match to {
            Side::Host => self.to_host.clone(),
            Side::Server => match self.server_lanes(None) {
                Some(l) => l,
                None => return Err(SendError::Closed("server")),
            },
        };
        lanes
            .main
            .send(Outgoing::Line(line))
            .await
            .map_err(|_| SendError::Closed(to.as_str()))
    }

    /// Forwards a message to one server generation (`None`: the current one), waiting while
    /// its queue is full.
    pub(crate) async fn send_server(&self, generation: Option<Gen>, line: Bytes) -> bool {
        match self.server_lanes(generation) {
            Some(lanes) => lanes.main.send(Outgoing::Line(line)).await.is_ok(),
            None => false,
        }
    }

    fn server_lanes(&self, generation: Option<Gen>) -> Option<Lanes> {
        let st = self.state();
        let g = generation.unwrap_or(st.current);
        st.gens.get(&g).map(|l| l.lanes.clone())
    }

    /// Sends a message of rootfence's own (or an answer) to the host without ever waiting:
    /// used when a pump answers the side it reads from, which must not block on that side's
    /// input (a peer that is blocked writing its output does not read its input). Bounded: a
    /// host that lets the queue fill up does not read, and the session ends.
    pub fn send_detached(self: &Arc<Self>, to: Side, line: Bytes) {
        match to {
            Side::Host => {
                if self.to_host.try_prio(line).is_err() {
                    self.stuck(Side::Host, 0);
                }
            }
            Side::Server => {
                let g = self.generation();
                self.send_prio_server(g, line);
            }
        }
    }

    /// Sends to one server generation on its priority lane (ahead of forwarded messages, and
    /// past the gate of a generation being brought up).
    pub(crate) fn send_prio_server(&self, generation: Gen, line: Bytes) {
        let lanes = self.state().gens.get(&generation).map(|l| l.lanes.clone());
        match lanes.map(|l| l.try_prio(line)) {
            Some(Err(())) => self.stuck(Side::Server, generation),
            Some(Ok(_)) => {}
            None => {
                tracing::debug!("dropping a message for server generation {generation}: it is gone")
            }
        }
    }

    fn stuck(&self, side: Side, generation: Gen) {
        tracing::warn!(
            "the {} does not read its input (its queue is full)",
            match side {
                Side::Host => "host".to_owned(),
                Side::Server => format!("server (generation {generation})"),
            }
        );
        let _ = self.events.try_send(Event::Stuck { side, generation });
    }

    /// Closes the host's output (rootfence's stdout) after everything queued so far.
    pub(crate) async fn close_host_output(&self) {
        let _ = self.to_host.main.send(Outgoing::Close).await;
    }

    /// Closes one generation's input (its stdin) after everything queued so far, and stops
    /// routing to it.
    pub(crate) async fn close_server_input(&self, generation: Gen) {
        let link = self.state().gens.remove(&generation);
        if let Some(link) = link {
            link.gate.send_replace(true);
            let _ = link.lanes.main.send(Outgoing::Close).await;
        }
    }

    /// Opens a generation's forwarded lane.
    pub(crate) fn open_gate(&self, generation: Gen) {
        if let Some(link) = self.state().gens.get(&generation) {
            link.gate.send_replace(true);
        }
    }

    /// Notes that the host sent something for the server: the first generation's lane opens
    /// unless the host's `initialize` is still being decided (it must go first).
    pub(crate) fn host_message_seen(&self, is_initialize: bool) {
        let mut st = self.state();
        match (st.init, is_initialize) {
            (InitPhase::NotSeen, true) => st.init = InitPhase::Held,
            (InitPhase::NotSeen, false) => {
                st.init = InitPhase::Done;
                if let Some(link) = st.gens.get(&1) {
                    link.gate.send_replace(true);
                }
            }
            _ => {}
        }
    }

    /// The host's `initialize` was forwarded (or answered): what the host sends after it may
    /// follow it to the first generation now.
    pub(crate) fn initialize_decided(&self) {
        let mut st = self.state();
        if st.init != InitPhase::Done {
            st.init = InitPhase::Done;
            if let Some(link) = st.gens.get(&1) {
                link.gate.send_replace(true);
            }
        }
    }

    /// Sends a request of rootfence's own to the host; the returned receiver yields the
    /// host's whole response message. The id can never collide with a server's request id.
    pub fn request_host(
        self: &Arc<Self>,
        method: &str,
        params: Option<Value>,
    ) -> oneshot::Receiver<Value> {
        let (id, line, reply, rx) = self.own_request(method, params);
        self.state().own_host.insert(id.key().clone(), reply);
        self.send_detached(Side::Host, line);
        rx
    }

    /// Sends a request of rootfence's own to one server generation, on its priority lane.
    pub(crate) fn request_server(
        &self,
        generation: Gen,
        method: &str,
        params: Option<Value>,
    ) -> oneshot::Receiver<Value> {
        let (id, line, reply, rx) = self.own_request(method, params);
        self.state()
            .own_server
            .insert(id.key().clone(), (generation, reply));
        self.send_prio_server(generation, line);
        rx
    }

    /// Sends a notification of rootfence's own to one server generation.
    pub(crate) fn notify_server(&self, generation: Gen, method: &str, params: Option<Value>) {
        let mut msg = serde_json::json!({ "jsonrpc": "2.0", "method": method });
        if let Some(params) = params {
            msg["params"] = params;
        }
        let line = serde_json::to_vec(&msg).expect("a JSON value always serializes");
        self.send_prio_server(generation, line.into());
    }

    fn own_request(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> (Id, Bytes, OwnRequest, oneshot::Receiver<Value>) {
        let id = self.own_id("");
        let (reply, rx) = oneshot::channel();
        let method: Arc<str> = method.into();
        let mut msg =
            serde_json::json!({ "jsonrpc": "2.0", "id": id.to_value(), "method": &*method });
        if let Some(params) = params {
            msg["params"] = params;
        }
        let line = serde_json::to_vec(&msg).expect("a JSON value always serializes");
        let own = OwnRequest {
            method,
            started: Instant::now(),
            reply,
        };
        (id, line.into(), own, rx)
    }

    fn own_id(&self, infix: &str) -> Id {
        let n = self.next_own.fetch_add(1, Ordering::Relaxed);
        Id::from_string(&format!("{}{infix}{n}", self.own_prefix))
    }

    /// True if `id` lies in rootfence's own id namespace. A request with such an id is
    /// refused: a peer could otherwise steal the answer to one of rootfence's own requests.
    pub fn is_reserved_id(&self, id: &Id) -> bool {
        matches!(id.key(), IdKey::Str(s) if s.starts_with(&self.own_prefix))
    }

    /// True if a request with this id from `from` is still in flight.
    pub fn is_in_flight(&self, from: Side, id: &Id) -> bool {
        let st = self.state();
        match from {
            Side::Host => st.host_pending.contains_key(id.key()),
            Side::Server => st.server_pending.contains_key(id.key()),
        }
    }

    /// Records a host request as forwarded to the current generation and awaiting its
    /// response; returns that generation. `None` once the server is gone: nobody would answer
    /// it, and the caller must answer it instead. (Checked under the same lock as
    /// [`Self::server_gone`] drains the table, so no request can slip in between.)
    pub(crate) fn track_host_request(&self, id: &Id, method: Arc<str>) -> Option<Gen> {
        let mut st = self.state();
        if st.server_gone.is_some() {
            return None;
        }
        let generation = st.current;
        st.cancelled_by_host.remove(id.key());
        st.host_pending.insert(
            id.key().clone(),
            Pending {
                id: id.clone(),
                method,
                started: Instant::now(),
                generation,
            },
        );
        Some(generation)
    }

    /// Records a request from a server generation as forwarded to the host. Returns the id the
    /// host sees: the server's own for the first generation, one in rootfence's namespace for
    /// later ones.
    pub(crate) fn track_server_request(&self, generation: Gen, id: &Id, method: Arc<str>) -> Id {
        let host_id = if generation > 1 {
            self.own_id(&format!("g{generation}-"))
        } else {
            id.clone()
        };
        let mut st = self.state();
        st.cancelled_by_server.remove(host_id.key());
        st.server_pending.insert(
            host_id.key().clone(),
            ServerPending {
                pending: Pending {
                    id: id.clone(),
                    method,
                    started: Instant::now(),
                    generation,
                },
                original: (generation > 1).then(|| id.clone()),
            },
        );
        host_id
    }

    /// The id the host knows a server generation's request by (for its cancellation).
    pub(crate) fn host_id_of_server_request(&self, generation: Gen, id: &Id) -> Option<Id> {
        if generation == 1 {
            return Some(id.clone());
        }
        let st = self.state();
        st.server_pending.iter().find_map(|(k, sp)| {
            (sp.pending.generation == generation && sp.pending.id == *id).then(|| match k {
                IdKey::Str(s) => Id::from_string(s),
                IdKey::Int(_) => id.clone(),
            })
        })
    }

    /// Records that rootfence answered a host request itself.
    pub(crate) fn answered_locally(&self, id: &Id) {
        self.counters
            .answered_locally
            .fetch_add(1, Ordering::Relaxed);
        self.state().answered_locally.insert(id.key().clone());
    }

    /// Matches a response arriving from `from` (for the server: from `generation`) to the
    /// request it answers.
    pub(crate) fn match_response(&self, from: Side, generation: Gen, id: &Id) -> Matched {
        let mut st = self.state();
        match from {
            Side::Host => {
                if let Some(own) = st.own_host.remove(id.key()) {
                    return Matched::Own(own);
                }
                if let Some(sp) = st.server_pending.remove(id.key()) {
                    return Matched::Pending {
                        pending: sp.pending,
                        restore: sp.original,
                    };
                }
                if st.cancelled_by_server.remove(id.key()) {
                    return Matched::Cancelled;
                }
            }
            Side::Server => {
                if let Some((g, _)) = st.own_server.get(id.key()) {
                    if *g == generation {
                        let (_, own) = st.own_server.remove(id.key()).expect("just seen");
                        return Matched::Own(own);
                    }
                }
                if st
                    .host_pending
                    .get(id.key())
                    .is_some_and(|p| p.generation == generation)
                {
                    let pending = st.host_pending.remove(id.key()).expect("just seen");
                    return Matched::Pending {
                        pending,
                        restore: None,
                    };
                }
                if st.cancelled_by_host.remove(id.key()) {
                    return Matched::Cancelled;
                }
            }
        }
        Matched::Unmatched
    }

    /// Handles `notifications/cancelled` from `from` for `request_id`. Returns `None` when the
    /// notification must be dropped (the request was answered by rootfence, so the other side
    /// never saw it), else the generation a host cancellation goes to (the one the request
    /// was sent to; `None` inside for the current one).
    pub(crate) fn cancel(&self, from: Side, request_id: &Id) -> Option<Option<Gen>> {
        let mut st = self.state();
        match from {
            Side::Host => {
                if st.answered_locally.contains(request_id.key()) {
                    return None;
                }
                if let Some(p) = st.host_pending.remove(request_id.key()) {
                    st.cancelled_by_host.insert(request_id.key().clone());
                    st.handshake.listens.retain(|(i, _)| i != request_id);
                    drop(st);
                    if let Some(o) = self.observer() {
                        o.answered(&p.id, super::Answer::Cancelled);
                    }
                    return Some(Some(p.generation));
                }
                Some(None)
            }
            Side::Server => {
                if st.server_pending.remove(request_id.key()).is_some() {
                    st.cancelled_by_server.insert(request_id.key().clone());
                }
                Some(None)
            }
        }
    }

    /// Records the host's `initialize` request.
    pub(crate) fn record_initialize(&self, msg: &Value) {
        let params = &msg["params"];
        let mut st = self.state();
        st.peers.requested_version = params["protocolVersion"].as_str().map(Revision::parse);
        st.peers.client_info = params.get("clientInfo").cloned();
        st.peers.client_capabilities = params.get("capabilities").cloned();
    }

    /// Records a host message forwarded to the server that a later generation must be told
    /// again: the handshake, the log level, subscriptions.
    pub(crate) fn record_forwarded(&self, method: &str, id: Option<&Id>, line: &Bytes) {
        use crate::mcp::methods as m;
        let params = || -> Option<Value> {
            let v: Value = serde_json::from_slice(line).ok()?;
            v.get("params").cloned()
        };
        let mut st = self.state();
        match method {
            m::INITIALIZE => st.handshake.initialize = params(),
            m::INITIALIZED => st.handshake.initialized = true,
            m::LOGGING_SET_LEVEL => st.handshake.log_level = params(),
            m::RESOURCES_SUBSCRIBE => {
                if let (Some(id), Some(p)) = (id, params()) {
                    if let Some(uri) = p.get("uri").and_then(Value::as_str) {
                        let uri = uri.to_owned();
                        st.subscribing.insert(id.key().clone(), (uri, p));
                    }
                }
            }
            m::RESOURCES_UNSUBSCRIBE => {
                if let Some(uri) = params().and_then(|p| p.get("uri")?.as_str().map(str::to_owned))
                {
                    st.handshake.subscriptions.remove(&uri);
                }
            }
            m::SUBSCRIPTIONS_LISTEN => {
                if let Some(id) = id {
                    st.handshake.listens.push((id.clone(), line.clone()));
                }
            }
            _ => {}
        }
    }

    /// Records the outcome of a host request the server answered, where a later generation
    /// must know it: a subscription that took, a listen that ended.
    pub(crate) fn record_answered(&self, method: &str, id: &Id, ok: bool) {
        use crate::mcp::methods as m;
        let mut st = self.state();
        match method {
            m::RESOURCES_SUBSCRIBE => {
                if let Some((uri, params)) = st.subscribing.remove(id.key()) {
                    if ok {
                        st.handshake.subscriptions.insert(uri, params);
                    }
                }
            }
            m::SUBSCRIPTIONS_LISTEN => st.handshake.listens.retain(|(i, _)| i != id),
            _ => {}
        }
    }

    /// Records the server's answer to `initialize` or `server/discover`.
    pub(crate) fn record_server_info(&self, msg: &Value, generation: Gen) {
        let result = &msg["result"];
        let mut st = self.state();
        if let Some(v) = result["protocolVersion"].as_str() {
            st.peers.version = Some(Revision::parse(v));
        }
        if let Some(info) = result.get("serverInfo") {
            st.peers.server_info = Some(info.clone());
        }
        if let Some(caps) = result.get("capabilities") {
            st.peers.server_capabilities = Some(caps.clone());
        }
        if generation == 1 && st.handshake.first_result.is_none() && result.is_object() {
            st.handshake.first_result = Some(result.clone());
        }
    }

    /// Records the `_meta` protocol version and client capabilities of a 2026-07-28 request
    /// from the host. (Only the host speaks for the host: the same keys in a server's request
    /// are never recorded.)
    pub(crate) fn record_meta(&self, version: &str, caps: Option<&serde_json::value::RawValue>) {
        let mut st = self.state();
        if st.peers.version.as_ref().map(Revision::as_str) != Some(version) {
            st.peers.version = Some(Revision::parse(version));
        }
        if let Some(caps) = caps.and_then(|raw| serde_json::from_str(raw.get()).ok()) {
            st.peers.client_capabilities = Some(caps);
        }
    }

    /// Moves the host's `subscriptions/listen` requests in flight to a new generation (their
    /// lines are replayed to it; the old generation's answers to them are then unmatched).
    pub(crate) fn move_listens(&self, generation: Gen) -> Vec<Bytes> {
        let mut st = self.state();
        let listens = st.handshake.listens.clone();
        let mut lines = Vec::new();
        for (id, line) in listens {
            if let Some(p) = st.host_pending.get_mut(id.key()) {
                p.generation = generation;
                lines.push(line);
            }
        }
        lines
    }

    /// Takes the host requests still waiting for one (old) generation, so each can be answered
    /// with an error; the generation's own requests to the host are forgotten.
    pub(crate) fn take_pending_of(&self, generation: Gen) -> Vec<Pending> {
        let mut st = self.state();
        let ids: Vec<IdKey> = st
            .host_pending
            .iter()
            .filter(|(_, p)| p.generation == generation)
            .map(|(k, _)| k.clone())
            .collect();
        let taken: Vec<Pending> = ids
            .iter()
            .filter_map(|k| st.host_pending.remove(k))
            .collect();
        st.server_pending
            .retain(|_, sp| sp.pending.generation != generation);
        st.own_server.retain(|_, (g, _)| *g != generation);
        drop(st);
        self.observe_gone(&taken);
        taken
    }

    /// Takes the host requests waiting for one generation that were forwarded before
    /// `before`: what an unreadable answer from that generation may have been meant for.
    pub(crate) fn take_pending_before(&self, generation: Gen, before: Instant) -> Vec<Pending> {
        let mut st = self.state();
        let ids: Vec<IdKey> = st
            .host_pending
            .iter()
            .filter(|(_, p)| p.generation == generation && p.started <= before)
            .map(|(k, _)| k.clone())
            .collect();
        let taken: Vec<Pending> = ids
            .iter()
            .filter_map(|k| st.host_pending.remove(k))
            .collect();
        drop(st);
        self.observe_gone(&taken);
        taken
    }

    /// How many host requests are still waiting for one generation.
    pub(crate) fn pending_count(&self, generation: Gen) -> usize {
        self.state()
            .host_pending
            .values()
            .filter(|p| p.generation == generation)
            .count()
    }

    /// Marks the server as unable to answer (its last generation exited or closed its output,
    /// or could not start) and takes every host request still waiting, so each can be answered
    /// with an error.
    pub(crate) fn server_gone(&self, cause: &str) -> Vec<Pending> {
        let mut st = self.state();
        st.server_gone.get_or_insert_with(|| cause.to_owned());
        st.server_pending.clear();
        st.own_server.clear();
        let taken: Vec<Pending> = st.host_pending.drain().map(|(_, p)| p).collect();
        drop(st);
        self.observe_gone(&taken);
        taken
    }

    /// Why the server can no longer answer, if it cannot.
    pub fn server_gone_cause(&self) -> Option<String> {
        self.state().server_gone.clone()
    }

    /// The requests in flight in one direction, for diagnostics and tests.
    pub fn in_flight(&self, from: Side) -> Vec<Pending> {
        let st = self.state();
        match from {
            Side::Host => st.host_pending.values().cloned().collect(),
            Side::Server => st
                .server_pending
                .values()
                .map(|sp| sp.pending.clone())
                .collect(),
        }
    }
}

/// 64 random bits without a dependency: std's `RandomState` is seeded from the OS's random
/// source. The value only has to be unguessable by the peers, which never see it anyway.
fn random_u64() -> u64 {
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
        _first: LaneReceivers,
        _events: mpsc::Receiver<Event>,
        _launches: mpsc::Receiver<LaunchRequest>,
    }

    fn session() -> Fixture {
        let (host, host_rx) = Lanes::new();
        let (first, first_rx) = Lanes::new();
        let (events, events_rx) = mpsc::channel(8);
        let (launches, launches_rx) = mpsc::channel(8);
        let gate = watch::Sender::new(true);
        Fixture {
            s: Arc::new(Session::new(
                host,
                GenLink::new(first, gate),
                events,
                launches,
                None,
            )),
            host: host_rx,
            _first: first_rx,
            _events: events_rx,
            _launches: launches_rx,
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
        s.track_host_request(&id("1"), m::TOOLS_CALL.into());
        s.track_server_request(1, &id("1"), m::ROOTS_LIST.into());
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
        let first = s.track_server_request(1, &id("0"), m::SAMPLING_CREATE_MESSAGE.into());
        let second = s.track_server_request(2, &id("0"), m::ROOTS_LIST.into());
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
        s.track_host_request(&id("7"), m::TOOLS_CALL.into());
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
        s.track_host_request(&id("6"), "x".into());
        assert_eq!(s.cancel(Side::Host, &id("6")), Some(Some(1)));
        assert!(matches!(
            s.match_response(Side::Server, 1, &id("6")),
            Matched::Cancelled
        ));
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
        s.track_host_request(&id("1"), "a".into());
        s.track_host_request(&id("2"), "b".into());
        let gone = s.server_gone("exited");
        assert_eq!(gone.len(), 2);
        assert!(s.in_flight(Side::Host).is_empty());
        assert_eq!(s.server_gone_cause().as_deref(), Some("exited"));
        // Once gone, a new host request is refused rather than left waiting forever.
        assert!(s.track_host_request(&id("3"), "c".into()).is_none());
        assert!(s.in_flight(Side::Host).is_empty());
    }
}
