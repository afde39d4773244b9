//! Interop harness shared by end-to-end tests that drive real third-party MCP peers: where
//! the pinned peers live (installed by `scripts/install-test-peers.sh`), the servers, the
//! wrappers a session can go through, running the Python SDK or rmcp client for a transcript,
//! and comparing two transcripts. Included with
//! `#[path = "common/interop_peers.rs"] mod interop_peers;` (see `tests/interop.rs`).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long one client run may take before the harness kills it (each client also bounds
/// itself with `--timeout`; this is the backstop that keeps a wedged wrapper from hanging).
pub const RUN_LIMIT: Duration = Duration::from_secs(120);

// -------------------------------------------------------------------------------------------
// Peers and wrappers
// -------------------------------------------------------------------------------------------

/// `tests/peers`: the pinned peers' manifests, lock files, drivers and installs.
pub fn peers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers")
}

/// The Python of the venv that holds the pinned `mcp` SDK.
pub fn python() -> PathBuf {
    peers_dir().join(".venv/bin/python")
}

/// The scripted rmcp client (`tests/peers/rmcp-client`), built in its own target dir.
pub fn rmcp_client() -> PathBuf {
    peers_dir().join("rmcp-client/target/release/rmcp-client")
}

/// The entry script of an installed npm server (`everything-2025`, `everything-latest`,
/// `@modelcontextprotocol/server-filesystem`), run with `node` directly, never `npx`.
pub fn node_entry(package: &str) -> PathBuf {
    peers_dir()
        .join("node/node_modules")
        .join(package)
        .join("dist/index.js")
}

/// Fails with an actionable message when the pinned peers are not installed.
pub fn require_peers() {
    // The root the scripted clients declare must exist: rootfence drops a host root it
    // cannot open as a directory (it could not enforce anything beneath it).
    std::fs::create_dir_all("/tmp/rootfence-interop-root").expect("create the client's root");
    let needed = [
        python(),
        rmcp_client(),
        node_entry("everything-2025"),
        node_entry("everything-latest"),
        node_entry("@modelcontextprotocol/server-filesystem"),
    ];
    let missing: Vec<String> = needed
        .iter()
        .filter(|p| !p.exists())
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "the interop test peers are not installed (missing: {}).\n\
         Run `scripts/install-test-peers.sh` from the repository root (it needs node >= 20 \
         with npm, python3 and cargo, and network access to the npm registry, PyPI and \
         crates.io); `scripts/test.sh` and CI run it for you.",
        missing.join(", ")
    );
    // A lock file changed after the install (a pull, a version bump): the installed peers
    // may not be the pinned ones any more.
    let stale: Vec<String> = [
        (
            "node/node_modules/.rootfence-stamp",
            "node/package-lock.json",
        ),
        (".venv/.rootfence-stamp", "python/requirements.txt"),
        (
            "rmcp-client/target/.rootfence-stamp",
            "rmcp-client/Cargo.toml",
        ),
        (
            "rmcp-client/target/.rootfence-stamp",
            "rmcp-client/Cargo.lock",
        ),
        (
            "rmcp-client/target/.rootfence-stamp",
            "rmcp-client/src/main.rs",
        ),
    ]
    .iter()
    .filter(|(stamp, lock)| {
        let modified = |p: &str| {
            std::fs::metadata(peers_dir().join(p))
                .and_then(|m| m.modified())
                .ok()
        };
        match (modified(stamp), modified(lock)) {
            (Some(stamp), Some(lock)) => lock > stamp,
            _ => true,
        }
    })
    .map(|(_, lock)| format!("tests/peers/{lock}"))
    .collect();
    assert!(
        stale.is_empty(),
        "the interop test peers are older than {}: run `scripts/install-test-peers.sh` again",
        stale.join(", ")
    );
    assert!(
        Command::new("node")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success()),
        "`node` is not on PATH: the npm test servers need Node.js 20 or later"
    );
}

/// A server command line, with whatever temporary tree it serves kept alive beside it.
pub struct Server {
    /// The command line.
    pub argv: Vec<String>,
    _tree: Option<tempfile::TempDir>,
}

/// server-everything 2025.11.25: 100 `test://` resources in pages of 10, subscription
/// updates every 10 s, roots and sampling requests to the client.
pub fn everything_2025() -> Server {
    Server {
        argv: vec![
            "node".into(),
            node_entry("everything-2025").display().to_string(),
            "stdio".into(),
        ],
        _tree: None,
    }
}

/// server-everything 2026.8.31: 7 documents without pagination, templated dynamic resources,
/// updates toggled by the `toggle-subscriber-updates` tool.
pub fn everything_latest() -> Server {
    Server {
        argv: vec![
            "node".into(),
            node_entry("everything-latest").display().to_string(),
            "stdio".into(),
        ],
        _tree: None,
    }
}

/// The Python SDK's own server (`tests/peers/py/server.py`): the peer that speaks 2026-07-28,
/// which the npm servers' TypeScript SDK does not.
pub fn python_server() -> Server {
    Server {
        argv: vec![
            python().display().to_string(),
            peers_dir().join("py/server.py").display().to_string(),
        ],
        _tree: None,
    }
}

/// server-filesystem over a fresh tree: `<tmp>/root` is the allowed directory, and
/// `<tmp>/root_evil` is the CVE-2025-53110 sibling whose name extends the root's.
pub fn filesystem() -> (Server, PathBuf) {
    let tree = tempfile::tempdir().expect("create a temp dir");
    // Canonical, so the server's own realpath of its root matches what the script sends.
    let base = tree
        .path()
        .canonicalize()
        .expect("canonicalize the temp dir");
    let root = base.join("root");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(base.join("root_evil")).unwrap();
    // A project that has its editors' directories already. Without them, the default sandbox
    // adds empty read-only placeholders for the session (docs/sandbox.md, "Read-only
    // paths"), which a listing of the root shows and a direct run does not.
    for dir in [".vscode", ".cursor", ".claude"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    std::fs::write(root.join("a.txt"), "hello from inside the root\n").unwrap();
    std::fs::write(root.join("sub/b.txt"), "nested file\n").unwrap();
    std::fs::write(base.join("root_evil/secret.txt"), "outside\n").unwrap();
    let server = Server {
        argv: vec![
            "node".into(),
            node_entry("@modelcontextprotocol/server-filesystem")
                .display()
                .to_string(),
            root.display().to_string(),
        ],
        _tree: Some(tree),
    };
    (server, base)
}

/// What stands between the client and the server.
#[derive(Clone, Debug)]
pub enum Via {
    Direct,
    /// `byte_relay.py`: proves the harness's wrapper path with a relay that changes nothing.
    ByteRelay,
    /// `byte_relay.py --tamper`: a relay that changes one string in the server's output.
    TamperingRelay(&'static str, &'static str),
    /// `rootfence run -- <server>`: the product.
    Rootfence,
    /// `rootfence run <options> -- <server>`, e.g. `--root DIR` or `--policy FILE`.
    RootfenceWith(Vec<String>),
}

/// The command line that runs `server` through `via`.
pub fn wrapped(via: &Via, server: &[String]) -> Vec<String> {
    let mut argv: Vec<String> = match via {
        Via::Direct => return server.to_vec(),
        Via::ByteRelay => vec![
            python().display().to_string(),
            peers_dir().join("py/byte_relay.py").display().to_string(),
        ],
        Via::TamperingRelay(old, new) => vec![
            python().display().to_string(),
            peers_dir().join("py/byte_relay.py").display().to_string(),
            "--tamper".into(),
            (*old).into(),
            (*new).into(),
        ],
        Via::Rootfence => vec![env!("CARGO_BIN_EXE_rootfence").into(), "run".into()],
        Via::RootfenceWith(options) => {
            let mut argv = vec![env!("CARGO_BIN_EXE_rootfence").into(), "run".into()];
            argv.extend(options.iter().cloned());
            argv
        }
    };
    argv.push("--".into());
    argv.extend(server.iter().cloned());
    argv
}

// -------------------------------------------------------------------------------------------
// Running a client
// -------------------------------------------------------------------------------------------

/// Which official SDK plays the host.
#[derive(Clone, Copy, Debug)]
pub enum Client {
    /// The official Python SDK (`mcp` 2.3.0) through `session.py`.
    Python,
    /// The official Rust SDK (`rmcp` 3.9.0) through `rmcp-client`.
    Rmcp,
}

/// Runs one scripted session and returns its transcript; panics with the client's stderr
/// when it fails or outlives [`RUN_LIMIT`].
pub fn session(client: Client, args: &[String], server: &[String], via: &Via) -> Value {
    let mut cmd = match client {
        Client::Python => {
            let mut c = Command::new(python());
            c.arg(peers_dir().join("py/session.py"));
            c
        }
        Client::Rmcp => Command::new(rmcp_client()),
    };
    cmd.args(args)
        .arg("--")
        .args(wrapped(via, server))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let label = format!("{client:?} via {via:?}");
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("{label}: cannot start the client: {e}"));
    // Drain both pipes on threads so a chatty server cannot fill one and wedge the client.
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut v).ok();
        v
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut stderr, &mut v).ok();
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the client") {
            break status;
        }
        if start.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = String::from_utf8_lossy(&err.join().unwrap_or_default()).into_owned();
            panic!("{label}: still running after {RUN_LIMIT:?}; killed it. stderr:\n{stderr}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = String::from_utf8_lossy(&err.join().unwrap_or_default()).into_owned();
    assert!(
        status.success(),
        "{label}: the session failed ({status}).\ncommand: {cmd:?}\nstderr:\n{stderr}"
    );
    serde_json::from_slice(&stdout).unwrap_or_else(|e| {
        panic!(
            "{label}: the transcript is not JSON ({e}).\nstdout:\n{}\nstderr:\n{stderr}",
            String::from_utf8_lossy(&stdout)
        )
    })
}

/// Runs the session directly and through `via` at the same time, asserts the transcripts
/// are identical, and returns the direct one for the caller's own checks.
pub fn same_both_ways(client: Client, args: &[&str], server: &Server, via: &Via) -> Value {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (direct, through) = std::thread::scope(|s| {
        let direct = s.spawn(|| session(client, &args, &server.argv, &Via::Direct));
        let through = s.spawn(|| session(client, &args, &server.argv, via));
        (join(direct), join(through))
    });
    if direct != through {
        let (path, d, t) = first_difference(&direct, &through, "$".into())
            .unwrap_or_else(|| ("$".into(), direct.clone(), through.clone()));
        let dump = |v: &Value| {
            let s = v.to_string();
            if s.len() > 2000 {
                format!("{}… ({} bytes)", &s[..2000], s.len())
            } else {
                s
            }
        };
        panic!(
            "{client:?}: the transcript through {via:?} differs from the direct one.\n\
             first difference at {path}\n  direct:  {}\n  through: {}",
            dump(&d),
            dump(&t)
        );
    }
    direct
}

fn join<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// The JSON path of the first place two values differ, with the two sub-values there.
pub fn first_difference(a: &Value, b: &Value, path: String) -> Option<(String, Value, Value)> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let (va, vb) = (x.get(k), y.get(k));
                if va != vb {
                    let sub = format!("{path}.{k}");
                    return match (va, vb) {
                        (Some(va), Some(vb)) => first_difference(va, vb, sub),
                        _ => Some((
                            sub,
                            va.cloned().unwrap_or(Value::Null),
                            vb.cloned().unwrap_or(Value::Null),
                        )),
                    };
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                if va != vb {
                    return first_difference(va, vb, format!("{path}[{i}]"));
                }
            }
            (x.len() != y.len()).then(|| {
                (
                    format!("{path} (length {} vs {})", x.len(), y.len()),
                    a.clone(),
                    b.clone(),
                )
            })
        }
        _ => (a != b).then(|| (path, a.clone(), b.clone())),
    }
}

// -------------------------------------------------------------------------------------------
// The scripted sessions, and what the direct transcript must show
// -------------------------------------------------------------------------------------------

/// The transcript's steps of one kind (`read`, `call`, `list-resources`, ...), in order.
pub fn steps<'a>(t: &'a Value, name: &str) -> Vec<&'a Value> {
    t["steps"]
        .as_array()
        .expect("transcript has steps")
        .iter()
        .filter(|s| s["step"] == name)
        .collect()
}

/// Borrowed view of owned arguments, for [`same_both_ways`].
pub fn as_strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// The full session against server-everything 2025.11.25: every one of the 10 pages of
/// `test://` resources, templates, text and blob reads, a read error, a subscription with its
/// timed update, tools (echo, add, an embedded resource, resource links, a server→client
/// `roots/list` answered by the client), prompts (with an embedded resource) and completion.
pub const EVERYTHING_2025_SESSION: &[&str] = &[
    "--read",
    "test://static/resource/1",
    "--read",
    "test://static/resource/2",
    "--read",
    "test://static/resource/100",
    "--read-error",
    "test://static/resource/101",
    "--subscribe",
    "test://static/resource/3",
    "--update-timeout",
    "25",
    "--roots",
    "file:///tmp/rootfence-interop-root",
    "--call",
    r#"echo={"message":"hello through the relay"}"#,
    "--call",
    r#"add={"a":2,"b":40}"#,
    "--call",
    r#"getResourceReference={"resourceId":4}"#,
    "--call",
    r#"getResourceLinks={"count":3}"#,
    "--call",
    "listRoots",
    "--call-error",
    "no-such-tool",
    "--prompt",
    "simple_prompt",
    "--prompt",
    r#"resource_prompt={"resourceId":"5"}"#,
];

/// What the Python client adds to [`EVERYTHING_2025_SESSION`] (the rmcp client here has no
/// completion step and answers no sampling): completion, and a tool that makes the server
/// send `sampling/createMessage` to the client mid-call.
pub const EVERYTHING_2025_PYTHON_EXTRA: &[&str] = &[
    "--complete",
    "complex_prompt:style=f",
    "--sampling",
    "a canned completion from the interop client",
    "--call",
    r#"sampleLLM={"prompt":"say hi","maxTokens":20}"#,
];

/// The Python client's session against server-everything 2025.11.25.
pub fn everything_2025_python() -> Vec<&'static str> {
    [EVERYTHING_2025_SESSION, EVERYTHING_2025_PYTHON_EXTRA].concat()
}
