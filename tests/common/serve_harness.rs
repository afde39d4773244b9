//! Harness for `rootfence serve` end-to-end tests: starts the real binary on a free loopback
//! port, reads the URL it prints, keeps its stderr, and speaks raw HTTP/1.1 to it (so a test
//! can send exactly the malformed or hostile request it is about, which no SDK client would).
//! Included with `#[path = "common/serve_harness.rs"] mod serve_harness;`.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long any single expected event may take.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A running `rootfence serve`.
pub struct Serve {
    pub child: Child,
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    stderr: Arc<Mutex<String>>,
}

impl Serve {
    /// Starts `rootfence serve --listen 127.0.0.1:0 <opts> -- <server>` and waits for its URL.
    pub fn start(opts: &[&str], server: &[&str]) -> Serve {
        Self::start_under(&[], opts, server)
    }

    /// Like [`Serve::start`], run through `wrapper` (a command that execs the rest, such as
    /// `prlimit --nofile=1024:1024 --`), so the child is still rootfence itself.
    pub fn start_under(wrapper: &[&str], opts: &[&str], server: &[&str]) -> Serve {
        let bin = env!("CARGO_BIN_EXE_rootfence");
        let mut cmd = match wrapper.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(bin);
                c
            }
            None => Command::new(bin),
        };
        cmd.arg("serve");
        if !opts.contains(&"--listen") {
            cmd.args(["--listen", "127.0.0.1:0"]);
        }
        cmd.args(opts)
            .arg("--")
            .args(server)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start rootfence serve");
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let pipe = child.stderr.take().unwrap();
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut r = BufReader::new(pipe);
            let mut line = String::new();
            while r.read_line(&mut line).is_ok_and(|n| n > 0) {
                // Kept before the URL is handed over: a test that got the URL finds the
                // line in `stderr()` too.
                sink.lock().unwrap().push_str(&line);
                if let Some(rest) = line.trim().strip_prefix("rootfence: serving ") {
                    let _ = tx.send(rest.to_owned());
                }
                line.clear();
            }
        });
        let url = match rx.recv_timeout(PATIENCE) {
            Ok(url) => url,
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "rootfence serve printed no URL; stderr:\n{}",
                    stderr.lock().unwrap()
                );
            }
        };
        let addr = url
            .trim_start_matches("https://")
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned();
        Serve {
            child,
            url,
            addr,
            stderr,
        }
    }

    /// What it wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Sends SIGTERM and waits for the exit.
    pub fn stop(&mut self) -> ExitStatus {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let start = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            if start.elapsed() > PATIENCE * 2 {
                let _ = self.child.kill();
                panic!(
                    "rootfence serve did not stop after SIGTERM; stderr:\n{}",
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// One HTTP request on a fresh connection.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Reply {
        http(&self.addr, method, path, headers, body)
    }

    /// A POST to /mcp with the headers every MCP client sends, plus `extra`.
    pub fn post(&self, extra: &[(&str, &str)], body: &str) -> Reply {
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        headers.extend_from_slice(extra);
        self.request("POST", "/mcp", &headers, body.as_bytes())
    }

    /// Opens a session (initialize, then notifications/initialized); returns its id.
    pub fn open_session(&self, extra: &[(&str, &str)]) -> String {
        let r = self.post(
            extra,
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#,
        );
        assert_eq!(r.status, 200, "initialize: {r:?}\n{}", self.stderr());
        let id = r
            .header("mcp-session-id")
            .unwrap_or_else(|| panic!("no session id: {r:?}"))
            .to_owned();
        let mut h = extra.to_vec();
        h.push(("Mcp-Session-Id", &id));
        h.push(("MCP-Protocol-Version", "2025-11-25"));
        let r = self.post(
            &h,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        );
        assert_eq!(r.status, 202, "initialized: {r:?}");
        id
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// An HTTP response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (a JSON response, or the last `data:` of an SSE one).
    pub fn json(&self) -> serde_json::Value {
        let text = if self
            .header("content-type")
            .is_some_and(|c| c.starts_with("text/event-stream"))
        {
            self.body
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .next_back()
                .unwrap_or("")
                .to_owned()
        } else {
            self.body.clone()
        };
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {self:?}"))
    }
}

/// One HTTP/1.1 request with `Connection: close`, read to the end.
pub fn http(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    let mut s = TcpStream::connect(addr).expect("connect to rootfence serve");
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if !headers.iter().any(|(k, _)| {
        k.eq_ignore_ascii_case("content-length") || k.eq_ignore_ascii_case("transfer-encoding")
    }) {
        req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    req.push_str("Connection: close\r\n\r\n");
    s.write_all(req.as_bytes()).unwrap();
    // The server may answer (413) before it has read a large body, and close.
    let _ = s.write_all(body);
    let mut raw = Vec::new();
    if let Err(e) = s.read_to_end(&mut raw) {
        assert!(!raw.is_empty(), "reading the reply to {method} {path}: {e}");
    }
    parse_reply(&raw)
}

fn parse_reply(raw: &[u8]) -> Reply {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP head in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = raw[end + 4..].to_vec();
    if headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"))
    {
        body = dechunk(&body);
    }
    Reply {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = b.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(
            String::from_utf8_lossy(&b[..eol])
                .split(';')
                .next()
                .unwrap()
                .trim(),
            16,
        )
        .unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = eol + 2;
        let end = (start + size).min(b.len());
        out.extend_from_slice(&b[start..end]);
        b = &b[(end + 2).min(b.len())..];
    }
    out
}
