//! The views of a JSON message the tripwire searches besides its raw text: the text with
//! every string escape decoded (`\u0041` is `A`, `\/` is `/`), and the `text` values of the
//! message joined end to end (a secret cut across content blocks is whole again there).
//!
//! One pass, no allocation per string: the input is a JSON text the relay already validated
//! (no duplicate keys, valid UTF-8, no lone surrogates), so escapes are well formed.

use std::sync::LazyLock;

use memchr::memmem::Finder;
use memchr::{memchr, memchr2};

/// Whether the raw text may hide a fingerprint behind escapes: it holds a `\u` or `\/`
/// escape (the only escapes that can stand for a byte a fingerprint contains: fingerprints
/// never contain `"`, `\` or control characters).
pub fn needs_decoding(line: &[u8]) -> bool {
    // One vectorized pass over the backslashes; an escaped backslash before a `u` (`\\u`)
    // only costs a decoding pass for nothing.
    memchr::memchr_iter(b'\\', line).any(|at| matches!(line.get(at + 1), Some(b'u' | b'/')))
}

/// Whether the message has at least two `"text"` keys (so joining them can matter).
pub fn several_texts(line: &[u8]) -> bool {
    static TEXT: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"text\""));
    TEXT.find_iter(line)
        .filter(|at| {
            line[at + 6..]
                .iter()
                .find(|b| !b.is_ascii_whitespace())
                .is_some_and(|b| *b == b':')
        })
        .nth(1)
        .is_some()
}

/// The decoded view (every string's escapes decoded, the structure kept) and the joined
/// `text` values. `want_decoded`/`want_joined` say which to build.
pub fn views(line: &[u8], want_decoded: bool, want_joined: bool) -> (Vec<u8>, Vec<u8>) {
    let mut decoded = Vec::with_capacity(if want_decoded { line.len() } else { 0 });
    let mut joined = Vec::new();
    let mut string = Vec::new();
    let mut last_key_is_text = false;
    let mut i = 0;
    let n = line.len();
    while i < n {
        // Outside a string: copy up to the next quote.
        let Some(k) = memchr(b'"', &line[i..]) else {
            if want_decoded {
                decoded.extend_from_slice(&line[i..]);
            }
            break;
        };
        if want_decoded {
            decoded.extend_from_slice(&line[i..=i + k]);
        }
        i += k + 1;
        // Inside a string: decode into `string`.
        string.clear();
        loop {
            let Some(k) = memchr2(b'"', b'\\', &line[i..]) else {
                string.extend_from_slice(&line[i..]);
                i = n;
                break;
            };
            string.extend_from_slice(&line[i..i + k]);
            i += k;
            if line[i] == b'"' {
                i += 1;
                break;
            }
            // The relay validated the text: an escape that is not one never comes.
            let (c, used) = unescape(&line[i + 1..]).unwrap_or(('\\', 0));
            string.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
            i += 1 + used;
        }
        if want_decoded {
            decoded.extend_from_slice(&string);
            decoded.push(b'"');
        }
        // A key is followed by `:`; anything else was a value.
        let next = line[i..].iter().find(|b| !b.is_ascii_whitespace());
        if next == Some(&b':') {
            last_key_is_text = string == b"text";
        } else if want_joined && last_key_is_text {
            joined.extend_from_slice(&string);
        }
    }
    (decoded, joined)
}

/// Decodes the JSON string escape whose body starts at `rest` (after the backslash): the
/// character and the number of bytes of `rest` it takes, or `None` when it is not a valid
/// escape. A lone surrogate decodes to U+FFFD. (`wrap`'s JSONC parser decodes with it too.)
pub(crate) fn unescape(rest: &[u8]) -> Option<(char, usize)> {
    let c = match *rest.first()? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            // \uXXXX, possibly a surrogate pair \uD83D\uDE00.
            let hex4 = |b: &[u8]| -> Option<u32> {
                let d = b.get(..4).filter(|d| d.iter().all(u8::is_ascii_hexdigit))?;
                u32::from_str_radix(std::str::from_utf8(d).ok()?, 16).ok()
            };
            let hi = hex4(&rest[1..])?;
            let pair = (0xD800..0xDC00).contains(&hi) && rest.get(5..7) == Some(b"\\u".as_slice());
            return match hex4(rest.get(7..).unwrap_or_default()) {
                Some(lo) if pair && (0xDC00..0xE000).contains(&lo) => {
                    let code = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                    Some((char::from_u32(code)?, 11))
                }
                _ => Some((char::from_u32(hi).unwrap_or('\u{FFFD}'), 5)),
            };
        }
        _ => return None,
    };
    Some((c, 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_decoded_and_text_values_joined() {
        let line = br#"{"result":{"content":[{"type":"text","text":"sk-li\u0076e-\u00e9"},{"type":"text","text":"\/0123\ud83d\ude00"}],"isError":false}}"#;
        assert!(needs_decoding(line));
        assert!(several_texts(line));
        let (decoded, joined) = views(line, true, true);
        let decoded = String::from_utf8(decoded).unwrap();
        assert!(decoded.contains("sk-live-é"), "{decoded}");
        assert!(decoded.contains("/0123😀"), "{decoded}");
        assert_eq!(String::from_utf8(joined).unwrap(), "sk-live-é/0123😀");
        assert!(!needs_decoding(br#"{"a":"line\nnext \"q\" \\ u"}"#));
        assert!(!several_texts(br#"{"type":"text","text":"x"}"#));
    }
}
