//! The pumps: one per direction, each reading framed lines from one side and routing every
//! message, plus the writer task that owns each output stream.
//!
//! The hot path for a message nobody intercepts is: frame (split off the read buffer, no
//! copy), one validating scan, a pending-table update, and the same bytes queued to the other
//! side's writer. Only intercepted messages are parsed into a `Value`.
//!
//! Each output has exactly one writer task fed by a queue, so a pump never writes to a pipe
//! itself. Forwarding waits when the other side's queue is full (flow control); answering the
//! side a pump reads from never waits (see [`Session::send_detached`]), which keeps a server
//! that is blocked on its own output from deadlocking with rootfence.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::mpsc;

use super::intercept::{Action, Intercepted, Interceptor, ProtocolError};
use super::session::{Matched, Outgoing, Session, Side};
use crate::jsonrpc::Id;
use crate::jsonrpc::envelope::{self, Envelope, Kind, ScanError, Scanned};
use crate::jsonrpc::error::{self as rpc_error, error_response};
use crate::jsonrpc::framing::{self, Frame, LineReader};
use crate::mcp::methods;

/// Writer buffer: small messages are coalesced into one write; large ones bypass it.
const WRITE_BUFFER: usize = 64 * 1024;

/// Owns one output stream: writes each queued message followed by `\n`, coalescing whatever
/// is queued into one flush.
pub(crate) async fn writer<W: AsyncWrite + Unpin>(
    out: W,
    mut queue: mpsc::Receiver<Outgoing>,
) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(WRITE_BUFFER, out);
    while let Some(mut item) = queue.recv().await {
        loop {
            match item {
                Outgoing::Line(line) => {
                    out.write_all(&line).await?;
                    out.write_all(b"\n").await?;
                }
                Outgoing::Close => {
                    out.flush().await?;
                    out.shutdown().await?;
                    return Ok(());
                }
            }
            match queue.try_recv() {
                Ok(next) => item = next,
                Err(_) => break,
            }
        }
        out.flush().await?;
    }
    out.flush().await
}

/// Reads every frame from one side until end of stream, routing each message.
pub(crate) async fn pump<R, I>(
    from: Side,
    mut reader: LineReader<R>,
    max_line: usize,
    session: Arc<Session>,
    icpt: Arc<I>,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    I: Interceptor,
{
    let count = match from {
        Side::Host => &session.counters.from_host,
        Side::Server => &session.counters.from_server,
    };
    let router = Router {
        from,
        session: &session,
        icpt: &icpt,
    };
    while let Some(frame) = reader.next_frame().await? {
        count.fetch_add(1, Ordering::Relaxed);
        match frame {
            Frame::Line(line) => router.line(line.freeze()).await,
            Frame::TooLong { len } => router.protocol_error(
                "too_long",
                format!("a message of {len} bytes exceeds the line limit of {max_line} bytes"),
                Offending { len, line: None },
                rpc_error::INVALID_REQUEST,
            ),
            Frame::InvalidUtf8(line) => router.protocol_error(
                "bad_utf8",
                format!("a line of {} bytes is not valid UTF-8", line.len()),
                Offending::line(&line.freeze()),
                rpc_error::PARSE_ERROR,
            ),
        }
    }
    Ok(())
}

/// What becomes of one message (or batch element) once routed.
enum Step {
    /// Forward the original bytes to the other side.
    Forward,
    /// Forward these bytes instead.
    ForwardBytes(Bytes),
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
    from: Side,
    kind: Kind,
    id: Option<Id>,
    method: Arc<str>,
}

/// Relay-internal handling some messages need whether or not they are intercepted.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Internal {
    None,
    RecordInitialize,
    RecordServerInfo,
}

struct Router<'a, I> {
    from: Side,
    session: &'a Arc<Session>,
    icpt: &'a Arc<I>,
}

impl<I: Interceptor> Router<'_, I> {
    async fn line(&self, line: Bytes) {
        let text = framing::line_str(&line);
        match envelope::scan(text) {
            Err(e) => {
                if let Some(reply) = self.invalid(&e, Offending::line(&line)) {
                    self.session.send_detached(self.from, reply);
                }
            }
            Ok(Scanned::Single(env)) => {
                let step = self.route(env, text, &line);
                commit(self.from, step, line.clone(), self.session).await;
            }
            Ok(Scanned::Batch(elements)) => self.batch(&line, &elements).await,
        }
    }

    /// A batch (2025-03-26): each element is routed on its own. Forwarded elements go on as
    /// one batch, answers go back as one batch. When every element is forwarded unchanged the
    /// original line is forwarded as it is.
    async fn batch(&self, line: &Bytes, elements: &[&RawValue]) {
        let mut steps = Vec::with_capacity(elements.len());
        for element in elements {
            let text = element.get();
            let bytes = line.slice_ref(text.as_bytes());
            let step = match envelope::scan_message(text) {
                Ok(env) => self.route(env, text, &bytes),
                Err(e) => self
                    .invalid(&e, Offending::line(&bytes))
                    .map_or(Step::Nothing, Step::Reply),
            };
            steps.push(step);
        }
        if steps.iter().all(|s| matches!(s, Step::Forward)) {
            let _ = self.session.send(self.from.other(), line.clone()).await;
            return;
        }
        let originals: Vec<Bytes> = elements
            .iter()
            .map(|e| line.slice_ref(e.get().as_bytes()))
            .collect();
        if steps.iter().any(|s| matches!(s, Step::Later(_))) {
            let (from, session) = (self.from, Arc::clone(self.session));
            tokio::spawn(async move {
                let mut resolved = Vec::with_capacity(steps.len());
                for step in steps {
                    resolved.push(match step {
                        Step::Later(fut) => fut.await,
                        other => other,
                    });
                }
                send_batch(from, resolved, originals, &session).await;
            });
        } else {
            send_batch(self.from, steps, originals, self.session).await;
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
                if from == Side::Server && session.is_reserved_id(&id) {
                    return self.refuse(
                        "reserved_id",
                        format!("request id {id} lies in rootfence's own id namespace"),
                        id,
                        bytes,
                    );
                }
                if from == Side::Host {
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
                if let Some(version) = &env.meta_protocol_version {
                    session.record_meta(version, env.meta_client_capabilities);
                }
                let internal = if from == Side::Host && &*method == methods::INITIALIZE {
                    Internal::RecordInitialize
                } else {
                    Internal::None
                };
                let routed = Routed {
                    from,
                    kind: Kind::Request,
                    id: Some(id),
                    method,
                };
                self.decide(routed, text, internal)
            }
            Kind::Notification => {
                let method: Arc<str> = env.method.as_deref().unwrap_or_default().into();
                if &*method == methods::CANCELLED {
                    if let Some(request_id) = cancelled_request_id(text) {
                        if !session.cancel(from, &request_id) {
                            tracing::debug!(id = %request_id, "dropping a cancellation for a request rootfence answered");
                            return Step::Nothing;
                        }
                    }
                }
                let routed = Routed {
                    from,
                    kind: Kind::Notification,
                    id: None,
                    method,
                };
                self.decide(routed, text, Internal::None)
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
                match session.match_response(from, &id) {
                    Matched::Own(own) => {
                        match serde_json::from_str::<Value>(text) {
                            Ok(value) => own.deliver(value),
                            Err(e) => tracing::warn!("host response to rootfence unreadable: {e}"),
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
                    Matched::Pending(pending) => {
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
                        let routed = Routed {
                            from,
                            kind,
                            id: Some(id),
                            method: pending.method,
                        };
                        self.decide(routed, text, internal)
                    }
                }
            }
        }
    }

    /// Asks the interceptor (when it wants the message) and turns its action into a step.
    fn decide(&self, routed: Routed, text: &str, internal: Internal) -> Step {
        let screened = self.icpt.screen(
            routed.from,
            routed.kind,
            routed.id.as_ref(),
            &routed.method,
            text.as_bytes(),
        );
        if let Some(action) = screened {
            return finish(routed, action, self.session);
        }
        let wants = self.icpt.wants(routed.from, routed.kind, &routed.method);
        if !wants && internal == Internal::None {
            return finish(routed, Action::Forward, self.session);
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
            Internal::RecordServerInfo => self.session.record_server_info(&message),
            Internal::None => {}
        }
        if !wants {
            return finish(routed, Action::Forward, self.session);
        }
        let action = self.icpt.intercept(
            self.session,
            Intercepted {
                from: routed.from,
                kind: routed.kind,
                id: routed.id.clone(),
                method: Arc::clone(&routed.method),
                message,
                verbatim_ok: memchr::memmem::find(text.as_bytes(), b"serde_json::private")
                    .is_none(),
            },
        );
        finish(routed, action, self.session)
    }

    /// Handles a message that failed the scan: the host gets an error response; the server's
    /// message is dropped, and if it was a response to a host request, that request is
    /// answered with an error so it does not wait forever. Returns the reply for the sender.
    fn invalid(&self, e: &ScanError, offending: Offending) -> Option<Bytes> {
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
                Some(error_response(id.as_ref(), kind, &format!("rootfence: {e}"), None).into())
            }
            Side::Server => {
                self.report(code, e.to_string(), id.clone(), "dropped", offending);
                let is_response = matches!(
                    e,
                    ScanError::Invalid {
                        has_method: false,
                        ..
                    }
                );
                if let (Some(id), true) = (id, is_response) {
                    if let Matched::Pending(p) = self.session.match_response(Side::Server, &id) {
                        let msg = format!(
                            "rootfence: the server's response to `{}` was malformed and withheld: {e}",
                            p.method
                        );
                        let line =
                            error_response(Some(&p.id), rpc_error::BAD_SERVER_RESPONSE, &msg, None);
                        self.session.send_detached(Side::Host, line.into());
                    }
                }
                None
            }
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

    /// Reports a problem with a frame that is not even a message.
    fn protocol_error(
        &self,
        code: &'static str,
        detail: String,
        offending: Offending,
        rpc_code: i64,
    ) {
        match self.from {
            Side::Host => {
                let line = error_response(None, rpc_code, &format!("rootfence: {detail}"), None);
                self.report(code, detail, None, "answered_with_error", offending);
                self.session.send_detached(Side::Host, line.into());
            }
            Side::Server => self.report(code, detail, None, "dropped", offending),
        }
    }

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
}

/// Turns a final (or deferred) action into a step, keeping the pending tables right: a request
/// is tracked only when it is actually forwarded, and a request is never left unanswered.
fn finish(routed: Routed, action: Action, session: &Arc<Session>) -> Step {
    let to_bytes = |v: &Value| -> Bytes {
        serde_json::to_vec(v)
            .expect("a JSON value always serializes")
            .into()
    };
    match action {
        Action::Forward | Action::Replace(_) => {
            if let (Kind::Request, Some(id)) = (routed.kind, &routed.id) {
                if !session.track_request(routed.from, id, Arc::clone(&routed.method)) {
                    let cause = session.server_gone_cause().unwrap_or_default();
                    return Step::Reply(server_gone_error(id, &routed.method, &cause));
                }
            }
            match action {
                Action::Replace(v) => Step::ForwardBytes(to_bytes(&v)),
                _ => Step::Forward,
            }
        }
        Action::Reply(v) => {
            if let (Kind::Request, Side::Host, Some(id)) = (routed.kind, routed.from, &routed.id) {
                session.answered_locally(id);
            }
            Step::Reply(to_bytes(&v))
        }
        Action::Drop => match (routed.kind, &routed.id) {
            (Kind::Request, Some(id)) => {
                if routed.from == Side::Host {
                    session.answered_locally(id);
                }
                let msg = format!(
                    "rootfence: the `{}` request was not forwarded",
                    routed.method
                );
                Step::Reply(error_response(Some(id), rpc_error::INTERNAL_ERROR, &msg, None).into())
            }
            _ => Step::Nothing,
        },
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

/// Sends the outcome of a single message; a deferred one is sent from its own task.
async fn commit(from: Side, step: Step, line: Bytes, session: &Arc<Session>) {
    match step {
        Step::Later(fut) => {
            let session = Arc::clone(session);
            tokio::spawn(async move {
                let step = fut.await;
                commit_resolved(from, step, line, &session).await;
            });
        }
        step => commit_resolved(from, step, line, session).await,
    }
}

/// Sends a decided outcome. `finish` resolves every nested deferral, so a `Later` step never
/// reaches here; if one did, the message would be dropped, never forwarded unchecked.
async fn commit_resolved(from: Side, step: Step, line: Bytes, session: &Arc<Session>) {
    match step {
        Step::Forward => {
            let _ = session.send(from.other(), line).await;
        }
        Step::ForwardBytes(bytes) => {
            let _ = session.send(from.other(), bytes).await;
        }
        Step::Reply(bytes) => session.send_detached(from, bytes),
        Step::Nothing => {}
        Step::Later(_) => tracing::error!("a deferred decision resolved to another deferral"),
    }
}

/// Sends the outcome of a batch: forwarded elements as one batch to the other side, answers
/// as one batch to the sender.
async fn send_batch(from: Side, steps: Vec<Step>, originals: Vec<Bytes>, session: &Arc<Session>) {
    let mut forward = Vec::new();
    let mut replies = Vec::new();
    for (step, original) in steps.into_iter().zip(originals) {
        match step {
            Step::Forward => forward.push(original),
            Step::ForwardBytes(b) => forward.push(b),
            Step::Reply(b) => replies.push(b),
            Step::Nothing | Step::Later(_) => {}
        }
    }
    if !forward.is_empty() {
        let _ = session.send(from.other(), join_batch(&forward)).await;
    }
    if !replies.is_empty() {
        session.send_detached(from, join_batch(&replies));
    }
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
}
