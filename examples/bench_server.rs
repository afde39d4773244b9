//! A minimal, fast MCP stdio server for the relay benchmark (`scripts/bench-relay.sh`), so the
//! server is never the bottleneck when measuring what rootfence adds.
//!
//! It answers `initialize` (echoing the requested protocol version), `ping` with `{}`, and
//! `resources/read`: `bench://big` returns a text resource of `--payload-bytes` bytes (default
//! 10 MiB), built once at start; any other URI returns a two-byte text. `resources/list`
//! returns one page of `--list-entries N` (default 0) entries `file://<--list-dir>/f<i>.txt`,
//! also built once (the enforcement benchmark's 10,000-entry page). `tools/call` returns a
//! text result; for the tool named `result_first` its `result` comes before its `id` (as the
//! TypeScript SDK writes a response), for any other after it. Notifications are
//! ignored; any other request gets `-32601`. `--payload-text` makes the big text
//! source-code-like instead of one repeated byte. One response per request, in order, each
//! written whole and flushed, so the host sees one line per answer.

use std::io::{BufRead, BufReader, BufWriter, Write};

use serde::Deserialize;
use serde_json::value::RawValue;

#[derive(Deserialize)]
struct Request<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    method: Option<String>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ReadParams {
    uri: String,
}

#[derive(Deserialize)]
struct CallParams {
    name: String,
}

#[derive(Deserialize)]
struct InitParams {
    #[serde(rename = "protocolVersion")]
    protocol_version: String,
}

fn main() -> std::io::Result<()> {
    let mut payload_bytes: usize = 10 << 20;
    let mut list_entries: usize = 0;
    let mut list_dir = String::from("/nonexistent");
    let mut payload_text = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--payload-bytes" => {
                payload_bytes = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--payload-bytes takes a byte count");
            }
            "--list-entries" => {
                list_entries = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--list-entries takes a count");
            }
            "--list-dir" => list_dir = args.next().expect("--list-dir takes a directory"),
            "--payload-text" => payload_text = true,
            other => panic!(
                "bench_server: unknown argument {other:?} (--payload-bytes N, --list-entries N, \
                 --list-dir DIR, --payload-text)"
            ),
        }
    }
    // The list page, JSON-encoded once.
    let list_page = {
        let resources: Vec<serde_json::Value> = (0..list_entries)
            .map(|i| {
                serde_json::json!({
                    "uri": format!("file://{list_dir}/f{i}.txt"),
                    "name": format!("f{i}"),
                    "mimeType": "text/plain"
                })
            })
            .collect();
        serde_json::json!({ "resources": resources }).to_string()
    };
    // The big text, JSON-encoded once: plain ASCII needs no escaping, so it is the string
    // literal itself.
    // With `--payload-text`, source-code-like text instead of one repeated byte (content
    // searches, such as the tripwire's, see realistic bytes; the `\n` escapes are kept).
    let big = if payload_text {
        const CODE: &str = "    let mut total = 0usize;\\n    for (i, item) in items.iter().enumerate() {\\n        if item.len() > 42 { total += i * 3; } // see https://example.com/docs/v2\\n    }\\n";
        let mut t = String::with_capacity(payload_bytes + CODE.len());
        while t.len() < payload_bytes {
            t.push_str(CODE);
        }
        t.truncate(payload_bytes);
        while t.ends_with('\\') {
            t.pop();
        }
        format!("\"{t}\"")
    } else {
        format!("\"{}\"", "x".repeat(payload_bytes))
    };

    let stdin = std::io::stdin();
    let mut input = BufReader::with_capacity(1 << 16, stdin.lock());
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut line = Vec::with_capacity(1 << 12);
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        let Ok(req) = serde_json::from_slice::<Request<'_>>(text) else {
            eprintln!("bench_server: ignoring a line that is not a JSON-RPC message");
            continue;
        };
        let (Some(id), Some(method)) = (req.id, req.method.as_deref()) else {
            continue; // a notification, or a response: nothing to answer
        };
        let id = id.get();
        match method {
            "ping" => write!(out, r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)?,
            "resources/list" => {
                write!(out, r#"{{"jsonrpc":"2.0","id":{id},"result":"#)?;
                out.write_all(list_page.as_bytes())?;
                out.write_all(b"}")?;
            }
            // A tool result: what the value path judges (tools/call, issue 25), in either
            // order of `result` and `id`.
            "tools/call" => {
                const RESULT: &str =
                    r#""result":{"content":[{"type":"text","text":"ok"}],"isError":false}"#;
                let name = req
                    .params
                    .and_then(|p| serde_json::from_str::<CallParams>(p.get()).ok())
                    .map(|p| p.name);
                if name.as_deref() == Some("result_first") {
                    write!(out, r#"{{"jsonrpc":"2.0",{RESULT},"id":{id}}}"#)?;
                } else {
                    write!(out, r#"{{"jsonrpc":"2.0","id":{id},{RESULT}}}"#)?;
                }
            }
            "initialize" => {
                let version = req
                    .params
                    .and_then(|p| serde_json::from_str::<InitParams>(p.get()).ok())
                    .map_or_else(|| "2025-11-25".to_string(), |p| p.protocol_version);
                let version = serde_json::to_string(&version)?;
                write!(
                    out,
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":{version},"capabilities":{{"resources":{{}}}},"serverInfo":{{"name":"rootfence-bench-server","version":"1"}}}}}}"#
                )?;
            }
            "resources/read" => {
                let Some(params) = req
                    .params
                    .and_then(|p| serde_json::from_str::<ReadParams>(p.get()).ok())
                else {
                    write!(
                        out,
                        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32602,"message":"resources/read needs params.uri"}}}}"#
                    )?;
                    out.write_all(b"\n")?;
                    out.flush()?;
                    continue;
                };
                let text = if params.uri == "bench://big" {
                    big.as_str()
                } else {
                    "\"ok\""
                };
                let uri = serde_json::to_string(&params.uri)?;
                write!(
                    out,
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"contents":[{{"uri":{uri},"mimeType":"text/plain","text":"#
                )?;
                out.write_all(text.as_bytes())?;
                out.write_all(b"}]}}")?;
            }
            _ => write!(
                out,
                r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601,"message":"method not found"}}}}"#
            )?,
        }
        out.write_all(b"\n")?;
        out.flush()?;
    }
}
