//! The pumps: one reading the host, one per server generation reading that server, each
//! routing every message it reads; and the writer task that owns each output stream.
//!
//! The hot path for a message nobody intercepts is: frame (split off the read buffer, no
//! copy), one validating scan, a pending-table update, and the same bytes queued to the other
//! side's writer. Only intercepted messages are parsed into a `Value`.
//!
//! Each output has exactly one writer task fed by two queues (see [`super::session::Lanes`]),
//! so a pump never writes to a pipe itself. Forwarding waits when the destination's queue is
//! full (flow control); answering the side a pump reads from never waits, which keeps a peer
//! that is blocked on its own output from deadlocking with rootfence.
//!
//! Messages whose decision must wait (for the roots, for the audit log) are held by the pump
//! itself, not by a task each: at most [`HELD_MESSAGES`] messages and [`HELD_BYTES`] bytes per
//! pump. Past that, a request is answered at once with an error telling its sender to retry,
//! and a notification is dropped and reported, so a flood cannot grow rootfence's memory.
//!
//! This file holds the pump loop, the writer, and what is sent where; the steps between
//! are files of their own: `route.rs` (where a message goes, and the session's bookkeeping
//! on the way), `decide.rs` (the interceptor's decision, turned into a step), `refuse.rs`
//! (what cannot be forwarded) and `held.rs` (decisions that wait).

mod decide;
mod held;
mod refuse;
mod route;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::watch;

use self::held::{Held, HeldDone};
use super::intercept::Interceptor;
use super::session::{Gen, LaneReceivers, Outgoing, Session, Side};
use crate::jsonrpc::Id;
use crate::jsonrpc::envelope::{self, Build, Deciding, Kind, Scanned};
use crate::jsonrpc::error::{self as rpc_error, error_response};
use crate::jsonrpc::framing::{self, Frame, LineReader};
use crate::mcp::methods;

/// Writer buffer: small messages are coalesced into one write; large ones bypass it.
const WRITE_BUFFER: usize = 64 * 1024;
/// Messages one pump holds while their decisions wait.
pub(crate) const HELD_MESSAGES: usize = 1024;
/// Bytes one pump holds while their decisions wait.
pub(crate) const HELD_BYTES: usize = 64 << 20;

/// Owns one output stream: writes each queued message followed by `\n`, coalescing whatever
/// is queued into one flush. The priority lane is always served first; the main lane only
/// while `gate` is open.
pub(crate) async fn writer<W: AsyncWrite + Unpin>(
    out: W,
    mut lanes: LaneReceivers,
    mut gate: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(WRITE_BUFFER, out);
    let mut prio_open = true;
    let mut gate_gone = false;
    loop {
        let open = gate_gone || *gate.borrow_and_update();
        let first = tokio::select! {
            biased;
            item = lanes.prio.recv(), if prio_open => match item {
                Some(item) => Some((item, true)),
                None => { prio_open = false; continue; }
            },
            item = lanes.main.recv(), if open => item.map(|item| (item, false)),
            changed = gate.changed(), if !open => {
                gate_gone |= changed.is_err();
                continue;
            }
        };
        let Some(mut next) = first else {
            break;
        };
        loop {
            let (item, prio) = next;
            match item {
                Outgoing::Line(line) => {
                    if prio {
                        lanes.prio_bytes.fetch_sub(line.len(), Ordering::Relaxed);
                    }
                    out.write_all(&line).await?;
                    out.write_all(b"\n").await?;
                }
                Outgoing::Close => {
                    out.flush().await?;
                    out.shutdown().await?;
                    return Ok(());
                }
            }
            next = match lanes.prio.try_recv() {
                Ok(item) => (item, true),
                // (Only an open lane may be taken from: a message taken is a message sent.)
                Err(_) if open => match lanes.main.try_recv() {
                    Ok(item) => (item, false),
                    Err(_) => break,
                },
                Err(_) => break,
            };
        }
        out.flush().await?;
    }
    out.flush().await
}

/// Whether the scan builds the value of an answer `from` gives to a request for `method` (see
/// [`Router::builds`]): it takes the value path, or the relay records it (the server's answer
/// to `initialize` or `server/discover`).
fn answer_built(value_path: fn(Side, Kind, &str) -> bool, from: Side, method: &str) -> bool {
    value_path(from, Kind::Response, method)
        || (from == Side::Server
            && matches!(method, methods::INITIALIZE | methods::SERVER_DISCOVER))
}

/// Which pump this is: the host's, or one server generation's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Origin {
    pub side: Side,
    /// The server generation (0 for the host).
    pub generation: Gen,
}

/// Reads every frame from one side until end of stream, routing each message.
pub(crate) async fn pump<R, I>(
    origin: Origin,
    mut reader: LineReader<R>,
    max_line: usize,
    session: Arc<Session>,
    icpt: Arc<I>,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    I: Interceptor,
{
    let count = match origin.side {
        Side::Host => &session.counters.from_host,
        Side::Server => &session.counters.from_server,
    };
    let router = Router {
        origin,
        from: origin.side,
        session: &session,
        icpt: &icpt,
    };
    let mut held = Held::default();
    loop {
        let frame = tokio::select! {
            biased;
            Some(done) = held.next() => {
                router.commit_held(done).await;
                continue;
            }
            frame = reader.next_frame() => frame?,
        };
        let Some(frame) = frame else {
            break;
        };
        count.fetch_add(1, Ordering::Relaxed);
        match frame {
            Frame::Line(line) => {
                let before = held.items.len();
                router.line(line.freeze(), &mut held).await;
                // A message held back may have reached the interceptor's bound on what
                // waits: it then says what to wait for before reading on.
                if held.items.len() > before
                    && let Some(drain) = icpt.backlog(origin.side)
                {
                    drain.await;
                }
            }
            Frame::TooLong { len, head } => router.unreadable(
                "too_long",
                format!("a message of {len} bytes exceeds the line limit of {max_line} bytes"),
                Offending { len, line: None },
                &head,
                rpc_error::INVALID_REQUEST,
            ),
            Frame::InvalidUtf8(line) => {
                let line = line.freeze();
                router.unreadable(
                    "bad_utf8",
                    format!("a line of {} bytes is not valid UTF-8", line.len()),
                    Offending::line(&line),
                    &line,
                    rpc_error::PARSE_ERROR,
                );
            }
        }
    }
    // The side closed its output: decisions still held are made and sent.
    while !held.items.is_empty() {
        if let Some(done) = held.next().await {
            router.commit_held(done).await;
        }
    }
    Ok(())
}

/// Where a decided message goes.
#[derive(Clone, Debug, PartialEq)]
enum Dest {
    /// To the host (forwarded, waiting while its queue is full).
    Host,
    /// To one server generation: on its priority lane (answers to its own requests, the
    /// host's `initialize`) or its forwarded lane.
    Server { generation: Gen, prio: bool },
}

/// What becomes of one message (or batch element) once routed.
enum Step {
    /// Send to `to`: the original bytes (`bytes: None`) or these bytes; with the id replaced
    /// by `id` when set (a later generation's request, or the answer to one).
    Send {
        to: Dest,
        bytes: Option<Bytes>,
        id: Option<Id>,
        note: Note,
    },
    /// Answer the sender with these bytes.
    Reply(Bytes),
    /// Send nothing.
    Nothing,
    /// Decided later; resolves to one of the other steps.
    Later(Pin<Box<dyn Future<Output = Step> + Send>>),
}

/// For host messages: what the relay records once one is forwarded (its method and id).
type Note = Option<(Arc<str>, Option<Id>)>;

/// The line a protocol error is about.
struct Offending {
    len: u64,
    line: Option<Bytes>,
}

impl Offending {
    fn line(line: &Bytes) -> Offending {
        Offending {
            len: line.len() as u64,
            line: Some(line.clone()),
        }
    }
}

/// The routing identity of a message, carried through a deferred decision.
struct Routed {
    origin: Origin,
    kind: Kind,
    id: Option<Id>,
    method: Arc<str>,
    /// Where it goes when forwarded (decided when it was read; a host request's generation is
    /// decided when it is forwarded).
    to: Dest,
    /// The id to forward it under, when it differs from its own.
    forward_id: Option<Id>,
    /// The session-unique key of the host request this is or answers
    /// ([`Session::number_host_request`]).
    request: Option<u64>,
    /// A request: whether the scan builds its answer's value ([`Session::answers_built`]).
    answer_built: bool,
    /// What the observer (telemetry) needs, when there is one.
    observed: Option<Box<Observed>>,
}

/// The facts about a message the observer is told once its decision is made.
#[derive(Default)]
struct Observed {
    /// The message's length in bytes.
    len: usize,
    /// A host request: the `traceparent` to forward in place of the host's.
    traceparent: Option<String>,
    /// A server's error response: its error code.
    error: Option<i64>,
}

/// Relay-internal handling some messages need whether or not they are intercepted.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Internal {
    None,
    RecordInitialize,
    RecordServerInfo,
}

struct Router<'a, I> {
    origin: Origin,
    from: Side,
    session: &'a Arc<Session>,
    icpt: &'a Arc<I>,
}

impl<I: Interceptor> Router<'_, I> {
    async fn line(&self, line: Bytes, held: &mut Held) {
        let text = framing::line_str(&line);
        let builds = self
            .icpt
            .value_path()
            .map(|vp| move |d: Deciding<'_>| self.builds(vp, d));
        let build = builds.as_ref().map(|b| b as Build<'_>);
        match envelope::scan_with(text, self.icpt.capture_rules(), build) {
            Err(e) => {
                if let Some(reply) = self.invalid(&e, Offending::line(&line), &line) {
                    self.reply(reply);
                }
            }
            Ok(Scanned::Single(env)) => match self.route(env, text, &line) {
                Step::Later(fut) => {
                    if held.has_room(line.len()) {
                        held.push(line.len(), async move {
                            HeldDone::One {
                                step: fut.await,
                                line,
                            }
                        });
                    } else {
                        self.too_many_held(text, &line);
                    }
                }
                step => self.commit(step, line).await,
            },
            Ok(Scanned::Batch(elements)) => self.batch(&line, &elements, build, held).await,
        }
    }

    /// Whether the scan builds a message's value in its pass (see [`Build`]): one that takes
    /// the value path (`value_path`, [`Interceptor::value_path`]), one the relay records (the
    /// host's `initialize`, the server's answer to it), an answer to rootfence's own request.
    /// A response is looked up in the pending table by its id only while a request whose
    /// answer is built is in flight ([`Session::answers_built`], no lock); one whose `result`
    /// comes before its `id` (the TypeScript SDK's order) is built then, on that count alone
    /// (a wrong guess costs a value built in vain, or the parse after the scan).
    fn builds(&self, value_path: fn(Side, Kind, &str) -> bool, deciding: Deciding<'_>) -> bool {
        match deciding {
            Deciding::Method(method, kind) => {
                value_path(self.from, kind, method)
                    || (self.from == Side::Host && method == methods::INITIALIZE)
            }
            Deciding::Response(_) if self.session.answers_built(self.from) == 0 => false,
            Deciding::Response(None) => true,
            Deciding::Response(Some(id)) => {
                let Ok(id) = Id::from_raw(id) else {
                    return false;
                };
                match self.session.answers(self.from, self.origin.generation, &id) {
                    Some(Some(method)) => answer_built(value_path, self.from, &method),
                    Some(None) => true,
                    None => false,
                }
            }
        }
    }

    /// A batch (2025-03-26): each element is routed on its own. Forwarded elements go on as
    /// one batch, answers go back as one batch. When every element is forwarded unchanged the
    /// original line is forwarded as it is.
    /// `build` is the line's (see [`Self::builds`]).
    async fn batch(
        &self,
        line: &Bytes,
        elements: &[&RawValue],
        build: Option<Build<'_>>,
        held: &mut Held,
    ) {
        let mut steps = Vec::with_capacity(elements.len());
        let mut originals = Vec::with_capacity(elements.len());
        for element in elements {
            let text = element.get();
            let bytes = line.slice_ref(text.as_bytes());
            let step = match envelope::scan_message_with(text, self.icpt.capture_rules(), build) {
                Ok(env) => self.route(env, text, &bytes),
                Err(e) => self
                    .invalid(&e, Offending::line(&bytes), &bytes)
                    .map_or(Step::Nothing, Step::Reply),
            };
            steps.push(step);
            originals.push(bytes);
        }
        if steps.iter().any(|s| matches!(s, Step::Later(_))) {
            if !held.has_room(line.len()) {
                // Each held element is answered as refused; the rest go on.
                for (step, original) in steps.iter_mut().zip(&originals) {
                    if matches!(step, Step::Later(_)) {
                        *step = self.held_refusal(framing::line_str(original));
                    }
                }
                self.send_batch(steps, originals).await;
                return;
            }
            held.push(line.len(), async move {
                for step in &mut steps {
                    if let Step::Later(fut) = step {
                        *step = fut.await;
                    }
                }
                HeldDone::Batch { steps, originals }
            });
            return;
        }
        // Every element forwarded unchanged, to one destination: the line goes as it is.
        let whole = {
            let mut unchanged = steps.iter().map(|s| match s {
                Step::Send {
                    bytes: None,
                    id: None,
                    to,
                    ..
                } if matches!(
                    (self.from, to),
                    (Side::Server, Dest::Host) | (Side::Host, Dest::Server { prio: false, .. })
                ) =>
                {
                    Some(to)
                }
                _ => None,
            });
            let first = unchanged.next().flatten();
            first.filter(|_| unchanged.all(|d| d == first)).cloned()
        };
        if let Some(to) = whole {
            for (step, original) in steps.iter().zip(&originals) {
                if let Step::Send {
                    note: Some((method, id)),
                    ..
                } = step
                {
                    self.note(method, id.as_ref(), original);
                }
            }
            self.send_to(to, line.clone()).await;
            return;
        }
        self.send_batch(steps, originals).await;
    }

    /// Answers the side this pump reads from, never waiting.
    fn reply(&self, line: Bytes) {
        match self.from {
            Side::Host => self.session.send_detached(line),
            Side::Server => self.session.send_prio_server(self.origin.generation, line),
        }
    }

    /// Records what a later generation must be told again, once a host message is forwarded.
    fn note(&self, method: &str, id: Option<&Id>, bytes: &Bytes) {
        if matches!(
            method,
            methods::INITIALIZE
                | methods::INITIALIZED
                | methods::LOGGING_SET_LEVEL
                | methods::RESOURCES_SUBSCRIBE
                | methods::RESOURCES_UNSUBSCRIBE
                | methods::SUBSCRIPTIONS_LISTEN
        ) {
            self.session.record_forwarded(method, id, bytes);
        }
        if method == methods::INITIALIZE {
            self.session.initialize_decided();
        }
    }

    async fn commit_held(&self, done: HeldDone) {
        match done {
            HeldDone::One { step, line } => self.commit(step, line).await,
            HeldDone::Batch { steps, originals } => self.send_batch(steps, originals).await,
        }
    }

    /// Sends the outcome of a single message.
    async fn commit(&self, step: Step, line: Bytes) {
        match step {
            Step::Send {
                to,
                bytes,
                id,
                note,
            } => self.send_to(to, self.sent(bytes, line, id, note)).await,
            Step::Reply(bytes) => self.reply(bytes),
            Step::Nothing => {}
            // `finish` resolves every nested deferral; were one left, the message would be
            // dropped, never forwarded unchecked.
            Step::Later(_) => tracing::error!("a deferred decision resolved to another deferral"),
        }
    }

    /// The bytes a [`Step::Send`] sends (`original` unless it has its own), under the id it
    /// is forwarded with; what it notes is noted.
    fn sent(&self, bytes: Option<Bytes>, original: Bytes, id: Option<Id>, note: Note) -> Bytes {
        let bytes = bytes.unwrap_or(original);
        let bytes = match id {
            Some(id) => with_id(&bytes, &id),
            None => bytes,
        };
        if let Some((method, id)) = note {
            self.note(&method, id.as_ref(), &bytes);
        }
        bytes
    }

    async fn send_to(&self, to: Dest, bytes: Bytes) {
        match to {
            Dest::Host => self.session.send_host(bytes).await,
            Dest::Server {
                generation,
                prio: true,
            } => self.session.send_prio_server(generation, bytes),
            Dest::Server {
                generation,
                prio: false,
            } => self.session.send_server(generation, bytes).await,
        }
    }

    /// Sends the outcome of a batch: forwarded elements as one batch to the other side (one
    /// per destination generation), answers as one batch to the sender.
    async fn send_batch(&self, steps: Vec<Step>, originals: Vec<Bytes>) {
        let mut forward: Vec<(Dest, Vec<Bytes>)> = Vec::new();
        let mut replies = Vec::new();
        for (step, original) in steps.into_iter().zip(originals) {
            match step {
                Step::Send {
                    to,
                    bytes,
                    id,
                    note,
                } => {
                    let bytes = self.sent(bytes, original, id, note);
                    match forward.iter_mut().find(|(d, _)| *d == to) {
                        Some((_, parts)) => parts.push(bytes),
                        None => forward.push((to, vec![bytes])),
                    }
                }
                Step::Reply(b) => replies.push(b),
                Step::Nothing | Step::Later(_) => {}
            }
        }
        for (to, parts) in forward {
            self.send_to(to, join_batch(&parts)).await;
        }
        if !replies.is_empty() {
            self.reply(join_batch(&replies));
        }
    }
}

/// A message with its top-level `id` replaced (a later generation's request on its way to
/// the host, or the host's answer on its way back). Only these ever take this path, so the
/// one re-serialization is off the hot path.
fn with_id(line: &Bytes, id: &Id) -> Bytes {
    match serde_json::from_slice::<Value>(line) {
        Ok(mut v) => {
            v["id"] = id.to_value();
            serde_json::to_vec(&v)
                .expect("a JSON value always serializes")
                .into()
        }
        Err(_) => line.clone(),
    }
}

/// `[a,b,c]` from already-serialized messages.
fn join_batch(parts: &[Bytes]) -> Bytes {
    [&b"["[..], &parts.join(&b','), b"]"].concat().into()
}

/// The error for a host request that the server can no longer answer.
pub(crate) fn server_gone_error(id: &Id, method: &str, cause: &str) -> Bytes {
    let msg = format!("rootfence: {cause} before answering `{method}`");
    error_response(
        Some(id),
        rpc_error::SERVER_GONE,
        &msg,
        Some(serde_json::json!({ "method": method })),
    )
    .into()
}

#[cfg(test)]
mod tests {
    use super::route::cancelled_request_id;
    use super::*;

    #[test]
    fn batches_join_exactly() {
        let parts = [Bytes::from_static(b"{\"a\":1}"), Bytes::from_static(b"{}")];
        assert_eq!(&join_batch(&parts)[..], b"[{\"a\":1},{}]");
        assert_eq!(&join_batch(&parts[..1])[..], b"[{\"a\":1}]");
    }

    #[test]
    fn cancelled_request_ids_are_read_exactly() {
        let id = cancelled_request_id(
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1234567890123456789012345}}"#,
        )
        .unwrap();
        assert_eq!(id.raw(), "1234567890123456789012345");
        assert!(
            cancelled_request_id(r#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#)
                .is_none()
        );
    }

    /// A message queued behind a closed gate while the priority lane is being written must
    /// still be written once the gate opens (it was once taken off the queue and dropped).
    #[tokio::test]
    async fn a_gated_message_survives_priority_traffic() {
        use super::super::session::Lanes;
        let (lanes, receivers) = Lanes::new();
        let (gate, gate_rx) = watch::channel(false);
        let (out, mut read) = tokio::io::duplex(1 << 16);
        let writer = tokio::spawn(writer(out, receivers, gate_rx));
        lanes
            .main_for_test()
            .send(Outgoing::Line(Bytes::from_static(b"held")))
            .await
            .unwrap();
        lanes.prio_for_test(Bytes::from_static(b"first"));
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        gate.send_replace(true);
        lanes.main_for_test().send(Outgoing::Close).await.unwrap();
        writer.await.unwrap().unwrap();
        let mut got = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut read, &mut got)
            .await
            .unwrap();
        assert_eq!(got, "first\nheld\n");
    }

    #[test]
    fn ids_are_replaced_exactly() {
        let line = Bytes::from_static(br#"{"jsonrpc":"2.0","id":0,"method":"roots/list","params":{"n":12345678901234567890123}}"#);
        let out = with_id(&line, &Id::from_string("rootfence-x-g2-1"));
        assert_eq!(
            &out[..],
            br#"{"jsonrpc":"2.0","id":"rootfence-x-g2-1","method":"roots/list","params":{"n":12345678901234567890123}}"#
        );
    }
}
