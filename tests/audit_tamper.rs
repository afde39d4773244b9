//! Tampering with a real log, checked through the real `rootfence audit verify`: each edit
//! must be detected, with the right file, line and seq named, and a non-zero exit.
//!
//! The log: one session, `session_start` (line 1, seq 1), 20 decisions (lines 2-21),
//! `session_end` (line 22, seq 22). Line n holds seq n.

mod audit_support;

use std::path::Path;

use audit_support::*;
use rootfence::audit::{AuditConfig, AuditLog, SessionEnd, Verdict};

fn fresh(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("audit.jsonl");
    write_session(config(&p), 20);
    assert_eq!(lines(&p).len(), 22);
    p
}

/// Replaces the first occurrence of `from` in line `n` (1-based).
fn edit_line(p: &Path, n: usize, from: &str, to: &str) {
    let mut ls = lines(p);
    let s = String::from_utf8(ls[n - 1].clone()).unwrap();
    assert!(s.contains(from), "line {n} lacks {from}: {s}");
    ls[n - 1] = s.replacen(from, to, 1).into_bytes();
    write_lines(p, &ls);
}

#[test]
fn intact_log_verifies() {
    let d = tempfile::tempdir().unwrap();
    let p = fresh(d.path());
    let (code, out) = verify(&[&p]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("ok: chain intact: 22 records in 1 file, seq 1 to 22, 1 session"),
        "{out}"
    );
    assert!(out.contains("head: "), "{out}");
}

#[test]
fn edited_field_is_named() {
    let d = tempfile::tempdir().unwrap();
    let p = fresh(d.path());
    // Turn the denial in line 6 into an allow: the classic cover-up.
    edit_line(&p, 6, "\"decision\":\"deny\"", "\"decision\":\"allow\"");
    let (code, out) = verify(&[&p]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("audit.jsonl: line 6 (seq 6): this record was altered"),
        "{out}"
    );
    assert!(out.contains("5 records before it are intact"), "{out}");
}

#[test]
fn edited_uri_with_same_length_is_named() {
    let d = tempfile::tempdir().unwrap();
    let p = fresh(d.path());
    edit_line(&p, 12, "file:///data/f10.txt", "file:///data/f10.txu");
    let (code, out) = verify(&[&p]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("line 12 (seq 12): this record was altered"),
        "{out}"
    );
}

#[test]
fn deleted_record_is_named() {
    let d = tempfile::tempdir().unwrap();
    let p = fresh(d.path());
    let mut ls = lines(&p);
    ls.remove(9); // line 10, seq 10
    write_lines(&p, &ls);
    let (code, out) = verify(&[&p]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("line 10 (seq 11): record seq 10 is missing before this record"),
        "{out}"
    );
}

#[test]
fn deleted_first_record_is_named() {
    // Dropping session_start (the chain's genesis) must not pass as a partial chain.
    let d = tempfile::tempdir().unwrap();
    let p = fresh(d.path());
    let mut ls = lines(&p);
    ls.remove(0);
    write_lines(&p, &ls);
    let (code, out) = verify(&[&p]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("line 1 (seq 2): the first record is seq 2, not the start"),
        "{out}"
    );
}

#[test]
fn reordered_records_are_named() {
    let d = tempfile::tempdir().unwrap();
    let p = fresh(d.path());
    let mut ls = lines(&p);
    ls.swap(7, 8); // lines 8 and 9
    write_lines(&p, &ls);
    let (code, out) = verify(&[&p]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("line 8 (seq 9): records were reordered: seq 9 is here, after"),
        "{out}"
    );
    assert!(out.contains("seq 8 is at line 9"), "{out}");
}

#[test]
fn truncated_mid_line_is_reported_as_incomplete() {
    let d = tempfile::tempdir().unwrap();
    let p = fresh(d.path());
    let data = std::fs::read(&p).unwrap();
    let line15_start: usize = lines(&p)[..14].iter().map(|l| l.len() + 1).sum();
    std::fs::write(&p, &data[..line15_start + 40]).unwrap();
    let (code, out) = verify(&[&p]);
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains(&format!(
            "audit.jsonl: line 15 is incomplete (40 bytes at offset {line15_start})"
        )),
        "{out}"
    );
    assert!(out.contains("chain intact: 14 records"), "{out}");
}

#[test]
fn truncated_at_a_line_boundary_is_reported_as_incomplete() {
    let d = tempfile::tempdir().unwrap();
    let p = fresh(d.path());
    let mut ls = lines(&p);
    ls.truncate(15);
    write_lines(&p, &ls);
    let (code, out) = verify(&[&p]);
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("the log ends at line 15 (seq 15) with a decision record, not a session_end"),
        "{out}"
    );
}

#[test]
fn inserted_forged_record_is_named() {
    // A careful forger: the new record has the right seq and chains correctly from its
    // predecessor. The record after it no longer does.
    let d = tempfile::tempdir().unwrap();
    let p = fresh(d.path());
    let mut ls = lines(&p);
    let pred = &ls[6]; // line 7, seq 7
    let prev = sha256_hex(pred);
    let forged = String::from_utf8(ls[7].clone())
        .unwrap()
        .replace("file:///data/f6.txt", "file:///data/innocent");
    let forged = replace_prev(&forged, &prev);
    ls.insert(7, forged.into_bytes());
    write_lines(&p, &ls);
    let (code, out) = verify(&[&p]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("line 8 (seq 8): this record was inserted"),
        "{out}"
    );
}

#[test]
fn inserted_naive_record_is_named() {
    // A careless forger copies a record from elsewhere into the middle.
    let d = tempfile::tempdir().unwrap();
    let p = fresh(d.path());
    let mut ls = lines(&p);
    let copy = ls[15].clone(); // line 16, seq 16
    ls.insert(10, copy); // becomes line 11
    write_lines(&p, &ls);
    let (code, out) = verify(&[&p]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("line 11 (seq 16): this record was inserted"),
        "{out}"
    );
}

#[test]
fn edited_seq_and_prev_with_a_valid_chain_after_it_is_named() {
    // Change a record's seq; the hash chain then breaks at the next record.
    let d = tempfile::tempdir().unwrap();
    let p = fresh(d.path());
    edit_line(&p, 6, "\"seq\":6,", "\"seq\":60,");
    let (code, out) = verify(&[&p]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("line 6 (seq 60)"), "{out}");
}

#[test]
fn garbage_and_bad_json_are_named() {
    let d = tempfile::tempdir().unwrap();
    let p = fresh(d.path());
    let mut ls = lines(&p);
    ls[3] = b"\x00\xffnot a record".to_vec();
    write_lines(&p, &ls);
    let (code, out) = verify(&[&p]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("line 4: not an audit record"), "{out}");

    // An envelope that parses but a body that is not JSON.
    let p = fresh(&d.path().join("b"));
    let mut ls = lines(&p);
    let last = ls.len() - 1;
    ls[last].pop();
    ls[last].extend_from_slice(b",}");
    write_lines(&p, &ls);
    let (code, out) = verify(&[&p]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("line 22 (seq 22): not valid JSON"), "{out}");
}

#[test]
fn rotated_files_verify_together_in_any_argument_order() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("audit.jsonl");
    let mut cfg = config(&p);
    cfg.rotate_bytes = Some(4096);
    write_session(cfg.clone(), 100);
    write_session(cfg, 50); // a second session continues the chain
    let files = family(d.path(), "audit.jsonl");
    assert!(files.len() >= 5, "{files:?}");
    // Give them newest first: verify orders them itself.
    let mut rev: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    rev.reverse();
    let (code, out) = verify(&rev);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("154 records in"), "{out}");
    assert!(out.contains("2 sessions"), "{out}");
    // Every file but the last is at most the rotation size.
    for f in &files[..files.len() - 1] {
        assert!(std::fs::metadata(f).unwrap().len() <= 4096);
    }

    // The active file alone does not start a chain: refused, unless --partial.
    let active = files.iter().find(|f| f.ends_with("audit.jsonl")).unwrap();
    let (code, out) = verify(&[active]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("earlier rotated files were not given"),
        "{out}"
    );
    let o = audit(&["verify", "--partial"], &[active]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("the chain starts at seq"));

    // A rotated file missing from the middle is named at the first record after the gap.
    let without: Vec<&Path> = files
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 2)
        .map(|(_, p)| p.as_path())
        .collect();
    let (code, out) = verify(&without);
    assert_eq!(code, 1, "{out}");
    let after = files[3].file_name().unwrap().to_str().unwrap();
    assert!(out.contains(&format!("{after}: line 1 (seq")), "{out}");
    assert!(out.contains("are missing before this record"), "{out}");
}

#[test]
fn a_deleted_active_file_shows_only_as_an_unended_session() {
    // The limit of any unkeyed hash chain, pinned so it is not forgotten: removing the
    // newest records (here: deleting the active file) cannot be told from a log that ended
    // there. The next writer continues from the newest rotated file, and what is left to
    // see is a session without its session_end. `verify` prints the head hash so it can be
    // kept elsewhere; see docs/audit-schema.md, "What the chain proves".
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("audit.jsonl");
    let mut cfg = config(&p);
    cfg.rotate_bytes = Some(4096);
    let first = write_session(cfg.clone(), 40);
    std::fs::remove_file(&p).unwrap();
    write_session(cfg, 1);
    let files = family(d.path(), "audit.jsonl");
    let files: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    let (code, out) = verify(&files);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!(
            "1 session without session_end (still running or killed): {first}"
        )),
        "{out}"
    );
}

#[test]
fn a_replaced_log_is_a_new_chain_and_says_so() {
    // A whole log replaced by a fresh one: given the old files too, verify names where the
    // new chain begins.
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    write_session(config(&a.join("audit.jsonl")), 5);
    write_session(config(&b.join("audit.jsonl")), 5);
    let (code, out) = verify(&[&a.join("audit.jsonl"), &b.join("audit.jsonl")]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("b/audit.jsonl: line 1 (seq 1): a new chain starts here"),
        "{out}"
    );
}

#[test]
fn empty_and_missing_files() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("empty.jsonl");
    std::fs::write(&p, b"").unwrap();
    let (code, out) = verify(&[&p]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("0 records"), "{out}");
    let (code, out) = verify(&[&d.path().join("nope.jsonl")]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("nope.jsonl"), "{out}");
    let _ = AuditConfig::new(&p);
}

fn sha256_hex(b: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

fn replace_prev(line: &str, prev: &str) -> String {
    let i = line.find("\"prev\":\"").unwrap() + 8;
    format!("{}{}{}", &line[..i], prev, &line[i + 64..])
}

#[test]
fn records_removed_while_rootfence_writes_are_recorded_and_reported() {
    // Truncating the log at a line boundary behind a running rootfence's back: the writer
    // notices the chain head went backwards, says so in a log_rewound record, and verify
    // names it, even though the remaining chain is intact.
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("audit.jsonl");
    let log = AuditLog::open(config(&p), start()).unwrap();
    let a = log.handle();
    for i in 0..10 {
        a.record_blocking(decision(i, "file:///etc/shadow", Verdict::Deny))
            .unwrap();
    }
    let mut ls = lines(&p);
    ls.truncate(5);
    write_lines(&p, &ls);
    a.record_blocking(decision(10, "file:///data/x", Verdict::Allow))
        .unwrap();
    log.close(SessionEnd::default()).unwrap();
    let (code, out) = verify(&[&p]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("line 6 (seq 6): records seq 6 to 11 were removed from the end of the log"),
        "{out}"
    );
    let o = audit(&["show"], &[&p]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("log_rewound the log lost records"),
        "{o:?}"
    );
}
