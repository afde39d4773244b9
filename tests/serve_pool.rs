//! The session pool of `rootfence serve` (`--session-pool`, issue 30), through the real
//! binary: a session opens on a server that was already running before it was asked for,
//! the pool refills, a pre-started server that died is never handed out, a client whose
//! roots could change its grants never gets one, the pool is off when the roots come from
//! the client, and a drain leaves no process behind (every descendant of rootfence, the
//! sandbox launchers and PID-namespace inits included, as `process_containment.rs` checks).
//!
//! The server is the scripted test server (its `pid` method answers its pid as this test
//! sees it), under the default sandbox and policy.

mod common;
#[path = "common/serve_harness.rs"]
mod serve_harness;

use std::collections::{HashMap, HashSet};
use std::path::Path;

use common::{alive, eventually, tempdir, test_server};
use serve_harness::Serve;

const PID: &str = r#"{"jsonrpc":"2.0","id":2,"method":"pid"}"#;

fn start(dir: &Path, opts: &[&str]) -> Serve {
    let dir = dir.display().to_string();
    let mut all = vec!["--write", dir.as_str()];
    all.extend_from_slice(opts);
    Serve::start(&all, &[&test_server()])
}

/// One value of `/metrics`.
fn metric(serve: &Serve, name: &str) -> u64 {
    let r = serve.request("GET", "/metrics", &[], b"");
    assert_eq!(r.status, 200, "{r:?}");
    r.body
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in /metrics:\n{}", r.body))
}

/// Every process descending from `root` (by the parent pids in /proc), as pid -> command name.
fn descendants(root: u32) -> HashMap<i32, String> {
    let mut parent = HashMap::new();
    let mut comm = HashMap::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let rest: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        if rest.first() == Some(&"Z") {
            continue;
        }
        if let Some(ppid) = rest.get(1).and_then(|p| p.parse::<i32>().ok()) {
            parent.insert(pid, ppid);
            comm.insert(pid, stat[open + 1..close].to_owned());
        }
    }
    let mut out = HashMap::new();
    let mut frontier = vec![root as i32];
    while let Some(p) = frontier.pop() {
        for (&child, &pp) in &parent {
            if pp == p && !out.contains_key(&child) {
                out.insert(child, comm[&child].clone());
                frontier.push(child);
            }
        }
    }
    out
}

/// The test servers running under rootfence now.
fn servers(serve: &Serve) -> HashSet<i32> {
    descendants(serve.child.id())
        .into_iter()
        .filter(|(_, c)| c == "test_server")
        .map(|(p, _)| p)
        .collect()
}

fn session_pid(serve: &Serve, id: &str) -> i32 {
    let r = serve.post(&[("Mcp-Session-Id", id)], PID);
    assert_eq!(r.status, 200, "{r:?}");
    r.json()["result"]["pid"]
        .as_i64()
        .unwrap_or_else(|| panic!("no pid: {r:?}")) as i32
}

#[test]
fn a_session_opens_on_a_pre_started_server_and_the_pool_refills() {
    let t = tempdir();
    let audit = t.path().join("audit.jsonl");
    let root = t.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let serve = start(
        t.path(),
        &[
            "--root",
            root.to_str().unwrap(),
            "--session-pool",
            "2",
            "--audit-log",
            audit.to_str().unwrap(),
        ],
    );
    eventually("two servers ready", || {
        metric(&serve, "rootfence_session_pool_ready") == 2 && servers(&serve).len() == 2
    });
    let before = servers(&serve);
    let id = serve.open_session(&[]);
    let pid = session_pid(&serve, &id);
    assert!(
        before.contains(&pid),
        "the session's server {pid} was running before the session opened ({before:?})"
    );
    assert_eq!(metric(&serve, "rootfence_session_pool_taken_total"), 1);
    eventually("the pool is refilled off the request path", || {
        metric(&serve, "rootfence_session_pool_started_total") == 3
            && metric(&serve, "rootfence_session_pool_ready") == 2
    });
    // A second session gets another pre-started server, never the first one's.
    let id2 = serve.open_session(&[]);
    let pid2 = session_pid(&serve, &id2);
    assert_ne!(pid, pid2, "one server per session");
    assert!(servers(&serve).contains(&pid2));
    assert_eq!(metric(&serve, "rootfence_session_pool_taken_total"), 2);
    // The audit log says where the server came from.
    let log = std::fs::read_to_string(&audit).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains(r#""event":"server_start""#) && l.contains(r#""trigger":"pool""#)),
        "{log}"
    );
}

#[test]
fn a_dead_pre_started_server_is_discarded_never_handed_out() {
    let t = tempdir();
    let serve = start(
        t.path(),
        &["--root", t.path().to_str().unwrap(), "--session-pool", "1"],
    );
    eventually("one server ready", || {
        metric(&serve, "rootfence_session_pool_ready") == 1 && servers(&serve).len() == 1
    });
    let dead = *servers(&serve).iter().next().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(dead),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    eventually("the dead server is discarded", || {
        metric(&serve, "rootfence_session_pool_discarded_total") == 1
    });
    let id = serve.open_session(&[]);
    let pid = session_pid(&serve, &id);
    assert_ne!(pid, dead);
    assert!(alive(pid));
    let r = serve.post(
        &[("Mcp-Session-Id", &id)],
        r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
    );
    assert_eq!(r.status, 200, "{r:?}");
}

#[test]
fn a_client_with_roots_gets_a_server_of_its_own_not_a_pre_started_one() {
    let t = tempdir();
    let serve = start(
        t.path(),
        &["--root", t.path().to_str().unwrap(), "--session-pool", "1"],
    );
    eventually("one server ready", || {
        metric(&serve, "rootfence_session_pool_ready") == 1 && servers(&serve).len() == 1
    });
    let pooled = servers(&serve);
    // Its roots are intersected with --root: they could narrow the grants.
    let r = serve.post(
        &[],
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"raw","version":"1"}}}"#,
    );
    assert_eq!(r.status, 200, "{r:?}\n{}", serve.stderr());
    let id = r.header("mcp-session-id").expect("a session").to_owned();
    assert_eq!(metric(&serve, "rootfence_session_pool_bypassed_total"), 1);
    assert_eq!(metric(&serve, "rootfence_session_pool_taken_total"), 0);
    let pid = session_pid(&serve, &id);
    assert!(!pooled.contains(&pid), "{pid} was pre-started");
    assert!(
        pooled.iter().all(|&p| alive(p)),
        "the pre-started server still waits"
    );
}

#[test]
fn the_pool_is_off_when_the_roots_come_from_the_client() {
    let t = tempdir();
    let serve = start(t.path(), &["--session-pool", "2"]);
    let r = serve.request("GET", "/capacity", &[], b"");
    let c = r.json();
    assert_eq!(c["session_pool"]["size"], 0, "{c}");
    assert!(
        c["session_pool"]["off_because"]
            .as_str()
            .is_some_and(|s| s.contains("--root")),
        "{c}"
    );
    assert!(serve.stderr().contains("--session-pool is off"));
    assert!(servers(&serve).is_empty(), "nothing pre-started");
    let id = serve.open_session(&[]);
    session_pid(&serve, &id);
    assert_eq!(metric(&serve, "rootfence_session_pool_taken_total"), 0);
    assert_eq!(metric(&serve, "rootfence_session_pool_started_total"), 0);
}

#[test]
fn a_drain_stops_pre_started_servers_and_leaves_no_process_behind() {
    let t = tempdir();
    let mut serve = start(
        t.path(),
        &[
            "--root",
            t.path().to_str().unwrap(),
            "--session-pool",
            "2",
            "--drain-timeout",
            "2s",
        ],
    );
    let id = serve.open_session(&[]);
    session_pid(&serve, &id);
    eventually("a session and two servers ready", || {
        metric(&serve, "rootfence_session_pool_ready") == 2 && servers(&serve).len() == 3
    });
    let all: Vec<i32> = descendants(serve.child.id()).into_keys().collect();
    let status = serve.stop();
    assert!(status.success(), "{status:?}\n{}", serve.stderr());
    for pid in all {
        eventually("every process rootfence started is gone", || !alive(pid));
    }
}
