//! `rootfence serve` from outside, over raw HTTP/1.1 through the real binary: what it refuses
//! and with which status (and that nothing refused reaches the server), sessions (ids, DELETE,
//! the cap, idle reaping, isolation of roots), health and readiness, and a graceful drain.
//!
//! The server is the scripted test server with `--log` (every line it receives, appended to a
//! file the sandbox lets it write), under the default sandbox and policy.

mod common;
#[path = "common/serve_harness.rs"]
mod serve_harness;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{tempdir, test_server};
use serve_harness::Serve;

/// `rootfence serve <opts> -- test_server --log <dir>/server.log`.
fn start(dir: &Path, opts: &[&str]) -> (Serve, PathBuf) {
    let log = dir.join("server.log");
    let dir_s = dir.display().to_string();
    let mut all = vec!["--write", &dir_s];
    all.extend_from_slice(opts);
    let serve = Serve::start(&all, &[&test_server(), "--log", log.to_str().unwrap()]);
    (serve, log)
}

/// What the server has received (every server process of every session appends here).
fn received(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < Duration::from_secs(20), "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

#[test]
fn bad_requests_get_their_status_and_never_reach_the_server() {
    let t = tempdir();
    let token_file = t.path().join("tokens");
    std::fs::write(&token_file, "# tokens\ns3cret-token\n").unwrap();
    let (serve, log) = start(
        t.path(),
        &[
            "--auth-token-file",
            token_file.to_str().unwrap(),
            "--max-message-size",
            "4KiB",
        ],
    );
    let auth = ("Authorization", "Bearer s3cret-token");
    let id = serve.open_session(&[auth]);
    let sid = ("Mcp-Session-Id", id.as_str());
    let marker = "never-reaches-the-server";
    let echo = |n: u32| {
        format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"echo","params":{{"m":"{marker}"}}}}"#)
    };

    // 401: no token, a wrong one, another scheme.
    for h in [
        vec![sid],
        vec![sid, ("Authorization", "Bearer s3cret-tokeX")],
        vec![sid, ("Authorization", "Basic czNjcmV0LXRva2Vu")],
    ] {
        let r = serve.post(&h, &echo(10));
        assert_eq!(r.status, 401, "{r:?}");
        assert!(
            r.header("www-authenticate")
                .is_some_and(|v| v.starts_with("Bearer"))
        );
        assert!(r.body.contains("bearer token"), "{r:?}");
    }
    // An unauthenticated initialize opens nothing.
    let r = serve.post(
        &[],
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#,
    );
    assert_eq!(r.status, 401);

    // 403: a browser origin that is not allowed (DNS rebinding), or a foreign Host.
    let r = serve.post(&[auth, sid, ("Origin", "http://evil.example")], &echo(11));
    assert_eq!(r.status, 403, "{r:?}");
    assert!(r.body.contains("--allowed-origin"), "{r:?}");
    let r = serve.post(&[auth, sid, ("Host", "rebind.evil.example:80")], &echo(12));
    assert_eq!(r.status, 403, "{r:?}");

    // 413: larger than --max-message-size, declared or streamed.
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":13,"method":"echo","params":{{"m":"{marker}","pad":"{}"}}}}"#,
        "x".repeat(8192)
    );
    let r = serve.post(&[auth, sid], &big);
    assert_eq!(r.status, 413, "{r:?}");
    let r = serve.request(
        "POST",
        "/mcp",
        &[
            auth,
            sid,
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Transfer-Encoding", "chunked"),
        ],
        format!("{:x}\r\n{big}\r\n0\r\n\r\n", big.len()).as_bytes(),
    );
    assert_eq!(r.status, 413, "chunked: {r:?}");

    // 400: not JSON, not UTF-8, duplicate keys, not a message; each with a JSON-RPC error.
    for (body, code) in [
        (format!("{{\"m\":\"{marker}\""), -32700),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"id":2,"method":"echo","params":{{"m":"{marker}"}}}}"#
            ),
            -32600,
        ),
        (
            format!(r#"{{"jsonrpc":"1.0","id":14,"method":"echo","params":{{"m":"{marker}"}}}}"#),
            -32600,
        ),
    ] {
        let r = serve.post(&[auth, sid], &body);
        assert_eq!(r.status, 400, "{body}: {r:?}");
        assert_eq!(r.json()["error"]["code"], code, "{body}: {r:?}");
    }
    let r = serve.request(
        "POST",
        "/mcp",
        &[auth, sid, ("Content-Type", "application/json")],
        b"{\"jsonrpc\":\"2.0\",\"id\":15,\"method\":\"echo\",\"params\":{\"m\":\"\xff never-reaches-the-server\"}}",
    );
    assert_eq!(r.status, 400, "not UTF-8: {r:?}");

    // 415: not declared JSON.
    let r = serve.request(
        "POST",
        "/mcp",
        &[auth, sid, ("Content-Type", "text/plain")],
        echo(16).as_bytes(),
    );
    assert_eq!(r.status, 415, "{r:?}");

    // 404: a session that never existed; 400: no session id at all.
    let r = serve.post(
        &[auth, ("Mcp-Session-Id", "00112233445566778899aabbccddeeff")],
        &echo(17),
    );
    assert_eq!(r.status, 404, "{r:?}");
    let r = serve.post(&[auth], &echo(18));
    assert_eq!(r.status, 400, "{r:?}");

    // An unsupported protocol version header: 400.
    let r = serve.post(
        &[auth, sid, ("MCP-Protocol-Version", "1999-01-01")],
        &echo(19),
    );
    assert_eq!(r.status, 400, "{r:?}");

    // The session still works, and the server saw none of the above.
    let r = serve.post(&[auth, sid], PING);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.json()["result"], serde_json::json!({}));
    let seen = received(&log);
    assert!(
        seen.contains("\"ping\""),
        "the good request arrived: {seen}"
    );
    assert!(
        !seen.contains(marker),
        "a refused request reached the server:\n{seen}"
    );
}

#[test]
fn delete_ends_the_session_and_its_server() {
    let t = tempdir();
    let (serve, _log) = start(t.path(), &[]);
    let id = serve.open_session(&[]);
    let sid = ("Mcp-Session-Id", id.as_str());
    let r = serve.post(&[sid], r#"{"jsonrpc":"2.0","id":2,"method":"pid"}"#);
    assert_eq!(r.status, 200, "{r:?}");
    let pid = r.json()["result"]["pid"].as_i64().expect("a pid") as i32;
    assert!(common::alive(pid));
    let r = serve.request("DELETE", "/mcp", &[sid], b"");
    assert_eq!(r.status, 204, "{r:?}");
    let r = serve.post(&[sid], PING);
    assert_eq!(r.status, 404, "a deleted session is gone: {r:?}");
    eventually("the session's server exits", || !common::alive(pid));
    let r = serve.request("DELETE", "/mcp", &[sid], b"");
    assert_eq!(r.status, 404);
}

#[test]
fn each_session_has_its_own_server_process() {
    let t = tempdir();
    let (serve, _log) = start(t.path(), &[]);
    let pids: Vec<i64> = (0..3)
        .map(|_| {
            let id = serve.open_session(&[]);
            let r = serve.post(
                &[("Mcp-Session-Id", &id)],
                r#"{"jsonrpc":"2.0","id":2,"method":"pid"}"#,
            );
            r.json()["result"]["pid"].as_i64().unwrap()
        })
        .collect();
    assert!(
        pids[0] != pids[1] && pids[1] != pids[2] && pids[0] != pids[2],
        "{pids:?}"
    );
}

#[test]
fn the_session_cap_refuses_more_with_503_and_readiness_follows() {
    let t = tempdir();
    let (serve, _log) = start(t.path(), &["--max-sessions", "2"]);
    assert_eq!(serve.request("GET", "/healthz", &[], b"").status, 200);
    assert_eq!(serve.request("GET", "/readyz", &[], b"").status, 200);
    let a = serve.open_session(&[]);
    let _b = serve.open_session(&[]);
    let r = serve.post(
        &[],
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#,
    );
    assert_eq!(r.status, 503, "{r:?}");
    assert!(r.header("retry-after").is_some());
    assert_eq!(serve.request("GET", "/readyz", &[], b"").status, 503);
    // Ending one makes room again.
    assert_eq!(
        serve
            .request("DELETE", "/mcp", &[("Mcp-Session-Id", &a)], b"")
            .status,
        204
    );
    eventually("room for a session again", || {
        serve.request("GET", "/readyz", &[], b"").status == 200
    });
    serve.open_session(&[]);
}

#[test]
fn idle_sessions_are_reaped() {
    let t = tempdir();
    let (serve, _log) = start(t.path(), &["--session-idle", "1s"]);
    let id = serve.open_session(&[]);
    let r = serve.post(
        &[("Mcp-Session-Id", &id)],
        r#"{"jsonrpc":"2.0","id":2,"method":"pid"}"#,
    );
    let pid = r.json()["result"]["pid"].as_i64().unwrap() as i32;
    // Watched from outside only: a request would make the session active again.
    eventually("the idle session's server exits", || !common::alive(pid));
    let r = serve.post(&[("Mcp-Session-Id", &id)], PING);
    assert_eq!(r.status, 404, "{r:?}");
}

#[test]
fn sigterm_drains_and_stops_every_server() {
    let t = tempdir();
    let (mut serve, _log) = start(t.path(), &[]);
    let pids: Vec<i32> = (0..2)
        .map(|_| {
            let id = serve.open_session(&[]);
            let r = serve.post(
                &[("Mcp-Session-Id", &id)],
                r#"{"jsonrpc":"2.0","id":2,"method":"pid"}"#,
            );
            r.json()["result"]["pid"].as_i64().unwrap() as i32
        })
        .collect();
    let status = serve.stop();
    assert!(status.success(), "{status:?}\n{}", serve.stderr());
    for pid in pids {
        eventually("every session's server has exited", || !common::alive(pid));
    }
}

#[test]
fn a_request_in_flight_is_answered_across_a_drain() {
    let t = tempdir();
    let (mut serve, _log) = start(t.path(), &[]);
    let id = serve.open_session(&[]);
    let addr = serve.addr.clone();
    let slow = std::thread::spawn(move || {
        serve_harness::http(
            &addr,
            "POST",
            "/mcp",
            &[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("Mcp-Session-Id", &id),
            ],
            br#"{"jsonrpc":"2.0","id":3,"method":"slow","params":{"ms":1500}}"#,
        )
    });
    std::thread::sleep(Duration::from_millis(400));
    let status = serve.stop();
    let r = slow.join().unwrap();
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.json()["result"], serde_json::json!({}), "{r:?}");
    assert!(status.success());
}
