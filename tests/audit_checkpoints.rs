//! Signed checkpoints (issue 15), through the real binary: `rootfence audit keygen` makes the
//! key, `rootfence run` (default sandbox, the policy naming the key, a host that sends its
//! roots) writes checkpoints while it logs, and `rootfence audit verify --checkpoints
//! --pubkey` catches each attack a hash chain alone cannot: records cut from the end, a
//! rewritten tail, a chain re-hashed after an edit, and forged or reordered checkpoints.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Proxy, rootfence, tempdir, test_server};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

struct Setup {
    _t: tempfile::TempDir,
    project: PathBuf,
    log: PathBuf,
    checkpoints: PathBuf,
    key: PathBuf,
    pubkey: PathBuf,
    policy: PathBuf,
}

fn keygen(key: &Path) {
    let o = Command::new(rootfence())
        .args(["audit", "keygen"])
        .arg(key)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("checkpoint_key = "), "{out}");
}

/// A project, a key outside it (made by keygen), and a policy naming the key.
fn setup(extra_audit: &str) -> Setup {
    let t = tempdir();
    let project = t.path().join("project");
    std::fs::create_dir(&project).unwrap();
    for i in 0..4 {
        std::fs::write(project.join(format!("f{i}.txt")), "x").unwrap();
    }
    let keys = t.path().join("keys");
    std::fs::create_dir(&keys).unwrap();
    std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o700)).unwrap();
    let key = keys.join("checkpoint.key");
    keygen(&key);
    let state = t.path().join("state");
    let log = state.join("audit.jsonl");
    let policy = t.path().join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            "version = 1\n[audit]\npath = {:?}\ncheckpoint_key = {:?}\n\
             checkpoint_every_records = 5\n{extra_audit}",
            log.display().to_string(),
            key.display().to_string()
        ),
    )
    .unwrap();
    Setup {
        project: project.canonicalize().unwrap(),
        checkpoints: state.join("audit.checkpoints.jsonl"),
        pubkey: PathBuf::from(format!("{}.pub", key.display())),
        _t: t,
        log,
        key,
        policy,
    }
}

/// One session as a host runs it: roots sent, `reads` reads in and out of the project.
fn session(s: &Setup, reads: u64) {
    let server = test_server();
    let mut cmd = Command::new(rootfence());
    cmd.current_dir(&s.project)
        .arg("run")
        .arg("--policy")
        .arg(&s.policy)
        .arg("--")
        .arg(&server);
    let mut p = Proxy::spawn(cmd);
    p.send_json(
        &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true}},
        "clientInfo":{"name":"test-host","version":"0"}}}),
    );
    let ask = p.recv();
    assert_eq!(ask["method"], "roots/list", "{ask}; {}", p.stderr());
    let root = format!("file://{}", s.project.display());
    p.send_json(&json!({"jsonrpc":"2.0","id":ask["id"],"result":{"roots":[{"uri":root}]}}));
    assert_eq!(p.recv()["id"], 0);
    p.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    for i in 0..reads {
        let uri = if i % 3 == 2 {
            "file:///etc/passwd".to_owned()
        } else {
            format!("{root}/f{}.txt", i % 4)
        };
        let raw = json!({"contents":[{"uri":uri,"text":"x"}]}).to_string();
        p.send_json(
            &json!({"jsonrpc":"2.0","id":i + 1,"method":"resources/read",
            "params":{"uri":uri,"_rawResult":raw}}),
        );
        p.recv();
    }
    p.close_stdin();
    assert_eq!(p.exit_code(), 0, "{}", p.stderr());
    assert!(p.stderr().contains("audit checkpoints: "), "{}", p.stderr());
}

fn log_files(s: &Setup) -> Vec<PathBuf> {
    let dir = s.log.parent().unwrap();
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("audit.jsonl")
        })
        .collect();
    v.sort();
    v
}

/// `audit verify` with the checkpoints: exit code and output.
fn verify_ck(s: &Setup) -> (i32, String) {
    let o = Command::new(rootfence())
        .args(["audit", "verify", "--checkpoints"])
        .arg(&s.checkpoints)
        .arg("--pubkey")
        .arg(&s.pubkey)
        .args(log_files(s))
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr),
    )
}

/// `audit verify` without them (the hash chain alone).
fn verify_chain(s: &Setup) -> (i32, String) {
    let o = Command::new(rootfence())
        .args(["audit", "verify"])
        .args(log_files(s))
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn write_lines(p: &Path, ls: &[String]) {
    let mut t = ls.join("\n");
    t.push('\n');
    std::fs::write(p, t).unwrap();
}

fn sha_hex(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// Recomputes every `prev` from line `from` (0-based) on, as an attacker who edited the log
/// would: the hash chain is then intact again.
fn rehash(ls: &mut [String], from: usize) {
    for i in from.max(1)..ls.len() {
        let want = sha_hex(ls[i - 1].as_bytes());
        let at = ls[i].find("\"prev\":\"").unwrap() + 8;
        ls[i].replace_range(at..at + 64, &want);
    }
}

#[test]
fn a_valid_log_verifies_against_its_checkpoints() {
    let s = setup("");
    session(&s, 12);
    let ck = lines(&s.checkpoints);
    assert!(ck.len() >= 3, "every 5 records and at the end: {ck:?}");
    let last: Value = serde_json::from_str(ck.last().unwrap()).unwrap();
    let log = lines(&s.log);
    // The last checkpoint covers the session_end, the log's last record.
    assert_eq!(last["seq"], log.len() as u64);
    assert_eq!(last["head"], sha_hex(log.last().unwrap().as_bytes()));
    assert!(log.last().unwrap().contains("\"event\":\"session_end\""));
    let (code, out) = verify_ck(&s);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!(
            "checkpoints: {n} of {n} signed checkpoints match the log; covered up to seq {}",
            log.len(),
            n = ck.len()
        )),
        "{out}"
    );
    // The checkpoint file is not group/world readable either.
    let mode = std::fs::metadata(&s.checkpoints)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "{mode:o}");
}

#[test]
fn tail_truncation_is_detected() {
    let s = setup("");
    session(&s, 12);
    let mut log = lines(&s.log);
    let n = log.len();
    log.truncate(n - 3);
    write_lines(&s.log, &log);
    // The chain alone cannot tell (it only says the session did not end).
    let (code, out) = verify_chain(&s);
    assert_eq!(code, 3, "{out}");
    let (code, out) = verify_ck(&s);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "BROKEN: checkpoint: records seq {} to {n} were removed from the end of the log",
            n - 2
        )),
        "{out}"
    );
}

#[test]
fn tail_truncation_down_to_a_session_end_is_detected() {
    // Two sessions; the second one cut away whole, so the log ends cleanly with the first
    // session's session_end: the chain alone says "ok".
    let s = setup("");
    session(&s, 4);
    let first = lines(&s.log).len();
    session(&s, 4);
    let mut log = lines(&s.log);
    log.truncate(first);
    write_lines(&s.log, &log);
    assert_eq!(verify_chain(&s).0, 0);
    let (code, out) = verify_ck(&s);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("were removed from the end of the log"),
        "{out}"
    );
}

#[test]
fn rewritten_tail_is_detected() {
    let s = setup("");
    session(&s, 12);
    let mut log = lines(&s.log);
    let n = log.len();
    // Replace a denial near the end with an allow, and re-chain what follows.
    let i = (0..n)
        .rev()
        .find(|&i| log[i].contains("\"decision\":\"deny\""))
        .unwrap();
    log[i] = log[i].replacen("\"decision\":\"deny\"", "\"decision\":\"allow\"", 1);
    rehash(&mut log, i + 1);
    write_lines(&s.log, &log);
    assert_eq!(verify_chain(&s).0, 0, "the forgery fools the chain alone");
    let (code, out) = verify_ck(&s);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("BROKEN: checkpoint: "), "{out}");
    assert!(out.contains("were rewritten"), "{out}");
    assert!(out.contains("the hash chain is intact"), "{out}");
}

#[test]
fn rehashed_chain_is_detected() {
    let s = setup("");
    session(&s, 12);
    let mut log = lines(&s.log);
    // Edit an early record (the first denial) and recompute every hash after it.
    let i = log
        .iter()
        .position(|l| l.contains("\"decision\":\"deny\""))
        .unwrap();
    log[i] = log[i].replacen("file:///etc/passwd", "file:///etc/passwe", 1);
    rehash(&mut log, i + 1);
    write_lines(&s.log, &log);
    let (code, out) = verify_chain(&s);
    assert_eq!(code, 0, "the re-hashed chain passes alone: {out}");
    let (code, out) = verify_ck(&s);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("were rewritten"), "{out}");
    // The first checkpoint after the edit names it; the one before it bounds it.
    let seq = i as u64 + 1;
    let ck: Vec<Value> = lines(&s.checkpoints)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let first_after = ck
        .iter()
        .find(|c| c["seq"].as_u64().unwrap() >= seq)
        .unwrap();
    assert!(
        out.contains(&format!(
            "(seq {}) is not the record checkpoint n {} signed",
            first_after["seq"], first_after["n"]
        )),
        "{out}"
    );
}

#[test]
fn forged_checkpoint_is_detected() {
    let s = setup("");
    session(&s, 12);
    // An attacker who truncated the log "fixes" the last checkpoint to match: without the
    // key, the signature gives it away.
    let mut log = lines(&s.log);
    log.truncate(log.len() - 3);
    let (seq, head) = (log.len(), sha_hex(log.last().unwrap().as_bytes()));
    write_lines(&s.log, &log);
    let mut ck = lines(&s.checkpoints);
    let last = ck.len() - 1;
    let mut v: Value = serde_json::from_str(&ck[last]).unwrap();
    let forged = ck[last]
        .replacen(
            &format!("\"seq\":{}", v["seq"]),
            &format!("\"seq\":{seq}"),
            1,
        )
        .replacen(v["head"].as_str().unwrap(), &head, 1);
    v["seq"] = json!(seq);
    ck[last] = forged;
    write_lines(&s.checkpoints, &ck);
    let (code, out) = verify_ck(&s);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "line {}: the signature does not verify: this checkpoint was forged",
            last + 1
        )),
        "{out}"
    );
}

#[test]
fn reordered_checkpoints_are_detected() {
    let s = setup("");
    session(&s, 12);
    let mut ck = lines(&s.checkpoints);
    ck.swap(0, 1);
    write_lines(&s.checkpoints, &ck);
    let (code, out) = verify_ck(&s);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("checkpoints were removed"), "{out}");
}

#[test]
fn removed_final_checkpoint_leaves_the_session_end_uncovered() {
    let s = setup("");
    session(&s, 12);
    let mut ck = lines(&s.checkpoints);
    ck.pop();
    write_lines(&s.checkpoints, &ck);
    let (code, out) = verify_ck(&s);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("covered by no signed checkpoint"), "{out}");
}

#[test]
fn checkpoints_of_another_key_are_refused() {
    let s = setup("");
    session(&s, 4);
    let other = s.key.with_file_name("other.key");
    keygen(&other);
    let o = Command::new(rootfence())
        .args(["audit", "verify", "--checkpoints"])
        .arg(&s.checkpoints)
        .arg("--pubkey")
        .arg(format!("{}.pub", other.display()))
        .arg(&s.log)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("signed by another key"), "{out}");
}

#[test]
fn a_valid_log_across_rotation_retention_and_sessions_verifies() {
    let s = setup("rotate_bytes = 2048\nretain_files = 2\n");
    for _ in 0..3 {
        session(&s, 9);
    }
    let files = log_files(&s);
    assert!(files.len() >= 3, "rotated: {files:?}");
    let (code, out) = verify_ck(&s);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("signed checkpoints match the log"), "{out}");
    // Retention removed the oldest files: their checkpoints are named as not checkable.
    assert!(out.contains("not checked"), "{out}");
}

#[test]
fn key_inside_the_roots_or_readable_by_others_is_refused() {
    let s = setup("");
    // Inside the static root of the policy: the server could read it.
    let inside = s.project.join("checkpoint.key");
    std::fs::copy(&s.key, &inside).unwrap();
    std::fs::set_permissions(&inside, std::fs::Permissions::from_mode(0o600)).unwrap();
    let policy = s.policy.with_file_name("inside.toml");
    std::fs::write(
        &policy,
        format!(
            "version = 1\n[roots]\nstatic = [{:?}]\n[audit]\npath = {:?}\ncheckpoint_key = {:?}\n",
            s.project.display().to_string(),
            s.log.display().to_string(),
            inside.display().to_string()
        ),
    )
    .unwrap();
    let o = Command::new(rootfence())
        .current_dir(&s.project)
        .args(["run", "--policy"])
        .arg(&policy)
        .arg("--")
        .arg(test_server())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("audit.checkpoint_key") && err.contains("where the server can reach it"),
        "{err}"
    );
    // Group-readable.
    std::fs::set_permissions(&s.key, std::fs::Permissions::from_mode(0o640)).unwrap();
    let o = Command::new(rootfence())
        .current_dir(&s.project)
        .args(["run", "--policy"])
        .arg(&s.policy)
        .arg("--")
        .arg(test_server())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("chmod 600"), "{err}");
}

#[test]
fn checkpoints_by_time_while_a_session_idles() {
    // Far more records than a session writes per checkpoint, but 150 ms between checkpoints:
    // the writer signs the head while the session waits between requests.
    let s = setup("");
    let text = std::fs::read_to_string(&s.policy).unwrap().replace(
        "checkpoint_every_records = 5",
        "checkpoint_every_records = 100000",
    ) + "checkpoint_every_ms = 150\n";
    std::fs::write(&s.policy, text).unwrap();
    let server = test_server();
    let mut cmd = Command::new(rootfence());
    cmd.current_dir(&s.project)
        .args(["run", "--policy"])
        .arg(&s.policy)
        .arg("--")
        .arg(&server);
    let mut p = Proxy::spawn(cmd);
    p.initialize("2025-06-18");
    let checkpoints = || std::fs::read_to_string(&s.checkpoints).map_or(0, |t| t.lines().count());
    for i in 0..3 {
        let before = checkpoints();
        p.send_json(&json!({"jsonrpc":"2.0","id":i + 1,"method":"ping"}));
        p.recv();
        p.send_json(
            &json!({"jsonrpc":"2.0","id":100 + i,"method":"resources/read",
            "params":{"uri":"file:///etc/passwd"}}),
        );
        p.recv();
        // The session now idles: the new records get a checkpoint of their own by time alone.
        // (A fixed pause between rounds let two rounds share one checkpoint when the writer
        // was scheduled late.)
        common::eventually("a checkpoint by time", || checkpoints() > before);
    }
    p.close_stdin();
    assert_eq!(p.exit_code(), 0, "{}", p.stderr());
    let (code, out) = verify_ck(&s);
    assert_eq!(code, 0, "{out}");
}
