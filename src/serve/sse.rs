//! Server-Sent Events bodies: a POST's answer stream (the messages before its response, then
//! the response, then the end) and the session's GET stream.
//!
//! Each message is one `message` event whose `data` is the JSON text as the relay wrote it,
//! sent as three frames (prefix, message, suffix) so a large message is never copied. A raw
//! carriage return would end an SSE line: in valid JSON it can only be whitespace, so it is
//! replaced by a space (the same JSON value). A comment line every [`KEEP_ALIVE`] keeps
//! intermediaries from closing a quiet stream, and finds a client that has gone.
//!
//! Events carry no ids: streams are not resumable (`Last-Event-ID` is ignored), so a client
//! that loses a POST stream gets an error for that request, never a silent wait.

use std::collections::{HashSet, VecDeque};
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame};

use super::router::{Out, Stream};
use crate::jsonrpc::IdKey;

/// How often a comment is sent on a quiet stream.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

const PREFIX: &[u8] = b"event: message\ndata: ";
const SUFFIX: &[u8] = b"\n\n";

/// Builds the answers for requests a session ended without answering.
pub type OnEnd = Box<dyn FnOnce(&HashSet<IdKey>) -> Vec<Bytes> + Send>;

/// An SSE response body fed by a router stream.
pub struct SseBody {
    frames: VecDeque<Bytes>,
    stream: Option<Stream>,
    /// Request ids still to be answered (a POST stream ends when none is left); `None` for
    /// the GET stream, which lasts as long as the session.
    waiting: Option<HashSet<IdKey>>,
    /// Answers for requests the session ended without answering, built by the caller.
    on_end: Option<OnEnd>,
    keep_alive: tokio::time::Interval,
}

impl std::fmt::Debug for SseBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseBody")
            .field("queued", &self.frames.len())
            .field("waiting", &self.waiting)
            .finish_non_exhaustive()
    }
}

impl SseBody {
    /// A POST's stream: `first` are messages already taken from `stream`; it ends once every
    /// id in `waiting` is answered. If the session ends first, `on_end` gives the answers for
    /// the ids still waiting.
    pub fn post(
        first: Vec<Bytes>,
        stream: Stream,
        waiting: HashSet<IdKey>,
        on_end: OnEnd,
    ) -> SseBody {
        let mut body = SseBody::new(stream, Some(waiting), Some(on_end));
        for line in first {
            body.push(line);
        }
        if body.waiting.as_ref().is_some_and(HashSet::is_empty) {
            body.stream = None;
        }
        body
    }

    /// The session's GET stream.
    pub fn get(stream: Stream) -> SseBody {
        SseBody::new(stream, None, None)
    }

    fn new(stream: Stream, waiting: Option<HashSet<IdKey>>, on_end: Option<OnEnd>) -> SseBody {
        let start = tokio::time::Instant::now() + KEEP_ALIVE;
        let mut keep_alive = tokio::time::interval_at(start, KEEP_ALIVE);
        keep_alive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        SseBody {
            frames: VecDeque::new(),
            stream: Some(stream),
            waiting,
            on_end,
            keep_alive,
        }
    }

    /// Queues one message as an event.
    fn push(&mut self, line: Bytes) {
        self.frames.push_back(Bytes::from_static(PREFIX));
        self.frames.push_back(sse_safe(line));
        self.frames.push_back(Bytes::from_static(SUFFIX));
    }

    fn take(&mut self, out: Out) {
        if let (Some(id), Some(waiting)) = (&out.answers, &mut self.waiting) {
            waiting.remove(id);
        }
        self.push(out.line);
        if self.waiting.as_ref().is_some_and(HashSet::is_empty) {
            // Answered: the stream ends after this event.
            self.stream = None;
        }
    }
}

/// A message safe to put in one `data:` line (or to give the relay as one line): raw CR
/// and LF bytes of a valid JSON text are whitespace outside strings (inside strings they
/// must be escaped), so spaces mean the same value.
pub fn sse_safe(line: Bytes) -> Bytes {
    if memchr::memchr2(b'\r', b'\n', &line).is_none() {
        return line;
    }
    let cleaned: Vec<u8> = line
        .iter()
        .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
        .collect();
    Bytes::from(cleaned)
}

impl Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        loop {
            if let Some(frame) = this.frames.pop_front() {
                return Poll::Ready(Some(Ok(Frame::data(frame))));
            }
            let Some(stream) = this.stream.as_mut() else {
                return Poll::Ready(None);
            };
            match stream.rx.poll_recv(cx) {
                Poll::Ready(Some(out)) => this.take(out),
                Poll::Ready(None) => {
                    // The session ended: answer what is still waiting, then end.
                    this.stream = None;
                    if let (Some(waiting), Some(on_end)) = (&this.waiting, this.on_end.take())
                        && !waiting.is_empty()
                    {
                        for line in on_end(waiting) {
                            this.push(line);
                        }
                    }
                }
                Poll::Pending => {
                    if this.keep_alive.poll_tick(cx).is_ready() {
                        return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b":\n\n")))));
                    }
                    return Poll::Pending;
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.frames.is_empty() && self.stream.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carriage_returns_and_newlines_become_spaces() {
        assert_eq!(
            sse_safe(Bytes::from_static(b"{\r\n\"a\":1}")),
            Bytes::from_static(b"{  \"a\":1}")
        );
        let untouched = Bytes::from_static(b"{\"a\":\"\\r\"}");
        assert_eq!(sse_safe(untouched.clone()), untouched);
    }
}
