//! Escaping a serialized record for one safe line: what serde_json leaves (DEL, C1 controls,
//! line and paragraph separators, bidi controls) escaped so that a URI cannot end a line,
//! forge another record or reorder what a reviewer sees.

/// Escapes, in place from `start`, the characters serde_json leaves raw but that must not
/// appear raw in a log line: DEL, C1 controls, U+2028/U+2029, bidi controls and U+FEFF
/// become `\uXXXX`. They can only occur inside JSON strings (the structure is ASCII), where the
/// escape means the same character, so the JSON value is unchanged.
pub(crate) fn escape_line(buf: &mut Vec<u8>, start: usize) {
    // Fast path: every character to escape is DEL or outside ASCII, and most lines are
    // plain ASCII (checked a word at a time).
    let tail = &buf[start..];
    if tail.is_ascii() && memchr::memchr(0x7f, tail).is_none() {
        return;
    }
    let tail = buf.split_off(start);
    let mut i = 0;
    while i < tail.len() {
        let b = tail[i];
        let cp = match b {
            0x7f => Some((0x7f, 1)),
            0xc2 if matches!(tail.get(i + 1), Some(0x80..=0x9f)) => {
                Some((u32::from(tail[i + 1]), 2))
            }
            0xd8 if tail.get(i + 1) == Some(&0x9c) => Some((0x061c, 2)),
            0xe2 if tail.get(i + 1) == Some(&0x80)
                && matches!(tail.get(i + 2), Some(0x8e | 0x8f | 0xa8..=0xae)) =>
            {
                Some((0x2000 | u32::from(tail[i + 2] & 0x3f), 3))
            }
            0xe2 if tail.get(i + 1) == Some(&0x81)
                && matches!(tail.get(i + 2), Some(0xa6..=0xa9)) =>
            {
                Some((0x2040 | u32::from(tail[i + 2] & 0x3f), 3))
            }
            // U+FEFF: invisible, so `a\u{feff}b` would pass for `ab`.
            0xef if tail.get(i + 1) == Some(&0xbb) && tail.get(i + 2) == Some(&0xbf) => {
                Some((0xfeff, 3))
            }
            _ => None,
        };
        match cp {
            Some((cp, n)) => {
                use std::io::Write;
                let _ = write!(buf, "\\u{cp:04x}");
                i += n;
            }
            None => {
                buf.push(b);
                i += 1;
            }
        }
    }
}

/// Escapes, in JSON text from `start`, every character [`is_unsafe_display_char`] names
/// from U+007F up as `\uXXXX` (a surrogate pair above U+FFFF), so JSON printed for a person
/// or a pipe carries no raw C1 control, separator or bidi control, whatever a log holds.
/// Below U+007F a JSON writer has already escaped everything inside strings and what
/// remains is structure, which is left alone. The JSON value is unchanged.
pub(crate) fn escape_json_display(buf: &mut Vec<u8>, start: usize) {
    if buf[start..].iter().all(|&b| b < 0x7f) {
        return;
    }
    let tail = buf.split_off(start);
    let text = match String::from_utf8(tail) {
        Ok(t) => t,
        Err(e) => {
            // Not UTF-8, so not JSON this function can reason about: left as it was.
            buf.extend_from_slice(e.as_bytes());
            return;
        }
    };
    for c in text.chars() {
        if u32::from(c) >= 0x7f && is_unsafe_display_char(c) {
            use std::io::Write;
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                let _ = write!(buf, "\\u{u:04x}");
            }
        } else {
            buf.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
        }
    }
}

/// Whether a character must be escaped when shown to a person: every control character,
/// the line separators and the bidi controls (and the backslash, so an escape in the text
/// cannot pass for one of ours).
pub(crate) fn is_unsafe_display_char(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\\' | '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{feff}'
        )
}
