//! What a kill -9 can leave behind, exhaustively: a log cut at every byte offset (any prefix
//! of what was written) is never reported as broken, the incomplete line is named, and the
//! next writer sets the damaged file aside untouched and continues the chain so the whole
//! history verifies. Also the crash between setting a file aside and saying so.

mod audit_support;

use std::path::{Path, PathBuf};

use audit_support::*;
use rootfence::audit::{
    AuditLog, Incomplete, SessionEnd, VerifyOptions, order_files, verify_files_with,
};

fn verify_lib(files: &[PathBuf]) -> rootfence::audit::VerifyReport {
    verify_files_with(files, VerifyOptions::default(), None).unwrap()
}

#[test]
fn every_prefix_of_a_log_verifies_as_intact_or_incomplete() {
    let d = tempfile::tempdir().unwrap();
    let full = d.path().join("full.jsonl");
    write_session(config(&full), 6);
    let data = std::fs::read(&full).unwrap();
    let ends: Vec<usize> = data
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i + 1)
        .collect();
    let cut = d.path().join("cut.jsonl");
    for n in 0..=data.len() {
        std::fs::write(&cut, &data[..n]).unwrap();
        let r = verify_lib(std::slice::from_ref(&cut));
        assert!(r.broken.is_none(), "cut at {n}: {:?}", r.broken);
        let complete = ends.iter().filter(|&&e| e <= n).count() as u64;
        assert_eq!(r.records, complete, "cut at {n}");
        match (&r.incomplete, ends.contains(&n) || n == 0) {
            (None, true) => assert!(n == data.len() || n == 0, "cut at {n}"),
            (Some(Incomplete::NoSessionEnd { seq, .. }), true) => assert_eq!(*seq, complete),
            (Some(Incomplete::TornTail { line, len, .. }), false) => {
                assert_eq!(*line, complete + 1, "cut at {n}");
                assert_eq!(
                    *len as usize,
                    n - ends.iter().rfind(|&&e| e <= n).unwrap_or(&0)
                );
            }
            (other, _) => panic!("cut at {n}: {other:?}"),
        }
    }
}

#[test]
fn the_next_writer_sets_a_torn_file_aside_and_continues_the_chain() {
    let base = tempfile::tempdir().unwrap();
    let mut full = Vec::new();
    {
        let p = base.path().join("full.jsonl");
        write_session(config(&p), 6);
        full = std::fs::read(&p).unwrap_or(full);
    }
    // Every 7th offset, to keep the test quick; each is a fresh directory.
    for n in (1..full.len()).step_by(7) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("audit.jsonl");
        std::fs::write(&p, &full[..n]).unwrap();
        let torn = full[..n].last() != Some(&b'\n');
        let before = full[..n].to_vec();
        write_session(config(&p), 2);
        let files = order_files(&family(d.path(), "audit.jsonl"));
        if torn {
            // The damaged file is kept byte for byte as the first rotated file.
            assert_eq!(files.len(), 2, "cut at {n}");
            assert_eq!(std::fs::read(&files[0]).unwrap(), before, "cut at {n}");
            let first_new = &lines(&files[1])[0];
            let s = String::from_utf8_lossy(first_new);
            assert!(s.contains("\"event\":\"log_recovered\""), "cut at {n}: {s}");
            assert!(
                s.contains("\"file\":\"audit.jsonl.000001\""),
                "cut at {n}: {s}"
            );
        } else {
            assert_eq!(files.len(), 1, "cut at {n}");
        }
        let r = verify_lib(&files);
        assert!(r.broken.is_none(), "cut at {n}: {:?}", r.broken);
        assert!(r.incomplete.is_none(), "cut at {n}: {:?}", r.incomplete);
        if torn {
            assert!(
                r.notes.iter().any(|n| n.contains("incomplete write")),
                "{:?}",
                r.notes
            );
        }
    }
}

#[test]
fn crash_after_setting_aside_before_saying_so_is_recovered() {
    // The state a kill leaves between renaming a torn active file and writing the
    // log_recovered record: no active file, the newest rotated file torn.
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("audit.jsonl");
    let mut cfg = config(&p);
    cfg.rotate_bytes = Some(2048);
    write_session(cfg.clone(), 20);
    let files = order_files(&family(d.path(), "audit.jsonl"));
    let active = files.last().unwrap().clone();
    let n = files.len();
    let aside = d.path().join(format!("audit.jsonl.{n:06}"));
    let mut data = std::fs::read(&active).unwrap();
    data.truncate(data.len() - 30);
    std::fs::write(&aside, &data).unwrap();
    std::fs::remove_file(&active).unwrap();

    write_session(cfg, 1);
    let files = order_files(&family(d.path(), "audit.jsonl"));
    let r = verify_lib(&files);
    assert!(r.broken.is_none(), "{:?}", r.broken);
    assert!(r.incomplete.is_none(), "{:?}", r.incomplete);
    assert!(
        r.notes
            .iter()
            .any(|x| x.contains(&format!("audit.jsonl.{n:06}: line"))
                && x.contains("incomplete write")),
        "{:?}",
        r.notes
    );
    // Through the binary too.
    let paths: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    let (code, out) = verify(&paths);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("note: "), "{out}");
}

#[test]
fn a_torn_line_not_accounted_for_is_broken_when_records_follow() {
    // Someone cuts a rotated file short (or fakes a crash) in the middle of the chain: the
    // next file does not start with a matching log_recovered record.
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("audit.jsonl");
    let mut cfg = config(&p);
    cfg.rotate_bytes = Some(2048);
    write_session(cfg, 20);
    let files = order_files(&family(d.path(), "audit.jsonl"));
    let mid = &files[1];
    let mut data = std::fs::read(mid).unwrap();
    data.truncate(data.len() - 10);
    std::fs::write(mid, &data).unwrap();
    let paths: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    let (code, out) = verify(&paths);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("audit.jsonl.000002: line"), "{out}");
    assert!(out.contains("not a log_recovered record for it"), "{out}");
}

#[test]
fn a_log_not_ending_in_a_record_is_refused_untouched() {
    // Not a crash: a complete last line that is not ours. Continuing would chain from
    // garbage; the writer refuses and leaves the file alone.
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("audit.jsonl");
    std::fs::write(&p, b"hello\n").unwrap();
    let err = AuditLog::open(config(&p), start()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("cannot be continued"), "{msg}");
    assert!(msg.contains("audit.jsonl"), "{msg}");
    assert_eq!(std::fs::read(&p).unwrap(), b"hello\n");
    let _ = SessionEnd::default();
}
