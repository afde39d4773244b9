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
