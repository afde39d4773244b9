//! The host side of a relay that runs behind HTTP: in-memory streams in place of rootfence's
//! stdin and stdout.
//!
//! Toward the relay, each HTTP message is one channel item ([`HostInput`]), read back as one
//! newline-terminated line: a message is queued whole or not at all, so concurrent POSTs never
//! interleave, and the channel's bound is the flow control. From the relay, lines go through
//! an in-memory pipe to the message router, which frames them with the relay's own bounded
//! [`LineReader`](crate::jsonrpc::LineReader).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::mpsc;

/// Messages queued toward one relay before a sender waits.
const INPUT_QUEUE: usize = 256;

/// Bytes of relay output buffered in memory before the relay's writer waits for the router.
pub const OUTPUT_PIPE: usize = 256 * 1024;

/// The sending end: one item per message, without its newline (the reader adds it). A send
/// fails once the relay has stopped reading (its session ended); a weak sender does not keep
/// the relay's input open.
pub type HostInput = mpsc::Sender<Bytes>;

/// The relay has stopped reading its host input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the session has ended")]
pub struct Closed;

/// The relay's end: an [`AsyncRead`] of newline-terminated messages; end of stream once every
/// [`HostInput`] is dropped.
#[derive(Debug)]
pub struct HostReader {
    rx: mpsc::Receiver<Bytes>,
    current: Bytes,
    /// The newline after `current` is still to be read.
    newline: bool,
}

/// A connected pair.
pub fn host_input() -> (HostInput, HostReader) {
    let (tx, rx) = mpsc::channel(INPUT_QUEUE);
    (
        tx,
        HostReader {
            rx,
            current: Bytes::new(),
            newline: false,
        },
    )
}

impl AsyncRead for HostReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if buf.remaining() == 0 {
                return Poll::Ready(Ok(()));
            }
            if !this.current.is_empty() {
                let n = this.current.len().min(buf.remaining());
                buf.put_slice(&this.current[..n]);
                this.current.advance(n);
                return Poll::Ready(Ok(()));
            }
            if this.newline {
                this.newline = false;
                buf.put_slice(b"\n");
                return Poll::Ready(Ok(()));
            }
            match this.rx.poll_recv(cx) {
                Poll::Ready(Some(message)) => {
                    this.current = message;
                    this.newline = true;
                }
                // Every sender is gone: end of stream.
                Poll::Ready(None) => return Poll::Ready(Ok(())),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn messages_come_out_as_lines_then_end_of_stream() {
        let (tx, mut rx) = host_input();
        tx.send(Bytes::from_static(b"{\"a\":1}")).await.unwrap();
        tx.send(Bytes::from_static(b"{\"b\":2}")).await.unwrap();
        drop(tx);
        let mut out = String::new();
        rx.read_to_string(&mut out).await.unwrap();
        assert_eq!(out, "{\"a\":1}\n{\"b\":2}\n");
    }
}
