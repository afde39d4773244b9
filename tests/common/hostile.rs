//! Shared by the enforcement tests (`tests/enforce_*.rs`): the attack tree the hostile server
//! (`examples/hostile_server.rs`) lives in, a scripted host that records every byte rootfence
//! writes to it and answers the requests rootfence or the server send it, the leak scan, and
//! readers for the server's log and the audit log. Included with
//! `#[path = "common/hostile.rs"] mod hostile;` next to `mod common;`.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The text of every file outside the roots. Any byte sequence of it (or its base64) in what
/// the host receives is a leak.
pub const MARKER: &str = "OUTSIDE-SECRET-7c41d9e2-MUST-NOT-LEAK";

/// The text of the files inside the root that the default policy denies (`.env`, `*.pem`,
/// `.git/**`): never to reach the host either.
pub const POLICY_MARKER: &str = "POLICY-DENIED-SECRET-55aa01";

/// How long one expected message may take.
pub const PATIENCE: Duration = Duration::from_secs(15);

/// The five revisions.
pub const REVISIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// Whether `rev` is at least `min` (revisions are dates and sort as strings).
pub fn at_least(rev: &str, min: &str) -> bool {
    rev >= min
}

// -------------------------------------------------------------------------------------------
// The tree
// -------------------------------------------------------------------------------------------

/// `<base>/root` (the root), `<base>/root_evil` (the CVE-2025-53110 sibling),
/// `<base>/secret-place/secret.txt` (the outside secret), and symlinks in the root that lead
/// out (the hostile server adds a hard link to an outside file when it starts). Paths are
/// canonical.
pub struct Tree {
    _tmp: tempfile::TempDir,
    pub base: PathBuf,
    pub root: PathBuf,
    pub evil: PathBuf,
    pub outside: PathBuf,
    pub secret_place: PathBuf,
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

impl Tree {
    pub fn new() -> Tree {
        let tmp = tempfile::tempdir().expect("a temp dir");
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("root");
        let evil = base.join("root_evil");
        let secret_place = base.join("secret-place");
        let outside = secret_place.join("secret.txt");
        write(&outside, MARKER);
        write(&secret_place.join("hard-secret.txt"), MARKER);
        write(&evil.join("secret.txt"), MARKER);
        write(&root.join("a.txt"), "inside a\n");
        write(&root.join("sub/b.txt"), "nested b\n");
        write(&root.join("with space.txt"), "spaced\n");
        write(&root.join("café.txt"), "unicode\n");
        write(&root.join("icon.png"), "not really a png\n");
        for name in [
            "swap.txt",
            "lie.txt",
            "mrtr-roots.txt",
            "mrtr-sample.txt",
            "object-contents.txt",
            "encoded-swap.txt",
            "link-swap.txt",
            "case-swap.txt",
            "bare-swap.txt",
            "blob-swap.txt",
            "no-uri.txt",
            "number-uri.txt",
            "extra.txt",
            "big.txt",
            "mime.txt",
            "dup.txt",
            "twice.txt",
            "hang.txt",
            "text-and-blob.txt",
            "big-blob.txt",
        ] {
            write(&root.join(name), "a scripted read\n");
        }
        write(&root.join(".env"), POLICY_MARKER);
        write(&root.join("key.pem"), POLICY_MARKER);
        // A credential where git keeps one: a remote URL's password.
        write(
            &root.join(".git/config"),
            &format!(
                "[remote \"origin\"]\n\turl = https://ci:{POLICY_MARKER}@git.example.com/o/r.git\n"
            ),
        );
        symlink("a.txt", root.join("link_in")).unwrap();
        symlink(&outside, root.join("link_out")).unwrap();
        symlink("../secret-place/secret.txt", root.join("link_rel_out")).unwrap();
        symlink("../secret-place", root.join("dir_out")).unwrap();
        symlink("../root_evil", root.join("evil_link")).unwrap();
        symlink(
            format!("/proc/self/root{}", outside.display()),
            root.join("proclink"),
        )
        .unwrap();
        symlink("loop2", root.join("loop1")).unwrap();
        symlink("loop1", root.join("loop2")).unwrap();
        symlink("../secret-place/nothing.txt", root.join("dangle")).unwrap();
        // `hard_out`, a hard link to `hard-secret.txt`, is planted by the hostile server when it
        // starts: a link made during the session (one that predates the session is the
        // user's own, and allowed by default: see docs/policy.md, `roots.hardlinks`).
        Tree {
            _tmp: tmp,
            base,
            root,
            evil,
            outside,
            secret_place,
        }
    }

    /// `file://<root>/<rel>`, `rel` pasted as is (it may hold URI syntax).
    pub fn uri(&self, rel: &str) -> String {
        format!("file://{}/{rel}", self.root.display())
    }

    pub fn root_uri(&self) -> String {
        format!("file://{}", self.root.display())
    }

    pub fn evil_uri(&self) -> String {
        format!("file://{}/secret.txt", self.evil.display())
    }

    pub fn outside_uri(&self) -> String {
        format!("file://{}", self.outside.display())
    }

    pub fn base_uri(&self) -> String {
        format!("file://{}", self.base.display())
    }

    pub fn root_str(&self) -> String {
        self.root.display().to_string()
    }

    /// The hostile server's command line (with `--secret MARKER`, so it knows the secret
    /// even when it cannot read it, and `--log`).
    pub fn server(&self, log: &Path, extra: &[&str]) -> Vec<String> {
        let mut v = vec![
            crate::common::example("hostile_server")
                .display()
                .to_string(),
            "--inside".into(),
            self.root_str(),
            "--outside".into(),
            self.outside.display().to_string(),
            "--secret".into(),
            MARKER.into(),
            "--log".into(),
            log.display().to_string(),
        ];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    }

    /// A file in the tree's base directory (logs, policies).
    pub fn file(&self, name: &str) -> PathBuf {
        self.base.join(name)
    }

    /// Writes a policy file and returns its path.
    pub fn policy(&self, name: &str, toml: &str) -> PathBuf {
        let p = self.base.join(name);
        std::fs::write(&p, toml).unwrap();
        p
    }

    /// Strings that name something outside the root (or policy-denied inside it): none may
    /// appear in what the host receives, except where the host itself sent it (the `uri` of
    /// a denial error answering the host's own request).
    pub fn outside_tokens(&self) -> Vec<String> {
        [
            "root_evil",
            "secret-place",
            "evilhost",
            "/proc/",
            "/etc/",
            "link_out",
            "link_rel_out",
            "dir_out",
            "evil_link",
            "proclink",
            "hard_out",
            "dangle",
            "loop1",
            ".env",
            "key.pem",
            ".git/",
            "127.0.0.1",
            "local%68ost",
            "%252",
            "%C0%AE",
            "%EF%BC",
            "c:/",
            "~/.ssh",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }
}

/// The byte strings whose presence in host-bound output is a content leak: the markers and
/// their base64 at each of the three alignments.
pub fn secret_needles() -> Vec<String> {
    let mut v = Vec::new();
    for m in [MARKER, POLICY_MARKER] {
        v.push(m.to_string());
        for skip in 0..3 {
            let enc = base64(&m.as_bytes()[skip..]);
            // Drop the edges, which depend on the neighbouring bytes.
            let inner = &enc[4..enc.len() - 4];
            v.push(inner.to_string());
        }
    }
    v
}

fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

// -------------------------------------------------------------------------------------------
// The scripted host
// -------------------------------------------------------------------------------------------

/// A host on rootfence's stdio: records every line it receives (raw bytes and parsed
/// messages), answers the requests sent to it, and keeps notifications for the test.
pub struct Host {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Vec<u8>>,
    /// Raw bytes: a read can end inside a UTF-8 character, so they are decoded when asked.
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_reader: Option<std::thread::JoinHandle<()>>,
    /// The revision this host speaks.
    pub rev: String,
    /// The capabilities it declares (`initialize`, or each 2026-07-28 request's `_meta`).
    pub caps: Value,
    /// Every line received, raw.
    pub raw: Vec<Vec<u8>>,
    /// Every message received (batch elements flattened), in order.
    pub received: Vec<Value>,
    /// Notifications received and not yet taken.
    pub notes: VecDeque<Value>,
    /// Requests received (from rootfence or the server), in order.
    pub requests: Vec<Value>,
    /// The answer to `roots/list`: a list of URIs, or `None` for `-32601`.
    pub roots: Option<Vec<String>>,
    /// Responses received for ids the host is not waiting for (yet).
    stash: Vec<Value>,
    next_id: i64,
}

impl Host {
    /// Starts `rootfence run <opts> -- <server>`.
    pub fn start(opts: &[String], server: &[String], rev: &str) -> Host {
        let mut cmd = Command::new(crate::common::rootfence());
        cmd.arg("run").args(opts).arg("--").args(server);
        Host::spawn(cmd, rev)
    }

    /// Starts `rootfence run <opts> -- <server>` in the working directory `cwd` (the server
    /// inherits it, as a host's `cwd` setting gives it).
    pub fn start_in(opts: &[String], server: &[String], rev: &str, cwd: &Path) -> Host {
        let mut cmd = Command::new(crate::common::rootfence());
        cmd.arg("run")
            .args(opts)
            .arg("--")
            .args(server)
            .current_dir(cwd);
        Host::spawn(cmd, rev)
    }

    /// Starts `server` with nothing in between (to show what the host would get without
    /// rootfence: the harness's own proof that the leaks are real).
    pub fn direct(server: &[String], rev: &str) -> Host {
        let mut cmd = Command::new(&server[0]);
        cmd.args(&server[1..]);
        Host::spawn(cmd, rev)
    }

    pub fn spawn(mut cmd: Command, rev: &str) -> Host {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("RUST_LOG", "warn");
        let mut child = cmd.spawn().expect("rootfence starts");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            loop {
                let mut line = Vec::new();
                match stdout.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&stderr);
        let mut pipe = child.stderr.take().unwrap();
        let stderr_reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Host {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
            stderr_reader: Some(stderr_reader),
            rev: rev.to_owned(),
            caps: json!({}),
            raw: Vec::new(),
            received: Vec::new(),
            notes: VecDeque::new(),
            requests: Vec::new(),
            roots: None,
            stash: Vec::new(),
            next_id: 100,
        }
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    pub fn modern(&self) -> bool {
        at_least(&self.rev, "2026-07-28")
    }

    /// Writes one line.
    pub fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .expect("rootfence reads its stdin");
        stdin.flush().unwrap();
    }

    pub fn send(&mut self, v: &Value) {
        self.send_line(&v.to_string());
    }

    /// A fresh request id.
    pub fn id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    /// The `_meta` every 2026-07-28 request carries.
    pub fn meta(&self) -> Value {
        json!({
            "io.modelcontextprotocol/protocolVersion": self.rev,
            "io.modelcontextprotocol/clientCapabilities": self.caps,
            "io.modelcontextprotocol/clientInfo": {"name": "rootfence-enforce-test", "version": "1"}
        })
    }

    /// `params` with this revision's `_meta` added (2026-07-28 only).
    pub fn params(&self, params: Value) -> Value {
        let mut p = if params.is_null() { json!({}) } else { params };
        if self.modern() {
            p["_meta"] = self.meta();
        }
        p
    }

    /// The request message for `method`.
    pub fn request_msg(&self, id: i64, method: &str, params: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": self.params(params)})
    }

    /// Sends a request and returns its id (the response is collected by [`Host::response`]).
    pub fn send_request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.id();
        let msg = self.request_msg(id, method, params);
        self.send(&msg);
        id
    }

    /// Sends a request and waits for its response (answering requests meanwhile).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.response(id)
    }

    /// The response with this id, waiting for it.
    pub fn response(&mut self, id: i64) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(i) = self.stash.iter().position(|m| m["id"] == json!(id)) {
                return self.stash.remove(i);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || !self.pump(left) {
                panic!(
                    "no response to request {id} within {PATIENCE:?}; received so far:\n{}\nstderr:\n{}",
                    self.dump(),
                    self.stderr()
                );
            }
        }
    }

    /// Reads and handles whatever arrives for `ms` milliseconds.
    pub fn settle(&mut self, ms: u64) {
        let deadline = Instant::now() + Duration::from_millis(ms);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || !self.pump(left) {
                return;
            }
        }
    }

    /// Waits for a notification with this method (up to [`PATIENCE`]).
    pub fn notification(&mut self, method: &str) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(i) = self.notes.iter().position(|m| m["method"] == method) {
                return self.notes.remove(i).unwrap();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || !self.pump(left) {
                panic!(
                    "no {method} within {PATIENCE:?}; received:\n{}",
                    self.dump()
                );
            }
        }
    }

    /// Takes every notification with this method received so far.
    pub fn take_notes(&mut self, method: &str) -> Vec<Value> {
        let (taken, kept): (Vec<Value>, Vec<Value>) =
            self.notes.drain(..).partition(|m| m["method"] == method);
        self.notes = kept.into();
        taken
    }

    /// One line (waiting up to `wait`): recorded, parsed, batch elements handled one by one.
    /// False when nothing came in time or stdout closed.
    fn pump(&mut self, wait: Duration) -> bool {
        let line = match self.lines.recv_timeout(wait) {
            Ok(l) => l,
            Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => return false,
        };
        self.raw.push(line.clone());
        let text = String::from_utf8(line.clone())
            .unwrap_or_else(|_| panic!("rootfence wrote a line that is not UTF-8: {line:?}"));
        let v: Value = serde_json::from_str(text.trim_end())
            .unwrap_or_else(|e| panic!("rootfence wrote a line that is not JSON ({e}): {text}"));
        let elements = match v {
            Value::Array(a) => a,
            v => vec![v],
        };
        for m in elements {
            self.received.push(m.clone());
            self.handle(m);
        }
        true
    }

    fn handle(&mut self, m: Value) {
        match (m.get("method"), m.get("id")) {
            (Some(method), Some(id)) => {
                self.requests.push(m.clone());
                let id = id.clone();
                let answer = match method.as_str().unwrap_or("") {
                    "roots/list" => match &self.roots {
                        Some(r) => {
                            json!({"result": {"roots": r.iter().map(|u| json!({"uri": u})).collect::<Vec<_>>()}})
                        }
                        None => json!({"error": {"code": -32601, "message": "no roots"}}),
                    },
                    "sampling/createMessage" => json!({"result": {
                        "role": "assistant", "content": {"type": "text", "text": "sampled by the host"},
                        "model": "test-model", "stopReason": "endTurn"
                    }}),
                    "ping" => json!({"result": {}}),
                    _ => json!({"error": {"code": -32601, "message": "method not found"}}),
                };
                let mut resp = json!({"jsonrpc": "2.0", "id": id});
                for (k, v) in answer.as_object().unwrap() {
                    resp[k] = v.clone();
                }
                self.send(&resp);
            }
            (Some(_), None) => self.notes.push_back(m),
            (None, _) => self.stash.push(m),
        }
    }

    /// Everything received so far, one message a line (for failure messages).
    pub fn dump(&self) -> String {
        self.received
            .iter()
            .map(|m| {
                let s = m.to_string();
                if s.len() > 600 {
                    format!("{}…", &s[..600])
                } else {
                    s
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Starts the session: `initialize` + `notifications/initialized` (declaring `caps`), or
    /// `server/discover` (2026-07-28). Returns the result.
    pub fn begin(&mut self, caps: Value) -> Value {
        self.caps = caps.clone();
        if self.modern() {
            let r = self.request("server/discover", json!({}));
            return r["result"].clone();
        }
        let id = self.id();
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
                "protocolVersion": self.rev, "capabilities": caps,
                "clientInfo": {"name": "rootfence-enforce-test", "version": "1"}
            }}),
        );
        let r = self.response(id);
        assert_eq!(
            r["result"]["protocolVersion"], self.rev,
            "initialize through rootfence: {r}"
        );
        self.send_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        r["result"].clone()
    }

    /// Sends a tools/call; in 2026-07-28 answers `input_required` rounds the way an SDK
    /// does (roots from [`Host::roots`], sampling with a canned text), up to 4 rounds.
    /// Returns the final response and the input requests seen.
    pub fn call_tool(&mut self, name: &str, args: Value) -> (Value, Vec<Value>) {
        self.mrtr("tools/call", json!({"name": name, "arguments": args}))
    }

    /// Sends `method` with `params` and drives MRTR rounds (2026-07-28).
    pub fn mrtr(&mut self, method: &str, params: Value) -> (Value, Vec<Value>) {
        let mut seen = Vec::new();
        let mut r = self.request(method, params.clone());
        for _ in 0..4 {
            if r["result"]["resultType"] != "input_required" {
                break;
            }
            seen.push(r["result"].clone());
            let mut responses = serde_json::Map::new();
            for (key, req) in r["result"]["inputRequests"]
                .as_object()
                .cloned()
                .unwrap_or_default()
            {
                let answer = match req["method"].as_str().unwrap_or("") {
                    "roots/list" => {
                        json!({"roots": self.roots.clone().unwrap_or_default().iter().map(|u| json!({"uri": u})).collect::<Vec<_>>()})
                    }
                    "sampling/createMessage" => json!({
                        "role": "assistant", "content": {"type": "text", "text": "sampled by the host"},
                        "model": "test-model", "stopReason": "endTurn"
                    }),
                    _ => json!({}),
                };
                responses.insert(key, answer);
            }
            let mut retry = params.clone();
            retry["inputResponses"] = Value::Object(responses);
            if let Some(state) = r["result"].get("requestState") {
                retry["requestState"] = state.clone();
            }
            r = self.request(method, retry);
        }
        (r, seen)
    }

    /// Closes stdin, reads everything left (stdout and stderr), and waits for rootfence to
    /// exit; returns its exit code.
    pub fn finish(&mut self) -> i32 {
        self.stdin.take();
        let deadline = Instant::now() + PATIENCE;
        while self.pump(Duration::from_millis(200)) || self.child.try_wait().unwrap().is_none() {
            assert!(
                Instant::now() < deadline,
                "rootfence did not exit; stderr:\n{}",
                self.stderr()
            );
        }
        while self.pump(Duration::from_millis(50)) {}
        let status = self.child.wait().unwrap();
        // What rootfence wrote to stderr last (say, as it cleaned up on exit) may still be in
        // the pipe: read it to the end, so `stderr()` then has all of it.
        crate::common::wait_for_reader(self.stderr_reader.as_ref());
        status.code().unwrap_or(-1)
    }

    /// Asserts that nothing outside the roots reached the host: no byte of the secrets (or
    /// their base64) anywhere, and no outside name anywhere except in the `data` and
    /// `message` of a denial error answering the host's own request (which echo the URI the
    /// host sent).
    pub fn assert_no_leak(&self, tree: &Tree) {
        let needles = secret_needles();
        for line in &self.raw {
            let text = String::from_utf8_lossy(line);
            for n in &needles {
                assert!(
                    !text.contains(n.as_str()),
                    "LEAK: the host received secret bytes ({n}) in:\n{text}"
                );
            }
        }
        let tokens = tree.outside_tokens();
        for m in &self.received {
            let mut scrubbed = m.clone();
            if m.get("id").is_some() && m.get("method").is_none() && m["error"]["code"] == -32010 {
                scrubbed["error"]["data"] = Value::Null;
                scrubbed["error"]["message"] = Value::Null;
            }
            // rootfence's own tool errors echo the path the host sent (rootfence takes this
            // `_meta` key out of everything a server sends).
            if m["result"]["_meta"].get(TOOL_DENIAL).is_some() {
                scrubbed["result"] = Value::Null;
            }
            let text = scrubbed.to_string();
            for t in &tokens {
                assert!(
                    !text.contains(t.as_str()),
                    "LEAK: the host received an outside name ({t:?}) in:\n{m}"
                );
            }
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// -------------------------------------------------------------------------------------------
// Checks
// -------------------------------------------------------------------------------------------

/// Asserts `resp` is rootfence's denial: code -32010, message `rootfence: denied…`,
/// `data.uri` = `uri` (when given), `data.reason` one of `reasons`, `data.rule` present.
pub fn assert_denied(resp: &Value, uri: Option<&str>, reasons: &[&str]) {
    let e = &resp["error"];
    assert_eq!(e["code"], -32010, "expected rootfence's denial, got {resp}");
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("rootfence: denied")),
        "the denial message starts with `rootfence: denied`: {resp}"
    );
    if let Some(uri) = uri {
        assert_eq!(e["data"]["uri"], uri, "data.uri names the URI: {resp}");
    }
    let reason = e["data"]["reason"].as_str().unwrap_or("<missing>");
    assert!(
        reasons.is_empty() || reasons.contains(&reason),
        "data.reason {reason:?} is not one of {reasons:?}: {resp}"
    );
    assert!(
        e["data"].get("rule").is_some(),
        "data.rule is present (null when no rule decided): {resp}"
    );
    assert!(resp.get("result").is_none());
}

/// The `_meta` key of rootfence's own tool errors.
pub const TOOL_DENIAL: &str = "io.rootfence/denial";

/// Asserts that a `tools/call` was refused by rootfence as a tool execution error
/// (SEP-1303): a result with `isError: true`, text that says what happened and what to do,
/// and the denial in `_meta["io.rootfence/denial"]` with one of `reasons` (any if empty).
/// Returns the text.
pub fn assert_tool_denied(resp: &Value, reasons: &[&str]) -> String {
    let r = &resp["result"];
    assert!(
        resp.get("error").is_none(),
        "a tool error, not a protocol error: {resp}"
    );
    assert_eq!(r["isError"], true, "isError: {resp}");
    let text = r["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        text.starts_with("rootfence refused this call"),
        "the text says rootfence refused it: {resp}"
    );
    let reason = r["_meta"][TOOL_DENIAL]["reason"]
        .as_str()
        .unwrap_or("<missing>");
    assert!(
        reasons.is_empty() || reasons.contains(&reason),
        "reason {reason:?} is not one of {reasons:?}: {resp}"
    );
    assert!(
        r["_meta"][TOOL_DENIAL].get("rule").is_some(),
        "rule is present (null when no rule decided): {resp}"
    );
    text
}

/// A path without a trailing slash, for comparing root URIs.
pub fn norm(uri: &str) -> String {
    let t = uri.trim_end_matches('/');
    if t == "file:" || t == "file://" {
        "file:///".into()
    } else {
        t.to_owned()
    }
}

/// The lines the server received, parsed (batch elements flattened).
pub fn server_log(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .flat_map(|v| match v {
            Value::Array(a) => a,
            v => vec![v],
        })
        .collect()
}

/// The server's log as one string (for "it never saw X").
pub fn server_log_text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// True when the server received a request with this id.
pub fn server_saw_id(log: &Path, id: i64) -> bool {
    server_log(log)
        .iter()
        .any(|m| m["id"] == json!(id) && m.get("method").is_some())
}

/// The records of an audit log.
pub fn audit_records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read the audit log {}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).expect("an audit record is JSON"))
        .collect()
}

/// The `decision` records about `uri` (as received).
pub fn decisions_for<'a>(records: &'a [Value], uri: &str) -> Vec<&'a Value> {
    records
        .iter()
        .filter(|r| r["event"] == "decision" && r["uri"] == uri)
        .collect()
}

/// `rootfence audit verify <log>` exits 0.
pub fn assert_audit_verifies(path: &Path) {
    let out = Command::new(crate::common::rootfence())
        .args(["audit", "verify"])
        .arg(path)
        .output()
        .expect("rootfence audit verify runs");
    assert!(
        out.status.success(),
        "rootfence audit verify {} failed ({}):\n{}{}",
        path.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The options every enforcement test passes: `--root <root>` (unless `roots` is false),
/// `--audit-log <file>`, any policy files, and `--sandbox off`: the wire enforcement is
/// tested on its own, with a server that can reach the outside files (and write its log
/// beside the root), so that only rootfence's checks stand between them and the host.
/// (`sandbox_and_wire_enforcement_together` runs with the sandbox on.)
pub fn opts(tree: &Tree, audit: &Path, policies: &[&Path], roots: bool) -> Vec<String> {
    let mut v = vec!["--sandbox".to_string(), "off".to_string()];
    if roots {
        v.extend(["--root".to_string(), tree.root_str()]);
    }
    v.extend(["--audit-log".to_string(), audit.display().to_string()]);
    for p in policies {
        v.extend(["--policy".to_string(), p.display().to_string()]);
    }
    v
}
