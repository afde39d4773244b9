//! `rootfence wrap --learn` (issue 27), through the real binary: a server that keeps its
//! state in the home directory (as basic-memory and serena do) fails under the default
//! sandbox; `wrap --learn` starts it once, learns the new state directory (never the home),
//! shows it in the diff with why, writes it only with consent, and the wrapped entry then
//! starts as its host starts it. Nothing the trial started outlives it; `unwrap` gives the
//! original bytes back.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

const RF: &str = env!("CARGO_BIN_EXE_rootfence");

fn peers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers")
}

fn python() -> PathBuf {
    peers().join(".venv/bin/python")
}

fn script() -> PathBuf {
    peers().join("py/stateful_server.py")
}

/// A Claude Desktop config in a temporary home: `stateful` keeps state in the home,
/// `plain` keeps none.
fn setup() -> (tempfile::TempDir, PathBuf, PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let home = std::fs::canonicalize(dir.path()).unwrap();
    let config = home.join(".config/Claude/claude_desktop_config.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let (py, sc) = (
        python().display().to_string(),
        script().display().to_string(),
    );
    let text = serde_json::to_string_pretty(&json!({"mcpServers": {
        "stateful": {"command": py, "args": [sc]},
        "plain": {"command": py, "args": [sc], "env": {"STATEFUL_NO_STATE": "1"}},
    }}))
    .unwrap();
    std::fs::write(&config, &text).unwrap();
    (dir, home, config, text)
}

fn wrap(home: &Path, config: &Path, extra: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(RF)
        .arg("wrap")
        .arg(config)
        .args(["--rootfence-path", RF])
        .args(extra)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_STATE_HOME")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Processes still running our script (the trial must leave none).
fn survivors() -> Vec<String> {
    let needle = script().display().to_string();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains(&needle) && !text.contains("wrap") {
            out.push(format!("{}: {text}", e.file_name().to_string_lossy()));
        }
    }
    out
}

fn landlock() -> bool {
    if rootfence::sandbox::landlock_abi().is_none() {
        eprintln!("SKIPPED: Landlock is not available on this kernel");
        return false;
    }
    assert!(
        python().exists(),
        "{} is missing: run scripts/install-test-peers.sh",
        python().display()
    );
    true
}

#[test]
fn wrap_learn_finds_the_new_state_directory_and_writes_it_only_with_consent() {
    if !landlock() {
        return;
    }
    let (_dir, home, config, original) = setup();
    let state = home.join(".stateful-mcp");

    // Without consent (no --yes, no terminal): shown, not written.
    let (code, diff, err) = wrap(&home, &config, &["--learn"]);
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), original);
    let added: Vec<&str> = diff
        .lines()
        .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
        .map(|l| l[1..].trim().trim_end_matches(','))
        .collect();
    let quoted = |p: &Path| format!("\"{}\"", p.display());
    assert!(
        added.contains(&quoted(&state).as_str()) && added.contains(&"\"--write\""),
        "the diff does not show the learned grant:\n{diff}"
    );
    assert!(
        err.contains(&format!(
            "`stateful` needs --write {}: a new state directory",
            state.display()
        )),
        "{err}"
    );
    assert!(err.contains("`plain` starts under the sandbox"), "{err}");
    assert!(err.contains("need your consent"), "{err}");
    // Never the home, nor a parent of the new directory.
    assert!(!added.contains(&quoted(&home).as_str()), "{diff}");
    assert!(survivors().is_empty(), "the trial left {:?}", survivors());

    // With --yes: written; the entry starts as its host starts it.
    let (code, _, err) = wrap(&home, &config, &["--learn", "--yes"]);
    assert_eq!(code, Some(0), "{err}");
    let wrapped: Value = serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    let entry = &wrapped["mcpServers"]["stateful"];
    let args: Vec<&str> = entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let state_s = state.display().to_string();
    assert_eq!(
        args[..4],
        ["run", "--write", state_s.as_str(), "--"],
        "{entry}"
    );
    let plain = wrapped["mcpServers"]["plain"]["args"].to_string();
    assert!(!plain.contains("--write"), "{plain}");

    let mut child = Command::new(entry["command"].as_str().unwrap())
        .args(&args)
        .env("HOME", &home)
        .env_remove("XDG_STATE_HOME")
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for (id, method) in [(1, "initialize"), (2, "tools/list"), (3, "tools/call")] {
        let params = match method {
            "initialize" => json!({"protocolVersion": "2025-06-18", "capabilities": {},
                                   "clientInfo": {"name": "t", "version": "1"}}),
            "tools/call" => json!({"name": "ping", "arguments": {}}),
            _ => json!({}),
        };
        writeln!(
            stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )
        .unwrap();
        if id == 1 {
            writeln!(
                stdin,
                "{}",
                json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
            )
            .unwrap();
        }
        let line = lines.next().expect("an answer").unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        assert!(v.get("result").is_some(), "{method}: {v}");
    }
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    let log = std::fs::read_to_string(state.join("logs/server.log")).unwrap();
    assert!(log.lines().count() >= 2, "{log}");

    // unwrap gives the original bytes back, learned grants and all.
    let out = Command::new(RF)
        .arg("unwrap")
        .arg(&config)
        .env("HOME", &home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), original);
}

#[test]
fn a_server_is_never_started_without_learn() {
    if !landlock() {
        return;
    }
    let (_dir, home, config, _) = setup();
    let (code, _, err) = wrap(&home, &config, &["--dry-run"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("learn:"), "{err}");
    assert!(
        !home.join(".stateful-mcp").exists(),
        "wrap started the server without --learn"
    );
}
