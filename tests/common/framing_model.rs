//! The framing properties shared by `tests/framing_prop.rs` (proptest, runs in CI) and the
//! `framing` cargo-fuzz target (`fuzz/fuzz_targets/framing.rs`, which includes this file by
//! path): a reference model of newline framing, a reader that hands the input out in chosen
//! chunks, and the checks applied to what `jsonrpc::LineReader` and `jsonrpc::scan` return
//! (the same verdict with the enforcer's capture on, `jsonrpc::scan_with`, and with the
//! message's value built in the scan's pass: then equal to `serde_json::from_str`'s).
//!
//! The model is the framing rule written as plainly as possible, over the whole input at
//! once: split on `\n`, drop one trailing `\r` per line, then too long / blank / not UTF-8 /
//! line. The reader must produce exactly the model's frames whatever the chunking, so a
//! boundary bug (a `\r` and its `\n` in different reads, a line that reaches the limit in
//! the middle of a read) shows up as a difference.
#![allow(dead_code)]

use std::collections::HashSet;
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use rootfence::jsonrpc::{
    Deciding, Frame, Kind, LineReader, Rules, ScanError, Scanned, scan, scan_message,
    scan_message_with, scan_with,
};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// A frame as the model predicts it (and as the reader's frames are compared).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// A line, without its terminator.
    Line(Vec<u8>),
    /// A line over the limit: its length without the terminator (`\n` or `\r\n`).
    TooLong(u64),
    /// A line that is not UTF-8.
    InvalidUtf8(Vec<u8>),
}

/// What the model makes of an input.
#[derive(Debug)]
pub struct Model {
    /// The frames, in order.
    pub frames: Vec<Expected>,
    /// Bytes reported in no frame: blank lines and the `\r` dropped before a terminator.
    pub unreported: usize,
    /// Newlines in the input.
    pub newlines: usize,
}

fn blank(line: &[u8]) -> bool {
    line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
}

/// The framing rule over the whole input (see the module docs).
pub fn model(input: &[u8], max: usize) -> Model {
    let max = max.max(1);
    let mut pieces: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
    let newlines = pieces.len() - 1;
    // The text after the last newline is a line only if there is any.
    if pieces.last().is_some_and(|p| p.is_empty()) {
        pieces.pop();
    }
    let mut frames = Vec::new();
    let mut unreported = 0;
    for piece in pieces {
        let line = piece.strip_suffix(b"\r").unwrap_or(piece);
        unreported += piece.len() - line.len();
        if line.len() > max {
            frames.push(Expected::TooLong(line.len() as u64));
        } else if blank(line) {
            unreported += line.len();
        } else if std::str::from_utf8(line).is_err() {
            frames.push(Expected::InvalidUtf8(line.to_vec()));
        } else {
            frames.push(Expected::Line(line.to_vec()));
        }
    }
    Model {
        frames,
        unreported,
        newlines,
    }
}

/// One step of the chunked reader's script.
#[derive(Debug, Clone, Copy)]
pub struct Chunk {
    /// Return `Pending` once before this chunk (waking at once), as a pipe with nothing
    /// ready would.
    pub pending_first: bool,
    /// Bytes handed out by this read (at least 1; fewer if the buffer or the input is
    /// shorter).
    pub size: usize,
}

/// An `AsyncRead` that hands `data` out following `script` (cycled), then reports end of
/// stream.
pub struct Chunked {
    data: Vec<u8>,
    at: usize,
    script: Vec<Chunk>,
    step: usize,
    pended: bool,
}

impl Chunked {
    /// A reader over `data`; an empty script means one read of everything.
    pub fn new(data: Vec<u8>, script: Vec<Chunk>) -> Chunked {
        let script = if script.is_empty() {
            vec![Chunk {
                pending_first: false,
                size: usize::MAX,
            }]
        } else {
            script
        };
        Chunked {
            data,
            at: 0,
            script,
            step: 0,
            pended: false,
        }
    }
}

impl tokio::io::AsyncRead for Chunked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        if this.at == this.data.len() {
            return Poll::Ready(Ok(()));
        }
        let chunk = this.script[this.step % this.script.len()];
        if chunk.pending_first && !this.pended {
            this.pended = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        this.pended = false;
        this.step += 1;
        let n = chunk
            .size
            .max(1)
            .min(buf.remaining())
            .min(this.data.len() - this.at);
        buf.put_slice(&this.data[this.at..this.at + n]);
        this.at += n;
        Poll::Ready(Ok(()))
    }
}

/// Every frame `LineReader` produces from `input` read in `script`'s chunks, with limit
/// `max`. Polled by hand: the reader above is pending at most once per read of at least
/// one byte, so more pending polls than input bytes would be a hang in `next_frame`.
pub fn read_frames(input: &[u8], max: usize, script: Vec<Chunk>) -> Vec<Frame> {
    let mut reader = LineReader::new(Chunked::new(input.to_vec(), script), max);
    let mut cx = Context::from_waker(Waker::noop());
    let mut frames = Vec::new();
    let mut pendings = 0;
    loop {
        let mut fut = std::pin::pin!(reader.next_frame());
        let next = loop {
            match fut.as_mut().poll(&mut cx) {
                Poll::Ready(r) => break r.expect("reading from memory never fails"),
                Poll::Pending => {
                    pendings += 1;
                    assert!(
                        pendings <= input.len(),
                        "next_frame stays pending on a ready reader"
                    );
                }
            }
        };
        match next {
            Some(frame) => frames.push(frame),
            None => return frames,
        }
        assert!(
            frames.len() <= input.len(),
            "more frames than input bytes: the reader does not advance"
        );
    }
}

/// The framing properties for one input, limit and chunking. Returns the lines, for the
/// scan checks.
pub fn check_framing(input: &[u8], max: usize, script: Vec<Chunk>) -> Vec<String> {
    let frames = read_frames(input, max, script.clone());
    let max = max.max(1);
    let mut got = Vec::new();
    let mut lines = Vec::new();
    let mut reported = 0usize;
    for f in &frames {
        match f {
            Frame::Line(l) => {
                let text = std::str::from_utf8(l).expect("a Line frame is UTF-8");
                assert!(
                    !l.contains(&b'\n'),
                    "a Line frame holds a newline: {text:?}"
                );
                assert!(
                    l.len() <= max,
                    "a Line frame of {} bytes > max {max}",
                    l.len()
                );
                assert!(!blank(l), "a blank line was reported: {text:?}");
                reported += l.len();
                lines.push(text.to_owned());
                got.push(Expected::Line(l.to_vec()));
            }
            Frame::InvalidUtf8(l) => {
                assert!(
                    std::str::from_utf8(l).is_err(),
                    "InvalidUtf8 frame is UTF-8"
                );
                assert!(!l.contains(&b'\n') && l.len() <= max);
                reported += l.len();
                got.push(Expected::InvalidUtf8(l.to_vec()));
            }
            Frame::TooLong { len, .. } => {
                assert!(*len > max as u64, "TooLong of {len} bytes <= max {max}");
                reported += *len as usize;
                got.push(Expected::TooLong(*len));
            }
        }
    }
    let want = model(input, max);
    // Every input byte is in a frame, is a newline, or is accounted as unreported (blank
    // lines, dropped `\r`): nothing is lost, duplicated or invented.
    assert!(
        reported + want.newlines <= input.len(),
        "frames report {reported} bytes + {} newlines from a {}-byte input",
        want.newlines,
        input.len()
    );
    assert_eq!(
        reported + want.newlines + want.unreported,
        input.len(),
        "byte accounting is off"
    );
    assert_eq!(
        got,
        want.frames,
        "framing differs from the model (max {max}, chunks {script:?}, input {:?})",
        Lossy(input)
    );
    lines
}

struct Lossy<'a>(&'a [u8]);

impl fmt::Debug for Lossy<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "b\"{}\"", self.0.escape_ascii())
    }
}

/// Capture rules shaped as the enforcer's (a link key, icons judged).
static RULES: Rules = Rules {
    link_key: |k| k == "url",
    icons_inert: |raw| raw.get() == "[]",
};

/// A scan's verdict, for comparing a scan with the capture on to one without.
fn verdict(scanned: Result<Scanned<'_>, ScanError>) -> String {
    match scanned {
        Ok(Scanned::Single(env)) => format!("{:?} {:?} {:?}", env.kind, env.method, env.id),
        Ok(Scanned::Batch(elements)) => format!("batch of {}", elements.len()),
        Err(e) => format!("{e:?}"),
    }
}

/// Asked whether to build a message's value: always (every message the scan can build).
fn build_all(_: Deciding<'_>) -> bool {
    true
}

/// The scan with the value built has the scan's verdict (and error), and the value it built
/// is `serde_json::from_str`'s.
fn check_build(text: &str) {
    let built = scan_message_with(text, Some(&RULES), Some(&build_all));
    if let Ok(Some(value)) = built.as_ref().map(|env| &env.value) {
        let parsed: Map<String, Value> =
            serde_json::from_str(text).expect("a built message parses");
        assert_eq!(**value, parsed, "the value built differs for {text:?}");
    }
    assert_eq!(
        verdict(scan_message(text).map(Scanned::Single)),
        verdict(built.map(Scanned::Single)),
        "building the value changed the scan of {text:?}"
    );
}

/// The scan properties for one line from the reader.
pub fn check_scan(line: &str) {
    assert_eq!(
        verdict(scan(line)),
        verdict(scan_with(line, Some(&RULES), None)),
        "the capture changed the scan of {line:?}"
    );
    assert_eq!(
        verdict(scan(line)),
        verdict(scan_with(line, Some(&RULES), Some(&build_all))),
        "building the value changed the scan of {line:?}"
    );
    if !line.trim_start().starts_with('[') {
        check_build(line);
    }
    match scan(line) {
        Ok(Scanned::Single(env)) => check_message(line, env.kind, env.method.as_deref()),
        Ok(Scanned::Batch(elements)) => {
            assert!(
                !elements.is_empty(),
                "an empty batch was accepted: {line:?}"
            );
            assert!(
                serde_json::from_str::<IgnoredAny>(line).is_ok(),
                "an accepted batch is not JSON: {line:?}"
            );
            for e in elements {
                assert_eq!(
                    verdict(scan_message(e.get()).map(Scanned::Single)),
                    verdict(scan_message_with(e.get(), Some(&RULES), None).map(Scanned::Single)),
                    "the capture changed the scan of {e}"
                );
                check_build(e.get());
                match scan_message(e.get()) {
                    Ok(env) => check_message(e.get(), env.kind, env.method.as_deref()),
                    Err(err) => check_error(e.get(), &err),
                }
            }
        }
        Err(err) => check_error(line, &err),
    }
}

/// An accepted message: plain JSON to `serde_json::Value`, without duplicate keys at any
/// depth, and its kind and method agree with that reading.
fn check_message(text: &str, kind: Kind, method: Option<&str>) {
    let v: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => panic!("scan accepted a message that serde_json::Value rejects ({e}): {text:?}"),
    };
    if let Some(dup) = first_duplicate_key(text) {
        panic!("scan accepted a message with the duplicate key {dup:?}: {text:?}");
    }
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("an accepted message is not an object: {text:?}"));
    assert_eq!(obj.get("jsonrpc"), Some(&Value::from("2.0")), "{text:?}");
    assert_eq!(
        obj.get("method").and_then(Value::as_str),
        method,
        "method differs from serde_json's reading: {text:?}"
    );
    let has = |k: &str| obj.contains_key(k);
    let id_value = obj.get("id").filter(|id| !id.is_null());
    match kind {
        Kind::Request => assert!(id_value.is_some() && method.is_some(), "{text:?}"),
        Kind::Notification => assert!(!has("id") && method.is_some(), "{text:?}"),
        Kind::Response => assert!(has("result") && !has("error") && id_value.is_some()),
        Kind::ErrorResponse => assert!(obj.get("error").is_some_and(Value::is_object)),
    }
    if kind.is_response() {
        assert!(method.is_none() && !has("method"), "{text:?}");
    }
}

/// A refused line: "not JSON" (-32700) only for text that `serde_json::Value` (what the
/// rest of rootfence parses messages into) cannot read either. The oracle is `Value`, not
/// the bare grammar: a lone surrogate escape (`"\ud800"`) matches RFC 8259's grammar, but
/// it names no character, and both the scan and `Value` refuse it as a syntax error.
fn check_error(text: &str, err: &ScanError) {
    if let ScanError::Parse(e) = err {
        assert!(
            serde_json::from_str::<Value>(text).is_err(),
            "valid JSON reported as a parse error ({e}): {text:?}"
        );
    }
}

/// The first object key repeated within one object, anywhere in `text` (which is JSON).
///
/// Written independently of the relay's scan: every object's raw keys go into a fresh
/// `HashSet<String>`.
pub fn first_duplicate_key(text: &str) -> Option<String> {
    let mut found = None;
    let mut de = serde_json::Deserializer::from_str(text);
    // An error here means `text` is not JSON; the caller has already parsed it.
    let _ = Dups(&mut found).deserialize(&mut de);
    found
}

struct Dups<'a>(&'a mut Option<String>);

impl<'de> DeserializeSeed<'de> for Dups<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Dups<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Dups(&mut *self.0))?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut keys = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !keys.insert(key.clone()) && self.0.is_none() {
                *self.0 = Some(key);
            }
            map.next_value_seed(Dups(&mut *self.0))?;
        }
        Ok(())
    }
}

/// Turns fuzzer bytes into (limit, chunk script, input): byte 0 is the limit (1–256),
/// byte 1 the number of script steps (0–7), then one byte per step (low 4 bits: size 1–16;
/// bit 4: pending first).
pub fn decode(data: &[u8]) -> Option<(usize, Vec<Chunk>, &[u8])> {
    let (&max, rest) = data.split_first()?;
    let (&steps, rest) = rest.split_first()?;
    let steps = usize::from(steps % 8).min(rest.len());
    let (script, input) = rest.split_at(steps);
    let script = script
        .iter()
        .map(|&b| Chunk {
            pending_first: b & 0x10 != 0,
            size: usize::from(b & 0x0f) + 1,
        })
        .collect();
    Some((usize::from(max) + 1, script, input))
}

/// Everything, for one fuzzer input.
pub fn check_all(data: &[u8]) {
    let Some((max, script, input)) = decode(data) else {
        return;
    };
    for line in check_framing(input, max, script) {
        check_scan(&line);
    }
}
