//! Property tests (issue 3): random trees with symbolic links, random paths made of names,
//! `.`, `..` and links. The verdict must be allow exactly when the kernel's resolution of
//! the path stays inside the root, and whatever is allowed must be the very file the
//! kernel resolves the original text to.
//!
//! Two oracles, neither of which is rootfence's code:
//! - the real kernel, through `std::fs::canonicalize` and `std::fs::metadata` on the
//!   original text (ambient, unrestricted resolution), and
//! - a small userspace walker written here that resolves the original text one name at a
//!   time the way `openat2(RESOLVE_BENEATH)` does (`..` above the root: escape; 40 links:
//!   loop), except that an absolute link whose target names a place inside the root (the
//!   root's path, then more names) continues from the root (issue 12), and any other
//!   absolute link is an escape. Wherever it says "inside", it is checked against the
//!   kernel.
//!
//! rootfence is stricter than "the final location is inside" in documented ways, which
//! the walker models explicitly: a resolution that leaves the root even for a moment
//! (absolute links elsewhere, `../root/x` excursions, an absolute target that climbs out
//! with `..` and back) is refused, a `..` after a name that is not a
//! real directory inside the root is refused (`dot_segment`: the lexical and kernel
//! meanings could differ), and a dangling link on the way to a missing path is refused.

use std::collections::VecDeque;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use rootfence::roots::{
    CheckOptions, FileKind, PageVerdict, RootSet, RootSpec, Stamp, SymlinkStance, Verdict,
};
use rootfence::uri::{FileUri, PageUri};

const NAMES: &[&str] = &["a", "b", "c", "d"];
const SECRET: &[u8] = b"SECRET";

#[derive(Debug, Clone)]
enum Entry {
    Dir,
    File,
    Link(String),
}

fn entry() -> impl Strategy<Value = Entry> {
    let rel = prop::collection::vec(
        prop::sample::select(vec!["a", "b", "c", "d", ".", "..", "o", "a", "b"]),
        1..5,
    )
    .prop_map(|v| v.join("/"));
    let target = prop_oneof![
        8 => rel.clone(),
        1 => rel.clone().prop_map(|r| format!("@ROOT/{r}")),
        1 => rel.prop_map(|r| format!("@TOP/{r}")),
    ];
    prop_oneof![
        3 => Just(Entry::Dir),
        3 => Just(Entry::File),
        4 => target.prop_map(Entry::Link),
    ]
}

fn tree() -> impl Strategy<Value = Vec<(Vec<String>, Entry)>> {
    let path = prop::collection::vec(prop::sample::select(NAMES.to_vec()), 1..4)
        .prop_map(|v| v.into_iter().map(String::from).collect::<Vec<_>>());
    prop::collection::vec((path, entry()), 0..14)
}

fn query() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        prop::sample::select(vec!["a", "b", "c", "d", ".", "..", "a", "b"]),
        0..7,
    )
    .prop_map(|v| v.into_iter().map(String::from).collect())
}

/// Creates the entries beneath `root`, never through a symbolic link (a parent that is not
/// a real directory skips the entry), so nothing is ever written outside.
fn build(top: &Path, root: &Path, entries: &[(Vec<String>, Entry)]) {
    'entries: for (path, e) in entries {
        let mut dir = root.to_path_buf();
        for name in &path[..path.len() - 1] {
            dir.push(name);
            match std::fs::symlink_metadata(&dir) {
                Ok(m) if m.file_type().is_dir() => {}
                Ok(_) => continue 'entries,
                Err(_) => std::fs::create_dir(&dir).unwrap(),
            }
        }
        let p = dir.join(path.last().unwrap());
        if std::fs::symlink_metadata(&p).is_ok() {
            continue;
        }
        match e {
            Entry::Dir => std::fs::create_dir(&p).unwrap(),
            Entry::File => std::fs::write(&p, b"inside").unwrap(),
            Entry::Link(t) => {
                let t = t
                    .replace("@ROOT", root.to_str().unwrap())
                    .replace("@TOP", top.to_str().unwrap());
                std::os::unix::fs::symlink(t, &p).unwrap();
            }
        }
    }
}

/// What resolving the original text beneath the root, the way the kernel does with
/// RESOLVE_BENEATH, gives.
#[derive(Debug, Clone, PartialEq)]
enum Walk {
    /// Resolved to `rel` (real names below the root), which exists.
    Found {
        rel: Vec<String>,
        is_dir: bool,
    },
    /// A name does not exist; `from_link`: that name came from a link's target (a dangling
    /// link); `rest_has_dotdot`: a `..` follows the missing name.
    Missing {
        from_link: bool,
        rest_has_dotdot: bool,
    },
    Escape,
    Loop,
    NotDir,
    LinkMet,
}

/// The userspace walker. `follow_last`: follow a final symbolic link. `follow_any`: follow
/// links at all (false gives `LinkMet` at the first one).
fn walk(root: &Path, comps: &[String], follow_last: bool, follow_any: bool) -> Walk {
    let mut stack: Vec<String> = Vec::new();
    let mut queue: VecDeque<String> = comps.iter().cloned().collect();
    let mut boundaries: Vec<usize> = Vec::new();
    let mut links = 0;
    while let Some(c) = queue.pop_front() {
        let last = queue.is_empty();
        match c.as_str() {
            "" | "." => continue,
            ".." => {
                if stack.pop().is_none() {
                    return Walk::Escape;
                }
                continue;
            }
            _ => {}
        }
        let p = root.join(stack.join("/")).join(&c);
        let m = match std::fs::symlink_metadata(&p) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Walk::Missing {
                    from_link: boundaries.iter().any(|&b| queue.len() >= b),
                    rest_has_dotdot: queue.iter().any(|c| c == ".."),
                };
            }
            Err(e) => panic!("walker: {p:?}: {e}"),
        };
        if m.file_type().is_symlink() && (!last || follow_last) {
            if !follow_any {
                return Walk::LinkMet;
            }
            links += 1;
            if links > 40 {
                return Walk::Loop;
            }
            let target = std::fs::read_link(&p).unwrap();
            let target = if target.is_absolute() {
                match target.strip_prefix(root) {
                    Ok(rest) => {
                        stack.clear();
                        rest.to_path_buf()
                    }
                    Err(_) => return Walk::Escape,
                }
            } else {
                target
            };
            boundaries.push(queue.len());
            for t in target.to_str().unwrap().split('/').rev() {
                queue.push_front(t.to_owned());
            }
            continue;
        }
        if m.file_type().is_dir() {
            stack.push(c);
            continue;
        }
        if !last {
            return Walk::NotDir;
        }
        stack.push(c);
        return Walk::Found {
            rel: stack,
            is_dir: false,
        };
    }
    Walk::Found {
        rel: stack,
        is_dir: true,
    }
}

/// rootfence's `..` rule, modelled on the text: every name a `..` steps out of must be a
/// real directory strictly inside the root.
fn dotdots_are_plain(root: &Path, comps: &[String], follow_any: bool) -> bool {
    let mut lexical: Vec<String> = Vec::new();
    for c in comps {
        match c.as_str() {
            "." => {}
            ".." => {
                if lexical.is_empty() {
                    return false;
                }
                if !matches!(
                    walk(root, &lexical, false, follow_any),
                    Walk::Found { is_dir: true, .. }
                ) {
                    return false;
                }
                lexical.pop();
            }
            _ => lexical.push(c.clone()),
        }
    }
    true
}

fn expected_allow(root: &Path, comps: &[String], follow_any: bool) -> bool {
    if !dotdots_are_plain(root, comps, follow_any) {
        return false;
    }
    match walk(root, comps, true, follow_any) {
        Walk::Found { .. } => true,
        Walk::Missing {
            from_link,
            rest_has_dotdot,
        } => !from_link && !rest_has_dotdot,
        Walk::Escape | Walk::Loop | Walk::NotDir | Walk::LinkMet => false,
    }
}

fn check_one(entries: &[(Vec<String>, Entry)], comps: &[String]) -> Result<(), TestCaseError> {
    let tmp = tempfile::tempdir().unwrap();
    let top = std::fs::canonicalize(tmp.path()).unwrap();
    let root = top.join("r");
    std::fs::create_dir(&root).unwrap();
    std::fs::create_dir_all(top.join("o/b")).unwrap();
    std::fs::write(top.join("o/a"), SECRET).unwrap();
    std::fs::write(top.join("o/b/a"), SECRET).unwrap();
    build(&top, &root, entries);

    let (set, errors) = RootSet::open([RootSpec::path(&root)]);
    prop_assert!(errors.is_empty());
    let raw_path: PathBuf = if comps.is_empty() {
        root.clone()
    } else {
        root.join(comps.join("/"))
    };
    let uri = format!("file://{}", raw_path.display());

    for follow_any in [true, false] {
        let opts = CheckOptions {
            symlinks: if follow_any {
                SymlinkStance::FollowWithinRoot
            } else {
                SymlinkStance::Never
            },
            ..CheckOptions::default()
        };
        let verdict = set.check_str(&uri, &opts);
        let expect = expected_allow(&root, comps, follow_any);
        prop_assert_eq!(
            verdict.is_allow(),
            expect,
            "uri {} (follow links: {}): verdict {:?}, walker {:?}",
            uri,
            follow_any,
            verdict,
            walk(&root, comps, true, follow_any)
        );

        // The walker agrees with the kernel wherever it says "inside".
        if let Walk::Found { rel, .. } = walk(&root, comps, true, follow_any) {
            let real = std::fs::canonicalize(&raw_path).expect("the kernel resolves it too");
            prop_assert_eq!(real, root.join(rel.join("/")));
        }

        // Whatever is allowed is the file the kernel resolves the original text to, and
        // it is inside the root.
        if let Verdict::Allow(a) = &verdict {
            match std::fs::canonicalize(&raw_path) {
                Ok(real) => {
                    prop_assert!(
                        real.starts_with(&root),
                        "allowed {} outside: {:?}",
                        uri,
                        real
                    );
                    let m = std::fs::metadata(&real).unwrap();
                    prop_assert_eq!(
                        a.file_id,
                        Some((m.dev(), m.ino())),
                        "not the same file: {}",
                        uri
                    );
                    if a.kind == FileKind::Regular {
                        let read = set.read(a, 1 << 10, &opts).unwrap();
                        prop_assert_ne!(read.bytes, SECRET.to_vec());
                    }
                }
                Err(_) => prop_assert_eq!(a.kind, FileKind::Missing, "{}", uri),
            }
        }
        // Soundness against the kernel alone: a path the kernel resolves outside the root
        // is never allowed.
        if let Ok(real) = std::fs::canonicalize(&raw_path)
            && !real.starts_with(&root)
        {
            prop_assert!(
                !verdict.is_allow(),
                "kernel resolves {} outside to {:?}",
                uri,
                real
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn allow_exactly_when_the_kernel_resolves_inside(entries in tree(), comps in query()) {
        check_one(&entries, &comps)?;
    }
}

/// A list page (issue 14) gets, entry by entry, the verdict a single check gives: the same
/// allow or deny, the same reason, and for an allow the same root and kind.
fn check_page_agrees(
    entries: &[(Vec<String>, Entry)],
    queries: &[Vec<String>],
) -> Result<(), TestCaseError> {
    let tmp = tempfile::tempdir().unwrap();
    let top = std::fs::canonicalize(tmp.path()).unwrap();
    let root = top.join("r");
    std::fs::create_dir(&root).unwrap();
    std::fs::create_dir_all(top.join("o/b")).unwrap();
    std::fs::write(top.join("o/a"), SECRET).unwrap();
    build(&top, &root, entries);
    // A hard link to an outside file, made "during the session" for half the stances.
    let _ = std::fs::hard_link(top.join("o/a"), root.join("h"));
    let (set, errors) = RootSet::open([RootSpec::path(&root)]);
    prop_assert!(errors.is_empty());
    let uris: Vec<FileUri> = queries
        .iter()
        .filter_map(|q| FileUri::parse(&format!("file://{}/{}", root.display(), q.join("/"))).ok())
        .chain(
            ["h", "a/h", "b", "c/d"]
                .iter()
                .map(|n| FileUri::parse(&format!("file://{}/{n}", root.display())).unwrap()),
        )
        .collect();
    // As `Checker::page` gives them (plain siblings by their text), and all parsed.
    let pages = [
        PageUri::page_of(&uris),
        uris.iter().map(PageUri::Parsed).collect(),
    ];
    let before = Stamp::from_parts(0, 0);
    let now = Stamp::now();
    for (symlinks, deny, since) in [
        (SymlinkStance::FollowWithinRoot, false, None),
        (SymlinkStance::FollowWithinRoot, false, Some(before)),
        (SymlinkStance::FollowWithinRoot, false, Some(now)),
        (SymlinkStance::FollowWithinRoot, true, None),
        (SymlinkStance::Never, false, Some(before)),
    ] {
        let opts = CheckOptions {
            symlinks,
            deny_hard_links: deny,
            new_links_since: since,
        };
        for page in &pages {
            let verdicts = set.check_page(page, &opts);
            prop_assert_eq!(verdicts.len(), page.len());
            for (uri, v) in uris.iter().zip(verdicts) {
                let single = set.check(uri, &opts);
                match (&v, &single) {
                    (PageVerdict::Checked(p), s) => prop_assert_eq!(&**p, s, "{}", uri),
                    (PageVerdict::Allow { root, kind, .. }, Verdict::Allow(a)) => {
                        prop_assert_eq!(*root, a.root, "{}", uri);
                        prop_assert_eq!(*kind, a.kind, "{}", uri);
                    }
                    (PageVerdict::Allow { .. }, Verdict::Deny(d)) => {
                        prop_assert!(false, "{} allowed on a page, denied alone: {:?}", uri, d)
                    }
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn list_page_verdicts_equal_single_checks(
        entries in tree(),
        queries in prop::collection::vec(query(), 1..12),
    ) {
        check_page_agrees(&entries, &queries)?;
    }
}

/// Hand-picked trees the random search could take a while to hit.
#[test]
fn property_on_fixed_trees() {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let link = |t: &str| Entry::Link(t.into());
    let trees = vec![
        vec![
            (s(&["a"]), Entry::Dir),
            (s(&["a", "b"]), link("..")),
            (s(&["c"]), Entry::File),
        ],
        vec![
            (s(&["a"]), link("b/c")),
            (s(&["b", "c"]), Entry::Dir),
            (s(&["d"]), Entry::File),
        ],
        vec![(s(&["a"]), link("../r/d")), (s(&["d"]), Entry::File)],
        vec![(s(&["a"]), link("@ROOT/d")), (s(&["d"]), Entry::File)],
        vec![(s(&["a"]), link("../o/a"))],
        vec![(s(&["a"]), link("b")), (s(&["b"]), link("a"))],
        vec![(s(&["a"]), link("c")), (s(&["b"]), Entry::Dir)],
        vec![(s(&["a"]), link(".")), (s(&["b"]), Entry::File)],
    ];
    let queries = [
        s(&["a", "..", "c"]),
        s(&["a", "b", "..", "c"]),
        s(&["a", "b", "c"]),
        s(&["a", "..", "d"]),
        s(&["a"]),
        s(&["a", "x"]),
        s(&["a", ".", "b"]),
        s(&["a", "a", "a", "b"]),
        s(&["b", "..", "a"]),
        s(&["..", "r", "a"]),
        s(&["d", "."]),
        s(&[]),
    ];
    for t in &trees {
        for q in &queries {
            check_one(t, q).unwrap_or_else(|e| panic!("tree {t:?} query {q:?}: {e}"));
        }
    }
}
