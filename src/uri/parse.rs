//! The parser and canonicalizer behind [`FileUri::parse`] and [`FileUri::from_path`]: one
//! pass over the raw text, one percent-decoding per segment, lexical dot-segment removal,
//! and the name rules shared by both constructors.

use std::path::Path;

use super::{FileUri, Lexical, MAX_NAME_BYTES, MAX_PATH_BYTES, MAX_URI_BYTES, Reason, UriError};
// Where the path starts in [`Builder::buf`]: after `file://`, as in the canonical form.
use super::SCHEME_AND_EMPTY_HOST as PATH_AT;

/// A refusal of `raw` whose detail is `raw`, quoted, then `what`.
fn refused(reason: Reason, raw: &str, what: impl std::fmt::Display) -> UriError {
    UriError::new(reason, format!("{} {what}", quote(raw)))
}

/// Quotes untrusted text for an error message: escapes controls and keeps it short, so a
/// hostile URI cannot forge log lines or flood a terminal.
pub(crate) fn quote(raw: &str) -> String {
    const MAX: usize = 120;
    let mut out = String::with_capacity(raw.len().min(MAX) + 8);
    out.push('`');
    for (n, c) in raw.chars().enumerate() {
        if n == MAX {
            out.push('…');
            break;
        }
        if c.is_control() || c == '`' {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out.push('`');
    out
}

pub(super) fn parse_uri(raw: &str) -> Result<FileUri, UriError> {
    if raw.len() > MAX_URI_BYTES {
        return Err(UriError::new(
            Reason::TooLong,
            format!(
                "uri of {} bytes is longer than the {MAX_URI_BYTES}-byte limit",
                raw.len()
            ),
        ));
    }
    // One pass over the text: when every byte is one the canonical form writes as is
    // (letters, digits, `-._~!$&'()*+,;=:@/`), there is no whitespace, control, backslash,
    // `?`, `#` or `%` to look at, and no name needs decoding or the path escaping.
    let plain = raw.bytes().all(keep);
    if !plain {
        scan_raw(raw)?;
    }

    match super::scheme_of(raw) {
        Some(s) if s == "file" => {}
        Some(s) => {
            return Err(refused(
                Reason::NotAFileUri,
                raw,
                format!("has scheme `{s}`, not `file`; only local file: uris name files"),
            ));
        }
        None if starts_with_drive(raw) => {
            return Err(refused(
                Reason::WindowsPath,
                raw,
                "is a windows drive path, not a file: uri",
            ));
        }
        None => {
            return Err(refused(
                Reason::NotAFileUri,
                raw,
                "is not an absolute uri (a relative reference, a bare path or `~`); \
                     give file:///absolute/path",
            ));
        }
    }
    // "file:" is ASCII, so byte 5 is a char boundary.
    let rest = &raw[5..];
    if let Some(i) = memchr::memchr2(b'?', b'#', rest.as_bytes()) {
        let what = if rest.as_bytes()[i] == b'?' {
            "query"
        } else {
            "fragment"
        };
        return Err(refused(
            Reason::QueryOrFragment,
            raw,
            format!("has a {what} part, which parsers disagree about dropping; remove it"),
        ));
    }

    let path = if let Some(after) = rest.strip_prefix("//") {
        let (authority, path) = match after.find('/') {
            Some(i) => after.split_at(i),
            None => (after, ""),
        };
        check_authority(raw, authority)?;
        if path.is_empty() {
            return Err(refused(
                Reason::NotAFileUri,
                raw,
                "has no path; the filesystem root is file:///",
            ));
        }
        if path.starts_with("//") {
            return Err(refused(
                Reason::WindowsPath,
                raw,
                "is a unc form (four or five slashes) naming a network share",
            ));
        }
        path
    } else if rest.starts_with('/') {
        rest
    } else if starts_with_drive(rest) {
        return Err(refused(Reason::WindowsPath, raw, "names a windows drive"));
    } else {
        return Err(refused(
            Reason::NotAFileUri,
            raw,
            "has a relative or opaque path; give file:///absolute/path",
        ));
    };

    let mut b = Builder::new(path.len());
    // Most paths hold no escape: their names are the raw segments, already checked to be
    // printable text, and need no decoding, copying or UTF-8 validation.
    let escapes = !plain && memchr::memchr(b'%', path.as_bytes()).is_some();
    let mut buf = Vec::new();
    for (seg, last) in segments(&path[1..]) {
        match seg {
            "" | "." => b.skip(last),
            ".." => b.pop(raw, last)?,
            _ if plain => b.push_plain(raw, seg)?,
            _ if !escapes => b.push(raw, seg)?,
            _ => {
                let had_escape = decode_segment(raw, seg, &mut buf)?;
                let name = std::str::from_utf8(&buf).map_err(|_| {
                    refused(
                        Reason::BadEncoding,
                        raw,
                        "decodes to bytes that are not valid utf-8 (or an overlong form)",
                    )
                })?;
                if had_escape && (name == "." || name == "..") {
                    return Err(refused(
                        Reason::DotSegment,
                        raw,
                        format!("has a percent-encoded dot segment {}", quote(seg)),
                    ));
                }
                b.push(raw, name)?;
            }
        }
    }
    b.finish(raw, plain)
}

/// Whether `raw` is a plain name beside `sibling` (see [`FileUri::plain_sibling`]).
pub(super) fn is_plain_sibling(sibling: &FileUri, raw: &str) -> bool {
    if sibling.decoded.is_some() || sibling.lexical.is_some() {
        return false;
    }
    // `file://` + the sibling's path up to its last `/`: the canonical text of its
    // directory, every name of which the full parse already accepted as plain.
    let text = sibling.uri.as_str();
    let Some(cut) = super::last_slash(text) else {
        return false;
    };
    if cut <= PATH_AT {
        // A name directly under `/`: the first name has rules of its own (drive letters).
        return false;
    }
    let Some(name) = raw.strip_prefix(&text[..=cut]) else {
        return false;
    };
    let name = name.as_bytes();
    // What `push_plain` takes without the full rules (the name is not the path's first),
    // with no `/` (one name) and no byte `parse_uri` would look at twice.
    !name.is_empty()
        && name.len() <= MAX_NAME_BYTES
        && raw.len() - PATH_AT <= MAX_PATH_BYTES
        && name.iter().all(|&b| b != b'/' && keep(b))
        && !name.iter().all(|&b| b == b'.')
}

pub(super) fn from_path(path: &Path) -> Result<FileUri, UriError> {
    let shown = path.to_string_lossy();
    let Some(text) = path.to_str() else {
        return Err(UriError::new(
            Reason::BadEncoding,
            format!("path {} is not valid utf-8", quote(&shown)),
        ));
    };
    if !text.starts_with('/') {
        return Err(UriError::new(
            Reason::NotAFileUri,
            format!(
                "path {} is not absolute; make it absolute against the working directory",
                quote(text)
            ),
        ));
    }
    if text.len() > MAX_PATH_BYTES * 2 {
        // Dot segments could shorten it, but nothing honest is this long.
        return Err(UriError::new(
            Reason::TooLong,
            format!("path of {} bytes is too long", text.len()),
        ));
    }
    let mut b = Builder::new(text.len());
    for (seg, last) in segments(&text[1..]) {
        match seg {
            "" | "." => b.skip(last),
            ".." => b.pop(text, last)?,
            name => b.push(text, name)?,
        }
    }
    b.finish(text, false)
}

/// The `/`-separated segments of `path`, each with whether it is the last.
fn segments(path: &str) -> impl Iterator<Item = (&str, bool)> {
    let mut segs = path.split('/').peekable();
    std::iter::from_fn(move || Some((segs.next()?, segs.peek().is_none())))
}

/// Refuses raw characters that some parser would strip, repair or treat specially.
fn scan_raw(raw: &str) -> Result<(), UriError> {
    // Fast path: printable ASCII other than space and backslash is always fine here.
    if raw.bytes().all(|b| (0x21..0x7f).contains(&b) && b != b'\\') {
        return Ok(());
    }
    for (i, c) in raw.char_indices() {
        if c.is_whitespace() {
            return Err(refused(
                Reason::Whitespace,
                raw,
                format!("has raw whitespace {c:?} at byte {i}; percent-encode it"),
            ));
        }
        if c.is_control() {
            return Err(refused(
                Reason::ControlCharacter,
                raw,
                format!("has control character U+{:04X} at byte {i}", c as u32),
            ));
        }
        if c == '\\' {
            return Err(refused(
                Reason::Backslash,
                raw,
                format!("has a raw backslash at byte {i}, which some parsers treat as `/`"),
            ));
        }
    }
    Ok(())
}

/// `c:` or `c|` (RFC 8089 Appendix E.2 drive letters) at the start of `s`.
fn starts_with_drive(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && b[0].is_ascii_alphabetic() && matches!(b[1], b':' | b'|')
}

fn check_authority(raw: &str, authority: &str) -> Result<(), UriError> {
    if authority.is_empty() || authority.eq_ignore_ascii_case("localhost") {
        return Ok(());
    }
    if starts_with_drive(authority) && authority.len() == 2 {
        // `file://c:/x`: WHATWG reads a drive letter here.
        return Err(refused(Reason::WindowsPath, raw, "names a windows drive"));
    }
    let what = if authority.contains('@') {
        "userinfo"
    } else if authority.contains('%') {
        "a percent-encoded host"
    } else if authority.contains(':') && !authority.starts_with('[') {
        "a port"
    } else {
        "a remote host"
    };
    Err(refused(
        Reason::NonLocalHost,
        raw,
        format!(
            "has {what} ({}); only an empty host or `localhost` names this machine",
            quote(authority)
        ),
    ))
}

/// Percent-decodes one raw segment into `buf`, once. Returns whether it had an escape.
fn decode_segment(raw: &str, seg: &str, buf: &mut Vec<u8>) -> Result<bool, UriError> {
    buf.clear();
    let bytes = seg.as_bytes();
    if !bytes.contains(&b'%') {
        buf.extend_from_slice(bytes);
        return Ok(false);
    }
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b != b'%' {
            buf.push(b);
            i += 1;
            continue;
        }
        let hex = |j: usize| bytes.get(j).and_then(|&h| (h as char).to_digit(16));
        let (Some(hi), Some(lo)) = (hex(i + 1), hex(i + 2)) else {
            return Err(refused(
                Reason::BadEncoding,
                raw,
                format!("has a malformed percent escape in {}", quote(seg)),
            ));
        };
        let v = (hi * 16 + lo) as u8;
        match v {
            b'/' | b'\\' => {
                return Err(refused(
                    Reason::EncodedSeparator,
                    raw,
                    format!("has an encoded separator %{:02X} in {}", v, quote(seg)),
                ));
            }
            0x00..=0x1f | 0x7f => {
                let nul = if v == 0 { " (NUL)" } else { "" };
                let what = format!("decodes to control character %{v:02X}{nul}");
                return Err(refused(Reason::ControlCharacter, raw, what));
            }
            _ => buf.push(v),
        }
        i += 3;
    }
    Ok(true)
}

/// Accumulates the canonical path, one checked name at a time, after a `file://` prefix in
/// the same buffer: when no byte needs escaping, that buffer is the canonical URI itself.
struct Builder {
    buf: String,
    lexical: Lexical,
}

impl Builder {
    fn new(cap: usize) -> Builder {
        let mut buf = String::with_capacity(cap + PATH_AT);
        buf.push_str("file://");
        Builder {
            buf,
            lexical: Lexical::default(),
        }
    }

    fn path(&self) -> &str {
        &self.buf[PATH_AT..]
    }

    /// An empty or `.` segment: nothing to add; at the end it asks for a directory.
    fn skip(&mut self, last: bool) {
        if last && !self.path().is_empty() {
            self.lexical.trailing_dir = true;
        }
    }

    fn pop(&mut self, raw: &str, last: bool) -> Result<(), UriError> {
        let Some(cut) = self.path().rfind('/') else {
            return Err(refused(
                Reason::DotSegment,
                raw,
                "climbs above `/` with `..`",
            ));
        };
        self.lexical.parents.push(self.path().to_owned());
        self.buf.truncate(PATH_AT + cut);
        self.skip(last);
        Ok(())
    }

    fn push(&mut self, raw: &str, name: &str) -> Result<(), UriError> {
        check_name(raw, name, self.path().is_empty())?;
        self.append(raw, name)
    }

    /// [`Builder::push`] for a name of a plain text (every byte one that is written as is:
    /// no control, backslash, space, `%` or non-ASCII byte can be in it).
    fn push_plain(&mut self, raw: &str, name: &str) -> Result<(), UriError> {
        let bytes = name.as_bytes();
        if name.len() > MAX_NAME_BYTES
            || bytes[0] == b'.' && bytes.iter().all(|&b| b == b'.')
            || self.path().is_empty() && starts_with_drive(name)
        {
            // Let the full rules say what is wrong.
            return self.push(raw, name);
        }
        self.append(raw, name)
    }

    /// Appends a checked name to the path.
    fn append(&mut self, raw: &str, name: &str) -> Result<(), UriError> {
        self.buf.push('/');
        self.buf.push_str(name);
        self.lexical.trailing_dir = false;
        if self.buf.len() - PATH_AT > MAX_PATH_BYTES {
            return Err(too_long_path(raw, self.buf.len() - PATH_AT));
        }
        Ok(())
    }

    /// The URI; `plain`: the text had no byte to escape, so the path has none either.
    fn finish(mut self, raw: &str, plain: bool) -> Result<FileUri, UriError> {
        if self.path().is_empty() {
            self.buf.push('/');
        }
        let len = self.buf.len() - PATH_AT;
        if len > MAX_PATH_BYTES {
            return Err(too_long_path(raw, len));
        }
        let (uri, decoded) = if plain || self.path().bytes().all(keep) {
            (self.buf, None)
        } else {
            let decoded: Box<str> = self.path().into();
            (serialize(&decoded), Some(decoded))
        };
        let lexical = if self.lexical == Lexical::default() {
            None
        } else {
            Some(Box::new(self.lexical))
        };
        Ok(FileUri {
            uri,
            decoded,
            lexical,
        })
    }
}

fn too_long_path(raw: &str, len: usize) -> UriError {
    refused(
        Reason::TooLong,
        raw,
        format!(
            "decodes to a path of at least {len} bytes, longer than PATH_MAX ({MAX_PATH_BYTES})"
        ),
    )
}

/// The name rules shared by both constructors, applied to one decoded name.
fn check_name(raw: &str, name: &str, first: bool) -> Result<(), UriError> {
    if name.len() > MAX_NAME_BYTES {
        return Err(refused(
            Reason::TooLong,
            raw,
            format!(
                "has a name of {} bytes, longer than NAME_MAX ({MAX_NAME_BYTES})",
                name.len()
            ),
        ));
    }
    if name.is_ascii() {
        return check_ascii_name(raw, name, first);
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Err(refused(
            Reason::ControlCharacter,
            raw,
            format!("has control character U+{:04X} in a name", c as u32),
        ));
    }
    if name.contains('\\') {
        // Only reachable from `from_path`: parse refuses raw and encoded backslashes.
        return Err(refused(Reason::Backslash, raw, "has a backslash in a name"));
    }
    // Fold compatibility look-alikes to ASCII (only non-ASCII names get here), then apply
    // the structural rules to the folded form: what NFKC or Windows best-fit would see.
    let seen = fold_lookalikes(name);
    if seen.contains(['/', '\\']) {
        return Err(refused(
            Reason::LookalikeSeparator,
            raw,
            format!(
                "has a character that normalization turns into a separator in {}",
                quote(name)
            ),
        ));
    }
    // Windows drops trailing dots and spaces: a name of only those is a dot segment or
    // nothing at all there. Look-alike dots (`‥`, `．`) fold to dots first.
    let dots_and_spaces = seen.trim_end_matches(['.', ' ']).is_empty();
    check_structure(
        raw,
        name,
        &seen,
        has_percent_escape(&seen),
        dots_and_spaces,
        first,
    )
}

/// [`check_name`] for an ASCII name (nearly all of them), in one pass over its bytes: the
/// same rules (no look-alike can hide in ASCII), without decoding characters.
fn check_ascii_name(raw: &str, name: &str, first: bool) -> Result<(), UriError> {
    let bytes = name.as_bytes();
    let mut dots_and_spaces = true;
    let mut percent = false;
    for &b in bytes {
        if b < 0x20 || b == 0x7f {
            return Err(refused(
                Reason::ControlCharacter,
                raw,
                format!("has control character U+{b:04X} in a name"),
            ));
        }
        if b == b'\\' {
            // Only reachable from `from_path`: parse refuses raw and encoded backslashes.
            return Err(refused(Reason::Backslash, raw, "has a backslash in a name"));
        }
        dots_and_spaces &= b == b'.' || b == b' ';
        percent |= b == b'%';
    }
    let escaped = percent && has_percent_escape(name);
    check_structure(raw, name, name, escaped, dots_and_spaces, first)
}

/// The structural rules both name checks end with, judged on `seen` (the name as NFKC or
/// Windows would read it): `escaped`, it still holds a percent escape; `dots_and_spaces`,
/// it is only dots and spaces (or empty).
fn check_structure(
    raw: &str,
    name: &str,
    seen: &str,
    escaped: bool,
    dots_and_spaces: bool,
    first: bool,
) -> Result<(), UriError> {
    if escaped {
        return Err(refused(
            Reason::DoubleEncoding,
            raw,
            format!(
                "has a name that still holds a percent escape after decoding once ({}); \
                 a parser that decodes twice would read another name",
                quote(name)
            ),
        ));
    }
    if dots_and_spaces {
        return Err(refused(
            Reason::DotSegment,
            raw,
            format!(
                "has a name {} that is a dot segment (or empty) under windows rules or \
                 unicode normalization",
                quote(name)
            ),
        ));
    }
    if first && starts_with_drive(seen) {
        return Err(refused(
            Reason::WindowsPath,
            raw,
            format!("starts with a windows drive {}", quote(name)),
        ));
    }
    Ok(())
}

pub(super) fn has_percent_escape(s: &str) -> bool {
    let b = s.as_bytes();
    b.windows(3)
        .any(|w| w[0] == b'%' && w[1].is_ascii_hexdigit() && w[2].is_ascii_hexdigit())
}

/// Maps the characters that NFKC or Windows "best fit" code-page conversion turn into
/// ASCII structure (dots, slashes, backslashes, percent, colon, spaces) to that ASCII.
/// Other characters are kept: this is a guard, not a normalization.
fn fold_lookalikes(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            // Fullwidth ASCII (NFKC maps U+FF01..U+FF5E to U+0021..U+007E).
            '\u{FF01}'..='\u{FF5E}' => {
                out.push(char::from_u32(c as u32 - 0xFEE0).unwrap_or(c));
            }
            '\u{2024}' | '\u{FE52}' | '\u{3002}' | '\u{FF61}' => out.push('.'),
            '\u{2025}' => out.push_str(".."),
            '\u{2026}' => out.push_str("..."),
            '\u{2215}' | '\u{2044}' | '\u{29F8}' | '\u{FE6B}' => out.push('/'),
            '\u{2216}' | '\u{29F9}' | '\u{FE68}' => out.push('\\'),
            '\u{FE6A}' => out.push('%'),
            '\u{FE13}' | '\u{FE55}' => out.push(':'),
            '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => {
                out.push(' ')
            }
            _ => out.push(c),
        }
    }
    out
}

/// Whether a path byte is written as is in the canonical form: RFC 3986 `pchar` minus `%`
/// (unreserved, sub-delims, `:` and `@`), and `/`.
fn keep(b: u8) -> bool {
    /// One entry per byte value.
    const KEEP: [bool; 256] = {
        let mut table = [false; 256];
        let mut b = 0u8;
        while b < 128 {
            table[b as usize] = b.is_ascii_alphanumeric();
            b += 1;
        }
        let marks = b"/-._~!$&'()*+,;=:@";
        let mut i = 0;
        while i < marks.len() {
            table[marks[i] as usize] = true;
            i += 1;
        }
        table
    };
    KEEP[b as usize]
}

/// The canonical serialization: `file://` and the path, percent-encoding every byte
/// outside RFC 3986 `pchar` minus `%` (unreserved, sub-delims, `:` and `@`), uppercase.
fn serialize(path: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(path.len() + 7);
    out.push_str("file://");
    for &b in path.as_bytes() {
        if keep(b) {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 15) as usize] as char);
        }
    }
    out
}
