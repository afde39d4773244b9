//! Property tests (issue 3): random trees with symbolic links, random paths made of names,
//! `.`, `..` and links. The verdict must be allow exactly when the kernel's resolution of
//! the path stays inside the root, and whatever is allowed must be the very file the
//! kernel resolves the original text to.
//!
//! Two oracles, neither of which is rootfence's code:
//! - the real kernel, through `std::fs::canonicalize` and `std::fs::metadata` on the
//!   original text (ambient, unrestricted resolution), and
//! - a small userspace walker written here that resolves the original text one name at a
//!   time the way `openat2(RESOLVE_BENEATH)` does (absolute link or `..` above the root:
//!   escape; 40 links: loop). Wherever it says "inside", it is checked against the kernel.
//!
//! rootfence is stricter than "the final location is inside" in documented ways, which
//! the walker models explicitly: a resolution that leaves the root even for a moment
//! (absolute links, `../root/x` excursions) is refused, a `..` after a name that is not a
//! real directory inside the root is refused (`dot_segment`: the lexical and kernel
//! meanings could differ), and a dangling link on the way to a missing path is refused.

use std::collections::VecDeque;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use rootfence::roots::{CheckOptions, FileKind, RootSet, RootSpec, SymlinkStance, Verdict};

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
            if target.is_absolute() {
                return Walk::Escape;
            }
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
        if let Ok(real) = std::fs::canonicalize(&raw_path) {
            if !real.starts_with(&root) {
                prop_assert!(
                    !verdict.is_allow(),
                    "kernel resolves {} outside to {:?}",
                    uri,
                    real
                );
            }
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
