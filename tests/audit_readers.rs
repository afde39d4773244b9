//! The readers' filters and formats through the real binary (issue 29): `audit show` with
//! `--since/--until` (RFC 3339, relative, words), `--session`, `--request`, `--tool`,
//! `--method`, `--reason`, `--uri`, `--denied`, `--follow` across a rotation, and
//! `--format text|json|ocsf|cef|csv`; `audit summary` across sessions with the same
//! filters. The log has two sessions that both use JSON-RPC id 5.

mod audit_support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use audit_support::*;

fn out(args: &[&str], log: &Path) -> String {
    let o = audit(args, &[log]);
    assert!(
        o.status.success(),
        "rootfence audit {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("utf-8")
}

/// `show --format json` with `args`: the seq of each record listed.
fn seqs(args: &[&str], log: &Path) -> Vec<u64> {
    let mut a = vec!["show", "--format", "json"];
    a.extend_from_slice(args);
    out(&a, log)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("json line");
            v["seq"].as_u64().expect("seq")
        })
        .collect()
}

/// The stored records, parsed.
fn records(log: &Path) -> Vec<serde_json::Value> {
    lines(log)
        .iter()
        .map(|l| serde_json::from_slice(l).expect("record"))
        .collect()
}

/// The seqs of the records for which `f` holds.
fn where_(log: &Path, f: impl Fn(&serde_json::Value) -> bool) -> Vec<u64> {
    records(log)
        .iter()
        .filter(|r| f(r))
        .map(|r| r["seq"].as_u64().unwrap())
        .collect()
}

#[test]
fn every_filter_selects_exactly_the_matching_records() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let (a, b) = incident_log(&log, Duration::from_millis(30));
    let recs = records(&log);
    let s = |r: &serde_json::Value, k: &str| r[k].as_str().unwrap_or("").to_owned();

    // --session: a prefix of one.
    assert_eq!(
        seqs(&["--session", &b[..8]], &log),
        where_(&log, |r| s(r, "session") == b)
    );
    // --since/--until with RFC 3339 instants: session B's first record splits the log.
    let b_first = recs.iter().find(|r| s(r, "session") == b).unwrap();
    let split = s(b_first, "ts");
    assert_eq!(
        seqs(&["--until", &split], &log),
        where_(&log, |r| s(r, "session") == a)
    );
    assert_eq!(
        seqs(&["--since", &split], &log),
        where_(&log, |r| s(r, "session") == b)
    );
    // Relative times and words.
    let all = where_(&log, |_| true);
    assert_eq!(seqs(&["--since", "1h"], &log), all);
    assert_eq!(
        seqs(&["--since", "yesterday", "--until", "tomorrow"], &log),
        all
    );
    assert_eq!(seqs(&["--since", "today"], &log), all);
    assert!(seqs(&["--until", "1h"], &log).is_empty());
    assert!(seqs(&["--until", "yesterday"], &log).is_empty());
    // --request: id 5 is in both sessions; with a session prefix, the one request, host's
    // call and the server's result, in order.
    assert_eq!(
        seqs(&["--request", "5"], &log),
        where_(&log, |r| r["id"] == 5)
    );
    let one = seqs(&["--request", &format!("{}:5", &a[..8])], &log);
    assert_eq!(one, where_(&log, |r| r["id"] == 5 && s(r, "session") == a));
    assert_eq!(one.len(), 2, "the call and its result");
    // --request "5" (a string id) is not the number 5.
    assert!(seqs(&["--request", "\"5\""], &log).is_empty());
    // --tool (glob), --method (glob), --reason, --uri (glob), --denied.
    assert_eq!(
        seqs(&["--tool", "read_*"], &log),
        where_(&log, |r| s(r, "tool").starts_with("read_"))
    );
    assert_eq!(
        seqs(&["--tool", "write_file"], &log),
        where_(&log, |r| s(r, "tool") == "write_file")
    );
    assert_eq!(
        seqs(&["--method", "tools/*"], &log),
        where_(&log, |r| s(r, "method").starts_with("tools/"))
    );
    assert_eq!(
        seqs(&["--method", "prompts/get"], &log),
        where_(&log, |r| s(r, "method") == "prompts/get")
    );
    assert_eq!(
        seqs(&["--reason", "outside_roots"], &log),
        where_(&log, |r| s(r, "reason") == "outside_roots")
    );
    let env = seqs(&["--uri", "*/.env"], &log);
    assert_eq!(env, where_(&log, |r| s(r, "uri").ends_with("/.env")));
    assert_eq!(env.len(), 2);
    let denied = where_(&log, |r| s(r, "decision") == "deny");
    assert_eq!(seqs(&["--denied"], &log), denied);
    assert_eq!(denied.len(), INCIDENT_DENIED.len() + 1);
    // Filters combine.
    assert_eq!(
        seqs(
            &["--denied", "--tool", "read_text_file", "--session", &b],
            &log
        ),
        where_(&log, |r| s(r, "decision") == "deny"
            && s(r, "tool") == "read_text_file"
            && s(r, "session") == b)
    );
    // Text names the tool.
    let text = out(&["show", "--tool", "edit_file"], &log);
    assert!(
        text.contains("DENY  host->server tools/call tool=edit_file id=7"),
        "{text}"
    );
}

#[test]
fn bad_filter_arguments_are_refused_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    write_session(config(&log), 3);
    for (args, hint) in [
        (&["show", "--until", "someday"][..], "yesterday"),
        (&["show", "--uri", "file:///a["][..], "invalid pattern"),
        (&["show", "--request", "abcd:"][..], "JSON-RPC id"),
        (&["summary", "--since", "2026-13-01"][..], "RFC 3339"),
    ] {
        let o = audit(args, &[&log]);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(hint), "{args:?}: {e}");
    }
}

#[test]
fn formats_cef_and_csv_are_one_line_per_record_and_escape_hostile_text() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    incident_log(&log, Duration::ZERO);
    // A hostile record: a tool name that is a spreadsheet formula, a URI with CEF and CSV
    // metacharacters and a newline.
    {
        let l = rootfence::audit::AuditLog::open(config(&log), start()).unwrap();
        l.handle()
            .record(call(
                rootfence::audit::Direction::HostToServer,
                "tools/call",
                "1",
                Some("=HYPERLINK(\"http://x\")"),
                "params.arguments.path",
                "file:///w/a|b=c,d\"e\nCEF:0|forged",
                rootfence::audit::Verdict::Deny,
                "outside_roots",
                None,
            ))
            .unwrap();
        l.close(rootfence::audit::SessionEnd::default()).unwrap();
    }
    let n = records(&log).len();

    let cef = out(&["show", "--format", "cef"], &log);
    let cef: Vec<&str> = cef.lines().collect();
    assert_eq!(cef.len(), n);
    for l in &cef {
        assert!(l.starts_with("CEF:0|rootfence|rootfence|"), "{l}");
    }
    let hostile = cef.iter().find(|l| l.contains("HYPERLINK")).unwrap();
    assert!(
        hostile.contains("|tools/call denied outside_roots|5|"),
        "{hostile}"
    );
    assert!(hostile.contains(r"act=deny "), "{hostile}");
    // `=` in a value escaped, the newline display-escaped: no forged key or record.
    assert!(
        hostile.contains(r#"request=file:///w/a|b\=c,d"e\\u{000a}CEF:0|forged filePath="#),
        "{hostile}"
    );
    assert!(hostile.contains(r"\\u{000a}CEF:0|forged"), "{hostile}");
    assert!(
        hostile.contains(r"cs3Label=tool cs3=\=HYPERLINK"),
        "{hostile}"
    );

    let csv = out(&["show", "--format", "csv"], &log);
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), n + 1, "a header and a row per record");
    assert!(rows[0].starts_with("ts,seq,session,event,direction,method,id,tool,"));
    let hostile = rows.iter().find(|l| l.contains("HYPERLINK")).unwrap();
    // The formula is defused and quoted (it holds a quote), the URI quoted.
    assert!(
        hostile.contains(r#","'=HYPERLINK(""http://x"")","#),
        "{hostile}"
    );
    assert!(
        hostile.contains(r#","file:///w/a|b=c,d""e\u{000a}CEF:0|forged","#),
        "{hostile}"
    );

    // OCSF: one JSON object per record.
    let ocsf = out(&["show", "--format", "ocsf", "--denied"], &log);
    for l in ocsf.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert_eq!(v["class_uid"], 6003);
    }
}

#[test]
fn summary_spans_sessions_and_files_and_takes_the_filters() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let (a, b) = incident_log(&log, Duration::ZERO);
    let text = out(&["summary"], &log);
    assert!(text.contains(&format!("session {a}")), "{text}");
    assert!(text.contains(&format!("session {b}")), "{text}");
    let all = &text[text.find("all 2 sessions").expect("an all-sessions block")..];
    assert!(all.contains("decisions: 5 allow, 5 deny"), "{all}");
    assert!(all.contains("by tool (tools/call):"), "{all}");
    assert!(
        all.contains("    read_text_file                          2 allow        2 deny"),
        "{all}"
    );
    assert!(all.contains("       2  file:///w/app/.env"), "{all}");
    assert!(
        all.contains(r#"       2  /etc/rootfence/policy.toml: deny[0] "**/.env""#),
        "{all}"
    );

    let j: serde_json::Value =
        serde_json::from_str(&out(&["summary", "--json", "--top", "1"], &log)).unwrap();
    assert_eq!(j["all"]["top_denied_uris"][0][0], "file:///w/app/.env");
    assert_eq!(j["all"]["top_tools"][0][0], "read_text_file");
    assert_eq!(j["all"]["top_tools"][0][1], 4);
    assert_eq!(j["all"]["top_denied_tools"][0][0], "read_text_file");
    assert_eq!(j["sessions"].as_array().unwrap().len(), 2);

    // With filters: only B's denials.
    let j: serde_json::Value = serde_json::from_str(&out(
        &["summary", "--json", "--denied", "--session", &b[..6]],
        &log,
    ))
    .unwrap();
    assert_eq!(j["sessions"].as_array().unwrap().len(), 1);
    // How the session ended is said although --denied filtered its session_end out.
    assert_eq!(j["sessions"][0]["end"], "host_closed (exit 0)");
    assert_eq!(j["sessions"][0]["command"][0], "test-server");
    assert_eq!(j["all"]["decisions"]["deny"], 3);
    assert!(j["all"]["decisions"].get("allow").is_none());

    // Across rotated files: the same log split in two files sums the same.
    let dir2 = tempfile::tempdir().unwrap();
    let log2 = dir2.path().join("audit.jsonl");
    let mut cfg = config(&log2);
    cfg.rotate_bytes = Some(1500);
    incident_log_with(cfg);
    let files = family(dir2.path(), "audit.jsonl");
    assert!(files.len() > 2, "rotated: {files:?}");
    let mut args = vec!["summary".to_owned(), "--json".to_owned()];
    args.extend(files.iter().map(|p| p.display().to_string()));
    let o = rootfence().arg("audit").args(&args).output().unwrap();
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["all"]["decisions"]["deny"], 5, "{j}");
}

/// [`incident_log`] with its own writer config (rotation).
fn incident_log_with(cfg: rootfence::audit::AuditConfig) {
    // The helper opens the log with `config(path)`; write the two sessions here with the
    // given config by replaying the records it wrote into a scratch log.
    let scratch = tempfile::tempdir().unwrap();
    let p = scratch.path().join("a.jsonl");
    incident_log(&p, Duration::ZERO);
    let mut sessions: Vec<(String, Vec<rootfence::audit::Event>)> = Vec::new();
    for r in records(&p) {
        let sid = r["session"].as_str().unwrap().to_owned();
        let ev = r["event"].as_str().unwrap();
        if ev == "session_start" {
            sessions.push((sid, Vec::new()));
            continue;
        }
        if ev == "decision" {
            let d: rootfence::audit::Decision = serde_json::from_value(r.clone()).unwrap();
            sessions
                .last_mut()
                .unwrap()
                .1
                .push(rootfence::audit::Event::Decision(d));
        }
    }
    for (_, evs) in sessions {
        let log = rootfence::audit::AuditLog::open(cfg.clone(), start()).unwrap();
        for e in evs {
            log.handle().record(e).unwrap();
        }
        log.close(rootfence::audit::SessionEnd::default()).unwrap();
    }
}

#[test]
fn follow_prints_new_records_as_they_come_across_a_rotation() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    write_session(config(&log), 3);
    let before = records(&log).len();
    let mut child = rootfence()
        .args(["audit", "show", "--follow", "--format", "json"])
        .arg(&log)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines() {
            let Ok(l) = l else { break };
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let mut got: Vec<u64> = Vec::new();
    let take = |want: usize, got: &mut Vec<u64>| {
        let deadline = Instant::now() + Duration::from_secs(20);
        while got.len() < want {
            let left = deadline.saturating_duration_since(Instant::now());
            let l = rx
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("only {} of {want} records followed", got.len()));
            let v: serde_json::Value = serde_json::from_str(&l).unwrap();
            got.push(v["seq"].as_u64().unwrap());
        }
    };
    take(before, &mut got);
    // A second session whose writer rotates the file several times while it is followed.
    let mut cfg = config(&log);
    cfg.rotate_bytes = Some(2000);
    write_session(cfg, 40);
    let files = family(dir.path(), "audit.jsonl");
    assert!(files.len() >= 3, "the writer rotated: {files:?}");
    let total: usize = files.iter().map(|f| lines(f).len()).sum();
    take(total, &mut got);
    let _ = child.kill();
    let _ = child.wait();
    let want: Vec<u64> = (1..=total as u64).collect();
    assert_eq!(got, want, "every record once, in order");
}

/// A real session: a `tools/call` whose path argument is judged leaves a decision that
/// names its tool, which `--tool` and `summary` then find.
#[test]
fn a_real_tool_call_decision_names_its_tool() {
    #[path = "common/mod.rs"]
    mod common;
    let t = tempfile::tempdir().unwrap();
    let ws = t.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("notes.txt"), "hello").unwrap();
    let ws = ws.canonicalize().unwrap();
    let log = t.path().join("audit.jsonl");
    let policy = t.path().join("policy.toml");
    std::fs::write(
        &policy,
        "version = 1\n[[tools.paths]]\ntool = \"read_path\"\npointers = [\"/path\"]\n",
    )
    .unwrap();
    let mut cmd = std::process::Command::new(common::rootfence());
    cmd.arg("run")
        .arg("--policy")
        .arg(&policy)
        .arg("--audit-log")
        .arg(&log)
        .arg("--")
        .arg(common::test_server());
    let mut p = common::Proxy::spawn(cmd);
    p.initialize_with_roots("test-host", &format!("file://{}", ws.display()));
    for (id, path) in [(1, ws.join("notes.txt")), (2, "/etc/passwd".into())] {
        p.send_json(
            &serde_json::json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":"read_path","arguments":{"path":path}}}),
        );
        assert_eq!(p.recv()["id"], id);
    }
    p.close_stdin();
    assert_eq!(p.exit_code(), 0, "{}", p.stderr());
    let found = seqs(&["--tool", "read_*"], &log);
    let recs = records(&log);
    let calls: Vec<&serde_json::Value> = recs
        .iter()
        .filter(|r| r["method"] == "tools/call" && r["event"] == "decision")
        .collect();
    assert!(
        !calls.is_empty(),
        "the tool's path argument was judged: {recs:?}"
    );
    for r in &calls {
        assert_eq!(r["tool"], "read_path", "{r}");
    }
    assert_eq!(
        found,
        calls
            .iter()
            .map(|r| r["seq"].as_u64().unwrap())
            .collect::<Vec<_>>()
    );
    assert!(calls.iter().any(|r| r["decision"] == "deny"), "{calls:?}");
    let j: serde_json::Value = serde_json::from_str(&out(&["summary", "--json"], &log)).unwrap();
    assert_eq!(j["all"]["top_denied_tools"][0][0], "read_path", "{j}");
}
