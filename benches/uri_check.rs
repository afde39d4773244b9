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
//!
//! Run: `cargo bench --bench uri_check -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use rootfence::roots::{CheckOptions, RootSet, RootSpec};
use rootfence::uri::FileUri;

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

criterion_group!(benches, bench);
criterion_main!(benches);
