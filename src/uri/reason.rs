//! The stable reason codes carried by every denial (parser, root check and capability-safe
//! reads alike). The codes are part of rootfence's interface: the audit log, the JSON-RPC
//! denial errors and `rootfence check` print them, and `docs/reasons.md` documents each one.
//! A code is never renamed or reused for another meaning; new codes may be added.

use std::fmt;

/// Why a URI was refused. [`Reason::code`] is the stable, documented identifier.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// Not an absolute `file:` URI: another scheme, a relative reference, a bare path, `~`,
    /// or a `file:` URI without an absolute path.
    NotAFileUri,
    /// An authority other than empty or `localhost`: a host name, an IP literal, a port,
    /// userinfo, or a percent-encoded host.
    NonLocalHost,
    /// A query (`?`) or fragment (`#`) part, which parsers disagree about dropping.
    QueryOrFragment,
    /// A Windows drive letter (`c:`, `c|`) or a UNC form (`file:////host/share`).
    WindowsPath,
    /// Raw (unencoded) whitespace in the URI text, which WHATWG parsers strip silently.
    Whitespace,
    /// A control character (C0, DEL, C1), raw or after decoding; includes NUL (`%00`).
    ControlCharacter,
    /// A raw backslash, which WHATWG parsers turn into a separator.
    Backslash,
    /// A percent-encoded separator: `%2F` (`/`) or `%5C` (`\`).
    EncodedSeparator,
    /// A malformed percent escape, or bytes that are not valid UTF-8 after decoding
    /// (including overlong forms such as `%C0%AE`).
    BadEncoding,
    /// A name that still contains a percent escape after decoding once (`%252e`), which a
    /// parser that decodes twice would read differently.
    DoubleEncoding,
    /// A character that Unicode compatibility normalization (NFKC) or Windows best-fit
    /// mapping turns into `/` or `\` (fullwidth solidus, division slash, …).
    LookalikeSeparator,
    /// A dot segment that cannot be removed safely: percent-encoded (`%2e%2e`), climbing
    /// above `/`, a name that is only dots and spaces (`...`, `.. `, `‥`), or a `..` whose
    /// lexical meaning differs from the kernel's (after a symbolic link, a missing name, a
    /// file, or out of the root).
    DotSegment,
    /// Longer than PATH_MAX (4096 bytes with its NUL) or a name longer than NAME_MAX (255).
    TooLong,
    /// The canonical path is not inside any root.
    OutsideRoots,
    /// Resolution beneath the root was refused by the kernel: a symbolic link leads out of
    /// the root (absolute target, `..` above the root, `/proc` magic link target).
    SymlinkEscape,
    /// Too many levels of symbolic links (a loop), or a `/proc` magic link met beneath a
    /// root.
    SymlinkLoop,
    /// A symbolic link was met while the check's stance forbids following any.
    SymlinkRefused,
    /// A name in a path that does not exist yet is a dangling symbolic link: where it
    /// leads once its target is created cannot be decided now.
    DanglingSymlink,
    /// A name that must be a directory (it has children, or a trailing `/` or `.`) is not.
    NotADirectory,
    /// A file with more than one hard link, refused because the check asked for that.
    HardLink,
    /// A read was asked for something that is not a regular file (directory, FIFO, socket,
    /// device).
    NotRegularFile,
    /// A read would exceed its byte cap.
    FileTooLarge,
    /// The file changed identity between the check and the read.
    FileChanged,
    /// A read was asked for a file that does not exist.
    NotFound,
    /// Any other operating-system error (permission denied, I/O error, …).
    IoError,
}

impl Reason {
    /// Every reason, in documentation order (used to keep `docs/reasons.md` in step).
    pub const ALL: &'static [Reason] = &[
        Reason::NotAFileUri,
        Reason::NonLocalHost,
        Reason::QueryOrFragment,
        Reason::WindowsPath,
        Reason::Whitespace,
        Reason::ControlCharacter,
        Reason::Backslash,
        Reason::EncodedSeparator,
        Reason::BadEncoding,
        Reason::DoubleEncoding,
        Reason::LookalikeSeparator,
        Reason::DotSegment,
        Reason::TooLong,
        Reason::OutsideRoots,
        Reason::SymlinkEscape,
        Reason::SymlinkLoop,
        Reason::SymlinkRefused,
        Reason::DanglingSymlink,
        Reason::NotADirectory,
        Reason::HardLink,
        Reason::NotRegularFile,
        Reason::FileTooLarge,
        Reason::FileChanged,
        Reason::NotFound,
        Reason::IoError,
    ];

    /// The stable snake_case code (documented in `docs/reasons.md`).
    pub fn code(&self) -> &'static str {
        match self {
            Reason::NotAFileUri => "not_a_file_uri",
            Reason::NonLocalHost => "non_local_host",
            Reason::QueryOrFragment => "query_or_fragment",
            Reason::WindowsPath => "windows_path",
            Reason::Whitespace => "whitespace",
            Reason::ControlCharacter => "control_character",
            Reason::Backslash => "backslash",
            Reason::EncodedSeparator => "encoded_separator",
            Reason::BadEncoding => "bad_encoding",
            Reason::DoubleEncoding => "double_encoding",
            Reason::LookalikeSeparator => "lookalike_separator",
            Reason::DotSegment => "dot_segment",
            Reason::TooLong => "too_long",
            Reason::OutsideRoots => "outside_roots",
            Reason::SymlinkEscape => "symlink_escape",
            Reason::SymlinkLoop => "symlink_loop",
            Reason::SymlinkRefused => "symlink_refused",
            Reason::DanglingSymlink => "dangling_symlink",
            Reason::NotADirectory => "not_a_directory",
            Reason::HardLink => "hard_link",
            Reason::NotRegularFile => "not_regular_file",
            Reason::FileTooLarge => "file_too_large",
            Reason::FileChanged => "file_changed",
            Reason::NotFound => "not_found",
            Reason::IoError => "io_error",
        }
    }

    /// The reason with this code, if any (the inverse of [`Reason::code`]).
    pub fn from_code(code: &str) -> Option<Reason> {
        Reason::ALL.iter().copied().find(|r| r.code() == code)
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_snake_case_and_round_trip() {
        let mut seen = std::collections::HashSet::new();
        for r in Reason::ALL {
            let code = r.code();
            assert!(seen.insert(code), "duplicate code {code}");
            assert!(
                code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{code} is not snake_case"
            );
            assert_eq!(Reason::from_code(code), Some(*r));
        }
    }

    /// docs/reasons.md documents every code, and documents no code that does not exist.
    #[test]
    fn reasons_doc_lists_every_code() {
        let doc = include_str!("../../docs/reasons.md");
        for r in Reason::ALL {
            let heading = format!("### `{}`", r.code());
            assert!(doc.contains(&heading), "docs/reasons.md lacks {heading}");
        }
        for line in doc.lines().filter(|l| l.starts_with("### `")) {
            let code = line.trim_start_matches("### `").trim_end_matches('`');
            assert!(
                Reason::from_code(code).is_some(),
                "docs/reasons.md documents unknown code {code}"
            );
        }
    }
}
