//! A deliberately naive MCP filesystem server, for the demo (`scripts/demo.sh`): it trusts
//! every path and URI it is given, like the reference filesystem server before
//! CVE-2025-53109/53110 were fixed, and lists whatever is in its directory, symlinks and
//! secrets included. Never run it without rootfence in front of it.
//!
//! Usage: `naive_fs_server <dir>`. Serves `resources/list` (the files in `<dir>`),
//! `resources/read` (any `file:` URI, decoded naively), `tools/list` and `tools/call`
//! `read_file {path}` (any path).

use std::io::{BufRead, Write};

use serde_json::{Value, json};

fn main() {
    let dir = std::env::args()
        .nth(1)
        .expect("usage: naive_fs_server <dir>");
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let (Some(id), Some(method)) = (msg.get("id"), msg["method"].as_str()) else {
            continue;
        };
        let result = match method {
            "initialize" => json!({
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"resources": {}, "tools": {}},
                "serverInfo": {"name": "naive-fs-server", "version": "0.0.0"}
            }),
            "resources/list" => {
                let mut resources = Vec::new();
                let mut entries: Vec<_> = std::fs::read_dir(&dir)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .collect();
                entries.sort_by_key(|e| e.file_name());
                for e in entries {
                    let path = e.path();
                    resources.push(json!({"uri": format!("file://{}", path.display()),
                                          "name": e.file_name().to_string_lossy()}));
                }
                // It also "helpfully" lists a file it has no business showing.
                resources.push(json!({"uri": "file:///etc/passwd", "name": "passwd"}));
                json!({ "resources": resources })
            }
            "resources/read" => {
                let uri = msg["params"]["uri"].as_str().unwrap_or("");
                let path = naive_decode(uri.trim_start_matches("file://"));
                match std::fs::read_to_string(&path) {
                    Ok(text) => json!({"contents": [{"uri": uri, "text": text}]}),
                    Err(e) => error(&mut out, id, &e.to_string()),
                }
            }
            "tools/list" => {
                json!({"tools": [{"name": "read_file", "inputSchema": {"type": "object",
                "properties": {"path": {"type": "string"}}}}]})
            }
            "tools/call" => {
                let path = msg["params"]["arguments"]["path"].as_str().unwrap_or("");
                match std::fs::read_to_string(path) {
                    Ok(text) => json!({"content": [{"type": "text", "text": text}]}),
                    Err(e) => {
                        json!({"content": [{"type": "text", "text": e.to_string()}], "isError": true})
                    }
                }
            }
            _ => error(&mut out, id, "method not found"),
        };
        if !result.is_null() {
            let _ = writeln!(
                out,
                "{}",
                json!({"jsonrpc": "2.0", "id": id, "result": result})
            );
            let _ = out.flush();
        }
    }
}

fn error(out: &mut impl Write, id: &Value, message: &str) -> Value {
    let _ = writeln!(
        out,
        "{}",
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32002, "message": message}})
    );
    let _ = out.flush();
    Value::Null
}

/// Percent-decoding as naive servers do it: every `%XX`, no questions asked.
fn naive_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
