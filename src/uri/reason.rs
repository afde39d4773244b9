//! The stable reason codes carried by every denial (parser, root check and capability-safe
//! reads alike). The codes are part of rootfence's interface: the audit log, the JSON-RPC
//! denial errors and `rootfence check` print them, and `docs/reasons.md` documents each one.
//! A code is never renamed or reused for another meaning; new codes may be added.

use std::fmt;

crate::coded::coded! {
    /// Why a URI was refused. [`Reason::code`] is the stable, documented identifier.
    #[non_exhaustive]
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Reason {
        /// Not an absolute `file:` URI: another scheme, a relative reference, a bare path, `~`,
        /// or a `file:` URI without an absolute path.
        NotAFileUri => "not_a_file_uri",
        /// An authority other than empty or `localhost`: a host name, an IP literal, a port,
        /// userinfo, or a percent-encoded host.
        NonLocalHost => "non_local_host",
        /// A query (`?`) or fragment (`#`) part, which parsers disagree about dropping.
        QueryOrFragment => "query_or_fragment",
        /// A Windows drive letter (`c:`, `c|`) or a UNC form (`file:////host/share`).
        WindowsPath => "windows_path",
        /// Raw (unencoded) whitespace in the URI text, which WHATWG parsers strip silently.
        Whitespace => "whitespace",
        /// A control character (C0, DEL, C1), raw or after decoding; includes NUL (`%00`).
        ControlCharacter => "control_character",
        /// A raw backslash, which WHATWG parsers turn into a separator.
        Backslash => "backslash",
        /// A percent-encoded separator: `%2F` (`/`) or `%5C` (`\`).
        EncodedSeparator => "encoded_separator",
        /// A malformed percent escape, or bytes that are not valid UTF-8 after decoding
        /// (including overlong forms such as `%C0%AE`).
        BadEncoding => "bad_encoding",
        /// A name that still contains a percent escape after decoding once (`%252e`), which a
        /// parser that decodes twice would read differently.
        DoubleEncoding => "double_encoding",
        /// A character that Unicode compatibility normalization (NFKC) or Windows best-fit
        /// mapping turns into `/` or `\` (fullwidth solidus, division slash, …).
        LookalikeSeparator => "lookalike_separator",
        /// A dot segment that cannot be removed safely: percent-encoded (`%2e%2e`), climbing
        /// above `/`, a name that is only dots and spaces (`...`, `.. `, `‥`), or a `..` whose
        /// lexical meaning differs from the kernel's (after a symbolic link, a missing name, a
        /// file, or out of the root).
        DotSegment => "dot_segment",
        /// Longer than PATH_MAX (4096 bytes with its NUL) or a name longer than NAME_MAX (255).
        TooLong => "too_long",
        /// The canonical path is not inside any root.
        OutsideRoots => "outside_roots",
        /// Resolution beneath the root was refused by the kernel: a symbolic link leads out of
        /// the root (absolute target, `..` above the root, `/proc` magic link target).
        SymlinkEscape => "symlink_escape",
        /// Too many levels of symbolic links (a loop), or a `/proc` magic link met beneath a
        /// root.
        SymlinkLoop => "symlink_loop",
        /// A symbolic link was met while the check's stance forbids following any.
        SymlinkRefused => "symlink_refused",
        /// A name in a path that does not exist yet is a dangling symbolic link: where it
        /// leads once its target is created cannot be decided now.
        DanglingSymlink => "dangling_symlink",
        /// A name that must be a directory (it has children, or a trailing `/` or `.`) is not.
        NotADirectory => "not_a_directory",
        /// A file with more than one hard link, refused because the check asked for that.
        HardLink => "hard_link",
        /// A read was asked for something that is not a regular file (directory, FIFO, socket,
        /// device).
        NotRegularFile => "not_regular_file",
        /// A read would exceed its byte cap.
        FileTooLarge => "file_too_large",
        /// The file changed identity between the check and the read.
        FileChanged => "file_changed",
        /// A read was asked for a file that does not exist.
        NotFound => "not_found",
        /// Any other operating-system error (permission denied, I/O error, …).
        IoError => "io_error",
    }
    /// The stable snake_case code (documented in `docs/reasons.md`).
    pub fn code;
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
            assert_eq!(Reason::ALL.iter().find(|o| o.code() == code), Some(r));
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
                Reason::ALL.iter().any(|r| r.code() == code),
                "docs/reasons.md documents unknown code {code}"
            );
        }
    }
}
