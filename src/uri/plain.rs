//! [`PlainUri`]: the text of a canonical `file:` URI that needs no decoding and carries no
//! dot-segment obligation, borrowed from the message it came in. A list page names thousands
//! of files, most of them plain names beside the previous one; judging them from their own
//! text, without building a [`FileUri`] each, is what keeps a page cheap (issue 14). Only
//! this module makes one, and only from a [`FileUri`] the full parse built, so holding a
//! `PlainUri` is holding a URI [`FileUri::parse`] gives exactly this canonical text for.

use super::{FileUri, SCHEME_AND_EMPTY_HOST};

/// A canonical, plain `file:` URI's text (see the module docs): its path is the text after
/// `file://`, as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlainUri<'a>(&'a str);

impl<'a> PlainUri<'a> {
    /// The canonical URI, `file:///…` (also the text it was read from).
    pub fn as_str(&self) -> &'a str {
        self.0
    }

    /// The decoded absolute path (the text after `file://`).
    pub fn path(&self) -> &'a str {
        &self.0[SCHEME_AND_EMPTY_HOST..]
    }

    /// The same URI as a [`FileUri`] (what [`FileUri::parse`] gives for its text).
    pub fn to_file_uri(&self) -> FileUri {
        FileUri {
            uri: self.0.to_owned(),
            decoded: None,
            lexical: None,
        }
    }
}

impl FileUri {
    /// `raw` as a [`PlainUri`], for the common case of a list page, cheaply: `raw` is the
    /// canonical text of `sibling`'s directory (not `/`) followed by one plain name (bytes
    /// the canonical form writes as they are, no `/`, not only dots, at most `NAME_MAX`),
    /// and `sibling` holds no escape and no dot-segment obligation. Then only the name needs
    /// judging, and its [`PlainUri::to_file_uri`] is exactly what [`FileUri::parse`] gives
    /// (`src/uri/tests.rs` holds the two to that). `None` is no verdict: parse `raw` in full.
    pub fn plain_sibling<'a>(sibling: &FileUri, raw: &'a str) -> Option<PlainUri<'a>> {
        super::parse::is_plain_sibling(sibling, raw).then_some(PlainUri(raw))
    }

    /// `raw` as a [`PlainUri`], when it is this URI's own canonical text and this URI needs
    /// no decoding and carries no obligation (a URI parsed from its canonical text).
    pub fn plain_text<'a>(&self, raw: &'a str) -> Option<PlainUri<'a>> {
        (self.decoded.is_none() && self.lexical.is_none() && self.uri == raw)
            .then_some(PlainUri(raw))
    }
}

/// One `file:` URI of a page: parsed in full, or plain.
#[derive(Clone, Copy, Debug)]
pub enum PageUri<'a> {
    /// Parsed in full (it may need decoding or carry obligations).
    Parsed(&'a FileUri),
    /// Plain: its text is its canonical form and its path.
    Plain(PlainUri<'a>),
}

impl<'a> PageUri<'a> {
    /// The canonical decoded absolute path.
    pub fn path(&self) -> &'a str {
        match self {
            PageUri::Parsed(u) => u.path(),
            PageUri::Plain(p) => p.path(),
        }
    }

    /// What the original text's dot segments require (never anything for a plain URI).
    pub(crate) fn lexical(&self) -> Option<&'a super::Lexical> {
        match self {
            PageUri::Parsed(u) => u.lexical(),
            PageUri::Plain(_) => None,
        }
    }

    /// The URI, borrowed when it was parsed, built when it is plain.
    pub fn file_uri(&self) -> std::borrow::Cow<'a, FileUri> {
        match self {
            PageUri::Parsed(u) => std::borrow::Cow::Borrowed(*u),
            PageUri::Plain(p) => std::borrow::Cow::Owned(p.to_file_uri()),
        }
    }

    /// A page of parsed URIs as [`Checker::page`](crate::enforce::Checker::page) hands them
    /// to the root check: each plain sibling of the latest parsed one by its text, the
    /// others parsed (for tests and benchmarks of [`crate::roots::RootSet::check_page`]).
    pub fn page_of(uris: &[FileUri]) -> Vec<PageUri<'_>> {
        let mut head: Option<&FileUri> = None;
        uris.iter()
            .map(|u| {
                match head
                    // A URI that has obligations or needed decoding is not its text: parsed.
                    .filter(|_| u.plain_text(u.as_str()).is_some())
                    .and_then(|h| FileUri::plain_sibling(h, u.as_str()))
                {
                    Some(p) => PageUri::Plain(p),
                    None => {
                        head = Some(u);
                        PageUri::Parsed(u)
                    }
                }
            })
            .collect()
    }
}
