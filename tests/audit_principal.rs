//! Who did it, and which request (issue 29), through the real binary: the principal of a
//! session and the compact reference on each decision, the session-unique request key and
//! `audit show --request #KEY`, and the tool on decisions about a `tools/call` *result*.
//!
//! - stdio: the host's `clientInfo` is recorded as claimed (`initialized.principal`,
//!   `authenticated: false`), and every decision names `claimed:<name>`;
//! - `rootfence serve` with two tokens: each session's `session_start` names its own token
//!   (never the token itself), the client address and the HTTP session id, and each
//!   session's decisions name its own principal;
//! - a host that reuses a JSON-RPC id: each request gets its own key, and `--request #KEY`
//!   finds exactly that request's records where `--request ID` finds both.

mod common;
#[path = "common/serve_harness.rs"]
mod serve_harness;

use std::path::Path;
use std::process::Command;

use common::{Proxy, audit_show, rootfence, tempdir, test_server};
use serde_json::{Value, json};
use serve_harness::Serve;
use sha2::Digest;

fn records(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a record"))
        .collect()
}

/// `audit show --format json <args> LOG`: the seqs listed.
fn shown(args: &[&str], log: &Path) -> Vec<u64> {
    let args: Vec<&str> = ["--format", "json"].iter().chain(args).copied().collect();
    audit_show(&args, log)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["seq"]
                .as_u64()
                .unwrap()
        })
        .collect()
}

fn decisions(recs: &[Value]) -> Vec<&Value> {
    recs.iter().filter(|r| r["event"] == "decision").collect()
}

/// A stdio session: the principal is the host's claim, a reused id gets a new key, and
/// the decision on a tool's result names the tool.
#[test]
fn a_stdio_host_is_recorded_as_claimed_and_each_request_has_its_own_key() {
    let t = tempdir();
    let ws = t.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let ws = ws.canonicalize().unwrap();
    let log = t.path().join("audit.jsonl");
    let mut cmd = Command::new(rootfence());
    cmd.arg("run")
        .arg("--audit-log")
        .arg(&log)
        .arg("--")
        .arg(test_server());
    let mut p = Proxy::spawn(cmd);
    p.initialize_with_roots("claude-code", &format!("file://{}", ws.display()));
    // Id 1 twice: once answered, the host may use it again.
    for _ in 0..2 {
        p.send_json(&json!({"jsonrpc":"2.0","id":1,"method":"resources/read",
            "params":{"uri":"file:///etc/passwd"}}));
        assert!(p.recv().get("error").is_some());
    }
    // A tool whose result links outside the roots: the link is removed, and its decision
    // names the tool (the request had no URI of its own).
    let raw = json!({"content":[{"type":"resource_link","uri":"file:///etc/shadow","name":"s"}]})
        .to_string();
    p.send_json(&json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"fetch_notes","arguments":{"_rawResult":raw}}}));
    let r = p.recv();
    assert_eq!(r["id"], 2, "{r}");
    assert!(!r.to_string().contains("/etc/shadow"), "{r}");
    p.close_stdin();
    assert_eq!(p.exit_code(), 0, "{}", p.stderr());

    let recs = records(&log);
    let init = recs
        .iter()
        .find(|r| r["event"] == "initialized")
        .expect("initialized");
    let who = &init["principal"];
    assert_eq!(who["source"], "client_info", "{init}");
    assert_eq!(who["authenticated"], false, "{init}");
    assert_eq!(who["subject"], "claimed:claude-code");
    assert_eq!(who["client_info"]["name"], "claude-code");
    let start = recs.iter().find(|r| r["event"] == "session_start").unwrap();
    assert!(
        start.get("principal").is_none(),
        "unknown at start: {start}"
    );

    let ds = decisions(&recs);
    assert!(ds.len() >= 3, "{ds:?}");
    for d in &ds {
        assert_eq!(d["principal"], "claimed:claude-code", "{d}");
        assert!(
            d["request"].as_u64().is_some(),
            "every decision has a key: {d}"
        );
    }
    let reads: Vec<&&Value> = ds
        .iter()
        .filter(|d| d["method"] == "resources/read")
        .collect();
    assert_eq!(reads.len(), 2, "{reads:?}");
    assert_eq!(
        (reads[0]["id"].clone(), reads[1]["id"].clone()),
        (json!(1), json!(1))
    );
    let (k1, k2) = (
        reads[0]["request"].as_u64().unwrap(),
        reads[1]["request"].as_u64().unwrap(),
    );
    assert_ne!(k1, k2, "a reused id is another request");
    // The keys count the session's host requests: `initialize` was the first.
    assert_eq!((k1, k2), (2, 3));

    // --request #KEY: the one request; --request ID: both; with a session prefix too.
    let session = start["session"].as_str().unwrap();
    assert_eq!(
        shown(&["--request", &format!("#{k2}")], &log),
        vec![reads[1]["seq"].as_u64().unwrap()]
    );
    assert_eq!(
        shown(&["--request", &format!("{}:#{k1}", &session[..8])], &log),
        vec![reads[0]["seq"].as_u64().unwrap()]
    );
    assert_eq!(shown(&["--request", "1"], &log).len(), 2);

    // The tool-result decision names the tool, as the request's would.
    let link = ds
        .iter()
        .find(|d| d["uri"] == "file:///etc/shadow")
        .expect("the link's decision");
    assert_eq!(link["direction"], "server_to_host", "{link}");
    assert_eq!(link["method"], "tools/call");
    assert_eq!(link["tool"], "fetch_notes", "{link}");
    assert_eq!(link["decision"], "deny");
    assert_eq!(
        shown(&["--tool", "fetch_*"], &log),
        vec![link["seq"].as_u64().unwrap()]
    );

    // CSV: the request key and the principal are columns (added after `text`, so the
    // columns before keep their positions), and a row of one request carries both.
    let csv = audit_show(&["--format", "csv", "--request", &format!("#{k2}")], &log);
    let rows: Vec<&str> = csv.lines().collect();
    assert!(
        rows[0].ends_with(",action,text,request,principal"),
        "{}",
        rows[0]
    );
    assert_eq!(rows.len(), 2, "{csv}");
    assert!(
        rows[1].ends_with(&format!(",#{k2},claimed:claude-code")),
        "{}",
        rows[1]
    );

    // OCSF: a claimed principal is not a user identity; it says it was claimed.
    for line in audit_show(&["--format", "ocsf", "--denied"], &log).lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        assert!(e["actor"].get("user").is_none(), "{e}");
        assert_eq!(e["unmapped"]["principal"], "claimed:claude-code", "{e}");
        assert!(
            e["unmapped"]["actor_claimed"]
                .as_str()
                .is_some_and(|s| s.contains("not authenticated")),
            "{e}"
        );
    }
}

/// Two `serve` sessions with two tokens: each session's records name its own principal.
#[test]
fn two_serve_sessions_with_two_tokens_each_name_their_own_principal() {
    let t = tempdir();
    let ws = t.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let tokens = t.path().join("tokens");
    std::fs::write(&tokens, "alpha-token-1\nbeta-token-2\n").unwrap();
    let log = t.path().join("audit.jsonl");
    let mut serve = Serve::start(
        &[
            "--auth-token-file",
            tokens.to_str().unwrap(),
            "--root",
            ws.to_str().unwrap(),
            "--audit-log",
            log.to_str().unwrap(),
        ],
        &[&test_server()],
    );
    let subject = |token: &str| {
        let d = sha2::Sha256::digest(token.as_bytes());
        let hex: String = d[..6].iter().map(|b| format!("{b:02x}")).collect();
        format!("token:{hex}")
    };
    let mut http_sessions = Vec::new();
    for token in ["alpha-token-1", "beta-token-2"] {
        let auth = format!("Bearer {token}");
        let h = ("Authorization", auth.as_str());
        let sid = serve.open_session(&[h]);
        let r = serve.post(
            &[h, ("Mcp-Session-Id", &sid), ("MCP-Protocol-Version", "2025-11-25")],
            r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///etc/passwd"}}"#,
        );
        assert_eq!(r.status, 200, "{r:?}");
        assert!(r.json().get("error").is_some(), "{r:?}");
        // Ended at once, so the drain has nothing to wait for.
        let r = serve.request("DELETE", "/mcp", &[h, ("Mcp-Session-Id", &sid)], b"");
        assert!(r.status < 300, "{r:?}");
        http_sessions.push((sid, subject(token)));
    }
    assert!(serve.stop().success(), "{}", serve.stderr());

    let recs = records(&log);
    // Each audit session's principal: on its `session_start`, or, for a session on a
    // pre-started server (`--session-pool`, on by default with `--root`), on its
    // `initialized` (the server started before anyone took it). Pre-started servers
    // never taken have none.
    let starts: Vec<&Value> = recs
        .iter()
        .filter(|r| {
            (r["event"] == "session_start" || r["event"] == "initialized")
                && r.get("principal").is_some()
        })
        .collect();
    assert_eq!(starts.len(), 2, "{starts:?}");
    for (sid, subject) in &http_sessions {
        let start = starts
            .iter()
            .find(|s| s["principal"]["http_session"] == sid.as_str())
            .unwrap_or_else(|| panic!("no principal for {sid}: {starts:?}"));
        let p = &start["principal"];
        assert_eq!(p["source"], "token", "{p}");
        assert_eq!(p["authenticated"], true);
        assert_eq!(p["subject"], subject.as_str());
        let addr = p["client_address"].as_str().expect("client address");
        assert!(addr.starts_with("127.0.0.1:"), "{addr}");
        // The token itself is never logged.
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(!text.contains("alpha-token-1") && !text.contains("beta-token-2"));
        // This session's decisions name this principal, and only this one.
        let session = start["session"].as_str().unwrap();
        let ds: Vec<&Value> = decisions(&recs)
            .into_iter()
            .filter(|d| d["session"] == session)
            .collect();
        assert!(!ds.is_empty(), "the denial of {sid}");
        for d in ds {
            assert_eq!(d["principal"], subject.as_str(), "{d}");
        }
    }
    assert_ne!(http_sessions[0].1, http_sessions[1].1);

    // OCSF: an authenticated principal is the actor's user; the address is the source.
    let events: Vec<Value> = audit_show(&["--format", "ocsf", "--denied"], &log)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 2, "{events:?}");
    for e in &events {
        let uid = e["actor"]["user"]["uid"].as_str().expect("actor.user.uid");
        assert!(http_sessions.iter().any(|(_, s)| s == uid), "{e}");
        assert_eq!(e["src_endpoint"]["ip"], "127.0.0.1", "{e}");
        assert!(e["src_endpoint"]["port"].as_u64().is_some(), "{e}");
    }
}
