//! Criterion benchmark for the root check (issue 3). Target: at most 10 µs per check.
//!
//! - `check/existing_8_deep`: `RootSet::check` of a parsed URI naming an existing file 8
//!   directories below the root (one `openat2` + `fstat`).
//! - `check_str/existing_8_deep`: the same from untrusted text (parse + canonicalize +
//!   check), the relay's path.
//! - `check_str/denied_encoded_traversal`: `…/%2e%2e/%2e%2e/outside/secret` (refused by the
//!   parser, no system call).
//! - `check_str/denied_dotdot_outside`: `…/d1/../../outside/secret` (canonicalized lexically,
//!   refused as outside the roots).
//! - `check_str/denied_symlink_escape`: `…/d1/…/d8/escape/secret` where `escape` links
//!   out of the root (refused by the kernel beneath the root).
//! - `parse/existing_8_deep`: the parser alone.
//! - `page/…` (issue 14): a `resources/list` page of 10,000 `file:` entries in one
//!   directory, as the list filter checks it: `check_each` (one `RootSet::check` per
//!   entry, the old way), `check_page` (`RootSet::check_page`: the directory resolved once
//!   and read once; entries after the first given as plain names, as `Checker::page` gives
//!   them), `check_page_parsed` (the same, every entry parsed), `page_default_policy`
//!   (`Checker::page` on the raw texts: strict parse, the page check and the default
//!   policy's path rules on each entry: the whole check the text path of the list filter
//!   runs, audit aside), `uris_default_policy` (`Checker::uris`: the same, expanded to a
//!   `Verdict` per entry, as the value path takes it), and `check_page_fresh_dir` (the
//!   page check while the directory changed after the session started, so each entry's
//!   link count is read).
//!
//! Run: `cargo bench --bench uri_check -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use rootfence::enforce::Checker;
use rootfence::policy::Policy;
use rootfence::roots::{CheckOptions, PageVerdict, RootSet, RootSpec, Stamp};
use rootfence::uri::{FileUri, PageUri};

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let top = std::fs::canonicalize(tmp.path()).unwrap();
    let root = top.join("root");
    let deep = root.join("d1/d2/d3/d4/d5/d6/d7/d8");
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::create_dir_all(top.join("outside")).unwrap();
    std::fs::write(deep.join("file.txt"), b"x").unwrap();
    std::fs::write(top.join("outside/secret"), b"s").unwrap();
    std::os::unix::fs::symlink(top.join("outside"), deep.join("escape")).unwrap();

    let (set, errors) = RootSet::open([RootSpec::path(&root)]);
    assert!(errors.is_empty());
    let opts = CheckOptions::default();
    let r = root.display();
    let existing = format!("file://{r}/d1/d2/d3/d4/d5/d6/d7/d8/file.txt");
    let encoded = format!("file://{r}/%2e%2e/%2e%2e/outside/secret");
    let dotdot = format!("file://{r}/d1/../../outside/secret");
    let escape = format!("file://{r}/d1/d2/d3/d4/d5/d6/d7/d8/escape/secret");
    let parsed = FileUri::parse(&existing).unwrap();

    assert!(set.check(&parsed, &opts).is_allow());
    for denied in [&encoded, &dotdot, &escape] {
        assert!(!set.check_str(denied, &opts).is_allow(), "{denied}");
    }

    c.bench_function("check/existing_8_deep", |b| {
        b.iter(|| set.check(black_box(&parsed), &opts))
    });
    c.bench_function("check_str/existing_8_deep", |b| {
        b.iter(|| set.check_str(black_box(&existing), &opts))
    });
    c.bench_function("check_str/denied_encoded_traversal", |b| {
        b.iter(|| set.check_str(black_box(&encoded), &opts))
    });
    c.bench_function("check_str/denied_dotdot_outside", |b| {
        b.iter(|| set.check_str(black_box(&dotdot), &opts))
    });
    c.bench_function("check_str/denied_symlink_escape", |b| {
        b.iter(|| set.check_str(black_box(&escape), &opts))
    });
    c.bench_function("parse/existing_8_deep", |b| {
        b.iter(|| FileUri::parse(black_box(&existing)))
    });
}

/// A page of 10,000 entries of one directory.
fn page(c: &mut Criterion) {
    const N: usize = 10_000;
    let tmp = tempfile::tempdir().unwrap();
    let top = std::fs::canonicalize(tmp.path()).unwrap();
    let root = top.join("root");
    let dir = root.join("src/module");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..N {
        std::fs::write(dir.join(format!("f{i}.txt")), b"x").unwrap();
    }
    let raws: Vec<String> = (0..N)
        .map(|i| format!("file://{}/f{i}.txt", dir.display()))
        .collect();
    let uris: Vec<FileUri> = raws.iter().map(|r| FileUri::parse(r).unwrap()).collect();
    let page = PageUri::page_of(&uris);
    let parsed: Vec<PageUri<'_>> = uris.iter().map(PageUri::Parsed).collect();
    let (set, errors) = RootSet::open([RootSpec::path(&root)]);
    assert!(errors.is_empty());
    // The directory predates the session (an earlier second).
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let policy = Policy::builtin_default();
    let opts = Checker::options_for(&policy, Stamp::now());
    let checker = Checker::new(&policy);
    assert!(
        set.check_page(&page, &opts)
            .iter()
            .all(|v| matches!(v, PageVerdict::Allow { .. }))
    );
    assert!(
        checker
            .uris(&policy, raws.iter().map(String::as_str), Some(&set))
            .iter()
            .all(|c| c.allow)
    );

    let raw_refs: Vec<&str> = raws.iter().map(String::as_str).collect();
    let mut g = c.benchmark_group("page_10000_entries_one_dir");
    g.sample_size(20);
    g.bench_function("check_each", |b| {
        b.iter(|| {
            uris.iter()
                .filter(|u| set.check(u, &opts).is_allow())
                .count()
        })
    });
    g.bench_function("check_page", |b| {
        b.iter(|| set.check_page(black_box(&page), &opts))
    });
    g.bench_function("check_page_parsed", |b| {
        b.iter(|| set.check_page(black_box(&parsed), &opts))
    });
    g.bench_function("page_default_policy", |b| {
        b.iter(|| checker.page(&policy, &raw_refs, Some(&set)))
    });
    g.bench_function("uris_default_policy", |b| {
        b.iter(|| checker.uris(&policy, raws.iter().map(String::as_str), Some(&set)))
    });
    // The directory changed during the session: each entry's link count is looked at.
    let fresh = Checker::options_for(&policy, Stamp::from_parts(0, 0));
    let fresh = CheckOptions {
        new_links_since: Some(Stamp::now()),
        ..fresh
    };
    std::thread::sleep(std::time::Duration::from_millis(1100));
    std::fs::write(dir.join("touched"), b"").unwrap();
    g.bench_function("check_page_fresh_dir", |b| {
        b.iter(|| set.check_page(black_box(&page), &fresh))
    });
    g.finish();
}

criterion_group!(benches, bench, page);
criterion_main!(benches);
