//! `rootfence serve` attacked from outside through the real binary (issue 28): routing
//! headers that lie about the body, descriptor exhaustion by idle connections, a stateless
//! body built to blow up memory, and one principal taking every slot.
//!
//! The server is the scripted test server with `--log` (every line it receives, appended to a
//! file the sandbox lets it write), so a test can show that what was refused never reached it.

mod common;
#[path = "common/serve_harness.rs"]
mod serve_harness;

use std::path::{Path, PathBuf};

use common::{tempdir, test_server};
use serve_harness::Serve;

/// `rootfence serve <opts> -- test_server --log <dir>/server.log`, auditing to
/// `<dir>/audit.jsonl`.
fn start(dir: &Path, opts: &[&str]) -> (Serve, PathBuf, PathBuf) {
    let log = dir.join("server.log");
    let audit = dir.join("audit.jsonl");
    let dir_s = dir.display().to_string();
    let audit_s = audit.display().to_string();
    // The directory is the session's root too: `read_path` of a file in it is allowed work
    // (tool path arguments are judged against the roots).
    let mut all = vec!["--root", &dir_s, "--write", &dir_s, "--audit-log", &audit_s];
    all.extend_from_slice(opts);
    let serve = Serve::start(&all, &[&test_server(), "--log", log.to_str().unwrap()]);
    (serve, log, audit)
}

fn received(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

/// The attack of issue 28 item 10: an intermediary allows `tools/list` by its header; the
/// body calls a tool. rootfence refuses with 400 and -32020 before anything reaches a
/// server, and audits it; the honest request with the same body is served.
#[test]
fn routing_headers_that_disagree_with_the_body_are_refused_and_audited() {
    let t = tempdir();
    // It stops with a session open: keep the drain short.
    let (serve, log, audit) = start(t.path(), &["--drain-timeout", "1s"]);
    let marker = t.path().join("header-smuggled.txt");
    std::fs::write(&marker, "reached").unwrap();
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{{"name":"read_path","arguments":{{"path":"{}"}},{META}}}}}"#,
        marker.display()
    );
    let v = ("MCP-Protocol-Version", "2026-07-28");
    for (headers, says) in [
        // Headers say tools/list; the body calls a tool.
        (vec![v, ("Mcp-Method", "tools/list")], "tools/call"),
        // The right method, another tool's name.
        (
            vec![v, ("Mcp-Method", "tools/call"), ("Mcp-Name", "list_things")],
            "read_path",
        ),
        // The name header left out.
        (vec![v, ("Mcp-Method", "tools/call")], "Mcp-Name"),
        // No routing headers at all.
        (vec![v], "Mcp-Method"),
        // Another revision in the header than in the body.
        (
            vec![
                ("MCP-Protocol-Version", "2025-11-25"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "read_path"),
            ],
            "_meta",
        ),
        // The method header twice: readers taking the first or the last copy disagree.
        (
            vec![
                v,
                ("Mcp-Method", "tools/list"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "read_path"),
            ],
            "more than once",
        ),
    ] {
        let r = serve.post(&headers, &call);
        assert_eq!(r.status, 400, "{headers:?}: {r:?}");
        let body = r.json();
        assert_eq!(body["error"]["code"], -32020, "{headers:?}: {r:?}");
        assert_eq!(body["id"], 41, "{r:?}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("header mismatch"), "{message}");
        assert!(message.contains(says), "{headers:?}: {message}");
    }
    assert!(
        !received(&log).contains("header-smuggled"),
        "a request with lying headers reached the server"
    );

    // A legacy session: headers are optional, but when sent they must agree too.
    let sid = serve.open_session(&[]);
    let legacy = format!(
        r#"{{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{{"name":"read_path","arguments":{{"path":"{}"}}}}}}"#,
        marker.display()
    );
    let r = serve.post(
        &[("Mcp-Session-Id", &sid), ("Mcp-Method", "tools/list")],
        &legacy,
    );
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(r.json()["error"]["code"], -32020, "{r:?}");
    assert!(!received(&log).contains("header-smuggled"));

    // The same body with honest headers is served.
    let r = serve.post(
        &[v, ("Mcp-Method", "tools/call"), ("Mcp-Name", "read_path")],
        &call,
    );
    assert_eq!(r.status, 200, "{r:?}\n{}", serve.stderr());
    assert_eq!(r.json()["id"], 41, "{r:?}");
    assert!(received(&log).contains("header-smuggled"));

    // Each refusal is in the audit log (the front door's session): a protocol_error with the
    // code and which header disagreed, never the content; repeats within a second are
    // counted, and session_end counts them all.
    let mut serve = serve;
    assert!(serve.stop().success());
    let text = std::fs::read_to_string(&audit).unwrap();
    // The honest call's path is judged and its decision names the file; the refusals hold
    // the message's hash only.
    let refusals: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(r#""event":"protocol_error""#))
        .collect();
    assert!(!refusals.is_empty(), "no protocol_error record:\n{text}");
    assert!(
        refusals
            .iter()
            .all(|l| !l.contains("header-smuggled") && !l.contains("list_things")),
        "the audit log holds the message's hash, not its content"
    );
    let records: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let first = records
        .iter()
        .find(|r| r["event"] == "protocol_error")
        .unwrap_or_else(|| panic!("no protocol_error: {records:#?}"));
    let detail = first["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("-32020: header mismatch: the Mcp-Method header"),
        "{detail}"
    );
    assert_eq!(first["id"], 41);
    assert_eq!(first["sha256"].as_str().map(str::len), Some(64));
    let door = first["session"].clone();
    let end = records
        .iter()
        .find(|r| r["event"] == "session_end" && r["session"] == door)
        .unwrap_or_else(|| panic!("the front door's session did not end: {records:#?}"));
    assert_eq!(end["counts"]["protocol_errors"], 7, "{end}");
}

/// Descriptors rootfence holds open.
fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// The attack of issue 28 item 2, under a descriptor limit lowered to 1,024: 1,100 sockets
/// that send nothing or only the HTTP/2 preface, held open. `/healthz` still answers, a
/// client still opens a session and calls a tool, and rootfence never runs out of
/// descriptors: at its connection cap the idle sockets give way.
#[test]
fn idle_connections_and_h2c_prefaces_cannot_exhaust_descriptors() {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    // The test holds 1,100 sockets itself.
    let (soft, hard) =
        nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap();
    if soft < 2048 {
        nix::sys::resource::setrlimit(
            nix::sys::resource::Resource::RLIMIT_NOFILE,
            hard.min(4096),
            hard,
        )
        .unwrap();
    }
    let t = tempdir();
    let log = t.path().join("server.log");
    let dir_s = t.path().display().to_string();
    let serve = Serve::start_under(
        &["prlimit", "--nofile=1024:1024", "--"],
        &[
            "--root",
            &dir_s,
            "--write",
            &dir_s,
            "--audit-log",
            &format!("{dir_s}/audit.jsonl"),
            "--max-sessions",
            "4",
            "--pool-size",
            "1",
        ],
        &[&test_server(), "--log", log.to_str().unwrap()],
    );
    let pid = serve.child.id();
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    assert!(
        limits
            .lines()
            .any(|l| l.starts_with("Max open files") && l.contains(" 1024 ")),
        "{limits}"
    );
    let mut held = Vec::with_capacity(1100);
    let mut peak = 0;
    for i in 0..1100 {
        if i % 50 == 0 {
            peak = peak.max(open_fds(pid));
        }
        let Ok(mut s) = TcpStream::connect(&serve.addr) else {
            // The listen backlog may be full for a moment; the flood is what it is.
            continue;
        };
        if i % 2 == 1 {
            let _ = s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
        }
        held.push(s);
    }
    assert!(held.len() > 1024, "only {} sockets opened", held.len());
    let peak = peak.max(open_fds(pid));
    eprintln!(
        "{} sockets held; rootfence held at most {peak} descriptors",
        held.len()
    );
    assert!(peak < 1024, "rootfence holds {peak} descriptors");

    let r = serve.request("GET", "/healthz", &[], b"");
    assert_eq!(r.status, 200, "{r:?}");
    let sid = serve.open_session(&[]);
    let probe = t.path().join("probe.txt");
    std::fs::write(&probe, "still served").unwrap();
    let r = serve.post(
        &[("Mcp-Session-Id", &sid), ("MCP-Protocol-Version", "2025-11-25")],
        &format!(
            r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"read_path","arguments":{{"path":"{}"}}}}}}"#,
            probe.display()
        ),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.body.contains("still served"), "{r:?}");
    let r = serve.request("GET", "/healthz", &[], b"");
    assert_eq!(r.status, 200, "{r:?}");
    assert!(open_fds(pid) < 1024);

    // The idle sockets were closed by rootfence to make room: most read end-of-file.
    let mut closed = 0;
    for s in &mut held {
        s.set_read_timeout(Some(std::time::Duration::from_millis(20)))
            .unwrap();
        let mut buf = [0u8; 256];
        loop {
            match s.read(&mut buf) {
                Ok(0) => {
                    closed += 1;
                    break;
                }
                Ok(_) => continue,
                Err(_) => break,
            }
        }
    }
    eprintln!("{closed} of the held sockets were closed by rootfence");
    assert!(closed >= 100, "only {closed} idle sockets were closed");
    let err = serve.stderr();
    assert!(!err.contains("accepting a connection failed"), "{err}");
}

/// A connection that never sends a request, or only the HTTP/2 preface, or that keeps its
/// HTTP/1 connection open after a request, is closed after `--connection-idle`.
#[test]
fn idle_connections_are_closed_after_the_idle_timeout() {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    let t = tempdir();
    let (serve, _, _) = start(t.path(), &["--connection-idle", "1s"]);
    let mut silent = TcpStream::connect(&serve.addr).unwrap();
    let mut preface = TcpStream::connect(&serve.addr).unwrap();
    preface
        .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .unwrap();
    let mut kept = TcpStream::connect(&serve.addr).unwrap();
    write!(
        kept,
        "GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n",
        serve.addr
    )
    .unwrap();
    for (name, s) in [
        ("silent", &mut silent),
        ("h2c preface", &mut preface),
        ("keep-alive", &mut kept),
    ] {
        s.set_read_timeout(Some(serve_harness::PATIENCE)).unwrap();
        let mut buf = [0u8; 1024];
        loop {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => continue,
                Err(e) => panic!("{name}: not closed by rootfence: {e}"),
            }
        }
    }
}

/// Peak resident memory of a process (`VmHWM`), in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status")
}

/// Sends `head` and `body` on one connection while reading the reply (the server may answer
/// and close before it has read the body); the status code.
fn post_while_reading(addr: &str, head: String, body: Vec<u8>) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(serve_harness::PATIENCE)).unwrap();
    let mut w = s.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = w.write_all(head.as_bytes());
        for chunk in body.chunks(1 << 20) {
            if w.write_all(chunk).is_err() {
                break;
            }
        }
    });
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
        }
    }
    let _ = s.shutdown(std::net::Shutdown::Both);
    let _ = writer.join();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP reply: {text:?}"));
    (status, text)
}

/// The attack of issue 28 item 3: a 60 MB 2026-07-28 body of tiny values (30 million of
/// them). It is refused with 413 as soon as the value limit is crossed, and rootfence's peak
/// RSS grows by less than 32 MiB (it took 3.1 GB when the body was parsed into a value tree).
/// The same request of ordinary size is still served.
#[test]
fn a_huge_stateless_body_of_tiny_values_is_refused_with_bounded_memory() {
    let t = tempdir();
    let (serve, log, _) = start(t.path(), &[]);
    let pid = serve.child.id();
    let r = serve.request("GET", "/healthz", &[], b"");
    assert_eq!(r.status, 200);
    let before = peak_rss_kib(pid);

    let prefix = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{{META},"name":"read_path","arguments":{{"path":"tiny-values-marker","v":["#
    );
    let suffix = "0]}}}";
    let n = (60_000_000 - prefix.len() - suffix.len()) / 2;
    let mut body = Vec::with_capacity(60_000_000);
    body.extend_from_slice(prefix.as_bytes());
    for _ in 0..n {
        body.extend_from_slice(b"0,");
    }
    body.extend_from_slice(suffix.as_bytes());
    assert!(body.len() >= 60_000_000 - 2);
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: read_path\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        serve.addr,
        body.len()
    );
    let (status, reply) = post_while_reading(&serve.addr, head, body);
    assert_eq!(status, 413, "{reply}");
    assert!(reply.contains("--max-json-values"), "{reply}");
    let after = peak_rss_kib(pid);
    let grew = after.saturating_sub(before);
    eprintln!("peak RSS {before} KiB -> {after} KiB (+{grew} KiB)");
    assert!(grew < 32 * 1024, "peak RSS grew by {grew} KiB");
    assert!(!received(&log).contains("tiny-values-marker"));

    // Too deep is a 400.
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{{{META},"name":"read_path","arguments":{{"v":{}}}}}}}"#,
        "[".repeat(200) + &"]".repeat(200)
    );
    let r = serve.post(
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "read_path"),
        ],
        &deep,
    );
    assert_eq!(r.status, 400, "{r:?}");

    // An ordinary stateless call is served, its other members forwarded as written.
    let probe = t.path().join("probe.txt");
    std::fs::write(&probe, "served").unwrap();
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":"x-1","method":"tools/call","params":{{"name":"read_path","arguments":{{"path":"{}","v":[1,2.50,{{"k":null}}]}},{META}}}}}"#,
        probe.display()
    );
    let r = serve.post(
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "read_path"),
        ],
        &call,
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.json()["id"], "x-1", "{r:?}");
    assert!(r.body.contains("served"), "{r:?}");
    assert!(
        received(&log).contains(r#""v":[1,2.50,{"k":null}]"#),
        "{}",
        received(&log)
    );
}

fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !cond() {
        assert!(start.elapsed() < serve_harness::PATIENCE, "never: {what}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The attack of issue 28 item 6, sessions: with two tokens, one cannot take every session
/// slot (it stops at its share and is told so), the other gets the rest. With three, a token
/// below its fair share of a full server takes the slot of an idle session of the token
/// holding the most; a token at its fair share is refused.
#[test]
fn one_token_cannot_take_every_session_slot() {
    let t = tempdir();
    let tokens = t.path().join("tokens");
    std::fs::write(&tokens, "token-a\ntoken-b\ntoken-c\n").unwrap();
    let tokens_s = tokens.to_str().unwrap();
    let a = ("Authorization", "Bearer token-a");
    let b = ("Authorization", "Bearer token-b");
    let c = ("Authorization", "Bearer token-c");
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

    // Default share: half of --max-sessions.
    let (serve, _, _) = start(
        t.path(),
        &["--auth-token-file", tokens_s, "--max-sessions", "4"],
    );
    serve.open_session(&[a]);
    serve.open_session(&[a]);
    let r = serve.post(&[a], init);
    assert_eq!(r.status, 503, "{r:?}");
    assert!(r.body.contains("share"), "{r:?}");
    assert!(r.header("retry-after").is_some(), "{r:?}");
    serve.open_session(&[b]);
    serve.open_session(&[b]);
    let r = serve.post(&[b], init);
    assert_eq!(r.status, 503, "{r:?}");
    drop(serve);

    // Shares up to the whole table: fairness by taking an idle session back.
    let (serve, _, _) = start(
        t.path(),
        &[
            "--auth-token-file",
            tokens_s,
            "--max-sessions",
            "4",
            "--max-sessions-per-token",
            "4",
        ],
    );
    let a_sessions: Vec<String> = (0..3).map(|_| serve.open_session(&[a])).collect();
    let b_session = serve.open_session(&[b]);
    // Full: C holds nothing, below its fair share (4 / 3 principals): one of A's idle
    // sessions makes room.
    serve.open_session(&[c]);
    let ping = |h: &[(&str, &str)], sid: &str| {
        let mut h = h.to_vec();
        h.push(("Mcp-Session-Id", sid));
        serve
            .post(&h, r#"{"jsonrpc":"2.0","id":77,"method":"ping"}"#)
            .status
    };
    let alive_a = a_sessions.iter().filter(|s| ping(&[a], s) == 200).count();
    assert_eq!(alive_a, 2, "one of A's three sessions gave way");
    assert_eq!(
        ping(&[b], &b_session),
        200,
        "B, at its fair share, kept its session"
    );
    // B is at its fair share of a full table: refused, nobody's session taken.
    let r = serve.post(&[b], init);
    assert_eq!(r.status, 503, "{r:?}");
    assert_eq!(
        a_sessions.iter().filter(|s| ping(&[a], s) == 200).count(),
        2
    );
}

/// The attack of issue 28 item 6, pooled servers: token A keeps its pooled server busy and
/// asks for another under other roots; with two tokens it is at its share (half the pool),
/// so it is told to wait, and token B's stateless request is still served.
#[test]
fn one_token_cannot_take_every_pooled_server() {
    use std::io::Write;
    let t = tempdir();
    let tokens = t.path().join("tokens");
    std::fs::write(&tokens, "token-a\ntoken-b\n").unwrap();
    let (serve, log, _) = start(
        t.path(),
        &[
            "--auth-token-file",
            tokens.to_str().unwrap(),
            "--pool-size",
            "2",
        ],
    );
    let never = |n: u32| {
        format!(
            r#"{{"jsonrpc":"2.0","id":"hang-{n}","method":"never","params":{{"marker":"hang-{n}","inputResponses":{{"io.rootfence/http-roots":{{"roots":[{{"uri":"file:///tmp/share-{n}"}}]}}}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{"roots":{{}}}}}}}}}}"#
        )
    };
    // A's first request hangs in its pooled server.
    let body = never(1);
    let mut held = std::net::TcpStream::connect(&serve.addr).unwrap();
    write!(
        held,
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer token-a\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: never\r\nContent-Length: {}\r\n\r\n{body}",
        serve.addr,
        body.len()
    )
    .unwrap();
    eventually("A's request reaches its pooled server", || {
        received(&log).contains("hang-1")
    });
    // Under other roots, A needs a second pooled server: at its share, with its only one busy.
    let v = ("MCP-Protocol-Version", "2026-07-28");
    let r = serve.post(
        &[
            ("Authorization", "Bearer token-a"),
            v,
            ("Mcp-Method", "never"),
        ],
        &never(2),
    );
    assert_eq!(r.status, 503, "{r:?}");
    assert!(r.header("retry-after").is_some(), "{r:?}");
    assert!(!received(&log).contains("hang-2"));
    // B is served.
    let probe = t.path().join("probe.txt");
    std::fs::write(&probe, "B is served").unwrap();
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"read_path","arguments":{{"path":"{}"}},{META}}}}}"#,
        probe.display()
    );
    let r = serve.post(
        &[
            ("Authorization", "Bearer token-b"),
            v,
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "read_path"),
        ],
        &call,
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.body.contains("B is served"), "{r:?}");
    drop(held);
}
