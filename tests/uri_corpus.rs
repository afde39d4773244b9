//! The attack corpus (issue 3): more than a hundred distinct URIs against a real temporary
//! tree, each with its expected verdict and reason, plus the regression tests for
//! CVE-2025-53109 (symlink escape) and CVE-2025-53110 (string-prefix roots).
//!
//! Every allowed regular file is also read through the root's capability, and no read may
//! ever return the outside secret.

#[path = "common/uri_tree.rs"]
mod uri_tree;

use std::sync::mpsc;
use std::time::Duration;

use rootfence::roots::{CheckOptions, FileKind, RootSet, RootSpec, SymlinkStance, Verdict};
use rootfence::uri::Reason;
use uri_tree::{SECRET, Tree};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    Allow(FileKind),
    Deny(Reason),
}
use Expect::{Allow, Deny};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Opts {
    Default,
    NoSymlinks,
    NoHardLinks,
}

struct Case {
    name: &'static str,
    uri: String,
    opts: Opts,
    expect: Expect,
}

fn main_set(t: &Tree) -> RootSet {
    let (set, errors) = RootSet::open([
        RootSpec::path(&t.root),
        RootSpec::path(t.root.join("nested")),
        RootSpec::path(&t.alias_root),
    ]);
    assert!(errors.is_empty(), "{errors:?}");
    set
}

#[rustfmt::skip]
fn cases(t: &Tree) -> Vec<Case> {
    let r = |rel: &str| t.in_root(rel);
    let top = |rel: &str| t.uri(rel);
    let root_path = t.root.display().to_string();
    let root_name = t.root.file_name().unwrap().to_str().unwrap().to_owned();
    let long_name = r(&"n".repeat(256));
    let long_path = r(&"abcdefghij/".repeat(420));
    let mut v = Vec::new();
    let mut add = |name: &'static str, uri: String, opts: Opts, expect: Expect| {
        v.push(Case {
            name,
            uri,
            opts,
            expect,
        })
    };
    use FileKind as K;
    use Opts::Default as D;
    use Reason as R;

    // --- Allowed: plain names and accepted spellings.
    add("plain_file", r("a.txt"), D, Allow(K::Regular));
    add("root_itself", r(""), D, Allow(K::Directory));
    add("root_trailing_slash", format!("{}/", r("")), D, Allow(K::Directory));
    add("subdir_file", r("sub/b.txt"), D, Allow(K::Regular));
    add("localhost_host", format!("file://localhost{root_path}/a.txt"), D, Allow(K::Regular));
    add("localhost_upper", format!("file://LOCALHOST{root_path}/a.txt"), D, Allow(K::Regular));
    add("single_slash_form", format!("file:{root_path}/a.txt"), D, Allow(K::Regular));
    add("scheme_upper", format!("FILE://{root_path}/a.txt"), D, Allow(K::Regular));
    add("encoded_unreserved", r("%61.txt"), D, Allow(K::Regular));
    add("dot_segment_literal", r("sub/./b.txt"), D, Allow(K::Regular));
    add("dotdot_through_real_dir", r("sub/../a.txt"), D, Allow(K::Regular));
    add("empty_segments", r("/sub///b.txt"), D, Allow(K::Regular));
    add("eight_deep", r("d1/d2/d3/d4/d5/d6/d7/d8/deep.txt"), D, Allow(K::Regular));
    add("encoded_space", r("with%20space.txt"), D, Allow(K::Regular));
    add("encoded_utf8", r("caf%C3%A9.txt"), D, Allow(K::Regular));
    add("raw_utf8_iri", r("café.txt"), D, Allow(K::Regular));
    add("missing_file", r("new.txt"), D, Allow(K::Missing));
    add("missing_nested", r("newdir/x/y.txt"), D, Allow(K::Missing));
    add("cyrillic_lookalike_is_another_name", r("%D0%B0.txt"), D, Allow(K::Missing));
    add("nfd_is_another_name", r("cafe%CC%81.txt"), D, Allow(K::Missing));
    // --- Allowed: symbolic links that stay inside.
    add("symlink_in_relative", r("link_in_rel"), D, Allow(K::Regular));
    add("symlinked_dir_in", r("link_in_dir/b.txt"), D, Allow(K::Regular));
    add("symlink_chain_in", r("link_chain1"), D, Allow(K::Regular));
    add("symlink_up_but_in", r("sub/link_up_in"), D, Allow(K::Regular));
    add("symlink_to_root", r("sub/link_root"), D, Allow(K::Directory));
    add("missing_under_in_link", r("link_in_dir/new.txt"), D, Allow(K::Missing));
    add("nested_root_link_to_enclosing", r("nested/link_to_parent"), D, Allow(K::Regular));
    add("nested_root_file", r("nested/n.txt"), D, Allow(K::Regular));
    add("symlinked_root_declared", top("alias_root/f.txt"), D, Allow(K::Regular));
    // --- Allowed: absolute links that name a place inside the same root (issue 12).
    add("symlink_absolute_to_inside", r("link_in_abs"), D, Allow(K::Regular));
    add("symlink_absolute_dir_in", r("link_in_abs_dir/b.txt"), D, Allow(K::Regular));
    add("symlink_absolute_chain_in", r("link_in_abs_chain"), D, Allow(K::Regular));
    add("symlink_absolute_with_dot_and_slashes", r("link_in_abs_dots"), D, Allow(K::Regular));
    add("missing_under_absolute_dir_link", r("link_in_abs_dir/new.txt"), D, Allow(K::Missing));
    add("symlink_absolute_via_declared_root", top("alias_root/via_alias"), D, Allow(K::Regular));
    add("dangling_absolute_in", r("dangling_in_abs"), D, Deny(R::DanglingSymlink));
    add("symlink_absolute_loop", r("abs_loop1"), D, Deny(R::SymlinkLoop));
    add("symlink_absolute_refused_when_never", r("link_in_abs"), Opts::NoSymlinks, Deny(R::SymlinkRefused));
    add("symlinked_root_real_path", top("real_root/f.txt"), D, Allow(K::Regular));
    // --- Allowed: special files are reported, and checking them never blocks.
    add("fifo_reported", r("fifo"), D, Allow(K::Fifo));
    add("socket_reported", r("sock"), D, Allow(K::Socket));
    add("hard_link_reported", r("hard_out"), D, Allow(K::Regular));
    add("plain_file_no_symlinks", r("sub/b.txt"), Opts::NoSymlinks, Allow(K::Regular));

    // --- Prefix siblings and climbing out (CVE-2025-53110 class).
    add("prefix_sibling_evil", top("root_evil/x.txt"), D, Deny(R::OutsideRoots));
    add("prefix_sibling_x", top("rootx/x.txt"), D, Deny(R::OutsideRoots));
    add("parent_of_root", top(""), D, Deny(R::OutsideRoots));
    add("dotdot_to_outside", r("../outside/secret.txt"), D, Deny(R::OutsideRoots));
    add("dotdot_to_sibling", r("../root_evil/x.txt"), D, Deny(R::OutsideRoots));
    add("many_dotdots", r("sub/../../../../etc/passwd"), D, Deny(R::OutsideRoots));
    add("too_many_dotdots", r("sub/../../../../../etc/passwd"), D, Deny(R::DotSegment));
    add("etc_passwd", "file:///etc/passwd".into(), D, Deny(R::OutsideRoots));
    add("filesystem_root", "file:///".into(), D, Deny(R::OutsideRoots));
    add("proc_alias_of_inside_file", format!("file:///proc/self/root{root_path}/a.txt"), D, Deny(R::OutsideRoots));
    add("proc_cwd_alias", "file:///proc/self/cwd/a.txt".into(), D, Deny(R::OutsideRoots));
    // --- Traversal in every encoding.
    add("encoded_dotdot_lower", r("%2e%2e/outside/secret.txt"), D, Deny(R::DotSegment));
    add("encoded_dotdot_upper", r("%2E%2E/outside/secret.txt"), D, Deny(R::DotSegment));
    add("encoded_dotdot_mixed1", r(".%2e/outside/secret.txt"), D, Deny(R::DotSegment));
    add("encoded_dotdot_mixed2", r("%2e./outside/secret.txt"), D, Deny(R::DotSegment));
    add("encoded_dot", r("%2e/a.txt"), D, Deny(R::DotSegment));
    add("encoded_slash_lower", r("..%2foutside%2fsecret.txt"), D, Deny(R::EncodedSeparator));
    add("encoded_slash_upper", r("..%2Foutside/secret.txt"), D, Deny(R::EncodedSeparator));
    add("encoded_backslash", r("..%5coutside%5csecret.txt"), D, Deny(R::EncodedSeparator));
    add("double_encoded_dots", r("%252e%252e/outside/secret.txt"), D, Deny(R::DoubleEncoding));
    add("double_encoded_slash", r("..%252foutside"), D, Deny(R::DoubleEncoding));
    add("raw_backslash", r("..\\outside\\secret.txt"), D, Deny(R::Backslash));
    add("overlong_dots", r("%c0%ae%c0%ae/outside/secret.txt"), D, Deny(R::BadEncoding));
    add("overlong_slash", r("..%c0%afoutside"), D, Deny(R::BadEncoding));
    add("invalid_utf8", r("%ff%fe"), D, Deny(R::BadEncoding));
    add("malformed_escape", r("%g0"), D, Deny(R::BadEncoding));
    add("dotdot_above_fs_root", "file:///../../etc/passwd".into(), D, Deny(R::DotSegment));
    add("three_dots", r("..."), D, Deny(R::DotSegment));
    add("dotdot_space", r("..%20/outside"), D, Deny(R::DotSegment));
    // --- Unicode look-alikes.
    add("fullwidth_dots", r("%EF%BC%8E%EF%BC%8E/outside/secret.txt"), D, Deny(R::DotSegment));
    add("raw_fullwidth_dots", r("．．/outside/secret.txt"), D, Deny(R::DotSegment));
    add("two_dot_leader", r("%E2%80%A5/outside"), D, Deny(R::DotSegment));
    add("one_dot_leaders", r("%E2%80%A4%E2%80%A4/outside"), D, Deny(R::DotSegment));
    add("fullwidth_solidus", r("..%EF%BC%8Foutside"), D, Deny(R::LookalikeSeparator));
    add("fullwidth_reverse_solidus", r("..%EF%BC%BCoutside"), D, Deny(R::LookalikeSeparator));
    add("division_slash", r("..%E2%88%95outside"), D, Deny(R::LookalikeSeparator));
    add("fraction_slash", r("..%E2%81%84outside"), D, Deny(R::LookalikeSeparator));
    add("fullwidth_percent_escape", r("%EF%BC%85%EF%BC%92%EF%BD%85"), D, Deny(R::DoubleEncoding));
    // --- NUL and controls.
    add("encoded_nul", r("a.txt%00.png"), D, Deny(R::ControlCharacter));
    add("raw_nul", r("a.txt\0.png"), D, Deny(R::ControlCharacter));
    add("encoded_newline", r("a%0A.txt"), D, Deny(R::ControlCharacter));
    add("encoded_escape_char", r("a%1B[2J"), D, Deny(R::ControlCharacter));
    add("encoded_del", r("a%7F"), D, Deny(R::ControlCharacter));
    add("encoded_c1_nel", r("a%C2%85"), D, Deny(R::ControlCharacter));
    add("raw_tab", r("a\t.txt"), D, Deny(R::Whitespace));
    add("raw_space", r("with space.txt"), D, Deny(R::Whitespace));
    add("leading_space", format!(" {}", r("a.txt")), D, Deny(R::Whitespace));
    add("trailing_newline", format!("{}\n", r("a.txt")), D, Deny(R::Whitespace));
    // --- Hosts, schemes, forms.
    add("query", r("a.txt?x=1"), D, Deny(R::QueryOrFragment));
    add("fragment", r("a.txt#x"), D, Deny(R::QueryOrFragment));
    add("remote_host", format!("file://evil.example{root_path}/a.txt"), D, Deny(R::NonLocalHost));
    add("ip_host", format!("file://127.0.0.1{root_path}/a.txt"), D, Deny(R::NonLocalHost));
    add("ipv6_host", format!("file://[::1]{root_path}/a.txt"), D, Deny(R::NonLocalHost));
    add("port", format!("file://localhost:80{root_path}/a.txt"), D, Deny(R::NonLocalHost));
    add("userinfo", format!("file://u@localhost{root_path}/a.txt"), D, Deny(R::NonLocalHost));
    add("encoded_host", format!("file://local%68ost{root_path}/a.txt"), D, Deny(R::NonLocalHost));
    add("http_scheme", format!("http://localhost{root_path}/a.txt"), D, Deny(R::NotAFileUri));
    add("data_scheme", "data:text/plain,SECRET".into(), D, Deny(R::NotAFileUri));
    add("bare_path", format!("{root_path}/a.txt"), D, Deny(R::NotAFileUri));
    add("relative_reference", "../outside/secret.txt".into(), D, Deny(R::NotAFileUri));
    add("tilde", "~/secret.txt".into(), D, Deny(R::NotAFileUri));
    add("opaque_file", "file:a.txt".into(), D, Deny(R::NotAFileUri));
    add("windows_drive", "file:///c:/windows/win.ini".into(), D, Deny(R::WindowsPath));
    add("windows_drive_pipe", "file:///C|/windows".into(), D, Deny(R::WindowsPath));
    add("unc_four_slashes", format!("file:///{root_path}/a.txt"), D, Deny(R::WindowsPath));
    add("unc_five_slashes", "file://///server/share/x".into(), D, Deny(R::WindowsPath));
    // --- Symbolic links that lead out (CVE-2025-53109 class).
    add("symlink_out_absolute", r("link_out_abs"), D, Deny(R::SymlinkEscape));
    add("symlink_out_relative", r("link_out_rel"), D, Deny(R::SymlinkEscape));
    add("symlink_absolute_to_outside_via_dotdot", r("link_abs_dotdot_out"), D, Deny(R::SymlinkEscape));
    add("symlink_absolute_to_prefix_sibling", r("link_abs_sibling"), D, Deny(R::SymlinkEscape));
    add("symlinked_parent_out", r("link_out_dir/secret.txt"), D, Deny(R::SymlinkEscape));
    add("symlink_to_prefix_sibling", r("evil_rel/x.txt"), D, Deny(R::SymlinkEscape));
    add("symlink_up_out", r("sub/link_up_out"), D, Deny(R::SymlinkEscape));
    add("symlink_above_root", r("sub/link_above/outside/secret.txt"), D, Deny(R::SymlinkEscape));
    add("symlink_chain_out", r("link_chain_out1"), D, Deny(R::SymlinkEscape));
    add("symlink_to_proc_magic", r("proc_link"), D, Deny(R::SymlinkEscape));
    add("symlink_to_proc_cwd", r("proc_cwd/a.txt"), D, Deny(R::SymlinkEscape));
    add("dangling_out_relative", r("dangling_out"), D, Deny(R::SymlinkEscape));
    add("dangling_out_absolute_new_file", r("dangling_out_abs/new.txt"), D, Deny(R::SymlinkEscape));
    add("new_file_under_out_dir", r("link_out_dir/new.txt"), D, Deny(R::SymlinkEscape));
    add("dangling_in", r("dangling_in"), D, Deny(R::DanglingSymlink));
    add("under_dangling_in", r("dangling_in/x"), D, Deny(R::DanglingSymlink));
    // --- Loops never hang.
    add("symlink_loop_pair", r("loop1"), D, Deny(R::SymlinkLoop));
    add("symlink_self_loop", r("self_loop"), D, Deny(R::SymlinkLoop));
    add("symlink_loop_as_parent", r("loop1/x"), D, Deny(R::SymlinkLoop));
    add("symlink_chain_too_long", r("long_chain0"), D, Deny(R::SymlinkLoop));
    // --- Dot segments whose lexical and kernel meanings differ.
    add("dotdot_after_symlink", r("link_in_dir/../a.txt"), D, Deny(R::DotSegment));
    add("dotdot_after_out_symlink", r("link_out_dir/../a.txt"), D, Deny(R::DotSegment));
    add("dotdot_after_file", r("a.txt/../sub/b.txt"), D, Deny(R::DotSegment));
    add("dotdot_after_missing", r("nope/../a.txt"), D, Deny(R::DotSegment));
    add("dotdot_out_of_root_and_back", r(&format!("../{root_name}/a.txt")), D, Deny(R::DotSegment));
    add("dotdot_after_symlinked_root", top("alias_root/../alias_root/f.txt"), D, Deny(R::DotSegment));
    // --- Not a directory.
    add("file_as_directory", r("a.txt/x"), D, Deny(R::NotADirectory));
    add("trailing_slash_on_file", r("a.txt/"), D, Deny(R::NotADirectory));
    add("trailing_dot_on_file", r("a.txt/."), D, Deny(R::NotADirectory));
    // --- Long paths.
    add("name_over_name_max", long_name, D, Deny(R::TooLong));
    add("path_over_path_max", long_path, D, Deny(R::TooLong));
    // --- Stances.
    add("hard_link_refused", r("hard_out"), Opts::NoHardLinks, Deny(R::HardLink));
    add("symlink_refused_when_never", r("link_in_rel"), Opts::NoSymlinks, Deny(R::SymlinkRefused));
    add("symlinked_parent_refused_when_never", r("link_in_dir/b.txt"), Opts::NoSymlinks, Deny(R::SymlinkRefused));
    add("dangling_refused_when_never", r("dangling_in"), Opts::NoSymlinks, Deny(R::SymlinkRefused));
    v
}

fn opts_of(o: Opts) -> CheckOptions {
    match o {
        Opts::Default => CheckOptions::default(),
        Opts::NoSymlinks => CheckOptions {
            symlinks: SymlinkStance::Never,
            ..CheckOptions::default()
        },
        Opts::NoHardLinks => CheckOptions {
            deny_hard_links: true,
            ..CheckOptions::default()
        },
    }
}

/// Runs `f` on another thread and fails if it takes longer than `limit`: a hang (a FIFO
/// opened for reading, a symlink loop) must fail the test, not stall it.
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .expect("the check hung (or panicked); it must never block")
}

#[test]
fn attack_corpus() {
    let failures = within(Duration::from_secs(120), || {
        let t = uri_tree::build();
        let set = main_set(&t);
        let cases = cases(&t);
        assert!(cases.len() >= 60, "the corpus has {} cases", cases.len());
        let mut names = std::collections::HashSet::new();
        let mut failures = Vec::new();
        for c in &cases {
            assert!(names.insert(c.name), "duplicate case name {}", c.name);
            let opts = opts_of(c.opts);
            let verdict = set.check_str(&c.uri, &opts);
            let got = match &verdict {
                Verdict::Allow(a) => Allow(a.kind),
                Verdict::Deny(d) => Deny(d.reason),
            };
            if got != c.expect {
                failures.push(format!(
                    "{}: {:?}\n  expected {:?}, got {verdict:?}",
                    c.name, c.uri, c.expect
                ));
                continue;
            }
            match &verdict {
                Verdict::Allow(a) => {
                    let canon = a.canonical.as_str();
                    assert!(
                        !canon.contains("/./")
                            && !canon.contains("/../")
                            && !canon.ends_with("/..")
                    );
                    assert!(
                        a.canonical.starts_with(set.roots()[a.root].uri())
                            || a.canonical.starts_with(set.roots()[a.root].real_uri())
                    );
                    if a.kind == FileKind::Regular {
                        let read = set
                            .read(a, 1 << 20, &opts)
                            .unwrap_or_else(|e| panic!("{}: read {e}", c.name));
                        assert!(
                            !read.bytes.windows(SECRET.len()).any(|w| w == SECRET)
                                || c.name.starts_with("hard_link"),
                            "{}: read returned the outside secret",
                            c.name
                        );
                    }
                    if matches!(a.kind, FileKind::Fifo | FileKind::Socket) {
                        let e = set.read(a, 1 << 20, &opts).unwrap_err();
                        assert_eq!(e.reason(), Reason::NotRegularFile, "{}", c.name);
                    }
                }
                Verdict::Deny(d) => {
                    assert!(!d.detail.is_empty());
                    assert_eq!(
                        Reason::ALL.iter().find(|r| r.code() == d.reason.code()),
                        Some(&d.reason)
                    );
                }
            }
        }
        failures
    });
    assert!(
        failures.is_empty(),
        "{} corpus failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn hard_link_count_is_reported() {
    let t = uri_tree::build();
    let set = main_set(&t);
    let Verdict::Allow(a) = set.check_str(&t.in_root("hard_out"), &CheckOptions::default()) else {
        panic!("hard link allowed by default");
    };
    assert_eq!(a.nlink, 2);
    let Verdict::Allow(a) = set.check_str(&t.in_root("a.txt"), &CheckOptions::default()) else {
        panic!()
    };
    assert_eq!(a.nlink, 1);
    let opts = CheckOptions {
        deny_hard_links: true,
        ..CheckOptions::default()
    };
    let Verdict::Allow(a) = set.check_str(&t.in_root("hard_out"), &CheckOptions::default()) else {
        panic!()
    };
    assert_eq!(
        set.read(&a, 100, &opts).unwrap_err().reason(),
        Reason::HardLink
    );
}

#[test]
fn proc_as_a_root_refuses_magic_links() {
    let (set, errors) = RootSet::open([RootSpec::path("/proc/self")]);
    assert!(errors.is_empty(), "{errors:?}");
    let o = CheckOptions::default();
    assert!(set.check_str("file:///proc/self/status", &o).is_allow());
    for magic in [
        "file:///proc/self/root/etc/passwd",
        "file:///proc/self/cwd",
        "file:///proc/self/exe",
        "file:///proc/self/fd/0",
    ] {
        assert_eq!(
            set.check_str(magic, &o).reason(),
            Some(Reason::SymlinkLoop),
            "{magic}"
        );
    }
}

// ---- Regression tests for the reference filesystem server's CVEs.

/// CVE-2025-53110: `/allowed_evil` passed a `startsWith("/allowed")` check.
#[test]
fn cve_2025_53110_prefix_sibling_is_outside() {
    let t = uri_tree::build();
    let (set, errors) = RootSet::open([RootSpec::path(&t.root)]);
    assert!(errors.is_empty());
    let o = CheckOptions::default();
    for uri in [
        t.uri("root_evil/x.txt"),
        t.uri("root_evil"),
        t.uri("rootx/x.txt"),
        t.in_root("../root_evil/x.txt"),
    ] {
        assert_eq!(
            set.check_str(&uri, &o).reason(),
            Some(Reason::OutsideRoots),
            "{uri}"
        );
    }
}

/// CVE-2025-53110 through a symbolic link: a link inside the root to the prefix sibling.
#[test]
fn cve_2025_53110_prefix_sibling_via_symlink() {
    let t = uri_tree::build();
    let (set, _) = RootSet::open([RootSpec::path(&t.root)]);
    let o = CheckOptions::default();
    assert_eq!(
        set.check_str(&t.in_root("evil_rel/x.txt"), &o).reason(),
        Some(Reason::SymlinkEscape)
    );
}

/// CVE-2025-53109: a symlink inside the root to an outside file was allowed because the
/// "symlink target outside" error was swallowed and the link's parent was checked instead.
#[test]
fn cve_2025_53109_symlink_to_outside_file_is_denied_not_parent_checked() {
    let t = uri_tree::build();
    let (set, _) = RootSet::open([RootSpec::path(&t.root)]);
    let o = CheckOptions::default();
    for rel in [
        "link_out_abs",
        "link_out_rel",
        "link_chain_out1",
        "sub/link_up_out",
    ] {
        assert_eq!(
            set.check_str(&t.in_root(rel), &o).reason(),
            Some(Reason::SymlinkEscape),
            "{rel}"
        );
    }
}

/// CVE-2025-53109, the "new file" branch: a path whose target does not exist yet must not
/// be judged by its (inside) parent when a link on the way leads out.
#[test]
fn cve_2025_53109_new_file_through_escaping_link_is_denied() {
    let t = uri_tree::build();
    let (set, _) = RootSet::open([RootSpec::path(&t.root)]);
    let o = CheckOptions::default();
    for rel in [
        "link_out_dir/new.txt",
        "dangling_out",
        "dangling_out_abs",
        "dangling_out_abs/x",
    ] {
        let v = set.check_str(&t.in_root(rel), &o);
        assert_eq!(v.reason(), Some(Reason::SymlinkEscape), "{rel}: {v:?}");
    }
}

/// CVE-2025-53109: even when asked to read directly, the escaping link is never followed.
#[test]
fn cve_2025_53109_read_through_escaping_link_never_returns_outside_bytes() {
    let t = uri_tree::build();
    let (set, _) = RootSet::open([RootSpec::path(&t.root)]);
    let dir = set.roots()[0].dir();
    for rel in [
        "link_out_abs",
        "link_out_rel",
        "link_out_dir/secret.txt",
        "../outside/secret.txt",
    ] {
        let r = rootfence::fsaccess::read_beneath(
            dir,
            std::path::Path::new(rel),
            1 << 20,
            SymlinkStance::default(),
        );
        assert_eq!(r.unwrap_err().reason(), Reason::SymlinkEscape, "{rel}");
    }
}

#[test]
fn root_errors_are_per_root_and_clear() {
    let t = uri_tree::build();
    let (set, errors) = RootSet::open([
        RootSpec::path(t.top.join("does_not_exist")),
        RootSpec::path(&t.root),
        RootSpec::path(t.root.join("a.txt")),
        RootSpec::uri("https://example.com/x"),
        RootSpec::uri("file://remote/x"),
        RootSpec::path("relative/path"),
    ]);
    assert_eq!(set.roots().len(), 1, "the good root still opens");
    assert_eq!(errors.len(), 5);
    let msgs: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    assert!(
        msgs[0].contains("does not exist") && msgs[0].contains("hint"),
        "{}",
        msgs[0]
    );
    assert!(msgs[1].contains("is not a directory"), "{}", msgs[1]);
    assert!(msgs[2].contains("not_a_file_uri"), "{}", msgs[2]);
    assert!(msgs[3].contains("non_local_host"), "{}", msgs[3]);
    assert!(msgs[4].contains("not absolute"), "{}", msgs[4]);
}

#[test]
fn no_roots_means_outside_roots() {
    let set = RootSet::empty();
    assert_eq!(
        set.check_str("file:///tmp", &CheckOptions::default())
            .reason(),
        Some(Reason::OutsideRoots)
    );
}

#[test]
fn a_renamed_root_keeps_judging_the_opened_directory() {
    let t = uri_tree::build();
    let victim = t.top.join("movable");
    std::fs::create_dir(&victim).unwrap();
    let (set, _) = RootSet::open([RootSpec::path(&victim)]);
    std::fs::rename(&victim, t.top.join("moved")).unwrap();
    std::os::unix::fs::symlink(&t.outside, &victim).unwrap();
    // Checks keep using the opened directory: the outside is never reached.
    let v = set.check_str(
        &format!("file://{}/secret.txt", victim.display()),
        &CheckOptions::default(),
    );
    assert_eq!(
        v.canonical().unwrap().path(),
        format!("{}/secret.txt", victim.display())
    );
    let Verdict::Allow(a) = v else {
        panic!("the opened directory is still a root: {v:?}")
    };
    assert_eq!(
        a.kind,
        FileKind::Missing,
        "secret.txt is not in the opened directory"
    );
    assert_eq!(
        set.read(&a, 100, &CheckOptions::default())
            .unwrap_err()
            .reason(),
        Reason::NotFound
    );
}

#[test]
fn nested_roots_pick_the_deepest_then_fall_back() {
    let t = uri_tree::build();
    let set = main_set(&t);
    let o = CheckOptions::default();
    let Verdict::Allow(a) = set.check_str(&t.in_root("nested/n.txt"), &o) else {
        panic!("nested file allowed")
    };
    assert_eq!(
        set.roots()[a.root].uri().path(),
        t.root.join("nested").to_str().unwrap()
    );
    assert_eq!(a.relative, std::path::Path::new("n.txt"));
    // The link leaves the nested root but stays inside the enclosing one.
    let Verdict::Allow(a) = set.check_str(&t.in_root("nested/link_to_parent"), &o) else {
        panic!("link to the enclosing root allowed")
    };
    assert_eq!(a.root, 0);
    assert_eq!(set.read(&a, 100, &o).unwrap().bytes, b"inside a");
    // The alias root matches by its declared and by its real path, relative path alike.
    for uri in [t.uri("alias_root/f.txt"), t.uri("real_root/f.txt")] {
        let Verdict::Allow(a) = set.check_str(&uri, &o) else {
            panic!("{uri}")
        };
        assert_eq!(a.root, 2);
        assert_eq!(a.relative, std::path::Path::new("f.txt"));
        assert_eq!(
            a.canonical.as_str(),
            uri,
            "the canonical form keeps the name used"
        );
    }
}

#[test]
fn devices_are_reported_and_never_read() {
    let (set, errors) = RootSet::open([RootSpec::path("/dev")]);
    assert!(errors.is_empty(), "{errors:?}");
    let o = CheckOptions::default();
    for dev in ["file:///dev/null", "file:///dev/zero"] {
        let Verdict::Allow(a) = set.check_str(dev, &o) else {
            panic!("{dev}")
        };
        assert_eq!(a.kind, FileKind::CharDevice, "{dev}");
        let e = set.read(&a, 16, &o).unwrap_err();
        assert_eq!(e.reason(), Reason::NotRegularFile, "{dev}");
    }
}
