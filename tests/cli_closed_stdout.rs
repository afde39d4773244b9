//! Every subcommand survives a closed stdout (`rootfence X | head -1` after `head` exits):
//! no panic, no "Broken pipe" error, an ordinary exit. Each runs with its stdout the write
//! end of a pipe whose read end is already closed, so its first write fails with EPIPE.

mod common;

use std::process::{Command, Stdio};

use common::{rootfence, test_server};

/// Runs `rootfence args` with a closed stdout and `stdin` on its stdin; returns stderr.
fn closed_stdout(args: &[&str], stdin: &str) -> String {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let mut child = Command::new(rootfence())
        .args(args)
        .env("RUST_LOG", "warn")
        .env(
            "XDG_STATE_HOME",
            std::env::temp_dir().join("rootfence-test-state"),
        )
        .stdin(Stdio::piped())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .expect("rootfence starts");
    {
        use std::io::Write;
        let mut input = child.stdin.take().unwrap();
        let _ = input.write_all(stdin.as_bytes());
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_ne!(out.status.code(), Some(101), "{args:?} panicked:\n{err}");
    assert!(
        !err.contains("panicked") && !err.to_lowercase().contains("broken pipe"),
        "{args:?} on a closed stdout:\n{err}"
    );
    assert!(
        out.status.code().is_some(),
        "{args:?} was killed: {:?}",
        out.status
    );
    err
}

#[test]
fn every_subcommand_survives_a_closed_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let root_s = root.to_str().unwrap();
    let file_uri = format!("file://{root_s}/a.txt");
    let audit = dir.path().join("audit.jsonl");
    let audit_s = audit.to_str().unwrap();
    let server = test_server();

    // A real session first: it writes the audit log the audit commands read, and `run`
    // itself must end cleanly when the host's end of its stdout is gone.
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    closed_stdout(
        &[
            "run",
            "--root",
            root_s,
            "--audit-log",
            audit_s,
            "--",
            &server,
        ],
        &format!("{init}\n"),
    );
    assert!(audit.exists(), "the session wrote its audit log");

    let config = dir.path().join("claude_desktop_config.json");
    std::fs::write(
        &config,
        format!(r#"{{"mcpServers": {{"s": {{"command": "{server}"}}}}}}"#),
    )
    .unwrap();
    let config_s = config.to_str().unwrap();
    // And one already wrapped, for `unwrap`.
    let wrapped = dir.path().join("wrapped.json");
    std::fs::copy(&config, &wrapped).unwrap();
    let o = Command::new(rootfence())
        .args(["wrap", wrapped.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let wrapped_s = wrapped.to_str().unwrap();

    let commands: Vec<Vec<&str>> = vec![
        vec!["--help"],
        vec!["--version"],
        vec!["help", "policy"],
        vec!["check", "--root", root_s, &file_uri, "file:///etc/passwd"],
        vec!["policy", "check", "builtin:default", "builtin:strict"],
        vec!["policy", "explain", "file:///home/u/.env"],
        vec!["policy", "explain", "--json", "--root", root_s, &file_uri],
        vec!["policy", "explain", "--tool", "write_file"],
        vec!["policy", "show"],
        vec!["policy", "show", "--json"],
        vec!["audit", "verify", audit_s],
        vec!["audit", "summary", audit_s],
        vec!["audit", "summary", "--json", audit_s],
        vec!["audit", "show", audit_s],
        vec!["audit", "show", "--json", audit_s],
        vec!["audit", "show", "--format", "csv", audit_s],
        vec!["audit", "show", "--format", "cef", audit_s],
        vec!["audit", "report", "--html", "-", audit_s],
        vec!["sandbox", "probe", "--root", root_s, "--", "true"],
        vec!["wrap", "--dry-run", config_s],
        vec!["unwrap", "--dry-run", wrapped_s],
        vec!["completions", "bash"],
        vec!["man"],
    ];
    for args in &commands {
        // Not vacuous: with an open stdout each one writes to it.
        let open = Command::new(rootfence())
            .args(args)
            .env(
                "XDG_STATE_HOME",
                std::env::temp_dir().join("rootfence-test-state"),
            )
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            !open.stdout.is_empty(),
            "{args:?} writes nothing to stdout:\n{}",
            String::from_utf8_lossy(&open.stderr)
        );
        closed_stdout(args, "");
    }
}
