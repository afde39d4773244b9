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

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::Poll;
use std::time::Instant;

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::watch;

use super::intercept::{Action, Intercepted, Interceptor, Offered, ProtocolError, Screened};
use super::session::{Gen, LaneReceivers, Matched, Outgoing, Pending, Session, Side};
use crate::jsonrpc::Id;
use crate::jsonrpc::envelope::{self, Envelope, Kind, ScanError, Scanned};
use crate::jsonrpc::error::{self as rpc_error, error_response};
use crate::jsonrpc::framing::{self, Frame, LineReader};
use crate::jsonrpc::salvage::salvage;
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
            Frame::Line(line) => router.line(line.freeze(), &mut held).await,
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
#[derive(Clone, Debug)]
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
        /// For host messages: what the relay records once it is forwarded.
        note: Option<(Arc<str>, Option<Id>)>,
    },
    /// Answer the sender with these bytes.
    Reply(Bytes),
    /// Send nothing.
    Nothing,
    /// Decided later; resolves to one of the other steps.
    Later(Pin<Box<dyn Future<Output = Step> + Send>>),
}

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

/// Messages held by one pump while their decisions wait: polled by the pump itself, bounded.
#[derive(Default)]
struct Held {
    items: Vec<HeldItem>,
    bytes: usize,
}

struct HeldItem {
    fut: Pin<Box<dyn Future<Output = HeldDone> + Send>>,
    len: usize,
}

/// A held decision, made.
enum HeldDone {
    One {
        step: Step,
        line: Bytes,
    },
    Batch {
        steps: Vec<Step>,
        originals: Vec<Bytes>,
    },
}

impl Held {
    fn has_room(&self, len: usize) -> bool {
        self.items.len() < HELD_MESSAGES && self.bytes + len <= HELD_BYTES
    }

    fn push(&mut self, len: usize, fut: impl Future<Output = HeldDone> + Send + 'static) {
        self.bytes += len;
        self.items.push(HeldItem {
            fut: Box::pin(fut),
            len,
        });
    }

    /// The next decision made; pending forever while nothing is held.
    async fn next(&mut self) -> Option<HeldDone> {
        if self.items.is_empty() {
            return std::future::pending().await;
        }
        std::future::poll_fn(|cx| {
            for i in 0..self.items.len() {
                if let Poll::Ready(done) = self.items[i].fut.as_mut().poll(cx) {
                    let item = self.items.swap_remove(i);
                    self.bytes -= item.len;
                    return Poll::Ready(Some(done));
                }
            }
            Poll::Pending
        })
        .await
    }
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
        match envelope::scan(text) {
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
            Ok(Scanned::Batch(elements)) => self.batch(&line, &elements, held).await,
        }
    }

    /// A batch (2025-03-26): each element is routed on its own. Forwarded elements go on as
    /// one batch, answers go back as one batch. When every element is forwarded unchanged the
    /// original line is forwarded as it is.
    async fn batch(&self, line: &Bytes, elements: &[&RawValue], held: &mut Held) {
        let mut steps = Vec::with_capacity(elements.len());
        for element in elements {
            let text = element.get();
            let bytes = line.slice_ref(text.as_bytes());
            let step = match envelope::scan_message(text) {
                Ok(env) => self.route(env, text, &bytes),
                Err(e) => self
                    .invalid(&e, Offending::line(&bytes), &bytes)
                    .map_or(Step::Nothing, Step::Reply),
            };
            steps.push(step);
        }
        let originals: Vec<Bytes> = elements
            .iter()
            .map(|e| line.slice_ref(e.get().as_bytes()))
            .collect();
        if steps.iter().any(|s| matches!(s, Step::Later(_))) {
            if !held.has_room(line.len()) {
                // Each held element is answered as refused; the rest go on.
                let steps = steps
                    .into_iter()
                    .zip(&originals)
                    .map(|(s, original)| match s {
                        Step::Later(_) => self.held_refusal(framing::line_str(original)),
                        other => other,
                    })
                    .collect();
                self.send_batch(steps, originals).await;
                return;
            }
            held.push(line.len(), async move {
                let mut resolved = Vec::with_capacity(steps.len());
                for step in steps {
                    resolved.push(match step {
                        Step::Later(fut) => fut.await,
                        other => other,
                    });
                }
                HeldDone::Batch {
                    steps: resolved,
                    originals,
                }
            });
            return;
        }
        let unchanged = steps.iter().all(|s| {
            matches!(s, Step::Send { bytes: None, id: None, to, .. }
                if matches!((self.from, to), (Side::Server, Dest::Host) | (Side::Host, Dest::Server { prio: false, .. })))
        });
        if unchanged && self.same_destination(&steps) {
            self.note_batch(&steps, &originals);
            self.send_to(self.batch_dest(&steps), line.clone()).await;
            return;
        }
        self.send_batch(steps, originals).await;
    }

    fn same_destination(&self, steps: &[Step]) -> bool {
        let mut gens = steps.iter().filter_map(|s| match s {
            Step::Send {
                to: Dest::Server { generation, .. },
                ..
            } => Some(*generation),
            _ => None,
        });
        match gens.next() {
            None => true,
            Some(first) => gens.all(|g| g == first),
        }
    }

    fn batch_dest(&self, steps: &[Step]) -> Dest {
        steps
            .iter()
            .find_map(|s| match s {
                Step::Send { to, .. } => Some(to.clone()),
                _ => None,
            })
            .unwrap_or(Dest::Host)
    }

    fn note_batch(&self, steps: &[Step], originals: &[Bytes]) {
        for (step, original) in steps.iter().zip(originals) {
            if let Step::Send {
                note: Some((method, id)),
                ..
            } = step
            {
                self.note(method, id.as_ref(), original);
            }
        }
    }

    /// Routes one valid message (`bytes` is `text` as bytes, for error reports).
    fn route(&self, env: Envelope<'_>, text: &str, bytes: &Bytes) -> Step {
        let from = self.from;
        let session = self.session;
        match env.kind {
            Kind::Request => {
                let id = env.id.expect("the scan gives every request an id");
                let method: Arc<str> = env.method.as_deref().unwrap_or_default().into();
                if session.is_reserved_id(&id) {
                    return self.refuse(
                        "reserved_id",
                        format!("request id {id} lies in rootfence's own id namespace"),
                        id,
                        bytes,
                    );
                }
                let is_initialize = &*method == methods::INITIALIZE;
                if from == Side::Host {
                    session.host_message_seen(is_initialize);
                    if let Some(cause) = session.server_gone_cause() {
                        return Step::Reply(server_gone_error(&id, &method, &cause));
                    }
                }
                if session.is_in_flight(from, &id) {
                    return self.refuse(
                        "duplicate_id",
                        format!("request id {id} is already in flight"),
                        id,
                        bytes,
                    );
                }
                // Only the host speaks for the host: a server's request carrying the same
                // `_meta` keys says nothing about the host's version or capabilities.
                if from == Side::Host {
                    if let Some(version) = &env.meta_protocol_version {
                        session.record_meta(version, env.meta_client_capabilities);
                    }
                    if !session.launched() {
                        self.icpt.unlaunched_host_message(session, &method);
                    }
                }
                let internal = if from == Side::Host && is_initialize {
                    Internal::RecordInitialize
                } else {
                    Internal::None
                };
                let observed = match session.observer() {
                    Some(o) if from == Side::Host => Some(Box::new(Observed {
                        len: text.len(),
                        traceparent: o.request(&id, &method, text),
                        error: None,
                    })),
                    _ => None,
                };
                let to = match from {
                    // The generation is decided when the request is forwarded.
                    Side::Host => Dest::Server {
                        generation: 0,
                        prio: is_initialize,
                    },
                    Side::Server => Dest::Host,
                };
                let routed = Routed {
                    origin: self.origin,
                    kind: Kind::Request,
                    id: Some(id),
                    method,
                    to,
                    forward_id: None,
                    observed,
                };
                self.decide(routed, text, internal)
            }
            Kind::Notification => {
                let method: Arc<str> = env.method.as_deref().unwrap_or_default().into();
                let mut to = match from {
                    Side::Host => {
                        session.host_message_seen(false);
                        if !session.launched() {
                            self.icpt.unlaunched_host_message(session, &method);
                        }
                        Dest::Server {
                            generation: 0,
                            prio: false,
                        }
                    }
                    Side::Server => Dest::Host,
                };
                let mut bytes_override = None;
                if &*method == methods::CANCELLED {
                    if let Some(request_id) = cancelled_request_id(text) {
                        match session.cancel(from, &request_id) {
                            None => {
                                tracing::debug!(id = %request_id, "dropping a cancellation for a request rootfence answered");
                                return Step::Nothing;
                            }
                            // The cancellation goes where the request went.
                            Some(Some(generation)) if from == Side::Host => {
                                to = Dest::Server {
                                    generation,
                                    prio: false,
                                };
                            }
                            _ => {}
                        }
                        if from == Side::Server && self.origin.generation > 1 {
                            // The host knows this generation's requests by other ids.
                            match session
                                .host_id_of_server_request(self.origin.generation, &request_id)
                            {
                                Some(host_id) => {
                                    bytes_override = with_cancelled_id(text, &host_id);
                                }
                                None => return Step::Nothing,
                            }
                        }
                    }
                }
                let routed = Routed {
                    origin: self.origin,
                    kind: Kind::Notification,
                    id: None,
                    method,
                    to,
                    forward_id: None,
                    observed: None,
                };
                match bytes_override {
                    Some(b) => {
                        let text = framing::line_str(&b).to_owned();
                        match self.decide(routed, &text, Internal::None) {
                            Step::Send {
                                to,
                                bytes: None,
                                id,
                                note,
                            } => Step::Send {
                                to,
                                bytes: Some(b),
                                id,
                                note,
                            },
                            other => other,
                        }
                    }
                    None => self.decide(routed, text, Internal::None),
                }
            }
            kind @ (Kind::Response | Kind::ErrorResponse) => {
                let Some(id) = env.id else {
                    self.report(
                        "unmatched_response",
                        "an error response without an id cannot be routed".into(),
                        None,
                        "dropped",
                        Offending::line(bytes),
                    );
                    return Step::Nothing;
                };
                match session.match_response(from, self.origin.generation, &id) {
                    Matched::Own(own) => {
                        match serde_json::from_str::<Value>(text) {
                            Ok(value) => own.deliver(value),
                            Err(e) => tracing::warn!("a response to rootfence is unreadable: {e}"),
                        }
                        Step::Nothing
                    }
                    Matched::Cancelled => {
                        tracing::debug!(%id, "dropping a late response to a cancelled request");
                        Step::Nothing
                    }
                    Matched::Unmatched => {
                        self.report(
                            "unmatched_response",
                            format!("a response with id {id} matches no request in flight"),
                            Some(id),
                            "dropped",
                            Offending::line(bytes),
                        );
                        Step::Nothing
                    }
                    Matched::Pending { pending, restore } => {
                        let internal = if from == Side::Server
                            && kind == Kind::Response
                            && matches!(
                                &*pending.method,
                                methods::INITIALIZE | methods::SERVER_DISCOVER
                            ) {
                            Internal::RecordServerInfo
                        } else {
                            Internal::None
                        };
                        if from == Side::Server {
                            session.record_answered(&pending.method, &id, kind == Kind::Response);
                        }
                        let to = match from {
                            Side::Host => Dest::Server {
                                generation: pending.generation,
                                prio: true,
                            },
                            Side::Server => Dest::Host,
                        };
                        let observed =
                            (from == Side::Server && session.observer().is_some()).then(|| {
                                Box::new(Observed {
                                    len: text.len(),
                                    traceparent: None,
                                    error: (kind == Kind::ErrorResponse)
                                        .then(|| error_code(text))
                                        .flatten(),
                                })
                            });
                        let routed = Routed {
                            origin: self.origin,
                            kind,
                            id: Some(id),
                            method: pending.method,
                            to,
                            forward_id: restore,
                            observed,
                        };
                        self.decide(routed, text, internal)
                    }
                }
            }
        }
    }

    /// Asks the interceptor (when it wants the message) and turns its action into a step.
    fn decide(&self, mut routed: Routed, text: &str, internal: Internal) -> Step {
        let screened = self.icpt.screen(
            routed.origin.side,
            routed.kind,
            routed.id.as_ref(),
            &routed.method,
            text.as_bytes(),
        );
        match screened {
            Some(Screened::Act(action)) => return finish(routed, action, self.session),
            Some(Screened::Rewrite(message)) => {
                return self.decide_value(routed, message, internal);
            }
            None => {}
        }
        // A host request whose trace context the observer continues: its `traceparent` is
        // rewritten, and the message is then a checked one, forwarded as exactly the value
        // built (the interceptor sees that value, never the original bytes).
        let traced = routed
            .observed
            .as_mut()
            .and_then(|o| o.traceparent.take())
            .and_then(|traceparent| with_traceparent(text, traceparent));
        if let Some(message) = traced {
            return self.decide_value(routed, message, internal);
        }
        let wants = self
            .icpt
            .wants(routed.origin.side, routed.kind, &routed.method);
        if !wants && internal == Internal::None {
            self.passing(&routed);
            return finish(routed, Action::Forward, self.session);
        }
        // serde_json's private marker keys make the text mean something else to serde_json
        // than to the peer: only the re-serialized value may stand for it then.
        let verbatim_ok = memchr::memmem::find(text.as_bytes(), b"serde_json::private").is_none();
        if wants && internal == Internal::None && verbatim_ok {
            let offered = Offered {
                from: routed.origin.side,
                kind: routed.kind,
                id: routed.id.as_ref(),
                method: &routed.method,
                text,
            };
            if let Some(action) = self.icpt.intercept_text(self.session, &offered) {
                return finish(routed, action, self.session);
            }
        }
        // The scan already validated this text, so this parse only fails on a bug; then the
        // message is refused, never forwarded unchecked.
        let message: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                tracing::error!("a scanned message failed to parse: {e}");
                return finish(routed, Action::Drop, self.session);
            }
        };
        match internal {
            Internal::RecordInitialize => self.session.record_initialize(&message),
            Internal::RecordServerInfo => self
                .session
                .record_server_info(&message, routed.origin.generation),
            Internal::None => {}
        }
        if !wants {
            self.passing(&routed);
            return finish(routed, Action::Forward, self.session);
        }
        let action = self.icpt.intercept(
            self.session,
            Intercepted {
                from: routed.origin.side,
                kind: routed.kind,
                id: routed.id.clone(),
                method: Arc::clone(&routed.method),
                message,
                verbatim_ok,
            },
        );
        finish(routed, action, self.session)
    }

    /// Tells the interceptor about a host request or a server answer it did not want.
    fn passing(&self, routed: &Routed) {
        let (side, kind) = (routed.origin.side, routed.kind);
        if matches!(
            (side, kind),
            (Side::Host, Kind::Request) | (Side::Server, Kind::Response | Kind::ErrorResponse)
        ) {
            self.icpt
                .passing(side, kind, routed.id.as_ref(), &routed.method);
        }
    }

    /// [`Self::decide`] for a message rewritten before the interceptor's decision (`message`
    /// is the value built): a host request whose `params._meta.traceparent` was replaced,
    /// a server message whose secret the screen redacted.
    fn decide_value(&self, routed: Routed, message: Value, internal: Internal) -> Step {
        match internal {
            Internal::RecordInitialize => self.session.record_initialize(&message),
            Internal::RecordServerInfo => self
                .session
                .record_server_info(&message, routed.origin.generation),
            Internal::None => {}
        }
        if !self
            .icpt
            .wants(routed.origin.side, routed.kind, &routed.method)
        {
            self.passing(&routed);
            return finish(routed, Action::Replace(message), self.session);
        }
        let built = message.clone();
        let action = self.icpt.intercept(
            self.session,
            Intercepted {
                from: routed.origin.side,
                kind: routed.kind,
                id: routed.id.clone(),
                method: Arc::clone(&routed.method),
                message,
                verbatim_ok: false,
            },
        );
        // "Forward" means the bytes that came in; here that is the value built.
        let action = match action {
            Action::Forward => Action::Replace(built),
            Action::Defer(fut) => Action::Defer(Box::pin(async move {
                let mut action = fut.await;
                while let Action::Defer(next) = action {
                    action = next.await;
                }
                match action {
                    Action::Forward => Action::Replace(built),
                    other => other,
                }
            })),
            other => other,
        };
        finish(routed, action, self.session)
    }

    /// Handles a message that failed the scan: the host gets an error response; the server's
    /// message is dropped, and the host request it may have answered is answered with an
    /// error so it does not wait forever. Returns the reply for the sender.
    fn invalid(&self, e: &ScanError, offending: Offending, line: &Bytes) -> Option<Bytes> {
        let (code, kind) = match e {
            ScanError::Parse(_) => ("bad_json", e.code()),
            ScanError::Invalid { .. } => ("invalid_message", e.code()),
        };
        let id = e.id().cloned();
        match self.from {
            Side::Host => {
                self.report(
                    code,
                    e.to_string(),
                    id.clone(),
                    "answered_with_error",
                    offending,
                );
                if id
                    .as_ref()
                    .is_some_and(|id| self.session.is_reserved_id(id))
                {
                    // An invalid answer to one of rootfence's own requests: no error for it.
                    return None;
                }
                Some(error_response(id.as_ref(), kind, &format!("rootfence: {e}"), None).into())
            }
            Side::Server => {
                match e {
                    ScanError::Invalid { id, has_method, .. } => {
                        self.report(code, e.to_string(), id.clone(), "dropped", offending);
                        // JSON, but not a valid message: an answer whose id is not a valid id
                        // (`[5]`, `null`) still held some request's answer.
                        let maybe_answer = id.is_none() && salvage(line).has_outcome;
                        self.answer_unreadable(
                            id.clone(),
                            *has_method,
                            maybe_answer,
                            &e.to_string(),
                        );
                    }
                    ScanError::Parse(_) => {
                        self.report(code, e.to_string(), None, "dropped", offending);
                        let found = salvage(line);
                        self.answer_unreadable(
                            found.id,
                            found.has_method,
                            found.has_outcome,
                            &e.to_string(),
                        );
                    }
                }
                None
            }
        }
    }

    /// A line that is not even text (too long, not UTF-8): the host's gets an error response;
    /// a server's is dropped, and the host request it may have answered gets an error.
    fn unreadable(
        &self,
        code: &'static str,
        detail: String,
        offending: Offending,
        head: &[u8],
        rpc_code: i64,
    ) {
        match self.from {
            Side::Host => {
                let found = salvage(head);
                let line = error_response(
                    found.id.as_ref(),
                    rpc_code,
                    &format!("rootfence: {detail}"),
                    None,
                );
                self.report(code, detail, found.id, "answered_with_error", offending);
                self.reply(line.into());
            }
            Side::Server => {
                let found = salvage(head);
                self.report(code, detail.clone(), found.id.clone(), "dropped", offending);
                // An oversized line's answer key may lie past the head kept: an object
                // without a method may be an answer.
                let maybe_answer = found.has_outcome || head.first() == Some(&b'{');
                self.answer_unreadable(found.id, found.has_method, maybe_answer, &detail);
            }
        }
    }

    /// A server generation sent something rootfence cannot read. If it names the request it
    /// answers, that request gets an error; if it is a request or notification, or does not
    /// look like an answer at all (a stray log line on stdout), nothing is owed; if it looks
    /// like an answer but its id cannot be read, every host request that generation had in
    /// hand when the line arrived gets an error (one of them lost its answer, and which cannot
    /// be known; later answers to the others are then dropped as unmatched). The session
    /// goes on.
    fn answer_unreadable(&self, id: Option<Id>, has_method: bool, maybe_answer: bool, why: &str) {
        let generation = self.origin.generation;
        let pending: Vec<Pending> = match id {
            Some(id) => match self.session.match_response(Side::Server, generation, &id) {
                Matched::Pending { pending, .. } => {
                    if let Some(o) = self.session.observer() {
                        o.answered(
                            &pending.id,
                            super::Answer::Server {
                                error: Some(rpc_error::BAD_SERVER_RESPONSE),
                                withheld: 0,
                            },
                        );
                    }
                    vec![pending]
                }
                Matched::Own(own) => {
                    own.deliver(serde_json::json!({"error": {"code": rpc_error::BAD_SERVER_RESPONSE, "message": why}}));
                    Vec::new()
                }
                _ => Vec::new(),
            },
            None if has_method || !maybe_answer => Vec::new(),
            None => self.session.take_pending_before(generation, Instant::now()),
        };
        for p in pending {
            let msg = format!(
                "rootfence: the server's response to `{}` was malformed and withheld ({why})",
                p.method
            );
            let line = error_response(Some(&p.id), rpc_error::BAD_SERVER_RESPONSE, &msg, None);
            self.session.send_detached(Side::Host, line.into());
        }
    }

    /// Refuses a request (as an invalid request) with an error to its sender, and reports it.
    fn refuse(&self, code: &'static str, detail: String, id: Id, bytes: &Bytes) -> Step {
        let msg = format!("rootfence: {detail}");
        let line = error_response(Some(&id), rpc_error::INVALID_REQUEST, &msg, None);
        let offending = Offending::line(bytes);
        self.report(code, detail, Some(id), "answered_with_error", offending);
        Step::Reply(line.into())
    }

    /// Too many messages are waiting for a decision: a request is answered at once (retry
    /// later), a notification is dropped; both are reported.
    fn too_many_held(&self, text: &str, line: &Bytes) {
        match self.held_refusal(text) {
            Step::Reply(reply) => {
                self.report(
                    "too_many_held",
                    "too many messages are waiting for a decision".into(),
                    None,
                    "answered_with_error",
                    Offending::line(line),
                );
                self.reply(reply);
            }
            _ => self.report(
                "too_many_held",
                "too many messages are waiting for a decision".into(),
                None,
                "dropped",
                Offending::line(line),
            ),
        }
    }

    fn held_refusal(&self, text: &str) -> Step {
        let Ok(env) = envelope::scan_message(text) else {
            return Step::Nothing;
        };
        if self.from == Side::Host && env.method.as_deref() == Some(methods::INITIALIZE) {
            self.session.initialize_decided();
        }
        match (env.kind, env.id) {
            (Kind::Request, Some(id)) => {
                // Not tracked yet (that happens when it is forwarded): answered here instead.
                if self.from == Side::Host {
                    self.session.answered_locally(&id);
                    if let Some(o) = self.session.observer() {
                        o.answered(
                            &id,
                            super::Answer::Local {
                                error: Some(rpc_error::SERVER_GONE),
                                withheld: text.len() as u64,
                            },
                        );
                    }
                }
                let msg = "rootfence: too many messages are waiting for a decision; send this request again shortly";
                Step::Reply(error_response(Some(&id), rpc_error::SERVER_GONE, msg, None).into())
            }
            _ => Step::Nothing,
        }
    }

    /// Reports a problem with a frame that is not even a message.
    fn report(
        &self,
        code: &'static str,
        detail: String,
        id: Option<Id>,
        action: &'static str,
        offending: Offending,
    ) {
        self.session
            .counters
            .protocol_errors
            .fetch_add(1, Ordering::Relaxed);
        tracing::warn!(side = self.from.as_str(), code, action, "{detail}");
        self.icpt.on_protocol_error(&ProtocolError {
            from: self.from,
            code,
            detail,
            id,
            action,
            len: offending.len,
            line: offending.line,
        });
    }

    /// Answers the side this pump reads from, never waiting.
    fn reply(&self, line: Bytes) {
        match self.from {
            Side::Host => self.session.send_detached(Side::Host, line),
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
            } => {
                let bytes = bytes.unwrap_or(line);
                let bytes = match id {
                    Some(id) => with_id(&bytes, &id),
                    None => bytes,
                };
                if let Some((method, id)) = note {
                    self.note(&method, id.as_ref(), &bytes);
                }
                self.send_to(to, bytes).await;
            }
            Step::Reply(bytes) => self.reply(bytes),
            Step::Nothing => {}
            // `finish` resolves every nested deferral; were one left, the message would be
            // dropped, never forwarded unchecked.
            Step::Later(_) => tracing::error!("a deferred decision resolved to another deferral"),
        }
    }

    async fn send_to(&self, to: Dest, bytes: Bytes) {
        match to {
            Dest::Host => {
                let _ = self.session.send(Side::Host, bytes).await;
            }
            Dest::Server {
                generation,
                prio: true,
            } => self.session.send_prio_server(generation, bytes),
            Dest::Server {
                generation,
                prio: false,
            } => {
                let _ = self.session.send_server(Some(generation), bytes).await;
            }
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
                    let bytes = bytes.unwrap_or(original);
                    let bytes = match id {
                        Some(id) => with_id(&bytes, &id),
                        None => bytes,
                    };
                    if let Some((method, id)) = note {
                        self.note(&method, id.as_ref(), &bytes);
                    }
                    match forward.iter_mut().find(|(d, _)| same_dest(d, &to)) {
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

fn same_dest(a: &Dest, b: &Dest) -> bool {
    match (a, b) {
        (Dest::Host, Dest::Host) => true,
        (
            Dest::Server {
                generation: g1,
                prio: p1,
            },
            Dest::Server {
                generation: g2,
                prio: p2,
            },
        ) => g1 == g2 && p1 == p2,
        _ => false,
    }
}

/// Turns a final (or deferred) action into a step, keeping the pending tables right: a request
/// is tracked only when it is actually forwarded, and a request is never left unanswered.
fn finish(mut routed: Routed, action: Action, session: &Arc<Session>) -> Step {
    let to_bytes = |v: &Value| -> Bytes {
        serde_json::to_vec(v)
            .expect("a JSON value always serializes")
            .into()
    };
    let from = routed.origin.side;
    let is_initialize = from == Side::Host && &*routed.method == methods::INITIALIZE;
    // A server's answer that rootfence replaced is observed once its bytes are built (what
    // was withheld is measured on them); every other final action, here.
    let replaced_answer = from == Side::Server && matches!(action, Action::Replace(_));
    if let (Some(observed), Some(id), Some(o)) = (&routed.observed, &routed.id, session.observer())
    {
        if !matches!(action, Action::Defer(_)) && !replaced_answer {
            observe(o, from, id, observed, &action);
        }
    }
    match action {
        Action::Forward | Action::Replace(_) => {
            if let (Kind::Request, Some(id)) = (routed.kind, &routed.id) {
                match from {
                    Side::Host => {
                        match session.track_host_request(id, Arc::clone(&routed.method)) {
                            Some(generation) => {
                                if let Dest::Server { generation: g, .. } = &mut routed.to {
                                    *g = generation;
                                }
                                if let Some(o) = session.observer() {
                                    o.forwarded(id);
                                }
                            }
                            None => {
                                let cause = session.server_gone_cause().unwrap_or_default();
                                if is_initialize {
                                    session.initialize_decided();
                                }
                                if let Some(o) = session.observer() {
                                    o.answered(id, super::Answer::ServerGone);
                                }
                                return Step::Reply(server_gone_error(id, &routed.method, &cause));
                            }
                        }
                    }
                    Side::Server => {
                        let host_id = session.track_server_request(
                            routed.origin.generation,
                            id,
                            Arc::clone(&routed.method),
                        );
                        if routed.origin.generation > 1 {
                            routed.forward_id = Some(host_id);
                        }
                    }
                }
            } else if let Dest::Server { generation: 0, .. } = routed.to {
                // A host notification goes to the generation host messages go to now.
                routed.to = Dest::Server {
                    generation: session.generation(),
                    prio: false,
                };
            }
            let note =
                (from == Side::Host).then(|| (Arc::clone(&routed.method), routed.id.clone()));
            let bytes = match action {
                Action::Replace(v) => {
                    let bytes = to_bytes(&v);
                    if let (true, Some(observed), Some(id), Some(o)) = (
                        replaced_answer,
                        &routed.observed,
                        &routed.id,
                        session.observer(),
                    ) {
                        o.answered(
                            id,
                            super::Answer::Server {
                                error: v.get("error").and_then(|e| e.get("code")?.as_i64()),
                                withheld: (observed.len as u64).saturating_sub(bytes.len() as u64),
                            },
                        );
                    }
                    Some(bytes)
                }
                _ => None,
            };
            Step::Send {
                to: routed.to,
                bytes,
                id: routed.forward_id,
                note,
            }
        }
        Action::Reply(v) => {
            if let (Kind::Request, Side::Host, Some(id)) = (routed.kind, from, &routed.id) {
                session.answered_locally(id);
            }
            if is_initialize {
                session.initialize_decided();
            }
            Step::Reply(to_bytes(&v))
        }
        Action::Drop => {
            if is_initialize {
                session.initialize_decided();
            }
            match (routed.kind, &routed.id) {
                (Kind::Request, Some(id)) => {
                    if from == Side::Host {
                        session.answered_locally(id);
                    }
                    let msg = format!(
                        "rootfence: the `{}` request was not forwarded",
                        routed.method
                    );
                    Step::Reply(
                        error_response(Some(id), rpc_error::INTERNAL_ERROR, &msg, None).into(),
                    )
                }
                _ => Step::Nothing,
            }
        }
        Action::Defer(fut) => {
            let session = Arc::clone(session);
            Step::Later(Box::pin(async move {
                let mut action = fut.await;
                while let Action::Defer(next) = action {
                    action = next.await;
                }
                finish(routed, action, &session)
            }))
        }
    }
}

/// Tells the observer how a host request was answered, from the final action on it (a host
/// request) or on its answer (a server response). (A host request that is forwarded is
/// answered later, by the server; a server answer rootfence replaced is told in `finish`.)
fn observe(o: &dyn super::Observer, from: Side, id: &Id, observed: &Observed, action: &Action) {
    use super::Answer;
    let error_of = |v: &Value| v.get("error")?.get("code")?.as_i64();
    let len = observed.len as u64;
    let answer = match (from, action) {
        (Side::Host, Action::Forward | Action::Replace(_) | Action::Defer(_)) => return,
        (Side::Host, Action::Reply(v)) => Answer::Local {
            error: error_of(v),
            withheld: len,
        },
        (Side::Host, Action::Drop) => Answer::Local {
            error: Some(rpc_error::INTERNAL_ERROR),
            withheld: len,
        },
        (Side::Server, Action::Forward) => Answer::Server {
            error: observed.error,
            withheld: 0,
        },
        (Side::Server, Action::Replace(_) | Action::Defer(_)) => return,
        (Side::Server, Action::Reply(_) | Action::Drop) => Answer::Server {
            error: None,
            withheld: len,
        },
    };
    o.answered(id, answer);
}

/// The message `text` with its `params._meta.traceparent` (a string) replaced; `None` when
/// it has no such field.
fn with_traceparent(text: &str, traceparent: String) -> Option<Value> {
    let mut message: Value = serde_json::from_str(text).ok()?;
    let slot = message
        .get_mut("params")?
        .get_mut("_meta")?
        .get_mut("traceparent")
        .filter(|t| t.is_string())?;
    *slot = Value::String(traceparent);
    Some(message)
}

/// The `error.code` of an error response's text.
fn error_code(text: &str) -> Option<i64> {
    #[derive(serde::Deserialize)]
    struct Response {
        error: Option<ErrorObject>,
    }
    #[derive(serde::Deserialize)]
    struct ErrorObject {
        code: Option<i64>,
    }
    serde_json::from_str::<Response>(text).ok()?.error?.code
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

/// A `notifications/cancelled` with `params.requestId` replaced.
fn with_cancelled_id(text: &str, id: &Id) -> Option<Bytes> {
    let mut v: Value = serde_json::from_str(text).ok()?;
    *v.pointer_mut("/params/requestId")? = id.to_value();
    Some(serde_json::to_vec(&v).ok()?.into())
}

/// `[a,b,c]` from already-serialized messages.
fn join_batch(parts: &[Bytes]) -> Bytes {
    let len = parts.iter().map(|p| p.len() + 1).sum::<usize>() + 1;
    let mut out = BytesMut::with_capacity(len);
    out.put_u8(b'[');
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.put_u8(b',');
        }
        out.put_slice(p);
    }
    out.put_u8(b']');
    out.freeze()
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

/// `params.requestId` of a `notifications/cancelled`, if present and valid.
fn cancelled_request_id(text: &str) -> Option<Id> {
    #[derive(serde::Deserialize)]
    struct Cancelled<'a> {
        #[serde(borrow)]
        params: Option<CancelledParams<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct CancelledParams<'a> {
        #[serde(borrow, rename = "requestId")]
        request_id: Option<&'a RawValue>,
    }
    let msg: Cancelled<'_> = serde_json::from_str(text).ok()?;
    Id::from_raw(msg.params?.request_id?).ok()
}

#[cfg(test)]
mod tests {
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
