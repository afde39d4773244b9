//! Strict `file:` URI parsing (RFC 8089) and the canonical form rootfence forwards.
//!
//! Owned by issue 3. Nothing here touches the filesystem: containment is decided in
//! [`crate::roots`], beneath an open directory capability. This module turns untrusted text
//! into a [`FileUri`] (an absolute, decoded, dot-free path and its one re-serialization) or
//! refuses it with a stable [`Reason`].
//!
//! # What is accepted
//!
//! `file:///p`, `file://localhost/p` (host compared case-insensitively) and `file:/p`, with
//! the scheme compared case-insensitively. Path characters may be raw or percent-encoded;
//! raw non-ASCII text (an IRI) is accepted because every parser maps it to the same UTF-8
//! bytes. Everything else is refused with a specific reason (see `docs/reasons.md`).
//!
//! # Design decisions (and why)
//!
//! The rule behind every choice: whatever rootfence lets through must name the same file
//! for a WHATWG parser (Node, the `url` crate), a decode-once RFC 3986 parser, a naive
//! parser that decodes twice, and Windows path rules — or it is refused. The forwarded
//! text is always [`FileUri::as_str`], never the input.
//!
//! - **Decode exactly once.** Escapes are decoded a single time, per segment, after
//!   splitting on raw `/`. `%2F` and `%5C` would become separators for some parsers and
//!   data for others, so they are refused (`encoded_separator`). A decoded name that still
//!   contains `%XX` would be read differently by a parser that decodes twice, so it is
//!   refused (`double_encoding`); the price is that files whose names contain a literal
//!   percent-hex sequence cannot be named through rootfence.
//! - **Text that parsers repair is refused, not repaired.** Raw whitespace (WHATWG strips
//!   it), raw backslashes (WHATWG turns them into `/`), `?`/`#` (most `toFilePath`
//!   helpers drop them silently), `//host` and four- or five-slash UNC forms, and drive
//!   letters (`c:`, `c|`, also when percent-encoded or written in fullwidth letters).
//! - **Dot segments.** Literal `.` and `..` segments are removed lexically, as RFC 3986
//!   §5.2.4 and WHATWG do; the forwarded form has none. A `..` that would climb above `/`
//!   is refused rather than clamped (`dot_segment`): no honest client produces it, and
//!   clamping is exactly where parsers disagree. Percent-encoded dot segments (`%2e`,
//!   `.%2E`, …) are refused too: WHATWG treats them as dots, a non-decoding string check
//!   does not. Names that would *become* dot segments under other rules are refused: only
//!   dots and spaces (`...`, `.. `: Windows trims trailing dots and spaces) or
//!   compatibility look-alikes (`‥`, `．．`: NFKC and Windows best-fit map them to dots).
//! - **`..` after a symbolic link.** Lexically `/r/link/..` is `/r`; the kernel resolves
//!   `link` first and then takes the parent of its *target*, which may be anywhere. The
//!   canonical form (what is checked and what is forwarded) agrees with itself, but a
//!   consumer handed the original text would not. So a `FileUri` parsed from text with
//!   `..` remembers which directories those `..` stepped out of (not part of its identity:
//!   equality and hashing use the canonical form only), and [`crate::roots`] refuses the
//!   URI unless each one is a real directory (not a symbolic link, not missing, not a
//!   file) strictly inside the matched root. With that rule the original text and the
//!   canonical form resolve to the same file, which the property tests check against the
//!   kernel. A trailing `/`, `/.` or `/..` likewise records that the target must be a
//!   directory if it exists.
//! - **No Unicode normalization.** Names are compared as their exact bytes (never NFC or
//!   NFKC), as Linux does. Look-alikes that are merely other names (Cyrillic `а`) are
//!   allowed; look-alikes that normalization would turn into structure (`／`, `＼`, `∕`,
//!   `．．`, `％２ｆ`) are refused.
//! - **Limits.** The decoded path is at most 4095 bytes (PATH_MAX with its NUL) and each
//!   name at most 255 bytes (NAME_MAX); the raw text is capped before any work so a
//!   hostile peer cannot make the parser do unbounded work.
//! - **Windows-only oddities that cannot change the directory** (trailing dots on a name,
//!   `CON`, `a:b` streams) are accepted: rootfence and the servers it guards run on Linux,
//!   where these are plain names in the same directory.

mod parse;
mod plain;
mod reason;

use std::borrow::Cow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

pub use plain::{PageUri, PlainUri};
pub use reason::Reason;

/// `path` with `.` and `..` taken out by name, without touching the filesystem (for a path
/// that may not exist yet; `..` at the root stays there).
pub(crate) fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Where the last `/` of `text` is. A byte loop from the end: on the page path this runs
/// several times per entry over a name of a few bytes, where `str::rfind`'s searcher costs
/// more to set up than the search.
#[inline]
pub(crate) fn last_slash(text: &str) -> Option<usize> {
    text.as_bytes().iter().rposition(|&b| b == b'/')
}

/// The `/`-separated remainder of the canonical path `p` below the canonical path `root` (""
/// when equal), if `p` is inside it: [`FileUri::relative_to`] on paths.
pub(crate) fn relative_path<'p>(p: &'p str, root: &str) -> Option<&'p str> {
    // Both paths are canonical (absolute, no empty, `.` or `..` names, no trailing `/`), so
    // a prefix that ends exactly at a separator is a component-wise prefix.
    if root == "/" {
        return p.strip_prefix('/');
    }
    let rest = p.strip_prefix(root)?;
    if rest.is_empty() {
        Some("")
    } else {
        rest.strip_prefix('/')
    }
}

/// Longest decoded path accepted, in bytes: Linux PATH_MAX (4096) less its NUL.
pub const MAX_PATH_BYTES: usize = 4095;
/// Longest name (path segment) accepted, in bytes: Linux NAME_MAX.
pub const MAX_NAME_BYTES: usize = 255;
/// Longest raw URI text looked at: every path byte percent-encoded, plus a scheme and a
/// `localhost` authority. Anything longer is refused before it is decoded.
pub const MAX_URI_BYTES: usize = 3 * MAX_PATH_BYTES + 32;

/// A refused URI: a stable reason code and a human explanation naming the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail} ({reason})")]
pub struct UriError {
    /// The stable reason code.
    pub reason: Reason,
    /// A lowercase, human explanation with a hint where one helps.
    pub detail: String,
}

impl UriError {
    pub(crate) fn new(reason: Reason, detail: impl Into<String>) -> UriError {
        UriError {
            reason,
            detail: detail.into(),
        }
    }
}

/// A parsed, canonical `file:` URI: an absolute, decoded path with no `.`, `..` or empty
/// segments, and its single serialization `file:///…`.
///
/// Equality, ordering and hashing use the canonical form only.
#[derive(Clone)]
pub struct FileUri {
    /// The canonical serialization (`file:///…`, never a host).
    uri: String,
    /// The decoded absolute path, `/`-separated, `/` for the filesystem root, when it
    /// differs from `uri` after `file://` (some byte had to be percent-encoded). Most paths
    /// need no escape: one string holds both, so a parse or a clone is one allocation.
    decoded: Option<Box<str>>,
    /// What the original text's dot segments require (None when it had none).
    lexical: Option<Box<Lexical>>,
}

/// `file://`: what the canonical form puts before the path.
const SCHEME_AND_EMPTY_HOST: usize = "file://".len();

/// Obligations the original text put on the filesystem, checked by [`crate::roots`] so
/// that the lexical reading (the canonical form) and the kernel's reading agree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Lexical {
    /// Decoded absolute paths that a `..` stepped out of, in order. Each must be a real
    /// directory (not a symbolic link) strictly inside the matched root.
    pub(crate) parents: Vec<String>,
    /// The text ended in `/`, `/.` or `/..`: the target must be a directory if it exists.
    pub(crate) trailing_dir: bool,
}

impl FileUri {
    /// Parses untrusted text as a strict, local, absolute `file:` URI (see the module
    /// documentation for every rule) and canonicalizes it.
    pub fn parse(raw: &str) -> Result<FileUri, UriError> {
        parse::parse_uri(raw)
    }

    /// Builds the URI of an absolute local path (a `--root` argument, say), applying the
    /// same name rules as [`FileUri::parse`]. The path is taken literally (no percent
    /// decoding); `.` and `..` are removed lexically. Relative paths are refused: make them
    /// absolute against the working directory first.
    pub fn from_path(path: &Path) -> Result<FileUri, UriError> {
        parse::from_path(path)
    }

    /// The canonical decoded absolute path, `/`-separated (`/` for the filesystem root).
    pub fn path(&self) -> &str {
        self.decoded
            .as_deref()
            .unwrap_or(&self.uri[SCHEME_AND_EMPTY_HOST..])
    }

    /// The canonical URI, `file:///…`: what rootfence forwards in place of the input.
    pub fn as_str(&self) -> &str {
        &self.uri
    }

    /// The decoded path's names, from the filesystem root down.
    pub fn components(&self) -> impl Iterator<Item = &str> + '_ {
        self.path().split('/').filter(|s| !s.is_empty())
    }

    /// The number of names in the path (0 for `/`).
    pub fn depth(&self) -> usize {
        let path = self.path();
        if path == "/" {
            0
        } else {
            memchr::memchr_iter(b'/', path.as_bytes()).count()
        }
    }

    /// Whether `root`'s names are a prefix of this URI's names (component-wise, never a
    /// string prefix: `/srv/root_evil` does not start with `/srv/root`). A URI starts with
    /// itself.
    pub fn starts_with(&self, root: &FileUri) -> bool {
        self.relative_to(root).is_some()
    }

    /// The `/`-separated remainder below `root` ("" when equal), if this URI is inside it.
    pub fn relative_to(&self, root: &FileUri) -> Option<&str> {
        relative_path(self.path(), root.path())
    }

    pub(crate) fn lexical(&self) -> Option<&Lexical> {
        self.lexical.as_deref()
    }
}

impl PartialEq for FileUri {
    fn eq(&self, other: &FileUri) -> bool {
        self.uri == other.uri
    }
}

impl Eq for FileUri {}

impl Hash for FileUri {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.uri.hash(state);
    }
}

impl PartialOrd for FileUri {
    fn partial_cmp(&self, other: &FileUri) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for FileUri {
    fn cmp(&self, other: &FileUri) -> std::cmp::Ordering {
        self.uri.cmp(&other.uri)
    }
}

impl fmt::Debug for FileUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FileUri({})", self.uri)
    }
}

impl fmt::Display for FileUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.uri)
    }
}

impl std::str::FromStr for FileUri {
    type Err = UriError;
    fn from_str(s: &str) -> Result<FileUri, UriError> {
        FileUri::parse(s)
    }
}

/// The lowercased scheme of any absolute URI (RFC 3986 `ALPHA *( ALPHA / DIGIT / "+" /
/// "-" / "." ) ":"`), or `None` if the text is not an absolute URI (a relative reference,
/// a bare path). A single letter before `:` is a Windows drive (`c:\x`), not a scheme, so
/// it gives `None` as well. Used by callers to apply a policy to non-`file:` schemes.
pub fn scheme_of(raw: &str) -> Option<Cow<'_, str>> {
    let scheme = &raw[..raw.find(':')?];
    if scheme.len() < 2 || !is_scheme(scheme) {
        return None;
    }
    if scheme.bytes().any(|b| b.is_ascii_uppercase()) {
        Some(Cow::Owned(scheme.to_ascii_lowercase()))
    } else {
        Some(Cow::Borrowed(scheme))
    }
}

/// Whether `s` has RFC 3986 scheme syntax: `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
pub(crate) fn is_scheme(s: &str) -> bool {
    let mut b = s.bytes();
    b.next().is_some_and(|c| c.is_ascii_alphabetic())
        && b.all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'))
}

/// Whether a URI of `scheme` (lowercased, from [`scheme_of`]) names a local file although
/// its scheme is not `file`: hosts resolve `jar:file:…!/x`, `view-source:file:…`, VS Code's
/// `vscode-file://vscode-app/<path>` and its resource, remote and user-data schemes to local
/// files, and any `scheme:file:…` form wraps one. The one list both the URI checks and the
/// tool-argument inference use.
pub fn wraps_a_file(raw: &str, scheme: &str) -> bool {
    const LOCAL: [&str; 8] = [
        "jar",
        "view-source",
        "vscode-file",
        "vscode-resource",
        "vscode-webview-resource",
        "vscode-remote",
        "vscode-remote-resource",
        "vscode-userdata",
    ];
    if LOCAL.contains(&scheme) {
        return true;
    }
    let rest = raw.get(scheme.len() + 1..).unwrap_or("").trim_start();
    rest.get(..5)
        .is_some_and(|p| p.eq_ignore_ascii_case("file:"))
}

#[cfg(test)]
mod tests;
