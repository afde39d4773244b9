//! Table-driven tests of the parser: every accepted form with its canonical output, and
//! every refused form with its reason code.

use super::*;

/// `ok!(input => canonical)` and `no!(input => reason)` rows, checked in one place so each
/// row also checks idempotence of the canonical form.
macro_rules! table {
    ($($kind:ident $input:expr => $expect:expr;)*) => {{
        let rows: Vec<(&str, Result<&str, Reason>)> =
            vec![$( table!(@row $kind $input, $expect), )*];
        rows
    }};
    (@row ok $input:expr, $expect:expr) => { ($input, Ok($expect)) };
    (@row no $input:expr, $expect:expr) => { ($input, Err($expect)) };
}

fn check_rows(rows: &[(&str, Result<&str, Reason>)]) {
    let mut failures = Vec::new();
    for (input, expect) in rows {
        let got = FileUri::parse(input);
        match (&got, expect) {
            (Ok(u), Ok(want)) if u.as_str() == *want => {
                let again = FileUri::parse(u.as_str()).expect("canonical form reparses");
                assert_eq!(again.as_str(), u.as_str(), "not idempotent for {input:?}");
                assert_eq!(again.path(), u.path());
                assert!(
                    again.lexical().is_none(),
                    "canonical form has no dot segments"
                );
            }
            (Err(e), Err(want)) if e.reason == *want => {
                assert!(!e.detail.is_empty());
            }
            _ => failures.push(format!("{input:?}: expected {expect:?}, got {got:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn accepted_forms_and_their_canonical_uri() {
    check_rows(&table! {
        ok "file:///srv/root/a.txt" => "file:///srv/root/a.txt";
        ok "FILE:///srv/root/a.txt" => "file:///srv/root/a.txt";
        ok "File:///srv/root/a.txt" => "file:///srv/root/a.txt";
        ok "file://localhost/srv/root/a.txt" => "file:///srv/root/a.txt";
        ok "file://LOCALHOST/srv/root/a.txt" => "file:///srv/root/a.txt";
        ok "file://LocalHost/srv/root/a.txt" => "file:///srv/root/a.txt";
        ok "file:/srv/root/a.txt" => "file:///srv/root/a.txt";
        ok "file:///" => "file:///";
        ok "file:/" => "file:///";
        ok "file://localhost/" => "file:///";
        ok "file:///srv/root/" => "file:///srv/root";
        ok "file:///srv//root///a.txt" => "file:///srv/root/a.txt";
        ok "file:///srv/./root/./a.txt" => "file:///srv/root/a.txt";
        ok "file:///srv/root/sub/../a.txt" => "file:///srv/root/a.txt";
        ok "file:///srv/root/sub/.." => "file:///srv/root";
        ok "file:///srv/root/a/b/../../c" => "file:///srv/root/c";
        ok "file:///a/.." => "file:///";
        ok "file:///srv/My%20Docs/x" => "file:///srv/My%20Docs/x";
        ok "file:///srv/%41%62c" => "file:///srv/Abc";
        ok "file:///srv/%7euser" => "file:///srv/~user";
        ok "file:///srv/a%2etxt" => "file:///srv/a.txt";
        ok "file:///srv/caf%C3%A9" => "file:///srv/caf%C3%A9";
        ok "file:///srv/caf%c3%a9" => "file:///srv/caf%C3%A9";
        ok "file:///srv/café" => "file:///srv/caf%C3%A9";
        ok "file:///srv/a[1]|x^{y}" => "file:///srv/a%5B1%5D%7Cx%5E%7By%7D";
        ok "file:///srv/a%25b" => "file:///srv/a%25b";
        ok "file:///srv/100%25" => "file:///srv/100%25";
        ok "file:///srv/!$&'()*+,;=:@" => "file:///srv/!$&'()*+,;=:@";
        ok "file:///srv/.hidden" => "file:///srv/.hidden";
        ok "file:///srv/..a" => "file:///srv/..a";
        ok "file:///srv/a.." => "file:///srv/a..";
        ok "file:///srv/a." => "file:///srv/a.";
        ok "file:///srv/%D0%B0" => "file:///srv/%D0%B0"; // Cyrillic a: another name, kept
        ok "file:///srv/a%E2%80%A6b" => "file:///srv/a%E2%80%A6b"; // ellipsis inside a name
        ok "file:///srv/~" => "file:///srv/~";
        ok "file:///srv/CON" => "file:///srv/CON";
        ok "file:///srv/a:b" => "file:///srv/a:b";
        ok "file:///1:/x" => "file:///1:/x"; // not a drive letter
    });
}

#[test]
fn refused_forms_and_their_reason() {
    use Reason as R;
    let long_name = format!("file:///srv/{}", "a".repeat(256));
    let ok_name = format!("file:///srv/{}", "a".repeat(255));
    let long_path = format!("file://{}", "/abcdefg".repeat(512));
    let long_raw = format!("file:///{}", "%41".repeat(MAX_URI_BYTES));
    assert!(FileUri::parse(&ok_name).is_ok());
    check_rows(&table! {
        // Schemes, relative references, bare paths.
        no "http://localhost/srv/root/a.txt" => R::NotAFileUri;
        no "https://example.com/x" => R::NotAFileUri;
        no "data:text/plain,hi" => R::NotAFileUri;
        no "fil:///x" => R::NotAFileUri;
        no "file+x:///x" => R::NotAFileUri;
        no "/srv/root/a.txt" => R::NotAFileUri;
        no "srv/root/a.txt" => R::NotAFileUri;
        no "../x" => R::NotAFileUri;
        no "//evil/x" => R::NotAFileUri;
        no "~/x" => R::NotAFileUri;
        no "~root/x" => R::NotAFileUri;
        no "file:~/x" => R::NotAFileUri;
        no "file:srv/root/a.txt" => R::NotAFileUri;
        no "file:" => R::NotAFileUri;
        no "file://" => R::NotAFileUri;
        no "file://localhost" => R::NotAFileUri;
        no "" => R::NotAFileUri;
        // Hosts, ports, userinfo.
        no "file://evil.example/x" => R::NonLocalHost;
        no "file://127.0.0.1/x" => R::NonLocalHost;
        no "file://[::1]/x" => R::NonLocalHost;
        no "file://localhost:8080/x" => R::NonLocalHost;
        no "file://:80/x" => R::NonLocalHost;
        no "file://user@localhost/x" => R::NonLocalHost;
        no "file://user:pw@localhost/x" => R::NonLocalHost;
        no "file://local%68ost/x" => R::NonLocalHost;
        no "file://localhost./x" => R::NonLocalHost;
        no "file://~/x" => R::NonLocalHost;
        no "file://../x" => R::NonLocalHost;
        // Query and fragment.
        no "file:///srv/a.txt?x=1" => R::QueryOrFragment;
        no "file:///srv/a.txt#frag" => R::QueryOrFragment;
        no "file:///srv/a.txt?" => R::QueryOrFragment;
        no "file:///srv/a.txt#" => R::QueryOrFragment;
        // Windows drives and UNC.
        no "c:/x" => R::WindowsPath;
        no "C:\\x" => R::Backslash;
        no "c|/x" => R::WindowsPath;
        no "file:c:/x" => R::WindowsPath;
        no "file:///c:/x" => R::WindowsPath;
        no "file:///C:/x" => R::WindowsPath;
        no "file:///c|/x" => R::WindowsPath;
        no "file:///c%3A/x" => R::WindowsPath;
        no "file:///c%7C/x" => R::WindowsPath;
        no "file:///%EF%BD%83%EF%BC%9A/x" => R::WindowsPath; // fullwidth c:
        no "file:///x/../c:/y" => R::WindowsPath;
        no "file://c:/x" => R::WindowsPath;
        no "file:////host/share/x" => R::WindowsPath;
        no "file://///host/share/x" => R::WindowsPath;
        no "file://localhost//host/share" => R::WindowsPath;
        // Whitespace and controls, raw.
        no " file:///x" => R::Whitespace;
        no "file:///x " => R::Whitespace;
        no "file:///a b" => R::Whitespace;
        no "file:///a\tb" => R::Whitespace;
        no "file:///a\nb" => R::Whitespace;
        no "file:///a\rb" => R::Whitespace;
        no "file:///a\u{a0}b" => R::Whitespace;
        no "file:///a\u{3000}b" => R::Whitespace;
        no "file:///a\u{2028}b" => R::Whitespace;
        no "file:///a\u{0}b" => R::ControlCharacter;
        no "file:///a\u{7f}b" => R::ControlCharacter;
        no "file:///a\u{1b}[31mb" => R::ControlCharacter;
        no "file:///a\u{9b}b" => R::ControlCharacter;
        // Controls, decoded.
        no "file:///srv/a.txt%00.png" => R::ControlCharacter;
        no "file:///srv/a%0Ab" => R::ControlCharacter;
        no "file:///srv/a%09b" => R::ControlCharacter;
        no "file:///srv/a%7Fb" => R::ControlCharacter;
        no "file:///srv/a%1Bb" => R::ControlCharacter;
        no "file:///srv/a%C2%9Bb" => R::ControlCharacter; // C1 CSI
        // Backslashes and encoded separators.
        no "file:///srv/root\\..\\..\\etc\\passwd" => R::Backslash;
        no "file:///srv/root/..%2fetc/passwd" => R::EncodedSeparator;
        no "file:///srv/root/..%2Fetc/passwd" => R::EncodedSeparator;
        no "file:///srv/root%2f..%2f..%2fetc" => R::EncodedSeparator;
        no "file:///srv/root/..%5cetc%5cpasswd" => R::EncodedSeparator;
        no "file:///srv/root/..%5Cetc" => R::EncodedSeparator;
        // Bad encodings.
        no "file:///srv/%" => R::BadEncoding;
        no "file:///srv/%4" => R::BadEncoding;
        no "file:///srv/%zz" => R::BadEncoding;
        no "file:///srv/%%32%65" => R::BadEncoding;
        no "file:///srv/%ff%fe" => R::BadEncoding;
        no "file:///srv/%C0%AE%C0%AE/etc" => R::BadEncoding; // overlong '.'
        no "file:///srv/%C0%AF" => R::BadEncoding; // overlong '/'
        no "file:///srv/%E0%80%AE" => R::BadEncoding; // 3-byte overlong '.'
        no "file:///srv/%ED%A0%80" => R::BadEncoding; // surrogate
        no "file:///srv/%C3" => R::BadEncoding; // truncated sequence
        // Double encoding.
        no "file:///srv/root/%252e%252e/etc" => R::DoubleEncoding;
        no "file:///srv/root/%252f" => R::DoubleEncoding;
        no "file:///srv/a%2541" => R::DoubleEncoding;
        no "file:///srv/%EF%BC%85%EF%BC%92%EF%BD%86" => R::DoubleEncoding; // fullwidth %2f
        // Dot segments.
        no "file:///srv/root/%2e%2e/etc/passwd" => R::DotSegment;
        no "file:///srv/root/%2E%2E/etc/passwd" => R::DotSegment;
        no "file:///srv/root/.%2e/etc" => R::DotSegment;
        no "file:///srv/root/%2e./etc" => R::DotSegment;
        no "file:///srv/root/%2e/a" => R::DotSegment;
        no "file:///.." => R::DotSegment;
        no "file:///../etc/passwd" => R::DotSegment;
        no "file:///srv/../../etc/passwd" => R::DotSegment;
        no "file:/.." => R::DotSegment;
        no "file:///srv/..." => R::DotSegment;
        no "file:///srv/..../x" => R::DotSegment;
        no "file:///srv/..%20/x" => R::DotSegment;
        no "file:///srv/.%20./x" => R::DotSegment;
        no "file:///srv/%20" => R::DotSegment;
        no "file:///srv/%E2%80%A5/x" => R::DotSegment; // two dot leader
        no "file:///srv/%EF%BC%8E%EF%BC%8E/x" => R::DotSegment; // fullwidth dots
        no "file:///srv/%E2%80%A4%E2%80%A4/x" => R::DotSegment; // one dot leaders
        no "file:///srv/%EF%B9%92%EF%B9%92/x" => R::DotSegment; // small full stops
        no "file:///srv/%E2%80%A6" => R::DotSegment; // ellipsis alone
        no "file:///srv/%C2%A0" => R::DotSegment; // a lone no-break space
        // Look-alike separators.
        no "file:///srv/root/..%EF%BC%8Fetc" => R::LookalikeSeparator; // fullwidth solidus
        no "file:///srv/root/..%EF%BC%BCetc" => R::LookalikeSeparator; // fullwidth backslash
        no "file:///srv/a%E2%88%95b" => R::LookalikeSeparator; // division slash
        no "file:///srv/a%E2%81%84b" => R::LookalikeSeparator; // fraction slash
        no "file:///srv/a%E2%88%96b" => R::LookalikeSeparator; // set minus
        no "file:///srv/a%EF%B9%A8b" => R::LookalikeSeparator; // small reverse solidus
        no "file:///srv/a／b" => R::LookalikeSeparator; // raw fullwidth solidus
        // Lengths.
        no &long_name => R::TooLong;
        no &long_path => R::TooLong;
        no &long_raw => R::TooLong;
    });
}

#[test]
fn from_path_applies_the_same_rules() {
    let ok = |p: &str| FileUri::from_path(Path::new(p)).map(|u| u.as_str().to_owned());
    let no = |p: &str| FileUri::from_path(Path::new(p)).unwrap_err().reason;
    assert_eq!(ok("/srv/root").unwrap(), "file:///srv/root");
    assert_eq!(ok("/srv/root/").unwrap(), "file:///srv/root");
    assert_eq!(ok("//srv/./root/x/..").unwrap(), "file:///srv/root");
    assert_eq!(ok("/srv/My Docs").unwrap(), "file:///srv/My%20Docs");
    assert_eq!(ok("/srv/a#b?c").unwrap(), "file:///srv/a%23b%3Fc");
    assert_eq!(ok("/").unwrap(), "file:///");
    assert_eq!(no("srv/root"), Reason::NotAFileUri);
    assert_eq!(no("./x"), Reason::NotAFileUri);
    assert_eq!(no("~/x"), Reason::NotAFileUri);
    assert_eq!(no("/.."), Reason::DotSegment);
    assert_eq!(no("/srv/a%2e"), Reason::DoubleEncoding);
    assert_eq!(no("/srv/a\\b"), Reason::Backslash);
    assert_eq!(no("/srv/a\nb"), Reason::ControlCharacter);
    assert_eq!(no("/srv/..."), Reason::DotSegment);
    assert_eq!(no("/c:/x"), Reason::WindowsPath);
    {
        use std::os::unix::ffi::OsStrExt;
        let p = Path::new(std::ffi::OsStr::from_bytes(b"/srv/\xff"));
        assert_eq!(
            FileUri::from_path(p).unwrap_err().reason,
            Reason::BadEncoding
        );
    }
    // A path with characters that must be escaped round-trips through the URI.
    let u = FileUri::from_path(Path::new("/srv/a b/c%4d/é")).unwrap_err();
    assert_eq!(
        u.reason,
        Reason::DoubleEncoding,
        "a literal `%4d` reads as `M` when decoded"
    );
    let u = FileUri::from_path(Path::new("/srv/a b/100%/é")).unwrap();
    assert_eq!(u.as_str(), "file:///srv/a%20b/100%25/%C3%A9");
    assert_eq!(
        FileUri::parse(u.as_str()).unwrap().path(),
        "/srv/a b/100%/é"
    );
}

#[test]
fn component_wise_containment() {
    let u = |s: &str| FileUri::parse(s).unwrap();
    let root = u("file:///srv/root");
    assert!(u("file:///srv/root").starts_with(&root));
    assert!(u("file:///srv/root/a").starts_with(&root));
    assert!(u("file:///srv/root/a/b").starts_with(&root));
    // CVE-2025-53110: a sibling whose name extends the root's name is outside.
    assert!(!u("file:///srv/root_evil").starts_with(&root));
    assert!(!u("file:///srv/root_evil/x").starts_with(&root));
    assert!(!u("file:///srv/rootx").starts_with(&root));
    assert!(!u("file:///srv/roo").starts_with(&root));
    assert!(!u("file:///srv").starts_with(&root));
    assert!(u("file:///anything").starts_with(&u("file:///")));
    assert_eq!(u("file:///srv/root/a/b").relative_to(&root), Some("a/b"));
    assert_eq!(u("file:///srv/root").relative_to(&root), Some(""));
    assert_eq!(u("file:///x/y").relative_to(&u("file:///")), Some("x/y"));
    assert_eq!(
        u("file:///srv/root/a/b").components().collect::<Vec<_>>(),
        ["srv", "root", "a", "b"]
    );
    assert_eq!(u("file:///").components().count(), 0);
    assert_eq!(u("file:///").depth(), 0);
    assert_eq!(u("file:///srv/root/a").depth(), 3);
}

#[test]
fn dot_segments_leave_obligations_for_the_root_check() {
    let u = FileUri::parse("file:///r/a/b/../../c/./").unwrap();
    assert_eq!(u.as_str(), "file:///r/c");
    let lex = u.lexical().unwrap();
    assert_eq!(lex.parents, ["/r/a/b", "/r/a"]);
    assert!(lex.trailing_dir);
    // Identity ignores the obligations.
    assert_eq!(u, FileUri::parse("file:///r/c").unwrap());
    assert!(FileUri::parse("file:///r/c").unwrap().lexical().is_none());
    assert!(
        FileUri::parse("file:///r/c/")
            .unwrap()
            .lexical()
            .unwrap()
            .trailing_dir
    );
}

#[test]
fn scheme_of_any_uri() {
    assert_eq!(scheme_of("file:///x").as_deref(), Some("file"));
    assert_eq!(scheme_of("FILE:///x").as_deref(), Some("file"));
    assert_eq!(scheme_of("HTTPS://x").as_deref(), Some("https"));
    assert_eq!(scheme_of("git+ssh://x").as_deref(), Some("git+ssh"));
    assert_eq!(scheme_of("urn:isbn:1").as_deref(), Some("urn"));
    assert_eq!(scheme_of("c:/x"), None);
    assert_eq!(scheme_of("/a:b"), None);
    assert_eq!(scheme_of("a/b:c"), None);
    assert_eq!(scheme_of("1abc:x"), None);
    assert_eq!(scheme_of(":x"), None);
    assert_eq!(scheme_of("plain"), None);
}

#[test]
fn error_details_quote_the_input_safely() {
    let e = FileUri::parse("http://x/\u{1b}[2J").unwrap_err();
    assert_eq!(e.reason, Reason::ControlCharacter);
    assert!(!e.detail.contains('\u{1b}'));
    let e = FileUri::parse(&format!("http://{}", "x".repeat(10_000))).unwrap_err();
    assert!(
        e.detail.len() < 400,
        "detail is bounded: {}",
        e.detail.len()
    );
    assert_eq!(e.to_string(), format!("{} (not_a_file_uri)", e.detail));
}

/// The canonical-form invariants (the fuzz target checks the same ones).
fn assert_canonical(u: &FileUri) {
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
            assert!(name.len() <= MAX_NAME_BYTES);
            assert!(!name.chars().any(|c| c.is_control() || c == '\\'), "{p:?}");
            assert!(!parse::has_percent_escape(name), "{p:?}");
        }
    }
    let again = FileUri::parse(s).expect("canonical form reparses");
    assert_eq!(&again, u);
    assert_eq!(again.path(), p);
    assert!(again.lexical().is_none());
    assert_eq!(
        &FileUri::from_path(Path::new(p)).expect("path form parses"),
        u
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

    /// Any text: no panic, and whatever parses is canonical and idempotent.
    #[test]
    fn any_text_never_panics_and_canonical_form_is_idempotent(raw in ".{0,80}") {
        if let Ok(u) = FileUri::parse(&raw) {
            assert_canonical(&u);
        }
    }

    /// URI-shaped text assembled from the tokens attackers use.
    #[test]
    fn hostile_tokens_never_panic_and_canonical_form_is_idempotent(
        tokens in proptest::collection::vec(proptest::sample::select(vec![
            "file:", "FILE:", "http:", "//", "/", "/", "/", "localhost", "LocalHost", "evil",
            "..", "..", ".", "%2e", "%2E", "%2f", "%5C", "%25", "%00", "%41", "a", "b", "\\",
            "?", "#", " ", "%C0%AE", "%EF%BC%8E", "%EF%BC%8F", "c:", "|", "@", ":", "~", "é",
            "%", "%4", "．", "%20", "...", "%C3%A9",
        ]), 0..14)
    ) {
        let raw: String = tokens.concat();
        if let Ok(u) = FileUri::parse(&raw) {
            assert_canonical(&u);
        }
    }
}

/// Tokens sibling texts and names are made of: plain names, dots, escapes, non-ASCII,
/// separators and the characters the parser refuses.
const SIBLING_TOKENS: &[&str] = &[
    "a", "b", "x.txt", ".", "..", "...", "/", "//", "%41", "%2e", "%2F", "%25", "é", " ", "\\",
    "?", "#", "c:", "~", "@", ":", "-", "%", ".env", "\u{ff0e}", "\u{2025}",
];

/// Whether `fast` is exactly what the full parse gives for `raw`.
fn same_as_full(fast: &FileUri, raw: &str) -> Result<(), String> {
    let full = FileUri::parse(raw).map_err(|e| format!("{raw:?}: fast path took it, full: {e}"))?;
    if (&fast.uri, &fast.decoded, &fast.lexical) != (&full.uri, &full.decoded, &full.lexical) {
        return Err(format!("{raw:?}: fast {fast:?} != full {full:?}"));
    }
    Ok(())
}

#[test]
fn sibling_parse_takes_plain_names_beside_plain_siblings_only() {
    let s = |t: &str| FileUri::parse(t).unwrap();
    let take = [
        ("file:///a/b.txt", "file:///a/c.txt"),
        ("file:///r/d/x", "file:///r/d/...a"),
        ("file:///r/d/x", "file:///r/d/c:"),
        ("file://localhost/a/b", "file:///a/c"),
    ];
    for (sib, raw) in take {
        let fast = FileUri::plain_sibling(&s(sib), raw)
            .map(|p| p.to_file_uri())
            .unwrap_or_else(|| panic!("{raw}"));
        same_as_full(&fast, raw).unwrap();
    }
    let decline = [
        ("file:///a", "file:///b"),       // under `/`: the first name's rules
        ("file:///a/b", "file:///a/"),    // no name
        ("file:///a/b", "file:///a/.."),  // a dot segment
        ("file:///a/b", "file:///a/..."), // only dots
        ("file:///a/b", "file:///a/c/d"), // two names
        ("file:///a/b", "file:///a/%41"), // an escape
        ("file:///a/b", "file:///a/c?x"), // a query
        ("file:///a/b", "file:///a/é"),   // not written as is
        ("file:///a/b", "FILE:///a/c"),   // not the canonical directory text
        ("file:///a/b", "file://localhost/a/c"), // idem
        ("file:///a/é/b", "file:///a/%C3%A9/c"), // a sibling with escapes
        ("file:///a/../b/c", "file:///b/d"), // a sibling with obligations
    ];
    for (sib, raw) in decline {
        assert!(
            FileUri::plain_sibling(&s(sib), raw).is_none(),
            "{sib} / {raw}"
        );
    }
    let long = format!("file:///a/{}", "n".repeat(MAX_NAME_BYTES + 1));
    assert!(FileUri::plain_sibling(&s("file:///a/b"), &long).is_none());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]

    /// The sibling fast path (list pages) gives exactly the full parse's result whenever
    /// it gives one: for names beside a sibling, and for any text after any prefix of it.
    #[test]
    fn sibling_parse_equals_full_parse(
        dir in proptest::collection::vec(proptest::sample::select(SIBLING_TOKENS), 1..5),
        last in proptest::sample::select(SIBLING_TOKENS),
        tail in proptest::collection::vec(proptest::sample::select(SIBLING_TOKENS), 0..5),
        cut in 0usize..64,
        host in proptest::bool::ANY,
    ) {
        let sib_raw = format!(
            "file://{}/{}/{last}",
            if host { "localhost" } else { "" },
            dir.join("/")
        );
        let Ok(sib) = FileUri::parse(&sib_raw) else {
            return Ok(());
        };
        let text = sib.as_str();
        let tail = tail.concat();
        let mut at = cut.min(text.len());
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let beside = text.rfind('/').map(|i| &text[..=i]).unwrap_or("");
        for raw in [format!("{beside}{tail}"), format!("{}{tail}", &text[..at])] {
            if let Some(fast) = FileUri::plain_sibling(&sib, &raw).map(|p| p.to_file_uri()) {
                same_as_full(&fast, &raw).map_err(proptest::test_runner::TestCaseError::fail)?;
            }
        }
    }
}

/// The schemes that wrap a local file, and look-alikes that do not.
#[test]
fn wraps_a_file_names_the_schemes_hosts_resolve_to_files() {
    for (raw, wraps) in [
        ("jar:file:///x.jar!/a", true),
        ("view-source:file:///etc/passwd", true),
        ("vscode-file://vscode-app/etc/passwd", true),
        ("vscode-resource:/etc/passwd", true),
        ("vscode-webview-resource://id/file/etc/passwd", true),
        ("vscode-remote://ssh-remote+h/etc/passwd", true),
        ("vscode-remote-resource://h/etc/passwd", true),
        ("vscode-userdata:/etc/passwd", true),
        ("blob:file:///etc/passwd", true),
        ("x-y: FILE:///etc/passwd", true),
        ("https://example.com/file:", false),
        ("data:text/plain,file:", false),
        ("mailto:a@b", false),
    ] {
        let scheme = super::scheme_of(raw).unwrap().to_ascii_lowercase();
        assert_eq!(super::wraps_a_file(raw, &scheme), wraps, "{raw}");
    }
}
