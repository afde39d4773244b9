//! A lenient look at a message rootfence could not read (not JSON, not UTF-8, nested too deep,
//! a `NaN`, longer than the line limit): its top-level `id`, if one can be found, and whether
//! it has a `method`.
//!
//! This never decides what is forwarded — an unreadable message never is. It only decides
//! which host request an unreadable answer was meant for, so that request is answered with an
//! error instead of waiting forever. A misleading id (a hostile server's) can only make
//! rootfence answer that request early with an error, which the server could have done itself.

use serde_json::value::RawValue;

use super::Id;

/// What could be salvaged from an unreadable message.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Salvaged {
    /// The top-level `id` (a string or an integer), when exactly one was found.
    pub id: Option<Id>,
    /// A top-level `method` key was found: a request or a notification, not an answer.
    pub has_method: bool,
    /// A top-level `result` or `error` key was found: it looks like an answer.
    pub has_outcome: bool,
}

/// Scans `bytes` (possibly cut short, possibly not UTF-8) as a JSON object, tracking nesting
/// and strings, and picks out the top-level `id` and `method` keys.
pub fn salvage(bytes: &[u8]) -> Salvaged {
    let mut out = Salvaged::default();
    let mut ids = 0;
    let mut i = skip_ws(bytes, 0);
    if bytes.get(i) != Some(&b'{') {
        return out;
    }
    i += 1;
    let mut depth = 1usize;
    // At depth 1: the next string is a key (after `{` or `,`).
    let mut expect_key = true;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let Some(end) = string_end(bytes, i) else {
                    break;
                };
                if depth == 1 && expect_key {
                    let key = &bytes[i + 1..end];
                    let j = skip_ws(bytes, end + 1);
                    if bytes.get(j) == Some(&b':') {
                        let v = skip_ws(bytes, j + 1);
                        match key {
                            b"id" => {
                                ids += 1;
                                out.id = value_id(bytes, v);
                            }
                            b"method" => out.has_method = true,
                            b"result" | b"error" => out.has_outcome = true,
                            _ => {}
                        }
                        expect_key = false;
                        i = v;
                        continue;
                    }
                }
                i = end + 1;
            }
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    break;
                }
                i += 1;
            }
            b',' => {
                // A comma of the top-level object: a key comes next.
                expect_key |= depth == 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    if ids > 1 {
        // Two ids: which one a peer believes is ambiguous; guess none.
        out.id = None;
    }
    out
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b
        .get(i)
        .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
    {
        i += 1;
    }
    i
}

/// The index of the closing quote of the string starting at `start`.
fn string_end(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// An id value (a string or an integer) at `i`.
fn value_id(b: &[u8], i: usize) -> Option<Id> {
    let end = match b.get(i)? {
        b'"' => string_end(b, i)? + 1,
        b'-' | b'0'..=b'9' => {
            let mut j = i + 1;
            while b.get(j).is_some_and(u8::is_ascii_digit) {
                j += 1;
            }
            if b.get(j).is_some_and(|c| matches!(c, b'.' | b'e' | b'E')) {
                return None; // not an integer: not an id
            }
            j
        }
        _ => return None,
    };
    let text = std::str::from_utf8(&b[i..end]).ok()?;
    let raw: &RawValue = serde_json::from_str(text).ok()?;
    Id::from_raw(raw).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_of(s: &[u8]) -> Option<String> {
        salvage(s).id.map(|i| i.raw().to_owned())
    }

    #[test]
    fn salvage_table() {
        // NaN, nesting, bad UTF-8 and a cut-off line still give their id.
        assert_eq!(
            id_of(br#"{"jsonrpc":"2.0","id":7,"result":{"x":NaN}}"#).as_deref(),
            Some("7")
        );
        assert_eq!(
            id_of(b"{\"result\":[[[[[[[[1]]]]]]]],\"id\":\"a\\\"b\",\"jsonrpc\":\"2.0\"}")
                .as_deref(),
            Some("\"a\\\"b\"")
        );
        assert_eq!(
            id_of(b"{\"jsonrpc\":\"2.0\",\"id\":12,\"result\":{\"text\":\"\xff\xfe\"}}").as_deref(),
            Some("12")
        );
        assert_eq!(
            id_of(br#"{"jsonrpc":"2.0","id":123456789012345678901234,"result":{"text":"aaaa"#)
                .as_deref(),
            Some("123456789012345678901234")
        );
        // Nested ids and ids inside strings are not the message's id.
        assert_eq!(id_of(br#"{"result":{"id":5},"x":"\"id\":6"}"#), None);
        // Two top-level ids: ambiguous.
        assert_eq!(id_of(br#"{"id":1,"id":2,"result":NaN}"#), None);
        // Not an object, null id, float id.
        assert_eq!(id_of(br#"[{"id":1}]"#), None);
        assert_eq!(id_of(br#"{"id":null}"#), None);
        assert_eq!(id_of(br#"{"id":1.5}"#), None);
        assert!(salvage(br#"{"jsonrpc":"2.0","method":"x","params":NaN}"#).has_method);
        assert!(!salvage(br#"{"jsonrpc":"2.0","id":1,"result":{"method":1}}"#).has_method);
        assert!(salvage(br#"{"jsonrpc":"2.0","result":NaN}"#).has_outcome);
        assert!(!salvage(b"not json").has_outcome);
    }
}
