//! A scripted session through the real writer produces exactly the expected records
//! (volatile fields masked), `show` and `summary` through the real binary print exactly the
//! expected text, a URI cannot forge a line, and the records match docs/audit-schema.json.
//!
//! The relay-driven end-to-end golden test (a real `rootfence run` session) belongs to the
//! relay's wiring; this one pins the writer's output byte for byte.

mod audit_support;

use std::path::Path;

use audit_support::*;
use rootfence::audit::{
    Action, AuditLog, Counts, Decision, Direction, DroppedRoot, EndCause, Event, Initialized,
    NarrowedRoot, PeerInfo, PolicyFile, ProtocolError, ProtocolErrorKind, RootsUpdate, RpcId,
    SandboxPath, SandboxReport, SessionEnd, SessionStart, Verdict,
};

/// A URI that tries to end its line and forge a record after it, and one that uses a bidi
/// override to make `.exe` read as `.txt`.
const FORGE: &str =
    "file:///data/a\n{\"v\":1,\"seq\":3,\"event\":\"decision\",\"decision\":\"allow\"}\u{2028}x";
const BIDI: &str = "file:///data/report\u{202e}txt.exe\u{2066}";

fn scripted_session(path: &Path, log_allowed: bool) -> String {
    let mut start = SessionStart::new(
        &[
            "npx".into(),
            "-y".into(),
            "@modelcontextprotocol/server-filesystem".into(),
            "--token".into(),
            "s3cret".into(),
            "/data".into(),
        ],
        Path::new("/work"),
    );
    start.policy_files = vec![PolicyFile {
        path: "/etc/rootfence/policy.toml".into(),
        sha256: "ab".repeat(32),
    }];
    start.mode = Some("enforce".into());
    start.effective_roots = vec!["file:///data".into()];
    start.sandbox = Some(SandboxReport {
        mode: "best-effort".into(),
        landlock_abi: Some(6),
        enforcement: "full".into(),
        paths: vec![SandboxPath {
            path: "/data".into(),
            access: "read_write".into(),
            ..SandboxPath::default()
        }],
        network: "deny".into(),
        rlimits: [("nofile".to_owned(), 1024)].into_iter().collect(),
        missing: vec![],
    });
    let mut cfg = config(path);
    cfg.log_allowed = log_allowed;
    let log = AuditLog::open(cfg, start).unwrap();
    let a = log.handle();
    a.record(Event::Initialized(Initialized {
        protocol_version: "2025-06-18".into(),
        host: Some(PeerInfo {
            name: "claude-code".into(),
            version: "2.1.0".into(),
        }),
        server: Some(PeerInfo {
            name: "secure-filesystem-server\u{202e}".into(),
            version: "0.2.0".into(),
        }),
        principal: None,
    }))
    .unwrap();
    a.record(Event::RootsUpdate(RootsUpdate {
        trigger: "roots_list_result".into(),
        received: vec!["file:///".into(), "https://example.com/".into()],
        dropped: vec![DroppedRoot {
            uri: "https://example.com/".into(),
            reason: "not_file_scheme".into(),
        }],
        narrowed: vec![NarrowedRoot {
            uri: "file:///".into(),
            to: vec!["file:///data".into()],
        }],
        effective: vec!["file:///data".into()],
        outside_sandbox: Vec::new(),
    }))
    .unwrap();
    a.record(Event::Decision(Decision {
        direction: Direction::HostToServer,
        method: "resources/read".into(),
        id: RpcId::from_json("3"),
        request: None,
        principal: None,
        tool: None,
        field: Some("params.uri".into()),
        uri: "file:///data/notes.txt".into(),
        canonical: Some("file:///data/notes.txt".into()),
        decision: Verdict::Allow,
        reason: "inside_root".into(),
        layer: None,
        rule: None,
        root: Some("file:///data".into()),
        action: Action::Forwarded,
    }))
    .unwrap();
    a.record(Event::Decision(Decision {
        direction: Direction::HostToServer,
        method: "resources/read".into(),
        id: RpcId::from_json("\"req-4\""),
        request: None,
        principal: None,
        tool: None,
        field: Some("params.uri".into()),
        uri: FORGE.into(),
        canonical: None,
        decision: Verdict::Deny,
        reason: "invalid_uri".into(),
        layer: None,
        rule: None,
        root: None,
        action: Action::AnsweredError,
    }))
    .unwrap();
    a.record(Event::Decision(Decision {
        direction: Direction::ServerToHost,
        method: "tools/call".into(),
        id: RpcId::from_json("5"),
        request: None,
        principal: None,
        tool: None,
        field: Some("result.content[1].resource.uri".into()),
        uri: BIDI.into(),
        canonical: Some(BIDI.into()),
        decision: Verdict::Deny,
        reason: "denied_by_rule".into(),
        layer: Some("/etc/rootfence/policy.toml".into()),
        rule: Some("deny[0] \"**/*.exe\" (line 12)".into()),
        root: Some("file:///data".into()),
        action: Action::Filtered,
    }))
    .unwrap();
    a.record(Event::ProtocolError(ProtocolError {
        direction: Direction::ServerToHost,
        kind: ProtocolErrorKind::UnmatchedResponse,
        detail: "response id matches no pending request".into(),
        len: 52,
        sha256: Some("cd".repeat(32)),
        id: RpcId::from_json("99"),
    }))
    .unwrap();
    log.close(SessionEnd {
        cause: EndCause::ServerExited,
        detail: None,
        exit_code: Some(0),
        signal: None,
        protocol_version: Some("2025-06-18".into()),
        counts: Counts {
            from_host: 6,
            from_server: 5,
            ..Counts::default()
        },
    })
    .unwrap();
    std::fs::read_to_string(path).unwrap()
}

/// Masks what changes from run to run: time, session id, hashes, pid, version.
fn mask(s: &str) -> String {
    let mut out = String::new();
    for line in s.lines() {
        let mut l = line.to_owned();
        for (key, len) in [
            ("\"ts\":\"", 27),
            ("\"session\":\"", 32),
            ("\"prev\":\"", 64),
        ] {
            if let Some(i) = l.find(key) {
                let start = i + key.len();
                let masked = if key.starts_with("\"prev") && l[start..start + 64] == "0".repeat(64)
                {
                    "0…0".to_owned()
                } else {
                    format!("<{}>", &key[1..key.len() - 3])
                };
                l.replace_range(start..start + len, &masked);
            }
        }
        l = regex_lite_replace(&l, "\"pid\":", "<pid>");
        l = l.replace(
            &format!("\"rootfence_version\":\"{}\"", env!("CARGO_PKG_VERSION")),
            "\"rootfence_version\":\"<version>\"",
        );
        out.push_str(&l);
        out.push('\n');
    }
    out
}

/// Replaces the number after `key` with `with`.
fn regex_lite_replace(l: &str, key: &str, with: &str) -> String {
    match l.find(key) {
        Some(i) => {
            let start = i + key.len();
            let end = start + l[start..].find(|c: char| !c.is_ascii_digit()).unwrap_or(0);
            format!("{}{}{}", &l[..start], with, &l[end..])
        }
        None => l.to_owned(),
    }
}

const GOLDEN: &str = r#"{"v":1,"seq":1,"ts":"<ts>","session":"<session>","prev":"0…0","event":"session_start","rootfence_version":"<version>","pid":<pid>,"command":["npx","-y","@modelcontextprotocol/server-filesystem","--token","<redacted>","/data"],"cwd":"/work","policy_files":[{"path":"/etc/rootfence/policy.toml","sha256":"abababababababababababababababababababababababababababababababab"}],"mode":"enforce","effective_roots":["file:///data"],"sandbox":{"mode":"best-effort","landlock_abi":6,"enforcement":"full","paths":[{"path":"/data","access":"read_write"}],"network":"deny","rlimits":{"nofile":1024},"missing":[]},"protocol_version":null}
{"v":1,"seq":2,"ts":"<ts>","session":"<session>","prev":"<prev>","event":"initialized","protocol_version":"2025-06-18","host":{"name":"claude-code","version":"2.1.0"},"server":{"name":"secure-filesystem-server\u202e","version":"0.2.0"}}
{"v":1,"seq":3,"ts":"<ts>","session":"<session>","prev":"<prev>","event":"roots_update","trigger":"roots_list_result","received":["file:///","https://example.com/"],"dropped":[{"uri":"https://example.com/","reason":"not_file_scheme"}],"narrowed":[{"uri":"file:///","to":["file:///data"]}],"effective":["file:///data"]}
{"v":1,"seq":4,"ts":"<ts>","session":"<session>","prev":"<prev>","event":"decision","direction":"host_to_server","method":"resources/read","id":3,"field":"params.uri","uri":"file:///data/notes.txt","canonical":"file:///data/notes.txt","decision":"allow","reason":"inside_root","layer":null,"rule":null,"root":"file:///data","action":"forwarded"}
{"v":1,"seq":5,"ts":"<ts>","session":"<session>","prev":"<prev>","event":"decision","direction":"host_to_server","method":"resources/read","id":"req-4","field":"params.uri","uri":"file:///data/a\n{\"v\":1,\"seq\":3,\"event\":\"decision\",\"decision\":\"allow\"}\u2028x","canonical":null,"decision":"deny","reason":"invalid_uri","layer":null,"rule":null,"root":null,"action":"answered_error"}
{"v":1,"seq":6,"ts":"<ts>","session":"<session>","prev":"<prev>","event":"decision","direction":"server_to_host","method":"tools/call","id":5,"field":"result.content[1].resource.uri","uri":"file:///data/report\u202etxt.exe\u2066","canonical":"file:///data/report\u202etxt.exe\u2066","decision":"deny","reason":"denied_by_rule","layer":"/etc/rootfence/policy.toml","rule":"deny[0] \"**/*.exe\" (line 12)","root":"file:///data","action":"filtered"}
{"v":1,"seq":7,"ts":"<ts>","session":"<session>","prev":"<prev>","event":"protocol_error","direction":"server_to_host","kind":"unmatched_response","detail":"response id matches no pending request","len":52,"sha256":"cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd","id":99}
{"v":1,"seq":8,"ts":"<ts>","session":"<session>","prev":"<prev>","event":"session_end","cause":"server_exited","detail":null,"exit_code":0,"signal":null,"protocol_version":"2025-06-18","counts":{"from_host":6,"from_server":5,"allowed":1,"denied":2,"protocol_errors":1,"records":8}}
"#;

#[test]
fn scripted_session_produces_exactly_the_golden_records() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("audit.jsonl");
    let got = scripted_session(&p, true);
    assert_eq!(mask(&got), GOLDEN);
    // The log is exactly one line per record: the forging URI did not add one.
    assert_eq!(got.lines().count(), 8);
    // No raw control, separator or bidi character anywhere in the file.
    assert!(
        !got.chars().any(|c| (c.is_control() && c != '\n')
            || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')),
        "{got:?}"
    );
    // Every line's prev is the SHA-256 of the line before it.
    let ls: Vec<&str> = got.lines().collect();
    for w in ls.windows(2) {
        use sha2::Digest;
        let h: String = sha2::Sha256::digest(w[0].as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert!(w[1].contains(&format!("\"prev\":\"{h}\"")));
    }
    let (code, out) = verify(&[&p]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn allowed_decisions_can_be_left_out_but_are_still_counted() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("audit.jsonl");
    let got = scripted_session(&p, false);
    assert_eq!(got.lines().count(), 7);
    assert!(!got.contains("\"decision\":\"allow\""));
    assert!(got.contains("\"allowed\":1,\"denied\":2,\"protocol_errors\":1,\"records\":7"));
}

fn masked_stdout(o: &std::process::Output, session: &str) -> String {
    assert!(o.status.success(), "{o:?}");
    let s = String::from_utf8(o.stdout.clone()).unwrap();
    let mut out = String::new();
    for l in s.lines() {
        // Mask timestamps (27 chars from a year) and the session id.
        let mut l = l
            .replace(session, "<session>")
            .replace(&session[..8], "<sess>");
        while let Some(i) = l.find("202") {
            if l.len() >= i + 27 && l.as_bytes()[i + 26] == b'Z' {
                l.replace_range(i..i + 27, "<ts>");
            } else {
                break;
            }
        }
        l = regex_lite_replace(&l, "pid ", "<pid>");
        l = l.replace(env!("CARGO_PKG_VERSION"), "<version>");
        out.push_str(&l);
        out.push('\n');
    }
    out
}

#[test]
fn show_prints_every_record_readably_and_escapes_what_could_forge_a_line() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("audit.jsonl");
    scripted_session(&p, true);
    let session = lines(&p)[0][..].to_vec();
    let session = String::from_utf8(session).unwrap();
    let session = &session[session.find("\"session\":\"").unwrap() + 11..][..32];
    let o = audit(&["show"], &[&p]);
    let got = masked_stdout(&o, session);
    let want = r#"<ts> <sess> #1 session_start rootfence <version> pid <pid> command: npx -y @modelcontextprotocol/server-filesystem --token <redacted> /data  cwd: /work  roots: [file:///data]  policies: /etc/rootfence/policy.toml (abababababab…)  sandbox: best-effort full
<ts> <sess> #2 initialized protocol 2025-06-18  host: claude-code 2.1.0  server: secure-filesystem-server\u{202e} 0.2.0
<ts> <sess> #3 roots_update (roots_list_result)  received: [file:///, https://example.com/]  dropped: [https://example.com/ (not_file_scheme)]  narrowed: [file:/// -> [file:///data]]  effective: [file:///data]
<ts> <sess> #4 allow host->server resources/read id=3 params.uri file:///data/notes.txt  reason: inside_root  root: file:///data  action: forwarded
<ts> <sess> #5 DENY  host->server resources/read id="req-4" params.uri file:///data/a\u{000a}{"v":1,"seq":3,"event":"decision","decision":"allow"}\u{2028}x  reason: invalid_uri  action: answered_error
<ts> <sess> #6 DENY  server->host tools/call id=5 result.content[1].resource.uri file:///data/report\u{202e}txt.exe\u{2066}  reason: denied_by_rule  rule: /etc/rootfence/policy.toml: deny[0] "**/*.exe" (line 12)  root: file:///data  action: filtered
<ts> <sess> #7 protocol_error server->host unmatched_response (52 bytes) id=99: response id matches no pending request
<ts> <sess> #8 session_end server_exited exit 0  messages: 6 from host, 5 from server  decisions: 1 allow, 2 deny  protocol errors: 1  records: 8
"#;
    assert_eq!(got, want);

    // Filters.
    let o = audit(&["show", "--denied"], &[&p]);
    let s = String::from_utf8(o.stdout).unwrap();
    assert_eq!(s.lines().count(), 2, "{s}");
    assert!(s.lines().all(|l| l.contains("DENY")));
    let o = audit(&["show", "--session", "ffff"], &[&p]);
    assert!(o.stdout.is_empty());
    let o = audit(&["show", "--session", &session[..6]], &[&p]);
    assert_eq!(String::from_utf8(o.stdout).unwrap().lines().count(), 8);
    let o = audit(&["show", "--since", "1h"], &[&p]);
    assert_eq!(String::from_utf8(o.stdout).unwrap().lines().count(), 8);
    let o = audit(&["show", "--since", "2999-01-01"], &[&p]);
    assert!(o.stdout.is_empty());
    let o = audit(&["show", "--since", "last tuesday"], &[&p]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("invalid time 'last tuesday'"));
    // --json prints the stored lines unchanged.
    let o = audit(&["show", "--json", "--denied"], &[&p]);
    let stored = std::fs::read_to_string(&p).unwrap();
    let want: Vec<&str> = stored
        .lines()
        .filter(|l| l.contains("\"decision\":\"deny\""))
        .collect();
    assert_eq!(String::from_utf8(o.stdout).unwrap(), want.join("\n") + "\n");
}

#[test]
fn summary_counts_per_session() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("audit.jsonl");
    scripted_session(&p, true);
    let s = write_session(config(&p), 10);
    let o = audit(&["summary"], &[&p]);
    let text = String::from_utf8(o.stdout.clone()).unwrap();
    assert!(o.status.success(), "{o:?}");
    assert_eq!(
        text.matches("\nsession ").count() + usize::from(text.starts_with("session ")),
        2,
        "{text}"
    );
    let second = &text[text.find(&format!("session {s}")).unwrap()..];
    // Up to the block that sums every session.
    let second = &second[..second
        .find("\nall 2 sessions")
        .expect("an all-sessions block")];
    let want_second = "  command:   test-server --flag
  protocol:  (unknown)
  ended:     host_closed (exit 0)
  decisions: 8 allow, 2 deny
  by method:
    resources/read                          8 allow        2 deny
  by reason:
           8  inside_root
           2  outside_roots
  by action:
           2  answered_error
           8  forwarded
  top denied URIs:
           1  file:///data/f4.txt
           1  file:///data/f9.txt
  top denying rules:
           2  (no rule: outside_roots)
";
    let body: String = second.lines().skip(1).map(|l| format!("{l}\n")).collect();
    assert_eq!(body.trim_end(), want_second.trim_end(), "{text}");
    // The first session's bidi URI is escaped in the text output too.
    assert!(
        text.contains("file:///data/report\\u{202e}txt.exe\\u{2066}"),
        "{text}"
    );
    assert!(!text.contains('\u{202e}'));

    let o = audit(&["summary", "--json", "--top", "1"], &[&p]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let first = &v["sessions"][0];
    assert_eq!(first["decisions"]["deny"], 2);
    assert_eq!(first["by_method"]["tools/call"]["deny"], 1);
    assert_eq!(first["protocol_errors"]["unmatched_response"], 1);
    assert_eq!(first["top_denied_uris"].as_array().unwrap().len(), 1);
    assert_eq!(first["end"], "server_exited (exit 0)");
}

#[test]
fn readers_skip_and_report_damage_instead_of_choking() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("audit.jsonl");
    scripted_session(&p, true);
    let mut data = std::fs::read(&p).unwrap();
    data.extend_from_slice(b"garbage line\n{\"v\":1,\"seq\":9,\"ts\":\"2026");
    std::fs::write(&p, &data).unwrap();
    for args in [&["show"][..], &["summary"][..]] {
        let o = audit(args, &[&p]);
        assert!(o.status.success(), "{args:?} {o:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("line 9 is not a valid record"), "{err}");
        assert!(err.contains("line 10 is incomplete"), "{err}");
    }
}

#[test]
fn a_durable_receipt_resolves_once_the_record_is_in_the_file() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("audit.jsonl");
    let mut cfg = config(&p);
    cfg.fsync = rootfence::audit::FsyncPolicy::Denials;
    let log = AuditLog::open(cfg, start()).unwrap();
    let a = log.handle();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        for i in 0..50 {
            let r = a.submit(
                decision(i, &format!("file:///etc/{i}"), Verdict::Deny),
                true,
            );
            a.durable(r.unwrap()).await.unwrap();
            let s = std::fs::read_to_string(&p).unwrap();
            assert!(s.contains(&format!("\"uri\":\"file:///etc/{i}\"")));
        }
        let r = a.submit(decision(99, "file:///x", Verdict::Allow), true);
        a.durable(r.unwrap()).await.unwrap();
        assert!(std::fs::read_to_string(&p).unwrap().contains("file:///x"));
        assert!(a.failed().is_none());
    });
    log.close(SessionEnd::default()).unwrap();
}

#[test]
fn records_match_the_published_json_schema() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/docs/audit-schema.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("audit.jsonl");
    scripted_session(&p, true);
    // A log_recovered record too.
    std::fs::write(&p, &std::fs::read(&p).unwrap()[..40]).unwrap();
    write_session(config(&p), 1);
    let mut files = family(d.path(), "audit.jsonl");
    files.sort();
    let mut text = String::new();
    for f in &files {
        text.push_str(&std::fs::read_to_string(f).unwrap_or_default());
        text.push('\n');
    }
    // And a log_rewound record: truncate behind a live writer's back.
    let p3 = d.path().join("rewound.jsonl");
    let log = AuditLog::open(config(&p3), start()).unwrap();
    let a = log.handle();
    a.record_blocking(decision(1, "file:///x", Verdict::Deny))
        .unwrap();
    std::fs::write(&p3, "").unwrap();
    a.record_blocking(decision(2, "file:///y", Verdict::Deny))
        .unwrap();
    log.close(SessionEnd::default()).unwrap();
    text.push_str(&std::fs::read_to_string(&p3).unwrap());
    let p2 = d.path().join("golden.jsonl");
    scripted_session(&p2, true);
    text.push_str(&std::fs::read_to_string(&p2).unwrap());
    // And the records the log writes for volume: a list page summarized, repeated protocol
    // errors counted, retention's log_pruned.
    let d4 = tempfile::tempdir().unwrap();
    let p4 = d4.path().join("audit.jsonl");
    let mut cfg = config(&p4);
    cfg.rotate_bytes = Some(2048);
    cfg.retain_files = Some(1);
    let log = AuditLog::open(cfg, start()).unwrap();
    let a = log.handle();
    for _ in 0..3 {
        a.record(Event::ProtocolError(ProtocolError {
            direction: Direction::ServerToHost,
            kind: ProtocolErrorKind::InvalidJson,
            detail: "bad_json: not valid JSON".into(),
            len: 2,
            sha256: Some("cd".repeat(32)),
            id: None,
        }))
        .unwrap();
    }
    for i in 0..40 {
        a.record(decision(i, "file:///data/x", Verdict::Allow))
            .unwrap();
    }
    // Last, so retention (one rotated file kept) cannot have removed it.
    a.record(Event::ServerStart(rootfence::audit::ServerStart {
        generation: 2,
        trigger: "list_changed".into(),
        roots: vec!["file:///data".into()],
        sandbox: Some(SandboxReport {
            mode: "best-effort".into(),
            landlock_abi: Some(6),
            enforcement: "full".into(),
            paths: vec![SandboxPath {
                path: "/data".into(),
                access: "read_write".into(),
                origin: "root".into(),
            }],
            network: "allow".into(),
            rlimits: Default::default(),
            missing: vec![],
        }),
        differences: vec!["serverInfo.version changed".into()],
        lost_subscriptions: vec!["file:///data/x".into()],
    }))
    .unwrap();
    a.record(Event::DecisionSummary(rootfence::audit::DecisionSummary {
        direction: Direction::ServerToHost,
        method: "resources/list".into(),
        id: RpcId::from_json("5"),
        request: Some(4),
        field: "result.resources".into(),
        allowed: 3,
        denied: 1,
        reasons: [("default_allow".to_owned(), 3)].into_iter().collect(),
        rules: [("default".to_owned(), 3)].into_iter().collect(),
        dirs: vec![rootfence::audit::DirCount {
            dir: "file:///data".into(),
            count: 2,
        }],
        dirs_omitted: 0,
        other: [("https".to_owned(), 1)].into_iter().collect(),
    }))
    .unwrap();
    log.close(SessionEnd::default()).unwrap();
    for f in family(d4.path(), "audit.jsonl") {
        text.push_str(&std::fs::read_to_string(f).unwrap());
    }
    // And the fields of issue 29: a served session's principal, a stdio host's claimed
    // one, a decision's request key and principal reference.
    let p5 = d.path().join("principal.jsonl");
    let mut served = start();
    served.principal = Some(rootfence::audit::Principal::served(
        Some("token:0a1b2c3d4e5f"),
        Some("127.0.0.1:40000".into()),
        Some("9f1c".into()),
    ));
    let log = AuditLog::open(config(&p5), served).unwrap();
    let a = log.handle();
    a.record(Event::Initialized(Initialized {
        protocol_version: "2025-11-25".into(),
        host: Some(PeerInfo {
            name: "claude-code".into(),
            version: "2".into(),
        }),
        server: None,
        principal: Some(rootfence::audit::Principal::claimed(PeerInfo {
            name: "claude-code".into(),
            version: "2".into(),
        })),
    }))
    .unwrap();
    let mut d5 = match decision(1, "file:///etc/shadow", Verdict::Deny) {
        Event::Decision(d) => d,
        _ => unreachable!(),
    };
    d5.request = Some(7);
    d5.principal = Some("token:0a1b2c3d4e5f".into());
    d5.tool = Some("read_file".into());
    a.record(Event::Decision(d5)).unwrap();
    log.close(SessionEnd::default()).unwrap();
    let five = std::fs::read_to_string(&p5).unwrap();
    assert!(
        five.contains(r#""request":7,"principal":"token:0a1b2c3d4e5f""#),
        "{five}"
    );
    text.push_str(&five);
    let mut seen = std::collections::BTreeSet::new();
    for line in text.lines().filter(|l| l.ends_with('}')) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let event = v["event"].as_str().unwrap();
        seen.insert(event.to_owned());
        check(&schema, &schema["$defs"][event], &v, event);
        check(&schema, &schema["$defs"]["envelope"], &v, "envelope");
    }
    let all: std::collections::BTreeSet<String> = [
        "session_start",
        "initialized",
        "roots_update",
        "decision",
        "protocol_error",
        "session_end",
        "log_recovered",
        "log_rewound",
        "decision_summary",
        "protocol_error_repeated",
        "log_pruned",
        "server_start",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(seen, all);
}

/// A checker for the subset of JSON Schema the schema file uses: `$ref`, `type` (string or
/// list), `properties`, `required`, `additionalProperties`, `items`, `enum`, `const`,
/// `pattern` is ignored, `allOf`.
fn check(root: &serde_json::Value, s: &serde_json::Value, v: &serde_json::Value, at: &str) {
    use serde_json::Value;
    assert!(!s.is_null(), "{at}: no schema for this value");
    if let Some(r) = s["$ref"].as_str() {
        let name = r.strip_prefix("#/$defs/").unwrap();
        return check(root, &root["$defs"][name], v, at);
    }
    if let Some(all) = s["allOf"].as_array() {
        for sub in all {
            check(root, sub, v, at);
        }
    }
    let ty = |t: &str| match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        _ => panic!("unknown type {t}"),
    };
    match &s["type"] {
        Value::String(t) => assert!(ty(t), "{at}: {v} is not {t}"),
        Value::Array(ts) => assert!(
            ts.iter().any(|t| ty(t.as_str().unwrap())),
            "{at}: {v} not in {ts:?}"
        ),
        _ => {}
    }
    if let Some(e) = s["enum"].as_array() {
        assert!(e.contains(v), "{at}: {v} not in {e:?}");
    }
    if !s["const"].is_null() {
        assert_eq!(&s["const"], v, "{at}");
    }
    if let (Some(obj), Some(props)) = (v.as_object(), s["properties"].as_object()) {
        for r in s["required"].as_array().into_iter().flatten() {
            assert!(obj.contains_key(r.as_str().unwrap()), "{at}: missing {r}");
        }
        for (k, val) in obj {
            match props.get(k) {
                Some(ps) => check(root, ps, val, &format!("{at}.{k}")),
                None => assert!(
                    s["additionalProperties"] != Value::Bool(false),
                    "{at}: {k} is not in the schema"
                ),
            }
        }
    }
    if let (Some(arr), Some(items)) = (v.as_array(), s.get("items")) {
        for (i, x) in arr.iter().enumerate() {
            check(root, items, x, &format!("{at}[{i}]"));
        }
    }
    if let (Some(obj), Some(ap)) = (v.as_object(), s.get("additionalProperties"))
        && ap.is_object()
    {
        for (k, x) in obj {
            check(root, ap, x, &format!("{at}.{k}"));
        }
    }
}
