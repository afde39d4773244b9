//! Fuzz target: the strict `file:` URI parser and canonicalizer.
//!
//! Properties: never panics; whatever parses is canonical (absolute, ASCII, no query,
//! fragment, backslash, control, empty, `.` or `..` name, no percent escape left inside a
//! decoded name, within PATH_MAX/NAME_MAX) and idempotent (`parse(as_str())` is the same
//! URI, with the same path, and `from_path(path())` agrees).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use rootfence::uri::{FileUri, MAX_NAME_BYTES, MAX_PATH_BYTES, scheme_of};

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    let _ = scheme_of(raw);
    let Ok(u) = FileUri::parse(raw) else {
        return;
    };
    let s = u.as_str();
    assert!(s.starts_with("file:///"), "{s}");
    assert!(s.is_ascii() && !s.contains(['?', '#', '\\', ' ']), "{s}");
    assert!(!s.bytes().any(|b| b.is_ascii_control()), "{s}");
    let p = u.path();
    assert!(p.starts_with('/') && p.len() <= MAX_PATH_BYTES, "{p:?}");
    if p != "/" {
        assert!(!p.ends_with('/'), "{p:?}");
        for name in p[1..].split('/') {
            assert!(!name.is_empty() && name != "." && name != "..", "{p:?}");
            assert!(name.len() <= MAX_NAME_BYTES, "{p:?}");
            assert!(!name.chars().any(|c| c.is_control() || c == '\\'), "{p:?}");
            let b = name.as_bytes();
            assert!(
                !b.windows(3).any(|w| w[0] == b'%'
                    && w[1].is_ascii_hexdigit()
                    && w[2].is_ascii_hexdigit()),
                "a decoded name still holds an escape: {p:?}"
            );
        }
    }
    assert_eq!(u.components().count(), u.depth());
    let again = FileUri::parse(s).expect("the canonical form reparses");
    assert_eq!(again, u);
    assert_eq!(again.path(), p);
    assert_eq!(again.as_str(), s);
    let from_path = FileUri::from_path(Path::new(p)).expect("the canonical path is accepted");
    assert_eq!(from_path, u);
});
