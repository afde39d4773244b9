//! The rootfence demo (`scripts/demo.sh`): a scripted MCP host talks to a deliberately naive
//! filesystem server (`examples/naive_fs_server.rs`), first directly and then through
//! `rootfence run` with the built-in default policy, and tries the classic escapes: a
//! string-prefix sibling (CVE-2025-53110), a symlink out of the root (CVE-2025-53109), `..`
//! in plain and encoded forms, a secret inside the root, and a tool reading `/etc/passwd`
//! (refused because the tool's own schema says `path` is a path: `src/toolargs/`).
//! It then prints the audit log's summary and verifies its hash chain.
//!
//! Everything is written under `target/rootfence-demo/` so it can be looked at afterwards.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

struct Host {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    next: u64,
}

impl Host {
    fn start(cmd: &mut Command) -> Host {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the demo's server command starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut host = Host {
            child,
            stdin,
            stdout,
            next: 0,
        };
        host.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "rootfence-demo-host", "version": "1"}}),
        );
        writeln!(
            host.stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();
        host
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let msg = json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params});
        writeln!(self.stdin, "{msg}").unwrap();
        self.stdin.flush().unwrap();
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line).unwrap() == 0 {
                panic!("the server closed its output");
            }
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(self.next) {
                return v;
            }
        }
    }

    fn finish(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// One line describing a response: what leaked, or why it was refused.
fn outcome(resp: &Value) -> String {
    if let Some(e) = resp.get("error") {
        let reason = e["data"]["reason"].as_str();
        return match reason {
            Some(r) => format!("REFUSED by rootfence: {r}"),
            None => format!(
                "error from the server: {}",
                e["message"].as_str().unwrap_or("")
            ),
        };
    }
    let r = &resp["result"];
    // A refused tool call is a tool execution error carrying rootfence's denial.
    let denial = &r["_meta"]["io.rootfence/denial"];
    if let Some(reason) = denial["reason"].as_str() {
        let text = r["content"][0]["text"].as_str().unwrap_or("");
        return format!(
            "REFUSED by rootfence: {reason} (argument `{}`)\n  {:<42} the model is told: {text}",
            denial["argument"].as_str().unwrap_or(""),
            ""
        );
    }
    let text = r["contents"][0]["text"]
        .as_str()
        .or(r["content"][0]["text"].as_str())
        .unwrap_or("");
    let first = text.lines().next().unwrap_or("").trim();
    format!("returned: {first:?}")
}

fn main() {
    let bin = std::env::current_exe().unwrap();
    let examples = bin.parent().unwrap();
    let rootfence = examples.parent().unwrap().join("rootfence");
    let server = examples.join("naive_fs_server");
    let target = examples.parent().unwrap().parent().unwrap();
    let demo = target.join("rootfence-demo");
    let _ = std::fs::remove_dir_all(&demo);
    let project = demo.join("project");
    let tree = |rel: &str, text: &str| {
        let p = demo.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    tree("project/notes.txt", "meeting notes: ship rootfence\n");
    tree("project/.env", "API_TOKEN=demo-secret-token\n");
    tree(
        "project_evil/secret.txt",
        "SIBLING SECRET (CVE-2025-53110)\n",
    );
    tree("outside/secret.txt", "OUTSIDE SECRET (CVE-2025-53109)\n");
    std::os::unix::fs::symlink("../outside/secret.txt", project.join("link_out")).unwrap();
    let project = project.canonicalize().unwrap();
    let demo = demo.canonicalize().unwrap();
    let audit = demo.join("audit.jsonl");

    let file = |p: &Path| format!("file://{}", p.display());
    let attempts: Vec<(&str, &str, Value)> = vec![
        (
            "read a file inside the root",
            "resources/read",
            json!({"uri": file(&project.join("notes.txt"))}),
        ),
        (
            "CVE-2025-53110: string-prefix sibling",
            "resources/read",
            json!({"uri": file(&demo.join("project_evil/secret.txt"))}),
        ),
        (
            "CVE-2025-53109: symlink out of the root",
            "resources/read",
            json!({"uri": file(&project.join("link_out"))}),
        ),
        (
            "`..` traversal",
            "resources/read",
            json!({"uri": format!("{}/../outside/secret.txt", file(&project))}),
        ),
        (
            "`..` encoded as %2e%2e",
            "resources/read",
            json!({"uri": format!("{}/%2e%2e/outside/secret.txt", file(&project))}),
        ),
        (
            "a secret inside the root",
            "resources/read",
            json!({"uri": file(&project.join(".env"))}),
        ),
        (
            "a tool reading /etc/passwd",
            "tools/call",
            json!({"name": "read_file", "arguments": {"path": "/etc/passwd"}}),
        ),
    ];

    println!(
        "rootfence demo: a naive MCP filesystem server rooted at {}\n",
        project.display()
    );
    for (label, through) in [
        ("directly", false),
        ("through rootfence (built-in default policy)", true),
    ] {
        println!("== {label}");
        let mut cmd = if through {
            let mut c = Command::new(&rootfence);
            c.arg("run")
                .arg("--root")
                .arg(&project)
                .arg("--audit-log")
                .arg(&audit)
                .arg("--");
            c.arg(&server).arg(&project);
            c.stderr(std::fs::File::create(demo.join("rootfence.stderr")).unwrap());
            c
        } else {
            let mut c = Command::new(&server);
            c.arg(&project);
            c
        };
        let mut host = Host::start(&mut cmd);
        let list = host.request("resources/list", json!({}));
        let names: Vec<&str> = list["result"]["resources"]
            .as_array()
            .map(|l| l.iter().filter_map(|r| r["name"].as_str()).collect())
            .unwrap_or_default();
        println!("  {:<42} listed: {}", "resources/list", names.join(", "));
        // As a host does before calling tools: rootfence learns from the schemas which
        // arguments are paths (here `read_file`'s `path`).
        let tools = host.request("tools/list", json!({}));
        let tools: Vec<&str> = tools["result"]["tools"]
            .as_array()
            .map(|l| l.iter().filter_map(|t| t["name"].as_str()).collect())
            .unwrap_or_default();
        println!("  {:<42} listed: {}", "tools/list", tools.join(", "));
        for (what, method, params) in &attempts {
            let resp = host.request(method, params.clone());
            println!("  {what:<42} {}", outcome(&resp));
        }
        host.finish();
        println!();
    }

    println!("== the audit log ({})", audit.display());
    let run = |args: &[&str]| {
        let out = Command::new(&rootfence)
            .args(args)
            .output()
            .expect("rootfence runs");
        print!("{}", String::from_utf8_lossy(&out.stdout));
    };
    run(&["audit", "summary", audit.to_str().unwrap()]);
    run(&["audit", "verify", audit.to_str().unwrap()]);
    println!(
        "\nrootfence's own diagnostics (sandbox report): {}",
        demo.join("rootfence.stderr").display()
    );
    let _: PathBuf = demo;
}
