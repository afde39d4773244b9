//! `rootfence serve` as a fleet (issue 30): several replicas sharing a key, each advertising
//! its address, behind a load balancer that spreads requests without regard to sessions.
//! Here the test is the round-robin balancer: every request of a session goes to another
//! replica than the last. Every session must work end to end; a forged owner is refused; a
//! stopped replica's sessions get a clean error while the others' keep working.

mod common;
#[path = "common/serve_harness.rs"]
mod serve_harness;

use std::path::Path;

use common::{tempdir, test_server};
use serve_harness::Serve;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `n` replicas sharing `key`, each advertising its own address.
fn fleet(dir: &Path, n: usize) -> Vec<Serve> {
    let key = dir.join("key");
    std::fs::write(&key, "a key every replica shares, 32 bytes or more").unwrap();
    let log = dir.join("server.log");
    let dir_s = dir.display().to_string();
    (0..n)
        .map(|i| {
            let addr = format!("127.0.0.1:{}", free_port());
            let audit = format!("{dir_s}/audit-{i}.jsonl");
            Serve::start(
                &[
                    "--listen",
                    &addr,
                    "--advertise",
                    &addr,
                    "--state-key-file",
                    key.to_str().unwrap(),
                    "--root",
                    &dir_s,
                    "--write",
                    &dir_s,
                    "--audit-log",
                    &audit,
                ],
                &[&test_server(), "--log", log.to_str().unwrap()],
            )
        })
        .collect()
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
const V: (&str, &str) = ("MCP-Protocol-Version", "2025-11-25");

fn call(path: &Path, id: u32) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"read_path","arguments":{{"path":"{}"}}}}}}"#,
        path.display()
    )
}

#[test]
fn sessions_work_whichever_replica_each_request_reaches() {
    let t = tempdir();
    let replicas = fleet(t.path(), 3);
    let probe = t.path().join("probe.txt");
    std::fs::write(&probe, "answered by the owner").unwrap();

    // Round robin: initialize on one replica, everything after on the others.
    let mut sessions = Vec::new();
    for i in 0..9 {
        let r = replicas[i % 3].post(&[], INIT);
        assert_eq!(r.status, 200, "{r:?}");
        let id = r.header("mcp-session-id").unwrap().to_owned();
        let sid = ("Mcp-Session-Id", id.as_str());
        let r = replicas[(i + 1) % 3].post(
            &[sid, V],
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        );
        assert_eq!(r.status, 202, "initialized via another replica: {r:?}");
        let r = replicas[(i + 2) % 3].post(&[sid, V], &call(&probe, 1));
        assert_eq!(r.status, 200, "{r:?}");
        assert!(r.body.contains("answered by the owner"), "{r:?}");
        sessions.push((i % 3, id));
    }

    // A GET stream opened through another replica is relayed whole: a notification the
    // server sends (prompted by a POST through a third replica) arrives on it.
    {
        use std::io::{BufRead, BufReader, Write};
        let (owner, id) = &sessions[1];
        let mut get = std::net::TcpStream::connect(&replicas[(owner + 1) % 3].addr).unwrap();
        get.set_read_timeout(Some(serve_harness::PATIENCE)).unwrap();
        write!(
            get,
            "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nMcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n"
        )
        .unwrap();
        let mut reader = BufReader::new(get);
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        assert!(status.contains(" 200 "), "{status}");
        let emit = r#"{"jsonrpc":"2.0","id":8,"method":"emit","params":{"lines":["{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}"]}}"#;
        let r = replicas[(owner + 2) % 3].post(&[("Mcp-Session-Id", id), V], emit);
        assert_eq!(r.status, 200, "{r:?}");
        let mut line = String::new();
        loop {
            line.clear();
            let n = reader.read_line(&mut line).unwrap();
            assert!(n > 0, "the forwarded GET stream ended");
            if line.contains("notifications/tools/list_changed") {
                break;
            }
        }
    }

    // A forged owner (another address spliced into an id) is refused, not followed.
    let (_, id) = &sessions[0];
    let mut parts: Vec<&str> = id.split('.').collect();
    assert_eq!(parts.len(), 3, "{id}");
    let elsewhere = base64_url(replicas[2].addr.as_bytes());
    parts[1] = &elsewhere;
    let forged = parts.join(".");
    let r = replicas[1].post(&[("Mcp-Session-Id", &forged), V], &call(&probe, 2));
    assert_eq!(r.status, 404, "{r:?}");

    // DELETE through another replica ends the session on its owner.
    let (owner, id) = &sessions[3];
    let r = replicas[(owner + 1) % 3].request("DELETE", "/mcp", &[("Mcp-Session-Id", id)], b"");
    assert_eq!(r.status, 204, "{r:?}");
    for replica in &replicas {
        let r = replica.post(&[("Mcp-Session-Id", id), V], &call(&probe, 3));
        assert_eq!(r.status, 404, "{r:?}");
    }

    // One replica stopped: its sessions get a clean 404 through the others; the others'
    // sessions keep working through any replica.
    let mut replicas = replicas;
    let stopped = 1;
    let _ = replicas[stopped].child.kill();
    let _ = replicas[stopped].child.wait();
    for (owner, id) in &sessions[4..] {
        for (k, replica) in replicas.iter().enumerate() {
            if k == stopped {
                continue;
            }
            let r = replica.post(&[("Mcp-Session-Id", id), V], &call(&probe, 4));
            if *owner == stopped {
                assert_eq!(r.status, 404, "{r:?}");
                assert!(r.body.contains("start a new session"), "{r:?}");
            } else {
                assert_eq!(r.status, 200, "{r:?}");
                assert!(r.body.contains("answered by the owner"), "{r:?}");
            }
        }
    }
}

fn base64_url(bytes: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..=chunk.len() {
            out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// The replica a session id names (its middle part, base64url).
fn owner_of(id: &str) -> String {
    let middle = id.split('.').nth(1).unwrap();
    let mut bits = 0u32;
    let mut n = 0;
    let mut out = Vec::new();
    for c in middle.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            _ => 63,
        };
        bits = (bits << 6) | u32::from(v);
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
            bits &= (1 << n) - 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// nginx (Debian's package, installed by scripts/install-test-peers.sh) started on loopback
/// in front of `backends`, round-robin, with the settings docs/serve.md gives for SSE.
struct Nginx {
    child: std::process::Child,
    addr: String,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM: the master stops its worker before it exits (SIGKILL would leave it).
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let _ = self.child.wait();
    }
}

fn nginx(dir: &Path, backends: &[&str]) -> Option<Nginx> {
    let bin = ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .into_iter()
        .find(|p| Path::new(p).exists())?;
    let port = free_port();
    let servers: String = backends
        .iter()
        .map(|b| format!("server {b} max_fails=0;\n"))
        .collect();
    let d = dir.display();
    let user = if nix::unistd::getuid().is_root() {
        "user root;"
    } else {
        ""
    };
    let conf = format!(
        r#"{user}
daemon off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/nginx-error.log;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {d}/ngx-body;
    proxy_temp_path {d}/ngx-proxy;
    fastcgi_temp_path {d}/ngx-fastcgi;
    uwsgi_temp_path {d}/ngx-uwsgi;
    scgi_temp_path {d}/ngx-scgi;
    upstream fleet {{
        {servers}
        keepalive 16;
        keepalive_timeout 50s;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://fleet;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_buffering off;
            proxy_read_timeout 1h;
            client_max_body_size 64m;
        }}
    }}
}}
"#
    );
    let path = dir.join("nginx.conf");
    std::fs::write(&path, conf).unwrap();
    let child = std::process::Command::new(bin)
        .args(["-p", &dir.display().to_string(), "-c"])
        .arg(&path)
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let addr = format!("127.0.0.1:{port}");
    let start = std::time::Instant::now();
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(
            start.elapsed() < serve_harness::PATIENCE,
            "nginx did not start: {}",
            std::fs::read_to_string(dir.join("nginx-error.log")).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Some(Nginx { child, addr })
}

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

fn stateless_call(addr: &str, path: &Path, n: u32) -> serve_harness::Reply {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"read_path","arguments":{{"path":"{}"}},{META}}}}}"#,
        path.display()
    );
    serve_harness::http(
        addr,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "read_path"),
        ],
        body.as_bytes(),
    )
}

/// Issue 30's acceptance test: three replicas behind Debian's nginx, round-robin, no
/// stickiness. 30 concurrent legacy sessions all answered; 200 stateless requests spread
/// across replicas; one replica stopped mid-run: stateless requests still all succeed, its
/// own sessions get a clean 404, the others' keep working.
#[test]
fn three_replicas_behind_nginx_round_robin_lose_no_session() {
    let t = tempdir();
    let replicas = fleet(t.path(), 3);
    let addrs: Vec<&str> = replicas.iter().map(|r| r.addr.as_str()).collect();
    let Some(lb) = nginx(t.path(), &addrs) else {
        eprintln!(
            "skipped: nginx is not installed (scripts/install-test-peers.sh installs it as root)"
        );
        return;
    };
    let probe = t.path().join("probe.txt");
    std::fs::write(&probe, "through nginx").unwrap();
    let lb_addr = lb.addr.clone();

    let sessions: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..30)
            .map(|i| {
                let lb_addr = lb_addr.clone();
                let probe = probe.clone();
                s.spawn(move || {
                    let post = |h: &[(&str, &str)], body: &str| {
                        let mut headers = vec![
                            ("Content-Type", "application/json"),
                            ("Accept", "application/json, text/event-stream"),
                        ];
                        headers.extend_from_slice(h);
                        serve_harness::http(&lb_addr, "POST", "/mcp", &headers, body.as_bytes())
                    };
                    let r = post(&[], INIT);
                    assert_eq!(r.status, 200, "session {i}: {r:?}");
                    let id = r.header("mcp-session-id").unwrap().to_owned();
                    let sid = ("Mcp-Session-Id", id.as_str());
                    let r = post(
                        &[sid, V],
                        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                    );
                    assert_eq!(r.status, 202, "session {i}: {r:?}");
                    for n in 1..=3 {
                        let r = post(&[sid, V], &call(&probe, n));
                        assert_eq!(r.status, 200, "session {i}, call {n}: {r:?}");
                        assert!(r.body.contains("through nginx"), "{r:?}");
                    }
                    id
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let owners: std::collections::HashSet<String> = sessions.iter().map(|s| owner_of(s)).collect();
    assert_eq!(
        owners.len(),
        3,
        "sessions opened on every replica: {owners:?}"
    );

    for n in 0..200 {
        let r = stateless_call(&lb.addr, &probe, n);
        assert_eq!(r.status, 200, "stateless {n}: {r:?}");
        assert!(r.body.contains("through nginx"), "{r:?}");
    }

    // Stop one replica mid-run.
    let mut replicas = replicas;
    let stopped = replicas[1].addr.clone();
    let _ = replicas[1].child.kill();
    let _ = replicas[1].child.wait();
    for n in 200..400 {
        let r = stateless_call(&lb.addr, &probe, n);
        assert_eq!(
            r.status, 200,
            "stateless {n} after a replica stopped: {r:?}"
        );
    }
    let mut lost = 0;
    for id in &sessions {
        let r = serve_harness::http(
            &lb.addr,
            "POST",
            "/mcp",
            &[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("Mcp-Session-Id", id),
                V,
            ],
            call(&probe, 9).as_bytes(),
        );
        if owner_of(id) == stopped {
            assert_eq!(r.status, 404, "{r:?}");
            assert!(r.body.contains("start a new session"), "{r:?}");
            lost += 1;
        } else {
            assert_eq!(r.status, 200, "{r:?}");
            assert!(r.body.contains("through nginx"), "{r:?}");
        }
    }
    assert!(lost > 0 && lost < sessions.len());
}
