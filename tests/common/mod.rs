//! Shared harness for end-to-end tests: runs the real `rootfence` binary as a scripted host
//! would, with pipes on its stdin/stdout/stderr, and reads its output with timeouts so a bug
//! shows up as a failed assertion, never as a hung test.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Waits until a stderr reader thread has read its pipe to the end. Bounded (5 s): a
/// process left behind could hold the pipe open. Shared with `hostile.rs`.
pub fn wait_for_reader(reader: Option<&std::thread::JoinHandle<()>>) {
    let drained = Instant::now() + Duration::from_secs(5);
    while reader.is_some_and(|t| !t.is_finished()) && Instant::now() < drained {
        std::thread::sleep(Duration::from_millis(5));
    }
}

use serde_json::Value;

/// How long any single expected event may take before the test fails.
pub const PATIENCE: Duration = Duration::from_secs(15);

/// The rootfence binary under test.
pub fn rootfence() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_rootfence"))
}

/// `rootfence audit show <args> LOG`'s output; fails the test, with its stderr, when the
/// command fails.
pub fn audit_show(args: &[&str], log: &std::path::Path) -> String {
    let o = std::process::Command::new(rootfence())
        .args(["audit", "show"])
        .args(args)
        .arg(log)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "audit show {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// An example binary built next to rootfence (`cargo build --examples`; `cargo test` and
/// `cargo nextest run` build them).
pub fn example(name: &str) -> PathBuf {
    let path = rootfence()
        .parent()
        .expect("the binary has a directory")
        .join("examples")
        .join(name);
    assert!(
        path.exists(),
        "{} is missing: build the examples first (`cargo build --examples`; scripts/test.sh does)",
        path.display()
    );
    path
}

/// The scripted test server.
pub fn test_server() -> String {
    example("test_server").to_string_lossy().into_owned()
}

/// A running `rootfence` with its stdio in the test's hands.
pub struct Proxy {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Raw bytes: a read can end inside a UTF-8 character, so they are decoded when asked.
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_reader: Option<std::thread::JoinHandle<()>>,
}

impl Proxy {
    /// Starts `rootfence <args...>`.
    pub fn start(args: &[&str]) -> Proxy {
        let mut cmd = Command::new(rootfence());
        cmd.args(args);
        Proxy::spawn(cmd)
    }

    /// Starts `rootfence run <opts...> -- <server...>`.
    pub fn run(opts: &[&str], server: &[&str]) -> Proxy {
        let mut cmd = Command::new(rootfence());
        cmd.arg("run").args(opts).arg("--").args(server);
        Proxy::spawn(cmd)
    }

    pub fn spawn(mut cmd: Command) -> Proxy {
        // Audit logs of tests without --audit-log go to a scratch state directory, never to
        // the developer's own ~/.local/state.
        let state = std::env::temp_dir().join("rootfence-test-state");
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // ROOTFENCE_TEST_LOG=debug shows rootfence's own diagnostics in a failing test.
            .env(
                "RUST_LOG",
                std::env::var("ROOTFENCE_TEST_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .env("XDG_STATE_HOME", state);
        let mut child = cmd.spawn().expect("rootfence starts");
        let stdout = child.stdout.take().unwrap();
        let stderr_pipe = child.stderr.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&stderr);
        let stderr_reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            let mut pipe = stderr_pipe;
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Proxy {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
            stderr_reader: Some(stderr_reader),
        }
    }

    /// Writes raw bytes to rootfence's stdin.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).expect("rootfence reads its stdin");
        stdin.flush().unwrap();
    }

    /// Writes one line (a newline is added).
    pub fn send(&mut self, line: &str) {
        self.send_raw(format!("{line}\n").as_bytes());
    }

    /// Writes a JSON value as one line.
    pub fn send_json(&mut self, v: &Value) {
        self.send(&v.to_string());
    }

    /// The next line rootfence writes to stdout.
    pub fn recv_line(&self) -> String {
        match self.lines.recv_timeout(PATIENCE) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => {
                panic!(
                    "no output from rootfence within {PATIENCE:?}; stderr:\n{}",
                    self.stderr()
                )
            }
            Err(RecvTimeoutError::Disconnected) => {
                panic!("rootfence closed its stdout; stderr:\n{}", self.stderr())
            }
        }
    }

    /// The next line rootfence writes to stdout, or `None` once it closed stdout.
    pub fn recv_line_or_eof(&self) -> Option<String> {
        match self.lines.recv_timeout(PATIENCE) {
            Ok(line) => Some(line),
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => panic!(
                "no output from rootfence within {PATIENCE:?}; stderr:\n{}",
                self.stderr()
            ),
        }
    }

    /// The next message rootfence writes to stdout.
    pub fn recv(&self) -> Value {
        let line = self.recv_line();
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("rootfence wrote non-JSON {line:?}: {e}"))
    }

    /// The next `n` messages, in any order, keyed by their `id` as JSON text.
    pub fn recv_by_id(&self, n: usize) -> std::collections::HashMap<String, Value> {
        (0..n)
            .map(|_| {
                let v = self.recv();
                (v["id"].to_string(), v)
            })
            .collect()
    }

    /// Asserts rootfence writes nothing to stdout for `ms` milliseconds.
    pub fn expect_silence(&self, ms: u64) {
        if let Ok(line) = self.lines.recv_timeout(Duration::from_millis(ms)) {
            panic!("unexpected output from rootfence: {line}");
        }
    }

    /// Asserts stdout reaches end of file (rootfence closed it).
    pub fn expect_eof(&self) {
        match self.lines.recv_timeout(PATIENCE) {
            Err(RecvTimeoutError::Disconnected) => {}
            Ok(line) => panic!("expected end of output, got {line}"),
            Err(RecvTimeoutError::Timeout) => panic!("rootfence kept its stdout open"),
        }
    }

    /// Closes rootfence's stdin, as a host does to end a session.
    pub fn close_stdin(&mut self) {
        self.stdin.take();
    }

    /// Everything rootfence wrote to stderr so far.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    /// Waits for rootfence to exit (fails the test after [`PATIENCE`]), and for its stderr to
    /// be read to the end, so [`Proxy::stderr`] then has all of it.
    pub fn wait(&mut self) -> ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                wait_for_reader(self.stderr_reader.as_ref());
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "rootfence did not exit within {PATIENCE:?}; stderr:\n{}",
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits for exit and returns the exit code (panics if killed by a signal).
    pub fn exit_code(&mut self) -> i32 {
        let status = self.wait();
        status.code().unwrap_or_else(|| {
            panic!(
                "rootfence was killed: {status:?}; stderr:\n{}",
                self.stderr()
            )
        })
    }

    /// `initialize` (2025-06-18) from a host named `client` that declares roots: answers
    /// rootfence's early `roots/list` with `root` (a `file:` URI), then sends
    /// `notifications/initialized`. Returns the `initialize` response.
    pub fn initialize_with_roots(&mut self, client: &str, root: &str) -> Value {
        self.send_json(&serde_json::json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18",
                "capabilities": {"roots": {"listChanged": true}},
                "clientInfo": {"name": client, "version": "0"}}
        }));
        let ask = self.recv();
        assert_eq!(ask["method"], "roots/list", "{ask}; {}", self.stderr());
        self.send_json(&serde_json::json!({
            "jsonrpc": "2.0", "id": ask["id"], "result": {"roots": [{"uri": root}]}
        }));
        let resp = self.recv();
        assert_eq!(resp["id"], 0, "{resp}; {}", self.stderr());
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        resp
    }

    /// Sends an `initialize` request and returns the response.
    pub fn initialize(&mut self, version: &str) -> Value {
        self.send_json(&serde_json::json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "test-host", "version": "0"}}
        }));
        let resp = self.recv();
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        resp
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A temporary directory for one test.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

/// True while a process with this pid exists (and is not a zombie).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Polls `cond` until it holds or [`PATIENCE`] runs out.
pub fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The real path of the interpreter `cmd` runs (following shims and links).
pub fn real_python(cmd: &std::path::Path) -> Option<PathBuf> {
    let out = Command::new(cmd)
        .args([
            "-c",
            "import os, sys; print(os.path.realpath(sys.executable))",
        ])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// A Python 3.12 (basic-memory 0.24.1 requires it), found as the install script's
/// `python312` finds it: `python3.12` on `PATH` when it runs, else pyenv's newest 3.12.
pub fn python312() -> Option<PathBuf> {
    if let Some(p) = real_python(std::path::Path::new("python3.12")) {
        return Some(p);
    }
    // `<pyenv root>/versions/3.11.x/bin/python3.11` -> `<pyenv root>/versions`.
    let versions = real_python(std::path::Path::new("python3"))?
        .parent()?
        .parent()?
        .parent()?
        .to_owned();
    let mut found: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir(&versions)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let key: Vec<u32> = name
                .split('.')
                .map(|n| n.parse().ok())
                .collect::<Option<_>>()?;
            let exe = e.path().join("bin/python3.12");
            (key.starts_with(&[3, 12]) && exe.exists()).then_some((key, exe))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, exe)| exe)
}
