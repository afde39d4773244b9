//! The record envelope and the hash chain.
//!
//! A record is one line:
//!
//! ```text
//! {"v":1,"seq":42,"ts":"2026-08-21T10:15:02.123456Z","session":"<32 hex>","prev":"<64 hex>","event":"decision",...}\n
//! ```
//!
//! The envelope keys always come first, in this order and with no whitespace, so a reader
//! can check the chain with a byte-level scan of the prefix ([`parse_envelope`]) instead of
//! a full JSON parse. `prev` is the SHA-256 of the previous record's line bytes, without its
//! `\n`; the first record of a chain has `seq` 1 and `prev` of 64 zeros.

use sha2::{Digest, Sha256};

/// A SHA-256 digest.
pub(crate) type Hash = [u8; 32];

/// The `prev` of a chain's first record.
pub(crate) const GENESIS: Hash = [0; 32];

pub(crate) fn sha256(bytes: &[u8]) -> Hash {
    Sha256::digest(bytes).into()
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&sha256(bytes))
}

/// Lowercase hex of `b`.
pub(crate) fn hex(b: &[u8]) -> String {
    let mut s = Vec::with_capacity(b.len() * 2);
    push_hex(b, &mut s);
    // Only ASCII hex digits were pushed.
    String::from_utf8(s).unwrap_or_default()
}

fn push_hex(h: &[u8], out: &mut Vec<u8>) {
    const D: &[u8; 16] = b"0123456789abcdef";
    for b in h {
        out.push(D[usize::from(b >> 4)]);
        out.push(D[usize::from(b & 15)]);
    }
}

/// `N` bytes from `2N` hex digits. Lowercase hex only: an uppercase digest is a different
/// line, and a tamperer should not get two spellings of one hash (or signature).
pub(crate) fn parse_hex<const N: usize>(s: &[u8]) -> Option<[u8; N]> {
    if s.len() != 2 * N {
        return None;
    }
    let nib = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; N];
    for (i, pair) in s.chunks_exact(2).enumerate() {
        out[i] = (nib(pair[0])? << 4) | nib(pair[1])?;
    }
    Some(out)
}

/// Appends a whole line (with its `\n`) to `out`, from the envelope fields and an event body
/// from [`Event::write_body`](super::Event::write_body).
pub(crate) fn append_line(
    seq: u64,
    ts_micros: i64,
    session: &str,
    prev: &Hash,
    body: &[u8],
    out: &mut Vec<u8>,
) {
    use std::io::Write;
    out.reserve(160 + body.len());
    out.extend_from_slice(b"{\"v\":");
    // Writing to a Vec cannot fail.
    let _ = write!(out, "{}", super::SCHEMA_VERSION);
    out.extend_from_slice(b",\"seq\":");
    let _ = write!(out, "{seq}");
    out.extend_from_slice(b",\"ts\":\"");
    super::time::format_micros(ts_micros, out);
    out.extend_from_slice(b"\",\"session\":\"");
    out.extend_from_slice(session.as_bytes());
    out.extend_from_slice(b"\",\"prev\":\"");
    push_hex(prev, out);
    out.extend_from_slice(b"\",");
    out.extend_from_slice(body);
    out.push(b'\n');
}

/// The envelope of a record, borrowed from its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Envelope<'a> {
    pub v: u32,
    pub seq: u64,
    pub ts: &'a str,
    pub session: &'a str,
    pub prev: Hash,
    pub event: &'a str,
    /// Offset of `"event"`: `{` followed by `line[body_start..]` is the event as a JSON object.
    pub body_start: usize,
}

impl Envelope<'_> {
    /// The event part as its own JSON object.
    pub fn body(&self, line: &[u8]) -> Vec<u8> {
        [b"{", &line[self.body_start..]].concat()
    }
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn lit(&mut self, s: &[u8], what: &'static str) -> Result<(), &'static str> {
        if self.b[self.i..].starts_with(s) {
            self.i += s.len();
            Ok(())
        } else {
            Err(what)
        }
    }

    fn uint(&mut self, what: &'static str) -> Result<u64, &'static str> {
        let start = self.i;
        while self.i < self.b.len() && self.b[self.i].is_ascii_digit() {
            self.i += 1;
        }
        let digits = &self.b[start..self.i];
        // No leading zeros: one spelling per number.
        if digits.is_empty() || (digits.len() > 1 && digits[0] == b'0') {
            return Err(what);
        }
        std::str::from_utf8(digits)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or(what)
    }

    /// A string of bytes accepted by `ok`, up to the closing quote.
    fn plain(&mut self, ok: fn(u8) -> bool, what: &'static str) -> Result<&'a str, &'static str> {
        let start = self.i;
        while self.i < self.b.len() && self.b[self.i] != b'"' {
            if !ok(self.b[self.i]) {
                return Err(what);
            }
            self.i += 1;
        }
        if self.i == start || self.i == self.b.len() {
            return Err(what);
        }
        let s = std::str::from_utf8(&self.b[start..self.i]).map_err(|_| what)?;
        self.i += 1;
        Ok(s)
    }
}

/// Parses a record's envelope from its line (without the `\n`). The error says which part
/// is malformed. Only the prefix is looked at; the caller checks the rest is valid JSON.
pub(crate) fn parse_envelope(line: &[u8]) -> Result<Envelope<'_>, &'static str> {
    let mut c = Cursor { b: line, i: 0 };
    c.lit(b"{\"v\":", "does not start with {\"v\":")?;
    let v = c.uint("bad schema version")?;
    let v = u32::try_from(v).map_err(|_| "bad schema version")?;
    c.lit(b",\"seq\":", "no \"seq\" after \"v\"")?;
    let seq = c.uint("bad seq")?;
    c.lit(b",\"ts\":\"", "no \"ts\" after \"seq\"")?;
    let ts = c.plain(
        |b| b.is_ascii_digit() || matches!(b, b'-' | b':' | b'.' | b'T' | b'Z' | b'+'),
        "bad ts",
    )?;
    c.lit(b",\"session\":\"", "no \"session\" after \"ts\"")?;
    let session = c.plain(|b| b.is_ascii_alphanumeric() || b == b'-', "bad session id")?;
    c.lit(b",\"prev\":\"", "no \"prev\" after \"session\"")?;
    let prev_at = c.i;
    let prev = line
        .get(prev_at..prev_at + 64)
        .and_then(parse_hex)
        .ok_or("prev is not 64 lowercase hex digits")?;
    c.i += 64;
    c.lit(b"\",", "prev is not 64 lowercase hex digits")?;
    let body_start = c.i;
    c.lit(b"\"event\":\"", "no \"event\" after \"prev\"")?;
    let event = c.plain(|b| b.is_ascii_lowercase() || b == b'_', "bad event name")?;
    if !matches!(line.get(c.i), Some(b',' | b'}')) {
        return Err("bad event name");
    }
    if line.last() != Some(&b'}') {
        return Err("does not end with }");
    }
    Ok(Envelope {
        v,
        seq,
        ts,
        session,
        prev,
        event,
        body_start,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(seq: u64, prev: &Hash) -> Vec<u8> {
        let mut out = b"earlier line\n".to_vec();
        append_line(
            seq,
            0,
            "00112233445566778899aabbccddeeff",
            prev,
            br#""event":"decision","x":1}"#,
            &mut out,
        );
        out.split_off("earlier line\n".len())
    }

    #[test]
    fn built_lines_parse_back() {
        let h = sha256(b"x");
        let l = line(42, &h);
        assert_eq!(l.last(), Some(&b'\n'));
        let l = &l[..l.len() - 1];
        let e = parse_envelope(l).unwrap();
        assert_eq!(
            (e.v, e.seq, e.ts, e.prev, e.event),
            (1, 42, "1970-01-01T00:00:00.000000Z", h, "decision")
        );
        assert_eq!(e.body(l), br#"{"event":"decision","x":1}"#);
        serde_json::from_slice::<serde_json::Value>(l).unwrap();
        assert_eq!(parse_hex(hex(&h).as_bytes()), Some(h));
    }

    #[test]
    fn rejects_every_other_spelling() {
        let good = String::from_utf8(line(7, &GENESIS)).unwrap();
        let good = good.trim_end();
        let zeros = "0".repeat(64);
        let cases = [
            (good.replacen("\"seq\":7", "\"seq\":07", 1), "bad seq"),
            (good.replacen("\"seq\":7", "\"seq\": 7", 1), "bad seq"),
            (good.replacen("\"seq\":7", "\"seq\":-7", 1), "bad seq"),
            (
                good.replacen("{\"v\":1", "{ \"v\":1", 1),
                "does not start with {\"v\":",
            ),
            (
                good.replacen(&zeros, &"A".repeat(64), 1),
                "prev is not 64 lowercase hex digits",
            ),
            (
                good.replacen(&zeros, &"0".repeat(63), 1),
                "prev is not 64 lowercase hex digits",
            ),
            (
                good.replacen("\"event\":\"decision\"", "\"event\":\"Decision\"", 1),
                "bad event name",
            ),
            (
                good.replacen("\"ts\":\"1970", "\"ts\":\"\\u0031970", 1),
                "bad ts",
            ),
            (format!("{good} "), "does not end with }"),
            (
                good.replacen(",\"session\"", ",\"x\":1,\"session\"", 1),
                "no \"session\" after \"ts\"",
            ),
            (String::new(), "does not start with {\"v\":"),
        ];
        for (l, want) in cases {
            assert_eq!(parse_envelope(l.as_bytes()).unwrap_err(), want, "{l}");
        }
        for n in 0..good.len() {
            // Every prefix is rejected, never a panic.
            assert!(parse_envelope(&good.as_bytes()[..n]).is_err());
        }
    }
}
