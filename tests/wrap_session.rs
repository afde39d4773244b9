//! A wrapped Claude Desktop entry, started exactly as Claude Desktop starts it (the entry's
//! `command` with its `args`, its `env` added to the host's environment, no shell), serves
//! an MCP session through rootfence: `initialize` and `ping` are answered by the scripted
//! test server behind it.

mod common;
mod wrap_support;

use std::path::Path;
use std::process::Command;

use common::{Proxy, test_server};
use serde_json::{Value, json};
use wrap_support::*;

/// Wraps a Claude Desktop config found through `--host claude-desktop` (HOME and
/// XDG_CONFIG_HOME point into `dir`), with `policy_args`, and returns the wrapped entries.
fn wrap_desktop_config(dir: &Path, servers: Value, policy_args: &[&str]) -> Value {
    let config_dir = dir.join("xdg/Claude");
    std::fs::create_dir_all(&config_dir).unwrap();
    let file = config_dir.join("claude_desktop_config.json");
    let original = serde_json::to_string_pretty(&json!({
        "mcpServers": servers,
        "globalShortcut": "Alt+Space"
    }))
    .unwrap();
    std::fs::write(&file, &original).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rootfence"));
    cmd.args(["wrap", "--host", "claude-desktop"])
        .args(policy_args)
        .env("HOME", dir.join("home"))
        .env("XDG_CONFIG_HOME", dir.join("xdg"));
    let o = cmd.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let wrapped: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(wrapped["globalShortcut"], "Alt+Space");
    wrapped["mcpServers"].clone()
}

/// Starts an entry as Claude Desktop does: no shell, `env` on top of the host's own.
fn start_as_claude_desktop(entry: &Value) -> Proxy {
    let command = entry["command"].as_str().expect("a string command");
    let args: Vec<&str> = entry["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let mut cmd = Command::new(command);
    cmd.args(&args);
    if let Some(env) = entry.get("env").and_then(Value::as_object) {
        for (k, v) in env {
            cmd.env(k, v.as_str().unwrap());
        }
    }
    Proxy::spawn(cmd)
}

/// initialize + initialized + ping through the proxy, then a clean end of session.
fn serve_session(mut p: Proxy) {
    let init = p.initialize("2025-06-18");
    assert_eq!(init["id"], 0, "{init}");
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    p.send(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    assert_eq!(p.recv(), json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    p.close_stdin();
    p.expect_eof();
    assert_eq!(p.exit_code(), 0, "stderr: {}", p.stderr());
}

/// The entry rootfence wrote must start rootfence itself (`run`), with the original
/// server after `--`.
fn assert_wrapped(entry: &Value, server_args: &[&str]) {
    let command = entry["command"].as_str().unwrap();
    assert_eq!(
        std::fs::canonicalize(command).unwrap(),
        std::fs::canonicalize(env!("CARGO_BIN_EXE_rootfence")).unwrap(),
        "the host would start {command}"
    );
    let args: Vec<&str> = entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args[0], "run");
    let dd = args.iter().position(|a| *a == "--").unwrap();
    assert_eq!(args[dd + 1], test_server());
    assert_eq!(&args[dd + 2..], server_args);
}

#[test]
fn wrapped_claude_desktop_entry_serves_a_session_through_rootfence() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let log = logs.join("server.log");
    let log_s = log.to_str().unwrap();
    let policy = dir.path().join("org.toml");
    // The server may write its log: the sandbox must grant that directory (not `dir`
    // itself, which holds the fake home: a grant may not cover the home directory).
    std::fs::write(
        &policy,
        format!(
            "version = 1\n[resources]\ndeny = [\"**/.env\"]\n[sandbox]\nwrite = [\"{}\"]\n",
            logs.display()
        ),
    )
    .unwrap();
    let audit = dir.path().join("audit.jsonl");
    let audit_arg = format!("--run-arg=--audit-log={}", audit.display());
    let servers = wrap_desktop_config(
        dir.path(),
        json!({
            "scripted": {
                "command": test_server(),
                "args": ["--log", log_s],
                "env": {"SCRIPTED_MODE": "test"}
            },
            "bare": {"command": test_server()}
        }),
        &["--policy", policy.to_str().unwrap(), &audit_arg],
    );
    assert_wrapped(&servers["scripted"], &["--log", log_s]);
    assert_eq!(servers["scripted"]["env"], json!({"SCRIPTED_MODE": "test"}));
    assert_eq!(servers["scripted"]["args"][1], "--policy");
    assert_eq!(servers["scripted"]["args"][2], policy.to_str().unwrap());

    serve_session(start_as_claude_desktop(&servers["scripted"]));
    // The requests reached the server behind rootfence.
    let seen = std::fs::read_to_string(&log).unwrap();
    assert!(seen.contains("\"method\":\"initialize\""), "{seen}");
    assert!(seen.contains("\"method\":\"ping\""), "{seen}");

    // An entry that had no args: rootfence run accepts the marker wrap added.
    assert_wrapped(&servers["bare"], &[]);
    assert!(
        servers["bare"]["args"]
            .as_array()
            .unwrap()
            .contains(&json!("--wrapped-without-args"))
    );
    serve_session(start_as_claude_desktop(&servers["bare"]));

    // Both sessions went to the audit log named in the entry, under the wrapped policy,
    // and the chain verifies.
    let o = Command::new(env!("CARGO_BIN_EXE_rootfence"))
        .args(["audit", "verify", audit.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let records = std::fs::read_to_string(&audit).unwrap();
    let starts: Vec<Value> = records
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["event"] == "session_start")
        .collect();
    assert_eq!(starts.len(), 2, "{records}");
    for s in &starts {
        // The file stacks on the built-in default, which the record names first.
        assert_eq!(s["policy_files"][0]["path"], "builtin:default", "{s}");
        assert_eq!(
            s["policy_files"][1]["path"],
            policy.to_str().unwrap(),
            "{s}"
        );
    }
}

#[test]
fn wrapped_entry_without_a_policy_serves_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let audit_arg = format!(
        "--run-arg=--audit-log={}",
        dir.path().join("audit.jsonl").display()
    );
    let servers = wrap_desktop_config(
        dir.path(),
        json!({"bare": {"command": test_server()}}),
        &[&audit_arg],
    );
    assert_wrapped(&servers["bare"], &[]);
    serve_session(start_as_claude_desktop(&servers["bare"]));
}
