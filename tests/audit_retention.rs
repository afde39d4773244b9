//! Retention (issue 13, item 11): rotated files beyond `retain_files` / `retain_bytes` are
//! removed at rotation, and what remains still verifies with the real `rootfence audit
//! verify`, without `--partial`, because the writer's `log_pruned` record says where the
//! chain now starts; and tampering with what remains is still detected.

mod audit_support;

use std::path::{Path, PathBuf};

use audit_support::*;
use rootfence::audit::{AuditConfig, AuditLog, EndCause, SessionEnd, Verdict};

/// A log rotated many times under `cfg`, over `sessions` sessions of `n` records each.
fn rotated_log(dir: &Path, cfg: impl Fn(&Path) -> AuditConfig, sessions: u64, n: u64) -> PathBuf {
    let p = dir.join("audit.jsonl");
    for _ in 0..sessions {
        let log = AuditLog::open(cfg(&p), start()).expect("open");
        let a = log.handle();
        for i in 0..n {
            let v = if i % 7 == 3 {
                Verdict::Deny
            } else {
                Verdict::Allow
            };
            let pad = "p".repeat(200);
            a.record(decision(i, &format!("file:///data/{i}/{pad}"), v))
                .expect("record");
        }
        log.close(SessionEnd {
            cause: EndCause::HostClosed,
            ..SessionEnd::default()
        })
        .expect("close");
    }
    p
}

/// The log's files in chain order: rotated ones oldest first, then the active one.
fn chain_files(dir: &Path) -> Vec<PathBuf> {
    rootfence::audit::order_files(&family(dir, "audit.jsonl"))
}

fn paths(files: &[PathBuf]) -> Vec<&Path> {
    files.iter().map(PathBuf::as_path).collect()
}

fn small(files: Option<u64>, bytes: Option<u64>) -> impl Fn(&Path) -> AuditConfig {
    move |p| {
        let mut c = config(p);
        c.rotate_bytes = Some(8 * 1024);
        c.retain_files = files;
        c.retain_bytes = bytes;
        c
    }
}

#[test]
fn retention_by_files_keeps_a_verifiable_chain() {
    let d = tempfile::tempdir().unwrap();
    rotated_log(d.path(), small(Some(3), None), 4, 200);
    let files = chain_files(d.path());
    // Three rotated files and the active one.
    assert_eq!(files.len(), 4, "{files:?}");
    let (code, out) = verify(&paths(&files));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("removed by retention"), "{out}");
    // The shell glob a user types gives the same answer, in any order.
    let mut reversed = files.clone();
    reversed.reverse();
    assert_eq!(verify(&paths(&reversed)).0, 0);
}

#[test]
fn retention_by_bytes_bounds_the_disk() {
    let d = tempfile::tempdir().unwrap();
    let limit = 20 * 1024;
    rotated_log(d.path(), small(None, Some(limit)), 3, 300);
    let files = chain_files(d.path());
    let rotated: u64 = files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e != "jsonl"))
        .map(|f| std::fs::metadata(f).unwrap().len())
        .sum();
    assert!(
        rotated <= limit,
        "{rotated} bytes of rotated files kept: {files:?}"
    );
    let (code, out) = verify(&paths(&files));
    assert_eq!(code, 0, "{out}");
}

#[test]
fn retention_of_zero_files_still_verifies() {
    let d = tempfile::tempdir().unwrap();
    rotated_log(d.path(), small(Some(0), None), 2, 200);
    let files = chain_files(d.path());
    assert_eq!(files.len(), 1, "{files:?}");
    let (code, out) = verify(&paths(&files));
    assert_eq!(code, 0, "{out}");
}

/// Deleting more than retention did, or editing what remains, is still a break.
#[test]
fn tampering_with_retained_files_is_detected() {
    let d = tempfile::tempdir().unwrap();
    rotated_log(d.path(), small(Some(3), None), 4, 200);
    let files = chain_files(d.path());
    assert_eq!(verify(&paths(&files)).0, 0);

    // The oldest kept file removed as well: the chain now starts where no record says.
    let (code, out) = verify(&paths(&files[1..]));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("not the start of a chain"), "{out}");
    // ... unless the reviewer says so.
    let o = audit(&["verify", "--partial"], &paths(&files[1..]));
    assert_eq!(o.status.code(), Some(0), "{o:?}");

    // A record edited in a kept file.
    let victim = &files[1];
    let mut l = lines(victim);
    let i = l.len() / 2;
    let text = String::from_utf8(l[i].clone()).unwrap();
    let edited = text.replacen("\"decision\":\"deny\"", "\"decision\":\"allow\"", 1);
    let edited = if edited == text {
        text.replacen("file:///data/", "file:///dat4/", 1)
    } else {
        edited
    };
    assert_ne!(edited, text);
    l[i] = edited.into_bytes();
    write_lines(victim, &l);
    let (code, out) = verify(&paths(&files));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("altered"), "{out}");
}

/// The first kept record forged to look like the start of a chain is not enough: the chain
/// must link to what the log_pruned record named.
#[test]
fn a_log_pruned_record_only_accounts_for_the_start_it_names() {
    let d = tempfile::tempdir().unwrap();
    rotated_log(d.path(), small(Some(2), None), 3, 200);
    let files = chain_files(d.path());
    assert_eq!(verify(&paths(&files)).0, 0);
    // Drop the first record of the oldest kept file: the start moves by one.
    let oldest = &files[0];
    let l = lines(oldest);
    write_lines(oldest, &l[1..]);
    let (code, out) = verify(&paths(&files));
    assert_eq!(code, 1, "{out}");
}
