//! Newline-delimited framing for stdio JSON-RPC, with a hard line limit.
//!
//! One message per line (`\n`; a trailing `\r` is tolerated), blank lines ignored. A line
//! longer than the limit is skipped to its end *without* being buffered, then reported once as
//! [`Frame::TooLong`]; a line that is not UTF-8 is reported as [`Frame::InvalidUtf8`]. Nothing
//! is ever truncated and passed on.
//!
//! Lines are split off the read buffer without a copy ([`BytesMut::split_to`]), so a forwarded
//! message goes from the reader to the writer as the same allocation.
//!
//! [`LineReader::next_frame`] is cancellation-safe: every byte read is kept in the reader's own
//! buffer, so it can sit in a `tokio::select!` arm.

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};

/// The default maximum line length: 64 MiB.
pub const DEFAULT_MAX_LINE: usize = 64 * 1024 * 1024;

/// How much of an oversized line is kept, for its id.
pub const HEAD: usize = 4096;

/// How much room to make in the buffer before each read, at least.
const READ_CHUNK: usize = 64 * 1024;
/// At most: a message being read grows the read size with it (so a 10 MiB message takes
/// tens of reads, not hundreds), up to the size of a large pipe buffer.
const MAX_READ_CHUNK: usize = 1024 * 1024;

/// One framed unit read from a stream.
#[derive(Debug)]
pub enum Frame {
    /// A complete line: valid UTF-8, without its line terminator, not blank.
    Line(BytesMut),
    /// A line longer than the limit was skipped; `len` is its length in bytes.
    TooLong {
        /// Bytes in the skipped line, without its terminator.
        len: u64,
        /// The line's first bytes (at most [`HEAD`]): enough to find which request an
        /// oversized answer was meant for (see `jsonrpc::salvage`), never forwarded.
        head: bytes::Bytes,
    },
    /// A line that is not valid UTF-8 (the rejected line).
    InvalidUtf8(BytesMut),
}

/// Reads [`Frame`]s from a byte stream.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    buf: BytesMut,
    /// Bytes of `buf` already searched for a newline.
    scanned: usize,
    max: usize,
    /// `Some(n)` while skipping an oversized line, of which `n` bytes were dropped so far.
    discarding: Option<u64>,
    /// The first bytes of the line being skipped.
    head: bytes::Bytes,
    /// Whether the last byte dropped while skipping was `\r`: if the `\n` comes next, that
    /// `\r` is part of the terminator, not of the line's reported length.
    dropped_cr: bool,
    eof: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// A reader that rejects lines longer than `max` bytes (at least 1).
    pub fn new(inner: R, max: usize) -> Self {
        LineReader {
            inner,
            buf: BytesMut::with_capacity(READ_CHUNK),
            scanned: 0,
            max: max.max(1),
            discarding: None,
            head: bytes::Bytes::new(),
            dropped_cr: false,
            eof: false,
        }
    }

    /// The next frame, or `None` at end of stream. A final line without a newline is still a
    /// line.
    pub async fn next_frame(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            if let Some(frame) = self.take_buffered() {
                return Ok(Some(frame));
            }
            if self.eof {
                return Ok(self.finish());
            }
            let chunk = self.buf.len().clamp(READ_CHUNK, MAX_READ_CHUNK);
            self.buf.reserve(chunk);
            if self.inner.read_buf(&mut self.buf).await? == 0 {
                self.eof = true;
            }
        }
    }

    /// Takes a frame out of what is already buffered, if there is a whole one, and keeps
    /// oversized data from accumulating.
    fn take_buffered(&mut self) -> Option<Frame> {
        loop {
            let Some(pos) = memchr::memchr(b'\n', &self.buf[self.scanned..]) else {
                self.scanned = self.buf.len();
                // A trailing `\r` may be the first half of a `\r\n` split across reads: it
                // does not count toward the limit until the next byte shows what it is.
                let ends_cr = self.buf.last() == Some(&b'\r');
                if let Some(dropped) = self.discarding.as_mut() {
                    *dropped += self.buf.len() as u64;
                    if !self.buf.is_empty() {
                        self.dropped_cr = ends_cr;
                    }
                    self.buf.clear();
                    self.scanned = 0;
                } else if self.buf.len() - usize::from(ends_cr) > self.max {
                    self.head =
                        bytes::Bytes::copy_from_slice(&self.buf[..self.buf.len().min(HEAD)]);
                    self.discarding = Some(self.buf.len() as u64);
                    self.dropped_cr = ends_cr;
                    self.buf.clear();
                    self.scanned = 0;
                }
                return None;
            };
            let end = self.scanned + pos;
            self.scanned = 0;
            if let Some(dropped) = self.discarding.take() {
                let cr = end
                    .checked_sub(1)
                    .map_or(self.dropped_cr, |i| self.buf[i] == b'\r');
                self.buf.advance(end + 1);
                return Some(Frame::TooLong {
                    len: dropped + end as u64 - u64::from(cr),
                    head: std::mem::take(&mut self.head),
                });
            }
            let mut line = self.buf.split_to(end + 1);
            line.truncate(end);
            if line.last() == Some(&b'\r') {
                line.truncate(end - 1);
            }
            if let Some(frame) = self.check(line) {
                return Some(frame);
            }
        }
    }

    /// The frame for whatever is left at end of stream.
    fn finish(&mut self) -> Option<Frame> {
        if let Some(dropped) = self.discarding.take() {
            let cr = self.buf.last().map_or(self.dropped_cr, |&b| b == b'\r');
            let len = dropped + self.buf.len() as u64 - u64::from(cr);
            self.buf.clear();
            return Some(Frame::TooLong {
                len,
                head: std::mem::take(&mut self.head),
            });
        }
        if self.buf.is_empty() {
            return None;
        }
        let mut line = self.buf.split();
        self.scanned = 0;
        if line.last() == Some(&b'\r') {
            line.truncate(line.len() - 1);
        }
        self.check(line)
    }

    /// Applies the length, blank-line and UTF-8 rules to one line.
    fn check(&self, line: BytesMut) -> Option<Frame> {
        if line.len() > self.max {
            return Some(Frame::TooLong {
                len: line.len() as u64,
                head: bytes::Bytes::copy_from_slice(&line[..line.len().min(HEAD)]),
            });
        }
        if line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
            return None;
        }
        if std::str::from_utf8(&line).is_err() {
            return Some(Frame::InvalidUtf8(line));
        }
        Some(Frame::Line(line))
    }
}

/// The text of a line produced by [`Frame::Line`].
///
/// # Panics
///
/// Never for a line from [`LineReader`], which validated it; other input falls back to an
/// empty string rather than panicking.
pub fn line_str(line: &[u8]) -> &str {
    std::str::from_utf8(line).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize) -> Vec<String> {
        // A reader that hands out one byte at a time exercises every buffer boundary.
        let mut out = Vec::new();
        for chunked in [false, true] {
            let mut got = Vec::new();
            let data = input.to_vec();
            let reader: Box<dyn AsyncRead + Unpin> = if chunked {
                Box::new(OneByte(data))
            } else {
                Box::new(std::io::Cursor::new(data))
            };
            let mut r = LineReader::new(reader, max);
            while let Some(f) = r.next_frame().await.unwrap() {
                got.push(match f {
                    Frame::Line(l) => format!("line:{}", line_str(&l)),
                    Frame::TooLong { len, .. } => format!("toolong:{len}"),
                    Frame::InvalidUtf8(line) => format!("utf8:{}", line.len()),
                });
            }
            if chunked {
                assert_eq!(got, out, "byte-at-a-time framing differs for {input:?}");
            } else {
                out = got;
            }
        }
        out
    }

    struct OneByte(Vec<u8>);
    impl AsyncRead for OneByte {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            if !self.0.is_empty() {
                let b = self.0.remove(0);
                buf.put_slice(&[b]);
            }
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn framing_table() {
        let cases: &[(&[u8], usize, &[&str])] = &[
            (b"a\nb\n", 100, &["line:a", "line:b"]),
            (b"a\r\nb\r\n", 100, &["line:a", "line:b"]),
            (b"\n\n  \n\t\r\na\n\n", 100, &["line:a"]),
            (b"last-without-newline", 100, &["line:last-without-newline"]),
            (b"last\r", 100, &["line:last"]),
            (
                b"12345\n123456\n1234\n",
                5,
                &["line:12345", "toolong:6", "line:1234"],
            ),
            (b"0123456789abcdef\nok\n", 4, &["toolong:16", "line:ok"]),
            (b"0123456789abcdef", 4, &["toolong:16"]),
            (
                b"ok\n\xff\xfe\nok2\n",
                100,
                &["line:ok", "utf8:2", "line:ok2"],
            ),
            // An overlong UTF-8 encoding of '/' is not UTF-8.
            (b"\xc0\xaf\n", 100, &["utf8:2"]),
            // U+2028 is legal JSON text and not a line break.
            ("a\u{2028}b\n".as_bytes(), 100, &["line:a\u{2028}b"]),
            (b"", 100, &[]),
        ];
        for (input, max, want) in cases {
            assert_eq!(
                frames(input, *max).await,
                *want,
                "input {input:?} max {max}"
            );
        }
    }

    /// Regression (found by the `framing` fuzz target's model): a line of exactly `max`
    /// bytes whose `\r\n` was split across two reads was skipped as too long, because the
    /// `\r` counted toward the limit before the `\n` showed it was the terminator. `frames`
    /// reads byte by byte too, so each case also pins independence from read boundaries.
    #[tokio::test]
    async fn crlf_split_across_reads_at_the_limit_is_a_line() {
        assert_eq!(frames(b"12345\r\n", 5).await, ["line:12345"]);
        assert_eq!(
            frames(b"12345\r\nab\r\n", 5).await,
            ["line:12345", "line:ab"]
        );
        assert_eq!(frames(b"12345\r", 5).await, ["line:12345"]);
    }

    /// Regression (same target): the length reported for a skipped line counted the `\r` of
    /// its `\r\n` when the line was skipped while still arriving, and not otherwise.
    #[tokio::test]
    async fn too_long_length_excludes_the_crlf_terminator() {
        assert_eq!(frames(b"123456\r\n", 5).await, ["toolong:6"]);
        assert_eq!(
            frames(b"0123456789\r\nok\n", 4).await,
            ["toolong:10", "line:ok"]
        );
        assert_eq!(frames(b"0123456789\r", 4).await, ["toolong:10"]);
        // Only one `\r` belongs to the terminator.
        assert_eq!(frames(b"\r\r\r\n", 1).await, ["toolong:2"]);
        assert_eq!(frames(b"ab\rc\r\n", 3).await, ["toolong:4"]);
    }

    #[tokio::test]
    async fn oversized_line_is_not_buffered() {
        // 8 MiB line with a 1 KiB limit: the reader must never hold more than a read's worth.
        struct Endless {
            left: usize,
            max_seen: std::sync::Arc<std::sync::atomic::AtomicUsize>,
        }
        impl AsyncRead for Endless {
            fn poll_read(
                mut self: std::pin::Pin<&mut Self>,
                _: &mut std::task::Context<'_>,
                buf: &mut tokio::io::ReadBuf<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                self.max_seen
                    .fetch_max(buf.capacity(), std::sync::atomic::Ordering::Relaxed);
                let n = buf.remaining().min(self.left);
                if n > 0 {
                    buf.put_slice(&vec![b'x'; n]);
                    self.left -= n;
                } else if self.left == 0 {
                    buf.put_slice(b"\n");
                    self.left = usize::MAX;
                }
                std::task::Poll::Ready(Ok(()))
            }
        }
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut r = LineReader::new(
            Endless {
                left: 8 << 20,
                max_seen: seen.clone(),
            },
            1024,
        );
        match r.next_frame().await.unwrap() {
            Some(Frame::TooLong { len, head }) => {
                assert_eq!(len, 8 << 20);
                assert!(!head.is_empty() && head.len() <= HEAD);
            }
            other => panic!("expected TooLong, got {other:?}"),
        }
        assert!(
            seen.load(std::sync::atomic::Ordering::Relaxed) < 4 * READ_CHUNK,
            "buffer grew while skipping an oversized line"
        );
    }
}
