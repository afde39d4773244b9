//! A small JSONC parser that keeps byte spans: the concrete tree `wrap` edits in place.
//!
//! Host configuration files are edited, never re-serialized: every node records the byte
//! range of its text, so an edit replaces exactly the tokens it means to and leaves every
//! other byte of the file (comments, trailing commas, indentation, CRLF, escapes, key
//! order) as it was. The grammar is JSON (RFC 8259) plus what VS Code's JSONC accepts:
//! `//` and `/* */` comments and trailing commas in objects and arrays. A UTF-8 byte order
//! mark at the start is skipped. Anything else is an error with line and column.
//!
//! What it does not do: keep decoded numbers (they are never needed), or reject duplicate
//! keys (callers decide where a duplicate matters, see `edit.rs`).

use std::ops::Range;

/// Objects and arrays nested deeper than this are rejected (a hostile or broken file must
/// not overflow the parser's stack).
const MAX_DEPTH: usize = 256;

/// One value with the byte range of its text.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub(crate) span: Range<usize>,
    pub(crate) kind: Kind,
}

/// What a node is.
#[derive(Debug, Clone)]
pub(crate) enum Kind {
    /// Members in file order (duplicates kept).
    Object(Vec<Member>),
    Array(Vec<Node>),
    /// The decoded value (lone surrogates become U+FFFD; the raw text is `span`).
    String(String),
    /// A number, `true`, `false` or `null`.
    Scalar,
}

/// One `"key": value` member of an object.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    /// The decoded key.
    pub(crate) key: String,
    /// The key's text, quotes included.
    pub(crate) key_span: Range<usize>,
    pub(crate) value: Node,
}

impl Node {
    /// The members, if this is an object.
    pub(crate) fn members(&self) -> Option<&[Member]> {
        match &self.kind {
            Kind::Object(m) => Some(m),
            _ => None,
        }
    }

    /// The items, if this is an array.
    pub(crate) fn items(&self) -> Option<&[Node]> {
        match &self.kind {
            Kind::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The decoded string, if this is a string.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match &self.kind {
            Kind::String(s) => Some(s),
            _ => None,
        }
    }

    /// A short name of the node's type, for messages.
    pub(crate) fn type_name(&self, text: &str) -> &'static str {
        match &self.kind {
            Kind::Object(_) => "an object",
            Kind::Array(_) => "an array",
            Kind::String(_) => "a string",
            Kind::Scalar => match text.as_bytes().get(self.span.start) {
                Some(b't' | b'f') => "a boolean",
                Some(b'n') => "null",
                _ => "a number",
            },
        }
    }
}

/// A syntax error: where it is and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    /// 1-based line.
    pub(crate) line: usize,
    /// 1-based column, in characters.
    pub(crate) column: usize,
    pub(crate) message: String,
}

/// 1-based line and character column of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text.as_bytes()[..offset];
    let line = 1 + memchr::memchr_iter(b'\n', before).count();
    let line_start = memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
    // The offset may fall inside a multi-byte character only for errors found mid-character;
    // count the characters that start before it.
    let column = 1 + before[line_start..]
        .iter()
        .filter(|&&b| (b & 0xC0) != 0x80)
        .count();
    (line, column)
}

/// Line numbers of many offsets in one text, without rescanning it each time (a large
/// `~/.claude.json` holds thousands of servers); the diff's lines too.
#[derive(Debug)]
pub(crate) struct LineIndex {
    /// Byte offsets where each line starts: at least one line, even for empty text, and
    /// none after a final line break.
    pub(crate) starts: Vec<usize>,
}

impl LineIndex {
    pub(crate) fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
        if starts.len() > 1 && starts.last() == Some(&text.len()) {
            starts.pop();
        }
        LineIndex { starts }
    }

    /// 1-based line of a byte offset.
    pub(crate) fn line(&self, offset: usize) -> usize {
        // The lines that start at or before it (the first starts at 0).
        self.starts.partition_point(|&start| start <= offset)
    }
}

/// Parses a whole JSONC document.
pub(crate) fn parse(text: &str) -> Result<Node, SyntaxError> {
    let mut p = Parser {
        text,
        b: text.as_bytes(),
        pos: 0,
        depth: 0,
    };
    if text.starts_with('\u{FEFF}') {
        p.pos = 3;
    }
    p.skip_trivia()?;
    if p.pos >= p.b.len() {
        return Err(p.error_at(p.pos, "the file is empty: expected a JSON object"));
    }
    let root = p.value()?;
    p.skip_trivia()?;
    if p.pos < p.b.len() {
        return Err(p.error_at(
            p.pos,
            format!(
                "unexpected {} after the end of the JSON value",
                p.describe_here()
            ),
        ));
    }
    Ok(root)
}

struct Parser<'a> {
    text: &'a str,
    b: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn error_at(&self, offset: usize, message: impl Into<String>) -> SyntaxError {
        let (line, column) = line_col(self.text, offset);
        SyntaxError {
            line,
            column,
            message: message.into(),
        }
    }

    /// What is at the current position, for messages.
    fn describe_here(&self) -> String {
        match self.text.get(self.pos..).and_then(|s| s.chars().next()) {
            None => "end of file".to_string(),
            Some(c) if c.is_control() => format!("character U+{:04X}", c as u32),
            Some(c) => format!("`{c}`"),
        }
    }

    /// Skips whitespace and comments.
    fn skip_trivia(&mut self) -> Result<(), SyntaxError> {
        loop {
            match self.b.get(self.pos) {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.pos += 1,
                Some(b'/') => match self.b.get(self.pos + 1) {
                    Some(b'/') => {
                        self.pos = memchr::memchr(b'\n', &self.b[self.pos..])
                            .map_or(self.b.len(), |i| self.pos + i);
                    }
                    Some(b'*') => {
                        let start = self.pos;
                        match memchr::memmem::find(&self.b[self.pos + 2..], b"*/") {
                            Some(i) => self.pos += 2 + i + 2,
                            None => {
                                return Err(self.error_at(
                                    start,
                                    "unterminated `/*` comment: add the closing `*/`",
                                ));
                            }
                        }
                    }
                    _ => {
                        return Err(self.error_at(
                            self.pos,
                            "unexpected `/`: comments start with `//` or `/*`",
                        ));
                    }
                },
                _ => return Ok(()),
            }
        }
    }

    fn value(&mut self) -> Result<Node, SyntaxError> {
        let start = self.pos;
        let kind = match self.b.get(self.pos) {
            Some(b'{') => self.nested(Self::object)?,
            Some(b'[') => self.nested(Self::array)?,
            Some(b'"') => Kind::String(self.string()?),
            Some(b'-' | b'0'..=b'9') => self.number()?,
            Some(b't') => self.literal("true")?,
            Some(b'f') => self.literal("false")?,
            Some(b'n') => self.literal("null")?,
            _ => {
                let found = self.describe_here();
                return Err(self.error_at(start, format!("expected a JSON value, found {found}")));
            }
        };
        Ok(Node {
            span: start..self.pos,
            kind,
        })
    }

    fn nested(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<Kind, SyntaxError>,
    ) -> Result<Kind, SyntaxError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.error_at(
                self.pos,
                format!("objects and arrays are nested more than {MAX_DEPTH} deep"),
            ));
        }
        self.depth += 1;
        let node = f(self);
        self.depth -= 1;
        node
    }

    /// The members or items of the object or array here, each read by `item`, up to `close`
    /// (a trailing comma allowed).
    fn items(
        &mut self,
        close: u8,
        container: &str,
        mut item: impl FnMut(&mut Self) -> Result<(), SyntaxError>,
    ) -> Result<(), SyntaxError> {
        let start = self.pos;
        let close_char = close as char;
        let unclosed = |p: &Self| {
            let what = format!("this {container} is never closed: a `{close_char}` is missing");
            p.error_at(start, what)
        };
        self.pos += 1; // `{` or `[`
        loop {
            self.skip_trivia()?;
            match self.b.get(self.pos) {
                Some(&c) if c == close => {
                    self.pos += 1;
                    return Ok(());
                }
                None => return Err(unclosed(self)),
                _ => item(self)?,
            }
            self.skip_trivia()?;
            match self.b.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(&c) if c == close => {}
                None => return Err(unclosed(self)),
                _ => {
                    return Err(self.error_at(
                        self.pos,
                        format!(
                            "expected `,` or `{close_char}` after an {container} {}, found {} \
                             (a comma may be missing)",
                            if close == b'}' { "member" } else { "item" },
                            self.describe_here()
                        ),
                    ));
                }
            }
        }
    }

    fn object(&mut self) -> Result<Kind, SyntaxError> {
        let mut members = Vec::new();
        self.items(b'}', "object", |p| {
            if p.b.get(p.pos) != Some(&b'"') {
                return Err(p.error_at(
                    p.pos,
                    format!(
                        "expected a key in double quotes or `}}`, found {}",
                        p.describe_here()
                    ),
                ));
            }
            let key_start = p.pos;
            let key = p.string()?;
            let key_span = key_start..p.pos;
            p.skip_trivia()?;
            if p.b.get(p.pos) != Some(&b':') {
                return Err(p.error_at(
                    p.pos,
                    format!(
                        "expected `:` after the key \"{key}\", found {}",
                        p.describe_here()
                    ),
                ));
            }
            p.pos += 1;
            p.skip_trivia()?;
            let value = p.value()?;
            members.push(Member {
                key,
                key_span,
                value,
            });
            Ok(())
        })?;
        Ok(Kind::Object(members))
    }

    fn array(&mut self) -> Result<Kind, SyntaxError> {
        let mut items = Vec::new();
        self.items(b']', "array", |p| p.value().map(|v| items.push(v)))?;
        Ok(Kind::Array(items))
    }

    /// Parses a string token at `pos` (which is `"`) and returns its decoded value.
    fn string(&mut self) -> Result<String, SyntaxError> {
        let start = self.pos;
        self.pos += 1;
        let mut out = String::new();
        loop {
            // Copy the run of plain bytes up to the next quote, backslash or control byte.
            let run_end = self.b[self.pos..]
                .iter()
                .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
                .map_or(self.b.len(), |i| self.pos + i);
            out.push_str(&self.text[self.pos..run_end]);
            self.pos = run_end;
            match self.b.get(self.pos) {
                None => {
                    return Err(
                        self.error_at(start, "unterminated string: a closing `\"` is missing")
                    );
                }
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    let esc = self.pos;
                    let Some((c, used)) = crate::tripwire::json::unescape(&self.b[esc + 1..])
                    else {
                        let what = if self.b.get(esc + 1) == Some(&b'u') {
                            "invalid \\u escape: expected four hex digits"
                        } else {
                            "invalid escape in a string: use \\\", \\\\, \\/, \\b, \\f, \\n, \\r, \\t \
                             or \\uXXXX"
                        };
                        return Err(self.error_at(esc, what));
                    };
                    out.push(c);
                    self.pos = esc + 1 + used;
                }
                Some(&c) => {
                    let what = if c == b'\n' || c == b'\r' {
                        "a line break inside a string: strings must end on the line they \
                         start (write \\n for a line break)"
                            .to_string()
                    } else {
                        format!("control character U+{c:04X} inside a string: escape it")
                    };
                    return Err(self.error_at(self.pos, what));
                }
            }
        }
    }

    fn number(&mut self) -> Result<Kind, SyntaxError> {
        let start = self.pos;
        let bad = |p: &Self| p.error_at(start, "invalid number");
        if self.b.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        match self.b.get(self.pos) {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(bad(self)),
        }
        if self.b.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            if !self.b.get(self.pos).is_some_and(u8::is_ascii_digit) {
                return Err(bad(self));
            }
            self.digits();
        }
        if matches!(self.b.get(self.pos), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.b.get(self.pos), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if !self.b.get(self.pos).is_some_and(u8::is_ascii_digit) {
                return Err(bad(self));
            }
            self.digits();
        }
        if self
            .b
            .get(self.pos)
            .is_some_and(|c| c.is_ascii_alphanumeric())
        {
            return Err(bad(self));
        }
        Ok(Kind::Scalar)
    }

    fn digits(&mut self) {
        while self.b.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
    }

    fn literal(&mut self, word: &'static str) -> Result<Kind, SyntaxError> {
        let start = self.pos;
        let end = start + word.len();
        let exact = self.b.get(start..end) == Some(word.as_bytes())
            && !self
                .b
                .get(end)
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_');
        if !exact {
            return Err(self.error_at(
                start,
                "expected a JSON value (strings need double quotes; literals are true, \
                 false and null)",
            ));
        }
        self.pos = end;
        Ok(Kind::Scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> SyntaxError {
        parse(text).expect_err("a syntax error")
    }

    #[test]
    fn spans_cover_tokens_exactly() {
        let text = "{ \"a\" : [1, \"x\\ty\", true] , // c\n \"b\": {} , }";
        let root = parse(text).unwrap();
        let m = root.members().unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(&text[m[0].key_span.clone()], "\"a\"");
        assert_eq!(&text[m[0].value.span.clone()], "[1, \"x\\ty\", true]");
        let items = m[0].value.items().unwrap();
        assert_eq!(items[1].as_str(), Some("x\ty"));
        assert_eq!(&text[items[1].span.clone()], "\"x\\ty\"");
        assert_eq!(&text[m[1].value.span.clone()], "{}");
        assert_eq!(root.span, 0..text.len());
    }

    #[test]
    fn accepts_jsonc_and_json_forms() {
        for ok in [
            "{}",
            "\u{FEFF}{}",
            "  {} // end",
            "/* a */ { /* b */ } /* c */",
            "{\"a\": [1,2,],}",
            "{\"n\": -0.5e+10, \"m\": 0, \"z\": null, \"t\": false}",
            "[]",
            "\"just a string\"",
            "{\"u\": \"\\u00e9\\ud83d\\ude00\\/\"}",
        ] {
            parse(ok).unwrap_or_else(|e| panic!("{ok:?}: {e:?}"));
        }
        let root = parse("{\"u\": \"\\u00e9\\ud83d\\ude00\\ud800x\"}").unwrap();
        assert_eq!(
            root.members().unwrap()[0].value.as_str(),
            Some("é😀\u{FFFD}x")
        );
    }

    /// Each malformed input is rejected with the position of the problem.
    #[test]
    fn rejects_with_line_and_column() {
        let table: &[(&str, usize, usize, &str)] = &[
            ("", 1, 1, "empty"),
            ("{\"a\": 1,\n \"b\" 2}", 2, 6, "expected `:`"),
            ("{\"a\": 1\n \"b\": 2}", 2, 2, "comma may be missing"),
            ("{\"a\": [1 2]}", 1, 10, "comma may be missing"),
            ("{\"a\": 'x'}", 1, 7, "expected a JSON value"),
            ("{a: 1}", 1, 2, "expected a key in double quotes"),
            ("{\"a\": \"x", 1, 7, "unterminated string"),
            ("{\"a\": \"x\ny\"}", 1, 9, "line break inside a string"),
            ("{\"a\": \"\\q\"}", 1, 8, "invalid escape"),
            ("{\"a\": \"\\u12\"}", 1, 8, "invalid \\u escape"),
            ("{\"a\": 01}", 1, 7, "invalid number"),
            ("{\"a\": 1.}", 1, 7, "invalid number"),
            ("{\"a\": tru}", 1, 7, "expected a JSON value"),
            ("{\"a\": 1} x", 1, 10, "after the end"),
            ("{\"a\": 1", 1, 1, "never closed"),
            ("[1, 2", 1, 1, "never closed"),
            ("{} /* open", 1, 4, "unterminated `/*`"),
            ("{} / x", 1, 4, "unexpected `/`"),
            ("{\"é\": x}", 1, 7, "expected a JSON value"),
        ];
        for (text, line, column, needle) in table {
            let e = err(text);
            assert_eq!((e.line, e.column), (*line, *column), "{text:?}: {e:?}");
            assert!(e.message.contains(needle), "{text:?}: {}", e.message);
        }
    }

    #[test]
    fn line_index_agrees_with_line_col() {
        let text = "a\nbc\r\n\nd";
        let idx = LineIndex::new(text);
        for off in 0..=text.len() {
            assert_eq!(idx.line(off), line_col(text, off).0, "offset {off}");
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = "[".repeat(100_000);
        assert!(err(&deep).message.contains("nested more than"));
        let ok = format!("{}{}", "[".repeat(200), "]".repeat(200));
        parse(&ok).unwrap();
    }

    #[test]
    fn type_names() {
        let text = "[{}, [], \"s\", 1, true, null]";
        let root = parse(text).unwrap();
        let names: Vec<_> = root
            .items()
            .unwrap()
            .iter()
            .map(|n| n.type_name(text))
            .collect();
        assert_eq!(
            names,
            [
                "an object",
                "an array",
                "a string",
                "a number",
                "a boolean",
                "null"
            ]
        );
    }
}
