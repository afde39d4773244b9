//! A small scripted MCP stdio server for rootfence's end-to-end tests (and for trying the relay
//! by hand). It is deliberately simple and obedient: each request method is a command that
//! makes it behave in one specific way, well-behaved or not, so tests can script lifecycle and
//! bad-output cases through the real binary.
//!
//! Requests it understands:
//! - `initialize`: echoes the requested protocol version; `ping`: `{}`.
//! - `echo`: the result is the request's `params`, byte for byte.
//! - `slow` `{ms}`: answers `{}` after `ms` milliseconds (other requests are served meanwhile).
//! - `never`: never answers.
//! - `exit` `{code}`: exits at once with `code`, answering nothing.
//! - `die`: kills itself with SIGKILL.
//! - `emit` `{lines: [..], hex?: [..], pad?, repeat?, respond?, block?}`: writes each string
//!   verbatim as one line on stdout (`<PAD>` replaced by `pad` x's; each `hex` string's bytes as
//!   one line), `repeat` times, then
//!   answers `{}` unless `respond` is false; with `block`, then stops reading its input.
//! - `ask_host` `{method, params?, id?}`: sends that request to the host (id `"srv-N"` unless
//!   given), and answers the original request with `{"host_response": <the host's message>}`.
//! - `stderr` `{text}`: writes `text` and a newline to stderr.
//! - `resources/read` `{uri, _rawResult, _delayMs?}`: answers with the text of `_rawResult`
//!   as the result, verbatim, after `_delayMs` if given (without `_rawResult`, reads are not
//!   served: method not found).
//!
//! - `read_path` `{path}`: reads the file itself, bypassing every protocol check (so tests
//!   can see what the OS sandbox lets the server reach): `{text}` or `{error, errno}`; also as
//!   the tool `read_path` (`tools/call`, argument `path`).
//! - `tools/call` of any tool with an argument `_rawResult`: answers with its text as the
//!   result, verbatim.
//! - `pid`: `{pid}` of this process (which server generation answers), as the test sees it
//!   (rootfence runs the server in a PID namespace of its own, where it is PID 2).
//! - `daemon`: starts a daemon, as a server's background helper would (`setsid`, parent
//!   exits, it lives on), and answers `{pid}` with its pid as the test sees it.
//! - `resources/subscribe`, `resources/unsubscribe`, `logging/setLevel`: `{}`.
//!
//! Options: `--log FILE` appends every line received, verbatim, to FILE (so tests can check
//! exactly what reached the server); `--linger-ms N` keeps running N ms after stdin closes;
//! `--caps-pid` puts the process id in the `initialize` capabilities (every generation
//! answers differently) and promises `tools.listChanged`; `--once FILE` exits with status 3 at start when FILE exists, and
//! creates it otherwise (a server that cannot start a second time).

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{Value, json};

/// This process's pid in the namespace of `/proc` (the test's), not in the server's own
/// PID namespace.
fn host_pid() -> u32 {
    std::fs::read_link("/proc/self")
        .ok()
        .and_then(|p| p.to_str()?.parse().ok())
        .unwrap_or_else(std::process::id)
}

/// Starts a copy of this program in a new session (through `setsid -f`, which forks first)
/// that prints its pid as `/proc` shows it and sleeps; returns that pid.
fn daemon() -> Value {
    let exe = std::env::current_exe().unwrap_or_default();
    let out = std::process::Command::new("setsid")
        .arg("-f")
        .arg(exe)
        .arg("--daemon-child")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            let mut line = String::new();
            let mut r = std::io::BufReader::new(c.stdout.take().expect("piped"));
            r.read_line(&mut line)?;
            let _ = c.wait();
            Ok(line)
        });
    match out {
        Ok(line) => json!({"pid": line.trim().parse::<u64>().ok()}),
        Err(e) => json!({"error": e.to_string()}),
    }
}

/// One whole line per write, so answers from helper threads never interleave.
fn send(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(format!("{line}\n").as_bytes());
    let _ = out.flush();
}

fn respond(id: &RawValue, result: &str) {
    send(&format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#,
        id.get()
    ));
}

#[derive(serde::Deserialize)]
struct Incoming<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    method: Option<String>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut log: Option<std::fs::File> = None;
    let mut linger = Duration::ZERO;
    let mut caps_pid = false;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--log" => {
                let path = args.next().expect("--log needs a file");
                log = Some(
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(path)
                        .expect("cannot open the log file"),
                );
            }
            "--linger-ms" => {
                let ms = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--linger-ms needs a number");
                linger = Duration::from_millis(ms);
            }
            "--caps-pid" => caps_pid = true,
            "--daemon-child" => {
                println!("{}", host_pid());
                std::thread::sleep(Duration::from_secs(300));
                return;
            }
            "--once" => {
                let marker = args.next().expect("--once needs a file");
                if std::path::Path::new(&marker).exists() {
                    eprintln!("test-server: {marker} exists; refusing to start again");
                    std::process::exit(3);
                }
                std::fs::write(&marker, b"started").expect("cannot write the --once marker");
            }
            other => panic!("unknown option {other}"),
        }
    }
    eprintln!("test-server: started");

    // Requests sent to the host, by id, with the id of the request to answer when they return.
    let asked: Asked = Arc::default();
    let mut next_ask = 1u64;
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if let Some(log) = log.as_mut() {
            let _ = writeln!(log, "{line}");
        }
        // A batch (2025-03-26) is served element by element, each answered on its own line.
        let elements: Vec<&str> = match serde_json::from_str::<Vec<&RawValue>>(&line) {
            Ok(batch) => batch.into_iter().map(RawValue::get).collect(),
            Err(_) => vec![line.as_str()],
        };
        for element in elements {
            handle(element, &asked, &mut next_ask, caps_pid);
        }
    }
    std::thread::sleep(linger);
}

type Asked = Arc<Mutex<HashMap<String, Box<RawValue>>>>;

/// Reads a file with this process's own system calls: what the OS lets the server reach.
fn read_path(path: &Value) -> Value {
    let path = path.as_str().unwrap_or_default();
    match std::fs::read_to_string(path) {
        Ok(text) => json!({"text": text}),
        Err(e) => json!({"error": e.to_string(), "errno": e.raw_os_error()}),
    }
}

fn handle(line: &str, asked: &Asked, next_ask: &mut u64, caps_pid: bool) {
    {
        let Ok(msg) = serde_json::from_str::<Incoming<'_>>(line) else {
            return;
        };
        let params: Value = msg
            .params
            .map(|p| serde_json::from_str(p.get()).unwrap_or(Value::Null))
            .unwrap_or(Value::Null);
        let (Some(id), Some(method)) = (msg.id, msg.method.as_deref()) else {
            // A response from the host, to one of our ask_host requests?
            if let (Some(id), None) = (msg.id, msg.method.as_deref())
                && let Some(original) = asked.lock().unwrap().remove(id.get())
            {
                respond(&original, &format!(r#"{{"host_response":{line}}}"#));
            }
            return;
        };
        match method {
            "initialize" => {
                let version = params["protocolVersion"].as_str().unwrap_or("2025-06-18");
                let mut result = json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {}, "resources": {"subscribe": true}},
                    "serverInfo": {"name": "rootfence-test-server", "version": "0.0.0"}
                });
                if caps_pid {
                    result["capabilities"]["experimental"] = json!({"pid": host_pid()});
                    result["capabilities"]["tools"] = json!({"listChanged": true});
                }
                respond(id, &result.to_string());
            }
            "ping" | "resources/subscribe" | "resources/unsubscribe" | "logging/setLevel" => {
                respond(id, "{}")
            }
            "pid" => respond(id, &json!({"pid": host_pid()}).to_string()),
            "daemon" => respond(id, &daemon().to_string()),
            "read_path" => respond(id, &read_path(&params["path"]).to_string()),
            "tools/call" if params["name"] == "read_path" => {
                let r = read_path(&params["arguments"]["path"]);
                let text = r
                    .get("text")
                    .cloned()
                    .unwrap_or_else(|| json!(r.to_string()));
                let result = json!({"content": [{"type": "text", "text": text}], "isError": r.get("error").is_some(), "structuredContent": r});
                respond(id, &result.to_string());
            }
            // A tool call answered with exactly the result text its arguments carry in
            // `_rawResult` (a result holding embedded resources or links, say).
            "tools/call" if params["arguments"].get("_rawResult").is_some() => respond(
                id,
                params["arguments"]["_rawResult"].as_str().unwrap_or("{}"),
            ),
            // A read (or a list) answered with exactly the result text the request carries
            // in `_rawResult` (so tests can script any server output); without it, reads are
            // not served.
            "resources/read" | "resources/list" if params.get("_rawResult").is_some() => {
                let raw = params["_rawResult"].as_str().unwrap_or("{}").to_owned();
                match params["_delayMs"].as_u64() {
                    // A slow server: the answer comes later, from another thread.
                    Some(ms) => {
                        let id = id.to_owned();
                        std::thread::spawn(move || {
                            std::thread::sleep(Duration::from_millis(ms));
                            respond(&id, &raw);
                        });
                    }
                    None => respond(id, &raw),
                }
            }
            "echo" => respond(id, msg.params.map_or("null", RawValue::get)),
            "slow" => {
                let ms = params["ms"].as_u64().unwrap_or(100);
                let id = id.to_owned();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(ms));
                    respond(&id, "{}");
                });
            }
            "never" => {}
            "exit" => {
                let code = params["code"].as_i64().unwrap_or(0);
                let _ = std::io::stdout().flush();
                std::process::exit(code as i32);
            }
            "die" => {
                let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
            }
            "emit" => {
                let repeat = params["repeat"].as_u64().unwrap_or(1);
                // `<PAD>` in a line becomes `pad` x's (lines longer than the host may send).
                let pad = "x".repeat(params["pad"].as_u64().unwrap_or(0) as usize);
                for _ in 0..repeat {
                    for l in params["lines"].as_array().into_iter().flatten() {
                        send(&l.as_str().unwrap_or_default().replace("<PAD>", &pad));
                    }
                    // Raw bytes (hex), for lines that are not UTF-8.
                    for h in params["hex"].as_array().into_iter().flatten() {
                        let hex = h.as_str().unwrap_or_default();
                        let bytes: Vec<u8> = (0..hex.len() / 2)
                            .filter_map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok())
                            .collect();
                        let mut out = std::io::stdout().lock();
                        let _ = out.write_all(&bytes);
                        let _ = out.write_all(b"\n");
                        let _ = out.flush();
                    }
                }
                if params["respond"].as_bool() != Some(false) {
                    respond(id, "{}");
                }
                if params["block"].as_bool() == Some(true) {
                    // Stops reading its input for good (a server that does not read).
                    loop {
                        std::thread::sleep(Duration::from_secs(3600));
                    }
                }
            }
            "ask_host" => {
                let ask_id = match params.get("id") {
                    Some(v) => v.to_string(),
                    None => {
                        *next_ask += 1;
                        format!("\"srv-{}\"", *next_ask - 1)
                    }
                };
                asked.lock().unwrap().insert(ask_id.clone(), id.to_owned());
                let mut req = json!({"jsonrpc": "2.0", "method": params["method"].clone()});
                req["id"] = serde_json::from_str(&ask_id).unwrap();
                if let Some(p) = params.get("params") {
                    req["params"] = p.clone();
                }
                send(&req.to_string());
            }
            "stderr" => {
                eprintln!("{}", params["text"].as_str().unwrap_or_default());
                respond(id, "{}");
            }
            _ => send(&format!(
                r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-32601,"message":"method not found"}}}}"#,
                id.get()
            )),
        }
    }
}
