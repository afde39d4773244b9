//! The message router: takes the lines a relay writes toward its host and delivers each to
//! the HTTP stream it belongs on.
//!
//! - A response goes to the POST that carried the request with its id (and nowhere else).
//! - `notifications/progress` goes to the POST whose request named its progress token.
//! - A request toward the client (`roots/list`, `sampling/createMessage`, `elicitation/create`,
//!   `ping`) and `notifications/message` most likely belong to the request being answered:
//!   they go on the newest open POST stream, else on the session's GET stream.
//! - Every other notification (`resources/updated`, `*/list_changed`, ...) is about the
//!   session, not a request: it goes on the GET stream, else on the newest open POST stream.
//! - With no stream open, a message waits in a bounded backlog that the next stream to open
//!   takes first. When the backlog is full, the oldest notification is dropped; a request
//!   that cannot be queued is answered with an error on the relay's input, so the server is
//!   never left waiting.
//!
//! Each stream is a bounded queue: a client that stops reading one of its streams for
//! [`Router::stall`] loses that stream (it is closed) rather than stalling the session.
//! The router routes by the ids the relay sees; a caller that renames ids (the stateless
//! pool) restores them itself.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::value::RawValue;
use tokio::io::AsyncRead;
use tokio::sync::mpsc;

use super::pipe::HostInput;
use crate::jsonrpc::envelope::{Envelope, Kind, Scanned, scan, scan_message};
use crate::jsonrpc::{Frame, IdKey, LineReader};
use crate::mcp::methods as m;

/// Messages queued on one stream before the router waits for the client to read.
const STREAM_QUEUE: usize = 32;
/// Messages kept for a stream that is not open yet.
const BACKLOG_MESSAGES: usize = 1024;
/// Bytes likewise.
const BACKLOG_BYTES: usize = 16 << 20;

/// A progress token, compared by its JSON text (tokens are strings or integers).
type TokenKey = Box<str>;

/// Why a POST could not be registered.
#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    /// A request with this id is still waiting for its answer in this session.
    #[error("a request with id {0} is already in flight in this session; use a new id")]
    DuplicateId(String),
    /// The relay behind this router has ended.
    #[error("the session has ended")]
    Ended,
}

/// A message delivered on a stream.
#[derive(Debug)]
pub struct Out {
    /// The message (one JSON-RPC message, without a newline).
    pub line: Bytes,
    /// For a response: the id of the request it answers.
    pub answers: Option<IdKey>,
}

/// One open stream's sending end.
#[derive(Debug)]
struct Slot {
    tx: mpsc::Sender<Out>,
    /// Request ids this stream answers (empty for the GET stream).
    ids: Vec<IdKey>,
}

#[derive(Debug, Default)]
struct State {
    /// Open POST streams by their registration number (newest last).
    posts: BTreeMap<u64, Slot>,
    /// Request id → POST stream.
    by_id: HashMap<IdKey, u64>,
    /// Progress token → POST stream.
    by_token: HashMap<TokenKey, u64>,
    /// The session's GET stream.
    get: Option<(u64, mpsc::Sender<Out>)>,
    backlog: VecDeque<(Bytes, bool)>,
    backlog_bytes: usize,
    next: u64,
    ended: bool,
}

/// Routes one relay's output to HTTP streams.
#[derive(Debug)]
pub struct Router {
    state: Mutex<State>,
    /// How long a stream may leave its queue full before it is closed.
    pub stall: Duration,
    /// Where answers of the router's own go (a request it could not deliver). Weak, so the
    /// router never keeps the relay's input open.
    inject: Option<mpsc::WeakSender<Bytes>>,
    epoch: Instant,
    last_active: AtomicU64,
    /// Serving a pool shared by many clients (2026-07-28): only responses, routed by the ids
    /// the pool gave, are delivered; anything else could reach the wrong client and is dropped
    /// (a request toward the client is answered with an error instead).
    pooled: bool,
}

/// Where a stream's messages are read: a POST's answer (and what comes before it), or the
/// GET stream. Dropping it closes the stream in the router.
#[derive(Debug)]
pub struct Stream {
    /// The messages, in order. `None` from `recv` means the session ended.
    pub rx: mpsc::Receiver<Out>,
    router: Arc<Router>,
    key: u64,
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.router.lock().close(self.key);
    }
}

impl State {
    /// Forgets the stream under `key` (the GET stream's or a POST's: every stream has a key of
    /// its own) and what routes to it.
    fn close(&mut self, key: u64) {
        if self.get.as_ref().is_some_and(|(k, _)| *k == key) {
            self.get = None;
        } else if let Some(slot) = self.posts.remove(&key) {
            for id in slot.ids {
                self.by_id.remove(&id);
            }
            self.by_token.retain(|_, k| *k != key);
        }
    }
}

/// Where a message goes.
enum Target {
    Post(u64),
    Get,
    Backlog,
    Nowhere,
    /// A request toward the client that cannot be delivered: answer it with an error.
    Refuse,
}

impl Router {
    /// A router; `inject` is where it answers requests it cannot deliver (the relay's input);
    /// `pooled` for a pooled relay (see `Router::pooled`).
    pub fn new(stall: Duration, inject: Option<&HostInput>, pooled: bool) -> Arc<Router> {
        Arc::new(Router {
            state: Mutex::new(State::default()),
            stall,
            inject: inject.map(HostInput::downgrade),
            epoch: Instant::now(),
            last_active: AtomicU64::new(0),
            pooled,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        crate::relock(&self.state)
    }

    fn touch(&self) {
        let ms = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_active.store(ms, Ordering::Relaxed);
    }

    /// How long since a stream opened or a message was delivered.
    pub fn idle_for(&self) -> Duration {
        let last = Duration::from_millis(self.last_active.load(Ordering::Relaxed));
        self.epoch.elapsed().saturating_sub(last)
    }

    /// Open streams (POSTs waiting and the GET stream).
    pub fn open_streams(&self) -> usize {
        let st = self.lock();
        st.posts.len() + usize::from(st.get.is_some())
    }

    /// Whether the relay's output has ended.
    pub fn ended(&self) -> bool {
        self.lock().ended
    }

    /// Registers a POST carrying the requests `ids`, whose params named `tokens` as progress
    /// tokens (their JSON text). If no GET stream is open, the backlog goes to it first.
    pub fn register_post(
        self: &Arc<Self>,
        ids: Vec<IdKey>,
        tokens: Vec<Box<str>>,
    ) -> Result<Stream, RegisterError> {
        self.open_stream(|st, key, tx| {
            if let Some(dup) = ids.iter().find(|id| st.by_id.contains_key(*id)) {
                return Err(RegisterError::DuplicateId(match dup {
                    IdKey::Str(s) => format!("{s:?}"),
                    IdKey::Int(n) => n.to_string(),
                }));
            }
            st.by_id.extend(ids.iter().map(|id| (id.clone(), key)));
            st.by_token.extend(tokens.into_iter().map(|t| (t, key)));
            if st.get.is_none() {
                take_backlog(st, &tx);
            }
            st.posts.insert(key, Slot { tx, ids });
            Ok(())
        })
    }

    /// Opens the session's GET stream (replacing one still registered: a client that opens a
    /// new one has given the old one up). The backlog goes to it first.
    pub fn open_get(self: &Arc<Self>) -> Result<Stream, RegisterError> {
        self.open_stream(|st, key, tx| {
            take_backlog(st, &tx);
            st.get = Some((key, tx));
            Ok(())
        })
    }

    /// A new stream under the next key, which `register` files where its messages are
    /// routed from; refused once the relay's output has ended.
    fn open_stream(
        self: &Arc<Self>,
        register: impl FnOnce(&mut State, u64, mpsc::Sender<Out>) -> Result<(), RegisterError>,
    ) -> Result<Stream, RegisterError> {
        let (tx, rx) = mpsc::channel(STREAM_QUEUE);
        let mut st = self.lock();
        if st.ended {
            return Err(RegisterError::Ended);
        }
        let key = st.next;
        register(&mut st, key, tx)?;
        st.next += 1;
        drop(st);
        self.touch();
        Ok(Stream {
            rx,
            router: Arc::clone(self),
            key,
        })
    }

    /// Closes the GET stream (at shutdown: a long-lived stream would hold the drain open).
    pub fn close_get(&self) {
        self.lock().get = None;
    }

    /// Reads the relay's output until it ends, delivering every line; then closes every
    /// stream (a POST still waiting sees its stream end without an answer).
    pub async fn run<R: AsyncRead + Unpin>(self: Arc<Self>, mut reader: LineReader<R>) {
        loop {
            match reader.next_frame().await {
                Ok(Some(Frame::Line(line))) => self.route(line.freeze()).await,
                Ok(Some(other)) => {
                    // The relay writes only lines it validated; anything else is a bug.
                    tracing::error!("the relay wrote an unreadable line: {other:?}");
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!("reading the relay's output: {e}");
                    break;
                }
            }
        }
        // Every stream's sender and the backlog go; nothing opens after this.
        *self.lock() = State {
            ended: true,
            ..State::default()
        };
    }

    /// Delivers one line (each element of a batch on its own).
    async fn route(&self, line: Bytes) {
        let text = crate::jsonrpc::framing::line_str(&line);
        match scan(text) {
            Ok(Scanned::Single(env)) => self.deliver(&env, text, line.clone()).await,
            Ok(Scanned::Batch(elements)) => {
                for e in elements {
                    match scan_message(e.get()) {
                        // The element's bytes are a slice of the line's, not a copy.
                        Ok(env) => {
                            let part = line.slice_ref(e.get().as_bytes());
                            self.deliver(&env, e.get(), part).await;
                        }
                        Err(e) => tracing::warn!("dropped an unreadable batch element: {e}"),
                    }
                }
            }
            Err(e) => tracing::warn!("dropped an unreadable message from the relay: {e}"),
        }
    }

    fn target(&self, env: &Envelope<'_>, text: &str) -> Target {
        let mut st = self.lock();
        if self.pooled && !env.kind.is_response() {
            tracing::debug!(
                method = env.method.as_deref().unwrap_or(""),
                "a message from a pooled server that belongs to no request was dropped"
            );
            return if env.kind == Kind::Request {
                Target::Refuse
            } else {
                Target::Nowhere
            };
        }
        let newest_post = st.posts.keys().next_back().copied();
        let get = st.get.is_some();
        match env.kind {
            Kind::Response | Kind::ErrorResponse => {
                let Some(id) = &env.id else {
                    return Target::Nowhere;
                };
                let Some(key) = st.by_id.remove(id.key()) else {
                    return Target::Nowhere;
                };
                if let Some(slot) = st.posts.get_mut(&key) {
                    slot.ids.retain(|i| i != id.key());
                }
                Target::Post(key)
            }
            Kind::Request => match (newest_post, get) {
                (Some(k), _) => Target::Post(k),
                (None, true) => Target::Get,
                (None, false) => Target::Backlog,
            },
            Kind::Notification => {
                let method = env.method.as_deref().unwrap_or("");
                if method == m::PROGRESS
                    && let Some(key) = progress_token(text, false).and_then(|t| st.by_token.get(&t))
                {
                    return Target::Post(*key);
                }
                let request_scoped = method == m::PROGRESS || method == m::LOGGING_MESSAGE;
                match (request_scoped, newest_post, get) {
                    (true, Some(k), _) => Target::Post(k),
                    (_, _, true) => Target::Get,
                    (false, Some(k), false) => Target::Post(k),
                    _ => Target::Backlog,
                }
            }
        }
    }

    async fn deliver(&self, env: &Envelope<'_>, text: &str, line: Bytes) {
        let target = self.target(env, text);
        let is_request = env.kind == Kind::Request;
        let id = env.id.as_ref();
        let answers = id
            .filter(|_| env.kind.is_response())
            .map(|i| i.key().clone());
        let to = {
            let mut st = self.lock();
            match target {
                Target::Post(k) => st.posts.get(&k).map(|s| (k, s.tx.clone())),
                Target::Get => st.get.clone(),
                Target::Nowhere => {
                    tracing::debug!("a message for a stream that is gone was dropped");
                    None
                }
                Target::Refuse => {
                    drop(st);
                    self.refuse(id);
                    return;
                }
                Target::Backlog => {
                    if !push_backlog(&mut st, line, is_request) {
                        drop(st);
                        self.refuse(id);
                    }
                    return;
                }
            }
        };
        let Some((key, tx)) = to else {
            return;
        };
        self.touch();
        // A stream with room takes the message at once, without arming a timer (the
        // common case: one answer per POST); only a full one waits, for `stall` at most.
        let out = match tx.try_send(Out { line, answers }) {
            Ok(()) => return,
            Err(mpsc::error::TrySendError::Closed(_)) => {
                tracing::debug!("a message for a closed stream was dropped");
                return;
            }
            Err(mpsc::error::TrySendError::Full(out)) => out,
        };
        match tx.send_timeout(out, self.stall).await {
            Ok(()) => {}
            Err(mpsc::error::SendTimeoutError::Timeout(_)) => {
                tracing::warn!(
                    "an HTTP stream was not read for {:?}; closed it",
                    self.stall
                );
                self.lock().close(key);
            }
            Err(mpsc::error::SendTimeoutError::Closed(_)) => {
                tracing::debug!("a message for a closed stream was dropped");
            }
        }
    }

    /// Answers a request toward the client that could not be queued, on the relay's input.
    fn refuse(&self, id: Option<&crate::jsonrpc::Id>) {
        let Some(id) = id else {
            return;
        };
        let answer = crate::jsonrpc::error::error_response(
            Some(id),
            crate::jsonrpc::error::SERVER_GONE,
            "rootfence: the client has no open stream to receive this request; it was not delivered",
            None,
        );
        if let Some(input) = self.inject.as_ref().and_then(mpsc::WeakSender::upgrade)
            && input.try_send(Bytes::from(answer)).is_err()
        {
            tracing::warn!("could not answer an undeliverable request");
        }
    }
}

/// Moves the backlog into a newly opened stream (as far as it has room).
fn take_backlog(st: &mut State, tx: &mpsc::Sender<Out>) {
    while let Some((line, is_request)) = st.backlog.pop_front() {
        let len = line.len();
        match tx.try_send(Out {
            line,
            answers: None,
        }) {
            Ok(()) => st.backlog_bytes -= len,
            Err(mpsc::error::TrySendError::Full(out) | mpsc::error::TrySendError::Closed(out)) => {
                st.backlog.push_front((out.line, is_request));
                break;
            }
        }
    }
}

/// Queues a message for a stream not open yet; false when it is a request that could not be
/// queued (a notification that cannot be is dropped).
fn push_backlog(st: &mut State, line: Bytes, is_request: bool) -> bool {
    while st.backlog.len() >= BACKLOG_MESSAGES || st.backlog_bytes + line.len() > BACKLOG_BYTES {
        // Make room by dropping the oldest notification; requests are never dropped silently.
        let Some(pos) = st.backlog.iter().position(|(_, req)| !req) else {
            return !is_request;
        };
        if let Some((old, _)) = st.backlog.remove(pos) {
            st.backlog_bytes -= old.len();
            tracing::warn!("no stream open to the client: dropped a queued notification");
        }
    }
    st.backlog_bytes += line.len();
    st.backlog.push_back((line, is_request));
    true
}

/// The progress token of a message, as a key: `params.progressToken` of a
/// `notifications/progress`, or (`in_meta`) `params._meta.progressToken` of a request. Only
/// the object on the token's path is read (`_meta` stays raw unless the token is in it).
pub fn progress_token(text: &str, in_meta: bool) -> Option<TokenKey> {
    // Most requests name no token: they are not parsed again.
    if in_meta && !text.contains("progressToken") {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Message<'a> {
        #[serde(borrow)]
        params: Option<Params<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(rename = "progressToken", borrow)]
        token: Option<&'a RawValue>,
        #[serde(rename = "_meta", borrow)]
        meta: Option<&'a RawValue>,
    }
    let params = serde_json::from_str::<Message<'_>>(text).ok()?.params?;
    let params = match in_meta {
        true => serde_json::from_str::<Params<'_>>(params.meta?.get()).ok()?,
        false => params,
    };
    // Its key: its JSON text, with strings unescaped so `"a"` and `"\u0061"` are the same.
    let raw = params.token?.get();
    Some(match serde_json::from_str::<String>(raw) {
        Ok(s) => format!("s:{s}").into(),
        Err(_) => format!("n:{raw}").into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::Id;

    fn id(text: &str) -> IdKey {
        let raw: Box<RawValue> = serde_json::from_str(text).unwrap();
        Id::from_raw(&raw).unwrap().key().clone()
    }

    fn router() -> Arc<Router> {
        Router::new(Duration::from_secs(1), None, false)
    }

    async fn next(s: &mut Stream) -> String {
        let b = tokio::time::timeout(Duration::from_secs(1), s.rx.recv())
            .await
            .expect("a message in time")
            .expect("the stream is open");
        String::from_utf8(b.line.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn responses_go_to_their_post_and_server_requests_to_the_newest() {
        let r = router();
        let mut a = r.register_post(vec![id("1")], vec![]).unwrap();
        let mut b = r.register_post(vec![id("\"x\"")], vec![]).unwrap();
        r.route(Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":"x","result":{}}"#,
        ))
        .await;
        r.route(Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":7,"method":"roots/list"}"#,
        ))
        .await;
        r.route(Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        ))
        .await;
        assert!(next(&mut b).await.contains(r#""id":"x""#));
        assert!(next(&mut b).await.contains(m::ROOTS_LIST));
        assert!(next(&mut a).await.contains(r#""id":1"#));
        // `1` and `"1"` are different ids.
        assert!(r.register_post(vec![id("\"1\"")], vec![]).is_ok());
    }

    #[tokio::test]
    async fn duplicate_ids_in_flight_are_refused() {
        let r = router();
        let _a = r.register_post(vec![id("1")], vec![]).unwrap();
        assert!(matches!(
            r.register_post(vec![id("1")], vec![]),
            Err(RegisterError::DuplicateId(_))
        ));
    }

    #[tokio::test]
    async fn progress_follows_its_token_and_session_notes_prefer_the_get_stream() {
        let r = router();
        let mut a = r
            .register_post(vec![id("1")], vec!["s:tok".into()])
            .unwrap();
        let mut b = r.register_post(vec![id("2")], vec![]).unwrap();
        let mut g = r.open_get().unwrap();
        r.route(Bytes::from_static(
            br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":1}}"#,
        ))
        .await;
        r.route(Bytes::from_static(
            br#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"x"}}"#,
        ))
        .await;
        assert!(next(&mut a).await.contains("progress"));
        assert!(next(&mut g).await.contains("updated"));
        assert!(b.rx.try_recv().is_err());
    }

    #[tokio::test]
    async fn the_backlog_waits_for_the_next_stream() {
        let r = router();
        r.route(Bytes::from_static(
            br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
        ))
        .await;
        let mut g = r.open_get().unwrap();
        assert!(next(&mut g).await.contains("list_changed"));
    }

    #[tokio::test]
    async fn batch_answers_are_split_by_id() {
        let r = router();
        let mut a = r.register_post(vec![id("1"), id("2")], vec![]).unwrap();
        r.route(Bytes::from_static(
            br#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]"#,
        ))
        .await;
        assert_eq!(
            next(&mut a).await,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
        );
        assert_eq!(
            next(&mut a).await,
            r#"{"jsonrpc":"2.0","id":2,"result":{}}"#
        );
    }

    #[tokio::test]
    async fn a_dropped_stream_forgets_its_ids() {
        let r = router();
        let a = r.register_post(vec![id("1")], vec![]).unwrap();
        drop(a);
        assert!(r.register_post(vec![id("1")], vec![]).is_ok());
    }
}
