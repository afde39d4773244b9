//! Policy load errors: one [`PolicyError`] per problem, each located (file, line, column),
//! naming the offending value and carrying a hint; [`PolicyErrors`] collects every problem
//! of a load so the operator fixes them all in one pass.
//!
//! Errors are built from byte spans of the TOML source; this module turns a span into a
//! 1-based line and column (in characters) and keeps the source line for the excerpt.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use super::decision::Provenance;

crate::coded::coded! {
    /// What kind of problem a [`PolicyError`] reports. The code (`as_str`) is stable and is
    /// printed in every message, e.g. `error[unknown-key]`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    #[non_exhaustive]
    pub enum ErrorKind {
        /// The file could not be read.
        Io => "io",
        /// The file is not valid TOML.
        Syntax => "syntax",
        /// A key that the schema does not know (every table rejects unknown keys).
        UnknownKey => "unknown-key",
        /// A value of the wrong TOML type.
        WrongType => "wrong-type",
        /// A value of the right type that is not acceptable (unknown enum word, out of range).
        BadValue => "bad-value",
        /// `version` missing or unsupported.
        Version => "version",
        /// A glob that does not parse or can never match a canonical path.
        BadGlob => "bad-glob",
        /// A path that is not absolute and normalized.
        BadPath => "bad-path",
        /// A JSON pointer that is not valid RFC 6901.
        BadPointer => "bad-pointer",
        /// A `~`/`${...}` that cannot be expanded.
        BadVariable => "bad-variable",
        /// A later layer tries to widen what an earlier layer allows.
        Widening => "widening",
        /// A later layer sets a fixed (non-permission) setting to a different value.
        Conflict => "conflict",
    }
    /// The stable code of this kind.
    pub fn as_str;
}

/// One problem found while loading a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    /// Display name of the file (the path as given, or `builtin:default`).
    pub file: Arc<str>,
    /// 1-based line, when the problem has a location.
    pub line: Option<u32>,
    /// 1-based column in characters.
    pub column: Option<u32>,
    /// The kind of problem.
    pub kind: ErrorKind,
    /// What is wrong, lowercase, naming the key.
    pub message: String,
    /// The offending value as written in the file.
    pub value: Option<String>,
    /// The earlier rule, for errors that involve two layers: how it relates (`earlier` for
    /// widening and conflict, `refused by`, `denied by`) and where it lives.
    pub related: Option<(&'static str, Provenance)>,
    /// What the operator can do about it.
    pub hint: Option<String>,
    /// The source line and the caret underline, for display.
    excerpt: Option<(String, usize, usize)>,
}

impl PolicyError {
    /// An error without a location in a file (I/O).
    pub(crate) fn unlocated(file: &Arc<str>, kind: ErrorKind, message: String) -> Self {
        PolicyError {
            file: file.clone(),
            line: None,
            column: None,
            kind,
            message,
            value: None,
            related: None,
            hint: None,
            excerpt: None,
        }
    }

    /// Adds a hint.
    pub(crate) fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Adds the related earlier rule.
    pub(crate) fn related(mut self, label: &'static str, earlier: &Provenance) -> Self {
        self.related = Some((label, earlier.clone()));
        self
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(col) = self.column {
                write!(f, ":{col}")?;
            }
        }
        write!(f, ": error[{}]: {}", self.kind.as_str(), self.message)?;
        if let (Some((text, start, width)), Some(line)) = (&self.excerpt, self.line) {
            let gutter = line.to_string().len();
            write!(f, "\n{:gutter$} |", "")?;
            write!(f, "\n{line} | {text}")?;
            write!(f, "\n{:gutter$} | {:start$}{}", "", "", "^".repeat(*width))?;
        }
        if let Some(value) = &self.value {
            write!(f, "\n  = value: {value}")?;
        }
        if let Some((label, p)) = &self.related {
            write!(f, "\n  = {label}: {}: {}", p.location(true), p.rule)?;
        }
        if let Some(hint) = &self.hint {
            write!(f, "\n  = hint: {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for PolicyError {}

/// Every problem found while loading a set of policy layers, in file order then position
/// order. Never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyErrors(pub Vec<PolicyError>);

impl fmt::Display for PolicyErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, err) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n\n")?;
            }
            write!(f, "{err}")?;
        }
        let n = self.0.len();
        write!(
            f,
            "\n\npolicy rejected: {n} error{}",
            if n == 1 { "" } else { "s" }
        )
    }
}

impl std::error::Error for PolicyErrors {}

/// Location facts about one layer's source text, used to build located errors and
/// provenance. Cheap to create; holds a borrowed source.
#[derive(Debug, Clone)]
pub(crate) struct Source<'s> {
    pub(crate) name: Arc<str>,
    pub(crate) text: &'s str,
    /// Byte offset of the start of every line.
    line_starts: Vec<usize>,
}

impl<'s> Source<'s> {
    pub(crate) fn new(name: Arc<str>, text: &'s str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Source {
            name,
            text,
            line_starts,
        }
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub(crate) fn line_col(&self, offset: usize) -> (u32, u32) {
        let offset = offset.min(self.text.len());
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line];
        let col = self
            .text
            .get(start..offset)
            .map_or(1, |s| s.chars().count() + 1);
        (line as u32 + 1, col as u32)
    }

    /// The source text of a span, whitespace collapsed and shortened, for messages.
    pub(crate) fn snippet(&self, span: &Range<usize>) -> String {
        let raw = self.text.get(span.clone()).unwrap_or("");
        let words: Vec<&str> = raw.split_whitespace().collect();
        shorten(&words.join(" "), 100)
    }

    /// A located error for a span of this source.
    pub(crate) fn error(
        &self,
        span: &Range<usize>,
        kind: ErrorKind,
        message: impl Into<String>,
    ) -> PolicyError {
        let (line, column) = self.line_col(span.start);
        let line_idx = line as usize - 1;
        let line_start = self.line_starts[line_idx];
        let line_end = self
            .line_starts
            .get(line_idx + 1)
            .map_or(self.text.len(), |&e| e.saturating_sub(1));
        let text = self
            .text
            .get(line_start..line_end)
            .unwrap_or("")
            .trim_end_matches('\r');
        // Underline the span, clipped to this line; at least one caret. A span may start
        // past the shown text (at a `\r` trimmed off above, or at the newline itself), so
        // the clip never goes below the span's start.
        let end = span
            .end
            .clamp(span.start, (line_start + text.len()).max(span.start));
        let width = self
            .text
            .get(span.start..end)
            .map_or(1, |s| s.chars().count())
            .max(1);
        PolicyError {
            line: Some(line),
            column: Some(column),
            value: (!span.is_empty()).then(|| self.snippet(span)),
            excerpt: Some((text.replace('\t', " "), column as usize - 1, width)),
            ..PolicyError::unlocated(&self.name, kind, message.into())
        }
    }
}

/// Cuts a string to at most `max` characters, marking the cut.
pub(crate) fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(max).collect();
        out.push('…');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_characters_from_one() {
        let src = Source::new("p.toml".into(), "a = 1\nbé = \"x\"\n");
        assert_eq!(src.line_col(0), (1, 1));
        assert_eq!(src.line_col(6), (2, 1));
        // "bé = " is 6 bytes but 5 characters.
        assert_eq!(src.line_col(12), (2, 6));
        assert_eq!(src.line_col(999), (3, 1));
    }

    /// Regression (found by the `policy_parse` fuzz target): a policy whose error is
    /// located at a trailing `\r` (a stray CR, or a CRLF file with a syntax error at the end
    /// of a line) panicked in `Source::error` (`clamp` with min > max) instead of being
    /// reported.
    #[test]
    fn error_at_a_trailing_cr_is_reported_not_a_panic() {
        for text in ["\r", "mode = \r\n", "version = 1\r\nmode = \r\n", "a\r"] {
            let src = Source::new("p.toml".into(), text);
            for start in 0..=text.len() {
                let err = src.error(&(start..text.len()), ErrorKind::Syntax, "bad");
                assert!(
                    err.to_string().starts_with("p.toml:"),
                    "{text:?} at {start}"
                );
            }
            let e = crate::policy::Policy::from_sources_with_home(
                &[("p.toml".into(), text.into())],
                Some("/h"),
            )
            .unwrap_err();
            assert!(e.0.iter().all(|e| e.line.is_some()), "{text:?}: {e}");
        }
    }

    #[test]
    fn display_has_location_excerpt_value_and_hint() {
        let src = Source::new("p.toml".into(), "x = 1\nmode = \"loud\"\n");
        let err = src
            .error(&(13..19), ErrorKind::BadValue, "bad mode")
            .hint("use \"enforce\"");
        let text = err.to_string();
        assert!(text.starts_with("p.toml:2:8: error[bad-value]: bad mode"));
        assert!(text.contains("2 | mode = \"loud\""));
        assert!(text.contains("  |        ^^^^^^"));
        assert!(text.contains("= value: \"loud\""));
        assert!(text.contains("= hint: use \"enforce\""));
    }
}
