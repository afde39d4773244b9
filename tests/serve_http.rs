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
    // Full is not unready: a full replica keeps serving its sessions (issue 30). Full is its
    // own signal.
    assert_eq!(serve.request("GET", "/readyz", &[], b"").status, 200);
    let cap = serve.request("GET", "/capacity", &[], b"");
    assert_eq!(cap.status, 200);
    let cap = cap.json();
    assert_eq!(cap["full"], true, "{cap}");
    assert_eq!(cap["sessions"], 2, "{cap}");
    assert_eq!(cap["max_sessions"], 2, "{cap}");
    let metrics = serve.request("GET", "/metrics", &[], b"");
    assert!(
        metrics.body.contains("\nrootfence_full 1\n")
            && metrics.body.contains("\nrootfence_sessions 2\n"),
        "{}",
        metrics.body
    );
    // Ending one makes room again.
    assert_eq!(
        serve
            .request("DELETE", "/mcp", &[("Mcp-Session-Id", &a)], b"")
            .status,
        204
    );
    eventually("room for a session again", || {
        serve.request("GET", "/capacity", &[], b"").json()["full"] == false
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
    let (mut serve, _log) = start(t.path(), &["--drain-timeout", "2s"]);
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
    let (mut serve, log) = start(t.path(), &["--drain-timeout", "3s"]);
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
    // In flight once the server has it (a fixed sleep was no proof of that under load).
    eventually("the slow request reached the server", || {
        received(&log).contains(r#""method":"slow""#)
    });
    let status = serve.stop();
    let r = slow.join().unwrap();
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.json()["result"], serde_json::json!({}), "{r:?}");
    assert!(status.success());
}

/// SIGTERM keeps live sessions (issue 30): readiness turns 503 and new sessions are refused,
/// but a session still open is served as before, and rootfence exits as soon as it ends,
/// long before the drain deadline.
#[test]
fn a_drain_keeps_live_sessions_until_they_end() {
    let t = tempdir();
    let (mut serve, _log) = start(t.path(), &["--drain-timeout", "5m"]);
    let id = serve.open_session(&[]);
    let pid = nix::unistd::Pid::from_raw(serve.child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    eventually("readiness turns 503", || {
        serve.request("GET", "/readyz", &[], b"").status == 503
    });
    let r = serve.post(
        &[],
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#,
    );
    assert_eq!(r.status, 503, "{r:?}");
    let r = serve.post(&[("Mcp-Session-Id", &id)], PING);
    assert_eq!(r.status, 200, "the live session is still served: {r:?}");
    assert_eq!(
        serve
            .request("DELETE", "/mcp", &[("Mcp-Session-Id", &id)], b"")
            .status,
        204
    );
    // Its last session ended: rootfence exits without waiting for the 5 minute deadline.
    let status = serve.stop();
    assert!(status.success(), "{status:?}\n{}", serve.stderr());
}

/// A `tools/call` 2026-07-28 request from a client that declares the roots capability.
fn stateless_call(path: &Path, extra_params: serde_json::Value) -> String {
    let mut params = serde_json::json!({
        "name": "read_path",
        "arguments": {"path": path},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"roots": {}}
        }
    });
    for (k, v) in extra_params.as_object().unwrap() {
        params[k] = v.clone();
    }
    serde_json::json!({"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":params})
        .to_string()
}

const V2026: (&str, &str) = ("MCP-Protocol-Version", "2026-07-28");
/// The routing headers a 2026-07-28 client mirrors from a `stateless_call` body.
const CALL_HEADERS: [(&str, &str); 3] = [
    V2026,
    ("Mcp-Method", "tools/call"),
    ("Mcp-Name", "read_path"),
];

/// 2026-07-28 across replicas: replica A asks for the roots (`input_required`) and signs
/// the state; replica B, with the same key, serves the retry under those roots (and refuses
/// a path outside them); a tampered state, or one signed with another key, is refused with
/// -32602 and never reaches a server.
#[test]
fn stateless_requests_are_served_by_any_replica_with_the_key() {
    let t = tempdir();
    let data = t.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("a.txt"), "inside the declared root").unwrap();
    let key = t.path().join("key");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef-shared").unwrap();
    let other_key = t.path().join("other-key");
    std::fs::write(&other_key, "another key entirely, also 32 bytes long").unwrap();
    let logs = t.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let key_s = key.to_str().unwrap();
    let (a, _) = start(&logs, &["--state-key-file", key_s]);
    let (b, log_b) = start(&logs, &["--state-key-file", key_s]);
    let (c, _) = start(&logs, &["--state-key-file", other_key.to_str().unwrap()]);

    // A: no roots known yet → rootfence asks, MRTR style.
    let r = a.post(
        &CALL_HEADERS,
        &stateless_call(&data.join("a.txt"), serde_json::json!({})),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let asked = r.json();
    assert_eq!(asked["id"], "call-1");
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let q = &asked["result"]["inputRequests"]["io.rootfence/http-roots"];
    assert_eq!(q["method"], "roots/list", "{asked}");
    let state = asked["result"]["requestState"].as_str().unwrap().to_owned();
    assert!(state.starts_with("rf1."), "{state}");
    assert!(a.stderr().contains("serving"), "no session needed");

    // B serves the retry.
    let roots = serde_json::json!({"roots":[{"uri": format!("file://{}", data.display())}]});
    let retry = |path: &Path, state: &str| {
        stateless_call(
            path,
            serde_json::json!({
                "inputResponses": {"io.rootfence/http-roots": roots},
                "requestState": state,
            }),
        )
    };
    let r = b.post(&CALL_HEADERS, &retry(&data.join("a.txt"), &state));
    assert_eq!(r.status, 200, "{r:?}\n{}", b.stderr());
    let v = r.json();
    assert_eq!(v["id"], "call-1", "the client's id is restored: {v}");
    assert_eq!(
        v["result"]["structuredContent"]["text"], "inside the declared root",
        "{v}"
    );
    // Outside the declared root: rootfence refuses the read itself.
    let read = serde_json::json!({"jsonrpc":"2.0","id":7,"method":"resources/read","params":{
        "uri": "file:///etc/passwd",
        "_rawResult": "{\"contents\":[]}",
        "inputResponses": {"io.rootfence/http-roots": roots},
        "requestState": state,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"roots": {}}
        }
    }});
    let r = b.post(
        &[
            V2026,
            ("Mcp-Method", "resources/read"),
            ("Mcp-Name", "file:///etc/passwd"),
        ],
        &read.to_string(),
    );
    let v = r.json();
    assert_eq!(v["id"], 7, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("outside"),
        "{v}"
    );
    assert!(
        !received(&log_b).contains("/etc/passwd"),
        "the denied read never reached the server"
    );

    // Tampered: one character of the payload changed.
    let mut bytes = state.clone().into_bytes();
    bytes[6] = if bytes[6] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(bytes).unwrap();
    let marker = t.path().join("never-read.txt");
    for (replica, token) in [(&b, tampered.as_str()), (&c, state.as_str())] {
        let r = replica.post(&CALL_HEADERS, &retry(&marker, token));
        assert_eq!(r.status, 400, "{r:?}");
        assert_eq!(r.json()["error"]["code"], -32602, "{r:?}");
        assert!(r.body.contains("requestState"), "{r:?}");
    }
    let seen = received(&log_b);
    assert!(
        !seen.contains("never-read"),
        "a request with a refused state reached a server: {seen}"
    );
}

/// TLS terminated by rootfence itself (rustls): a client that trusts the certificate gets a
/// session over HTTPS (HTTP/2 by ALPN); plain HTTP to the TLS port gets nothing. Needs the
/// `openssl` and `curl` command-line tools (skipped with a note when either is missing).
#[test]
fn tls_serves_mcp_over_https() {
    let have = |tool: &str| {
        std::process::Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !have("curl")
        || !std::process::Command::new("openssl")
            .arg("version")
            .output()
            .is_ok_and(|o| o.status.success())
    {
        eprintln!("skipped: openssl or curl is not installed");
        return;
    }
    let t = tempdir();
    let (cert, key) = (t.path().join("cert.pem"), t.path().join("key.pem"));
    let made = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-keyout",
        ])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let (serve, _log) = start(
        t.path(),
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
            "--connection-idle",
            "2s",
        ],
    );
    assert!(serve.url.starts_with("https://"), "{}", serve.url);
    // A TLS handshake that never comes (or never ends: one byte of a ClientHello) does not
    // hold its connection: closed after --connection-idle (issue 28).
    for opening in [&b""[..], &[0x16u8][..]] {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(&serve.addr).unwrap();
        s.write_all(opening).unwrap();
        s.set_read_timeout(Some(serve_harness::PATIENCE)).unwrap();
        let mut buf = [0u8; 64];
        loop {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
                Err(e) => panic!("a stalled TLS handshake was not closed: {e}"),
            }
        }
    }
    let url = format!("https://{}/mcp", serve.addr);
    let out = std::process::Command::new("curl")
        .args(["-sS", "--max-time", "20", "--cacert"])
        .arg(&cert)
        .args(["-D", "-", "-H", "Content-Type: application/json", "-H", "Accept: application/json, text/event-stream", "--data"])
        .arg(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}"#)
        .arg(&url)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_lowercase();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.starts_with("http/2 200"), "HTTP/2 by ALPN: {text}");
    assert!(text.contains("mcp-session-id:"), "{text}");
    assert!(
        text.contains("\"protocolversion\":\"2025-11-25\""),
        "{text}"
    );
    // Plain HTTP to the TLS port is not served.
    let plain = std::process::Command::new("curl")
        .args([
            "-sS",
            "--max-time",
            "10",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
        ])
        .arg(format!("http://{}/healthz", serve.addr))
        .output()
        .unwrap();
    assert_ne!(String::from_utf8_lossy(&plain.stdout), "200");
}
